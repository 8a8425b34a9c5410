//! The annealing family from Rust: fits on small bags, thread independence, the reduced basis,
//! and the refusals of bad parameters.

mod common;

use common::toy;
use milsvm::annealing::{AnnealingParams, BasisSize};
use milsvm::ParamGuard;
use milsvm::StopReason;
use milsvm::{Error, Gamma};

#[test]
fn every_method_fits_and_is_thread_independent() -> Result<(), Error> {
    let (bags, labels) = toy(0, 20);
    for params in [
        AnnealingParams::al(),
        AnnealingParams::aw(),
        AnnealingParams::alp(),
        AnnealingParams::mi_svm(),
        AnnealingParams::big_mi_svm(),
    ] {
        let params = params.c(10.0).gamma(Gamma::Value(0.5));
        let one = params.clone().n_jobs(Some(1)).fit(&bags, &labels)?;
        let two = params.clone().n_jobs(Some(2)).fit(&bags, &labels)?;
        assert_eq!(one.model, two.model);
        assert_eq!(one.stop_reason, vec![StopReason::Converged]);
        let scores = one.model.decision_function(&bags)?;
        for (i, &l) in labels.iter().enumerate() {
            assert_eq!(
                scores[[i, 0]] > 0.0,
                l == 1,
                "{:?} bag {i}",
                params.check_ref()?.method()
            );
        }
        let reduced = params.n_xv(BasisSize::Vectors(5)).fit(&bags, &labels)?;
        assert_eq!(reduced.model.xv.n_rows(), 5);
    }
    Ok(())
}

#[test]
fn bad_parameters_name_themselves() {
    let (bags, labels) = toy(1, 8);
    for (params, name) in [
        (AnnealingParams::al().c(0.0), "C"),
        (AnnealingParams::al().decay(0.5), "decay"),
        (AnnealingParams::al().eps(2.0), "eps"),
        (AnnealingParams::alp().p_star(-0.1), "p_star"),
        (AnnealingParams::al().t0(Some(f64::NAN)), "T0"),
        (AnnealingParams::al().n_xv(BasisSize::Vectors(1000)), "n_xv"),
    ] {
        match params.fit(&bags, &labels) {
            Err(Error::InvalidParameter(msg)) => assert!(msg.contains(name), "{msg}"),
            other => panic!("expected an invalid {name}, got {other:?}"),
        }
    }
}

#[test]
fn the_observer_sees_every_temperature_and_round() -> Result<(), Error> {
    use milsvm::{Observer, Progress};
    use std::sync::{Arc, Mutex};
    let (bags, labels) = toy(3, 20);
    for params in [AnnealingParams::al(), AnnealingParams::mi_svm()] {
        let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let observer = Observer::new(move |p: &Progress| sink.lock().expect("lock").push(*p));
        let fit = params
            .c(10.0)
            .gamma(Gamma::Value(0.5))
            .observer(observer)
            .fit(&bags, &labels)?;
        let seen = seen.lock().expect("lock");
        let objectives: Vec<f64> = seen.iter().map(|p| p.objective).collect();
        assert_eq!(objectives, fit.objective_history[0]);
        assert!(seen
            .iter()
            .enumerate()
            .all(|(i, p)| p.step == i + 1 && p.problem == 0));
    }
    Ok(())
}
