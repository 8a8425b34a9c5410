//! RS: the greedy reduced-set approximation of MI-Kernel ([`ReducedSetParams`], [`reduced_set`]
//! with its fixed-point search) and the exact refitted bias ([`optimal_intercept`]).

use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{MiKernelFit, MiKernelParams};
use crate::bags::{Instances, Rows};
use crate::error::{invalid_param, Error, Result};
use crate::fit::{ParamGuard, Setup};
use crate::kernel::{basis_gradient, kernel_bag_means, kernel_matrix, Basis, Kernel};
use crate::model::Model;
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::Cancel;
use crate::solver::{solve_spd, InnerSolver};

/// RS draws a random pool of `POOL_FACTOR * n_restarts` instances per new vector and starts the
/// fixed-point iterations from the `n_restarts` of them with the largest residual projection.
const POOL_FACTOR: usize = 20;

hyperparams! {
    /// Hyperparameters of RS, the reduced-set approximation of MI-Kernel (Fu et al. 2011, eq.
    /// 14-15), declared once and checked into [`ReducedSetValidParams`].
    pub struct ReducedSetParams => ReducedSetValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Number of reduced-set vectors `N_xv` (fewer when the residual vanishes first).
        n_xv: usize = 10, check Range::AtLeast(1);
        /// Fixed-point iterations per restart, the inner solver of each new vector (0 keeps
        /// the best starting instance).
        inner_max_iter: usize = 100;
        /// Random starting instances per new vector.
        n_restarts: usize = 5, check Range::AtLeast(1);
        /// A restart stops when its step satisfies `sqrt(gamma) ||dz|| <= inner_tol`.
        inner_tol: f64 = 1e-6, check Range::NonNegative;
        /// Solver of the MI-Kernel problem.
        solver: InnerSolver = InnerSolver::Newton;
        /// Ridge of the MI-Kernel problem.
        ridge: f64 = 1e-8, check Range::NonNegative;
        /// Seed of the restarts.
        seed: u64 = 0;
    }
    cross_check gaussian_only;
    fit -> ReducedSetFit, path path_impl;
}

/// RS needs the Gaussian kernel.
fn gaussian_only(p: &ReducedSetValidParams) -> Result<()> {
    if p.kernel != KernelKind::Rbf {
        return Err(invalid_param(
            "kernel must be 'rbf': the reduced-set (RS) fixed-point method needs the Gaussian kernel",
        ));
    }
    Ok(())
}

/// Options of [`reduced_set`], the greedy construction itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReducedSetOptions {
    /// Largest number of vectors (fewer when the residual vanishes first).
    pub n_xv: usize,
    /// Fixed-point iterations per restart.
    pub max_iter: usize,
    /// Restarts per vector.
    pub n_restarts: usize,
    /// Step tolerance `sqrt(gamma) ||dz||` of a restart.
    pub tol: f64,
    /// Seed of the restarts.
    pub seed: u64,
}

/// A reduced-set expansion `sum_k gamma_ck phi(z_k)` of weight vectors `w_c`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedSetExpansion {
    /// The vectors `z_k` (`n_xv x n_features`).
    pub z: Array2<f64>,
    /// Coefficients `gamma` (`n_outputs x n_xv`), the optimal projection for the vectors.
    pub coef: Array2<f64>,
    /// `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2` before the first vector and after each one
    /// (non-increasing).
    pub residual_history: Vec<f64>,
    /// Fixed-point iterations over all vectors (the restarts of a vector run together).
    pub fixed_point_iterations: usize,
}

/// A fitted RS model with its training record.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedSetFit {
    /// The sparse model (reduced-set vectors, coefficients, refitted biases).
    pub model: Model,
    /// The MI-Kernel that was approximated.
    pub mi_kernel: MiKernelFit,
    /// The reduced-set construction.
    pub expansion: ReducedSetExpansion,
    /// The kernel width used.
    pub gamma: f64,
}

impl ReducedSetValidParams {
    /// The MI-Kernel these parameters approximate.
    pub fn mi_kernel_params(&self) -> MiKernelParams {
        MiKernelParams::new()
            .c(self.c)
            .kernel(self.kernel)
            .gamma(self.gamma)
            .class_weight(self.class_weight.clone())
            .solver(self.solver)
            .ridge(self.ridge)
            .n_jobs(self.n_jobs)
            .observer(self.observer.clone())
    }
}

impl ReducedSetValidParams {
    /// Fits MI-Kernel, approximates its weight vectors with `n_xv` shared vectors and refits
    /// each bias. Multi-class: the one-vs-rest weight vectors share the reduced-set vectors,
    /// chosen to reduce `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2`.
    fn fit_impl(&self, setup: &Setup) -> Result<ReducedSetFit> {
        let mi_kernel = self.mi_kernel_params().check()?.fit_impl(setup)?;
        self.reduce(setup, mi_kernel)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): the MI-Kernel path
    /// with one `K_set` and every solve from zero, then the reduced set of each value's
    /// MI-Kernel. No warm start: the greedy construction (the restarts ranked by their
    /// objective, each fixed point stopped at a step tolerance) is not continuous in the
    /// MI-Kernel coefficients, and a change of 1e-10 in them moved the scores by 6e-3 in a
    /// test, so the path keeps the coefficients of independent fits bit for bit.
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<ReducedSetFit>> {
        let mi_kernels = self
            .mi_kernel_params()
            .check()?
            .path_from(setup, cs, false)?;
        mi_kernels
            .into_iter()
            .map(|mi_kernel| self.reduce(setup, mi_kernel))
            .collect()
    }

    /// Approximates a fitted MI-Kernel with `n_xv` shared vectors and refits each bias.
    fn reduce(&self, setup: &Setup, mi_kernel: MiKernelFit) -> Result<ReducedSetFit> {
        let bags = setup.bags;
        let gamma = mi_kernel.gamma;
        let kernel = mi_kernel.model.kernel;
        let (support, a) = mi_kernel.model.instance_expansion()?;
        let w_norm2: f64 = mi_kernel
            .model
            .coef
            .rows()
            .into_iter()
            .map(|alpha| alpha.dot(&mi_kernel.gram.dot(&alpha)))
            .sum();
        let options = ReducedSetOptions {
            n_xv: self.n_xv,
            max_iter: self.inner_max_iter,
            n_restarts: self.n_restarts,
            tol: self.inner_tol,
            seed: self.seed,
        };
        let expansion = reduced_set(
            kernel,
            support.instances(),
            a.view(),
            w_norm2,
            &options,
            self.observer.cancel(),
        )?;
        let basis = Basis::direct(expansion.z.clone());
        let norms = bags.instances().sq_norms();
        let (_, m) = kernel_bag_means(
            kernel,
            Rows::from(bags.instances()),
            &norms,
            bags.bag_ptr(),
            &basis,
        );
        let intercept =
            Array1::from_iter(expansion.coef.rows().into_iter().zip(setup.problems()).map(
                |(g, p)| weighted_optimal_intercept(&m.dot(&g).to_vec(), &p.targets, &p.weights),
            ));
        Ok(ReducedSetFit {
            model: Model::new(
                kernel,
                expansion.z.clone(),
                expansion.coef.clone(),
                intercept,
                setup.n_classes,
                crate::model::Pooling::Mean,
            ),
            mi_kernel,
            expansion,
            gamma,
        })
    }
}

/// The bias minimising `sum_i max(0, 1 - y_i (s_i + b))^2` for fixed scores `s` and targets
/// `y` in {-1, +1} ([`weighted_optimal_intercept`] with unit weights).
pub fn optimal_intercept(s: &[f64], y: &[f64]) -> f64 {
    weighted_optimal_intercept(s, y, &vec![1.0; s.len()])
}

/// The bias minimising `sum_i w_i max(0, 1 - y_i (s_i + b))^2` for fixed scores `s`, targets
/// `y` in {-1, +1} and weights `w > 0`: a convex piecewise quadratic in one variable, minimised
/// exactly. Its derivative is `2 sum_{active} w_i (b - p_i)` with breakpoints `p_i = y_i - s_i`
/// (a positive is active for `b < p_i`, a negative for `b > p_i`); the root is the weighted mean
/// of the active breakpoints on the interval where the derivative changes sign. When the
/// minimisers form an interval (separable scores), its midpoint is returned; with one class
/// only, the smallest bias of zero loss.
pub fn weighted_optimal_intercept(s: &[f64], y: &[f64], w: &[f64]) -> f64 {
    let p: Vec<f64> = y.iter().zip(s).map(|(&y, &s)| y - s).collect();
    if p.is_empty() {
        return 0.0;
    }
    let slope = |b: f64| -> f64 {
        y.iter()
            .zip(&p)
            .zip(w)
            .filter(|&((&y, &p), _)| (y > 0.0 && b < p) || (y < 0.0 && b > p))
            .map(|((_, &p), &w)| w * (b - p))
            .sum()
    };
    let mut q = p.clone();
    q.sort_by(f64::total_cmp);
    // slope(q[0]) <= 0 <= slope(q[last]): each is a sum of terms of one sign.
    let below = q.partition_point(|&b| slope(b) < 0.0);
    let root = if below == 0 {
        q[0]
    } else if below == q.len() {
        q[q.len() - 1]
    } else {
        let (lo, hi) = (q[below - 1], q[below]);
        let mid = 0.5 * (lo + hi);
        let (mut n, mut sum) = (0.0, 0.0);
        for ((&yi, &pi), &wi) in y.iter().zip(&p).zip(w) {
            if (yi > 0.0 && mid < pi) || (yi < 0.0 && mid > pi) {
                n += wi;
                sum += wi * pi;
            }
        }
        if n > 0.0 {
            (sum / n).clamp(lo, hi)
        } else {
            hi
        }
    };
    let flat = q.partition_point(|&b| slope(b) <= 0.0);
    let end = q[flat.max(1) - 1];
    if end > root {
        0.5 * (root + end)
    } else {
        root
    }
}

/// The greedy reduced-set construction (Schoelkopf and Smola, *Learning with Kernels*, section
/// 18.4; Fu et al. 2011, eq. 15) for the Gaussian kernel, shared by the outputs.
///
/// Approximates `w_c = sum_t a[t, c] phi(x_t)` (`a`: `n_rows x n_outputs`, `w_norm2 =
/// sum_c ||w_c||^2`) by `sum_k gamma_ck phi(z_k)`. Step `k` looks for the `z` that maximises
/// `sum_c r_c(z)^2`, `r_c(z) = <w_c - sum_j gamma_cj phi(z_j), phi(z)>` (the squared projection of
/// the residuals; `k(z, z) = 1`): from `n_restarts` rows of `x` (those with the largest
/// objective in a random pool of `20 n_restarts` rows, or all rows if fewer), the fixed-point
/// iteration
///
/// `z <- sum_t c_t k(x_t, z) x_t / sum_t c_t k(x_t, z)`,  `c_t = sum_c r_c(z) a'_tc`,
///
/// over the residual expansion (rows `x_t` with `a`, previous `z_j` with `-gamma_j`), whose
/// denominator is `sum_c r_c(z)^2 > 0`; with one output it is Schoelkopf and Smola's iteration.
/// Each restart keeps its best iterate, the best restart wins, and then every coefficient is
/// re-projected: `K_zz gamma_c = K_zx a_c` (optimal for the chosen vectors). Stops early when
/// the residual falls below `1e-12 w_norm2`.
pub fn reduced_set(
    kernel: Kernel,
    x: &Instances,
    a: ArrayView2<f64>,
    w_norm2: f64,
    options: &ReducedSetOptions,
    cancel: &Cancel,
) -> Result<ReducedSetExpansion> {
    let Kernel::Rbf { gamma } = kernel else {
        return Err(invalid_param(
            "kernel must be 'rbf': the reduced-set (RS) fixed-point method needs the Gaussian kernel",
        ));
    };
    let (n, n_out) = a.dim();
    if n != x.n_rows() || n == 0 || n_out == 0 {
        return Err(invalid_data_shape(n, x.n_rows(), n_out));
    }
    if options.n_xv < 1 || options.n_restarts < 1 {
        return Err(invalid_param("n_xv and n_restarts must be integers >= 1"));
    }
    let d = x.n_features();
    let rows = Rows::from(x);
    let norms = x.sq_norms();
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut z = Array2::<f64>::zeros((0, d));
    let mut kzz = Array2::<f64>::zeros((0, 0));
    // <w_c, phi(z_j)> (n_xv x n_out) and the coefficients (n_xv x n_out).
    let mut proj = Array2::<f64>::zeros((0, n_out));
    let mut coef = Array2::<f64>::zeros((0, n_out));
    let mut history = vec![w_norm2];
    let mut iterations = 0;
    for _ in 0..options.n_xv {
        cancel.check()?;
        let pool: Vec<usize> = if POOL_FACTOR * options.n_restarts >= n {
            (0..n).collect()
        } else {
            sample(&mut rng, n, POOL_FACTOR * options.n_restarts).into_vec()
        };
        let search = FixedPoint {
            kernel,
            gamma,
            rows,
            norms: &norms,
            a,
            zb: Basis::direct(z.clone()),
            coef: coef.view(),
            floor: 1e-300_f64.max(1e-30 * w_norm2),
        };
        let candidates = x.dense_rows(&pool);
        let (pool_obj, _) = search.objective(&Basis::direct(candidates.clone()));
        let mut order: Vec<usize> = (0..pool.len()).collect();
        order.sort_by(|&i, &j| pool_obj[j].total_cmp(&pool_obj[i]).then(i.cmp(&j)));
        order.truncate(options.n_restarts);
        // fewer instances than restarts: the best ones repeat
        let starts: Vec<usize> = (0..options.n_restarts)
            .map(|r| order[r % order.len()])
            .collect();
        let (best, its) = search.run(
            candidates.select(Axis(0), &starts),
            options.max_iter,
            options.tol,
        );
        iterations += its;
        let new = Basis::direct(best.insert_axis(Axis(0)));
        let kx = kernel_matrix(kernel, rows, &norms, &new);
        let p_new = a.t().dot(&kx.column(0));
        let k = z.nrows();
        let mut kzz_new = Array2::zeros((k + 1, k + 1));
        kzz_new.slice_mut(s![..k, ..k]).assign(&kzz);
        if k > 0 {
            let zb = Basis::direct(z.clone());
            let kz = kernel_matrix(kernel, zb.as_rows(), &zb.sq_norms, &new);
            kzz_new.slice_mut(s![..k, k]).assign(&kz.column(0));
            kzz_new.slice_mut(s![k, ..k]).assign(&kz.column(0));
        }
        let t = new.sq_norms[0];
        kzz_new[[k, k]] = kernel.from_dot(t, t, t);
        kzz = kzz_new;
        z.push_row(new.v.row(0))
            .map_err(|e| Error::Solver(e.to_string()))?;
        proj.push_row(p_new.view())
            .map_err(|e| Error::Solver(e.to_string()))?;
        coef = Array2::zeros((k + 1, n_out));
        for c in 0..n_out {
            let g = solve_spd(kzz.clone(), proj.column(c).to_owned())?;
            coef.column_mut(c).assign(&g);
        }
        let residual = w_norm2 - (&proj * &coef).sum();
        history.push(residual.max(0.0));
        if !coef.iter().all(|v| v.is_finite()) {
            return Err(Error::Solver(
                "the reduced-set projection produced non-finite coefficients".into(),
            ));
        }
        if residual <= 1e-12 * w_norm2 {
            break;
        }
    }
    Ok(ReducedSetExpansion {
        z,
        coef: coef.t().to_owned(),
        residual_history: history,
        fixed_point_iterations: iterations,
    })
}

fn invalid_data_shape(n_a: usize, n_x: usize, n_out: usize) -> Error {
    Error::InvalidData(format!(
        "the expansion has {n_a} coefficient rows for {n_x} instances and {n_out} outputs"
    ))
}

/// One fixed-point search of [`reduced_set`]: the residual expansion and its kernel data.
struct FixedPoint<'r, 'a> {
    kernel: Kernel,
    gamma: f64,
    rows: Rows<'r>,
    norms: &'a [f64],
    /// Instance coefficients (`n x n_out`).
    a: ArrayView2<'a, f64>,
    /// The vectors chosen so far (`k` of them).
    zb: Basis,
    /// Their coefficients (`k x n_out`).
    coef: ArrayView2<'a, f64>,
    /// Objective below which a restart stops (the residual is numerically zero there).
    floor: f64,
}

/// Kernel values of the residual expansion's rows and vectors at the points, and the
/// projections `r` (`n_out x n_points`).
type Projections = (Array2<f64>, Array2<f64>, Array2<f64>);

impl FixedPoint<'_, '_> {
    /// `sum_c r_c(p)^2` at each point `p` of `basis`, with the kernel values and projections
    /// `r_c(p) = <w_c - sum_j gamma_cj phi(z_j), phi(p)>`.
    fn objective(&self, basis: &Basis) -> (Vec<f64>, Projections) {
        let kx = kernel_matrix(self.kernel, self.rows, self.norms, basis);
        let kz = kernel_matrix(self.kernel, self.zb.as_rows(), &self.zb.sq_norms, basis);
        let r = self.a.t().dot(&kx) - self.coef.t().dot(&kz);
        let obj = r.columns().into_iter().map(|col| col.dot(&col)).collect();
        (obj, (kx, kz, r))
    }

    /// Runs the restarts (rows of `start`) together; a restart leaves the joint iteration when
    /// its step is below `tol` (`sqrt(gamma) ||dz||`), when its objective is numerically zero or
    /// when a step is not finite. Returns the best point seen over all restarts and iterates,
    /// and the number of joint iterations.
    fn run(&self, start: Array2<f64>, max_iter: usize, tol: f64) -> (Array1<f64>, usize) {
        let n_r = start.nrows();
        let zb = &self.zb;
        let mut cur = start;
        let mut best = cur.clone();
        let mut best_obj = vec![f64::NEG_INFINITY; n_r];
        let mut active: Vec<usize> = (0..n_r).collect();
        let mut iterations = 0;
        for it in 0..=max_iter {
            if active.is_empty() {
                break;
            }
            let basis = Basis::direct(cur.select(Axis(0), &active));
            let (obj, (kx, kz, r)) = self.objective(&basis);
            for (&j, &o) in active.iter().zip(&obj) {
                if o > best_obj[j] {
                    best_obj[j] = o;
                    best.row_mut(j).assign(&cur.row(j));
                }
            }
            if it == max_iter {
                break;
            }
            iterations += 1;
            let wx = self.a.dot(&r);
            let wz = -self.coef.dot(&r);
            // 2 gamma (sum_t W_t k_t x_t - (sum_t W_t k_t) z_j), j = restart
            let mut g = basis_gradient(self.kernel, self.rows, kx.view(), wx.view(), &basis);
            if !zb.is_empty() {
                g += &basis_gradient(self.kernel, zb.as_rows(), kz.view(), wz.view(), &basis);
            }
            let mut still = Vec::with_capacity(active.len());
            for (pos, &j) in active.iter().enumerate() {
                // sum_t W_t k_t = sum_c r_c^2 = obj
                let o = obj[pos];
                if !(o > self.floor && o.is_finite()) {
                    continue;
                }
                let step = g.row(pos).mapv(|v| v / (2.0 * self.gamma * o));
                let len = self.gamma.sqrt() * step.dot(&step).sqrt();
                if !len.is_finite() || len <= tol {
                    continue;
                }
                let mut row = cur.row_mut(j);
                row += &step;
                still.push(j);
            }
            active = still;
        }
        let winner = (0..n_r)
            .max_by(|&i, &j| best_obj[i].total_cmp(&best_obj[j]).then(j.cmp(&i)))
            .unwrap_or(0);
        (best.row(winner).to_owned(), iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn brute_intercept(s: &[f64], y: &[f64]) -> f64 {
        let loss = |b: f64| -> f64 {
            s.iter()
                .zip(y)
                .map(|(&s, &y)| (1.0 - y * (s + b)).max(0.0).powi(2))
                .sum()
        };
        let (mut lo, mut hi) = (-20.0_f64, 20.0_f64);
        for _ in 0..200 {
            let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
            if loss(a) <= loss(b) {
                hi = b;
            } else {
                lo = a;
            }
        }
        0.5 * (lo + hi)
    }

    #[test]
    fn intercept_is_the_exact_minimiser() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let m = rng.random_range(2..12);
            let s: Vec<f64> = (0..m).map(|_| rng.random_range(-3.0..3.0)).collect();
            let mut y: Vec<f64> = (0..m)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            let b = optimal_intercept(&s, &y);
            let loss = |b: f64| -> f64 {
                s.iter()
                    .zip(&y)
                    .map(|(&s, &y)| (1.0 - y * (s + b)).max(0.0).powi(2))
                    .sum()
            };
            let reference = brute_intercept(&s, &y);
            assert!(loss(b) <= loss(reference) + 1e-12, "{b} vs {reference}");
        }
        // separable scores: the midpoint of the flat interval
        let b = optimal_intercept(&[2.0, -2.0], &[1.0, -1.0]);
        assert!((b - 0.0).abs() < 1e-15);
    }
}
