//! sbMIL and sAwMIL from Rust: the first stage is the crate's sMIL, the relabelling follows the
//! rule on its instance scores, `eta = 1` is SIL, the stages are reported and can be
//! cancelled, `eta` outside (0, 1] is refused by name, and threads change nothing; one
//! declaration (`TwoStageParams`) with a constructor per method.

mod common;

use std::sync::{Arc, Mutex};

use common::{toy, TestResult};
use milsvm::params::Value;
use milsvm::set_kernel_svm::SmilBagScore;
use milsvm::two_stage::{sawmil_positives, sbmil_positives, FirstStageProblem, Relabel};
use milsvm::{
    Cancel, Error, Hyperparams, KernelKind, Observer, ParamGuard, SilParams, SmilParams,
    TwoStageParams,
};

#[test]
fn one_declaration_with_a_constructor_per_method() -> TestResult {
    // sbMIL's defaults are the declared ones (the paper's first stage); sAwMIL's kernel is the
    // linear one and its first stage the package's problem (the `sawmil` package's defaults)
    assert_eq!(TwoStageParams::sbmil(), TwoStageParams::new());
    assert_eq!(
        *TwoStageParams::sbmil().check()?.first_stage_problem(),
        FirstStageProblem::Paper
    );
    let sawmil = TwoStageParams::sawmil().check()?;
    assert_eq!(*sawmil.relabel(), Relabel::Sawmil);
    assert_eq!(*sawmil.kernel(), KernelKind::Linear);
    assert_eq!(*sawmil.first_stage_problem(), FirstStageProblem::Sawmil);
    // the rule by name, as the binding sets it
    let mut p = TwoStageParams::new();
    p.set("relabel", &Value::Str("sawmil".into()))?;
    p.set("kernel", &Value::Str("linear".into()))?;
    p.set("first_stage_problem", &Value::Str("sawmil".into()))?;
    assert_eq!(p, TwoStageParams::sawmil());
    assert_eq!(
        p.set("relabel", &Value::Str("smil".into())),
        Err(Error::InvalidParameter(
            "relabel must be one of 'sbmil', 'sawmil', got 'smil'".into()
        ))
    );
    let specs = TwoStageParams::specs();
    let relabel = specs.iter().find(|s| s.name == "relabel");
    assert_eq!(
        relabel.map(|s| &s.default),
        Some(&Value::Str("sbmil".into()))
    );
    Ok(())
}

#[test]
fn the_first_stage_is_smil_and_its_scores_pick_the_positives() -> TestResult {
    let (bags, labels) = toy(7, 30);
    for (rule, eta) in [
        (Relabel::Sbmil, 0.3),
        (Relabel::Sawmil, 0.3),
        (Relabel::Sbmil, 0.05),
    ] {
        // the Gaussian kernel for both rules, as sMIL's default
        let fit = TwoStageParams::new()
            .relabel(rule)
            .c(10.0)
            .eta(eta)
            .fit(&bags, &labels)?;
        // the two-stage methods keep the class-median threshold, whatever sMIL's default
        let smil = SmilParams::new()
            .c(10.0)
            .bag_score(SmilBagScore::MeanOffset)
            .fit(&bags, &labels)?;
        assert_eq!(fit.first_stage, smil);
        // the rule on the first stage's scores of the positive bags' instances
        let scores = smil.model.instance_decision_function(bags.instances())?;
        let pos: Vec<usize> = (0..bags.n_bags())
            .filter(|&i| labels[i] == 1)
            .flat_map(|i| bags.bag_range(i))
            .collect();
        let s: Vec<f64> = pos.iter().map(|&t| scores[[t, 0]]).collect();
        let n_pos_bags = labels.iter().filter(|&&l| l == 1).count();
        let chosen = match rule {
            Relabel::Sbmil => sbmil_positives(&s, n_pos_bags, eta),
            Relabel::Sawmil => sawmil_positives(&s, eta),
        };
        let mut want = vec![-1.0; bags.n_instances()];
        for (&t, &c) in pos.iter().zip(&chosen) {
            if c {
                want[t] = 1.0;
            }
        }
        assert_eq!(fit.instance_labels, vec![want]);
        let k = chosen.iter().filter(|&&c| c).count();
        if rule == Relabel::Sbmil {
            let rounded = (eta * s.len() as f64).round_ties_even() as usize;
            assert_eq!(k, rounded.max(n_pos_bags));
        }
        let smallest = s
            .iter()
            .zip(&chosen)
            .filter(|(_, &c)| c)
            .map(|(&v, _)| v)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(fit.threshold, vec![smallest]);
    }
    Ok(())
}

#[test]
fn eta_one_is_sil() -> TestResult {
    let (bags, labels) = toy(8, 24);
    let sil = SilParams::new().c(3.0).fit(&bags, &labels)?;
    for rule in [Relabel::Sbmil, Relabel::Sawmil] {
        let fit = TwoStageParams::new()
            .relabel(rule)
            .c(3.0)
            .eta(1.0)
            .fit(&bags, &labels)?;
        assert_eq!(fit.svm, sil, "{rule}");
    }
    Ok(())
}

#[test]
fn eta_outside_zero_one_is_refused_by_name() {
    let (bags, labels) = toy(1, 10);
    for eta in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY] {
        for out in [
            TwoStageParams::sbmil()
                .eta(eta)
                .fit(&bags, &labels)
                .map(|_| ()),
            TwoStageParams::sawmil()
                .eta(eta)
                .fit(&bags, &labels)
                .map(|_| ()),
        ] {
            match out {
                Err(Error::InvalidParameter(msg)) => {
                    assert!(msg.starts_with("eta must lie in (0, 1]"), "{msg}")
                }
                other => panic!("eta = {eta}: {other:?}"),
            }
        }
    }
}

#[test]
fn both_stages_are_reported_and_a_cancel_stops_the_fit() -> TestResult {
    let (bags, labels) = toy(2, 30);
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let observer = Observer::new(move |p| seen.lock().unwrap().push((p.step, p.max_steps)));
    TwoStageParams::sbmil()
        .observer(observer)
        .fit(&bags, &labels)?;
    assert_eq!(*steps.lock().unwrap(), vec![(1, 2), (2, 2)]);
    // cancelled at the first report (after the first stage): no second stage
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let observer = Observer::new(move |_| flag.cancel()).with_cancel(cancel);
    let out = TwoStageParams::sawmil()
        .observer(observer)
        .fit(&bags, &labels);
    assert_eq!(out.map(|_| ()), Err(Error::Cancelled));
    Ok(())
}

#[test]
fn threads_change_nothing() -> TestResult {
    let (bags, labels) = toy(4, 60);
    let three: Vec<usize> = (0..60).map(|i| i % 3).collect();
    for labels in [&labels, &three] {
        let one = TwoStageParams::sbmil()
            .eta(0.4)
            .n_jobs(Some(1))
            .fit(&bags, labels)?;
        let two = TwoStageParams::sbmil()
            .eta(0.4)
            .n_jobs(Some(2))
            .fit(&bags, labels)?;
        assert_eq!(one, two);
    }
    Ok(())
}
