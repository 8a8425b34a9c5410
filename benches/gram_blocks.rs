//! The row blocks and column chunks of a stored instance kernel matrix (`src/smo/stored.rs`,
//! `block_rows`, `CHUNK`).
//!
//! `full_kernel` computes the upper triangle of `X X^T` one row block at a time: block `I`
//! multiplies `X_I` by the rows of `X` from its own first row on, in chunks of 64 rows. Smaller
//! blocks skip more of the lower triangle, but faer's product runs slower on thinner shapes.
//! This prints, for the shapes of the benchmark sets (STK's statistic vectors of Elephant and
//! MUSK1, the instances of MUSK1 and Elephant), the time of the whole upper triangle with each
//! block height on one thread, and the rate as if the whole `n x n` product had been computed
//! (`2 n^2 d / t`); then, for the heights in use, the time with and without the chunks; then
//! the page faults and time of a thread's first product on more points than its earlier one
//! (a process's final fit after its inner fits), with and without the chunks.
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

/// As [`upper_triangle`], each block multiplied by the rows from its own first one in chunks
/// of `chunk` rows (a last chunk of fewer than 8 joins the one before), as `full_kernel` does.
fn upper_triangle_chunked(
    x: &[f64],
    n: usize,
    d: usize,
    block: usize,
    chunk: usize,
    dst: &mut [f64],
) {
    let mut lo = 0;
    while lo < n {
        let hi = (lo + block).min(n);
        let a = MatRef::from_row_major_slice(&x[lo * d..hi * d], hi - lo, d);
        let mut c0 = lo;
        while c0 < n {
            let c1 = if n - (c0 + chunk).min(n) < 8 {
                n
            } else {
                c0 + chunk
            };
            let b = MatRef::from_row_major_slice(&x[c0 * d..c1 * d], c1 - c0, d);
            let c = MatMut::from_row_major_slice_mut(&mut dst[lo * n..hi * n], hi - lo, n);
            let c = c.submatrix_mut(0, c0, hi - lo, c1 - c0);
            faer::linalg::matmul::matmul(c, Accum::Replace, a, b.transpose(), 1.0, Par::Seq);
            c0 = c1;
        }
        lo = hi;
    }
}

/// Deterministic test values, `n x d`.
fn values(n: usize, d: usize) -> Vec<f64> {
    (0..n * d)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect()
}

/// Minor page faults of the calling thread so far.
fn thread_faults() -> i64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `getrusage` only writes the struct it is given.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut u);
            u.ru_minflt
        }
    }
    #[cfg(not(target_os = "linux"))]
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--first-products") {
        first_products(args.get(i + 1).and_then(|c| c.parse().ok()).unwrap_or(0));
        return;
    }
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
    // The heights in use (64 rows below 1,024 points, else 128), with and without the chunks;
    // the values are the same bits.
    for (n, d) in shapes {
        let x = values(n, d);
        let block = if n < 1024 { 64 } else { 128 };
        let reps = (1.0e9 / (2.0 * (n * n * d) as f64)).ceil().max(3.0) as usize;
        let (mut plain, mut chunked) = (vec![0.0; n * n], vec![0.0; n * n]);
        let (mut t_plain, mut t_chunked) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..7 {
            let t = Instant::now();
            for _ in 0..reps {
                upper_triangle(&x, n, d, block, &mut plain);
            }
            t_plain = t_plain.min(t.elapsed().as_secs_f64() / reps as f64);
            let t = Instant::now();
            for _ in 0..reps {
                upper_triangle_chunked(&x, n, d, block, 64, &mut chunked);
            }
            t_chunked = t_chunked.min(t.elapsed().as_secs_f64() / reps as f64);
        }
        let same = (0..n)
            .all(|i| (i..n).all(|j| plain[i * n + j].to_bits() == chunked[i * n + j].to_bits()));
        println!(
            "n {n:5} d {d:3} block {block:3}: {:9.1} us whole rows, {:9.1} us in chunks of 64 ({})",
            t_plain * 1e6,
            t_chunked * 1e6,
            if same { "same bits" } else { "DIFFERENT BITS" }
        );
    }
    // A process's product on the inner folds' points, then on the final fit's: faer's packing
    // buffer (one per thread) maps new pages when its rows outgrow the earlier ones. Each case
    // in a process of its own (this program again), so that no page is left from another.
    let exe = std::env::current_exe().ok();
    for chunk in ["0", "64"] {
        let out = exe.as_ref().and_then(|exe| {
            std::process::Command::new(exe)
                .args(["--first-products", chunk])
                .output()
                .ok()
        });
        if let Some(out) = out {
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
    }
}

/// The first products of one process, in chunks of `chunk` rows (0: whole rows): the inner
/// folds' points, then the final fit's, for the three shapes of the benchmark sets.
fn first_products(chunk: usize) {
    for (small, big, d) in [(55, 83, 332), (120, 162, 460), (830, 1250, 230)] {
        let mut line = Vec::new();
        for n in [small, big] {
            let x = values(n, d);
            let mut dst = vec![1.0; n * n];
            let block = if n < 1024 { 64 } else { 128 };
            let (f0, t) = (thread_faults(), Instant::now());
            if chunk == 0 {
                upper_triangle(&x, n, d, block, &mut dst);
            } else {
                upper_triangle_chunked(&x, n, d, block, chunk, &mut dst);
            }
            let us = t.elapsed().as_secs_f64() * 1e6;
            line.push(format!(
                "n {n:5}: {:4} faults {us:8.1} us",
                thread_faults() - f0
            ));
        }
        let how = if chunk == 0 {
            "whole rows".to_string()
        } else {
            format!("chunks of {chunk}")
        };
        println!("first products, d {d}, {how:12}: {}", line.join(", then "));
    }
}
