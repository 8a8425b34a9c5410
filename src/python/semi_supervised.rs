//! Bindings of stMIL and MissSVM (`src/semi_supervised.rs`).

use super::*;
use crate::progress::StopReason;
use crate::semi_supervised::{cccp_fit_fields, CccpFit, CccpParams};

cccp_fit_fields!(fit_record! {
    /// A fitted stMIL or MissSVM (the Rust [`CccpFit`]; per binary problem where a list).
    "CccpFit" PyCccpFit
});

fit_bindings!(
    /// Fits a method of the CCCP family with the parameters of `params` (names as in
    /// `milsvm.stMIL` and `milsvm.MissSVM`, plus `method`: `"stmil"` or `"misssvm"`, and
    /// `seed`).
    fit_cccp,
    check_cccp,
    fit_cccp_hyperparameters,
    CccpParams,
    PyCccpFit
);
