//! MILES: multiple-instance learning via embedded instance selection (Chen, Bi & Wang, "MILES:
//! Multiple-Instance Learning via Embedded Instance Selection", IEEE TPAMI 28(12):1931-1947,
//! 2006).
//!
//! 1. **Embedding** (the paper's instance-based feature mapping): every bag `B` is mapped to its
//!    similarity to each *concept* `z_k`,
//!    `s(z_k, B) = max_{x in B} exp(-gamma ||x - z_k||^2)` (the paper writes
//!    `exp(-||x - z_k||^2 / sigma^2)`, so `gamma = 1 / sigma^2`; its "most-likely-cause
//!    estimator"), `m(B) = [s(z_1, B), ..., s(z_n, B)]`. The concepts are every training
//!    instance (the paper's choice; `n_concepts = None`) or `n_concepts` of them chosen at
//!    random, or as many k-means centroids ([`crate::basis`]). The embedding is computed by
//!    [`crate::kernel::bag_max_kernel`]: blocks of bags against blocks of concepts in parallel,
//!    dense or CSR instances, never more than one block of instance-concept values per thread.
//!    With `kernel = "linear"`, `s(z_k, B) = max_{x in B} <x, z_k>`.
//! 2. **1-norm SVM** (the paper's joint feature selection and classification): the linear
//!    program `min lambda sum_k |w_k| + mu sum_{i in +} xi_i + (1 - mu) sum_{i in -} xi_i`,
//!    `y_i (w . m(B_i) + b) + xi_i >= 1`, `xi >= 0`, solved exactly by the revised simplex
//!    method of [`crate::solver::l1_svm`]. The crate's parameters: bag `i` costs
//!    `C class_weight[y_i]`, so the paper's `(lambda, mu)` is `C = 1 / lambda` with
//!    `class_weight = {positive: mu, negative: 1 - mu}` (`mu = 0.5`: `C = 0.5 / lambda` with no
//!    class weights). The selected concepts are those with `w_k != 0` (at most one per training
//!    bag).
//! 3. **The model**: `F(B) = sum_{k selected} w_k max_{x in B} k(z_k, x) + b`, the model form
//!    with [`Pooling::XvMax`] over the selected concepts only.
//! 4. **Instance classification** (the paper's section on instance classification): each
//!    selected concept credits `w_k k(z_k, x)` to the instance `x` of the bag that attains its
//!    max; `U` is the set of instances so credited; an instance of `U` is positive when its
//!    credited sum exceeds `theta = -b / |U|`. [`crate::model::Predictor::bag_instance_scores`]
//!    gives each instance of `U` its credited sum plus `b / |U|` (and 0 to the others): these
//!    shares sum to `F(B)`, and the paper's rule is "share > 0".
//!
//! More than two classes: one-vs-rest problems on the one embedding (in parallel), and the
//! concepts selected by any of them. A path over `C` ([`crate::fit::FitPath`]) computes the
//! embedding once and solves each value's LP from the slack basis, as an independent fit does:
//! the models equal independent fits bit for bit.

use ndarray::Array1;

use crate::bags::{Instances, Rows};
use crate::basis::{kmeans, random_rows, BasisInit};
use crate::error::{invalid_param, Result};
use crate::fit::Setup;
use crate::kernel::bag_max_kernel;
use crate::model::{Model, Pooling};
use crate::params::{hyperparams, KernelKind, Range};
use crate::progress::Progress;
use crate::solver::l1_svm::{solve_l1_svm, L1SvmProblem, L1SvmSettings, L1SvmSolution};

/// The most memory the embedding and the simplex basis inverse of a fit may take together
/// (`8 (n_bags n_concepts + n_bags^2)` bytes): 8 GiB. Above it a fit fails with a message
/// suggesting `n_concepts`, instead of the allocation failing (which aborts the process).
pub const MAX_FIT_BYTES: usize = 8 << 30;

hyperparams! {
    /// Hyperparameters of MILES (Chen, Bi & Wang 2006), declared once and checked into
    /// [`MilesValidParams`].
    pub struct MilesParams => MilesValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Candidate concepts: `None` for every training instance (the paper), else this many,
        /// chosen by `concept_init`.
        n_concepts: Option<usize> = None, check Range::AtLeast(1);
        /// How `n_concepts` concepts are chosen: distinct random training instances (CSR rows
        /// stay CSR) or k-means centroids of the training instances.
        concept_init: BasisInit = BasisInit::KMeans;
        /// Optimality tolerance of the simplex method: every reduced cost at least
        /// `-inner_tol (1 + |cost|)`.
        inner_tol: f64 = 1e-9, check Range::Open01;
        /// Pivot cap of the simplex method per problem (`None`: `20 (bags + concepts) + 1000`).
        inner_max_iter: Option<usize> = None, check Range::AtLeast(1);
        /// Seed of the concept choice.
        seed: u64 = 0;
    }
    fit -> MilesFit, path path_impl;
}

crate::record::record! { $ fields: miles_fit_fields;
    /// A fitted MILES: the model (the selected concepts, [`Pooling::XvMax`]) and the record of its
    /// linear programs, one entry per binary problem.
    #[derive(Debug, Clone, PartialEq)]
    pub struct MilesFit {
        /// The model.
        pub model: Model,
        /// The kernel width used.
        pub gamma: f64,
        /// The number of candidate concepts.
        pub n_concepts: usize,
        /// The index of each expansion vector of the model among the candidate concepts (training
        /// instance indices when every instance is a concept).
        pub selected: Vec<usize>,
        /// Per problem: the LP objective `sum_k |w_k| + sum_i C w_i xi_i`.
        pub objective: Vec<f64>,
        /// Per problem: concepts with a nonzero weight.
        pub n_selected: Vec<usize>,
        /// Per problem: simplex pivots.
        pub n_iter: Vec<usize>,
        /// Whether every LP met its optimality test (else its pivot cap was reached).
        #[py(name = "inner_converged")]
        pub converged: bool,
        /// Per problem: the LP's dual variables (one per training bag, in `[0, C w_i]`).
        pub dual: Vec<Vec<f64>>,
    }
}

impl MilesValidParams {
    /// Fits on bags with class indices `0..n_classes`.
    fn fit_impl(&self, setup: &Setup) -> Result<MilesFit> {
        crate::fit::only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The concepts: every training instance (`None`, borrowed), or `n_concepts` chosen by
    /// `concept_init`.
    fn concepts(&self, x: &Instances) -> Result<Option<Instances>> {
        let Some(q) = self.n_concepts else {
            return Ok(None);
        };
        if q > x.n_rows() {
            return Err(invalid_param(format!(
                "n_concepts ({q}) exceeds the number of training instances ({})",
                x.n_rows()
            )));
        }
        Ok(Some(match self.concept_init {
            BasisInit::Random => x.select_rows(&random_rows(x.n_rows(), q, self.seed)),
            BasisInit::KMeans => Instances::from(kmeans(x, q, 20, self.seed)),
        }))
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]): the embedding once, then
    /// per value and binary problem one LP from the slack basis.
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<MilesFit>> {
        let bags = setup.bags;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let n_concepts = self.n_concepts.unwrap_or(x.n_rows());
        let m = bags.n_bags();
        let bytes = m
            .checked_mul(n_concepts)
            .and_then(|e| e.checked_add(m.checked_mul(m)?))
            .and_then(|v| v.checked_mul(8));
        if bytes.is_none_or(|b| b > MAX_FIT_BYTES) {
            let size = bytes.map_or("more than 2^64 bytes".to_string(), |b| {
                format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
            });
            return Err(invalid_param(format!(
                "MILES on {m} bags with {n_concepts} concepts needs {size} for the embedding and \
                 the simplex basis (the limit is {} GiB): set n_concepts to a smaller number",
                MAX_FIT_BYTES >> 30
            )));
        }
        let chosen = self.concepts(x)?;
        setup.observer.check()?;
        let concepts = chosen.as_ref().unwrap_or(x);
        let embedding = bag_max_kernel(
            kernel,
            Rows::from(x),
            &x.sq_norms(),
            bags.bag_ptr(),
            Rows::from(concepts),
            &concepts.sq_norms(),
            setup.observer.cancel(),
        )?;
        let settings = L1SvmSettings {
            tol: self.inner_tol,
            max_iter: self.inner_max_iter,
            ..L1SvmSettings::default()
        };
        let cancel = setup.observer.cancel();
        cs.iter()
            .map(|&c| {
                let sols: Vec<L1SvmSolution> = setup.one_vs_rest(|problem| {
                    let cost: Vec<f64> = problem.weights.iter().map(|w| c * w).collect();
                    let lp = L1SvmProblem {
                        x: embedding.view(),
                        y: &problem.targets,
                        cost: &cost,
                    };
                    let cap = settings
                        .max_iter
                        .unwrap_or(20 * (embedding.nrows() + embedding.ncols()) + 1000);
                    solve_l1_svm(&lp, &settings, cancel, |step, objective| {
                        setup.observer.notify(Progress {
                            problem: problem.index,
                            step,
                            max_steps: cap,
                            objective,
                            temperature: None,
                            expected_steps: cap,
                        })
                    })
                })?;
                Ok(record(kernel, gamma, concepts, setup.n_classes, sols))
            })
            .collect()
    }
}

/// The fit of one value of `C` from its LP solutions (one per problem).
fn record(
    kernel: crate::kernel::Kernel,
    gamma: f64,
    concepts: &Instances,
    n_classes: usize,
    sols: Vec<L1SvmSolution>,
) -> MilesFit {
    let coefs: Vec<&[f64]> = sols.iter().map(|s| s.w.as_slice()).collect();
    let intercept = Array1::from_iter(sols.iter().map(|s| s.b));
    let model = Model::from_instance_coefficients(
        kernel,
        concepts,
        &coefs,
        intercept,
        n_classes,
        Pooling::XvMax,
    );
    // the rows `from_instance_coefficients` keeps (at least the first)
    let mut selected: Vec<usize> = (0..concepts.n_rows())
        .filter(|&k| coefs.iter().any(|c| c[k] != 0.0))
        .collect();
    if selected.is_empty() {
        selected.push(0);
    }
    MilesFit {
        model,
        gamma,
        n_concepts: concepts.n_rows(),
        selected,
        objective: sols.iter().map(|s| s.objective).collect(),
        n_selected: sols
            .iter()
            .map(|s| s.w.iter().filter(|&&v| v != 0.0).count())
            .collect(),
        n_iter: sols.iter().map(|s| s.iterations).collect(),
        converged: sols.iter().all(|s| s.converged),
        dual: sols.into_iter().map(|s| s.dual).collect(),
    }
}

/// The MILES embedding of `bags` against `concepts`: `E[i, k] = max_{x in bag i} k(z_k, x)`
/// (`n_bags x n_concepts`, [`crate::kernel::bag_max_kernel`]), for inspection and for scoring
/// bags with other linear models. Fails on a width mismatch.
pub fn embedding(
    kernel: crate::kernel::Kernel,
    bags: &crate::bags::Bags,
    concepts: &Instances,
) -> Result<ndarray::Array2<f64>> {
    if concepts.n_features() != bags.n_features() {
        return Err(invalid_param(format!(
            "the concepts have {} features, the bags have {}",
            concepts.n_features(),
            bags.n_features()
        )));
    }
    if concepts.sq_norms().iter().any(|v| !v.is_finite()) {
        return Err(crate::error::invalid_data(
            "the concepts have a non-finite value",
        ));
    }
    bag_max_kernel(
        kernel,
        Rows::from(bags.instances()),
        &bags.instances().sq_norms(),
        bags.bag_ptr(),
        Rows::from(concepts),
        &concepts.sq_norms(),
        &crate::progress::Cancel::default(),
    )
}
