//! Bindings of the one-class MI-SVM (`src/one_class.rs`).

use super::*;
use crate::one_class::{OneClassFit, OneClassParams};

/// A fitted one-class MI-SVM (the Rust [`OneClassFit`]).
#[pyclass(name = "OneClassFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyOneClassFit {
    /// The compiled model (`f(x) = sum a k - rho`, max pooling).
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// `rho`.
    rho: f64,
    /// Dual variables of the positive bags' instances.
    alpha: Py<PyArray1<f64>>,
    /// Dual variables of the bag pseudo-samples.
    bag_alpha: Py<PyArray1<f64>>,
    /// Which positive bags carried an active max constraint in the last solve.
    active: Vec<bool>,
    /// The dual objective after each round.
    objective_history: Vec<f64>,
    /// Rounds run.
    n_iter: usize,
    /// Whether no max constraint was violated at the end.
    converged: bool,
    /// Whether every SMO solve met its tolerance.
    inner_converged: bool,
}

impl PyOneClassFit {
    fn new(py: Python<'_>, fit: OneClassFit) -> PyResult<Self> {
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(fit.model)?)?,
            gamma: fit.gamma,
            rho: fit.rho,
            alpha: fit.alpha.into_pyarray(py).unbind(),
            bag_alpha: fit.bag_alpha.into_pyarray(py).unbind(),
            active: fit.active,
            objective_history: fit.objective_history,
            n_iter: fit.n_iter,
            converged: fit.stop_reason.converged(),
            inner_converged: fit.smo_converged,
        })
    }
}

fit_bindings!(
    /// Fits the one-class MI-SVM on the bags labelled 1 with the parameters of `params` (names
    /// as in `milsvm.OneClassMISVM`).
    fit_one_class,
    check_one_class,
    fit_one_class_hyperparameters,
    OneClassParams,
    PyOneClassFit
);
