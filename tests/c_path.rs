//! The `C` paths ([`FitPath`]) against independent fits: for every family with a path, the
//! model at each `C` of a path scores bags as the fit at that `C` alone does; the values may
//! come in any order and repeat; the path gives the same result for any number of threads; bad
//! values are refused.
//!
//! Tolerances. RS, NSK, sMIL, SIL, STK and SparseMI reuse only what does not depend on `C` and solve
//! from the same start as an independent fit: bit for bit equal. MI-Kernel and RSVM start each
//! Newton solve from the previous `C`'s solution; the solver stops at a relative gradient of
//! 1e-10 from either start and both reach the exact minimiser, so the decision values agree to
//! 1e-7 of the largest score (measured: about 1e-12).

mod common;

use common::TestResult;
use milsvm::bags::{Bags, Instances};
use milsvm::set_kernel::{MiKernelParams, ReducedSetParams};
use milsvm::set_kernel_svm::{NskParams, SetNorm, SmilParams};
use milsvm::{ClassWeight, Error, FitPath, Model, SilParams, SparseMiParams, StkParams};
use ndarray::{Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Overlapping classes (so that the margin moves with `C`): bags of 1..=5 instances in 3-D,
/// positive bags with one instance shifted by `shift` along every axis; `n_classes` classes in
/// turn (class `k > 0` shifted along axis `k - 1` only).
fn noisy_bags(seed: u64, n_bags: usize, n_classes: usize, shift: f64) -> (Bags, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = 3;
    let mut ptr = vec![0];
    let mut flat = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n_bags {
        let class = i % n_classes;
        let n = rng.random_range(1..=5);
        for p in 0..n {
            for j in 0..d {
                let mut v: f64 = rng.random_range(-1.5..1.5);
                if class > 0 && p == 0 && (n_classes == 2 || j == class - 1) {
                    v += shift;
                }
                flat.push(v);
            }
        }
        ptr.push(ptr[i] + n);
        labels.push(class);
    }
    let x = Array2::from_shape_vec((ptr[n_bags], d), flat).expect("shape");
    (Bags::new(Instances::from(x), ptr).expect("bags"), labels)
}

/// The values of the tests: unsorted, one repeated.
const CS: [f64; 6] = [10.0, 0.1, 1.0, 100.0, 1.0, 0.01];

/// `|a - b| <= tol * max(1, max |b|)` entrywise, with the name and `C` in the message.
fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64, what: &str, c: f64) {
    assert_eq!(a.dim(), b.dim(), "{what} at C={c}: shapes");
    let scale = b.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
    let err = a
        .iter()
        .zip(b)
        .fold(0.0_f64, |m, (u, v)| m.max((u - v).abs()));
    assert!(
        err <= tol * scale,
        "{what} at C={c}: path and independent fit differ by {err:e} (scale {scale:e})"
    );
}

/// Checks a path of `params` against independent fits `fit(c)` through the models' scores.
fn check<P, O>(
    what: &str,
    params: &P,
    fit_at: impl Fn(f64) -> milsvm::Result<O>,
    scores: impl Fn(&O) -> milsvm::Result<Array2<f64>>,
    data: &(Bags, Vec<usize>),
    tol: f64,
) -> TestResult
where
    P: FitPath<Output = O>,
{
    let (bags, labels) = data;
    let path = params.fit_path(bags, labels, &CS)?;
    assert_eq!(path.len(), CS.len());
    for (fit, &c) in path.iter().zip(&CS) {
        let alone = fit_at(c)?;
        assert_close(&scores(fit)?, &scores(&alone)?, tol, what, c);
    }
    Ok(())
}

fn model_scores(bags: &Bags) -> impl Fn(&Model) -> milsvm::Result<Array2<f64>> + '_ {
    move |m: &Model| m.decision_function(bags)
}

#[test]
fn mi_kernel_path_equals_independent_fits() -> TestResult {
    for (seed, n_classes) in [(1, 2), (2, 3)] {
        let data = noisy_bags(seed, 30, n_classes, 1.5);
        let (bags, labels) = &data;
        let p = MiKernelParams::new().class_weight(ClassWeight::Balanced);
        check(
            "MI-Kernel",
            &p,
            |c| p.clone().c(c).fit(bags, labels),
            |f| f.model.decision_function(bags),
            &data,
            1e-7,
        )?;
    }
    Ok(())
}

#[test]
fn reduced_set_path_equals_independent_fits() -> TestResult {
    // RS's path reuses K_set only (no warm start): the same models, bit for bit.
    for (seed, n_classes) in [(3, 2), (2, 3)] {
        let (bags, labels) = noisy_bags(seed, 30, n_classes, 1.5);
        let p = ReducedSetParams::new().n_xv(4);
        let path = p.fit_path(&bags, &labels, &CS)?;
        for (fit, &c) in path.iter().zip(&CS) {
            let alone = p.clone().c(c).fit(&bags, &labels)?;
            assert_eq!(fit.model.coef, alone.model.coef);
            assert_eq!(fit.model.intercept, alone.model.intercept);
        }
    }
    Ok(())
}

#[test]
fn rsvm_path_equals_independent_fits() -> TestResult {
    for (seed, n_classes, n_basis) in [(4, 2, None), (5, 3, None), (6, 2, Some(6))] {
        let data = noisy_bags(seed, 30, n_classes, 1.5);
        let (bags, labels) = &data;
        let p = SparseMiParams::rsvm().n_xv(5).seed(seed).n_basis(n_basis);
        let score = model_scores(bags);
        check(
            "RSVM",
            &p,
            |c| p.clone().c(c).fit(bags, labels),
            |f| score(&f.model),
            &data,
            1e-7,
        )?;
    }
    Ok(())
}

#[test]
fn sparse_mi_path_is_independent_fits() -> TestResult {
    // SparseMI's path runs each descent anew: the same models, bit for bit.
    let (bags, labels) = noisy_bags(7, 24, 2, 1.5);
    let p = SparseMiParams::new().n_xv(3).max_iter(5).seed(7);
    let path = p.fit_path(&bags, &labels, &CS)?;
    for (fit, &c) in path.iter().zip(&CS) {
        let alone = p.clone().c(c).fit(&bags, &labels)?;
        assert_eq!(fit.model.coef, alone.model.coef);
        assert_eq!(fit.objective_history, alone.objective_history);
    }
    Ok(())
}

#[test]
fn smo_paths_are_independent_fits() -> TestResult {
    // NSK and sMIL share the kernel (rows) along the path and start every solve from zero: the
    // same dual solutions, bit for bit.
    for (seed, n_classes, norm) in [(8, 2, SetNorm::L1), (9, 3, SetNorm::L2)] {
        let (bags, labels) = noisy_bags(seed, 30, n_classes, 1.5);
        let p = NskParams::new()
            .norm(norm)
            .class_weight(ClassWeight::Balanced);
        let path = p.fit_path(&bags, &labels, &CS)?;
        for (fit, &c) in path.iter().zip(&CS) {
            let alone = p.clone().c(c).fit(&bags, &labels)?;
            assert_eq!(fit.alpha, alone.alpha, "NSK C={c}");
            assert_eq!(fit.model.intercept, alone.model.intercept);
        }
        let p = SmilParams::new();
        let path = p.fit_path(&bags, &labels, &CS)?;
        for (fit, &c) in path.iter().zip(&CS) {
            let alone = p.clone().c(c).fit(&bags, &labels)?;
            assert_eq!(fit.alpha, alone.alpha, "sMIL C={c}");
            assert_eq!(fit.model.intercept, alone.model.intercept);
        }
    }
    Ok(())
}

#[test]
fn sil_and_stk_paths_are_independent_fits() -> TestResult {
    // the instance kernel (SIL) or the statistic vectors and their kernel (STK) once, every
    // solve from zero: the same dual solutions and models, bit for bit
    for (seed, n_classes) in [(10, 2), (11, 3)] {
        let (bags, labels) = noisy_bags(seed, 30, n_classes, 1.5);
        let p = SilParams::new().class_weight(ClassWeight::Balanced);
        let path = p.fit_path(&bags, &labels, &CS)?;
        for (fit, &c) in path.iter().zip(&CS) {
            let alone = p.clone().c(c).fit(&bags, &labels)?;
            assert_eq!(fit.alpha, alone.alpha, "SIL C={c}");
            assert_eq!(fit.model, alone.model, "SIL C={c}");
        }
        let p = StkParams::new();
        let path = p.fit_path(&bags, &labels, &CS)?;
        for (fit, &c) in path.iter().zip(&CS) {
            let alone = p.clone().c(c).fit(&bags, &labels)?;
            assert_eq!(fit.alpha, alone.alpha, "STK C={c}");
            assert_eq!(fit.model, alone.model, "STK C={c}");
        }
    }
    Ok(())
}

#[test]
fn path_is_the_same_for_any_thread_count() -> TestResult {
    let (bags, labels) = noisy_bags(13, 30, 3, 1.5);
    let one = NskParams::new()
        .n_jobs(Some(1))
        .fit_path(&bags, &labels, &CS)?;
    let two = NskParams::new()
        .n_jobs(Some(2))
        .fit_path(&bags, &labels, &CS)?;
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(a.model.coef, b.model.coef);
        assert_eq!(a.model.intercept, b.model.intercept);
    }
    let one = MiKernelParams::new()
        .n_jobs(Some(1))
        .fit_path(&bags, &labels, &CS)?;
    let two = MiKernelParams::new()
        .n_jobs(Some(2))
        .fit_path(&bags, &labels, &CS)?;
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(a.model.coef, b.model.coef);
    }
    Ok(())
}

#[test]
fn a_path_of_one_value_is_the_fit() -> TestResult {
    let (bags, labels) = noisy_bags(14, 20, 2, 1.5);
    let p = NskParams::new().c(3.0);
    let path = p.fit_path(&bags, &labels, &[3.0])?;
    let alone = p.fit(&bags, &labels)?;
    assert_eq!(path[0].model.coef, alone.model.coef);
    assert_eq!(path[0].alpha, alone.alpha);
    // the C of the parameters is ignored by a path
    let other = NskParams::new().c(100.0).fit_path(&bags, &labels, &[3.0])?;
    assert_eq!(other[0].alpha, alone.alpha);
    Ok(())
}

#[test]
fn bad_values_are_refused() -> TestResult {
    let (bags, labels) = noisy_bags(15, 10, 2, 1.5);
    for cs in [&[][..], &[1.0, 0.0], &[-1.0], &[f64::NAN], &[f64::INFINITY]] {
        let err = MiKernelParams::new().fit_path(&bags, &labels, cs);
        assert!(
            matches!(err, Err(Error::InvalidParameter(_))),
            "{cs:?}: {err:?}"
        );
    }
    // the other parameters are still checked
    let err = NskParams::new()
        .inner_tol(2.0)
        .fit_path(&bags, &labels, &[1.0]);
    assert!(matches!(err, Err(Error::InvalidParameter(_))));
    Ok(())
}

#[test]
fn multiclass_paths_have_one_output_per_class() -> TestResult {
    let (bags, labels) = noisy_bags(16, 30, 3, 1.5);
    let path = SmilParams::new().fit_path(&bags, &labels, &[1.0, 10.0])?;
    for fit in &path {
        let s = fit.model.decision_function(&bags)?;
        assert_eq!(s.len_of(Axis(1)), 3);
    }
    Ok(())
}
