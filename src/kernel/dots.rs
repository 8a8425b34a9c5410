//! Dense dot products with a fixed summation order: eight partial sums, the same operations
//! with or without AVX2 (the AVX2 code only puts the eight sums in two registers), so that a
//! value never depends on the CPU's SIMD level, the thread count or how rows are grouped.
//! Shared by the predictor (instance against basis rows) and the SMO's kernel rows (one
//! instance against all).

/// The SIMD level found at run time; copy it into long-lived objects to avoid the check per
/// call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Simd {
    avx2: bool,
}

impl Simd {
    /// Checks the CPU once.
    pub(crate) fn detect() -> Self {
        Self { avx2: has_avx2() }
    }

    /// No SIMD beyond the target's baseline (tests compare it with [`Simd::detect`]).
    #[cfg(test)]
    pub(crate) fn portable() -> Self {
        Self { avx2: false }
    }

    /// Whether AVX2 code may run.
    pub(crate) fn avx2(&self) -> bool {
        self.avx2
    }

    /// `sum_i a_i b_i` over the common length.
    #[inline]
    pub(crate) fn dot(&self, a: &[f64], b: &[f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2 (`has_avx2`).
                return unsafe { dot_avx2(a, b) };
            }
        }
        dot_portable(a, b)
    }

    /// `out[k] = x . z_k` for the rows `z_k` of the row-major `z` (`d` columns, `out.len()`
    /// rows), and `x . x` returned; with AVX2 four rows per pass (each dot still summed exactly
    /// as [`Simd::dot`]).
    #[inline]
    pub(crate) fn dots(&self, x: &[f64], z: &[f64], d: usize, out: &mut [f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2 (`has_avx2`).
                return unsafe { dots_avx2(x, z, d, out) };
            }
        }
        for (o, zk) in out.iter_mut().zip(z.chunks_exact(d.max(1))) {
            *o = dot_portable(x, zk);
        }
        dot_portable(x, x)
    }

    /// `outs[q][k] = xs[q] . z_k` for several vectors `xs` (each of length `d`) against the rows
    /// `z_k` of the row-major `z` (`d` columns, `outs[q].len()` rows): each row of `z` is read
    /// once for all of `xs` (with AVX2, four of them per pass). Every value equals
    /// [`Simd::dot`] of the two vectors, bitwise.
    pub(crate) fn dots_multi(&self, xs: &[&[f64]], z: &[f64], d: usize, outs: &mut [&mut [f64]]) {
        let n = outs.iter().map(|o| o.len()).min().unwrap_or(0);
        let d = d.max(1);
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 && !xs.is_empty() && xs.iter().all(|x| x.len() == d) {
                for (k, zk) in z.chunks_exact(d).take(n).enumerate() {
                    for (q0, group) in xs.chunks(4).enumerate() {
                        let last = group.len() - 1;
                        let four = [
                            group[0],
                            group[1.min(last)],
                            group[2.min(last)],
                            group[3.min(last)],
                        ];
                        // SAFETY: the CPU supports AVX2 (`avx2` is set only then); every vector
                        // of `four` and `zk` holds `d` values (checked above).
                        let r = unsafe { block4_avx2(zk, four) };
                        for (t, &v) in r.iter().enumerate().take(group.len()) {
                            outs[4 * q0 + t][k] = v;
                        }
                    }
                }
                return;
            }
        }
        for (k, zk) in z.chunks_exact(d).take(n).enumerate() {
            for (x, o) in xs.iter().zip(outs.iter_mut()) {
                o[k] = dot_portable(x, zk);
            }
        }
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[inline(always)]
fn dot_portable(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// [`dot_portable`] with 256-bit vectors: lanes 0-3 and 4-7 of the eight partial sums in two
/// registers, the same multiplications, additions and final reduction order (identical results).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(a: &[f64], b: &[f64]) -> f64 {
    use std::arch::x86_64::{
        _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd,
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (x, y) in ca.zip(cb) {
        // SAFETY: each chunk holds 8 values; unaligned loads of 4 at offsets 0 and 4.
        let (x0, x1) = (
            _mm256_loadu_pd(x.as_ptr()),
            _mm256_loadu_pd(x.as_ptr().add(4)),
        );
        let (y0, y1) = (
            _mm256_loadu_pd(y.as_ptr()),
            _mm256_loadu_pd(y.as_ptr().add(4)),
        );
        lo = _mm256_add_pd(lo, _mm256_mul_pd(x0, y0));
        hi = _mm256_add_pd(hi, _mm256_mul_pd(x1, y1));
    }
    let mut acc = [0.0f64; 4];
    // SAFETY: `acc` holds 4 values.
    _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo, hi));
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// [`Predictor::dots`] with AVX2: the basis rows and `x` itself (for its norm) in groups of
/// four per pass over `x` (the last group padded by repeating a row), so that eight independent
/// partial-sum chains hide the addition latency. `z` holds `out.len()` rows of `d = x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dots_avx2(x: &[f64], z: &[f64], d: usize, out: &mut [f64]) -> f64 {
    let n = out.len().min(z.len() / d.max(1));
    let x = &x[..d.min(x.len())];
    let total = n + 1;
    let row = |k: usize| -> &[f64] {
        if k < n {
            &z[k * d..k * d + x.len()]
        } else {
            x
        }
    };
    let mut norm = 0.0;
    for k in (0..total).step_by(4) {
        let idx = [
            k,
            (k + 1).min(total - 1),
            (k + 2).min(total - 1),
            (k + 3).min(total - 1),
        ];
        let r = block4_avx2(x, [row(idx[0]), row(idx[1]), row(idx[2]), row(idx[3])]);
        for (j, &t) in idx.iter().enumerate() {
            if t == k + j {
                if t < n {
                    out[t] = r[j];
                } else {
                    norm = r[j];
                }
            }
        }
    }
    norm
}

/// Four dots `x . r_j` in one pass over `x`, each summed as [`dot_portable`] (rows as long as
/// `x`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block4_avx2(x: &[f64], rows: [&[f64]; 4]) -> [f64; 4] {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd,
    };
    let full = x.len() / 8 * 8;
    let mut lo: [__m256d; 4] = [_mm256_setzero_pd(); 4];
    let mut hi: [__m256d; 4] = [_mm256_setzero_pd(); 4];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 8 <= full <= x.len() <= every row's length.
        let x0 = _mm256_loadu_pd(x.as_ptr().add(i));
        let x1 = _mm256_loadu_pd(x.as_ptr().add(i + 4));
        for r in 0..4 {
            let p = rows[r].as_ptr().add(i);
            lo[r] = _mm256_add_pd(lo[r], _mm256_mul_pd(x0, _mm256_loadu_pd(p)));
            hi[r] = _mm256_add_pd(hi[r], _mm256_mul_pd(x1, _mm256_loadu_pd(p.add(4))));
        }
        i += 8;
    }
    let mut out = [0.0; 4];
    for r in 0..4 {
        let mut acc = [0.0f64; 4];
        _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo[r], hi[r]));
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (a, b) in x[full..].iter().zip(&rows[r][full..]) {
            s += a * b;
        }
        out[r] = s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 and portable paths give bitwise equal sums, whatever the length and grouping.
    #[test]
    fn simd_levels_agree_bitwise() {
        let portable = Simd::portable();
        let best = Simd::detect();
        for d in [1, 3, 7, 8, 9, 20, 166] {
            let n = 11;
            let z: Vec<f64> = (0..n * d)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
                .collect();
            let x: Vec<f64> = (0..d)
                .map(|i| ((i * 13 % 29) as f64 - 14.0) / 3.0)
                .collect();
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            let na = portable.dots(&x, &z, d, &mut a);
            let nb = best.dots(&x, &z, d, &mut b);
            assert_eq!(na.to_bits(), nb.to_bits());
            assert_eq!(na.to_bits(), best.dot(&x, &x).to_bits());
            for k in 0..n {
                assert_eq!(a[k].to_bits(), b[k].to_bits(), "d = {d}, row {k}");
                let zk = &z[k * d..(k + 1) * d];
                assert_eq!(a[k].to_bits(), best.dot(&x, zk).to_bits());
                // Several vectors at once give the same values.
                let xs: Vec<Vec<f64>> = (0..6)
                    .map(|q| (0..d).map(|i| x[(i + q) % d] - q as f64).collect())
                    .collect();
                let refs: Vec<&[f64]> = xs.iter().map(|v| v.as_slice()).collect();
                for simd in [portable, best] {
                    let mut outs = vec![vec![0.0; n]; xs.len()];
                    let mut views: Vec<&mut [f64]> =
                        outs.iter_mut().map(|o| o.as_mut_slice()).collect();
                    simd.dots_multi(&refs, &z, d, &mut views);
                    for (q, o) in outs.iter().enumerate() {
                        for j in 0..n {
                            let want = portable.dot(&xs[q], &z[j * d..(j + 1) * d]);
                            assert_eq!(o[j].to_bits(), want.to_bits(), "d = {d}, q = {q}, row {j}");
                        }
                    }
                }
                // Grouping: the rows one at a time give the same values.
                let mut one = [0.0];
                best.dots(&x, zk, d, &mut one);
                assert_eq!(one[0].to_bits(), a[k].to_bits());
            }
        }
    }
}
