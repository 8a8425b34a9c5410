//! The dual problem ([`DualProblem`]), the solver's settings ([`SmoParams`]), its result
//! ([`DualSolution`], [`StopReason`]) and the repair of a start to the equality constraint
//! ([`repair_equality`]).

use crate::error::{invalid_data, invalid_param, Result};
use crate::progress::StopReason;

/// One dual problem over the points of a [`GramRows`](super::GramRows) (see the module docs for
/// the formula).
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

/// A [`DualProblem`] that owns its arrays, for a caller that builds them; each field is the
/// namesake of [`DualProblem`]'s.
#[derive(Debug, Clone, Default)]
pub struct DualArrays {
    pub y: Vec<f64>,
    pub point: Vec<usize>,
    pub p: Vec<f64>,
    pub d: Vec<f64>,
    pub u: Vec<f64>,
    pub delta: f64,
}

impl DualArrays {
    /// The problem over these arrays.
    pub fn view(&self) -> DualProblem<'_> {
        DualProblem {
            y: &self.y,
            point: &self.point,
            p: &self.p,
            d: &self.d,
            u: &self.u,
            delta: self.delta,
        }
    }
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

/// The layout of a dual whose samples are its points in order with no extra diagonal
/// (`point[i] = i`, `d = 0`): the hinge and one-class duals. It owns those two arrays and lends
/// them to each [`DualProblem`] made with the problem's own `y`, `p`, `u` and `delta`.
#[derive(Debug, Clone)]
pub struct OnePerPoint {
    point: Vec<usize>,
    d: Vec<f64>,
}

impl OnePerPoint {
    /// The layout of `n` samples.
    pub fn new(n: usize) -> Self {
        Self {
            point: (0..n).collect(),
            d: vec![0.0; n],
        }
    }

    /// The dual problem with these labels, linear term, bounds and equality right-hand side.
    pub fn problem<'a>(
        &'a self,
        y: &'a [f64],
        p: &'a [f64],
        u: &'a [f64],
        delta: f64,
    ) -> DualProblem<'a> {
        DualProblem {
            y,
            point: &self.point,
            p,
            d: &self.d,
            u,
            delta,
        }
    }
}

/// The kernel-row cache budget of one fit, 1 GiB: the whole Gram of about 11,500 points in
/// `f64`, so that the solves of a fit of that size compute each kernel row once. A fit of
/// several binary problems splits it evenly between them (`fit::Setup`'s problems carry
/// their share), so the budget bounds the fit whatever the thread count. The cache grows as rows
/// are computed: a fit takes only the rows it uses. Its size never changes a result.
///
/// Measured by `benches/bench_defaults.py` (benches/RESULTS.md, "Defaults that finish"):
/// stMIL's default fit on 10,668 instances recomputed rows at every iteration with a 200 MiB
/// cache (LIBSVM's order of size), whose 2,400 rows held less than half of the 6,000 support
/// points, and took about a tenth of that time with this one.
pub const FIT_CACHE_BYTES: usize = 1 << 30;

/// Settings of [`Smo`](super::Smo).
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
    /// [`StopReason::MaxIter`] with a feasible solution.
    pub max_iter: Option<usize>,
    /// LIBSVM's shrinking heuristic (default true).
    pub shrinking: bool,
    /// Kernel-row cache size in bytes (default [`FIT_CACHE_BYTES`]); at least two rows are
    /// always kept.
    pub cache_bytes: usize,
}

impl Default for SmoParams {
    fn default() -> Self {
        Self {
            tol: 1e-3,
            max_iter: None,
            shrinking: true,
            cache_bytes: FIT_CACHE_BYTES,
        }
    }
}

/// The result of [`Smo::solve`](super::Smo::solve).
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
    pub termination: StopReason,
}

impl DualSolution {
    /// A warm start for [`Smo::solve`](super::Smo::solve) that carries `alpha` alone: the solver
    /// reads nothing else of it, and rebuilds `Q a` from the kernel rows (an empty `q_alpha`).
    pub fn warm_start(alpha: Vec<f64>) -> Self {
        Self {
            alpha,
            q_alpha: Vec::new(),
            b: 0.0,
            objective: 0.0,
            iterations: 0,
            termination: StopReason::Converged,
        }
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
