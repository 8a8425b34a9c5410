//! Bindings of SIL and STK (`src/baselines.rs`).

use super::set_kernel_svm::PySvmFit;
use super::*;
use crate::baselines::{SilParams, StkParams};

fit_bindings!(
    /// Fits SIL with the parameters of `params` (names as in `milsvm.SIL`).
    fit_sil,
    check_sil,
    fit_sil_hyperparameters,
    SilParams,
    PySvmFit,
    register_sil,
    path fit_sil_path
);

fit_bindings!(
    /// Fits STK with the parameters of `params` (names as in `milsvm.STK`).
    fit_stk,
    check_stk,
    fit_stk_hyperparameters,
    StkParams,
    PySvmFit,
    register_stk,
    path fit_stk_path
);

/// Adds the SIL and STK fits to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_sil(m)?;
    register_stk(m)
}
