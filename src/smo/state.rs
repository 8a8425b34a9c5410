//! The working-set state of one solve ([`State`], LIBSVM's `Solver` members): the gradient, its
//! reconstruction and `G_bar`, working-set selection, shrinking, the two-variable update, the
//! main loop and the final bias and objective; with the fixed-order block reduction
//! ([`reduce_blocks`]) and the row sums of gradient (re)construction ([`add_rows`]).

use rayon::prelude::*;

use super::cache::{RowCache, RowRef};
use super::scan::{
    first_choice, second_choice, update_and_first, ArgMax, SecondChoice, SecondColumns,
    SecondInputs, UpdateInputs,
};
use super::{DualProblem, DualSolution, GramRows, SmoParams, NIL, TAU};
use crate::error::{Error, Result};
use crate::linalg::Simd;
use crate::progress::{Cancel, StopReason};

/// Rows computed beside a missing one ([`State::fetch_row`]).
/// SMO iterations between two looks at the cancellation flag (a few microseconds each).
const CANCEL_CHECK: usize = 256;

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
pub(super) struct State {
    idx: Vec<usize>,
    y: Vec<f64>,
    /// Point of each position, narrowed to `u32` (half the bytes in the scans; [`Smo::new`](super::Smo::new)
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
    pub(super) warm_start: bool,
    eps: f64,
    /// Variables removed by shrinking so far (for tests).
    n_shrunk: usize,
}

impl State {
    /// The state at `alpha` (in sample order); positions start as the samples' order.
    pub(super) fn new(problem: &DualProblem<'_>, kdiag: &[f64], alpha: Vec<f64>, tol: f64) -> Self {
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
    pub(super) fn gradient_from_q_alpha(&mut self, qa: &[f64]) {
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
    pub(super) fn gradient_from_scratch<G: GramRows>(&mut self, gram: &G, cache: &mut RowCache) {
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
        let cols = SecondColumns {
            yg: &self.yg,
            low: &self.low_off,
            qd: &self.qd,
            point: &self.point,
        };
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
            |lo, hi| second_choice(simd, lo, hi, inp, cols),
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
            clip_on_sum(&mut ai, &mut aj, sum, ui);
            clip_on_sum(&mut aj, &mut ai, sum, uj);
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

    /// The main loop of LIBSVM's `Solver::Solve`; stops with [`crate::Error::Cancelled`] once
    /// `cancel` is set (checked every [`CANCEL_CHECK`] iterations).
    pub(super) fn run<G: GramRows>(
        &mut self,
        gram: &G,
        cache: &mut RowCache,
        params: &SmoParams,
        max_iter: usize,
        cancel: &Cancel,
    ) -> Result<(usize, StopReason)> {
        if self.n_live == 0 {
            return Ok((0, StopReason::Converged));
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
                        None => return Ok((iter, StopReason::Converged)),
                    }
                }
            };
            if iter >= max_iter {
                return Ok((iter, StopReason::MaxIter));
            }
            if iter % CANCEL_CHECK == 0 {
                cancel.check()?;
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
    pub(super) fn finish<G: GramRows>(
        mut self,
        gram: &G,
        cache: &mut RowCache,
        iterations: usize,
        termination: StopReason,
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

/// LIBSVM's clip of a same-label pair on its line `a + b = sum`: where the line leaves the box
/// past `a`'s upper bound `u`, `a` is held at `u`; else `b` at its lower bound 0. Called once
/// per side, `a` being `i` then `j`.
#[inline(always)]
fn clip_on_sum(a: &mut f64, b: &mut f64, sum: f64, u: f64) {
    if sum > u {
        if *a > u {
            *a = u;
            *b = sum - u;
        }
    } else if *b < 0.0 {
        *b = 0.0;
        *a = sum;
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
    use crate::bags::Rows;
    use crate::kernel::Kernel;
    use crate::smo::{repair_equality, DualArrays, InstanceGram, OnePerPoint, Smo};
    use ndarray::Array2;

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
        let p = vec![1.0; n];
        let mut u: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
        u[5] = 0.0;
        let layout = OnePerPoint::new(n);
        let problem = layout.problem(&y, &p, &u, 0.0);
        let params = SmoParams {
            tol: 1e-10,
            ..SmoParams::default()
        };
        let kdiag = gram.diagonal();
        let mut cache = RowCache::new(n, 1 << 20);
        let mut st = State::new(&problem, &kdiag, vec![0.0; n], params.tol);
        st.gradient_from_scratch(&gram, &mut cache);
        let (_, term) = st.run(&gram, &mut cache, &params, 100_000, &Cancel::default())?;
        assert_eq!(term, StopReason::Converged);
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
        let arrays = DualArrays {
            y,
            point,
            p,
            d,
            u,
            delta: 0.0,
        };
        let problem = arrays.view();
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
                termination: StopReason::Converged,
            };
            let warm = smo.solve(&problem, Some(&warm_in))?;
            assert_eq!(warm.termination, StopReason::Converged);
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
            let (_, term) = st.run(&gram, &mut cache, &params, 1_000_000, &Cancel::default())?;
            assert_eq!(term, StopReason::Converged);
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
