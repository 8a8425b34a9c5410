//! The Gram sources of the SMO: kernel values between the points of a dual problem, one row at
//! a time ([`GramRows`]), from a precomputed matrix read in place ([`PrecomputedGram`]), from
//! dense or CSR instances ([`InstanceGram`]), or between weighted combinations of instances
//! ([`ComboGram`]: SVM-CC, sMIL and the one-class MI-SVM), and [`max_weights`], the equal
//! weights on a bag's maximal instances (SVM-CC and the one-class MI-SVM).

use ndarray::{Array2, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use crate::bags::{Instances, Rows};
use crate::error::{invalid_data, invalid_param, Result};
use crate::kernel::Kernel;
use crate::linalg::Simd;

/// Points per parallel work unit of [`InstanceGram::fill_row`].
const ROW_CHUNK: usize = 512;
/// Rows below this many points are filled on the calling thread.
const PAR_MIN_POINTS: usize = 4096;

/// Kernel values between the points of a dual problem, one row at a time.
pub trait GramRows: Sync {
    /// Number of points.
    fn n_points(&self) -> usize;
    /// `k(x_i, x_i)` of every point.
    fn diagonal(&self) -> Vec<f64>;
    /// Row `i`: `out[j] = k(x_i, x_j)` for all points `j` (`out.len() == n_points()`). Must give
    /// bitwise the same values whatever the thread count.
    fn fill_row(&self, i: usize, out: &mut [f64]);
    /// Rows `points[q]` into `outs[q]`, each bitwise equal to [`GramRows::fill_row`] of it; an
    /// implementation may compute them together (default: one at a time).
    fn fill_rows(&self, points: &[usize], outs: &mut [&mut [f64]]) {
        for (&i, out) in points.iter().zip(outs.iter_mut()) {
            self.fill_row(i, out);
        }
    }
    /// Row `i` when it is stored contiguously and can be read in place (a precomputed matrix);
    /// the solver then neither caches nor copies it. Default: `None`.
    fn stored_row(&self, _i: usize) -> Option<&[f64]> {
        None
    }
    /// Whether [`GramRows::fill_rows_known`] reads the rows it is given: only a Gram whose
    /// `k(x_i, x_j)` and `k(x_j, x_i)` are the same bits may say so. Default: `false`.
    fn reads_known_rows(&self) -> bool {
        false
    }
    /// [`GramRows::fill_rows`], given `known[j]`, the row of point `j` when it is at hand
    /// (`known` is empty or holds `n_points()` entries). A Gram that
    /// [reads them](GramRows::reads_known_rows) takes `k(x_i, x_j) = known[j][i]` instead of
    /// computing it, which halves the work of a fit that ends up computing every row; the
    /// values are bitwise those of [`GramRows::fill_row`]. Default: ignores `known`.
    fn fill_rows_known(
        &self,
        points: &[usize],
        outs: &mut [&mut [f64]],
        _known: &[Option<&[f64]>],
    ) {
        self.fill_rows(points, outs);
    }
}

/// A precomputed symmetric kernel matrix (small problems, bag kernels), owned or borrowed. Its
/// rows are read in place: the solver's row cache is bypassed.
#[derive(Debug, Clone)]
pub struct PrecomputedGram<'a> {
    k: CowArray<'a, f64, Ix2>,
}

/// Tile edge of the symmetry check (two `TILE x TILE` blocks stay in the L1/L2 caches).
const SYM_TILE: usize = 64;

impl PrecomputedGram<'static> {
    /// Wraps an owned square, finite, symmetric matrix (see [`PrecomputedGram::from_view`]).
    pub fn new(k: Array2<f64>) -> Result<Self> {
        Self::checked(CowArray::from(k.as_standard_layout().into_owned()))
    }
}

impl<'a> PrecomputedGram<'a> {
    /// Wraps a borrowed square, finite, symmetric matrix without copying it when it is in
    /// row-major order. Asymmetry up to `1e-10` times its largest absolute value is tolerated;
    /// row `i` is used as given.
    pub fn from_view(k: ArrayView2<'a, f64>) -> Result<Self> {
        if k.is_standard_layout() {
            Self::checked(CowArray::from(k))
        } else {
            Self::checked(CowArray::from(k.as_standard_layout().into_owned()))
        }
    }

    fn checked(k: CowArray<'a, f64, Ix2>) -> Result<Self> {
        let (r, c) = k.dim();
        if r != c {
            return Err(invalid_data(format!(
                "precomputed kernel matrix must be square, got {r} x {c}"
            )));
        }
        let Some(all) = k.as_slice() else {
            return Err(invalid_data(
                "precomputed kernel matrix is not in row-major order",
            ));
        };
        // Largest magnitude; NaN and infinities show up as a non-finite sum of `0 * v`. Eight
        // independent lanes, so that the loop vectorises.
        let (mut lane_max, mut lane_zero) = ([0.0_f64; 8], [0.0_f64; 8]);
        let chunks = all.chunks_exact(8);
        let tail = chunks.remainder();
        for c in chunks {
            for l in 0..8 {
                let a = c[l].abs();
                lane_max[l] = if a > lane_max[l] { a } else { lane_max[l] };
                lane_zero[l] += 0.0 * c[l];
            }
        }
        for (l, &v) in tail.iter().enumerate() {
            lane_max[l] = if v.abs() > lane_max[l] {
                v.abs()
            } else {
                lane_max[l]
            };
            lane_zero[l] += 0.0 * v;
        }
        let amax = lane_max.iter().fold(0.0_f64, |m, &v| m.max(v));
        let zero: f64 = lane_zero.iter().sum();
        if !zero.is_finite() || !amax.is_finite() {
            return Err(invalid_data(
                "precomputed kernel matrix holds NaN or infinite values",
            ));
        }
        // Compare block (I, J) with block (J, I)^T tile by tile, so that the column reads of
        // the transposed block stay in cache.
        let tol = 1e-10 * amax;
        for i0 in (0..r).step_by(SYM_TILE) {
            for j0 in (0..=i0).step_by(SYM_TILE) {
                for i in i0..(i0 + SYM_TILE).min(r) {
                    let row = &all[i * r..(i + 1) * r];
                    for j in j0..(j0 + SYM_TILE).min(i) {
                        if (row[j] - all[j * r + i]).abs() > tol {
                            return Err(invalid_data(format!(
                                "precomputed kernel matrix is not symmetric at ({i}, {j})"
                            )));
                        }
                    }
                }
            }
        }
        Ok(Self { k })
    }

    /// The matrix.
    pub fn matrix(&self) -> ArrayView2<'_, f64> {
        self.k.view()
    }
}

impl GramRows for PrecomputedGram<'_> {
    fn n_points(&self) -> usize {
        self.k.nrows()
    }
    fn diagonal(&self) -> Vec<f64> {
        self.k.diag().to_vec()
    }
    fn fill_row(&self, i: usize, out: &mut [f64]) {
        out.copy_from_slice(self.stored_row(i).unwrap_or_default());
    }
    fn stored_row(&self, i: usize) -> Option<&[f64]> {
        self.k.row(i).to_slice()
    }
}

/// An instance kernel over dense (`f64` or `f32`) or CSR rows.
///
/// Dense rows whose whole matrix takes at most [`InstanceGram::with_store_limit`]'s bytes
/// ([`STORE_MAX_BYTES`] by default) are *stored*: the whole matrix is computed by one symmetric
/// block product the first time a row is asked for (`stored.rs`), then every row is read in
/// place, by every solve on this Gram ([`GramRows::stored_row`]).
///
/// Other rows are computed on demand from inner products and squared norms (dense rows:
/// `Simd::dots`, four rows per pass; then the vectorised `Kernel::finish_rows`). A row is split
/// into fixed chunks of points run in parallel when it is long; every value is computed the
/// same way whatever the chunking, and `f32` rows give the values of the same rows stored as
/// `f64`.
#[derive(Debug, Clone)]
pub struct InstanceGram<'a> {
    kernel: Kernel,
    rows: Rows<'a>,
    /// Dense rows in row-major order (borrowed when they already are).
    dense: Option<DenseRows<'a>>,
    sq_norms: Vec<f64>,
    simd: Simd,
    /// The largest matrix stored, in bytes.
    store_limit: usize,
    /// The whole matrix (`n x n`, row-major) once computed, when stored.
    store: Stored,
}

/// The stored matrix of an [`InstanceGram`], computed once; its `Debug` gives its size, not
/// its values.
#[derive(Clone, Default)]
struct Stored(std::sync::OnceLock<Vec<f64>>);

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.get() {
            Some(k) => write!(f, "Stored({} values)", k.len()),
            None => write!(f, "Stored(not computed)"),
        }
    }
}

/// The largest instance kernel matrix an [`InstanceGram`] stores by default: 128 MiB, 4,096
/// instances.
pub const STORE_MAX_BYTES: usize = 128 << 20;

/// Dense rows in row-major order, of either element type.
#[derive(Debug, Clone)]
enum DenseRows<'a> {
    F64(CowArray<'a, f64, Ix2>),
    F32(CowArray<'a, f32, Ix2>),
}

/// Runs `$body` with `$x` bound to the row-major values (`&[f64]` or `&[f32]`) of a
/// [`DenseRows`], and `$d` to the row length.
macro_rules! with_dense {
    ($rows:expr, |$x:ident, $d:ident| $body:expr) => {
        match $rows {
            DenseRows::F64(a) => {
                let $d = a.ncols();
                let $x = a.as_slice().unwrap_or_default();
                $body
            }
            DenseRows::F32(a) => {
                let $d = a.ncols();
                let $x = a.as_slice().unwrap_or_default();
                $body
            }
        }
    };
}

/// A view in standard layout, borrowed when it already is.
fn standard<T: Clone>(x: ArrayView2<'_, T>) -> CowArray<'_, T, Ix2> {
    if x.is_standard_layout() {
        CowArray::from(x)
    } else {
        CowArray::from(x.as_standard_layout().into_owned())
    }
}

impl<'a> InstanceGram<'a> {
    /// The kernel over these rows (one point per row). Fails on a Gaussian width that is not a
    /// finite positive number.
    pub fn new(kernel: Kernel, rows: Rows<'a>) -> Result<Self> {
        if let Kernel::Rbf { gamma } = kernel {
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(invalid_param(format!(
                    "gamma must be a finite number > 0, got {gamma}"
                )));
            }
        }
        let simd = Simd::detect();
        let dense = match rows {
            Rows::Dense(x) => Some(DenseRows::F64(standard(x))),
            Rows::Dense32(x) => Some(DenseRows::F32(standard(x))),
            Rows::Sparse(_) => None,
        };
        // Norms from the same inner products as the rows, so that `k(x, x)` is the same value
        // on the diagonal and in a row.
        let sq_norms = match (&dense, rows) {
            (Some(dense), _) => with_dense!(dense, |x, d| x
                .chunks_exact(d.max(1))
                .map(|r| simd.dot(r, r))
                .collect()),
            (None, Rows::Sparse(x)) => {
                let mut scratch = vec![0.0; x.n_cols()];
                (0..x.n_rows())
                    .map(|i| {
                        scatter(x, i, &mut scratch);
                        let v = sparse_dot(x, i, &scratch);
                        for &k in x.row(i).0 {
                            if let Some(s) = scratch.get_mut(k) {
                                *s = 0.0;
                            }
                        }
                        v
                    })
                    .collect()
            }
            (None, _) => Vec::new(),
        };
        Ok(Self {
            kernel,
            rows,
            dense,
            sq_norms,
            simd,
            store_limit: STORE_MAX_BYTES,
            store: Stored::default(),
        })
    }

    /// The same Gram, storing its whole matrix only when it takes at most `bytes` (a fit's
    /// memory budget).
    pub fn with_store_limit(mut self, bytes: usize) -> Self {
        self.store_limit = bytes;
        self
    }

    /// The whole matrix (`n x n`, row-major), computed on the first call, when the rows are
    /// dense and it fits [the limit](InstanceGram::with_store_limit); else `None`.
    fn stored(&self) -> Option<&[f64]> {
        let n = self.n_points();
        let bytes = n.checked_mul(n)?.checked_mul(8)?;
        if self.dense.is_none() || bytes > self.store_limit {
            return None;
        }
        let k = self.store.0.get_or_init(|| {
            super::stored::full_kernel(self.kernel, self.rows, &self.sq_norms, &self.diagonal())
        });
        Some(k.as_slice())
    }

    /// Kernel values of point `i` against points `lo..lo + out.len()`; `dense_i` is row `i`
    /// scattered into a dense vector (sparse rows only).
    fn fill_chunk(&self, i: usize, dense_i: &[f64], lo: usize, out: &mut [f64]) {
        match (&self.dense, self.rows) {
            (Some(dense), _) => with_dense!(dense, |all, d| {
                let xi = &all[i * d..(i + 1) * d];
                let z = &all[lo * d..(lo + out.len()) * d];
                self.simd.dots(xi, z, d, out);
            }),
            (None, Rows::Sparse(x)) => {
                for (j, o) in (lo..).zip(out.iter_mut()) {
                    *o = sparse_dot(x, j, dense_i);
                }
            }
            (None, _) => {}
        }
        let si = self.sq_norms.get(i).copied().unwrap_or(0.0);
        let norms = &self.sq_norms[lo..lo + out.len()];
        self.kernel.finish_rows(out, &[si], 0, norms);
    }
}

/// Row `i` of `x` added into the zeroed dense vector `dense` (duplicate columns add up).
fn scatter(x: &crate::bags::Csr, i: usize, dense: &mut [f64]) {
    let (idx, val) = x.row(i);
    for (&k, &v) in idx.iter().zip(val) {
        if let Some(s) = dense.get_mut(k) {
            *s += v;
        }
    }
}

/// `<x_j, x_i>` from CSR row `j` and row `i` scattered into `dense_i`, summed in the order of
/// row `j`'s stored entries.
#[inline]
fn sparse_dot(x: &crate::bags::Csr, j: usize, dense_i: &[f64]) -> f64 {
    let (idx, val) = x.row(j);
    idx.iter().zip(val).fold(0.0, |s, (&k, &v)| {
        s + v * dense_i.get(k).copied().unwrap_or(0.0)
    })
}

impl GramRows for InstanceGram<'_> {
    fn n_points(&self) -> usize {
        self.rows.n_rows()
    }
    fn diagonal(&self) -> Vec<f64> {
        self.sq_norms
            .iter()
            .map(|&s| self.kernel.from_dot(s, s, s))
            .collect()
    }
    fn fill_row(&self, i: usize, out: &mut [f64]) {
        if let Some(row) = self.stored_row(i) {
            let len = row.len().min(out.len());
            out[..len].copy_from_slice(&row[..len]);
            return;
        }
        let n = self.n_points();
        let mut dense_i = Vec::new();
        if let Rows::Sparse(x) = self.rows {
            dense_i = vec![0.0; x.n_cols()];
            scatter(x, i, &mut dense_i);
        }
        let len = n.min(out.len());
        let out = &mut out[..len];
        if n >= PAR_MIN_POINTS {
            out.par_chunks_mut(ROW_CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| self.fill_chunk(i, &dense_i, c * ROW_CHUNK, chunk));
        } else {
            for (c, chunk) in out.chunks_mut(ROW_CHUNK).enumerate() {
                self.fill_chunk(i, &dense_i, c * ROW_CHUNK, chunk);
            }
        }
    }

    /// Dense rows: each block of points is read once for all the requested rows
    /// (`Simd::dots_multi`), which divides the memory traffic of a row by their number.
    fn fill_rows(&self, points: &[usize], outs: &mut [&mut [f64]]) {
        self.fill_rows_known(points, outs, &[]);
    }

    /// Dense rows: an inner product, the sum of two norms and the kernel's function are each
    /// symmetric to the bit (the products commute, and the sums run in the feature order
    /// whichever row is the query), so a row computed earlier gives its column here.
    fn reads_known_rows(&self) -> bool {
        self.dense.is_some()
    }

    /// Every row when the matrix is [stored](InstanceGram::with_store_limit).
    fn stored_row(&self, i: usize) -> Option<&[f64]> {
        let n = self.n_points();
        self.stored()?.get(i * n..(i + 1) * n)
    }

    fn fill_rows_known(&self, points: &[usize], outs: &mut [&mut [f64]], known: &[Option<&[f64]>]) {
        if self.stored().is_some() {
            for (&i, out) in points.iter().zip(outs.iter_mut()) {
                self.fill_row(i, out);
            }
            return;
        }
        let Some(dense) = self.dense.as_ref() else {
            for (&i, out) in points.iter().zip(outs.iter_mut()) {
                self.fill_row(i, out);
            }
            return;
        };
        with_dense!(dense, |all, d| self
            .fill_rows_dense(all, d, points, outs, known))
    }
}

impl InstanceGram<'_> {
    /// [`GramRows::fill_rows_known`] on dense rows (`all`, row-major, `d` columns): in each
    /// block of points, the inner products at the points whose rows are not known, read once
    /// for all the requested rows ([`Simd::dots_multi`]).
    fn fill_rows_dense<T: crate::linalg::Real>(
        &self,
        all: &[T],
        d: usize,
        points: &[usize],
        outs: &mut [&mut [f64]],
        known: &[Option<&[f64]>],
    ) {
        let n = self.n_points();
        let queries: Vec<&[T]> = points.iter().map(|&i| &all[i * d..(i + 1) * d]).collect();
        let n_chunks = n.div_ceil(ROW_CHUNK);
        let mut per_chunk: Vec<Vec<&mut [f64]>> = (0..n_chunks).map(|_| Vec::new()).collect();
        for out in outs.iter_mut() {
            let len = n.min(out.len());
            for (c, piece) in out[..len].chunks_mut(ROW_CHUNK).enumerate() {
                per_chunk[c].push(piece);
            }
        }
        let fill = |c: usize, pieces: &mut Vec<&mut [f64]>| {
            let lo = c * ROW_CHUNK;
            let hi = (lo + ROW_CHUNK).min(n);
            let known = known.get(lo..hi).unwrap_or_default();
            let z = &all[lo * d..hi * d];
            let norms = &self.sq_norms[lo..hi];
            let at_hand: Vec<(usize, &[f64])> = known
                .iter()
                .enumerate()
                .filter_map(|(k, row)| row.map(|row| (k, row)))
                .collect();
            // the inner products at the points whose rows are not at hand
            let m = pieces.iter().map(|p| p.len()).min().unwrap_or(0);
            let unknown = (0..m).filter(|&k| known.get(k).is_none_or(Option::is_none));
            self.simd
                .dots_multi(&queries, z, d, unknown, pieces.as_mut_slice());
            for (piece, &i) in pieces.iter_mut().zip(points) {
                let si = self.sq_norms.get(i).copied().unwrap_or(0.0);
                self.kernel
                    .finish_rows(piece, &[si], 0, &norms[..piece.len()]);
                // the whole block is finished at once; at the known points, what the slot held
                // is overwritten here
                for &(k, row) in &at_hand {
                    piece[k] = row[i];
                }
            }
        };
        if n >= PAR_MIN_POINTS {
            per_chunk
                .par_iter_mut()
                .enumerate()
                .for_each(|(c, pieces)| fill(c, pieces));
        } else {
            for (c, pieces) in per_chunk.iter_mut().enumerate() {
                fill(c, pieces);
            }
        }
    }
}

/// Combinations of more than this many instances get their kernel rows from one block product
/// (GEMM for dense rows) instead of instance rows one at a time.
const BLOCK_MIN: usize = 4;
/// Instances per block of such a product (bounds its memory to `BLOCK_ROWS x n_instances`).
const BLOCK_ROWS: usize = 256;
/// Bytes of instance kernel rows that one group of [`ComboGram::fill_rows`] computes together
/// (at least [`BLOCK_MIN`] rows).
const MEMBER_ROWS_BYTES: usize = 16 << 20;

/// Kernel rows between *points* that are weighted combinations of instance rows
/// (`point = sum_t w_t phi(x_t)`): `k(p, q) = sum_s sum_t w_s w_t k(x_s, x_t)`, computed from the
/// instance kernel rows of an [`InstanceGram`] (single instances) or from blocks
/// `K(X_p, X)` of inner products (combinations of several instances; sparse rows stay sparse).
/// Nothing of size `n_instances^2` is held.
pub struct ComboGram<'a, 'g> {
    inst: &'g InstanceGram<'a>,
    x: &'g Instances,
    kernel: Kernel,
    norms: Vec<f64>,
    points: Vec<Vec<(usize, f64)>>,
}

impl<'a, 'g> ComboGram<'a, 'g> {
    /// Points as lists of `(instance, weight)` over the rows of `x`, whose instance kernel is
    /// `inst` (built from the same `x` and `kernel`).
    pub fn new(
        inst: &'g InstanceGram<'a>,
        x: &'g Instances,
        kernel: Kernel,
        points: Vec<Vec<(usize, f64)>>,
    ) -> Self {
        Self {
            inst,
            x,
            kernel,
            norms: x.sq_norms(),
            points,
        }
    }

    /// `sum_{(s, w) in point} w k(x_s, x_t)` for every instance `t`.
    fn instance_row(&self, point: usize, out: &mut [f64]) {
        let n = self.inst.n_points();
        out.iter_mut().for_each(|v| *v = 0.0);
        let pts = &self.points[point];
        if let Some(k) = self.inst.stored() {
            // the members' rows read in place
            for &(s, w) in pts {
                for (o, &v) in out.iter_mut().zip(&k[s * n..(s + 1) * n]) {
                    *o += w * v;
                }
            }
            return;
        }
        if pts.len() > BLOCK_MIN {
            for chunk in pts.chunks(BLOCK_ROWS) {
                let rows: Vec<usize> = chunk.iter().map(|p| p.0).collect();
                // the kernel values of the block, vectorised (the values of `Kernel::from_dot`)
                let k = self.block_rows(&rows);
                for (&(_, w), krow) in chunk.iter().zip(k.chunks_exact(n.max(1))) {
                    for (o, &v) in out.iter_mut().zip(krow) {
                        *o += w * v;
                    }
                }
            }
            return;
        }
        let mut tmp = vec![0.0; n];
        for &(s, w) in pts {
            self.inst.fill_row(s, &mut tmp);
            for (o, &k) in out.iter_mut().zip(&tmp) {
                *o += w * k;
            }
        }
    }
}

impl GramRows for ComboGram<'_, '_> {
    fn n_points(&self) -> usize {
        self.points.len()
    }
    fn diagonal(&self) -> Vec<f64> {
        let idiag = self.inst.diagonal();
        let stored = self.inst.stored();
        let n = self.inst.n_points();
        self.points
            .iter()
            .map(|pts| match (pts.as_slice(), stored) {
                ([(s, w)], _) => w * w * idiag[*s],
                // the point's own value in its row, summed as the row sums it
                (_, Some(k)) => pts
                    .iter()
                    .map(|&(t, wt)| {
                        wt * pts
                            .iter()
                            .fold(0.0, |acc, &(s, ws)| acc + ws * k[s * n + t])
                    })
                    .sum(),
                _ => {
                    // the point's own block K(X_p, X_p)
                    let rows: Vec<usize> = pts.iter().map(|p| p.0).collect();
                    let xp = self.x.select_rows(&rows);
                    let dots = xp.cross_gram(&xp);
                    let mut sum = 0.0;
                    for (&(s, ws), drow) in pts.iter().zip(dots.rows()) {
                        for (&(t, wt), &d) in pts.iter().zip(drow) {
                            sum += ws * wt * self.kernel.from_dot(d, self.norms[s], self.norms[t]);
                        }
                    }
                    sum
                }
            })
            .collect()
    }
    fn fill_row(&self, i: usize, out: &mut [f64]) {
        let mut row = vec![0.0; self.inst.n_points()];
        self.instance_row(i, &mut row);
        self.combine(&row, out);
    }

    /// The rows of the points of at most `BLOCK_MIN` instances take their instance kernel
    /// rows from one batch of [`InstanceGram::fill_rows`] (one pass over the instances for all
    /// of them), in groups whose instance rows fill at most `MEMBER_ROWS_BYTES`; the values
    /// are those of [`GramRows::fill_row`], bit for bit.
    fn fill_rows(&self, points: &[usize], outs: &mut [&mut [f64]]) {
        let per_group = MEMBER_ROWS_BYTES / (8 * self.inst.n_points().max(1));
        self.fill_rows_in_groups(points, outs, per_group.max(BLOCK_MIN));
    }
}

impl ComboGram<'_, '_> {
    /// [`GramRows::fill_rows`] with at most `per_group` distinct member rows per group (more
    /// when one point has more). The members of small combinations take their rows from one
    /// batch of [`InstanceGram::fill_rows`]; the members of large ones from one block product
    /// for the whole group, which packs the instances once (the same values as
    /// [`ComboGram::instance_row`]'s product per point, bit for bit: a product's value for a
    /// pair of rows does not depend on the other rows of its block). When the instance kernel
    /// is stored, each point sums its members' stored rows in place instead.
    fn fill_rows_in_groups(&self, points: &[usize], outs: &mut [&mut [f64]], per_group: usize) {
        let n = self.inst.n_points();
        if self.inst.stored().is_some() {
            // every member's row is at hand: no group to gather
            let mut row = vec![0.0; n];
            for (&p, out) in points.iter().zip(outs.iter_mut()) {
                self.instance_row(p, &mut row);
                self.combine(&row, out);
            }
            return;
        }
        let mut slot = vec![usize::MAX; n];
        let mut big_slot = vec![usize::MAX; n];
        let mut row = vec![0.0; n];
        let mut start = 0;
        while start < points.len() {
            // the next group: points until their distinct members fill it
            let mut members: Vec<usize> = Vec::new();
            let mut big_members: Vec<usize> = Vec::new();
            let mut end = start;
            while end < points.len() {
                let pts = &self.points[points[end]];
                let slots = if pts.len() <= BLOCK_MIN {
                    &slot
                } else {
                    &big_slot
                };
                let new = pts.iter().filter(|&&(s, _)| slots[s] == usize::MAX).count();
                if end > start && members.len() + big_members.len() + new > per_group {
                    break;
                }
                let (slots, list) = if pts.len() <= BLOCK_MIN {
                    (&mut slot, &mut members)
                } else {
                    (&mut big_slot, &mut big_members)
                };
                for &(s, _) in pts {
                    if slots[s] == usize::MAX {
                        slots[s] = list.len();
                        list.push(s);
                    }
                }
                end += 1;
            }
            let mut buffer = vec![0.0; members.len() * n];
            if !members.is_empty() {
                let mut rows: Vec<&mut [f64]> = buffer.chunks_mut(n.max(1)).collect();
                self.inst.fill_rows(&members, &mut rows);
            }
            let big = self.block_rows(&big_members);
            for (&p, out) in points[start..end].iter().zip(outs[start..end].iter_mut()) {
                let pts = &self.points[p];
                let (rows, slots) = if pts.len() <= BLOCK_MIN {
                    (&buffer, &slot)
                } else {
                    (&big, &big_slot)
                };
                // the sum of `instance_row`, in its order
                row.iter_mut().for_each(|v| *v = 0.0);
                for &(s, w) in pts {
                    let k = &rows[slots[s] * n..(slots[s] + 1) * n];
                    for (o, &v) in row.iter_mut().zip(k) {
                        *o += w * v;
                    }
                }
                self.combine(&row, out);
            }
            for &s in &members {
                slot[s] = usize::MAX;
            }
            for &s in &big_members {
                big_slot[s] = usize::MAX;
            }
            start = end;
        }
    }

    /// The instance kernel rows of `rows` (`rows.len() x n_instances`, row-major) from one
    /// block product `X_rows X^T` and [`Kernel::finish_rows`]: the values
    /// [`ComboGram::instance_row`] uses for a large combination.
    fn block_rows(&self, rows: &[usize]) -> Vec<f64> {
        if rows.is_empty() {
            return Vec::new();
        }
        let dots = self.x.select_rows(rows).cross_gram(self.x);
        let mut k: Vec<f64> = if dots.is_standard_layout() {
            dots.into_raw_vec_and_offset().0
        } else {
            dots.iter().copied().collect()
        };
        let member_norms: Vec<f64> = rows.iter().map(|&s| self.norms[s]).collect();
        self.kernel
            .finish_rows(&mut k, &member_norms, 0, &self.norms);
        k
    }

    /// Row of the points from the instance row `row` of one point:
    /// `out[q] = sum_{(t, w) in point q} w row[t]`.
    fn combine(&self, row: &[f64], out: &mut [f64]) {
        for (o, pts) in out.iter_mut().zip(&self.points) {
            *o = pts.iter().map(|&(t, w)| w * row[t]).sum();
        }
    }
}

/// Relative tolerance under which two instance scores of a bag count as tied.
const TIE_TOL: f64 = 1e-10;

/// The LP's `v` for one bag (SVM-CC; also the weights of a one-class MI-SVM bag's
/// pseudo-sample): equal weights on the instances whose score is within `1e-10 max(1, |max|)` of
/// the bag's maximum.
pub fn max_weights(scores: &[f64]) -> Vec<f64> {
    let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tol = TIE_TOL * m.abs().max(1.0);
    let top: Vec<bool> = scores.iter().map(|&s| s >= m - tol).collect();
    let n = top.iter().filter(|&&t| t).count().max(1) as f64;
    top.iter().map(|&t| if t { 1.0 / n } else { 0.0 }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bags::Rows;
    use ndarray::Array2;

    /// Batches of rows (any grouping, repeated members, large combinations among small ones)
    /// are the single rows, bit for bit.
    #[test]
    fn combination_rows_in_batches_are_the_single_rows() -> Result<()> {
        let (n, d) = (37, 5);
        let x = Array2::from_shape_fn((n, d), |(i, j)| ((i * 7 + j * 13) % 11) as f64 / 3.0 - 1.5);
        let inst_x = Instances::from(x.clone());
        let kernel = Kernel::Rbf { gamma: 0.3 };
        // instance rows on demand, and stored
        for limit in [0, STORE_MAX_BYTES] {
            let inst = InstanceGram::new(kernel, Rows::from(&inst_x))?.with_store_limit(limit);
            // singles, pairs sharing members, a combination over BLOCK_MIN
            let mut points: Vec<Vec<(usize, f64)>> = (0..10).map(|t| vec![(t, 1.0)]).collect();
            points.push(vec![(3, 0.5), (4, 0.5)]);
            points.push(vec![(4, 0.25), (20, 0.75), (3, -1.0)]);
            points.push((10..20).map(|t| (t, 0.1)).collect());
            points.push(vec![(30, 2.0), (31, 1.0), (32, 0.5), (33, 0.25)]);
            let combo = ComboGram::new(&inst, &inst_x, kernel, points);
            batches_are_single_rows(
                &combo,
                &[12, 0, 10, 11, 3, 13, 3, 5, 1],
                &[1, 2, 4, 100],
                &format!("store limit {limit}: "),
            );
        }
        Ok(())
    }

    /// Asserts that the rows of `order`, computed in groups of every size of `per_groups`, are
    /// [`GramRows::fill_row`]'s, bit for bit (`what` names the case).
    fn batches_are_single_rows(
        combo: &ComboGram,
        order: &[usize],
        per_groups: &[usize],
        what: &str,
    ) {
        let m = combo.n_points();
        let want: Vec<Vec<f64>> = (0..m)
            .map(|i| {
                let mut r = vec![0.0; m];
                combo.fill_row(i, &mut r);
                r
            })
            .collect();
        for &per_group in per_groups {
            let mut got = vec![vec![f64::NAN; m]; order.len()];
            let mut outs: Vec<&mut [f64]> = got.iter_mut().map(|r| r.as_mut_slice()).collect();
            combo.fill_rows_in_groups(order, &mut outs, per_group);
            for (q, &p) in order.iter().enumerate() {
                let same = got[q]
                    .iter()
                    .zip(&want[p])
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{what}point {p}, groups of {per_group}");
            }
        }
    }

    /// Several large combinations in one group (sharing members with each other and with a
    /// small one) on rows wide enough for the product's blocking: their rows from one block
    /// product are the single rows, bit for bit.
    #[test]
    fn large_combinations_in_one_group_are_the_single_rows() -> Result<()> {
        for (n, d) in [(130, 300), (61, 7), (300, 1100)] {
            let x = Array2::from_shape_fn((n, d), |(i, j)| {
                ((i * 31 + j * 17) % 23) as f64 / 7.0 - 1.6 + (j as f64).sin() * 1e-3
            });
            let inst_x = Instances::from(x.clone());
            let kernel = Kernel::Rbf {
                gamma: 1.0 / d as f64,
            };
            for limit in [0, STORE_MAX_BYTES] {
                let inst = InstanceGram::new(kernel, Rows::from(&inst_x))?.with_store_limit(limit);
                let mut points: Vec<Vec<(usize, f64)>> = (0..6).map(|t| vec![(t, 1.0)]).collect();
                points.push((6..20).map(|t| (t, 1.0 / 14.0)).collect());
                points.push((15..40).map(|t| (t, 0.04)).collect()); // shares 15..20
                points.push(vec![(16, 0.5), (50, 0.5)]); // small, shares 16
                points.push((40..n).step_by(3).map(|t| (t, 0.3)).collect());
                points.push((0..n).map(|t| (t, 1.0 / n as f64)).collect()); // every instance
                let combo = ComboGram::new(&inst, &inst_x, kernel, points);
                // a point's diagonal value is its own value in its row
                let diag = combo.diagonal();
                for (p, &dv) in diag.iter().enumerate() {
                    let mut row = vec![0.0; combo.n_points()];
                    combo.fill_row(p, &mut row);
                    if limit > 0 {
                        assert_eq!(dv.to_bits(), row[p].to_bits(), "{n} x {d}: point {p}");
                    } else {
                        assert!((dv - row[p]).abs() <= 1e-12 * dv.abs().max(1.0));
                    }
                }
                let what = format!("{n} x {d}, store limit {limit}: ");
                batches_are_single_rows(
                    &combo,
                    &[7, 6, 8, 0, 10, 9, 3, 6],
                    &[1, 20, 60, 10_000],
                    &what,
                );
            }
        }
        Ok(())
    }

    /// Instance rows computed with some rows known (any subset, any batch of 1-9 rows, dense
    /// `f64` and `f32`, both kernels, rows spanning several chunks) are the rows computed alone,
    /// bit for bit; and a row is the column of the same Gram, bit for bit.
    #[test]
    fn rows_with_known_rows_are_the_rows_computed_alone() -> Result<()> {
        for (n, d) in [(37, 5), (600, 9), (61, 166)] {
            let x = Array2::from_shape_fn((n, d), |(i, j)| {
                ((i * 31 + j * 17 + i * j) % 23) as f64 / 5.0 - 2.1
            });
            let x32 = x.mapv(|v| v as f32);
            for kernel in [Kernel::Linear, Kernel::Rbf { gamma: 0.07 }] {
                for rows in [Rows::Dense(x.view()), Rows::Dense32(x32.view())] {
                    // rows on demand (the stored matrix is tested on its own)
                    let g = InstanceGram::new(kernel, rows)?.with_store_limit(0);
                    assert!(g.reads_known_rows());
                    assert!(g.stored_row(0).is_none());
                    let alone: Vec<Vec<f64>> = (0..n)
                        .map(|i| {
                            let mut r = vec![f64::NAN; n];
                            g.fill_row(i, &mut r);
                            r
                        })
                        .collect();
                    let bits = |r: &[f64]| r.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    for (i, row) in alone.iter().enumerate() {
                        let column: Vec<f64> = alone.iter().map(|r| r[i]).collect();
                        assert_eq!(bits(row), bits(&column), "row {i} is its column");
                    }
                    for (seed, batch) in [(1usize, 1usize), (2, 3), (3, 4), (4, 5), (5, 9)] {
                        // every third, every other, or most points known, never the batch's
                        let points: Vec<usize> = (0..batch).map(|q| (q * 7 + seed) % n).collect();
                        let known: Vec<Option<&[f64]>> = (0..n)
                            .map(|j| {
                                let take = (j * 5 + seed) % (seed + 2) != 0 && !points.contains(&j);
                                take.then_some(alone[j].as_slice())
                            })
                            .collect();
                        let mut got = vec![vec![f64::NAN; n]; batch];
                        let mut outs: Vec<&mut [f64]> =
                            got.iter_mut().map(|r| r.as_mut_slice()).collect();
                        g.fill_rows_known(&points, &mut outs, &known);
                        for (q, &p) in points.iter().enumerate() {
                            assert_eq!(bits(&got[q]), bits(&alone[p]), "n {n} d {d} point {p}");
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A stored matrix (several blocks of rows, dense `f64` and `f32`, both kernels) is the
    /// rows computed on demand within rounding, exactly symmetric, with the Gram's diagonal,
    /// and the same bits on one thread and on three.
    #[test]
    fn a_stored_matrix_is_the_rows_on_demand() -> Result<()> {
        for (n, d) in [(37, 5), (300, 9), (520, 166)] {
            let x = Array2::from_shape_fn((n, d), |(i, j)| {
                ((i * 31 + j * 17 + i * j) % 23) as f64 / 5.0 - 2.1 + (i as f64).cos() * 1e-3
            });
            let x32 = x.mapv(|v| v as f32);
            for kernel in [Kernel::Linear, Kernel::Rbf { gamma: 0.07 }] {
                for rows in [Rows::Dense(x.view()), Rows::Dense32(x32.view())] {
                    let lazy = InstanceGram::new(kernel, rows)?.with_store_limit(0);
                    let stored_on = |threads: usize| -> Result<Vec<f64>> {
                        let g = InstanceGram::new(kernel, rows)?;
                        crate::threads::with_threads(Some(threads), || {
                            g.stored().map(<[f64]>::to_vec)
                        })?
                        .ok_or_else(|| invalid_data("not stored"))
                    };
                    let k = stored_on(1)?;
                    let k3 = stored_on(3)?;
                    assert!(k.iter().zip(&k3).all(|(a, b)| a.to_bits() == b.to_bits()));
                    let diag = lazy.diagonal();
                    let mut row = vec![0.0; n];
                    for i in 0..n {
                        lazy.fill_row(i, &mut row);
                        assert_eq!(k[i * n + i].to_bits(), diag[i].to_bits(), "diagonal {i}");
                        for j in 0..n {
                            let (a, b) = (k[i * n + j], row[j]);
                            assert_eq!(a.to_bits(), k[j * n + i].to_bits(), "({i}, {j})");
                            assert!(
                                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                                "{n} x {d} ({i}, {j}): {a} against {b}"
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
