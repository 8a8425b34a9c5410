//! NSK, sMIL, SVM-CC and the one-class MI-SVM from Rust: fits on small bags, thread
//! independence, the exact LP bias against a brute-force scan, SVM-CC's LP step (the `v` of each
//! rule optimal by Clarabel, the projection against a brute force over supports), its bounds, and
//! refusals of bad parameters.

mod common;

use common::toy;
use milsvm::convex_combination::{lp_step, project_onto_face, CcBounds, LpRule, SvmCcParams};
use milsvm::one_class::OneClassParams;
use milsvm::set_kernel_svm::{NskParams, SetNorm, SmilParams};
use milsvm::smo::max_weights;
use milsvm::solver::hinge_bias;
use milsvm::StopReason;
use milsvm::{Error, Gamma, KernelKind};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn accuracy(scores: &Array2<f64>, labels: &[usize]) -> f64 {
    let ok = scores
        .column(0)
        .iter()
        .zip(labels)
        .filter(|(s, &l)| (**s > 0.0) == (l == 1))
        .count();
    ok as f64 / labels.len() as f64
}

#[test]
fn nsk_and_smil_fit_and_are_thread_independent() -> Result<(), Error> {
    let (bags, labels) = toy(0, 20);
    for norm in [SetNorm::L1, SetNorm::L2] {
        let p = NskParams::new().c(10.0).gamma(Gamma::Value(0.5)).norm(norm);
        let one = p.clone().n_jobs(Some(1)).fit(&bags, &labels)?;
        let two = p.clone().n_jobs(Some(2)).fit(&bags, &labels)?;
        assert_eq!(one, two);
        assert!(one.converged);
        assert_eq!(accuracy(&one.model.decision_function(&bags)?, &labels), 1.0);
    }
    let fit = SmilParams::new().c(10.0).fit(&bags, &labels)?;
    assert!(fit.converged && fit.objective[0].is_finite());
    Ok(())
}

#[test]
fn svmcc_and_one_class_fit() -> Result<(), Error> {
    let (bags, labels) = toy(1, 20);
    for (kernel, rule) in [KernelKind::Linear, KernelKind::Rbf]
        .into_iter()
        .flat_map(|k| [(k, LpRule::Project), (k, LpRule::Max)])
    {
        let params = SvmCcParams::new().c(10.0).kernel(kernel).lp_rule(rule);
        let fit = params.clone().n_jobs(Some(1)).fit(&bags, &labels)?;
        assert_eq!(fit, params.n_jobs(Some(2)).fit(&bags, &labels)?);
        assert_eq!(fit.stop_reason[0], StopReason::Converged);
        assert_eq!(accuracy(&fit.model.decision_function(&bags)?, &labels), 1.0);
        // each positive bag's v sits on its instance near (3, 3), the first one (project: moved
        // from the bag mean as far as the LP needs, most of the way)
        for v in &fit.v[0] {
            match rule {
                LpRule::Max => assert!((v[0] - 1.0).abs() < 1e-12),
                LpRule::Project => assert!(v[0] > 0.95, "{v:?}"),
            }
        }
    }
    let oc = OneClassParams::new().n_jobs(Some(1)).fit(&bags, &labels)?;
    assert_eq!(
        oc,
        OneClassParams::new().n_jobs(Some(2)).fit(&bags, &labels)?
    );
    assert_eq!(oc.stop_reason, StopReason::Converged);
    let total: f64 = oc.alpha.iter().chain(&oc.bag_alpha).sum();
    assert!((total - 1.0).abs() < 1e-9);
    Ok(())
}

#[test]
fn hinge_bias_is_the_exact_minimiser() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..200 {
        let np = rng.random_range(1..6);
        let nn = rng.random_range(0..6);
        let sp: Vec<f64> = (0..np).map(|_| rng.random_range(-3.0..3.0)).collect();
        let sn: Vec<f64> = (0..nn).map(|_| rng.random_range(-3.0..3.0)).collect();
        let cp: Vec<f64> = (0..np).map(|_| rng.random_range(0.1..2.0)).collect();
        let cn: Vec<f64> = (0..nn).map(|_| rng.random_range(0.1..2.0)).collect();
        let h = |b: f64| -> f64 {
            sp.iter()
                .zip(&cp)
                .map(|(s, c)| c * (1.0 - s - b).max(0.0))
                .chain(sn.iter().zip(&cn).map(|(s, c)| c * (1.0 + s + b).max(0.0)))
                .sum()
        };
        let b = hinge_bias(&sp, &cp, &sn, &cn);
        // the minimum of a piecewise-linear convex function is at a breakpoint
        let best = sp
            .iter()
            .map(|s| 1.0 - s)
            .chain(sn.iter().map(|s| -1.0 - s))
            .map(h)
            .fold(f64::INFINITY, f64::min);
        assert!(h(b) <= best + 1e-12, "h({b}) = {} > {best}", h(b));
    }
    assert_eq!(max_weights(&[1.0, 3.0, 3.0, 2.0]), vec![0.0, 0.5, 0.5, 0.0]);
}

/// The projection of `v` onto `{u in simplex: u . s = t}` by brute force over supports: on each
/// support `S` (two or more instances) the equality-constrained least squares
/// `u_S = v_S + alpha 1 + beta s_S`; the nearest nonnegative one. `None` when no support gives one.
fn projection_by_supports(v: &[f64], s: &[f64], t: f64) -> Option<Vec<f64>> {
    let k = v.len();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << k) {
        let set: Vec<usize> = (0..k).filter(|&j| mask >> j & 1 == 1).collect();
        if set.len() < 2 {
            continue;
        }
        let n = set.len() as f64;
        let (s1, s2): (f64, f64) = set
            .iter()
            .fold((0.0, 0.0), |a, &j| (a.0 + s[j], a.1 + s[j] * s[j]));
        let (v1, sv): (f64, f64) = set
            .iter()
            .fold((0.0, 0.0), |a, &j| (a.0 + v[j], a.1 + s[j] * v[j]));
        // n alpha + s1 beta = 1 - v1, s1 alpha + s2 beta = t - sv
        let det = n * s2 - s1 * s1;
        if det.abs() < 1e-12 {
            continue;
        }
        let alpha = ((1.0 - v1) * s2 - s1 * (t - sv)) / det;
        let beta = (n * (t - sv) - s1 * (1.0 - v1)) / det;
        let mut u = vec![0.0; k];
        for &j in &set {
            u[j] = v[j] + alpha + beta * s[j];
        }
        if u.iter().any(|&x| x < -1e-12) {
            continue;
        }
        let dist: f64 = u.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum();
        if best.as_ref().is_none_or(|(d, _)| dist < *d) {
            best = Some((dist, u));
        }
    }
    best.map(|(_, u)| u)
}

/// The optimal value of SVM-CC's LP with `w` fixed (variables `v`, `b`, `xi`; problem 23-28) by
/// the interior-point solver Clarabel.
fn svmcc_lp_optimum(sp: &[Vec<f64>], cp: &[f64], sn: &[f64], cn: &[f64]) -> f64 {
    let nv: usize = sp.iter().map(Vec::len).sum();
    let (np, nn) = (sp.len(), sn.len());
    let n = nv + 1 + np + nn; // v, b, xi_pos, xi_neg
    let mut cost = vec![0.0; n];
    cost[nv + 1..nv + 1 + np].copy_from_slice(cp);
    cost[nv + 1 + np..].copy_from_slice(cn);
    let (mut rows, mut rhs) = (Vec::new(), Vec::new());
    let mut off = 0;
    for s in sp {
        // sum_j v_ij = 1
        let mut r = vec![0.0; n];
        r[off..off + s.len()].iter_mut().for_each(|x| *x = 1.0);
        rows.push(r);
        rhs.push(1.0);
        off += s.len();
    }
    off = 0;
    for (i, s) in sp.iter().enumerate() {
        // -(v_i . s_i) - b - xi_i <= -1
        let mut r = vec![0.0; n];
        for (j, &x) in s.iter().enumerate() {
            r[off + j] = -x;
        }
        r[nv] = -1.0;
        r[nv + 1 + i] = -1.0;
        rows.push(r);
        rhs.push(-1.0);
        off += s.len();
    }
    for (k, &g) in sn.iter().enumerate() {
        // b - xi_n <= -1 - g_n
        let mut r = vec![0.0; n];
        r[nv] = 1.0;
        r[nv + 1 + np + k] = -1.0;
        rows.push(r);
        rhs.push(-1.0 - g);
    }
    for j in (0..nv).chain(nv + 1..n) {
        // v >= 0, xi >= 0
        let mut r = vec![0.0; n];
        r[j] = -1.0;
        rows.push(r);
        rhs.push(0.0);
    }
    common::lp_optimum_by_clarabel(&cost, &rows, &rhs, np)
}

#[test]
fn lp_step_project_is_optimal_and_the_projection() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut projected = 0;
    for case in 0..300 {
        let np = rng.random_range(1..5);
        let nn = rng.random_range(0..6);
        // scores on a grid of 0.25 (ties happen) or continuous
        let draw = |rng: &mut ChaCha8Rng| -> f64 {
            let x: f64 = rng.random_range(-2.5..2.5);
            if case % 2 == 0 {
                (4.0 * x).round() / 4.0
            } else {
                x
            }
        };
        let sp: Vec<Vec<f64>> = (0..np)
            .map(|_| {
                (0..rng.random_range(1..6))
                    .map(|_| draw(&mut rng))
                    .collect()
            })
            .collect();
        let sn: Vec<f64> = (0..nn).map(|_| draw(&mut rng)).collect();
        let cp: Vec<f64> = (0..np).map(|_| rng.random_range(0.1..2.0)).collect();
        let cn: Vec<f64> = (0..nn).map(|_| rng.random_range(0.1..2.0)).collect();
        let v: Vec<Vec<f64>> = sp
            .iter()
            .map(|s| {
                let w: Vec<f64> = s
                    .iter()
                    .map(|_| {
                        if rng.random::<f64>() < 0.3 {
                            0.0
                        } else {
                            rng.random::<f64>()
                        }
                    })
                    .collect();
                let total: f64 = w.iter().sum();
                if total > 0.0 {
                    w.iter().map(|x| x / total).collect()
                } else {
                    vec![1.0 / s.len() as f64; s.len()]
                }
            })
            .collect();
        let scores: Vec<&[f64]> = sp.iter().map(Vec::as_slice).collect();
        let (vm, bm) = lp_step(LpRule::Max, &scores, &v, &cp, &sn, &cn);
        let (vp, b) = lp_step(LpRule::Project, &scores, &v, &cp, &sn, &cn);
        assert_eq!(b, bm, "the rule does not change b");
        for (s, u) in sp.iter().zip(&vm) {
            assert_eq!(u, &max_weights(s));
        }
        // both are optimal for the LP: the value of (v, b) is the optimum
        let optimum = svmcc_lp_optimum(&sp, &cp, &sn, &cn);
        for u in [&vm, &vp] {
            let value: f64 = sp
                .iter()
                .zip(u.iter())
                .zip(&cp)
                .map(|((s, ui), c)| {
                    let dot: f64 = s.iter().zip(ui).map(|(a, b)| a * b).sum();
                    c * (1.0 - dot - b).max(0.0)
                })
                .chain(sn.iter().zip(&cn).map(|(g, c)| c * (1.0 + g + b).max(0.0)))
                .sum();
            assert!(
                value <= optimum + 1e-7 * optimum.abs().max(1.0),
                "case {case}: {value} > {optimum}"
            );
        }
        let best: Vec<f64> = sp
            .iter()
            .map(|s| s.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        for (((s, u), old), &g) in sp.iter().zip(&vp).zip(&v).zip(&best) {
            let dot = |w: &[f64]| w.iter().zip(s).map(|(a, b)| a * b).sum::<f64>();
            assert!((u.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(u.iter().all(|&x| x >= 0.0));
            // optimal: the bag's slack is the least any v gives, max(0, 1 - G - b)
            let t = g.min(1.0 - b);
            assert!(dot(u) >= t - 1e-12, "case {case}: v . s = {} < {t}", dot(u));
            if dot(old) >= t {
                assert_eq!(u, old, "an optimal v is kept");
            } else if t < g {
                projected += 1;
                let reference = projection_by_supports(old, s, t).expect("a projection");
                for (a, r) in u.iter().zip(&reference) {
                    assert!((a - r).abs() < 1e-9, "case {case}: {u:?} != {reference:?}");
                }
            } else {
                // the best instances' simplex
                assert!(u.iter().zip(s).all(|(&a, &x)| a == 0.0 || x == g));
            }
        }
    }
    assert!(projected > 50, "{projected} projections checked");
    // a bag that misses the margin: the projection onto its best instances' simplex
    let u = project_onto_face(&[0.5, 0.2, 0.3], &[1.0, 1.0, 0.0], 5.0);
    assert!((u[0] - 0.65).abs() < 1e-15 && (u[1] - 0.35).abs() < 1e-15 && u[2] == 0.0);
    // weights on instances that all reach the level are kept, though their sum rounds below it
    // (hypothesis found it: v . s = -1.3400000000000003 < -1.34 = max s)
    let v = [0.3795822766195768, 0.21262731130967186, 0.40779041207075145];
    assert_eq!(project_onto_face(&v, &[-1.34; 3], 2.34), v.to_vec());
}

#[test]
fn svmcc_bounds_and_the_max_rule() -> Result<(), Error> {
    let (bags, labels) = toy(3, 16);
    let fit = |rule: LpRule, bounds: CcBounds, kernel: KernelKind| {
        SvmCcParams::new()
            .c(2.0)
            .kernel(kernel)
            .lp_rule(rule)
            .bounds(bounds)
            .n_jobs(Some(1))
            .fit(&bags, &labels)
    };
    for kernel in [KernelKind::Linear, KernelKind::Rbf] {
        // the paper's bounds are the split ones for rbf and the equal ones for linear
        let same = if kernel == KernelKind::Rbf {
            CcBounds::Split
        } else {
            CcBounds::Equal
        };
        let other = if kernel == KernelKind::Rbf {
            CcBounds::Equal
        } else {
            CcBounds::Split
        };
        let paper = fit(LpRule::Max, CcBounds::Paper, kernel)?;
        assert_eq!(paper, fit(LpRule::Max, same, kernel)?);
        assert_ne!(paper.model, fit(LpRule::Max, other, kernel)?.model);
        // the max rule leaves every positive bag's v on a vertex (no ties in the toy bags)
        for v in &paper.v[0] {
            assert_eq!(v.iter().filter(|&&x| x == 1.0).count(), 1);
        }
    }
    Ok(())
}

#[test]
fn bad_parameters_are_refused() {
    let (bags, labels) = toy(2, 8);
    let msg = |r: Result<(), Error>| r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg(NskParams::new().c(0.0).fit(&bags, &labels).map(|_| ())).contains("C must be"));
    assert!(msg(SmilParams::new()
        .inner_tol(1.0)
        .fit(&bags, &labels)
        .map(|_| ()))
    .contains("tol must"));
    assert!(msg(SvmCcParams::new()
        .max_iter(0)
        .fit(&bags, &labels)
        .map(|_| ()))
    .contains("max_iter"));
    assert!(msg(OneClassParams::new()
        .nu(1.5)
        .fit(&bags, &labels)
        .map(|_| ()))
    .contains("nu must"));
    assert!(msg(OneClassParams::new().fit(&bags, &[0; 8]).map(|_| ())).contains("positive bag"));
}

/// Small positive bags (1 or 2 instances, one near (2, 2)) and large negative bags (30 to 60
/// instances near the origin).
fn sized(seed: u64, n_bags: usize) -> (milsvm::Bags, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut bags, mut labels) = (Vec::new(), Vec::new());
    for i in 0..n_bags {
        let pos = i % 2 == 1;
        let n = if pos {
            rng.random_range(1..3)
        } else {
            rng.random_range(30..61)
        };
        let mut x = Array2::from_shape_fn((n, 2), |_| rng.random::<f64>() - 0.5);
        if pos {
            x[[0, 0]] += 2.0;
            x[[0, 1]] += 2.0;
        }
        bags.push(x);
        labels.push(usize::from(pos));
    }
    (
        milsvm::Bags::from_dense_bags(&bags).expect("valid bags"),
        labels,
    )
}

/// The share of (positive, negative) pairs of bags ranked right by `scores` (ties count half).
fn auc(scores: &Array2<f64>, labels: &[usize]) -> f64 {
    let s = scores.column(0);
    let (mut right, mut pairs) = (0.0, 0.0);
    for (i, &li) in labels.iter().enumerate() {
        for (j, &lj) in labels.iter().enumerate() {
            if li == 1 && lj == 0 {
                pairs += 1.0;
                right += if s[i] > s[j] {
                    1.0
                } else if s[i] == s[j] {
                    0.5
                } else {
                    0.0
                };
            }
        }
    }
    right / pairs
}

#[test]
fn smil_bag_scores_offset_the_mean_and_rank_by_content() -> Result<(), Error> {
    use milsvm::set_kernel_svm::{smil_threshold, SmilBagScore};
    use milsvm::{ParamGuard, Pooling};
    let (bags, labels) = sized(0, 30);
    let (test, test_labels) = sized(1, 30);
    let base = SmilParams::new().c(0.01).gamma(Gamma::Value(0.5));
    assert_eq!(*base.clone().check()?.bag_score(), SmilBagScore::Auto);
    let default = base
        .clone()
        .bag_score(SmilBagScore::MeanOffset)
        .fit(&bags, &labels)?;
    let shifted = base
        .clone()
        .bag_score(SmilBagScore::SmilMean)
        .fit(&bags, &labels)?;
    let plain = base.bag_score(SmilBagScore::Mean).fit(&bags, &labels)?;
    // one solve; the rules differ in the pooling and the bias only
    assert_eq!(default.alpha, plain.alpha);
    assert_eq!(shifted.alpha, plain.alpha);
    // the threshold: the midpoint of the two classes' median training scores
    let train = plain.model.decision_function(&bags)?;
    // the two middle values of the sorted scores, one value twice for an odd count
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        (v[(n - 1) / 2] + v[n / 2]) / 2.0
    };
    let of_class = |c: usize| -> Vec<f64> {
        (0..bags.n_bags())
            .filter(|&i| labels[i] == c)
            .map(|i| train[[i, 0]])
            .collect()
    };
    let t = 0.5 * (median(of_class(1)) + median(of_class(0)));
    let targets: Vec<f64> = labels
        .iter()
        .map(|&l| if l == 1 { 1.0 } else { -1.0 })
        .collect();
    assert_eq!(smil_threshold(train.column(0).to_vec(), &targets), t);
    assert_eq!(
        smil_threshold([1.0, 5.0, 2.0, -4.0, -2.0], &[1.0, 1.0, 1.0, -1.0, -1.0]),
        -0.5
    );
    assert_eq!(default.model.pooling, Pooling::Mean);
    assert_eq!(shifted.model.pooling, Pooling::SmilMean);
    assert_eq!(default.model.intercept[0], plain.model.intercept[0] - t);
    assert_eq!(shifted.model.intercept, plain.model.intercept);
    let (d, s, p) = (
        default.model.decision_function(&test)?,
        shifted.model.decision_function(&test)?,
        plain.model.decision_function(&test)?,
    );
    for i in 0..test.n_bags() {
        let n = test.bag_range(i).len() as f64;
        assert!((d[[i, 0]] - (p[[i, 0]] - t)).abs() <= 1e-12);
        assert!((s[[i, 0]] - (p[[i, 0]] + 1.0 - 1.0 / n)).abs() <= 1e-12);
    }
    // at this C the instance scores are small: the size shift ranks the large (negative) bags
    // first, the default ranks by content and classifies the test bags
    assert!(auc(&d, &test_labels) > 0.95);
    assert!(auc(&s, &test_labels) < 0.05);
    assert!(accuracy(&d, &test_labels) > 0.9);
    Ok(())
}

#[test]
fn smil_platt_threshold_is_the_sigmoid_midpoint_or_else_the_class_medians() -> Result<(), Error> {
    use milsvm::model::fit_sigmoid;
    use milsvm::set_kernel_svm::{smil_platt_threshold, smil_threshold};
    // overlapping classes: the score where Platt's sigmoid is 1/2, -b/a
    let scores = [-1.5, -0.4, 0.3, -0.9, 0.8, 1.7, 0.1, 2.4];
    let targets = [-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0];
    let positive: Vec<bool> = targets.iter().map(|&t| t > 0.0).collect();
    let (a, b) = fit_sigmoid(&scores, &positive)?;
    assert!(a < 0.0);
    let t = smil_platt_threshold(&scores, &targets)?;
    assert_eq!(t, -b / a);
    assert!((1.0 / (1.0 + (a * t + b).exp()) - 0.5).abs() < 1e-12);
    assert!(t != smil_threshold(scores, &targets));
    // scores that rank the classes the wrong way round: a > 0, no score above which a bag is
    // more likely positive; the class medians' midpoint instead
    let flipped: Vec<f64> = targets.iter().map(|&t| -t).collect();
    let (a, _) = fit_sigmoid(
        &scores,
        &flipped.iter().map(|&t| t > 0.0).collect::<Vec<_>>(),
    )?;
    assert!(a > 0.0);
    assert_eq!(
        smil_platt_threshold(&scores, &flipped)?,
        smil_threshold(scores, &flipped)
    );
    // every score equal: a = 0, the same fallback
    assert_eq!(
        smil_platt_threshold(&[0.5; 4], &[1.0, 1.0, -1.0, -1.0])?,
        0.5
    );
    Ok(())
}

#[test]
fn smil_auto_rule_drops_the_shift_only_for_a_clear_lead_without_loss_of_accuracy(
) -> Result<(), Error> {
    use milsvm::set_kernel_svm::{smil_auto_keeps_shift, SMIL_AUTO_AUC_MARGIN};
    let targets: Vec<f64> = (0..20).map(|i| if i < 10 { -1.0 } else { 1.0 }).collect();
    let lin = |lo: f64, hi: f64| (0..10).map(move |i| lo + (hi - lo) * i as f64 / 9.0);
    let o: Vec<f64> = lin(-1.0, -0.1).chain(lin(0.1, 1.0)).collect();
    // large negative bags lifted past most positive ones: a clear lead, and more bags right
    let big_negatives: Vec<f64> = (0..20).map(|i| if i < 10 { 40.0 } else { 1.0 }).collect();
    assert!(!smil_auto_keeps_shift(
        std::slice::from_ref(&o),
        &big_negatives,
        std::slice::from_ref(&targets)
    )?);
    // one size for every bag: the shift reorders nothing, no lead
    assert!(smil_auto_keeps_shift(
        &[o],
        &[5.0; 20],
        std::slice::from_ref(&targets)
    )?);
    // one negative bag of two instances past one positive bag: a lead of 0.01, kept
    let o: Vec<f64> = lin(-1.0, -0.1).chain(lin(0.35, 1.0)).collect();
    let mut sizes = vec![1.0; 20];
    sizes[9] = 2.0;
    const { assert!(0.01 < SMIL_AUTO_AUC_MARGIN) };
    assert!(smil_auto_keeps_shift(&[o], &sizes, &[targets])?);
    Ok(())
}

#[test]
fn smil_auto_bag_score_chooses_out_of_fold_per_value_of_c() -> Result<(), Error> {
    use milsvm::set_kernel_svm::{bag_auc, SmilBagScore};
    use milsvm::{FitPath, Pooling};
    // the AUC, ties 1/2, against the count over all pairs
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..20 {
        let n = rng.random_range(2..40);
        let s: Vec<f64> = (0..n).map(|_| rng.random_range(0..6) as f64).collect();
        let t: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let (mut num, mut den) = (0.0, 0.0);
        for i in (0..n).filter(|&i| t[i] > 0.0) {
            for j in (0..n).filter(|&j| t[j] < 0.0) {
                den += 1.0;
                num += if s[i] > s[j] {
                    1.0
                } else if s[i] == s[j] {
                    0.5
                } else {
                    0.0
                };
            }
        }
        assert!((bag_auc(&s, &t) - num / den).abs() < 1e-12);
    }
    // large negative bags, small positive ones: at small C the size shift ranks by size, so
    // auto keeps the plain mean (its Platt threshold of out-of-fold scores in the bias); at
    // larger C, where the shift is kept, the model is the shifted fit's. Each C of a path
    // chooses as a fit at that C does.
    let (bags, labels) = sized(0, 30);
    let cs = [0.01, 1.0, 100.0];
    let base = SmilParams::new()
        .gamma(Gamma::Value(0.5))
        .bag_score(SmilBagScore::Auto)
        .seed(2);
    let path = base.clone().n_jobs(Some(1)).fit_path(&bags, &labels, &cs)?;
    for (fit, &c) in path.iter().zip(&cs) {
        let one = base.clone().c(c).n_jobs(Some(2)).fit(&bags, &labels)?;
        assert_eq!(fit.model, one.model);
        let plain = base
            .clone()
            .c(c)
            .bag_score(SmilBagScore::Mean)
            .fit(&bags, &labels)?;
        assert_eq!(fit.alpha, plain.alpha);
        if fit.model.pooling == Pooling::SmilMean {
            let shifted = base
                .clone()
                .c(c)
                .bag_score(SmilBagScore::SmilMean)
                .fit(&bags, &labels)?;
            assert_eq!(fit.model, shifted.model);
        } else {
            assert_eq!(fit.model.pooling, Pooling::Mean);
            assert_ne!(fit.model.intercept, plain.model.intercept);
        }
    }
    assert_eq!(path[0].model.pooling, Pooling::Mean);
    Ok(())
}
