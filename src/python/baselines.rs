//! Bindings of SIL and STK (`src/baselines.rs`).

use super::*;
use crate::baselines::{PlainSvmFit, SilParams, StkParams};

/// A fitted SIL or STK (the Rust [`PlainSvmFit`]; per binary problem where a list).
#[pyclass(name = "PlainSvmFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyPlainSvmFit {
    /// The compiled model.
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// Dual objective `1/2 a^T Q a - 1^T a` per problem.
    objective: Vec<f64>,
    /// Dual variables per problem (SIL: one per instance; STK: one per bag).
    alpha: Vec<Py<PyArray1<f64>>>,
    /// Support vectors per problem.
    n_support: Vec<usize>,
    /// Largest SMO iteration count.
    n_iter: usize,
    /// Whether every SMO solve met its tolerance.
    inner_converged: bool,
}

impl PyPlainSvmFit {
    fn new(py: Python<'_>, fit: PlainSvmFit) -> PyResult<Self> {
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
    /// Fits SIL with the parameters of `params` (names as in `milsvm.SIL`).
    fit_sil,
    check_sil,
    fit_sil_hyperparameters,
    SilParams,
    PyPlainSvmFit,
    register_sil
);

fit_bindings!(
    /// Fits STK with the parameters of `params` (names as in `milsvm.STK`).
    fit_stk,
    check_stk,
    fit_stk_hyperparameters,
    StkParams,
    PyPlainSvmFit,
    register_stk
);

/// Adds the SIL and STK fits to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_sil(m)?;
    register_stk(m)
}
