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
//! The files: `problem` holds the problem, the settings, the result and the repair of a start to
//! the equality; `hinge` the hinge C-SVM at a path of `C` values ([`HingeSolver`]); `gram` the
//! kernel sources ([`GramRows`] and its implementations); `cache` the kernel-row LRU cache;
//! `state` the state of one solve (gradient and its reconstruction, working-set selection,
//! shrinking, the two-variable update, the main loop); `scan` its per-iteration scans; this
//! file the driver [`Smo`], which keeps the cache between solves.
//!
//! Every floating-point sum runs in an order fixed by the problem alone, so results are bitwise
//! identical for any number of threads.

use crate::error::{invalid_data, invalid_param, Result};
use crate::progress::Cancel;

mod cache;
mod gram;
mod hinge;
mod problem;
mod scan;
mod state;
mod stored;

use cache::RowCache;
pub use gram::{max_weights, ComboGram, GramRows, InstanceGram, PrecomputedGram, STORE_MAX_BYTES};
pub use hinge::HingeSolver;
pub use problem::{
    repair_equality, DualArrays, DualProblem, DualSolution, OnePerPoint, SmoParams, FIT_CACHE_BYTES,
};
use state::State;

// Constants shared by the files of this module.

/// Curvature used when `Q_ii + Q_jj - 2 Q_ij <= 0` (LIBSVM's `TAU`; Fan et al. 2005, eq. (17)).
const TAU: f64 = 1e-12;
/// Marker for "no index" in the cache's lists.
const NIL: usize = usize::MAX;

/// Solver state that survives between solves of one fit (the kernel-row cache and the kernel
/// diagonal), so that a sequence of related problems (same points, changed `p`, `d`, `u`) is
/// solved with warm starts.
pub struct Smo<'g, G: GramRows> {
    gram: &'g G,
    params: SmoParams,
    kdiag: Vec<f64>,
    cache: RowCache,
    cancel: Cancel,
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
            cancel: Cancel::default(),
        })
    }

    /// The same solver, stopping every later [`Smo::solve`] with [`crate::Error::Cancelled`]
    /// once `cancel` is set.
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
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
        let (iterations, termination) = st.run(
            self.gram,
            &mut self.cache,
            &self.params,
            max_iter,
            &self.cancel,
        )?;
        st.finish(self.gram, &mut self.cache, iterations, termination)
    }
}
