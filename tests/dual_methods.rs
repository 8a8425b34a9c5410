//! NSK, sMIL, SVM-CC and the one-class MI-SVM from Rust: fits on small bags, thread
//! independence, the exact LP bias against a brute-force scan, and refusals of bad parameters.

mod common;

use common::toy;
use milsvm::convex_combination::{hinge_bias, StopReason, SvmCcParams};
use milsvm::one_class::OneClassParams;
use milsvm::set_kernel_svm::{NskParams, SetNorm, SmilParams};
use milsvm::smo::max_weights;
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
    for kernel in [KernelKind::Linear, KernelKind::Rbf] {
        let params = SvmCcParams::new().c(10.0).kernel(kernel);
        let fit = params.clone().n_jobs(Some(1)).fit(&bags, &labels)?;
        assert_eq!(fit, params.n_jobs(Some(2)).fit(&bags, &labels)?);
        assert_eq!(fit.stop_reason[0], StopReason::Converged);
        assert_eq!(accuracy(&fit.model.decision_function(&bags)?, &labels), 1.0);
        // each positive bag's v sits on its instance near (3, 3), the first one
        for v in &fit.v[0] {
            assert!((v[0] - 1.0).abs() < 1e-12);
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
