//! The hinge-loss SVM of the linear kernel over points that are weighted combinations of
//! instance rows, with the weight vector kept explicitly and the bias unpenalised:
//!
//! `min_{w, b} 1/2 |w|^2 + sum_u U_u max(0, p_u - y_u (w . z_u + b))`, `z_u = sum_t c_ut x_t`,
//!
//! the linear-kernel form of the hinge duals that sMIL (a unit is a positive bag's mean or one
//! negative instance, `p_u = (2 - n) / n` for a positive bag; Bunescu & Mooney 2007, eq. 8-9)
//! and SVM-CC (a positive bag's convex combination `sum_t v_t x_t` or one negative instance;
//! Yang & Deng, Algorithm 1) solve with the SMO. Each pass costs `O(nnz)` of the instances,
//! whatever the number of points, where the SMO over the same points needs kernel rows of
//! `O(n_points d)` each.
//!
//! **Solver.** The dual `min_a 1/2 a^T Q a - p^T a`, `0 <= a_u <= U_u`, `y^T a = 0`,
//! `Q_uv = y_u y_v z_u . z_v`, by the method of multipliers on its equality constraint
//! (Hestenes 1969, Powell 1969; Bertsekas, "Constrained optimization and Lagrange multiplier
//! methods", 1982): each round minimises the augmented Lagrangian
//! `1/2 a^T Q a - p^T a + b0 y^T a + rho/2 (y^T a)^2` over the box, then moves the multiplier,
//! `b0 += rho y^T a`, until `|y^T a| <= tol max_u U_u`. With `rho = B^2` the augmented term is a
//! constant feature of value `B` in every point (LIBLINEAR's bias feature, whose weight is
//! `w_b = B y^T a`), so each round is the bias-free dual of points `(z_u, B)` with margins
//! shifted by `b0`, solved by dual coordinate descent with `(w, w_b)` kept explicitly (Hsieh,
//! Chang, Lin, Keerthi & Sundararajan, "A dual coordinate descent method for large-scale linear
//! SVM", ICML 2008, Algorithm 1, with the shrinking of their section 3): one coordinate at a
//! time, the exact minimiser along it, `w` updated by `O(nnz(z_u))`, the points in a seeded
//! random order each pass, stopped when the spread of the projected gradients falls below
//! `tol`. Every round is warm-started from the last. At the end the bias is set to the exact
//! minimiser of the loss for the final `w` ([`super::hinge_bias`], a weighted median of the
//! points' breakpoints; it equals `b0 + B w_b` up to the tolerance). The penalised problem alone
//! (LIBLINEAR's `-B`) would pull `b` towards 0 (measured: 22 % above the optimum at `C = 0.1`);
//! two simpler exact schemes were tried and not kept: coordinate descent at a fixed `b` with the
//! bias found as the root of `y^T a` stalls near the optimum, where many points sit on their
//! margins and the fixed-`b` dual is degenerate (thousands of passes per bias on sMIL-like
//! problems). The multipliers keep the quadratic term, which removes that degeneracy.
//!
//! **Squared hinge.** With [`HingeLoss::Squared`] the loss is `U_u max(0, p_u - y_u f_u)^2`
//! (the annealing family's, [`super::linear::LinearSquaredHinge`], when every point is one
//! instance and target): the dual gains the diagonal `1/(2 U_u)` and loses the upper bound
//! (LIBLINEAR's L2-loss dual, Hsieh et al. 2008, section 2), the same descent otherwise; the
//! final bias is the exact minimiser of the piecewise-quadratic loss. The crate fits the
//! annealing family with Newton-CG, not with this; the descent is kept for the comparison in
//! `benches/linear_solvers.rs` (benches/RESULTS.md, "Deep-feature scale").
//!
//! Deterministic: the order of the coordinates comes from a fixed seed, and every sum runs in
//! a fixed order (the descent is sequential, as LIBLINEAR's).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::rows::RowsRef;
use crate::bags::Instances;
use crate::error::{invalid_data, Result};
use crate::linalg::Simd;
use crate::progress::Cancel;

/// Seed of the coordinate order (fixed: the solver is deterministic).
const ORDER_SEED: u64 = 0x5eed_d0a1;

/// `B`: the square root of the augmented Lagrangian's penalty `rho = B^2` on `sum_u a_u y_u`
/// (a constant feature of value `B` in the points).
pub const BIAS_FEATURE: f64 = 1.0;
/// Cap on the rounds of the method of multipliers.
const MAX_ROUNDS: usize = 200;

/// The loss of a point's margin violation `v = max(0, p_u - y_u f_u)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HingeLoss {
    /// `U_u v` (sMIL, SVM-CC).
    #[default]
    Hinge,
    /// `U_u v^2` (the annealing family's loss).
    Squared,
}

/// The problem: instance rows, the points as weighted combinations of them, and per point its
/// label, margin target and cost.
#[derive(Debug, Clone, Copy)]
pub struct LinearHinge<'a> {
    /// Instance rows (dense `f64` / `f32` or CSR).
    pub x: &'a Instances,
    /// Point `u` is `sum (t, c) in points[u]` of `c x_t`.
    pub points: &'a [Vec<(usize, f64)>],
    /// Label `y_u` in {-1, +1}.
    pub y: &'a [f64],
    /// Margin target `p_u` (1 for a plain SVM).
    pub p: &'a [f64],
    /// Cost `U_u >= 0` (the dual's upper bound for the hinge).
    pub u: &'a [f64],
    /// The loss.
    pub loss: HingeLoss,
}

/// A solution of [`LinearHinge`].
#[derive(Debug, Clone, PartialEq)]
pub struct LinearHingeSolution {
    /// `w = sum_u a_u y_u z_u` (`n_features`).
    pub w: Vec<f64>,
    /// The bias: the exact minimiser of the loss for `w`.
    pub b: f64,
    /// The dual variables `a_u` in `[0, U_u]` (`y^T a = 0` up to the tolerance).
    pub alpha: Vec<f64>,
    /// The objective `1/2 |w|^2 + loss(w, b)`.
    pub primal_objective: f64,
    /// The dual objective `1/2 |w|^2 + 1/2 sum_u a_u^2 / (2 U_u) - p^T a` (the second term for
    /// the squared hinge only; the SMO's, at `y^T a = 0`).
    pub dual_objective: f64,
    /// Coordinate-descent passes over the points.
    pub passes: usize,
    /// Whether the last descent met `tol` within `max_passes` and `|y^T a|` its tolerance.
    pub converged: bool,
}

/// The state of the descent: `a`, `w` and the bias feature's weight `w_b`.
struct Descent<'a> {
    rows: RowsRef<'a>,
    problem: LinearHinge<'a>,
    simd: Simd,
    /// `|z_u|^2 + B^2 + D_u`.
    qd: Vec<f64>,
    /// The dual's diagonal `D_u` (`1 / (2 U_u)` for the squared hinge, else 0).
    diag: Vec<f64>,
    /// The dual's upper bound (`U_u` for the hinge; infinite for the squared hinge, 0 where
    /// `U_u = 0`).
    upper: Vec<f64>,
    alpha: Vec<f64>,
    w: Vec<f64>,
    /// The bias feature's weight: `w_b = B sum_u a_u y_u`.
    w_b: f64,
    /// The multiplier of `sum_u a_u y_u = 0` (the fixed part of the bias).
    b0: f64,
    order: Vec<usize>,
    rng: ChaCha8Rng,
    passes: usize,
}

impl Descent<'_> {
    /// `w . z_u`.
    fn point_dot(&self, u: usize) -> f64 {
        self.problem.points[u]
            .iter()
            .map(|&(t, c)| c * self.rows.row_dot(t, &self.w, self.simd))
            .sum()
    }

    /// The bias of the scores: the multiplier plus the bias feature's part,
    /// `b0 + B w_b = b0 + B^2 sum_u a_u y_u`.
    fn bias(&self) -> f64 {
        self.b0 + BIAS_FEATURE * self.w_b
    }

    /// `(w, w_b) += s (z_u, B)`.
    fn add_point(&mut self, u: usize, s: f64) {
        for &(t, c) in &self.problem.points[u] {
            self.rows.add_row(t, s * c, &mut self.w, self.simd);
        }
        self.w_b += s * BIAS_FEATURE;
    }

    /// Dual coordinate descent from the current `a` (LIBLINEAR's L1-loss dual solver, with
    /// its shrinking) until the projected gradients spread by at most `tol`, or `max_passes`.
    /// Returns whether `tol` was met.
    fn run(&mut self, tol: f64, max_passes: usize, cancel: &Cancel) -> Result<bool> {
        let (upper, diag) = (
            std::mem::take(&mut self.upper),
            std::mem::take(&mut self.diag),
        );
        let out = self.descend(&upper, &diag, tol, max_passes, cancel);
        (self.upper, self.diag) = (upper, diag);
        out
    }

    /// [`Self::run`] with the bounds and the diagonal borrowed apart from the state.
    fn descend(
        &mut self,
        ub: &[f64],
        diag: &[f64],
        tol: f64,
        max_passes: usize,
        cancel: &Cancel,
    ) -> Result<bool> {
        let (y, p) = (self.problem.y, self.problem.p);
        self.order.clear();
        self.order.extend(0..self.alpha.len());
        let total = self.order.len();
        let mut active = total;
        let (mut pg_max_old, mut pg_min_old) = (f64::INFINITY, f64::NEG_INFINITY);
        for _ in 0..max_passes {
            cancel.check()?;
            self.passes += 1;
            self.order[..active].shuffle(&mut self.rng);
            let (mut pg_max, mut pg_min) = (f64::NEG_INFINITY, f64::INFINITY);
            let mut s = 0;
            while s < active {
                let u = self.order[s];
                let a = self.alpha[u];
                let g = y[u] * (self.point_dot(u) + self.bias()) - p[u] + diag[u] * a;
                if (a == 0.0 && g > pg_max_old) || (a >= ub[u] && g < pg_min_old) {
                    // shrunk: at a bound with a gradient pushing it there
                    active -= 1;
                    self.order.swap(s, active);
                    continue;
                }
                let pg = if a == 0.0 {
                    g.min(0.0)
                } else if a >= ub[u] {
                    g.max(0.0)
                } else {
                    g
                };
                pg_max = pg_max.max(pg);
                pg_min = pg_min.min(pg);
                if pg.abs() > 1e-12 {
                    let new = (a - g / self.qd[u]).clamp(0.0, ub[u]);
                    if new != a {
                        self.alpha[u] = new;
                        self.add_point(u, (new - a) * y[u]);
                    }
                }
                s += 1;
            }
            if pg_max - pg_min <= tol || active == 0 {
                if active == total {
                    return Ok(true);
                }
                // converged on the shrunk set: check every point once more
                active = total;
                pg_max_old = f64::INFINITY;
                pg_min_old = f64::NEG_INFINITY;
                continue;
            }
            pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
            pg_min_old = if pg_min >= 0.0 {
                f64::NEG_INFINITY
            } else {
                pg_min
            };
        }
        Ok(false)
    }
}

/// `x_t . w` for every row of `x` (rows in parallel, each on its own: the same bits for any
/// thread count).
pub fn row_scores(x: &Instances, w: &[f64]) -> Vec<f64> {
    let rows = RowsRef::new(x);
    let mut out = vec![0.0; x.n_rows()];
    super::rows::x_dot(rows, w, Simd::detect(), &mut out);
    out
}

impl<'a> LinearHinge<'a> {
    /// Checks the lengths and values: one label, target and cost per point, labels in
    /// {-1, +1}, costs finite and `>= 0`, instance indices in range.
    fn check(&self) -> Result<()> {
        let m = self.points.len();
        if self.y.len() != m || self.p.len() != m || self.u.len() != m {
            return Err(invalid_data(format!(
                "{m} points with {} labels, {} targets and {} costs",
                self.y.len(),
                self.p.len(),
                self.u.len()
            )));
        }
        if self.y.iter().any(|&v| v != 1.0 && v != -1.0) {
            return Err(invalid_data("point labels must be -1 or +1"));
        }
        if self.u.iter().any(|&c| !(c.is_finite() && c >= 0.0)) {
            return Err(invalid_data("point costs must be finite and >= 0"));
        }
        if self.p.iter().any(|v| !v.is_finite()) {
            return Err(invalid_data("point margin targets must be finite"));
        }
        let n = self.x.n_rows();
        if let Some(&(t, _)) = self.points.iter().flatten().find(|&&(t, _)| t >= n) {
            return Err(invalid_data(format!(
                "a point uses instance {t}, there are {n}"
            )));
        }
        Ok(())
    }

    /// The exact minimiser over `b` of `sum_u U_u max(0, p_u - y_u (s_u + b))` for the scores
    /// `s_u = w . z_u` ([`super::hinge_bias`] with the margin targets folded into the scores).
    pub fn best_bias(&self, scores: &[f64]) -> f64 {
        let (mut sp, mut cp, mut sn, mut cn) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (((&s, &y), &p), &c) in scores.iter().zip(self.y).zip(self.p).zip(self.u) {
            if y > 0.0 {
                sp.push(s - (p - 1.0));
                cp.push(c);
            } else {
                sn.push(s + (p - 1.0));
                cn.push(c);
            }
        }
        super::hinge_bias(&sp, &cp, &sn, &cn)
    }

    /// The exact minimiser over `b` of `sum_u U_u max(0, p_u - y_u (s_u + b))^2` for the scores
    /// `s_u = w . z_u`, from `start`: the derivative is increasing and piecewise linear in `b`,
    /// so Newton's method on it, safeguarded by bisection inside a bracket of its sign change,
    /// ends on the exact root in a few steps.
    fn best_squared_bias(&self, scores: &[f64], start: f64) -> f64 {
        // derivative and generalised second derivative at b (both halved)
        let slope = |b: f64| {
            let (mut g, mut h) = (0.0, 0.0);
            for (((&s, &y), &p), &c) in scores.iter().zip(self.y).zip(self.p).zip(self.u) {
                let v = p - y * (s + b);
                if v > 0.0 && c > 0.0 {
                    g -= c * y * v;
                    h += c;
                }
            }
            (g, h)
        };
        let (mut lo, mut hi) = (start - 1.0, start + 1.0);
        while slope(lo).0 > 0.0 && lo.is_finite() {
            lo = start - 2.0 * (start - lo);
        }
        while slope(hi).0 < 0.0 && hi.is_finite() {
            hi = start + 2.0 * (hi - start);
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return start;
        }
        let mut b = start.clamp(lo, hi);
        for _ in 0..200 {
            let (g, h) = slope(b);
            if g == 0.0 {
                return b;
            }
            if g > 0.0 {
                hi = b;
            } else {
                lo = b;
            }
            let newton = b - g / h;
            let next = if h > 0.0 && newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
            if next == b || hi - lo <= f64::EPSILON * b.abs().max(1.0) {
                return next;
            }
            b = next;
        }
        b
    }

    /// Solves to the projected-gradient spread `tol` (at most `max_passes` passes per round of
    /// the multipliers) and `|y^T a| <= tol max_u U_u`, then refits the bias exactly for the
    /// final `w`; `warm` starts from a previous solution's `a` and `b` (same points). Checks
    /// `cancel` every pass.
    pub fn solve(
        &self,
        warm: Option<(&[f64], f64)>,
        tol: f64,
        max_passes: usize,
        cancel: &Cancel,
    ) -> Result<LinearHingeSolution> {
        self.check()?;
        let rows = RowsRef::new(self.x);
        let simd = Simd::detect();
        let d = self.x.n_features();
        let m = self.points.len();
        let mut state = Descent {
            rows,
            problem: *self,
            simd,
            qd: Vec::with_capacity(m),
            diag: self
                .u
                .iter()
                .map(|&c| match self.loss {
                    HingeLoss::Squared if c > 0.0 => 0.5 / c,
                    _ => 0.0,
                })
                .collect(),
            upper: self
                .u
                .iter()
                .map(|&c| match self.loss {
                    HingeLoss::Squared if c > 0.0 => f64::INFINITY,
                    _ => c,
                })
                .collect(),
            alpha: vec![0.0; m],
            w: vec![0.0; d],
            w_b: 0.0,
            b0: 0.0,
            order: Vec::with_capacity(m),
            rng: ChaCha8Rng::seed_from_u64(ORDER_SEED),
            passes: 0,
        };
        // |z_u|^2 + B^2, forming each point once
        let mut z = vec![0.0; d];
        for (pt, &d_u) in self.points.iter().zip(&state.diag) {
            z.iter_mut().for_each(|v| *v = 0.0);
            for &(t, c) in pt {
                rows.add_row(t, c, &mut z, simd);
            }
            state
                .qd
                .push(simd.dot(&z, &z) + BIAS_FEATURE * BIAS_FEATURE + d_u);
        }
        if let Some((a0, b0)) = warm.filter(|(a, _)| a.len() == m) {
            state.b0 = b0;
            for (u, &a0u) in a0.iter().enumerate() {
                let a = a0u.clamp(0.0, state.upper[u]);
                if a > 0.0 {
                    state.alpha[u] = a;
                    state.add_point(u, a * self.y[u]);
                }
            }
        }
        // The method of multipliers on `sum_u a_u y_u = 0` (see the module docs): each round a
        // descent warm-started from the last, then the multiplier moves by the penalty times the
        // constraint's residual, `b0 += B^2 sum a y`.
        // the residual's scale: the largest cost, or for the squared hinge the largest `a_u`
        // a point can reach at `w = 0` (`2 U_u p_u`)
        let umax = match self.loss {
            HingeLoss::Hinge => self.u.iter().fold(0.0f64, |a, &c| a.max(c)),
            HingeLoss::Squared => self
                .u
                .iter()
                .zip(self.p)
                .fold(0.0f64, |a, (&c, &p)| a.max(2.0 * c * p.abs().max(1.0))),
        };
        let mut converged = false;
        for _ in 0..MAX_ROUNDS {
            let inner = state.run(tol, max_passes, cancel)?;
            let residual = state.w_b / BIAS_FEATURE;
            if residual.abs() <= tol * umax.max(f64::MIN_POSITIVE) {
                converged = inner;
                break;
            }
            state.b0 += BIAS_FEATURE * state.w_b;
        }
        let scores: Vec<f64> = (0..m).map(|u| state.point_dot(u)).collect();
        let b = match self.loss {
            HingeLoss::Hinge => self.best_bias(&scores),
            HingeLoss::Squared => self.best_squared_bias(&scores, state.bias()),
        };
        let w2 = simd.dot(&state.w, &state.w);
        let loss: f64 = (0..m)
            .map(|u| {
                let v = (self.p[u] - self.y[u] * (scores[u] + b)).max(0.0);
                match self.loss {
                    HingeLoss::Hinge => self.u[u] * v,
                    HingeLoss::Squared => self.u[u] * v * v,
                }
            })
            .sum();
        let pa: f64 = state.alpha.iter().zip(self.p).map(|(a, p)| a * p).sum();
        let da: f64 = (state.alpha.iter().zip(&state.diag))
            .map(|(a, d)| d * a * a)
            .sum();
        Ok(LinearHingeSolution {
            primal_objective: 0.5 * w2 + loss,
            dual_objective: 0.5 * w2 + 0.5 * da - pa,
            passes: state.passes,
            converged,
            b,
            alpha: state.alpha,
            w: state.w,
        })
    }
}
