//! The row blocks of a stored instance kernel matrix (`src/smo/stored.rs`, `block_rows`).
//!
//! `full_kernel` computes the upper triangle of `X X^T` one row block at a time: block `I`
//! multiplies `X_I` by the rows of `X` from its own first row on. Smaller blocks skip more of the
//! lower triangle, but faer's product runs slower on thinner shapes. This prints, for the shapes
//! of the benchmark sets (STK's statistic vectors of Elephant and MUSK1, the instances of MUSK1
//! and Elephant), the time of the whole upper triangle with each block height on one thread,
//! and the rate as if the whole `n x n` product had been computed (`2 n^2 d / t`).
//!
//! ```text
//! cargo bench --bench gram_blocks
//! ```

use std::time::Instant;

use faer::{Accum, MatMut, MatRef, Par};

/// The upper triangle of `x x^T` (`x`: `n x d`, row-major) into `dst` (`n x n`, row-major), by
/// row blocks of `block` rows, as `full_kernel` computes it.
fn upper_triangle(x: &[f64], n: usize, d: usize, block: usize, dst: &mut [f64]) {
    let mut lo = 0;
    while lo < n {
        let hi = (lo + block).min(n);
        let a = MatRef::from_row_major_slice(&x[lo * d..hi * d], hi - lo, d);
        let b = MatRef::from_row_major_slice(&x[lo * d..n * d], n - lo, d);
        let rows = &mut dst[lo * n..hi * n];
        let c = MatMut::from_row_major_slice_mut(rows, hi - lo, n);
        let c = c.submatrix_mut(0, lo, hi - lo, n - lo);
        faer::linalg::matmul::matmul(c, Accum::Replace, a, b.transpose(), 1.0, Par::Seq);
        lo = hi;
    }
}

fn main() {
    // (points, features): STK on Elephant (180 training bags of 230 features, so 460 values)
    // and MUSK1 (83 bags, 166 features); the instances of MUSK1 and Elephant; twice Elephant.
    let shapes = [(180, 460), (83, 332), (476, 166), (1250, 230), (2500, 230)];
    for (n, d) in shapes {
        let x: Vec<f64> = (0..n * d)
            .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
            .collect();
        let mut dst = vec![0.0; n * n];
        let full_flops = 2.0 * (n * n * d) as f64;
        let reps = (2.0e9 / full_flops).ceil().max(3.0) as usize;
        for block in [n, 256, 128, 96, 64, 48, 32] {
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                for _ in 0..reps {
                    upper_triangle(&x, n, d, block, &mut dst);
                }
                best = best.min(t.elapsed().as_secs_f64() / reps as f64);
            }
            println!(
                "n {n:5} d {d:3} block {block:5}: {:9.1} us  ({:6.1} GFLOP/s full-equivalent)",
                best * 1e6,
                full_flops / best / 1e9
            );
        }
    }
}
