//! Kernel values between instance rows and a basis, the fused bag-mean matrix, the bag-wise
//! maximum of kernel values (MILES's embedding, [`bag_max_kernel`]), and the gradient of kernel
//! sums with respect to the basis vectors.
//!
//! Everything here works on one representation (ALGORITHMS.md section 1): instance rows `F`
//! (dense or CSR) with squared norms `s_p`, and a [`Basis`] of vectors `z_k` given by
//! coordinates `V` (rows `v_k`), *projected* coordinates `U` and squared norms `t_k`, such that
//!
//! * `<x_p, z_k> = F_p . v_k` and `||z_k||^2 = t_k`,
//! * `d <x_p, z_k> / d v_k = F_p` and `d ||z_k||^2 / d v_k = 2 u_k`.
//!
//! In direct mode `F = X` and `U = V = Z`. In basis-vector mode (Fu et al. 2013, section IV-E)
//! `z_k = B v_k`, `F = X B` (`P`), `U = V G` with `G = B^T B`, and all work runs in the basis
//! dimension. With the Gaussian kernel `k(x, z) = exp(-gamma ||x - z||^2)`:
//!
//! `d k(x_p, z_k) / d v_k = 2 gamma (F_p - u_k) k(x_p, z_k)`.
//!
//! Work is split into fixed chunks of rows (whole bags where bag means are formed), run in
//! parallel with rayon; floating-point sums follow the chunk order, so results are bitwise
//! identical for any number of threads.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bags::{Rows, CHUNK_ROWS};
use crate::linalg::Simd;
use crate::simd::compiled_forms;

mod bag_max;
mod constant_features;

mod gemm_bits;
pub use bag_max::{bag_max_kernel, BLOCK_XV};
pub(crate) use constant_features::without_constant_features;

pub(crate) use gemm_bits::{batch_sq_norm, GemmArith};

/// Rows per partial product in the dense gradient.
const GRAD_CHUNK_ROWS: usize = 1024;

/// A kernel function between instances.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Kernel {
    /// `k(x, z) = <x, z>`.
    Linear,
    /// Gaussian kernel `k(x, z) = exp(-gamma ||x - z||^2)`.
    Rbf {
        /// Kernel width, `gamma > 0`.
        gamma: f64,
    },
}

impl Kernel {
    /// Kernel value from the inner product and the two squared norms.
    #[inline]
    pub fn from_dot(&self, dot: f64, sq_norm_x: f64, sq_norm_z: f64) -> f64 {
        match *self {
            Kernel::Linear => dot,
            Kernel::Rbf { gamma } => exp(-gamma * (sq_norm_x + sq_norm_z - 2.0 * dot).max(0.0)),
        }
    }

    /// Turns the inner products in `out` (row-major, `norms_z.len()` columns, the rows of
    /// `norms_x` starting at `first_row`) into kernel values, vectorised.
    pub(crate) fn finish_rows(
        &self,
        out: &mut [f64],
        norms_x: &[f64],
        first_row: usize,
        norms_z: &[f64],
    ) {
        if let Kernel::Rbf { gamma } = *self {
            gaussian_rows(gamma, out, norms_x, first_row, norms_z);
        }
    }
}

/// A set of basis vectors `z_k` in the representation described in the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Basis {
    /// Coordinates `v_k`, one per row (`n_basis x q`).
    pub v: Array2<f64>,
    /// Projected coordinates `u_k = G v_k` (equal to `v` in direct mode).
    pub u: Array2<f64>,
    /// Squared norms `t_k = ||z_k||^2 = v_k . u_k`.
    pub sq_norms: Vec<f64>,
}

impl Basis {
    /// A basis of explicit vectors (direct mode: `z_k = v_k`).
    pub fn direct(z: Array2<f64>) -> Self {
        let sq_norms = z.rows().into_iter().map(|r| r.dot(&r)).collect();
        Self {
            u: z.clone(),
            v: z,
            sq_norms,
        }
    }

    /// A basis `z_k = B v_k` over basis vectors with Gram matrix `g = B^T B` (BV mode).
    pub fn projected(v: Array2<f64>, g: ArrayView2<f64>) -> Self {
        let u = v.dot(&g);
        let sq_norms = v
            .rows()
            .into_iter()
            .zip(u.rows())
            .map(|(a, b)| a.dot(&b))
            .collect();
        Self { v, u, sq_norms }
    }

    /// Number of basis vectors.
    pub fn len(&self) -> usize {
        self.v.nrows()
    }
    /// Whether the basis is empty.
    pub fn is_empty(&self) -> bool {
        self.v.nrows() == 0
    }
    /// The basis as instance rows (its projected coordinates) for basis-basis kernels:
    /// `<z_j, z_k> = u_j . v_k`.
    pub fn as_rows(&self) -> Rows<'_> {
        Rows::Dense(self.u.view())
    }
}

/// Splits `0..n_rows` into chunks of whole bags of about [`CHUNK_ROWS`] rows.
/// Returns bag index boundaries.
fn bag_chunks(bag_ptr: &[usize]) -> Vec<(usize, usize)> {
    let m = bag_ptr.len() - 1;
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..m {
        if bag_ptr[i + 1] - bag_ptr[start] >= CHUNK_ROWS || i + 1 == m {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    out
}

/// Splits a row-major buffer of `width` columns into mutable pieces at the given row bounds.
fn split_rows<'a>(
    mut buf: &'a mut [f64],
    bounds: &[(usize, usize)],
    width: usize,
) -> Vec<&'a mut [f64]> {
    let mut out = Vec::with_capacity(bounds.len());
    for &(lo, hi) in bounds {
        let (head, tail) = buf.split_at_mut((hi - lo) * width);
        out.push(head);
        buf = tail;
    }
    out
}

/// One pass of kernel values: rows, their norms and the basis (with `V^T` laid out once).
struct KernelPass<'r, 'a> {
    kernel: Kernel,
    rows: Rows<'r>,
    row_norms: &'a [f64],
    basis: &'a Basis,
    vt: Array2<f64>,
}

impl<'r, 'a> KernelPass<'r, 'a> {
    fn new(kernel: Kernel, rows: Rows<'r>, row_norms: &'a [f64], basis: &'a Basis) -> Self {
        let vt = basis.v.t().as_standard_layout().into_owned();
        Self {
            kernel,
            rows,
            row_norms,
            basis,
            vt,
        }
    }

    /// Kernel values of rows `lo..hi` against the basis, written into `out` (row-major).
    fn block(&self, lo: usize, hi: usize, out: &mut [f64]) {
        let nb = self.basis.len();
        let Ok(mut block) = ArrayViewMut2::from_shape((hi - lo, nb), out) else {
            return; // unreachable: callers size every block (hi - lo) x n_basis
        };
        match self.rows {
            Rows::Dense(x) => {
                general_mat_mul(1.0, &x.slice(s![lo..hi, ..]), &self.vt, 0.0, &mut block)
            }
            Rows::Dense32(_) => general_mat_mul(
                1.0,
                &self.rows.dense_block(lo, hi),
                &self.vt,
                0.0,
                &mut block,
            ),
            Rows::Sparse(x) => {
                block.fill(0.0);
                for (r, mut orow) in (lo..hi).zip(block.rows_mut()) {
                    let (idx, val) = x.row(r);
                    for (&j, &a) in idx.iter().zip(val) {
                        orow.scaled_add(a, &self.vt.row(j));
                    }
                }
            }
        }
        self.kernel
            .finish_rows(out, self.row_norms, lo, &self.basis.sq_norms);
    }
}

/// The kernel matrix `K[p, k] = k(x_p, z_k)` (`n_rows x n_basis`).
pub fn kernel_matrix(kernel: Kernel, rows: Rows, row_norms: &[f64], basis: &Basis) -> Array2<f64> {
    let n = rows.n_rows();
    let nb = basis.len();
    let pass = KernelPass::new(kernel, rows, row_norms, basis);
    let bounds: Vec<(usize, usize)> = (0..n)
        .step_by(CHUNK_ROWS)
        .map(|lo| (lo, (lo + CHUNK_ROWS).min(n)))
        .collect();
    let mut k = Array2::zeros((n, nb));
    if let Some(buf) = k.as_slice_mut() {
        split_rows(buf, &bounds, nb)
            .into_par_iter()
            .zip(bounds.par_iter())
            .for_each(|(out, &(lo, hi))| pass.block(lo, hi, out));
    }
    k
}

/// The kernel matrix `K` (`n_rows x n_basis`) and, fused into the same pass, the bag means
/// `M[i, k] = (1/n_i) sum_{p in bag i} K[p, k]` (`n_bags x n_basis`; Fu et al. 2013, eq. 5).
pub fn kernel_bag_means(
    kernel: Kernel,
    rows: Rows,
    row_norms: &[f64],
    bag_ptr: &[usize],
    basis: &Basis,
) -> (Array2<f64>, Array2<f64>) {
    let pass = KernelPass::new(kernel, rows, row_norms, basis);
    fused_bag_pass(rows.n_rows(), basis.len(), bag_ptr, |lo, hi, kout| {
        pass.block(lo, hi, kout)
    })
}

/// Instance scores `f(x_p) = sum_k coef[o, k] k(x_p, z_k) + intercept[o]` of every row for every
/// output `o` (`n_rows x n_outputs`), computed in row chunks (in parallel) so that the
/// `n_rows x n_basis` kernel matrix is never held whole. Every value is computed by the same
/// operations whatever the thread count.
pub fn instance_scores(
    kernel: Kernel,
    rows: Rows,
    row_norms: &[f64],
    basis: &Basis,
    coef: ArrayView2<f64>,
    intercept: &[f64],
) -> Array2<f64> {
    let n_out = coef.nrows().max(1);
    let nb = basis.len();
    let pass = KernelPass::new(kernel, rows, row_norms, basis);
    let coef_t = coef.t();
    let mut out = Array2::zeros((rows.n_rows(), coef.nrows()));
    if let Some(buf) = out.as_slice_mut() {
        buf.par_chunks_mut(CHUNK_ROWS * n_out)
            .enumerate()
            .for_each(|(c, dst)| {
                let (lo, hi) = (c * CHUNK_ROWS, c * CHUNK_ROWS + dst.len() / n_out);
                let mut kbuf = vec![0.0; (hi - lo) * nb];
                pass.block(lo, hi, &mut kbuf);
                let Ok(kblock) = ArrayView2::from_shape((hi - lo, nb), &kbuf) else {
                    return; // unreachable: the block is (hi - lo) x nb
                };
                let s = kblock.dot(&coef_t);
                for (drow, srow) in dst.chunks_exact_mut(n_out).zip(s.rows()) {
                    for ((d, &v), &b) in drow.iter_mut().zip(srow).zip(intercept) {
                        *d = v + b;
                    }
                }
            });
    }
    out
}

/// `a v` (rows of `a` dotted with `v` by `Simd::dot` when contiguous), the rows in parallel:
/// every value is computed the same way whatever the thread count.
pub fn mat_vec(a: ArrayView2<f64>, v: ArrayView1<f64>) -> Array1<f64> {
    let simd = Simd::detect();
    let v = v.as_standard_layout();
    let vs = v.as_slice().unwrap_or_default();
    let mut out = Array1::zeros(a.nrows());
    if let Some(o) = out.as_slice_mut() {
        o.par_iter_mut()
            .with_min_len(CHUNK_ROWS)
            .zip(
                a.axis_iter(Axis(0))
                    .into_par_iter()
                    .with_min_len(CHUNK_ROWS),
            )
            .for_each(|(o, row)| {
                *o = match row.as_slice() {
                    Some(r) => simd.dot(r, vs),
                    None => row.dot(&v),
                }
            });
    }
    out
}

/// The inner products `D[p, k] = F_p . v_k` of the rows with the basis coordinates
/// (`n_rows x n_basis`): the one matrix product behind every kernel value.
pub fn cross_dots(rows: Rows, basis: &Basis) -> Array2<f64> {
    kernel_matrix(Kernel::Linear, rows, &[], basis)
}

/// The kernel matrix and its bag means from precomputed inner products `D = F V^T`
/// (see [`cross_dots`]), in one fused pass: `K[p,k] = k` from `D[p,k]`, `s_p`, `t_k`.
/// SparseMI's line search uses it with `D(Z - l G) = D(Z) - l F G^T`, one product per iteration
/// instead of one per trial step.
pub fn kernel_bag_means_from_dots(
    kernel: Kernel,
    dots: ArrayView2<f64>,
    row_norms: &[f64],
    bag_ptr: &[usize],
    basis_sq_norms: &[f64],
) -> (Array2<f64>, Array2<f64>) {
    let (n, nb) = dots.dim();
    fused_bag_pass(n, nb, bag_ptr, |lo, _, kout| {
        for (p, krow) in (lo..).zip(kout.chunks_exact_mut(nb)) {
            krow.iter_mut().zip(dots.row(p)).for_each(|(o, &d)| *o = d);
        }
        kernel.finish_rows(kout, row_norms, lo, basis_sq_norms);
    })
}

/// Runs `fill(lo, hi, out)` (kernel rows `lo..hi` into `out`) over chunks of whole bags in
/// parallel and forms each chunk's bag means while its rows are hot in cache.
fn fused_bag_pass(
    n: usize,
    nb: usize,
    bag_ptr: &[usize],
    fill: impl Fn(usize, usize, &mut [f64]) + Sync,
) -> (Array2<f64>, Array2<f64>) {
    let m = bag_ptr.len() - 1;
    let chunks = bag_chunks(bag_ptr);
    let row_bounds: Vec<(usize, usize)> = chunks
        .iter()
        .map(|&(a, b)| (bag_ptr[a], bag_ptr[b]))
        .collect();
    let mut k = Array2::zeros((n, nb));
    let mut means = Array2::zeros((m, nb));
    if let (Some(kbuf), Some(mbuf)) = (k.as_slice_mut(), means.as_slice_mut()) {
        split_rows(kbuf, &row_bounds, nb)
            .into_par_iter()
            .zip(split_rows(mbuf, &chunks, nb))
            .zip(chunks.par_iter())
            .for_each(|((kout, mout), &(b0, b1))| {
                fill(bag_ptr[b0], bag_ptr[b1], kout);
                accumulate_means(kout, mout, bag_ptr, b0, b1, nb);
            });
    }
    (k, means)
}

/// Bag means of the kernel rows of bags `b0..b1` (rows start at `bag_ptr[b0]`).
fn accumulate_means(
    kout: &[f64],
    mout: &mut [f64],
    bag_ptr: &[usize],
    b0: usize,
    b1: usize,
    nb: usize,
) {
    let lo = bag_ptr[b0];
    for (bi, mrow) in (b0..b1).zip(mout.chunks_exact_mut(nb)) {
        let (r0, r1) = (bag_ptr[bi] - lo, bag_ptr[bi + 1] - lo);
        for krow in kout[r0 * nb..r1 * nb].chunks_exact(nb) {
            for (a, &v) in mrow.iter_mut().zip(krow) {
                *a += v;
            }
        }
        let inv = 1.0 / (r1 - r0) as f64;
        mrow.iter_mut().for_each(|a| *a *= inv);
    }
}

/// The gradient of `sum_p sum_k A[p, k] k(x_p, z_k)` with respect to each basis coordinate
/// vector `v_k` (`n_basis x q`), given the kernel values `K` of the same rows and basis:
///
/// * Gaussian: `2 gamma (sum_p W[p,k] F_p - (sum_p W[p,k]) u_k)` with `W = A .* K`;
/// * linear: `sum_p A[p,k] F_p`.
///
/// This is the one gradient that SparseMI's `dg/dZ` (Fu et al. 2013, eq. 13) and its basis-vector
/// and multi-class forms are built from.
pub fn basis_gradient(
    kernel: Kernel,
    rows: Rows,
    k: ArrayView2<f64>,
    a: ArrayView2<f64>,
    basis: &Basis,
) -> Array2<f64> {
    match kernel {
        Kernel::Linear => basis_gradient_from_weights(kernel, rows, a, basis),
        Kernel::Rbf { .. } => basis_gradient_from_weights(kernel, rows, (&a * &k).view(), basis),
    }
}

/// [`basis_gradient`] from the weights `W = A .* K` (Gaussian) or `W = A` (linear), for
/// callers that form `W` in place.
pub fn basis_gradient_from_weights(
    kernel: Kernel,
    rows: Rows,
    w: ArrayView2<f64>,
    basis: &Basis,
) -> Array2<f64> {
    let n = rows.n_rows();
    let nb = basis.len();
    let q = rows.n_cols();
    let mut out = match rows {
        Rows::Dense(_) | Rows::Dense32(_) => {
            // Partial products W_c^T F_c over fixed row chunks, summed in chunk order (`f32`
            // rows read into `f64` a chunk at a time).
            let bounds: Vec<(usize, usize)> = (0..n)
                .step_by(GRAD_CHUNK_ROWS)
                .map(|lo| (lo, (lo + GRAD_CHUNK_ROWS).min(n)))
                .collect();
            let partials: Vec<Array2<f64>> = bounds
                .par_iter()
                .map(|&(lo, hi)| {
                    let mut p = Array2::zeros((nb, q));
                    general_mat_mul(
                        1.0,
                        &w.slice(s![lo..hi, ..]).t(),
                        &rows.dense_block(lo, hi),
                        0.0,
                        &mut p,
                    );
                    p
                })
                .collect();
            let mut acc = Array2::zeros((nb, q));
            for p in &partials {
                acc += p;
            }
            acc
        }
        Rows::Sparse(x) => {
            let mut acc = Array2::zeros((nb, q));
            acc.axis_iter_mut(Axis(0))
                .into_par_iter()
                .enumerate()
                .for_each(|(kk, mut orow)| {
                    for p in 0..n {
                        let wp = w[[p, kk]];
                        if wp != 0.0 {
                            let (idx, val) = x.row(p);
                            for (&j, &v) in idx.iter().zip(val) {
                                orow[j] += wp * v;
                            }
                        }
                    }
                });
            acc
        }
    };
    if let Kernel::Rbf { .. } = kernel {
        finish_gradient(kernel, &mut out, w.sum_axis(Axis(0)).view(), basis);
    }
    out
}

/// The gradient of [`basis_gradient`] from its sums: `S[k] = sum_p W[p,k] F_p` in `out` and
/// the column sums `colsum[k] = sum_p W[p,k]`; Gaussian: `2 gamma (S[k] - colsum[k] u_k)`,
/// linear: `S` as it is.
pub(crate) fn finish_gradient(
    kernel: Kernel,
    out: &mut Array2<f64>,
    colsum: ArrayView1<f64>,
    basis: &Basis,
) {
    if let Kernel::Rbf { gamma } = kernel {
        for ((mut orow, urow), &cs) in out
            .rows_mut()
            .into_iter()
            .zip(basis.u.rows())
            .zip(colsum.iter())
        {
            orow.scaled_add(-cs, &urow);
            orow *= 2.0 * gamma;
        }
    }
}

/// `exp(x)` with the same operations on every machine: `x = k ln 2 + r`, `|r| <= ln 2 / 2`, a
/// degree-13 Taylor polynomial for `exp(r)` (truncation below 1e-17) and `2^k` from the exponent
/// bits; relative error within a few ulp. Arguments below -708 give 0 (the kernel value
/// `exp(-708)` is already below 4e-308). Branch-free, so that loops over it vectorise.
#[inline(always)]
fn exp(x: f64) -> f64 {
    const LOG2_E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // ln 2, high bits
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // ln 2 - LN2_HI
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: adding it rounds to an integer
    let xc = x.clamp(-708.0, 709.0);
    let shifted = xc * LOG2_E + SHIFT;
    let k = shifted - SHIFT;
    let r = (xc - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 6_227_020_800.0;
    for c in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    let k_int = (shifted.to_bits() as i64).wrapping_sub(SHIFT.to_bits() as i64);
    let scale = f64::from_bits((k_int.wrapping_add(1023) as u64) << 52);
    let y = p * scale;
    if x < -708.0 {
        0.0
    } else if x.is_nan() {
        x
    } else {
        y
    }
}

compiled_forms! {
    /// `exp` of every value, in place, with AVX-512 or AVX2 code where the CPU has it (the same
    /// operations lane by lane, no fused multiply-add: the same results as the portable loop).
    /// The polynomial is bound by its chain of multiplies and adds, so eight lanes run it in
    /// little more than the time of four.
    fn exp_in_place(xs: &mut [f64])
        = exp_in_place_lanes, avx512: exp_in_place_avx512, avx2: exp_in_place_avx2;
}

/// The loop of [`exp_in_place`], inlined into each compiled form.
#[inline(always)]
fn exp_in_place_lanes(xs: &mut [f64]) {
    xs.iter_mut().for_each(|x| *x = exp(*x));
}

compiled_forms! {
    /// The Gaussian kernel values `exp(-gamma max(0, s_p + t_k - 2 d_pk))` of the inner
    /// products `d_pk` in `out` (row-major, `norms_z.len()` columns `t_k`, the rows `s_p` of
    /// `norms_x` from `first_row` on; a missing norm is 0), in place: each row's exponents and
    /// exponentials in one pass, compiled for AVX-512 and AVX2 where the CPU has them (the
    /// bits of the portable loop, as [`exp_in_place`]). One pass instead of one for the
    /// exponents and one for the exponentials reads each tile once; NSK's fits in
    /// `benches/bench_peers.py` measure it.
    fn gaussian_rows(
        gamma: f64, out: &mut [f64], norms_x: &[f64], first_row: usize, norms_z: &[f64]
    )
        = gaussian_rows_lanes, avx512: gaussian_rows_avx512, avx2: gaussian_rows_avx2;
}

/// The loop of [`gaussian_rows`], inlined into each compiled form.
#[inline(always)]
fn gaussian_rows_lanes(
    gamma: f64,
    out: &mut [f64],
    norms_x: &[f64],
    first_row: usize,
    norms_z: &[f64],
) {
    let nb = norms_z.len().max(1);
    for (p, row) in (first_row..).zip(out.chunks_exact_mut(nb)) {
        let s = norms_x.get(p).copied().unwrap_or(0.0);
        for (o, &t) in row.iter_mut().zip(norms_z) {
            *o = exp(-gamma * (s + t - 2.0 * *o).max(0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{exp, Kernel};

    #[test]
    fn exp_matches_libm_to_a_few_ulp() {
        let mut worst = 0.0_f64;
        let mut x = -707.9;
        while x < 700.0 {
            let (a, b) = (exp(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x += 0.01234567;
        }
        assert!(worst < 1e-15, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-800.0), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(f64::NAN).is_nan());
    }

    /// Every compiled form of `gaussian_rows` gives the bits of the portable loop, and each
    /// value is `Kernel::from_dot` of its inner product: rows of every remainder of the vector
    /// width, products past the norms (a distance below zero, clipped), and rows past the end
    /// of `norms_x` (norm 0).
    #[test]
    fn gaussian_rows_compiled_forms_give_the_portable_bits() {
        type Form = unsafe fn(f64, &mut [f64], &[f64], usize, &[f64]);
        let gamma = 0.37;
        for cols in [1, 3, 8, 13, 17] {
            let rows = 5;
            let norms_x: Vec<f64> = (0..rows + 1).map(|i| 0.5 + i as f64).collect();
            let norms_z: Vec<f64> = (0..cols).map(|j| 1.0 + 0.25 * j as f64).collect();
            let dots: Vec<f64> = (0..rows * cols)
                .map(|k| ((k * 7919) % 101) as f64 / 25.0 - 1.0)
                .collect();
            let mut want = dots.clone();
            super::gaussian_rows_lanes(gamma, &mut want, &norms_x, 2, &norms_z);
            for (k, w) in want.iter().enumerate() {
                let (p, q) = (2 + k / cols, k % cols);
                let s = norms_x.get(p).copied().unwrap_or(0.0);
                let k = Kernel::Rbf { gamma }.from_dot(dots[k], s, norms_z[q]);
                assert_eq!(w.to_bits(), k.to_bits());
            }
            let mut forms: Vec<(&str, Form)> = Vec::new();
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    forms.push(("avx2", super::gaussian_rows_avx2));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    forms.push(("avx512", super::gaussian_rows_avx512));
                }
            }
            for (name, form) in forms {
                let mut got = dots.clone();
                // SAFETY: the CPU supports the form's features, checked above.
                unsafe { form(gamma, &mut got, &norms_x, 2, &norms_z) };
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{name}, {cols} columns"
                );
            }
        }
    }

    /// Every SIMD level of `exp_in_place` that this CPU runs gives the bits of the scalar `exp`,
    /// over the whole range and its edges (below -708, above 709, infinities, NaN), at lengths
    /// that leave every remainder of the vector width.
    #[test]
    fn exp_in_place_has_the_scalar_bits_at_every_simd_level() {
        let mut xs: Vec<f64> = (0..2_000).map(|i| -750.0 + 0.731 * f64::from(i)).collect();
        xs.extend([
            0.0,
            -0.0,
            -708.0,
            709.0,
            710.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NAN,
        ]);
        xs.extend([
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            -3.5e-12,
            0.5 * std::f64::consts::LN_2,
        ]);
        for len in [xs.len(), xs.len() - 1, xs.len() - 3, xs.len() - 5, 7, 1, 0] {
            let want: Vec<u64> = xs[..len].iter().map(|&x| exp(x).to_bits()).collect();
            let mut got = xs[..len].to_vec();
            super::exp_in_place(&mut got);
            assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut got = xs[..len].to_vec();
                    // SAFETY: the CPU supports AVX2, checked just above.
                    unsafe { super::exp_in_place_avx2(&mut got) };
                    assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    let mut got = xs[..len].to_vec();
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    unsafe { super::exp_in_place_avx512(&mut got) };
                    assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
                }
            }
        }
    }
}
