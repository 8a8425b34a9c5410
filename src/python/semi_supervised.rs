//! Bindings of stMIL and MissSVM (`src/semi_supervised.rs`).

use super::*;
use crate::semi_supervised::{CccpFit, CccpParams};

fit_record! {
    /// A fitted stMIL or MissSVM (the Rust [`CccpFit`]; per binary problem where a list).
    "CccpFit" PyCccpFit(py, fit: CccpFit) {
        /// The compiled model (stMIL: the pooling of its `bag_score`; MissSVM: `max`).
        model: Py<model::PyModel> = fit.model,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// Per problem, of the run that gave the model: the objective at the start, then after
        /// each CCCP step.
        objective_history: Vec<Vec<f64>> = fit.objective_history,
        /// Per problem: CCCP steps of that run.
        n_iter: Vec<usize> = fit.n_iter,
        /// Per problem: whether that run met a stopping rule before `max_iter`.
        converged: Vec<bool> = fit.stop_reason,
        /// Per problem: the final objective of every run (the method's start, then each restart).
        run_objectives: Vec<Vec<f64>> = fit.run_objectives,
        /// Per problem: the positive bags.
        positive_bags: Vec<Vec<usize>> = fit.positive_bags,
        /// Per problem: the sign of every instance of the positive bags in the returned model's QP
        /// (0: the start's rule).
        signs: Vec<Vec<f64>> = fit.signs,
        /// Per problem: the witness instance of every positive bag in the returned model's QP (-1:
        /// the bag mean).
        witnesses: Vec<Vec<i64>> = fit.witnesses,
        /// Whether every SMO solve met its tolerance.
        inner_converged: bool = fit.smo_converged,
    }
}

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
