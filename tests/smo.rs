//! Tests of the SMO dual solver (`milsvm::smo`) against the interior-point solver Clarabel on
//! small random problems (hinge C-SVM with per-sample bounds, L2-loss SVM with duplicated points,
//! one-class SVM), plus KKT conditions, cache size, warm starts, thread-count independence, the
//! iteration cap and input validation.

mod common;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use common::{rng, to_csr, TestResult};
use milsvm::bags::Rows;
use milsvm::kernel::Kernel;
use milsvm::progress::StopReason;
use milsvm::smo::{
    DualArrays, DualSolution, GramRows, InstanceGram, PrecomputedGram, Smo, SmoParams,
};
use milsvm::Error;
use ndarray::Array2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn random_points(rng: &mut ChaCha8Rng, n: usize, dim: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, dim), |_| rng.random::<f64>() * 2.0 - 1.0)
}

/// `n` random points of `dim` coordinates from the generator of `seed`, returned with it (it
/// draws the problem next).
fn seeded_points(seed: u64, n: usize, dim: usize) -> (ChaCha8Rng, Array2<f64>) {
    let mut r = rng(seed);
    let x = random_points(&mut r, n, dim);
    (r, x)
}

/// The Gaussian-kernel Gram of the rows of `x`, its rows computed on demand (through the
/// solver's row cache, which these tests exercise; a fit stores a small matrix whole).
fn rbf_gram(x: &Array2<f64>, gamma: f64) -> milsvm::Result<InstanceGram<'_>> {
    Ok(InstanceGram::new(rbf(gamma), Rows::Dense(x.view()))?.with_store_limit(0))
}

/// Hinge C-SVM: one sample per point, per-sample bounds `C w_i`, a dead sample now and then.
fn hinge_problem(rng: &mut ChaCha8Rng, n: usize) -> DualArrays {
    let mut y: Vec<f64> = (0..n)
        .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
        .collect();
    y[0] = 1.0;
    y[1] = -1.0;
    let c = 0.3 + 3.0 * rng.random::<f64>();
    let mut u: Vec<f64> = (0..n)
        .map(|_| c * (0.5 + 1.5 * rng.random::<f64>()))
        .collect();
    if n > 6 {
        u[n - 1] = 0.0;
    }
    DualArrays {
        y,
        point: (0..n).collect(),
        p: vec![1.0; n],
        d: vec![0.0; n],
        u,
        delta: 0.0,
    }
}

/// L2-loss SVM over `np` points: each point once, about half of them again with the other label.
fn l2_problem(rng: &mut ChaCha8Rng, np: usize) -> DualArrays {
    let mut o = DualArrays::default();
    for m in 0..np {
        let label = if rng.random::<bool>() { 1.0 } else { -1.0 };
        let copies: &[f64] = if rng.random::<bool>() {
            &[1.0, -1.0]
        } else {
            &[1.0]
        };
        for &s in copies {
            let c = 0.2 + 5.0 * rng.random::<f64>();
            o.y.push(label * s);
            o.point.push(m);
            o.p.push(1.0);
            o.d.push(1.0 / (2.0 * c));
            o.u.push(f64::INFINITY);
        }
    }
    o
}

/// One-class SVM: `y = 1, p = 0, delta = 1, u = 1/(nu n)`.
fn one_class_problem(n: usize, nu: f64) -> DualArrays {
    DualArrays {
        y: vec![1.0; n],
        point: (0..n).collect(),
        p: vec![0.0; n],
        d: vec![0.0; n],
        u: vec![1.0 / (nu * n as f64); n],
        delta: 1.0,
    }
}

/// One positive and one negative sample on two points, each with the bound `u`.
fn two_points(u: f64) -> DualArrays {
    DualArrays {
        y: vec![1.0, -1.0],
        point: vec![0, 1],
        p: vec![1.0, 1.0],
        d: vec![0.0, 0.0],
        u: vec![u; 2],
        delta: 0.0,
    }
}

/// The dense kernel matrix of a Gram.
fn dense_gram<G: GramRows>(g: &G) -> Array2<f64> {
    let n = g.n_points();
    let mut k = Array2::zeros((n, n));
    for i in 0..n {
        let mut row = vec![0.0; n];
        g.fill_row(i, &mut row);
        for j in 0..n {
            k[[i, j]] = row[j];
        }
    }
    k
}

/// `Q + diag(d)` of a problem.
fn qbar(k: &Array2<f64>, pr: &DualArrays) -> Array2<f64> {
    let n = pr.y.len();
    Array2::from_shape_fn((n, n), |(i, j)| {
        pr.y[i] * pr.y[j] * k[[pr.point[i], pr.point[j]]] + if i == j { pr.d[i] } else { 0.0 }
    })
}

/// Optimal objective by Clarabel.
fn clarabel_objective(k: &Array2<f64>, pr: &DualArrays) -> Result<f64, Box<dyn std::error::Error>> {
    let n = pr.y.len();
    let q = qbar(k, pr);
    let mut rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| if j >= i { q[[i, j]] } else { 0.0 })
                .collect()
        })
        .collect();
    let p_mat = CscMatrix::from(rows.iter().map(|r| r.iter()));
    let lin: Vec<f64> = pr.p.iter().map(|v| -v).collect();
    // y^T a = delta; -a <= 0; a <= u (finite u only).
    rows.clear();
    let mut b = vec![];
    rows.push(pr.y.clone());
    b.push(pr.delta);
    for i in 0..n {
        let mut r = vec![0.0; n];
        r[i] = -1.0;
        rows.push(r);
        b.push(0.0);
    }
    let mut n_fin = 0;
    for i in 0..n {
        if pr.u[i].is_finite() {
            let mut r = vec![0.0; n];
            r[i] = 1.0;
            rows.push(r);
            b.push(pr.u[i]);
            n_fin += 1;
        }
    }
    let a_mat = CscMatrix::from(rows.iter().map(|r| r.iter()));
    let cones = [
        SupportedConeT::ZeroConeT(1),
        SupportedConeT::NonnegativeConeT(n + n_fin),
    ];
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-11)
        .tol_gap_rel(1e-11)
        .tol_feas(1e-11)
        .build()?;
    let mut solver = DefaultSolver::new(&p_mat, &lin, &a_mat, &b, &cones, settings)?;
    solver.solve();
    let status = solver.solution.status;
    assert!(
        matches!(status, SolverStatus::Solved | SolverStatus::AlmostSolved),
        "clarabel status {status:?}"
    );
    Ok(solver.solution.obj_val)
}

/// Checks feasibility, `q_alpha`, the objective and the KKT gap (`m(a) - M(a) <= gap_tol`).
fn check_solution(k: &Array2<f64>, pr: &DualArrays, sol: &DualSolution, gap_tol: f64) {
    let n = pr.y.len();
    let ya: f64 = sol.alpha.iter().zip(&pr.y).map(|(a, y)| a * y).sum();
    assert!(
        (ya - pr.delta).abs() <= 1e-10,
        "y^T a = {ya} != {}",
        pr.delta
    );
    for i in 0..n {
        assert!(
            sol.alpha[i] >= 0.0 && sol.alpha[i] <= pr.u[i],
            "alpha[{i}] out of box"
        );
    }
    let q = qbar(k, pr);
    let mut obj = 0.0;
    let (mut m_up, mut m_low) = (f64::NEG_INFINITY, f64::INFINITY);
    for i in 0..n {
        let qa: f64 =
            (0..n).map(|j| q[[i, j]] * sol.alpha[j]).sum::<f64>() - pr.d[i] * sol.alpha[i];
        assert!(
            (qa - sol.q_alpha[i]).abs() <= 1e-9 * (1.0 + qa.abs()),
            "q_alpha[{i}] = {} != {qa}",
            sol.q_alpha[i]
        );
        let g = qa + pr.d[i] * sol.alpha[i] - pr.p[i];
        obj += 0.5 * sol.alpha[i] * (g - pr.p[i]);
        if pr.u[i] == 0.0 {
            continue;
        }
        let v = -pr.y[i] * g;
        let (below_u, above_0) = (sol.alpha[i] < pr.u[i], sol.alpha[i] > 0.0);
        let in_up = (pr.y[i] > 0.0 && below_u) || (pr.y[i] < 0.0 && above_0);
        let in_low = (pr.y[i] > 0.0 && above_0) || (pr.y[i] < 0.0 && below_u);
        if in_up {
            m_up = m_up.max(v);
        }
        if in_low {
            m_low = m_low.min(v);
        }
        // Free variables give the bias.
        if below_u && above_0 {
            assert!((v - sol.b).abs() <= 10.0 * gap_tol, "b = {} vs {v}", sol.b);
        }
    }
    assert!(
        (obj - sol.objective).abs() <= 1e-9 * (1.0 + obj.abs()),
        "objective {} != {obj}",
        sol.objective
    );
    assert!(m_up - m_low <= gap_tol, "KKT gap {}", m_up - m_low);
}

/// The default settings with an iteration cap.
fn capped(max_iter: usize) -> SmoParams {
    SmoParams {
        max_iter: Some(max_iter),
        ..SmoParams::default()
    }
}

fn tight() -> SmoParams {
    SmoParams {
        tol: 1e-9,
        ..SmoParams::default()
    }
}

fn rbf(gamma: f64) -> Kernel {
    Kernel::Rbf { gamma }
}

fn assert_rel(a: f64, b: f64, rel: f64, what: &str) {
    assert!(
        (a - b).abs() <= rel * b.abs().max(1e-3),
        "{what}: {a} vs {b} (rel {})",
        (a - b).abs() / b.abs().max(1e-3)
    );
}

/// Solves `pr` on `gram` with tight settings, checks the KKT conditions and the objective
/// against clarabel's, and returns the solution with the dense kernel.
fn solve_against_clarabel(
    gram: &InstanceGram,
    pr: &DualArrays,
    what: &str,
) -> Result<(DualSolution, Array2<f64>), Box<dyn std::error::Error>> {
    let k = dense_gram(gram);
    let mut smo = Smo::new(gram, tight())?;
    let sol = smo.solve(&pr.view(), None)?;
    assert_eq!(sol.termination, StopReason::Converged);
    check_solution(&k, pr, &sol, 1e-7);
    assert_rel(sol.objective, clarabel_objective(&k, pr)?, 1e-6, what);
    Ok((sol, k))
}

#[test]
fn hinge_matches_clarabel() -> TestResult {
    for seed in 0..6 {
        let n = 5 + 7 * seed as usize;
        let (mut r, x) = seeded_points(seed, n, 3);
        let gram = rbf_gram(&x, 0.8)?;
        let pr = hinge_problem(&mut r, n);
        solve_against_clarabel(&gram, &pr, "hinge objective")?;
    }
    Ok(())
}

#[test]
fn l2_loss_with_duplicated_points_matches_clarabel() -> TestResult {
    for seed in 10..16 {
        let np = 4 + 5 * (seed as usize - 10);
        let (mut r, x) = seeded_points(seed, np, 4);
        let gram = rbf_gram(&x, 0.5)?;
        let pr = l2_problem(&mut r, np);
        let (sol, k) = solve_against_clarabel(&gram, &pr, "L2 objective")?;
        // Decision values from q_alpha and b agree with the kernel expansion.
        for i in 0..pr.y.len() {
            let f: f64 = (0..pr.y.len())
                .map(|s| pr.y[s] * sol.alpha[s] * k[[pr.point[s], pr.point[i]]])
                .sum::<f64>()
                + sol.b;
            assert!((pr.y[i] * sol.q_alpha[i] + sol.b - f).abs() < 1e-9);
        }
    }
    Ok(())
}

#[test]
fn one_class_matches_clarabel() -> TestResult {
    for seed in 20..26 {
        let n = 5 + 7 * (seed as usize - 20);
        let (_, x) = seeded_points(seed, n, 2);
        let gram = rbf_gram(&x, 1.0)?;
        let pr = one_class_problem(n, 0.3);
        solve_against_clarabel(&gram, &pr, "one-class objective")?;
    }
    Ok(())
}

#[test]
fn precomputed_and_sparse_grams_match_dense() -> TestResult {
    let (mut r, x) = seeded_points(30, 15, 5);
    // Sparsify: zero out about half the entries.
    let x = x.mapv(|v| if v.abs() < 0.5 { 0.0 } else { v });
    let csr = to_csr(&x, false);
    for kernel in [Kernel::Linear, rbf(0.7)] {
        let dense = InstanceGram::new(kernel, Rows::Dense(x.view()))?;
        let sparse = InstanceGram::new(kernel, Rows::Sparse(&csr))?;
        let (kd, ks) = (dense_gram(&dense), dense_gram(&sparse));
        for (a, b) in kd.iter().zip(ks.iter()) {
            assert!((a - b).abs() < 1e-12);
        }
        for (a, b) in dense.diagonal().iter().zip(kd.diag()) {
            assert_eq!(a, b);
        }
        let pre = PrecomputedGram::new(kd.clone())?;
        let pr = hinge_problem(&mut r, 15);
        let s1 = Smo::new(&dense, tight())?.solve(&pr.view(), None)?;
        let s2 = Smo::new(&pre, tight())?.solve(&pr.view(), None)?;
        assert_rel(s1.objective, s2.objective, 1e-9, "precomputed");
    }
    Ok(())
}

#[test]
fn tiny_cache_gives_the_same_solution() -> TestResult {
    let np = 30;
    let (mut r, x) = seeded_points(40, np, 3);
    let gram = rbf_gram(&x, 0.5)?;
    for (pr, shrinking) in [
        (l2_problem(&mut r, np), true),
        (hinge_problem(&mut r, np), true),
        (hinge_problem(&mut r, np), false),
    ] {
        let params = SmoParams {
            shrinking,
            ..tight()
        };
        let small = SmoParams {
            cache_bytes: 3 * 8 * np,
            ..params
        };
        let big = Smo::new(&gram, params)?.solve(&pr.view(), None)?;
        let mut smo_small = Smo::new(&gram, small)?;
        let little = smo_small.solve(&pr.view(), None)?;
        assert_eq!(big, little);
        assert!(smo_small.kernel_rows_computed() > np);
    }
    Ok(())
}

/// Solves `pr` with `smo` (on `gram`) warm from `start`, and cold with a new solver of the same
/// settings: the warm solution is a KKT point (gap 1e-6) with the cold objective, to `rel`.
/// Returns both.
fn warm_equals_cold<G: GramRows>(
    smo: &mut Smo<'_, G>,
    gram: &G,
    pr: &DualArrays,
    start: &DualSolution,
    rel: f64,
    what: &str,
) -> Result<(DualSolution, DualSolution), Box<dyn std::error::Error>> {
    let warm = smo.solve(&pr.view(), Some(start))?;
    let cold = Smo::new(gram, *smo.params())?.solve(&pr.view(), None)?;
    check_solution(&dense_gram(gram), pr, &warm, 1e-6);
    assert_rel(warm.objective, cold.objective, rel, what);
    Ok((warm, cold))
}

#[test]
fn warm_starts() -> TestResult {
    let np = 25;
    let (mut r, x) = seeded_points(50, np, 3);
    let gram = rbf_gram(&x, 0.5)?;
    let params = SmoParams {
        tol: 1e-8,
        ..SmoParams::default()
    };

    // L2 loss: the hot path (only d changes), with two dead samples.
    let mut pr = l2_problem(&mut r, np);
    pr.u[3] = 0.0;
    pr.u[7] = 0.0;
    let mut smo = Smo::new(&gram, params)?;
    let sol = smo.solve(&pr.view(), None)?;
    let rows = smo.kernel_rows_computed();
    let again = smo.solve(&pr.view(), Some(&sol))?;
    assert_eq!(again.iterations, 0);
    assert_eq!(
        smo.kernel_rows_computed(),
        rows,
        "no kernel row at the optimum"
    );
    assert_eq!(again.alpha, sol.alpha);
    // Alpha alone: the gradient is recomputed from kernel rows, still optimal.
    let alpha_only = DualSolution {
        q_alpha: vec![],
        ..sol.clone()
    };
    let again = smo.solve(&pr.view(), Some(&alpha_only))?;
    assert!(again.iterations <= 1);
    assert_rel(
        again.objective,
        sol.objective,
        1e-12,
        "alpha-only warm start",
    );
    for d in pr.d.iter_mut() {
        *d *= 0.8;
    }
    let (warm, cold) = warm_equals_cold(&mut smo, &gram, &pr, &sol, 1e-9, "L2 warm vs cold")?;
    assert!(warm.iterations < cold.iterations);

    // Hinge: lower bounds clip alpha and break y^T a = 0, repaired before solving.
    let mut pr = hinge_problem(&mut r, np);
    let mut smo = Smo::new(&gram, params)?;
    let sol = smo.solve(&pr.view(), None)?;
    for (i, u) in pr.u.iter_mut().enumerate() {
        if i % 3 == 0 {
            *u *= 0.4;
        }
    }
    warm_equals_cold(&mut smo, &gram, &pr, &sol, 1e-8, "hinge warm vs cold")?;

    // One-class with a changed nu: the sum constraint is repaired.
    let pr1 = one_class_problem(np, 0.2);
    let pr2 = one_class_problem(np, 0.5);
    let mut smo = Smo::new(&gram, params)?;
    let s1 = smo.solve(&pr1.view(), None)?;
    warm_equals_cold(&mut smo, &gram, &pr2, &s1, 1e-8, "one-class warm vs cold")?;

    // A warm start of the wrong length is an error.
    let bad = DualSolution {
        alpha: vec![0.0; 3],
        ..s1
    };
    assert!(matches!(
        smo.solve(&pr2.view(), Some(&bad)),
        Err(Error::InvalidData(_))
    ));
    Ok(())
}

#[test]
fn thread_count_does_not_change_results() -> TestResult {
    // Enough points for rows to be filled in parallel chunks.
    let np = 4500;
    let (mut r, x) = seeded_points(60, np, 3);
    let gram = rbf_gram(&x, 2.0)?;
    let pr = l2_problem(&mut r, np);
    let params = capped(150);
    let run = |k: usize| -> Result<DualSolution, Box<dyn std::error::Error>> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build()?;
        Ok(pool.install(|| Smo::new(&gram, params)?.solve(&pr.view(), None))?)
    };
    let (a, b) = (run(1)?, run(2)?);
    assert_eq!(a.iterations, 150);
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn shrinking_gives_the_same_optimum() -> TestResult {
    for seed in 110..113 {
        let n = 160;
        let (mut r, x) = seeded_points(seed, n, 2);
        let gram = rbf_gram(&x, 3.0)?;
        let k = dense_gram(&gram);
        let mut pr = hinge_problem(&mut r, n);
        // Labels from a smooth rule plus noise: many bounded and many zero alphas.
        for i in 0..n {
            let s = x[[i, 0]] + 0.5 * x[[i, 1]] + 0.3 * (r.random::<f64>() - 0.5);
            pr.y[i] = if s > 0.0 { 1.0 } else { -1.0 };
        }
        for u in pr.u.iter_mut() {
            *u *= 10.0;
        }
        for u in pr.u.iter_mut().step_by(7) {
            *u = 0.0;
        }
        let with = Smo::new(&gram, tight())?.solve(&pr.view(), None)?;
        let params = SmoParams {
            shrinking: false,
            ..tight()
        };
        let without = Smo::new(&gram, params)?.solve(&pr.view(), None)?;
        check_solution(&k, &pr, &with, 1e-7);
        check_solution(&k, &pr, &without, 1e-7);
        assert_rel(with.objective, without.objective, 1e-9, "shrinking");
    }
    Ok(())
}

#[test]
fn iteration_cap_keeps_a_feasible_solution() -> TestResult {
    let n = 30;
    let (mut r, x) = seeded_points(70, n, 3);
    let gram = rbf_gram(&x, 0.5)?;
    let k = dense_gram(&gram);
    let params = capped(3);
    for pr in [
        hinge_problem(&mut r, n),
        one_class_problem(n, 0.3),
        l2_problem(&mut r, n),
    ] {
        let sol = Smo::new(&gram, params)?.solve(&pr.view(), None)?;
        assert_eq!(sol.termination, StopReason::MaxIter);
        assert_eq!(sol.iterations, 3);
        check_solution(&k, &pr, &sol, f64::INFINITY);
    }
    Ok(())
}

#[test]
fn scaling_p_scales_the_solution() -> TestResult {
    let np = 20;
    let (mut r, x) = seeded_points(80, np, 3);
    let gram = rbf_gram(&x, 0.5)?;
    let pr = l2_problem(&mut r, np);
    let mut scaled = pr.clone();
    scaled.p.iter_mut().for_each(|p| *p *= 1024.0);
    let params = SmoParams::default();
    let a = Smo::new(&gram, params)?.solve(&pr.view(), None)?;
    let b = Smo::new(&gram, params)?.solve(&scaled.view(), None)?;
    assert_eq!(a.iterations, b.iterations);
    for (x, y) in a.alpha.iter().zip(&b.alpha) {
        assert_eq!(x * 1024.0, *y);
    }
    Ok(())
}

#[test]
fn invalid_input_is_rejected() -> TestResult {
    let (mut r, x) = seeded_points(90, 6, 2);
    let gram = rbf_gram(&x, 0.5)?;
    let mut smo = Smo::new(&gram, SmoParams::default())?;
    let good = hinge_problem(&mut r, 6);
    assert!(smo.solve(&good.view(), None).is_ok());
    let changes: [fn(&mut DualArrays); 8] = [
        |bad| bad.y[2] = 0.5,
        |bad| {
            bad.p.pop();
        },
        |bad| bad.point[1] = 6,
        |bad| bad.p[0] = f64::NAN,
        |bad| bad.d[0] = -1.0,
        |bad| bad.u[0] = f64::NAN,
        |bad| bad.u[0] = -1.0,
        |bad| bad.delta = f64::INFINITY,
    ];
    let mut cases: Vec<DualArrays> = changes
        .iter()
        .map(|change| {
            let mut bad = good.clone();
            change(&mut bad);
            bad
        })
        .collect();
    // Infeasible: the bounds cannot sum to delta.
    let mut bad = one_class_problem(6, 0.3);
    bad.u = vec![0.1; 6];
    cases.push(bad);
    for (c, bad) in cases.iter().enumerate() {
        match smo.solve(&bad.view(), None) {
            Err(Error::InvalidData(_)) | Err(Error::InvalidParameter(_)) => {}
            other => panic!("case {c}: expected an error, got {other:?}"),
        }
    }
    for tol in [0.0, -1.0, f64::NAN] {
        let params = SmoParams {
            tol,
            ..SmoParams::default()
        };
        assert!(Smo::new(&gram, params).is_err());
    }
    assert!(rbf_gram(&x, -1.0).is_err());
    // An indefinite kernel with unbounded u: a solver error, not NaN.
    let indefinite = PrecomputedGram::new(ndarray::array![[1.0, 2.0], [2.0, 1.0]])?;
    let params = capped(10_000);
    let unbounded = two_points(f64::INFINITY);
    assert!(matches!(
        Smo::new(&indefinite, params)?.solve(&unbounded.view(), None),
        Err(Error::Solver(_))
    ));
    assert!(PrecomputedGram::new(Array2::zeros((2, 3))).is_err());
    assert!(PrecomputedGram::new(ndarray::array![[1.0, 0.5], [0.2, 1.0]]).is_err());
    Ok(())
}

#[test]
fn empty_and_all_dead_problems() -> TestResult {
    let x = Array2::from_shape_vec((2, 1), vec![0.0, 1.0])?;
    let gram = rbf_gram(&x, 1.0)?;
    let mut smo = Smo::new(&gram, SmoParams::default())?;
    let sol = smo.solve(&DualArrays::default().view(), None)?;
    assert!(sol.alpha.is_empty());
    let sol = smo.solve(&two_points(0.0).view(), None)?;
    assert_eq!(sol.alpha, vec![0.0, 0.0]);
    assert_eq!(sol.termination, StopReason::Converged);
    Ok(())
}

/// Timing on a larger problem (run with `cargo test --release -- --ignored --nocapture`).
#[test]
#[ignore]
fn timing_l2_rbf_5000() -> TestResult {
    let np = 5000;
    let (mut r, x) = seeded_points(100, np, 20);
    let gram = rbf_gram(&x, 0.05)?;
    let pr = l2_problem(&mut r, np);
    let mut smo = Smo::new(&gram, SmoParams::default())?;
    let t = std::time::Instant::now();
    let sol = smo.solve(&pr.view(), None)?;
    println!(
        "n_samples {} cold: {:?}, {} iterations, {} rows",
        pr.y.len(),
        t.elapsed(),
        sol.iterations,
        smo.kernel_rows_computed()
    );
    for factor in [0.7, 0.97] {
        let mut pr2 = pr.clone();
        pr2.d.iter_mut().for_each(|d| *d *= factor);
        let t = std::time::Instant::now();
        let sol2 = smo.solve(&pr2.view(), Some(&sol))?;
        println!(
            "warm (d * {factor}): {:?}, {} iterations, {} rows total",
            t.elapsed(),
            sol2.iterations,
            smo.kernel_rows_computed()
        );
    }
    let params = SmoParams {
        shrinking: false,
        ..SmoParams::default()
    };
    let t = std::time::Instant::now();
    let sol = Smo::new(&gram, params)?.solve(&pr.view(), None)?;
    println!(
        "cold without shrinking: {:?}, {} iterations",
        t.elapsed(),
        sol.iterations
    );
    Ok(())
}

/// Rows computed together (one pass over the instances) equal rows computed one by one,
/// bitwise, for dense and CSR instances, long rows (parallel blocks) included (rows on
/// demand, not a stored matrix).
#[test]
fn batched_rows_equal_single_rows() -> TestResult {
    let mut r = rng(70);
    for np in [37, 5000] {
        let x = random_points(&mut r, np, 7).mapv(|v| if v.abs() < 0.3 { 0.0 } else { v });
        let csr = to_csr(&x, false);
        for rows in [Rows::Dense(x.view()), Rows::Sparse(&csr)] {
            let gram = InstanceGram::new(rbf(0.3), rows)?.with_store_limit(0);
            let points = [3, 0, np - 1, 3 + np / 2, 11, 12];
            let mut batch = vec![vec![0.0; np]; points.len()];
            let mut views: Vec<&mut [f64]> = batch.iter_mut().map(|v| v.as_mut_slice()).collect();
            gram.fill_rows(&points, &mut views);
            for (&p, got) in points.iter().zip(&batch) {
                let mut one = vec![0.0; np];
                gram.fill_row(p, &mut one);
                for (a, b) in got.iter().zip(&one) {
                    assert_eq!(a.to_bits(), b.to_bits(), "point {p}");
                }
            }
        }
    }
    Ok(())
}
