//! A dual SMO solver in the style of LIBSVM for box- and equality-constrained kernel QPs.
//!
//! The problem (Chang & Lin, "LIBSVM: a library for support vector machines", eq. (11) with an
//! extra diagonal and per-variable bounds) is
//!
//! `min_a 1/2 a^T (Q + diag(d)) a - p^T a   s.t.  y^T a = delta,  0 <= a_i <= u_i`
//!
//! with `Q_ij = y_i y_j k(x_{m_i}, x_{m_j})`, labels `y_i` in {-1, +1} and `m_i` the *point* of
//! sample `i` (several samples may share one point, e.g. one instance used with both targets).
//! The hinge C-SVM is `d = 0, u_i = C_i, p = 1, delta = 0`; the squared-hinge (L2-loss) SVM is
//! `d_i = 1 / (2 c_i), u_i = +inf`; the one-class SVM is `y = 1, p = 0, delta = 1, u_i = 1/(nu l)`.
//! `u_i = 0` fixes `a_i = 0` (a dead sample, never selected).
//!
//! The solver follows LIBSVM's `Solver::Solve`:
//!
//! * second-order working-set selection (WSS 2 of Fan, Chen & Lin 2005, "Working set selection
//!   using second order information for training SVM", eq. (16)-(17); LIBSVM paper section 4.1.2)
//!   with `Q_ii + d_i` as the diagonal and `tau = 1e-12` for non-positive curvature;
//! * the analytic two-variable update clipped to the box (LIBSVM paper section 4.1.3; `u` may be
//!   infinite, a variable is then never at its upper bound);
//! * shrinking with gradient reconstruction (LIBSVM paper section 5.1, `do_shrinking`,
//!   `reconstruct_gradient`; `G_bar` of section 5.2 is built lazily the first time it is needed,
//!   so a warm start whose gradient is known costs no kernel row at all);
//! * the stopping rule `m(a) - M(a) < eps` on the maximal violating pair (LIBSVM paper eq. (14)),
//!   made relative: `eps = tol * scale`, see [`SmoParams::tol`].
//!
//! A warm start ([`Smo::solve`] with `warm`) departs from LIBSVM's schedule in two ways, because
//! its gradient already describes a point near the optimum: it shrinks at the first iteration
//! (LIBSVM waits `min(l, 1000)` iterations, since at `a = 0` the gradient says little), and it
//! skips the gradient reconstruction that LIBSVM makes once the gap falls below `10 eps`, so that
//! a solve reconstructs once, at the end (where a violator among the shrunk samples sends the
//! solver on over all of them, as always). On the sequences of solves of the annealing family
//! this does the same iterations with half the reconstructions and a smaller active set.
//!
//! How it is laid out for speed (none of it changes a result):
//!
//! * samples are indexed by *position*: shrunk samples are swapped behind the active ones
//!   (LIBSVM's `swap_index`), and after every shrinking both groups are reordered by point, so
//!   that the per-iteration loops run over contiguous arrays and read kernel rows in order;
//! * the loops (first index, second index, gradient update fused with the next first index)
//!   are the scans of `scan`: four independent lanes, AVX2 when the CPU has it (bitwise equal
//!   to the portable code), in fixed blocks of positions merged in order, on several threads
//!   when the active set is large;
//! * kernel rows are cached by *point* (not sample) in an LRU cache that lives in [`Smo`] and
//!   serves every later [`Smo::solve`] of the same fit; a missing row is computed with the rows
//!   of the strongest violators in one pass over the instances ([`GramRows::fill_rows`]); a
//!   precomputed matrix is read in place;
//! * gradient reconstruction sums whole rows per point when it rebuilds many samples.
//!
//! Every floating-point sum runs in an order fixed by the problem alone, so results are bitwise
//! identical for any number of threads.

use ndarray::{Array2, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use crate::error::{invalid_data, invalid_param, Error, Result};
use crate::kernel::{Kernel, Rows, Simd};

mod scan;
use scan::{
    first_choice, second_choice, update_and_first, ArgMax, SecondChoice, SecondInputs, UpdateInputs,
};

/// Curvature used when `Q_ii + Q_jj - 2 Q_ij <= 0` (LIBSVM's `TAU`; Fan et al. 2005, eq. (17)).
const TAU: f64 = 1e-12;
/// Points per parallel work unit of [`InstanceGram::fill_row`].
const ROW_CHUNK: usize = 512;
/// Rows below this many points are filled on the calling thread.
const PAR_MIN_POINTS: usize = 4096;
/// Marker for "no index" in the cache's lists.
const NIL: usize = usize::MAX;

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

/// An instance kernel over dense or CSR rows, each kernel row computed on demand from inner
/// products and squared norms (dense rows: `Simd::dots`, four rows per pass; then the
/// vectorised `Kernel::finish_rows`). A row is split into fixed chunks of points run in
/// parallel when it is long; every value is computed the same way whatever the chunking.
#[derive(Debug, Clone)]
pub struct InstanceGram<'a> {
    kernel: Kernel,
    rows: Rows<'a>,
    /// Dense rows in row-major order (borrowed when they already are).
    dense: Option<CowArray<'a, f64, Ix2>>,
    sq_norms: Vec<f64>,
    simd: Simd,
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
            Rows::Dense(x) if x.is_standard_layout() => Some(CowArray::from(x)),
            Rows::Dense(x) => Some(CowArray::from(x.as_standard_layout().into_owned())),
            Rows::Sparse(_) => None,
        };
        // Norms from the same inner products as the rows, so that `k(x, x)` is the same value
        // on the diagonal and in a row.
        let sq_norms = match (&dense, rows) {
            (Some(x), _) => x
                .rows()
                .into_iter()
                .map(|r| {
                    let r = r.to_slice().unwrap_or_default();
                    simd.dot(r, r)
                })
                .collect(),
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
            (None, Rows::Dense(_)) => Vec::new(),
        };
        Ok(Self {
            kernel,
            rows,
            dense,
            sq_norms,
            simd,
        })
    }

    /// Kernel values of point `i` against points `lo..lo + out.len()`; `dense_i` is row `i`
    /// scattered into a dense vector (sparse rows only).
    fn fill_chunk(&self, i: usize, dense_i: &[f64], lo: usize, out: &mut [f64]) {
        match (&self.dense, self.rows) {
            (Some(x), _) => {
                let d = x.ncols();
                let (Some(all), Some(xi)) = (x.as_slice(), x.row(i).to_slice()) else {
                    return; // unreachable: `dense` is in standard layout
                };
                let z = &all[lo * d..(lo + out.len()) * d];
                self.simd.dots(xi, z, d, out);
            }
            (None, Rows::Sparse(x)) => {
                for (j, o) in (lo..).zip(out.iter_mut()) {
                    *o = sparse_dot(x, j, dense_i);
                }
            }
            (None, Rows::Dense(_)) => {}
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
        let Some(x) = self.dense.as_ref() else {
            for (&i, out) in points.iter().zip(outs.iter_mut()) {
                self.fill_row(i, out);
            }
            return;
        };
        let (n, d) = (self.n_points(), x.ncols());
        let (Some(all), Some(queries)) = (
            x.as_slice(),
            points
                .iter()
                .map(|&i| x.row(i).to_slice())
                .collect::<Option<Vec<&[f64]>>>(),
        ) else {
            return; // unreachable: `dense` is in standard layout
        };
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
            self.simd
                .dots_multi(&queries, &all[lo * d..hi * d], d, pieces.as_mut_slice());
            for (piece, &i) in pieces.iter_mut().zip(points) {
                let si = self.sq_norms.get(i).copied().unwrap_or(0.0);
                self.kernel
                    .finish_rows(piece, &[si], 0, &self.sq_norms[lo..lo + piece.len()]);
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

/// One dual problem over the points of a [`GramRows`] (see the module docs for the formula).
#[derive(Debug, Clone, Copy)]
pub struct DualProblem<'a> {
    /// Labels `y_i` in {-1, +1}, one per sample.
    pub y: &'a [f64],
    /// Point index `m_i < n_points` of every sample.
    pub point: &'a [usize],
    /// Linear term `p_i` (finite).
    pub p: &'a [f64],
    /// Extra diagonal `d_i >= 0` (finite).
    pub d: &'a [f64],
    /// Upper bounds `u_i >= 0` (`+inf` allowed, `0` fixes `a_i = 0`).
    pub u: &'a [f64],
    /// Right-hand side of the equality `y^T a = delta`.
    pub delta: f64,
}

impl DualProblem<'_> {
    /// Number of samples (variables).
    pub fn len(&self) -> usize {
        self.y.len()
    }
    /// Whether the problem has no variables.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Checks lengths and value ranges against a Gram of `n_points` points.
    pub fn validate(&self, n_points: usize) -> Result<()> {
        let n = self.y.len();
        for (name, len) in [
            ("point", self.point.len()),
            ("p", self.p.len()),
            ("d", self.d.len()),
            ("u", self.u.len()),
        ] {
            if len != n {
                return Err(invalid_data(format!(
                    "dual problem: {name} has {len} entries, y has {n}"
                )));
            }
        }
        if let Some(i) = self.y.iter().position(|&v| v != 1.0 && v != -1.0) {
            return Err(invalid_data(format!(
                "dual problem: y[{i}] = {} is not -1 or +1",
                self.y[i]
            )));
        }
        if let Some(i) = self.point.iter().position(|&m| m >= n_points) {
            return Err(invalid_data(format!(
                "dual problem: point[{i}] = {} but the kernel has {n_points} points",
                self.point[i]
            )));
        }
        if let Some(i) = self.p.iter().position(|v| !v.is_finite()) {
            return Err(invalid_data(format!(
                "dual problem: p[{i}] = {} is not finite",
                self.p[i]
            )));
        }
        if let Some(i) = self.d.iter().position(|&v| !(v.is_finite() && v >= 0.0)) {
            return Err(invalid_param(format!(
                "dual problem: d[{i}] = {} must be finite and >= 0",
                self.d[i]
            )));
        }
        if let Some(i) = self.u.iter().position(|&v| v.is_nan() || v < 0.0) {
            return Err(invalid_param(format!(
                "dual problem: u[{i}] = {} must be >= 0 (inf allowed)",
                self.u[i]
            )));
        }
        if !self.delta.is_finite() {
            return Err(invalid_param(format!(
                "dual problem: delta = {} is not finite",
                self.delta
            )));
        }
        Ok(())
    }
}

/// Settings of [`Smo`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoParams {
    /// Relative KKT tolerance (default `1e-3`): stop when the maximal violating pair gap
    /// `m(a) - M(a)` (LIBSVM paper eq. (14)) falls below `tol * scale`, where `scale` is the
    /// larger of the gap at `a = 0` (`max_{y=+1} p_i + max_{y=-1} p_i` over live samples, 0
    /// when a class is absent), `|delta| max_i (Q_ii + d_i)` (the gradient size at a feasible
    /// point when `delta != 0`, e.g. one-class) and `1e-12`. Scaling `p`, `u` and `delta` by
    /// one constant scales the solution and leaves the stopping point unchanged.
    pub tol: f64,
    /// Iteration cap (`None`: `max(10_000_000, 100 n)`); reaching it gives
    /// [`Termination::MaxIter`] with a feasible solution.
    pub max_iter: Option<usize>,
    /// LIBSVM's shrinking heuristic (default true).
    pub shrinking: bool,
    /// Kernel-row cache size in bytes (default 200 MiB); at least two rows are always kept.
    pub cache_bytes: usize,
}

impl Default for SmoParams {
    fn default() -> Self {
        Self {
            tol: 1e-3,
            max_iter: None,
            shrinking: true,
            cache_bytes: 200 << 20,
        }
    }
}

/// Why [`Smo::solve`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// The relative KKT gap fell below the tolerance.
    Converged,
    /// The iteration cap was reached (the solution is feasible but not optimal).
    MaxIter,
}

/// The result of [`Smo::solve`].
#[derive(Debug, Clone, PartialEq)]
pub struct DualSolution {
    /// The dual variables `a`.
    pub alpha: Vec<f64>,
    /// `(Q a)_i` without the `diag(d)` term: the decision value at the point of sample `i` is
    /// `f(x_{m_i}) = y_i q_alpha[i] + b` with `f(x) = sum_s y_s a_s k(x_{m_s}, x) + b`.
    pub q_alpha: Vec<f64>,
    /// Bias `b = -rho` (LIBSVM's `calculate_rho`: the average of `-y_i G_i` over free
    /// variables, or the midpoint of the feasible interval when none is free).
    pub b: f64,
    /// Objective `1/2 a^T (Q + diag(d)) a - p^T a`.
    pub objective: f64,
    /// SMO iterations of this solve.
    pub iterations: usize,
    /// Why the solver stopped.
    pub termination: Termination,
}

/// LRU cache of kernel rows keyed by point; every row holds all `n_points` values.
#[derive(Debug)]
struct RowCache {
    n_points: usize,
    capacity: usize,
    slot_of: Vec<usize>,
    point_of: Vec<usize>,
    data: Vec<Vec<f64>>,
    prev: Vec<usize>,
    next: Vec<usize>,
    head: usize,
    tail: usize,
    computed: usize,
}

impl RowCache {
    fn new(n_points: usize, cache_bytes: usize) -> Self {
        let row_bytes = 8 * n_points.max(1);
        let capacity = (cache_bytes / row_bytes).clamp(2, n_points.max(2));
        Self {
            n_points,
            capacity,
            slot_of: vec![NIL; n_points],
            point_of: Vec::new(),
            data: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
            computed: 0,
        }
    }

    fn unlink(&mut self, s: usize) {
        let (p, n) = (self.prev[s], self.next[s]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n] = p;
        }
        self.prev[s] = NIL;
        self.next[s] = NIL;
    }

    fn push_front(&mut self, s: usize) {
        self.prev[s] = NIL;
        self.next[s] = self.head;
        if self.head != NIL {
            self.prev[self.head] = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    /// Where the row of `point` is: in place in the Gram when it stores its rows, else in a
    /// cache slot, computed (evicting the least recently used row) on a miss. The two most
    /// recent rows are never evicted by the next call.
    fn get<G: GramRows>(&mut self, gram: &G, point: usize) -> RowRef {
        if gram.stored_row(point).is_some() {
            return RowRef::Stored(point);
        }
        let s = self.slot_of[point];
        if s != NIL {
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            return RowRef::Slot(s);
        }
        let s = self.claim_slot(point);
        gram.fill_row(point, &mut self.data[s]);
        self.computed += 1;
        RowRef::Slot(s)
    }

    /// A slot for the row of `point` (a new one while below capacity, else the least recently
    /// used one, evicted), marked as the most recent; its values are the caller's to fill.
    fn claim_slot(&mut self, point: usize) -> usize {
        let s = if self.data.len() < self.capacity {
            self.data.push(vec![0.0; self.n_points]);
            self.point_of.push(point);
            self.prev.push(NIL);
            self.next.push(NIL);
            self.data.len() - 1
        } else {
            let s = self.tail;
            self.unlink(s);
            self.slot_of[self.point_of[s]] = NIL;
            self.point_of[s] = point;
            s
        };
        self.slot_of[point] = s;
        self.push_front(s);
        s
    }

    /// Whether the row of `point` is at hand without computing it.
    fn has<G: GramRows>(&self, gram: &G, point: usize) -> bool {
        self.slot_of[point] != NIL || gram.stored_row(point).is_some()
    }

    /// Computes the rows of the `points` not at hand in one batch ([`GramRows::fill_rows`]),
    /// at most `capacity - 2` of them (the first ones), so that the two most recent rows stay.
    fn fetch_many<G: GramRows>(&mut self, gram: &G, points: &[usize]) {
        let room = self.capacity.saturating_sub(2).max(1);
        let mut missing: Vec<usize> = Vec::with_capacity(points.len());
        for &p in points {
            if !self.has(gram, p) && !missing.contains(&p) && missing.len() < room {
                missing.push(p);
            }
        }
        if missing.len() <= 1 {
            return; // a single row is computed by `get` when asked for
        }
        let slots: Vec<usize> = missing.iter().map(|&p| self.claim_slot(p)).collect();
        // Mutable views of the chosen slots, in the order of `missing`.
        let mut by_slot: Vec<Option<&mut [f64]>> = self
            .data
            .iter_mut()
            .map(|v| Some(v.as_mut_slice()))
            .collect();
        let mut outs: Vec<&mut [f64]> = slots
            .iter()
            .filter_map(|&s| by_slot.get_mut(s).and_then(Option::take))
            .collect();
        gram.fill_rows(&missing, &mut outs);
        self.computed += missing.len();
    }

    /// The row behind `r` (from [`RowCache::get`] with the same `gram`).
    fn row<'s, G: GramRows>(&'s self, gram: &'s G, r: RowRef) -> &'s [f64] {
        match r {
            RowRef::Slot(s) => &self.data[s],
            RowRef::Stored(p) => gram.stored_row(p).unwrap_or_default(),
        }
    }
}

/// A kernel row handed out by [`RowCache::get`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowRef {
    /// A cache slot.
    Slot(usize),
    /// The point's row stored in the Gram itself.
    Stored(usize),
}

/// Solver state that survives between solves of one fit (the kernel-row cache and the kernel
/// diagonal), so that a sequence of related problems (same points, changed `p`, `d`, `u`) is
/// solved with warm starts.
pub struct Smo<'g, G: GramRows> {
    gram: &'g G,
    params: SmoParams,
    kdiag: Vec<f64>,
    cache: RowCache,
}

impl<'g, G: GramRows> Smo<'g, G> {
    /// A solver over `gram`. Fails on a non-positive or non-finite tolerance, more than
    /// `u32::MAX` points, or a kernel diagonal of the wrong length or with non-finite values.
    pub fn new(gram: &'g G, params: SmoParams) -> Result<Self> {
        if !(params.tol.is_finite() && params.tol > 0.0) {
            return Err(invalid_param(format!(
                "SMO tolerance must be a finite number > 0, got {}",
                params.tol
            )));
        }
        let n_points = gram.n_points();
        if u32::try_from(n_points).is_err() {
            return Err(invalid_data(format!(
                "the SMO takes at most {} points, got {n_points}",
                u32::MAX
            )));
        }
        let kdiag = gram.diagonal();
        if kdiag.len() != n_points {
            return Err(invalid_data(format!(
                "kernel diagonal has {} entries for {n_points} points",
                kdiag.len()
            )));
        }
        if kdiag.iter().any(|v| !v.is_finite()) {
            return Err(invalid_data("kernel diagonal holds NaN or infinite values"));
        }
        Ok(Self {
            gram,
            params,
            kdiag,
            cache: RowCache::new(n_points, params.cache_bytes),
        })
    }

    /// The settings.
    pub fn params(&self) -> &SmoParams {
        &self.params
    }

    /// Number of kernel rows computed so far (cache misses, over all solves).
    pub fn kernel_rows_computed(&self) -> usize {
        self.cache.computed
    }

    /// Solves `problem`. `warm` is a previous solution for the same samples: its `alpha` is
    /// clipped to `[0, u_i]` and the equality `y^T a = delta` repaired if violated (see
    /// [`repair_equality`]); when that leaves `alpha` unchanged, its `q_alpha` gives the gradient
    /// `G = q_alpha + d a - p` in `O(n)` without any kernel row (an empty or non-finite
    /// `q_alpha` is ignored, so a warm start may carry `alpha` alone). Otherwise the gradient is
    /// computed from the rows of points with nonzero `a`. Without `warm`, the start is `a = 0`
    /// for `delta = 0`, else LIBSVM's one-class start (variables of the sign of `delta` filled to
    /// their bounds in order until `y^T a = delta`).
    pub fn solve(
        &mut self,
        problem: &DualProblem,
        warm: Option<&DualSolution>,
    ) -> Result<DualSolution> {
        let n_points = self.gram.n_points();
        problem.validate(n_points)?;
        let n = problem.len();
        let max_iter = self
            .params
            .max_iter
            .unwrap_or_else(|| 10_000_000usize.max(n.saturating_mul(100)));

        // Starting point and (when known) its gradient.
        let mut alpha;
        let mut q_alpha_known: Option<&[f64]> = None;
        let mut updated: Option<Vec<f64>> = None;
        match warm {
            Some(w) => {
                if w.alpha.len() != n {
                    return Err(invalid_data(format!(
                        "warm start has {} alphas for {n} samples",
                        w.alpha.len()
                    )));
                }
                if let Some(i) = w.alpha.iter().position(|v| !v.is_finite()) {
                    return Err(invalid_data(format!(
                        "warm start alpha[{i}] = {} is not finite",
                        w.alpha[i]
                    )));
                }
                alpha = w
                    .alpha
                    .iter()
                    .zip(problem.u)
                    .map(|(&a, &u)| a.clamp(0.0, u))
                    .collect::<Vec<f64>>();
                let clipped = alpha
                    .iter()
                    .zip(&w.alpha)
                    .any(|(a, b)| a.to_bits() != b.to_bits());
                let repaired = repair_equality(&mut alpha, problem)?;
                let known = w.q_alpha.len() == n && w.q_alpha.iter().all(|v| v.is_finite());
                if known && !clipped && !repaired {
                    q_alpha_known = Some(&w.q_alpha);
                } else if known {
                    // Update `Q a` by the changed variables when they are few (a kernel row
                    // each) rather than rebuilding it from every nonzero variable.
                    let changed: Vec<usize> = (0..n)
                        .filter(|&i| alpha[i].to_bits() != w.alpha[i].to_bits())
                        .collect();
                    let nonzero = alpha.iter().filter(|&&a| a != 0.0).count();
                    if 2 * changed.len() <= nonzero {
                        let mut qa = w.q_alpha.clone();
                        for &s in &changed {
                            let delta = (alpha[s] - w.alpha[s]) * problem.y[s];
                            let slot = self.cache.get(self.gram, problem.point[s]);
                            let row = self.cache.row(self.gram, slot);
                            for ((q, &yi), &mi) in qa.iter_mut().zip(problem.y).zip(problem.point) {
                                *q += yi * delta * row[mi];
                            }
                        }
                        updated = Some(qa);
                    }
                }
            }
            None => {
                alpha = vec![0.0; n];
                if problem.delta != 0.0 {
                    repair_equality(&mut alpha, problem)?;
                }
            }
        }

        let mut st = State::new(problem, &self.kdiag, alpha, self.params.tol);
        st.warm_start = warm.is_some();
        match (q_alpha_known, &updated) {
            (Some(qa), _) => st.gradient_from_q_alpha(qa),
            (None, Some(qa)) => st.gradient_from_q_alpha(qa),
            (None, None) => st.gradient_from_scratch(self.gram, &mut self.cache),
        }
        let (iterations, termination) = st.run(self.gram, &mut self.cache, &self.params, max_iter);
        st.finish(self.gram, &mut self.cache, iterations, termination)
    }
}

/// Makes `y^T a = delta` hold for an `a` already inside the box, moving as little structure as
/// it can; returns whether `a` changed. With residual `r = delta - y^T a` (ignored when below
/// `1e-12` times `max(1, |delta|, sum a)`): if one variable of sign `sign r` has room for `|r|`,
/// the one with the most room takes it all; otherwise
///
/// 1. the variables whose *decrease* helps (`y_i = -sign r`, `a_i > 0`) are scaled down by one
///    common factor, to zero at most;
/// 2. what remains is added to the variables whose *increase* helps (`y_i = sign r`, `u_i > 0`)
///    in index order, each filled to its bound (LIBSVM's one-class start).
///
/// Fails when the box cannot reach `delta`.
pub fn repair_equality(alpha: &mut [f64], problem: &DualProblem) -> Result<bool> {
    let ya: f64 = alpha.iter().zip(problem.y).map(|(a, y)| a * y).sum();
    let mass: f64 = alpha.iter().sum();
    let r = problem.delta - ya;
    if r.abs() <= 1e-12 * mass.max(problem.delta.abs()).max(1.0) {
        return Ok(false);
    }
    let s = r.signum();
    let mut rem = r.abs();
    // 0. one variable that can absorb the whole residual: the increase of a variable of sign
    //    `s` with the most room (first of ties); this changes a single variable, which keeps a
    //    warm start's gradient cheap to update.
    let best = (0..alpha.len())
        .filter(|&i| problem.y[i] == s && problem.u[i] > 0.0)
        .map(|i| (i, problem.u[i] - alpha[i]))
        .fold(None, |acc: Option<(usize, f64)>, (i, room)| match acc {
            Some((_, r0)) if r0 >= room => acc,
            _ => Some((i, room)),
        });
    if let Some((i, room)) = best {
        if room >= rem {
            alpha[i] += rem;
            return Ok(true);
        }
    }
    // 1. scale down the variables of the opposite sign.
    let down: f64 = alpha
        .iter()
        .zip(problem.y)
        .filter(|(_, &y)| y == -s)
        .map(|(a, _)| *a)
        .sum();
    if down > 0.0 {
        let take = rem.min(down);
        let factor = if take >= down { 0.0 } else { 1.0 - take / down };
        for (a, &y) in alpha.iter_mut().zip(problem.y) {
            if y == -s {
                *a *= factor;
            }
        }
        rem -= take;
    }
    // 2. fill the variables of the same sign to their bounds in order.
    for ((a, &y), &u) in alpha.iter_mut().zip(problem.y).zip(problem.u) {
        if rem <= 0.0 {
            break;
        }
        if y == s {
            let room = u - *a;
            if room > 0.0 {
                let add = rem.min(room);
                *a += add;
                rem -= add;
            }
        }
    }
    if rem > 1e-12 * problem.delta.abs().max(1.0) {
        return Err(invalid_param(format!(
            "dual problem is infeasible: y^T a = {} cannot be reached within the bounds u",
            problem.delta
        )));
    }
    Ok(true)
}

/// Rows computed beside a missing one ([`State::fetch_row`]).
const PREFETCH: usize = 7;
/// Positions per work unit of the loops over the active set (the unit of the fixed reduction
/// order, and of parallel work when the active set is large).
const BLOCK: usize = 1024;
/// Active sets at least this large run their per-iteration loops in parallel.
const PAR_MIN_ACTIVE: usize = 4 * BLOCK;

/// Runs `f` on the blocks of [`BLOCK`] positions of `0..len` (with the block's first position)
/// and merges the results in block order: the same result whatever the thread count; the
/// blocks run in parallel when `len >= PAR_MIN_ACTIVE`.
fn reduce_blocks<T: Send + Copy>(
    len: usize,
    empty: T,
    f: impl Fn(usize, usize) -> T + Sync,
    merge: impl Fn(T, T) -> T + Sync,
) -> T {
    let n_blocks = len.div_ceil(BLOCK);
    let block = |b: usize| f(b * BLOCK, ((b + 1) * BLOCK).min(len));
    if len >= PAR_MIN_ACTIVE {
        let parts: Vec<T> = (0..n_blocks).into_par_iter().map(block).collect();
        parts.into_iter().fold(empty, &merge)
    } else {
        (0..n_blocks).map(block).fold(empty, &merge)
    }
}

/// The state of one solve (LIBSVM's `Solver` members). Every per-sample array is indexed by
/// *position*: samples are swapped so that the active (not shrunk) ones are positions
/// `0..active`, as in LIBSVM's `swap_index`; `idx[k]` is the sample at position `k`.
struct State {
    idx: Vec<usize>,
    y: Vec<f64>,
    /// Point of each position, narrowed to `u32` (half the bytes in the scans; [`Smo::new`]
    /// refuses more than `u32::MAX` points).
    point: Vec<u32>,
    p: Vec<f64>,
    d: Vec<f64>,
    u: Vec<f64>,
    /// `Q_ii + d_i`.
    qd: Vec<f64>,
    alpha: Vec<f64>,
    /// The gradient `G = (Q + diag d) a - p` times the label, `y_t G_t` (exact: `y` is +-1),
    /// exact on active positions (all after reconstruction). Kept signed so that the scans and
    /// the gradient update never read `y`: `G_k += y_k (...)` becomes `yg_k += (...)`.
    yg: Vec<f64>,
    /// `G_bar_i = sum_{j at upper bound} u_j (Q + diag d)_ij`, built on first use.
    g_bar: Option<Vec<f64>>,
    /// Membership of `I_up(a)` (`y = +1, a < u` or `y = -1, a > 0`) and `I_low(a)` (`y = +1,
    /// a > 0` or `y = -1, a < u`) as offsets: `0` for members, `-inf` for the others (dead
    /// samples are in neither). Added to `-y_t G_t` and `y_t G_t` they make the selection loops
    /// free of data-dependent branches.
    up_off: Vec<f64>,
    low_off: Vec<f64>,
    /// Number of active positions.
    active: usize,
    /// `argmax { -y_t G_t : t in I_up }` over the active positions, when known (computed with
    /// the gradient update of the previous iteration).
    next_i: Option<ArgMax>,
    /// Samples with `u_i > 0`.
    n_live: usize,
    /// Every point index is below this bound (the Gram's number of points).
    point_bound: usize,
    simd: Simd,
    unshrink: bool,
    /// Started from a warm start (shrink at once, no early unshrink).
    warm_start: bool,
    eps: f64,
    /// Variables removed by shrinking so far (for tests).
    n_shrunk: usize,
}

impl State {
    /// The state at `alpha` (in sample order); positions start as the samples' order.
    fn new(problem: &DualProblem<'_>, kdiag: &[f64], alpha: Vec<f64>, tol: f64) -> Self {
        // `kdiag` has one value per point, and every point was checked to index it.
        let n = problem.len();
        let qd: Vec<f64> = (0..n)
            .map(|i| kdiag[problem.point[i]] + problem.d[i])
            .collect();
        // Dead samples (`u_i = 0`) stay active so that their gradient is kept up to date (the
        // caller's next warm start needs their `Q a`), but are never selected or shrunk.
        let live: Vec<usize> = (0..n).filter(|&i| problem.u[i] > 0.0).collect();
        // Stopping scale (see `SmoParams::tol`).
        let (mut mp, mut mn) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        let mut qd_max = 0.0_f64;
        for &i in &live {
            if problem.y[i] > 0.0 {
                mp = mp.max(problem.p[i]);
            } else {
                mn = mn.max(problem.p[i]);
            }
            qd_max = qd_max.max(qd[i]);
        }
        let gap0 = if mp.is_finite() && mn.is_finite() {
            mp + mn
        } else {
            0.0
        };
        let scale = gap0.max(problem.delta.abs() * qd_max).max(1e-12);
        let mut st = Self {
            idx: (0..n).collect(),
            y: problem.y.to_vec(),
            point: problem.point.iter().map(|&m| m as u32).collect(),
            p: problem.p.to_vec(),
            d: problem.d.to_vec(),
            u: problem.u.to_vec(),
            qd,
            alpha,
            yg: vec![0.0; n],
            g_bar: None,
            up_off: vec![f64::NEG_INFINITY; n],
            low_off: vec![f64::NEG_INFINITY; n],
            active: n,
            next_i: None,
            n_live: live.len(),
            point_bound: kdiag.len(),
            simd: Simd::detect(),
            unshrink: false,
            warm_start: false,
            eps: tol * scale,
            n_shrunk: 0,
        };
        for i in 0..n {
            st.set_status(i);
        }
        st.sort_range(0, n);
        st
    }

    /// Updates the `I_up` / `I_low` membership of position `i` after its `a_i` changed.
    #[inline]
    fn set_status(&mut self, i: usize) {
        let live = self.u[i] > 0.0;
        let (below_u, above_0) = (self.alpha[i] < self.u[i], self.alpha[i] > 0.0);
        let (up, low) = if self.y[i] > 0.0 {
            (below_u, above_0)
        } else {
            (above_0, below_u)
        };
        let off = |member: bool| if member { 0.0 } else { f64::NEG_INFINITY };
        self.up_off[i] = off(live && up);
        self.low_off[i] = off(live && low);
    }

    #[inline]
    fn is_upper(&self, i: usize) -> bool {
        self.alpha[i] >= self.u[i]
    }
    #[inline]
    fn is_lower(&self, i: usize) -> bool {
        self.alpha[i] <= 0.0
    }

    /// LIBSVM's `swap_index`: exchanges positions `a` and `b` in every array.
    fn swap(&mut self, a: usize, b: usize) {
        self.idx.swap(a, b);
        self.y.swap(a, b);
        self.point.swap(a, b);
        self.p.swap(a, b);
        self.d.swap(a, b);
        self.u.swap(a, b);
        self.qd.swap(a, b);
        self.alpha.swap(a, b);
        self.yg.swap(a, b);
        if let Some(gb) = self.g_bar.as_mut() {
            gb.swap(a, b);
        }
        self.up_off.swap(a, b);
        self.low_off.swap(a, b);
    }

    /// `G = q_alpha + d a - p` from a known `Q a` (in sample order).
    fn gradient_from_q_alpha(&mut self, qa: &[f64]) {
        for k in 0..self.yg.len() {
            self.yg[k] = self.y[k] * (qa[self.idx[k]] + self.d[k] * self.alpha[k] - self.p[k]);
        }
    }

    /// The gradient `G_k` of position `k`.
    #[inline]
    fn grad(&self, k: usize) -> f64 {
        self.y[k] * self.yg[k]
    }

    /// Orders the positions of `lo..hi` by point (then sample), so that the loops over them read
    /// kernel rows in increasing order (sequential memory access).
    fn sort_range(&mut self, lo: usize, hi: usize) {
        let mut order: Vec<usize> = (lo..hi).collect();
        order.sort_unstable_by_key(|&k| (self.point[k], self.idx[k]));
        if order.iter().enumerate().all(|(r, &k)| k == lo + r) {
            return;
        }
        fn permute<T: Copy>(v: &mut [T], lo: usize, order: &[usize]) {
            let moved: Vec<T> = order.iter().map(|&k| v[k]).collect();
            v[lo..lo + moved.len()].copy_from_slice(&moved);
        }
        permute(&mut self.idx, lo, &order);
        permute(&mut self.y, lo, &order);
        permute(&mut self.point, lo, &order);
        permute(&mut self.p, lo, &order);
        permute(&mut self.d, lo, &order);
        permute(&mut self.u, lo, &order);
        permute(&mut self.qd, lo, &order);
        permute(&mut self.alpha, lo, &order);
        permute(&mut self.yg, lo, &order);
        if let Some(gb) = self.g_bar.as_mut() {
            permute(gb, lo, &order);
        }
        permute(&mut self.up_off, lo, &order);
        permute(&mut self.low_off, lo, &order);
        self.next_i = None;
    }

    /// `G = Q a + d a - p` from the rows of the points carrying nonzero `a`.
    fn gradient_from_scratch<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache) {
        let n = self.yg.len();
        for i in 0..n {
            self.yg[i] = self.y[i] * (self.d[i] * self.alpha[i] - self.p[i]);
        }
        let mut coef = vec![0.0; cache.n_points];
        for j in 0..n {
            coef[self.point[j] as usize] += self.y[j] * self.alpha[j];
        }
        let points = nonzero_points(&coef);
        add_rows(gram, cache, &points, &mut self.yg, None, &self.point);
    }

    /// Builds `G_bar` from scratch if it does not exist yet.
    fn ensure_g_bar<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache) {
        if self.g_bar.is_some() {
            return;
        }
        let n = self.yg.len();
        let mut gb = vec![0.0; n];
        let mut coef = vec![0.0; cache.n_points];
        for j in 0..n {
            if self.u[j] > 0.0 && self.is_upper(j) {
                coef[self.point[j] as usize] += self.u[j] * self.y[j];
                gb[j] += self.u[j] * self.d[j];
            }
        }
        let points = nonzero_points(&coef);
        add_rows(gram, cache, &points, &mut gb, Some(&self.y), &self.point);
        self.g_bar = Some(gb);
    }

    /// LIBSVM's `reconstruct_gradient`: the exact gradient of every inactive position from
    /// `G_bar` and the free variables, then all positions become active.
    fn reconstruct_gradient<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache) {
        let n = self.yg.len();
        if self.active == n {
            return;
        }
        self.ensure_g_bar(gram, cache);
        let Some(gb) = self.g_bar.as_ref() else {
            return;
        };
        let a = self.active;
        for (k, h) in (a..n).zip(&mut self.yg[a..]) {
            *h = self.y[k] * (gb[k] - self.p[k]);
        }
        let mut coef = vec![0.0; cache.n_points];
        for j in 0..a {
            if !self.is_lower(j) && !self.is_upper(j) {
                coef[self.point[j] as usize] += self.y[j] * self.alpha[j];
            }
        }
        let points = nonzero_points(&coef);
        add_rows(
            gram,
            cache,
            &points,
            &mut self.yg[a..],
            None,
            &self.point[a..],
        );
        self.active = n;
        self.sort_range(0, n);
        self.next_i = None;
    }

    /// The kernel row of position `k`'s point. On a miss, the rows of up to [`PREFETCH`] other
    /// points not at hand are computed in the same pass over the instances
    /// ([`RowCache::fetch_many`]): those of the active positions with the largest `-y_t G_t`
    /// over `I_up` and the largest `y_t G_t` over `I_low`, the likeliest next members of a
    /// working set. Which rows are computed together never changes their values.
    fn fetch_row<G: GramRows>(&self, gram: &G, cache: &mut RowCache, k: usize) -> RowRef {
        let m = self.point[k] as usize;
        if !cache.has(gram, m) {
            // Two short lists of (value, point), largest first (sizes adding up to PREFETCH).
            let mut up: Vec<(f64, usize)> = Vec::with_capacity(PREFETCH);
            let mut low: Vec<(f64, usize)> = Vec::with_capacity(PREFETCH);
            let insert = |list: &mut Vec<(f64, usize)>, len: usize, v: f64, p: usize| {
                if len == 0 || !v.is_finite() || (list.len() == len && v <= list[len - 1].0) {
                    return;
                }
                if p == m || list.iter().any(|e| e.1 == p) || cache.has(gram, p) {
                    return;
                }
                let at = list.partition_point(|e| e.0 >= v);
                list.insert(at, (v, p));
                list.truncate(len);
            };
            let (n_up, n_low) = (PREFETCH.div_ceil(2), PREFETCH / 2);
            for t in 0..self.active {
                let yg = self.yg[t];
                let pt = self.point[t] as usize;
                insert(&mut up, n_up, -yg + self.up_off[t], pt);
                insert(&mut low, n_low, yg + self.low_off[t], pt);
            }
            let mut want = vec![m];
            want.extend(up.iter().map(|e| e.1));
            want.extend(low.iter().map(|e| e.1));
            cache.fetch_many(gram, &want);
        }
        cache.get(gram, m)
    }

    /// `argmax { -y_t G_t : t in I_up }` over the active positions.
    fn first_choice(&self) -> ArgMax {
        let (yg, up) = (&self.yg, &self.up_off);
        let simd = self.simd;
        reduce_blocks(
            self.active,
            ArgMax::EMPTY,
            |lo, hi| first_choice(simd, lo, hi, yg, up),
            ArgMax::merge,
        )
    }

    /// LIBSVM's `select_working_set` (WSS 2, Fan et al. 2005): `None` when optimal.
    fn select_working_set<G: GramRows>(
        &mut self,
        gram: &G,
        cache: &mut RowCache,
    ) -> Option<(usize, usize)> {
        let first = match self.next_i.take() {
            Some(m) => m,
            None => self.first_choice(),
        };
        let (gmax, i) = (first.value, first.pos);
        if i == NIL {
            return None;
        }
        let slot = self.fetch_row(gram, cache, i);
        let row = cache.row(gram, slot);
        let qd_i = self.qd[i];
        // j over I_low: the largest decrease `grad_diff^2 / quad` (Fan et al. eq. (17), up to
        // the sign) among `grad_diff = gmax + y_j G_j > 0`; `j == i` gives `grad_diff = 0` and
        // is never selected. `y_j G_j` is `G_j` or `-G_j`, exactly.
        let (yg, low, qd, point) = (&self.yg, &self.low_off, &self.qd, &self.point);
        let inp = SecondInputs {
            gmax,
            qd_i,
            row,
            point_bound: self.point_bound,
        };
        let simd = self.simd;
        let second = reduce_blocks(
            self.active,
            SecondChoice::EMPTY,
            |lo, hi| second_choice(simd, lo, hi, inp, yg, low, qd, point),
            SecondChoice::merge,
        );
        if gmax + second.gmax2 < self.eps || second.pos == NIL {
            None
        } else {
            Some((i, second.pos))
        }
    }

    /// LIBSVM's `be_shrunk` (dead samples are never shrunk).
    fn be_shrunk(&self, i: usize, gmax1: f64, gmax2: f64) -> bool {
        if self.u[i] <= 0.0 {
            false
        } else if self.is_upper(i) {
            if self.y[i] > 0.0 {
                -self.grad(i) > gmax1
            } else {
                -self.grad(i) > gmax2
            }
        } else if self.is_lower(i) {
            if self.y[i] > 0.0 {
                self.grad(i) > gmax2
            } else {
                self.grad(i) > gmax1
            }
        } else {
            false
        }
    }

    /// LIBSVM's `do_shrinking`: shrunk positions are swapped behind the active ones.
    fn do_shrinking<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache) {
        let mut gmax1 = f64::NEG_INFINITY;
        let mut gmax2 = f64::NEG_INFINITY;
        for i in 0..self.active {
            let gi = self.grad(i);
            if self.y[i] > 0.0 {
                if !self.is_upper(i) {
                    gmax1 = gmax1.max(-gi);
                }
                if !self.is_lower(i) {
                    gmax2 = gmax2.max(gi);
                }
            } else {
                if !self.is_upper(i) {
                    gmax2 = gmax2.max(-gi);
                }
                if !self.is_lower(i) {
                    gmax1 = gmax1.max(gi);
                }
            }
        }
        if !self.unshrink && !self.warm_start && gmax1 + gmax2 <= self.eps * 10.0 {
            self.unshrink = true;
            self.reconstruct_gradient(gram, cache);
        }
        let mut i = 0;
        while i < self.active {
            if self.be_shrunk(i, gmax1, gmax2) {
                self.active -= 1;
                self.n_shrunk += 1;
                while self.active > i {
                    if !self.be_shrunk(self.active, gmax1, gmax2) {
                        self.swap(i, self.active);
                        break;
                    }
                    self.active -= 1;
                    self.n_shrunk += 1;
                }
            }
            i += 1;
        }
        self.sort_range(0, self.active);
        self.sort_range(self.active, self.yg.len());
        self.next_i = None;
    }

    /// The two-variable update of LIBSVM's `Solver::Solve` (box clipping valid for `u = inf`),
    /// then the gradient update (which also finds the next iteration's first index) and the
    /// `G_bar` update.
    fn update<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache, i: usize, j: usize) {
        let (ui, uj) = (self.u[i], self.u[j]);
        let (old_ai, old_aj) = (self.alpha[i], self.alpha[j]);
        let si = self.fetch_row(gram, cache, i);
        let sj = self.fetch_row(gram, cache, j);
        let kij = cache.row(gram, si)[self.point[j] as usize];
        let quad = {
            let q = self.qd[i] + self.qd[j] - 2.0 * kij;
            if q > 0.0 {
                q
            } else {
                TAU
            }
        };
        let (mut ai, mut aj) = (old_ai, old_aj);
        if self.y[i] != self.y[j] {
            let delta = (-self.grad(i) - self.grad(j)) / quad;
            let diff = ai - aj;
            ai += delta;
            aj += delta;
            if diff > 0.0 {
                if aj < 0.0 {
                    aj = 0.0;
                    ai = diff;
                }
            } else if ai < 0.0 {
                ai = 0.0;
                aj = -diff;
            }
            // `ui - uj` is NaN when both are infinite: then neither bound binds.
            if diff > ui - uj {
                if ai > ui {
                    ai = ui;
                    aj = ui - diff;
                }
            } else if aj > uj {
                aj = uj;
                ai = uj + diff;
            }
        } else {
            let delta = (self.grad(i) - self.grad(j)) / quad;
            let sum = ai + aj;
            ai -= delta;
            aj += delta;
            if sum > ui {
                if ai > ui {
                    ai = ui;
                    aj = sum - ui;
                }
            } else if aj < 0.0 {
                aj = 0.0;
                ai = sum;
            }
            if sum > uj {
                if aj > uj {
                    aj = uj;
                    ai = sum - uj;
                }
            } else if ai < 0.0 {
                ai = 0.0;
                aj = sum;
            }
        }
        let was_upper_i = self.is_upper(i);
        let was_upper_j = self.is_upper(j);
        self.alpha[i] = ai;
        self.alpha[j] = aj;
        self.set_status(i);
        self.set_status(j);
        let dai = ai - old_ai;
        let daj = aj - old_aj;
        let (row_i, row_j) = (cache.row(gram, si), cache.row(gram, sj));
        let ci = self.y[i] * dai;
        let cj = self.y[j] * daj;
        // The `d` terms of `i` and `j` first, so that the fused search below sees the final
        // gradient.
        self.yg[i] += self.y[i] * (self.d[i] * dai);
        self.yg[j] += self.y[j] * (self.d[j] * daj);
        let a = self.active;
        let (point, up) = (&self.point[..a], &self.up_off[..a]);
        let g = &mut self.yg[..a];
        let (simd, point_bound) = (self.simd, self.point_bound);
        let inp = UpdateInputs {
            ci,
            cj,
            row_i,
            row_j,
            point_bound,
        };
        let block = |lo: usize, g: &mut [f64]| update_and_first(simd, lo, g, inp, point, up);
        let first = if a >= PAR_MIN_ACTIVE {
            let parts: Vec<ArgMax> = g
                .par_chunks_mut(BLOCK)
                .enumerate()
                .map(|(b, gb)| block(b * BLOCK, gb))
                .collect();
            parts.into_iter().fold(ArgMax::EMPTY, ArgMax::merge)
        } else {
            g.chunks_mut(BLOCK)
                .enumerate()
                .map(|(b, gb)| block(b * BLOCK, gb))
                .fold(ArgMax::EMPTY, ArgMax::merge)
        };
        self.next_i = Some(first);
        // G_bar follows status changes at the upper bound.
        let now_upper_i = self.is_upper(i);
        let now_upper_j = self.is_upper(j);
        if let Some(gb) = self.g_bar.as_mut() {
            for (idx, was, now, row) in [
                (i, was_upper_i, now_upper_i, row_i),
                (j, was_upper_j, now_upper_j, row_j),
            ] {
                if was != now {
                    let c = if now { self.u[idx] } else { -self.u[idx] };
                    let cy = c * self.y[idx];
                    for ((v, &yk), &pk) in gb.iter_mut().zip(&self.y).zip(&self.point) {
                        let pk = pk as usize;
                        *v += cy * yk * row[pk];
                    }
                    gb[idx] += c * self.d[idx];
                }
            }
        }
    }

    /// The main loop of LIBSVM's `Solver::Solve`.
    fn run<G: GramRows>(
        &mut self,
        gram: &G,
        cache: &mut RowCache,
        params: &SmoParams,
        max_iter: usize,
    ) -> (usize, Termination) {
        if self.n_live == 0 {
            return (0, Termination::Converged);
        }
        let period = self.n_live.min(1000);
        let mut counter = if self.warm_start { 1 } else { period + 1 };
        let mut iter = 0;
        loop {
            counter -= 1;
            if counter == 0 {
                counter = period;
                if params.shrinking {
                    self.do_shrinking(gram, cache);
                }
            }
            let ws = match self.select_working_set(gram, cache) {
                Some(ws) => ws,
                None => {
                    self.reconstruct_gradient(gram, cache);
                    match self.select_working_set(gram, cache) {
                        Some(ws) => {
                            counter = 1;
                            ws
                        }
                        None => return (iter, Termination::Converged),
                    }
                }
            };
            if iter >= max_iter {
                return (iter, Termination::MaxIter);
            }
            iter += 1;
            self.update(gram, cache, ws.0, ws.1);
        }
    }

    /// LIBSVM's `calculate_rho` (returned as `b = -rho`), made safe when one side is unbounded.
    fn bias(&self) -> f64 {
        let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut nr_free, mut sum_free) = (0usize, 0.0);
        for i in 0..self.active {
            if self.u[i] <= 0.0 {
                continue;
            }
            let yg = self.yg[i];
            if self.is_upper(i) {
                if self.y[i] < 0.0 {
                    ub = ub.min(yg);
                } else {
                    lb = lb.max(yg);
                }
            } else if self.is_lower(i) {
                if self.y[i] > 0.0 {
                    ub = ub.min(yg);
                } else {
                    lb = lb.max(yg);
                }
            } else {
                nr_free += 1;
                sum_free += yg;
            }
        }
        let rho = if nr_free > 0 {
            sum_free / nr_free as f64
        } else {
            match (ub.is_finite(), lb.is_finite()) {
                (true, true) => 0.5 * (ub + lb),
                (true, false) => ub,
                (false, true) => lb,
                (false, false) => 0.0,
            }
        };
        -rho
    }

    /// Exact gradient everywhere (dead samples included), bias, objective and `Q a`, back in
    /// sample order. Fails when the iterates are no longer finite (an indefinite kernel with
    /// unbounded `u`).
    fn finish<G: GramRows>(
        mut self,
        gram: &G,
        cache: &mut RowCache,
        iterations: usize,
        termination: Termination,
    ) -> Result<DualSolution> {
        self.reconstruct_gradient(gram, cache);
        if self.alpha.iter().chain(&self.yg).any(|v| !v.is_finite()) {
            return Err(Error::Solver(
                "SMO iterates are not finite: the dual problem is unbounded (is the kernel \
                 positive semi-definite?)"
                    .into(),
            ));
        }
        let b = self.bias();
        let n = self.yg.len();
        let mut objective = 0.0;
        let mut alpha = vec![0.0; n];
        let mut q_alpha = vec![0.0; n];
        let mut terms = vec![0.0; n];
        for k in 0..n {
            let s = self.idx[k];
            alpha[s] = self.alpha[k];
            let g = self.grad(k);
            q_alpha[s] = g + self.p[k] - self.d[k] * self.alpha[k];
            terms[s] = 0.5 * self.alpha[k] * (g - self.p[k]);
        }
        // Summed in sample order: the objective does not depend on the final permutation.
        for t in terms {
            objective += t;
        }
        Ok(DualSolution {
            alpha,
            q_alpha,
            b,
            objective,
            iterations,
            termination,
        })
    }
}

/// The `(point, coefficient)` pairs of the nonzero entries of a per-point coefficient vector.
fn nonzero_points(coef: &[f64]) -> Vec<(usize, f64)> {
    coef.iter()
        .enumerate()
        .filter(|(_, &c)| c != 0.0)
        .map(|(m, &c)| (m, c))
        .collect()
}

/// `out[k] += y[k] sum_m c_m K(m, point[k])` over the `(m, c_m)` of `points` (`y = None`:
/// without the sign).
///
/// When `out` is long against the number of points, the sums `s(q) = sum_m c_m K(m, q)` are
/// formed for every point `q` first, over contiguous blocks of points (no gather; in parallel
/// for many points), and `out` gathers from `s`; otherwise each `out[k]` gathers from the rows
/// directly. The rows are fetched in batches that fit the cache. Every
/// value sums in an order fixed by `points` alone, whatever the thread count.
fn add_rows<G: GramRows>(
    gram: &G,
    cache: &mut RowCache,
    points: &[(usize, f64)],
    out: &mut [f64],
    y: Option<&[f64]>,
    point: &[u32],
) {
    if points.is_empty() || out.is_empty() {
        return;
    }
    let n_points = cache.n_points;
    let per_point = 4 * out.len() >= n_points;
    let mut sums = if per_point {
        vec![0.0; n_points]
    } else {
        Vec::new()
    };
    // Two rows of the cache are kept free for the solver's own use.
    let batch = cache.capacity.saturating_sub(2).max(1);
    for group in points.chunks(batch) {
        let refs: Vec<(RowRef, f64)> = group
            .iter()
            .map(|&(m, c)| (cache.get(gram, m), c))
            .collect();
        let rows: Vec<(&[f64], f64)> = refs.iter().map(|&(r, c)| (cache.row(gram, r), c)).collect();
        if per_point {
            let apply = |lo: usize, s: &mut [f64]| {
                let hi = lo + s.len();
                for &(row, c) in &rows {
                    for (v, &k) in s.iter_mut().zip(&row[lo..hi]) {
                        *v += c * k;
                    }
                }
            };
            if n_points >= PAR_MIN_ACTIVE / 2 {
                sums.par_chunks_mut(BLOCK)
                    .enumerate()
                    .for_each(|(b, s)| apply(b * BLOCK, s));
            } else {
                sums.chunks_mut(BLOCK)
                    .enumerate()
                    .for_each(|(b, s)| apply(b * BLOCK, s));
            }
        } else {
            for &(row, c) in &rows {
                match y {
                    Some(y) => {
                        for ((v, &yk), &pk) in out.iter_mut().zip(y).zip(point) {
                            *v += yk * c * row[pk as usize];
                        }
                    }
                    None => {
                        for (v, &pk) in out.iter_mut().zip(point) {
                            *v += c * row[pk as usize];
                        }
                    }
                }
            }
        }
    }
    if per_point {
        match y {
            Some(y) => {
                for ((v, &yk), &pk) in out.iter_mut().zip(y).zip(point) {
                    *v += yk * sums[pk as usize];
                }
            }
            None => {
                for (v, &pk) in out.iter_mut().zip(point) {
                    *v += sums[pk as usize];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Gram whose row `i` is `i` everywhere, to see which rows the cache computes.
    struct Counting(usize);

    impl GramRows for Counting {
        fn n_points(&self) -> usize {
            self.0
        }
        fn diagonal(&self) -> Vec<f64> {
            (0..self.0).map(|i| i as f64).collect()
        }
        fn fill_row(&self, i: usize, out: &mut [f64]) {
            out.iter_mut().for_each(|o| *o = i as f64);
        }
    }

    #[test]
    fn row_cache_is_lru_by_point() {
        let g = Counting(10);
        let mut c = RowCache::new(10, 3 * 8 * 10);
        assert_eq!(c.capacity, 3);
        for p in [0, 1, 2] {
            let s = c.get(&g, p);
            assert_eq!(c.row(&g, s)[4], p as f64);
        }
        assert_eq!(c.computed, 3);
        c.get(&g, 0); // hit: 0 becomes most recent, 1 least recent
        assert_eq!(c.computed, 3);
        let s = c.get(&g, 5); // evicts 1
        assert_eq!(c.row(&g, s)[0], 5.0);
        assert_eq!(c.slot_of[1], NIL);
        c.get(&g, 0);
        c.get(&g, 2);
        assert_eq!(c.computed, 4);
        c.get(&g, 1); // evicts 5
        assert_eq!(c.slot_of[5], NIL);
        assert_eq!(c.computed, 5);
        // Never fewer than two rows.
        assert_eq!(RowCache::new(10, 0).capacity, 2);
    }

    /// Shrinking runs, `G_bar` is kept up to date and the reconstructed gradient matches the
    /// gradient computed from scratch.
    #[test]
    fn shrinking_and_reconstruction() -> Result<()> {
        let n = 120;
        // Points on a line, labels by sign with a few flips: many alphas at both bounds.
        let x = Array2::from_shape_fn((n, 1), |(i, _)| (i as f64 - 60.0) / 20.0);
        let gram = InstanceGram::new(Kernel::Rbf { gamma: 2.0 }, Rows::Dense(x.view()))?;
        let y: Vec<f64> = (0..n)
            .map(|i| if (i < 60) ^ (i % 11 == 0) { -1.0 } else { 1.0 })
            .collect();
        let point: Vec<usize> = (0..n).collect();
        let (p, d) = (vec![1.0; n], vec![0.0; n]);
        let mut u: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
        u[5] = 0.0;
        let problem = DualProblem {
            y: &y,
            point: &point,
            p: &p,
            d: &d,
            u: &u,
            delta: 0.0,
        };
        let params = SmoParams {
            tol: 1e-10,
            ..SmoParams::default()
        };
        let kdiag = gram.diagonal();
        let mut cache = RowCache::new(n, 1 << 20);
        let mut st = State::new(&problem, &kdiag, vec![0.0; n], params.tol);
        st.gradient_from_scratch(&gram, &mut cache);
        let (_, term) = st.run(&gram, &mut cache, &params, 100_000);
        assert_eq!(term, Termination::Converged);
        assert!(st.n_shrunk > 0, "nothing was shrunk");
        st.reconstruct_gradient(&gram, &mut cache);
        let g_run = st.yg.clone();
        let g_bar_run = st.g_bar.clone();
        st.g_bar = None;
        st.ensure_g_bar(&gram, &mut cache);
        st.gradient_from_scratch(&gram, &mut cache);
        for (a, b) in g_run.iter().zip(&st.yg) {
            assert!((a - b).abs() < 1e-9, "gradient {a} vs {b}");
        }
        assert!(g_bar_run.is_some(), "G_bar was never built");
        if let (Some(a), Some(b)) = (g_bar_run, st.g_bar.as_ref()) {
            for (a, b) in a.iter().zip(b) {
                assert!((a - b).abs() < 1e-9, "G_bar {a} vs {b}");
            }
        }
        Ok(())
    }

    /// A warm start shrinks from its first iteration and skips the early unshrink, yet ends at
    /// the cold start's optimum with an exact gradient, on a problem with variables at both
    /// bounds (a start far from the optimum included).
    #[test]
    fn warm_start_shrinks_at_once_and_ends_optimal() -> Result<()> {
        let n = 150;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| ((i * (j + 3)) % 17) as f64 / 8.0 - 1.0);
        let gram = InstanceGram::new(Kernel::Rbf { gamma: 1.5 }, Rows::Dense(x.view()))?;
        let y: Vec<f64> = (0..n)
            .map(|i| {
                if (x[(i, 0)] > 0.0) ^ (i % 7 == 0) {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let point: Vec<usize> = (0..n).collect();
        let p = vec![1.0; n];
        let d: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 0.0 } else { 0.1 }).collect();
        let u: Vec<f64> = (0..n)
            .map(|i| if i % 2 == 0 { 2.0 } else { f64::INFINITY })
            .collect();
        let problem = DualProblem {
            y: &y,
            point: &point,
            p: &p,
            d: &d,
            u: &u,
            delta: 0.0,
        };
        let params = SmoParams {
            tol: 1e-10,
            ..SmoParams::default()
        };
        let mut smo = Smo::new(&gram, params)?;
        let cold = smo.solve(&problem, None)?;
        // Starts: the optimum moved by a rescaling of half the variables (repaired to the
        // equality by the solver), and a start with every variable moved.
        let near: Vec<f64> = cold
            .alpha
            .iter()
            .enumerate()
            .map(|(i, &a)| if i % 4 == 1 { 1.3 * a } else { a })
            .collect();
        let far: Vec<f64> = (0..n).map(|i| (i % 5) as f64 * 0.2).collect();
        for start in [near, far] {
            let warm_in = DualSolution {
                alpha: start,
                q_alpha: Vec::new(),
                b: 0.0,
                objective: 0.0,
                iterations: 0,
                termination: Termination::Converged,
            };
            let warm = smo.solve(&problem, Some(&warm_in))?;
            assert_eq!(warm.termination, Termination::Converged);
            let rel = (warm.objective - cold.objective).abs() / cold.objective.abs();
            assert!(
                rel < 1e-9,
                "objective {} vs {}",
                warm.objective,
                cold.objective
            );

            // The same run on the state: it shrank, and its final gradient is exact.
            let mut alpha = warm_in.alpha.clone();
            repair_equality(&mut alpha, &problem)?;
            let kdiag = gram.diagonal();
            let mut cache = RowCache::new(n, 1 << 20);
            let mut st = State::new(&problem, &kdiag, alpha, params.tol);
            st.warm_start = true;
            st.gradient_from_scratch(&gram, &mut cache);
            let (_, term) = st.run(&gram, &mut cache, &params, 1_000_000);
            assert_eq!(term, Termination::Converged);
            assert!(st.n_shrunk > 0, "nothing was shrunk");
            assert_eq!(
                st.active, n,
                "the run did not end on a reconstructed gradient"
            );
            let g_run = st.yg.clone();
            st.gradient_from_scratch(&gram, &mut cache);
            for (a, b) in g_run.iter().zip(&st.yg) {
                assert!((a - b).abs() < 1e-9, "gradient {a} vs {b}");
            }
        }
        Ok(())
    }
}
