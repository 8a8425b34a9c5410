//! Integration tests of the Rust core: squared-hinge objective and solvers, kernels, thread-count
//! independence, SparseMI's outer gradient and fit, input validation (model files: `model.rs`).
//!
//! Every test draws small random problems from seeded ChaCha8 generators (several seeds per test)
//! and checks numbers against independent, naive computations written here.

mod common;

use approx::assert_relative_eq;
use common::{rng, to_csr, TestResult};
use milsvm::bags::{validate_labels, Bags, Csr, Instances, Rows};
use milsvm::fit::ParamGuard;
use milsvm::kernel::{basis_gradient, kernel_bag_means, kernel_matrix, Basis, Kernel};
use milsvm::solver::{InnerSolver, NewtonHessian, Solution, SquaredHinge};
use milsvm::sparse_mi::{objective_and_gradient, SparseMiFit, SparseMiParams};
use milsvm::Error;
use milsvm::{Gamma, KernelKind};
use ndarray::{array, Array1, Array2, ArrayView1, Axis};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // in (0, 1]
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A `rows x cols` matrix of independent `N(0, scale^2)` entries.
fn normal_matrix(rng: &mut ChaCha8Rng, rows: usize, cols: usize, scale: f64) -> Array2<f64> {
    Array2::from_shape_simple_fn((rows, cols), || scale * normal(rng))
}

/// Sets each entry to zero with probability `zero_frac`.
fn sparsify(rng: &mut ChaCha8Rng, x: &mut Array2<f64>, zero_frac: f64) {
    x.mapv_inplace(|v| if rng.random_bool(zero_frac) { 0.0 } else { v });
}

/// Bag offsets for `n_bags` bags of `min..=max` instances each.
fn random_bag_ptr(rng: &mut ChaCha8Rng, n_bags: usize, min: usize, max: usize) -> Vec<usize> {
    let mut ptr = vec![0];
    for i in 0..n_bags {
        let size = rng.random_range(min..=max);
        ptr.push(ptr[i] + size);
    }
    ptr
}

/// Labels `0..n_classes` for `n_bags` bags, every class present.
fn random_labels(rng: &mut ChaCha8Rng, n_bags: usize, n_classes: usize) -> Vec<usize> {
    (0..n_bags)
        .map(|i| {
            if i < n_classes {
                i
            } else {
                rng.random_range(0..n_classes)
            }
        })
        .collect()
}

/// Random dense bags of `d` features (instances shifted by class so there is some signal).
fn random_bags(
    rng: &mut ChaCha8Rng,
    n_bags: usize,
    d: usize,
    n_classes: usize,
) -> (Bags, Vec<usize>) {
    let ptr = random_bag_ptr(rng, n_bags, 2, 5);
    let labels = random_labels(rng, n_bags, n_classes);
    let n = ptr[n_bags];
    let mut x = normal_matrix(rng, n, d, 1.0);
    for (i, &l) in labels.iter().enumerate() {
        // The first instance of each bag carries the class: a shift along feature `l % d`.
        x[[ptr[i], l % d]] += 1.5;
    }
    (
        Bags::new(Instances::from(x), ptr).expect("valid random bags"),
        labels,
    )
}

fn dot(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

/// `k(x, z)` straight from the definition.
fn naive_kernel(kernel: Kernel, x: ArrayView1<f64>, z: ArrayView1<f64>) -> f64 {
    match kernel {
        Kernel::Linear => dot(x, z),
        Kernel::Rbf { gamma } => {
            let d2: f64 = x.iter().zip(z.iter()).map(|(a, b)| (a - b) * (a - b)).sum();
            (-gamma * d2).exp()
        }
    }
}

/// `K[p, k] = k(x_p, z_k)` by a double loop.
fn naive_kernel_matrix(kernel: Kernel, x: &Array2<f64>, z: &Array2<f64>) -> Array2<f64> {
    Array2::from_shape_fn((x.nrows(), z.nrows()), |(p, k)| {
        naive_kernel(kernel, x.row(p), z.row(k))
    })
}

/// Bag means of the rows of `k` by a loop.
fn naive_bag_means(k: &Array2<f64>, bag_ptr: &[usize]) -> Array2<f64> {
    let m = bag_ptr.len() - 1;
    let mut out = Array2::zeros((m, k.ncols()));
    for i in 0..m {
        let n_i = (bag_ptr[i + 1] - bag_ptr[i]) as f64;
        for p in bag_ptr[i]..bag_ptr[i + 1] {
            for c in 0..k.ncols() {
                out[[i, c]] += k[[p, c]] / n_i;
            }
        }
    }
    out
}

/// `||a - b|| / ||b||` over all entries.
fn rel_err<'a>(a: impl IntoIterator<Item = &'a f64>, b: impl IntoIterator<Item = &'a f64>) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in a.into_iter().zip(b) {
        num += (x - y) * (x - y);
        den += y * y;
    }
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// `solver` on `problem` at the solver's default tolerance, from `warm` (a cold start for None).
fn solve_default(
    problem: &SquaredHinge<'_>,
    solver: InnerSolver,
    warm: Option<(&Array1<f64>, f64)>,
    max_iter: usize,
) -> milsvm::Result<Solution> {
    let warm = warm.map(|(beta, b)| (beta.view(), b));
    problem.solve(solver, warm, solver.default_tol(), max_iter)
}

fn max_abs_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim(), "shapes differ");
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// A squared-hinge problem owned by the test.
struct HingeData {
    k: Array2<f64>,
    x: Array2<f64>,
    y: Vec<f64>,
    c: Vec<f64>,
}

impl HingeData {
    /// `K` = Gaussian Gram matrix of `n` random points (+1e-8 ridge); the design rows are kernel
    /// values of random points against the same points (like SparseMI's bag means) or plain
    /// normal draws.
    fn random(rng: &mut ChaCha8Rng, n: usize, rows: usize, cost: f64, kernel_design: bool) -> Self {
        let pts = normal_matrix(rng, n, 3, 1.0);
        let rbf = Kernel::Rbf { gamma: 0.5 };
        let mut k = naive_kernel_matrix(rbf, &pts, &pts);
        k.diag_mut().mapv_inplace(|v| v + 1e-8);
        let x = if kernel_design {
            let q = normal_matrix(rng, rows, 3, 1.0);
            naive_kernel_matrix(rbf, &q, &pts)
        } else {
            normal_matrix(rng, rows, n, 1.0)
        };
        let y = (0..rows)
            .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
            .collect();
        let c = (0..rows)
            .map(|_| cost * rng.random_range(0.2..2.0))
            .collect();
        Self { k, x, y, c }
    }

    fn problem(&self) -> SquaredHinge<'_> {
        SquaredHinge {
            k: self.k.view(),
            x: self.x.view(),
            y: &self.y,
            c: &self.c,
            c_opp: &[],
        }
    }

    /// `1/2 beta^T K beta + sum_r c_r max(0, 1 - y_r f_r)^2`, written out independently.
    fn objective(&self, beta: &[f64], b: f64) -> f64 {
        let n = beta.len();
        let mut v = 0.0;
        for i in 0..n {
            for j in 0..n {
                v += 0.5 * beta[i] * self.k[[i, j]] * beta[j];
            }
        }
        for (r, (&y, &c)) in self.y.iter().zip(&self.c).enumerate() {
            let f: f64 = (0..n).map(|i| self.x[[r, i]] * beta[i]).sum::<f64>() + b;
            let m = (1.0 - y * f).max(0.0);
            v += c * m * m;
        }
        v
    }

    /// The gradient `(dJ/dbeta, dJ/db)` as one vector of `n + 1` entries, written out
    /// independently.
    fn gradient(&self, beta: &[f64], b: f64) -> Vec<f64> {
        let n = beta.len();
        let mut g = vec![0.0; n + 1];
        for (i, gi) in g.iter_mut().take(n).enumerate() {
            *gi = (0..n).map(|j| self.k[[i, j]] * beta[j]).sum();
        }
        for (r, (&y, &c)) in self.y.iter().zip(&self.c).enumerate() {
            let f: f64 = (0..n).map(|i| self.x[[r, i]] * beta[i]).sum::<f64>() + b;
            if y * f < 1.0 {
                let dl = 2.0 * c * (f - y);
                for (i, gi) in g.iter_mut().take(n).enumerate() {
                    *gi += dl * self.x[[r, i]];
                }
                g[n] += dl;
            }
        }
        g
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

// ---------------------------------------------------------------------------------------------
// 1. Squared-hinge objective: value and gradient
// ---------------------------------------------------------------------------------------------

#[test]
fn squared_hinge_value_and_gradient_match_finite_differences() -> TestResult {
    for seed in 0..6u64 {
        let mut rng = rng(seed);
        let n = 4 + (seed as usize % 4);
        let rows = 12 + 3 * seed as usize;
        let data = HingeData::random(&mut rng, n, rows, 1.0, false);
        let problem = data.problem();
        // A point with both violated and satisfied rows and no row within 1e-3 of the hinge.
        let (beta, b) = (0..1000)
            .map(|_| {
                (
                    Array1::from_shape_simple_fn(n, || 0.5 * normal(&mut rng)),
                    0.3 * normal(&mut rng),
                )
            })
            .find(|(beta, b)| {
                let f = problem.scores(beta.view(), *b);
                let margins: Vec<f64> = f.iter().zip(&data.y).map(|(f, y)| 1.0 - y * f).collect();
                margins.iter().all(|m| m.abs() > 1e-3)
                    && margins.iter().any(|&m| m > 0.0)
                    && margins.iter().any(|&m| m < 0.0)
            })
            .ok_or("no random point away from the hinges")?;

        let (value, gbeta, gb) = problem.value_grad(beta.view(), b);
        let beta_v = beta.to_vec();
        assert_relative_eq!(value, data.objective(&beta_v, b), max_relative = 1e-12);
        // The analytic gradient agrees with the independent formula ...
        let mut g = gbeta.to_vec();
        g.push(gb);
        let naive = data.gradient(&beta_v, b);
        assert!(
            rel_err(&g, &naive) < 1e-12,
            "seed {seed}: {g:?} vs {naive:?}"
        );

        // ... and with central differences of `value_grad`'s value.
        let h = 1e-6;
        let mut fd = Vec::with_capacity(n + 1);
        for i in 0..n {
            let (mut bp, mut bm) = (beta.clone(), beta.clone());
            bp[i] += h;
            bm[i] -= h;
            let vp = problem.value_grad(bp.view(), b).0;
            let vm = problem.value_grad(bm.view(), b).0;
            fd.push((vp - vm) / (2.0 * h));
        }
        let vp = problem.value_grad(beta.view(), b + h).0;
        let vm = problem.value_grad(beta.view(), b - h).0;
        fd.push((vp - vm) / (2.0 * h));
        let err = rel_err(&fd, &g);
        assert!(err < 1e-6, "seed {seed}: relative error {err:e}");

        // loss_derivative is l' = 2 (f - y) on violated rows, 0 elsewhere (no c).
        let f = problem.scores(beta.view(), b);
        let dl = problem.loss_derivative(f.view());
        for r in 0..rows {
            let expected = if data.y[r] * f[r] < 1.0 {
                2.0 * (f[r] - data.y[r])
            } else {
                0.0
            };
            assert_eq!(dl[r], expected, "seed {seed} row {r}");
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. Squared-hinge solvers
// ---------------------------------------------------------------------------------------------

#[test]
fn newton_and_lbfgs_reach_the_same_optimum() -> TestResult {
    use InnerSolver::{Lbfgs, Newton};
    for seed in 0..6u64 {
        let mut rng = rng(100 + seed);
        let cost = [0.1, 1.0, 10.0][seed as usize % 3];
        // Up to 11 coefficients: with many more Gaussian points in 3-D, K is so ill-conditioned
        // that L-BFGS needs more than 1000 iterations (and says so: converged = false).
        let n = 6 + seed as usize % 6;
        let data = HingeData::random(&mut rng, n, 30, cost, seed % 2 == 0);
        let problem = data.problem();
        assert_eq!(problem.dim(), n);

        let newton = solve_default(&problem, Newton, None, 1000)?;
        let lbfgs = solve_default(&problem, Lbfgs, None, 1000)?;
        assert!(newton.converged, "seed {seed}: Newton did not converge");
        assert!(
            newton.iterations < 50,
            "seed {seed}: Newton took {} iterations",
            newton.iterations
        );
        assert_relative_eq!(newton.value, lbfgs.value, max_relative = 1e-8);
        // Newton is exact: L-BFGS cannot be noticeably lower.
        assert!(lbfgs.value >= newton.value * (1.0 - 1e-12), "seed {seed}");

        // The reported values are the objective at the reported points.
        let nb = newton.beta.to_vec();
        assert_relative_eq!(
            newton.value,
            data.objective(&nb, newton.b),
            max_relative = 1e-12
        );
        assert_relative_eq!(
            lbfgs.value,
            data.objective(&lbfgs.beta.to_vec(), lbfgs.b),
            max_relative = 1e-12
        );

        // First-order optimality (exact for this convex C^1 objective), by the test's gradient.
        let g0 = norm(&data.gradient(&vec![0.0; n], 0.0));
        let g = norm(&data.gradient(&nb, newton.b));
        assert!(
            g <= 1e-8 * g0,
            "seed {seed}: |grad| {g:e} vs |grad(0)| {g0:e}"
        );

        // No random perturbation, small or large, decreases the objective.
        for t in [1e-6, 1e-3, 1e-1, 1.0] {
            for _ in 0..50 {
                let db: Vec<f64> = (0..=n).map(|_| t * normal(&mut rng)).collect();
                let beta: Vec<f64> = nb.iter().zip(&db).map(|(a, d)| a + d).collect();
                let v = data.objective(&beta, newton.b + db[n]);
                assert!(
                    v >= newton.value * (1.0 - 1e-13),
                    "seed {seed}: perturbation of size {t} lowered {} to {v}",
                    newton.value
                );
            }
        }

        // Warm start from the solution: Newton stops at once with the same point.
        let warm = solve_default(&problem, Newton, Some((&newton.beta, newton.b)), 1000)?;
        assert!(warm.converged);
        assert!(
            warm.iterations <= 1,
            "seed {seed}: warm Newton took {} iterations",
            warm.iterations
        );
        assert_relative_eq!(warm.value, newton.value, max_relative = 1e-13);
        assert!(rel_err(warm.beta.iter(), newton.beta.iter()) < 1e-8);
        // L-BFGS warm-started at the optimum stays there. (A small iteration cap keeps this
        // fast: see `lbfgs_warm_started_at_the_optimum_stops_at_once` for why.)
        let warm = solve_default(&problem, Lbfgs, Some((&newton.beta, newton.b)), 20)?;
        assert_relative_eq!(warm.value, newton.value, max_relative = 1e-12);

        // A warm start of the wrong length is ignored (cold start, same optimum).
        let wrong = Array1::zeros(n + 1);
        let cold = solve_default(&problem, Newton, Some((&wrong, 5.0)), 1000)?;
        assert_relative_eq!(cold.value, newton.value, max_relative = 1e-12);
    }
    Ok(())
}

#[test]
fn lbfgs_warm_started_at_the_optimum_stops_at_once() -> TestResult {
    use InnerSolver::Lbfgs;
    for seed in 0..3u64 {
        let mut rng = rng(150 + seed);
        let data = HingeData::random(&mut rng, 6, 30, 1.0, true);
        let problem = data.problem();
        let cold = solve_default(&problem, Lbfgs, None, 1000)?;
        assert!(cold.converged);
        let warm = solve_default(&problem, Lbfgs, Some((&cold.beta, cold.b)), 1000)?;
        assert_relative_eq!(warm.value, cold.value, max_relative = 1e-12);
        assert!(
            warm.converged,
            "seed {seed}: warm start at the optimum reported no convergence"
        );
        // "Stops at once", counted rather than timed: the relative stopping rule (scaled by the
        // gradient at zero, not at the start) holds at the optimum, so the solver makes at most
        // one iteration (not its 1000) and stays at the optimum.
        assert!(
            warm.iterations <= 1,
            "seed {seed}: warm start at the optimum took {} iterations",
            warm.iterations
        );
        assert!(
            rel_err(warm.beta.iter(), cold.beta.iter()) < 1e-8,
            "seed {seed}: the warm start moved away from the optimum"
        );
    }
    Ok(())
}

#[test]
fn newton_matches_brute_force_gradient_descent_on_a_tiny_problem() -> TestResult {
    // Independent reference: plain gradient descent with step 1/L on the test's own gradient.
    for seed in 0..3u64 {
        let mut rng = rng(200 + seed);
        let data = HingeData::random(&mut rng, 3, 8, 1.0, false);
        let problem = data.problem();
        let sol = problem.solve(InnerSolver::Newton, None, 1e-12, 1000)?;
        // L bounds the Hessian: ||K||_F + 2 sum_r c_r (||x_r||^2 + 1).
        let lip = data.k.iter().map(|v| v * v).sum::<f64>().sqrt()
            + 2.0
                * data
                    .x
                    .rows()
                    .into_iter()
                    .zip(&data.c)
                    .map(|(r, c)| c * (dot(r, r) + 1.0))
                    .sum::<f64>();
        let mut w = vec![0.0; 4];
        for _ in 0..200_000 {
            let g = data.gradient(&w[..3], w[3]);
            if norm(&g) < 1e-13 {
                break;
            }
            for (wi, gi) in w.iter_mut().zip(&g) {
                *wi -= gi / lip;
            }
        }
        let v = data.objective(&w[..3], w[3]);
        assert_relative_eq!(sol.value, v, max_relative = 1e-9);
        assert!(sol.value <= v * (1.0 + 1e-12));
        let mut s = sol.beta.to_vec();
        s.push(sol.b);
        assert!(rel_err(&s, &w) < 1e-5, "seed {seed}: {s:?} vs {w:?}");
    }
    Ok(())
}

#[test]
fn solver_rejects_inconsistent_shapes() {
    let k = Array2::<f64>::eye(3);
    let x = Array2::<f64>::zeros((4, 2));
    let y = vec![1.0; 4];
    let c = vec![1.0; 4];
    let problem = SquaredHinge {
        k: k.view(),
        x: x.view(),
        y: &y,
        c: &c,
        c_opp: &[],
    };
    for solver in [InnerSolver::Newton, InnerSolver::Lbfgs] {
        assert!(matches!(
            problem.solve(solver, None, 1e-8, 100),
            Err(Error::Solver(_))
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Kernels
// ---------------------------------------------------------------------------------------------

const KERNELS: [Kernel; 3] = [
    Kernel::Rbf { gamma: 0.3 },
    Kernel::Rbf { gamma: 2.0 },
    Kernel::Linear,
];

#[test]
fn kernel_matrix_and_bag_means_match_naive_loops() -> TestResult {
    for seed in 0..4u64 {
        let mut rng = rng(300 + seed);
        let n_bags = 9;
        let bag_ptr = random_bag_ptr(&mut rng, n_bags, 1, 7);
        let n = bag_ptr[n_bags];
        let d = 5;
        let mut x = normal_matrix(&mut rng, n, d, 1.0);
        sparsify(&mut rng, &mut x, 0.7);
        let z = normal_matrix(&mut rng, 7, d, 0.7);
        let basis = Basis::direct(z.clone());
        let csr = to_csr(&x, seed % 2 == 1);
        let dense = Instances::from(x.clone());
        let sparse = Instances::Sparse(csr.clone());
        assert_eq!(csr.to_dense(), x);
        for kernel in KERNELS {
            let naive = naive_kernel_matrix(kernel, &x, &z);
            let naive_m = naive_bag_means(&naive, &bag_ptr);
            let kd = kernel_matrix(kernel, Rows::Dense(x.view()), &dense.sq_norms(), &basis);
            let ks = kernel_matrix(kernel, Rows::Sparse(&csr), &sparse.sq_norms(), &basis);
            assert!(max_abs_diff(&kd, &naive) < 1e-12, "{kernel:?} dense K");
            assert!(max_abs_diff(&ks, &naive) < 1e-12, "{kernel:?} sparse K");
            let (kd2, md) = kernel_bag_means(
                kernel,
                Rows::Dense(x.view()),
                &dense.sq_norms(),
                &bag_ptr,
                &basis,
            );
            let (ks2, ms) = kernel_bag_means(
                kernel,
                Rows::Sparse(&csr),
                &sparse.sq_norms(),
                &bag_ptr,
                &basis,
            );
            assert_eq!(md.dim(), (n_bags, 7));
            assert!(
                max_abs_diff(&kd2, &naive) < 1e-12,
                "{kernel:?} fused dense K"
            );
            assert!(
                max_abs_diff(&ks2, &naive) < 1e-12,
                "{kernel:?} fused sparse K"
            );
            assert!(max_abs_diff(&md, &naive_m) < 1e-12, "{kernel:?} dense M");
            assert!(max_abs_diff(&ms, &naive_m) < 1e-12, "{kernel:?} sparse M");
            assert!(
                max_abs_diff(&md, &ms) < 1e-12,
                "{kernel:?} dense vs sparse M"
            );
            // The basis against itself (as SparseMI forms K_Z).
            let kz = kernel_matrix(kernel, basis.as_rows(), &basis.sq_norms, &basis);
            assert!(max_abs_diff(&kz, &naive_kernel_matrix(kernel, &z, &z)) < 1e-12);
        }
    }
    Ok(())
}

/// `S(Z) = sum_pk A_pk k(x_p, z_k)` by the naive kernel.
fn kernel_sum(kernel: Kernel, x: &Array2<f64>, z: &Array2<f64>, a: &Array2<f64>) -> f64 {
    let k = naive_kernel_matrix(kernel, x, z);
    k.iter().zip(a.iter()).map(|(k, a)| k * a).sum()
}

#[test]
fn basis_gradient_matches_finite_differences_dense_and_sparse() -> TestResult {
    for seed in 0..4u64 {
        let mut rng = rng(400 + seed);
        let (n, d, nb) = (30, 4, 5);
        let mut x = normal_matrix(&mut rng, n, d, 1.0);
        sparsify(&mut rng, &mut x, 0.7);
        let z = normal_matrix(&mut rng, nb, d, 0.8);
        let a = normal_matrix(&mut rng, n, nb, 1.0);
        let basis = Basis::direct(z.clone());
        let csr = to_csr(&x, seed % 2 == 0);
        let norms = Instances::from(x.clone()).sq_norms();
        let snorms = Instances::Sparse(csr.clone()).sq_norms();
        for kernel in KERNELS {
            let k = kernel_matrix(kernel, Rows::Dense(x.view()), &norms, &basis);
            let g = basis_gradient(kernel, Rows::Dense(x.view()), k.view(), a.view(), &basis);
            assert_eq!(g.dim(), (nb, d));
            let ks = kernel_matrix(kernel, Rows::Sparse(&csr), &snorms, &basis);
            let gs = basis_gradient(kernel, Rows::Sparse(&csr), ks.view(), a.view(), &basis);
            assert!(
                max_abs_diff(&g, &gs) < 1e-10,
                "{kernel:?}: dense vs sparse gradient"
            );

            let h = 1e-5;
            let fd = Array2::from_shape_fn((nb, d), |(kk, j)| {
                let (mut zp, mut zm) = (z.clone(), z.clone());
                zp[[kk, j]] += h;
                zm[[kk, j]] -= h;
                (kernel_sum(kernel, &x, &zp, &a) - kernel_sum(kernel, &x, &zm, &a)) / (2.0 * h)
            });
            let err = rel_err(fd.iter(), g.iter());
            assert!(err < 1e-6, "seed {seed} {kernel:?}: relative error {err:e}");
        }
    }
    Ok(())
}

#[test]
fn projected_basis_equals_direct_basis() -> TestResult {
    // Basis-vector mode: z_k = B v_k, rows P = X B, G = B^T B; kernel values equal the direct
    // ones, and the gradient w.r.t. v_k is B^T times the gradient w.r.t. z_k.
    for seed in 0..3u64 {
        let mut rng = rng(450 + seed);
        let (n, d, q, nb) = (20, 6, 4, 3);
        let x = normal_matrix(&mut rng, n, d, 1.0);
        let bmat = normal_matrix(&mut rng, d, q, 0.5); // d x Q
        let v = normal_matrix(&mut rng, nb, q, 0.5); // N_xv x Q
        let a = normal_matrix(&mut rng, n, nb, 1.0);
        let z = v.dot(&bmat.t()); // N_xv x d
        let p = x.dot(&bmat);
        let gram = bmat.t().dot(&bmat);
        let direct = Basis::direct(z.clone());
        let projected = Basis::projected(v.clone(), gram.view());
        let norms = Instances::from(x.clone()).sq_norms();
        for t in 0..nb {
            assert_relative_eq!(
                projected.sq_norms[t],
                direct.sq_norms[t],
                max_relative = 1e-12
            );
        }
        for kernel in KERNELS {
            let kd = kernel_matrix(kernel, Rows::Dense(x.view()), &norms, &direct);
            let kp = kernel_matrix(kernel, Rows::Dense(p.view()), &norms, &projected);
            assert!(max_abs_diff(&kd, &kp) < 1e-12, "{kernel:?}");
            let gd = basis_gradient(kernel, Rows::Dense(x.view()), kd.view(), a.view(), &direct);
            let gp = basis_gradient(
                kernel,
                Rows::Dense(p.view()),
                kp.view(),
                a.view(),
                &projected,
            );
            let chain = gd.dot(&bmat);
            assert!(
                rel_err(gp.iter(), chain.iter()) < 1e-10,
                "{kernel:?}: projected gradient"
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 4. Thread-count independence
// ---------------------------------------------------------------------------------------------

fn in_pool<T: Send>(
    threads: usize,
    f: impl FnOnce() -> T + Send,
) -> Result<T, rayon::ThreadPoolBuildError> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?
        .install(f))
}

#[test]
fn kernel_results_do_not_depend_on_the_thread_count() -> TestResult {
    let mut rng = rng(500);
    // Bags of 1..40 rows, one of 300 rows in the middle, > 2000 rows in total.
    let mut bag_ptr = vec![0];
    while *bag_ptr.last().ok_or("empty")? < 2300 {
        let size = if bag_ptr.len() == 40 {
            300
        } else {
            rng.random_range(1..=40)
        };
        bag_ptr.push(bag_ptr[bag_ptr.len() - 1] + size);
    }
    let n = *bag_ptr.last().ok_or("empty")?;
    let (d, nb) = (8, 12);
    let mut x = normal_matrix(&mut rng, n, d, 1.0);
    sparsify(&mut rng, &mut x, 0.5);
    let csr = to_csr(&x, false);
    let z = normal_matrix(&mut rng, nb, d, 1.0);
    let a = normal_matrix(&mut rng, n, nb, 1.0);
    let basis = Basis::direct(z);
    let norms = Instances::from(x.clone()).sq_norms();
    for kernel in [Kernel::Rbf { gamma: 0.2 }, Kernel::Linear] {
        let run = |t: usize| {
            in_pool(t, || {
                let (k, m) =
                    kernel_bag_means(kernel, Rows::Dense(x.view()), &norms, &bag_ptr, &basis);
                let kk = kernel_matrix(kernel, Rows::Dense(x.view()), &norms, &basis);
                let g = basis_gradient(kernel, Rows::Dense(x.view()), k.view(), a.view(), &basis);
                let (ks, ms) =
                    kernel_bag_means(kernel, Rows::Sparse(&csr), &norms, &bag_ptr, &basis);
                let gs = basis_gradient(kernel, Rows::Sparse(&csr), ks.view(), a.view(), &basis);
                (k, m, kk, g, ks, ms, gs)
            })
        };
        let one = run(1)?;
        // The bag means agree with a naive computation (the big bag included).
        assert!(max_abs_diff(&one.1, &naive_bag_means(&one.0, &bag_ptr)) < 1e-12);
        for t in [2, 4] {
            let other = run(t)?;
            assert!(one.0 == other.0, "{kernel:?}: K differs with {t} threads");
            assert!(one.1 == other.1, "{kernel:?}: M differs with {t} threads");
            assert!(one.2 == other.2, "{kernel:?}: kernel_matrix differs");
            assert!(one.3 == other.3, "{kernel:?}: dense gradient differs");
            assert!(one.4 == other.4, "{kernel:?}: sparse K differs");
            assert!(one.5 == other.5, "{kernel:?}: sparse M differs");
            assert!(one.6 == other.6, "{kernel:?}: sparse gradient differs");
        }
    }
    Ok(())
}

#[test]
fn sparse_mi_fit_does_not_depend_on_the_thread_count() -> TestResult {
    for (seed, n_classes) in [(0u64, 2usize), (1, 3)] {
        let mut rng = rng(550 + seed);
        let (bags, labels) = random_bags(&mut rng, 40, 4, n_classes);
        let fit = |t: usize| {
            SparseMiParams::new()
                .n_xv(5)
                .max_iter(5)
                .seed(seed)
                .n_jobs(Some(t))
                .fit(&bags, &labels)
        };
        let one = fit(1)?;
        assert!(one.n_iter > 0, "the descent should move");
        for t in [2, 4] {
            let other = fit(t)?;
            assert!(
                one.model.xv == other.model.xv,
                "xv differs with {t} threads"
            );
            assert!(one.model.coef == other.model.coef, "coef differs");
            assert!(one.model.intercept == other.model.intercept);
            assert!(one.objective_history == other.objective_history);
            assert!(one == other);
        }
        // n_jobs = None (the global pool) gives the same fit too.
        let global = SparseMiParams::new()
            .n_xv(5)
            .max_iter(5)
            .seed(seed)
            .fit(&bags, &labels)?;
        assert!(one == global);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 5. SparseMI outer gradient
// ---------------------------------------------------------------------------------------------

fn check_outer_gradient(
    params: &SparseMiParams,
    bags: &Bags,
    labels: &[usize],
    z: &Array2<f64>,
    what: &str,
) -> TestResult {
    let (g0, grad) = objective_and_gradient(params, bags, labels, z.clone())?;
    assert!(g0.is_finite() && g0 > 0.0);
    assert_eq!(grad.dim(), z.dim());
    let scale = z.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
    let h = 1e-5 * scale;
    let mut fd = Array2::zeros(z.dim());
    for ((kk, j), out) in fd.indexed_iter_mut() {
        let (mut zp, mut zm) = (z.clone(), z.clone());
        zp[[kk, j]] += h;
        zm[[kk, j]] -= h;
        let gp = objective_and_gradient(params, bags, labels, zp)?.0;
        let gm = objective_and_gradient(params, bags, labels, zm)?.0;
        *out = (gp - gm) / (2.0 * h);
    }
    let err = rel_err(fd.iter(), grad.iter());
    let gnorm = grad.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(gnorm > 1e-6, "{what}: the gradient is trivially small");
    assert!(
        err < 1e-5,
        "{what}: relative error {err:e}\nanalytic {grad}\nfinite differences {fd}"
    );
    Ok(())
}

#[test]
fn sparse_mi_outer_gradient_matches_finite_differences() -> TestResult {
    for seed in 0..3u64 {
        let mut rng = rng(600 + seed);
        for n_classes in [2, 3] {
            let (bags, labels) = random_bags(&mut rng, 14, 3, n_classes);
            let base = SparseMiParams::new()
                .inner_tol(Some(1e-12))
                .solver(InnerSolver::Newton);
            // RBF: 4 expansion vectors near the data.
            let rbf = base
                .clone()
                .gamma(Gamma::Value(0.4))
                .c([1.0, 5.0, 0.5][seed as usize % 3]);
            let z = normal_matrix(&mut rng, 4, 3, 1.0);
            check_outer_gradient(
                &rbf,
                &bags,
                &labels,
                &z,
                &format!("rbf seed {seed} classes {n_classes}"),
            )?;
            // Linear: fewer XVs than features so that K_Z is well conditioned.
            let lin = base.clone().kernel(KernelKind::Linear).c(0.5);
            let z = normal_matrix(&mut rng, 2, 3, 1.0);
            check_outer_gradient(
                &lin,
                &bags,
                &labels,
                &z,
                &format!("linear seed {seed} classes {n_classes}"),
            )?;
        }
    }
    Ok(())
}

#[test]
fn outer_objective_sums_the_one_vs_rest_problems() -> TestResult {
    // g for 3 classes equals the sum of the three binary problems "class c vs rest", and the
    // gradient is the sum of their gradients (shared Z).
    let mut rng = rng(650);
    let (bags, labels) = random_bags(&mut rng, 15, 3, 3);
    let params = SparseMiParams::new()
        .gamma(Gamma::Value(0.5))
        .inner_tol(Some(1e-12));
    let z = normal_matrix(&mut rng, 4, 3, 1.0);
    let (g, grad) = objective_and_gradient(&params, &bags, &labels, z.clone())?;
    let mut g_sum = 0.0;
    let mut grad_sum = Array2::zeros(z.dim());
    for c in 0..3 {
        let binary: Vec<usize> = labels.iter().map(|&l| usize::from(l == c)).collect();
        let (gc, gradc) = objective_and_gradient(&params, &bags, &binary, z.clone())?;
        g_sum += gc;
        grad_sum += &gradc;
    }
    assert_relative_eq!(g, g_sum, max_relative = 1e-10);
    assert!(rel_err(grad.iter(), grad_sum.iter()) < 1e-8);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 6. SparseMI fit
// ---------------------------------------------------------------------------------------------

fn assert_history_non_increasing(fit: &SparseMiFit) {
    let h = &fit.objective_history;
    assert_eq!(h.len(), fit.n_iter + 1);
    for w in h.windows(2) {
        assert!(w[1] <= w[0], "history increases: {h:?}");
    }
}

#[test]
fn sparse_mi_fit_history_and_determinism() -> TestResult {
    for seed in 0..3u64 {
        let mut rng = rng(700 + seed);
        let n_classes = 2 + seed as usize % 2;
        let (bags, labels) = random_bags(&mut rng, 25, 3, n_classes);
        let params = SparseMiParams::new()
            .n_xv(6)
            .max_iter(10)
            .seed(seed)
            .gamma(Gamma::Value(0.5));
        let fit = params.fit(&bags, &labels)?;
        assert_history_non_increasing(&fit);
        assert!(fit.n_iter >= 1, "seed {seed}: no descent step was accepted");
        assert!(
            fit.objective_history[fit.n_iter] < fit.objective_history[0],
            "seed {seed}: g did not decrease"
        );
        assert!(fit.inner_converged);
        assert_eq!(fit.gamma, 0.5);
        assert_eq!(fit.model.n_classes, n_classes);
        let outputs = if n_classes == 2 { 1 } else { n_classes };
        assert_eq!(fit.model.coef.dim(), (outputs, 6));
        assert_eq!(fit.model.intercept.len(), outputs);
        assert_eq!(fit.model.xv.to_dense().dim(), (6, 3));

        // The initial XVs are distinct training instances.
        let Instances::Dense(x) = bags.instances() else {
            return Err("dense bags expected".into());
        };
        let mut rows = Vec::new();
        for zr in fit.initial_xv.rows() {
            let r = x
                .view()
                .rows()
                .into_iter()
                .position(|xr| xr == zr)
                .ok_or("an initial XV is not a training instance")?;
            rows.push(r);
        }
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), 6, "initial XVs repeat an instance");

        // The history starts at g(initial_xv) and ends at g(final xv).
        let (g_init, _) = objective_and_gradient(&params, &bags, &labels, fit.initial_xv.clone())?;
        assert_relative_eq!(fit.objective_history[0], g_init, max_relative = 1e-12);
        let (g_end, _) = objective_and_gradient(&params, &bags, &labels, fit.model.xv.to_dense())?;
        let last = fit.objective_history[fit.n_iter];
        // The last point was solved warm-started: the same optimum to solver precision.
        assert_relative_eq!(last, g_end, max_relative = 1e-9);

        // Same seed: the identical fit; other seed: other initial XVs.
        let again = params.fit(&bags, &labels)?;
        assert!(again == fit, "seed {seed}: refit differs");
        let other = params.clone().seed(seed + 1000).fit(&bags, &labels)?;
        assert!(other.initial_xv != fit.initial_xv);

        // init_xv replaces the random choice.
        let given = params
            .clone()
            .init_xv(Some(other.initial_xv.clone()))
            .fit(&bags, &labels)?;
        assert!(given.initial_xv == other.initial_xv);
        assert!(given.objective_history == other.objective_history);
    }
    Ok(())
}

#[test]
fn rsvm_solves_the_inner_problem_once() -> TestResult {
    for seed in 0..3u64 {
        let mut rng = rng(750 + seed);
        let (bags, labels) = random_bags(&mut rng, 20, 3, 2);
        let params = SparseMiParams::rsvm().n_xv(5).seed(seed);
        assert_eq!(*params.check_ref()?.max_iter(), 0);
        let fit = params.fit(&bags, &labels)?;
        assert_eq!(fit.objective_history.len(), 1);
        assert_eq!(fit.n_iter, 0);
        assert!(fit.model.xv.to_dense() == fit.initial_xv);
        let (g, _) = objective_and_gradient(&params, &bags, &labels, fit.initial_xv.clone())?;
        assert_relative_eq!(fit.objective_history[0], g, max_relative = 1e-12);
        // L-BFGS solves the same (cold-started) inner problem.
        let lbfgs = params
            .clone()
            .solver(InnerSolver::Lbfgs)
            .fit(&bags, &labels)?;
        assert!(lbfgs.model.xv == fit.model.xv);
        assert_relative_eq!(
            lbfgs.objective_history[0],
            fit.objective_history[0],
            max_relative = 1e-8
        );
        let pn = fit.model.decision_function(&bags)?;
        let pl = lbfgs.model.decision_function(&bags)?;
        assert!(
            max_abs_diff(&pn, &pl) < 1e-3,
            "Newton vs L-BFGS predictions"
        );
        // Gamma::Scale resolves to 1 / (d Var[X]).
        let Instances::Dense(x) = bags.instances() else {
            return Err("dense bags expected".into());
        };
        let mean = x.view().mean().ok_or("no mean")?;
        let var = x
            .view()
            .mapv(|v| (v - mean) * (v - mean))
            .mean()
            .ok_or("no var")?;
        assert_relative_eq!(fit.gamma, 1.0 / (3.0 * var), max_relative = 1e-10);
    }
    Ok(())
}

/// Positive bags hold one instance near (3, 3); negative bags hold instances near (-3, -3);
/// both hold standard-normal noise instances.
fn separable_bags(rng: &mut ChaCha8Rng, n_bags: usize) -> (Array2<f64>, Vec<usize>, Vec<usize>) {
    let mut rows: Vec<[f64; 2]> = Vec::new();
    let mut ptr = vec![0];
    let mut labels = Vec::new();
    for i in 0..n_bags {
        let positive = i % 2 == 0;
        labels.push(usize::from(positive));
        let centre = if positive { 3.0 } else { -3.0 };
        let n_signal = if positive { 1 } else { rng.random_range(1..=2) };
        for _ in 0..n_signal {
            rows.push([centre + 0.3 * normal(rng), centre + 0.3 * normal(rng)]);
        }
        for _ in 0..rng.random_range(1..=4) {
            rows.push([normal(rng), normal(rng)]);
        }
        ptr.push(rows.len());
    }
    let x = Array2::from_shape_fn((rows.len(), 2), |(p, j)| rows[p][j]);
    (x, ptr, labels)
}

#[test]
fn sparse_mi_separates_an_easy_problem() -> TestResult {
    for seed in 0..3u64 {
        let mut rng = rng(800 + seed);
        let (x, ptr, labels) = separable_bags(&mut rng, 30);
        let bags = Bags::new(Instances::from(x), ptr)?;
        // Newton only: L-BFGS fits are slow here (see the ignored L-BFGS warm-start test).
        for params in [
            SparseMiParams::new()
                .n_xv(6)
                .c(10.0)
                .max_iter(20)
                .seed(seed),
            SparseMiParams::new()
                .n_xv(3)
                .c(10.0)
                .max_iter(20)
                .seed(seed + 10)
                .gamma(Gamma::Value(0.1)),
        ] {
            let fit = params.fit(&bags, &labels)?;
            assert_history_non_increasing(&fit);
            let scores = fit.model.decision_function(&bags)?;
            assert_eq!(scores.dim(), (30, 1));
            for (i, &l) in labels.iter().enumerate() {
                let s = scores[[i, 0]];
                assert!(
                    (l == 1 && s > 0.0) || (l == 0 && s < 0.0),
                    "seed {seed} n_xv {}: bag {i} (label {l}) scored {s}",
                    params.check_ref()?.n_xv()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn dense_and_sparse_bags_give_the_same_fit() -> TestResult {
    for seed in 0..3u64 {
        let mut rng = rng(850 + seed);
        let n_bags = 24;
        let ptr = random_bag_ptr(&mut rng, n_bags, 2, 5);
        let labels = random_labels(&mut rng, n_bags, 2 + seed as usize % 2);
        let n = ptr[n_bags];
        let mut x = normal_matrix(&mut rng, n, 6, 1.0);
        sparsify(&mut rng, &mut x, 0.7);
        for (i, &l) in labels.iter().enumerate() {
            x[[ptr[i], l]] = 2.0;
        }
        let dense = Bags::new(Instances::from(x.clone()), ptr.clone())?;
        let sparse = Bags::new(Instances::Sparse(to_csr(&x, seed == 1)), ptr)?;
        assert!(sparse.is_sparse() && !dense.is_sparse());
        for gamma in [Gamma::Value(0.3), Gamma::Scale] {
            let params = SparseMiParams::new()
                .n_xv(5)
                .max_iter(8)
                .seed(seed)
                .gamma(gamma);
            let fd = params.fit(&dense, &labels)?;
            let fs = params.fit(&sparse, &labels)?;
            assert_relative_eq!(fd.gamma, fs.gamma, max_relative = 1e-12);
            assert!(fd.initial_xv == fs.initial_xv);
            assert_eq!(fd.n_iter, fs.n_iter);
            // g, the coefficients and the predictions agree to rounding amplified by the
            // descent; an XV can sit in a flat direction of g (e.g. far from all instances),
            // where rounding differences of the gradient move it more: a looser bound there.
            assert!(max_abs_diff(&fd.model.coef, &fs.model.coef) < 1e-8);
            assert!(max_abs_diff(&fd.model.xv.to_dense(), &fs.model.xv.to_dense()) < 1e-5);
            assert!(rel_err(fs.model.intercept.iter(), fd.model.intercept.iter()) < 1e-9);
            assert!(rel_err(fs.objective_history.iter(), fd.objective_history.iter()) < 1e-9);
            let pd = fd.model.decision_function(&dense)?;
            let ps = fd.model.decision_function(&sparse)?;
            assert!(
                max_abs_diff(&pd, &ps) < 1e-12,
                "one model, dense vs sparse bags"
            );
            let ps = fs.model.decision_function(&sparse)?;
            assert!(
                max_abs_diff(&pd, &ps) < 1e-9,
                "the two fitted models' predictions"
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 7. Validation errors
// ---------------------------------------------------------------------------------------------

fn expect_invalid_data<T: std::fmt::Debug>(r: milsvm::Result<T>, what: &str) {
    match r {
        Err(Error::InvalidData(_)) => {}
        other => panic!("{what}: expected InvalidData, got {other:?}"),
    }
}

#[test]
fn bags_reject_malformed_input() {
    let x = Array2::from_shape_fn((5, 2), |(i, j)| (i + j) as f64);
    let ok = Bags::new(Instances::from(x.clone()), vec![0, 2, 5]);
    assert!(ok.is_ok());

    expect_invalid_data(Bags::new(Instances::from(x.clone()), vec![0]), "no bags");
    expect_invalid_data(Bags::new(Instances::from(x.clone()), vec![]), "no offsets");
    expect_invalid_data(
        Bags::new(Instances::from(x.clone()), vec![0, 2, 2, 5]),
        "empty bag",
    );
    expect_invalid_data(
        Bags::new(Instances::from(x.clone()), vec![0, 3, 2, 5]),
        "decreasing offsets",
    );
    expect_invalid_data(
        Bags::new(Instances::from(x.clone()), vec![1, 2, 5]),
        "offsets not starting at 0",
    );
    expect_invalid_data(
        Bags::new(Instances::from(x.clone()), vec![0, 2, 4]),
        "offsets not ending at n",
    );
    expect_invalid_data(
        Bags::new(Instances::from(x.clone()), vec![0, 2, 6]),
        "offsets beyond n",
    );
    expect_invalid_data(
        Bags::new(Instances::from(Array2::zeros((3, 0))), vec![0, 3]),
        "zero features",
    );
    expect_invalid_data(
        Bags::new(
            Instances::Sparse(Csr::new(3, 0, vec![0, 0, 0, 0], vec![], vec![]).expect("csr")),
            vec![0, 3],
        ),
        "zero features (sparse)",
    );
    expect_invalid_data(
        Bags::new(Instances::from(Array2::zeros((0, 2))), vec![0, 0]),
        "no instances",
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut y = x.clone();
        y[[3, 1]] = bad;
        let err = Bags::new(Instances::from(y), vec![0, 2, 5]);
        expect_invalid_data(err.clone(), "non-finite dense value");
        // The message locates the value: bag 1, instance 1.
        let msg = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("bag 1"), "{msg}");
        expect_invalid_data(
            Csr::new(2, 3, vec![0, 1, 2], vec![0, 2], vec![1.0, bad]),
            "non-finite CSR value",
        );
    }

    // from_dense_bags
    expect_invalid_data(Bags::from_dense_bags(&[]), "no dense bags");
    expect_invalid_data(
        Bags::from_dense_bags(&[Array2::zeros((2, 3)), Array2::zeros((2, 2))]),
        "ragged features",
    );
    expect_invalid_data(
        Bags::from_dense_bags(&[Array2::zeros((2, 3)), Array2::zeros((0, 3))]),
        "empty dense bag",
    );
    let b = Bags::from_dense_bags(&[Array2::ones((2, 3)), Array2::zeros((1, 3))]).expect("bags");
    assert_eq!(b.bag_ptr(), &[0, 2, 3]);
    assert_eq!(b.n_instances(), 3);
    expect_invalid_data(b.select_bags(&[0, 2]), "bag index out of range");
    expect_invalid_data(b.select_bags(&[]), "no bags selected");
}

#[test]
fn csr_rejects_malformed_input() {
    // indptr of the wrong length
    expect_invalid_data(
        Csr::new(2, 3, vec![0, 1], vec![0], vec![1.0]),
        "short indptr",
    );
    // indptr not starting at 0
    expect_invalid_data(
        Csr::new(2, 3, vec![1, 1, 2], vec![0, 1], vec![1.0, 2.0]),
        "indptr[0] != 0",
    );
    // indptr not ending at nnz
    expect_invalid_data(
        Csr::new(2, 3, vec![0, 1, 1], vec![0, 1], vec![1.0, 2.0]),
        "indptr end != nnz",
    );
    // decreasing indptr
    expect_invalid_data(
        Csr::new(3, 3, vec![0, 2, 1, 2], vec![0, 1], vec![1.0, 2.0]),
        "decreasing indptr",
    );
    // indices and data of different lengths
    expect_invalid_data(
        Csr::new(1, 3, vec![0, 2], vec![0, 1], vec![1.0]),
        "indices/data mismatch",
    );
    // column index out of range
    expect_invalid_data(
        Csr::new(2, 3, vec![0, 1, 2], vec![0, 3], vec![1.0, 2.0]),
        "column out of range",
    );
    // A valid matrix with unsorted and duplicate columns: duplicates add up.
    let m = Csr::new(2, 3, vec![0, 3, 3], vec![2, 0, 2], vec![1.0, 2.0, 4.0]).expect("valid");
    assert_eq!(m.to_dense(), array![[2.0, 0.0, 5.0], [0.0, 0.0, 0.0]]);
    assert_eq!(m.nnz(), 3);
    let inst = Instances::Sparse(m);
    assert_eq!(inst.dense_row(0), vec![2.0, 0.0, 5.0]);
    assert_eq!(inst.sq_norms(), vec![4.0 + 1.0 + 16.0, 0.0]);
}

#[test]
fn dense_rows_and_blocks_expand_the_chosen_rows() {
    // Unsorted and duplicate columns (duplicates add up), an empty row, rows chosen twice.
    let m = Csr::new(
        3,
        3,
        vec![0, 3, 3, 5],
        vec![2, 0, 2, 1, 1],
        vec![1.0, 2.0, 4.0, -1.0, 0.5],
    )
    .expect("valid");
    let dense = m.to_dense();
    for inst in [Instances::Sparse(m), Instances::from(dense.clone())] {
        assert_eq!(
            inst.dense_rows(&[2, 0, 2]),
            dense.select(Axis(0), &[2, 0, 2])
        );
        assert_eq!(inst.dense_rows(&[]).dim(), (0, 3));
        assert_eq!(inst.dense_block(1, 3), dense.select(Axis(0), &[1, 2]));
    }
}

#[test]
fn labels_are_validated() {
    let x = Array2::from_shape_fn((6, 2), |(i, j)| (i * j) as f64);
    let bags = Bags::new(Instances::from(x), vec![0, 2, 4, 6]).expect("bags");
    assert_eq!(validate_labels(&bags, &[0, 1, 0]), Ok(2));
    assert_eq!(validate_labels(&bags, &[2, 1, 0]), Ok(3));
    expect_invalid_data(validate_labels(&bags, &[1, 1, 1]), "single class");
    expect_invalid_data(validate_labels(&bags, &[0, 0, 0]), "single class 0");
    expect_invalid_data(validate_labels(&bags, &[0, 1]), "too few labels");
    expect_invalid_data(validate_labels(&bags, &[0, 1, 0, 1]), "too many labels");
    expect_invalid_data(validate_labels(&bags, &[0, 2, 0]), "class 1 missing");
    // fit reports the same errors
    expect_invalid_data(SparseMiParams::new().n_xv(2).fit(&bags, &[1, 1, 1]), "fit");
}

#[test]
fn labels_with_a_huge_class_index_are_an_error_not_a_panic() {
    let x = Array2::from_shape_fn((4, 2), |(i, j)| (i * j) as f64);
    let bags = Bags::new(Instances::from(x), vec![0, 2, 4]).expect("bags");
    expect_invalid_data(validate_labels(&bags, &[0, usize::MAX]), "usize::MAX label");
}

fn expect_param_error<T: std::fmt::Debug>(r: milsvm::Result<T>, name: &str) {
    match r {
        Err(e @ Error::InvalidParameter(_)) => {
            let msg = e.to_string();
            assert!(msg.contains(name), "message {msg:?} does not name {name:?}");
        }
        other => panic!("{name}: expected InvalidParameter, got {other:?}"),
    }
}

#[test]
fn sparse_mi_params_are_validated() -> TestResult {
    let p = SparseMiParams::new;
    assert!(p().validate().is_ok());
    assert!(SparseMiParams::rsvm().validate().is_ok());
    for c in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        expect_param_error(p().c(c).validate(), "C");
    }
    expect_param_error(p().n_xv(0).validate(), "n_xv");
    for g in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        expect_param_error(p().gamma(Gamma::Value(g)).validate(), "gamma");
    }
    expect_param_error(p().max_line_search(0).validate(), "max_line_search");
    for t in [-1e-9, f64::NAN, f64::INFINITY] {
        expect_param_error(p().tol(t).validate(), "tol");
    }
    expect_param_error(p().n_jobs(Some(0)).validate(), "n_jobs");
    for t in [0.0, 1.0, -0.5, f64::NAN] {
        expect_param_error(p().inner_tol(Some(t)).validate(), "inner_tol");
    }
    expect_param_error(p().inner_max_iter(0).validate(), "inner_max_iter");
    expect_param_error(p().ridge(-1.0).validate(), "ridge");
    expect_param_error(
        p().n_xv(3).init_xv(Some(Array2::zeros((2, 2)))).validate(),
        "init_xv",
    );
    expect_param_error(
        p().n_xv(1)
            .init_xv(Some(array![[0.0, f64::NAN]]))
            .validate(),
        "init_xv",
    );
    // Edge values that are allowed.
    assert!(p().tol(0.0).validate().is_ok());
    assert!(p().n_jobs(Some(1)).validate().is_ok());
    assert!(p().gamma(Gamma::Value(1e-12)).validate().is_ok());

    // fit validates too, and checks n_xv and init_xv against the data.
    let mut rng = rng(900);
    let (bags, labels) = random_bags(&mut rng, 4, 3, 2);
    let n = bags.n_instances();
    expect_param_error(p().c(-1.0).fit(&bags, &labels), "C");
    expect_param_error(p().n_xv(n + 1).fit(&bags, &labels), "n_xv");
    assert!(p().n_xv(n).max_iter(1).fit(&bags, &labels).is_ok());
    expect_param_error(
        p().n_xv(2)
            .init_xv(Some(Array2::zeros((2, 4))))
            .fit(&bags, &labels),
        "init_xv",
    );
    // init_xv may hold more XVs than there are instances.
    let many = normal_matrix(&mut rng, n + 2, 3, 1.0);
    let fit = p()
        .n_xv(n + 2)
        .max_iter(1)
        .init_xv(Some(many.clone()))
        .fit(&bags, &labels)?;
    assert!(fit.initial_xv == many);
    // objective_and_gradient validates its parameters as well.
    expect_param_error(
        objective_and_gradient(&p().c(0.0), &bags, &labels, many),
        "C",
    );
    Ok(())
}

#[test]
fn model_prediction_checks_its_input() -> TestResult {
    let mut rng = rng(950);
    for n_classes in [2, 3] {
        let (bags, labels) = random_bags(&mut rng, 12, 3, n_classes);
        let fit = SparseMiParams::new()
            .n_xv(4)
            .max_iter(3)
            .fit(&bags, &labels)?;
        let model = &fit.model;
        assert_eq!(model.n_features(), 3);
        let wrong = Bags::new(Instances::from(Array2::zeros((3, 4))), vec![0, 3])?;
        assert!(matches!(
            model.decision_function(&wrong),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            model.instance_decision_function(wrong.instances()),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            model.decision_function_bag(&[1.0, 2.0, 3.0, 4.0]),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            model.decision_function_bag(&[]),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            model.decision_function_bag(&[1.0, f64::NAN, 3.0]),
            Err(Error::InvalidData(_))
        ));

        // decision_function_bag agrees with decision_function bag by bag, and the bag score is
        // the mean of the instance scores (label-mean model).
        let scores = model.decision_function(&bags)?;
        let inst = model.instance_decision_function(bags.instances())?;
        let Instances::Dense(x) = bags.instances() else {
            return Err("dense bags expected".into());
        };
        for i in 0..bags.n_bags() {
            let range = bags.bag_range(i);
            let flat: Vec<f64> = x
                .view()
                .slice(ndarray::s![range.clone(), ..])
                .iter()
                .copied()
                .collect();
            let one = model.decision_function_bag(&flat)?;
            assert_eq!(one.len(), scores.ncols());
            let mean = inst
                .slice(ndarray::s![range, ..])
                .mean_axis(Axis(0))
                .ok_or("empty bag")?;
            for (o, s) in one.iter().enumerate() {
                assert_relative_eq!(*s, scores[[i, o]], epsilon = 1e-12, max_relative = 1e-12);
                assert_relative_eq!(
                    mean[o],
                    scores[[i, o]],
                    epsilon = 1e-12,
                    max_relative = 1e-12
                );
            }
        }
    }
    Ok(())
}

/// Newton solves that reuse one `NewtonHessian` (`state`), each warm-started where the last
/// ended (`warm`).
#[derive(Default)]
struct Reusing {
    state: Option<NewtonHessian>,
    warm: Option<(Array1<f64>, f64)>,
}

impl Reusing {
    /// The next solve, checked against a fresh solve (its state kept in `fresh`) to a relative
    /// 1e-9 in the objective.
    fn solve(
        &mut self,
        p: &SquaredHinge<'_>,
        fresh: &mut Option<NewtonHessian>,
        tol: f64,
        round: usize,
    ) -> Result<Solution, Box<dyn std::error::Error>> {
        let warm = self.warm.as_ref().map(|(beta, b)| (beta.view(), *b));
        let reused = p.solve_newton_reusing(warm, tol, 100, &mut self.state)?;
        let want = p.solve_newton_reusing(None, tol, 100, fresh)?;
        let rel = (reused.value - want.value).abs() / want.value.abs();
        let (got, wanted) = (reused.value, want.value);
        assert!(rel < 1e-9, "round {round}: {got} vs {wanted}");
        self.warm = Some((reused.beta.clone(), reused.b));
        Ok(reused)
    }
}

#[test]
fn newton_reusing_state_with_few_changed_rows() -> TestResult {
    // Rounds that change the costs or targets of a few rows (the kept gradient at zero is then
    // updated by those rows only), and rounds that flip the targets of rows inside the margin
    // on both sides (their curvature stays, so the first Newton step reuses the kept Cholesky
    // factor): every solve equals a fresh one, and the kept stopping scale equals the fresh one's.
    let mut rng = rng(92);
    let mut data = HingeData::random(&mut rng, 12, 60, 2.0, true);
    let mut run = Reusing::default();
    for round in 0..8 {
        if round % 2 == 0 {
            for _ in 0..3 {
                let r = rng.random_range(0..data.c.len());
                data.c[r] *= rng.random_range(0.5..1.5);
                let r = rng.random_range(0..data.y.len());
                data.y[r] = -data.y[r];
            }
        } else if let Some((beta, b)) = &run.warm {
            let f = data.problem().scores(beta.view(), *b);
            let inside: Vec<usize> = (0..f.len()).filter(|&r| f[r].abs() < 1.0).collect();
            assert!(
                !inside.is_empty(),
                "round {round}: no row inside the margin"
            );
            for &r in inside.iter().take(3) {
                data.y[r] = -data.y[r];
            }
        }
        let p = data.problem();
        let mut fresh_state = None;
        run.solve(&p, &mut fresh_state, 1e-11, round)?;
        let kept = run.state.as_ref().and_then(|s| s.zero_gradient_norm());
        let want = fresh_state.as_ref().and_then(|s| s.zero_gradient_norm());
        let (kept, want) = (kept.ok_or("no kept scale")?, want.ok_or("no fresh scale")?);
        assert!(
            (kept - want).abs() <= 1e-12 * want,
            "round {round}: {kept} vs {want}"
        );
    }
    Ok(())
}

/// Newton solves that reuse one `NewtonHessian` across changing costs (the annealing pattern)
/// reach the optimum of a fresh solve, and the scores they carry are `X beta + b`; the carried
/// scores are offered only at the exact point where the last solve ended.
#[test]
fn newton_reusing_state_carries_exact_scores() -> TestResult {
    let mut rng = rng(91);
    let mut data = HingeData::random(&mut rng, 12, 60, 2.0, true);
    let mut run = Reusing::default();
    for round in 0..5 {
        for c in data.c.iter_mut() {
            *c *= rng.random_range(0.5..1.5);
        }
        let p = data.problem();
        let reused = run.solve(&p, &mut None, 1e-10, round)?;
        let carried = run
            .state
            .as_ref()
            .and_then(|s| s.scores_at(reused.beta.view(), reused.b))
            .ok_or("no scores carried")?
            .clone();
        let direct = p.scores(reused.beta.view(), reused.b);
        let err = carried
            .iter()
            .zip(direct.iter())
            .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err < 1e-10, "round {round}: carried scores off by {err}");
        let mut moved = reused.beta.clone();
        moved[0] += 1e-3;
        let s = run.state.as_ref().ok_or("no state")?;
        assert!(s.scores_at(moved.view(), reused.b).is_none());
        assert!(s.scores_at(reused.beta.view(), reused.b + 1e-3).is_none());
    }
    Ok(())
}
