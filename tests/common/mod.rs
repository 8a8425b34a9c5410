//! Helpers shared by the Rust integration tests: each `tests/*.rs` file is a crate of its own and
//! takes them with `mod common;`. Seeded generators, the toy bags, and the CSR form of a dense
//! matrix.

// Every test crate uses a part of these helpers only.
#![allow(dead_code)]

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
