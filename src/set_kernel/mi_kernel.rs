//! MI-Kernel: the squared-hinge SVM on the set kernel ([`MiKernelParams`]), its fitted model
//! over the training bags ([`SetKernelModel`]) and its training record ([`MiKernelFit`]).

use ndarray::{Array1, Array2, Axis};
use rayon::prelude::*;
use std::sync::Arc;

use super::{set_kernel, set_kernel_gram_cancellable};
use crate::bags::Bags;
use crate::error::{Error, Result};
use crate::fit::Setup;
use crate::kernel::Kernel;
use crate::model::Model;
use crate::params::{hyperparams, KernelKind, Range};
use crate::solver::{InnerSolver, Solution, SquaredHinge};

/// A bag counts as support (its instances as expansion vectors) when the magnitude of its
/// coefficient exceeds this fraction of the largest magnitude of the same output.
pub const SUPPORT_THRESHOLD: f64 = 1e-10;

hyperparams! {
    /// Hyperparameters of MI-Kernel, the squared-hinge SVM on the set kernel (Fu et al. 2011,
    /// Lemma 1), declared once and checked into [`MiKernelValidParams`].
    pub struct MiKernelParams => MiKernelValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Solver of the squared-hinge problem over the bag coefficients.
        solver: InnerSolver = InnerSolver::Newton;
        /// Relative gradient tolerance of the solver (`None`: the solver's default).
        inner_tol: Option<f64> = None, check Range::Open01;
        /// Iteration cap of the solver.
        inner_max_iter: usize = 1000, check Range::AtLeast(1);
        /// Ridge added to the diagonal of `K_set` in the regulariser (Fu et al., footnote).
        ridge: f64 = 1e-8, check Range::NonNegative;
    }
    fit -> MiKernelFit, path path_impl;
}

/// A fitted set-kernel model: `F(X) = sum_i alpha_i k_set(X_i, X) + b` over training bags
/// `X_i` (Fu et al. 2011, eq. 12), one row of coefficients per one-vs-rest output.
#[derive(Debug, Clone, PartialEq)]
pub struct SetKernelModel {
    /// Instance kernel.
    pub kernel: Kernel,
    /// The training bags (shared by the fits of one path).
    pub bags: Arc<Bags>,
    /// Coefficients `alpha` (`n_outputs x n_training_bags`).
    pub coef: Array2<f64>,
    /// Bias of each output.
    pub intercept: Array1<f64>,
    /// Number of classes (a binary model has 2 classes and 1 output).
    pub n_classes: usize,
}

impl SetKernelModel {
    /// Indices of the training bags with a nonzero coefficient in any output
    /// (`|alpha_ci| > SUPPORT_THRESHOLD * max_j |alpha_cj|`).
    pub fn support(&self) -> Vec<usize> {
        let limits: Vec<f64> = self
            .coef
            .rows()
            .into_iter()
            .map(|r| SUPPORT_THRESHOLD * r.iter().fold(0.0_f64, |a, v| a.max(v.abs())))
            .collect();
        (0..self.coef.ncols())
            .filter(|&i| {
                self.coef
                    .column(i)
                    .iter()
                    .zip(&limits)
                    .any(|(v, &lim)| v.abs() > lim)
            })
            .collect()
    }

    /// Number of expansion vectors: the instances of the support bags (Fu et al. 2011, eq. 13).
    pub fn n_xv(&self) -> usize {
        self.support()
            .iter()
            .map(|&i| self.bags.bag_range(i).len())
            .sum()
    }

    fn check(&self) -> Result<()> {
        let (n_out, m) = self.coef.dim();
        if n_out == 0 || m != self.bags.n_bags() || self.intercept.len() != n_out {
            return Err(Error::Mismatch(format!(
                "inconsistent set-kernel model: {} training bags, coef {:?}, intercept {}",
                self.bags.n_bags(),
                self.coef.dim(),
                self.intercept.len()
            )));
        }
        if self
            .coef
            .iter()
            .chain(self.intercept.iter())
            .any(|v| !v.is_finite())
        {
            return Err(Error::Mismatch(
                "the set-kernel model holds a non-finite value".into(),
            ));
        }
        Ok(())
    }

    /// The same predictor in the shared model form (Fu et al. 2011, Lemma 1): the instances of
    /// the support bags as expansion vectors, `beta_t = alpha_i / |X_i|` for the instances `t`
    /// of bag `i`, mean pooling (sparse instances stay sparse). Its bag scores equal
    /// [`SetKernelModel::decision_function`] up to rounding.
    pub fn to_model(&self) -> Result<Model> {
        self.check()?;
        let support = self.support();
        let empty = support.is_empty();
        let support = if empty { vec![0] } else { support };
        let rows: Vec<usize> = support
            .iter()
            .flat_map(|&i| self.bags.bag_range(i))
            .collect();
        let mut coef = Array2::zeros((self.coef.nrows(), rows.len()));
        if !empty {
            for (mut out, alpha) in coef.rows_mut().into_iter().zip(self.coef.rows()) {
                let mut t = 0;
                for &i in &support {
                    let n = self.bags.bag_range(i).len();
                    for _ in 0..n {
                        out[t] = alpha[i] / n as f64;
                        t += 1;
                    }
                }
            }
        }
        let mut model = Model::new(
            self.kernel,
            self.bags.instances().select_rows(&rows),
            coef,
            self.intercept.clone(),
            self.n_classes,
            crate::model::Pooling::Mean,
        );
        model
            .info
            .insert("n_training_bags".into(), self.bags.n_bags().into());
        Ok(model)
    }

    /// Bag scores `F(X) = sum_{i in support} alpha_i k_set(X_i, X) + b`
    /// (`n_bags x n_outputs`); only the support bags are evaluated.
    pub fn decision_function(&self, bags: &Bags) -> Result<Array2<f64>> {
        self.check()?;
        if bags.n_features() != self.bags.n_features() {
            return Err(Error::Mismatch(format!(
                "the bags have {} features, the model was fitted on {}",
                bags.n_features(),
                self.bags.n_features()
            )));
        }
        let support = self.support();
        let bias = self.intercept.view().insert_axis(Axis(0));
        if support.is_empty() {
            return Ok(Array2::zeros((bags.n_bags(), self.coef.nrows())) + bias);
        }
        let train = self.bags.select_bags(&support)?;
        let k = set_kernel(self.kernel, bags, &train)?;
        let coef = self.coef.select(Axis(1), &support);
        Ok(k.dot(&coef.t()) + bias)
    }

    /// The weight vectors as instance expansions `w_c = sum_t a[t, c] phi(x_t)` (eq. 10):
    /// the support bags and `a[t, c] = alpha_ci / n_i` for instance `t` of support bag `i`
    /// (`n_support_instances x n_outputs`).
    pub fn instance_expansion(&self) -> Result<(Bags, Array2<f64>)> {
        self.check()?;
        let support = self.support();
        if support.is_empty() {
            return Err(Error::Solver(
                "the set-kernel model has no support bag (all coefficients are zero)".into(),
            ));
        }
        let sub = self.bags.select_bags(&support)?;
        let mut a = Array2::zeros((sub.n_instances(), self.coef.nrows()));
        for (k, &i) in support.iter().enumerate() {
            let range = sub.bag_range(k);
            let inv = 1.0 / range.len() as f64;
            for t in range {
                for c in 0..self.coef.nrows() {
                    a[[t, c]] = self.coef[[c, i]] * inv;
                }
            }
        }
        Ok((sub, a))
    }
}

/// A fitted MI-Kernel with its training record.
#[derive(Debug, Clone, PartialEq)]
pub struct MiKernelFit {
    /// The model (training bags, dual-weight coefficients, biases).
    pub model: SetKernelModel,
    /// The set-kernel Gram matrix of the training bags (`n_bags x n_bags`; shared by the fits
    /// of one path).
    pub gram: Arc<Array2<f64>>,
    /// The kernel width used.
    pub gamma: f64,
    /// Per output: the objective `1/2 alpha^T K_set alpha + C sum_i l(y_i, F_i)` (no ridge) at
    /// the fitted coefficients.
    pub objective: Vec<f64>,
    /// Per output: the minimum of the ridged problem the solver minimised.
    pub ridged_objective: Vec<f64>,
    /// Largest number of solver iterations over the outputs.
    pub n_iter: usize,
    /// Whether every solve met its stopping rule.
    pub converged: bool,
}

impl MiKernelValidParams {
    /// Fits MI-Kernel on bags with class indices `0..n_classes`: one problem for two classes
    /// (class 1 positive), independent one-vs-rest problems sharing `K_set` otherwise (solved
    /// in parallel). RS runs it inside its own fit. The path of the one value `C`.
    pub(super) fn fit_impl(&self, setup: &Setup) -> Result<MiKernelFit> {
        crate::fit::only_fit(self.path_from(setup, &[self.c], false)?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): `K_set` once, then per
    /// binary problem one solve per value, each started from the previous value's
    /// `(beta, b)` (the first from zero).
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<MiKernelFit>> {
        self.path_from(setup, cs, true)
    }

    /// [`MiKernelValidParams::path_impl`], with every solve started from zero unless `warm`:
    /// `K_set` is still computed once, and the fits equal independent fits bit for bit (RS's
    /// path, whose greedy construction is not continuous in the coefficients).
    pub(super) fn path_from(
        &self,
        setup: &Setup,
        cs: &[f64],
        warm: bool,
    ) -> Result<Vec<MiKernelFit>> {
        let bags = setup.bags;
        let (kernel, gamma) = self.kernel.resolve(self.gamma, bags.instances());
        let gram = set_kernel_gram_cancellable(kernel, bags, self.observer.cancel())?;
        setup.observer.check()?;
        let problems = setup.problems();
        let mut k_reg = gram.clone();
        k_reg.diag_mut().mapv_inplace(|v| v + self.ridge);
        let tol = self.inner_tol.unwrap_or(self.solver.default_tol());
        // sols[problem][value]
        let sols: Vec<Vec<Solution>> = problems
            .par_iter()
            .map(|problem| {
                let mut path: Vec<Solution> = Vec::with_capacity(cs.len());
                for &c in cs {
                    self.observer.check()?;
                    let costs: Vec<f64> = problem.weights.iter().map(|w| c * w).collect();
                    let start = path.last().filter(|_| warm).map(|s| (s.beta.view(), s.b));
                    let sol = SquaredHinge {
                        k: k_reg.view(),
                        x: gram.view(),
                        y: &problem.targets,
                        c: &costs,
                        c_opp: &[],
                    }
                    .solve(self.solver, start, tol, self.inner_max_iter)?;
                    path.push(sol);
                }
                Ok(path)
            })
            .collect::<Result<_>>()?;
        // one copy of the training bags and of K_set for every fit of the path
        let shared = (Arc::new(bags.clone()), Arc::new(gram));
        cs.iter()
            .enumerate()
            .map(|(k, &c)| {
                let at: Vec<&Solution> = sols.iter().map(|p| &p[k]).collect();
                finish(setup, kernel, gamma, &shared, &problems, c, &at)
            })
            .collect()
    }
}

/// The fit at one value `c` from its solutions (one per binary problem).
fn finish(
    setup: &Setup,
    kernel: Kernel,
    gamma: f64,
    (bags, gram): &(Arc<Bags>, Arc<Array2<f64>>),
    problems: &[crate::fit::Problem],
    c: f64,
    sols: &[&Solution],
) -> Result<MiKernelFit> {
    let m = setup.bags.n_bags();
    let mut coef = Array2::zeros((problems.len(), m));
    let mut objective = Vec::with_capacity(problems.len());
    for ((sol, problem), mut row) in sols.iter().zip(problems).zip(coef.rows_mut()) {
        let costs: Vec<f64> = problem.weights.iter().map(|w| c * w).collect();
        let plain = SquaredHinge {
            k: gram.view(),
            x: gram.view(),
            y: &problem.targets,
            c: &costs,
            c_opp: &[],
        };
        // Dual weights alpha = -c_i l'(y_i, F_i): the same w as sol.beta
        // (K_set (beta + c l') = 0 at the optimum, up to the ridge), exactly zero outside
        // the margin.
        let f = plain.scores(sol.beta.view(), sol.b);
        let dl = plain.loss_derivative(f.view());
        row.assign(&(&dl * &ndarray::ArrayView1::from(costs.as_slice())).mapv(|v| -v));
        objective.push(plain.value_grad(row.view(), sol.b).0);
    }
    if coef.iter().any(|v| !v.is_finite()) {
        return Err(Error::Solver(
            "MI-Kernel produced non-finite coefficients".into(),
        ));
    }
    Ok(MiKernelFit {
        model: SetKernelModel {
            kernel,
            bags: Arc::clone(bags),
            coef,
            intercept: Array1::from_iter(sols.iter().map(|s| s.b)),
            n_classes: setup.n_classes,
        },
        gram: Arc::clone(gram),
        gamma,
        objective,
        ridged_objective: sols.iter().map(|s| s.value).collect(),
        n_iter: sols.iter().map(|s| s.iterations).max().unwrap_or(0),
        converged: sols.iter().all(|s| s.converged),
    })
}
