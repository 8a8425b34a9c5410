//! Two standard baselines of multiple-instance learning, both one plain hinge-loss C-SVM solved
//! by the crate's SMO ([`crate::smo`]): SIL and STK.
//!
//! **SIL** (single-instance learning; Ray & Craven, "Supervised versus multiple instance
//! learning: an empirical comparison", ICML 2005): every instance takes its bag's label and
//! costs its bag's `C w_i` (`w_i` the class weight of bag `i`); one SVM over all instances,
//! `f(x) = sum_t a_t y_t k(x_t, x) + b`; a bag scores the max of its instances' scores
//! ([`Pooling::Max`]). The dual is `min 1/2 a^T Q a - 1^T a`, `y^T a = 0`, `0 <= a_t <= C w_t`,
//! the problem `sklearn.svm.SVC` solves on the instances with per-sample weights. Doran's `misvm`
//! package scores its `SIL` the same way (max over the bag's instances).
//!
//! **STK** (the statistic kernel of Gaertner, Flach, Kowalczyk & Smola, "Multi-instance
//! kernels", ICML 2002, section 4.2): a bag `X` of `d` features is the vector
//! `s(X) = (min_p x_p1, ..., min_p x_pd, max_p x_p1, ..., max_p x_pd)` of `2d` values; one SVM over
//! these vectors with a kernel on them (linear or Gaussian), bag `i` costing `C w_i`. The model
//! is the shared model form over the support bags' statistic vectors with
//! [`BagFeatures::MinMax`]: the predictor forms `s(X)` of a new bag, then the kernel expansion.
//! `gamma` ("scale", "median") is resolved on the statistic vectors, the points the kernel sees.
//! Instance scores are not defined (a bag's score is not a pooling of per-instance scores).

use ndarray::{Array1, Array2};

use crate::bags::{Bags, Instances, Rows};
use crate::error::Result;
use crate::fit::{by_value, only_fit, CPath, Problem, Prologue, Setup};
use crate::kernel::Kernel;
#[cfg(doc)]
use crate::model::min_max_bags;
use crate::model::{bags_min_max, BagFeatures, Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::StopReason;
use crate::smo::{DualSolution, HingeSolver, InstanceGram};

/// A fitted SIL or STK: the shared [`crate::fit::SvmFit`] (the instance expansion with max
/// pooling for SIL; the statistic vectors of the support bags with [`BagFeatures::MinMax`] for
/// STK).
pub type PlainSvmFit = crate::fit::SvmFit;

/// The labels (+1 / -1) and weights (the bound of point `t` is `C w_t`) of the points of one
/// binary problem.
pub(crate) type PointTargets = (Vec<f64>, Vec<f64>);

/// The targets of SIL and STK: point `t` takes the label and the class weight of its bag
/// `owner[t]` in the problem.
pub(crate) fn by_owner(owner: &[usize], problem: &Problem) -> PointTargets {
    let y = owner.iter().map(|&i| problem.targets[i]).collect();
    let w = owner.iter().map(|&i| problem.weights[i]).collect();
    (y, w)
}

/// The SVMs over `points` (one per row) at every value of `cs` (ascending; one for a single
/// fit), of every binary problem of `setup` (one-vs-rest beyond two classes), with the labels
/// and weights `targets` gives each problem's points. The kernel over the points (stored when
/// it fits, [`InstanceGram`]) is computed once for every problem and value, and each problem's
/// values are solved on one SMO ([`HingeSolver::path`]: the models equal independent fits bit
/// for bit). Per value: the model, with coefficient `a_t y_t` on point `t`, and the dual
/// solution of each problem.
pub(crate) fn fit_points(
    setup: &Setup,
    points: &Instances,
    kernel: Kernel,
    smo: (f64, Option<usize>),
    pooling: Pooling,
    cs: &[f64],
    targets: impl Fn(&Problem) -> Result<PointTargets> + Sync,
) -> Result<Vec<(Model, Vec<DualSolution>)>> {
    let (tol, max_iter) = smo;
    let gram = InstanceGram::new(kernel, Rows::from(points))?;
    let solver = HingeSolver {
        tol,
        max_iter,
        cancel: setup.observer.cancel(),
    };
    let paths = setup.one_vs_rest(|problem| {
        let (y, w) = targets(problem)?;
        let p = vec![1.0; y.len()];
        let sols = solver.path(&gram, &y, &p, &w, cs, problem.cache_bytes)?;
        Ok(sols
            .into_iter()
            .map(|sol| {
                let coef: Vec<f64> = sol.alpha.iter().zip(&y).map(|(a, y)| a * y).collect();
                (coef, sol)
            })
            .collect::<Vec<_>>())
    })?;
    Ok(by_value(paths)
        .into_iter()
        .map(|sols| {
            let coefs: Vec<&[f64]> = sols.iter().map(|(c, _)| c.as_slice()).collect();
            let intercept = Array1::from_iter(sols.iter().map(|(_, s)| s.b));
            let model = Model::from_instance_coefficients(
                kernel,
                points,
                &coefs,
                intercept,
                setup.n_classes,
                pooling,
            );
            (model, sols.into_iter().map(|(_, s)| s).collect())
        })
        .collect())
}

/// The shared record of a single-SVM fit: the model and, per problem, the SMO's objective,
/// dual variables, support count, iterations and termination.
pub(crate) fn record(model: Model, gamma: f64, sols: Vec<DualSolution>) -> PlainSvmFit {
    PlainSvmFit {
        model,
        gamma,
        objective: sols.iter().map(|s| s.objective).collect(),
        n_support: sols
            .iter()
            .map(|s| s.alpha.iter().filter(|&&a| a > 0.0).count())
            .collect(),
        n_iter: sols.iter().map(|s| s.iterations).max().unwrap_or(0),
        converged: sols.iter().all(|s| s.termination == StopReason::Converged),
        alpha: sols.into_iter().map(|s| s.alpha).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// SIL
// ---------------------------------------------------------------------------------------------

hyperparams! {
    /// Hyperparameters of SIL (single-instance learning, Ray & Craven 2005), declared once and
    /// checked into [`SilValidParams`].
    pub struct SilParams => SilValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Relative KKT tolerance of the SMO.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap (`None`: the solver's default).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
    }
    fit -> PlainSvmFit, path path_impl;
}

impl SilValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, sharing
    /// the instance kernel): the path of the one value `C`.
    fn fit_impl(&self, setup: &Setup) -> Result<PlainSvmFit> {
        only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): the instance kernel
    /// once, then per binary problem one SMO solve per value ([`fit_points`]).
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<PlainSvmFit>> {
        let bags = setup.bags;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let owner: Vec<usize> = (0..bags.n_bags())
            .flat_map(|i| bags.bag_range(i).map(move |_| i))
            .collect();
        let fits = fit_points(
            setup,
            x,
            kernel,
            (self.inner_tol, self.inner_max_iter),
            Pooling::Max,
            cs,
            |problem| Ok(by_owner(&owner, problem)),
        )?;
        Ok(fits
            .into_iter()
            .map(|(model, sols)| record(model, gamma, sols))
            .collect())
    }
}

// ---------------------------------------------------------------------------------------------
// STK
// ---------------------------------------------------------------------------------------------

hyperparams! {
    /// Hyperparameters of STK (the statistic kernel of Gaertner et al. 2002), declared once and
    /// checked into [`StkValidParams`].
    pub struct StkParams => StkValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Relative KKT tolerance of the SMO.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap (`None`: the solver's default).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
    }
    fit -> PlainSvmFit, path path_impl;
}

/// The min/max statistic vectors of `bags` (`n_bags x 2 n_features`: per-feature minima, then
/// maxima; CSR bags count unstored values as zeros). The values are read once: [`Bags`] are
/// finite by construction.
pub fn bag_statistics(bags: &Bags) -> Result<Array2<f64>> {
    bags_min_max(bags)
}

impl StkValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, sharing
    /// the kernel of the statistic vectors): the path of the one value `C`.
    fn fit_impl(&self, setup: &Setup) -> Result<PlainSvmFit> {
        only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): the statistic vectors
    /// ([`bag_statistics`]), then [`Self::path_on`].
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<PlainSvmFit>> {
        let stats = Instances::from(bag_statistics(setup.bags)?);
        setup.observer.check()?;
        self.path_on(setup, &stats, cs)
    }

    /// The fits at the ascending values `cs` on the statistic vectors `stats` of the bags of
    /// `setup` (one row per bag): their kernel once, then per binary problem one SMO solve per
    /// value ([`fit_points`]).
    fn path_on(&self, setup: &Setup, stats: &Instances, cs: &[f64]) -> Result<Vec<PlainSvmFit>> {
        let (kernel, gamma) = self.kernel.resolve(self.gamma, stats);
        let owner: Vec<usize> = (0..setup.bags.n_bags()).collect();
        let fits = fit_points(
            setup,
            stats,
            kernel,
            (self.inner_tol, self.inner_max_iter),
            Pooling::Mean,
            cs,
            |problem| Ok(by_owner(&owner, problem)),
        )?;
        Ok(fits
            .into_iter()
            .map(|(mut model, sols)| {
                model.bag_features = BagFeatures::MinMax;
                record(model, gamma, sols)
            })
            .collect())
    }

    /// STK on bags already summarised: `statistics` holds the statistic vector of every
    /// training bag, one row per bag ([`bag_statistics`], or [`min_max_bags`] of bags given one
    /// by one), and `labels` their class indices. The fits at the values `cs` (any order,
    /// repeats allowed), in the order of `cs`: bit for bit [`crate::fit::FitPath::fit_path`] on
    /// the bags themselves, without their instances. Bags that are not stored together are
    /// summarised where they lie, with no stacked copy of their instances (which a fit on a few
    /// hundred small bags spends more time writing than the statistics take).
    pub fn fit_statistics(
        &self,
        statistics: Array2<f64>,
        labels: &[usize],
        cs: &[f64],
    ) -> Result<Vec<PlainSvmFit>> {
        if !statistics.ncols().is_multiple_of(2) {
            return Err(crate::error::Error::Mismatch(format!(
                "statistic vectors have {} columns: minima and maxima make an even number",
                statistics.ncols()
            )));
        }
        let path = CPath::new(cs)?;
        let n = statistics.nrows();
        // one bag per statistic vector: the prologue checks the labels against them
        let summaries = Bags::new(Instances::from(statistics), (0..=n).collect())?;
        let fits = Prologue {
            n_jobs: self.n_jobs,
            class_weight: Some(&self.class_weight),
            observer: &self.observer,
        }
        .run(&summaries, labels, |setup| {
            self.path_on(setup, summaries.instances(), &path.values)
        })?;
        Ok(path.in_given_order(fits))
    }
}
