//! Bindings of NSK and sMIL (`src/set_kernel_svm.rs`).

use super::*;
use crate::set_kernel_svm::{NskFit, NskParams, SmilParams};

/// A fitted NSK or sMIL (the Rust [`NskFit`]; per binary problem where a list).
#[pyclass(name = "NskFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyNskFit {
    /// The compiled model.
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// Dual objective `1/2 a^T Q a - p^T a` per problem.
    objective: Vec<f64>,
    /// Dual variables per problem (one per bag; sMIL: per unit).
    alpha: Vec<Py<PyArray1<f64>>>,
    /// Support units per problem.
    n_support: Vec<usize>,
    /// Largest SMO iteration count.
    n_iter: usize,
    /// Whether every SMO solve met its tolerance.
    inner_converged: bool,
}

impl PyNskFit {
    fn new(py: Python<'_>, fit: NskFit) -> PyResult<Self> {
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(fit.model)?)?,
            gamma: fit.gamma,
            objective: fit.objective,
            alpha: fit
                .alpha
                .into_iter()
                .map(|a| a.into_pyarray(py).unbind())
                .collect(),
            n_support: fit.n_support,
            n_iter: fit.n_iter,
            inner_converged: fit.converged,
        })
    }
}

fit_bindings!(
    /// Fits NSK with the parameters of `params` (names as in `milsvm.NSK`).
    fit_nsk,
    check_nsk,
    fit_nsk_hyperparameters,
    NskParams,
    PyNskFit,
    register_nsk
);

fit_bindings!(
    /// Fits sMIL with the parameters of `params` (names as in `milsvm.sMIL`).
    fit_smil,
    check_smil,
    fit_smil_hyperparameters,
    SmilParams,
    PyNskFit,
    register_smil
);

/// Adds the NSK and sMIL fits to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_nsk(m)?;
    register_smil(m)
}
