//! The 1-norm SVM as a linear program, solved exactly by a revised primal simplex method.
//!
//! MILES (Chen, Bi & Wang, "MILES: Multiple-Instance Learning via Embedded Instance Selection",
//! IEEE TPAMI 28(12), 2006, section "joint feature selection and classification") trains a
//! linear classifier `f(m) = w . m + b` on the bag embeddings `m_i` with the 1-norm SVM
//!
//! `min_{w, b, xi} lambda sum_k |w_k| + mu sum_{i in +} xi_i + (1 - mu) sum_{i in -} xi_i`
//! `s.t. y_i (w . m_i + b) + xi_i >= 1, xi_i >= 0`,
//!
//! which the paper solves as a linear program with `w = u - v`, `u, v >= 0`. Dividing by
//! `lambda`, this module solves the same problem in the form
//!
//! `min sum_k (u_k + v_k) + sum_i c_i xi_i`  s.t.  `y_i (x_i . (u - v) + b) + xi_i - s_i = 1`,
//! `u, v, xi, s >= 0`, `b = b+ - b-` free,
//!
//! with per-sample costs `c_i` (the paper's `c_i = mu / lambda` for positive bags and
//! `(1 - mu) / lambda` for negative ones; the crate's `c_i = C w_i` with `w_i` the class weight).
//! Its dual is `max sum_i a_i` s.t. `0 <= a_i <= c_i`, `sum_i a_i y_i = 0`,
//! `|sum_i a_i y_i x_ik| <= 1` for every `k`.
//!
//! The method: the revised simplex method on the `m` equality rows, starting from the feasible
//! basis of the slacks `xi = 1` (no phase one), with the basis inverse kept explicitly
//! (`m x m`, product-form updates, refactored by faer's LU every [`REFACTOR_EVERY`] pivots and
//! before optimality is declared), partial Dantzig pricing (below) and Harris's two-pass ratio
//! test.
//!
//! **Partial pricing.** The `2n` weight columns are priced through `g = X^T (y * pi)`, a pass
//! over the whole design per pivot, which streams `8 m n` bytes from memory: on 548 bags x
//! 10,668 concepts (47 MB) that pass was 83 % of a fit. So the weight columns are split into
//! sections of about [`PRICE_SECTION_BYTES`] of the design (at least [`PRICE_SECTION_MIN`]
//! concepts) and each pivot prices the other columns and one section, the sections taken in
//! turn (the classic partial pricing of the revised simplex method; Maros, "Computational
//! Techniques of the Simplex Method", 2003, ch. 9): the most negative reduced cost of the
//! section enters; a section without one passes the turn to the next; when a whole round of
//! sections has none, the basis is optimal. The optimum is the same LP optimum (the optimality
//! test still covers every column); when the LP has several optimal vertices, the vertex
//! reached may differ from full pricing's. A design of one section (up to
//! [`PRICE_SECTION_BYTES`]) is priced whole, as before.
//!
//! The LP of an embedding is highly degenerate (most bags sit exactly on the margin, `xi_i = 0`
//! and `s_i = 0` at once): on MUSK2 three pivots in four made no progress. So the primal phase
//! solves the problem with the right-hand side `1 + delta_i`, `delta_i` in
//! `[PERTURBATION, 2 PERTURBATION)` drawn from a fixed hash of `i` (the classic perturbation
//! against degeneracy); then the right-hand side is set back to 1, the basic values recomputed,
//! and the few that turn negative are driven out by dual simplex pivots (the basis stays dual
//! feasible: reduced costs do not depend on the right-hand side), ending at a basis that is
//! primal and dual feasible for the true problem. As a guard against cycling, after
//! [`STALL_PIVOTS`] degenerate pivots in a row the primal phase switches to Bland's rule
//! (smallest index enters and leaves) until a pivot makes progress. The solve stops when no
//! column has a reduced cost below `-tol (1 + |c_j|)` at a freshly refactored, primal feasible
//! basis: the vertex it returns is an exact optimum (up to that tolerance), with at most `m`
//! nonzero weights. Memory: the design, plus `m^2` for the basis inverse. Every value is
//! computed by the same operations whatever the number of threads.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::progress::Cancel;

/// Pivots between two refactorizations of the basis inverse.
pub const REFACTOR_EVERY: usize = 50;
/// Degenerate pivots in a row before Bland's rule takes over.
pub const STALL_PIVOTS: usize = 50;
/// The smallest perturbation of the right-hand side in the primal phase.
pub const PERTURBATION: f64 = 1e-7;
/// Primal feasibility tolerance of the ratio test (Harris).
const FEAS_TOL: f64 = 1e-9;
/// Smallest pivot, relative to the largest entry of the direction.
const PIVOT_TOL: f64 = 1e-9;
/// Columns per parallel task of the pricing pass.
const PRICE_CHUNK: usize = 512;
/// The bytes of the design one pricing section covers (module docs): 4 MiB, about what the
/// caches of a core keep between two pivots.
pub const PRICE_SECTION_BYTES: usize = 4 << 20;
/// The fewest concepts of a pricing section.
pub const PRICE_SECTION_MIN: usize = 1024;
/// Basis rows from which the dense updates run in parallel.
const PARALLEL_ROWS: usize = 256;

/// One 1-norm SVM problem: the design (one row per sample), the labels and the costs.
#[derive(Debug, Clone, Copy)]
pub struct L1SvmProblem<'a> {
    /// The design `X` (`m x n`, one row per sample).
    pub x: ArrayView2<'a, f64>,
    /// Labels, `+1` or `-1` (`m`).
    pub y: &'a [f64],
    /// The cost of each sample's hinge loss, `> 0` (`m`).
    pub cost: &'a [f64],
}

/// The settings of [`solve_l1_svm`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L1SvmSettings {
    /// Optimality tolerance: the solve stops when every reduced cost is at least
    /// `-tol (1 + |c_j|)`.
    pub tol: f64,
    /// Pivot cap (`None`: `20 (m + n) + 1000`).
    pub max_iter: Option<usize>,
    /// Concepts per pricing section (`None`: about [`PRICE_SECTION_BYTES`] of the design, at
    /// least [`PRICE_SECTION_MIN`] concepts; module docs).
    pub price_section: Option<usize>,
}

impl Default for L1SvmSettings {
    fn default() -> Self {
        Self {
            tol: 1e-9,
            max_iter: None,
            price_section: None,
        }
    }
}

/// The solution of [`solve_l1_svm`].
#[derive(Debug, Clone, PartialEq)]
pub struct L1SvmSolution {
    /// Weights `w = u - v` (`n`; at most `m` nonzero).
    pub w: Vec<f64>,
    /// Bias.
    pub b: f64,
    /// `sum_k |w_k| + sum_i c_i max(0, 1 - y_i (x_i . w + b))`, evaluated at `(w, b)`.
    pub objective: f64,
    /// The dual variables `a_i` (in `[0, c_i]`), the simplex multipliers of the final basis.
    pub dual: Vec<f64>,
    /// Pivots made.
    pub iterations: usize,
    /// Whether the optimality test passed (else the pivot cap was reached).
    pub converged: bool,
}

/// What a column of the LP is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    /// `u_k` (sign +1) or `v_k` (sign -1) of weight `k`.
    Weight(usize, f64),
    /// `b+` (+1) or `b-` (-1).
    Bias(f64),
    /// The slack `xi_i` of sample `i` (cost `c_i`, column `e_i`).
    Loss(usize),
    /// The surplus `s_i` of sample `i` (cost 0, column `-e_i`).
    Surplus(usize),
}

/// Solves the 1-norm SVM of `problem` (see the module docs). `report(pivots, objective)` is
/// called every 100 pivots and at the end; `cancel` is checked every few pivots.
pub fn solve_l1_svm(
    problem: &L1SvmProblem<'_>,
    settings: &L1SvmSettings,
    cancel: &Cancel,
    mut report: impl FnMut(usize, f64),
) -> Result<L1SvmSolution> {
    let (m, n) = problem.x.dim();
    if m == 0 || problem.y.len() != m || problem.cost.len() != m {
        return Err(Error::Solver(format!(
            "the 1-norm SVM needs one label and one cost per sample: {m} samples, {} labels, {} \
             costs",
            problem.y.len(),
            problem.cost.len()
        )));
    }
    if let Some(c) = problem.cost.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
        return Err(Error::Solver(format!(
            "every cost of the 1-norm SVM must be finite and > 0, got {c}"
        )));
    }
    if problem.y.iter().any(|&v| v != 1.0 && v != -1.0) || problem.x.iter().any(|v| !v.is_finite())
    {
        return Err(Error::Solver(
            "the 1-norm SVM needs labels +1/-1 and a finite design".into(),
        ));
    }
    let max_iter = settings.max_iter.unwrap_or(20 * (m + n) + 1000);
    let mut lp = Simplex::new(problem);
    if let Some(s) = settings.price_section {
        lp.section = s.max(1);
    }
    let mut iterations = 0;
    let mut converged = lp.primal(settings.tol, max_iter, &mut iterations, cancel, &mut report)?;
    if converged {
        // back to the true right-hand side: drive out the negative basic values, then confirm
        lp.rhs.fill(1.0);
        lp.refactor(false)?;
        converged = lp.dual_cleanup(max_iter, &mut iterations, cancel)?
            && lp.primal(settings.tol, max_iter, &mut iterations, cancel, &mut report)?;
    }
    lp.btran();
    let solution = lp.solution(iterations, converged);
    report(iterations, solution.objective);
    Ok(solution)
}

/// A fixed value in `[0, 1)` for index `i` (splitmix64).
fn unit_hash(i: usize) -> f64 {
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The state of the revised simplex method.
struct Simplex<'a> {
    x: ArrayView2<'a, f64>,
    y: &'a [f64],
    cost: &'a [f64],
    m: usize,
    n: usize,
    /// The column of each basis position.
    basis: Vec<usize>,
    /// The basis position of each column (`usize::MAX`: nonbasic).
    position: Vec<usize>,
    /// The basis inverse (`m x m`, row-major).
    binv: Array2<f64>,
    /// The values of the basic variables.
    xb: Vec<f64>,
    /// The right-hand side (perturbed in the primal phase, then 1).
    rhs: Vec<f64>,
    /// The simplex multipliers `pi = B^{-T} c_B`.
    pi: Vec<f64>,
    /// `g = X^T (y * pi)`: the weight columns' part of the reduced costs (after partial
    /// pricing, current only on the section priced last).
    g: Vec<f64>,
    /// Concepts per pricing section.
    section: usize,
    /// The pricing section whose turn it is.
    cursor: usize,
    /// The entering column's direction `d = B^{-1} a_q`.
    d: Vec<f64>,
    /// Scratch for one column `a_q`.
    column: Vec<f64>,
}

impl<'a> Simplex<'a> {
    /// The slack basis of the perturbed problem: every `xi_i` basic at `1 + delta_i`.
    fn new(p: &L1SvmProblem<'a>) -> Self {
        let (m, n) = p.x.dim();
        let n_cols = 2 * n + 2 + 2 * m;
        let basis: Vec<usize> = (0..m).map(|i| 2 * n + 2 + i).collect();
        let mut position = vec![usize::MAX; n_cols];
        for (i, &j) in basis.iter().enumerate() {
            position[j] = i;
        }
        Self {
            x: p.x,
            y: p.y,
            cost: p.cost,
            m,
            n,
            basis,
            position,
            binv: Array2::eye(m),
            xb: (0..m)
                .map(|i| 1.0 + PERTURBATION * (1.0 + unit_hash(i)))
                .collect(),
            rhs: (0..m)
                .map(|i| 1.0 + PERTURBATION * (1.0 + unit_hash(i)))
                .collect(),
            pi: vec![0.0; m],
            g: vec![0.0; n],
            section: (PRICE_SECTION_BYTES / (8 * m.max(1))).max(PRICE_SECTION_MIN),
            cursor: 0,
            d: vec![0.0; m],
            column: vec![0.0; m],
        }
    }

    /// The primal simplex method from the current primal feasible basis until no column prices
    /// out (at a freshly refactored basis) or `iterations` reaches `max_iter`; returns whether
    /// the optimality test passed.
    fn primal(
        &mut self,
        tol: f64,
        max_iter: usize,
        iterations: &mut usize,
        cancel: &Cancel,
        report: &mut impl FnMut(usize, f64),
    ) -> Result<bool> {
        let mut since_refactor = 0;
        let mut degenerate = 0;
        let mut unbounded_retry = false;
        loop {
            if (*iterations).is_multiple_of(16) {
                cancel.check()?;
            }
            let bland = degenerate >= STALL_PIVOTS;
            let entering = if bland {
                self.btran();
                self.price(tol, 0..self.n, true)
            } else {
                self.partial_price(tol)
            };
            let Some(q) = entering else {
                if since_refactor == 0 {
                    return Ok(true);
                }
                // confirm optimality at a fresh basis inverse
                self.refactor(true)?;
                since_refactor = 0;
                continue;
            };
            if *iterations >= max_iter {
                return Ok(false);
            }
            self.ftran(q);
            let Some((r, theta)) = self.ratio_test(bland) else {
                if unbounded_retry {
                    return Err(Error::Solver(
                        "the 1-norm SVM LP found no leaving variable twice in a row (an \
                         ill-conditioned basis)"
                            .into(),
                    ));
                }
                unbounded_retry = true;
                self.refactor(true)?;
                since_refactor = 0;
                continue;
            };
            unbounded_retry = false;
            self.pivot(r, q, theta, true);
            *iterations += 1;
            since_refactor += 1;
            degenerate = if theta <= FEAS_TOL * 1e-3 {
                degenerate + 1
            } else {
                0
            };
            if since_refactor >= REFACTOR_EVERY {
                self.refactor(true)?;
                since_refactor = 0;
            }
            if (*iterations).is_multiple_of(100) {
                report(*iterations, self.basic_objective());
            }
        }
    }

    /// Dual simplex pivots from a dual feasible basis until every basic value is at least
    /// `-FEAS_TOL` (the leaving row: the most negative value; the entering column: the smallest
    /// ratio `d_j / -alpha_rj` over `alpha_rj < 0`, ties to the smallest index), or
    /// `iterations` reaches `max_iter`. Returns whether the basis is primal feasible; the
    /// remaining tiny negatives are set to 0.
    fn dual_cleanup(
        &mut self,
        max_iter: usize,
        iterations: &mut usize,
        cancel: &Cancel,
    ) -> Result<bool> {
        let mut since_refactor = 0;
        loop {
            let (r, xr) = self
                .xb
                .iter()
                .enumerate()
                .fold(
                    (0, f64::INFINITY),
                    |b, (i, &x)| if x < b.1 { (i, x) } else { b },
                );
            if xr >= -FEAS_TOL {
                self.xb.iter_mut().for_each(|x| *x = x.max(0.0));
                return Ok(true);
            }
            if *iterations >= max_iter {
                return Ok(false);
            }
            cancel.check()?;
            self.btran();
            let Some(q) = self.dual_ratio_test(r) else {
                return Err(Error::Solver(
                    "the 1-norm SVM LP found no entering column for a dual pivot (an \
                     ill-conditioned basis)"
                        .into(),
                ));
            };
            self.ftran(q);
            let theta = self.xb[r] / self.d[r];
            self.pivot(r, q, theta, false);
            *iterations += 1;
            since_refactor += 1;
            if since_refactor >= REFACTOR_EVERY {
                self.refactor(false)?;
                since_refactor = 0;
            }
        }
    }

    /// The entering column of a dual pivot on row `r` (after [`Simplex::btran`]): among the
    /// nonbasic columns with `alpha_rj = (B^{-1} a_j)_r < 0`, the smallest `d_j / -alpha_rj`.
    fn dual_ratio_test(&self, r: usize) -> Option<usize> {
        let rho = self.binv.row(r);
        let v: Vec<f64> = rho.iter().zip(self.y).map(|(p, y)| p * y).collect();
        let h = self.x.t().dot(&ndarray::ArrayView1::from(&v));
        let rho_y: f64 = v.iter().sum();
        let bias_rc = -self.y.iter().zip(&self.pi).map(|(y, p)| y * p).sum::<f64>();
        let amax = h.iter().fold(
            rho.iter().fold(rho_y.abs(), |a, v| a.max(v.abs())),
            |a, v| a.max(v.abs()),
        );
        let piv = PIVOT_TOL * amax.max(1.0);
        let mut best: Option<(f64, usize)> = None;
        for j in 0..self.position.len() {
            if self.position[j] != usize::MAX {
                continue;
            }
            let (alpha, rc) = match self.kind(j) {
                Col::Weight(k, sign) => (sign * h[k], 1.0 - sign * self.g[k]),
                Col::Bias(sign) => (sign * rho_y, sign * bias_rc),
                Col::Loss(i) => (rho[i], self.cost[i] - self.pi[i]),
                Col::Surplus(i) => (-rho[i], self.pi[i]),
            };
            if alpha < -piv {
                let ratio = rc.max(0.0) / -alpha;
                if best.is_none_or(|(b, _)| ratio < b) {
                    best = Some((ratio, j));
                }
            }
        }
        best.map(|(_, j)| j)
    }

    fn kind(&self, j: usize) -> Col {
        let n = self.n;
        if j < n {
            Col::Weight(j, 1.0)
        } else if j < 2 * n {
            Col::Weight(j - n, -1.0)
        } else if j == 2 * n {
            Col::Bias(1.0)
        } else if j == 2 * n + 1 {
            Col::Bias(-1.0)
        } else if j < 2 * n + 2 + self.m {
            Col::Loss(j - 2 * n - 2)
        } else {
            Col::Surplus(j - 2 * n - 2 - self.m)
        }
    }

    fn col_cost(&self, j: usize) -> f64 {
        match self.kind(j) {
            Col::Weight(..) => 1.0,
            Col::Bias(_) | Col::Surplus(_) => 0.0,
            Col::Loss(i) => self.cost[i],
        }
    }

    /// Column `a_j` into `out` (dense).
    fn fill_column(&self, j: usize, out: &mut [f64]) {
        match self.kind(j) {
            Col::Weight(k, sign) => {
                for ((o, &y), xi) in out.iter_mut().zip(self.y).zip(self.x.rows()) {
                    *o = sign * y * xi[k];
                }
            }
            Col::Bias(sign) => {
                for (o, &y) in out.iter_mut().zip(self.y) {
                    *o = sign * y;
                }
            }
            Col::Loss(i) | Col::Surplus(i) => {
                out.fill(0.0);
                out[i] = if matches!(self.kind(j), Col::Loss(_)) {
                    1.0
                } else {
                    -1.0
                };
            }
        }
    }

    /// `pi = B^{-T} c_B` and `g = X^T (y * pi)`.
    fn btran(&mut self) {
        self.multipliers();
        self.weight_prices(&self.y_pi(), 0..self.n);
    }

    /// `y * pi`, the weights of the pricing pass.
    fn y_pi(&self) -> Vec<f64> {
        self.pi.iter().zip(self.y).map(|(p, y)| p * y).collect()
    }

    /// `pi = B^{-T} c_B`.
    fn multipliers(&mut self) {
        self.pi.fill(0.0);
        for (i, &j) in self.basis.iter().enumerate() {
            let c = self.col_cost(j);
            if c != 0.0 {
                for (p, &v) in self.pi.iter_mut().zip(self.binv.row(i)) {
                    *p += c * v;
                }
            }
        }
    }

    /// `g_k = (X^T (y * pi))_k` for the concepts `k` of `range`, with `v = y * pi`.
    fn weight_prices(&mut self, v: &[f64], range: std::ops::Range<usize>) {
        let x = self.x;
        let start = range.start;
        self.g[range]
            .par_chunks_mut(PRICE_CHUNK)
            .enumerate()
            .for_each(|(c, gc)| {
                let k0 = start + c * PRICE_CHUNK;
                gc.fill(0.0);
                let cols = k0..k0 + gc.len();
                for (xi, &vi) in x.rows().into_iter().zip(v) {
                    if vi == 0.0 {
                        continue;
                    }
                    // contiguous rows as plain slices (the loop vectorises), others by view
                    match xi.as_slice() {
                        Some(row) => {
                            for (o, &e) in gc.iter_mut().zip(&row[cols.clone()]) {
                                *o += vi * e;
                            }
                        }
                        None => {
                            let row = xi.slice(ndarray::s![cols.clone()]);
                            for (o, &e) in gc.iter_mut().zip(row) {
                                *o += vi * e;
                            }
                        }
                    }
                }
            });
    }

    /// The partial pricing of the module docs: after `pi`, the sections from the cursor on
    /// until one holds an entering column (the cursor then moves to the next section), or
    /// `None` when a whole round holds none.
    fn partial_price(&mut self, tol: f64) -> Option<usize> {
        self.multipliers();
        let v = self.y_pi();
        let n_sections = self.n.div_ceil(self.section).max(1);
        for turn in 0..n_sections {
            let s = (self.cursor + turn) % n_sections;
            let range = s * self.section..((s + 1) * self.section).min(self.n);
            self.weight_prices(&v, range.clone());
            if let Some(q) = self.price(tol, range, false) {
                self.cursor = (s + 1) % n_sections;
                return Some(q);
            }
        }
        None
    }

    /// The entering column among the weight columns of the concepts `weights` (whose `g` is
    /// current) and every other column: the most negative reduced cost below
    /// `-tol (1 + |c_j|)` (Dantzig; ties to the smallest index), or with `bland` the smallest
    /// such index. `None`: none there.
    fn price(&self, tol: f64, weights: std::ops::Range<usize>, bland: bool) -> Option<usize> {
        let n = self.n;
        let n_cols = self.position.len();
        let bias_rc = -self.y.iter().zip(&self.pi).map(|(y, p)| y * p).sum::<f64>();
        let rc = |j: usize| -> f64 {
            match self.kind(j) {
                Col::Weight(k, sign) => 1.0 - sign * self.g[k],
                Col::Bias(sign) => sign * bias_rc,
                Col::Loss(i) => self.cost[i] - self.pi[i],
                Col::Surplus(i) => self.pi[i],
            }
        };
        let attractive = |j: usize| -> Option<f64> {
            if self.position[j] != usize::MAX {
                return None;
            }
            let r = rc(j);
            (r < -tol * (1.0 + self.col_cost(j).abs())).then_some(r)
        };
        // the candidates in column order: u_k and v_k of the section, then the other columns
        let (u, v) = (weights.clone(), weights.start + n..weights.end + n);
        if bland {
            return u
                .chain(v)
                .chain(2 * n..n_cols)
                .find(|&j| attractive(j).is_some());
        }
        // per chunk the best (value, index), then the chunks in order: the same choice for
        // every thread count
        let best = u
            .into_par_iter()
            .chain(v)
            .chain(2 * n..n_cols)
            .with_min_len(PRICE_CHUNK)
            .filter_map(|j| attractive(j).map(|r| (r, j)))
            .reduce_with(|a, b| {
                if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                    b
                } else {
                    a
                }
            });
        best.map(|(_, j)| j)
    }

    /// `d = B^{-1} a_q`.
    fn ftran(&mut self, q: usize) {
        match self.kind(q) {
            Col::Loss(i) | Col::Surplus(i) => {
                let sign = if matches!(self.kind(q), Col::Loss(_)) {
                    1.0
                } else {
                    -1.0
                };
                for (o, row) in self.d.iter_mut().zip(self.binv.rows()) {
                    *o = sign * row[i];
                }
            }
            _ => {
                let mut column = std::mem::take(&mut self.column);
                self.fill_column(q, &mut column);
                let binv = &self.binv;
                let dot = |(o, row): (&mut f64, ndarray::ArrayView1<'_, f64>)| {
                    *o = row.iter().zip(&column).map(|(a, b)| a * b).sum();
                };
                if self.m >= PARALLEL_ROWS {
                    self.d
                        .par_iter_mut()
                        .zip(binv.axis_iter(ndarray::Axis(0)).into_par_iter())
                        .for_each(dot);
                } else {
                    self.d.iter_mut().zip(binv.rows()).for_each(dot);
                }
                self.column = column;
            }
        }
    }

    /// Harris's two-pass ratio test on `d`: the leaving position and the step, or `None` when
    /// no entry of `d` is a safe pivot. With `bland`, the smallest ratio, ties to the smallest
    /// leaving column index.
    fn ratio_test(&self, bland: bool) -> Option<(usize, f64)> {
        let dmax = self.d.iter().fold(0.0_f64, |a, v| a.max(v.abs()));
        let piv = PIVOT_TOL * dmax.max(1.0);
        if bland {
            let mut best: Option<(usize, f64)> = None;
            for (i, (&d, &x)) in self.d.iter().zip(&self.xb).enumerate() {
                if d > piv {
                    let t = x.max(0.0) / d;
                    best = match best {
                        Some((r, tr)) if t > tr || (t == tr && self.basis[i] > self.basis[r]) => {
                            Some((r, tr))
                        }
                        _ => Some((i, t)),
                    };
                }
            }
            return best;
        }
        let mut bound = f64::INFINITY;
        for (&d, &x) in self.d.iter().zip(&self.xb) {
            if d > piv {
                bound = bound.min((x.max(0.0) + FEAS_TOL) / d);
            }
        }
        if !bound.is_finite() {
            return None;
        }
        let mut best: Option<usize> = None;
        for (i, (&d, &x)) in self.d.iter().zip(&self.xb).enumerate() {
            if d > piv && x.max(0.0) / d <= bound && best.is_none_or(|r| d > self.d[r]) {
                best = Some(i);
            }
        }
        best.map(|r| (r, self.xb[r].max(0.0) / self.d[r]))
    }

    /// Column `q` enters at position `r` with step `theta`; with `clamp` (the primal phase) the
    /// basic values stay `>= 0`.
    fn pivot(&mut self, r: usize, q: usize, theta: f64, clamp: bool) {
        for (x, &d) in self.xb.iter_mut().zip(&self.d) {
            *x -= theta * d;
            if clamp {
                *x = x.max(0.0);
            }
        }
        self.xb[r] = theta;
        let leaving = self.basis[r];
        self.position[leaving] = usize::MAX;
        self.basis[r] = q;
        self.position[q] = r;
        let dr = self.d[r];
        let mut row_r = self.binv.row(r).to_owned();
        row_r.mapv_inplace(|v| v / dr);
        let d = &self.d;
        let update = |(i, mut row): (usize, ndarray::ArrayViewMut1<'_, f64>)| {
            if i == r {
                row.assign(&row_r);
            } else if d[i] != 0.0 {
                row.scaled_add(-d[i], &row_r);
            }
        };
        if self.m >= PARALLEL_ROWS {
            self.binv
                .axis_iter_mut(ndarray::Axis(0))
                .into_par_iter()
                .enumerate()
                .for_each(update);
        } else {
            self.binv
                .axis_iter_mut(ndarray::Axis(0))
                .enumerate()
                .for_each(update);
        }
    }

    /// Recomputes the basis inverse by faer's LU with partial pivoting and the basic values
    /// `x_B = B^{-1} rhs` (with `clamp`, negative values set to 0).
    fn refactor(&mut self, clamp: bool) -> Result<()> {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::lu::partial_pivoting::{factor, inverse};
        let m = self.m;
        // B column-major: column i is a_{basis[i]}
        let mut b = vec![0.0; m * m];
        let mut column = std::mem::take(&mut self.column);
        for (i, &j) in self.basis.iter().enumerate() {
            self.fill_column(j, &mut column);
            b[i * m..(i + 1) * m].copy_from_slice(&column);
        }
        self.column = column;
        let par = faer::Par::Seq;
        let mut lu = faer::MatMut::from_column_major_slice_mut(&mut b, m, m);
        let mut perm = vec![0usize; m];
        let mut perm_inv = vec![0usize; m];
        let mut mem = MemBuffer::new(
            factor::lu_in_place_scratch::<usize, f64>(m, m, par, Default::default())
                .or(inverse::inverse_scratch::<usize, f64>(m, par)),
        );
        let (_, p) = factor::lu_in_place(
            lu.as_mut(),
            &mut perm,
            &mut perm_inv,
            par,
            MemStack::new(&mut mem),
            Default::default(),
        );
        // the inverse, column-major, is the transpose of the row-major B^{-1}
        let mut inv = vec![0.0; m * m];
        inverse::inverse(
            faer::MatMut::from_column_major_slice_mut(&mut inv, m, m),
            lu.as_ref(),
            lu.as_ref(),
            p,
            par,
            MemStack::new(&mut mem),
        );
        if inv.iter().any(|v| !v.is_finite()) {
            return Err(Error::Solver(
                "the simplex basis of the 1-norm SVM became singular".into(),
            ));
        }
        for (i, mut row) in self.binv.rows_mut().into_iter().enumerate() {
            for (k, o) in row.iter_mut().enumerate() {
                *o = inv[k * m + i];
            }
        }
        for (x, row) in self.xb.iter_mut().zip(self.binv.rows()) {
            let v: f64 = row.iter().zip(&self.rhs).map(|(a, b)| a * b).sum();
            *x = if clamp { v.max(0.0) } else { v };
        }
        Ok(())
    }

    /// `c_B . x_B`.
    fn basic_objective(&self) -> f64 {
        self.basis
            .iter()
            .zip(&self.xb)
            .map(|(&j, &x)| self.col_cost(j) * x)
            .sum()
    }

    /// `(w, b)` of the basis, the objective evaluated at them, and the multipliers.
    fn solution(&self, iterations: usize, converged: bool) -> L1SvmSolution {
        let mut w = vec![0.0; self.n];
        let mut b = 0.0;
        for (&j, &x) in self.basis.iter().zip(&self.xb) {
            match self.kind(j) {
                Col::Weight(k, sign) => w[k] += sign * x,
                Col::Bias(sign) => b += sign * x,
                Col::Loss(_) | Col::Surplus(_) => {}
            }
        }
        let objective = l1_svm_objective(self.x, self.y, self.cost, &w, b);
        L1SvmSolution {
            w,
            b,
            objective,
            dual: self.pi.clone(),
            iterations,
            converged,
        }
    }
}

/// `sum_k |w_k| + sum_i c_i max(0, 1 - y_i (x_i . w + b))`: the objective of [`solve_l1_svm`].
pub fn l1_svm_objective(x: ArrayView2<'_, f64>, y: &[f64], cost: &[f64], w: &[f64], b: f64) -> f64 {
    let nz: Vec<(usize, f64)> = w
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 0.0)
        .map(|(k, &v)| (k, v))
        .collect();
    let loss: f64 = x
        .rows()
        .into_iter()
        .zip(y)
        .zip(cost)
        .map(|((xi, &yi), &ci)| {
            let f: f64 = nz.iter().map(|&(k, v)| v * xi[k]).sum::<f64>() + b;
            ci * (1.0 - yi * f).max(0.0)
        })
        .sum();
    nz.iter().map(|(_, v)| v.abs()).sum::<f64>() + loss
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dual clean-up: from the optimal basis of one right-hand side, moved to another (its
    /// basic values turn negative, the basis stays dual feasible), dual pivots then the primal
    /// test reach the optimum that the primal method finds from the slack basis of the new
    /// right-hand side.
    #[test]
    fn the_dual_cleanup_reaches_the_optimum_of_a_new_right_hand_side() -> Result<()> {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let cancel = Cancel::default();
        let mut cleaned = 0;
        for case in 0..60 {
            let (m, n) = (6 + case % 9, 3 + case % 7);
            let x = Array2::from_shape_fn((m, n), |_| next());
            let y: Vec<f64> = (0..m)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let cost = vec![1.0 + (case % 4) as f64; m];
            let rhs: Vec<f64> = (0..m).map(|_| 0.2 + 2.0 * next()).collect();
            let p = L1SvmProblem {
                x: x.view(),
                y: &y,
                cost: &cost,
            };
            let mut warm = Simplex::new(&p);
            let mut it = 0;
            assert!(warm.primal(1e-9, 10_000, &mut it, &cancel, &mut |_, _| {})?);
            warm.rhs.copy_from_slice(&rhs);
            warm.refactor(false)?;
            if warm.xb.iter().any(|&v| v < -FEAS_TOL) {
                cleaned += 1;
            }
            let before = it;
            assert!(warm.dual_cleanup(10_000, &mut it, &cancel)?);
            assert!(warm.xb.iter().all(|&v| v >= 0.0));
            assert!(warm.primal(1e-9, 10_000, &mut it, &cancel, &mut |_, _| {})?);
            let mut cold = Simplex::new(&p);
            cold.rhs.copy_from_slice(&rhs);
            cold.xb.copy_from_slice(&rhs);
            let mut it2 = 0;
            assert!(cold.primal(1e-9, 10_000, &mut it2, &cancel, &mut |_, _| {})?);
            let (a, b) = (warm.basic_objective(), cold.basic_objective());
            assert!(
                (a - b).abs() <= 1e-9 * (1.0 + b),
                "case {case}: clean-up {a} ({} pivots) vs cold {b}",
                it - before
            );
        }
        assert!(
            cleaned > 10,
            "only {cleaned} cases needed the dual clean-up"
        );
        Ok(())
    }
}
