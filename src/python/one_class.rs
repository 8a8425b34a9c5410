//! Bindings of the one-class MI-SVM (`src/one_class.rs`).

use super::*;
use crate::one_class::{one_class_fit_fields, OneClassFit, OneClassParams};
use crate::progress::StopReason;

one_class_fit_fields!(fit_record! {
    /// A fitted one-class MI-SVM (the Rust [`OneClassFit`]).
    "OneClassFit" PyOneClassFit
});

fit_bindings!(
    /// Fits the one-class MI-SVM on the bags labelled 1 with the parameters of `params` (names
    /// as in `milsvm.OneClassMISVM`).
    fit_one_class,
    check_one_class,
    fit_one_class_hyperparameters,
    OneClassParams,
    PyOneClassFit
);
