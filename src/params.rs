//! What the hyperparameter structs of every algorithm share: the kernel choice and width, the
//! range checks (one message per parameter, used by every `validate`), the builder setters and
//! the per-call thread pool.

use serde::{Deserialize, Serialize};

use crate::bags::Instances;
use crate::error::{invalid_param, Error, Result};

/// Kernel width: `Scale` is `1 / (n_features * variance of the training instances)`, as in
/// scikit-learn; `Value` is used as given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Gamma {
    /// `1 / (n_features * Var[X])` (1 when the variance is 0).
    Scale,
    /// A fixed `gamma > 0`.
    Value(f64),
}

impl Gamma {
    /// The numeric width for these training instances.
    pub fn resolve(&self, x: &Instances) -> f64 {
        match *self {
            Gamma::Value(g) => g,
            Gamma::Scale => {
                let (_, var) = x.mean_var();
                if var > 0.0 {
                    1.0 / (x.n_features() as f64 * var)
                } else {
                    1.0
                }
            }
        }
    }
}

/// Which kernel family to use (the width comes from [`Gamma`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    /// Gaussian kernel (the papers' choice).
    #[default]
    Rbf,
    /// Linear kernel.
    Linear,
}

/// `C` must be finite and positive.
pub(crate) fn check_c(c: f64) -> Result<()> {
    if c.is_finite() && c > 0.0 {
        Ok(())
    } else {
        Err(invalid_param(format!(
            "C must be a finite number > 0, got {c}"
        )))
    }
}

/// A fixed `gamma` must be finite and positive.
pub(crate) fn check_gamma(gamma: Gamma) -> Result<()> {
    match gamma {
        Gamma::Value(g) if !(g.is_finite() && g > 0.0) => Err(invalid_param(format!(
            "gamma must be 'scale' or a finite number > 0, got {g}"
        ))),
        _ => Ok(()),
    }
}

/// The ridge must be finite and non-negative.
pub(crate) fn check_ridge(ridge: f64) -> Result<()> {
    if ridge.is_finite() && ridge >= 0.0 {
        Ok(())
    } else {
        Err(invalid_param(format!(
            "ridge must be a finite number >= 0, got {ridge}"
        )))
    }
}

/// `n_jobs` is `None` (all cores) or at least 1.
pub(crate) fn check_n_jobs(n_jobs: Option<usize>) -> Result<()> {
    if n_jobs == Some(0) {
        Err(invalid_param(
            "n_jobs must be None (all cores) or an integer >= 1",
        ))
    } else {
        Ok(())
    }
}

/// A count that must be at least 1.
pub(crate) fn check_positive(name: &str, value: usize) -> Result<()> {
    if value >= 1 {
        Ok(())
    } else {
        Err(invalid_param(format!(
            "{name} must be an integer >= 1, got {value}"
        )))
    }
}

/// A relative tolerance, if given, must lie in (0, 1).
pub(crate) fn check_relative_tol(name: &str, tol: Option<f64>) -> Result<()> {
    match tol {
        Some(t) if !(t > 0.0 && t < 1.0) => {
            Err(invalid_param(format!("{name} must lie in (0, 1), got {t}")))
        }
        _ => Ok(()),
    }
}

/// Builder setter: `fn name(self, value) -> Self`.
macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = value;
            self
        }
    };
}
pub(crate) use setter;

/// Runs `f` on a pool of `n_jobs` threads (`None`: rayon's global pool).
pub(crate) fn with_threads<T: Send>(
    n_jobs: Option<usize>,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    match n_jobs {
        None => Ok(f()),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Error::Solver(e.to_string()))?;
            Ok(pool.install(f))
        }
    }
}
