//! The weighted squared-hinge SVM of a linear kernel, in the primal over `w` in `R^d`.
//!
//! `J(w, b) = 1/2 |w|^2 + sum_j [c+_j max(0, 1 - f_j)^2 + c-_j max(0, 1 + f_j)^2]`,
//! `f_j = x_j . w + b`,
//!
//! the problem of the module above with `K = I` and the instances as design rows (every
//! instance a row with costs for both targets; AL-SVM's expected loss is `c+ = C p`,
//! `c- = C (1 - p)`), with the bias unpenalised. With `d` much smaller than the number of
//! instances it is far cheaper than the dual over every instance: each pass costs `O(nnz)`.
//!
//! Solver: truncated Newton (Newton-CG). The gradient is `(w + X^T g, sum g)` with
//! `g_j = -2 c+_j max(0, 1 - f_j) + 2 c-_j max(0, 1 + f_j)`; the generalised Hessian
//! (Mangasarian 2002; Keerthi & DeCoste 2005) is `[I + X^T D X, X^T D 1; 1^T D X, 1^T D 1]`
//! with `D_j = 2 c+_j [f_j < 1] + 2 c-_j [f_j > -1]`, applied as Hessian-vector products over the
//! rows with `D_j > 0` only, each in one pass over those rows (a row's dot and its scaled
//! addition while it is in cache). Each Newton step solves the system by conjugate gradients with a
//! preconditioner (a sketched Hessian for narrow dense rows; for sparse rows Jacobi's, or the
//! Hessian inverted through the Woodbury identity over the active rows once Jacobi's needed many
//! iterations) to a relative residual `min(0.1, sqrt(|grad| / |grad_0|))` (the forcing
//! term of Eisenstat & Walker), or to 0.1 when the previous line search took less than half of
//! its Newton step (many rows crossed their kinks, so the generalised Hessian misjudged `J`
//! there and an accurate solve of the next system buys nothing: measured on the 100k embedding
//! set, linear miSVM + MISVM spent 4,471 CG passes against 5,833), then minimises `J` exactly
//! along the step: `J` is
//! piecewise quadratic on the line, and a safeguarded Newton iteration on its derivative (a
//! bracketing bisection when a step leaves the bracket) finds the minimiser with `O(n)` work
//! per trial, the scores along the line being `f + t z` with `z = X s_w + s_b` computed once
//! (the exact line search of LIBLINEAR's L2-loss primal solvers and Chapelle 2007).
//!
//! The solver works on centred rows: `f_j = (x_j - mu) . w + b'` with `mu` the mean row and
//! `b' = b + mu . w`, the same problem (the bias is not penalised, so `w`, the scores and `J`
//! are unchanged; `b` is returned). The rows are never centred in memory: `(X - 1 mu^T) v =
//! X v - (mu . v) 1` and `(X - 1 mu^T)^T u = X^T u - (sum u) mu`, so sparse rows stay sparse
//! and a pass costs what it did. Centring decouples the bias from `w`: on rows far from the
//! origin (embeddings of non-negative activations) the Hessian's bias row `X^T D 1` is nearly
//! parallel to the large directions of `X^T D X`, and the Jacobi preconditioner cannot see it.
//! Measured on 94,104 x 512 embedding rows (`make_embedding_bags`, AL-SVM's last temperatures,
//! benches/RESULTS.md): linear miSVM + MISVM spent 9,947 CG passes uncentred and 5,833 centred;
//! AL-SVM, 16,785 and 10,855.
//!
//! Stopped when `|grad| <= tol |grad_0|` in the centred coordinates, `grad_0` the gradient at
//! `w = 0, b' = 0` (LIBLINEAR's rule), so a warm start from the previous solution of an
//! annealing or relabelling step ends at once when the costs barely changed.
//!
//! Parallel work: `X v` row by row; every sum over rows (`X^T u`, the Hessian-vector products, the
//! loss, the line search's derivatives, the bias gradient, the Jacobi diagonal, the sketch's
//! total weight and the Woodbury product) in the fixed pairwise tree over the bags
//! (`tree_sum`), and the sketch's sample drawn bag by bag. A solve is therefore the same
//! bits for any number of threads and for any partition of the bags into contiguous groups, each
//! group computing its part of every sum.

use std::borrow::Cow;

use ndarray::{Array1, Array2, Axis};
use rayon::prelude::*;

use super::rows::{
    adjacent, dense_row, on_rows, pair_nodes, sum_rows_nodes, x_dot, xt_dot_nodes,
    xt_dot_pair_nodes, Group, RowsRef, BLOCK_ROWS,
};
use super::Cholesky;
use crate::bags::Instances;
use crate::error::Result;
use crate::linalg::{faer_mut, faer_ref, Real, Simd};
use crate::progress::Cancel;
use crate::tree_sum::{combine, partial_bags, sum_bags, Node, Tree, TreeValue};
use faer::linalg::matmul::triangular::{self, BlockStructure};

/// The solve over partitions held elsewhere (the Python package's Dask route).
#[cfg(any(feature = "python", test))]
mod partition;
#[cfg(any(feature = "python", test))]
pub(crate) use partition::{
    get_nodes, put_nodes, Answer, Dispatch, OwnedPart, Reader, RemoteParts,
};
#[cfg(test)]
pub(crate) use partition::{rows_of, Local};
/// The exact line search along a Newton step.
mod line_search;
use line_search::line_search;
/// The recovery of a distributed fit from a lost partition.
#[cfg(any(feature = "python", test))]
mod recover;
#[cfg(any(feature = "python", test))]
pub(crate) use recover::Recovering;
#[cfg(test)]
pub(crate) use recover::{drops_for, restores_for, Dropping};
#[cfg(feature = "python")]
pub(crate) use recover::{Link, Logged, Sequenced};

/// A line-search step below this says the quadratic model of the last Newton step was poor
/// (rows crossed their kinks along it); the next system is then solved only to the loose
/// forcing term 0.1 (module docs).
const POOR_MODEL_STEP: f64 = 0.5;

/// Cap on conjugate-gradient iterations per Newton step.
const MAX_CG: usize = 250;

/// The default relative gradient tolerance of [`LinearSquaredHinge::solve`].
pub const LINEAR_TOL: f64 = 1e-6;

/// Rows read by the passes of every solve in this process ([`rows_read`]).
static ROWS_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The rows the linear solver's passes have read in this process so far (each pass counts the
/// rows it reads: all of them for `X w` and the mean, the active ones for a Hessian-vector
/// product, those with a loss term for a gradient): `rows_read() / n` between two moments is
/// the number of passes over `n` rows, and times the row's bytes the data read, for the
/// benchmarks of the passes against the machine's read bandwidth. One relaxed atomic
/// addition per pass.
pub fn rows_read() -> u64 {
    ROWS_READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts `rows` read by a pass ([`rows_read`]).
pub(super) fn note_rows(rows: usize) {
    ROWS_READ.fetch_add(rows as u64, std::sync::atomic::Ordering::Relaxed);
}

/// The linear-kernel problem: instances and the costs of each target.
#[derive(Debug, Clone, Copy)]
pub struct LinearSquaredHinge<'a> {
    /// Instance rows (dense or CSR).
    pub x: &'a Instances,
    /// The bags' row offsets (`n_bags + 1`, from 0 to the number of rows): the leaves of every
    /// sum over rows (`tree_sum`). Any fixed split of the rows works; the bags make a
    /// solve split by bags give the same bits.
    pub bag_ptr: &'a [usize],
    /// Cost of the target +1 per instance (`0`: no such loss term).
    pub c_pos: &'a [f64],
    /// Cost of the target -1 per instance.
    pub c_neg: &'a [f64],
    /// The mean row of `x` when the caller has it ([`mean_row`]; a sequence of solves on the
    /// same rows computes it once); `None`: computed by each solve (one pass).
    pub mean: Option<&'a [f64]>,
}

/// The mean row of `x` (one pass, summed in the tree over the bags of `bag_ptr`):
/// [`LinearSquaredHinge::mean`].
pub fn mean_row(x: &Instances, bag_ptr: &[usize]) -> Vec<f64> {
    let (n, d) = (x.n_rows(), x.n_features());
    let n_bags = bag_ptr.len().saturating_sub(1);
    if n == 0 || check_bag_ptr(bag_ptr, n).is_err() {
        return vec![0.0; d];
    }
    let part = Part::new(
        RowsRef::new(x),
        bag_ptr,
        0,
        n_bags,
        Cow::Borrowed(&[]),
        Cow::Borrowed(&[]),
    );
    combine(n_bags, part.mean_nodes(1.0 / n as f64), vec![0.0; d]).unwrap_or_else(|_| vec![0.0; d])
}

/// A solution of [`LinearSquaredHinge`].
#[derive(Debug, Clone)]
pub struct LinearSolution {
    /// Weight vector `w` (`n_features`).
    pub w: Array1<f64>,
    /// Bias `b`.
    pub b: f64,
    /// Objective `J(w, b)`.
    pub value: f64,
    /// Instance scores `f = X w + b` at the solution.
    pub scores: Vec<f64>,
    /// Newton iterations of the last solve.
    pub n_iter: usize,
    /// Conjugate-gradient iterations of the last solve, summed over its Newton steps (each one
    /// pass over the active rows).
    pub n_cg: usize,
    /// Whether the gradient tolerance was met (else the iteration cap stopped it).
    pub converged: bool,
}

/// `(sum_j D_j x_jk, sum_j D_j x_jk^2)` for every feature `k` in one pass (the Jacobi
/// preconditioner of the centred rows needs both): the group's nodes in the tree over the bags.
fn weighted_columns(x: RowsRef, g: Group, dj: &[f64], d: usize) -> Vec<Node<(Vec<f64>, Vec<f64>)>> {
    pair_nodes(g, d, |lo, hi, (acc1, acc2)| {
        let mut read = 0;
        for (j, &w) in dj.iter().enumerate().take(hi).skip(lo) {
            if w == 0.0 {
                continue;
            }
            read += 1;
            on_rows!(
                x,
                dense | data,
                d | {
                    let row = dense_row(data, d, j);
                    for ((s1, s2), &xv) in acc1.iter_mut().zip(acc2.iter_mut()).zip(row) {
                        let xv = xv.to_f64();
                        *s1 += w * xv;
                        *s2 += w * xv * xv;
                    }
                },
                sparse | c | {
                    let (idx, val) = c.row(j);
                    for (&i, &xv) in idx.iter().zip(val) {
                        acc1[i] += w * xv;
                        acc2[i] += w * xv * xv;
                    }
                }
            )
        }
        note_rows(read);
        read > 0
    })
}

/// The rows of one Newton step, bag by bag: the active rows `A` (`D_j > 0`), `active` in row
/// order, bag `k`'s at `active[aptr[k]..aptr[k + 1]]`; and, once the step's scores `z` are
/// known ([`Part::step_scores`]), the line search's rows: `(f_j, z_j, c+_j, c-_j)` of the rows
/// with `z_j != 0` in row order, bag `k`'s at `line[lptr[k]..lptr[k + 1]]`, packed so that each
/// trial of the line search reads those rows alone, contiguously.
#[derive(Default)]
struct ActiveRows {
    active: Vec<usize>,
    aptr: Vec<usize>,
    line: Vec<[f64; 4]>,
    lptr: Vec<usize>,
}

impl RowState {
    /// The bytes of the per-row state.
    #[cfg(any(feature = "python", test))]
    fn held_bytes(&self) -> usize {
        use std::mem::size_of_val;
        let a = &self.act;
        [&self.f, &self.g, &self.dj, &self.z, &self.q, &self.z_active]
            .iter()
            .map(|v| size_of_val(&v[..]))
            .sum::<usize>()
            + size_of_val(&a.active[..])
            + size_of_val(&a.aptr[..])
            + size_of_val(&a.line[..])
            + size_of_val(&a.lptr[..])
    }
}

impl ActiveRows {
    /// The rows with `D_j > 0` of the bags of `ptr`, bags in parallel.
    fn new(ptr: &[usize], dj: &[f64]) -> Self {
        let rows = |k: usize| (ptr[k]..ptr[k + 1]).filter(|&j| dj[j] > 0.0);
        let mut active = Vec::new();
        let aptr = per_bag(
            ptr,
            &mut active,
            0,
            |k| rows(k).count(),
            |k, out| out.iter_mut().zip(rows(k)).for_each(|(o, j)| *o = j),
        );
        Self {
            active,
            aptr,
            ..Self::default()
        }
    }
}

/// The bag-by-bag slices of `v`, whose entries are the rows of the bags of `ptr` (`v[ptr[k]..ptr[k
/// + 1]]` for bag `k`).
fn bag_slices<'v, T>(mut v: &'v mut [T], ptr: &[usize]) -> Vec<&'v mut [T]> {
    ptr.windows(2)
        .map(|w| {
            let (head, tail) = std::mem::take(&mut v).split_at_mut(w[1] - w[0]);
            v = tail;
            head
        })
        .collect()
}

/// Entries gathered bag by bag, bags in parallel: `count(k)` entries for bag `k` of the bags of
/// `ptr`, written by `fill(k, out)` into that bag's slice of `out` (its content replaced, its
/// allocation kept); each bag's offset into it (`ptr.len()` offsets). The same entries in the
/// same order as a loop over the bags, for any thread count.
fn per_bag<T: Clone + Send + Sync>(
    ptr: &[usize],
    out: &mut Vec<T>,
    zero: T,
    count: impl Fn(usize) -> usize + Sync,
    fill: impl Fn(usize, &mut [T]) + Sync,
) -> Vec<usize> {
    let n_bags = ptr.len().saturating_sub(1);
    let counts: Vec<usize> = (0..n_bags).into_par_iter().map(&count).collect();
    let mut offsets = Vec::with_capacity(n_bags + 1);
    offsets.push(0);
    let mut at = 0;
    for c in counts {
        at += c;
        offsets.push(at);
    }
    out.clear();
    out.par_extend(rayon::iter::repeat_n(zero, at));
    bag_slices(out, &offsets)
        .into_par_iter()
        .enumerate()
        .for_each(|(k, o)| fill(k, o));
    offsets
}

/// The value `(vector, bias)` of a Hessian-vector product.
type HessValue = (Vec<f64>, f64);

/// `(X_A^T D (X_A p_w + p_b), 1^T D (X_A p_w + p_b))` over the active rows `A` of the bags of
/// `ptr`, one pass: each row's dot and its scaled addition while the row is in cache, writing
/// `q`, the active rows' values of `X_A p_w + p_b`; summed in the tree over the bags.
fn hessian_tree<'b>(
    x: RowsRef<'b>,
    ptr: &'b [usize],
    a: &'b ActiveRows,
    dj: &'b [f64],
    p_w: &'b [f64],
    p_b: f64,
    simd: Simd,
) -> Tree<'b, HessValue, f64, impl Fn(usize, &mut HessValue, &mut [f64]) -> bool + Sync + 'b> {
    let d = p_w.len();
    let leaf = move |k: usize, out: &mut (Vec<f64>, f64), q: &mut [f64]| {
        let rows = &a.active[a.aptr[k]..a.aptr[k + 1]];
        let (acc, acc_b) = out;
        on_rows!(
            x,
            dense | data,
            d | {
                // four rows at a time: the same bits as one at a time, with acc read once
                // per four rows, and p_w too for rows that are apart (adjacent rows' dots
                // one after another, see `rows::adjacent`)
                let (quads, rest) = rows.split_at(rows.len() / 4 * 4);
                let (q4, q1) = q.split_at_mut(quads.len());
                for (j4, qq) in quads.chunks_exact(4).zip(q4.chunks_exact_mut(4)) {
                    let r = [0, 1, 2, 3].map(|k| dense_row(data, d, j4[k]));
                    let dots = if adjacent(j4) {
                        r.map(|row| simd.dot(row, p_w))
                    } else {
                        simd.dot4(p_w, r)
                    };
                    let mut u = [0.0; 4];
                    for k in 0..4 {
                        qq[k] = dots[k] + p_b;
                        u[k] = dj[j4[k]] * qq[k];
                        *acc_b += u[k];
                    }
                    simd.add_scaled4(acc, u, r);
                }
                for (&j, qj) in rest.iter().zip(q1.iter_mut()) {
                    let row = dense_row(data, d, j);
                    *qj = simd.dot(row, p_w) + p_b;
                    let u = dj[j] * *qj;
                    *acc_b += u;
                    simd.add_scaled(acc, u, row);
                }
            },
            sparse | c | {
                for (&j, qj) in rows.iter().zip(q.iter_mut()) {
                    let (idx, val) = c.row(j);
                    let t: f64 = idx.iter().zip(val).map(|(&i, &v)| v * p_w[i]).sum();
                    *qj = t + p_b;
                    let u = dj[j] * *qj;
                    *acc_b += u;
                    for (&i, &v) in idx.iter().zip(val) {
                        acc[i] += u * v;
                    }
                }
            }
        );
        !rows.is_empty()
    };
    Tree::new(ptr, &a.aptr, (vec![0.0; d], 0.0), leaf)
}

/// Dense rows of at most this many features get the sketched-Hessian preconditioner (its
/// `(d + 1)^2` matrix and Cholesky factor stay small); wider or sparse rows get Jacobi's.
const SKETCH_MAX_FEATURES: usize = 2048;
/// The sketch has `m = |A| / SKETCH_ACTIVE_PER_ROW` rows for `|A|` active rows, clamped to
/// `[SKETCH_MIN_ROWS_PER_UNKNOWN (d + 1), SKETCH_MAX_ROWS_PER_UNKNOWN (d + 1)]` (all active rows
/// when there are fewer). Its product costs `m (d + 1)^2 / 2` multiply-adds, a pass over the
/// active rows `|A| (d + 1)`; GEMM runs them several times faster than a pass, which is bound by
/// memory. Measured on AL-SVM at 94,104 x 512 (benches/RESULTS.md): 4, 8 and 16 rows per unknown
/// took 666, 487 and 378 conjugate-gradient iterations in all, against 5,736 with Jacobi's.
const SKETCH_ACTIVE_PER_ROW: usize = 64;
/// The least rows of the sketch per unknown (`w` and the bias).
const SKETCH_MIN_ROWS_PER_UNKNOWN: usize = 4;
/// The most rows of the sketch per unknown.
const SKETCH_MAX_ROWS_PER_UNKNOWN: usize = 16;
/// Sample rows per block of the sketch's product: `M` is the sum of the blocks' products, added
/// in block order.
const SKETCH_BLOCK: usize = 512;
/// The side of the square tiles in which the sketch's upper triangle is copied from its lower one.
const MIRROR_TILE: usize = 32;
/// Blocks of the sketch's sample built and multiplied together (bounds its buffer to
/// `SKETCH_CHUNK_BLOCKS SKETCH_BLOCK (d + 1)` values; each chunk is one parallel loop over
/// the panels of `M`, each panel adding the chunk's blocks in turn, rather than one loop a block).
const SKETCH_CHUNK_BLOCKS: usize = 8;

/// Sparse rows get the Woodbury preconditioner ([`Preconditioner::woodbury`]) for the rest of a
/// solve once a Newton step's conjugate gradients under Jacobi's took more than this many
/// iterations (well-conditioned problems, such as raw text rows, never pay for its factor).
const WOODBURY_AFTER_CG: usize = 20;
/// The most active rows the Woodbury preconditioner factors (an `|A| x |A|` matrix per Newton
/// step); with more, Jacobi's.
const WOODBURY_MAX_ACTIVE: usize = 2048;
/// The curvature the Woodbury preconditioner gives the unpenalised bias besides its loss terms:
/// `M = H + WOODBURY_BIAS e_b e_b^T`, a rank-one change, so that the conjugate gradients end in
/// two iterations (up to rounding).
const WOODBURY_BIAS: f64 = 1.0;
/// Rows of `S` per block of [`Preconditioner::woodbury`]'s product (each block scatters its rows
/// into one dense buffer of `d` values).
const WOODBURY_BLOCK: usize = 64;

/// The preconditioner `M` of the conjugate gradients, applied as `z = M^{-1} r`.
enum Preconditioner {
    /// The diagonal of the Hessian (`w` part and bias entry).
    Jacobi { m_w: Vec<f64>, m_b: f64 },
    /// The Hessian of a sample of the active rows, scaled to all of them, factored.
    Sketch(Cholesky),
    /// The Hessian itself (bias entry raised by [`WOODBURY_BIAS`]), inverted through the
    /// Woodbury identity over the active sparse rows ([`Woodbury`]), held by the row store.
    Woodbury,
}

impl Preconditioner {
    /// The sketched Hessian `M = [I 0; 0 0] + sum_{s in S} c_s u_s u_s^T`, `u_s = (x_s - mu, 1)`,
    /// over a sample `S` of the active rows `A` ([`RowStore::sketch_rows`]): all of them with
    /// `c_s = D_s` when `|A| <= m` (`m` from [`SKETCH_ACTIVE_PER_ROW`]; `M` is then the Hessian
    /// and a conjugate-gradient step is a Newton step), else about `m` draws by systematic
    /// sampling with probability proportional to `D_j`, each weighing `step = sum_A D / m`, bag
    /// by bag: the draws of a bag are the points `(u_k + i) step` in the running sum of its
    /// rows' `D`, `u_k` in `[0, 1)` a fixed hash of the bag's index (the sample of a bag depends
    /// on that bag and the total alone, so that a split of the bags draws the same sample; the
    /// random start keeps each row's expected count `D_j / step` however small the bags). An
    /// unbiased estimate of `X^T D X` whose rows of large curvature, such as the few witnesses
    /// of a nearly separable annealing step, are all in it). The subsampled-Hessian
    /// preconditioner of Roosta-Khorasani & Mahoney's sub-sampled Newton methods; a row sample
    /// of a few times `d` preserves `X^T D X` up to a small relative error when no row has a
    /// large leverage. Dense rows of at most [`SKETCH_MAX_FEATURES`] features with an active row
    /// only (`None` otherwise). The sample is fixed by `A` alone, and its product is added block
    /// by block in row order, each entry by the same operations however its panels are spread
    /// over the threads ([`lower_gram_add`]), so `M` is the same for any thread count and any
    /// split of the bags.
    fn sketch<S: RowStore>(store: &mut S, mu: &[f64], n_active: usize) -> Result<Option<Self>> {
        let d = mu.len();
        if n_active == 0 || d > SKETCH_MAX_FEATURES || !store.dense() {
            return Ok(None);
        }
        let m = (n_active / SKETCH_ACTIVE_PER_ROW).clamp(
            SKETCH_MIN_ROWS_PER_UNKNOWN * (d + 1),
            SKETCH_MAX_ROWS_PER_UNKNOWN * (d + 1),
        );
        let sample = if n_active <= m {
            store.sketch_rows(None)?
        } else {
            let total = store.sum_d()?;
            store.sketch_rows(Some(total / m as f64))?
        };
        // M's lower triangle, as sum of U^T U over blocks of the sample's rows
        // sqrt(weight) (x_s - mu, 1), added in block order; U is built and multiplied a
        // chunk of blocks at a time (two parallel loops a chunk, not two a block)
        let mut h = Array2::<f64>::zeros((d + 1, d + 1));
        let chunk = SKETCH_BLOCK * SKETCH_CHUNK_BLOCKS;
        let mut u = Array2::<f64>::zeros((chunk.min(sample.len()), d + 1));
        for rows in sample.chunks(chunk) {
            let mut u = u.slice_mut(ndarray::s![..rows.len(), ..]);
            u.axis_iter_mut(Axis(0)).into_par_iter().zip(rows).for_each(
                |(mut row, (x, weight))| {
                    let c = weight.sqrt();
                    for ((o, &v), &mv) in row.iter_mut().zip(x).zip(mu) {
                        *o = c * (v - mv);
                    }
                    row[d] = c;
                },
            );
            lower_gram_add(h.view_mut(), u.view(), SKETCH_BLOCK);
        }
        // the upper triangle from the lower, tile by tile (a column of the lower triangle
        // read a cache line at a time, not one line per value)
        for k0 in (0..=d).step_by(MIRROR_TILE) {
            for l0 in (0..=k0).step_by(MIRROR_TILE) {
                for k in k0..(k0 + MIRROR_TILE).min(d + 1) {
                    for l in l0..(l0 + MIRROR_TILE).min(k) {
                        h[[l, k]] = h[[k, l]];
                    }
                }
            }
        }
        for k in 0..d {
            h[[k, k]] += 1.0;
        }
        Ok(Cholesky::factor(&h).ok().map(Preconditioner::Sketch))
    }

    /// The diagonal of the Hessian (the bias entry guarded: no loss term active),
    /// `sum_j D_j (x_jk - mu_k)^2 = S2_k - 2 mu_k S1_k + mu_k^2 sum D`, one pass.
    fn jacobi<S: RowStore>(store: &mut S, mu: &[f64]) -> Result<Self> {
        let (sum_d, s1, mut m_w) = store.jacobi_sums()?;
        for ((m, &s), &u) in m_w.iter_mut().zip(&s1).zip(mu) {
            *m = 1.0 + (*m - 2.0 * u * s + u * u * sum_d).max(0.0);
        }
        let m_b = if sum_d > 0.0 { sum_d } else { 1.0 };
        Ok(Preconditioner::Jacobi { m_w, m_b })
    }

    /// `M^{-1} (r_w, r_b)`.
    fn apply<S: RowStore>(&self, store: &mut S, r_w: &[f64], r_b: f64) -> Result<(Vec<f64>, f64)> {
        Ok(match self {
            Preconditioner::Jacobi { m_w, m_b } => {
                (r_w.iter().zip(m_w).map(|(r, m)| r / m).collect(), r_b / m_b)
            }
            Preconditioner::Sketch(chol) => {
                let mut r = r_w.to_vec();
                r.push(r_b);
                match chol.solve(Array1::from_vec(r)) {
                    Ok(z) => {
                        let mut z = z.to_vec();
                        let z_b = z.pop().unwrap_or(0.0);
                        (z, z_b)
                    }
                    // a non-finite residual: left to the caller's checks, as Jacobi would
                    Err(_) => (r_w.to_vec(), r_b),
                }
            }
            Preconditioner::Woodbury => store.woodbury_apply(r_w, r_b)?,
        })
    }
}

/// The Woodbury preconditioner's parts: the active rows `A`, `sqrt(D_j)` of each, and the
/// Cholesky factor of `S = I + W B^{-1} W^T`.
struct Woodbury<'a> {
    x: RowsRef<'a>,
    mu: Vec<f64>,
    /// The bags' row offsets and the active rows' offsets per bag ([`ActiveRows`]).
    ptr: Vec<usize>,
    aptr: Vec<usize>,
    active: Vec<usize>,
    root_d: Vec<f64>,
    s: Cholesky,
    simd: Simd,
}

impl<'a> Woodbury<'a> {
    /// The Hessian `H = [I 0; 0 0] + W^T W` with the bias entry raised by `beta =`
    /// [`WOODBURY_BIAS`], `M = B + W^T W`, `B = diag(1, ..., 1, beta)`, whose rows
    /// `w_j = sqrt(D_j) (x_j - mu, 1)` are the active rows: `M^{-1} r = B^{-1} (r - W^T S^{-1} W
    /// B^{-1} r)`, `S = I + W B^{-1} W^T` (the Woodbury identity), `S` factored once per Newton
    /// step. Its entries `sqrt(D_i D_l) ((x_i - mu) . (x_l - mu) + 1 / beta) + [i = l]` come
    /// from the sparse products `x_i . x_l - mu . x_i - mu . x_l + mu . mu`, rows in parallel
    /// (each entry by the same operations for any thread count). Sparse rows with 1 to
    /// [`WOODBURY_MAX_ACTIVE`] active rows only (`None` otherwise): for rows that are wide,
    /// sparse and standardised (text), Jacobi's preconditioner leaves hundreds of conjugate
    /// gradients per Newton step (benches/RESULTS.md, "The linear route on standardised sparse
    /// text"), while `M^{-1} H` is the identity up to rank one. It needs every active row
    /// together, so a row store split into groups goes without it.
    fn new(
        x: RowsRef<'a>,
        mu: &[f64],
        ptr: &[usize],
        a: &ActiveRows,
        dj: &[f64],
        simd: Simd,
    ) -> Option<Self> {
        let active = &a.active;
        let RowsRef::Sparse(c) = x else {
            return None;
        };
        let m = active.len();
        if m == 0 || m > WOODBURY_MAX_ACTIVE {
            return None;
        }
        let d = mu.len();
        let root_d: Vec<f64> = active.iter().map(|&j| dj[j].sqrt()).collect();
        let mu_x: Vec<f64> = active.iter().map(|&j| x.row_dot(j, mu, simd)).collect();
        let mu_mu = dot(mu, mu) + 1.0 / WOODBURY_BIAS;
        // row i of S's lower triangle, from row i scattered into a dense buffer (one per block
        // of rows, blocks in parallel), then mirrored
        let mut s = Array2::<f64>::zeros((m, m));
        let rows = s.as_slice_mut()?;
        rows.par_chunks_mut(WOODBURY_BLOCK * m)
            .enumerate()
            .for_each(|(blk, block)| {
                let mut dense = vec![0.0; d];
                for (r, row) in block.chunks_exact_mut(m).enumerate() {
                    let i = blk * WOODBURY_BLOCK + r;
                    let (idx, val) = c.row(active[i]);
                    for (&k, &v) in idx.iter().zip(val) {
                        dense[k] += v;
                    }
                    for (l, o) in row.iter_mut().enumerate().take(i + 1) {
                        let (idx_l, val_l) = c.row(active[l]);
                        let g: f64 = idx_l.iter().zip(val_l).map(|(&k, &v)| v * dense[k]).sum();
                        *o = root_d[i] * root_d[l] * (g - mu_x[i] - mu_x[l] + mu_mu);
                    }
                    row[i] += 1.0;
                    for &k in idx {
                        dense[k] = 0.0;
                    }
                }
            });
        for i in 0..m {
            for l in 0..i {
                s[[l, i]] = s[[i, l]];
            }
        }
        let s = Cholesky::factor(&s).ok()?;
        Some(Woodbury {
            x,
            mu: mu.to_vec(),
            ptr: ptr.to_vec(),
            aptr: a.aptr.clone(),
            active: active.to_vec(),
            root_d,
            s,
            simd,
        })
    }

    /// `M^{-1} (r_w, r_b)`.
    fn apply(&self, r_w: &[f64], r_b: f64) -> (Vec<f64>, f64) {
        // v = W B^{-1} r, y = S^{-1} v, then B^{-1} (r - W^T y)
        let shift = r_b / WOODBURY_BIAS - dot(&self.mu, r_w);
        let v: Vec<f64> = self
            .active
            .iter()
            .zip(&self.root_d)
            .map(|(&j, &rd)| rd * (self.x.row_dot(j, r_w, self.simd) + shift))
            .collect();
        let Ok(y) = self.s.solve(Array1::from_vec(v)) else {
            return (r_w.to_vec(), r_b); // as for the sketch
        };
        // W^T y = (sum_i c_i x_i - (sum c) mu, sum c), c_i = sqrt(D_i) y_i, summed in
        // the tree over the bags
        let (wt_y, sum_c) = sum_bags(
            &self.ptr,
            (vec![0.0; r_w.len()], 0.0),
            |k, acc: &mut (Vec<f64>, f64)| {
                for i in self.aptr[k]..self.aptr[k + 1] {
                    let c = self.root_d[i] * y[i];
                    self.x.add_row(self.active[i], c, &mut acc.0, self.simd);
                    acc.1 += c;
                }
                self.aptr[k + 1] > self.aptr[k]
            },
        );
        let z_w = r_w
            .iter()
            .zip(&wt_y)
            .zip(&self.mu)
            .map(|((&r, &t), &u)| r - t + sum_c * u)
            .collect();
        (z_w, (r_b - sum_c) / WOODBURY_BIAS)
    }
}

/// The least rows of `M` per task of the sketch's product ([`lower_gram_add`]).
const SKETCH_PANEL_ROWS: usize = 64;

/// Sketch blocks of fewer rows than this are multiplied in one call ([`lower_gram_add`]).
const SKETCH_PANEL_MIN_DEPTH: usize = 4;

/// `h += U_b^T U_b` on the lower triangle of `h` for the blocks `U_b` of `block` rows of `u`
/// (the last one shorter) in turn, in panels of at least [`SKETCH_PANEL_ROWS`] rows of `h`
/// computed in parallel, each panel adding every block in turn: the panel `[r0, r1)` of a block
/// is `U_{:, r0..r1}^T U_{:, ..r0}` (a rectangle) and the lower triangle of
/// `U_{:, r0..r1}^T U_{:, r0..r1}`. The panels are fixed by `d` alone, and each entry is the
/// same dot product over the block's rows however the triangle is cut (the product runs the
/// whole block's depth in one pass of faer's kernel, and a panel has as many rows as it takes
/// to get the kernel of the whole triangle), added block after block: the bits of one call
/// over the whole triangle a block, for any thread count
/// (`tree_tests::the_sketch_product_in_panels_is_the_product_in_one`).
fn lower_gram_add(mut h: ndarray::ArrayViewMut2<f64>, u: ndarray::ArrayView2<f64>, block: usize) {
    let blocks: Vec<_> = u.axis_chunks_iter(Axis(0), block.max(1)).collect();
    let mut at = 0;
    while at < blocks.len() {
        // a block of fewer rows is one call (faer's product of depth one, a rank-one update,
        // rounds otherwise in the rectangles); cheap at that depth
        let deep = blocks[at..]
            .iter()
            .take_while(|b| b.nrows() >= SKETCH_PANEL_MIN_DEPTH)
            .count();
        let (run, panels) = if deep == 0 {
            (1, 1)
        } else {
            (deep, (h.nrows() / SKETCH_PANEL_ROWS).max(1))
        };
        panels_add(h.view_mut(), &blocks[at..at + run], panels);
        at += run;
    }
}

/// `h += U_b^T U_b` on the lower triangle of `h` for the `blocks` in turn, in `panels` row
/// panels of `h` in parallel ([`lower_gram_add`]).
fn panels_add(
    mut h: ndarray::ArrayViewMut2<f64>,
    blocks: &[ndarray::ArrayView2<f64>],
    panels: usize,
) {
    let n = h.nrows();
    let mut rows = Vec::with_capacity(panels);
    let mut rest = h.view_mut();
    for i in 0..panels {
        let (r0, r1) = (i * n / panels, (i + 1) * n / panels);
        let (head, tail) = rest.split_at(Axis(0), r1 - r0);
        rows.push((r0, r1, head));
        rest = tail;
    }
    rows.into_par_iter().for_each(|(r0, r1, mut panel)| {
        for u in blocks {
            let lhs = u.slice(ndarray::s![.., r0..r1]);
            if r0 > 0 {
                faer::linalg::matmul::matmul(
                    faer_mut(panel.slice_mut(ndarray::s![.., ..r0])),
                    faer::Accum::Add,
                    faer_ref(lhs.t()),
                    faer_ref(u.slice(ndarray::s![.., ..r0])),
                    1.0,
                    faer::Par::Seq,
                );
            }
            triangular::matmul(
                faer_mut(panel.slice_mut(ndarray::s![.., r0..r1])),
                BlockStructure::TriangularLower,
                faer::Accum::Add,
                faer_ref(lhs.t()),
                BlockStructure::Rectangular,
                faer_ref(lhs),
                BlockStructure::Rectangular,
                1.0,
                faer::Par::Seq,
            );
        }
    });
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A fixed number in `[0, 1)` from `k` (SplitMix64's finaliser): the start of bag `k`'s
/// systematic sample in [`Preconditioner::sketch`].
fn unit_hash(k: usize) -> f64 {
    let mut z = (k as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// `X^T u - (sum u) mu` from `X^T u` and `sum u`: a product with the centred rows `x_j - mu`
/// without forming them (module docs).
fn centre(mut xt_u: Vec<f64>, sum_u: f64, mu: &[f64]) -> Vec<f64> {
    xt_u.iter_mut().zip(mu).for_each(|(o, &m)| *o -= sum_u * m);
    xt_u
}

/// The loss terms of one row at the score `fj` and costs `(cp, cn)`: `(loss, g_j, D_j)`.
#[inline]
fn row_loss(cp: f64, cn: f64, fj: f64) -> (f64, f64, f64) {
    let (mut loss, mut gj, mut d) = (0.0, 0.0, 0.0);
    let up = 1.0 - fj;
    if cp > 0.0 && up > 0.0 {
        loss += cp * up * up;
        gj -= 2.0 * cp * up;
        d += 2.0 * cp;
    }
    let dn = 1.0 + fj;
    if cn > 0.0 && dn > 0.0 {
        loss += cn * dn * dn;
        gj += 2.0 * cn * dn;
        d += 2.0 * cn;
    }
    (loss, gj, d)
}

/// Adds one row's terms of `(loss'(t), loss''(t))` along a step into `acc`: the row's score
/// `f`, step score `z` and costs `(cp, cn)`, at the score `f + t z` (the derivatives in `t` of
/// [`row_loss`]'s loss).
#[inline]
fn add_line_terms(acc: &mut (f64, f64), [f, z, cp, cn]: [f64; 4], t: f64) {
    let fj = f + t * z;
    if cp > 0.0 && fj < 1.0 {
        acc.0 -= 2.0 * cp * (1.0 - fj) * z;
        acc.1 += 2.0 * cp * z * z;
    }
    if cn > 0.0 && fj > -1.0 {
        acc.0 += 2.0 * cn * (1.0 + fj) * z;
        acc.1 += 2.0 * cn * z * z;
    }
}

/// The first gradient of a solve ([`RowStore::first_gradient`]): the loss, `X^T g`, `X^T g0`
/// (`g0` the loss gradient at `w = 0, b' = 0`), `sum g` and `sum g0`.
pub(crate) struct FirstGradient {
    pub(crate) loss: f64,
    pub(crate) xt_g: Vec<f64>,
    pub(crate) xt_g0: Vec<f64>,
    pub(crate) sum_g: f64,
    pub(crate) sum_g0: f64,
}

impl FirstGradient {
    /// The first gradient from its sums, as every store gathers them: the loss, the pair
    /// `(X^T g, X^T g0)` (one pass over the rows), `sum g` and `sum g0`.
    fn new(loss: f64, (xt_g, xt_g0): (Vec<f64>, Vec<f64>), sum_g: f64, sum_g0: f64) -> Self {
        Self {
            loss,
            xt_g,
            xt_g0,
            sum_g,
            sum_g0,
        }
    }
}

/// The rows of a solve as the Newton-CG driver reaches them: each method is one round over the
/// groups of bags that hold the rows, each group computing its part (every sum as its canonical
/// nodes in the fixed tree over the bags, combined by [`combine`]; per-row state such as the
/// scores `f`, the loss terms `g`, `D`, the active rows and the step's scores `z` kept by its
/// group). The driver holds only `d`-vectors and scalars, so a solve gives the same bits
/// however the bags are grouped: one group in process ([`Parts`]), several in tests, or the
/// partitions of a Dask collection.
pub(crate) trait RowStore {
    /// Rows (instances) in all groups.
    fn n_rows(&self) -> usize;
    /// Features of every row.
    fn n_features(&self) -> usize;
    /// Whether the rows are dense (the sketch needs dense rows).
    fn dense(&self) -> bool;
    /// The mean row ([`mean_row`]).
    fn mean(&mut self) -> Result<Vec<f64>>;
    /// Sets the scores `f = X w + shift`.
    fn set_scores(&mut self, w: &[f64], shift: f64) -> Result<()>;
    /// The loss terms at the scores, and the first gradient's sums.
    fn first_gradient(&mut self) -> Result<FirstGradient>;
    /// Moves the scores along the last step (`f += t z`), then the loss terms there:
    /// `(loss, X^T g, sum g)`.
    fn accept(&mut self, t: f64) -> Result<(f64, Vec<f64>, f64)>;
    /// Marks the active rows (`D_j > 0`) for a Newton step; their number.
    fn activate(&mut self) -> Result<usize>;
    /// `sum D` over the active rows.
    fn sum_d(&mut self) -> Result<f64>;
    /// The sketch's sample ([`Preconditioner::sketch`]), rows as `f64` with their weights, in
    /// row order: every active row weighing `D_j` (`step` `None`), else the systematic draws
    /// of `step`.
    fn sketch_rows(&mut self, step: Option<f64>) -> Result<Vec<(Vec<f64>, f64)>>;
    /// `(sum D, sum_j D_j x_j, sum_j D_j x_j^2)` ([`Preconditioner::jacobi`]).
    fn jacobi_sums(&mut self) -> Result<(f64, Vec<f64>, Vec<f64>)>;
    /// Factors the Woodbury preconditioner at the mean `mu`; whether this store has one.
    fn woodbury(&mut self, mu: &[f64]) -> Result<bool>;
    /// `M^{-1} (r_w, r_b)` of the Woodbury preconditioner.
    fn woodbury_apply(&mut self, r_w: &[f64], r_b: f64) -> Result<(Vec<f64>, f64)>;
    /// The Hessian-vector product of the active rows at `p_w` and `shift` (the centred bias),
    /// the rows' `q` kept; `pending`: the step length of the previous `q`, added into the
    /// step's scores first.
    fn hessian(&mut self, p_w: &[f64], shift: f64, pending: Option<f64>) -> Result<HessValue>;
    /// The step's scores `z` (`pending` as in [`RowStore::hessian`]; the inactive rows with a
    /// loss term by their dot with `s_w`, plus `shift`).
    fn step_scores(&mut self, s_w: &[f64], shift: f64, pending: Option<f64>) -> Result<()>;
    /// The loss's `(phi', phi'')` at `f + t z`, for each `t` of `ts`.
    fn line_terms(&mut self, ts: &[f64]) -> Result<Vec<(f64, f64)>>;
    /// How many points the line search should give one call of [`RowStore::line_terms`]: 1
    /// where a call costs a pass over the rows' state, more where it costs a round trip
    /// ([`mod@line_search`]).
    fn trials_per_call(&self) -> usize {
        1
    }
    /// The scores of the rows without a loss term, `X w + shift`.
    fn finish_scores(&mut self, w: &[f64], shift: f64) -> Result<()>;
}

/// The per-row state of a solve that a group keeps between rounds: the scores `f`, the loss
/// terms `g` and `D` ([`row_loss`]), the step's scores `z`, the active rows, and the active
/// rows' Hessian-vector products `q` and step scores `z_active` (Newton-CG, ALGORITHMS.md).
#[derive(Default)]
struct RowState {
    f: Vec<f64>,
    g: Vec<f64>,
    dj: Vec<f64>,
    z: Vec<f64>,
    act: ActiveRows,
    q: Vec<f64>,
    z_active: Vec<f64>,
}

/// One group of contiguous bags `[lo, hi)` with its rows, its costs and the per-row state of a
/// solve: the part of a [`RowStore`] that a group (a process, a Dask partition) computes.
pub(crate) struct Part<'a> {
    x: RowsRef<'a>,
    /// One offset per bag of the whole data set into this group's rows ([`Group`]).
    ptr: Vec<usize>,
    lo: usize,
    hi: usize,
    n: usize,
    d: usize,
    c_pos: Cow<'a, [f64]>,
    c_neg: Cow<'a, [f64]>,
    state: RowState,
    woodbury: Option<Woodbury<'a>>,
    simd: Simd,
}

impl<'a> Part<'a> {
    /// The bags `[lo, hi)` of a data set whose bags have the row offsets `bag_ptr` (all of
    /// them), `x` and the costs holding this group's rows only.
    fn new(
        x: RowsRef<'a>,
        bag_ptr: &[usize],
        lo: usize,
        hi: usize,
        c_pos: Cow<'a, [f64]>,
        c_neg: Cow<'a, [f64]>,
    ) -> Self {
        let (r0, r1) = (bag_ptr[lo], bag_ptr[hi]);
        let ptr = bag_ptr.iter().map(|&p| p.clamp(r0, r1) - r0).collect();
        let d = match x {
            RowsRef::Dense { d, .. } | RowsRef::Dense32 { d, .. } => d,
            RowsRef::Sparse(c) => c.n_cols(),
        };
        Self {
            x,
            ptr,
            lo,
            hi,
            n: r1 - r0,
            d,
            c_pos,
            c_neg,
            state: RowState::default(),
            woodbury: None,
            simd: Simd::detect(),
        }
    }

    fn group(&self) -> Group<'_> {
        Group {
            ptr: &self.ptr,
            lo: self.lo,
            hi: self.hi,
        }
    }

    /// The loss gradient at `w = 0, b' = 0` (every score zero): `g0_j = 2 (c-_j - c+_j)`.
    fn g0(&self) -> Vec<f64> {
        let (cp, cn) = (self.c_pos.iter(), self.c_neg.iter());
        cp.zip(cn).map(|(&cp, &cn)| 2.0 * (cn - cp)).collect()
    }

    fn mean_nodes(&self, inv_n: f64) -> Vec<Node<Vec<f64>>> {
        note_rows(self.n);
        xt_dot_nodes(self.x, self.group(), &vec![inv_n; self.n], self.d)
    }

    fn set_scores(&mut self, w: &[f64], shift: f64) {
        self.state.f = vec![0.0; self.n];
        note_rows(self.n);
        x_dot(self.x, w, self.simd, &mut self.state.f);
        self.state.f.iter_mut().for_each(|o| *o += shift);
    }

    /// Moves the scores along the last step: `f += t z`.
    fn advance(&mut self, t: f64) {
        let RowState { f, z, .. } = &mut self.state;
        f.iter_mut().zip(&*z).for_each(|(fv, &zv)| *fv += t * zv);
    }

    /// Loss gradient `g_j` and curvature `D_j` of every row at the scores `f`, and the loss
    /// (the group's nodes in the tree over the bags).
    fn loss_nodes(&mut self) -> Vec<Node<f64>> {
        let n = self.n;
        self.state.g.resize(n, 0.0);
        self.state.dj.resize(n, 0.0);
        self.state.z.resize(n, 0.0);
        let ptr = &self.ptr;
        let (f, cp, cn) = (&self.state.f, &*self.c_pos, &*self.c_neg);
        let nodes = Tree::new(ptr, ptr, 0.0, |k, acc: &mut f64, out: &mut [f64]| {
            for (o, j) in out.iter_mut().zip(ptr[k]..ptr[k + 1]) {
                let (l, gj, _) = row_loss(cp[j], cn[j], f[j]);
                *acc += l;
                *o = gj;
            }
            ptr[k + 1] > ptr[k]
        })
        .partial_sums(self.lo, self.hi, &mut self.state.g);
        // D_j, the same function of the row's score and costs, written in place in parallel
        // (no per-row buffer to copy from on one thread)
        self.state
            .dj
            .par_chunks_mut(BLOCK_ROWS)
            .enumerate()
            .for_each(|(blk, out)| {
                let lo = blk * BLOCK_ROWS;
                for (o, j) in out.iter_mut().zip(lo..) {
                    *o = row_loss(cp[j], cn[j], f[j]).2;
                }
            });
        nodes
    }

    fn activate(&mut self) -> usize {
        // the line search's buffer is kept for the step's rows (its allocation only)
        let mut line = std::mem::take(&mut self.state.act.line);
        line.clear();
        self.state.act = ActiveRows::new(&self.ptr, &self.state.dj);
        self.state.act.line = line;
        let m = self.state.act.active.len();
        self.state.q = vec![0.0; m];
        self.state.z_active = vec![0.0; m];
        self.woodbury = None;
        m
    }

    fn row_f64(&self, j: usize) -> Vec<f64> {
        on_rows!(
            self.x,
            dense | data,
            d | dense_row(data, d, j).iter().map(|v| v.to_f64()).collect(),
            sparse | _c | Vec::new()
        )
    }

    fn sketch_rows(&self, step: Option<f64>) -> Vec<(Vec<f64>, f64)> {
        let (a, dj) = (&self.state.act, &self.state.dj);
        match step {
            None => a
                .active
                .par_iter()
                .map(|&j| (self.row_f64(j), dj[j]))
                .collect(),
            // bag by bag in parallel (a bag's draws depend on that bag alone), in bag order
            Some(step) => (self.lo..self.hi)
                .into_par_iter()
                .map(|k| {
                    let mut taken = Vec::new();
                    let (mut acc, mut next) = (0.0, unit_hash(k) * step);
                    for &j in &a.active[a.aptr[k]..a.aptr[k + 1]] {
                        acc += dj[j];
                        let mut copies = 0.0;
                        while next < acc {
                            copies += 1.0;
                            next += step;
                        }
                        if copies > 0.0 {
                            taken.push((self.row_f64(j), copies * step));
                        }
                    }
                    taken
                })
                .flatten()
                .collect(),
        }
    }

    fn hessian_nodes(
        &mut self,
        p_w: &[f64],
        shift: f64,
        pending: Option<f64>,
    ) -> Vec<Node<HessValue>> {
        self.add_pending(pending);
        note_rows(self.state.act.active.len());
        let tree = hessian_tree(
            self.x,
            &self.ptr,
            &self.state.act,
            &self.state.dj,
            p_w,
            shift,
            self.simd,
        );
        tree.partial_sums(self.lo, self.hi, &mut self.state.q)
    }

    fn add_pending(&mut self, pending: Option<f64>) {
        if let Some(alpha) = pending {
            self.state
                .z_active
                .iter_mut()
                .zip(&self.state.q)
                .for_each(|(zk, &qk)| *zk += alpha * qk);
        }
    }

    /// The step's scores: gathered on the active rows, one dot per inactive row with a loss
    /// term (a row without one has no say in J: 0 here, its score set by the end of the
    /// solve).
    fn step_scores(&mut self, s_w: &[f64], shift: f64, pending: Option<f64>) {
        self.add_pending(pending);
        let (x, simd) = (self.x, self.simd);
        let (dj, cp, cn) = (&self.state.dj, &*self.c_pos, &*self.c_neg);
        rescore(&mut self.state.z, |j, v| {
            if dj[j] != 0.0 {
                return false;
            }
            if cp[j] <= 0.0 && cn[j] <= 0.0 {
                *v = 0.0;
                return false;
            }
            *v = x.row_dot(j, s_w, simd) + shift;
            true
        });
        // the active rows' z, then the line search's rows, bag by bag in parallel
        let (ptr, a, z_active) = (&self.ptr, &mut self.state.act, &self.state.z_active);
        bag_slices(&mut self.state.z, ptr)
            .into_par_iter()
            .enumerate()
            .for_each(|(k, zk)| {
                for (&j, &v) in a.active[a.aptr[k]..a.aptr[k + 1]]
                    .iter()
                    .zip(&z_active[a.aptr[k]..a.aptr[k + 1]])
                {
                    zk[j - ptr[k]] = v;
                }
            });
        let (f, z, cp, cn) = (&self.state.f, &self.state.z, &*self.c_pos, &*self.c_neg);
        let moving = |k: usize| (ptr[k]..ptr[k + 1]).filter(|&j| z[j] != 0.0);
        a.lptr = per_bag(
            ptr,
            &mut a.line,
            [0.0; 4],
            |k| moving(k).count(),
            |k, out| {
                for (o, j) in out.iter_mut().zip(moving(k)) {
                    *o = [f[j], z[j], cp[j], cn[j]];
                }
            },
        );
    }

    /// Derivative and second derivative in `t` of the loss at the scores `f + t z`, over the
    /// rows with `z_j != 0` (the others add nothing), packed by [`Part::step_scores`].
    fn line_nodes(&self, t: f64) -> Vec<Node<(f64, f64)>> {
        let (rows, lptr) = (&self.state.act.line, &self.state.act.lptr);
        partial_bags(
            lptr,
            self.lo,
            self.hi,
            (0.0, 0.0),
            |k, acc: &mut (f64, f64)| {
                let bag = &rows[lptr[k]..lptr[k + 1]];
                for &row in bag {
                    add_line_terms(acc, row, t);
                }
                !bag.is_empty()
            },
        )
    }

    fn finish_scores(&mut self, w: &[f64], shift: f64) {
        let (x, simd) = (self.x, self.simd);
        let (cp, cn) = (&*self.c_pos, &*self.c_neg);
        rescore(&mut self.state.f, |j, v| {
            let no_loss = cp[j] <= 0.0 && cn[j] <= 0.0;
            if !no_loss {
                return false;
            }
            *v = x.row_dot(j, w, simd) + shift;
            true
        });
    }
}

/// Sets some scores in place, in parallel over blocks of rows: `score(j, &mut s_j)` writes
/// row `j`'s score if it has one to write and says whether it read the row (counted by
/// [`note_rows`]).
fn rescore(scores: &mut [f64], score: impl Fn(usize, &mut f64) -> bool + Sync) {
    let read: usize = scores
        .par_chunks_mut(BLOCK_ROWS)
        .enumerate()
        .map(|(blk, out)| {
            let first = blk * BLOCK_ROWS;
            out.iter_mut()
                .enumerate()
                .map(|(k, v)| usize::from(score(first + k, v)))
                .sum::<usize>()
        })
        .sum();
    note_rows(read);
}

/// The in-process [`RowStore`]: groups of contiguous bags, in order (one group for an
/// ordinary fit; several in tests, which must give the same bits).
pub(crate) struct Parts<'a> {
    parts: Vec<Part<'a>>,
    n_bags: usize,
    d: usize,
    dense: bool,
}

impl<'a> Parts<'a> {
    /// The rows of `x` split at the bags `cuts` (from 0 to the number of bags, never
    /// decreasing), with their costs. Several groups need dense rows (a group holds a slice of
    /// them).
    pub(crate) fn split(
        x: &'a Instances,
        bag_ptr: &[usize],
        cuts: &[usize],
        c_pos: &'a [f64],
        c_neg: &'a [f64],
    ) -> Result<Self> {
        let n_bags = bag_ptr.len().saturating_sub(1);
        check_bag_ptr(bag_ptr, x.n_rows())?;
        if cuts.first() != Some(&0)
            || cuts.last() != Some(&n_bags)
            || cuts.windows(2).any(|w| w[0] > w[1])
            || c_pos.len() != x.n_rows()
            || c_neg.len() != x.n_rows()
        {
            return Err(crate::error::Error::InvalidData(format!(
                "linear solver: groups must cut the {n_bags} bags from 0 to {n_bags}, never \
                 decreasing, with one cost per row"
            )));
        }
        let rows = RowsRef::new(x);
        let d = x.n_features();
        let mut parts = Vec::with_capacity(cuts.len().saturating_sub(1));
        for w in cuts.windows(2) {
            let (r0, r1) = (bag_ptr[w[0]], bag_ptr[w[1]]);
            let sub = match rows {
                RowsRef::Dense { data, d } => RowsRef::Dense {
                    data: &data[r0 * d..r1 * d],
                    d,
                },
                RowsRef::Dense32 { data, d } => RowsRef::Dense32 {
                    data: &data[r0 * d..r1 * d],
                    d,
                },
                RowsRef::Sparse(_) if cuts.len() == 2 => rows,
                RowsRef::Sparse(_) => {
                    return Err(crate::error::Error::InvalidData(
                        "linear solver: sparse rows are solved in one group".into(),
                    ))
                }
            };
            parts.push(Part::new(
                sub,
                bag_ptr,
                w[0],
                w[1],
                Cow::Borrowed(&c_pos[r0..r1]),
                Cow::Borrowed(&c_neg[r0..r1]),
            ));
        }
        Ok(Self {
            parts,
            n_bags,
            d,
            dense: !matches!(rows, RowsRef::Sparse(_)),
        })
    }

    /// Every group's nodes of one sum, combined.
    fn reduce<T: TreeValue>(
        &mut self,
        zero: T,
        mut f: impl FnMut(&mut Part<'a>) -> Vec<Node<T>>,
    ) -> Result<T> {
        let mut nodes = Vec::new();
        for p in &mut self.parts {
            nodes.extend(f(p));
        }
        combine(self.n_bags, nodes, zero)
    }

    /// The scores of every row, in row order.
    pub(crate) fn into_scores(self) -> Vec<f64> {
        let mut parts = self.parts.into_iter();
        let mut f = parts.next().map(|p| p.state.f).unwrap_or_default();
        for p in parts {
            f.extend(p.state.f);
        }
        f
    }

    /// Sets group `k`'s costs (its rows' `c+` and `c-`).
    #[cfg(test)]
    pub(crate) fn set_costs(&mut self, k: usize, c_pos: Vec<f64>, c_neg: Vec<f64>) {
        self.parts[k].c_pos = Cow::Owned(c_pos);
        self.parts[k].c_neg = Cow::Owned(c_neg);
    }

    /// Group `k`'s scores.
    #[cfg(test)]
    pub(crate) fn scores(&self, k: usize) -> &[f64] {
        &self.parts[k].state.f
    }

    /// Sets the scores from known ones (row order).
    fn keep_scores(&mut self, scores: &[f64]) {
        let mut at = 0;
        for p in &mut self.parts {
            p.state.f = scores[at..at + p.n].to_vec();
            at += p.n;
        }
    }
}

impl RowStore for Parts<'_> {
    fn n_rows(&self) -> usize {
        self.parts.iter().map(|p| p.n).sum()
    }

    fn n_features(&self) -> usize {
        self.d
    }

    fn dense(&self) -> bool {
        self.dense
    }

    fn mean(&mut self) -> Result<Vec<f64>> {
        let n = self.n_rows();
        if n == 0 {
            return Ok(vec![0.0; self.d]);
        }
        let inv_n = 1.0 / n as f64;
        self.reduce(vec![0.0; self.d], |p| p.mean_nodes(inv_n))
    }

    fn set_scores(&mut self, w: &[f64], shift: f64) -> Result<()> {
        self.parts.iter_mut().for_each(|p| p.set_scores(w, shift));
        Ok(())
    }

    fn first_gradient(&mut self) -> Result<FirstGradient> {
        let d = self.d;
        let loss = self.reduce(0.0, Part::loss_nodes)?;
        let g0: Vec<Vec<f64>> = self.parts.iter().map(Part::g0).collect();
        let mut at = 0;
        let xt = self.reduce((vec![0.0; d], vec![0.0; d]), |p| {
            at += 1;
            xt_dot_pair_nodes(p.x, p.group(), &p.state.g, &g0[at - 1], d)
        })?;
        let sum_g = self.reduce(0.0, |p| sum_rows_nodes(p.group(), &p.state.g))?;
        let mut at = 0;
        let sum_g0 = self.reduce(0.0, |p| {
            at += 1;
            sum_rows_nodes(p.group(), &g0[at - 1])
        })?;
        Ok(FirstGradient::new(loss, xt, sum_g, sum_g0))
    }

    fn accept(&mut self, t: f64) -> Result<(f64, Vec<f64>, f64)> {
        self.parts.iter_mut().for_each(|p| p.advance(t));
        let d = self.d;
        let loss = self.reduce(0.0, Part::loss_nodes)?;
        let xt_g = self.reduce(vec![0.0; d], |p| {
            xt_dot_nodes(p.x, p.group(), &p.state.g, d)
        })?;
        let sum_g = self.reduce(0.0, |p| sum_rows_nodes(p.group(), &p.state.g))?;
        Ok((loss, xt_g, sum_g))
    }

    fn activate(&mut self) -> Result<usize> {
        Ok(self.parts.iter_mut().map(Part::activate).sum())
    }

    fn sum_d(&mut self) -> Result<f64> {
        self.reduce(0.0, |p| sum_rows_nodes(p.group(), &p.state.dj))
    }

    fn sketch_rows(&mut self, step: Option<f64>) -> Result<Vec<(Vec<f64>, f64)>> {
        let rows: Vec<(Vec<f64>, f64)> = self
            .parts
            .iter()
            .flat_map(|p| p.sketch_rows(step))
            .collect();
        note_rows(rows.len());
        Ok(rows)
    }

    fn jacobi_sums(&mut self) -> Result<(f64, Vec<f64>, Vec<f64>)> {
        let d = self.d;
        let sum_d = self.sum_d()?;
        let (s1, s2) = self.reduce((vec![0.0; d], vec![0.0; d]), |p| {
            weighted_columns(p.x, p.group(), &p.state.dj, d)
        })?;
        Ok((sum_d, s1, s2))
    }

    fn woodbury(&mut self, mu: &[f64]) -> Result<bool> {
        let [p] = self.parts.as_mut_slice() else {
            return Ok(false);
        };
        p.woodbury = Woodbury::new(p.x, mu, &p.ptr, &p.state.act, &p.state.dj, p.simd);
        Ok(p.woodbury.is_some())
    }

    fn woodbury_apply(&mut self, r_w: &[f64], r_b: f64) -> Result<(Vec<f64>, f64)> {
        Ok(match self.parts.as_slice() {
            [p] => match &p.woodbury {
                Some(wb) => wb.apply(r_w, r_b),
                None => (r_w.to_vec(), r_b),
            },
            _ => (r_w.to_vec(), r_b),
        })
    }

    fn hessian(&mut self, p_w: &[f64], shift: f64, pending: Option<f64>) -> Result<HessValue> {
        self.reduce((vec![0.0; self.d], 0.0), |p| {
            p.hessian_nodes(p_w, shift, pending)
        })
    }

    fn step_scores(&mut self, s_w: &[f64], shift: f64, pending: Option<f64>) -> Result<()> {
        self.parts
            .iter_mut()
            .for_each(|p| p.step_scores(s_w, shift, pending));
        Ok(())
    }

    fn line_terms(&mut self, ts: &[f64]) -> Result<Vec<(f64, f64)>> {
        ts.iter()
            .map(|&t| self.reduce((0.0, 0.0), |p| p.line_nodes(t)))
            .collect()
    }

    fn finish_scores(&mut self, w: &[f64], shift: f64) -> Result<()> {
        self.parts
            .iter_mut()
            .for_each(|p| p.finish_scores(w, shift));
        Ok(())
    }
}

/// A solve's start: `w`, `b` and, when known, their scores `X w + b`.
type Start<'s> = (&'s [f64], f64, Option<&'s [f64]>);

/// A solve's result before its scores are read from the store.
pub(crate) struct Driven {
    pub(crate) w: Vec<f64>,
    pub(crate) b: f64,
    pub(crate) value: f64,
    pub(crate) n_iter: usize,
    pub(crate) n_cg: usize,
    pub(crate) converged: bool,
}

/// Newton-CG on the rows of `store` (module docs): from `warm` (`(w, b, scores kept)`: the
/// store already holds the scores of `(w, b)`) to `|grad| <= tol |grad_0|`, at most `max_iter`
/// Newton steps, the mean row `mean` when known.
pub(crate) fn drive<S: RowStore>(
    store: &mut S,
    mean: Option<&[f64]>,
    warm: Option<(&[f64], f64, bool)>,
    tol: f64,
    max_iter: usize,
    cancel: &Cancel,
) -> Result<Driven> {
    let d = store.n_features();
    let mu = match mean {
        Some(mu) if mu.len() == d => mu.to_vec(),
        _ => store.mean()?,
    };
    // `b` holds the centred bias `b' = b + mu . w` until the end
    let (mut w, mut b) = match warm {
        Some((w, b, _)) => (w.to_vec(), b + dot(&mu, w)),
        None => (vec![0.0; d], 0.0),
    };
    if !matches!(warm, Some((_, _, true))) {
        store.set_scores(&w, b - dot(&mu, &w))?;
    }
    // The gradient at w = 0, b' = 0 (the scale of the stopping rule), in the pass of the
    // first gradient.
    let first = store.first_gradient()?;
    let mut loss = first.loss;
    let grad0_w = centre(first.xt_g0, first.sum_g0, &mu);
    let grad0 = (dot(&grad0_w, &grad0_w) + first.sum_g0.powi(2)).sqrt();
    let mut xt_g = (centre(first.xt_g, first.sum_g, &mu), first.sum_g);
    let (mut n_iter, mut converged) = (0, false);
    // the previous line search's step (1: the Newton step was taken whole)
    let mut last_t = 1.0;
    let mut n_cg = 0;
    // Woodbury's preconditioner for the rest of the solve (sparse rows; WOODBURY_AFTER_CG)
    let mut woodbury = false;
    loop {
        cancel.check()?;
        let (mut grad_w, grad_b) = std::mem::take(&mut xt_g);
        grad_w.iter_mut().zip(&w).for_each(|(gw, &wv)| *gw += wv);
        let gnorm = (dot(&grad_w, &grad_w) + grad_b * grad_b).sqrt();
        if gnorm <= tol * grad0 || gnorm == 0.0 {
            converged = true;
            break;
        }
        if n_iter >= max_iter {
            break;
        }
        n_iter += 1;
        let forcing = if last_t < POOR_MODEL_STEP {
            0.1
        } else {
            (gnorm / grad0.max(f64::MIN_POSITIVE)).sqrt().min(0.1)
        };
        // the step and its scores z = (X - 1 mu^T) s_w + s_b (exact line search on the
        // piecewise-quadratic J(w + t s_w, b + t s_b))
        let (s_w, s_b, cg) = newton_direction(store, &mu, &grad_w, grad_b, forcing, woodbury)?;
        n_cg += cg;
        woodbury |= cg > WOODBURY_AFTER_CG;
        let (ws, ss) = (dot(&w, &s_w), dot(&s_w, &s_w));
        let per_call = store.trials_per_call();
        let t = line_search(|ts| store.line_terms(ts), per_call, ws, ss)?;
        if t == 0.0 {
            break; // no descent left at machine precision
        }
        last_t = t;
        w.iter_mut().zip(&s_w).for_each(|(wv, &sv)| *wv += t * sv);
        b += t * s_b;
        let (l, xg, sg) = store.accept(t)?;
        loss = l;
        xt_g = (centre(xg, sg, &mu), sg);
    }
    // the scores of the rows without a loss term, which the steps left behind
    if n_iter > 0 {
        store.finish_scores(&w, b - dot(&mu, &w))?;
    }
    let value = 0.5 * dot(&w, &w) + loss;
    let b = b - dot(&mu, &w);
    Ok(Driven {
        w,
        b,
        value,
        n_iter,
        n_cg,
        converged,
    })
}

/// The Newton direction: `H s = -grad` by preconditioned conjugate gradients
/// ([`Preconditioner`]: the sketch for narrow dense rows, with `woodbury` Woodbury's for
/// sparse rows, else Jacobi's) to a relative residual `forcing`, and the number of their
/// iterations; the store keeps the step's scores.
fn newton_direction<S: RowStore>(
    store: &mut S,
    mu: &[f64],
    grad_w: &[f64],
    grad_b: f64,
    forcing: f64,
    woodbury: bool,
) -> Result<(Vec<f64>, f64, usize)> {
    let d = grad_w.len();
    let n_active = store.activate()?;
    let mut precond = Preconditioner::sketch(store, mu, n_active)?;
    if precond.is_none() && woodbury && store.woodbury(mu)? {
        precond = Some(Preconditioner::Woodbury);
    }
    let precond = match precond {
        Some(p) => p,
        None => Preconditioner::jacobi(store, mu)?,
    };
    // centred rows: q_j = (x_j - mu) . p_w + p_b = x_j . p_w + (p_b - mu . p_w), and
    // sum_j D_j q_j (x_j - mu) = (sum_j D_j q_j x_j) - (sum_j D_j q_j) mu
    let hess = |store: &mut S, p_w: &[f64], p_b: f64, pending| -> Result<HessValue> {
        let shift = p_b - dot(mu, p_w);
        let (mut h_w, h_b) = store.hessian(p_w, shift, pending)?;
        h_w.iter_mut()
            .zip(p_w)
            .zip(mu)
            .for_each(|((h, &p), &u)| *h += p - h_b * u);
        Ok((h_w, h_b))
    };
    let (mut s_w, mut s_b) = (vec![0.0; d], 0.0);
    // the step length of the last product's q, not yet added into the step's scores (the
    // store gathers them on the active rows, sum_k alpha_k q_k)
    let mut pending = None;
    let mut r_w: Vec<f64> = grad_w.iter().map(|g| -g).collect();
    let mut r_b = -grad_b;
    let r0 = (dot(&r_w, &r_w) + r_b * r_b).sqrt();
    let (mut z_w, mut z_b) = precond.apply(store, &r_w, r_b)?;
    let (mut p_w, mut p_b) = (z_w.clone(), z_b);
    let mut rz = dot(&r_w, &z_w) + r_b * z_b;
    let mut n_cg = 0;
    for _ in 0..MAX_CG {
        n_cg += 1;
        let (hp_w, hp_b) = hess(store, &p_w, p_b, pending.take())?;
        let php = dot(&p_w, &hp_w) + p_b * hp_b;
        if php <= 0.0 || !php.is_finite() {
            break; // only the unpenalised bias without active rows: no curvature left
        }
        let alpha = rz / php;
        s_w.iter_mut().zip(&p_w).for_each(|(s, &p)| *s += alpha * p);
        s_b += alpha * p_b;
        pending = Some(alpha);
        r_w.iter_mut()
            .zip(&hp_w)
            .for_each(|(r, &h)| *r -= alpha * h);
        r_b -= alpha * hp_b;
        if (dot(&r_w, &r_w) + r_b * r_b).sqrt() <= forcing * r0 {
            break;
        }
        (z_w, z_b) = precond.apply(store, &r_w, r_b)?;
        let rz_new = dot(&r_w, &z_w) + r_b * z_b;
        let beta = rz_new / rz;
        rz = rz_new;
        p_w.iter_mut()
            .zip(&z_w)
            .for_each(|(p, &z)| *p = z + beta * *p);
        p_b = z_b + beta * p_b;
    }
    store.step_scores(&s_w, s_b - dot(mu, &s_w), pending.take())?;
    Ok((s_w, s_b, n_cg))
}

impl LinearSquaredHinge<'_> {
    /// Minimises `J` from `warm` (`(w, b)`; `None`: zero) to `|grad| <= tol |grad_0|`, with at
    /// most `max_iter` Newton steps; checks `cancel` at every step.
    pub fn solve(
        &self,
        warm: Option<(&[f64], f64)>,
        tol: f64,
        max_iter: usize,
        cancel: &Cancel,
    ) -> Result<LinearSolution> {
        self.run(warm.map(|(w, b)| (w, b, None)), tol, max_iter, cancel)
    }

    /// [`LinearSquaredHinge::solve`] warm-started from `previous`, a solution on the same rows
    /// (other costs): its `w`, `b` and scores, which spare the pass `X w` of a start.
    pub fn solve_from(
        &self,
        previous: Option<&LinearSolution>,
        tol: f64,
        max_iter: usize,
        cancel: &Cancel,
    ) -> Result<LinearSolution> {
        let start = previous.map(|p| {
            let scores = (p.scores.len() == self.x.n_rows()).then_some(p.scores.as_slice());
            (p.w.as_slice().unwrap_or_default(), p.b, scores)
        });
        self.run(start, tol, max_iter, cancel)
    }

    /// The solve from `(w, b)` and, when known, their scores `X w + b`.
    fn run(
        &self,
        warm: Option<Start>,
        tol: f64,
        max_iter: usize,
        cancel: &Cancel,
    ) -> Result<LinearSolution> {
        let cuts = [0, self.bag_ptr.len().saturating_sub(1)];
        self.run_in_groups(&cuts, warm, tol, max_iter, cancel)
    }

    /// [`LinearSquaredHinge::run`] over the groups of bags `cuts` ([`Parts`]).
    fn run_in_groups(
        &self,
        cuts: &[usize],
        warm: Option<Start>,
        tol: f64,
        max_iter: usize,
        cancel: &Cancel,
    ) -> Result<LinearSolution> {
        let mut store = Parts::split(self.x, self.bag_ptr, cuts, self.c_pos, self.c_neg)?;
        let kept = match warm {
            Some((_, _, Some(scores))) => {
                store.keep_scores(scores);
                true
            }
            _ => false,
        };
        let start = warm.map(|(w, b, _)| (w, b, kept));
        let out = drive(&mut store, self.mean, start, tol, max_iter, cancel)?;
        Ok(LinearSolution {
            w: Array1::from(out.w),
            b: out.b,
            value: out.value,
            scores: store.into_scores(),
            n_iter: out.n_iter,
            n_cg: out.n_cg,
            converged: out.converged,
        })
    }
}

/// Checks that `ptr` splits the `n` rows into bags: from 0 to `n`, never decreasing.
fn check_bag_ptr(ptr: &[usize], n: usize) -> Result<()> {
    if ptr.first() != Some(&0) || ptr.last() != Some(&n) || ptr.windows(2).any(|w| w[0] > w[1]) {
        return Err(crate::error::Error::InvalidData(format!(
            "linear solver: bag offsets must run from 0 to the {n} rows, never decreasing"
        )));
    }
    Ok(())
}

/// The weight vectors of several problems as the rows of one basis (`n_problems x d`), the
/// form a linear `model::Model` stores them in.
pub fn stack_weights(ws: &[&Array1<f64>], d: usize) -> Array2<f64> {
    let mut out = Array2::zeros((ws.len(), d));
    for (mut row, w) in out.rows_mut().into_iter().zip(ws) {
        row.assign(w);
    }
    out
}

#[cfg(test)]
mod woodbury_tests {
    use super::*;
    use crate::bags::Csr;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `M z = r` for the Woodbury preconditioner's `z = M^{-1} r`, with `M` formed densely:
    /// `diag(1, ..., 1, beta) + sum_{j in A} D_j (x_j - mu, 1) (x_j - mu, 1)^T`.
    #[test]
    fn woodbury_inverts_the_raised_hessian_of_the_active_rows() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (n, d) in [(12, 7), (30, 50), (5, 3), (150, 40)] {
            let (mut indptr, mut indices, mut data) = (vec![0], Vec::new(), Vec::new());
            let mut dense = Array2::<f64>::zeros((n, d));
            for j in 0..n {
                for k in 0..d {
                    if rng.random::<f64>() < 0.3 {
                        let v = rng.random::<f64>() * 4.0 - 2.0;
                        indices.push(k);
                        data.push(v);
                        dense[[j, k]] = v;
                    }
                }
                indptr.push(indices.len());
            }
            let Ok(csr) = Csr::new(n, d, indptr, indices, data) else {
                panic!("a valid CSR matrix")
            };
            let mu: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            let dj: Vec<f64> = (0..n)
                .map(|j| {
                    if j % 3 == 0 {
                        0.0
                    } else {
                        rng.random::<f64>() * 3.0
                    }
                })
                .collect();
            let ptr: Vec<usize> = (0..n).step_by(3).chain(std::iter::once(n)).collect();
            let act = ActiveRows::new(&ptr, &dj);
            let active = &act.active;
            let simd = Simd::detect();
            let Some(p) = Woodbury::new(RowsRef::Sparse(&csr), &mu, &ptr, &act, &dj, simd) else {
                panic!("no Woodbury preconditioner")
            };
            let mut m = Array2::<f64>::zeros((d + 1, d + 1));
            for k in 0..d {
                m[[k, k]] = 1.0;
            }
            m[[d, d]] = WOODBURY_BIAS;
            for &j in active {
                let u: Vec<f64> = (0..d)
                    .map(|k| dense[[j, k]] - mu[k])
                    .chain(std::iter::once(1.0))
                    .collect();
                for a in 0..=d {
                    for b in 0..=d {
                        m[[a, b]] += dj[j] * u[a] * u[b];
                    }
                }
            }
            let r_w: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            let r_b = rng.random::<f64>();
            let (z_w, z_b) = p.apply(&r_w, r_b);
            let mut z = z_w.clone();
            z.push(z_b);
            let mz = m.dot(&Array1::from(z));
            let r: Vec<f64> = r_w.iter().copied().chain(std::iter::once(r_b)).collect();
            let err = mz
                .iter()
                .zip(&r)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-9, "n {n} d {d}: |M z - r| = {err}");
        }
        // dense rows, or too many active rows: none
        let mu = vec![0.0; 2];
        let data = [1.0, 2.0, 3.0, 4.0];
        let dense = RowsRef::Dense { data: &data, d: 2 };
        assert!(Woodbury::new(
            dense,
            &mu,
            &[0, 2],
            &ActiveRows::new(&[0, 2], &[1.0, 1.0]),
            &[1.0, 1.0],
            Simd::detect()
        )
        .is_none());
    }
}

#[cfg(test)]
mod tree_tests {
    use super::*;
    use crate::tree_sum::combine;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Bags of random sizes (1 to `max_bag` rows) of `d` features, rows far from the origin.
    fn data(seed: u64, n_bags: usize, max_bag: usize, d: usize) -> (Array2<f64>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut ptr = vec![0];
        for _ in 0..n_bags {
            let m = rng.random_range(1..=max_bag);
            ptr.push(ptr.last().copied().unwrap_or(0) + m);
        }
        let n = ptr[n_bags];
        let x = Array2::from_shape_fn((n, d), |_| 3.0 + rng.random::<f64>() * 2.0 - 1.0);
        (x, ptr)
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The sketch's product in panels of rows, in parallel, is the bits of faer's one call over
    /// the whole lower triangle a block, the blocks added in turn, for 1, 2 and 3 threads:
    /// `d + 1` from one panel to many (an uneven last panel included), blocks of the sample
    /// from 1 to 512 rows (a block of fewer than four rows in panels would differ: faer's
    /// rank-one update rounds otherwise), two blocks and a shorter last one (a block of one
    /// row after deep ones among them) in one call.
    #[test]
    fn the_sketch_product_in_panels_is_the_product_in_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for n in [1, 6, 47, 64, 127, 128, 129, 200, 513, 700] {
            for rows in [1, 2, 3, 4, 5, 9, 100, 512] {
                // two blocks of `rows` and a last one, shorter when it can be
                let blocks: Vec<Array2<f64>> = [rows, rows, rows.min(rows % 4 + 1)]
                    .iter()
                    .map(|&r| Array2::from_shape_fn((r, n), |_| rng.random::<f64>() * 4.0 - 1.5))
                    .collect();
                let mut one = Array2::<f64>::zeros((n, n));
                for u in &blocks {
                    triangular::matmul(
                        faer_mut(one.view_mut()),
                        BlockStructure::TriangularLower,
                        faer::Accum::Add,
                        faer_ref(u.t()),
                        BlockStructure::Rectangular,
                        faer_ref(u.view()),
                        BlockStructure::Rectangular,
                        1.0,
                        faer::Par::Seq,
                    );
                }
                let views: Vec<_> = blocks.iter().map(|b| b.view()).collect();
                let stacked = ndarray::concatenate(Axis(0), &views).unwrap();
                for threads in [1, 2, 3] {
                    let mut panels = Array2::<f64>::zeros((n, n));
                    crate::threads::with_threads(Some(threads), || {
                        lower_gram_add(panels.view_mut(), stacked.view(), rows);
                    })
                    .unwrap();
                    for k in 0..n {
                        for l in 0..=k {
                            assert_eq!(
                                one[[k, l]].to_bits(),
                                panels[[k, l]].to_bits(),
                                "n {n}, rows {rows}, threads {threads}, entry ({k}, {l})"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Groups of contiguous bags: `parts` cuts, shifted so that they fall between bags of all
    /// sizes.
    fn cuts(n_bags: usize, parts: usize, shift: usize) -> Vec<usize> {
        let mut c: Vec<usize> = (0..=parts)
            .map(|p| (p * n_bags / parts + shift).min(n_bags))
            .collect();
        c[0] = 0;
        c
    }

    #[test]
    fn the_hessian_product_by_groups_is_the_whole_product() {
        for (seed, n_bags, max_bag) in [(1, 40, 6), (2, 257, 3), (3, 9, 40)] {
            let (x, ptr) = data(seed, n_bags, max_bag, 11);
            let x = Instances::from(x);
            let rows = RowsRef::new(&x);
            let n = ptr[n_bags];
            let mut rng = ChaCha8Rng::seed_from_u64(seed + 10);
            let dj: Vec<f64> = (0..n)
                .map(|_| {
                    if rng.random::<f64>() < 0.4 {
                        0.0
                    } else {
                        rng.random::<f64>() * 5.0
                    }
                })
                .collect();
            let p_w: Vec<f64> = (0..11).map(|_| rng.random::<f64>() - 0.5).collect();
            let act = ActiveRows::new(&ptr, &dj);
            let simd = Simd::detect();
            let mut q = vec![0.0; act.active.len()];
            let whole = hessian_tree(rows, &ptr, &act, &dj, &p_w, 0.3, simd).sum(&mut q);
            // against a plain sum: the tree adds in another order than the rows' order
            let mut plain = vec![0.0; 11];
            for &j in &act.active {
                let qj = rows.row_dot(j, &p_w, simd) + 0.3;
                rows.add_row(j, dj[j] * qj, &mut plain, simd);
            }
            for (a, b) in whole.0.iter().zip(&plain) {
                assert!((a - b).abs() <= 1e-10 * b.abs().max(1.0));
            }
            let tree = hessian_tree(rows, &ptr, &act, &dj, &p_w, 0.3, simd);
            for parts in [1, 2, 3, 5, 7] {
                for shift in 0..3 {
                    let c = cuts(n_bags, parts, shift);
                    let mut q_parts = vec![0.0; act.active.len()];
                    let mut nodes = Vec::new();
                    for w in c.windows(2) {
                        let dst = &mut q_parts[act.aptr[w[0]]..act.aptr[w[1]]];
                        nodes.extend(tree.partial_sums(w[0], w[1], dst));
                    }
                    let got = combine(n_bags, nodes, (vec![0.0; 11], 0.0)).unwrap();
                    assert_eq!(
                        bits(&got.0),
                        bits(&whole.0),
                        "{parts} groups, shift {shift}"
                    );
                    assert_eq!(got.1.to_bits(), whole.1.to_bits());
                    assert_eq!(bits(&q_parts), bits(&q));
                }
            }
        }
    }

    /// A bag's Hessian-vector product, and a gradient's `X^T u`, add the rows in row order,
    /// bitwise the plain loop one row at a time, whether four rows are adjacent (read one after
    /// another) or apart (read side by side, `rows::adjacent`): runs of rows of
    /// every length from 0 to 8 between gaps, widths with and without a remainder of the
    /// vector loops.
    #[test]
    fn adjacent_and_scattered_rows_add_in_row_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(40);
        let simd = Simd::detect();
        for case in 0..300 {
            let d = [1, 7, 8, 11, 33][case % 5];
            let n = rng.random_range(1..60);
            let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>() * 4.0 - 2.0);
            let x = Instances::from(x);
            let rows = RowsRef::new(&x);
            let ptr = vec![0, n];
            // runs of rows with D_j > 0 between gaps
            let mut dj = vec![0.0; n];
            let mut j = 0;
            while j < n {
                let run = rng.random_range(0..9);
                for v in dj.iter_mut().skip(j).take(run) {
                    *v = rng.random::<f64>() * 3.0 + 0.1;
                }
                j += run + rng.random_range(0..3);
            }
            let p_w: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            let act = ActiveRows::new(&ptr, &dj);
            let mut q = vec![0.0; act.active.len()];
            let (hv, hb) = hessian_tree(rows, &ptr, &act, &dj, &p_w, 0.3, simd).sum(&mut q);
            let (mut plain, mut plain_b, mut plain_q) = (vec![0.0; d], 0.0, Vec::new());
            for &j in &act.active {
                let qj = rows.row_dot(j, &p_w, simd) + 0.3;
                plain_q.push(qj);
                plain_b += dj[j] * qj;
                rows.add_row(j, dj[j] * qj, &mut plain, simd);
            }
            assert_eq!(bits(&hv), bits(&plain), "case {case}");
            assert_eq!(hb.to_bits(), plain_b.to_bits(), "case {case}");
            assert_eq!(bits(&q), bits(&plain_q), "case {case}");
            let g = Group {
                ptr: &ptr,
                lo: 0,
                hi: 1,
            };
            let xt_u = combine(1, xt_dot_nodes(rows, g, &dj, d), vec![0.0; d]).unwrap();
            let mut plain = vec![0.0; d];
            for (j, &u) in dj.iter().enumerate() {
                if u != 0.0 {
                    rows.add_row(j, u, &mut plain, simd);
                }
            }
            assert_eq!(bits(&xt_u), bits(&plain), "case {case}");
        }
    }

    /// A whole solve: the same bits on 1, 2 and 3 threads, with 7 features (the sketch's
    /// product in one panel) and 140 (in two, [`lower_gram_add`]; the sample in several blocks).
    #[test]
    fn a_solve_is_the_same_bits_for_any_thread_count() {
        for d in [7, 140] {
            solve_on_threads(d);
        }
    }

    fn solve_on_threads(d: usize) {
        let (mut x, ptr) = data(5, 3000, 8, d);
        let n = x.nrows();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let c_pos: Vec<f64> = (0..n).map(|j| if j % 3 == 0 { 1.0 } else { 0.0 }).collect();
        let c_neg: Vec<f64> = (0..n)
            .map(|j| if j % 3 == 0 { 0.0 } else { rng.random::<f64>() })
            .collect();
        // rows of the positives moved away, so that the problem is not trivial
        for j in (0..n).step_by(3) {
            x[[j, 0]] += 1.5;
        }
        let x = Instances::from(x);
        let solve = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    LinearSquaredHinge {
                        x: &x,
                        bag_ptr: &ptr,
                        c_pos: &c_pos,
                        c_neg: &c_neg,
                        mean: None,
                    }
                    .solve(None, 1e-8, 50, &Cancel::default())
                    .unwrap()
                })
        };
        let (a, b, c) = (solve(1), solve(2), solve(3));
        assert!(a.n_iter > 1);
        for s in [&b, &c] {
            assert_eq!(bits(a.w.as_slice().unwrap()), bits(s.w.as_slice().unwrap()));
            assert_eq!(a.b.to_bits(), s.b.to_bits());
            assert_eq!(bits(&a.scores), bits(&s.scores));
        }
    }

    /// A solve, and a warm solve at other costs from its scores, over 1, 2, 3, 5 and 7 groups
    /// of bags (shifted cuts, an empty group among them): the bits of one group, for `f64` and
    /// `f32` rows.
    #[test]
    fn a_solve_over_groups_of_bags_is_the_solve_in_one() {
        let (mut x, ptr) = data(11, 600, 9, 6);
        let n = x.nrows();
        let n_bags = ptr.len() - 1;
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let c_pos: Vec<f64> = (0..n).map(|j| if j % 4 == 0 { 1.0 } else { 0.0 }).collect();
        let c_neg: Vec<f64> = (0..n)
            .map(|j| if j % 4 == 0 { 0.0 } else { rng.random::<f64>() })
            .collect();
        // other costs for the warm solve, some rows without a loss term
        let c_pos2: Vec<f64> = c_pos.iter().map(|c| 2.0 * c).collect();
        let c_neg2: Vec<f64> = (0..n)
            .map(|j| if j % 7 == 3 { 0.0 } else { c_neg[j] })
            .collect();
        for j in (0..n).step_by(4) {
            x[[j, 1]] += 1.2;
        }
        let x32 = Instances::from(crate::bags::DenseF32::from_array(
            x.mapv(|v| v as f32).view(),
        ));
        let x64 = Instances::from(x);
        for x in [&x64, &x32] {
            let problem = |c_pos, c_neg| LinearSquaredHinge {
                x,
                bag_ptr: &ptr,
                c_pos,
                c_neg,
                mean: None,
            };
            let cancel = Cancel::default();
            let whole = problem(&c_pos, &c_neg)
                .run(None, 1e-8, 50, &cancel)
                .unwrap();
            let start = (
                whole.w.as_slice().unwrap(),
                whole.b,
                Some(whole.scores.as_slice()),
            );
            let warm = problem(&c_pos2, &c_neg2)
                .run(Some(start), 1e-8, 50, &cancel)
                .unwrap();
            assert!(whole.n_iter > 1 && warm.n_iter > 0);
            for parts in [1, 2, 3, 5, 7] {
                for shift in 0..3 {
                    let mut c = cuts(n_bags, parts, shift);
                    if parts == 3 {
                        c.insert(2, c[1]); // an empty group
                    }
                    let got = problem(&c_pos, &c_neg)
                        .run_in_groups(&c, None, 1e-8, 50, &cancel)
                        .unwrap();
                    let start = (
                        got.w.as_slice().unwrap(),
                        got.b,
                        Some(got.scores.as_slice()),
                    );
                    let got_warm = problem(&c_pos2, &c_neg2)
                        .run_in_groups(&c, Some(start), 1e-8, 50, &cancel)
                        .unwrap();
                    for (a, b) in [(&whole, &got), (&warm, &got_warm)] {
                        let what = format!("{parts} groups, shift {shift}");
                        assert_eq!(
                            bits(a.w.as_slice().unwrap()),
                            bits(b.w.as_slice().unwrap()),
                            "{what}"
                        );
                        assert_eq!(a.b.to_bits(), b.b.to_bits(), "{what}");
                        assert_eq!(a.value.to_bits(), b.value.to_bits(), "{what}");
                        assert_eq!(bits(&a.scores), bits(&b.scores), "{what}");
                        assert_eq!((a.n_iter, a.n_cg), (b.n_iter, b.n_cg), "{what}");
                    }
                }
            }
        }
    }
}
