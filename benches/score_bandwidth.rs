//! Scoring one large bag against the machine's memory bandwidth (issue 18): a 10,000-instance
//! x 1024-feature bag, `float32` and `float64`, scored by a 10-expansion-vector Gaussian model
//! with `Predictor::score_bag` (one thread, a warm workspace), beside two plain passes over the
//! same bytes measured in the same run: a copy (`copy_from_slice`; read + write) and a read
//! (a sum of the values, eight independent lanes). The bag is larger than the caches, so each
//! pass reads it from memory.
//!
//!     cargo bench --bench score_bandwidth [-- --instances 10000 --features 1024 --xv 10]
//!
//! Prints, per pass, the median time of 15 runs (after 3 warm-up runs) and the bandwidth in GB/s
//! (10^9 bytes per second) of the bag's bytes (the copy also as read + write), and the scoring's
//! fraction of the read pass.

use std::time::Instant;

use milsvm::model::{BagView, Model, Pooling, Predictor, Workspace};
use milsvm::Kernel;
use ndarray::{Array1, Array2};

mod common;
use common::arg;

/// The median seconds of `runs` calls of `f` after `warm` calls.
fn median_seconds(warm: usize, runs: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..warm {
        f();
    }
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// The sum of the values, in eight independent lanes (a read pass the compiler vectorises).
fn read_sum<T: Copy + Into<f64>>(data: &[T]) -> f64 {
    let mut acc = [0.0f64; 8];
    for c in data.chunks_exact(8) {
        for l in 0..8 {
            acc[l] += c[l].into();
        }
    }
    acc.iter().sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, d, k) = (
        arg("--instances", 10_000),
        arg("--features", 1024),
        arg("--xv", 10),
    );
    let z = Array2::from_shape_vec((k, d), values(k * d, 7))?;
    let model = Model::new(
        Kernel::Rbf {
            gamma: 1.0 / d as f64,
        },
        z,
        Array2::from_shape_vec((1, k), values(k, 9))?,
        Array1::from(vec![0.1]),
        2,
        Pooling::Max,
    );
    let predictor = Predictor::new(&model)?;
    let mut ws = Workspace::default();
    let mut out = [0.0];
    let x64 = values(n * d, 3);
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    println!(
        "one bag of {n} instances x {d} features, a {k}-vector Gaussian model, max pooling; one thread"
    );
    println!("{:<34} {:>10} {:>10}", "pass", "ms", "GB/s");
    let report = |name: &str, bytes: usize, s: f64| {
        let gbs = bytes as f64 / s / 1e9;
        println!("{name:<34} {:>10.3} {gbs:>10.2}", s * 1e3);
        gbs
    };
    for (label, bytes) in [("float32", n * d * 4), ("float64", n * d * 8)] {
        let mut copy32 = vec![0.0f32; n * d];
        let mut copy64 = vec![0.0f64; n * d];
        let copy = median_seconds(3, 15, || {
            if label == "float32" {
                copy32.copy_from_slice(&x32);
                std::hint::black_box(&copy32);
            } else {
                copy64.copy_from_slice(&x64);
                std::hint::black_box(&copy64);
            }
        });
        let read = median_seconds(3, 15, || {
            let s = if label == "float32" {
                read_sum(&x32)
            } else {
                read_sum(&x64)
            };
            std::hint::black_box(s);
        });
        let score = median_seconds(3, 15, || {
            let bag = if label == "float32" {
                BagView::dense32(&x32, d)
            } else {
                BagView::dense(&x64, d)
            };
            if let Ok(bag) = bag {
                let _ = predictor.score_bag(bag, &mut ws, &mut out);
            }
            std::hint::black_box(out[0]);
        });
        report(&format!("{label}: copy (bag bytes)"), bytes, copy);
        report(&format!("{label}: copy (read + write)"), 2 * bytes, copy);
        let r = report(&format!("{label}: read (sum)"), bytes, read);
        let s = report(&format!("{label}: score_bag"), bytes, score);
        println!(
            "{label}: score_bag reaches {:.0} % of the read pass, {:.0} % of the copy's read + write",
            100.0 * s / r,
            100.0 * s * copy / (2.0 * bytes as f64 / 1e9)
        );
    }
    Ok(())
}
