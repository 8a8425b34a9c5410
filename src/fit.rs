//! The one fit path: the [`Fit`] trait every algorithm implements on its checked
//! hyperparameters, the prologue every fit shares (`Prologue`: labels, class weights, thread
//! pool, observer, cancellation), the binary problems of a fit (`Setup::one_vs_rest`) and the
//! one [`StopReason`] of every iterative method.

use rayon::prelude::*;

use crate::bags::{validate_labels, Bags};
use crate::error::{Error, Result};
use crate::params::ClassWeight;
use crate::progress::Observer;

/// Fitting on bags: implemented by every algorithm on its *checked* hyperparameters
/// ([`crate::params::ParamGuard::Checked`]), so that it runs only on validated values; the
/// builders get the same call with the check first (`NskParams::new().fit(...)`).
pub trait Fit {
    /// The fitted model with its training record.
    type Output;
    /// Fits on `bags` with one class index per bag (`0..n_classes`): one binary problem (class
    /// 1 positive) for two classes, one-vs-rest problems for more.
    fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<Self::Output>;
}

/// The builders fit too, checking their hyperparameters first.
impl<P> Fit for P
where
    P: crate::params::ParamGuard,
    P::Checked: Fit,
{
    type Output = <P::Checked as Fit>::Output;
    fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<Self::Output> {
        self.check_ref()?.fit(bags, labels)
    }
}

/// Why an iterative method stopped (every family's outer loop reports one per binary problem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The method's stopping rule was met (the change fell below `tol`, the entropy below
    /// `eps`, no label or constraint changed, the KKT gap below the tolerance).
    Converged,
    /// The cap (`max_iter`) was reached first; the last iterate is kept.
    MaxIter,
}

impl StopReason {
    /// Whether the stopping rule was met.
    pub fn converged(&self) -> bool {
        *self == StopReason::Converged
    }
}

/// Runs `f` on a pool of `n_jobs` threads (`None`: rayon's global pool).
pub fn with_threads<T: Send>(n_jobs: Option<usize>, f: impl FnOnce() -> T + Send) -> Result<T> {
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

/// What every fit does before its algorithm: check the labels (class indices, every class
/// present, one per bag) and the class weights against them, stop if already cancelled, and
/// run the algorithm on the requested thread pool with a [`Setup`].
pub(crate) struct Prologue<'a> {
    /// Threads (`None`: all cores).
    pub n_jobs: Option<usize>,
    /// The class weights (`None`: the method takes none, every bag weighs 1).
    pub class_weight: Option<&'a ClassWeight>,
    /// Progress and cancellation.
    pub observer: &'a Observer,
}

impl<'a> Prologue<'a> {
    /// Checks labels and class weights, then runs `f` on the thread pool.
    pub fn run<T: Send>(
        &self,
        bags: &'a Bags,
        labels: &'a [usize],
        f: impl FnOnce(&Setup<'a>) -> Result<T> + Send,
    ) -> Result<T> {
        let n_classes = validate_labels(bags, labels)?;
        let class_weight = self.class_weight.cloned().unwrap_or_default();
        class_weight.validate(n_classes)?;
        self.observer.check()?;
        let setup = Setup {
            bags,
            labels,
            n_classes,
            class_weight,
            observer: self.observer,
        };
        with_threads(self.n_jobs, || f(&setup))?
    }

    /// For fits whose labels follow another rule (the one-class MI-SVM): the cancellation
    /// check and the thread pool only.
    pub fn run_unlabelled<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        self.observer.check()?;
        with_threads(self.n_jobs, f)?
    }
}

/// A fit's checked inputs: the bags, their class indices, the number of classes, the class
/// weights and the observer.
pub(crate) struct Setup<'a> {
    /// The training bags.
    pub bags: &'a Bags,
    /// One class index per bag.
    pub labels: &'a [usize],
    /// Number of classes (>= 2).
    pub n_classes: usize,
    /// The class weights, checked against `n_classes`.
    pub class_weight: ClassWeight,
    /// Progress and cancellation.
    pub observer: &'a Observer,
}

/// One binary problem of a fit: its index, the targets (+1 / -1 per bag) and the weight of every
/// bag from the class weights.
pub(crate) struct Problem {
    /// Index in output order (the class for one-vs-rest; 0 for a binary fit).
    pub index: usize,
    /// `+1` for the bags of the positive class, `-1` for the others.
    pub targets: Vec<f64>,
    /// The class weight of each bag in this problem.
    pub weights: Vec<f64>,
}

impl Setup<'_> {
    /// Number of binary problems: 1 for two classes, one per class for more.
    pub fn n_problems(&self) -> usize {
        if self.n_classes == 2 {
            1
        } else {
            self.n_classes
        }
    }

    /// The binary problems in output order (see [`crate::multiclass::binary_targets`]).
    pub fn problems(&self) -> Vec<Problem> {
        crate::multiclass::binary_targets(self.labels, self.n_classes)
            .into_iter()
            .enumerate()
            .map(|(index, targets)| Problem {
                index,
                weights: self.class_weight.bag_weights(&targets, self.labels),
                targets,
            })
            .collect()
    }

    /// Runs `fit` on every binary problem, in parallel, and returns the results in problem
    /// order (the first error in problem order, if any).
    pub fn one_vs_rest<T: Send>(
        &self,
        fit: impl Fn(&Problem) -> Result<T> + Sync,
    ) -> Result<Vec<T>> {
        self.problems().par_iter().map(&fit).collect()
    }
}
