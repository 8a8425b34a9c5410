//! Helpers shared by the Rust integration tests: each `tests/*.rs` file is a crate of its own and
//! takes them with `mod common;`. Seeded generators, the toy bags, the CSR form of a dense
//! matrix, and the reference LP optimum by Clarabel.

// Every test crate uses a part of these helpers only.
#![allow(dead_code)]

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use milsvm::bags::Csr;
use milsvm::Bags;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The result of a test that uses `?`.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The seeded ChaCha8 generator of the tests.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Positive bags hold one instance near (3, 3); all other instances are noise near (-1, -1).
pub fn toy(seed: u64, n_bags: usize) -> (Bags, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut bags = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n_bags {
        let n = rng.random_range(1..6);
        let mut x = Array2::from_shape_fn((n, 2), |_| -1.0 + 0.5 * rng.random::<f64>());
        if i % 2 == 1 {
            x[[0, 0]] = 3.0 + 0.3 * rng.random::<f64>();
            x[[0, 1]] = 3.0;
        }
        bags.push(x);
        labels.push(i % 2);
    }
    (Bags::from_dense_bags(&bags).expect("valid bags"), labels)
}

/// The CSR form of a dense matrix (its nonzero entries); `reversed` stores each row's columns in
/// decreasing order (unsorted indices are allowed by `Csr::new`).
pub fn to_csr(x: &Array2<f64>, reversed: bool) -> Csr {
    let mut indptr = vec![0];
    let mut indices = Vec::new();
    let mut data = Vec::new();
    for row in x.rows() {
        let mut nz: Vec<(usize, f64)> = row
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .map(|(j, &v)| (j, v))
            .collect();
        if reversed {
            nz.reverse();
        }
        for (j, v) in nz {
            indices.push(j);
            data.push(v);
        }
        indptr.push(data.len());
    }
    Csr::new(x.nrows(), x.ncols(), indptr, indices, data).expect("a valid CSR matrix")
}

/// The optimal value of the LP `min cost . x` subject to `rows[k] . x = rhs[k]` for the first
/// `n_eq` rows and `rows[k] . x <= rhs[k]` for the others (dense rows), by the interior-point
/// solver Clarabel to 1e-11: the reference the tests hold the crate's LP solvers to.
pub fn lp_optimum_by_clarabel(cost: &[f64], rows: &[Vec<f64>], rhs: &[f64], n_eq: usize) -> f64 {
    let n = cost.len();
    let a = CscMatrix::from(rows.iter().map(|r| r.iter()));
    let mut cones = Vec::new();
    if n_eq > 0 {
        cones.push(SupportedConeT::ZeroConeT(n_eq));
    }
    cones.push(SupportedConeT::NonnegativeConeT(rows.len() - n_eq));
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-11)
        .tol_gap_rel(1e-11)
        .tol_feas(1e-11)
        .build()
        .expect("settings");
    let p = CscMatrix::zeros((n, n));
    let mut solver = DefaultSolver::new(&p, cost, &a, rhs, &cones, settings).expect("an LP");
    solver.solve();
    let status = solver.solution.status;
    assert!(
        matches!(status, SolverStatus::Solved | SolverStatus::AlmostSolved),
        "clarabel status {status:?}"
    );
    solver.solution.obj_val
}
