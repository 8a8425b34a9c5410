//! Bindings of sbMIL and sAwMIL (`src/two_stage.rs`).

use super::set_kernel_svm::PySvmFit;
use super::*;
use crate::two_stage::{TwoStageFit, TwoStageParams};

fit_projection! {
    /// A fitted sbMIL or sAwMIL (the Rust [`TwoStageFit`]): the second stage's record under the
    /// names of `SvmFit`, the first stage's `SvmFit`, and per binary problem the instance labels
    /// and the threshold of the relabelling.
    "TwoStageFit" PyTwoStageFit(py, fit: TwoStageFit) {
        /// The compiled model of the second stage (the instance SVM, max pooling).
        model: Py<model::PyModel> = fit.svm.model,
        /// The kernel width used (both stages).
        gamma: f64 = fit.svm.gamma,
        /// The second stage's dual objective `1/2 a^T Q a - 1^T a` per problem.
        objective: Py<PyArray1<f64>> = fit.svm.objective,
        /// The second stage's dual variables per problem (one per training instance).
        alpha: Vec<Py<PyArray1<f64>>> = fit.svm.alpha,
        /// Support instances of the second stage per problem.
        n_support: Vec<usize> = fit.svm.n_support,
        /// Largest SMO iteration count of the second stage.
        n_iter: usize = fit.svm.n_iter,
        /// Whether every SMO solve of both stages met its tolerance.
        inner_converged: bool = fit.svm.converged && fit.first_stage.converged,
        /// The first stage: the sMIL fit.
        first_stage: Py<PySvmFit> = Py::new(py, PySvmFit::new(py, fit.first_stage)?)?,
        /// Per problem, the second stage's label (+1 / -1) of every training instance.
        instance_labels: Vec<Py<PyArray1<f64>>> = fit.instance_labels,
        /// Per problem, the smallest first-stage score labelled positive.
        threshold: Py<PyArray1<f64>> = fit.threshold,
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
