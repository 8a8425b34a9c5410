//! Bindings of the one-class MI-SVM (`src/one_class.rs`).

use super::*;
use crate::one_class::{OneClassFit, OneClassParams};

fit_record! {
    /// A fitted one-class MI-SVM (the Rust [`OneClassFit`]).
    "OneClassFit" PyOneClassFit(py, fit: OneClassFit) {
        /// The compiled model (`f(x) = sum a k - rho`, max pooling).
        model: Py<model::PyModel> = fit.model,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// `rho`.
        rho: f64 = fit.rho,
        /// Dual variables of the positive bags' instances.
        alpha: Py<PyArray1<f64>> = fit.alpha,
        /// Dual variables of the bag pseudo-samples.
        bag_alpha: Py<PyArray1<f64>> = fit.bag_alpha,
        /// Which positive bags carried an active max constraint in the last solve.
        active: Vec<bool> = fit.active,
        /// The dual objective after each round.
        objective_history: Vec<f64> = fit.objective_history,
        /// Rounds run.
        n_iter: usize = fit.n_iter,
        /// Whether no max constraint was violated at the end.
        converged: bool = fit.stop_reason,
        /// Whether every SMO solve met its tolerance.
        inner_converged: bool = fit.smo_converged,
    }
}

fit_bindings!(
    /// Fits the one-class MI-SVM on the bags labelled 1 with the parameters of `params` (names
    /// as in `milsvm.OneClassMISVM`).
    fit_one_class,
    check_one_class,
    fit_one_class_hyperparameters,
    OneClassParams,
    PyOneClassFit
);
