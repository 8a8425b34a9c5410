//! How fast one core reads instance rows in the two patterns of the linear solver's passes
//! (`solver::rows::adjacent`): each row alone, one after another, or four rows side by side
//! (lane `k` of each at once), over adjacent rows and over a scattered subset of them, beside a
//! plain read of the same bytes measured in the same run. The loops are the passes' own
//! arithmetic (float32 rows read into float64, a dot with a float64 vector, eight partial sums),
//! written here so that the bench measures the memory, not the crate's choice between them.
//!
//!     cargo bench --bench row_reads [-- --instances 400000 --features 512 --scattered-percent 18]
//!
//! Prints, per pattern, the best of 5 runs in GB/s (10^9 bytes per second) of the rows read, on
//! one thread. The rows (800 MB by default) are larger than the caches.

// the loops are written for x86-64; elsewhere `main` only says so
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused_imports))]

use std::time::Instant;

mod common;
use common::arg;

/// The best seconds of 5 calls of `f`, after one warm-up call.
fn best_seconds(mut f: impl FnMut() -> f64) -> f64 {
    let mut sink = f();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        sink += f();
        best = best.min(start.elapsed().as_secs_f64());
    }
    std::hint::black_box(sink);
    best
}

#[cfg(target_arch = "x86_64")]
mod loops {
    use std::arch::x86_64::*;

    /// `row . v`, eight partial sums in two registers.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot(row: &[f32], v: &[f64]) -> f64 {
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        let mut i = 0;
        while i + 8 <= row.len() {
            let r = row.as_ptr().add(i);
            let (a0, a1) = (
                _mm256_cvtps_pd(_mm_loadu_ps(r)),
                _mm256_cvtps_pd(_mm_loadu_ps(r.add(4))),
            );
            lo = _mm256_add_pd(lo, _mm256_mul_pd(a0, _mm256_loadu_pd(v.as_ptr().add(i))));
            hi = _mm256_add_pd(
                hi,
                _mm256_mul_pd(a1, _mm256_loadu_pd(v.as_ptr().add(i + 4))),
            );
            i += 8;
        }
        let mut acc = [0.0; 4];
        _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo, hi));
        (acc[0] + acc[1]) + (acc[2] + acc[3])
    }

    /// `[r . v]` for four rows side by side: lane `k` of each row at once.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot4(rows: [&[f32]; 4], v: &[f64]) -> f64 {
        let mut lo = [_mm256_setzero_pd(); 4];
        let mut hi = [_mm256_setzero_pd(); 4];
        let mut i = 0;
        while i + 8 <= v.len() {
            let (v0, v1) = (
                _mm256_loadu_pd(v.as_ptr().add(i)),
                _mm256_loadu_pd(v.as_ptr().add(i + 4)),
            );
            for r in 0..4 {
                let p = rows[r].as_ptr().add(i);
                lo[r] = _mm256_add_pd(lo[r], _mm256_mul_pd(v0, _mm256_cvtps_pd(_mm_loadu_ps(p))));
                hi[r] = _mm256_add_pd(
                    hi[r],
                    _mm256_mul_pd(v1, _mm256_cvtps_pd(_mm_loadu_ps(p.add(4)))),
                );
            }
            i += 8;
        }
        let mut s = 0.0;
        for r in 0..4 {
            let mut acc = [0.0; 4];
            _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo[r], hi[r]));
            s += (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
        s
    }

    /// The sum of the values, eight independent lanes: the plain read.
    #[target_feature(enable = "avx2")]
    pub unsafe fn sum(x: &[f32]) -> f64 {
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        let mut i = 0;
        while i + 8 <= x.len() {
            let p = x.as_ptr().add(i);
            lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm_loadu_ps(p)));
            hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm_loadu_ps(p.add(4))));
            i += 8;
        }
        let mut acc = [0.0; 4];
        _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo, hi));
        (acc[0] + acc[1]) + (acc[2] + acc[3])
    }
}

/// Asks Linux for huge pages under the vector's spare capacity before it is written, as NumPy
/// does for its large arrays (the rows a fit reads from Python), so that the reads do not also
/// measure misses of the address translation.
fn huge_pages(x: &mut Vec<f32>) {
    #[cfg(target_os = "linux")]
    {
        let spare = x.spare_capacity_mut();
        let (start, len) = (spare.as_mut_ptr() as usize, std::mem::size_of_val(spare));
        let page = 4096;
        let aligned = start.div_ceil(page) * page;
        if len > aligned - start {
            // SAFETY: the range lies inside the vector's own allocation, not yet written;
            // `madvise` only advises, and a refusal is harmless.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    len - (aligned - start),
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = x;
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use loops::{dot, dot4, sum};
    if !std::arch::is_x86_feature_detected!("avx2") {
        println!("# row_reads: the loops need AVX2, which this CPU lacks");
        return;
    }
    let n = arg("--instances", 400_000);
    let d = arg("--features", 512) / 8 * 8;
    let percent = arg("--scattered-percent", 18).clamp(1, 100);
    // deterministic values and a deterministic scattered subset (a linear congruential draw)
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut draw = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 11
    };
    let mut x: Vec<f32> = Vec::with_capacity(n * d);
    huge_pages(&mut x);
    x.extend((0..n * d).map(|_| (draw() % 1024) as f32 / 512.0 - 1.0));
    let v: Vec<f64> = (0..d).map(|i| ((i % 7) as f64 - 3.0) / 3.0).collect();
    let adjacent: Vec<usize> = (0..n).collect();
    let scattered: Vec<usize> = (0..n).filter(|_| draw() % 100 < percent as u64).collect();
    let row = |j: usize| &x[j * d..(j + 1) * d];
    let gbs = |rows: usize, t: f64| (rows * d * 4) as f64 / 1e9 / t;
    println!(
        "# {n} x {d} float32 rows ({:.2} GB); {} scattered rows ({percent} %); 1 thread, best of 5",
        (n * d * 4) as f64 / 1e9,
        scattered.len()
    );
    // SAFETY (every `unsafe` below): AVX2 was detected above; the rows hold `d` values each.
    let plain = best_seconds(|| unsafe { sum(&x) });
    println!(
        "plain read                        {:>6.1} GB/s",
        gbs(n, plain)
    );
    for (name, rows) in [("adjacent", &adjacent), ("scattered", &scattered)] {
        let alone = best_seconds(|| rows.iter().map(|&j| unsafe { dot(row(j), &v) }).sum());
        let four = best_seconds(|| {
            rows.chunks_exact(4)
                .map(|q| unsafe { dot4([row(q[0]), row(q[1]), row(q[2]), row(q[3])], &v) })
                .sum()
        });
        println!(
            "{name:<9} rows, one after another {:>6.1} GB/s",
            gbs(rows.len(), alone)
        );
        println!(
            "{name:<9} rows, four side by side  {:>6.1} GB/s",
            gbs(rows.len() / 4 * 4, four)
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("# row_reads: the loops are written for x86-64");
}
