//! MI-Kernel and RS, the two non-sparse-learning baselines of Fu, Lu, Ting and Zhang
//! (ECML PKDD 2011, sections 2-3; IEEE TNNLS 2013, Tables I-II; ALGORITHMS.md section 2).
//!
//! **MI-Kernel** is the SVM on the normalised set kernel (Gaertner et al. 2002)
//!
//! `k_set(X_i, X_j) = (1 / (n_i n_j)) sum_p sum_q k(x_ip, x_jq)`
//!
//! with the squared hinge. Lemma 1 of Fu et al. (2011) shows that it is the label-mean SVM
//! (eq. 5) with every training instance in the basis: writing the weight vector as
//! `w = sum_i alpha_i (1/n_i) sum_p phi(x_ip)` (eq. 10), `||w||^2 = alpha^T K_set alpha` and the
//! label-mean bag score is `F_i = (K_set alpha)_i + b` (eq. 12), so the problem over `alpha` is
//!
//! `min_{alpha,b} 1/2 alpha^T K_set alpha + C sum_i max(0, 1 - y_i ((K_set alpha)_i + b))^2`,
//!
//! one [`SquaredHinge`] problem with regulariser `K_set + ridge I` and design rows `K_set`. Its
//! stationarity condition `K_set (alpha + C l') = 0` fixes `w` (not `alpha`, when `K_set` is
//! singular); the fitted coefficients are the dual weights `alpha_i = -C l'(y_i, F_i)
//! = 2 C y_i max(0, 1 - y_i F_i)` (the Lagrange multipliers of eq. 8 times `y_i`), which give the
//! same `w` and are exactly zero for bags outside the margin. The model's expansion vectors are
//! the instances of the bags with a nonzero weight (eq. 13: the paper's XV count of MI-Kernel).
//!
//! **RS** (reduced set; Fu et al. 2011 eq. 14-15, Schoelkopf and Smola, *Learning with Kernels*,
//! section 18.4) fits MI-Kernel, writes `w = sum_t a_t phi(x_t)` with `a_t = alpha_i / n_i` for
//! instance `t` of bag `i`, and approximates it greedily by `sum_k gamma_k phi(z_k)` with the
//! Gaussian kernel: each new `z` maximises the squared projection of the current residual,
//! found by the fixed-point iteration `z <- sum_t c_t k(x_t, z) x_t / sum_t c_t k(x_t, z)` over
//! the residual expansion from several random training instances; after each new `z` all
//! coefficients are re-projected, `K_zz gamma = K_zx a`; finally the bias is refitted with the
//! coefficients fixed. The result has the model form of SparseMI ([`Model`]).
//!
//! Nothing here holds the `N x N` instance kernel: the set kernel is accumulated over blocks of
//! instances used as a basis of [`kernel_bag_means`], and every loop over blocks is sequential
//! with a fixed block size, so results are bitwise identical for any number of threads.

use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bags::{validate_labels, Bags, Instances};
use crate::error::{invalid_param, Error, Result};
use crate::kernel::{basis_gradient, kernel_bag_means, kernel_matrix, Basis, Kernel, Rows};
use crate::model::Model;
use crate::params::{
    check_c, check_gamma, check_n_jobs, check_positive, check_relative_tol, check_ridge, setter,
    with_threads, Gamma, KernelKind,
};
use crate::solver::{faer_mut, faer_ref, solve_spd, InnerSolver, Solution, SquaredHinge};

/// A bag counts as support (its instances as expansion vectors) when the magnitude of its
/// coefficient exceeds this fraction of the largest magnitude of the same output.
pub const SUPPORT_THRESHOLD: f64 = 1e-10;

/// RS draws a random pool of `POOL_FACTOR * n_restarts` instances per new vector and starts the
/// fixed-point iterations from the `n_restarts` of them with the largest residual projection.
const POOL_FACTOR: usize = 20;
/// Entries of one block of instance kernel values (the memory bound of [`set_kernel`]).
const BLOCK_ENTRIES: usize = 1 << 22;
/// Largest number of instances in one basis block.
const MAX_BLOCK: usize = 4096;

/// The normalised set kernel (Fu et al. 2011, Lemma 1; Gaertner et al. 2002)
/// `K[i, j] = (1 / (n_i n_j)) sum_{p in bag i of a} sum_{q in bag j of b} k(x_p, x_q)`
/// between the bags of `a` (rows) and of `b` (columns).
///
/// The instances of `b` are taken in blocks of at most `2^22 / max(N_a, d)` (and at most 4096)
/// as the basis of [`kernel_bag_means`], whose bag means over `a` are then averaged over the
/// bags of `b`: the memory is one `N_a x block` kernel block, never `N_a x N_b`. CSR instances
/// of `a` stay sparse; a block of `b` is densified (`block x d`, also bounded by the budget).
pub fn set_kernel(kernel: Kernel, a: &Bags, b: &Bags) -> Result<Array2<f64>> {
    if a.n_features() != b.n_features() {
        return Err(Error::Mismatch(format!(
            "the bags have {} features, the training bags {}",
            a.n_features(),
            b.n_features()
        )));
    }
    if kernel == Kernel::Linear {
        // Linear kernel: the set kernel is the inner product of the bag means, one product of
        // two (n_bags x n_features) matrices, sparse ones kept sparse.
        return Ok(bag_means(a)?.cross_gram(&bag_means(b)?));
    }
    let rows = Rows::from(a.instances());
    let norms = a.instances().sq_norms();
    let ptr = b.bag_ptr();
    let n_b = b.n_instances();
    let width = (BLOCK_ENTRIES / a.n_instances().max(a.n_features()).max(1)).clamp(1, MAX_BLOCK);
    let mut out = Array2::<f64>::zeros((a.n_bags(), b.n_bags()));
    let mut bag = 0;
    let mut lo = 0;
    while lo < n_b {
        let hi = (lo + width).min(n_b);
        let basis = Basis::direct(b.instances().dense_block(lo, hi));
        let (_, means) = kernel_bag_means(kernel, rows, &norms, a.bag_ptr(), &basis);
        for (t, col) in (lo..hi).zip(means.columns()) {
            while t >= ptr[bag + 1] {
                bag += 1;
            }
            let mut target = out.column_mut(bag);
            target += &col;
        }
        lo = hi;
    }
    for (j, mut col) in out.columns_mut().into_iter().enumerate() {
        col /= (ptr[j + 1] - ptr[j]) as f64;
    }
    Ok(out)
}

/// The mean instance of every bag (`n_bags x n_features`), of the same kind (dense or CSR) as
/// the instances; a CSR mean keeps the bag's entries scaled by `1/n_i` (repeated columns add up).
fn bag_means(bags: &Bags) -> Result<Instances> {
    let ptr = bags.bag_ptr();
    match bags.instances() {
        Instances::Dense(x) => {
            let mut out = Array2::zeros((bags.n_bags(), x.ncols()));
            for (i, mut row) in out.rows_mut().into_iter().enumerate() {
                if let Some(mean) = x.slice(s![ptr[i]..ptr[i + 1], ..]).mean_axis(Axis(0)) {
                    row.assign(&mean);
                }
            }
            Ok(Instances::Dense(out))
        }
        Instances::Sparse(x) => {
            let mut indptr = vec![0];
            let (mut indices, mut data) = (Vec::new(), Vec::new());
            for i in 0..bags.n_bags() {
                let inv = 1.0 / (ptr[i + 1] - ptr[i]) as f64;
                for r in ptr[i]..ptr[i + 1] {
                    let (idx, val) = x.row(r);
                    indices.extend_from_slice(idx);
                    data.extend(val.iter().map(|v| v * inv));
                }
                indptr.push(data.len());
            }
            Ok(Instances::Sparse(crate::bags::Csr::new(
                bags.n_bags(),
                x.n_cols(),
                indptr,
                indices,
                data,
            )?))
        }
    }
}

/// The set-kernel Gram matrix of one set of bags ([`set_kernel`] of `bags` with itself),
/// exactly symmetric. Dense instances with the Gaussian kernel: the upper triangle only, in
/// cache-sized tiles of instance pairs (`gram_row_block`); otherwise the full product averaged
/// with its transpose.
pub fn set_kernel_gram(kernel: Kernel, bags: &Bags) -> Result<Array2<f64>> {
    let x = match (kernel, bags.instances()) {
        (Kernel::Rbf { .. }, Instances::Dense(x)) => x,
        _ => {
            let k = set_kernel(kernel, bags, bags)?;
            return Ok((&k + &k.t()) * 0.5);
        }
    };
    let x = x.as_standard_layout();
    let norms = bags.instances().sq_norms();
    let ptr = bags.bag_ptr();
    let m = bags.n_bags();
    // Row blocks of whole bags; each fills the rows of `out` of its own bags (sums over instance
    // pairs), in parallel.
    let mut blocks = Vec::new();
    let mut b0 = 0;
    for b in 0..m {
        if ptr[b + 1] - ptr[b0] >= TILE_ROWS || b + 1 == m {
            blocks.push((b0, b + 1));
            b0 = b + 1;
        }
    }
    let mut out = Array2::<f64>::zeros((m, m));
    if let Some(buf) = out.as_slice_mut() {
        let mut pieces = Vec::with_capacity(blocks.len());
        let mut rest = buf;
        for &(b0, b1) in &blocks {
            let (head, tail) = rest.split_at_mut((b1 - b0) * m);
            pieces.push(head);
            rest = tail;
        }
        pieces
            .into_par_iter()
            .zip(blocks.par_iter())
            .for_each(|(rows, &(b0, b1))| {
                gram_row_block(kernel, x.view(), &norms, ptr, b0, b1, rows)
            });
    }
    for i in 0..m {
        let ni = (ptr[i + 1] - ptr[i]) as f64;
        for j in i..m {
            let nj = (ptr[j + 1] - ptr[j]) as f64;
            out[[i, j]] /= ni * nj;
        }
    }
    for i in 0..m {
        for j in 0..i {
            out[[i, j]] = out[[j, i]];
        }
    }
    Ok(out)
}

/// Instance rows per tile of `gram_row_block` (whole bags, so a tile may hold more).
const TILE_ROWS: usize = 128;
/// Instance columns per tile of `gram_row_block`.
const TILE_COLS: usize = 256;

/// Rows `b0..b1` of the unnormalised set-kernel Gram matrix, from the first of those bags'
/// columns on (the upper triangle; `rows` is `(b1 - b0) x n_bags`, row-major): for each tile of
/// `TILE_COLS` instance columns, the inner products of the block's instances with the tile's
/// (one faer product; measured 1.3x faster than matrixmultiply on these shapes here), turned into
/// kernel values and summed into `rows` by the bags of the row and
/// the column. The tile stays in cache; every sum runs in one fixed order.
fn gram_row_block(
    kernel: Kernel,
    x: ndarray::ArrayView2<f64>,
    norms: &[f64],
    ptr: &[usize],
    b0: usize,
    b1: usize,
    rows: &mut [f64],
) {
    let m = ptr.len() - 1;
    let (r0, r1) = (ptr[b0], ptr[b1]);
    let n = x.nrows();
    let xr = x.slice(s![r0..r1, ..]);
    let mut tile = Array2::<f64>::zeros((r1 - r0, TILE_COLS));
    let mut c0 = r0;
    // The bag of the first column of the tile.
    let mut cbag = b0;
    while c0 < n {
        let c1 = (c0 + TILE_COLS).min(n);
        let w = c1 - c0;
        let mut t = tile.slice_mut(s![.., ..w]);
        faer::linalg::matmul::matmul(
            faer_mut(t.view_mut()),
            faer::Accum::Replace,
            faer_ref(xr),
            faer_ref(x.slice(s![c0..c1, ..]).t()),
            1.0,
            faer::Par::Seq,
        );
        let Some(tbuf) = tile.as_slice_mut() else {
            return; // unreachable: the tile is a fresh standard-layout array
        };
        // Kernel values of the tile's rows (row stride TILE_COLS, the first `w` columns used).
        for (r, trow) in tbuf.chunks_exact_mut(TILE_COLS).enumerate() {
            kernel.finish_rows(&mut trow[..w], &norms[r0 + r..], 0, &norms[c0..c1]);
        }
        // Sum each row's values by the bag of their column.
        let mut rbag = b0;
        for (r, trow) in (r0..r1).zip(tbuf.chunks_exact(TILE_COLS)) {
            while r >= ptr[rbag + 1] {
                rbag += 1;
            }
            let orow = &mut rows[(rbag - b0) * m..(rbag - b0 + 1) * m];
            let mut j = cbag;
            let mut c = c0;
            while c < c1 {
                let end = ptr[j + 1].min(c1);
                orow[j] += trow[c - c0..end - c0].iter().sum::<f64>();
                c = end;
                j += 1;
            }
        }
        c0 = c1;
        while cbag < m && ptr[cbag + 1] <= c0 {
            cbag += 1;
        }
    }
}

/// Common range checks of `C`, `gamma`, the inner solver settings and `n_jobs`.
fn validate_common(
    c: f64,
    gamma: Gamma,
    tol: Option<f64>,
    max_iter: usize,
    ridge: f64,
    n_jobs: Option<usize>,
) -> Result<()> {
    check_c(c)?;
    check_gamma(gamma)?;
    check_relative_tol("tol", tol)?;
    check_positive("max_iter", max_iter)?;
    check_ridge(ridge)?;
    check_n_jobs(n_jobs)
}

// ---------------------------------------------------------------------------------------------
// MI-Kernel
// ---------------------------------------------------------------------------------------------

/// Hyperparameters of MI-Kernel, the squared-hinge SVM on the set kernel (builder style;
/// ranges checked by [`MiKernelParams::validate`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiKernelParams {
    /// Loss weight `C > 0`.
    pub c: f64,
    /// Instance kernel family.
    pub kernel: KernelKind,
    /// Kernel width (Gaussian kernel only).
    pub gamma: Gamma,
    /// Solver of the squared-hinge problem over the bag coefficients.
    pub solver: InnerSolver,
    /// Relative gradient tolerance of the solver in (0, 1); `None`: the solver's default.
    pub tol: Option<f64>,
    /// Iteration cap of the solver, `>= 1`.
    pub max_iter: usize,
    /// Ridge added to the diagonal of `K_set` in the regulariser (Fu et al., footnote), `>= 0`.
    pub ridge: f64,
    /// Threads (`None`: all cores). Results do not depend on it.
    pub n_jobs: Option<usize>,
}

impl Default for MiKernelParams {
    fn default() -> Self {
        Self {
            c: 1.0,
            kernel: KernelKind::Rbf,
            gamma: Gamma::Scale,
            solver: InnerSolver::Newton,
            tol: None,
            max_iter: 1000,
            ridge: 1e-8,
            n_jobs: None,
        }
    }
}

/// A fitted set-kernel model: `F(X) = sum_i alpha_i k_set(X_i, X) + b` over training bags
/// `X_i` (Fu et al. 2011, eq. 12), one row of coefficients per one-vs-rest output.
#[derive(Debug, Clone, PartialEq)]
pub struct SetKernelModel {
    /// Instance kernel.
    pub kernel: Kernel,
    /// The training bags.
    pub bags: Bags,
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
    /// The set-kernel Gram matrix of the training bags (`n_bags x n_bags`).
    pub gram: Array2<f64>,
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

impl MiKernelParams {
    /// Default parameters (`C = 1`, Gaussian kernel, `gamma = scale`, Newton solver).
    pub fn new() -> Self {
        Self::default()
    }
    setter!(/// Sets `C`.
        c: f64);
    setter!(/// Sets the kernel family.
        kernel: KernelKind);
    setter!(/// Sets the kernel width.
        gamma: Gamma);
    setter!(/// Sets the solver.
        solver: InnerSolver);
    setter!(/// Sets the solver tolerance.
        tol: Option<f64>);
    setter!(/// Sets the solver iteration cap.
        max_iter: usize);
    setter!(/// Sets the ridge.
        ridge: f64);
    setter!(/// Sets the thread count.
        n_jobs: Option<usize>);

    /// Checks every hyperparameter; the error names the parameter and its allowed range.
    pub fn validate(&self) -> Result<()> {
        validate_common(
            self.c,
            self.gamma,
            self.tol,
            self.max_iter,
            self.ridge,
            self.n_jobs,
        )
    }

    /// Fits MI-Kernel on bags with class indices `0..n_classes`: one problem for two classes
    /// (class 1 positive), independent one-vs-rest problems sharing `K_set` otherwise (solved
    /// in parallel).
    pub fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<MiKernelFit> {
        self.validate()?;
        let n_classes = validate_labels(bags, labels)?;
        with_threads(self.n_jobs, || self.fit_impl(bags, labels, n_classes))?
    }

    fn fit_impl(&self, bags: &Bags, labels: &[usize], n_classes: usize) -> Result<MiKernelFit> {
        let gamma = self.gamma.resolve(bags.instances());
        let kernel = self.kernel.with_gamma(gamma);
        let gram = set_kernel_gram(kernel, bags)?;
        let targets = crate::multiclass::binary_targets(labels, n_classes);
        let costs = vec![self.c; labels.len()];
        let mut k_reg = gram.clone();
        k_reg.diag_mut().mapv_inplace(|v| v + self.ridge);
        let tol = self.tol.unwrap_or(self.solver.default_tol());
        let sols: Vec<Solution> = targets
            .par_iter()
            .map(|y| {
                SquaredHinge {
                    k: k_reg.view(),
                    x: gram.view(),
                    y,
                    c: &costs,
                    c_opp: &[],
                }
                .solve(self.solver, None, tol, self.max_iter)
            })
            .collect::<Result<_>>()?;
        let m = labels.len();
        let mut coef = Array2::zeros((targets.len(), m));
        let mut objective = Vec::with_capacity(targets.len());
        for ((sol, y), mut row) in sols.iter().zip(&targets).zip(coef.rows_mut()) {
            let plain = SquaredHinge {
                k: gram.view(),
                x: gram.view(),
                y,
                c: &costs,
                c_opp: &[],
            };
            // Dual weights alpha = -C l'(y, F): the same w as sol.beta (K_set (beta + C l') = 0
            // at the optimum, up to the ridge), exactly zero outside the margin.
            let f = plain.scores(sol.beta.view(), sol.b);
            let dl = plain.loss_derivative(f.view());
            row.assign(&dl.mapv(|v| -self.c * v));
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
                bags: bags.clone(),
                coef,
                intercept: Array1::from_iter(sols.iter().map(|s| s.b)),
                n_classes,
            },
            gram,
            gamma,
            objective,
            ridged_objective: sols.iter().map(|s| s.value).collect(),
            n_iter: sols.iter().map(|s| s.iterations).max().unwrap_or(0),
            converged: sols.iter().all(|s| s.converged),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// RS
// ---------------------------------------------------------------------------------------------

/// Hyperparameters of RS, the reduced-set approximation of MI-Kernel (builder style; ranges
/// checked by [`ReducedSetParams::validate`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReducedSetParams {
    /// Number of reduced-set vectors `N_xv >= 1`.
    pub n_xv: usize,
    /// Loss weight `C > 0` of the MI-Kernel being approximated.
    pub c: f64,
    /// Instance kernel: must be [`KernelKind::Rbf`] (the fixed-point iteration is the
    /// Gaussian kernel's).
    pub kernel: KernelKind,
    /// Kernel width.
    pub gamma: Gamma,
    /// Fixed-point iterations per restart, `>= 0` (0 keeps the best starting instance).
    pub max_fixed_point_iter: usize,
    /// Random starting instances per new vector, `>= 1`.
    pub n_restarts: usize,
    /// A restart stops when its step satisfies `sqrt(gamma) ||dz|| <= tol` (`tol >= 0`).
    pub tol: f64,
    /// Solver of the MI-Kernel problem.
    pub solver: InnerSolver,
    /// Ridge of the MI-Kernel problem, `>= 0`.
    pub ridge: f64,
    /// Seed of the restarts.
    pub seed: u64,
    /// Threads (`None`: all cores). Results do not depend on it.
    pub n_jobs: Option<usize>,
}

impl Default for ReducedSetParams {
    fn default() -> Self {
        Self {
            n_xv: 10,
            c: 1.0,
            kernel: KernelKind::Rbf,
            gamma: Gamma::Scale,
            max_fixed_point_iter: 100,
            n_restarts: 5,
            tol: 1e-6,
            solver: InnerSolver::Newton,
            ridge: 1e-8,
            seed: 0,
            n_jobs: None,
        }
    }
}

/// Options of [`reduced_set`], the greedy construction itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReducedSetOptions {
    /// Largest number of vectors (fewer when the residual vanishes first).
    pub n_xv: usize,
    /// Fixed-point iterations per restart.
    pub max_iter: usize,
    /// Restarts per vector.
    pub n_restarts: usize,
    /// Step tolerance `sqrt(gamma) ||dz||` of a restart.
    pub tol: f64,
    /// Seed of the restarts.
    pub seed: u64,
}

/// A reduced-set expansion `sum_k gamma_ck phi(z_k)` of weight vectors `w_c`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedSetExpansion {
    /// The vectors `z_k` (`n_xv x n_features`).
    pub z: Array2<f64>,
    /// Coefficients `gamma` (`n_outputs x n_xv`), the optimal projection for the vectors.
    pub coef: Array2<f64>,
    /// `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2` before the first vector and after each one
    /// (non-increasing).
    pub residual_history: Vec<f64>,
    /// Fixed-point iterations over all vectors (the restarts of a vector run together).
    pub fixed_point_iterations: usize,
}

/// A fitted RS model with its training record.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedSetFit {
    /// The sparse model (reduced-set vectors, coefficients, refitted biases).
    pub model: Model,
    /// The MI-Kernel that was approximated.
    pub mi_kernel: MiKernelFit,
    /// The reduced-set construction.
    pub expansion: ReducedSetExpansion,
    /// The kernel width used.
    pub gamma: f64,
}

impl ReducedSetParams {
    /// Default parameters (`n_xv = 10`, `C = 1`, `gamma = scale`, 100 fixed-point iterations,
    /// 5 restarts).
    pub fn new() -> Self {
        Self::default()
    }
    setter!(/// Sets `n_xv`.
        n_xv: usize);
    setter!(/// Sets `C`.
        c: f64);
    setter!(/// Sets the kernel family (only the Gaussian kernel is accepted).
        kernel: KernelKind);
    setter!(/// Sets the kernel width.
        gamma: Gamma);
    setter!(/// Sets the fixed-point iteration cap.
        max_fixed_point_iter: usize);
    setter!(/// Sets the number of restarts.
        n_restarts: usize);
    setter!(/// Sets the fixed-point step tolerance.
        tol: f64);
    setter!(/// Sets the MI-Kernel solver.
        solver: InnerSolver);
    setter!(/// Sets the random seed.
        seed: u64);
    setter!(/// Sets the thread count.
        n_jobs: Option<usize>);

    /// Checks every hyperparameter; the error names the parameter and its allowed range.
    pub fn validate(&self) -> Result<()> {
        if self.kernel != KernelKind::Rbf {
            return Err(invalid_param(
                "kernel must be 'rbf': the reduced-set (RS) fixed-point method needs the Gaussian kernel",
            ));
        }
        if self.n_xv < 1 {
            return Err(invalid_param(format!(
                "n_xv must be an integer >= 1, got {}",
                self.n_xv
            )));
        }
        if self.n_restarts < 1 {
            return Err(invalid_param(format!(
                "n_restarts must be an integer >= 1, got {}",
                self.n_restarts
            )));
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(invalid_param(format!(
                "tol must be a finite number >= 0, got {}",
                self.tol
            )));
        }
        validate_common(self.c, self.gamma, None, 1, self.ridge, self.n_jobs)
    }

    /// The MI-Kernel these parameters approximate.
    pub fn mi_kernel_params(&self) -> MiKernelParams {
        MiKernelParams {
            c: self.c,
            kernel: self.kernel,
            gamma: self.gamma,
            solver: self.solver,
            ridge: self.ridge,
            n_jobs: self.n_jobs,
            ..MiKernelParams::default()
        }
    }

    /// Fits MI-Kernel, approximates its weight vectors with `n_xv` shared vectors and refits
    /// each bias. Multi-class: the one-vs-rest weight vectors share the reduced-set vectors,
    /// chosen to reduce `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2`.
    pub fn fit(&self, bags: &Bags, labels: &[usize]) -> Result<ReducedSetFit> {
        self.validate()?;
        let n_classes = validate_labels(bags, labels)?;
        with_threads(self.n_jobs, || {
            let mi_kernel = self.mi_kernel_params().fit_impl(bags, labels, n_classes)?;
            let gamma = mi_kernel.gamma;
            let kernel = mi_kernel.model.kernel;
            let (support, a) = mi_kernel.model.instance_expansion()?;
            let w_norm2: f64 = mi_kernel
                .model
                .coef
                .rows()
                .into_iter()
                .map(|alpha| alpha.dot(&mi_kernel.gram.dot(&alpha)))
                .sum();
            let options = ReducedSetOptions {
                n_xv: self.n_xv,
                max_iter: self.max_fixed_point_iter,
                n_restarts: self.n_restarts,
                tol: self.tol,
                seed: self.seed,
            };
            let expansion = reduced_set(kernel, support.instances(), a.view(), w_norm2, &options)?;
            let basis = Basis::direct(expansion.z.clone());
            let norms = bags.instances().sq_norms();
            let (_, m) = kernel_bag_means(
                kernel,
                Rows::from(bags.instances()),
                &norms,
                bags.bag_ptr(),
                &basis,
            );
            let targets = crate::multiclass::binary_targets(labels, n_classes);
            let intercept = Array1::from_iter(
                expansion
                    .coef
                    .rows()
                    .into_iter()
                    .zip(&targets)
                    .map(|(g, y)| optimal_intercept(&m.dot(&g).to_vec(), y)),
            );
            Ok(ReducedSetFit {
                model: Model::new(
                    kernel,
                    expansion.z.clone(),
                    expansion.coef.clone(),
                    intercept,
                    n_classes,
                    crate::model::Pooling::Mean,
                ),
                mi_kernel,
                expansion,
                gamma,
            })
        })?
    }
}

/// The bias minimising `sum_i max(0, 1 - y_i (s_i + b))^2` for fixed scores `s` and targets
/// `y` in {-1, +1}: a convex piecewise quadratic in one variable, minimised exactly. Its
/// derivative is `2 sum_{active} (b - p_i)` with breakpoints `p_i = y_i - s_i` (a positive is
/// active for `b < p_i`, a negative for `b > p_i`); the root is the mean of the active
/// breakpoints on the interval where the derivative changes sign. When the minimisers form an
/// interval (separable scores), its midpoint is returned; with one class only, the smallest
/// bias of zero loss.
pub fn optimal_intercept(s: &[f64], y: &[f64]) -> f64 {
    let p: Vec<f64> = y.iter().zip(s).map(|(&y, &s)| y - s).collect();
    if p.is_empty() {
        return 0.0;
    }
    let slope = |b: f64| -> f64 {
        y.iter()
            .zip(&p)
            .filter(|&(&y, &p)| (y > 0.0 && b < p) || (y < 0.0 && b > p))
            .map(|(_, &p)| b - p)
            .sum()
    };
    let mut q = p.clone();
    q.sort_by(f64::total_cmp);
    // slope(q[0]) <= 0 <= slope(q[last]): each is a sum of terms of one sign.
    let below = q.partition_point(|&b| slope(b) < 0.0);
    let root = if below == 0 {
        q[0]
    } else if below == q.len() {
        q[q.len() - 1]
    } else {
        let (lo, hi) = (q[below - 1], q[below]);
        let mid = 0.5 * (lo + hi);
        let (mut n, mut sum) = (0usize, 0.0);
        for (&yi, &pi) in y.iter().zip(&p) {
            if (yi > 0.0 && mid < pi) || (yi < 0.0 && mid > pi) {
                n += 1;
                sum += pi;
            }
        }
        if n > 0 {
            (sum / n as f64).clamp(lo, hi)
        } else {
            hi
        }
    };
    let flat = q.partition_point(|&b| slope(b) <= 0.0);
    let end = q[flat.max(1) - 1];
    if end > root {
        0.5 * (root + end)
    } else {
        root
    }
}

/// The greedy reduced-set construction (Schoelkopf and Smola, *Learning with Kernels*, section
/// 18.4; Fu et al. 2011, eq. 15) for the Gaussian kernel, shared by the outputs.
///
/// Approximates `w_c = sum_t a[t, c] phi(x_t)` (`a`: `n_rows x n_outputs`, `w_norm2 =
/// sum_c ||w_c||^2`) by `sum_k gamma_ck phi(z_k)`. Step `k` looks for the `z` that maximises
/// `sum_c r_c(z)^2`, `r_c(z) = <w_c - sum_j gamma_cj phi(z_j), phi(z)>` (the squared projection of
/// the residuals; `k(z, z) = 1`): from `n_restarts` rows of `x` (those with the largest
/// objective in a random pool of `20 n_restarts` rows, or all rows if fewer), the fixed-point
/// iteration
///
/// `z <- sum_t c_t k(x_t, z) x_t / sum_t c_t k(x_t, z)`,  `c_t = sum_c r_c(z) a'_tc`,
///
/// over the residual expansion (rows `x_t` with `a`, previous `z_j` with `-gamma_j`), whose
/// denominator is `sum_c r_c(z)^2 > 0`; with one output it is Schoelkopf and Smola's iteration.
/// Each restart keeps its best iterate, the best restart wins, and then every coefficient is
/// re-projected: `K_zz gamma_c = K_zx a_c` (optimal for the chosen vectors). Stops early when
/// the residual falls below `1e-12 w_norm2`.
pub fn reduced_set(
    kernel: Kernel,
    x: &Instances,
    a: ArrayView2<f64>,
    w_norm2: f64,
    options: &ReducedSetOptions,
) -> Result<ReducedSetExpansion> {
    let Kernel::Rbf { gamma } = kernel else {
        return Err(invalid_param(
            "kernel must be 'rbf': the reduced-set (RS) fixed-point method needs the Gaussian kernel",
        ));
    };
    let (n, n_out) = a.dim();
    if n != x.n_rows() || n == 0 || n_out == 0 {
        return Err(invalid_data_shape(n, x.n_rows(), n_out));
    }
    if options.n_xv < 1 || options.n_restarts < 1 {
        return Err(invalid_param("n_xv and n_restarts must be integers >= 1"));
    }
    let d = x.n_features();
    let rows = Rows::from(x);
    let norms = x.sq_norms();
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut z = Array2::<f64>::zeros((0, d));
    let mut kzz = Array2::<f64>::zeros((0, 0));
    // <w_c, phi(z_j)> (n_xv x n_out) and the coefficients (n_xv x n_out).
    let mut proj = Array2::<f64>::zeros((0, n_out));
    let mut coef = Array2::<f64>::zeros((0, n_out));
    let mut history = vec![w_norm2];
    let mut iterations = 0;
    for _ in 0..options.n_xv {
        let pool: Vec<usize> = if POOL_FACTOR * options.n_restarts >= n {
            (0..n).collect()
        } else {
            sample(&mut rng, n, POOL_FACTOR * options.n_restarts).into_vec()
        };
        let search = FixedPoint {
            kernel,
            gamma,
            rows,
            norms: &norms,
            a,
            zb: Basis::direct(z.clone()),
            coef: coef.view(),
            floor: 1e-300_f64.max(1e-30 * w_norm2),
        };
        let candidates = x.dense_rows(&pool);
        let (pool_obj, _) = search.objective(&Basis::direct(candidates.clone()));
        let mut order: Vec<usize> = (0..pool.len()).collect();
        order.sort_by(|&i, &j| pool_obj[j].total_cmp(&pool_obj[i]).then(i.cmp(&j)));
        order.truncate(options.n_restarts);
        // fewer instances than restarts: the best ones repeat
        let starts: Vec<usize> = (0..options.n_restarts)
            .map(|r| order[r % order.len()])
            .collect();
        let (best, its) = search.run(
            candidates.select(Axis(0), &starts),
            options.max_iter,
            options.tol,
        );
        iterations += its;
        let new = Basis::direct(best.insert_axis(Axis(0)));
        let kx = kernel_matrix(kernel, rows, &norms, &new);
        let p_new = a.t().dot(&kx.column(0));
        let k = z.nrows();
        let mut kzz_new = Array2::zeros((k + 1, k + 1));
        kzz_new.slice_mut(s![..k, ..k]).assign(&kzz);
        if k > 0 {
            let zb = Basis::direct(z.clone());
            let kz = kernel_matrix(kernel, zb.as_rows(), &zb.sq_norms, &new);
            kzz_new.slice_mut(s![..k, k]).assign(&kz.column(0));
            kzz_new.slice_mut(s![k, ..k]).assign(&kz.column(0));
        }
        let t = new.sq_norms[0];
        kzz_new[[k, k]] = kernel.from_dot(t, t, t);
        kzz = kzz_new;
        z.push_row(new.v.row(0))
            .map_err(|e| Error::Solver(e.to_string()))?;
        proj.push_row(p_new.view())
            .map_err(|e| Error::Solver(e.to_string()))?;
        coef = Array2::zeros((k + 1, n_out));
        for c in 0..n_out {
            let g = solve_spd(kzz.clone(), proj.column(c).to_owned())?;
            coef.column_mut(c).assign(&g);
        }
        let residual = w_norm2 - (&proj * &coef).sum();
        history.push(residual.max(0.0));
        if !coef.iter().all(|v| v.is_finite()) {
            return Err(Error::Solver(
                "the reduced-set projection produced non-finite coefficients".into(),
            ));
        }
        if residual <= 1e-12 * w_norm2 {
            break;
        }
    }
    Ok(ReducedSetExpansion {
        z,
        coef: coef.t().to_owned(),
        residual_history: history,
        fixed_point_iterations: iterations,
    })
}

fn invalid_data_shape(n_a: usize, n_x: usize, n_out: usize) -> Error {
    Error::InvalidData(format!(
        "the expansion has {n_a} coefficient rows for {n_x} instances and {n_out} outputs"
    ))
}

/// One fixed-point search of [`reduced_set`]: the residual expansion and its kernel data.
struct FixedPoint<'r, 'a> {
    kernel: Kernel,
    gamma: f64,
    rows: Rows<'r>,
    norms: &'a [f64],
    /// Instance coefficients (`n x n_out`).
    a: ArrayView2<'a, f64>,
    /// The vectors chosen so far (`k` of them).
    zb: Basis,
    /// Their coefficients (`k x n_out`).
    coef: ArrayView2<'a, f64>,
    /// Objective below which a restart stops (the residual is numerically zero there).
    floor: f64,
}

/// Kernel values of the residual expansion's rows and vectors at the points, and the
/// projections `r` (`n_out x n_points`).
type Projections = (Array2<f64>, Array2<f64>, Array2<f64>);

impl FixedPoint<'_, '_> {
    /// `sum_c r_c(p)^2` at each point `p` of `basis`, with the kernel values and projections
    /// `r_c(p) = <w_c - sum_j gamma_cj phi(z_j), phi(p)>`.
    fn objective(&self, basis: &Basis) -> (Vec<f64>, Projections) {
        let kx = kernel_matrix(self.kernel, self.rows, self.norms, basis);
        let kz = kernel_matrix(self.kernel, self.zb.as_rows(), &self.zb.sq_norms, basis);
        let r = self.a.t().dot(&kx) - self.coef.t().dot(&kz);
        let obj = r.columns().into_iter().map(|col| col.dot(&col)).collect();
        (obj, (kx, kz, r))
    }

    /// Runs the restarts (rows of `start`) together; a restart leaves the joint iteration when
    /// its step is below `tol` (`sqrt(gamma) ||dz||`), when its objective is numerically zero or
    /// when a step is not finite. Returns the best point seen over all restarts and iterates,
    /// and the number of joint iterations.
    fn run(&self, start: Array2<f64>, max_iter: usize, tol: f64) -> (Array1<f64>, usize) {
        let n_r = start.nrows();
        let zb = &self.zb;
        let mut cur = start;
        let mut best = cur.clone();
        let mut best_obj = vec![f64::NEG_INFINITY; n_r];
        let mut active: Vec<usize> = (0..n_r).collect();
        let mut iterations = 0;
        for it in 0..=max_iter {
            if active.is_empty() {
                break;
            }
            let basis = Basis::direct(cur.select(Axis(0), &active));
            let (obj, (kx, kz, r)) = self.objective(&basis);
            for (&j, &o) in active.iter().zip(&obj) {
                if o > best_obj[j] {
                    best_obj[j] = o;
                    best.row_mut(j).assign(&cur.row(j));
                }
            }
            if it == max_iter {
                break;
            }
            iterations += 1;
            let wx = self.a.dot(&r);
            let wz = -self.coef.dot(&r);
            // 2 gamma (sum_t W_t k_t x_t - (sum_t W_t k_t) z_j), j = restart
            let mut g = basis_gradient(self.kernel, self.rows, kx.view(), wx.view(), &basis);
            if !zb.is_empty() {
                g += &basis_gradient(self.kernel, zb.as_rows(), kz.view(), wz.view(), &basis);
            }
            let mut still = Vec::with_capacity(active.len());
            for (pos, &j) in active.iter().enumerate() {
                // sum_t W_t k_t = sum_c r_c^2 = obj
                let o = obj[pos];
                if !(o > self.floor && o.is_finite()) {
                    continue;
                }
                let step = g.row(pos).mapv(|v| v / (2.0 * self.gamma * o));
                let len = self.gamma.sqrt() * step.dot(&step).sqrt();
                if !len.is_finite() || len <= tol {
                    continue;
                }
                let mut row = cur.row_mut(j);
                row += &step;
                still.push(j);
            }
            active = still;
        }
        let winner = (0..n_r)
            .max_by(|&i, &j| best_obj[i].total_cmp(&best_obj[j]).then(j.cmp(&i)))
            .unwrap_or(0);
        (best.row(winner).to_owned(), iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn brute_intercept(s: &[f64], y: &[f64]) -> f64 {
        let loss = |b: f64| -> f64 {
            s.iter()
                .zip(y)
                .map(|(&s, &y)| (1.0 - y * (s + b)).max(0.0).powi(2))
                .sum()
        };
        let (mut lo, mut hi) = (-20.0_f64, 20.0_f64);
        for _ in 0..200 {
            let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
            if loss(a) <= loss(b) {
                hi = b;
            } else {
                lo = a;
            }
        }
        0.5 * (lo + hi)
    }

    #[test]
    fn intercept_is_the_exact_minimiser() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let m = rng.random_range(2..12);
            let s: Vec<f64> = (0..m).map(|_| rng.random_range(-3.0..3.0)).collect();
            let mut y: Vec<f64> = (0..m)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            let b = optimal_intercept(&s, &y);
            let loss = |b: f64| -> f64 {
                s.iter()
                    .zip(&y)
                    .map(|(&s, &y)| (1.0 - y * (s + b)).max(0.0).powi(2))
                    .sum()
            };
            let reference = brute_intercept(&s, &y);
            assert!(loss(b) <= loss(reference) + 1e-12, "{b} vs {reference}");
        }
        // separable scores: the midpoint of the flat interval
        let b = optimal_intercept(&[2.0, -2.0], &[1.0, -1.0]);
        assert!((b - 0.0).abs() < 1e-15);
    }
}
