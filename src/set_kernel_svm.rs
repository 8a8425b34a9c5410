//! Hinge-loss SVMs on set kernels, solved in the dual by [`crate::smo`]: NSK (Gaertner, Flach,
//! Kowalczyk & Smola, "Multi-instance kernels", ICML 2002; the normalised set kernel as used by
//! Vijayanarasimhan's report, 003, section 2 and ALGORITHMS.md section 5) and sMIL (Bunescu &
//! Mooney, "Multiple instance learning for sparse positive bags", ICML 2007, eq. 8-9).
//!
//! **NSK.** A bag is the sum of its instances' features `phi(X) = sum_p phi(x_p)`, normalised
//! by its 1-norm (`norm = L1`: the mean, `k(X, X') = mean_p mean_q k(x_p, x'_q)`) or its
//! feature-space 2-norm (`norm = L2`:
//! `k(X, X') = sum sum k / sqrt(sum sum k(X, X) * sum sum k(X', X'))`, the cosine of the two
//! sums, which equals the mean kernel normalised the same way). The C-SVM with the hinge loss on
//! the `m x m` bag kernel is the dual `min 1/2 a^T Q a - 1^T a, y^T a = 0, 0 <= a_i <= C w_i`
//! (`w_i` the class weight of bag `i`), solved by the SMO on a [`PrecomputedGram`].
//!
//! The decision function `F(X) = sum_i a_i y_i k(X_i, X) + b` is, for `L1`, the shared model
//! form with mean pooling: expansion vectors = the instances of the support bags, coefficient
//! of instance `t` of bag `i` = `a_i y_i / n_i`. For `L2` it is
//! `F(X) = [mean_p sum_t c_t k(x_t, x_p)] / sqrt(mean_p mean_q k(x_p, x_q)) + b` with
//! `c_t = a_i y_i / (n_i sqrt(k_mean(X_i, X_i)))`: the mean-pooled model form without bias,
//! divided by the test bag's own mean-kernel norm ([`Pooling::NormalizedMean`]).
//!
//! **sMIL** (Bunescu & Mooney 2007, section 3.1, eq. 8-9): NSK-`L1` where every instance of a
//! negative bag is a singleton bag and a positive bag's margin target is relaxed from 1 to
//! `(2 - |X|) / |X|` (at least one instance of the bag positive): the dual's linear term is
//! `p_i = (2 - n_i) / n_i` for positive bags and 1 for the negative singletons. Every unit costs
//! `C w` (this crate uses the same `C` for both sides; the paper's `C / L_n`, `C / L_p` are
//! reached with `class_weight`). The units' kernel rows come on demand from instance kernels
//! ([`ComboGram`], each unit the mean of its instances), so the many negative singletons never
//! make a `units x units` matrix.
//!
//! **sMIL's bag score** ([`SmilBagScore`], the `bag_score` parameter). The set-kernel SVM
//! trained by eq. 8-9 represents a bag by the mean of its instances, so its score of a bag is
//! `F(X) = w . phi(X) / |X| + b`, the plain mean of the instance scores
//! `f(x) = w . phi(x) + b` (the paper's rule for new bags is not in our sources; Doran's `misvm`
//! scores so). Training asks `F(X) >= (2 - |X|) / |X|` of a positive bag and `f(x) <= -1` of
//! every instance of a negative bag, so with threshold 0 the plain mean calls almost every bag
//! negative. A score for ranking and a threshold for classifying are two things:
//!
//! * `mean_offset` (stMIL's default): `F(X) = mean_p f(x_p) - t`, one threshold `t` for
//!   every bag, the midpoint of the medians of the training bags' plain means in the two classes
//!   (`t = (median_{X positive} mean f + median_{X negative} mean f) / 2`, per binary problem;
//!   [`smil_threshold`]). A constant does not change the ranking, so the bags rank as the
//!   plain mean ranks them, and the threshold sits between the typical training bags of the
//!   two classes, wherever the solution put them (at small `C` the scores stay far from the
//!   margins, so no threshold read off the margins would do). The model is the mean-pooled
//!   form with `t` subtracted from each output's bias.
//! * `smil_mean`: `F(X) = mean_p f(x_p) + 1 - 1/|X|`, each bag against the midpoint of its own
//!   two margins ([`Pooling::SmilMean`]). The shift depends on the bag's size, so it reorders
//!   bags of different sizes: where `|f|` is small against 1 (small `C`) bags rank by size.
//!   The crate's only rule before `bag_score`; kept as an option (it ranks better where the
//!   bag size itself carries the label, e.g. on Elephant). stMIL takes the same parameter
//!   ([`crate::semi_supervised`]).
//! * `mean`: the plain mean with the solver's bias (the paper's `F`; `misvm`'s scores).
//! * `mean_platt`: the plain mean minus the score where Platt's sigmoid fitted to the training
//!   bags' plain means crosses 1/2 ([`smil_platt_threshold`]).
//!
//! * `auto` (sMIL's default): `smil_mean`, unless `mean_platt` on out-of-fold scores of an
//!   inner 5-fold cross-validation ranks the training bags clearly better and classifies no
//!   fewer of them right ([`SmilBagScore::Auto`], [`smil_auto_keeps_shift`]).
//!
//! Why `auto` for sMIL: of the thresholds that keep the plain mean's ranking
//! (benches/smil_ranking.py `rules`, five benchmark sets), none classifies as well as the size
//! shift on every set, and none can on Elephant, whose positive bags are the larger ones; the
//! shift ranks badly where the size says nothing (TST1, TST2). Keeping the shift unless the plain
//! mean's out-of-fold AUC is higher by more than [`SMIL_AUTO_AUC_MARGIN`] without a loss of
//! out-of-fold accuracy keeps the plain mean on TST1 and TST2 and the shift on Elephant, and
//! where the two are close (MUSK1, MUSK2) keeps the shift's accuracy; a bare comparison of the
//! out-of-fold AUCs drops the shift there half the time and loses its accuracy
//! (docs/guide/smil-bag-scores.md has the numbers). 5 more fits. stMIL keeps `mean_offset`: what
//! the same choice would do on its CCCP fits is unmeasured.

use ndarray::{Array1, Array2};

use crate::bags::{Bags, Instances, Rows};
use crate::choice::choices;
use crate::error::{Error, Result};
use crate::fit::{by_value, only_fit, Problem, Setup};
use crate::kernel::Kernel;
use crate::model::{Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range, SvmRoute};
use crate::progress::{Cancel, StopReason};
use crate::set_kernel::set_kernel_gram_cancellable;
use crate::smo::{ComboGram, DualSolution, HingeSolver, InstanceGram, PrecomputedGram};
use crate::solver::linear_hinge::{HingeLoss, LinearHinge};

choices! {
    /// How NSK normalises the sum of a bag's instance features.
    pub enum SetNorm {
        /// Divide by the 1-norm (the number of instances): the mean set kernel.
        L1 = "l1",
        /// Divide by the feature-space 2-norm: the cosine-normalised set kernel.
        L2 = "l2",
    }
}

/// The normalised set-kernel Gram matrix of `bags` (`L1`: mean kernel; `L2`: its cosine
/// normalisation) and the bags' mean self-kernels.
pub fn nsk_gram(
    kernel: Kernel,
    bags: &Bags,
    norm: SetNorm,
    cancel: &Cancel,
) -> Result<(Array2<f64>, Vec<f64>)> {
    let mut k = set_kernel_gram_cancellable(kernel, bags, cancel)?;
    let diag: Vec<f64> = k.diag().to_vec();
    if norm == SetNorm::L2 {
        if let Some(i) = diag.iter().position(|&d| d.is_nan() || d <= 0.0) {
            return Err(Error::InvalidData(format!(
                "bag {i} has a zero feature-space norm (sum of its kernel values {}); norm='l2' \
                 needs bags with a nonzero sum of features",
                diag[i]
            )));
        }
        let s: Vec<f64> = diag.iter().map(|d| d.sqrt()).collect();
        for ((i, j), v) in k.indexed_iter_mut() {
            *v /= s[i] * s[j];
        }
        // exact unit diagonal and symmetry
        for i in 0..s.len() {
            k[[i, i]] = 1.0;
        }
    }
    Ok((k, diag))
}

/// One binary problem's result over units (bags or singletons): instance coefficients
/// (length `n_instances`) and the dual solution.
struct UnitFit {
    coef: Vec<f64>,
    sol: DualSolution,
}

/// Spreads `a_j y_j scale_j / n_j` over the instances of every support unit `j`.
fn unit_coefficients(units: &Bags, sol: &DualSolution, y: &[f64], scale: &[f64]) -> Vec<f64> {
    let mut coef = vec![0.0; units.n_instances()];
    for (j, &a) in sol.alpha.iter().enumerate() {
        if a > 0.0 {
            let r = units.bag_range(j);
            let c = a * y[j] * scale[j] / r.len() as f64;
            for t in r {
                coef[t] = c;
            }
        }
    }
    coef
}

// ---------------------------------------------------------------------------------------------
// NSK
// ---------------------------------------------------------------------------------------------

hyperparams! {
    /// Hyperparameters of NSK, the hinge-loss SVM on the normalised set kernel (Gaertner et
    /// al. 2002), declared once and checked into [`NskValidParams`].
    pub struct NskParams => NskValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Normalisation of the bag feature sums.
        norm: SetNorm = SetNorm::L1;
        /// Relative KKT tolerance of the SMO.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap (`None`: the solver's default).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
    }
    fit -> NskFit, path path_impl;
}

/// A fitted NSK or sMIL: the shared [`crate::fit::SvmFit`] (mean pooling for `L1` and sMIL,
/// [`Pooling::NormalizedMean`] for `L2`, whose coefficients are already divided by the training
/// bags' norms).
pub type NskFit = crate::fit::SvmFit;

impl NskValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, sharing
    /// the bag kernel): the path of the one value `C`.
    fn fit_impl(&self, setup: &Setup) -> Result<NskFit> {
        only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): the bag kernel once,
    /// then per binary problem one SMO solve per value ([`HingeSolver::path`]).
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<NskFit>> {
        let bags = setup.bags;
        let (kernel, gamma) = self.kernel.resolve(self.gamma, bags.instances());
        let (k, diag) = nsk_gram(kernel, bags, self.norm, self.observer.cancel())?;
        setup.observer.check()?;
        let gram = PrecomputedGram::new(k)?;
        let scale: Vec<f64> = match self.norm {
            SetNorm::L1 => vec![1.0; diag.len()],
            SetNorm::L2 => diag.iter().map(|d| 1.0 / d.sqrt()).collect(),
        };
        let p = vec![1.0; bags.n_bags()];
        let solver = HingeSolver {
            tol: self.inner_tol,
            max_iter: self.inner_max_iter,
            cancel: self.observer.cancel(),
        };
        let paths = setup.one_vs_rest(|problem| {
            let y = &problem.targets;
            let sols = solver.path(&gram, y, &p, &problem.weights, cs, problem.cache_bytes)?;
            Ok(sols
                .into_iter()
                .map(|sol| UnitFit {
                    coef: unit_coefficients(bags, &sol, y, &scale),
                    sol,
                })
                .collect())
        })?;
        Ok(by_value(paths)
            .into_iter()
            .map(|fits| {
                finish(
                    kernel,
                    bags.instances(),
                    fits,
                    setup.n_classes,
                    self.norm,
                    gamma,
                )
            })
            .collect())
    }
}

fn finish(
    kernel: Kernel,
    x: &Instances,
    fits: Vec<UnitFit>,
    n_classes: usize,
    norm: SetNorm,
    gamma: f64,
) -> NskFit {
    let coefs: Vec<Vec<f64>> = fits.iter().map(|f| f.coef.clone()).collect();
    let intercept: Vec<f64> = fits.iter().map(|f| f.sol.b).collect();
    let coefs: Vec<&[f64]> = coefs.iter().map(Vec::as_slice).collect();
    let mut model = Model::from_instance_coefficients(
        kernel,
        x,
        &coefs,
        Array1::from(intercept),
        n_classes,
        Pooling::Mean,
    );
    if norm == SetNorm::L2 {
        model.pooling = Pooling::NormalizedMean;
    }
    NskFit {
        model,
        gamma,
        objective: fits.iter().map(|f| f.sol.objective).collect(),
        n_support: fits
            .iter()
            .map(|f| f.sol.alpha.iter().filter(|&&a| a > 0.0).count())
            .collect(),
        n_iter: fits.iter().map(|f| f.sol.iterations).max().unwrap_or(0),
        converged: fits
            .iter()
            .all(|f| f.sol.termination == StopReason::Converged),
        alpha: fits.into_iter().map(|f| f.sol.alpha).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// sMIL
// ---------------------------------------------------------------------------------------------

choices! {
    /// How sMIL scores a bag from the scores `f(x)` of its instances (Bunescu & Mooney 2007,
    /// eq. 8-9: training puts a positive bag's mean at `(2 - |X|) / |X|` or above and every
    /// instance of a negative bag at -1 or below). The module docs say why sMIL's default is
    /// [`SmilBagScore::Auto`] and stMIL's [`SmilBagScore::MeanOffset`].
    pub enum SmilBagScore {
        /// `F(X) = mean_p f(x_p) - t`, `t` the midpoint of the medians of the training bags'
        /// plain means in the two classes ([`smil_threshold`]): the ranking of the plain mean,
        /// the threshold between the typical bags of the two classes. Stored as the mean
        /// pooling with `t` subtracted from the bias.
        MeanOffset = "mean_offset",
        /// `F(X) = mean_p f(x_p) + 1 - 1/|X|` ([`Pooling::SmilMean`]): each bag against the
        /// midpoint `1/|X| - 1` of its own two margins. A size-dependent shift: it reorders bags
        /// of different sizes.
        SmilMean = "smil_mean",
        /// `F(X) = mean_p f(x_p)`: the paper's set-kernel decision function, with the solver's
        /// bias (Doran's `misvm` scores bags so); threshold 0 calls most bags negative.
        Mean = "mean",
        /// `F(X) = mean_p f(x_p) - t`, `t` where Platt's sigmoid fitted to the training bags'
        /// plain means crosses 1/2 ([`smil_platt_threshold`]): the plain mean's ranking, the
        /// threshold weighted by how the two classes' scores overlap rather than by their
        /// medians alone. Stored as the mean pooling with `t` subtracted from the bias.
        MeanPlatt = "mean_platt",
        /// A choice between [`SmilBagScore::SmilMean`] and [`SmilBagScore::MeanPlatt`] made by an
        /// inner cross-validation on the training bags ([`smil_auto_keeps_shift`]): each bag's
        /// out-of-fold plain mean `o` (a fit with the plain mean on the other folds), then the
        /// size shift `o + 1 - 1/|X|` is kept unless `o` ranks better out of fold by more than
        /// [`SMIL_AUTO_AUC_MARGIN`] and, at the threshold of Platt's sigmoid fitted to `o`, is
        /// at least as accurate as the shift at 0; where it is replaced, the plain mean less
        /// that threshold. sMIL only (stMIL's out-of-fold scores would need its own CCCP fits).
        Auto = "auto",
    }
}

/// Folds of the inner cross-validation of [`SmilBagScore::Auto`] (fewer where a class has
/// fewer bags; none where a class has a single bag, and then the rule `mean_platt`).
pub const SMIL_AUTO_FOLDS: usize = 5;

/// How much higher the plain mean's out-of-fold AUC must be, per binary problem, before
/// [`SmilBagScore::Auto`] drops the size shift (with no loss of out-of-fold accuracy as the
/// second condition). The shift is the rule whose threshold-0 accuracy the default must keep;
/// the out-of-fold AUC of a hundred bags varies by about this much between inner splits, so a
/// smaller lead is noise and is not worth the shift's accuracy. Measured by `benches/
/// smil_ranking.py rules` over repeated outer folds (`docs/guide/smil-bag-scores.md`).
pub const SMIL_AUTO_AUC_MARGIN: f64 = 0.02;

/// The ROC AUC of `scores` for the bags with `targets > 0` against the others (the
/// Mann-Whitney statistic, a tie between a positive and a negative bag counting 1/2); 1/2 when
/// a class is empty.
pub fn bag_auc(scores: &[f64], targets: &[f64]) -> f64 {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // mid-ranks over runs of equal scores
    let (mut rank_sum, mut n_pos) = (0.0, 0.0);
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let mid = 0.5 * ((i + 1) + (j + 1)) as f64;
        for &k in &order[i..=j] {
            if targets[k] > 0.0 {
                rank_sum += mid;
                n_pos += 1.0;
            }
        }
        i = j + 1;
    }
    let n_neg = scores.len() as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return 0.5;
    }
    (rank_sum - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
}

/// The choice of [`SmilBagScore::Auto`] on out-of-fold plain means: `oof[k]` the bags' scores in
/// binary problem `k` with `targets[k]`, `sizes` the bags' instance counts. The size shift
/// `o + 1 - 1/|X|` ([`SmilBagScore::SmilMean`], at threshold 0) is kept unless the plain mean
/// `o`, at the threshold of Platt's sigmoid fitted to it ([`smil_platt_threshold`]), both ranks
/// better by more than [`SMIL_AUTO_AUC_MARGIN`] per problem ([`bag_auc`]) and classifies at
/// least as many bags right. AUCs and counts are summed over the problems: a model has one
/// pooling, so one choice for every one-vs-rest problem.
pub fn smil_auto_keeps_shift(
    oof: &[Vec<f64>],
    sizes: &[f64],
    targets: &[Vec<f64>],
) -> Result<bool> {
    let (mut auc_shift, mut auc_plain) = (0.0, 0.0);
    let (mut right_shift, mut right_plain) = (0usize, 0usize);
    for (o, t) in oof.iter().zip(targets) {
        let shifted: Vec<f64> = o
            .iter()
            .zip(sizes)
            .map(|(o, n)| o + 1.0 - 1.0 / n)
            .collect();
        auc_shift += bag_auc(&shifted, t);
        auc_plain += bag_auc(o, t);
        let threshold = smil_platt_threshold(o, t)?;
        right_shift += shifted
            .iter()
            .zip(t)
            .filter(|(s, t)| (**s > 0.0) == (**t > 0.0))
            .count();
        right_plain += o
            .iter()
            .zip(t)
            .filter(|(o, t)| (**o - threshold > 0.0) == (**t > 0.0))
            .count();
    }
    let ranks_clearly_better = auc_plain - auc_shift > SMIL_AUTO_AUC_MARGIN * oof.len() as f64;
    Ok(!(ranks_clearly_better && right_plain >= right_shift))
}

/// The inner folds of [`SmilBagScore::Auto`]: fold of each bag, stratified by class (each
/// class's bags in an order drawn from `seed`, dealt round the folds, each class continuing
/// where the previous one stopped), over `min(SMIL_AUTO_FOLDS, smallest class)` folds; `None`
/// where that is below 2.
fn auto_folds(labels: &[usize], n_classes: usize, seed: u64) -> Option<(usize, Vec<usize>)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut by_class = vec![Vec::new(); n_classes];
    for (i, &l) in labels.iter().enumerate() {
        by_class[l].push(i);
    }
    let k = by_class
        .iter()
        .map(Vec::len)
        .min()
        .unwrap_or(0)
        .min(SMIL_AUTO_FOLDS);
    if k < 2 {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut fold = vec![0; labels.len()];
    let mut next = 0;
    for members in &mut by_class {
        members.shuffle(&mut rng);
        for &i in members.iter() {
            fold[i] = next;
            next = (next + 1) % k;
        }
    }
    Some((k, fold))
}

/// The median of `v` (the mean of the two middle values for an even count; 0 if empty).
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// sMIL's threshold for [`SmilBagScore::MeanOffset`]: the midpoint of the medians of the
/// bag scores `scores` of the bags with a positive and with a negative target,
/// `(median_{targets > 0} + median_{targets <= 0}) / 2` (a class without bags counts 0).
pub fn smil_threshold(scores: impl IntoIterator<Item = f64>, targets: &[f64]) -> f64 {
    let (mut pos, mut neg): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for (s, &t) in scores.into_iter().zip(targets) {
        if t > 0.0 {
            pos.push(s);
        } else {
            neg.push(s);
        }
    }
    0.5 * (median(&mut pos) + median(&mut neg))
}

/// sMIL's threshold for [`SmilBagScore::MeanPlatt`]: the score `t = -b / a` where Platt's
/// sigmoid `1 / (1 + exp(a s + b))` fitted to the bag scores `scores` of the bags with
/// positive and non-positive `targets` ([`crate::model::fit_sigmoid`]: Platt 2000, as Lin, Lin
/// & Weng 2007 fit it) is 1/2. Where the sigmoid has no such point among the scores (every
/// score equal, `a = 0`; scores that rank the classes the wrong way round, `a > 0`; or a
/// midpoint outside the scores' range, which would call every training bag one class) the
/// class-median midpoint [`smil_threshold`] instead.
pub fn smil_platt_threshold(scores: &[f64], targets: &[f64]) -> Result<f64> {
    let positive: Vec<bool> = targets.iter().map(|&t| t > 0.0).collect();
    let (a, b) = crate::model::fit_sigmoid(scores, &positive)?;
    let t = -b / a;
    let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(if a < 0.0 && t >= lo && t <= hi {
        t
    } else {
        smil_threshold(scores.iter().copied(), targets)
    })
}

/// Puts the bag score `rule` into `model`, a fit whose pooling is the plain mean
/// ([`Pooling::Mean`]) on the training `bags` of the binary `problems`: the threshold of
/// `mean_offset` ([`smil_threshold`]) or `mean_platt` ([`smil_platt_threshold`]) of the training
/// bags' plain means taken off each output's bias, or the pooling [`Pooling::SmilMean`]. sMIL's
/// and stMIL's ([`crate::semi_supervised`]) one rule.
pub(crate) fn apply_bag_score(
    model: &mut Model,
    rule: SmilBagScore,
    bags: &Bags,
    problems: &[Problem],
) -> Result<()> {
    model.pooling = Pooling::Mean;
    match rule {
        SmilBagScore::MeanOffset | SmilBagScore::MeanPlatt => {
            // the training bags' plain means, one column per problem
            let plain = model.decision_function(bags)?;
            for p in problems {
                let scores = plain.column(p.index).to_vec();
                model.intercept[p.index] -= if rule == SmilBagScore::MeanOffset {
                    smil_threshold(scores, &p.targets)
                } else {
                    smil_platt_threshold(&scores, &p.targets)?
                };
            }
        }
        SmilBagScore::SmilMean => model.pooling = Pooling::SmilMean,
        // the plain mean until the inner cross-validation chooses (SmilValidParams::choose_auto)
        SmilBagScore::Mean | SmilBagScore::Auto => {}
    }
    Ok(())
}

hyperparams! {
    /// Hyperparameters of sMIL (Bunescu & Mooney 2007, eq. 8-9), declared once and checked
    /// into [`SmilValidParams`].
    pub struct SmilParams => SmilValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Relative KKT tolerance of the SMO.
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap (`None`: the solver's default); passes of the linear route's
        /// coordinate descent (`None`: 1000).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
        /// How the dual is solved: `kernel` (the SMO over the units), `linear` (the linear
        /// kernel only: `w` explicit, dual coordinate descent, `O(nnz)` per pass;
        /// [`crate::solver::linear_hinge`]); `auto`: `linear` for the linear kernel.
        solver: SvmRoute = SvmRoute::Auto;
        /// How a bag is scored from its instances' scores `f` ([`SmilBagScore`]):
        /// `mean_offset` (the mean minus one threshold learnt from the training bags),
        /// `smil_mean` (the mean plus the bag's own shift `1 - 1/|X|`), `mean`, or
        /// `mean_platt` (the mean minus the threshold of Platt's sigmoid on the training bags),
        /// or `auto` (`smil_mean` or `mean_platt` on Platt's threshold of out-of-fold scores,
        /// whichever ranks the training bags better in an inner cross-validation: 5 more fits).
        bag_score: SmilBagScore = SmilBagScore::Auto;
        /// Seed of the inner folds of `bag_score = auto`.
        seed: u64 = 0;
    }
    cross_check check_smil;
    fit -> NskFit, path path_impl;
}

/// `solver = "linear"` has the linear kernel.
fn check_smil(p: &SmilValidParams) -> Result<()> {
    crate::params::check_route(p.solver, p.kernel)
}

/// Passes of the linear route's coordinate descent when `inner_max_iter` is `None`.
const LINEAR_MAX_PASSES: usize = 1000;

/// The dual over `points` (weighted combinations of the rows of `x`) at every value of `cs`
/// by [`LinearHinge`], each from zero as an independent fit: the linear route's [`DualSolution`]
/// (`q_alpha` left empty; iterations are passes).
#[allow(clippy::too_many_arguments)]
fn linear_path(
    x: &Instances,
    points: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    w: &[f64],
    cs: &[f64],
    tol: f64,
    max_passes: Option<usize>,
    cancel: &Cancel,
) -> Result<Vec<DualSolution>> {
    cs.iter()
        .map(|&c| {
            let u: Vec<f64> = w.iter().map(|w| c * w).collect();
            let sol = LinearHinge {
                x,
                points,
                y,
                p,
                u: &u,
                loss: HingeLoss::Hinge,
            }
            .solve(None, tol, max_passes.unwrap_or(LINEAR_MAX_PASSES), cancel)?;
            Ok(DualSolution {
                objective: sol.dual_objective,
                b: sol.b,
                iterations: sol.passes,
                termination: if sol.converged {
                    StopReason::Converged
                } else {
                    StopReason::MaxIter
                },
                q_alpha: Vec::new(),
                alpha: sol.alpha,
            })
        })
        .collect()
}

/// The units of one sMIL problem: positive bags whole, every instance of a negative bag alone;
/// returns the unit offsets (over the unchanged instance order) and each unit's bag.
pub fn smil_units(bags: &Bags, targets: &[f64]) -> (Vec<usize>, Vec<usize>) {
    let mut ptr = vec![0];
    let mut owner = Vec::new();
    for (i, &t) in targets.iter().enumerate() {
        let r = bags.bag_range(i);
        if t > 0.0 {
            ptr.push(r.end);
            owner.push(i);
        } else {
            for e in r.start + 1..=r.end {
                ptr.push(e);
                owner.push(i);
            }
        }
    }
    (ptr, owner)
}

impl SmilValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes; each
    /// problem has its own units): the path of the one value `C`. Also the first stage of
    /// sbMIL and sAwMIL ([`crate::two_stage`]).
    pub(crate) fn fit_impl(&self, setup: &Setup) -> Result<NskFit> {
        only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The fit of the `sawmil` package's sMIL problem (0.2.1, `sawmil/smil.py`, its default
    /// `normalizer="none"`), sAwMIL's first stage with `first_stage_problem="sawmil"`
    /// ([`crate::two_stage`]): the instance kernel summed over a positive bag, not averaged
    /// (a unit is the sum of its instances), and a positive bag of `n` instances with the
    /// linear term `(n - 2) / n`, the opposite of the paper's (the package hands its QP solver
    /// `2/n - 1` in `min 1/2 a^T H a + f^T a`).
    pub(crate) fn fit_sawmil_form(&self, setup: &Setup) -> Result<NskFit> {
        only_fit(self.path_form(setup, &[self.c], true)?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): per binary problem its
    /// units and their kernel source once, then one solve per value on one SMO, whose
    /// kernel-row cache serves every value ([`HingeSolver::path`]).
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<NskFit>> {
        let mut fits = self.path_form(setup, cs, false)?;
        if self.bag_score == SmilBagScore::Auto {
            self.choose_auto(setup, cs, &mut fits)?;
        }
        Ok(fits)
    }

    /// [`SmilBagScore::Auto`] on `fits` (the plain-mean fits at the values `cs`), each value its
    /// own choice: the out-of-fold plain means of the training bags (the same problem with the
    /// plain mean, fitted on all folds but one at every value, scoring the held-out fold), then
    /// [`smil_auto_keeps_shift`]: the pooling [`Pooling::SmilMean`], or each problem's Platt
    /// threshold of its out-of-fold scores ([`smil_platt_threshold`]) taken off its bias. Where
    /// a class has a single bag there are no folds: the plain mean with Platt's threshold of the
    /// training bags' own scores (`mean_platt`), so that the model's pooling still says which
    /// candidate was kept.
    fn choose_auto(&self, setup: &Setup, cs: &[f64], fits: &mut [NskFit]) -> Result<()> {
        let bags = setup.bags;
        let problems = setup.problems();
        let Some((k, fold)) = auto_folds(setup.labels, setup.n_classes, self.seed) else {
            for fit in fits.iter_mut() {
                apply_bag_score(&mut fit.model, SmilBagScore::MeanPlatt, bags, &problems)?;
            }
            return Ok(());
        };
        let inner = Self {
            bag_score: SmilBagScore::Mean,
            ..self.clone()
        };
        // oof[value][problem][bag]
        let mut oof = vec![vec![vec![0.0; bags.n_bags()]; problems.len()]; cs.len()];
        for f in 0..k {
            let (held, kept): (Vec<usize>, Vec<usize>) =
                (0..bags.n_bags()).partition(|&i| fold[i] == f);
            let sub = bags.select_bags(&kept)?;
            let sub_labels: Vec<usize> = kept.iter().map(|&i| setup.labels[i]).collect();
            let sub_setup = Setup {
                bags: &sub,
                labels: &sub_labels,
                n_classes: setup.n_classes,
                class_weight: setup.class_weight.clone(),
                observer: setup.observer,
            };
            let held_bags = bags.select_bags(&held)?;
            for (fit, o) in inner.path_form(&sub_setup, cs, false)?.iter().zip(&mut oof) {
                let scores = fit.model.decision_function(&held_bags)?;
                for p in &problems {
                    for (r, &i) in held.iter().enumerate() {
                        o[p.index][i] = scores[[r, p.index]];
                    }
                }
            }
        }
        let sizes: Vec<f64> = (0..bags.n_bags())
            .map(|i| bags.bag_range(i).len() as f64)
            .collect();
        let targets: Vec<Vec<f64>> = problems.iter().map(|p| p.targets.clone()).collect();
        for (fit, o) in fits.iter_mut().zip(&oof) {
            if smil_auto_keeps_shift(o, &sizes, &targets)? {
                fit.model.pooling = Pooling::SmilMean;
            } else {
                for p in &problems {
                    fit.model.intercept[p.index] -= smil_platt_threshold(&o[p.index], &p.targets)?;
                }
            }
        }
        Ok(())
    }

    /// [`Self::path_impl`] of the paper's problem, or (`sawmil_form`) of the `sawmil`
    /// package's ([`Self::fit_sawmil_form`]).
    fn path_form(&self, setup: &Setup, cs: &[f64], sawmil_form: bool) -> Result<Vec<NskFit>> {
        let bags = setup.bags;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let linear = self.solver.for_kernel(self.kernel) == SvmRoute::Linear;
        let inst = InstanceGram::new(kernel, Rows::from(x))?;
        let solver = HingeSolver {
            tol: self.inner_tol,
            max_iter: self.inner_max_iter,
            cancel: self.observer.cancel(),
        };
        let paths = setup.one_vs_rest(|problem| {
            let (targets, weights) = (&problem.targets, &problem.weights);
            let (ptr, owner) = smil_units(bags, targets);
            let units = Bags::new(x.clone(), ptr)?;
            // unit kernels on demand: a unit is the mean of its instances (the sum in sawmil's
            // form, whose coefficients are then `scale = n` times the mean's)
            let points: Vec<Vec<(usize, f64)>> = (0..units.n_bags())
                .map(|j| {
                    let r = units.bag_range(j);
                    let w = if sawmil_form {
                        1.0
                    } else {
                        1.0 / r.len() as f64
                    };
                    r.map(|t| (t, w)).collect()
                })
                .collect();
            let y: Vec<f64> = owner.iter().map(|&i| targets[i]).collect();
            let w: Vec<f64> = owner.iter().map(|&i| weights[i]).collect();
            let p: Vec<f64> = (0..owner.len())
                .map(|j| {
                    if y[j] > 0.0 {
                        let n = units.bag_range(j).len() as f64;
                        if sawmil_form {
                            (n - 2.0) / n
                        } else {
                            (2.0 - n) / n
                        }
                    } else {
                        1.0
                    }
                })
                .collect();
            let sols = if linear {
                linear_path(
                    x,
                    &points,
                    &y,
                    &p,
                    &w,
                    cs,
                    self.inner_tol,
                    self.inner_max_iter,
                    solver.cancel,
                )?
            } else {
                let gram = ComboGram::new(&inst, x, kernel, points);
                solver.path(&gram, &y, &p, &w, cs, problem.cache_bytes)?
            };
            let scale: Vec<f64> = (0..y.len())
                .map(|j| {
                    if sawmil_form {
                        units.bag_range(j).len() as f64
                    } else {
                        1.0
                    }
                })
                .collect();
            Ok(sols
                .into_iter()
                .map(|sol| UnitFit {
                    coef: unit_coefficients(&units, &sol, &y, &scale),
                    sol,
                })
                .collect())
        })?;
        let problems = setup.problems();
        by_value(paths)
            .into_iter()
            .map(|fits| {
                let mut fit = finish(
                    kernel,
                    bags.instances(),
                    fits,
                    setup.n_classes,
                    SetNorm::L1,
                    gamma,
                );
                apply_bag_score(&mut fit.model, self.bag_score, bags, &problems)?;
                Ok(fit)
            })
            .collect()
    }
}
