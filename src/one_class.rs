//! One-class MI-SVM (Vijayanarasimhan's report, 003, Figures 1-2; ALGORITHMS.md section 5),
//! solved by [`crate::smo`].
//!
//! The one-class SVM of Schoelkopf et al. on the instances of the positive bags,
//! `min 1/2 ||w||^2 + 1/(nu l) sum_x xi_x - rho`, `w . phi(x) >= rho - xi_x`, whose dual is
//! `min 1/2 a^T K a`, `sum a = 1`, `0 <= a_x <= 1/(nu l)` (`l` instances): the SMO problem with
//! `y = 1, p = 0, delta = 1` ([`crate::smo`] module docs). With bag constraints, every positive
//! bag `X` adds `max_{x in X} w . phi(x) >= rho - Xi_X` with penalty `1/(nu n)` (`n` bags). For a
//! fixed choice of each bag's maximal instances the constraint is linear: a pseudo-sample
//! `sum_j c_j phi(x_j)` whose weights `c` spread 1 equally over the bag's currently maximal
//! instances, with bound `1/(nu n)` (a point of a [`ComboGram`]). The loop of Figure 2 starts
//! with `a = 0` for every bag (no pseudo-sample: the plain one-class SVM), then repeatedly
//! computes the scores, puts every bag's pseudo-sample on its current maximal instances (ties,
//! within `1e-10` relative, share the weight) and re-solves (warm-started), until no bag's
//! maximal instances changed (the linearised max constraints are then the true ones: none is
//! violated), or `max_iter` rounds ([`StopReason`]). With bag constraints at least two rounds
//! run (the report: 2-3).
//!
//! Scores: `f(x) = sum_s a_s k(s, x) - rho` (this scaling: `sum a = 1`; scikit-learn's
//! `OneClassSVM` reports LIBSVM's `nu l` times larger values), bag score `max_x f(x)`: the shared
//! model form with max pooling (one output; positive = inside the support).

use ndarray::Array1;

use crate::bags::{Bags, Rows};
use crate::error::{invalid_data, invalid_param, Result};
use crate::fit::{Fit, Prologue};
use crate::model::{Model, Pooling};
use crate::params::{hyperparams, n_jobs_from_value, Gamma, KernelKind, Range};
use crate::progress::{Progress, StopReason};
use crate::smo::{max_weights, ComboGram, DualSolution, InstanceGram, OnePerPoint, Smo, SmoParams};

hyperparams! {
    /// Hyperparameters of the one-class MI-SVM (Vijayanarasimhan, Figures 1-2), declared once
    /// and checked into [`OneClassValidParams`].
    pub struct OneClassParams => OneClassValidParams {
        /// `nu`: an upper bound on the fraction of outliers.
        nu: f64 = 0.5, check Range::OpenClosed01;
        /// Instance kernel family.
        kernel: KernelKind = KernelKind::Rbf;
        /// Kernel width (Gaussian kernel only).
        gamma: Gamma = Gamma::Scale, check Range::Positive;
        /// Whether to add the max constraint of every positive bag (Figure 2); `false` is the
        /// plain one-class SVM on the positive bags' instances.
        bag_constraints: bool = true;
        /// Cap on the constraint-activation rounds.
        max_iter: usize = 20, check Range::AtLeast(1);
        /// Relative KKT tolerance of the SMO.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// Threads (`None`: all cores). Results do not depend on it.
        n_jobs: Option<usize> = None, check Range::AtLeast(1), via n_jobs_from_value;
    }
}

crate::record::record! { $ fields: one_class_fit_fields;
    /// A fitted one-class MI-SVM.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OneClassFit {
        /// `f(x) = sum a k - rho` with max pooling (one output, `n_classes = 2`).
        pub model: Model,
        /// The offset `rho`.
        pub rho: f64,
        /// Dual variables of the instances of the positive bags (in instance order).
        pub alpha: Vec<f64>,
        /// Dual variables of the bag pseudo-samples (0 for inactive bags).
        pub bag_alpha: Vec<f64>,
        /// Which positive bags carried an active max constraint in the last solve.
        pub active: Vec<bool>,
        /// The dual objective `1/2 a^T K a` after each round.
        pub objective_history: Vec<f64>,
        /// Rounds run (1 without bag constraints).
        pub n_iter: usize,
        /// Why the loop stopped (converged: no max constraint was violated at the end).
        #[py(name = "converged")]
        pub stop_reason: StopReason,
        /// Whether every SMO solve met its tolerance.
        #[py(name = "inner_converged")]
        pub smo_converged: bool,
        /// The kernel width used.
        pub gamma: f64,
    }
}

impl Fit for OneClassValidParams {
    type Output = OneClassFit;

    /// Fits on the bags labelled 1 (`labels` in {0, 1}; the others are ignored).
    fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<OneClassFit> {
        if labels.len() != bags.n_bags() {
            return Err(invalid_data(format!(
                "{} labels for {} bags",
                labels.len(),
                bags.n_bags()
            )));
        }
        if let Some(&l) = labels.iter().find(|&&l| l > 1) {
            return Err(invalid_data(format!(
                "one-class labels must be 0 or 1 (1 = positive), got {l}"
            )));
        }
        let pos: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == 1).collect();
        if pos.is_empty() {
            return Err(invalid_data(
                "the one-class MI-SVM needs at least one positive bag",
            ));
        }
        let sub = bags.select_bags(&pos)?;
        Prologue {
            n_jobs: self.n_jobs,
            class_weight: None,
            observer: &self.observer,
        }
        .run_unlabelled(|| self.fit_impl(&sub))
    }
}

impl OneClassValidParams {
    fn fit_impl(&self, bags: &Bags) -> Result<OneClassFit> {
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let inst = InstanceGram::new(kernel, Rows::from(x))?;
        let l = bags.n_instances();
        let nb = bags.n_bags();
        let n = l + nb;
        let y = vec![1.0; n];
        let p = vec![0.0; n];
        let layout = OnePerPoint::new(n);
        let ui = 1.0 / (self.nu * l as f64);
        let ub = 1.0 / (self.nu * nb as f64);
        let mut u = vec![ui; l];
        u.extend(std::iter::repeat_n(0.0, nb));
        let smo_params = SmoParams {
            tol: self.inner_tol,
            ..SmoParams::default()
        };
        // pseudo-samples start uniform over their bag (inactive: u = 0)
        let mut weights: Vec<Vec<f64>> = (0..nb)
            .map(|i| {
                let k = bags.bag_range(i).len();
                vec![1.0 / k as f64; k]
            })
            .collect();
        let mut active = vec![false; nb];
        let mut warm: Option<DualSolution> = None;
        let mut history = Vec::new();
        let mut smo_converged = true;
        let mut stop_reason = StopReason::MaxIter;
        let mut n_iter = 0;
        let mut last: Option<(DualSolution, Vec<Vec<f64>>, Vec<bool>)> = None;
        for _ in 0..self.max_iter {
            self.observer.check()?;
            n_iter += 1;
            let mut points: Vec<Vec<(usize, f64)>> = (0..l).map(|t| vec![(t, 1.0)]).collect();
            points.extend((0..nb).map(|i| {
                bags.bag_range(i)
                    .zip(&weights[i])
                    .filter(|(_, &w)| w > 0.0)
                    .map(|(t, &w)| (t, w))
                    .collect::<Vec<_>>()
            }));
            let gram = ComboGram::new(&inst, x, kernel, points);
            let problem = layout.problem(&y, &p, &u, 1.0);
            let sol = Smo::new(&gram, smo_params)?
                .with_cancel(self.observer.cancel().clone())
                .solve(&problem, warm.as_ref())?;
            smo_converged &= sol.termination == StopReason::Converged;
            history.push(sol.objective);
            self.observer.notify(Progress {
                problem: 0,
                step: history.len(),
                max_steps: self.max_iter,
                objective: sol.objective,
                temperature: None,
                expected_steps: self.max_iter,
            });
            let active_used = active.clone();
            let f: Vec<f64> = sol.q_alpha[..l].iter().map(|q| q + sol.b).collect();
            let mut violated = false;
            let mut new_weights = weights.clone();
            for i in 0..nb {
                let w = max_weights(&f[bags.bag_range(i)]);
                if !active[i] || w != weights[i] {
                    violated = true;
                    new_weights[i] = w;
                    active[i] = true;
                    u[l + i] = ub;
                }
            }
            warm = Some(DualSolution::warm_start(sol.alpha.clone()));
            last = Some((sol, weights, active_used));
            weights = new_weights;
            if !self.bag_constraints || !violated {
                stop_reason = StopReason::Converged;
                break;
            }
        }
        let (sol, used, active) = match last {
            Some(v) => v,
            None => return Err(invalid_param("max_iter must be an integer >= 1, got 0")),
        };
        let mut beta = sol.alpha[..l].to_vec();
        for (i, (wi, &a)) in used.iter().zip(&sol.alpha[l..]).enumerate() {
            if a > 0.0 {
                for (t, &w) in bags.bag_range(i).zip(wi) {
                    beta[t] += a * w;
                }
            }
        }
        Ok(OneClassFit {
            model: Model::from_instance_coefficients(
                kernel,
                x,
                &[&beta],
                Array1::from(vec![sol.b]),
                2,
                Pooling::Max,
            ),
            rho: -sol.b,
            alpha: sol.alpha[..l].to_vec(),
            bag_alpha: sol.alpha[l..].to_vec(),
            active,
            objective_history: history,
            n_iter,
            stop_reason,
            smo_converged,
            gamma,
        })
    }
}
