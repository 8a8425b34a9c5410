//! The linear hinge solver (dual coordinate descent inside the method of multipliers for the
//! unpenalised bias) against clarabel and the SMO on the same problems: plain SVMs over
//! instances and sMIL-like weighted combinations; dense, single precision and CSR rows give the
//! same solution.

mod common;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, SupportedConeT};
use common::{rng, to_csr, TestResult};
use milsvm::bags::{DenseF32, Instances, Rows};
use milsvm::kernel::Kernel;
use milsvm::smo::{ComboGram, InstanceGram, OnePerPoint, Smo, SmoParams};
use milsvm::solver::linear_hinge::{HingeLoss, LinearHinge, LinearHingeSolution};
use milsvm::Cancel;
use ndarray::Array2;
use rand::Rng;

/// Random instances (`n x d`, a shift by `+1.5` for the positive ones) and labels.
fn data(seed: u64, n: usize, d: usize) -> (Array2<f64>, Vec<f64>) {
    let mut r = rng(seed);
    let y: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let x = Array2::from_shape_fn((n, d), |(i, _)| {
        r.random::<f64>() * 2.0 - 1.0 + if y[i] > 0.0 { 0.7 } else { 0.0 }
    });
    (x, y)
}

/// The primal objective `1/2 |w|^2 + sum U max(0, p - y (w . z + b))` of `(w, b)`.
fn primal(
    x: &Array2<f64>,
    pts: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    u: &[f64],
    w: &[f64],
    b: f64,
) -> f64 {
    let w2: f64 = w.iter().map(|v| v * v).sum();
    let mut loss = 0.0;
    for (k, pt) in pts.iter().enumerate() {
        let f: f64 = pt
            .iter()
            .map(|&(t, c)| c * x.row(t).iter().zip(w).map(|(a, b)| a * b).sum::<f64>())
            .sum();
        loss += u[k] * (p[k] - y[k] * (f + b)).max(0.0);
    }
    0.5 * w2 + loss
}

/// `w` of an SMO solution over the same points.
fn smo_w(x: &Array2<f64>, pts: &[Vec<(usize, f64)>], y: &[f64], alpha: &[f64]) -> Vec<f64> {
    let mut w = vec![0.0; x.ncols()];
    for ((pt, &yk), &a) in pts.iter().zip(y).zip(alpha) {
        for &(t, c) in pt {
            for (wj, &v) in w.iter_mut().zip(x.row(t)) {
                *wj += a * yk * c * v;
            }
        }
    }
    w
}

fn solve(
    x: &Instances,
    pts: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    u: &[f64],
) -> milsvm::Result<LinearHingeSolution> {
    LinearHinge {
        x,
        points: pts,
        y,
        p,
        u,
        loss: HingeLoss::Hinge,
    }
    .solve(None, 1e-10, 100_000, &Cancel::default())
}

/// The SMO's solution of the same problem at a tight tolerance: `(w, b, primal objective)`.
fn smo(
    x: &Array2<f64>,
    pts: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    u: &[f64],
) -> milsvm::Result<(Vec<f64>, f64, f64)> {
    let inst = Instances::from(x.clone());
    let gram = InstanceGram::new(Kernel::Linear, Rows::from(&inst))?;
    let combo = ComboGram::new(&gram, &inst, Kernel::Linear, pts.to_vec());
    let layout = OnePerPoint::new(pts.len());
    let params = SmoParams {
        tol: 1e-10,
        ..SmoParams::default()
    };
    let sol = Smo::new(&combo, params)?.solve(&layout.problem(y, p, u, 0.0), None)?;
    let w = smo_w(x, pts, y, &sol.alpha);
    let obj = primal(x, pts, y, p, u, &w, sol.b);
    Ok((w, sol.b, obj))
}

/// The problem `1/2 |w|^2 + sum U xi`, `y (w . z + b) >= p - xi`, `xi >= 0`, solved by
/// clarabel: `(w, b)`.
fn by_clarabel(
    x: &Array2<f64>,
    pts: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    u: &[f64],
) -> (Vec<f64>, f64) {
    let (d, m) = (x.ncols(), pts.len());
    let n = d + 1 + m; // w, b, xi
    let mut q = vec![0.0; n];
    q[d + 1..].copy_from_slice(u);
    let (mut rows, mut rhs) = (Vec::new(), Vec::new());
    for (k, pt) in pts.iter().enumerate() {
        // -y (w . z + b) - xi <= -p
        let mut r = vec![0.0; n];
        for &(t, c) in pt {
            for j in 0..d {
                r[j] -= y[k] * c * x[[t, j]];
            }
        }
        r[d] = -y[k];
        r[d + 1 + k] = -1.0;
        rows.push(r);
        rhs.push(-p[k]);
    }
    for k in 0..m {
        let mut r = vec![0.0; n];
        r[d + 1 + k] = -1.0;
        rows.push(r);
        rhs.push(0.0);
    }
    let a = CscMatrix::from(rows.iter().map(|r| r.iter()));
    let mut pm = vec![vec![0.0; n]; n];
    for (j, row) in pm.iter_mut().enumerate().take(d) {
        row[j] = 1.0;
    }
    let pmat = CscMatrix::from(pm.iter().map(|r| r.iter()));
    let pmat = pmat.to_triu();
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .build()
        .expect("settings");
    let cones = [SupportedConeT::NonnegativeConeT(rows.len())];
    let mut solver = DefaultSolver::new(&pmat, &q, &a, &rhs, &cones, settings).expect("a QP");
    solver.solve();
    let sol = &solver.solution.x;
    (sol[..d].to_vec(), sol[d])
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * scale)
}

/// The solution against clarabel and the SMO on the same problem: the same objective and
/// weights (the primal solution is unique in `w`), and a bias no move of which lowers it.
fn check_against_references(
    what: &str,
    x: &Array2<f64>,
    pts: &[Vec<(usize, f64)>],
    y: &[f64],
    p: &[f64],
    u: &[f64],
    sol: &LinearHingeSolution,
) -> TestResult {
    assert!(sol.converged, "{what}");
    let (w_ref, b_ref) = by_clarabel(x, pts, y, p, u);
    let (w_smo, _, obj) = smo(x, pts, y, p, u)?;
    let ours = primal(x, pts, y, p, u, &sol.w, sol.b);
    let reference = primal(x, pts, y, p, u, &w_ref, b_ref);
    assert!((sol.primal_objective - ours).abs() <= 1e-9 * ours.abs().max(1.0));
    assert!(
        (ours - reference).abs() <= 1e-7 * reference.abs().max(1.0),
        "{what}: {ours} vs clarabel {reference}"
    );
    assert!(
        (ours - obj).abs() <= 1e-7 * obj.abs().max(1.0),
        "{what}: {ours} vs SMO {obj}"
    );
    assert!(
        close(&sol.w, &w_ref, 1e-5),
        "{what}: w {:?} vs {w_ref:?}",
        sol.w
    );
    assert!(
        close(&sol.w, &w_smo, 1e-5),
        "{what}: w {:?} vs SMO {w_smo:?}",
        sol.w
    );
    assert!(sol
        .alpha
        .iter()
        .zip(u)
        .all(|(&a, &ub)| (0.0..=ub).contains(&a)));
    let balance: f64 = sol.alpha.iter().zip(y).map(|(a, y)| a * y).sum();
    let umax = u.iter().fold(0.0f64, |m, &c| m.max(c));
    assert!(
        balance.abs() <= 1e-9 * umax.max(1.0),
        "{what}: y^T a = {balance}"
    );
    for db in [-1e-4, 1e-4] {
        assert!(
            primal(x, pts, y, p, u, &sol.w, sol.b + db) >= ours - 1e-12,
            "{what}: b is not the best"
        );
    }
    Ok(())
}

#[test]
fn plain_svm_matches_clarabel_and_the_smo() -> TestResult {
    for (seed, n, d, c) in [
        (1, 40, 3, 1.0),
        (2, 90, 7, 10.0),
        (3, 25, 12, 0.1),
        (4, 60, 2, 100.0),
    ] {
        let (x, y) = data(seed, n, d);
        let pts: Vec<Vec<(usize, f64)>> = (0..n).map(|t| vec![(t, 1.0)]).collect();
        let (p, u) = (vec![1.0; n], vec![c; n]);
        let sol = solve(&Instances::from(x.clone()), &pts, &y, &p, &u)?;
        check_against_references(&format!("seed {seed}"), &x, &pts, &y, &p, &u, &sol)?;
    }
    Ok(())
}

#[test]
fn smil_like_combinations_match_clarabel_and_the_smo() -> TestResult {
    // units: groups of 1-6 instances with weights 1/n, positive groups with p = (2 - n) / n
    let (x, _) = data(7, 80, 5);
    let mut r = rng(8);
    let (mut pts, mut y, mut p) = (Vec::new(), Vec::new(), Vec::new());
    let mut t = 0;
    while t < 80 {
        let n = r.random_range(1..7).min(80 - t);
        let pos = r.random::<f64>() < 0.4;
        if pos {
            pts.push((t..t + n).map(|s| (s, 1.0 / n as f64)).collect::<Vec<_>>());
            y.push(1.0);
            p.push((2.0 - n as f64) / n as f64);
        } else {
            for s in t..t + n {
                pts.push(vec![(s, 1.0)]);
                y.push(-1.0);
                p.push(1.0);
            }
        }
        t += n;
    }
    let u: Vec<f64> = (0..pts.len())
        .map(|k| if k % 4 == 0 { 3.0 } else { 1.5 })
        .collect();
    let sol = solve(&Instances::from(x.clone()), &pts, &y, &p, &u)?;
    check_against_references("sMIL units", &x, &pts, &y, &p, &u, &sol)?;
    eprintln!("passes {}", sol.passes);
    // warm start from the solution: at once at the same optimum
    let again = LinearHinge {
        x: &Instances::from(x.clone()),
        points: &pts,
        y: &y,
        p: &p,
        u: &u,
        loss: HingeLoss::Hinge,
    }
    .solve(
        Some((&sol.alpha, sol.b)),
        1e-10,
        100_000,
        &Cancel::default(),
    )?;
    assert!(again.passes <= 2, "{} passes", again.passes);
    assert!(close(&again.w, &sol.w, 1e-9));
    Ok(())
}

#[test]
fn single_precision_and_csr_rows_give_the_same_solution() -> TestResult {
    let (x, y) = data(11, 60, 9);
    let x = x.mapv(|v| {
        if v.abs() < 0.3 {
            0.0
        } else {
            f64::from(v as f32)
        }
    });
    let n = x.nrows();
    let pts: Vec<Vec<(usize, f64)>> = (0..n).map(|t| vec![(t, 1.0)]).collect();
    let (p, u) = (vec![1.0; n], vec![2.0; n]);
    let dense = solve(&Instances::from(x.clone()), &pts, &y, &p, &u)?;
    let x32 = DenseF32::from_vec(n, x.ncols(), x.iter().map(|&v| v as f32).collect())?;
    let single = solve(&Instances::Dense32(x32), &pts, &y, &p, &u)?;
    assert_eq!(single, dense, "f32 rows must give the f64 twin's bits");
    let csr = solve(&Instances::Sparse(to_csr(&x, false)), &pts, &y, &p, &u)?;
    assert!(close(&csr.w, &dense.w, 1e-8) && (csr.b - dense.b).abs() <= 1e-8);
    Ok(())
}

#[test]
fn zero_points_and_bad_input() -> TestResult {
    let (mut x, y) = data(13, 30, 4);
    x.row_mut(3).fill(0.0); // a zero point: its a goes to the bound its gradient points to
    let pts: Vec<Vec<(usize, f64)>> = (0..30).map(|t| vec![(t, 1.0)]).collect();
    let (p, u) = (vec![1.0; 30], vec![1.0; 30]);
    let sol = solve(&Instances::from(x.clone()), &pts, &y, &p, &u)?;
    check_against_references("a zero point", &x, &pts, &y, &p, &u, &sol)?;
    let inst = Instances::from(x);
    let bad_y = vec![0.5; 30];
    assert!(solve(&inst, &pts, &bad_y, &p, &u).is_err());
    assert!(solve(&inst, &pts, &y, &p, &[-1.0; 30]).is_err());
    assert!(solve(&inst, &[vec![(99, 1.0)]], &[1.0], &[1.0], &[1.0]).is_err());
    assert!(solve(&inst, &pts, &y[..3], &p, &u).is_err());
    Ok(())
}

/// The squared hinge by dual coordinate descent (`HingeLoss::Squared`) reaches the minimiser
/// of the annealing family's Newton-CG (`LinearSquaredHinge`) on the same problem: every
/// instance with costs for both targets (AL-SVM's `c+ = C p`, `c- = C (1 - p)`, some zero), as
/// points of one instance and one target each.
#[test]
fn the_squared_hinge_descent_meets_newton_cg() -> TestResult {
    use milsvm::solver::linear::LinearSquaredHinge;
    for (seed, n, d, c) in [(1, 60, 4, 1.0), (2, 200, 9, 0.05), (3, 150, 30, 20.0)] {
        let (x, yl) = data(seed, n, d);
        let mut r = rng(seed + 100);
        let prob: Vec<f64> = yl
            .iter()
            .map(|&y| {
                if y > 0.0 {
                    [0.0, 1.0, r.random::<f64>()][r.random_range(0..3)]
                } else {
                    0.0
                }
            })
            .collect();
        let c_pos: Vec<f64> = prob.iter().map(|p| c * p).collect();
        let c_neg: Vec<f64> = prob.iter().map(|p| c * (1.0 - p)).collect();
        let inst = Instances::from(x.clone());
        let newton = LinearSquaredHinge {
            x: &inst,
            bag_ptr: &one_row_bags(&inst),
            c_pos: &c_pos,
            c_neg: &c_neg,
            mean: None,
        }
        .solve(None, 1e-12, 200, &Cancel::default())?;
        let (mut pts, mut y, mut u) = (Vec::new(), Vec::new(), Vec::new());
        for t in 0..n {
            for (label, cost) in [(1.0, c_pos[t]), (-1.0, c_neg[t])] {
                if cost > 0.0 {
                    pts.push(vec![(t, 1.0)]);
                    y.push(label);
                    u.push(cost);
                }
            }
        }
        let p = vec![1.0; pts.len()];
        let dcd = LinearHinge {
            x: &inst,
            points: &pts,
            y: &y,
            p: &p,
            u: &u,
            loss: HingeLoss::Squared,
        }
        .solve(None, 1e-10, 100_000, &Cancel::default())?;
        assert!(dcd.converged, "seed {seed}");
        let rel = (dcd.primal_objective - newton.value).abs() / newton.value;
        assert!(
            rel < 1e-9,
            "seed {seed}: {} vs {}",
            dcd.primal_objective,
            newton.value
        );
        // strong duality: the dual objective is minus the primal's optimum
        assert!(
            (dcd.dual_objective + dcd.primal_objective).abs() < 1e-6 * newton.value,
            "seed {seed}: dual {} primal {}",
            dcd.dual_objective,
            dcd.primal_objective
        );
        for (a, b) in dcd.w.iter().zip(newton.w.iter()) {
            assert!(
                (a - b).abs() < 1e-5 * (1.0 + b.abs()),
                "seed {seed}: {a} vs {b}"
            );
        }
        assert!((dcd.b - newton.b).abs() < 1e-5 * (1.0 + newton.b.abs()));
    }
    Ok(())
}

/// One bag per row: the leaves of the linear solver's sums.
fn one_row_bags(x: &milsvm::bags::Instances) -> Vec<usize> {
    (0..=x.n_rows()).collect()
}
