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

use ndarray::{Array1, Array2};
use rayon::prelude::*;

use super::rows::{dense_row, on_rows, sum_rows, x_dot, xt_dot, xt_dot_pair, RowsRef, BLOCK_ROWS};
use super::Cholesky;
use crate::bags::Instances;
use crate::error::Result;
use crate::linalg::{faer_mut, faer_ref, Real, Simd};
use crate::progress::Cancel;
use crate::tree_sum::{sum_bags, Tree};
use faer::linalg::matmul::triangular::{self, BlockStructure};

/// A line-search step below this says the quadratic model of the last Newton step was poor
/// (rows crossed their kinks along it); the next system is then solved only to the loose
/// forcing term 0.1 (module docs).
const POOR_MODEL_STEP: f64 = 0.5;

/// Cap on conjugate-gradient iterations per Newton step.
const MAX_CG: usize = 250;

/// The default relative gradient tolerance of [`LinearSquaredHinge::solve`].
pub const LINEAR_TOL: f64 = 1e-6;

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
    let rows = RowsRef::new(x);
    Centred::new(rows, bag_ptr, x.n_rows(), x.n_features()).mu
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
/// preconditioner of the centred rows needs both), in the tree over the bags of `ptr`.
fn weighted_columns(x: RowsRef, ptr: &[usize], dj: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    sum_bags(
        ptr,
        (vec![0.0; d], vec![0.0; d]),
        |k, acc: &mut (Vec<f64>, Vec<f64>)| {
            let (acc1, acc2) = acc;
            let mut touched = false;
            for (j, &w) in dj.iter().enumerate().take(ptr[k + 1]).skip(ptr[k]) {
                if w == 0.0 {
                    continue;
                }
                touched = true;
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
            touched
        },
    )
}

/// The active rows `A` (`D_j > 0`) bag by bag: `active` in row order, bag `k`'s at
/// `active[aptr[k]..aptr[k + 1]]`.
struct ActiveRows<'a> {
    ptr: &'a [usize],
    active: Vec<usize>,
    aptr: Vec<usize>,
}

impl<'a> ActiveRows<'a> {
    /// The rows with `D_j > 0` of the bags of `ptr`.
    fn new(ptr: &'a [usize], dj: &[f64]) -> Self {
        let active: Vec<usize> = (0..dj.len()).filter(|&j| dj[j] > 0.0).collect();
        let mut aptr = Vec::with_capacity(ptr.len());
        let mut at = 0;
        for &end in ptr {
            while at < active.len() && active[at] < end {
                at += 1;
            }
            aptr.push(at);
        }
        Self { ptr, active, aptr }
    }
}

/// `(X_A^T D (X_A p_w + p_b), 1^T D (X_A p_w + p_b))` over the active rows `A`, one pass: each
/// row's dot and its scaled addition while the row is in cache, `q` the active rows' values of
/// `X_A p_w + p_b`; summed in the tree over the bags.
fn hessian_product(
    x: RowsRef,
    a: &ActiveRows,
    dj: &[f64],
    p_w: &[f64],
    p_b: f64,
    simd: Simd,
    q: &mut [f64],
) -> (Vec<f64>, f64) {
    hessian_tree(x, a, dj, p_w, p_b, simd).sum(q)
}

/// The value `(vector, bias)` of a Hessian-vector product.
type HessValue = (Vec<f64>, f64);

/// The tree of [`hessian_product`] (its output `q` on the active rows, bag by bag).
fn hessian_tree<'b>(
    x: RowsRef<'b>,
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
                // four rows at a time: the same bits as one at a time, with p_w and acc
                // read once per four rows
                let (quads, rest) = rows.split_at(rows.len() / 4 * 4);
                let (q4, q1) = q.split_at_mut(quads.len());
                for (j4, qq) in quads.chunks_exact(4).zip(q4.chunks_exact_mut(4)) {
                    let r = [0, 1, 2, 3].map(|k| dense_row(data, d, j4[k]));
                    let dots = simd.dot4(p_w, r);
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
    Tree::new(a.ptr, &a.aptr, (vec![0.0; d], 0.0), leaf)
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
/// Sample rows per block of the sketch's product (bounds its buffer to `SKETCH_BLOCK (d + 1)`).
const SKETCH_BLOCK: usize = 512;

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
enum Preconditioner<'a> {
    /// The diagonal of the Hessian (`w` part and bias entry).
    Jacobi { m_w: Vec<f64>, m_b: f64 },
    /// The Hessian of a sample of the active rows, scaled to all of them, factored.
    Sketch(Cholesky),
    /// The Hessian itself (bias entry raised by [`WOODBURY_BIAS`]), inverted through the
    /// Woodbury identity over the active sparse rows ([`Preconditioner::woodbury`]).
    Woodbury(Woodbury<'a>),
}

/// The parts of [`Preconditioner::Woodbury`]: the active rows `A`, `sqrt(D_j)` of each, and the
/// Cholesky factor of `S = I + W B^{-1} W^T`.
struct Woodbury<'a> {
    x: RowsRef<'a>,
    mu: &'a [f64],
    /// The bags' row offsets and the active rows' offsets per bag ([`ActiveRows`]).
    ptr: &'a [usize],
    aptr: Vec<usize>,
    active: Vec<usize>,
    root_d: Vec<f64>,
    s: Cholesky,
    simd: Simd,
}

impl<'a> Preconditioner<'a> {
    /// The sketched Hessian `M = [I 0; 0 0] + sum_{s in S} c_s u_s u_s^T`, `u_s = (x_s - mu, 1)`,
    /// over a sample `S` of the active rows `A`: all of them with `c_s = D_s` when `|A| <= m`
    /// (`m` from [`SKETCH_ACTIVE_PER_ROW`]; `M` is then the Hessian and a conjugate-gradient
    /// step is a Newton step), else about `m` draws by systematic sampling with probability
    /// proportional to `D_j`, each weighing `step = sum_A D / m`, bag by bag: the draws of a
    /// bag are the points `(u_k + i) step` in the running sum of its rows' `D`, `u_k` in `[0, 1)`
    /// a fixed hash of the bag's index (the sample of a bag depends on that bag and the total
    /// alone, so that a split of the bags draws the same sample; the random start keeps each
    /// row's expected count `D_j / step` however small the bags). An unbiased estimate of
    /// `X^T D X` whose rows of large curvature, such as the few witnesses of a nearly separable
    /// annealing step, are all in it). The subsampled-Hessian preconditioner of
    /// Roosta-Khorasani & Mahoney's sub-sampled Newton methods; a row sample of a few times `d`
    /// preserves `X^T D X` up to a small relative error when no row has a large leverage.
    /// Dense rows of at most [`SKETCH_MAX_FEATURES`] features with an active row only (`None`
    /// otherwise). The sample is fixed by `A` alone, and the product runs on one thread over the
    /// sample in row order, so `M` is the same for any thread count.
    fn sketch(x: RowsRef, mu: &[f64], a: &ActiveRows, dj: &[f64]) -> Option<Self> {
        let d = mu.len();
        let active = &a.active;
        if active.is_empty() || d > SKETCH_MAX_FEATURES || matches!(x, RowsRef::Sparse(_)) {
            return None;
        }
        let m = (active.len() / SKETCH_ACTIVE_PER_ROW).clamp(
            SKETCH_MIN_ROWS_PER_UNKNOWN * (d + 1),
            SKETCH_MAX_ROWS_PER_UNKNOWN * (d + 1),
        );
        // (row, weight) of the sample: all active rows when they are few, else systematic
        // sampling with probability proportional to D_j (a row of weight above the step is
        // taken as often as the step fits in it), each draw weighing sum D / m
        let sample: Vec<(usize, f64)> = if active.len() <= m {
            active.iter().map(|&j| (j, dj[j])).collect()
        } else {
            let total = sum_rows(a.ptr, dj);
            let step = total / m as f64;
            let mut taken = Vec::with_capacity(m + m / 8);
            for k in 0..a.ptr.len().saturating_sub(1) {
                let (mut acc, mut next) = (0.0, unit_hash(k) * step);
                for &j in &active[a.aptr[k]..a.aptr[k + 1]] {
                    acc += dj[j];
                    let mut copies = 0.0;
                    while next < acc {
                        copies += 1.0;
                        next += step;
                    }
                    if copies > 0.0 {
                        taken.push((j, copies * step));
                    }
                }
            }
            taken
        };
        // M's lower triangle, as sum of U^T U over blocks of the sample's rows
        // sqrt(weight) (x_s - mu, 1), added in block order
        let mut h = Array2::<f64>::zeros((d + 1, d + 1));
        let mut u = Array2::<f64>::zeros((SKETCH_BLOCK.min(sample.len()), d + 1));
        for block in sample.chunks(SKETCH_BLOCK) {
            let mut u = u.slice_mut(ndarray::s![..block.len(), ..]);
            for (mut row, &(j, weight)) in u.rows_mut().into_iter().zip(block) {
                let c = weight.sqrt();
                on_rows!(
                    x,
                    dense | data,
                    d | {
                        for ((o, &v), &mv) in row.iter_mut().zip(dense_row(data, d, j)).zip(mu) {
                            *o = c * (v.to_f64() - mv);
                        }
                    },
                    sparse | _c | {}
                );
                row[d] = c;
            }
            triangular::matmul(
                faer_mut(h.view_mut()),
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
        for k in 0..=d {
            for l in 0..k {
                h[[l, k]] = h[[k, l]];
            }
        }
        for k in 0..d {
            h[[k, k]] += 1.0;
        }
        Cholesky::factor(&h).ok().map(Preconditioner::Sketch)
    }

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
    /// text"), while `M^{-1} H` is the identity up to rank one.
    fn woodbury(
        x: RowsRef<'a>,
        mu: &'a [f64],
        a: &ActiveRows<'a>,
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
        Some(Preconditioner::Woodbury(Woodbury {
            x,
            mu,
            ptr: a.ptr,
            aptr: a.aptr.clone(),
            active: active.to_vec(),
            root_d,
            s,
            simd,
        }))
    }

    /// The diagonal of the Hessian (the bias entry guarded: no loss term active),
    /// `sum_j D_j (x_jk - mu_k)^2 = S2_k - 2 mu_k S1_k + mu_k^2 sum D`, one pass.
    fn jacobi(x: RowsRef, ptr: &[usize], mu: &[f64], dj: &[f64]) -> Self {
        let sum_d = sum_rows(ptr, dj);
        let (s1, mut m_w) = weighted_columns(x, ptr, dj, mu.len());
        for ((m, &s), &u) in m_w.iter_mut().zip(&s1).zip(mu) {
            *m = 1.0 + (*m - 2.0 * u * s + u * u * sum_d).max(0.0);
        }
        let m_b = if sum_d > 0.0 { sum_d } else { 1.0 };
        Preconditioner::Jacobi { m_w, m_b }
    }

    /// `M^{-1} (r_w, r_b)`.
    fn apply(&self, r_w: &[f64], r_b: f64) -> (Vec<f64>, f64) {
        match self {
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
            Preconditioner::Woodbury(wb) => {
                // v = W B^{-1} r, y = S^{-1} v, then B^{-1} (r - W^T y)
                let shift = r_b / WOODBURY_BIAS - dot(wb.mu, r_w);
                let v: Vec<f64> = wb
                    .active
                    .iter()
                    .zip(&wb.root_d)
                    .map(|(&j, &rd)| rd * (wb.x.row_dot(j, r_w, wb.simd) + shift))
                    .collect();
                let Ok(y) = wb.s.solve(Array1::from_vec(v)) else {
                    return (r_w.to_vec(), r_b); // as for the sketch
                };
                // W^T y = (sum_i c_i x_i - (sum c) mu, sum c), c_i = sqrt(D_i) y_i, summed in
                // the tree over the bags
                let (wt_y, sum_c) = sum_bags(
                    wb.ptr,
                    (vec![0.0; r_w.len()], 0.0),
                    |k, acc: &mut (Vec<f64>, f64)| {
                        for i in wb.aptr[k]..wb.aptr[k + 1] {
                            let c = wb.root_d[i] * y[i];
                            wb.x.add_row(wb.active[i], c, &mut acc.0, wb.simd);
                            acc.1 += c;
                        }
                        wb.aptr[k + 1] > wb.aptr[k]
                    },
                );
                let z_w = r_w
                    .iter()
                    .zip(&wt_y)
                    .zip(wb.mu)
                    .map(|((&r, &t), &u)| r - t + sum_c * u)
                    .collect();
                (z_w, (r_b - sum_c) / WOODBURY_BIAS)
            }
        }
    }
}

/// A solve's start: `w`, `b` and, when known, their scores `X w + b`.
type Start<'s> = (&'s [f64], f64, Option<&'s [f64]>);

/// The rows and their mean `mu`: products with the centred rows `x_j - mu` without forming
/// them (module docs).
struct Centred<'a> {
    x: RowsRef<'a>,
    /// The bags' row offsets (the leaves of the sums).
    ptr: &'a [usize],
    mu: Vec<f64>,
}

impl<'a> Centred<'a> {
    /// The mean row of `x` (`n` rows, `d` features), one pass, blocks added in order.
    fn new(x: RowsRef<'a>, ptr: &'a [usize], n: usize, d: usize) -> Self {
        let mu = if n == 0 {
            vec![0.0; d]
        } else {
            xt_dot(x, ptr, &vec![1.0 / n as f64; n], d)
        };
        Self { x, ptr, mu }
    }

    /// `out_j = (x_j - mu) . v + c`.
    fn x_dot(&self, v: &[f64], c: f64, simd: Simd, out: &mut [f64]) {
        x_dot(self.x, v, simd, out);
        let shift = c - dot(&self.mu, v);
        out.iter_mut().for_each(|o| *o += shift);
    }

    /// `sum_j u_j (x_j - mu)`.
    fn xt_dot(&self, u: &[f64]) -> Vec<f64> {
        let out = xt_dot(self.x, self.ptr, u, self.mu.len());
        self.centre(out, u)
    }

    /// [`Centred::xt_dot`] of `u` and of `v` in one pass over the rows.
    fn xt_dot_pair(&self, u: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (xu, xv) = xt_dot_pair(self.x, self.ptr, u, v, self.mu.len());
        (self.centre(xu, u), self.centre(xv, v))
    }

    /// `X^T u - (sum u) mu` from `X^T u`.
    fn centre(&self, mut xt_u: Vec<f64>, u: &[f64]) -> Vec<f64> {
        let s = sum_rows(self.ptr, u);
        xt_u.iter_mut()
            .zip(&self.mu)
            .for_each(|(o, &m)| *o -= s * m);
        xt_u
    }
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

impl LinearSquaredHinge<'_> {
    /// Whether row `j` has no loss term (both costs zero: the instances a relabelling step
    /// leaves out). Its score does not enter `J`; the solve skips it in the steps and sets it
    /// at the end.
    #[inline]
    fn no_loss(&self, j: usize) -> bool {
        self.c_pos[j] <= 0.0 && self.c_neg[j] <= 0.0
    }

    /// The loss terms of row `j` at the score `fj`: `(loss, g_j, D_j)`.
    #[inline]
    fn row_loss(&self, j: usize, fj: f64) -> (f64, f64, f64) {
        let (cp, cn) = (self.c_pos[j], self.c_neg[j]);
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

    /// Loss gradient `g_j` and curvature `D_j` of every row at the scores `f`, and the loss
    /// (summed in the tree over the bags).
    fn loss_terms(&self, f: &[f64], g: &mut [f64], dj: &mut [f64]) -> f64 {
        let ptr = self.bag_ptr;
        let mut gd: Vec<(f64, f64)> = vec![(0.0, 0.0); f.len()];
        let loss = Tree::new(ptr, ptr, 0.0, |k, acc: &mut f64, out: &mut [(f64, f64)]| {
            for (o, j) in out.iter_mut().zip(ptr[k]..ptr[k + 1]) {
                let (l, gj, d) = self.row_loss(j, f[j]);
                *acc += l;
                *o = (gj, d);
            }
            ptr[k + 1] > ptr[k]
        })
        .sum(&mut gd);
        for ((gj, d), &(a, b)) in g.iter_mut().zip(dj.iter_mut()).zip(&gd) {
            (*gj, *d) = (a, b);
        }
        loss
    }

    /// Derivative and second derivative in `t` of the loss at the scores `f + t z` (summed in
    /// the tree over the bags).
    fn line_terms(&self, f: &[f64], z: &[f64], t: f64) -> (f64, f64) {
        let ptr = self.bag_ptr;
        sum_bags(ptr, (0.0, 0.0), |k, acc: &mut (f64, f64)| {
            let mut touched = false;
            for j in ptr[k]..ptr[k + 1] {
                if z[j] == 0.0 {
                    continue;
                }
                touched = true;
                let fj = f[j] + t * z[j];
                let (cp, cn) = (self.c_pos[j], self.c_neg[j]);
                if cp > 0.0 && fj < 1.0 {
                    acc.0 -= 2.0 * cp * (1.0 - fj) * z[j];
                    acc.1 += 2.0 * cp * z[j] * z[j];
                }
                if cn > 0.0 && fj > -1.0 {
                    acc.0 += 2.0 * cn * (1.0 + fj) * z[j];
                    acc.1 += 2.0 * cn * z[j] * z[j];
                }
            }
            touched
        })
    }

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
        let (n, d) = (self.x.n_rows(), self.x.n_features());
        check_bag_ptr(self.bag_ptr, n)?;
        // The loops read dense rows as slices: a row-major copy once if the layout is another.
        let x = RowsRef::new(self.x);
        let simd = Simd::detect();
        let centred = match self.mean {
            Some(mu) if mu.len() == d => Centred {
                x,
                ptr: self.bag_ptr,
                mu: mu.to_vec(),
            },
            _ => Centred::new(x, self.bag_ptr, n, d),
        };
        // `b` holds the centred bias `b' = b + mu . w` until the end
        let (mut w, mut b) = match warm {
            Some((w, b, _)) => (w.to_vec(), b + dot(&centred.mu, w)),
            None => (vec![0.0; d], 0.0),
        };
        let mut f = match warm {
            Some((_, _, Some(scores))) => scores.to_vec(),
            _ => {
                let mut f = vec![0.0; n];
                centred.x_dot(&w, b, simd, &mut f);
                f
            }
        };
        let (mut g, mut dj) = (vec![0.0; n], vec![0.0; n]);
        // The gradient at w = 0, b' = 0 (the scale of the stopping rule), in the pass of the
        // first gradient.
        let g0: Vec<f64> = (0..n)
            .map(|j| 2.0 * (self.c_neg[j] - self.c_pos[j]))
            .collect();
        let mut loss = self.loss_terms(&f, &mut g, &mut dj);
        let (xt_g, grad0_w) = centred.xt_dot_pair(&g, &g0);
        let grad0 = (dot(&grad0_w, &grad0_w) + sum_rows(self.bag_ptr, &g0).powi(2)).sqrt();
        let mut xt_g = Some(xt_g);
        let (mut n_iter, mut converged) = (0, false);
        // the previous line search's step (1: the Newton step was taken whole)
        let mut last_t = 1.0;
        let mut z = vec![0.0; n];
        let mut n_cg = 0;
        // Woodbury's preconditioner for the rest of the solve (sparse rows; WOODBURY_AFTER_CG)
        let mut woodbury = false;
        loop {
            cancel.check()?;
            let mut grad_w = xt_g.take().unwrap_or_else(|| centred.xt_dot(&g));
            grad_w.iter_mut().zip(&w).for_each(|(gw, &wv)| *gw += wv);
            let grad_b = sum_rows(self.bag_ptr, &g);
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
            let (s_w, s_b, cg) = self.newton_direction(
                &centred, &dj, &grad_w, grad_b, forcing, simd, woodbury, &mut z,
            );
            n_cg += cg;
            woodbury |= cg > WOODBURY_AFTER_CG;
            let (ws, ss) = (dot(&w, &s_w), dot(&s_w, &s_w));
            let t = self.line_search(&f, &z, ws, ss);
            if t == 0.0 {
                break; // no descent left at machine precision
            }
            last_t = t;
            w.iter_mut().zip(&s_w).for_each(|(wv, &sv)| *wv += t * sv);
            b += t * s_b;
            f.iter_mut().zip(&z).for_each(|(fv, &zv)| *fv += t * zv);
            loss = self.loss_terms(&f, &mut g, &mut dj);
        }
        // the scores of the rows without a loss term, which the steps left behind
        if n_iter > 0 {
            let shift = b - dot(&centred.mu, &w);
            f.par_chunks_mut(BLOCK_ROWS)
                .enumerate()
                .for_each(|(blk, out)| {
                    for (k, v) in out.iter_mut().enumerate() {
                        let j = blk * BLOCK_ROWS + k;
                        if self.no_loss(j) {
                            *v = x.row_dot(j, &w, simd) + shift;
                        }
                    }
                });
        }
        let value = 0.5 * dot(&w, &w) + loss;
        let b = b - dot(&centred.mu, &w);
        Ok(LinearSolution {
            w: Array1::from(w),
            b,
            value,
            scores: f,
            n_iter,
            n_cg,
            converged,
        })
    }

    /// The Newton direction: `H s = -grad` by preconditioned conjugate gradients
    /// ([`Preconditioner`]: the sketch for narrow dense rows, with `woodbury` Woodbury's for
    /// sparse rows, else Jacobi's) to a relative residual `forcing`, and the number of their
    /// iterations.
    #[allow(clippy::too_many_arguments)]
    fn newton_direction(
        &self,
        centred: &Centred,
        dj: &[f64],
        grad_w: &[f64],
        grad_b: f64,
        forcing: f64,
        simd: Simd,
        woodbury: bool,
        z: &mut [f64],
    ) -> (Vec<f64>, f64, usize) {
        let d = grad_w.len();
        let (x, mu) = (centred.x, centred.mu.as_slice());
        let act = ActiveRows::new(self.bag_ptr, dj);
        let precond = Preconditioner::sketch(x, mu, &act, dj)
            .or_else(|| {
                woodbury
                    .then(|| Preconditioner::woodbury(x, mu, &act, dj, simd))
                    .flatten()
            })
            .unwrap_or_else(|| Preconditioner::jacobi(x, self.bag_ptr, mu, dj));
        let active = &act.active;
        // centred rows: q_j = (x_j - mu) . p_w + p_b = x_j . p_w + (p_b - mu . p_w), and
        // sum_j D_j q_j (x_j - mu) = (sum_j D_j q_j x_j) - (sum_j D_j q_j) mu
        let mut q = vec![0.0; active.len()];
        let hess = |p_w: &[f64], p_b: f64, q: &mut [f64]| -> (Vec<f64>, f64) {
            let shift = p_b - dot(mu, p_w);
            let (mut h_w, h_b) = hessian_product(x, &act, dj, p_w, shift, simd, q);
            h_w.iter_mut()
                .zip(p_w)
                .zip(mu)
                .for_each(|((h, &p), &u)| *h += p - h_b * u);
            (h_w, h_b)
        };
        let (mut s_w, mut s_b) = (vec![0.0; d], 0.0);
        // the active rows' scores of the step, sum_k alpha_k q_k, gathered as the steps add up
        let mut z_active = vec![0.0; active.len()];
        let mut r_w: Vec<f64> = grad_w.iter().map(|g| -g).collect();
        let mut r_b = -grad_b;
        let r0 = (dot(&r_w, &r_w) + r_b * r_b).sqrt();
        let (mut z_w, mut z_b) = precond.apply(&r_w, r_b);
        let (mut p_w, mut p_b) = (z_w.clone(), z_b);
        let mut rz = dot(&r_w, &z_w) + r_b * z_b;
        let mut n_cg = 0;
        for _ in 0..MAX_CG {
            n_cg += 1;
            let (hp_w, hp_b) = hess(&p_w, p_b, &mut q);
            let php = dot(&p_w, &hp_w) + p_b * hp_b;
            if php <= 0.0 || !php.is_finite() {
                break; // only the unpenalised bias without active rows: no curvature left
            }
            let alpha = rz / php;
            s_w.iter_mut().zip(&p_w).for_each(|(s, &p)| *s += alpha * p);
            s_b += alpha * p_b;
            z_active
                .iter_mut()
                .zip(&q)
                .for_each(|(zk, &qk)| *zk += alpha * qk);
            r_w.iter_mut()
                .zip(&hp_w)
                .for_each(|(r, &h)| *r -= alpha * h);
            r_b -= alpha * hp_b;
            if (dot(&r_w, &r_w) + r_b * r_b).sqrt() <= forcing * r0 {
                break;
            }
            (z_w, z_b) = precond.apply(&r_w, r_b);
            let rz_new = dot(&r_w, &z_w) + r_b * z_b;
            let beta = rz_new / rz;
            rz = rz_new;
            p_w.iter_mut()
                .zip(&z_w)
                .for_each(|(p, &z)| *p = z + beta * *p);
            p_b = z_b + beta * p_b;
        }
        // the step's scores: gathered on the active rows, one dot per inactive row with a
        // loss term (a row without one has no say in J: 0 here, its score set by the end of the
        // solve)
        let shift = s_b - dot(mu, &s_w);
        z.par_chunks_mut(BLOCK_ROWS)
            .enumerate()
            .for_each(|(blk, out)| {
                for (k, v) in out.iter_mut().enumerate() {
                    let j = blk * BLOCK_ROWS + k;
                    if dj[j] == 0.0 {
                        *v = if self.no_loss(j) {
                            0.0
                        } else {
                            x.row_dot(j, &s_w, simd) + shift
                        };
                    }
                }
            });
        for (&j, &v) in active.iter().zip(&z_active) {
            z[j] = v;
        }
        (s_w, s_b, n_cg)
    }

    /// The minimiser `t >= 0` of `J` along the direction: `phi'(t) = ws + t ss + loss'(t)`,
    /// found by Newton steps on `phi'` kept inside a bracket `[lo, hi]` (bisection otherwise).
    fn line_search(&self, f: &[f64], z: &[f64], ws: f64, ss: f64) -> f64 {
        let dphi = |t: f64| {
            let (l1, l2) = self.line_terms(f, z, t);
            (ws + t * ss + l1, ss + l2)
        };
        let (d0, _) = dphi(0.0);
        if d0 >= 0.0 {
            return 0.0; // not a descent direction (the gradient is at rounding level)
        }
        let (mut lo, mut hi) = (0.0, 1.0);
        let mut at_hi = dphi(hi);
        let mut grow = 0;
        while at_hi.0 < 0.0 && grow < 60 {
            lo = hi;
            hi *= 2.0;
            at_hi = dphi(hi);
            grow += 1;
        }
        if at_hi.0 < 0.0 {
            return hi;
        }
        // Newton from t = 1 (the full Newton step, usually exact), safeguarded by the bracket.
        let mut t = 1.0_f64.clamp(lo, hi);
        for _ in 0..100 {
            let (v, curv) = dphi(t);
            if v == 0.0 {
                return t;
            }
            if v < 0.0 {
                lo = t;
            } else {
                hi = t;
            }
            let newton = if curv > 0.0 { t - v / curv } else { f64::NAN };
            let next = if newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
            if (next - t).abs() <= 1e-15 * t.abs().max(1.0) || hi - lo <= 1e-15 * hi {
                return next;
            }
            t = next;
        }
        t
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
            let Some(p) = Preconditioner::woodbury(RowsRef::Sparse(&csr), &mu, &act, &dj, simd)
            else {
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
        assert!(Preconditioner::woodbury(
            dense,
            &mu,
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
            let whole = hessian_product(rows, &act, &dj, &p_w, 0.3, simd, &mut q);
            // against a plain sum: the tree adds in another order than the rows' order
            let mut plain = vec![0.0; 11];
            for &j in &act.active {
                let qj = rows.row_dot(j, &p_w, simd) + 0.3;
                rows.add_row(j, dj[j] * qj, &mut plain, simd);
            }
            for (a, b) in whole.0.iter().zip(&plain) {
                assert!((a - b).abs() <= 1e-10 * b.abs().max(1.0));
            }
            let tree = hessian_tree(rows, &act, &dj, &p_w, 0.3, simd);
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

    /// A whole solve: the same bits on 1, 2 and 3 threads.
    #[test]
    fn a_solve_is_the_same_bits_for_any_thread_count() {
        let (mut x, ptr) = data(5, 3000, 8, 7);
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
}
