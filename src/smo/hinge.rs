//! The hinge-loss C-SVM over a [`GramRows`] at a path of values of `C`: the dual
//! `min 1/2 a^T Q a - p^T a, y^T a = 0, 0 <= a_i <= C w_i` (LIBSVM's C-SVC with per-sample
//! weights `w_i` and linear term `p`), one [`Smo`] for every value.

use super::{DualSolution, GramRows, OnePerPoint, Smo, SmoParams};
use crate::error::Result;
use crate::progress::Cancel;

/// The SMO settings of a hinge C-SVM: the solver of SIL, STK, NSK, sMIL and the second stage of
/// sbMIL and sAwMIL, one per binary problem.
#[derive(Debug, Clone, Copy)]
pub struct HingeSolver<'a> {
    /// Relative KKT tolerance ([`SmoParams::tol`]).
    pub tol: f64,
    /// Iteration cap (`None`: the solver's default).
    pub max_iter: Option<usize>,
    /// Stops the solves with `Error::Cancelled` once set.
    pub cancel: &'a Cancel,
}

impl HingeSolver<'_> {
    /// Solves the dual over the points of `gram` (labels `y`, linear term `p`, bounds `C w_i`)
    /// at every value `C` of `cs`, in the order given, on one [`Smo`], whose kernel-row cache
    /// (of `cache_bytes`, the problem's share) serves every solve (`fit::FitPath`).
    ///
    /// Each solve starts from `a = 0`, as an independent fit does, so the solutions equal
    /// independent fits bit for bit. Starts from the previous solution (alpha seeding) were
    /// measured and not kept. Scaled by `C_new / C_old`, they took about as many SMO iterations
    /// (sMIL on MUSK2, C = 0.1 ... 1000: 252, 413, 611, 484, 522 against 252, 400, 446, 446, 446
    /// from zero; on C = 2^-4 ... 2^8, 7959 against 9199 in all, and more on Elephant).
    /// Unscaled (feasible as `C` grows), they took 14-53% fewer iterations on that grid (sMIL
    /// on MUSK2: 4327 against 9199; `benches/bench_c_path.py`), but every solve stops
    /// elsewhere within `inner_tol`: decision values moved by up to 2e-3 (with the scaled
    /// start, at the default `inner_tol = 1e-3`, such a different stopping point changed an
    /// inner-CV choice of C). The path keeps the independent fits' models, and so their
    /// choices, instead.
    pub fn path<G: GramRows>(
        &self,
        gram: &G,
        y: &[f64],
        p: &[f64],
        w: &[f64],
        cs: &[f64],
        cache_bytes: usize,
    ) -> Result<Vec<DualSolution>> {
        let layout = OnePerPoint::new(y.len());
        let params = SmoParams {
            tol: self.tol,
            max_iter: self.max_iter,
            cache_bytes,
            ..SmoParams::default()
        };
        let mut smo = Smo::new(gram, params)?.with_cancel(self.cancel.clone());
        cs.iter()
            .map(|&c| {
                let u: Vec<f64> = w.iter().map(|w| c * w).collect();
                smo.solve(&layout.problem(y, p, &u, 0.0), None)
            })
            .collect()
    }
}
