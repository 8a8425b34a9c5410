//! The linear primal solver (`solver::linear`): its minimiser against the crate's exact Newton
//! solver of the same problem written as a basis problem (`K = I`, design `X`), against a naive
//! objective and its finite-difference gradient, dense against CSR, warm against cold starts,
//! the same bits for 1 and 2 threads; and the annealing family's linear route against its dual
//! route on the same data.

mod common;

use common::{rng, to_csr, toy, TestResult};
use milsvm::annealing::{AnnealingMethod, AnnealingParams, BasisSize};
use milsvm::bags::Instances;
use milsvm::fit::ParamGuard;
use milsvm::solver::linear::{mean_row, LinearSquaredHinge};
use milsvm::solver::{InnerSolver, Solution, SquaredHinge};
use milsvm::Cancel;
use milsvm::Fit;
use milsvm::KernelKind;
use milsvm::SvmRoute;
use ndarray::Array2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn problem(seed: u64, n: usize, d: usize) -> (Array2<f64>, Vec<f64>, Vec<f64>) {
    let mut r: ChaCha8Rng = rng(seed);
    let x = Array2::from_shape_simple_fn((n, d), || r.random::<f64>() * 2.0 - 1.0);
    // Costs of both targets, some zero: plain labels, AL-style soft labels, dropped rows.
    let mut c_pos = vec![0.0; n];
    let mut c_neg = vec![0.0; n];
    for j in 0..n {
        match r.random_range(0..4) {
            0 => c_pos[j] = r.random::<f64>() * 3.0,
            1 => c_neg[j] = r.random::<f64>() * 3.0,
            2 => {
                let p = r.random::<f64>();
                c_pos[j] = 2.0 * p;
                c_neg[j] = 2.0 * (1.0 - p);
            }
            _ => {}
        }
    }
    (x, c_pos, c_neg)
}

/// The same problem as a basis problem (`K = I`, design `X`), by the crate's exact Newton
/// solver: the reference of the linear solver.
fn exact_newton(x: &Array2<f64>, c_pos: &[f64], c_neg: &[f64]) -> milsvm::Result<Solution> {
    let ones = vec![1.0; x.nrows()];
    let eye = Array2::eye(x.ncols());
    SquaredHinge {
        k: eye.view(),
        x: x.view(),
        y: &ones,
        c: c_pos,
        c_opp: c_neg,
    }
    .solve(InnerSolver::Newton, None, 1e-12, 200)
}

/// The objective written out naively.
fn objective(x: &Array2<f64>, c_pos: &[f64], c_neg: &[f64], w: &[f64], b: f64) -> f64 {
    let mut j = 0.5 * w.iter().map(|v| v * v).sum::<f64>();
    for (r, row) in x.rows().into_iter().enumerate() {
        let f: f64 = row.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() + b;
        j += c_pos[r] * (1.0 - f).max(0.0).powi(2) + c_neg[r] * (1.0 + f).max(0.0).powi(2);
    }
    j
}

#[test]
fn the_minimiser_equals_exact_newton_on_the_basis_form() -> TestResult {
    for seed in 0..6 {
        let (x, c_pos, c_neg) = problem(seed, 60 + 10 * seed as usize, 2 + seed as usize);
        let d = x.ncols();
        let inst = Instances::from(x.clone());
        let ours = LinearSquaredHinge {
            x: &inst,
            bag_ptr: &one_row_bags(&inst),
            c_pos: &c_pos,
            c_neg: &c_neg,
            mean: None,
        }
        .solve(None, 1e-12, 200, &Cancel::new())?;
        assert!(ours.converged, "seed {seed}: not converged");
        let reference = exact_newton(&x, &c_pos, &c_neg)?;
        for (a, b) in ours.w.iter().zip(reference.beta.iter()) {
            assert!(
                (a - b).abs() <= 1e-7 * (1.0 + b.abs()),
                "seed {seed}: w {a} vs {b}"
            );
        }
        assert!(
            (ours.b - reference.b).abs() <= 1e-7 * (1.0 + reference.b.abs()),
            "seed {seed}: b"
        );
        let naive = objective(&x, &c_pos, &c_neg, ours.w.as_slice().unwrap(), ours.b);
        assert!(
            (ours.value - naive).abs() <= 1e-9 * naive.max(1.0),
            "seed {seed}: value"
        );
        // The minimiser: no coordinate move lowers the naive objective.
        let h = 1e-5;
        for k in 0..=d {
            let mut w = ours.w.to_vec();
            let mut b = ours.b;
            let (mut up_w, mut up_b) = (w.clone(), b);
            if k < d {
                up_w[k] += h;
                w[k] -= h;
            } else {
                up_b += h;
                b -= h;
            }
            let grad = (objective(&x, &c_pos, &c_neg, &up_w, up_b)
                - objective(&x, &c_pos, &c_neg, &w, b))
                / (2.0 * h);
            assert!(
                grad.abs() <= 1e-5 * naive.max(1.0),
                "seed {seed}: gradient {k} = {grad}"
            );
        }
        for (j, row) in x.rows().into_iter().enumerate() {
            let f: f64 = row
                .iter()
                .zip(ours.w.iter())
                .map(|(a, b)| a * b)
                .sum::<f64>()
                + ours.b;
            assert!((f - ours.scores[j]).abs() <= 1e-10 * (1.0 + f.abs()));
        }
    }
    Ok(())
}

#[test]
fn dense_csr_warm_and_thread_counts_agree() -> TestResult {
    let (mut x, c_pos, c_neg) = problem(11, 5000, 7);
    x.mapv_inplace(|v| if v.abs() < 0.4 { 0.0 } else { v });
    let dense = Instances::from(x.clone());
    let sparse = Instances::Sparse(to_csr(&x, false));
    let cancel = Cancel::new();
    let solve = |inst: &Instances, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            LinearSquaredHinge {
                x: inst,
                bag_ptr: &one_row_bags(inst),
                c_pos: &c_pos,
                c_neg: &c_neg,
                mean: None,
            }
            .solve(None, 1e-10, 200, &cancel)
            .unwrap()
        })
    };
    let one = solve(&dense, 1);
    let two = solve(&dense, 2);
    assert_eq!(one.w, two.w, "thread count changed w");
    assert_eq!(one.b.to_bits(), two.b.to_bits());
    // A column-major matrix (not standard layout) is read through a row-major copy.
    let fortran = Instances::from(x.t().to_owned().reversed_axes());
    assert_eq!(solve(&fortran, 2).w, one.w);
    let csr = solve(&sparse, 2);
    for (a, b) in one.w.iter().zip(csr.w.iter()) {
        assert!((a - b).abs() <= 1e-8 * (1.0 + a.abs()));
    }
    // A warm start at the solution ends at once; from a perturbed point it finds it again.
    let problem = LinearSquaredHinge {
        x: &dense,
        bag_ptr: &one_row_bags(&dense),
        c_pos: &c_pos,
        c_neg: &c_neg,
        mean: None,
    };
    let again = problem.solve(
        Some((one.w.as_slice().unwrap(), one.b)),
        1e-10,
        200,
        &cancel,
    )?;
    assert_eq!(again.n_iter, 0);
    let moved: Vec<f64> = one.w.iter().map(|v| v + 0.3).collect();
    let back = problem.solve(Some((&moved, one.b - 0.2)), 1e-10, 200, &cancel)?;
    for (a, b) in one.w.iter().zip(back.w.iter()) {
        assert!((a - b).abs() <= 1e-7 * (1.0 + a.abs()));
    }
    // Cancellation is seen at the first step.
    let stop = Cancel::new();
    stop.cancel();
    assert!(problem.solve(None, 1e-10, 200, &stop).is_err());
    Ok(())
}

#[test]
fn the_annealing_family_gives_the_same_classifier_by_both_routes() -> TestResult {
    let (bags, labels) = toy(3, 30);
    for method in [
        AnnealingMethod::MiSvm,
        AnnealingMethod::MISvm,
        AnnealingMethod::Al,
        AnnealingMethod::Aw,
    ] {
        let fit = |route: SvmRoute, tol: f64| {
            AnnealingParams::new()
                .method(method)
                .kernel(KernelKind::Linear)
                .solver(route)
                .inner_tol(Some(tol))
                .check_ref()
                .unwrap()
                .fit(&bags, &labels)
                .unwrap()
        };
        let linear = fit(SvmRoute::Linear, 1e-10);
        let kernel = fit(SvmRoute::Kernel, 1e-8);
        assert_eq!(linear.solver, SvmRoute::Linear);
        assert_eq!(kernel.solver, SvmRoute::Kernel);
        assert_eq!(fit(SvmRoute::Auto, 1e-6).solver, SvmRoute::Linear);
        let a = linear.model.decision_function(&bags)?;
        let b = kernel.model.decision_function(&bags)?;
        let scale = b.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        for (u, v) in a.iter().zip(b.iter()) {
            assert!((u - v).abs() <= 1e-5 * scale, "{method:?}: {u} vs {v}");
        }
    }
    // The linear route refuses what it cannot do.
    let message = |params: AnnealingParams| params.check_ref().map(|_| ()).unwrap_err().to_string();
    assert!(message(AnnealingParams::new().solver(SvmRoute::Linear))
        .contains("solver='linear' needs kernel='linear'"));
    let reduced = AnnealingParams::new()
        .kernel(KernelKind::Linear)
        .solver(SvmRoute::Linear)
        .n_xv(BasisSize::Vectors(3));
    assert!(message(reduced).contains("takes no reduced basis"));
    Ok(())
}

/// Rows far from the origin (embeddings of non-negative activations): translating every row by
/// `c` leaves `w` and the scores alone and moves the bias to `b - c . w` (the solver works on
/// centred rows and converts the bias back).
#[test]
fn a_translated_problem_has_the_same_w_and_a_shifted_bias() -> TestResult {
    let cancel = Cancel::new();
    for seed in 0..4 {
        let (x, c_pos, c_neg) = problem(40 + seed, 400, 6);
        let shift: Vec<f64> = (0..x.ncols()).map(|k| 20.0 + 10.0 * k as f64).collect();
        let mut far = x.clone();
        for mut row in far.rows_mut() {
            row.iter_mut().zip(&shift).for_each(|(v, s)| *v += s);
        }
        let solve = |x: &Array2<f64>| {
            let inst = Instances::from(x.clone());
            LinearSquaredHinge {
                x: &inst,
                bag_ptr: &one_row_bags(&inst),
                c_pos: &c_pos,
                c_neg: &c_neg,
                mean: None,
            }
            .solve(None, 1e-10, 500, &cancel)
        };
        let (near, moved) = (solve(&x)?, solve(&far)?);
        assert!(
            near.converged && moved.converged,
            "seed {seed}: not converged"
        );
        for (a, b) in near.w.iter().zip(moved.w.iter()) {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + a.abs()),
                "seed {seed}: w {a} vs {b}"
            );
        }
        let cw: f64 = shift.iter().zip(moved.w.iter()).map(|(c, w)| c * w).sum();
        assert!(
            (near.b - (moved.b + cw)).abs() <= 1e-6 * (1.0 + near.b.abs()),
            "seed {seed}: b {} vs {}",
            near.b,
            moved.b + cw
        );
        for (a, b) in near.scores.iter().zip(&moved.scores) {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + a.abs()),
                "seed {seed}: scores"
            );
        }
    }
    Ok(())
}

/// With at most `4 (d + 1)` active rows the sketched-Hessian preconditioner holds every one of
/// them, so it is the Hessian and each Newton system is solved by one conjugate-gradient step;
/// the minimiser is the exact Newton solver's. A warm start from a previous solution (its
/// scores spare a pass) and a mean row given by the caller change nothing.
#[test]
fn a_sketch_of_every_active_row_makes_each_newton_step_exact() -> TestResult {
    let cancel = Cancel::new();
    for seed in 0..5 {
        let d = 5 + seed as usize;
        let (x, c_pos, c_neg) = problem(70 + seed, 4 * (d + 1), d);
        let inst = Instances::from(x.clone());
        let problem = LinearSquaredHinge {
            x: &inst,
            bag_ptr: &one_row_bags(&inst),
            c_pos: &c_pos,
            c_neg: &c_neg,
            mean: None,
        };
        let sol = problem.solve(None, 1e-10, 200, &cancel)?;
        assert!(sol.converged && sol.n_iter > 0, "seed {seed}");
        assert_eq!(
            sol.n_cg, sol.n_iter,
            "seed {seed}: one CG step per Newton step"
        );
        let reference = exact_newton(&x, &c_pos, &c_neg)?;
        for (a, b) in sol.w.iter().zip(reference.beta.iter()) {
            assert!((a - b).abs() <= 1e-7 * (1.0 + b.abs()), "seed {seed}: w");
        }
        // the mean row given: the same bits
        let mean = mean_row(&inst, problem.bag_ptr);
        let given = LinearSquaredHinge {
            mean: Some(&mean),
            ..problem
        }
        .solve(None, 1e-10, 200, &cancel)?;
        assert_eq!(given.w, sol.w);
        assert_eq!(given.b.to_bits(), sol.b.to_bits());
        // other costs, warm from this solution with and without its scores
        let c_pos2: Vec<f64> = c_pos.iter().map(|c| 0.5 * c).collect();
        let next = LinearSquaredHinge {
            c_pos: &c_pos2,
            ..problem
        };
        let from = next.solve_from(Some(&sol), 1e-10, 200, &cancel)?;
        let plain = next.solve(
            Some((sol.w.as_slice().unwrap(), sol.b)),
            1e-10,
            200,
            &cancel,
        )?;
        assert!(from.converged);
        for (a, b) in from.w.iter().zip(plain.w.iter()) {
            assert!(
                (a - b).abs() <= 1e-8 * (1.0 + b.abs()),
                "seed {seed}: warm w"
            );
        }
        let naive = objective(&x, &c_pos2, &c_neg, from.w.as_slice().unwrap(), from.b);
        assert!((from.value - naive).abs() <= 1e-9 * naive.max(1.0));
    }
    Ok(())
}

/// One bag per row: the leaves of the linear solver's sums.
fn one_row_bags(x: &milsvm::bags::Instances) -> Vec<usize> {
    (0..=x.n_rows()).collect()
}
