//! MILES from Rust: the 1-norm SVM's simplex against clarabel (an interior-point LP solver) on
//! random problems, the fit against its embedding and LP, the `xv_max` pooling of the compiled
//! predictor (one bag, batch, CSR basis, instance shares), the model file, thread-count
//! independence and bad parameters.

mod common;

use common::{to_csr, toy, TestResult};
use milsvm::bags::{Instances, Rows};
use milsvm::kernel::bag_max_kernel;
use milsvm::miles::embedding;
use milsvm::model::{BagView, Model, Pooling, Predictor, Workspace};
use milsvm::progress::Cancel;
use milsvm::solver::l1_svm::{
    l1_svm_objective, solve_l1_svm, L1SvmProblem, L1SvmSettings, L1SvmSolution,
};
use milsvm::{Bags, Error, Gamma, Kernel, MilesParams};
use ndarray::{array, Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The optimum of `min sum (u + v) + sum c xi` s.t. `y (x . (u - v) + b) + xi >= 1`,
/// `u, v, xi >= 0` by clarabel (`b` free).
fn l1_svm_by_clarabel(x: &Array2<f64>, y: &[f64], cost: &[f64]) -> f64 {
    let (m, n) = x.dim();
    let nv = 2 * n + 1 + m; // u, v, b, xi
    let mut c = vec![1.0; 2 * n];
    c.push(0.0);
    c.extend_from_slice(cost);
    let (mut rows, mut rhs) = (Vec::new(), Vec::new());
    for i in 0..m {
        // -y_i (x_i . (u - v) + b) - xi_i <= -1
        let mut r = vec![0.0; nv];
        for k in 0..n {
            r[k] = -y[i] * x[[i, k]];
            r[n + k] = y[i] * x[[i, k]];
        }
        r[2 * n] = -y[i];
        r[2 * n + 1 + i] = -1.0;
        rows.push(r);
        rhs.push(-1.0);
    }
    for j in (0..2 * n).chain(2 * n + 1..nv) {
        let mut r = vec![0.0; nv];
        r[j] = -1.0;
        rows.push(r);
        rhs.push(0.0);
    }
    common::lp_optimum_by_clarabel(&c, &rows, &rhs, 0)
}

/// The L1-SVM of `(x, y, cost)` solved with the default settings, which must converge.
fn solved(x: &Array2<f64>, y: &[f64], cost: &[f64]) -> milsvm::Result<L1SvmSolution> {
    let p = L1SvmProblem {
        x: x.view(),
        y,
        cost,
    };
    let s = solve_l1_svm(&p, &L1SvmSettings::default(), &Cancel::default(), |_, _| {})?;
    assert!(s.converged);
    Ok(s)
}

/// The primal objective at `(w, b)` equals the dual objective `sum a_i` of multipliers that
/// are dual feasible: a certificate of optimality.
#[test]
fn the_solution_carries_its_duality_certificate() -> TestResult {
    let x = array![[0.0, 0.3], [0.2, 0.1], [2.0, 0.2], [2.5, 0.0], [1.0, 1.0]];
    let y = [-1.0, -1.0, 1.0, 1.0, -1.0];
    for c in [0.05, 1.0, 10.0] {
        let cost = [c, c, c, c, 2.0 * c];
        let s = solved(&x, &y, &cost)?;
        let dual: f64 = s.dual.iter().sum();
        assert!(
            (s.objective - dual).abs() <= 1e-9 * (1.0 + dual),
            "{} vs {dual}",
            s.objective
        );
        for (a, c) in s.dual.iter().zip(&cost) {
            assert!(*a >= -1e-12 && *a <= c + 1e-12);
        }
        let balance: f64 = s.dual.iter().zip(&y).map(|(a, y)| a * y).sum();
        assert!(balance.abs() <= 1e-9);
        for k in 0..2 {
            let g: f64 = (0..5).map(|i| s.dual[i] * y[i] * x[[i, k]]).sum();
            assert!(g.abs() <= 1.0 + 1e-9);
        }
    }
    Ok(())
}

#[test]
fn simplex_reaches_clarabels_optimum() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for case in 0..150 {
        let m = rng.random_range(2..16);
        let n = rng.random_range(1..14);
        let mut x = Array2::from_shape_fn((m, n), |_| rng.random::<f64>());
        if case % 3 == 0 {
            // repeated columns and exact ones, as embeddings have
            let k = rng.random_range(0..n);
            let col = x.column(0).to_owned();
            x.column_mut(k).assign(&col);
            x.mapv_inplace(|v| if v > 0.85 { 1.0 } else { v });
        }
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let scale = [0.05, 1.0, 40.0][case % 3];
        let cost: Vec<f64> = (0..m)
            .map(|_| scale * (0.5 + rng.random::<f64>()))
            .collect();
        let s = solved(&x, &y, &cost)?;
        let want = l1_svm_by_clarabel(&x, &y, &cost);
        assert!(
            (s.objective - want).abs() <= 1e-7 * (1.0 + want),
            "case {case}: simplex {} vs clarabel {want}",
            s.objective
        );
        assert_eq!(
            s.objective,
            l1_svm_objective(x.view(), &y, &cost, &s.w, s.b)
        );
        assert!(s.w.iter().filter(|&&v| v != 0.0).count() <= m);
    }
    Ok(())
}

#[test]
fn the_fit_is_the_embedding_and_the_lp_and_scores_bags_by_xv_max() -> TestResult {
    let (bags, labels) = toy(1, 30);
    let fit = MilesParams::new()
        .c(5.0)
        .gamma(Gamma::Value(0.5))
        .fit(&bags, &labels)?;
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let e = embedding(kernel, &bags, bags.instances())?;
    let y: Vec<f64> = labels
        .iter()
        .map(|&l| if l == 1 { 1.0 } else { -1.0 })
        .collect();
    let cost = vec![5.0; y.len()];
    let p = L1SvmProblem {
        x: e.view(),
        y: &y,
        cost: &cost,
    };
    let s = solve_l1_svm(&p, &L1SvmSettings::default(), &Cancel::default(), |_, _| {})?;
    assert_eq!(fit.objective[0], s.objective);
    assert!(fit.converged && fit.model.pooling == Pooling::XvMax);
    let nz: Vec<usize> = (0..s.w.len()).filter(|&k| s.w[k] != 0.0).collect();
    assert_eq!(fit.selected, nz);
    assert_eq!(fit.model.n_xv(), nz.len());
    let scores = fit.model.decision_function(&bags)?;
    for i in 0..bags.n_bags() {
        let want: f64 = nz.iter().map(|&k| s.w[k] * e[[i, k]]).sum::<f64>() + s.b;
        assert!((scores[[i, 0]] - want).abs() <= 1e-12 * (1.0 + want.abs()));
        assert_eq!(scores[[i, 0]] > 0.0, labels[i] == 1);
    }
    // thread-count independence
    let one = MilesParams::new()
        .c(5.0)
        .n_jobs(Some(1))
        .fit(&bags, &labels)?;
    let two = MilesParams::new()
        .c(5.0)
        .n_jobs(Some(2))
        .fit(&bags, &labels)?;
    assert_eq!(one, two);
    Ok(())
}

fn reference_shares(model: &Model, bag: &Array2<f64>) -> Vec<f64> {
    let Kernel::Rbf { gamma } = model.kernel else {
        panic!("a Gaussian model")
    };
    let z = model.xv.to_dense();
    let k = Array2::from_shape_fn((bag.nrows(), z.nrows()), |(p, j)| {
        let d: f64 = bag
            .row(p)
            .iter()
            .zip(z.row(j))
            .map(|(a, b)| (a - b) * (a - b))
            .sum();
        (-gamma * d).exp()
    });
    let mut share = vec![0.0; bag.nrows()];
    let mut u = vec![false; bag.nrows()];
    for j in 0..z.nrows() {
        let w = model.coef[[0, j]];
        if w != 0.0 {
            let col = k.column(j);
            let mut p = 0;
            for q in 1..bag.nrows() {
                if col[q] > col[p] {
                    p = q;
                }
            }
            share[p] += w * col[p];
            u[p] = true;
        }
    }
    let n_u = u.iter().filter(|&&a| a).count();
    for (s, a) in share.iter_mut().zip(&u) {
        if *a {
            *s += model.intercept[0] / n_u as f64;
        }
    }
    share
}

#[test]
fn the_predictor_pools_per_vector_one_bag_batch_csr_and_instance_shares() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let d = 3;
    for n_xv in [5, 60] {
        let z = Array2::from_shape_fn((n_xv, d), |_| rng.random::<f64>() * 2.0 - 1.0);
        let mut coef = Array2::from_shape_fn((1, n_xv), |_| rng.random::<f64>() - 0.5);
        coef[[0, 1]] = 0.0;
        let model = Model::new(
            Kernel::Rbf { gamma: 0.8 },
            z.clone(),
            coef,
            array![0.2],
            2,
            Pooling::XvMax,
        );
        let sparse = Model::new(
            Kernel::Rbf { gamma: 0.8 },
            Instances::Sparse(to_csr(&z, true)),
            model.coef.clone(),
            array![0.2],
            2,
            Pooling::XvMax,
        );
        let bag_list: Vec<Array2<f64>> = (0..20)
            .map(|_| {
                let n = rng.random_range(1..7);
                Array2::from_shape_fn((n, d), |_| rng.random::<f64>() * 2.0 - 1.0)
            })
            .collect();
        let bags = Bags::from_dense_bags(&bag_list)?;
        let pred = Predictor::new(&model)?;
        let batch = pred.decision_function(&bags)?;
        let sparse_batch = Predictor::new(&sparse)?.decision_function(&bags)?;
        let e = bag_max_kernel(
            model.kernel,
            Rows::from(bags.instances()),
            &bags.instances().sq_norms(),
            bags.bag_ptr(),
            Rows::Dense(z.view()),
            &Rows::Dense(z.view()).sq_norms(),
            &Cancel::default(),
        )?;
        let shares = pred.bag_instance_scores(Rows::from(bags.instances()), bags.bag_ptr())?;
        let mut ws = Workspace::default();
        let mut one = [0.0];
        for (i, bag) in bag_list.iter().enumerate() {
            let data = bag
                .as_standard_layout()
                .into_owned()
                .into_raw_vec_and_offset()
                .0;
            pred.score_bag(BagView::dense(&data, d)?, &mut ws, &mut one)?;
            let want = e.row(i).dot(&model.coef.row(0)) + 0.2;
            for got in [one[0], batch[[i, 0]], sparse_batch[[i, 0]]] {
                assert!(
                    (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                    "{got} vs {want}"
                );
            }
            if n_xv <= milsvm::model::ROW_KERNEL_MAX_XV {
                assert_eq!(one[0], batch[[i, 0]]);
            }
            let r = bags.bag_range(i);
            let got: Array1<f64> = shares.slice(ndarray::s![r.clone(), 0]).to_owned();
            for (a, b) in got.iter().zip(reference_shares(&model, bag)) {
                assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
            }
            assert!((got.sum() - want).abs() <= 1e-12 * (1.0 + want.abs()));
        }
    }
    Ok(())
}

#[test]
fn model_file_version_six_and_old_versions() -> TestResult {
    let (bags, labels) = toy(2, 20);
    let fit = MilesParams::new().c(10.0).fit(&bags, &labels)?;
    let text = fit.model.to_json()?;
    let back = Model::from_json(&text)?;
    assert_eq!(back, fit.model);
    assert_eq!(
        back.decision_function(&bags)?,
        fit.model.decision_function(&bags)?
    );
    let mut doc: serde_json::Value = serde_json::from_str(&text)?;
    assert_eq!(doc["version"], milsvm::model::FORMAT_VERSION);
    assert_eq!(doc["pooling"], "xv_max");
    doc["version"] = 5.into();
    match Model::from_json(&doc.to_string()) {
        Err(Error::ModelFile(msg)) => assert!(msg.contains("needs model file version 6"), "{msg}"),
        other => panic!("a version-5 xv_max file was read: {other:?}"),
    }
    // a version-5 file of another pooling still reads
    doc["pooling"] = "max".into();
    assert_eq!(Model::from_json(&doc.to_string())?.pooling, Pooling::Max);
    Ok(())
}

#[test]
fn bad_parameters_and_data_are_errors() -> TestResult {
    let (bags, labels) = toy(4, 12);
    let n = bags.n_instances();
    for (p, what) in [
        (MilesParams::new().n_concepts(Some(0)), "n_concepts"),
        (MilesParams::new().n_concepts(Some(n + 1)), "n_concepts"),
        (MilesParams::new().c(0.0), "C"),
        (MilesParams::new().c(f64::NAN), "C"),
        (MilesParams::new().inner_tol(0.0), "inner_tol"),
    ] {
        match p.fit(&bags, &labels) {
            Err(Error::InvalidParameter(msg)) => assert!(msg.contains(what), "{msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    assert!(MilesParams::new()
        .fit(&bags, &vec![0; labels.len()])
        .is_err());
    let cancel = Cancel::new();
    cancel.cancel();
    let p = MilesParams::new().observer(milsvm::Observer::default().with_cancel(cancel));
    assert!(matches!(p.fit(&bags, &labels), Err(Error::Cancelled)));
    Ok(())
}

/// Partial pricing over several sections (a small section size forced through the settings)
/// reaches clarabel's optimum, and full pricing's objective.
#[test]
fn partial_pricing_over_several_sections_reaches_clarabels_optimum() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for case in 0..40 {
        let m = rng.random_range(4..30);
        let n = rng.random_range(20..120);
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        // embedding-like: a few informative concepts, the rest noise, values in [0, 1]
        let x = Array2::from_shape_fn((m, n), |(i, k)| {
            let signal = if k % 7 == 0 { 0.2 * y[i] } else { 0.0 };
            (0.5 * rng.random::<f64>() + 0.25 + signal).clamp(0.0, 1.0)
        });
        let cost: Vec<f64> = (0..m).map(|_| 0.5 + rng.random::<f64>()).collect();
        let p = L1SvmProblem {
            x: x.view(),
            y: &y,
            cost: &cost,
        };
        let solve = |section| {
            let settings = L1SvmSettings {
                price_section: section,
                ..L1SvmSettings::default()
            };
            solve_l1_svm(&p, &settings, &Cancel::default(), |_, _| {})
        };
        let (full, partial) = (solve(Some(n))?, solve(Some(1 + case % 9))?);
        assert!(full.converged && partial.converged, "case {case}");
        let want = l1_svm_by_clarabel(&x, &y, &cost);
        for s in [&full, &partial] {
            assert!(
                (s.objective - want).abs() <= 1e-7 * (1.0 + want),
                "case {case}: simplex {} vs clarabel {want}",
                s.objective
            );
            assert!(s.w.iter().filter(|&&v| v != 0.0).count() <= m);
        }
    }
    Ok(())
}
