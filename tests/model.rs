//! The model file (version 4, and the older versions it still reads) and the compiled predictor:
//! every path (one bag, many bags, dense or CSR instances, dense or CSR basis, each pooling)
//! against a naive evaluation of `f(x) = sum_k beta_k k(z_k, x) + b` written here; the scaler
//! against standardising by hand, the probabilities against Platt's closed form.

mod common;

use common::{to_csr, TestResult};
use milsvm::bags::{Bags, Csr, DenseF64, Instances};
use milsvm::model::{
    fit_sigmoid, BagFeatures, BagView, Calibration, Model, Pooling, Predictor, Scaler, Workspace,
    FORMAT_VERSION,
};
use milsvm::{Error, Kernel};
use ndarray::{array, Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

fn random_matrix(rng: &mut ChaCha8Rng, n: usize, d: usize, density: f64) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |_| {
        if rng.random::<f64>() < density {
            rng.random::<f64>() * 2.0 - 1.0
        } else {
            0.0
        }
    })
}

fn kernel_value(kernel: Kernel, a: &[f64], b: &[f64]) -> f64 {
    match kernel {
        Kernel::Linear => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        Kernel::Rbf { gamma } => {
            let d2: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
            (-gamma * d2).exp()
        }
    }
}

/// Naive bag scores of `model` for the dense bag `x`.
fn naive_scores(model: &Model, x: &Array2<f64>) -> Vec<f64> {
    let z = model.xv.to_dense();
    let n = x.nrows() as f64;
    (0..model.n_outputs())
        .map(|o| {
            let b = model.intercept[o];
            let f: Vec<f64> = x
                .rows()
                .into_iter()
                .map(|xr| {
                    z.rows()
                        .into_iter()
                        .zip(model.coef.row(o))
                        .map(|(zr, &c)| {
                            c * kernel_value(
                                model.kernel,
                                xr.as_slice().unwrap(),
                                zr.as_slice().unwrap(),
                            )
                        })
                        .sum::<f64>()
                        + b
                })
                .collect();
            match model.pooling {
                // MILES: the max of each vector's kernel values, then the linear combination
                Pooling::XvMax => {
                    z.rows()
                        .into_iter()
                        .zip(model.coef.row(o))
                        .map(|(zr, &c)| {
                            c * x
                                .rows()
                                .into_iter()
                                .map(|xr| {
                                    kernel_value(
                                        model.kernel,
                                        xr.as_slice().unwrap(),
                                        zr.as_slice().unwrap(),
                                    )
                                })
                                .fold(f64::NEG_INFINITY, f64::max)
                        })
                        .sum::<f64>()
                        + b
                }
                Pooling::Mean => f.iter().sum::<f64>() / n,
                Pooling::SmilMean => f.iter().sum::<f64>() / n + 1.0 - 1.0 / n,
                Pooling::Max => f.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                Pooling::NormalizedMean => {
                    let mut kself = 0.0;
                    for p in x.rows() {
                        for q in x.rows() {
                            kself += kernel_value(
                                model.kernel,
                                p.as_slice().unwrap(),
                                q.as_slice().unwrap(),
                            );
                        }
                    }
                    kself /= n * n;
                    let g = f.iter().map(|v| v - b).sum::<f64>() / n;
                    if kself > 0.0 {
                        g / kself.sqrt() + b
                    } else {
                        b
                    }
                }
            }
        })
        .collect()
}

fn random_model(
    rng: &mut ChaCha8Rng,
    n_xv: usize,
    d: usize,
    n_classes: usize,
    kernel: Kernel,
    pooling: Pooling,
    sparse: bool,
) -> Model {
    let n_out = if n_classes == 2 { 1 } else { n_classes };
    let z = random_matrix(rng, n_xv, d, if sparse { 0.4 } else { 1.0 });
    let coef = random_matrix(rng, n_out, n_xv, 1.0);
    let intercept = Array1::from_shape_fn(n_out, |_| rng.random::<f64>() - 0.5);
    let xv = if sparse {
        Instances::Sparse(to_csr(&z, false))
    } else {
        Instances::from(z)
    };
    Model::new(kernel, xv, coef, intercept, n_classes, pooling)
}

fn random_bags(rng: &mut ChaCha8Rng, m: usize, d: usize, density: f64) -> Vec<Array2<f64>> {
    (0..m)
        .map(|_| {
            let n = rng.random_range(1..6);
            random_matrix(rng, n, d, density)
        })
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

const KERNELS: [Kernel; 2] = [Kernel::Linear, Kernel::Rbf { gamma: 0.7 }];
const POOLINGS: [Pooling; 5] = [
    Pooling::Mean,
    Pooling::Max,
    Pooling::NormalizedMean,
    Pooling::SmilMean,
    Pooling::XvMax,
];

/// Every kind of model: each kernel, pooling, dense or CSR basis and number of classes out of
/// `n_classes`, in that nesting order.
fn every_kind(n_classes: [usize; 2]) -> impl Iterator<Item = (Kernel, Pooling, bool, usize)> {
    KERNELS.into_iter().flat_map(move |kernel| {
        POOLINGS.into_iter().flat_map(move |pooling| {
            [false, true].into_iter().flat_map(move |sparse| {
                n_classes
                    .into_iter()
                    .map(move |classes| (kernel, pooling, sparse, classes))
            })
        })
    })
}

#[test]
fn every_prediction_path_matches_the_naive_formula() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for (kernel, pooling, sparse_basis, n_classes) in every_kind([2, 3]) {
        let model = random_model(&mut rng, 6, 9, n_classes, kernel, pooling, sparse_basis);
        let bag_list = random_bags(&mut rng, 7, 9, 0.5);
        let dense = Bags::from_dense_bags(&bag_list)?;
        let stacked = dense.instances().to_dense();
        let sparse = Bags::new(
            Instances::Sparse(to_csr(&stacked, false)),
            dense.bag_ptr().to_vec(),
        )?;
        let predictor = Predictor::new(&model)?;
        let batch_dense = predictor.decision_function(&dense)?;
        let batch_sparse = predictor.decision_function(&sparse)?;
        let mut ws = Workspace::default();
        for (i, bag) in bag_list.iter().enumerate() {
            let want = naive_scores(&model, bag);
            let mut one = vec![0.0; model.n_outputs()];
            let flat: Vec<f64> = bag.iter().copied().collect();
            predictor.score_bag(BagView::dense(&flat, 9)?, &mut ws, &mut one)?;
            let csr = to_csr(bag, false);
            let mut one_csr = vec![0.0; model.n_outputs()];
            predictor.score_bag(
                BagView::csr(csr.indptr(), csr.indices(), csr.data(), 9)?,
                &mut ws,
                &mut one_csr,
            )?;
            for o in 0..model.n_outputs() {
                let what =
                    format!("{kernel:?} {pooling:?} sparse basis {sparse_basis} bag {i} out {o}");
                assert!(close(one[o], want[o], 1e-12), "{what}: one bag");
                assert!(close(one_csr[o], want[o], 1e-12), "{what}: CSR bag");
                assert!(close(batch_dense[[i, o]], want[o], 1e-12), "{what}: batch");
                assert!(
                    close(batch_sparse[[i, o]], want[o], 1e-12),
                    "{what}: CSR batch"
                );
            }
        }
        // instance scores: each instance as a one-instance bag under mean pooling
        let inst = predictor.instance_decision_function(dense.instances())?;
        let mean_model = Model {
            pooling: Pooling::Mean,
            ..model.clone()
        };
        for (p, row) in stacked.rows().into_iter().enumerate() {
            let want = naive_scores(&mean_model, &row.to_owned().insert_axis(ndarray::Axis(0)));
            for o in 0..model.n_outputs() {
                assert!(close(inst[[p, o]], want[o], 1e-12), "instance {p}");
            }
        }
    }
    Ok(())
}

#[test]
fn batch_scores_do_not_depend_on_the_thread_count() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for pooling in POOLINGS {
        for sparse_basis in [false, true] {
            let model = random_model(
                &mut rng,
                12,
                20,
                2,
                Kernel::Rbf { gamma: 0.1 },
                pooling,
                sparse_basis,
            );
            let bags = Bags::from_dense_bags(&random_bags(&mut rng, 3000, 20, 0.6))?;
            let predictor = model.predictor()?;
            let run = |n: usize| -> Result<Array2<f64>, Error> {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| Error::Solver(e.to_string()))?
                    .install(|| predictor.decision_function(&bags))
            };
            assert!(
                run(1)? == run(2)?,
                "{pooling:?} sparse basis {sparse_basis}"
            );
        }
    }
    Ok(())
}

#[test]
fn score_bag_rejects_bad_bags() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let model = random_model(&mut rng, 3, 4, 2, Kernel::Linear, Pooling::Max, false);
    let p = Predictor::new(&model)?;
    let mut ws = Workspace::default();
    let mut out = [0.0];
    assert!(BagView::dense(&[1.0; 7], 4).is_err(), "ragged");
    assert!(BagView::dense(&[], 4).is_err(), "empty");
    let wide = [0.5; 10];
    assert!(matches!(
        p.score_bag(BagView::dense(&wide, 5)?, &mut ws, &mut out),
        Err(Error::Mismatch(_))
    ));
    let nan = [0.0, f64::NAN, 0.0, 0.0];
    assert!(matches!(
        p.score_bag(BagView::dense(&nan, 4)?, &mut ws, &mut out),
        Err(Error::InvalidData(_))
    ));
    let mut two = [0.0, 0.0];
    assert!(p
        .score_bag(BagView::dense(&[0.0; 4], 4)?, &mut ws, &mut two)
        .is_err());
    assert!(
        BagView::csr(&[0, 2], &[0, 9], &[1.0, 1.0], 4).is_err(),
        "index"
    );
    assert!(
        BagView::csr(&[0, 3], &[0, 1], &[1.0, 1.0], 4).is_err(),
        "indptr"
    );
    assert!(BagView::csr(&[0], &[], &[], 4).is_err(), "no instance");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------------------------

fn small_model() -> Model {
    let mut m = Model::new(
        Kernel::Rbf { gamma: 0.5 },
        array![[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]],
        array![[0.5, -1.0, 2.0]],
        array![0.25],
        2,
        Pooling::Mean,
    );
    m.classes = Some(vec![json!("neg"), json!("pos")]);
    m.estimator = Some("SparseMI".into());
    m.params.insert("C".into(), json!(10.0));
    m.info.insert("n_iter".into(), json!(3));
    m
}

#[test]
fn round_trip_is_exact_for_every_kind() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for (kernel, pooling, sparse, n_classes) in every_kind([2, 4]) {
        let model = random_model(&mut rng, 5, 6, n_classes, kernel, pooling, sparse);
        let text = model.to_json()?;
        let back = Model::from_json(&text)?;
        assert!(back == model, "{kernel:?} {pooling:?} {sparse}");
        assert_eq!(back.to_json()?, text);
        let v: Value = serde_json::from_str(&text)?;
        assert_eq!(v["version"], FORMAT_VERSION);
        assert_eq!(v["xv"]["layout"], if sparse { "csr" } else { "dense" });
    }
    // metadata, and a value the default serde_json parser reads 1 ulp off
    let mut model = small_model();
    model.coef[[0, 0]] = 1.2071440112991683;
    let back = Model::from_json(&model.to_json()?)?;
    assert!(back == model);
    // save / load
    let path = std::env::temp_dir().join(format!("milsvm-model-test-{}.json", std::process::id()));
    model.save(&path)?;
    let loaded = Model::load(&path);
    std::fs::remove_file(&path)?;
    assert!(loaded? == model);
    assert!(matches!(
        Model::load("/nonexistent/dir/model.json"),
        Err(Error::ModelFile(_))
    ));
    Ok(())
}

#[test]
fn reads_version_1_and_2_files() -> TestResult {
    let v2 = json!({
        "format": "milsvm-model", "version": 2,
        "model": {
            "kernel": {"name": "rbf", "gamma": 0.5},
            "xv": {"v": 1, "dim": [3, 2], "data": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]},
            "coef": {"v": 1, "dim": [1, 3], "data": [0.5, -1.0, 2.0]},
            "intercept": {"v": 1, "dim": [1], "data": [0.25]},
            "n_classes": 2, "pooling": "max"
        },
        "estimator": "miSVM", "params": {"C": 1.0}, "classes": [0, 1],
        "n_iter": 4, "objective_history": [3.0, 2.0]
    });
    let m = Model::from_json(&v2.to_string())?;
    assert_eq!(m.pooling, Pooling::Max);
    assert_eq!(m.estimator.as_deref(), Some("miSVM"));
    assert_eq!(m.classes, Some(vec![json!(0), json!(1)]));
    assert_eq!(m.info["n_iter"], json!(4));
    assert_eq!(m.xv.to_dense(), array![[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]);
    let mut v1 = v2.clone();
    v1["version"] = json!(1);
    v1["model"].as_object_mut().map(|o| o.remove("pooling"));
    assert_eq!(Model::from_json(&v1.to_string())?.pooling, Pooling::Mean);
    Ok(())
}

/// `edit` applied to the document `good` must give one `ModelFile` error whose message names
/// `field`.
fn refuses(good: &Value, edit: impl Fn(&mut Value), field: &str) -> TestResult {
    let mut v = good.clone();
    edit(&mut v);
    match Model::from_json(&v.to_string()) {
        Err(Error::ModelFile(msg)) => {
            assert!(
                msg.contains(field),
                "{field}: message {msg:?} does not name it"
            )
        }
        other => panic!("{field}: expected a ModelFile error, got {other:?}"),
    }
    Ok(())
}

/// `edit` applied to the good file must give one `ModelFile` error whose message names `field`.
fn expect_error(edit: impl Fn(&mut Value), field: &str) -> TestResult {
    refuses(
        &serde_json::from_str(&small_model().to_json()?)?,
        edit,
        field,
    )
}

#[test]
fn every_inconsistency_is_one_error_naming_the_field() -> TestResult {
    expect_error(|v| v["format"] = json!("other"), "format")?;
    expect_error(|v| v["version"] = json!(FORMAT_VERSION + 1), "version")?;
    expect_error(|v| v["version"] = json!(0), "version")?;
    expect_error(|v| v["version"] = json!("3"), "version")?;
    expect_error(
        |v| {
            v.as_object_mut().map(|o| o.remove("version"));
        },
        "version",
    )?;
    expect_error(|v| v["kernel"] = json!({"name": "poly"}), "kernel")?;
    expect_error(
        |v| v["kernel"] = json!({"name": "rbf", "gamma": -1.0}),
        "kernel",
    )?;
    expect_error(|v| v["pooling"] = json!("median"), "pooling")?;
    expect_error(|v| v["n_classes"] = json!(5), "n_classes")?;
    expect_error(|v| v["n_classes"] = json!(-1), "n_classes")?;
    expect_error(|v| v["classes"] = json!(["a", "b", "c"]), "classes")?;
    expect_error(|v| v["classes"] = json!([[1], [2]]), "classes")?;
    expect_error(|v| v["classes"] = json!("ab"), "classes")?;
    expect_error(|v| v["coef"]["shape"] = json!([1, 2]), "coef")?;
    expect_error(|v| v["coef"]["data"] = json!([0.5, -1.0]), "coef")?;
    expect_error(|v| v["coef"]["data"][0] = Value::Null, "coef")?;
    expect_error(
        |v| {
            v.as_object_mut().map(|o| o.remove("coef"));
        },
        "coef",
    )?;
    expect_error(|v| v["intercept"] = json!([0.25, 1.0]), "intercept")?;
    expect_error(|v| v["intercept"] = json!("x"), "intercept")?;
    expect_error(|v| v["xv"]["data"] = json!([0.0, 1.0]), "xv")?;
    expect_error(|v| v["xv"]["shape"] = json!([3]), "xv.shape")?;
    expect_error(|v| v["xv"]["shape"] = json!([usize::MAX, 3]), "xv")?;
    expect_error(|v| v["xv"]["layout"] = json!("coo"), "xv.layout")?;
    expect_error(
        |v| v["xv"] = json!({"layout": "dense", "shape": [0, 2], "data": []}),
        "xv",
    )?;
    expect_error(
        |v| v["xv"] = json!({"layout": "dense", "shape": [3, 0], "data": []}),
        "xv",
    )?;
    expect_error(
        |v| v["xv"] = json!({"layout": "csr", "shape": [3, 2], "indptr": [0, 1, 2], "indices": [0, 1], "data": [1.0, 1.0]}),
        "xv",
    )?;
    expect_error(
        |v| v["xv"] = json!({"layout": "csr", "shape": [3, 2], "indptr": [0, 1, 2, 3], "indices": [0, 1, 7], "data": [1.0, 1.0, 1.0]}),
        "xv",
    )?;
    expect_error(
        |v| v["xv"] = json!({"layout": "csr", "shape": [3, 2], "indptr": [0, 2, 1, 3], "indices": [0, 1, 1], "data": [1.0, 1.0, 1.0]}),
        "xv",
    )?;
    expect_error(|v| v["params"] = json!([1, 2]), "params")?;
    for text in [
        "",
        "{\"format\": \"milsvm-model\"",
        "[1, 2, 3]",
        "{\"coef\": 1e999}",
    ] {
        assert!(
            matches!(Model::from_json(text), Err(Error::ModelFile(_))),
            "{text:?}"
        );
    }
    Ok(())
}

#[test]
fn batch_path_takes_any_layout_and_names_the_bag_with_a_non_finite_value() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (pooling, n_xv) in [
        (Pooling::Max, 4),
        (Pooling::Max, 40),
        (Pooling::XvMax, 4),
        (Pooling::XvMax, 40),
    ] {
        let model = random_model(
            &mut rng,
            n_xv,
            5,
            2,
            Kernel::Rbf { gamma: 0.3 },
            pooling,
            false,
        );
        let p = Predictor::new(&model)?;
        let x = random_matrix(&mut rng, 9, 5, 1.0);
        let ptr = [0, 2, 5, 9];
        let want = p.decision_function_rows(milsvm::bags::Rows::Dense(x.view()), &ptr)?;
        let fortran = x.t().as_standard_layout().into_owned(); // 5 x 9, then viewed transposed
        let got = p.decision_function_rows(milsvm::bags::Rows::Dense(fortran.t()), &ptr)?;
        assert!(got == want, "column-major rows, {n_xv} XVs");
        let inst = p.instance_decision_function(&Instances::from(fortran.t().to_owned()))?;
        assert!(inst == p.instance_decision_function(&Instances::from(x.clone()))?);
        let mut bad = x.clone();
        bad[[6, 1]] = f64::INFINITY;
        match p.decision_function_rows(milsvm::bags::Rows::Dense(bad.view()), &ptr) {
            Err(Error::InvalidData(msg)) => {
                assert!(msg.contains('2') || msg.contains("instance 6"), "{msg}")
            }
            other => panic!("expected InvalidData, got {other:?}"),
        }
        assert!(p
            .decision_function_rows(milsvm::bags::Rows::Dense(x.view()), &[0, 3, 3, 9])
            .is_err());
    }
    Ok(())
}

#[test]
fn a_sparse_basis_of_huge_width_and_overflowing_scores_are_errors_not_panics() -> TestResult {
    // a CSR basis over 2^62 features: loads and scores sparse bags in O(nnz) memory (2^63 is
    // refused: NumPy indices are i64)
    let width = 1usize << 62;
    let z = Csr::new(2, width, vec![0, 1, 2], vec![5, width - 1], vec![1.0, 2.0])?;
    let model = Model::new(
        Kernel::Linear,
        Instances::Sparse(z),
        array![[1.0, -1.0]],
        array![0.5],
        2,
        Pooling::Mean,
    );
    let back = Model::from_json(&model.to_json()?)?;
    let mut wider = back.clone();
    if let Instances::Sparse(z) = &back.xv {
        let (idx, val) = (z.indices().to_vec(), z.data().to_vec());
        wider.xv = Instances::Sparse(Csr::new(2, 1 << 63, z.indptr().to_vec(), idx, val)?);
    }
    assert!(matches!(wider.check(), Err(Error::ModelFile(_))));
    let p = Predictor::new(&back)?;
    let mut ws = Workspace::default();
    let mut out = [0.0];
    p.score_bag(
        BagView::csr(&[0, 2], &[5, width - 1], &[2.0, 1.0], width)?,
        &mut ws,
        &mut out,
    )?;
    assert_eq!(out[0], 2.0 - 2.0 + 0.5);
    // finite values whose score overflows
    let big = Model::new(
        Kernel::Linear,
        array![[1e300, 1e300]],
        array![[1e300]],
        array![0.0],
        2,
        Pooling::Mean,
    );
    let p = Predictor::new(&big)?;
    assert!(matches!(
        p.score_bag(BagView::dense(&[1e10, 1e10], 2)?, &mut ws, &mut out),
        Err(Error::InvalidData(_))
    ));
    let bags = Bags::from_dense_bags(&[array![[1e10, 1e10]]])?;
    assert!(matches!(
        p.decision_function(&bags),
        Err(Error::InvalidData(_))
    ));
    Ok(())
}

/// A scaler with some centred features, or none centred (`mean = 0`, sparse rows stay sparse).
fn random_scaler(rng: &mut ChaCha8Rng, d: usize, centred: bool) -> Scaler {
    Scaler {
        mean: (0..d)
            .map(|_| {
                if centred {
                    rng.random::<f64>() - 0.5
                } else {
                    0.0
                }
            })
            .collect(),
        scale: (0..d).map(|_| 0.5 + rng.random::<f64>()).collect(),
    }
}

#[test]
fn a_model_with_a_scaler_scores_raw_bags_as_its_model_scores_standardised_ones() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for (kernel, pooling, sparse_basis, n_classes) in every_kind([2, 3]) {
        for centred in [true, false] {
            let plain = random_model(&mut rng, 6, 5, n_classes, kernel, pooling, sparse_basis);
            let scaler = random_scaler(&mut rng, 5, centred);
            let with = Model {
                scaler: Some(scaler.clone()),
                ..plain.clone()
            };
            let bag_list = random_bags(&mut rng, 6, 5, 0.5);
            let standardised: Vec<Array2<f64>> = bag_list
                .iter()
                .map(|b| {
                    let mut s = b.clone();
                    for mut row in s.rows_mut() {
                        for (j, v) in row.iter_mut().enumerate() {
                            *v = (*v - scaler.mean[j]) / scaler.scale[j];
                        }
                    }
                    s
                })
                .collect();
            let (p_plain, p_with) = (Predictor::new(&plain)?, Predictor::new(&with)?);
            let raw = Bags::from_dense_bags(&bag_list)?;
            let raw_sparse = Bags::new(
                Instances::Sparse(to_csr(&raw.instances().to_dense(), false)),
                raw.bag_ptr().to_vec(),
            )?;
            let want = p_plain.decision_function(&Bags::from_dense_bags(&standardised)?)?;
            let what =
                format!("{kernel:?} {pooling:?} {sparse_basis} {n_classes} centred {centred}");
            let tol = 1e-12;
            let same = |a: &Array2<f64>| a.iter().zip(want.iter()).all(|(x, y)| close(*x, *y, tol));
            assert!(same(&p_with.decision_function(&raw)?), "{what}: batch");
            assert!(
                same(&p_with.decision_function(&raw_sparse)?),
                "{what}: CSR batch"
            );
            let mut ws = Workspace::default();
            for (i, bag) in bag_list.iter().enumerate() {
                let flat: Vec<f64> = bag.iter().copied().collect();
                let mut one = vec![0.0; plain.n_outputs()];
                p_with.score_bag(BagView::dense(&flat, 5)?, &mut ws, &mut one)?;
                let csr = to_csr(bag, false);
                let mut one_csr = vec![0.0; plain.n_outputs()];
                let view = BagView::csr(csr.indptr(), csr.indices(), csr.data(), 5)?;
                p_with.score_bag(view, &mut ws, &mut one_csr)?;
                for o in 0..plain.n_outputs() {
                    assert!(close(one[o], want[[i, o]], tol), "{what}: bag {i}");
                    assert!(close(one_csr[o], want[[i, o]], tol), "{what}: CSR bag {i}");
                }
            }
            let inst = p_with.instance_decision_function(raw.instances())?;
            let inst_want = p_plain
                .instance_decision_function(Bags::from_dense_bags(&standardised)?.instances())?;
            assert!(
                inst.iter()
                    .zip(inst_want.iter())
                    .all(|(a, b)| close(*a, *b, tol)),
                "{what}"
            );
            // a non-finite value is still reported
            let mut bad = raw.instances().to_dense();
            bad[[0, 0]] = f64::NAN;
            let bad_rows = milsvm::bags::Rows::Dense(bad.view());
            assert!(matches!(
                p_with.decision_function_rows(bad_rows, raw.bag_ptr()),
                Err(Error::InvalidData(_))
            ));
        }
    }
    Ok(())
}

/// `1 / (1 + exp(a f + b))`, written plainly.
fn platt(a: f64, b: f64, f: f64) -> f64 {
    1.0 / (1.0 + (a * f + b).exp())
}

#[test]
fn probabilities_are_platts_sigmoid_of_the_scores_coupled_one_vs_rest() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for n_classes in [2, 3, 4] {
        let mut model = random_model(
            &mut rng,
            5,
            4,
            n_classes,
            Kernel::Rbf { gamma: 0.4 },
            Pooling::Mean,
            false,
        );
        let n_out = model.n_outputs();
        let bag_list = random_bags(&mut rng, 8, 4, 1.0);
        let bags = Bags::from_dense_bags(&bag_list)?;
        let rows = milsvm::bags::Rows::from(bags.instances());
        // without a calibration: a clear error
        let plain = Predictor::new(&model)?;
        assert!(!plain.has_probabilities());
        match plain.predict_proba_rows(rows, bags.bag_ptr()) {
            Err(Error::InvalidParameter(msg)) => assert!(msg.contains("probability=True"), "{msg}"),
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
        let a: Vec<f64> = (0..n_out)
            .map(|_| -0.5 - 2.0 * rng.random::<f64>())
            .collect();
        let b: Vec<f64> = (0..n_out).map(|_| rng.random::<f64>() - 0.5).collect();
        model.calibration = Some(Calibration {
            a: a.clone(),
            b: b.clone(),
        });
        let p = Predictor::new(&model)?;
        assert_eq!(p.n_classes(), n_classes);
        let scores = p.decision_function(&bags)?;
        let proba = p.predict_proba_rows(rows, bags.bag_ptr())?;
        for (i, f) in scores.rows().into_iter().enumerate() {
            let want: Vec<f64> = if n_out == 1 {
                let q = platt(a[0], b[0], f[0]);
                vec![1.0 - q, q]
            } else {
                let q: Vec<f64> = (0..n_out).map(|c| platt(a[c], b[c], f[c])).collect();
                let total: f64 = q.iter().sum();
                q.iter().map(|v| v / total).collect()
            };
            for (c, w) in want.iter().enumerate() {
                assert!(
                    close(proba[[i, c]], *w, 1e-13),
                    "{n_classes} classes, bag {i}"
                );
            }
            let mut one = vec![0.0; n_classes];
            p.probabilities(f.as_slice().unwrap_or(&[]), &mut one)?;
            assert!(one.iter().zip(proba.row(i)).all(|(x, y)| x == y));
        }
        assert!(p.probabilities(&[0.0; 7], &mut [0.0; 2]).is_err());
    }
    // every sigmoid 0 (huge positive a f + b): the uniform distribution
    let c = Calibration {
        a: vec![1.0; 3],
        b: vec![0.0; 3],
    };
    let mut out = [0.0; 3];
    c.probabilities(&[1e6, 1e6, 1e6], &mut out);
    assert_eq!(out, [1.0 / 3.0; 3]);
    Ok(())
}

#[test]
fn the_sigmoid_fit_solves_platts_problem() -> TestResult {
    // the fit is a stationary point of the smoothed log-loss, and lower than nearby points
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for n in [5, 12, 60] {
        let positive: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let scores: Vec<f64> = positive
            .iter()
            .map(|&p| if p { 0.5 } else { -0.5 } + 1.5 * (rng.random::<f64>() - 0.5))
            .collect();
        let (a, b) = fit_sigmoid(&scores, &positive)?;
        let np = positive.iter().filter(|&&p| p).count() as f64;
        let nn = n as f64 - np;
        let t = |p: bool| {
            if p {
                (np + 1.0) / (np + 2.0)
            } else {
                1.0 / (nn + 2.0)
            }
        };
        let loss = |a: f64, b: f64| -> f64 {
            scores
                .iter()
                .zip(&positive)
                .map(|(&f, &p)| {
                    let q = platt(a, b, f);
                    -(t(p) * q.ln() + (1.0 - t(p)) * (1.0 - q).ln())
                })
                .sum()
        };
        let best = loss(a, b);
        for (da, db) in [(1e-3, 0.0), (-1e-3, 0.0), (0.0, 1e-3), (0.0, -1e-3)] {
            assert!(loss(a + da, b + db) >= best - 1e-12, "n {n}");
        }
    }
    // separable scores: a finite, steep sigmoid, not an overflow
    let (a, b) = fit_sigmoid(&[-3.0, -2.0, 2.0, 3.0], &[false, false, true, true])?;
    assert!(a.is_finite() && b.is_finite() && a < 0.0);
    assert!(fit_sigmoid(&[1.0], &[true]).is_err());
    assert!(fit_sigmoid(&[1.0, f64::NAN], &[true, false]).is_err());
    assert!(fit_sigmoid(&[1.0, 2.0], &[true]).is_err());
    Ok(())
}

#[test]
fn the_file_keeps_the_scaler_and_the_sigmoid_and_refuses_bad_ones_naming_the_field() -> TestResult {
    let mut model = small_model();
    model.scaler = Some(Scaler {
        mean: vec![0.5, -1.0],
        scale: vec![2.0, 0.25],
    });
    model.calibration = Some(Calibration {
        a: vec![-1.5],
        b: vec![0.1],
    });
    let text = model.to_json()?;
    assert!(Model::from_json(&text)? == model);
    let good: Value = serde_json::from_str(&text)?;
    let refused = |edit: &dyn Fn(&mut Value), field: &str| refuses(&good, edit, field);
    refused(&|v| v["scaler"]["mean"] = json!([0.0]), "scaler")?;
    refused(&|v| v["scaler"]["scale"] = json!([1.0, 0.0]), "scaler")?;
    refused(&|v| v["scaler"]["scale"] = json!([1.0, -2.0]), "scaler")?;
    refused(&|v| v["scaler"] = json!({"mean": [0.0, 0.0]}), "scaler")?;
    refused(
        &|v| v["calibration"]["a"] = json!([-1.0, 2.0]),
        "calibration",
    )?;
    refused(&|v| v["calibration"]["b"] = json!([]), "calibration")?;
    refused(&|v| v["calibration"] = json!([1, 2]), "calibration")?;
    // non-finite numbers cannot be written as JSON: the parse error names the field
    for (needle, number, field) in [
        ("[-1.5]", "-1.5", "calibration.a"),
        (",0.25]", "0.25", "scaler.scale"),
    ] {
        for literal in ["NaN", "1e999", "-Infinity"] {
            let bad = text.replacen(needle, &needle.replace(number, literal), 1);
            assert_ne!(bad, text);
            match Model::from_json(&bad) {
                Err(Error::ModelFile(msg)) => assert!(msg.contains(field), "{literal}: {msg}"),
                other => panic!("expected a ModelFile error, got {other:?}"),
            }
        }
    }
    // a file without them (version 3) reads as a model without them
    let mut v3 = good.clone();
    v3["version"] = json!(3);
    if let Some(o) = v3.as_object_mut() {
        o.remove("scaler");
        o.remove("calibration");
    }
    let back = Model::from_json(&v3.to_string())?;
    assert!(back.scaler.is_none() && back.calibration.is_none());
    // the predictor applies both
    let p = Predictor::new(&model)?;
    let (mut ws, mut f) = (Workspace::default(), [0.0]);
    p.score_bag(BagView::dense(&[1.0, 2.0], 2)?, &mut ws, &mut f)?;
    let plain = Predictor::new(&Model {
        scaler: None,
        ..model.clone()
    })?;
    let mut g = [0.0];
    plain.score_bag(BagView::dense(&[0.25, 12.0], 2)?, &mut ws, &mut g)?;
    assert_eq!(f, g);
    let mut proba = [0.0; 2];
    p.probabilities(&f, &mut proba)?;
    assert!(close(proba[1], platt(-1.5, 0.1, f[0]), 1e-15));
    Ok(())
}

/// An ensemble's probabilities are the mean of its members' Platt probabilities of their own
/// scores (closed form), on one bag and many, with a scaler shared by the members (the model
/// standardises, and for STK's min/max statistics summarises, the bags once for all members);
/// the file keeps the members exactly and refuses a faulty one under `ensemble[k]`.
#[test]
fn an_ensemble_averages_its_members_calibrated_probabilities() -> TestResult {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    for (n_classes, sparse, min_max) in [
        (2, false, false),
        (3, false, false),
        (2, true, false),
        (2, false, true),
        (3, false, true),
    ] {
        let kernel = Kernel::Rbf { gamma: 0.3 };
        // min/max models expand over 2 x 3 statistics with mean pooling
        let (width, pooling) = if min_max {
            (6, Pooling::Mean)
        } else {
            (3, Pooling::Max)
        };
        let with_features = |mut m: Model| {
            if min_max {
                m.bag_features = BagFeatures::MinMax;
            }
            m
        };
        let mut model = with_features(random_model(
            &mut rng, 4, width, n_classes, kernel, pooling, sparse,
        ));
        let n_out = model.n_outputs();
        let mut members = Vec::new();
        for k in 0..3 {
            let gamma = 0.2 + 0.1 * k as f64; // fold models may differ in gamma
            let mut m = with_features(random_model(
                &mut rng,
                2 + k,
                width,
                n_classes,
                Kernel::Rbf { gamma },
                pooling,
                sparse,
            ));
            m.calibration = Some(Calibration {
                a: (0..n_out).map(|_| -0.5 - rng.random::<f64>()).collect(),
                b: (0..n_out).map(|_| rng.random::<f64>() - 0.5).collect(),
            });
            members.push(m);
        }
        model.ensemble = members.clone();
        model.set_scaler(Some(random_scaler(&mut rng, 3, true)));
        assert!(model.ensemble.iter().all(|m| m.scaler == model.scaler));
        let p = Predictor::new(&model)?;
        assert!(p.has_probabilities());
        let bag_list = random_bags(&mut rng, 6, 3, 1.0);
        let bags = Bags::from_dense_bags(&bag_list)?;
        let rows = milsvm::bags::Rows::from(bags.instances());
        let proba = p.predict_proba_rows(rows, bags.bag_ptr())?;
        let mut ws = Workspace::default();
        for (i, bag) in bag_list.iter().enumerate() {
            let view = BagView::dense(bag.as_slice().unwrap_or(&[]), 3)?;
            let mut want = vec![0.0; n_classes];
            for m in &model.ensemble {
                let (mut f, mut q) = (vec![0.0; n_out], vec![0.0; n_classes]);
                Predictor::new(m)?.score_bag(view, &mut ws, &mut f)?;
                let cal = m.calibration.as_ref().ok_or("no calibration")?;
                let s: Vec<f64> = (0..n_out)
                    .map(|c| platt(cal.a[c], cal.b[c], f[c]))
                    .collect();
                if n_out == 1 {
                    q = vec![1.0 - s[0], s[0]];
                } else {
                    let total: f64 = s.iter().sum();
                    q.iter_mut().zip(&s).for_each(|(o, v)| *o = v / total);
                }
                want.iter_mut().zip(&q).for_each(|(w, v)| *w += v / 3.0);
            }
            let mut one = vec![0.0; n_classes];
            p.predict_proba_bag(view, &mut ws, &mut one)?;
            for c in 0..n_classes {
                assert!(
                    close(one[c], want[c], 1e-13),
                    "{n_classes} classes, bag {i}"
                );
                assert!(
                    close(proba[[i, c]], want[c], 1e-13),
                    "{n_classes} classes, bag {i}"
                );
            }
            // the model's own scores do not give an ensemble's probabilities
            let mut f = vec![0.0; n_out];
            p.score_bag(view, &mut ws, &mut f)?;
            match p.probabilities(&f, &mut one) {
                Err(Error::InvalidParameter(msg)) => assert!(msg.contains("predict_proba_bag")),
                other => panic!("expected InvalidParameter, got {other:?}"),
            }
        }
        let text = model.to_json()?;
        assert!(Model::from_json(&text)? == model);
        let good: Value = serde_json::from_str(&text)?;
        let refused = |edit: &dyn Fn(&mut Value), field: &str| refuses(&good, edit, field);
        refused(
            &|v| v["ensemble"][1]["calibration"]["a"] = json!([]),
            "ensemble[1]: calibration",
        )?;
        refused(
            &|v| {
                v["ensemble"][0]
                    .as_object_mut()
                    .map(|o| o.remove("calibration"));
            },
            "ensemble[0]: missing field `calibration`",
        )?;
        refused(
            &|v| v["ensemble"][2]["coef"]["shape"] = json!([n_out + 1, 4]),
            "ensemble[2]: coef",
        )?;
        refused(
            &|v| v["ensemble"][0]["kernel"] = json!({"name": "linear"}),
            "ensemble[0]: kernel",
        )?;
        refused(&|v| v["ensemble"][1] = json!(3), "ensemble[1]")?;
        refused(
            &|v| v["calibration"] = json!({"a": vec![-1.0; n_out], "b": vec![0.0; n_out]}),
            "calibration",
        )?;
        // a version-6 file has no ensemble: the field is not read there
        let mut v6 = good.clone();
        v6["version"] = json!(6);
        assert!(Model::from_json(&v6.to_string())?.ensemble.is_empty());
    }
    // members that do not fit the model are refused when it is compiled
    let mut model = small_model();
    let mut member = small_model();
    member.calibration = Some(Calibration {
        a: vec![-1.0],
        b: vec![0.0],
    });
    member.pooling = Pooling::Max;
    model.pooling = Pooling::Mean;
    model.ensemble = vec![member];
    match Predictor::new(&model) {
        Err(Error::ModelFile(msg)) => assert!(msg.contains("ensemble[0]: pooling"), "{msg}"),
        other => panic!("expected a ModelFile error, got {other:?}"),
    }
    Ok(())
}

/// A model never keeps rows borrowed from a caller's buffer: `Model::new` copies them, so that
/// the model neither changes with the buffer nor keeps it alive.
#[test]
fn a_model_owns_its_basis() -> TestResult {
    let owner = std::sync::Arc::new(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // SAFETY: `owner` holds 6 values and is never written.
    let rows = unsafe { DenseF64::from_shared(owner.as_ptr(), 3, 2, owner.clone()) }?;
    assert!(rows.is_borrowed());
    let m = Model::new(
        Kernel::Linear,
        Instances::Dense(rows),
        array![[1.0, -1.0, 0.5]],
        array![0.0],
        2,
        Pooling::Max,
    );
    let Instances::Dense(xv) = &m.xv else {
        return Err("a dense basis expected".into());
    };
    assert!(!xv.is_borrowed());
    assert_eq!(xv.as_slice(), owner.as_slice());
    assert_eq!(std::sync::Arc::strong_count(&owner), 1);
    m.check()?;
    // a borrowed basis set on the public field, past `Model::new`, is refused by the check
    // that every predictor and model file runs
    let mut direct = m.clone();
    // SAFETY: as above.
    direct.xv =
        Instances::Dense(unsafe { DenseF64::from_shared(owner.as_ptr(), 3, 2, owner.clone()) }?);
    let err = direct
        .check()
        .expect_err("a borrowed basis must be refused")
        .to_string();
    assert!(err.contains("xv") && err.contains("borrowed"), "{err}");
    assert!(Predictor::new(&direct).is_err());
    Ok(())
}

#[test]
fn one_bag_path_equals_the_batch_path_bit_for_bit_for_a_large_basis() -> TestResult {
    // more than ROW_KERNEL_MAX_XV dense vectors: the batch path scores through matrix
    // products, and the one-bag path reproduces their bits (MILES's xv_max included: its batch
    // path scores bag by bag with the same products)
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    for kernel in KERNELS {
        for pooling in POOLINGS {
            for n_classes in [2, 3] {
                for (n_xv, d) in [(33, 9), (300, 270)] {
                    // a width that keeps the kernel values away from 0 at any dimension
                    let kernel = match kernel {
                        Kernel::Rbf { gamma } => Kernel::Rbf {
                            gamma: gamma * 9.0 / d as f64,
                        },
                        Kernel::Linear => Kernel::Linear,
                    };
                    let mut model =
                        random_model(&mut rng, n_xv, d, n_classes, kernel, pooling, false);
                    if n_xv == 300 {
                        model.set_scaler(Some(Scaler {
                            mean: (0..d).map(|j| j as f64 * 0.01).collect(),
                            scale: (0..d).map(|j| 1.0 + j as f64 * 0.1).collect(),
                        }));
                    }
                    let mut bag_list = random_bags(&mut rng, 6, d, 1.0);
                    // a bag larger than a block of the batch path's rows
                    bag_list.insert(3, random_matrix(&mut rng, 140, d, 1.0));
                    let dense = Bags::from_dense_bags(&bag_list)?;
                    let p = Predictor::new(&model)?;
                    let batch = p.decision_function(&dense)?;
                    let rows = milsvm::bags::Rows::from(dense.instances());
                    let inst = p.bag_instance_scores(rows, dense.bag_ptr())?;
                    let mut ws = Workspace::default();
                    let n_out = model.n_outputs();
                    for (i, bag) in bag_list.iter().enumerate() {
                        let what = format!(
                            "{kernel:?} {pooling:?} {n_classes} classes {n_xv} XVs bag {i}"
                        );
                        let flat: Vec<f64> = bag.iter().copied().collect();
                        let mut one = vec![0.0; n_out];
                        p.score_bag(BagView::dense(&flat, d)?, &mut ws, &mut one)?;
                        assert_eq!(one, batch.row(i).to_vec(), "{what}");
                        // single precision: the values of its f64 twin (no scaler: the scaler
                        // standardises f32 bags in f32)
                        if model.scaler.is_none() {
                            let f32s: Vec<f32> = flat.iter().map(|&v| v as f32).collect();
                            let wide: Vec<f64> = f32s.iter().map(|&v| f64::from(v)).collect();
                            let mut a = vec![0.0; n_out];
                            let mut b = vec![0.0; n_out];
                            p.score_bag(BagView::dense32(&f32s, d)?, &mut ws, &mut a)?;
                            p.score_bag(BagView::dense(&wide, d)?, &mut ws, &mut b)?;
                            assert_eq!(a, b, "{what}: float32");
                        }
                        let (lo, hi) = (dense.bag_ptr()[i], dense.bag_ptr()[i + 1]);
                        let mut shares = vec![0.0; (hi - lo) * n_out];
                        p.bag_instance_scores_into(
                            BagView::dense(&flat, d)?,
                            &mut ws,
                            &mut shares,
                        )?;
                        let want: Vec<f64> = inst
                            .slice(ndarray::s![lo..hi, ..])
                            .iter()
                            .copied()
                            .collect();
                        assert_eq!(shares, want, "{what}: instance scores");
                    }
                }
            }
        }
    }
    Ok(())
}
