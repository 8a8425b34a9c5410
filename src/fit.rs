//! The one fit path: the [`Fit`] trait every algorithm implements on its checked
//! hyperparameters, the prologue every fit shares (`Prologue`: labels, class weights, thread
//! pool, observer, cancellation), the binary problems of a fit (`Setup::one_vs_rest`);
//! [`FitPath`], a grid over `C` fitted as one warm-started path.

use rayon::prelude::*;

use crate::bags::{validate_labels, Bags};
use crate::class_weight::ClassWeight;
use crate::error::Result;
use crate::progress::Observer;
use crate::threads::with_threads;

/// Hyperparameters that have not been checked. [`ParamGuard::check_ref`] runs every check and
/// gives the checked type, the only one a fit accepts.
pub trait ParamGuard {
    /// The checked hyperparameters.
    type Checked;
    /// Checks every hyperparameter; the error names the first one at fault and its range.
    fn check_ref(&self) -> Result<&Self::Checked>;
    /// [`ParamGuard::check_ref`], consuming the builder.
    fn check(self) -> Result<Self::Checked>;
}

/// Fitting on bags: implemented by every algorithm on its *checked* hyperparameters
/// ([`ParamGuard::Checked`]), so that it runs only on validated values; the
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
    P: ParamGuard,
    P::Checked: Fit,
{
    type Output = <P::Checked as Fit>::Output;
    fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<Self::Output> {
        self.check_ref()?.fit(bags, labels)
    }
}

/// A grid over `C` fitted as one path: the models of the same hyperparameters at every value of
/// `cs`, equal to independent fits ([`Fit::fit`] with `C` set to each value), at a fraction of
/// their cost.
///
/// A path computes once what does not depend on `C` and visits the values in ascending order
/// (duplicates once each). Per family:
///
/// * MI-Kernel: `K_set` once; each Newton (or L-BFGS) solve starts from the previous value's
///   `(beta, b)`, as LIBLINEAR's warm-started `C` search does (Chu, Chiang, Chou & Lin 2015).
///   Both starts end at the exact minimiser (relative gradient 1e-10): equal to independent
///   fits to about 1e-9 of the scores.
/// * RSVM (`max_iter = 0`): the random expansion vectors, their kernel values and bag means
///   once; warm-started Newton solves as MI-Kernel.
/// * RS: MI-Kernel's `K_set` once, its solves from zero (the greedy reduced-set construction
///   is not continuous in the coefficients): equal to independent fits bit for bit.
/// * NSK: the bag kernel once; sMIL: its units and one SMO whose kernel-row cache serves every
///   value; SIL: the instance kernel once; STK: the statistic vectors and their kernel once
///   (stored when they fit, else one SMO's kernel-row cache per problem serves every value).
///   The SMO solves start from zero: equal to independent fits bit for bit (a start from the
///   previous dual scaled by `C_new / C_old` was measured and not kept, see
///   [`crate::smo::HingeSolver::path`]).
/// * MILES: the embedding once; each LP solved from the slack basis, as an independent fit
///   does (its optimum is often not unique, and a warm start could end at another vertex):
///   equal to independent fits bit for bit.
/// * SparseMI with outer iterations: the starting vectors once, each value's descent anew
///   (bit for bit the independent fits; the descent is not convex, and a start from another
///   value's vectors could take another way).
///
/// The annealing family and SVM-CC have no path (they alternate non-convex steps from a start
/// tied to `C`: the annealing's first temperature is `10 C`); the one-class MI-SVM has no `C`.
pub trait FitPath: Fit {
    /// Fits one model per value of `cs` (each finite and > 0; any order, repeats allowed),
    /// returned in the order of `cs`. The `C` of the hyperparameters themselves is ignored.
    /// Results do not depend on the number of threads.
    fn fit_path(&self, bags: &Bags, labels: &[usize], cs: &[f64]) -> Result<Vec<Self::Output>>;
}

/// The builders fit paths too, checking their hyperparameters first.
impl<P> FitPath for P
where
    P: ParamGuard,
    P::Checked: FitPath,
{
    fn fit_path(&self, bags: &Bags, labels: &[usize], cs: &[f64]) -> Result<Vec<Self::Output>> {
        self.check_ref()?.fit_path(bags, labels, cs)
    }
}

/// The values of a `C` path: the distinct values of `cs` in ascending order and, for every
/// entry of `cs`, the index of its value among them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CPath {
    /// The distinct values, ascending.
    pub values: Vec<f64>,
    /// For each entry of the caller's `cs`, its index in `values`.
    pub slot: Vec<usize>,
}

impl CPath {
    /// Checks `cs` (at least one value, each finite and > 0) and sorts it.
    pub fn new(cs: &[f64]) -> Result<Self> {
        if cs.is_empty() {
            return Err(crate::error::invalid_param(
                "a C path needs at least one value of C",
            ));
        }
        if let Some(c) = cs.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
            return Err(crate::error::invalid_param(format!(
                "every C of a path must be a finite number > 0, got {c}"
            )));
        }
        let mut values = cs.to_vec();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let slot = cs
            .iter()
            .map(|c| values.partition_point(|v| v < c))
            .collect();
        Ok(Self { values, slot })
    }

    /// The results of the ascending values, one per entry of the caller's `cs`: each result
    /// moves to its value's last entry, and is cloned for the earlier entries of a repeated
    /// value only.
    pub fn in_given_order<T: Clone>(&self, results: Vec<T>) -> Vec<T> {
        let mut last = vec![usize::MAX; results.len()];
        for (i, &k) in self.slot.iter().enumerate() {
            last[k] = i;
        }
        let mut results: Vec<Option<T>> = results.into_iter().map(Some).collect();
        self.slot
            .iter()
            .enumerate()
            .filter_map(|(i, &k)| {
                if last[k] == i {
                    results[k].take()
                } else {
                    results[k].clone()
                }
            })
            .collect()
    }
}

/// The one fit of a path of one value (the single fit of a family with a path: `fit_impl` is
/// `only_fit(self.path_impl(setup, &[self.c])?)`).
pub(crate) fn only_fit<T>(mut fits: Vec<T>) -> Result<T> {
    match (fits.pop(), fits.is_empty()) {
        (Some(fit), true) => Ok(fit),
        (found, _) => Err(crate::error::Error::Solver(format!(
            "a C path of one value returned {} fits",
            fits.len() + usize::from(found.is_some())
        ))),
    }
}

/// A fit record `$ty` whose per-problem fields hold one entry per run (one binary problem
/// each, in order), moved out of `$runs`: `field: source` takes each run's `source`, a bare
/// `field` its namesake. The fields after them are written as in a struct literal.
macro_rules! per_problem {
    ($runs:expr => $ty:ident { $($field:ident $(: $source:ident)?),* $(,)? } { $($rest:tt)* }) => {{
        $( let mut $field = Vec::new(); )*
        for run in $runs {
            $( $crate::fit::per_problem!(@push $field, run $(.$source)?); )*
        }
        $ty { $($field,)* $($rest)* }
    }};
    (@push $field:ident, $run:ident) => { $field.push($run.$field) };
    (@push $field:ident, $run:ident.$source:ident) => { $field.push($run.$source) };
}
pub(crate) use per_problem;

/// Turns per-problem paths (`[problem][value]`) into per-value fits (`[value][problem]`).
pub(crate) fn by_value<T>(per_problem: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let n_values = per_problem.first().map_or(0, Vec::len);
    let mut out: Vec<Vec<T>> = (0..n_values)
        .map(|_| Vec::with_capacity(per_problem.len()))
        .collect();
    for path in per_problem {
        for (slot, fit) in out.iter_mut().zip(path) {
            slot.push(fit);
        }
    }
    out
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
    /// This problem's share of the fit's kernel-row cache budget
    /// ([`crate::smo::FIT_CACHE_BYTES`] over the number of problems).
    pub cache_bytes: usize,
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
        let cache_bytes = crate::smo::FIT_CACHE_BYTES / self.n_problems();
        crate::multiclass::binary_targets(self.labels, self.n_classes)
            .into_iter()
            .enumerate()
            .map(|(index, targets)| Problem {
                index,
                weights: self.class_weight.bag_weights(&targets, self.labels),
                targets,
                cache_bytes,
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

crate::record::record! { $ fields: svm_fit_fields;
    /// A fitted single-SVM estimator (NSK, sMIL, SIL, STK) with its SMO record, one entry per
    /// binary problem.
    #[derive(Debug, Clone, PartialEq)]
    pub struct SvmFit {
        /// The model (its pooling and bag features say what the expansion scores: bags by mean
        /// pooling for NSK and sMIL, instances by max pooling for SIL, min/max statistics for STK).
        pub model: crate::model::Model,
        /// The kernel width used.
        pub gamma: f64,
        /// Dual objective `1/2 a^T Q a - p^T a` per problem.
        pub objective: Vec<f64>,
        /// Dual variables per problem (one per training point: bag, unit, instance).
        pub alpha: Vec<Vec<f64>>,
        /// Number of support points per problem.
        pub n_support: Vec<usize>,
        /// Largest SMO iteration count.
        pub n_iter: usize,
        /// Whether every SMO solve converged (else the iteration cap was hit).
        #[py(name = "inner_converged")]
        pub converged: bool,
    }
}
