//! Bindings of NSK and sMIL (`src/set_kernel_svm.rs`), and the result class every single-SVM
//! estimator returns (`SvmFit`).

use super::*;
use crate::set_kernel_svm::{NskFit, NskParams, SmilParams};

fit_record! {
    /// A fitted NSK, sMIL, SIL or STK (the Rust [`crate::fit::SvmFit`]; per binary problem where
    /// a list).
    "SvmFit" PySvmFit(py, fit: NskFit) {
        /// The compiled model.
        model: Py<model::PyModel> = fit.model,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// Dual objective `1/2 a^T Q a - p^T a` per problem.
        objective: Vec<f64> = fit.objective,
        /// Dual variables per problem (one per training point: bag, sMIL unit, SIL instance).
        alpha: Vec<Py<PyArray1<f64>>> = fit.alpha,
        /// Support points per problem.
        n_support: Vec<usize> = fit.n_support,
        /// Largest SMO iteration count.
        n_iter: usize = fit.n_iter,
        /// Whether every SMO solve met its tolerance.
        inner_converged: bool = fit.converged,
    }
}

fit_bindings!(
    /// Fits NSK with the parameters of `params` (names as in `milsvm.NSK`).
    fit_nsk,
    check_nsk,
    fit_nsk_hyperparameters,
    NskParams,
    PySvmFit,
    register_nsk,
    path fit_nsk_path
);

fit_bindings!(
    /// Fits sMIL with the parameters of `params` (names as in `milsvm.sMIL`).
    fit_smil,
    check_smil,
    fit_smil_hyperparameters,
    SmilParams,
    PySvmFit,
    register_smil,
    path fit_smil_path
);

/// Adds the NSK and sMIL fits to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_nsk(m)?;
    register_smil(m)
}
