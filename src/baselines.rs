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

use crate::bags::{Bags, Instances};
use crate::error::Result;
use crate::fit::{Problem, Setup};
use crate::kernel::{Kernel, Rows};
use crate::model::{bags_min_max, BagFeatures, Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::Cancel;
use crate::smo::{DualSolution, InstanceGram, OnePerPoint, Smo, SmoParams, Termination};

/// A fitted SIL or STK: the shared [`crate::fit::SvmFit`] (the instance expansion with max
/// pooling for SIL; the statistic vectors of the support bags with [`BagFeatures::MinMax`] for
/// STK).
pub type PlainSvmFit = crate::fit::SvmFit;

/// One hinge C-SVM dual over the points of `gram`: labels `y`, bounds `u`, linear term 1
/// (the problem `sklearn.svm.SVC` solves with per-sample bounds `u`). Also the second stage of
/// sbMIL and sAwMIL ([`crate::two_stage`]).
pub(crate) fn hinge_dual(
    gram: &InstanceGram<'_>,
    y: &[f64],
    u: &[f64],
    params: SmoParams,
    cancel: &Cancel,
) -> Result<DualSolution> {
    let layout = OnePerPoint::new(y.len());
    let p = vec![1.0; y.len()];
    Smo::new(gram, params)?
        .with_cancel(cancel.clone())
        .solve(&layout.problem(y, &p, u, 0.0), None)
}

/// The labels (+1 / -1) and bounds (`C w`) of the points of one binary problem.
pub(crate) type PointTargets = (Vec<f64>, Vec<f64>);

/// The targets of SIL and STK: point `t` takes the label of its bag `owner[t]` in the problem
/// and costs `c` times that bag's class weight.
pub(crate) fn by_owner(owner: &[usize], c: f64, problem: &Problem) -> PointTargets {
    let y = owner.iter().map(|&i| problem.targets[i]).collect();
    let u = owner.iter().map(|&i| c * problem.weights[i]).collect();
    (y, u)
}

/// The SVM over `points` (one per row) of every binary problem of `setup` (one-vs-rest beyond
/// two classes, sharing the kernel rows), with the labels and bounds `targets` gives each
/// problem's points; the model has coefficient `a_t y_t` on point `t`.
pub(crate) fn fit_points(
    setup: &Setup,
    points: &Instances,
    kernel: Kernel,
    smo: (f64, Option<usize>),
    pooling: Pooling,
    targets: impl Fn(&Problem) -> Result<PointTargets> + Sync,
) -> Result<(Model, Vec<DualSolution>)> {
    let (tol, max_iter) = smo;
    let gram = InstanceGram::new(kernel, Rows::from(points))?;
    let cancel = setup.observer.cancel();
    let sols = setup.one_vs_rest(|problem| {
        let (y, u) = targets(problem)?;
        let params = SmoParams {
            tol,
            max_iter,
            cache_bytes: problem.cache_bytes,
            ..SmoParams::default()
        };
        let sol = hinge_dual(&gram, &y, &u, params, cancel)?;
        let coef: Vec<f64> = sol.alpha.iter().zip(&y).map(|(a, y)| a * y).collect();
        Ok((coef, sol))
    })?;
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
    Ok((model, sols.into_iter().map(|(_, s)| s).collect()))
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
        converged: sols.iter().all(|s| s.termination == Termination::Converged),
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
    fit -> PlainSvmFit;
}

impl SilValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, sharing
    /// the instance kernel).
    fn fit_impl(&self, setup: &Setup) -> Result<PlainSvmFit> {
        let bags = setup.bags;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let owner: Vec<usize> = (0..bags.n_bags())
            .flat_map(|i| bags.bag_range(i).map(move |_| i))
            .collect();
        let (model, sols) = fit_points(
            setup,
            x,
            kernel,
            (self.inner_tol, self.inner_max_iter),
            Pooling::Max,
            |problem| Ok(by_owner(&owner, self.c, problem)),
        )?;
        Ok(record(model, gamma, sols))
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
    fit -> PlainSvmFit;
}

/// The min/max statistic vectors of `bags` (`n_bags x 2 n_features`: per-feature minima, then
/// maxima; CSR bags count unstored values as zeros). The values are read once: [`Bags`] are
/// finite by construction.
pub fn bag_statistics(bags: &Bags) -> Result<Array2<f64>> {
    bags_min_max(bags)
}

impl StkValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, sharing
    /// the kernel of the statistic vectors).
    fn fit_impl(&self, setup: &Setup) -> Result<PlainSvmFit> {
        let stats = Instances::from(bag_statistics(setup.bags)?);
        setup.observer.check()?;
        let (kernel, gamma) = self.kernel.resolve(self.gamma, &stats);
        let owner: Vec<usize> = (0..setup.bags.n_bags()).collect();
        let (mut model, sols) = fit_points(
            setup,
            &stats,
            kernel,
            (self.inner_tol, self.inner_max_iter),
            Pooling::Mean,
            |problem| Ok(by_owner(&owner, self.c, problem)),
        )?;
        model.bag_features = BagFeatures::MinMax;
        Ok(record(model, gamma, sols))
    }
}
