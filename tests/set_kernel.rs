//! Integration tests of MI-Kernel and RS in Rust (no Python): the set kernel against a naive
//! double loop, thread-count independence, MI-Kernel's optimality conditions, the reduced-set
//! residual, and parameter validation.

mod common;

use common::{to_csr, TestResult};
use milsvm::bags::{Bags, Instances};
use milsvm::kernel::Kernel;
use milsvm::set_kernel::{
    optimal_intercept, set_kernel, MiKernelParams, ReducedSetParams, SUPPORT_THRESHOLD,
};
use milsvm::Error;
use milsvm::{Gamma, KernelKind};
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Random bags: sizes 1..=max_size, standard-normal-ish features, alternating labels.
fn random_bags(seed: u64, n_bags: usize, d: usize, max_size: usize) -> (Bags, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ptr = vec![0];
    let mut flat = Vec::new();
    for i in 0..n_bags {
        let n = rng.random_range(1..=max_size);
        for _ in 0..n * d {
            let v: f64 = rng.random_range(-2.0..2.0);
            flat.push(if v.abs() < 0.5 { 0.0 } else { v });
        }
        ptr.push(ptr[i] + n);
    }
    let x = Array2::from_shape_vec((ptr[n_bags], d), flat).expect("shape");
    let labels = (0..n_bags).map(|i| i % 2).collect();
    (
        Bags::new(Instances::from(x), ptr).expect("valid bags"),
        labels,
    )
}

fn to_sparse(bags: &Bags) -> Bags {
    let Instances::Dense(x) = bags.instances() else {
        panic!("dense bags expected")
    };
    let csr = to_csr(&x.view().to_owned(), true);
    Bags::new(Instances::Sparse(csr), bags.bag_ptr().to_vec()).expect("bags")
}

fn naive_set_kernel(a: &Bags, b: &Bags, gamma: f64) -> Array2<f64> {
    let (xa, xb) = (dense(a), dense(b));
    Array2::from_shape_fn((a.n_bags(), b.n_bags()), |(i, j)| {
        let mut s = 0.0;
        for p in a.bag_range(i) {
            for q in b.bag_range(j) {
                let d2: f64 = xa
                    .row(p)
                    .iter()
                    .zip(xb.row(q))
                    .map(|(u, v)| (u - v) * (u - v))
                    .sum();
                s += (-gamma * d2).exp();
            }
        }
        s / (a.bag_range(i).len() * b.bag_range(j).len()) as f64
    })
}

fn dense(b: &Bags) -> Array2<f64> {
    b.instances().to_dense()
}

#[test]
fn set_kernel_matches_the_double_loop_dense_and_sparse() -> TestResult {
    for seed in 0..4 {
        let (a, _) = random_bags(seed, 9, 4, 5);
        let (b, _) = random_bags(seed + 100, 6, 4, 3);
        let kernel = Kernel::Rbf { gamma: 0.3 };
        let reference = naive_set_kernel(&a, &b, 0.3);
        for (x, y) in [
            (&a, &b),
            (&to_sparse(&a), &b),
            (&a, &to_sparse(&b)),
            (&to_sparse(&a), &to_sparse(&b)),
        ] {
            let k = set_kernel(kernel, x, y)?;
            for (u, v) in k.iter().zip(reference.iter()) {
                assert!((u - v).abs() <= 1e-12 * v.abs().max(1e-300), "{u} vs {v}");
            }
        }
    }
    Ok(())
}

#[test]
fn fits_do_not_depend_on_the_thread_count() -> TestResult {
    let (bags, labels) = random_bags(7, 150, 5, 7);
    let mik: Vec<_> = [1, 2, 3]
        .iter()
        .map(|&j| {
            MiKernelParams::new()
                .c(3.0)
                .n_jobs(Some(j))
                .fit(&bags, &labels)
        })
        .collect::<Result<_, _>>()?;
    let rs: Vec<_> = [1, 2, 3]
        .iter()
        .map(|&j| {
            ReducedSetParams::new()
                .n_xv(4)
                .c(3.0)
                .seed(5)
                .n_jobs(Some(j))
                .fit(&bags, &labels)
        })
        .collect::<Result<_, _>>()?;
    for f in &mik[1..] {
        assert_eq!(f.model.coef, mik[0].model.coef);
        assert_eq!(f.model.intercept, mik[0].model.intercept);
    }
    for f in &rs[1..] {
        assert_eq!(f.model.xv, rs[0].model.xv);
        assert_eq!(f.model.coef, rs[0].model.coef);
        assert_eq!(f.model.intercept, rs[0].model.intercept);
    }
    Ok(())
}

#[test]
fn mi_kernel_coefficients_satisfy_the_kkt_conditions() -> TestResult {
    for (seed, c) in [(0, 0.5), (1, 5.0), (2, 50.0)] {
        let (bags, labels) = random_bags(seed, 20, 3, 4);
        let fit = MiKernelParams::new()
            .c(c)
            .gamma(Gamma::Value(0.5))
            .fit(&bags, &labels)?;
        let f = fit.model.decision_function(&bags)?;
        let alpha = fit.model.coef.row(0);
        let scale = alpha.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        for (i, &l) in labels.iter().enumerate() {
            let y = if l == 1 { 1.0 } else { -1.0 };
            let expected = 2.0 * c * y * (1.0 - y * f[[i, 0]]).max(0.0);
            assert!(
                (alpha[i] - expected).abs() <= 1e-6 * (1.0 + scale),
                "{} vs {expected}",
                alpha[i]
            );
        }
        assert!(alpha.sum().abs() <= 1e-6 * (1.0 + scale));
        let support = fit.model.support();
        let n_xv: usize = support.iter().map(|&i| bags.bag_range(i).len()).sum();
        assert_eq!(fit.model.n_xv(), n_xv);
        assert!(support
            .iter()
            .all(|&i| alpha[i].abs() > SUPPORT_THRESHOLD * scale));
        // the objective reported is that of the unridged problem at these coefficients
        assert!(fit.objective[0] > 0.0 && fit.objective[0].is_finite());
        assert!((fit.objective[0] - fit.ridged_objective[0]).abs() <= 1e-6 * fit.objective[0]);
    }
    Ok(())
}

#[test]
fn reduced_set_residual_is_non_increasing_and_the_bias_optimal() -> TestResult {
    let (bags, labels) = random_bags(3, 24, 3, 4);
    let fit = ReducedSetParams::new()
        .n_xv(12)
        .c(2.0)
        .gamma(Gamma::Value(0.4))
        .seed(1)
        .fit(&bags, &labels)?;
    let h = &fit.expansion.residual_history;
    assert_eq!(h.len(), 13);
    assert!(h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)), "{h:?}");
    assert!(h[12] < 0.5 * h[0]);
    assert_eq!(fit.model.xv.n_rows(), 12);
    // the bias minimises the loss with the coefficients fixed
    let scores = fit.model.decision_function(&bags)?;
    let b = fit.model.intercept[0];
    let s: Vec<f64> = scores.column(0).iter().map(|v| v - b).collect();
    let y: Vec<f64> = labels
        .iter()
        .map(|&l| if l == 1 { 1.0 } else { -1.0 })
        .collect();
    assert!((optimal_intercept(&s, &y) - b).abs() < 1e-12);
    let loss = |b: f64| -> f64 {
        s.iter()
            .zip(&y)
            .map(|(s, y)| (1.0 - y * (s + b)).max(0.0).powi(2))
            .sum()
    };
    for db in [1e-3, -1e-3, 0.1, -0.1] {
        assert!(loss(b) <= loss(b + db));
    }
    Ok(())
}

#[test]
fn multi_class_shares_the_reduced_set() -> TestResult {
    let (bags, _) = random_bags(11, 30, 2, 3);
    let labels: Vec<usize> = (0..30).map(|i| i % 3).collect();
    let fit = ReducedSetParams::new()
        .n_xv(5)
        .seed(0)
        .fit(&bags, &labels)?;
    assert_eq!(fit.model.coef.dim(), (3, 5));
    assert_eq!(fit.model.intercept.len(), 3);
    assert_eq!(fit.mi_kernel.model.coef.dim(), (3, 30));
    let scores = fit.model.decision_function(&bags)?;
    assert_eq!(scores.dim(), (30, 3));
    Ok(())
}

#[test]
fn parameters_are_validated_with_their_names() {
    let (bags, labels) = random_bags(0, 8, 2, 3);
    let cases: Vec<(Result<(), Error>, &str)> = vec![
        (
            MiKernelParams::new().c(0.0).fit(&bags, &labels).map(|_| ()),
            "C must be",
        ),
        (
            MiKernelParams::new()
                .gamma(Gamma::Value(f64::NAN))
                .fit(&bags, &labels)
                .map(|_| ()),
            "gamma",
        ),
        (
            MiKernelParams::new()
                .inner_tol(Some(2.0))
                .fit(&bags, &labels)
                .map(|_| ()),
            "tol",
        ),
        (
            MiKernelParams::new()
                .n_jobs(Some(0))
                .fit(&bags, &labels)
                .map(|_| ()),
            "n_jobs",
        ),
        (
            ReducedSetParams::new()
                .kernel(KernelKind::Linear)
                .fit(&bags, &labels)
                .map(|_| ()),
            "rbf",
        ),
        (
            ReducedSetParams::new()
                .n_xv(0)
                .fit(&bags, &labels)
                .map(|_| ()),
            "n_xv",
        ),
        (
            ReducedSetParams::new()
                .n_restarts(0)
                .fit(&bags, &labels)
                .map(|_| ()),
            "n_restarts",
        ),
        (
            ReducedSetParams::new()
                .inner_tol(-1.0)
                .fit(&bags, &labels)
                .map(|_| ()),
            "tol",
        ),
        (
            MiKernelParams::new().fit(&bags, &labels[1..]).map(|_| ()),
            "labels",
        ),
    ];
    for (res, name) in cases {
        let msg = res.expect_err("must fail").to_string();
        assert!(msg.contains(name), "{msg:?} should name {name}");
    }
    // prediction input with the wrong number of features
    let fit = MiKernelParams::new().fit(&bags, &labels).expect("fit");
    let (other, _) = random_bags(1, 3, 5, 2);
    assert!(matches!(
        fit.model.decision_function(&other),
        Err(Error::Mismatch(_))
    ));
    // a model whose shapes disagree is rejected, not a panic
    let mut broken = fit.model.clone();
    broken.coef = Array2::zeros((1, 3));
    broken.intercept = Array1::zeros(1);
    assert!(broken.decision_function(&bags).is_err());
}

/// The Gram matrix computes only its upper triangle for dense Gaussian bags (several column
/// blocks here: more than 4096 instances): it equals the general product and is symmetric.
#[test]
fn set_kernel_gram_upper_triangle_equals_the_general_product() -> TestResult {
    let (bags, _) = random_bags(77, 1400, 3, 7);
    assert!(
        bags.n_instances() > 4096,
        "{} instances",
        bags.n_instances()
    );
    let kernel = Kernel::Rbf { gamma: 0.4 };
    let gram = milsvm::set_kernel::set_kernel_gram(kernel, &bags)?;
    let full = set_kernel(kernel, &bags, &bags)?;
    let worst = gram
        .iter()
        .zip(full.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-13, "max difference {worst:e}");
    assert!(gram == gram.t(), "not symmetric");
    Ok(())
}
