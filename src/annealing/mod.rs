//! Deterministic annealing for multiple-instance SVMs (Gehler & Chapelle, AISTATS 2007) and the
//! alternating heuristics it generalises (Andrews, Tsochantaridis & Hofmann, NIPS 2002).
//!
//! Every method learns an instance classifier `f(x) = sum_k beta_k k(z_k, x) + b` (the model form
//! of [`crate::model`]) over all training instances or a reduced basis of `n_xv` vectors, and
//! scores a bag by the maximum of its instances' scores. The instance labels of positive bags
//! are unknown; each method keeps a probability `p_ij` per instance and alternates, at a
//! temperature `T`, between (a) the weighted squared-hinge SVM with the expected loss under `p`
//! ([`crate::solver::SquaredHinge`] with two-sided row costs) and (b) the closed-form update of
//! `p` for that SVM, until `KL(p, q) < eps` between two rounds; then `T <- T / decay`
//! (ALGORITHMS.md section 3):
//!
//! * **AL-SVM** (anneals mi-SVM; eq. 4-8): `p_ij = P(y_ij = +1)`, loss
//!   `C [p l(+1, f) + (1 - p) l(-1, f)] + T [p ln p + (1 - p) ln(1 - p)]` with
//!   `sum_j p_ij >= 1` per positive bag. Update `p_j = sigmoid((lambda - C d_j) / T)`,
//!   `d_j = l(+1, f_j) - l(-1, f_j)`, `lambda = 0` when that satisfies the constraint and else the
//!   exact root of `sum_j p_j = 1` ([`al_update`]). Stops when the mean entropy of `p` is below
//!   `eps`, or when, below `T = eps C`, the mean KL between `p` at the start and at the end of
//!   a temperature is below `eps`.
//! * **AW-SVM** (anneals MI-SVM / MICA; eq. 9-11): `p_ij` is a distribution over the instances of
//!   each positive bag, loss `C p l(+1, f) + T p ln p`, update `p = softmax(-C l / T)`
//!   ([`aw_update`]); stops when `p` no longer changes within a temperature, then labels the
//!   instances with `p > eps` positive (the others of positive bags drop out) and retrains.
//! * **ALP-SVM** (section 6, eq. 12-13 with `(y + 1) / 2`): AL-SVM plus
//!   `C2 (sum_j p_ij - m_i p*)^2` per positive bag; update by a monotone 1-D fixed point
//!   ([`alp_update`]), falling back to the simplex `sum_j p_j = 1` when it violates the constraint,
//!   and taking the exact `T = 0` minimiser ([`alp_update_cold`]) once `T` is negligible.
//! * **mi-SVM** and **MI-SVM** (Andrews et al.): the zero-temperature limits, run as their own
//!   alternating heuristics from the paper's start: mi-SVM labels every instance of a positive bag
//!   positive, then alternates training and relabelling by the sign of `f` (the instance of
//!   largest score forced positive when a bag has none) until no label changes; MI-SVM weighs
//!   each positive bag's instances `1 / m_i` (the start of AW-SVM), then alternates training and
//!   choosing each positive bag's witness, the instance of largest score, until no witness
//!   changes. On large data a few labels near the boundary can keep flipping, so both also
//!   stop (as converged, after training on the last labels) when at most `eps` of the labels
//!   that can change did change in a round (mi-SVM: the instances of positive bags; MI-SVM: the
//!   positive bags' witnesses; below `1 / eps` such labels this is "none", the paper's rule), or
//!   when a round's labelling is one of an earlier round (the rounds would cycle; labellings
//!   compared by a 64-bit hash). Both stop at `max_iter` with [`StopReason::MaxIter`] otherwise.
//!
//! Instances of negative bags are negative (cost `C` each) throughout. All probability updates
//! are in log-sum-exp form, shifted by the smallest loss of the bag, so that `T` down to 1e-300
//! and losses up to 1e300 or infinity give finite probabilities that satisfy the constraints;
//! they run in parallel over bags. More than two classes are fitted one-vs-rest in parallel
//! ([`crate::fit::Fit`]), each problem with its own `p`.

use ndarray::{Array1, Array2};

use crate::bags::Rows;
use crate::basis::{choose_basis, BasisInit};
use crate::choice::choices;
use crate::error::{invalid_param, Result};
use crate::fit::Setup;
use crate::kernel::{kernel_matrix, Basis};
use crate::model::{Model, Pooling};
use crate::params::{
    check_init_xv, check_init_xv_columns, hyperparams, KernelKind, Range, SvmRoute,
};
use crate::progress::StopReason;
use crate::smo::{InstanceGram, SmoParams};
use crate::solver::linear::{stack_weights, LINEAR_TOL};
use crate::solver::InnerSolver;

mod bookkeeping;
/// The fit over partitions held elsewhere (the Python package's Dask route).
#[cfg(any(feature = "python", test))]
pub(crate) mod distributed;
mod run;
mod svm_step;
mod updates;

use bookkeeping::BinaryData;
use svm_step::{LinearSvm, PrimalSvm, SvmStep, DUAL_TOL};
pub use updates::{
    al_update, alp_update, alp_update_cold, aw_update, loss_difference, sigmoid, simplex_sigmoid,
    squared_hinge, ALP_COLD,
};

choices! {
    /// Which method of the family to fit.
    pub enum AnnealingMethod {
        /// AL-SVM: annealing over instance labels (Gehler & Chapelle, Algorithm 1).
        Al = "al",
        /// AW-SVM: annealing over the witness of each positive bag (Algorithm 2).
        Aw = "aw",
        /// ALP-SVM: AL-SVM with a penalty on the fraction of positives per bag (section 6).
        Alp = "alp",
        /// mi-SVM: Andrews et al.'s instance-label heuristic.
        MiSvm = "mi",
        /// MI-SVM: Andrews et al.'s witness heuristic.
        MISvm = "MI",
    }
}

impl AnnealingMethod {
    /// Whether `p` holds instance labels (AL, ALP, mi-SVM) rather than witness weights.
    fn labels_instances(self) -> bool {
        matches!(
            self,
            AnnealingMethod::Al | AnnealingMethod::Alp | AnnealingMethod::MiSvm
        )
    }
    /// Whether the method is a zero-temperature heuristic.
    fn is_heuristic(self) -> bool {
        matches!(self, AnnealingMethod::MiSvm | AnnealingMethod::MISvm)
    }
    /// The default cap on the outer loop: 200 temperatures (annealing), 50 rounds (heuristics).
    pub fn default_max_iter(self) -> usize {
        if self.is_heuristic() {
            50
        } else {
            200
        }
    }
}

choices! {
    /// The starting probabilities of AL-SVM and ALP-SVM.
    pub enum InitialLabels {
        /// `p = 1/2` for every instance of a positive bag (Algorithm 1).
        Uniform = "uniform",
        /// `p = 1` (the bag label; with `T0 = 1e-8` this is mi-SVM, as section 4.1 says).
        BagLabels = "labels",
    }
}

/// Training sets up to this many instances get the full basis under `n_xv = "auto"`.
pub const AUTO_FULL_BASIS_MAX: usize = 5000;
/// The reduced basis size `n_xv = "auto"` chooses above [`AUTO_FULL_BASIS_MAX`] instances.
pub const AUTO_N_XV: usize = 500;

/// The basis of the instance classifier (`n_xv`): every training instance (the exact model of
/// the papers: the SVM step is the dual over all instances), a reduced basis of `k` vectors (the
/// SVM step is the primal over `k` kernel columns, `O(n_instances k^2)` per solve), or the
/// choice by the data's size. As a [`Value`](crate::params::Value): `"auto"`, `None` (full) or
/// an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BasisSize {
    /// The full basis up to [`AUTO_FULL_BASIS_MAX`] training instances (where the dual over
    /// every instance takes seconds), else [`AUTO_N_XV`] k-means centroids: the dual's cost
    /// grows as `n^2` (a 10,000-instance set took minutes per fit), the reduced primal's as `n`.
    #[default]
    Auto,
    /// Every training instance.
    Full,
    /// A reduced basis of this many vectors.
    Vectors(usize),
}

impl BasisSize {
    /// The reduced basis size for `n` training instances (`None`: the full basis).
    pub fn resolve(self, n: usize) -> Option<usize> {
        match self {
            BasisSize::Full => None,
            BasisSize::Vectors(k) => Some(k),
            BasisSize::Auto if n <= AUTO_FULL_BASIS_MAX => None,
            BasisSize::Auto => Some(AUTO_N_XV.min(n)),
        }
    }
}

const BASIS_NEED: &str = "must be 'auto', None or an integer >= 1";

/// Written as in Python: `"auto"`, `null` (full) or the number.
impl serde::Serialize for BasisSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match *self {
            BasisSize::Auto => s.serialize_str("auto"),
            BasisSize::Full => s.serialize_none(),
            BasisSize::Vectors(k) => s.serialize_u64(k as u64),
        }
    }
}

impl<'de> serde::Deserialize<'de> for BasisSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "auto" => Ok(BasisSize::Auto),
            serde_json::Value::Null => Ok(BasisSize::Full),
            serde_json::Value::Number(n) => n
                .as_u64()
                .map(|k| BasisSize::Vectors(k as usize))
                .ok_or_else(|| serde::de::Error::custom(format!("n_xv {BASIS_NEED}"))),
            other => Err(serde::de::Error::custom(format!(
                "n_xv {BASIS_NEED}, got {other}"
            ))),
        }
    }
}

impl crate::params::ParamType for BasisSize {
    fn from_value(
        value: &crate::params::Value,
    ) -> std::result::Result<Self, crate::params::Rejected> {
        use crate::params::{Rejected, Value};
        match value {
            Value::Str(s) if s == "auto" => Ok(BasisSize::Auto),
            Value::Str(_) => Err(Rejected::Value(BASIS_NEED.into())),
            Value::None => Ok(BasisSize::Full),
            Value::Int(k) => usize::try_from(*k)
                .map(BasisSize::Vectors)
                .map_err(|_| Rejected::Value(BASIS_NEED.into())),
            _ => Err(Rejected::Type(BASIS_NEED.into())),
        }
    }
    fn to_value(&self) -> crate::params::Value {
        use crate::params::Value;
        match *self {
            BasisSize::Auto => Value::Str("auto".into()),
            BasisSize::Full => Value::None,
            BasisSize::Vectors(k) => Value::Int(k as i64),
        }
    }
    fn check_range(&self, name: &str, range: &Range, _optional: bool) -> Result<()> {
        match *self {
            BasisSize::Vectors(k) if !range.contains(k as f64) => {
                Err(invalid_param(format!("{name} {BASIS_NEED}, got {k}")))
            }
            _ => Ok(()),
        }
    }
}

hyperparams! {
    /// Hyperparameters of the annealing family (Gehler & Chapelle 2007; Andrews et al. 2002),
    /// declared once and checked into [`AnnealingValidParams`].
    pub struct AnnealingParams => AnnealingValidParams {
        shared(kernel = KernelKind::Rbf);
        /// The method.
        method: AnnealingMethod = AnnealingMethod::Al;
        /// ALP-SVM's penalty weight `C2`.
        c2 as "C2": f64 = 1.0, check Range::NonNegative;
        /// ALP-SVM's expected fraction of positives per positive bag.
        p_star: f64 = 0.5, check Range::Closed01;
        /// Initial temperature `T0` (`None`: `10 C`, the paper's choice).
        t0 as "T0": Option<f64> = None, check Range::Positive;
        /// Temperature divisor per step (the paper: 1.5).
        decay: f64 = 1.5, check Range::GreaterThan(1.0);
        /// Tolerance of the stopping rules (KL between rounds, entropy, change of `p`; for mi-SVM
        /// and MI-SVM the fraction of labels changed in a round).
        eps: f64 = 1e-4, check Range::Open01;
        /// Cap on the outer loop: temperatures (annealing) or rounds (mi-SVM / MI-SVM);
        /// `None`: [`AnnealingMethod::default_max_iter`] (200 or 50).
        max_iter: Option<usize> = None, check Range::AtLeast(1);
        /// Cap on SVM / `p` rounds at one temperature.
        max_alternations: usize = 50, check Range::AtLeast(1);
        /// Starting probabilities of AL-SVM / ALP-SVM.
        init: InitialLabels = InitialLabels::Uniform;
        /// The basis: `"auto"` (every training instance up to [`AUTO_FULL_BASIS_MAX`] of them,
        /// else [`AUTO_N_XV`] k-means centroids), `None` (every training instance) or a reduced
        /// basis of this many vectors.
        n_xv: BasisSize = BasisSize::Auto, check Range::AtLeast(1);
        /// How `n_xv` basis vectors are chosen when `init_xv` is not given.
        xv_init: BasisInit = BasisInit::KMeans;
        /// The reduced basis (`n_xv x n_features`), replacing the choice by `xv_init`.
        init_xv: Option<Array2<f64>> = None;
        /// Ridge added to the basis kernel matrix.
        ridge: f64 = 1e-8, check Range::NonNegative;
        /// How the SVM step is solved (`auto`: `linear` for the linear kernel without a
        /// reduced basis, else `kernel`).
        solver: SvmRoute = SvmRoute::Auto;
        /// Relative tolerance of the inner solver (`None`: 1e-10 for the primal Newton solver
        /// of a reduced basis, 1e-3 for the dual solver of the full basis, 1e-6 for the linear
        /// primal solver).
        inner_tol: Option<f64> = None, check Range::Open01;
        /// Iteration cap of the inner solver.
        inner_max_iter: usize = 1000, check Range::AtLeast(1);
        /// Kernel-row cache of the dual solver (full basis), in bytes, shared by the problems
        /// (the crate's budget per fit, [`crate::smo::FIT_CACHE_BYTES`]); it also bounds the
        /// instance kernel matrix stored whole for a small set ([`crate::smo::InstanceGram`]).
        cache_bytes: usize = crate::smo::FIT_CACHE_BYTES;
        /// Seed of the random reduced basis.
        seed: u64 = 0;
    }
    cross_check check_basis;
    fit -> AnnealingFit;
}

/// The given reduced basis matches `n_xv` and is finite; `solver = "linear"` has the linear
/// kernel and no reduced basis.
fn check_basis(p: &AnnealingValidParams) -> Result<()> {
    check_init_xv(p.init_xv.as_ref(), p.basis_size(usize::MAX))?;
    crate::params::check_route(p.solver, p.kernel)?;
    if p.solver == SvmRoute::Linear
        && (matches!(p.n_xv, BasisSize::Vectors(_)) || p.init_xv.is_some())
    {
        return Err(invalid_param(
            "solver='linear' fits w directly and takes no reduced basis: leave n_xv='auto' or None"
                .to_string(),
        ));
    }
    Ok(())
}

crate::record::record! { $ fields: annealing_fit_fields;
    /// A fitted annealing-family model with its training record (one entry per binary problem:
    /// one for two classes, one per class for more).
    #[derive(Debug, Clone, PartialEq)]
    pub struct AnnealingFit {
        /// The instance classifier with max pooling.
        pub model: Model,
        /// The final `p` of every training instance (AL / ALP / mi-SVM: probability of a positive
        /// label, 0 in negative bags; AW / MI-SVM: witness weight, 1 in negative bags).
        pub p: Vec<Vec<f64>>,
        /// Mean fraction of positives per positive bag (`p > 1/2` for AL / ALP / mi-SVM, the
        /// witnesses for AW / MI-SVM).
        pub p_hat: Vec<f64>,
        /// The objective at the end of each temperature (heuristics: of each round).
        pub objective_history: Vec<Vec<f64>>,
        /// The temperatures visited (heuristics: empty).
        pub temperatures: Vec<Vec<f64>>,
        /// Temperatures (heuristics: rounds) run.
        pub n_iter: Vec<usize>,
        /// SVM solves in all.
        pub n_solves: Vec<usize>,
        /// Per problem: why it stopped (converged: the stopping rule was met before `max_iter`).
        #[py(name = "converged")]
        pub stop_reason: Vec<StopReason>,
        /// The kernel width used.
        pub gamma: f64,
        /// How the SVM step was solved (`kernel` or `linear`, never `auto`).
        pub solver: SvmRoute,
        /// The size of the reduced basis used (`None`: every training instance, or `w` for the
        /// linear route); with `n_xv = "auto"`, the choice made.
        pub n_xv: Option<usize>,
    }
}

impl AnnealingParams {
    /// AL-SVM defaults.
    pub fn al() -> Self {
        Self::new()
    }
    /// AW-SVM defaults.
    pub fn aw() -> Self {
        Self::new().method(AnnealingMethod::Aw)
    }
    /// ALP-SVM defaults (`C2 = 1`, `p* = 0.5`).
    pub fn alp() -> Self {
        Self::new().method(AnnealingMethod::Alp)
    }
    /// mi-SVM defaults.
    pub fn mi_svm() -> Self {
        Self::new().method(AnnealingMethod::MiSvm)
    }
    /// MI-SVM defaults.
    pub fn big_mi_svm() -> Self {
        Self::new().method(AnnealingMethod::MISvm)
    }
}

impl AnnealingValidParams {
    /// The route of the SVM step: `auto` resolved.
    fn route(&self) -> SvmRoute {
        match self.solver {
            SvmRoute::Auto
                if self.kernel == KernelKind::Linear
                    && !matches!(self.n_xv, BasisSize::Vectors(_))
                    && self.init_xv.is_none() =>
            {
                SvmRoute::Linear
            }
            SvmRoute::Auto => SvmRoute::Kernel,
            route => route,
        }
    }

    /// The reduced basis size for `n` training instances (`None`: the full basis): a given
    /// basis (`init_xv`) under `n_xv = "auto"` has its own size.
    fn basis_size(&self, n: usize) -> Option<usize> {
        match (&self.init_xv, self.n_xv) {
            (Some(z), BasisSize::Auto) => Some(z.nrows()),
            (_, size) => size.resolve(n),
        }
    }

    /// The cap on the outer loop (temperatures or rounds).
    fn outer_cap(&self) -> usize {
        self.max_iter
            .unwrap_or_else(|| self.method.default_max_iter())
    }

    /// Fits on bags with class indices `0..n_classes` (one-vs-rest beyond two classes, each
    /// problem with its own `p`).
    fn fit_impl(&self, setup: &Setup) -> Result<AnnealingFit> {
        let bags = setup.bags;
        let n_xv = self.basis_size(bags.n_instances());
        if let Some(q) = n_xv {
            if self.init_xv.is_none() && q > bags.n_instances() {
                return Err(invalid_param(format!(
                    "n_xv ({q}) exceeds the number of training instances ({})",
                    bags.n_instances()
                )));
            }
        }
        check_init_xv_columns(self.init_xv.as_ref(), bags.n_features())?;
        let n_classes = setup.n_classes;
        let x = bags.instances();
        // The linear kernel has no width: `gamma` is only reported, and its pass (one serial
        // sum over every value, in a fixed order) runs beside the fit below, on a thread of its
        // own when the pool has two.
        let linear_kernel = self.kernel == KernelKind::Linear;
        let (kernel, gamma) = if linear_kernel {
            (self.kernel.with_gamma(0.0), None)
        } else {
            let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
            (kernel, Some(gamma))
        };
        // The basis: a reduced set of vectors, or every training instance.
        let route = self.route();
        let linear = route == SvmRoute::Linear;
        let (basis_rows, full) = match (&self.init_xv, n_xv) {
            _ if linear => (Array2::zeros((0, 0)), false),
            (Some(z), _) => (z.clone(), false),
            (None, Some(q)) => (choose_basis(x, q, self.xv_init, self.seed), false),
            (None, None) => (Array2::zeros((0, 0)), true),
        };
        // squared norms for the kernel routes only (a pass over the rows)
        let norms = if linear { Vec::new() } else { x.sq_norms() };
        let rows = Rows::from(x);
        // Full basis: the dual problem over the instances (SMO, kernel rows on demand); reduced
        // basis: the primal problem over the basis (exact Newton).
        let (design, k_reg) = if full || linear {
            (Array2::zeros((0, 0)), Array2::zeros((0, 0)))
        } else {
            let basis = Basis::direct(basis_rows.clone());
            let k_xz = kernel_matrix(kernel, rows, &norms, &basis);
            let mut k_zz = kernel_matrix(kernel, basis.as_rows(), &basis.sq_norms, &basis);
            k_zz.diag_mut().mapv_inplace(|v| v + self.ridge);
            (k_xz, k_zz)
        };
        let gram = if full {
            Some(
                InstanceGram::new(kernel, rows)?
                    .with_store_limit(self.cache_bytes.min(crate::smo::STORE_MAX_BYTES)),
            )
        } else {
            None
        };
        let linear_svm = LinearSvm {
            x,
            bag_ptr: bags.bag_ptr(),
            mean: if linear {
                crate::solver::linear::mean_row(x, bags.bag_ptr())
            } else {
                Vec::new()
            },
            tol: self.inner_tol.unwrap_or(LINEAR_TOL),
            max_iter: self.inner_max_iter,
            cancel: self.observer.cancel().clone(),
        };
        let n_problems = setup.n_problems();
        let primal = PrimalSvm {
            k_reg: &k_reg,
            design: &design,
            tol: self.inner_tol.unwrap_or(InnerSolver::Newton.default_tol()),
            max_iter: self.inner_max_iter,
        };
        let (runs, gamma) = rayon::join(
            || {
                setup.one_vs_rest(|problem| {
                    let data = BinaryData {
                        bag_ptr: bags.bag_ptr(),
                        targets: &problem.targets,
                        costs: problem.weights.iter().map(|w| self.c * w).collect(),
                    };
                    let step = if linear {
                        SvmStep::Linear {
                            svm: &linear_svm,
                            warm: None,
                        }
                    } else if let Some(gram) = gram.as_ref() {
                        let smo = SmoParams {
                            tol: self.inner_tol.unwrap_or(DUAL_TOL),
                            cache_bytes: self.cache_bytes / n_problems,
                            ..SmoParams::default()
                        };
                        SvmStep::dual(
                            gram,
                            smo,
                            &data,
                            self.method,
                            self.observer.cancel().clone(),
                        )?
                    } else {
                        SvmStep::Primal {
                            svm: &primal,
                            warm: None,
                            hessian: Box::new(None),
                        }
                    };
                    self.run_binary(step, &data, problem.index)
                })
            },
            || gamma.unwrap_or_else(|| self.gamma.resolve(x)),
        );
        let runs = runs?;
        let intercept = Array1::from_iter(runs.iter().map(|r| r.b));
        let model = if linear {
            // Each problem's w is one basis vector, with coefficient 1 in its own problem.
            let ws: Vec<&Array1<f64>> = runs.iter().map(|r| &r.beta).collect();
            let xv = stack_weights(&ws, x.n_features());
            let eye = Array2::eye(runs.len());
            Model::new(kernel, xv, eye, intercept, n_classes, Pooling::Max)
        } else if full {
            // The instances that carry a coefficient in some problem, CSR rows kept CSR (a
            // linear kernel collapses them into one w per problem).
            let coefs: Vec<Vec<f64>> = runs.iter().map(|r| r.beta.to_vec()).collect();
            let coefs: Vec<&[f64]> = coefs.iter().map(Vec::as_slice).collect();
            Model::from_instance_coefficients(kernel, x, &coefs, intercept, n_classes, Pooling::Max)
        } else {
            let mut coef = Array2::zeros((runs.len(), k_reg.nrows()));
            for (mut row, run) in coef.rows_mut().into_iter().zip(&runs) {
                row.assign(&run.beta);
            }
            Model::new(kernel, basis_rows, coef, intercept, n_classes, Pooling::Max)
        };
        Ok(crate::fit::per_problem!(runs => AnnealingFit {
            p, p_hat, objective_history, temperatures, n_iter, n_solves, stop_reason,
        } {
            model,
            gamma,
            solver: route,
            n_xv: if full || linear {
                None
            } else {
                Some(k_reg.nrows())
            },
        }))
    }
}
