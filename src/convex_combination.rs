//! SVM-CC: the multi-instance SVM over convex combinations of Yang & Deng ("Multi-instance support
//! vector machine based on convex combination", 001; Algorithms 1-2, eq. 13-37; ALGORITHMS.md
//! section 4).
//!
//! A positive bag `X_i` is represented by a convex combination `x̄_i = sum_j v_ij phi(x_ij)`
//! (`v_i` on the simplex, uniform at the start); every instance of a negative bag stands alone.
//! The method alternates
//!
//! * **QP** (eq. 15-18 / 29-32): the hinge C-SVM dual over the points `{x̄_i: +1, bound C1}` and
//!   `{x_n: -1, bound C2}`, solved by [`crate::smo`] on [`ComboGram`], whose kernel rows are built
//!   from instance kernel rows (`k(x̄_i, x̄_k) = v_i^T K_{X_i X_k} v_k`,
//!   `k(x̄_i, x_n) = v_i^T K_{X_i x_n}`), never an `N x N` matrix; the previous `alpha` warm-starts
//!   the next solve. Bounds ([`CcBounds`], section 3): `C1 = C2 = C` for the linear kernel
//!   (Algorithm 1), `C1 = C n_neg / (n_pos_bags + n_neg)`, `C2 = C n_pos_bags / (n_pos_bags +
//!   n_neg)` (`n_neg` = negative instances) for the Gaussian kernel (Algorithm 2), times the class
//!   weight of the bag;
//! * **LP** (problem 23-28 with `w` fixed), solved exactly. With `s_ij = g(x_ij) =
//!   sum_s y_s a_s k(s, x_ij)` the instance scores (without `b`) and `G_i = max_j s_ij`, the
//!   weights `v` only enter the positive bags' slacks, `xi_i = max(0, 1 - v_i . s_i - b)` (eq. 24,
//!   26), and `v_i . s_i <= G_i`. So the LP's optimal value is
//!
//!   `min_b  sum_i c_i max(0, 1 - G_i - b) + sum_n c_n max(0, 1 + g_n + b)`,
//!
//!   a convex piecewise-linear function of `b` whose minimiser [`hinge_bias`] computes exactly (a
//!   weighted median of the breakpoints; the midpoint of the optimal interval when it is not a
//!   single point). That `b` is the LP's `b` with every rule below. Given it, `v_i` is optimal if
//!   and only if it keeps the bag's slack at its least value (eq. 27-28 and `c_i > 0`):
//!
//!   `v_i in F_i = {v in simplex: v . s_i >= t_i}`,  `t_i = min(G_i, 1 - b)`.
//!
//!   `F_i` is a whole face of the LP's optimal set unless the bag misses the margin with a unique
//!   best instance. Which point of it the step returns is [`LpRule`]:
//!   - [`LpRule::Project`] (the default): `v_i` unchanged when it is in `F_i`, else its Euclidean
//!     projection onto `F_i`, `argmin_{u in F_i} ||u - v_i||`. The projection is
//!     `P(v_i + lam s_i)` (`P` the projection onto the simplex) with the least `lam >= 0` for which
//!     `P(v_i + lam s_i) . s_i >= t_i` (the KKT conditions of the projection; the left side is
//!     nondecreasing in `lam`); [`project_onto_face`] finds `lam` by bisection to the last bit,
//!     keeping the side where the constraint holds, so the returned `v` is optimal up to rounding;
//!     `t_i = G_i` gives the projection onto the simplex of the best instances. The paper solved
//!     the LP with MATLAB's `linprog` (section 3), whose default algorithm was then an
//!     interior-point method, which stops inside the optimal face rather than at a vertex; this
//!     rule stays inside the face too (a bag that clears the margin keeps its combination) and
//!     moves `v` as little as the LP requires.
//!   - [`LpRule::Max`]: `v_i` on the best instances of the bag (ties share the weight equally,
//!     [`max_weights`]), a vertex of `F_i`; the alternation is then MI-SVM started from the bag
//!     means (milsvm's only rule before `lp_rule` existed).
//!
//! It stops when `||v_new - v||_2 < tol` (the paper: 1e-4) or after `max_iter` (80) rounds
//! ([`StopReason`]). The decision function is eq. 35: the instance score
//! `g(x) = sum_i a_i sum_j v_ij k(x_ij, x) - sum_n a_n k(x_n, x) + b` with the `alpha` and `v` of
//! the last QP; `b` is the LP's (eq. 20, Algorithm 1) for the linear kernel and the QP's
//! (eq. 36-37, LIBSVM's average over free support vectors) for the Gaussian kernel, as in the
//! paper. A bag is positive when one of its instances is (the MI assumption of section 1), so the
//! bag score is the max of the instance scores: the shared model form with max pooling. With the
//! linear kernel the model holds the explicit weight vector `w` as its only expansion vector
//! (sparse instances stay sparse throughout).

use crate::bags::{Bags, Instances, Rows};
use crate::choice::choices;
use crate::error::{invalid_param, Result};
use crate::fit::{Problem, Setup};
use crate::kernel::Kernel;
use crate::model::{Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range, SvmRoute};
use crate::progress::{Progress, StopReason};
use crate::smo::{max_weights, ComboGram, DualSolution, InstanceGram, OnePerPoint, Smo, SmoParams};
use crate::solver::hinge_bias;
use crate::solver::linear_hinge::{row_scores, HingeLoss, LinearHinge};

choices! {
    /// Which optimal `v` SVM-CC's LP step returns: with `w` fixed the LP's optimum in `v` is in
    /// general a whole face (module docs).
    pub enum LpRule {
        /// `v_i` unchanged while it is optimal, else its Euclidean projection onto the bag's
        /// optimal set `{v in simplex: v . s_i >= min(G_i, 1 - b)}` ([`project_onto_face`]): a
        /// point inside the optimal face, as the paper's interior-point `linprog` returned.
        Project = "project",
        /// `v_i` on the bag's best instances (ties share equally, [`max_weights`]): a vertex of
        /// the face, which makes the alternation MI-SVM started from the bag means.
        Max = "max",
    }
}

choices! {
    /// The QP's bounds: `C1` on the positive bags' combinations, `C2` on the negative instances
    /// (times the class weights).
    pub enum CcBounds {
        /// The paper's (section 3): `C1 = C2 = C` for the linear kernel (Algorithm 1), the split
        /// bounds for the Gaussian kernel (Algorithm 2).
        Paper = "paper",
        /// `C1 = C n_neg / (n_pos_bags + n_neg)`, `C2 = C n_pos_bags / (n_pos_bags + n_neg)`
        /// (`n_neg` the negative instances) with either kernel (Algorithm 2's bounds; milsvm's
        /// before `bounds` existed).
        Split = "split",
        /// `C1 = C2 = C` with either kernel.
        Equal = "equal",
    }
}

/// SVM-CC's LP step (problem 23-28 with `w` fixed), exact: `scores[i]` holds the instance scores
/// `s_ij` (without `b`) of positive bag `i`, `v[i]` its current weights (on the simplex; read by
/// [`LpRule::Project`] only), `cp[i]` its slack weight; `neg` / `cn` the scores and slack weights
/// of the negative instances. Returns the new `v` and the LP's `b` ([`hinge_bias`] on the bags'
/// best scores; optimal with either rule). A bag of weight 0 keeps its `v` under
/// [`LpRule::Project`] (every `v` is optimal for it).
pub fn lp_step(
    rule: LpRule,
    scores: &[&[f64]],
    v: &[Vec<f64>],
    cp: &[f64],
    neg: &[f64],
    cn: &[f64],
) -> (Vec<Vec<f64>>, f64) {
    let best: Vec<f64> = scores.iter().map(|s| bag_max(s)).collect();
    let b = hinge_bias(&best, cp, neg, cn);
    let new_v = match rule {
        LpRule::Max => scores.iter().map(|s| max_weights(s)).collect(),
        LpRule::Project => scores
            .iter()
            .zip(v)
            .zip(cp)
            .map(|((s, vi), &c)| {
                if c > 0.0 {
                    project_onto_face(vi, s, 1.0 - b)
                } else {
                    vi.clone()
                }
            })
            .collect(),
    };
    (new_v, b)
}

fn bag_max(s: &[f64]) -> f64 {
    s.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// The point of `F = {u in simplex: u . s >= min(level, max s)}` closest to `v` (Euclidean; `v`
/// on the simplex, `s` finite and not empty): `v` itself when it lies in `F` (SVM-CC's
/// [`LpRule::Project`], with `level = 1 - b`); `v` is taken to lie in `F` when `v . s >= t` as
/// computed or when it weighs only instances of score `>= t`.
///
/// With `t = min(level, max s)`: when `t = max s`, `F` is the simplex of the best instances and
/// the result the projection of `v`'s entries there. Otherwise the KKT conditions give
/// `u = P(v + lam s)` (`P` the projection onto the simplex) for the least `lam >= 0` with
/// `u . s >= t`; `u . s` is nondecreasing in `lam`, so `lam` is found by bisection until the
/// bracket is two adjacent floats, and `u` is taken at the bracket's upper end, where the
/// constraint holds. The bisection works on the scores shifted by their max (`P` is unchanged by
/// it): the entries `P` keeps then stay within `[-1, 1]` for every `lam`, with no cancellation.
pub fn project_onto_face(v: &[f64], s: &[f64], level: f64) -> Vec<f64> {
    let top = bag_max(s);
    let t = level.min(top);
    // kept when optimal as the LP states it, v . s >= t, or when every instance it weighs scores
    // >= t (then v . s >= t exactly, whatever the rounding of the sum: weights on tied best
    // instances stay as they are)
    let kept = v.iter().zip(s).map(|(a, b)| a * b).sum::<f64>() >= t
        || v.iter().zip(s).all(|(&a, &x)| a == 0.0 || x >= t);
    if kept {
        return v.to_vec();
    }
    let d: Vec<f64> = s.iter().map(|&x| x - top).collect();
    let goal = (level - top).min(0.0);
    let dot = |u: &[f64]| u.iter().zip(&d).map(|(a, b)| a * b).sum::<f64>();
    let mut scratch = Vec::with_capacity(s.len());
    if goal >= 0.0 {
        // the simplex of the best instances
        let best: Vec<usize> = (0..d.len()).filter(|&j| d[j] == 0.0).collect();
        let sub: Vec<f64> = best.iter().map(|&j| v[j]).collect();
        let mut p = Vec::with_capacity(sub.len());
        simplex_projection(&sub, &mut scratch, &mut p);
        let mut u = vec![0.0; s.len()];
        for (&j, &x) in best.iter().zip(&p) {
            u[j] = x;
        }
        return u;
    }
    // At lam = 4 / gap every entry off the best instances is <= 1 - 4 while P's threshold is
    // >= -1, so P keeps the best instances only and u . d = 0 >= goal.
    let gap = d
        .iter()
        .filter(|&&x| x < 0.0)
        .fold(f64::INFINITY, |m, &x| m.min(-x));
    let (mut lo, mut hi) = (0.0, (4.0 / gap).min(f64::MAX));
    let mut z = Vec::with_capacity(s.len());
    let mut at = |lam: f64, u: &mut Vec<f64>| {
        z.clear();
        z.extend(v.iter().zip(&d).map(|(a, b)| a + lam * b));
        simplex_projection(&z, &mut scratch, u);
    };
    let mut u = Vec::with_capacity(s.len());
    let mut trial = Vec::with_capacity(s.len());
    at(hi, &mut u);
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        at(mid, &mut trial);
        if dot(&trial) >= goal {
            hi = mid;
            std::mem::swap(&mut u, &mut trial);
        } else {
            lo = mid;
        }
    }
    u
}

/// The Euclidean projection of `z` onto the simplex into `out`: `max(z_j - theta, 0)` with the
/// threshold of the sorted-prefix rule (Held, Wolfe and Crowder; `sorted` is scratch space).
fn simplex_projection(z: &[f64], sorted: &mut Vec<f64>, out: &mut Vec<f64>) {
    sorted.clear();
    sorted.extend_from_slice(z);
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let (mut cum, mut theta) = (0.0, 0.0);
    for (k, &x) in sorted.iter().enumerate() {
        cum += x;
        let t = (cum - 1.0) / (k + 1) as f64;
        if x - t > 0.0 {
            theta = t;
        } else {
            break;
        }
    }
    out.clear();
    out.extend(z.iter().map(|&x| (x - theta).max(0.0)));
}

hyperparams! {
    /// Hyperparameters of SVM-CC (Yang & Deng, Algorithms 1-2), declared once and checked into
    /// [`SvmCcValidParams`].
    pub struct SvmCcParams => SvmCcValidParams {
        shared(kernel = KernelKind::Linear);
        /// Cap on the QP / LP rounds (the paper: 80).
        max_iter: usize = 80, check Range::AtLeast(1);
        /// Stop when `||v_new - v||_2 < tol` (the paper: 1e-4).
        tol: f64 = 1e-4, check Range::Positive;
        /// Relative KKT tolerance of the SMO solving each QP.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// Which optimal `v` the LP step returns (its optimum in `v` is a face).
        lp_rule: LpRule = LpRule::Project;
        /// The QP's bounds `C1` (positive bags) and `C2` (negative instances).
        bounds: CcBounds = CcBounds::Paper;
        /// How each QP is solved: `kernel` (the SMO over the combinations and the negative
        /// instances), `linear` (the linear kernel only: `w` explicit, dual coordinate descent,
        /// `O(nnz)` per pass, warm-started across rounds; [`crate::solver::linear_hinge`]);
        /// `auto`: `linear` for the linear kernel.
        solver: SvmRoute = SvmRoute::Auto;
    }
    cross_check check_svmcc;
    fit -> SvmCcFit;
}

/// `solver = "linear"` has the linear kernel.
fn check_svmcc(p: &SvmCcValidParams) -> Result<()> {
    crate::params::check_route(p.solver, p.kernel)
}

/// Passes per QP of the linear route's coordinate descent.
const LINEAR_MAX_PASSES: usize = 1000;

crate::record::record! { $ fields: svm_cc_fit_fields;
    /// A fitted SVM-CC with its training record (one entry per binary problem).
    #[derive(Debug, Clone, PartialEq)]
    pub struct SvmCcFit {
        /// Instance classifier (eq. 35) with max pooling.
        pub model: Model,
        /// Per problem: the positive bags (indices into the training bags).
        pub positive_bags: Vec<Vec<usize>>,
        /// Per problem: the final `v` of every positive bag (the last LP's).
        pub v: Vec<Vec<Vec<f64>>>,
        /// Per problem: the LP's bias of the last round.
        pub lp_intercept: Vec<f64>,
        /// Per problem: the QP's bias of the last round (eq. 36-37).
        pub qp_intercept: Vec<f64>,
        /// Per problem: `1/2 ||w||^2 + sum c xi` after each round's LP.
        pub objective_history: Vec<Vec<f64>>,
        /// Per problem: `||v_new - v||_2` of each round.
        pub dv_history: Vec<Vec<f64>>,
        /// Per problem: rounds run.
        pub n_iter: Vec<usize>,
        /// Per problem: why it stopped (converged: the change of `v` fell below `tol`).
        #[py(name = "converged")]
        pub stop_reason: Vec<StopReason>,
        /// Whether every SMO solve met its tolerance.
        #[py(name = "inner_converged")]
        pub smo_converged: bool,
        /// The kernel width used.
        pub gamma: f64,
    }
}

struct BinaryRun {
    beta: Vec<f64>,
    b: f64,
    positive_bags: Vec<usize>,
    v: Vec<Vec<f64>>,
    lp_b: f64,
    qp_b: f64,
    objective_history: Vec<f64>,
    dv_history: Vec<f64>,
    n_iter: usize,
    stop_reason: StopReason,
    smo_converged: bool,
}

impl SvmCcValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes).
    fn fit_impl(&self, setup: &Setup) -> Result<SvmCcFit> {
        let bags = setup.bags;
        let n_classes = setup.n_classes;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let inst = InstanceGram::new(kernel, Rows::from(x))?;
        let runs = setup.one_vs_rest(|problem| self.run_binary(&inst, bags, problem, kernel))?;
        // the linear kernel collapses into one weight vector per output
        let coefs: Vec<&[f64]> = runs.iter().map(|r| r.beta.as_slice()).collect();
        let model = Model::from_instance_coefficients(
            kernel,
            x,
            &coefs,
            runs.iter().map(|r| r.b).collect(),
            n_classes,
            Pooling::Max,
        );
        let smo_converged = runs.iter().all(|r| r.smo_converged);
        Ok(crate::fit::per_problem!(runs => SvmCcFit {
            positive_bags, v, lp_intercept: lp_b, qp_intercept: qp_b, objective_history,
            dv_history, n_iter, stop_reason,
        } {
            model,
            smo_converged,
            gamma,
        }))
    }

    /// The samples of one binary problem's QP: the positive bags' combinations and the
    /// negative instances (live), then the positive bags' instances (dead, `u = 0`: their
    /// `q_alpha` gives the scores the LP needs).
    fn samples(&self, bags: &Bags, problem: &Problem, linear: bool) -> CcSamples {
        let (targets, weights) = (&problem.targets, &problem.weights);
        let pos: Vec<usize> = (0..bags.n_bags()).filter(|&i| targets[i] > 0.0).collect();
        let neg: Vec<(usize, usize)> = (0..bags.n_bags())
            .filter(|&i| targets[i] <= 0.0)
            .flat_map(|i| bags.bag_range(i).map(move |t| (t, i)))
            .collect();
        let pos_inst: Vec<usize> = pos.iter().flat_map(|&i| bags.bag_range(i)).collect();
        let (n_pb, n_ni) = (pos.len() as f64, neg.len() as f64);
        let (c1, c2) = match (self.bounds, linear) {
            (CcBounds::Equal, _) | (CcBounds::Paper, true) => (self.c, self.c),
            (CcBounds::Split, _) | (CcBounds::Paper, false) => {
                (self.c * n_ni / (n_pb + n_ni), self.c * n_pb / (n_pb + n_ni))
            }
        };
        let (mp, mn) = (pos.len(), neg.len());
        let mut y = vec![1.0; mp];
        y.extend(std::iter::repeat_n(-1.0, mn));
        y.extend(std::iter::repeat_n(1.0, pos_inst.len()));
        let mut u: Vec<f64> = pos.iter().map(|&i| c1 * weights[i]).collect();
        u.extend(neg.iter().map(|&(_, i)| c2 * weights[i]));
        u.extend(std::iter::repeat_n(0.0, pos_inst.len()));
        let p = vec![1.0; y.len()];
        CcSamples {
            pos,
            neg,
            pos_inst,
            y,
            u,
            p,
        }
    }

    /// One QP of the alternation on the combinations `points` (one per positive bag, then one
    /// per negative instance): its solution, the scores `g` (without `b`) at the positive bags'
    /// instances and at the negative instances, and `||w||^2`.
    #[allow(clippy::too_many_arguments)]
    fn qp_step(
        &self,
        cc: &CcSamples,
        inst: &InstanceGram,
        x: &Instances,
        kernel: Kernel,
        mut points: Vec<Vec<(usize, f64)>>,
        warm: Option<&DualSolution>,
        smo_params: SmoParams,
    ) -> Result<QpStep> {
        let (mp, mn) = (cc.pos.len(), cc.neg.len());
        if self.solver.for_kernel(self.kernel) == SvmRoute::Linear {
            // w explicit: the QP over the combinations and the negative instances, the
            // scores as X w
            let live = mp + mn;
            let lin = LinearHinge {
                x,
                points: &points,
                y: &cc.y[..live],
                p: &cc.p[..live],
                u: &cc.u[..live],
                loss: HingeLoss::Hinge,
            };
            let start = warm.map(|s| (&s.alpha[..live], s.b));
            let s = lin.solve(
                start,
                self.inner_tol,
                LINEAR_MAX_PASSES,
                self.observer.cancel(),
            )?;
            let scores = row_scores(x, &s.w);
            let g_pos: Vec<f64> = cc.pos_inst.iter().map(|&t| scores[t]).collect();
            let g_neg: Vec<f64> = cc.neg.iter().map(|&(t, _)| scores[t]).collect();
            let w2: f64 = s.w.iter().map(|v| v * v).sum();
            let sol = DualSolution {
                q_alpha: Vec::new(),
                b: s.b,
                objective: s.dual_objective,
                iterations: s.passes,
                termination: if s.converged {
                    StopReason::Converged
                } else {
                    StopReason::MaxIter
                },
                alpha: s.alpha,
            };
            return Ok(QpStep {
                sol,
                g_pos,
                g_neg,
                w2,
            });
        }
        points.extend(cc.pos_inst.iter().map(|&t| vec![(t, 1.0)]));
        let gram = ComboGram::new(inst, x, kernel, points);
        let layout = OnePerPoint::new(cc.y.len());
        let problem = layout.problem(&cc.y, &cc.p, &cc.u, 0.0);
        let sol = Smo::new(&gram, smo_params)?
            .with_cancel(self.observer.cancel().clone())
            .solve(&problem, warm)?;
        // scores g (without b) at the positive-bag instances and the negative instances
        let g_pos = sol.q_alpha[mp + mn..].to_vec();
        let g_neg: Vec<f64> = sol.q_alpha[mp..mp + mn].iter().map(|q| -q).collect();
        let w2: f64 = sol.alpha.iter().zip(&sol.q_alpha).map(|(a, q)| a * q).sum();
        Ok(QpStep {
            sol,
            g_pos,
            g_neg,
            w2,
        })
    }

    /// One binary problem: the QP / LP alternation.
    fn run_binary(
        &self,
        inst: &InstanceGram,
        bags: &Bags,
        problem: &Problem,
        kernel: Kernel,
    ) -> Result<BinaryRun> {
        let x = bags.instances();
        let linear = kernel == Kernel::Linear;
        let cc = self.samples(bags, problem, linear);
        let (pos, neg, u) = (&cc.pos, &cc.neg, &cc.u);
        let (mp, mn) = (pos.len(), neg.len());
        let smo_params = SmoParams {
            tol: self.inner_tol,
            cache_bytes: problem.cache_bytes,
            ..SmoParams::default()
        };
        let mut v: Vec<Vec<f64>> = pos
            .iter()
            .map(|&i| {
                let k = bags.bag_range(i).len();
                vec![1.0 / k as f64; k]
            })
            .collect();
        let mut warm: Option<DualSolution> = None;
        let mut objective_history = Vec::new();
        let mut dv_history = Vec::new();
        let mut stop_reason = StopReason::MaxIter;
        let mut smo_converged = true;
        let mut last: Option<(DualSolution, Vec<Vec<f64>>, f64)> = None;
        let mut n_iter = 0;
        for _ in 0..self.max_iter {
            self.observer.check()?;
            n_iter += 1;
            let mut points: Vec<Vec<(usize, f64)>> = pos
                .iter()
                .zip(&v)
                .map(|(&i, vi)| {
                    bags.bag_range(i)
                        .zip(vi)
                        .filter(|(_, &w)| w > 0.0)
                        .map(|(t, &w)| (t, w))
                        .collect()
                })
                .collect();
            points.extend(neg.iter().map(|&(t, _)| vec![(t, 1.0)]));
            let QpStep {
                sol,
                g_pos,
                g_neg,
                w2,
            } = self.qp_step(&cc, inst, x, kernel, points, warm.as_ref(), smo_params)?;
            smo_converged &= sol.termination == StopReason::Converged;
            let mut scores = Vec::with_capacity(mp);
            let mut off = 0;
            for &i in pos {
                let k = bags.bag_range(i).len();
                scores.push(&g_pos[off..off + k]);
                off += k;
            }
            let (new_v, lp_b) =
                lp_step(self.lp_rule, &scores, &v, &u[..mp], &g_neg, &u[mp..mp + mn]);
            let objective = 0.5 * w2 + lp_loss(&scores, &g_neg, u, lp_b);
            objective_history.push(objective);
            self.observer.notify(Progress {
                problem: problem.index,
                step: objective_history.len(),
                max_steps: self.max_iter,
                objective,
                temperature: None,
                expected_steps: self.max_iter,
            });
            let dv = v
                .iter()
                .flatten()
                .zip(new_v.iter().flatten())
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            dv_history.push(dv);
            let used_v = std::mem::replace(&mut v, new_v);
            warm = Some(DualSolution {
                q_alpha: Vec::new(),
                ..sol.clone()
            });
            last = Some((sol, used_v, lp_b));
            if dv < self.tol {
                stop_reason = StopReason::Converged;
                break;
            }
        }
        let (sol, used_v, lp_b) = match last {
            Some(l) => l,
            None => return Err(invalid_param("max_iter must be an integer >= 1, got 0")),
        };
        let beta = instance_coefficients(bags, &cc, &used_v, &sol.alpha);
        // Algorithm 1 (linear) takes the LP's bias (eq. 20), Algorithm 2 the QP's (eq. 36-37)
        let b = if linear { lp_b } else { sol.b };
        Ok(BinaryRun {
            beta,
            b,
            positive_bags: cc.pos,
            v,
            lp_b,
            qp_b: sol.b,
            objective_history,
            dv_history,
            n_iter,
            stop_reason,
            smo_converged,
        })
    }
}

/// The samples of one binary problem's QP ([`SvmCcValidParams::samples`]).
struct CcSamples {
    /// The positive bags.
    pos: Vec<usize>,
    /// Each negative instance and its bag.
    neg: Vec<(usize, usize)>,
    /// The positive bags' instances, bag by bag.
    pos_inst: Vec<usize>,
    /// Labels, upper bounds and linear terms of every sample.
    y: Vec<f64>,
    u: Vec<f64>,
    p: Vec<f64>,
}

/// One QP's solution and the scores the LP needs ([`SvmCcValidParams::qp_step`]).
struct QpStep {
    sol: DualSolution,
    g_pos: Vec<f64>,
    g_neg: Vec<f64>,
    w2: f64,
}

/// The LP's optimal value: each bag's slack at its best score (any optimal `v` has it), and
/// each negative instance's.
fn lp_loss(scores: &[&[f64]], g_neg: &[f64], u: &[f64], lp_b: f64) -> f64 {
    let mp = scores.len();
    let big_g: Vec<f64> = scores.iter().map(|s| bag_max(s)).collect();
    big_g
        .iter()
        .zip(&u[..mp])
        .map(|(g, c)| c * (1.0 - g - lp_b).max(0.0))
        .chain(
            g_neg
                .iter()
                .zip(&u[mp..mp + g_neg.len()])
                .map(|(g, c)| c * (1.0 + g + lp_b).max(0.0)),
        )
        .sum()
}

/// Eq. 35: instance coefficients from the last QP's `alpha` and the combinations `v` it ran on.
fn instance_coefficients(
    bags: &Bags,
    cc: &CcSamples,
    used_v: &[Vec<f64>],
    alpha: &[f64],
) -> Vec<f64> {
    let mp = cc.pos.len();
    let mut beta = vec![0.0; bags.n_instances()];
    for (j, (&i, vi)) in cc.pos.iter().zip(used_v).enumerate() {
        for (t, &w) in bags.bag_range(i).zip(vi) {
            beta[t] += alpha[j] * w;
        }
    }
    for (k, &(t, _)) in cc.neg.iter().enumerate() {
        beta[t] -= alpha[mp + k];
    }
    beta
}
