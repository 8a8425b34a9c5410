//! Bindings of stMIL and MissSVM (`src/semi_supervised.rs`).

use super::*;
use crate::semi_supervised::{CccpFit, CccpParams};

/// A fitted stMIL or MissSVM (the Rust [`CccpFit`]; per binary problem where a list).
#[pyclass(name = "CccpFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyCccpFit {
    /// The compiled model (stMIL: the pooling of its `bag_score`; MissSVM: `max`).
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// Per problem, of the run that gave the model: the objective at the start, then after
    /// each CCCP step.
    objective_history: Vec<Vec<f64>>,
    /// Per problem: CCCP steps of that run.
    n_iter: Vec<usize>,
    /// Per problem: whether that run met a stopping rule before `max_iter`.
    converged: Vec<bool>,
    /// Per problem: the final objective of every run (the method's start, then each restart).
    run_objectives: Vec<Vec<f64>>,
    /// Per problem: the positive bags.
    positive_bags: Vec<Vec<usize>>,
    /// Per problem: the sign of every instance of the positive bags in the returned model's QP
    /// (0: the start's rule).
    signs: Vec<Vec<f64>>,
    /// Per problem: the witness instance of every positive bag in the returned model's QP (-1:
    /// the bag mean).
    witnesses: Vec<Vec<i64>>,
    /// Whether every SMO solve met its tolerance.
    inner_converged: bool,
}

impl PyCccpFit {
    fn new(py: Python<'_>, fit: CccpFit) -> PyResult<Self> {
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(fit.model)?)?,
            gamma: fit.gamma,
            objective_history: fit.objective_history,
            n_iter: fit.n_iter,
            converged: fit
                .stop_reason
                .iter()
                .map(crate::fit::StopReason::converged)
                .collect(),
            run_objectives: fit.run_objectives,
            positive_bags: fit.positive_bags,
            signs: fit.signs,
            witnesses: fit
                .witnesses
                .iter()
                .map(|w| {
                    w.iter()
                        .map(|t| t.and_then(|t| i64::try_from(t).ok()).unwrap_or(-1))
                        .collect()
                })
                .collect(),
            inner_converged: fit.smo_converged,
        })
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
