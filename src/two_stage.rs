//! Two-stage methods built on sMIL: a first sMIL fit ranks the instances of the positive bags,
//! a share `eta` of them is labelled positive, and an instance-level SVM is trained on the
//! relabelled instances. sbMIL and sAwMIL, which differ in the rule that picks the positives
//! ([`Relabel`]) and in the default kernel: one declaration, [`TwoStageParams`], with the rule as
//! its `relabel` parameter and a constructor per method ([`TwoStageParams::sbmil`],
//! [`TwoStageParams::sawmil`]).
//!
//! **Stage 1** is the crate's sMIL ([`crate::set_kernel_svm`]; Bunescu & Mooney, "Multiple
//! instance learning for sparse positive bags", ICML 2007, eq. 8-9) with the same `C`, kernel,
//! `gamma`, class weights and SMO settings and its default bag score, on the same bags
//! (sAwMIL's by default in the `sawmil` package's form, below). Its
//! instance score `s(x) = sum_t c_t k(x_t, x) + b` (its score of `x` taken as a bag of one;
//! `b` holds sMIL's one threshold for every bag, [`crate::set_kernel_svm::SmilBagScore`], a
//! constant that neither rule below sees) ranks the `L` instances of the positive bags of each
//! binary problem, across all those bags at once (one global threshold, not one per bag). No
//! per-bag term enters: an instance's rank does not depend on the size of its bag (as in
//! misvm, which scores the instances as bags of one, and sawmil, whose `__rank_and_filter__`
//! does the same).
//!
//! **Relabelling** (each binary problem on its own): the instances of negative bags are
//! negative; of the `L` instances of the `P` positive bags, those that [`Relabel`] picks are
//! positive and the others negative.
//!
//! * sbMIL (Bunescu & Mooney 2007, section 3.2, "sparse balanced MIL"; `eta` the expected
//!   fraction of positive instances in a positive bag): the `k = round(eta L)` instances of
//!   largest `s`, with `k` at least `P` (as many positives as positive bags) and at most `L`;
//!   every instance whose score ties the `k`-th largest is positive too ([`sbmil_positives`]).
//!   This is the rule of Doran's `misvm` package (`misvm/sbmil.py`: the `n`-th largest score as
//!   cutoff, `n = round(L_p eta)` clipped to `[X_p, L_p]`, `f >= cutoff` positive). The paper's
//!   own text was not available to us (`benches/RESULTS.md`, "sbMIL and sAwMIL"); the global
//!   threshold is what both reference implementations (misvm, sawmil) do. misvm with
//!   `scale_C=False` and its averaging kernel `"rbf_av"` solves the problems this crate solves
//!   without class weights and gives the same instance labels (`benches/sbmil_vs_misvm.py`).
//! * sAwMIL (Savcisens & Eliassi-Rad, "The Trilemma of Truth in Large Language Models",
//!   arXiv:2506.23921, 2025; the `sawmil` package 0.2.1, `sawmil/sawmil.py`,
//!   `sAwMIL.__rank_and_filter__`): the instances with `s >= q`, `q` the `(1 - eta)` quantile of
//!   the `L` scores with linear interpolation (NumPy's default `np.quantile` method); if fewer
//!   than `m = max(1, floor(0.05 L))` are picked (`min_pos_ratio = 0.05`, the package's
//!   default), the `min(L, max(m, round(eta L)))` instances of largest score instead
//!   ([`sawmil_positives`]). The package also takes an intra-bag mask (instances that may be
//!   positive at all); this crate has none, which is the package's behaviour with a mask of
//!   ones.
//!
//! **Stage 2** is SIL's SVM ([`crate::baselines`]: one hinge C-SVM over all training
//! instances, solved by the crate's SMO) on the relabelled instances, instance `t` of bag `i`
//! costing `C w_i` (`w_i` the class weight of bag `i`, as in SIL and sMIL; with no class weights
//! every instance costs `C`, as in both reference implementations: misvm's `C / N` for all `N`
//! instances and sawmil's `C` differ from it by the scale of `C` only). The model is the shared
//! instance expansion `f(x) = sum_t a_t y_t k(x_t, x) + b` with max pooling,
//! `F(X) = max_p f(x_p)` (Bunescu & Mooney: "the prediction confidence for each bag is computed
//! as the maximum over the prediction confidence of each instance in the bag"; sawmil's
//! `decision_function` likewise).
//!
//! sAwMIL's stage 1 solves the `sawmil` package's form of sMIL by default (`first_stage_problem
//! = "sawmil"`, [`FirstStageProblem`], set by [`TwoStageParams::sawmil`]): the instance kernel
//! summed over a positive bag, not averaged, and a positive bag of `n` instances with the dual
//! linear term `(n - 2) / n` (sawmil 0.2.1 writes `2/n - 1` into the `f` of
//! `min 1/2 a^T H a + f^T a`), where the paper (and misvm, sbMIL's stage 1) has `(2 - n) / n`.
//! Each side on the other's problem gives the other's AUC, and only the package's problem
//! reaches the package's AUC on MUSK1 and Elephant; `"paper"` (sbMIL's stage 1) stays an
//! option, ahead on MUSK2, TST1 and TST2 (docs/guide/smil-bag-scores.md, "sbMIL and sAwMIL").
//! Where this crate still differs from the package: the bias comes from the SMO's KKT
//! conditions (sawmil averages `y - K a y` over the free units, without the positive bags'
//! margin target; neither rule sees it), the costs are `C` times the class weights (sawmil's
//! default `scale_C=True` divides `C` by the number of negative instances and of positive bags:
//! `class_weight` reaches such ratios), and the QPs are solved by the SMO to `inner_tol`
//! (sawmil: Gurobi, OSQP or DAQP).

use ndarray::Array2;

use crate::baselines::{fit_points, record};
use crate::choice::choices;
use crate::error::Result;
use crate::fit::{only_fit, ParamGuard, Setup};
use crate::model::Pooling;
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::Progress;
use crate::set_kernel_svm::{SmilBagScore, SmilParams};

choices! {
    /// Which rule of the relabelling step picks the positive instances: the one thing in which
    /// the two methods of the family differ (besides sAwMIL's default kernel and first-stage
    /// problem, see [`TwoStageParams::sawmil`]).
    pub enum Relabel {
        /// sbMIL's (sparse balanced MIL; Bunescu & Mooney, "Multiple instance learning for
        /// sparse positive bags", ICML 2007, section 3.2, as Doran's `misvm` implements it):
        /// the `round(eta L)` largest scores, at least one per positive bag
        /// ([`sbmil_positives`]).
        Sbmil = "sbmil",
        /// sAwMIL's (Savcisens & Eliassi-Rad, "The Trilemma of Truth in Large Language Models",
        /// arXiv:2506.23921, 2025; the `sawmil` package 0.2.1): the scores at or above the
        /// `(1 - eta)` quantile, at least `5 %` ([`sawmil_positives`]).
        Sawmil = "sawmil",
    }
}

choices! {
    /// Which problem the first stage solves (the two differ in the positive bags' terms only;
    /// `benches/RESULTS.md`, "sMIL's bag score against misvm and sawmil").
    pub enum FirstStageProblem {
        /// Bunescu & Mooney's sMIL (ICML 2007, eq. 8-9), the crate's [`SmilParams`]: a
        /// positive bag is the mean of its instances, its linear term `(2 - n) / n`.
        Paper = "paper",
        /// The `sawmil` package's sMIL (0.2.1, its default `normalizer="none"`): the instance
        /// kernel summed over a positive bag, its linear term `(n - 2) / n`.
        Sawmil = "sawmil",
    }
}

impl Relabel {
    /// The positives among the first-stage `scores` of the instances of `n_positive_bags`
    /// positive bags.
    pub fn positives(self, scores: &[f64], n_positive_bags: usize, eta: f64) -> Vec<bool> {
        match self {
            Relabel::Sbmil => sbmil_positives(scores, n_positive_bags, eta),
            Relabel::Sawmil => sawmil_positives(scores, eta),
        }
    }
}

/// `round(v)` with ties to even, as Python's `round` (which misvm and sawmil call), for
/// `v >= 0`.
fn round_count(v: f64) -> usize {
    v.round_ties_even() as usize
}

/// The indices of `scores` from the largest score down (ties by index).
fn descending(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
}

/// sbMIL's relabelling (Bunescu & Mooney 2007, section 3.2, as Doran's `misvm` implements
/// it): of the `L = scores.len()` instances of `n_positive_bags` positive bags, the
/// `k = round(eta L)` of largest score are positive, `k` clipped to
/// `[min(n_positive_bags, L), L]`, and so is every instance whose score equals the `k`-th
/// largest. Empty for no scores.
pub fn sbmil_positives(scores: &[f64], n_positive_bags: usize, eta: f64) -> Vec<bool> {
    let l = scores.len();
    if l == 0 {
        return Vec::new();
    }
    let k = round_count(eta * l as f64).max(n_positive_bags).clamp(1, l);
    let cutoff = scores[descending(scores)[k - 1]];
    scores.iter().map(|&s| s >= cutoff).collect()
}

/// The `p`-quantile of `scores` by linear interpolation between order statistics, computed as
/// NumPy's `np.quantile(scores, p)` (method "linear") computes it: virtual index
/// `n p - p`, and the interpolation `a + (b - a) t`, or `b - (b - a)(1 - t)` for `t >= 0.5`.
pub fn linear_quantile(scores: &[f64], p: f64) -> f64 {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let virtual_index = (n as f64 * p - p).clamp(0.0, (n - 1) as f64);
    let lo = virtual_index.floor();
    let t = virtual_index - lo;
    let lo = lo as usize;
    let (a, b) = (sorted[lo], sorted[(lo + 1).min(n - 1)]);
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// sAwMIL's relabelling (the `sawmil` package 0.2.1, `sAwMIL.__rank_and_filter__`, with an
/// intra-bag mask of ones): the instances whose score is at least the `(1 - eta)` quantile of
/// `scores` ([`linear_quantile`]); if fewer than `m = max(1, floor(0.05 L))`, the
/// `min(L, max(m, round(eta L)))` of largest score instead (ties by index). Empty for no
/// scores.
pub fn sawmil_positives(scores: &[f64], eta: f64) -> Vec<bool> {
    const MIN_POS_RATIO: f64 = 0.05;
    let l = scores.len();
    if l == 0 {
        return Vec::new();
    }
    let q = linear_quantile(scores, 1.0 - eta);
    let chosen: Vec<bool> = scores.iter().map(|&s| s >= q).collect();
    let min_needed = ((MIN_POS_RATIO * l as f64) as usize).max(1);
    if chosen.iter().filter(|&&c| c).count() >= min_needed {
        return chosen;
    }
    let k = round_count(eta * l as f64).max(min_needed).min(l);
    let mut top = vec![false; l];
    for &t in &descending(scores)[..k] {
        top[t] = true;
    }
    top
}

crate::record::record! { $ fields: two_stage_fit_fields;
    /// A fitted sbMIL or sAwMIL: the second stage (the instance SVM) in the shared record, the
    /// first stage (the crate's sMIL) and, per binary problem, the labels it gave the training
    /// instances.
    #[derive(Debug, Clone, PartialEq)]
    pub struct TwoStageFit {
        /// The second stage: the instance expansion with max pooling and its SMO record.
        pub svm: crate::fit::SvmFit,
        /// The first stage: the sMIL fit on the same bags with the same settings.
        pub first_stage: crate::fit::SvmFit,
        /// Per problem, the second stage's label of every training instance (`+1` / `-1`).
        pub instance_labels: Vec<Vec<f64>>,
        /// Per problem, the smallest first-stage score of an instance labelled positive.
        pub threshold: Vec<f64>,
    }
}

hyperparams! {
    /// Hyperparameters of the two-stage family, sbMIL (sparse balanced MIL; Bunescu & Mooney
    /// 2007, section 3.2) and sAwMIL (sparse-aware MIL; Savcisens & Eliassi-Rad 2025, the
    /// `sawmil` package), declared once and checked into [`TwoStageValidParams`]. The declared
    /// defaults are sbMIL's; [`TwoStageParams::sbmil`] and [`TwoStageParams::sawmil`] give each
    /// method's (sAwMIL's kernel and first-stage problem are the package's).
    pub struct TwoStageParams => TwoStageValidParams {
        shared(kernel = KernelKind::Rbf);
        /// The relabelling rule: `"sbmil"` or `"sawmil"`.
        relabel: Relabel = Relabel::Sbmil;
        /// Expected fraction of positive instances in a positive bag: the share of the positive
        /// bags' instances labelled positive (sbMIL: the `round(eta L)` of largest first-stage
        /// score, at least one per positive bag; sAwMIL: those at or above the `1 - eta`
        /// quantile of the first-stage scores, at least 5 % of them).
        eta: f64 = 0.1, check Range::OpenClosed01;
        /// Relative KKT tolerance of the SMO (both stages).
        inner_tol: f64 = 1e-3, check Range::Open01;
        /// SMO iteration cap of each solve (`None`: the solver's default).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
        /// The first stage's problem ([`FirstStageProblem`]): `"paper"` (Bunescu & Mooney's sMIL;
        /// sbMIL's, the declared default) or `"sawmil"` (the `sawmil` package's: summed kernel,
        /// the positive bags' linear term negated; sAwMIL's, [`TwoStageParams::sawmil`]).
        first_stage_problem: FirstStageProblem = FirstStageProblem::Paper;
    }
    fit -> TwoStageFit;
}

impl TwoStageParams {
    /// sbMIL's defaults (Bunescu & Mooney, "Multiple instance learning for sparse positive
    /// bags", ICML 2007, section 3.2): the declared ones, the Gaussian kernel.
    pub fn sbmil() -> Self {
        Self::new()
    }
    /// sAwMIL's defaults (Savcisens & Eliassi-Rad, "The Trilemma of Truth in Large Language
    /// Models", 2025): the linear kernel and the package's first-stage problem
    /// ([`FirstStageProblem::Sawmil`]), as in the `sawmil` package.
    pub fn sawmil() -> Self {
        Self::new()
            .relabel(Relabel::Sawmil)
            .kernel(KernelKind::Linear)
            .first_stage_problem(FirstStageProblem::Sawmil)
    }
}

impl TwoStageValidParams {
    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, each
    /// problem relabelled on its own): sMIL, the relabelling by [`Relabel`], the instance SVM.
    fn fit_impl(&self, setup: &Setup) -> Result<TwoStageFit> {
        let bags = setup.bags;
        let x = bags.instances();
        // stage 1: the crate's sMIL with the same settings, on the same setup; its instance
        // scores carry the class-medians threshold of `mean_offset` whatever sMIL's default
        // bag score (the relabelling ranks by them; docs/guide/smil-bag-scores.md)
        let smil = SmilParams::new()
            .c(self.c)
            .bag_score(SmilBagScore::MeanOffset)
            .kernel(self.kernel)
            .gamma(self.gamma)
            .class_weight(self.class_weight.clone())
            .n_jobs(self.n_jobs)
            .inner_tol(self.inner_tol)
            .inner_max_iter(self.inner_max_iter)
            .observer(self.observer.clone())
            .check()?;
        let first = match self.first_stage_problem {
            FirstStageProblem::Paper => smil.fit_impl(setup)?,
            FirstStageProblem::Sawmil => smil.fit_sawmil_form(setup)?,
        };
        let problems = setup.problems();
        // each stage reported per problem with its objectives
        let report = |step: usize, objective: &[f64]| {
            for (k, p) in problems.iter().enumerate() {
                self.observer.notify(Progress {
                    problem: p.index,
                    step,
                    max_steps: 2,
                    objective: objective[k],
                    temperature: None,
                    expected_steps: 2,
                });
            }
        };
        report(1, &first.objective);
        setup.observer.check()?;
        // the first-stage scores of the instances of bags positive in some problem
        let rows: Vec<usize> = (0..bags.n_bags())
            .filter(|&i| problems.iter().any(|p| p.targets[i] > 0.0))
            .flat_map(|i| bags.bag_range(i))
            .collect();
        let scores = first
            .model
            .instance_decision_function(&x.select_rows(&rows))?;
        let owner: Vec<usize> = (0..bags.n_bags())
            .flat_map(|i| bags.bag_range(i).map(move |_| i))
            .collect();
        let (instance_labels, threshold): (Vec<Vec<f64>>, Vec<f64>) = problems
            .iter()
            .map(|p| self.relabel_problem(&owner, &p.targets, &rows, &scores, p.index))
            .unzip();
        setup.observer.check()?;
        // stage 2: SIL's instance SVM on the relabelled instances, costs by bag
        let (model, sols) = only_fit(fit_points(
            setup,
            x,
            first.model.kernel,
            (self.inner_tol, self.inner_max_iter),
            Pooling::Max,
            &[self.c],
            |problem| {
                let w = owner.iter().map(|&i| problem.weights[i]).collect();
                Ok((instance_labels[problem.index].clone(), w))
            },
        )?)?;
        let svm = record(model, first.gamma, sols);
        report(2, &svm.objective);
        Ok(TwoStageFit {
            svm,
            first_stage: first,
            instance_labels,
            threshold,
        })
    }

    /// The second-stage labels of every instance (instance `t` in bag `owner[t]`) in the
    /// problem with bag `targets` (output `out` of the first stage's `scores`, whose rows are
    /// the instances `rows`), and the smallest score labelled positive.
    fn relabel_problem(
        &self,
        owner: &[usize],
        targets: &[f64],
        rows: &[usize],
        scores: &Array2<f64>,
        out: usize,
    ) -> (Vec<f64>, f64) {
        let mut labels = vec![-1.0; owner.len()];
        let (idx, s): (Vec<usize>, Vec<f64>) = rows
            .iter()
            .enumerate()
            .filter(|&(_, &t)| targets[owner[t]] > 0.0)
            .map(|(r, &t)| (t, scores[[r, out]]))
            .unzip();
        let n_positive_bags = targets.iter().filter(|&&t| t > 0.0).count();
        let chosen = self.relabel.positives(&s, n_positive_bags, self.eta);
        let mut threshold = f64::INFINITY;
        for ((&t, &c), &v) in idx.iter().zip(&chosen).zip(&s) {
            if c {
                labels[t] = 1.0;
                threshold = threshold.min(v);
            }
        }
        (labels, threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbmil_takes_the_rounded_share_at_least_one_per_bag() {
        let s = [0.5, -1.0, 2.0, 0.1, 3.0, -0.2, 0.0, 1.0, -3.0, 0.7];
        let count = |v: Vec<bool>| v.iter().filter(|&&c| c).count();
        // round(0.3 * 10) = 3: the scores 3, 2, 1
        let pos = sbmil_positives(&s, 1, 0.3);
        assert_eq!(count(pos.clone()), 3);
        assert!(pos[4] && pos[2] && pos[7]);
        // at least one per positive bag
        assert_eq!(count(sbmil_positives(&s, 5, 0.3)), 5);
        // round half to even: 0.25 * 10 = 2.5 -> 2; 0.35 * 10 = 3.5 -> 4
        assert_eq!(count(sbmil_positives(&s, 1, 0.25)), 2);
        assert_eq!(count(sbmil_positives(&s, 1, 0.35)), 4);
        assert_eq!(count(sbmil_positives(&s, 1, 1.0)), 10);
        // ties with the cutoff are positive
        assert_eq!(count(sbmil_positives(&[1.0, 1.0, 1.0, 0.0], 1, 0.25)), 3);
        assert!(sbmil_positives(&[], 1, 0.5).is_empty());
    }

    #[test]
    fn the_quantile_is_numpys_linear_one() {
        // np.quantile([1, 2, 3, 4], 0.5) = 2.5; 0.9 -> 3.7; 0 and 1 the extremes
        let s = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(linear_quantile(&s, 0.5), 2.5);
        assert!((linear_quantile(&s, 0.9) - 3.7).abs() < 1e-15);
        assert_eq!(linear_quantile(&s, 0.0), 1.0);
        assert_eq!(linear_quantile(&s, 1.0), 4.0);
        assert_eq!(linear_quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn sawmil_takes_the_quantile_and_falls_back_to_five_percent() {
        let s: Vec<f64> = (0..40).map(|i| ((i * 17) % 40) as f64).collect();
        let count = |v: &[bool]| v.iter().filter(|&&c| c).count();
        // 1 - 0.25 quantile of 0..39 is 29.25: 30..39 are picked
        let pos = sawmil_positives(&s, 0.25);
        assert_eq!(count(&pos), 10);
        assert!(s.iter().zip(&pos).all(|(&v, &c)| c == (v >= 29.25)));
        // eta = 0.01: the quantile picks one (39), fewer than max(1, floor(0.05 * 40)) = 2
        let pos = sawmil_positives(&s, 0.01);
        assert_eq!(count(&pos), 2);
        assert!(s.iter().zip(&pos).all(|(&v, &c)| c == (v >= 38.0)));
        assert_eq!(count(&sawmil_positives(&s, 1.0)), 40);
    }
}
