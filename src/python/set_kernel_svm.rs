//! Bindings of NSK and sMIL (`src/set_kernel_svm.rs`), and the result class every single-SVM
//! estimator returns (`SvmFit`).

use super::*;
use crate::fit::{svm_fit_fields, SvmFit};
use crate::set_kernel_svm::{NskParams, SmilParams};

svm_fit_fields!(fit_record! {
    /// A fitted NSK, sMIL, SIL or STK (the Rust [`crate::fit::SvmFit`]; per binary problem where
    /// a list).
    "SvmFit" PySvmFit
});

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
