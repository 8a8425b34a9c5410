//! Matrix products with the bits of the dense matrix product behind the batch prediction path
//! (`ndarray`'s `general_mat_mul` / `dot`, which run `matrixmultiply`'s `dgemm`), computed in
//! caller-owned buffers: the serving path (`model::Predictor::score_bag`) scores one
//! bag against a large dense basis with them, so that its scores equal the batch path's bit for
//! bit without allocating.
//!
//! `dgemm` computes each element of `C = A B` on its own: the inner dimension is cut into
//! blocks of [`KC`] from its start; within a block the products are accumulated in order from
//! `+0`, by fused multiply-adds when the CPU has FMA and AVX2 (x86-64) or NEON (aarch64), by a
//! multiply then an add otherwise; and the block sums are added to the element in order, from
//! `+0`. The row and column blocking of `dgemm` (and so the shapes of the operands) change no
//! element's value, so that these loops, free to choose their own order over rows and columns,
//! give the same bits. The test below compares them with `general_mat_mul` on awkward shapes.

use crate::simd::compiled_forms;

/// The blocking of the inner dimension in `matrixmultiply`'s `dgemm` (`D_KC`).
pub(crate) const KC: usize = 256;

/// Columns of `C` kept in registers by [`wide`].
const LANES: usize = 16;

/// How `dgemm` accumulates on this CPU: fused multiply-adds or a multiply then an add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmArith {
    fused: bool,
}

impl GemmArith {
    /// The arithmetic of `dgemm`'s kernel on this CPU (its own run-time choice).
    pub(crate) fn detect() -> Self {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        let fused = std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avx2");
        #[cfg(target_arch = "aarch64")]
        let fused = std::arch::is_aarch64_feature_detected!("neon");
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
        let fused = false;
        Self { fused }
    }

    /// `C = A B` for `A` (`m x k`, row-major) and `B` (`k x n`, row-major) into `c` (`m x n`,
    /// row-major): for a wide `B` (many columns; the kernel values of a bag against a basis).
    pub(crate) fn wide(self, a: &[f64], b: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            if self.fused && std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F checked just above, FMA and AVX2 by `detect`
                return unsafe { wide_fma_avx512(a, b, c, m, k, n) };
            }
            if self.fused {
                // SAFETY: FMA and AVX2 checked by `detect` (`fused` is set only then)
                return unsafe { wide_fma_avx2(a, b, c, m, k, n) };
            }
        }
        if self.fused {
            wide_lanes::<true>(a, b, c, m, k, n)
        } else {
            wide_plain(a, b, c, m, k, n)
        }
    }

    /// `C = A B^T` for `A` (`m x k`) and `B^T` given as `bt` (`n x k`, row-major: `B`'s columns
    /// as rows) into `c` (`m x n`, row-major): for a narrow `B` (few columns; the coefficients
    /// of a model's outputs), the rows of `A` accumulated side by side.
    pub(crate) fn narrow(self, a: &[f64], bt: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            if self.fused {
                // SAFETY: FMA and AVX2 checked by `detect` (`fused` is set only then)
                return unsafe { narrow_fma_avx2(a, bt, c, m, k, n) };
            }
        }
        if self.fused {
            narrow_lanes::<true>(a, bt, c, m, k, n)
        } else {
            narrow_lanes::<false>(a, bt, c, m, k, n)
        }
    }
}

/// `a * b + acc`, fused or as a multiply then an add.
#[inline(always)]
fn madd<const FUSED: bool>(a: f64, b: f64, acc: f64) -> f64 {
    if FUSED {
        a.mul_add(b, acc)
    } else {
        a * b + acc
    }
}

/// [`GemmArith::wide`]'s loop: for each row of `A` and each group of [`LANES`] columns, the
/// block sums accumulated in registers.
#[inline(always)]
fn wide_lanes<const FUSED: bool>(
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    m: usize,
    k: usize,
    n: usize,
) {
    for i in 0..m {
        let arow = &a[i * k..(i + 1) * k];
        let crow = &mut c[i * n..(i + 1) * n];
        let mut j0 = 0;
        while j0 + LANES <= n {
            let mut total = [0.0f64; LANES];
            for p0 in (0..k).step_by(KC) {
                let mut acc = [0.0f64; LANES];
                for (p, &x) in arow.iter().enumerate().take((p0 + KC).min(k)).skip(p0) {
                    let brow = &b[p * n + j0..p * n + j0 + LANES];
                    for (s, &v) in acc.iter_mut().zip(brow) {
                        *s = madd::<FUSED>(x, v, *s);
                    }
                }
                for (t, s) in total.iter_mut().zip(acc) {
                    *t += s;
                }
            }
            crow[j0..j0 + LANES].copy_from_slice(&total);
            j0 += LANES;
        }
        for (j, out) in crow.iter_mut().enumerate().skip(j0) {
            let mut total = 0.0;
            for p0 in (0..k).step_by(KC) {
                let mut acc = 0.0;
                for (p, &x) in arow.iter().enumerate().take((p0 + KC).min(k)).skip(p0) {
                    acc = madd::<FUSED>(x, b[p * n + j], acc);
                }
                total += acc;
            }
            *out = total;
        }
    }
}

/// [`GemmArith::narrow`]'s loop: for each column and each group of 8 rows of `A`, the rows
/// accumulated side by side (independent chains).
#[inline(always)]
fn narrow_lanes<const FUSED: bool>(
    a: &[f64],
    bt: &[f64],
    c: &mut [f64],
    m: usize,
    k: usize,
    n: usize,
) {
    const ROWS: usize = 8;
    for j in 0..n {
        let col = &bt[j * k..(j + 1) * k];
        for i0 in (0..m).step_by(ROWS) {
            let r = ROWS.min(m - i0);
            let mut total = [0.0f64; ROWS];
            for p0 in (0..k).step_by(KC) {
                let mut acc = [0.0f64; ROWS];
                for (p, &v) in col.iter().enumerate().take((p0 + KC).min(k)).skip(p0) {
                    for (q, s) in acc.iter_mut().enumerate().take(r) {
                        *s = madd::<FUSED>(a[(i0 + q) * k + p], v, *s);
                    }
                }
                for (t, s) in total.iter_mut().zip(acc) {
                    *t += s;
                }
            }
            for (q, &t) in total.iter().enumerate().take(r) {
                c[(i0 + q) * n + j] = t;
            }
        }
    }
}

compiled_forms! {
    /// [`wide_lanes`] with a multiply then an add.
    fn wide_plain(a: &[f64], b: &[f64], c: &mut [f64], m: usize, k: usize, n: usize)
        = wide_unfused, avx512: wide_plain_avx512, avx2: wide_plain_avx2;
}

#[inline(always)]
fn wide_unfused(a: &[f64], b: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
    wide_lanes::<false>(a, b, c, m, k, n)
}

/// [`wide_lanes`] fused, compiled for AVX-512F with FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn wide_fma_avx512(a: &[f64], b: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
    wide_lanes::<true>(a, b, c, m, k, n)
}

/// [`wide_lanes`] fused, compiled for AVX2 with FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn wide_fma_avx2(a: &[f64], b: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
    wide_lanes::<true>(a, b, c, m, k, n)
}

/// [`narrow_lanes`] fused, compiled for AVX2 with FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn narrow_fma_avx2(a: &[f64], bt: &[f64], c: &mut [f64], m: usize, k: usize, n: usize) {
    narrow_lanes::<true>(a, bt, c, m, k, n)
}

/// The squared norm of a row as the batch path computes it (`ndarray`'s `dot` of the row with
/// itself, as `Rows::sq_norms` does), not the one-bag kernel's SIMD dot.
#[inline]
pub(crate) fn batch_sq_norm(x: &[f64]) -> f64 {
    let v = ndarray::ArrayView1::from(x);
    v.dot(&v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::linalg::general_mat_mul;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(rng: &mut ChaCha8Rng, r: usize, c: usize) -> Array2<f64> {
        Array2::from_shape_fn((r, c), |_| {
            let v: f64 = rng.random_range(-1.0..1.0);
            // a spread of magnitudes, so that the order of the sums shows in the last bits
            v * 10f64.powi(rng.random_range(-3..4))
        })
    }

    #[test]
    fn both_loops_give_the_bits_of_general_mat_mul() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let arith = GemmArith::detect();
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 166, 300),
            (3, 257, 17),
            (9, 600, 33),
            (7, 40, 1),
            (13, 513, 3),
            (2, 255, 64),
        ] {
            let a = random(&mut rng, m, k);
            let b = random(&mut rng, k, n);
            let mut want = Array2::zeros((m, n));
            general_mat_mul(1.0, &a, &b, 0.0, &mut want);
            let mut got = vec![f64::NAN; m * n];
            arith.wide(
                a.as_slice().unwrap(),
                b.as_slice().unwrap(),
                &mut got,
                m,
                k,
                n,
            );
            assert_eq!(got, want.as_slice().unwrap(), "wide {m} x {k} x {n}");
            let bt = b.t().as_standard_layout().into_owned();
            let mut got = vec![f64::NAN; m * n];
            arith.narrow(
                a.as_slice().unwrap(),
                bt.as_slice().unwrap(),
                &mut got,
                m,
                k,
                n,
            );
            // as the batch path multiplies: `dot` with the transposed view of the coefficients
            let want = a.dot(&bt.t());
            assert_eq!(got, want.as_slice().unwrap(), "narrow {m} x {k} x {n}");
            // the fallback loops (the arithmetic chosen, compiled without the CPU's extensions)
            let mut plain = vec![f64::NAN; m * n];
            if arith.fused {
                wide_lanes::<true>(
                    a.as_slice().unwrap(),
                    b.as_slice().unwrap(),
                    &mut plain,
                    m,
                    k,
                    n,
                );
            } else {
                wide_lanes::<false>(
                    a.as_slice().unwrap(),
                    b.as_slice().unwrap(),
                    &mut plain,
                    m,
                    k,
                    n,
                );
            }
            let mut want = Array2::zeros((m, n));
            general_mat_mul(1.0, &a, &b, 0.0, &mut want);
            assert_eq!(
                plain,
                want.as_slice().unwrap(),
                "portable wide {m} x {k} x {n}"
            );
        }
    }
}
