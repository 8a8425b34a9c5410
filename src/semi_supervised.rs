//! Multiple-instance learning as transductive / semi-supervised learning, solved by the
//! concave-convex procedure (CCCP): stMIL (Bunescu & Mooney, "Multiple instance learning for
//! sparse positive bags", ICML 2007, the sparse transductive formulation) and MissSVM (Zhou &
//! Xu, "On the relation between multi-instance learning and semi-supervised learning", ICML
//! 2007, pp. 1167-1174). One declaration, [`CccpParams`], with the formulation as its `method`
//! parameter ([`CccpMethod`]) and a constructor per method ([`CccpParams::stmil`],
//! [`CccpParams::misssvm`]).
//!
//! **Sources.** Neither paper's text could be read while this module was written (they are not
//! in the project's sources, and the search corpora hold only abstracts and summaries of them),
//! so no section or equation numbers are cited. What is verified, and where:
//!
//! * Doran's `misvm` (github.com/garydoranjr/misvm, `misvm/stmil.py`, `misvm/misssvm.py`,
//!   `misvm/smil.py`, `misvm/cccp.py`; the implementation behind Doran & Ray, "A theoretical and
//!   empirical analysis of support vector machine methods for multiple-instance
//!   classification", Machine Learning 2014), read for the formulations, never copied: the
//!   three sample groups and their costs, the starts, the linearisations, the restarts;
//! * for MissSVM, a summary of the paper (liner.com) and course slides on it (slideshare,
//!   "MissSVM: Multi Instance Learning by Semi-Supervised SVM"): instances of negative bags are
//!   labelled negative, those of positive bags unlabelled with the symmetric hinge
//!   `D(z) = min(H(z), H(-z))`, each positive bag must have a positive instance, slacks on the
//!   three groups, solved by the constrained CCCP with subgradients of `max` and `min`, a bag
//!   positive when one of its instances is.
//!
//! Everything else below (the exact cost normalisation, the bias rule, the restarts' draws,
//! stMIL's bag rule) is this crate's reading, said so where it is used.
//!
//! Notation: instance score `f(x) = g(x) + b`, `g(x) = sum_t beta_t k(x_t, x)`; `N_n` the
//! instances of negative bags (`L_n` of them), `X_p` the positive bags, `N_p` the instances of
//! positive bags; `w_-`, `w_+` the class weights; `H(z) = max(0, 1 - z)` the hinge; `tau` the
//! `transductive_weight`.
//!
//! **Costs** (as `misvm` weighs the groups of both methods): the three groups weigh the same in
//! total when `tau = 1` and the class weights are uniform. A negative instance costs
//! `c_- = C w_-` (as in SIL and this crate's sMIL), a positive bag `c_+ = C w_+ L_n / |X_p|`, an
//! instance of a positive bag `c_t = tau C w_+ L_n / N_p`. (`misvm`'s stMIL divides each group's
//! `C` by its size, its MissSVM multiplies the positive groups' by `L_n` over their size: the
//! same ratios, another scale of `C`; this crate keeps `C` per negative instance so that the
//! grids of SIL and sMIL carry over.) Measured on the benchmarks (benches/RESULTS.md), the
//! earlier per-unit costs (`C w` per negative instance and per positive bag) left the positive
//! bags outweighed `L_n / |X_p|` to one (8 to 1 on TST1): MissSVM's positive bags then sat just
//! below 0 and stMIL called every bag negative at `C = 1`. `class_weight={positive: |X_p| /
//! L_n}` gives those per-unit costs back.
//!
//! **stMIL** (sMIL plus the transductive constraints `|f(x)| >= 1 - xi_x` on the instances of
//! positive bags) minimises
//!
//! `J = 1/2 ||w||^2 + sum_{x in N_n} c_- H(-f(x)) + sum_{X in X_p} c_+ H_X(F(X)) +
//! sum_{x in N_p} c_t max(0, 1 - |f(x)|)`
//!
//! where `F(X) = (1/|X|) sum_{x in X} f(x)` is the bag's mean score and
//! `H_X(z) = max(0, (2 - |X|)/|X| - z)` is sMIL's relaxed bag hinge (one positive instance at
//! `+1`, the others at `-1`; `misvm`'s linear term `2/|X| - 1` for the bag samples). `misvm`'s
//! stMIL has no balancing constraint on the fraction of positive instances (its sbMIL, a
//! separate method, has one, `eta`), and neither has this one.
//!
//! **MissSVM** minimises
//!
//! `J = 1/2 ||w||^2 + sum_{x in N_n} c_- H(-f(x)) + sum_{X in X_p} c_+ H(max_{x in X} f(x)) +
//! sum_{x in N_p} c_t max(0, 1 - |f(x)|)`.
//!
//! **The CCCP** (Yuille & Rangarajan 2003; in its constrained form, Smola, Vishwanathan &
//! Hofmann 2005; the transductive part as in Collobert, Sinz, Weston & Bottou, "Large scale
//! transductive SVMs", JMLR 2006; MissSVM's summary names the constrained CCCP, `misvm` runs
//! both methods so): both objectives are convex but for two
//! terms, each of which is a convex function of a *concave* function of `(w, b)` whose
//! linearisation at the current iterate bounds it from above and touches it there:
//!
//! * `max(0, 1 - |f|) = min(H(f), H(-f)) <= H(s f)` for `s = sign(f_k)` (the linearisation
//!   `|f| >= s f` of the convex `|f|` in the constraint `|f| >= 1 - xi`); equal at `f_k`;
//! * `H(max_x f(x)) <= H(sum_x v_x f(x))` for `v` on the simplex with support on the maximisers
//!   of `f_k` over the bag (a subgradient of the convex `max`): a pseudo-instance, the
//!   combination `sum_x v_x phi(x)`. This crate takes the first maximiser (one instance, the
//!   bag's *witness*); every choice is a valid subgradient.
//!
//! Replacing the two terms by these bounds gives a convex surrogate `J_k >= J` with
//! `J_k(w_k, b_k) = J(w_k, b_k)`; its minimiser `(w_{k+1}, b_{k+1})` therefore satisfies
//! `J(w_{k+1}, b_{k+1}) <= J_k(w_{k+1}, b_{k+1}) <= J_k(w_k, b_k) = J(w_k, b_k)`: the objective
//! never increases. Each surrogate is a hinge C-SVM whose dual
//!
//! `min 1/2 a^T Q a - p^T a,  y^T a = 0,  0 <= a_s <= u_s`
//!
//! [`Smo`] solves, over the samples
//!
//! * every negative instance: `y = -1`, `p = 1`, `u = c_-`;
//! * every positive bag: `y = +1`, `u = c_+`, its point the bag mean with `p = (2 - |X|)/|X|`
//!   (stMIL) or its witness with `p = 1` (MissSVM);
//! * every instance of a positive bag with sign `s`: one sample `y = s` at the instance, `p = 1`,
//!   `u = c_t` (the hinge `H(s f)`); with the start's sign 0, MissSVM's two samples `y = +1` and
//!   `y = -1` at `c_t / 2` each, and stMIL's one *probe* `y = +1, u = 0` (a fixed `a = 0`, there
//!   only for its score). The copy of the other sign, whose bound would be 0, is left out: a dead
//!   sample would cost every SMO iteration a scan for nothing. The samples of sign `+1` come
//!   before those of sign `-1`, each group in instance order.
//!
//! The kernel source is one [`ComboGram`] over every instance plus the positive bags' means,
//! the same at every step (only labels, bounds and the bag samples' points change), so that one
//! [`Smo`] and its kernel-row cache serve the whole run; each solve is warm-started from the
//! previous step's `alpha` (clipped to the new bounds, the equality repaired).
//!
//! After each solve the bias is set to the exact minimiser of the surrogate over `b` with `w`
//! fixed ([`hinge_bias`], a weighted median; this crate's choice), so that the decrease above
//! holds for the returned `(w, b)` whatever the SMO's tolerance left in its own bias.
//!
//! **Start** (as `misvm`). stMIL starts from the sMIL solution (the surrogate without the
//! transductive term, with the costs above); the first step linearises at it, a score of 0
//! counting as `+1`. MissSVM starts at `w = 0, b = 0`, where every instance score is 0: the
//! first step uses the mean of the subdifferentials there, the bag mean for `max` and
//! `(H(f) + H(-f)) / 2` (both copies at `c_t / 2`) for the symmetric hinge, both upper bounds
//! that touch `J` at 0.
//!
//! **Restarts** (`restarts`, as `misvm`'s). After the method's own start, `restarts` more runs
//! each begin from a random linearisation (this crate's reading of `misvm`'s random starts,
//! which draw random instance labels for stMIL and random dual variables for MissSVM): every
//! instance of a positive bag a sign `+1` or `-1` with probability 1/2 and, for MissSVM, every
//! positive bag a witness drawn uniformly among its instances. A restart has no objective
//! before its first step. The model is the run whose final objective is least (the first of
//! equal ones). The draws come from one ChaCha8 stream per binary problem seeded by `seed`, so
//! they do not depend on the thread count.
//!
//! **Stop** ([`StopReason`]): `Converged` when the linearisation repeats (the next surrogate
//! would be the same problem: a fixed point), or the objective decreased by less than
//! `tol max(1, |J|)` (an increase, possible only through the SMO's tolerance, keeps the
//! previous iterate); `MaxIter` after `max_iter` steps.
//!
//! **Prediction.** MissSVM: a bag is positive when one of its instances is (the rule of the
//! slides on the paper, and the MI assumption the constraint encodes), the max of the instance
//! scores ([`Pooling::Max`]). stMIL scores a bag as sMIL does, by the `bag_score` parameter
//! ([`SmilBagScore`] but `auto`; default `mean_offset`: the bag's mean instance score less one
//! threshold, the midpoint of the two classes' median training-bag means). On five benchmark sets
//! (`benches/smil_ranking.py`, 5-fold CV, best `C` per rule) that rule ranked bags better than
//! the size-shifted `smil_mean` ([`Pooling::SmilMean`], stMIL's earlier rule) on MUSK1, TST1
//! and TST2 (AUC 0.930 / 0.956 / 0.732 against 0.923 / 0.844 / 0.640) and classified better on
//! four sets (by 2.5-21 points); it is behind on MUSK2 (AUC 0.864 against 0.880, accuracy
//! 76.4 % against 83.1 %) and in Elephant's AUC (0.843 against 0.855), where
//! `bag_score="smil_mean"` keeps the earlier rule. `misvm` scores
//! stMIL's bags by the plain mean against 0, which calls almost every bag negative. With the
//! linear kernel the model holds the weight vector `w` as its one expansion vector (sparse
//! //! instances stay sparse).

use ndarray::Array1;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::bags::{Bags, Rows};
use crate::choice::choices;
use crate::error::{Error, Result};
use crate::fit::{Problem, Setup};
use crate::kernel::Kernel;
use crate::model::{Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::{Observer, Progress, StopReason};
use crate::set_kernel_svm::{apply_bag_score, SmilBagScore};
use crate::smo::{ComboGram, DualArrays, DualSolution, InstanceGram, Smo, SmoParams};
use crate::solver::hinge_bias;

choices! {
    /// Which formulation of the family a CCCP fit solves (module docs): the two differ in how a
    /// positive bag enters the objective, in the start and in the bag rule; the costs, the
    /// transductive term, the CCCP, the restarts and the stopping rules are shared.
    pub enum CccpMethod {
        /// stMIL (Bunescu & Mooney, "Multiple instance learning for sparse positive bags",
        /// ICML 2007): each positive bag through its mean with sMIL's relaxed margin
        /// `(2 - |X|) / |X|`; starts from the sMIL solution; bags scored by sMIL's bag score
        /// ([`SmilBagScore`]).
        Stmil = "stmil",
        /// MissSVM (Zhou & Xu, "On the relation between multi-instance learning and
        /// semi-supervised learning", ICML 2007): each positive bag through its maximum (its
        /// witness); starts at `w = 0, b = 0`; bags scored by [`Pooling::Max`].
        MissSvm = "misssvm",
    }
}

crate::record::record! { $ fields: cccp_fit_fields;
    /// A fitted stMIL or MissSVM with its CCCP record (one entry per binary problem).
    #[derive(Debug, Clone, PartialEq)]
    pub struct CccpFit {
        /// The instance classifier; stMIL's pooling follows its bag score ([`SmilBagScore`]),
        /// MissSVM's is [`Pooling::Max`].
        pub model: Model,
        /// The kernel width used.
        pub gamma: f64,
        /// Per problem, of the run that gave the model: the objective `J` at the start (stMIL:
        /// the sMIL solution; MissSVM: `w = 0, b = 0`; a restart has none), then after each CCCP
        /// step.
        pub objective_history: Vec<Vec<f64>>,
        /// Per problem: CCCP steps (QPs after the start) of the run that gave the model.
        pub n_iter: Vec<usize>,
        /// Per problem: why that run stopped (converged: a stopping rule was met before
        /// `max_iter`).
        #[py(name = "converged")]
        pub stop_reason: Vec<StopReason>,
        /// Per problem: the final objective of every run, the method's own start first, then each
        /// restart; the model is the run of the smallest (the first of equal ones).
        pub run_objectives: Vec<Vec<f64>>,
        /// Per problem: the positive bags (indices into the training bags).
        pub positive_bags: Vec<Vec<usize>>,
        /// Per problem: the linearisation of the returned model's QP: the sign `s` of every
        /// instance of the positive bags, in instance order (`0`: both copies at half cost,
        /// MissSVM's first step, or no transductive term, stMIL's sMIL start).
        pub signs: Vec<Vec<f64>>,
        /// Per problem: the witness instance (an index into the training instances) of every
        /// positive bag in the returned model's QP, `None` for the bag mean (stMIL; MissSVM's first
        /// step; Python reads -1).
        pub witnesses: Vec<Vec<Option<usize>>>,
        /// Whether every SMO solve met its tolerance.
        #[py(name = "inner_converged")]
        pub smo_converged: bool,
    }
}

/// What a binary CCCP run returns.
struct BinaryRun {
    beta: Vec<f64>,
    b: f64,
    positive_bags: Vec<usize>,
    signs: Vec<f64>,
    witnesses: Vec<Option<usize>>,
    history: Vec<f64>,
    n_iter: usize,
    stop_reason: StopReason,
    run_objectives: Vec<f64>,
    smo_converged: bool,
}

/// What one CCCP run (the method's start or a restart) returns.
struct Run {
    /// The accepted iterate's dual solution and bias.
    sol: DualSolution,
    b: f64,
    /// The linearisation whose surrogate `sol` solves, and what a sign 0 gives each copy.
    used: Linearisation,
    start_share: f64,
    /// The objective `J` of the accepted iterate.
    objective: f64,
    history: Vec<f64>,
    n_iter: usize,
    stop_reason: StopReason,
    smo_converged: bool,
}

/// The settings of a CCCP fit, shared by both methods.
struct Cccp<'a> {
    method: CccpMethod,
    bag_score: SmilBagScore,
    c: f64,
    tau: f64,
    max_iter: usize,
    tol: f64,
    restarts: usize,
    seed: u64,
    smo: SmoParams,
    observer: &'a Observer,
}

/// The point at which the concave parts are linearised (module docs).
#[derive(Debug, Clone, PartialEq)]
struct Linearisation {
    /// Per instance of a positive bag: `+1`, `-1`, or `0` (the start's rule).
    signs: Vec<f64>,
    /// Per positive bag: its witness instance, `None` for the bag mean.
    witness: Vec<Option<usize>>,
}

/// The fixed samples of one binary problem (module docs): negative instances and positive bags;
/// the samples of the instances of positive bags follow them, as the linearisation says
/// ([`Cccp::arrays`]).
struct Layout {
    /// Training instances.
    n_inst: usize,
    /// Negative instances and their cost `c`.
    neg: Vec<(usize, f64)>,
    /// Positive bags (indices) and their cost `c`.
    bags: Vec<(usize, f64)>,
    /// Instance ranges of the positive bags.
    ranges: Vec<std::ops::Range<usize>>,
    /// Instances of positive bags, the positive bag (position in `bags`) each belongs to.
    pos: Vec<(usize, usize)>,
}

impl Layout {
    /// The samples and their costs: a negative instance costs `c w`, a positive bag
    /// `c w L_n / |X_p|` (`w` the class weight of its bag), so that with uniform class weights
    /// the positive bags together weigh as much as the negative instances (module docs).
    fn new(bags: &Bags, targets: &[f64], weights: &[f64], c: f64) -> Self {
        let mut neg = Vec::new();
        let mut pb = Vec::new();
        let mut ranges = Vec::new();
        let mut pos = Vec::new();
        for (i, (&t, &w)) in targets.iter().zip(weights).enumerate() {
            let r = bags.bag_range(i);
            if t > 0.0 {
                let k = pb.len();
                pb.push((i, c * w));
                pos.extend(r.clone().map(|x| (x, k)));
                ranges.push(r);
            } else {
                neg.extend(r.map(|x| (x, c * w)));
            }
        }
        // the group balance: |X_p| positive bags against L_n negative instances
        let scale = neg.len().max(1) as f64 / pb.len().max(1) as f64;
        for bag in &mut pb {
            bag.1 *= scale;
        }
        Self {
            n_inst: bags.n_instances(),
            neg,
            bags: pb,
            ranges,
            pos,
        }
    }

    /// First sample of the bags, of the instances of positive bags.
    fn offsets(&self) -> (usize, usize) {
        let b0 = self.neg.len();
        (b0, b0 + self.bags.len())
    }

    /// The kernel points: every instance alone, then the positive bags' means.
    fn points(&self) -> Vec<Vec<(usize, f64)>> {
        let mut pts: Vec<Vec<(usize, f64)>> = (0..self.n_inst).map(|t| vec![(t, 1.0)]).collect();
        pts.extend(self.ranges.iter().map(|r| {
            let w = 1.0 / r.len() as f64;
            r.clone().map(|t| (t, w)).collect()
        }));
        pts
    }
}

/// The arrays of one surrogate dual.
struct Arrays {
    /// The dual itself (`delta = 0`).
    dual: DualArrays,
    /// Per instance of a positive bag (in `Layout::pos` order): its first sample.
    sample_of: Vec<usize>,
    /// Per sample of an instance of a positive bag, in order: that instance (its position in
    /// `Layout::pos`).
    owner: Vec<usize>,
}

/// What the objective needs from one solution: instance scores `g` (without `b`), the bag
/// samples' scores, `||w||^2`.
struct Scores {
    inst: Vec<f64>,
    bag_point: Vec<f64>,
    w2: f64,
}

impl Cccp<'_> {
    /// The cost `c_t` of the symmetric hinge of an instance of positive bag `k`:
    /// `tau c_+ |X_p| / N_p = tau C w_+ L_n / N_p` (`c_+` the bag's cost), so that the `N_p`
    /// instances together weigh `tau` times the `|X_p|` positive bags (uniform class weights).
    fn trans_cost(&self, layout: &Layout, k: usize) -> f64 {
        self.tau * layout.bags[k].1 * layout.bags.len() as f64 / layout.pos.len().max(1) as f64
    }

    /// The margin target of positive bag `k` (sMIL's relaxed one for stMIL).
    fn bag_target(&self, layout: &Layout, k: usize) -> f64 {
        match self.method {
            CccpMethod::Stmil => {
                let n = layout.ranges[k].len() as f64;
                (2.0 - n) / n
            }
            CccpMethod::MissSvm => 1.0,
        }
    }

    /// The surrogate dual at linearisation `lin`; `start_share` is what a sign 0 gives each
    /// copy of its instance (stMIL's start: 0, MissSVM's: 1/2). The instances of positive bags
    /// get one sample of their sign, two for a sign 0 with a share, and a probe (`y = +1`,
    /// `u = 0`) for a sign 0 without (module docs).
    fn arrays(&self, layout: &Layout, lin: &Linearisation, start_share: f64) -> Arrays {
        let n = layout.neg.len() + layout.bags.len() + 2 * layout.pos.len();
        let mut a = Arrays {
            dual: DualArrays {
                y: Vec::with_capacity(n),
                point: Vec::with_capacity(n),
                p: Vec::with_capacity(n),
                d: Vec::new(),
                u: Vec::with_capacity(n),
                delta: 0.0,
            },
            sample_of: vec![usize::MAX; layout.pos.len()],
            owner: Vec::with_capacity(2 * layout.pos.len()),
        };
        for &(t, c) in &layout.neg {
            a.dual.y.push(-1.0);
            a.dual.point.push(t);
            a.dual.p.push(1.0);
            a.dual.u.push(c);
        }
        for (k, &(_, c)) in layout.bags.iter().enumerate() {
            a.dual.y.push(1.0);
            a.dual
                .point
                .push(lin.witness[k].unwrap_or(layout.n_inst + k));
            a.dual.p.push(self.bag_target(layout, k));
            a.dual.u.push(c);
        }
        for sign in [1.0, -1.0] {
            for (j, &(t, k)) in layout.pos.iter().enumerate() {
                let s = lin.signs[j];
                let share = if s == sign {
                    1.0
                } else if s != 0.0 {
                    // the copy of the other sign is left out
                    continue;
                } else if start_share > 0.0 || sign > 0.0 {
                    // a sign 0: both copies at the start's share, or the `+1` probe alone
                    start_share
                } else {
                    continue;
                };
                if a.sample_of[j] == usize::MAX {
                    a.sample_of[j] = a.dual.y.len();
                }
                a.owner.push(j);
                a.dual.y.push(sign);
                a.dual.point.push(t);
                a.dual.p.push(1.0);
                a.dual.u.push(self.trans_cost(layout, k) * share);
            }
        }
        a.dual.d = vec![0.0; a.dual.y.len()];
        a
    }

    /// `alpha` of the dual `from` carried to the dual `to` of the same layout: the negative
    /// instances and the bags keep theirs, a sample of an instance of a positive bag keeps the
    /// value of the sample of the same sign in `from`, 0 when there was none (the start of the
    /// next CCCP step).
    fn carry(layout: &Layout, from: &Arrays, alpha: &[f64], to: &Arrays) -> Vec<f64> {
        let (_, t0) = layout.offsets();
        let slot = |y: f64| usize::from(y < 0.0);
        let mut by_sign = vec![[0.0; 2]; layout.pos.len()];
        for (s, &j) in (t0..).zip(&from.owner) {
            by_sign[j][slot(from.dual.y[s])] = alpha[s];
        }
        let mut out = alpha[..t0].to_vec();
        out.extend(
            (t0..)
                .zip(&to.owner)
                .map(|(s, &j)| by_sign[j][slot(to.dual.y[s])]),
        );
        out
    }

    /// Instance and bag-sample scores of a solution (`g` at a sample's point is
    /// `y_s (Q a)_s`).
    fn scores(layout: &Layout, arrays: &Arrays, sol: &DualSolution) -> Scores {
        let (b0, _) = layout.offsets();
        let mut inst = vec![0.0; layout.n_inst];
        for (s, &(t, _)) in layout.neg.iter().enumerate() {
            inst[t] = arrays.dual.y[s] * sol.q_alpha[s];
        }
        for (&s, &(t, _)) in arrays.sample_of.iter().zip(&layout.pos) {
            inst[t] = arrays.dual.y[s] * sol.q_alpha[s];
        }
        let bag_point = (0..layout.bags.len())
            .map(|k| arrays.dual.y[b0 + k] * sol.q_alpha[b0 + k])
            .collect();
        let w2 = sol
            .alpha
            .iter()
            .zip(&sol.q_alpha)
            .map(|(a, q)| a * q)
            .sum::<f64>();
        Scores {
            inst,
            bag_point,
            w2: w2.max(0.0),
        }
    }

    /// The exact minimiser over `b` of the surrogate with `w` fixed: every live sample `s` adds
    /// `u_s max(0, p_s - y_s (g_s + b))`, a hinge in `b` ([`hinge_bias`] after shifting its
    /// margin target from `p_s` to 1).
    fn surrogate_bias(arrays: &Arrays, sol: &DualSolution) -> f64 {
        let (mut sp, mut cp, mut sn, mut cn) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..arrays.dual.y.len() {
            if arrays.dual.u[s] <= 0.0 {
                continue;
            }
            let g = arrays.dual.y[s] * sol.q_alpha[s];
            if arrays.dual.y[s] > 0.0 {
                sp.push(g + 1.0 - arrays.dual.p[s]);
                cp.push(arrays.dual.u[s]);
            } else {
                sn.push(g + arrays.dual.p[s] - 1.0);
                cn.push(arrays.dual.u[s]);
            }
        }
        hinge_bias(&sp, &cp, &sn, &cn)
    }

    /// The bag score `F(X)` that the objective's bag term sees.
    fn bag_score(&self, layout: &Layout, sc: &Scores, k: usize) -> f64 {
        match self.method {
            // stMIL's bag samples sit at the bag means
            CccpMethod::Stmil => sc.bag_point[k],
            CccpMethod::MissSvm => bag_max(&sc.inst[layout.ranges[k].clone()]),
        }
    }

    /// The method's objective `J(w, b)` (module docs) from the scores of `w`.
    fn objective(&self, layout: &Layout, sc: &Scores, b: f64) -> f64 {
        let neg: f64 = layout
            .neg
            .iter()
            .map(|&(t, c)| c * (1.0 + sc.inst[t] + b).max(0.0))
            .sum();
        let bag: f64 = (0..layout.bags.len())
            .map(|k| {
                let f = self.bag_score(layout, sc, k) + b;
                layout.bags[k].1 * (self.bag_target(layout, k) - f).max(0.0)
            })
            .sum();
        let trans: f64 = layout
            .pos
            .iter()
            .map(|&(t, k)| self.trans_cost(layout, k) * (1.0 - (sc.inst[t] + b).abs()).max(0.0))
            .sum();
        0.5 * sc.w2 + neg + bag + trans
    }

    /// The objective at `w = 0, b = 0` (MissSVM's start).
    fn objective_at_zero(&self, layout: &Layout) -> f64 {
        let neg: f64 = layout.neg.iter().map(|&(_, c)| c).sum();
        let bag: f64 = (0..layout.bags.len())
            .map(|k| layout.bags[k].1 * self.bag_target(layout, k).max(0.0))
            .sum();
        let trans: f64 = layout
            .pos
            .iter()
            .map(|&(_, k)| self.trans_cost(layout, k))
            .sum();
        neg + bag + trans
    }

    /// The linearisation at the scores `g + b`: signs (0 counts as +1) and, for MissSVM, each
    /// bag's first maximiser.
    fn linearise(&self, layout: &Layout, sc: &Scores, b: f64) -> Linearisation {
        self.linearisation(
            layout,
            &mut (),
            |_, t| sc.inst[t] + b >= 0.0,
            |_, r| {
                let s = &sc.inst[r.clone()];
                let m = bag_max(s);
                s.iter().position(|&v| v == m).map(|j| r.start + j)
            },
        )
    }

    /// A random linearisation, a restart's first surrogate (this crate's reading of `misvm`'s
    /// restarts): every instance of a positive bag gets a sign `+1` or `-1` with equal
    /// probability and, for MissSVM, every positive bag a witness drawn uniformly among its
    /// instances.
    fn random_linearisation(&self, layout: &Layout, rng: &mut ChaCha8Rng) -> Linearisation {
        self.linearisation(
            layout,
            rng,
            |rng, _| rng.random::<bool>(),
            |rng, r| Some(rng.random_range(r)),
        )
    }

    /// The linearisation of the rules `positive` (an instance of a positive bag, by its row:
    /// `+1` if true, else `-1`) and, for MissSVM, `witness` (a positive bag, by its rows),
    /// applied in that order with `state` (the signs all drawn before the witnesses).
    fn linearisation<S: ?Sized>(
        &self,
        layout: &Layout,
        state: &mut S,
        positive: impl Fn(&mut S, usize) -> bool,
        witness: impl Fn(&mut S, std::ops::Range<usize>) -> Option<usize>,
    ) -> Linearisation {
        let signs = layout
            .pos
            .iter()
            .map(|&(t, _)| if positive(state, t) { 1.0 } else { -1.0 })
            .collect();
        let witness = match self.method {
            CccpMethod::Stmil => vec![None; layout.bags.len()],
            CccpMethod::MissSvm => layout
                .ranges
                .iter()
                .map(|r| witness(state, r.clone()))
                .collect(),
        };
        Linearisation { signs, witness }
    }

    /// One CCCP run from `random` (a restart) or, when `None`, from the method's own start
    /// (module docs), until a stopping rule holds.
    fn run_once(
        &self,
        layout: &Layout,
        smo: &mut Smo<'_, ComboGram<'_, '_>>,
        random: Option<Linearisation>,
        notify: &dyn Fn(usize, f64),
    ) -> Result<Run> {
        let start = Linearisation {
            signs: vec![0.0; layout.pos.len()],
            witness: vec![None; layout.bags.len()],
        };
        let mut smo_converged = true;
        let mut history = Vec::new();
        // the accepted iterate: alpha, b, the linearisation it solved, its objective
        let mut best: Option<(DualSolution, f64, Linearisation, f64)> = None;
        // the objective of the point the next step linearises at (`None`: a random start)
        let mut prev: Option<f64> = None;
        // the accepted iterate's dual and `alpha`, the next step's warm start
        let mut warm: Option<(Arrays, Vec<f64>)> = None;
        let (mut lin, start_share) = match (random, self.method) {
            (Some(lin), _) => (lin, 0.0),
            (None, CccpMethod::Stmil) => {
                // the sMIL solution: the surrogate without the transductive term
                let arrays = self.arrays(layout, &start, 0.0);
                let sol = smo.solve(&arrays.dual.view(), None)?;
                smo_converged &= sol.termination == StopReason::Converged;
                let b = Self::surrogate_bias(&arrays, &sol);
                let sc = Self::scores(layout, &arrays, &sol);
                let j = self.objective(layout, &sc, b);
                history.push(j);
                prev = Some(j);
                let lin = self.linearise(layout, &sc, b);
                warm = Some((arrays, sol.alpha.clone()));
                best = Some((sol, b, start.clone(), j));
                (lin, 0.0)
            }
            (None, CccpMethod::MissSvm) => {
                let j = self.objective_at_zero(layout);
                history.push(j);
                prev = Some(j);
                (start.clone(), 0.5)
            }
        };
        let mut stop_reason = StopReason::MaxIter;
        let mut n_iter = 0;
        for step in 1..=self.max_iter {
            self.observer.check()?;
            n_iter = step;
            let arrays = self.arrays(layout, &lin, start_share);
            let seed = warm.as_ref().map(|(from, alpha)| {
                DualSolution::warm_start(Self::carry(layout, from, alpha, &arrays))
            });
            let sol = smo.solve(&arrays.dual.view(), seed.as_ref())?;
            smo_converged &= sol.termination == StopReason::Converged;
            let b = Self::surrogate_bias(&arrays, &sol);
            let sc = Self::scores(layout, &arrays, &sol);
            let j = self.objective(layout, &sc, b);
            history.push(j);
            notify(step, j);
            if best.is_some() && prev.is_some_and(|p| j > p) {
                // only the SMO's tolerance can do this: keep the previous iterate
                stop_reason = StopReason::Converged;
                break;
            }
            let next = self.linearise(layout, &sc, b);
            let used = std::mem::replace(&mut lin, next);
            let fixed = lin == used;
            warm = Some((arrays, sol.alpha.clone()));
            best = Some((sol, b, used, j));
            let small = prev.is_some_and(|p| p - j <= self.tol * p.abs().max(1.0));
            prev = Some(j);
            if fixed || small {
                stop_reason = StopReason::Converged;
                break;
            }
        }
        let Some((sol, b, used, objective)) = best else {
            return Err(Error::Solver("the CCCP ran no step (max_iter = 0)".into()));
        };
        Ok(Run {
            sol,
            b,
            used,
            start_share,
            objective,
            history,
            n_iter,
            stop_reason,
            smo_converged,
        })
    }

    /// One binary problem: the method's own start and `restarts` random ones, each run to a
    /// stopping rule; the run with the lowest objective is the model.
    fn run_binary(
        &self,
        inst: &InstanceGram,
        kernel: Kernel,
        bags: &Bags,
        problem: &Problem,
    ) -> Result<BinaryRun> {
        let problem_index = problem.index;
        let x = bags.instances();
        let layout = Layout::new(bags, &problem.targets, &problem.weights, self.c);
        let gram = ComboGram::new(inst, x, kernel, layout.points());
        let smo = SmoParams {
            cache_bytes: problem.cache_bytes,
            ..self.smo
        };
        let mut smo = Smo::new(&gram, smo)?.with_cancel(self.observer.cancel().clone());
        // one stream per problem: the same draws whatever the thread count
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(problem_index as u64);
        let runs = self.restarts + 1;
        let mut best: Option<Run> = None;
        let mut smo_converged = true;
        let mut run_objectives = Vec::with_capacity(runs);
        for r in 0..runs {
            let random = (r > 0).then(|| self.random_linearisation(&layout, &mut rng));
            let offset = r * self.max_iter;
            let notify = |step: usize, objective: f64| {
                self.observer.notify(Progress {
                    problem: problem_index,
                    step: offset + step,
                    max_steps: runs * self.max_iter,
                    expected_steps: runs * self.max_iter,
                    objective,
                    temperature: None,
                })
            };
            let run = self.run_once(&layout, &mut smo, random, &notify)?;
            smo_converged &= run.smo_converged;
            run_objectives.push(run.objective);
            if best.as_ref().is_none_or(|b| run.objective < b.objective) {
                best = Some(run);
            }
        }
        let Some(Run {
            sol,
            b,
            used,
            start_share,
            history,
            n_iter,
            stop_reason,
            ..
        }) = best
        else {
            return Err(Error::Solver("the CCCP ran no run".into()));
        };
        // instance coefficients: a_s y_s spread over the instances of each sample's point
        let mut beta = vec![0.0; layout.n_inst];
        let arrays = self.arrays(&layout, &used, start_share);
        for (s, &a) in sol.alpha.iter().enumerate() {
            if a == 0.0 {
                continue;
            }
            let c = a * arrays.dual.y[s];
            let m = arrays.dual.point[s];
            if m < layout.n_inst {
                beta[m] += c;
            } else {
                let r = layout.ranges[m - layout.n_inst].clone();
                let w = c / r.len() as f64;
                for t in r {
                    beta[t] += w;
                }
            }
        }
        Ok(BinaryRun {
            beta,
            b,
            positive_bags: layout.bags.iter().map(|&(i, _)| i).collect(),
            signs: used.signs,
            witnesses: used.witness,
            history,
            n_iter,
            stop_reason,
            run_objectives,
            smo_converged,
        })
    }

    /// Fits every binary problem of `setup` and assembles the model.
    fn fit(&self, setup: &Setup, kernel: Kernel, gamma: f64) -> Result<CccpFit> {
        let bags = setup.bags;
        let x = bags.instances();
        let inst = InstanceGram::new(kernel, Rows::from(x))?;
        let runs = setup.one_vs_rest(|problem| self.run_binary(&inst, kernel, bags, problem))?;
        let pooling = match self.method {
            CccpMethod::Stmil => Pooling::Mean,
            CccpMethod::MissSvm => Pooling::Max,
        };
        let intercept: Array1<f64> = runs.iter().map(|r| r.b).collect();
        // the linear kernel collapses into one weight vector per output
        let coefs: Vec<&[f64]> = runs.iter().map(|r| r.beta.as_slice()).collect();
        let model = Model::from_instance_coefficients(
            kernel,
            x,
            &coefs,
            intercept,
            setup.n_classes,
            pooling,
        );
        let mut model = model;
        if self.method == CccpMethod::Stmil {
            apply_bag_score(&mut model, self.bag_score, bags, &setup.problems())?;
        }
        let smo_converged = runs.iter().all(|r| r.smo_converged);
        Ok(crate::fit::per_problem!(runs => CccpFit {
            objective_history: history, n_iter, stop_reason, run_objectives, positive_bags, signs,
            witnesses,
        } {
            model,
            gamma,
            smo_converged,
        }))
    }
}

fn bag_max(s: &[f64]) -> f64 {
    s.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

hyperparams! {
    /// Hyperparameters of the CCCP family, stMIL (Bunescu & Mooney 2007: sMIL plus the
    /// transductive constraints on the instances of positive bags) and MissSVM (Zhou & Xu 2007:
    /// negative instances labelled, instances of positive bags unlabelled with each positive
    /// bag's maximum positive), both solved by the CCCP (module docs for the sources), declared
    /// once and checked into [`CccpValidParams`]. [`CccpParams::stmil`] and
    /// [`CccpParams::misssvm`] give each method's defaults.
    pub struct CccpParams => CccpValidParams {
        shared(kernel = KernelKind::Rbf);
        /// The method: `"stmil"` or `"misssvm"`.
        method: CccpMethod = CccpMethod::Stmil;
        /// stMIL's bag score from its instance scores, sMIL's rules but `auto`
        /// ([`SmilBagScore`]; default: the plain mean less the class medians' midpoint of the
        /// training bags); MissSVM scores a bag by its maximum and ignores it.
        bag_score: SmilBagScore = SmilBagScore::MeanOffset;
        /// Weight of the symmetric hinges `max(0, 1 - |f(x)|)` of the instances of positive bags
        /// (MissSVM's unlabelled instances), all together, relative to the positive bags: each
        /// costs `tau C w_+ L_n / N_p` (0, for stMIL: sMIL with positive bags weighing
        /// `L_n / |X_p|`).
        transductive_weight: f64 = 1.0, check Range::NonNegative;
        /// Cap on the CCCP steps (after stMIL's sMIL start; MissSVM starts at `w = 0`).
        max_iter: usize = 50, check Range::AtLeast(1);
        /// Stop when a step lowers the objective by less than `tol max(1, |J|)`.
        tol: f64 = 1e-6, check Range::Positive;
        /// Random restarts after the method's own start (`misvm`'s `restarts`): each begins
        /// from random signs of the instances of positive bags (and, for MissSVM, random
        /// witnesses); the run of least objective is the model.
        restarts: usize = 0;
        /// Seed of the restarts' draws.
        seed: u64 = 0;
        /// Relative KKT tolerance of the SMO solving each step's QP.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap (`None`: the solver's default).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
    }
    cross_check check_cccp;
    fit -> CccpFit;
}

/// `bag_score = auto` is sMIL's: its choice rests on out-of-fold scores of sMIL fits, and what
/// the same rule would do on stMIL's CCCP fits is unmeasured.
fn check_cccp(p: &CccpValidParams) -> Result<()> {
    if p.bag_score == SmilBagScore::Auto {
        return Err(crate::error::invalid_param(
            "bag_score=\"auto\" is sMIL's only; stMIL takes \"mean_offset\", \"smil_mean\", \
             \"mean\" or \"mean_platt\"",
        ));
    }
    Ok(())
}

impl CccpParams {
    /// stMIL's defaults (Bunescu & Mooney, "Multiple instance learning for sparse positive
    /// bags", ICML 2007).
    pub fn stmil() -> Self {
        Self::new()
    }
    /// MissSVM's defaults (Zhou & Xu, "On the relation between multi-instance learning and
    /// semi-supervised learning", ICML 2007).
    pub fn misssvm() -> Self {
        Self::new().method(CccpMethod::MissSvm)
    }
}

impl CccpValidParams {
    /// Fits the method on bags with class indices `0..n_classes` (one-vs-rest beyond two
    /// classes, sharing the instance kernel).
    fn fit_impl(&self, setup: &Setup) -> Result<CccpFit> {
        let (kernel, gamma) = self.kernel.resolve(self.gamma, setup.bags.instances());
        Cccp {
            method: self.method,
            bag_score: self.bag_score,
            c: self.c,
            tau: self.transductive_weight,
            max_iter: self.max_iter,
            tol: self.tol,
            restarts: self.restarts,
            seed: self.seed,
            smo: SmoParams {
                tol: self.inner_tol,
                max_iter: self.inner_max_iter,
                ..SmoParams::default()
            },
            observer: &self.observer,
        }
        .fit(setup, kernel, gamma)
    }
}
