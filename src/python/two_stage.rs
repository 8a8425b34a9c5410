//! Bindings of sbMIL and sAwMIL (`src/two_stage.rs`).

use super::set_kernel_svm::PySvmFit;
use super::*;
use crate::two_stage::{TwoStageFit, TwoStageParams};

/// A fitted sbMIL or sAwMIL (the Rust [`TwoStageFit`]): the second stage's record under the
/// names of `SvmFit`, the first stage's `SvmFit`, and per binary problem the instance labels
/// and the threshold of the relabelling.
#[pyclass(name = "TwoStageFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyTwoStageFit {
    /// The compiled model of the second stage (the instance SVM, max pooling).
    model: Py<model::PyModel>,
    /// The kernel width used (both stages).
    gamma: f64,
    /// The second stage's dual objective `1/2 a^T Q a - 1^T a` per problem.
    objective: Vec<f64>,
    /// The second stage's dual variables per problem (one per training instance).
    alpha: Vec<Py<PyArray1<f64>>>,
    /// Support instances of the second stage per problem.
    n_support: Vec<usize>,
    /// Largest SMO iteration count of the second stage.
    n_iter: usize,
    /// Whether every SMO solve of both stages met its tolerance.
    inner_converged: bool,
    /// The first stage: the sMIL fit.
    first_stage: Py<PySvmFit>,
    /// Per problem, the second stage's label (+1 / -1) of every training instance.
    instance_labels: Vec<Py<PyArray1<f64>>>,
    /// Per problem, the smallest first-stage score labelled positive.
    threshold: Vec<f64>,
}

impl PyTwoStageFit {
    pub(crate) fn new(py: Python<'_>, fit: TwoStageFit) -> PyResult<Self> {
        let inner_converged = fit.svm.converged && fit.first_stage.converged;
        let svm = fit.svm;
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(svm.model)?)?,
            gamma: svm.gamma,
            objective: svm.objective,
            alpha: svm
                .alpha
                .into_iter()
                .map(|a| a.into_pyarray(py).unbind())
                .collect(),
            n_support: svm.n_support,
            n_iter: svm.n_iter,
            inner_converged,
            first_stage: Py::new(py, PySvmFit::new(py, fit.first_stage)?)?,
            instance_labels: fit
                .instance_labels
                .into_iter()
                .map(|a| a.into_pyarray(py).unbind())
                .collect(),
            threshold: fit.threshold,
        })
    }
}

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
