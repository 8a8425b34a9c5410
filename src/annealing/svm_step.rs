//! The SVM step of the annealing loop: the weighted squared-hinge SVM at the costs given by `p`,
//! in the primal over a reduced basis ([`PrimalSvm`], exact Newton), in the dual over every
//! instance ([`SvmStep::Dual`], the SMO), or, for the linear kernel, in the primal over `w` in
//! `R^d` ([`LinearSvm`], Newton-CG), warm-started from the previous solve.

use ndarray::{Array1, Array2};

use super::bookkeeping::BinaryData;
use super::AnnealingMethod;
use crate::bags::Instances;
use crate::error::Result;
use crate::kernel::mat_vec;
use crate::progress::Cancel;
use crate::smo::{DualProblem, DualSolution, InstanceGram, Smo, SmoParams};
use crate::solver::linear::{LinearSolution, LinearSquaredHinge};
use crate::solver::{NewtonHessian, Solution, SquaredHinge};

/// The SVM step of the linear kernel over `w` in `R^d`: every instance one row with a cost per
/// target (a sample of the dual is a row and a target here).
pub(super) struct LinearSvm<'a> {
    pub(super) x: &'a Instances,
    /// The bags' row offsets (the leaves of the solver's sums).
    pub(super) bag_ptr: &'a [usize],
    /// The mean row of `x`, once for every solve ([`crate::solver::linear::mean_row`]).
    pub(super) mean: Vec<f64>,
    pub(super) tol: f64,
    pub(super) max_iter: usize,
    pub(super) cancel: Cancel,
}

/// The SVM step on a fixed basis: `1/2 beta^T K beta + sum_j [c+_j l(+1, f_j) + c-_j l(-1, f_j)]`,
/// `f = design beta + b`, solved by the exact primal Newton method, warm-started.
pub(super) struct PrimalSvm<'a> {
    pub(super) k_reg: &'a Array2<f64>,
    pub(super) design: &'a Array2<f64>,
    pub(super) tol: f64,
    pub(super) max_iter: usize,
}

impl PrimalSvm<'_> {
    /// Solves at the given costs from `warm`, updating the Newton Hessian kept in `hessian`
    /// (the basis and design never change within a fit).
    fn solve(
        &self,
        c_pos: &[f64],
        c_neg: &[f64],
        warm: Option<&Solution>,
        hessian: &mut Option<NewtonHessian>,
    ) -> Result<Solution> {
        let ones = vec![1.0; c_pos.len()];
        SquaredHinge {
            k: self.k_reg.view(),
            x: self.design.view(),
            y: &ones,
            c: c_pos,
            c_opp: c_neg,
        }
        .solve_newton_reusing(
            warm.map(|w| (w.beta.view(), w.b)),
            self.tol,
            self.max_iter,
            hessian,
        )
    }
}

/// Relative KKT tolerance of the dual solver in the annealing loop (LIBSVM's 1e-3). Measured
/// against 1e-4 with 10-fold CV (C = 10, gamma = median, seed 0): AL-SVM on MUSK1 and Elephant
/// and ALP-SVM on MUSK1 gave the same accuracies and p_hat, in less time
/// (`benches/bench_annealing_speed.py` times the fits).
pub(super) const DUAL_TOL: f64 = 1e-3;

/// Relative cost below which the dual solver drops a sample.
const DEAD_COST: f64 = 1e-10;

/// The SVM step of one binary problem, with its warm start.
pub(super) enum SvmStep<'a> {
    /// Reduced basis: the primal problem over the basis.
    Primal {
        svm: &'a PrimalSvm<'a>,
        warm: Option<Solution>,
        /// The Newton Hessian of the last solve, updated by the next one (boxed: it is large).
        hessian: Box<Option<NewtonHessian>>,
    },
    /// Linear kernel: the primal over `w`.
    Linear {
        svm: &'a LinearSvm<'a>,
        warm: Option<LinearSolution>,
    },
    /// Full basis: the dual of the squared-hinge SVM over the instances. Every instance has a
    /// sample per target it can take (+1 in positive bags, -1 in negative bags and, for the
    /// instance-label methods, in positive bags too); sample `s` with cost `c_s > 0` has
    /// `d_s = 1 / (2 c_s)`, `u_s = inf`, and a zero cost fixes `a_s = 0`.
    Dual {
        smo: Box<Smo<'a, InstanceGram<'a>>>,
        y: Vec<f64>,
        point: Vec<usize>,
        /// One sample of each instance (for its score).
        first: Vec<usize>,
        d: Vec<f64>,
        u: Vec<f64>,
        warm: Option<DualSolution>,
    },
}

impl<'a> SvmStep<'a> {
    pub(super) fn dual(
        gram: &'a InstanceGram<'a>,
        params: SmoParams,
        data: &BinaryData,
        method: AnnealingMethod,
        cancel: Cancel,
    ) -> Result<Self> {
        let n = data.n_instances();
        let (mut y, mut point, mut first) = (Vec::new(), Vec::new(), Vec::with_capacity(n));
        for (i, &t) in data.targets.iter().enumerate() {
            for j in data.bag_ptr[i]..data.bag_ptr[i + 1] {
                first.push(y.len());
                if t > 0.0 {
                    y.push(1.0);
                    point.push(j);
                }
                if t < 0.0 || method.labels_instances() {
                    y.push(-1.0);
                    point.push(j);
                }
            }
        }
        let len = y.len();
        Ok(SvmStep::Dual {
            smo: Box::new(Smo::new(gram, params)?.with_cancel(cancel)),
            y,
            point,
            first,
            d: vec![0.0; len],
            u: vec![0.0; len],
            warm: None,
        })
    }

    /// Solves at the given costs (warm-started); returns the primal objective.
    pub(super) fn solve(&mut self, c_pos: &[f64], c_neg: &[f64]) -> Result<f64> {
        match self {
            SvmStep::Primal { svm, warm, hessian } => {
                let sol = svm.solve(c_pos, c_neg, warm.as_ref(), hessian.as_mut())?;
                let value = sol.value;
                *warm = Some(sol);
                Ok(value)
            }
            SvmStep::Linear { svm, warm } => {
                let problem = LinearSquaredHinge {
                    x: svm.x,
                    bag_ptr: svm.bag_ptr,
                    c_pos,
                    c_neg,
                    mean: Some(&svm.mean),
                };
                let sol = problem.solve_from(warm.as_ref(), svm.tol, svm.max_iter, &svm.cancel)?;
                let value = sol.value;
                *warm = Some(sol);
                Ok(value)
            }
            SvmStep::Dual {
                smo,
                y,
                point,
                d,
                u,
                warm,
                ..
            } => {
                let c_max = c_pos.iter().chain(c_neg).fold(0.0_f64, |a, &b| a.max(b));
                for (s, (&ys, &m)) in y.iter().zip(point.iter()).enumerate() {
                    let c = if ys > 0.0 { c_pos[m] } else { c_neg[m] };
                    let inv = 0.5 / c;
                    // A cost below DEAD_COST of the largest one leaves the sample out (its loss
                    // term is below rounding of the objective; its dual variable would have a
                    // diagonal too large for the solver's arithmetic).
                    (d[s], u[s]) = if c > DEAD_COST * c_max && inv.is_finite() {
                        (inv, f64::INFINITY)
                    } else {
                        (0.0, 0.0)
                    };
                }
                let ones = vec![1.0; y.len()];
                let problem = DualProblem {
                    y,
                    point,
                    p: &ones,
                    d,
                    u,
                    delta: 0.0,
                };
                let sol = smo.solve(&problem, warm.as_ref())?;
                // Strong duality: the primal optimum is minus the dual one. A solve stopped at
                // the solver's (very large) iteration cap is still feasible and is kept.
                let value = -sol.objective;
                *warm = Some(sol);
                Ok(value)
            }
        }
    }

    /// The scores `f` of the training instances at the last solution.
    pub(super) fn scores_into(&self, f: &mut [f64]) {
        match self {
            SvmStep::Primal { svm, warm, hessian } => {
                if let Some(sol) = warm {
                    let carried = hessian
                        .as_ref()
                        .as_ref()
                        .and_then(|h| h.scores_at(sol.beta.view(), sol.b));
                    match carried {
                        Some(s) => f.iter_mut().zip(s).for_each(|(o, &v)| *o = v),
                        None => {
                            let s = mat_vec(svm.design.view(), sol.beta.view());
                            f.iter_mut()
                                .zip(s.iter())
                                .for_each(|(o, &v)| *o = v + sol.b);
                        }
                    }
                }
            }
            SvmStep::Linear { warm, .. } => {
                if let Some(sol) = warm {
                    f.copy_from_slice(&sol.scores);
                }
            }
            SvmStep::Dual { y, first, warm, .. } => {
                if let Some(sol) = warm {
                    for (o, &s) in f.iter_mut().zip(first.iter()) {
                        *o = y[s] * sol.q_alpha[s] + sol.b;
                    }
                }
            }
        }
    }

    /// The coefficients over the basis (full basis: one per instance, `sum_s y_s a_s` over its
    /// samples; linear: `w`) and the bias.
    pub(super) fn coef(&self, n_instances: usize) -> (Array1<f64>, f64) {
        match self {
            SvmStep::Linear { warm, .. } => warm
                .as_ref()
                .map_or((Array1::zeros(0), 0.0), |s| (s.w.clone(), s.b)),
            SvmStep::Primal { warm, .. } => warm
                .as_ref()
                .map_or((Array1::zeros(0), 0.0), |s| (s.beta.clone(), s.b)),
            SvmStep::Dual { y, point, warm, .. } => {
                let mut beta = Array1::zeros(n_instances);
                let mut b = 0.0;
                if let Some(sol) = warm {
                    for ((&ys, &m), &a) in y.iter().zip(point.iter()).zip(&sol.alpha) {
                        beta[m] += ys * a;
                    }
                    b = sol.b;
                }
                (beta, b)
            }
        }
    }
}
