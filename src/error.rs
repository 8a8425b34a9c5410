//! The one error type of the crate.
//!
//! Every failure that user input can cause is an [`Error`]; nothing in the library panics on
//! bad input. The Python bindings map the variants to Python exceptions in one place
//! (`ParameterType` to `TypeError`, `Cancelled` to `KeyboardInterrupt`, the others to
//! `ValueError`).

/// Errors returned by milsvm.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// The bags or labels are malformed (empty bag, NaN, ragged dimensions, ...).
    #[error("invalid data: {0}")]
    InvalidData(String),
    /// A hyperparameter is outside its allowed range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// A hyperparameter was given a value of the wrong type (a string for a number, ...); the
    /// Python bindings raise `TypeError` for it.
    #[error("wrong parameter type: {0}")]
    ParameterType(String),
    /// Prediction input does not match the fitted model (wrong number of features, ...).
    #[error("input does not match the model: {0}")]
    Mismatch(String),
    /// A solver could not make progress (numerical breakdown).
    #[error("solver failure: {0}")]
    Solver(String),
    /// A model file could not be read or written.
    #[error("model file: {0}")]
    ModelFile(String),
    /// The fit was cancelled through its `progress::Cancel` flag (Python: Ctrl-C);
    /// nothing of it is returned.
    #[error("cancelled")]
    Cancelled,
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid_param(msg: impl Into<String>) -> Error {
    Error::InvalidParameter(msg.into())
}

pub(crate) fn invalid_data(msg: impl Into<String>) -> Error {
    Error::InvalidData(msg.into())
}
