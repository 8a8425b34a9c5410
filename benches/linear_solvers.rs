//! The two LIBLINEAR-class solvers of the linear squared-hinge SVM that the annealing family
//! solves at every step (issue 18, item 2, "measure both"): the crate's Newton-CG
//! (`solver::linear::LinearSquaredHinge`, parallel over row blocks) against dual coordinate
//! descent (`solver::linear_hinge::LinearHinge` with `HingeLoss::Squared`, Hsieh et al. 2008
//! with the bias by the method of multipliers; sequential), on the same problems:
//!
//! - **cold**: SIL's problem (every instance labelled by its bag, cost `C`), from zero;
//! - **warm**: the next relabelling step (5 % of the instances of positive bags flipped to the
//!   other target), each solver from its own previous solution.
//!
//! The data are embedding-like bags: `--instances` rows of `--features` float32 values, bags of
//! 1,000, half of them positive, 5 % of a positive bag's instances shifted by 3 along one random
//! direction (witnesses), the rest standard normal. For each `C`, the optimum `J*` is Newton-CG
//! at a gradient tolerance of 1e-10; every run reports its time and its objective's relative gap
//! to `J*`. Newton-CG runs at the crate's tolerance (1e-6, relative gradient) on 1 thread and on
//! all threads; coordinate descent at the projected-gradient tolerances 0.1, 0.01 and 0.001
//! (LIBLINEAR's default is 0.1), each cancelled after 120 s (printed `> 120`; the next
//! tolerances are then skipped).
//!
//!     cargo bench --bench linear_solvers [-- --instances 100000 --features 512 --solvers 1]
//!
//! It first prints the time of one pass `X w` over the rows on all threads, the unit of the
//! per-pass cost in the Dask estimate of benches/RESULTS.md, and on one thread: the speed-up
//! the machine's memory allows the passes of a linear fit (`--solvers 0` stops there).

use std::time::Instant;

use milsvm::bags::{DenseF32, Instances};
use milsvm::solver::linear::{LinearSquaredHinge, LINEAR_TOL};
use milsvm::solver::linear_hinge::{HingeLoss, LinearHinge};
use milsvm::Cancel;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;
use common::arg;

/// Seconds after which a coordinate-descent run is cancelled (reported as `> BUDGET`).
const BUDGET: u64 = 120;

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u1, u2): (f64, f64) = (rng.random(), rng.random());
    (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Instances (float32, row-major) and per instance whether its bag is positive.
fn data(n: usize, d: usize) -> (Instances, Vec<bool>) {
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let mut dir: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
    let norm = dir.iter().map(|v| v * v).sum::<f64>().sqrt();
    dir.iter_mut().for_each(|v| *v /= norm);
    let mut x = Vec::with_capacity(n * d);
    let mut positive_bag = Vec::with_capacity(n);
    for i in 0..n {
        let pos = (i / 1000) % 2 == 0;
        let witness = pos && rng.random::<f64>() < 0.05;
        for v in &dir {
            let z = normal(&mut rng);
            x.push((z + if witness { 3.0 * v } else { 0.0 }) as f32);
        }
        positive_bag.push(pos);
    }
    let x = DenseF32::from_vec(n, d, x).expect("shape");
    (Instances::Dense32(x), positive_bag)
}

/// The costs of both targets of every instance from its label.
fn costs(labels: &[bool], c: f64) -> (Vec<f64>, Vec<f64>) {
    let pos = labels.iter().map(|&l| if l { c } else { 0.0 }).collect();
    let neg = labels.iter().map(|&l| if l { 0.0 } else { c }).collect();
    (pos, neg)
}

fn seconds<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

fn main() {
    let n = arg("--instances", 100_000);
    let d = arg("--features", 512);
    let threads = rayon::current_num_threads();
    let (x, positive_bag) = data(n, d);
    let cancel = Cancel::default();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    println!(
        "# {n} instances x {d} float32 ({:.2} GB), bags of 1000, 5 % witnesses; {threads} threads",
        (n * d * 4) as f64 / 1e9
    );
    // one pass over the rows (`X w`, what every Newton-CG pass costs at least), median of 5,
    // on all threads, then on one: the speed-up the machine's memory allows a pass
    let w = vec![0.5f64; d];
    let pass = || {
        let mut t: Vec<f64> = (0..6)
            .map(|_| seconds(|| milsvm::solver::linear_hinge::row_scores(&x, &w)).1)
            .skip(1)
            .collect();
        t.sort_by(f64::total_cmp);
        t[2]
    };
    let (all, single) = (pass(), one.install(pass));
    let rate = |t: f64| (n * d * 4) as f64 / 1e9 / t;
    println!(
        "# one pass X w: {all:.4} s, {:.1} GB/s of the rows (median of 5)",
        rate(all)
    );
    println!(
        "# the same pass on 1 thread: {single:.4} s, {:.1} GB/s; {threads} threads are {:.2}x",
        rate(single),
        single / all
    );
    if arg("--solvers", 1) == 0 {
        return;
    }
    println!(
        "{:<6} {:<6} {:<28} {:>9} {:>12} {:>8}",
        "C", "start", "solver", "seconds", "gap to J*", "passes"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let flips: Vec<bool> = positive_bag
        .iter()
        .map(|&p| p && rng.random::<f64>() < 0.05)
        .collect();
    let relabelled: Vec<bool> = positive_bag
        .iter()
        .zip(&flips)
        .map(|(&p, &f)| p != f)
        .collect();
    // bags of 1000 rows (the leaves of the solver's sums)
    let bag_ptr: Vec<usize> = (0..n).step_by(1000).chain(std::iter::once(n)).collect();
    for c in [0.01, 1.0] {
        let mut previous: Option<(Vec<f64>, f64, Vec<f64>, f64)> = None; // Newton (w, b), DCD (a, b)
        for (start, labels) in [("cold", &positive_bag), ("warm", &relabelled)] {
            let (c_pos, c_neg) = costs(labels, c);
            let problem = LinearSquaredHinge {
                x: &x,
                bag_ptr: &bag_ptr,
                c_pos: &c_pos,
                c_neg: &c_neg,
                mean: None,
            };
            let best = problem.solve(None, 1e-10, 500, &cancel).unwrap().value;
            let gap = |v: f64| (v - best) / best;
            let warm_newton = previous.as_ref().map(|(w, b, _, _)| (w.as_slice(), *b));
            let row = |solver: &str, secs: f64, value: f64, passes: usize| {
                println!(
                    "{c:<6} {start:<6} {solver:<28} {secs:>9.3} {:>12.2e} {passes:>8}",
                    gap(value)
                )
            };
            let (sol1, t1) =
                seconds(|| one.install(|| problem.solve(warm_newton, LINEAR_TOL, 100, &cancel)));
            let sol1 = sol1.unwrap();
            row("Newton-CG, 1 thread", t1, sol1.value, sol1.n_iter);
            let (sol, t) = seconds(|| problem.solve(warm_newton, LINEAR_TOL, 100, &cancel));
            let sol = sol.unwrap();
            row(
                &format!("Newton-CG, {threads} threads"),
                t,
                sol.value,
                sol.n_iter,
            );
            // DCD: one point per instance, its current target
            let points: Vec<Vec<(usize, f64)>> = (0..n).map(|t| vec![(t, 1.0)]).collect();
            let y: Vec<f64> = labels.iter().map(|&l| if l { 1.0 } else { -1.0 }).collect();
            let p = vec![1.0; n];
            let u = vec![c; n];
            let dcd = LinearHinge {
                x: &x,
                points: &points,
                y: &y,
                p: &p,
                u: &u,
                loss: HingeLoss::Squared,
            };
            // a flipped instance's dual variable restarts at 0 (its point changed target)
            let warm_alpha: Option<Vec<f64>> = previous.as_ref().map(|(_, _, a, _)| {
                a.iter()
                    .zip(&flips)
                    .map(|(&a, &f)| if f { 0.0 } else { a })
                    .collect()
            });
            let mut last_dcd = None;
            for tol in [0.1, 0.01, 0.001] {
                let warm = warm_alpha
                    .as_ref()
                    .zip(previous.as_ref())
                    .map(|(a, prev)| (a.as_slice(), prev.3));
                // a budget: the descent is cancelled after BUDGET seconds
                let budget = Cancel::new();
                let timer = {
                    let budget = budget.clone();
                    let (tx, rx) = std::sync::mpsc::channel::<()>();
                    std::thread::spawn(move || {
                        if rx
                            .recv_timeout(std::time::Duration::from_secs(BUDGET))
                            .is_err()
                        {
                            budget.cancel();
                        }
                    });
                    tx
                };
                let (s, t) = seconds(|| dcd.solve(warm, tol, 10_000, &budget));
                drop(timer);
                match s {
                    Ok(s) => {
                        row(&format!("DCD, tol {tol}"), t, s.primal_objective, s.passes);
                        last_dcd = Some(s);
                    }
                    Err(_) => {
                        println!(
                            "{c:<6} {start:<6} {:<28} {:>9}",
                            format!("DCD, tol {tol}"),
                            format!("> {BUDGET}")
                        );
                        break;
                    }
                }
            }
            let (alpha, b) = last_dcd.map_or((vec![0.0; n], 0.0), |s| (s.alpha, s.b));
            previous = Some((sol.w.to_vec(), sol.b, alpha, b));
        }
    }
}
