//! Bindings of sbMIL and sAwMIL (`src/two_stage.rs`).

use super::*;
use crate::two_stage::{two_stage_fit_fields, TwoStageFit, TwoStageParams};

two_stage_fit_fields!(fit_record! {
    /// A fitted sbMIL or sAwMIL (the Rust [`TwoStageFit`]): both stages' `SvmFit` and, per
    /// binary problem, the instance labels and the threshold of the relabelling.
    "TwoStageFit" PyTwoStageFit
});

fit_bindings!(
    /// Fits a method of the two-stage family with the parameters of `params` (names as in
    /// `milsvm.sbMIL` and `milsvm.sAwMIL`, plus `relabel`: `"sbmil"` or `"sawmil"`; the declared
    /// kernel default is sbMIL's `"rbf"`).
    fit_two_stage,
    check_two_stage,
    fit_two_stage_hyperparameters,
    TwoStageParams,
    PyTwoStageFit
);
