//! Dense dot products with a fixed summation order: eight partial sums, the same operations
//! with or without AVX2 (the AVX2 code only puts the eight sums in two registers), so that a
//! value never depends on the CPU's SIMD level, the thread count or how rows are grouped.
//! Shared by the predictor (instance against basis rows) and the SMO's kernel rows (one
//! instance against all).
//!
//! The operands may be `f64` or `f32` ([`Real`]): an `f32` value is read into an `f64` lane
//! (exactly) and every product and sum runs in `f64`, so a dot of `f32` data is bitwise the dot
//! of the same values stored as `f64` (and the product of two `f32` values is exact).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m256d;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
}

/// The element type of dense instance rows: `f64`, or `f32` (data kept in single precision,
/// arithmetic in `f64`; see the module docs). Sealed: implemented for these two only.
pub trait Real:
    sealed::Sealed + Copy + Default + PartialEq + PartialOrd + Send + Sync + std::fmt::Debug + 'static
{
    /// The NumPy name of the type (`"float64"`, `"float32"`).
    const DTYPE: &'static str;
    /// The value in `f64` (exact).
    fn to_f64(self) -> f64;
    /// An `f64` rounded to this type (exact for `f64`).
    fn from_f64(v: f64) -> Self;
    /// Whether the value is neither NaN nor infinite.
    fn is_finite(self) -> bool;
    /// Four consecutive values from `p` in the lanes of an `f64` vector.
    ///
    /// # Safety
    /// `p` must point to four readable values, and the CPU must support AVX.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load4(p: *const Self) -> __m256d;
}

impl Real for f64 {
    const DTYPE: &'static str = "float64";
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load4(p: *const f64) -> __m256d {
        // SAFETY: the caller guarantees four readable values and AVX.
        unsafe { std::arch::x86_64::_mm256_loadu_pd(p) }
    }
}

impl Real for f32 {
    const DTYPE: &'static str = "float32";
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> __m256d {
        use std::arch::x86_64::{_mm256_cvtps_pd, _mm_loadu_ps};
        // SAFETY: the caller guarantees four readable values and AVX.
        unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
    }
}

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
    pub(crate) fn dot<A: Real, B: Real>(&self, a: &[A], b: &[B]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2 (`has_avx2`).
                return unsafe { dot_avx2(a, b) };
            }
        }
        dot_portable(a, b)
    }

    /// `acc[k] += a x[k]` over the common length (a multiplication, then an addition: the
    /// bits of the plain loop, with AVX2 four lanes at a time).
    #[inline]
    pub(crate) fn add_scaled<T: Real>(&self, acc: &mut [f64], a: f64, x: &[T]) {
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2 (`has_avx2`).
                return unsafe { add_scaled_avx2(acc, a, x) };
            }
        }
        for (s, &v) in acc.iter_mut().zip(x) {
            *s += a * v.to_f64();
        }
    }

    /// `acc[k] += a_0 r_0[k]`, then `+= a_1 r_1[k]`, ... `+= a_3 r_3[k]`: four
    /// [`Simd::add_scaled`] in a row, bitwise, reading and writing `acc` once.
    #[inline]
    pub(crate) fn add_scaled4<T: Real>(&self, acc: &mut [f64], a: [f64; 4], rows: [&[T]; 4]) {
        let n = rows.iter().fold(acc.len(), |m, r| m.min(r.len()));
        let acc = &mut acc[..n];
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2 (`has_avx2`); every
                // row holds at least `n = acc.len()` values.
                return unsafe { add_scaled4_avx2(acc, a, rows) };
            }
        }
        for (k, s) in acc.iter_mut().enumerate() {
            for (ar, r) in a.iter().zip(rows) {
                *s += ar * r[k].to_f64();
            }
        }
    }

    /// `[x . r_0, x . r_1, x . r_2, x . r_3]`, each bitwise [`Simd::dot`] (over the shortest
    /// length), with AVX2 in one pass over `x`.
    #[inline]
    pub(crate) fn dot4<A: Real, B: Real>(&self, x: &[A], rows: [&[B]; 4]) -> [f64; 4] {
        let n = rows.iter().fold(x.len(), |m, r| m.min(r.len()));
        let x = &x[..n];
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is true only when the CPU supports AVX2; every row holds at
                // least `x.len()` values.
                return unsafe { block4_avx2(x, rows) };
            }
        }
        rows.map(|r| dot_portable(x, &r[..n]))
    }

    /// `out[k] = x . z_k` for the rows `z_k` of the row-major `z` (`d` columns, `out.len()`
    /// rows), and `x . x` returned; with AVX2 four rows per pass (each dot still summed exactly
    /// as [`Simd::dot`]).
    #[inline]
    pub(crate) fn dots<A: Real, B: Real>(
        &self,
        x: &[A],
        z: &[B],
        d: usize,
        out: &mut [f64],
    ) -> f64 {
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
    /// `z_k` of the row-major `z` (`d` columns) listed by `ks` (`0..n` for the first `n`); each
    /// `outs[q]` is indexed by `k`, and its values at the rows not listed are left untouched.
    /// Each listed row of `z` is read once for all of `xs` (with AVX2, four of them per pass).
    /// Every value equals [`Simd::dot`] of the two vectors, bitwise.
    pub(crate) fn dots_multi<A: Real, B: Real>(
        &self,
        xs: &[&[A]],
        z: &[B],
        d: usize,
        ks: impl Iterator<Item = usize> + Clone,
        outs: &mut [&mut [f64]],
    ) {
        let d = d.max(1);
        let row = |k: usize| &z[k * d..(k + 1) * d];
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 && xs.iter().all(|x| x.len() == d) {
                // groups of four vectors against one listed row per pass; the last one to
                // three vectors alone, each against four listed rows per pass (no padded
                // duplicates: the same sums)
                let full = xs.len() / 4 * 4;
                for k in ks.clone() {
                    let zk = row(k);
                    for (q0, group) in xs[..full].chunks_exact(4).enumerate() {
                        // SAFETY: the CPU supports AVX2 (`avx2` is set only then); every
                        // vector of `group` and `zk` holds `d` values (checked above).
                        let r =
                            unsafe { block4_avx2(zk, [group[0], group[1], group[2], group[3]]) };
                        for (t, &v) in r.iter().enumerate() {
                            outs[4 * q0 + t][k] = v;
                        }
                    }
                }
                for (x, out) in xs[full..].iter().zip(outs[full..].iter_mut()) {
                    let mut four = [0usize; 4];
                    let mut held = 0;
                    for k in ks.clone() {
                        four[held] = k;
                        held += 1;
                        if held == 4 {
                            held = 0;
                            let g = four.map(row);
                            // SAFETY: as above; every listed row holds `d` values.
                            let r = unsafe { block4_avx2(x, g) };
                            for (&k, &v) in four.iter().zip(&r) {
                                out[k] = v;
                            }
                        }
                    }
                    for &k in &four[..held] {
                        out[k] = self.dot(x, row(k));
                    }
                }
                return;
            }
        }
        for k in ks {
            let zk = row(k);
            for (x, o) in xs.iter().zip(outs.iter_mut()) {
                o[k] = dot_portable(x, zk);
            }
        }
    }
}

/// Whether every value of `v` is finite. `x * 0` is `0` for a finite `x` and NaN for an
/// infinite or NaN one; the products are summed in eight lanes, without a branch per value,
/// which the compiler vectorises (the validation of every fit and prediction runs this).
pub fn all_finite<T: Real>(v: &[T]) -> bool {
    let mut acc = [0.0f64; 8];
    let chunks = v.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x.to_f64() * 0.0;
        }
    }
    acc.iter().all(|&a| a == 0.0) && rest.iter().all(|x| x.is_finite())
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
fn dot_portable<A: Real, B: Real>(a: &[A], b: &[B]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i].to_f64() * y[i].to_f64();
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x.to_f64() * y.to_f64();
    }
    s
}

/// [`Simd::add_scaled`] with 256-bit vectors: the same multiplication and addition per value.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_scaled_avx2<T: Real>(acc: &mut [f64], a: f64, x: &[T]) {
    use std::arch::x86_64::{
        _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd, _mm256_storeu_pd,
    };
    let n = acc.len().min(x.len());
    let (acc, x) = (&mut acc[..n], &x[..n]);
    let va = _mm256_set1_pd(a);
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: `k + 4 <= n`: four values of `x` and of `acc` from `k`.
        let prod = _mm256_mul_pd(va, T::load4(x.as_ptr().add(k)));
        let sum = _mm256_add_pd(_mm256_loadu_pd(acc.as_ptr().add(k)), prod);
        _mm256_storeu_pd(acc.as_mut_ptr().add(k), sum);
        k += 4;
    }
    for (s, &v) in acc[k..].iter_mut().zip(&x[k..]) {
        *s += a * v.to_f64();
    }
}

/// [`Simd::add_scaled4`] with 256-bit vectors: per value the same four multiplications and
/// additions, in row order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_scaled4_avx2<T: Real>(acc: &mut [f64], a: [f64; 4], rows: [&[T]; 4]) {
    use std::arch::x86_64::{
        _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd, _mm256_storeu_pd,
    };
    let n = acc.len();
    let va = a.map(|v| _mm256_set1_pd(v));
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: `k + 4 <= n <=` every row's length and `acc.len()`.
        let mut sum = _mm256_loadu_pd(acc.as_ptr().add(k));
        for r in 0..4 {
            sum = _mm256_add_pd(sum, _mm256_mul_pd(va[r], T::load4(rows[r].as_ptr().add(k))));
        }
        _mm256_storeu_pd(acc.as_mut_ptr().add(k), sum);
        k += 4;
    }
    for (i, s) in acc.iter_mut().enumerate().skip(k) {
        for (ar, row) in a.iter().zip(rows) {
            *s += ar * row[i].to_f64();
        }
    }
}

/// [`dot_portable`] with 256-bit vectors: lanes 0-3 and 4-7 of the eight partial sums in two
/// registers, the same multiplications, additions and final reduction order (identical results).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2<A: Real, B: Real>(a: &[A], b: &[B]) -> f64 {
    use std::arch::x86_64::{_mm256_add_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd};
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (x, y) in ca.zip(cb) {
        // SAFETY: each chunk holds 8 values; unaligned loads of 4 at offsets 0 and 4.
        let (x0, x1) = (A::load4(x.as_ptr()), A::load4(x.as_ptr().add(4)));
        let (y0, y1) = (B::load4(y.as_ptr()), B::load4(y.as_ptr().add(4)));
        lo = _mm256_add_pd(lo, _mm256_mul_pd(x0, y0));
        hi = _mm256_add_pd(hi, _mm256_mul_pd(x1, y1));
    }
    let mut acc = [0.0f64; 4];
    // SAFETY: `acc` holds 4 values.
    _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo, hi));
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x.to_f64() * y.to_f64();
    }
    s
}

/// [`Predictor::dots`] with AVX2: the basis rows and `x` itself (for its norm) in groups of
/// four per pass over `x` (the last group padded by repeating a row), so that eight independent
/// partial-sum chains hide the addition latency. `z` holds `out.len()` rows of `d = x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dots_avx2<A: Real, B: Real>(x: &[A], z: &[B], d: usize, out: &mut [f64]) -> f64 {
    let n = out.len().min(z.len() / d.max(1));
    let x = &x[..d.min(x.len())];
    for k in (0..n).step_by(4) {
        let idx = [
            k,
            (k + 1).min(n - 1),
            (k + 2).min(n - 1),
            (k + 3).min(n - 1),
        ];
        let row = |t: usize| &z[t * d..t * d + x.len()];
        let r = block4_avx2(x, [row(idx[0]), row(idx[1]), row(idx[2]), row(idx[3])]);
        for (j, &t) in idx.iter().enumerate() {
            if t == k + j {
                out[t] = r[j];
            }
        }
    }
    // `x . x`, summed exactly as every other dot.
    dot_avx2(x, x)
}

/// Four dots `x . r_j` in one pass over `x`, each summed as [`dot_portable`] (rows as long as
/// `x`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block4_avx2<A: Real, B: Real>(x: &[A], rows: [&[B]; 4]) -> [f64; 4] {
    use std::arch::x86_64::{_mm256_add_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd};
    let full = x.len() / 8 * 8;
    let mut lo: [__m256d; 4] = [_mm256_setzero_pd(); 4];
    let mut hi: [__m256d; 4] = [_mm256_setzero_pd(); 4];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 8 <= full <= x.len() <= every row's length.
        let x0 = A::load4(x.as_ptr().add(i));
        let x1 = A::load4(x.as_ptr().add(i + 4));
        for r in 0..4 {
            let p = rows[r].as_ptr().add(i);
            lo[r] = _mm256_add_pd(lo[r], _mm256_mul_pd(x0, B::load4(p)));
            hi[r] = _mm256_add_pd(hi[r], _mm256_mul_pd(x1, B::load4(p.add(4))));
        }
        i += 8;
    }
    let mut out = [0.0; 4];
    for r in 0..4 {
        let mut acc = [0.0f64; 4];
        _mm256_storeu_pd(acc.as_mut_ptr(), _mm256_add_pd(lo[r], hi[r]));
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (a, b) in x[full..].iter().zip(&rows[r][full..]) {
            s += a.to_f64() * b.to_f64();
        }
        out[r] = s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_finite_finds_every_non_finite_value() {
        for n in [0usize, 1, 7, 8, 9, 16, 23, 64] {
            let v: Vec<f64> = (0..n).map(|i| i as f64 - 3.5).collect();
            assert!(all_finite(&v));
            let w: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            assert!(all_finite(&w));
            for at in 0..n {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut u = v.clone();
                    u[at] = bad;
                    assert!(!all_finite(&u), "{n} {at} {bad}");
                    let u32: Vec<f32> = u.iter().map(|&x| x as f32).collect();
                    assert!(!all_finite(&u32), "f32 {n} {at} {bad}");
                }
            }
        }
        // the largest finite values and signed zeros are finite
        assert!(all_finite(&[
            f64::MAX,
            -f64::MAX,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1e-320
        ]));
        assert!(all_finite(&[f32::MAX; 9]));
    }

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
                // Several vectors at once give the same values (whole groups of four and
                // the last one to three alone).
                for count in [1, 2, 3, 4, 6, 9] {
                    let xs: Vec<Vec<f64>> = (0..count)
                        .map(|q| (0..d).map(|i| x[(i + q) % d] - q as f64).collect())
                        .collect();
                    let refs: Vec<&[f64]> = xs.iter().map(|v| v.as_slice()).collect();
                    for simd in [portable, best] {
                        let mut outs = vec![vec![0.0; n]; xs.len()];
                        let mut views: Vec<&mut [f64]> =
                            outs.iter_mut().map(|o| o.as_mut_slice()).collect();
                        simd.dots_multi(&refs, &z, d, 0..n, &mut views);
                        for (q, o) in outs.iter().enumerate() {
                            for j in 0..n {
                                let want = portable.dot(&xs[q], &z[j * d..(j + 1) * d]);
                                assert_eq!(
                                    o[j].to_bits(),
                                    want.to_bits(),
                                    "d = {d}, q = {q}, row {j}"
                                );
                            }
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

    /// The scaled addition is the plain loop's, bitwise, on every SIMD level, for `f64` and
    /// `f32` rows of every length.
    #[test]
    fn scaled_additions_agree_bitwise() {
        for d in [1, 3, 4, 5, 8, 13, 166] {
            let x64: Vec<f64> = (0..d)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
                .collect();
            let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
            let start: Vec<f64> = (0..d)
                .map(|i| ((i * 13 % 29) as f64 - 14.0) / 3.3)
                .collect();
            let a = -1.0 / 3.0;
            let plain64: Vec<f64> = start.iter().zip(&x64).map(|(s, v)| s + a * v).collect();
            let plain32: Vec<f64> = start
                .iter()
                .zip(&x32)
                .map(|(s, &v)| s + a * f64::from(v))
                .collect();
            for simd in [Simd::portable(), Simd::detect()] {
                let (mut u, mut v) = (start.clone(), start.clone());
                simd.add_scaled(&mut u, a, &x64);
                simd.add_scaled(&mut v, a, &x32);
                let bits = |w: &[f64]| w.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&u), bits(&plain64), "d = {d}");
                assert_eq!(bits(&v), bits(&plain32), "d = {d}");
            }
        }
    }

    /// The listed rows of [`Simd::dots_multi`] are [`Simd::dot`]'s values, bitwise, for any
    /// number of vectors and any list; the rows not listed are left alone.
    #[test]
    fn listed_rows_are_the_rows_one_at_a_time() {
        let (n, d) = (23, 19);
        let z: Vec<f64> = (0..n * d)
            .map(|i| ((i * 29) % 41) as f64 / 6.0 - 3.0)
            .collect();
        let xs32: Vec<Vec<f32>> = (0..9)
            .map(|q| {
                (0..d)
                    .map(|i| ((i * 11 + q * 5) % 17) as f32 / 4.0 - 2.0)
                    .collect()
            })
            .collect();
        for simd in [Simd::portable(), Simd::detect()] {
            for n_x in 1..=9 {
                for ks in [
                    vec![],
                    vec![4],
                    vec![0, 2, 3, 9, 22],
                    (0..n).rev().collect(),
                ] {
                    let xs: Vec<&[f32]> = xs32[..n_x].iter().map(|x| x.as_slice()).collect();
                    let mut got = vec![vec![f64::NAN; n]; n_x];
                    let mut outs: Vec<&mut [f64]> =
                        got.iter_mut().map(|o| o.as_mut_slice()).collect();
                    simd.dots_multi(&xs, &z, d, ks.iter().copied(), &mut outs);
                    for (x, o) in xs.iter().zip(&got) {
                        for k in 0..n {
                            let want = Simd::portable().dot(&z[k * d..(k + 1) * d], x);
                            if ks.contains(&k) {
                                assert_eq!(
                                    o[k].to_bits(),
                                    want.to_bits(),
                                    "{n_x} vectors, row {k}"
                                );
                            } else {
                                assert!(o[k].is_nan(), "row {k} is not listed");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Four rows at a time (dots and scaled additions) are the rows one at a time, bitwise.
    #[test]
    fn four_rows_at_a_time_are_the_rows_one_at_a_time() {
        for d in [1, 3, 4, 7, 8, 9, 21, 166] {
            let rows64: Vec<Vec<f64>> = (0..4)
                .map(|r| {
                    (0..d)
                        .map(|i| ((i * 37 + r * 11) % 101) as f64 / 7.0 - 6.0)
                        .collect()
                })
                .collect();
            let rows32: Vec<Vec<f32>> = rows64
                .iter()
                .map(|r| r.iter().map(|&v| v as f32).collect())
                .collect();
            let x: Vec<f64> = (0..d).map(|i| ((i * 13) % 29) as f64 / 3.0 - 4.0).collect();
            let a = [0.5, -1.0 / 3.0, 2.0 / 7.0, -3.25];
            for simd in [Simd::portable(), Simd::detect()] {
                let r64 = [
                    &rows64[0][..],
                    &rows64[1][..],
                    &rows64[2][..],
                    &rows64[3][..],
                ];
                let r32 = [
                    &rows32[0][..],
                    &rows32[1][..],
                    &rows32[2][..],
                    &rows32[3][..],
                ];
                let four = simd.dot4(&x, r32);
                for r in 0..4 {
                    assert_eq!(
                        four[r].to_bits(),
                        simd.dot(&rows32[r], &x).to_bits(),
                        "d = {d}"
                    );
                    assert_eq!(
                        four[r].to_bits(),
                        Simd::portable().dot(&x, &rows32[r]).to_bits()
                    );
                }
                let (mut one, mut all) = (x.clone(), x.clone());
                for r in 0..4 {
                    simd.add_scaled(&mut one, a[r], &rows64[r]);
                }
                simd.add_scaled4(&mut all, a, r64);
                let bits = |w: &[f64]| w.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&all), bits(&one), "d = {d}");
            }
        }
    }

    /// `f32` operands give the sums of their `f64` twins, bitwise, on every SIMD level and for
    /// mixed operand types.
    #[test]
    fn f32_operands_sum_as_their_f64_twins() {
        for simd in [Simd::portable(), Simd::detect()] {
            for d in [1, 5, 8, 13, 40] {
                let n = 9;
                let z32: Vec<f32> = (0..n * d)
                    .map(|i| ((i * 31 % 97) as f32 - 40.0) / 9.0)
                    .collect();
                let x32: Vec<f32> = (0..d).map(|i| ((i * 7 % 23) as f32 - 11.0) / 3.0).collect();
                let z64: Vec<f64> = z32.iter().map(|&v| f64::from(v)).collect();
                let x64: Vec<f64> = x32.iter().map(|&v| f64::from(v)).collect();
                let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let na = simd.dots(&x32, &z32, d, &mut a);
                let nb = simd.dots(&x64, &z64, d, &mut b);
                let nc = simd.dots(&x32, &z64, d, &mut c);
                assert_eq!(na.to_bits(), nb.to_bits());
                assert_eq!(nc.to_bits(), nb.to_bits());
                assert_eq!(a, b, "d = {d}");
                assert_eq!(c, b, "d = {d}");
                assert_eq!(
                    simd.dot(&x32, &x32).to_bits(),
                    simd.dot(&x64, &x64).to_bits()
                );
                let xs32: Vec<&[f32]> = vec![&x32, &z32[..d], &z32[d..2 * d]];
                let xs64: Vec<&[f64]> = vec![&x64, &z64[..d], &z64[d..2 * d]];
                let mut o32 = vec![vec![0.0; n]; 3];
                let mut o64 = vec![vec![0.0; n]; 3];
                let mut v32: Vec<&mut [f64]> = o32.iter_mut().map(|o| o.as_mut_slice()).collect();
                let mut v64: Vec<&mut [f64]> = o64.iter_mut().map(|o| o.as_mut_slice()).collect();
                simd.dots_multi(&xs32, &z32, d, 0..n, &mut v32);
                simd.dots_multi(&xs64, &z64, d, 0..n, &mut v64);
                assert_eq!(o32, o64, "d = {d}");
            }
        }
    }
}
