//! SparseMI (Fu, Lu, Ting, Zhang 2011/2013): a label-mean kernel SVM whose `n_xv` expansion
//! vectors are learned by gradient descent on the optimal value of the inner problem, and RSVM,
//! its baseline with random, fixed expansion vectors.
//!
//! Objective (Fu et al. 2013, eq. 9; ALGORITHMS.md section 2), for each one-vs-rest problem:
//! `g(Z) = min_{beta,b} 1/2 beta^T K_Z beta + C sum_i max(0, 1 - y_i ((M beta)_i + b))^2`
//! with `M[i,k]` the bag mean of `k(x_ip, z_k)`. Multi-class problems share `Z` and sum their
//! optimal values (eq. 19-20). The outer step follows Algorithm 1 with the gradient of eq. 13:
//! `dg/dz_k = beta_k [sum_j beta_j dk(z_j,z_k)/dz_k + sum_ip a_ip dk(x_ip,z_k)/dz_k]`,
//! `a_ip = C l'(y_i, F_i) / n_i`.

use ndarray::{Array1, Array2};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::bags::{Bags, Instances, Rows};
use crate::error::{invalid_param, Result};
use crate::fit::{ParamGuard, Prologue, Setup};
use crate::kernel::{basis_gradient, finish_gradient, kernel_matrix, Basis, Kernel};
use crate::model::Model;
use crate::params::{
    check_columns, check_init_xv, check_init_xv_columns, hyperparams, KernelKind, Range,
};
use crate::progress::Progress;
use crate::solver::{InnerSolver, Solution, SquaredHinge};

#[cfg(any(feature = "python", test))]
pub(crate) mod distributed;
mod rows;

use rows::{BagRows, DescentRows};

hyperparams! {
    /// Hyperparameters of SparseMI and RSVM (Fu et al. 2013, Algorithm 1; RSVM is
    /// `max_iter = 0`): declared once, checked by [`ParamGuard::check_ref`] into
    /// [`SparseMiValidParams`], the type the fit runs on.
    pub struct SparseMiParams => SparseMiValidParams {
        shared(kernel = KernelKind::Rbf);
        /// Number of expansion vectors `N_xv`.
        n_xv: usize = 10, check Range::AtLeast(1);
        /// Outer iterations `t_max` (0 gives RSVM: the inner problem on the initial XVs).
        max_iter: usize = 50;
        /// Line-search trials per outer iteration `s_max`.
        max_line_search: usize = 10, check Range::AtLeast(1);
        /// Stop when the relative decrease of `g` in an outer iteration is below `tol`.
        tol: f64 = 1e-6, check Range::NonNegative;
        /// Inner solver.
        solver: InnerSolver = InnerSolver::Newton;
        /// Relative gradient tolerance of the inner solver (`None`: the solver's default,
        /// [`InnerSolver::default_tol`]).
        inner_tol: Option<f64> = None, check Range::Open01;
        /// Iteration cap of the inner solver.
        inner_max_iter: usize = 1000, check Range::AtLeast(1);
        /// Ridge added to the diagonal of `K_Z` (Fu et al., footnote).
        ridge: f64 = 1e-8, check Range::NonNegative;
        /// Seed of the random initialisation.
        seed: u64 = 0;
        /// Initial expansion vectors (`n_xv x n_features`), replacing the random choice
        /// (direct mode only).
        init_xv: Option<Array2<f64>> = None;
        /// Basis-vector mode (Fu et al. 2013, section IV-E): the XVs are `Z = V B` over this
        /// many basis vectors, and all kernel work runs in `n_basis` dimensions. For sparse,
        /// high-dimensional instances.
        n_basis: Option<usize> = None, check Range::AtLeast(1);
        /// The basis vectors (`n_basis x n_features`), replacing `n_basis` random training
        /// instances (e.g. k-means centroids).
        init_basis: Option<Instances> = None;
    }
    cross_check check_together;
    fit -> SparseMiFit, path path_impl;
}

/// The checks across fields: the given starting points match `n_xv` / `n_basis`, and the
/// starting points of one mode are not given with the other.
fn check_together(p: &SparseMiValidParams) -> Result<()> {
    if let Some(b) = &p.init_basis {
        if Some(b.n_rows()) != p.n_basis {
            return Err(invalid_param(format!(
                "init_basis has {} rows, n_basis is {:?}",
                b.n_rows(),
                p.n_basis
            )));
        }
    }
    if p.init_xv.is_some() && p.n_basis.is_some() {
        return Err(invalid_param(
            "init_xv applies to direct mode; with n_basis give init_basis instead",
        ));
    }
    check_init_xv(p.init_xv.as_ref(), Some(p.n_xv))
}

crate::record::record! { $ fields: sparse_mi_fit_fields;
    /// A fitted SparseMI / RSVM model with its training record.
    #[derive(Debug, Clone, PartialEq)]
    pub struct SparseMiFit {
        /// The model (expansion vectors, coefficients, biases).
        pub model: Model,
        /// The expansion vectors the descent started from.
        pub initial_xv: Array2<f64>,
        /// `g(Z)` at the start and after each accepted outer iteration (non-increasing).
        pub objective_history: Vec<f64>,
        /// Accepted outer iterations.
        pub n_iter: usize,
        /// The kernel width used.
        pub gamma: f64,
        /// Whether every final inner problem met its stopping rule.
        pub inner_converged: bool,
    }
}

impl SparseMiParams {
    /// RSVM defaults: random expansion vectors, no outer iterations.
    pub fn rsvm() -> Self {
        Self::new().max_iter(0)
    }
}

impl SparseMiValidParams {
    /// Fits SparseMI (or RSVM when `max_iter = 0`) on bags with class indices `0..n_classes`.
    /// Two classes give one problem (class 1 positive); more give one-vs-rest problems that
    /// share the expansion vectors. The path of the one value `C`.
    fn fit_impl(&self, setup: &Setup) -> Result<SparseMiFit> {
        crate::fit::only_fit(self.path_impl(setup, &[self.c])?)
    }

    /// The fits at the ascending values `cs` ([`crate::fit::FitPath`]). The starting
    /// expansion vectors (and, in basis-vector mode, the products with the basis) are drawn
    /// and computed once; they do not depend on `C`. RSVM (`max_iter = 0`) keeps them, so its
    /// path also keeps their kernel values and starts each value's inner solves from the
    /// previous value's `(beta, b)`. SparseMI runs its descent from them anew for every value,
    /// exactly as an independent fit would (the descent is not convex: a start from another
    /// value's vectors or solutions could take another way).
    fn path_impl(&self, setup: &Setup, cs: &[f64]) -> Result<Vec<SparseMiFit>> {
        let bags = setup.bags;
        self.check_n_basis(bags.n_instances())?;
        check_columns("init_basis", self.init_basis.as_ref(), bags.n_features())?;
        self.check_n_xv(bags.n_instances())?;
        check_init_xv_columns(self.init_xv.as_ref(), bags.n_features())?;
        let x = bags.instances();
        let (kernel, gamma) = self.kernel.resolve(self.gamma, x);
        let norms = x.sq_norms();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        match self.n_basis {
            None => {
                let initial_xv = match &self.init_xv {
                    Some(z) => z.clone(),
                    None => {
                        let rows = sample(&mut rng, bags.n_instances(), self.n_xv).into_vec();
                        x.dense_rows(&rows)
                    }
                };
                self.descents(
                    setup,
                    cs,
                    (kernel, gamma),
                    Rows::from(x),
                    &norms,
                    (&initial_xv, &initial_xv),
                    Basis::direct,
                    |basis| basis.v.clone(),
                )
            }
            Some(q) => {
                // Z = V B: kernels need only P = X B^T (N x Q), G = B B^T and ||x||^2.
                let bv = match &self.init_basis {
                    Some(b) => b.clone(),
                    None => x.select_rows(&sample(&mut rng, bags.n_instances(), q).into_vec()),
                };
                let p = x.cross_gram(&bv);
                let (g, v0, initial_xv) = self.basis_start(&mut rng, &bv);
                self.descents(
                    setup,
                    cs,
                    (kernel, gamma),
                    Rows::Dense(p.view()),
                    &norms,
                    (&v0, &initial_xv),
                    |v| Basis::projected(v, g.view()),
                    |basis| bv.combine_rows(&basis.v),
                )
            }
        }
    }

    /// Random basis vectors are distinct training instances: at most `n_instances`.
    fn check_n_basis(&self, n_instances: usize) -> Result<()> {
        if let (Some(q), None) = (self.n_basis, &self.init_basis) {
            if q > n_instances {
                return Err(invalid_param(format!(
                    "n_basis ({q}) exceeds the number of training instances ({n_instances})"
                )));
            }
        }
        Ok(())
    }

    /// Basis-vector mode's start from the basis vectors `bv` (`Z = V B`): their Gram matrix
    /// `G = B B^T` (with the rows' products `P = X B^T`, all the kernels need), the initial
    /// coefficients `V_0` drawn from `rng`, and the initial XVs `V_0 B`.
    fn basis_start(
        &self,
        rng: &mut ChaCha8Rng,
        bv: &Instances,
    ) -> (Array2<f64>, Array2<f64>, Array2<f64>) {
        let g = bv.cross_gram(bv);
        // Random initial coefficients (section V-C): a random convex combination of the basis
        // vectors per XV, so that the XVs start inside the data's range.
        let mut v0 = Array2::from_shape_fn((self.n_xv, bv.n_rows()), |_| rng.random::<f64>());
        for mut r in v0.rows_mut() {
            let s = r.sum();
            r /= s.max(f64::MIN_POSITIVE);
        }
        let initial_xv = bv.combine_rows(&v0);
        (g, v0, initial_xv)
    }

    /// Random expansion vectors are distinct training instances: at most `n_instances`.
    fn check_n_xv(&self, n_instances: usize) -> Result<()> {
        if self.n_xv > n_instances && self.init_xv.is_none() && self.n_basis.is_none() {
            return Err(invalid_param(format!(
                "n_xv ({}) exceeds the number of training instances ({n_instances})",
                self.n_xv,
            )));
        }
        Ok(())
    }

    /// The descents at every value of `cs` on the objective over `rows` (the instances, or
    /// their products with the basis vectors), each from `make(start.0)`; `to_xv` gives a
    /// descent's XVs in the input space and `start.1` is the initial XVs the fits record. A
    /// value is warm-started from the previous one's solutions only without iterations
    /// (`max_iter == 0`, where the descent is one evaluation).
    #[allow(clippy::too_many_arguments)]
    fn descents(
        &self,
        setup: &Setup,
        cs: &[f64],
        (kernel, gamma): (Kernel, f64),
        rows: Rows<'_>,
        norms: &[f64],
        (v0, initial_xv): (&Array2<f64>, &Array2<f64>),
        make: impl Fn(Array2<f64>) -> Basis,
        to_xv: impl Fn(&Basis) -> Array2<f64>,
    ) -> Result<Vec<SparseMiFit>> {
        let mut fits = Vec::with_capacity(cs.len());
        let mut warm: Option<Vec<Solution>> = None;
        let (targets, weights) = problems(self, setup.labels, setup.n_classes);
        let bag_ptr = setup.bags.bag_ptr().to_vec();
        let n_bags = setup.bags.n_bags();
        let mut store = BagRows::new(
            kernel,
            rows,
            norms.to_vec(),
            (bag_ptr, 0, n_bags),
            (targets.clone(), Vec::new()),
        );
        for &c in cs {
            let params = self.with_c(c);
            let objective = Objective::new(&params, kernel, &targets, &weights);
            store.costs.clone_from(&objective.costs);
            let (basis, point, history) = descend_with(
                &params,
                &objective,
                &mut store,
                make(v0.clone()),
                warm.take(),
                &make,
            )?;
            let xv = to_xv(&basis);
            fits.push(self.record(
                setup.n_classes,
                (kernel, gamma),
                &basis,
                &point,
                history,
                initial_xv,
                xv,
            ));
            warm = (self.max_iter == 0).then_some(point.sols);
        }
        Ok(fits)
    }

    /// The fit record of one value from the end of its descent.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        n_classes: usize,
        (kernel, gamma): (Kernel, f64),
        basis: &Basis,
        point: &Point,
        history: Vec<f64>,
        initial_xv: &Array2<f64>,
        xv: Array2<f64>,
    ) -> SparseMiFit {
        let coef = Array2::from_shape_fn((point.sols.len(), basis.len()), |(c, k)| {
            point.sols[c].beta[k]
        });
        let intercept = Array1::from_iter(point.sols.iter().map(|s| s.b));
        SparseMiFit {
            model: Model::new(
                kernel,
                xv,
                coef,
                intercept,
                n_classes,
                crate::model::Pooling::Mean,
            ),
            initial_xv: initial_xv.clone(),
            n_iter: history.len() - 1,
            objective_history: history,
            gamma,
            inner_converged: point.sols.iter().all(|s| s.converged),
        }
    }
}

/// The per-problem targets (`+1 / -1` per bag) and class weights per bag of the fit of
/// `labels` (`n_classes` classes): one problem for two classes (class 1 positive), else one
/// per class (eq. 19-20).
pub(crate) fn problems(
    params: &SparseMiValidParams,
    labels: &[usize],
    n_classes: usize,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    crate::multiclass::binary_targets(labels, n_classes)
        .into_iter()
        .map(|t| {
            let w = params.class_weight.bag_weights(&t, labels);
            (t, w)
        })
        .unzip()
}

/// The small part of the SparseMI objective `g`, on the driver: the inner problems on the bag
/// means `M` (their targets, costs `C w_i`, kernel) and the expansion vectors' own terms.
pub(crate) struct Objective<'a> {
    kernel: Kernel,
    /// Targets in {-1,+1} per problem (one problem when binary).
    targets: &'a [Vec<f64>],
    /// `C w_i` per problem and bag (`w_i` the class weight of bag `i` in that problem).
    costs: Vec<Vec<f64>>,
    params: &'a SparseMiValidParams,
}

/// `g` and everything needed for its gradient at one basis (the per-row values stay with the
/// rows, [`DescentRows`]).
pub(crate) struct Point {
    k_z: Array2<f64>,
    sols: Vec<Solution>,
    value: f64,
}

impl<'a> Objective<'a> {
    /// The objective of `params` (its `C`) for the problems' targets and class weights.
    pub(crate) fn new(
        params: &'a SparseMiValidParams,
        kernel: Kernel,
        targets: &'a [Vec<f64>],
        weights: &[Vec<f64>],
    ) -> Self {
        let costs = weights
            .iter()
            .map(|w| w.iter().map(|w| params.c * w).collect())
            .collect();
        Self {
            kernel,
            targets,
            costs,
            params,
        }
    }

    /// Solves the inner problems on the bag means `m` of `basis` (warm-started from `warm`)
    /// and returns `g` with its point.
    pub(crate) fn solve(
        &self,
        basis: &Basis,
        m: Array2<f64>,
        warm: Option<&[Solution]>,
    ) -> Result<Point> {
        let k_z = kernel_matrix(self.kernel, basis.as_rows(), &basis.sq_norms, basis);
        let mut k_reg = k_z.clone();
        k_reg.diag_mut().mapv_inplace(|v| v + self.params.ridge);
        let sols = self
            .targets
            .par_iter()
            .enumerate()
            .map(|(c, y)| {
                let problem = SquaredHinge {
                    k: k_reg.view(),
                    x: m.view(),
                    y,
                    c: &self.costs[c],
                    c_opp: &[],
                };
                let w = warm.map(|w| (w[c].beta.view(), w[c].b));
                let tol = self
                    .params
                    .inner_tol
                    .unwrap_or(self.params.solver.default_tol());
                problem.solve(self.params.solver, w, tol, self.params.inner_max_iter)
            })
            .collect::<Result<Vec<_>>>()?;
        let value = sols.iter().map(|s| s.value).sum();
        Ok(Point { k_z, sols, value })
    }

    /// `dg/dV` at an evaluated point (Danskin: no derivative through `beta`): the data term
    /// from the rows, summed in the tree over the bags, plus the expansion vectors' term.
    pub(crate) fn gradient(
        &self,
        rows: &mut impl DescentRows,
        basis: &Basis,
        p: &Point,
    ) -> Result<Array2<f64>> {
        let nb = basis.len();
        let (mut data, colsum) = rows.data_gradient(&p.sols)?;
        finish_gradient(
            self.kernel,
            &mut data,
            ndarray::ArrayView1::from(&colsum),
            basis,
        );
        let mut a_z = Array2::<f64>::zeros((nb, nb));
        for sol in &p.sols {
            for j in 0..nb {
                for k in 0..nb {
                    a_z[[j, k]] += sol.beta[j] * sol.beta[k];
                }
            }
        }
        Ok(data
            + basis_gradient(
                self.kernel,
                basis.as_rows(),
                p.k_z.view(),
                a_z.view(),
                basis,
            ))
    }
}

/// Mean pairwise distance between the basis vectors (Algorithm 1's initial step size).
fn mean_pairwise_distance(basis: &Basis) -> f64 {
    let nb = basis.len();
    if nb < 2 {
        return basis.sq_norms.first().map_or(1.0, |t| t.sqrt().max(1.0));
    }
    let mut total = 0.0;
    for j in 0..nb {
        for k in j + 1..nb {
            let d2 =
                basis.sq_norms[j] + basis.sq_norms[k] - 2.0 * basis.u.row(j).dot(&basis.v.row(k));
            total += d2.max(0.0).sqrt();
        }
    }
    total / (nb * (nb - 1) / 2) as f64
}

/// Algorithm 1 of Fu et al. 2013: gradient steps on the basis coordinates with step halving
/// (up to `s_max` trials), doubling after a first-trial success, the step carried over between
/// iterations. Returns the final basis, its point and the history of `g`. `make` maps
/// coordinates to a basis ([`Basis::direct`], or the projection of basis-vector mode);
/// optionally, the solutions at `basis0` of another `C` (a `C` path): they start the first
/// inner solves, and the rows' current inner products (those of `basis0`) are reused. The rows
/// ([`DescentRows`]) are in process or held by partitions.
pub(crate) fn descend_with(
    params: &SparseMiValidParams,
    objective: &Objective,
    rows: &mut impl DescentRows,
    basis0: Basis,
    warm: Option<Vec<Solution>>,
    make: impl Fn(Array2<f64>) -> Basis,
) -> Result<(Basis, Point, Vec<f64>)> {
    let mut basis = basis0;
    let m = rows.evaluate(&basis, warm.is_some())?;
    let mut point = objective.solve(&basis, m, warm.as_deref())?;
    let mut history = vec![point.value];
    let mut distance = mean_pairwise_distance(&basis);
    if !(distance.is_finite() && distance > 0.0) {
        distance = 1.0;
    }
    let mut step = f64::NAN;
    for _ in 0..params.max_iter {
        params.observer.check()?;
        let grad = objective.gradient(rows, &basis, &point)?;
        if grad.iter().all(|&g| g == 0.0) || !grad.iter().all(|g| g.is_finite()) {
            break;
        }
        if step.is_nan() {
            // The first trial moves the farthest-moving XV by the mean pairwise distance of the
            // initial XVs (Algorithm 1's lambda read as a length: the gradient scales with C, so
            // lambda used as a plain multiplier overshoots and can throw XVs far from the data).
            let largest = grad
                .rows()
                .into_iter()
                .map(|r| r.dot(&r).sqrt())
                .fold(0.0, f64::max);
            step = distance / largest;
        }
        // D(V - l G) = D(V) - l F G^T: one product per iteration, none per trial.
        rows.direction(&grad)?;
        let mut accepted = None;
        for s in 1..=params.max_line_search {
            params.observer.check()?;
            let candidate = make(&basis.v - &(&grad * step));
            let m = rows.trial(step, &candidate.sq_norms)?;
            let p = objective.solve(&candidate, m, Some(&point.sols))?;
            if p.value < point.value {
                rows.accept()?;
                if s == 1 {
                    step *= 2.0;
                }
                accepted = Some((candidate, p));
                break;
            }
            step *= 0.5;
        }
        let Some((b, p)) = accepted else { break };
        let decrease = (point.value - p.value) / point.value.abs().max(f64::MIN_POSITIVE);
        basis = b;
        point = p;
        history.push(point.value);
        params.observer.notify(Progress {
            problem: 0,
            step: history.len() - 1,
            max_steps: params.max_iter,
            objective: point.value,
            temperature: None,
            expected_steps: params.max_iter,
        });
        if decrease < params.tol {
            break;
        }
    }
    Ok((basis, point, history))
}

/// `g(Z)` and `dg/dZ` at given expansion vectors (direct mode), for gradient checks.
pub fn objective_and_gradient(
    params: &SparseMiParams,
    bags: &Bags,
    labels: &[usize],
    z: Array2<f64>,
) -> Result<(f64, Array2<f64>)> {
    let params = params.check_ref()?;
    Prologue {
        n_jobs: params.n_jobs,
        class_weight: Some(&params.class_weight),
        observer: &params.observer,
    }
    .run(bags, labels, |setup| {
        let x = bags.instances();
        let (kernel, _) = params.kernel.resolve(params.gamma, x);
        let (targets, weights) = problems(params, labels, setup.n_classes);
        let objective = Objective::new(params, kernel, &targets, &weights);
        let mut rows = BagRows::new(
            kernel,
            Rows::from(x),
            x.sq_norms(),
            (bags.bag_ptr().to_vec(), 0, bags.n_bags()),
            (targets.clone(), objective.costs.clone()),
        );
        let basis = Basis::direct(z);
        let point = objective.solve(&basis, rows.evaluate(&basis, false)?, None)?;
        let grad = objective.gradient(&mut rows, &basis, &point)?;
        Ok((point.value, grad))
    })
}
