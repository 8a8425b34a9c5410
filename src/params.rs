//! What the hyperparameter structs of every algorithm share: the kernel choice and width, the
//! range checks (one message per parameter, used by every `validate`), the builder setters and
//! the per-call thread pool.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::bags::Instances;
use crate::error::{invalid_param, Error, Result};

/// Kernel width: `Scale` is `1 / (n_features * variance of the training instances)`, as in
/// scikit-learn; `Median` is `1 / (2 sigma^2)` with `sigma` the median pairwise distance between
/// training instances (Gehler & Chapelle 2007, section 7: `sigma_emp`); `Value` is used as given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Gamma {
    /// `1 / (n_features * Var[X])` (1 when the variance is 0).
    Scale,
    /// `1 / (2 sigma^2)`, `sigma` the median distance between pairs of distinct training
    /// instances (over at most [`MEDIAN_SAMPLE`] instances, evenly spaced; 1 when it is 0).
    Median,
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
            Gamma::Median => {
                let sigma = median_pairwise_distance(x);
                if sigma > 0.0 {
                    1.0 / (2.0 * sigma * sigma)
                } else {
                    1.0
                }
            }
        }
    }
}

/// Largest number of instances [`Gamma::Median`] looks at (evenly spaced rows beyond it).
pub const MEDIAN_SAMPLE: usize = 2000;

/// The median Euclidean distance over pairs of distinct rows (`i < j`) of at most
/// [`MEDIAN_SAMPLE`] evenly spaced rows of `x`; 0 for fewer than two rows.
pub fn median_pairwise_distance(x: &Instances) -> f64 {
    let n = x.n_rows();
    if n < 2 {
        return 0.0;
    }
    let m = n.min(MEDIAN_SAMPLE);
    let rows: Vec<usize> = (0..m).map(|i| i * n / m).collect();
    let sub = x.select_rows(&rows);
    let gram = sub.cross_gram(&sub);
    let mut d: Vec<f64> = Vec::with_capacity(m * (m - 1) / 2);
    for i in 0..m {
        for j in i + 1..m {
            d.push(
                (gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]])
                    .max(0.0)
                    .sqrt(),
            );
        }
    }
    let mid = d.len() / 2;
    let (_, &mut hi, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if d.len() % 2 == 1 {
        hi
    } else {
        let lo = d[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lo + hi)
    }
}

/// Which kernel family to use, with a resolved width.
impl KernelKind {
    /// The kernel of this family with width `gamma` (ignored by the linear kernel).
    pub fn with_gamma(self, gamma: f64) -> crate::kernel::Kernel {
        match self {
            KernelKind::Rbf => crate::kernel::Kernel::Rbf { gamma },
            KernelKind::Linear => crate::kernel::Kernel::Linear,
        }
    }
}

/// Per-class weights of the loss (scikit-learn's `class_weight`): bag `i` costs
/// `C * weight(label_i)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ClassWeight {
    /// Every class weighs 1.
    #[default]
    Uniform,
    /// `n_bags / (2 * n_bags_of_the_side)` for the positive and the negative side of each
    /// binary (or one-vs-rest) problem, as scikit-learn's `"balanced"` on that problem's labels.
    Balanced,
    /// One weight per class index (`> 0`); in a one-vs-rest problem a bag keeps the weight of
    /// its own class.
    Given(Vec<f64>),
}

impl ClassWeight {
    /// Checks the weights against the number of classes.
    pub fn validate(&self, n_classes: usize) -> Result<()> {
        if let ClassWeight::Given(w) = self {
            if w.len() != n_classes {
                return Err(invalid_param(format!(
                    "class_weight has {} weights for {n_classes} classes",
                    w.len()
                )));
            }
            if let Some(v) = w.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return Err(invalid_param(format!(
                    "class weights must be finite numbers > 0, got {v}"
                )));
            }
        }
        Ok(())
    }

    /// The weight of each bag in the binary problem with `targets` (+1 / -1 per bag) of a fit
    /// whose bags have class indices `labels`.
    pub fn bag_weights(&self, targets: &[f64], labels: &[usize]) -> Vec<f64> {
        match self {
            ClassWeight::Uniform => vec![1.0; targets.len()],
            ClassWeight::Given(w) => labels.iter().map(|&l| w[l]).collect(),
            ClassWeight::Balanced => {
                let n = targets.len() as f64;
                let n_pos = targets.iter().filter(|&&t| t > 0.0).count() as f64;
                let (wp, wn) = (n / (2.0 * n_pos.max(1.0)), n / (2.0 * (n - n_pos).max(1.0)));
                targets
                    .iter()
                    .map(|&t| if t > 0.0 { wp } else { wn })
                    .collect()
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

/// Given starting vectors (`init_xv`), if any, must have one column per feature of the bags.
pub(crate) fn check_init_xv_columns(
    init_xv: Option<&ndarray::Array2<f64>>,
    bags: &crate::bags::Bags,
) -> Result<()> {
    match init_xv {
        Some(z) if z.ncols() != bags.n_features() => Err(invalid_param(format!(
            "init_xv has {} columns, the bags have {} features",
            z.ncols(),
            bags.n_features()
        ))),
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

/// One step of a long fit, as reported to an [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The binary problem (its one-vs-rest class index; 0 for a binary fit).
    pub problem: usize,
    /// Steps done: outer iterations (SparseMI), temperatures (annealing) or relabelling rounds
    /// (mi-SVM / MI-SVM).
    pub step: usize,
    /// The cap on steps.
    pub max_steps: usize,
    /// The objective after the step.
    pub objective: f64,
    /// The temperature of the step (annealing only).
    pub temperature: Option<f64>,
}

/// A callback that receives [`Progress`] during a fit, for progress bars and per-iteration
/// logs. It is called from the fitting threads (several at once for one-vs-rest problems), so
/// it must be cheap and thread-safe; it cannot change the fit. The default observes nothing.
#[derive(Clone, Default)]
pub struct Observer(Option<Arc<ProgressFn>>);

/// The function type an [`Observer`] calls.
pub type ProgressFn = dyn Fn(&Progress) + Send + Sync;

impl Observer {
    /// An observer calling `f` at every step.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    /// Reports one step.
    pub(crate) fn notify(&self, progress: Progress) {
        if let Some(f) = &self.0 {
            f(&progress);
        }
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Observer(..)"
        } else {
            "Observer(none)"
        })
    }
}

/// Two observers are equal when both are empty or both call the same function object.
impl PartialEq for Observer {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
