//! The primal squared-hinge problem over a fixed basis, and its two solvers.
//!
//! Every inner problem of the library has the form (ALGORITHMS.md sections 2-3)
//!
//! `J(beta, b) = 1/2 beta^T K beta + sum_r [c_r max(0, 1 - y_r f_r)^2 + o_r max(0, 1 + y_r f_r)^2]`,
//! `f_r = x_r . beta + b`,
//!
//! with `K` the (ridged) kernel matrix of the basis, one design row `x_r` per loss term
//! (bag means `M` for the label-mean SVM, instance kernel rows for the annealing methods),
//! targets `y_r` in {-1, +1} and non-negative costs `c_r` (`C` times a weight, so weighted
//! instance-level losses use the same code). The optional costs `o_r` of the opposite target
//! make a row's loss the expected loss over an uncertain label: AL-SVM's
//! `C [p l(+1, f) + (1 - p) l(-1, f)]` (Gehler & Chapelle 2007, eq. 4) is the row
//! `y = +1, c = C p, o = C (1 - p)`. Two solvers minimise it:
//!
//! * [`InnerSolver::Newton`]: exact primal Newton with the set of violated rows as active set
//!   and an exact line search on the piecewise-quadratic objective (Chapelle 2007; the method of
//!   LIBLINEAR's L2-loss SVM); it ends in a few iterations with the exact minimiser.
//! * [`InnerSolver::Lbfgs`]: argmin's L-BFGS with a More-Thuente line search, stopped when the
//!   gradient norm falls below `tol` times its initial value.
//!
//! Besides: [`linear`], the same loss over `w` in `R^d` for the linear kernel, and [`l1_svm`],
//! the 1-norm SVM (hinge loss, `|w|_1` penalty) of MILES as a linear program, by the revised
//! simplex method.

pub mod l1_svm;
pub mod linear;
pub mod linear_hinge;
mod rows;

use std::cell::{Cell, RefCell};

use argmin::core::{CostFunction, Executor, Gradient, State, TerminationReason};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

use crate::error::{Error, Result};
use crate::kernel::mat_vec;
use crate::linalg::{faer_mut, faer_ref};

crate::choice::choices! {
    /// Which algorithm solves the inner squared-hinge problem.
    pub enum InnerSolver {
        /// Exact primal Newton with active set (default: measured faster, same solution).
        Newton = "newton",
        /// argmin's L-BFGS.
        Lbfgs = "lbfgs",
    }
}

impl InnerSolver {
    /// The default relative gradient tolerance: Newton reaches the exact minimiser, so it can
    /// ask for 1e-10; L-BFGS stalls near 1e-9, where cost differences fall below rounding.
    pub fn default_tol(&self) -> f64 {
        match self {
            InnerSolver::Newton => 1e-10,
            InnerSolver::Lbfgs => 1e-8,
        }
    }
}

/// One squared-hinge problem: `K` (`n x n`), design `X` (`rows x n`), targets and costs.
#[derive(Debug, Clone, Copy)]
pub struct SquaredHinge<'a> {
    /// Regulariser matrix (`n x n`, symmetric positive semi-definite, ridge included).
    pub k: ArrayView2<'a, f64>,
    /// Design rows (`rows x n`).
    pub x: ArrayView2<'a, f64>,
    /// Targets in {-1, +1}, one per row.
    pub y: &'a [f64],
    /// Costs `c_r >= 0`, one per row.
    pub c: &'a [f64],
    /// Costs `o_r >= 0` of the opposite target `-y_r`, one per row, or empty (no such term).
    pub c_opp: &'a [f64],
}

/// Rank updates of a [`NewtonHessian`] before it is formed anew.
const MAX_HESSIAN_UPDATES: usize = 64;

/// The Newton Hessian of a [`SquaredHinge`] problem with the per-row second derivatives it was
/// formed with, and the scores where the last solve ended, kept between solves that share `k`
/// and `x` ([`SquaredHinge::solve_newton_reusing`]).
#[derive(Debug, Clone)]
pub struct NewtonHessian {
    h: Array2<f64>,
    /// The Cholesky factor of `h` (a Newton step whose rows kept their curvature reuses it).
    chol: Cholesky,
    d2: Vec<f64>,
    /// Rank updates since the last full product.
    updates: usize,
    /// The loss derivatives at `(beta, b) = 0` and the gradient there (`X^T dl`, `sum dl`): the
    /// scale of the stopping rule, updated by the rows whose derivative changed.
    zero: Option<(Vec<f64>, Array1<f64>, f64)>,
    /// `(beta, b, f)`: the end of the last solve and its scores `f = X beta + b` (as carried
    /// along the Newton steps), so that a solve warm-started there and a caller asking for
    /// the scores there need no product with `X`.
    last: Option<(Array1<f64>, f64, Array1<f64>)>,
}

impl NewtonHessian {
    fn new(h: Array2<f64>, d2: Vec<f64>, updates: usize) -> Result<Self> {
        Ok(Self {
            chol: Cholesky::factor(&h)?,
            h,
            d2,
            updates,
            zero: None,
            last: None,
        })
    }

    /// The norm of the gradient at `(beta, b) = 0` of the last solve's problem (the scale of its
    /// stopping rule), as kept for the next solve.
    pub fn zero_gradient_norm(&self) -> Option<f64> {
        let (_, gbeta, gb) = self.zero.as_ref()?;
        Some((gbeta.dot(gbeta) + gb * gb).sqrt())
    }

    /// The scores `X beta + b` of the last solve's end, if `(beta, b)` is exactly that point.
    pub fn scores_at(&self, beta: ArrayView1<f64>, b: f64) -> Option<&Array1<f64>> {
        let (at, at_b, f) = self.last.as_ref()?;
        let same = at.len() == beta.len()
            && at_b.to_bits() == b.to_bits()
            && at.iter().zip(beta).all(|(u, v)| u.to_bits() == v.to_bits());
        same.then_some(f)
    }
}

/// A minimiser of [`SquaredHinge`].
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// Coefficients `beta`.
    pub beta: Array1<f64>,
    /// Bias `b`.
    pub b: f64,
    /// Objective value at `(beta, b)`.
    pub value: f64,
    /// Solver iterations.
    pub iterations: usize,
    /// Whether the stopping rule was met (false: iteration limit or line-search failure).
    pub converged: bool,
}

impl<'a> SquaredHinge<'a> {
    /// Number of coefficients `n` (the bias excluded).
    pub fn dim(&self) -> usize {
        self.k.nrows()
    }

    /// Scores `x_r . beta + b` of all rows.
    pub fn scores(&self, beta: ArrayView1<f64>, b: f64) -> Array1<f64> {
        mat_vec(self.x, beta) + b
    }

    /// The loss of row `r` at score `f` with its first and second derivatives in `f`
    /// (the second one of the active pieces): `c max(0, 1 - y f)^2 + o max(0, 1 + y f)^2`.
    #[inline]
    pub fn row_loss(&self, r: usize, f: f64) -> (f64, f64, f64) {
        let (y, c) = (self.y[r], self.c[r]);
        let (mut v, mut d1, mut d2) = (0.0, 0.0, 0.0);
        let margin = 1.0 - y * f;
        if margin > 0.0 && c > 0.0 {
            v += c * margin * margin;
            d1 += 2.0 * c * (f - y);
            d2 += 2.0 * c;
        }
        if let Some(&o) = self.c_opp.get(r) {
            let margin = 1.0 + y * f;
            if margin > 0.0 && o > 0.0 {
                v += o * margin * margin;
                d1 += 2.0 * o * (f + y);
                d2 += 2.0 * o;
            }
        }
        (v, d1, d2)
    }

    /// The objective and its gradient `(dJ/dbeta, dJ/db)`:
    /// `dJ/dbeta = K beta + sum_r l'_r x_r`, `dJ/db = sum_r l'_r` with `l'_r` the derivative of
    /// row `r`'s loss ([`SquaredHinge::row_loss`]).
    pub fn value_grad(&self, beta: ArrayView1<f64>, b: f64) -> (f64, Array1<f64>, f64) {
        self.value_grad_at(beta, &self.scores(beta, b))
    }

    /// [`SquaredHinge::value_grad`] given the scores `f = X beta + b`.
    fn value_grad_at(&self, beta: ArrayView1<f64>, f: &Array1<f64>) -> (f64, Array1<f64>, f64) {
        let kb = mat_vec(self.k, beta);
        let mut value = 0.5 * beta.dot(&kb);
        let mut dl = Array1::zeros(f.len());
        for r in 0..f.len() {
            let (v, d1, _) = self.row_loss(r, f[r]);
            value += v;
            dl[r] = d1;
        }
        let gb = dl.sum();
        let mut gbeta = kb;
        self.add_weighted_rows(dl.iter().copied(), &mut gbeta);
        (value, gbeta, gb)
    }

    /// `out += X^T w` as a sum of the rows with a nonzero weight (contiguous rows, in order).
    fn add_weighted_rows(&self, w: impl IntoIterator<Item = f64>, out: &mut Array1<f64>) {
        for (row, w) in self.x.rows().into_iter().zip(w) {
            if w != 0.0 {
                out.scaled_add(w, &row);
            }
        }
    }

    /// The derivative `l'(y_r, f_r) = 2 (f_r - y_r)` on violated rows, 0 elsewhere (without `c_r`).
    pub fn loss_derivative(&self, f: ArrayView1<f64>) -> Array1<f64> {
        Array1::from_iter(
            f.iter()
                .zip(self.y)
                .map(|(&f, &y)| if y * f < 1.0 { 2.0 * (f - y) } else { 0.0 }),
        )
    }

    /// The gradient norm at `(beta, b) = 0`: the scale of the relative stopping rule, as in
    /// LIBLINEAR (a warm start near the optimum must not make the rule unreachable). With the
    /// previous solve's gradient at zero in `zero`, only the rows whose derivative there changed
    /// are read (all of them when more than a third changed); `zero` is updated.
    fn reference_gradient_norm(&self, zero: &mut Option<(Vec<f64>, Array1<f64>, f64)>) -> f64 {
        let dl: Vec<f64> = (0..self.x.nrows())
            .map(|r| self.row_loss(r, 0.0).1)
            .collect();
        let (gbeta, gb) = match zero.take() {
            Some((old, mut gbeta, mut gb))
                if old.len() == dl.len()
                    && gbeta.len() == self.dim()
                    && old.iter().zip(&dl).filter(|(a, b)| a != b).count() * 3 <= dl.len() =>
            {
                let delta = old.iter().zip(&dl).map(|(&o, &w)| w - o);
                self.add_weighted_rows(delta.clone(), &mut gbeta);
                for v in delta.filter(|&v| v != 0.0) {
                    gb += v;
                }
                (gbeta, gb)
            }
            _ => {
                let mut gbeta = Array1::zeros(self.dim());
                self.add_weighted_rows(dl.iter().copied(), &mut gbeta);
                (gbeta, dl.iter().sum())
            }
        };
        let norm = (gbeta.dot(&gbeta) + gb * gb).sqrt();
        *zero = Some((dl, gbeta, gb));
        norm
    }

    fn check(&self) -> Result<()> {
        let n = self.dim();
        if self.k.ncols() != n
            || self.x.ncols() != n
            || self.y.len() != self.x.nrows()
            || self.c.len() != self.x.nrows()
            || !(self.c_opp.is_empty() || self.c_opp.len() == self.x.nrows())
        {
            return Err(Error::Solver(
                "inconsistent squared-hinge problem shapes".into(),
            ));
        }
        Ok(())
    }

    /// Minimises the objective from `warm` (or zero) to relative gradient tolerance `tol`.
    pub fn solve(
        &self,
        solver: InnerSolver,
        warm: Option<(ArrayView1<f64>, f64)>,
        tol: f64,
        max_iter: usize,
    ) -> Result<Solution> {
        self.check()?;
        let (beta0, b0) = match warm {
            Some((beta, b)) if beta.len() == self.dim() => (beta.to_owned(), b),
            _ => (Array1::zeros(self.dim()), 0.0),
        };
        match solver {
            InnerSolver::Newton => self.newton(beta0, b0, tol, max_iter, &mut None),
            InnerSolver::Lbfgs => self.lbfgs(beta0, b0, tol, max_iter),
        }
    }

    /// [`SquaredHinge::solve`] with the Newton method, reusing the Hessian of an earlier solve
    /// of a problem with the same `k` and `x` (only `c`, `c_opp` or the warm start changed): the
    /// first Newton step then updates that Hessian by the rows whose curvature changed instead
    /// of forming it anew. `hessian` holds the last Hessian afterwards.
    pub fn solve_newton_reusing(
        &self,
        warm: Option<(ArrayView1<f64>, f64)>,
        tol: f64,
        max_iter: usize,
        hessian: &mut Option<NewtonHessian>,
    ) -> Result<Solution> {
        self.check()?;
        let (beta0, b0) = match warm {
            Some((beta, b)) if beta.len() == self.dim() => (beta.to_owned(), b),
            _ => (Array1::zeros(self.dim()), 0.0),
        };
        if hessian
            .as_ref()
            .is_some_and(|h| h.h.nrows() != self.dim() + 1 || h.d2.len() != self.x.nrows())
        {
            *hessian = None;
        }
        self.newton(beta0, b0, tol, max_iter, hessian)
    }

    /// The rows `r` of `[X | 1]` scaled by `sqrt(w_r)`, for the given `(r, w_r)`.
    fn scaled_rows(&self, rows: &[(usize, f64)]) -> Array2<f64> {
        let n = self.dim();
        let mut scaled = Array2::zeros((rows.len(), n + 1));
        for (mut srow, &(r, w)) in scaled.rows_mut().into_iter().zip(rows) {
            let w = w.sqrt();
            srow.slice_mut(ndarray::s![..n])
                .zip_mut_with(&self.x.row(r), |o, &v| *o = w * v);
            srow[n] = w;
        }
        scaled
    }

    /// The Newton Hessian `[[K, 0], [0, 0]] + [X | 1]^T diag(d2) [X | 1]`.
    fn full_hessian(&self, d2: &[f64]) -> Array2<f64> {
        let n = self.dim();
        let active: Vec<(usize, f64)> = d2
            .iter()
            .enumerate()
            .filter(|&(_, &w)| w > 0.0)
            .map(|(r, &w)| (r, w))
            .collect();
        let mut h = gram(self.scaled_rows(&active).view());
        h.slice_mut(ndarray::s![..n, ..n])
            .zip_mut_with(&self.k, |o, &v| *o += v);
        h
    }

    fn newton(
        &self,
        mut beta: Array1<f64>,
        mut b: f64,
        tol: f64,
        max_iter: usize,
        hessian: &mut Option<NewtonHessian>,
    ) -> Result<Solution> {
        let n = self.dim();
        // The scores are carried along the iterations (`f + t X dbeta` after a step) and from
        // the end of the last solve when it is the starting point.
        let mut f = match hessian.as_ref().and_then(|h| h.scores_at(beta.view(), b)) {
            Some(f) => f.clone(),
            None => self.scores(beta.view(), b),
        };
        let (mut value, mut gbeta, mut gb) = self.value_grad_at(beta.view(), &f);
        let mut zero = hessian.as_mut().and_then(|h| h.zero.take());
        let g0 = self.reference_gradient_norm(&mut zero);
        let mut iterations = 0;
        let mut converged = (gbeta.dot(&gbeta) + gb * gb).sqrt() <= tol * g0;
        while !converged && iterations < max_iter {
            iterations += 1;
            // Hessian on the active set: [[K + X_A^T D X_A, X_A^T d], [., sum d]] with d_r the
            // second derivative of row r's loss, as one product S^T S of the active rows scaled
            // by sqrt(d_r), with sqrt(d_r) as the bias column. After the first iteration only
            // the rows whose d_r changed (the active set moves little) update the previous
            // Hessian, by the difference of two such products; when none changed, the previous
            // Cholesky factor is reused.
            let d2: Vec<f64> = (0..f.len()).map(|r| self.row_loss(r, f[r]).2).collect();
            let state = match hessian.take() {
                Some(state) if state.d2 == d2 => state,
                Some(NewtonHessian {
                    mut h,
                    d2: old,
                    updates,
                    ..
                }) => {
                    let changed: Vec<(usize, f64)> = (0..f.len())
                        .filter(|&r| d2[r] != old[r])
                        .map(|r| (r, d2[r] - old[r]))
                        .collect();
                    // Rank updates accumulate rounding: a full product every
                    // `MAX_HESSIAN_UPDATES` updates.
                    let (h, updates) =
                        if changed.len() * 3 <= f.len() && updates < MAX_HESSIAN_UPDATES {
                            let up: Vec<(usize, f64)> =
                                changed.iter().copied().filter(|&(_, w)| w > 0.0).collect();
                            let down: Vec<(usize, f64)> = changed
                                .iter()
                                .filter(|&&(_, w)| w < 0.0)
                                .map(|&(r, w)| (r, -w))
                                .collect();
                            if !up.is_empty() {
                                h += &gram(self.scaled_rows(&up).view());
                            }
                            if !down.is_empty() {
                                h -= &gram(self.scaled_rows(&down).view());
                            }
                            (h, updates + 1)
                        } else {
                            (self.full_hessian(&d2), 0)
                        };
                    NewtonHessian::new(h, d2, updates)?
                }
                None => NewtonHessian::new(self.full_hessian(&d2), d2, 0)?,
            };
            let mut rhs = Array1::zeros(n + 1);
            rhs.slice_mut(ndarray::s![..n]).assign(&gbeta.mapv(|v| -v));
            rhs[n] = -gb;
            let d = state.chol.solve(rhs)?;
            *hessian = Some(state);
            let dbeta = d.slice(ndarray::s![..n]).to_owned();
            let db = d[n];
            let df = mat_vec(self.x, dbeta.view()) + db;
            let t = self.exact_line_search(&beta, &f, &dbeta, &df);
            beta.scaled_add(t, &dbeta);
            b += t * db;
            f.scaled_add(t, &df);
            let old = value;
            (value, gbeta, gb) = self.value_grad_at(beta.view(), &f);
            let gnorm = (gbeta.dot(&gbeta) + gb * gb).sqrt();
            // Converged: small relative gradient, or no decrease left at machine precision
            // (the exact minimiser of the piecewise quadratic has been reached).
            converged = gnorm <= tol * g0 || old - value <= 1e-15 * value.abs();
        }
        if let Some(state) = hessian.as_mut() {
            state.zero = zero;
            state.last = Some((beta.clone(), b, f));
        }
        Ok(Solution {
            beta,
            b,
            value,
            iterations,
            converged,
        })
    }

    /// Minimises the convex piecewise quadratic `phi(t) = J(beta + t dbeta, b + t db)` along a
    /// descent direction (`df = X dbeta + db` the scores' change per unit step) by a safeguarded
    /// Newton iteration on `phi'(t)` (piecewise linear).
    fn exact_line_search(
        &self,
        beta: &Array1<f64>,
        f: &Array1<f64>,
        dbeta: &Array1<f64>,
        df: &Array1<f64>,
    ) -> f64 {
        let kd = mat_vec(self.k, dbeta.view());
        let a1 = kd.dot(beta);
        let a2 = kd.dot(dbeta);
        let derivs = |t: f64| {
            let (mut d1, mut d2) = (a1 + t * a2, a2);
            for r in 0..f.len() {
                let (_, l1, l2) = self.row_loss(r, f[r] + t * df[r]);
                d1 += l1 * df[r];
                d2 += l2 * df[r] * df[r];
            }
            (d1, d2)
        };
        let (d0, _) = derivs(0.0);
        if d0 >= 0.0 {
            return 0.0;
        }
        let (mut lo, mut hi) = (0.0_f64, f64::INFINITY);
        let mut t = 1.0;
        for _ in 0..60 {
            let (d1, d2) = derivs(t);
            if d1.abs() <= 1e-14 * d0.abs() {
                break;
            }
            if d1 < 0.0 {
                lo = t;
            } else {
                hi = t;
            }
            let mut next = if d2 > 0.0 { t - d1 / d2 } else { f64::NAN };
            if !(next > lo && next < hi) {
                next = if hi.is_finite() {
                    0.5 * (lo + hi)
                } else {
                    2.0 * t
                };
            }
            if (next - t).abs() <= 1e-15 * t.abs() {
                break;
            }
            t = next;
        }
        t
    }

    fn lbfgs(&self, beta: Array1<f64>, b: f64, tol: f64, max_iter: usize) -> Result<Solution> {
        let n = self.dim();
        let mut x0: Vec<f64> = beta.to_vec();
        x0.push(b);
        // The line search has no iteration cap of its own: bound the evaluations so that a
        // search stalled at rounding level ends (as a SolverExit) instead of looping.
        let budget = 20 * max_iter.max(1) + 20;
        let problem = LbfgsProblem {
            inner: *self,
            cache: RefCell::new(None),
            evals: Cell::new(0),
            budget,
        };
        let (v0, g0) = problem
            .eval(&x0)
            .map_err(|e| Error::Solver(e.to_string()))?;
        let g0n = self.reference_gradient_norm(&mut None);
        if g0.iter().map(|v| v * v).sum::<f64>().sqrt() <= tol * g0n {
            return Ok(Solution {
                beta,
                b,
                value: v0,
                iterations: 0,
                converged: true,
            });
        }
        let ls = MoreThuenteLineSearch::new();
        let solver = LBFGS::new(ls, 10)
            .with_tolerance_grad(tol * g0n)
            .and_then(|s| s.with_tolerance_cost(0.0))
            .map_err(|e| Error::Solver(e.to_string()))?;
        let res = Executor::new(problem, solver)
            .configure(|state| state.param(x0).max_iters(max_iter as u64))
            .ctrlc(false)
            .run()
            .map_err(|e| Error::Solver(e.to_string()))?;
        let state = res.state();
        let converged = matches!(
            state.get_termination_reason(),
            Some(TerminationReason::SolverConverged)
        );
        let x = state
            .get_best_param()
            .or(state.get_param())
            .cloned()
            .ok_or_else(|| Error::Solver("L-BFGS returned no parameters".into()))?;
        let iterations = state.get_iter() as usize;
        let beta = Array1::from_vec(x[..n].to_vec());
        let b = x[n];
        let (value, _, _) = self.value_grad(beta.view(), b);
        Ok(Solution {
            beta,
            b,
            value,
            iterations,
            converged,
        })
    }
}

/// A point with its cost and gradient.
type CachedEval = (Vec<f64>, f64, Vec<f64>);

/// argmin adapter: cost and gradient share one evaluation, cached per point.
struct LbfgsProblem<'a> {
    inner: SquaredHinge<'a>,
    cache: RefCell<Option<CachedEval>>,
    evals: Cell<usize>,
    budget: usize,
}

impl LbfgsProblem<'_> {
    fn eval(&self, x: &[f64]) -> std::result::Result<(f64, Vec<f64>), argmin::core::Error> {
        if let Some((px, v, g)) = self.cache.borrow().as_ref() {
            if px.as_slice() == x {
                return Ok((*v, g.clone()));
            }
        }
        if self.evals.get() >= self.budget {
            return Err(argmin::core::Error::msg("evaluation budget exhausted"));
        }
        self.evals.set(self.evals.get() + 1);
        let n = self.inner.dim();
        let (v, gbeta, gb) = self.inner.value_grad(ArrayView1::from(&x[..n]), x[n]);
        let mut g = gbeta.to_vec();
        g.push(gb);
        *self.cache.borrow_mut() = Some((x.to_vec(), v, g.clone()));
        Ok((v, g))
    }
}

impl CostFunction for LbfgsProblem<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Self::Param) -> std::result::Result<f64, argmin::core::Error> {
        Ok(self.eval(x)?.0)
    }
}

impl Gradient for LbfgsProblem<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, x: &Self::Param) -> std::result::Result<Vec<f64>, argmin::core::Error> {
        Ok(self.eval(x)?.1)
    }
}

/// `S^T S` (symmetric), with faer's triangular product: only the lower half is computed, then
/// mirrored. Sequential (`Par::Seq`): callers often run inside a parallel loop, and the result is
/// the same on any number of threads. Faster than ndarray's `dot` at the Newton solver's shapes
/// (6000 x 500, 9000 x 200; `DECISIONS.md`, "faer for dense linear algebra").
pub fn gram(s: ArrayView2<f64>) -> Array2<f64> {
    use faer::linalg::matmul::triangular::{self, BlockStructure};
    let k = s.ncols();
    let mut h = Array2::<f64>::zeros((k, k));
    {
        let sf = faer_ref(s);
        let hf = faer_mut(h.view_mut());
        triangular::matmul(
            hf,
            BlockStructure::TriangularLower,
            faer::Accum::Replace,
            sf.transpose(),
            BlockStructure::Rectangular,
            sf,
            BlockStructure::Rectangular,
            1.0,
            faer::Par::Seq,
        );
    }
    for i in 0..k {
        for j in i + 1..k {
            h[[i, j]] = h[[j, i]];
        }
    }
    h
}

/// Solves `H d = r` for a symmetric positive (semi-)definite `H` by Cholesky
/// ([`Cholesky::factor`]).
pub fn solve_spd(h: Array2<f64>, r: Array1<f64>) -> Result<Array1<f64>> {
    Cholesky::factor(&h)?.solve(r)
}

/// The Cholesky factor `L` (`H = L L^T`) of a symmetric positive (semi-)definite matrix, by faer
/// (several times faster than a plain loop for n = 100..2000; `DECISIONS.md`).
#[derive(Debug, Clone)]
pub struct Cholesky {
    /// `L` in the lower triangle, column-major (the row-major array's transpose).
    l: Array2<f64>,
}

impl Cholesky {
    /// Factors `h`, adding a small, growing ridge when it is numerically singular (e.g. no
    /// active row: the bias is free).
    pub fn factor(h: &Array2<f64>) -> Result<Self> {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::cholesky::llt;
        let n = h.nrows();
        if h.ncols() != n {
            return Err(Error::Solver("inconsistent linear system shapes".into()));
        }
        if h.iter().any(|v| !v.is_finite()) {
            return Err(Error::Solver(
                "the Newton system has a non-finite value".into(),
            ));
        }
        let scale = (0..n)
            .map(|i| h[[i, i]].abs())
            .fold(0.0_f64, f64::max)
            .max(1e-300);
        let par = faer::Par::Seq;
        let mut mem = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(
            n,
            par,
            Default::default(),
        ));
        let mut ridge = 0.0;
        for _ in 0..12 {
            let mut a = h.clone();
            a.diag_mut().mapv_inplace(|v| v + ridge);
            // H is symmetric: the transposed view of the row-major copy is H in column-major
            // order.
            let ok = llt::factor::cholesky_in_place(
                faer_mut(a.view_mut()).transpose_mut(),
                Default::default(),
                par,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .is_ok();
            if ok && a.diag().iter().all(|v| v.is_finite() && *v > 0.0) {
                return Ok(Self { l: a });
            }
            ridge = if ridge == 0.0 {
                1e-12 * scale
            } else {
                ridge * 100.0
            };
        }
        Err(Error::Solver(
            "the Newton system is not positive definite (non-finite values?)".into(),
        ))
    }

    /// `H^{-1} r`.
    pub fn solve(&self, r: Array1<f64>) -> Result<Array1<f64>> {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::cholesky::llt;
        let n = self.l.nrows();
        if r.len() != n {
            return Err(Error::Solver("inconsistent linear system shapes".into()));
        }
        if r.iter().any(|v| !v.is_finite()) {
            return Err(Error::Solver(
                "the Newton system has a non-finite value".into(),
            ));
        }
        let par = faer::Par::Seq;
        let mut mem = MemBuffer::new(llt::solve::solve_in_place_scratch::<f64>(n, 1, par));
        let mut x: Vec<f64> = r.to_vec();
        let rhs = faer::MatMut::from_column_major_slice_mut(&mut x, n, 1);
        llt::solve::solve_in_place(
            faer_ref(self.l.view()).transpose(),
            rhs,
            par,
            MemStack::new(&mut mem),
        );
        if x.iter().all(|v| v.is_finite()) {
            Ok(Array1::from_vec(x))
        } else {
            Err(Error::Solver(
                "the Newton step is not finite (an ill-conditioned system?)".into(),
            ))
        }
    }
}

/// The best bias of a hinge loss for fixed scores (SVM-CC's LP bias, Yang & Deng problem 23-28
/// with `w` and `v` fixed; the last step of [`linear_hinge`]): the exact minimiser of
/// `sum_i cp_i max(0, 1 - sp_i - b) + sum_n cn_n max(0, 1 + sn_n + b)` (`sp` positive scores,
/// `sn` negative scores, weights `>= 0`). Every term adds its weight to the slope at its
/// breakpoint (`1 - sp_i`, `-1 - sn_n`), starting from `-sum cp`; the minimiser is the first
/// breakpoint where the slope becomes `>= 0` (a weighted median), the midpoint of the flat piece
/// when the slope is exactly 0 there, and that breakpoint when the piece is unbounded. 0 when no
/// term has a positive weight.
pub fn hinge_bias(sp: &[f64], cp: &[f64], sn: &[f64], cn: &[f64]) -> f64 {
    let mut bp: Vec<(f64, f64)> = sp
        .iter()
        .zip(cp)
        .filter(|(_, &c)| c > 0.0)
        .map(|(&s, &c)| (1.0 - s, c))
        .chain(
            sn.iter()
                .zip(cn)
                .filter(|(_, &c)| c > 0.0)
                .map(|(&s, &c)| (-1.0 - s, c)),
        )
        .collect();
    if bp.is_empty() {
        return 0.0;
    }
    bp.sort_by(|a, b| a.0.total_cmp(&b.0));
    let w_pos: f64 = cp.iter().filter(|&&c| c > 0.0).sum();
    let total: f64 = bp.iter().map(|b| b.1).sum();
    let eps = 1e-12 * total;
    let mut cum = 0.0;
    let mut k = 0;
    while k < bp.len() {
        // All terms breaking at the same point change the slope there together.
        let b = bp[k].0;
        while k < bp.len() && bp[k].0 == b {
            cum += bp[k].1;
            k += 1;
        }
        if cum >= w_pos - eps {
            if (cum - w_pos).abs() <= eps {
                // flat between this breakpoint and the next (distinct) one
                return match bp.get(k) {
                    Some(next) => 0.5 * (b + next.0),
                    None => b,
                };
            }
            return b;
        }
    }
    bp[bp.len() - 1].0
}
