//! SIL and STK from Rust: the min/max statistics (dense and CSR, against a naive loop), STK's
//! model scoring raw bags through its file and the compiled predictor, refused instance scores,
//! SIL's max pooling, thread independence.

mod common;

use common::toy;
use milsvm::bags::Rows;
use milsvm::baselines::{bag_statistics, SilParams, StkParams};
use milsvm::model::{
    min_max_into, min_max_rows, BagFeatures, BagView, Model, Predictor, Workspace,
};
use milsvm::{Bags, Csr, Error, Gamma, Instances, Pooling};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bags with about half their values zero, dense, and the same as CSR with some entries split
/// into duplicates (which add up).
fn sparse_bags(seed: u64) -> (Bags, Bags) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (d, m) = (5, 9);
    let mut ptr = vec![0];
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for _ in 0..m {
        let n = rng.random_range(1..5);
        for _ in 0..n {
            rows.push(
                (0..d)
                    .map(|_| {
                        if rng.random::<f64>() < 0.5 {
                            0.0
                        } else {
                            rng.random::<f64>() * 4.0 - 2.0
                        }
                    })
                    .collect(),
            );
        }
        ptr.push(rows.len());
    }
    let dense = Array2::from_shape_fn((rows.len(), d), |(i, j)| rows[i][j]);
    let (mut indptr, mut indices, mut data) = (vec![0], Vec::new(), Vec::new());
    for r in &rows {
        for (j, &v) in r.iter().enumerate() {
            if v != 0.0 {
                // a stored value split in two entries of the same column
                indices.extend([j, j]);
                data.extend([v * 0.25, v * 0.75]);
            }
        }
        indptr.push(indices.len());
    }
    let csr = Csr::new(rows.len(), d, indptr, indices, data).unwrap();
    (
        Bags::new(Instances::from(dense), ptr.clone()).unwrap(),
        Bags::new(Instances::Sparse(csr), ptr).unwrap(),
    )
}

#[test]
fn min_max_statistics_equal_a_naive_loop_dense_and_csr() -> Result<(), Error> {
    for seed in 0..5 {
        let (dense, sparse) = sparse_bags(seed);
        let x = dense.instances().to_dense();
        let d = x.ncols();
        let a = bag_statistics(&dense)?;
        let b = bag_statistics(&sparse)?;
        // the validated bags' single pass equals the checked one of raw rows
        assert_eq!(
            a,
            min_max_rows(Rows::from(dense.instances()), dense.bag_ptr())?
        );
        assert_eq!(
            b,
            min_max_rows(Rows::from(sparse.instances()), sparse.bag_ptr())?
        );
        for i in 0..dense.n_bags() {
            for j in 0..d {
                let col: Vec<f64> = dense.bag_range(i).map(|p| x[[p, j]]).collect();
                let lo = col.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = col.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(a[[i, j]], lo, "bag {i} feature {j} min");
                assert_eq!(a[[i, d + j]], hi, "bag {i} feature {j} max");
                // 0.25 v + 0.75 v may round: to the last bit
                assert!((b[[i, j]] - lo).abs() <= 1e-15 * lo.abs().max(1.0));
                assert!((b[[i, d + j]] - hi).abs() <= 1e-15 * hi.abs().max(1.0));
            }
        }
    }
    let mut out = [0.0; 4];
    let bad = min_max_into(BagView::dense(&[1.0, f64::NAN, 0.0, 2.0], 2)?, &mut out);
    assert!(matches!(bad, Err(Error::InvalidData(m)) if m.contains("non-finite")));
    Ok(())
}

#[test]
fn min_max_of_every_bag_size_equals_a_fold_and_refuses_each_non_finite_position(
) -> Result<(), Error> {
    // 1 to 11 instances: groups of four rows and every remainder, f64 and f32
    let mut state = 12345u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
    };
    for d in [1, 3, 8] {
        for n in 1..=11 {
            let x: Vec<f64> = (0..n * d).map(|_| next()).collect();
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let (mut a, mut b) = (vec![0.0; 2 * d], vec![0.0; 2 * d]);
            min_max_into(BagView::dense(&x, d)?, &mut a)?;
            min_max_into(BagView::dense32(&x32, d)?, &mut b)?;
            for j in 0..d {
                let col = || (0..n).map(|p| x[p * d + j]);
                let col32 = || (0..n).map(|p| f64::from(x32[p * d + j]));
                assert_eq!(a[j], col().fold(f64::INFINITY, f64::min), "n {n} d {d} min");
                assert_eq!(
                    a[d + j],
                    col().fold(f64::NEG_INFINITY, f64::max),
                    "n {n} d {d}"
                );
                assert_eq!(
                    b[j],
                    col32().fold(f64::INFINITY, f64::min),
                    "f32 n {n} d {d}"
                );
                assert_eq!(b[d + j], col32().fold(f64::NEG_INFINITY, f64::max));
            }
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                for k in 0..n * d {
                    let mut y = x.clone();
                    y[k] = bad;
                    let got = min_max_into(BagView::dense(&y, d)?, &mut a);
                    assert!(
                        matches!(got, Err(Error::InvalidData(_))),
                        "{bad} at {k} of n {n} d {d} was not refused"
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn stk_scores_raw_bags_through_its_file_and_the_predictor() -> Result<(), Error> {
    let (bags, labels) = toy(3, 24);
    let fit = StkParams::new()
        .c(10.0)
        .gamma(Gamma::Value(0.3))
        .fit(&bags, &labels)?;
    let model = &fit.model;
    assert_eq!(model.bag_features, BagFeatures::MinMax);
    assert_eq!(model.pooling, Pooling::Mean);
    assert_eq!(model.n_features(), bags.n_features());
    assert_eq!(model.xv.n_features(), 2 * bags.n_features());
    let scores = model.decision_function(&bags)?;
    // by hand: the kernel expansion over the statistic vectors
    let stats = bag_statistics(&bags)?;
    let z = model.xv.to_dense();
    for i in 0..bags.n_bags() {
        let mut f = model.intercept[0];
        for k in 0..z.nrows() {
            let d2: f64 = (0..z.ncols())
                .map(|j| (stats[[i, j]] - z[[k, j]]).powi(2))
                .sum();
            f += model.coef[[0, k]] * (-0.3 * d2).exp();
        }
        assert!((scores[[i, 0]] - f).abs() < 1e-12, "bag {i}");
    }
    let accuracy = (0..bags.n_bags())
        .filter(|&i| (scores[[i, 0]] > 0.0) == (labels[i] == 1))
        .count();
    assert!(accuracy >= 20, "{accuracy} of 24");
    // the file, and the one-bag path
    let back = Model::from_json(&model.to_json()?)?;
    assert_eq!(&back, model);
    let predictor = Predictor::new(&back)?;
    let x = bags.instances().to_dense();
    let mut ws = Workspace::default();
    for i in 0..bags.n_bags() {
        let r = bags.bag_range(i);
        let rows = x.slice(ndarray::s![r.start..r.end, ..]).to_owned();
        let mut out = [0.0];
        predictor.score_bag(
            BagView::dense(rows.as_slice().unwrap(), x.ncols())?,
            &mut ws,
            &mut out,
        )?;
        assert_eq!(out[0], scores[[i, 0]]);
    }
    // no instance scores
    let refused = predictor.instance_decision_function(bags.instances());
    assert!(matches!(refused, Err(Error::InvalidParameter(m)) if m.contains("not defined")));
    // thread independence
    let one = StkParams::new().n_jobs(Some(1)).fit(&bags, &labels)?;
    let two = StkParams::new().n_jobs(Some(2)).fit(&bags, &labels)?;
    assert_eq!(one, two);
    Ok(())
}

#[test]
fn stk_sparse_bags_fit_as_their_dense_twins() -> Result<(), Error> {
    let (dense, sparse) = sparse_bags(7);
    let labels: Vec<usize> = (0..dense.n_bags()).map(|i| i % 2).collect();
    let p = StkParams::new()
        .c(5.0)
        .gamma(Gamma::Value(0.2))
        .inner_tol(1e-9);
    let a = p
        .clone()
        .fit(&dense, &labels)?
        .model
        .decision_function(&dense)?;
    let b = p.fit(&sparse, &labels)?.model.decision_function(&sparse)?;
    for (u, v) in a.iter().zip(&b) {
        assert!((u - v).abs() < 1e-9);
    }
    Ok(())
}

#[test]
fn sil_bag_scores_are_the_max_of_its_instance_scores() -> Result<(), Error> {
    let (bags, labels) = toy(4, 20);
    let fit = SilParams::new().c(10.0).fit(&bags, &labels)?;
    assert_eq!(fit.model.pooling, Pooling::Max);
    assert_eq!(fit.model.bag_features, BagFeatures::Instances);
    // one dual variable per instance, each at most C
    assert_eq!(fit.alpha[0].len(), bags.n_instances());
    assert!(fit.alpha[0]
        .iter()
        .all(|&a| (0.0..=10.0 + 1e-12).contains(&a)));
    let scores = fit.model.decision_function(&bags)?;
    let inst = fit.model.instance_decision_function(bags.instances())?;
    for i in 0..bags.n_bags() {
        let max = bags
            .bag_range(i)
            .map(|p| inst[[p, 0]])
            .fold(f64::NEG_INFINITY, f64::max);
        assert!((scores[[i, 0]] - max).abs() < 1e-12);
    }
    let one = SilParams::new().n_jobs(Some(1)).fit(&bags, &labels)?;
    let two = SilParams::new().n_jobs(Some(2)).fit(&bags, &labels)?;
    assert_eq!(one, two);
    Ok(())
}

/// Validated CSR bags may hold duplicate entries whose sum overflows: the statistics of such
/// a bag are refused, as for any non-finite value, though `Bags::new` accepted the entries.
#[test]
fn stk_statistics_refuse_duplicates_that_add_up_to_an_infinity() -> Result<(), Error> {
    let csr = Csr::new(2, 2, vec![0, 2, 3], vec![1, 1, 0], vec![1e308, 1e308, 1.0])?;
    let bags = Bags::new(Instances::Sparse(csr), vec![0, 1, 2])?;
    let got = bag_statistics(&bags);
    assert!(
        matches!(&got, Err(Error::InvalidData(m)) if m.contains("bag 0 has a non-finite value")),
        "{got:?}"
    );
    Ok(())
}
