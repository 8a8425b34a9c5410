//! SparseMI and RSVM (direct and basis-vector mode; any number of classes) over partitions of
//! the bags held elsewhere (the workers of a Dask cluster). [`SparsePartition`] holds one
//! partition's rows with the state of the descent ([`BagRows`]) and answers rounds;
//! [`fit_distributed`] is the driver: it runs [`descend_with`], the outer loop of the fit in one
//! process, over [`RemoteRows`], whose rounds return the partitions' bag means `M` (each bag's
//! row of `M` is computed where the bag lives) and their nodes of the gradient's data term in
//! the fixed tree over the bags. The inner problems on `M`, the line search and the expansion
//! vectors' own terms run on the driver. The fit is the fit in one process, bit for bit.
//!
//! In basis-vector mode (Fu et al. 2013, section IV-E, `Z = V B`) the driver draws the basis
//! vectors `B` (random training instances, gathered with the round `rows`, or `init_basis`),
//! and each partition replaces its rows by their products `P = X B^T` (round `basis`), which
//! it computes with the bits of the fit in one process ([`Instances::cross_gram_at`]); the
//! descent's rounds are then those of direct mode over these `n_basis`-dimensional rows, with
//! the coordinates `V` in place of the XVs.
//!
//! Rounds (`v`: a vector, `s`: scalars; replies flattened to `f64`s):
//! * `fold_values` (the width rule `gamma = "scale"`, as the annealing fits' partitions answer
//!   it) and `width` (`s`: the resolved kernel width, which the driver sends first);
//! * `rows` (`v`: global row indices): the partition's rows among them, each after its index;
//! * `basis` (`v`: the basis vectors `B`, `n_basis x d`; `s`: the data set's row count): the
//!   rows become their products with `B` (basis-vector mode; no `rows` round after it);
//! * `sparse_basis` (`v`: a sparse `B`'s row offsets, column indices and values, one after the
//!   other; `s`: the data set's row count, then `n_basis`): `basis` for basis vectors given as
//!   a sparse matrix, multiplied as the fit in one process multiplies them (row by row, over
//!   the stored values in their order);
//! * `eval` (`v`: `V`, `s`: `||z_k||^2`): the point at `V` becomes current; its rows of `M`;
//! * `trial` (`v`: a new line-search direction `G`, or nothing; `s`: the step, then
//!   `||z_k||^2`): the products `F G^T` when `G` is given (the first trial of an iteration),
//!   then the candidate `V - step G`; its rows of `M`;
//! * `gradient` (`v`: `beta_c, b_c` per problem; `s`: whether the last candidate was accepted):
//!   the nodes of the data term at the current point.

use ndarray::{Array2, ArrayView1, ArrayView2};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::rows::{coefficients, gradient_of_sum, BagRows, DescentRows, GradientSum};
use super::{descend_with, problems, Objective, SparseMiFit, SparseMiValidParams};
use crate::annealing::distributed::{check_partition, fold_values, scalar};
use crate::bags::{count_classes, validate_bag_ptr, Csr, Instances};
use crate::error::{invalid_data, Result};
use crate::kernel::Basis;
use crate::params::{check_columns, check_init_xv_columns, KernelKind};
use crate::solver::linear::{get_nodes, put_nodes, Answer, Dispatch, Reader};
use crate::solver::Solution;
use crate::tree_sum::combine;

/// Per problem, one value per bag: the targets, then the costs.
pub(crate) type PerProblem = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// The targets and costs (`C` times the class weight) of every problem of the fit of `labels`
/// (class indices of `n_bags` bags): one row per problem, one entry per bag.
pub(crate) fn problem_costs(
    params: &SparseMiValidParams,
    labels: &[usize],
    n_bags: usize,
) -> Result<PerProblem> {
    let n_classes = count_classes(labels, n_bags)?;
    params.class_weight.validate(n_classes)?;
    let (targets, weights) = problems(params, labels, n_classes);
    let kernel = params.kernel.with_gamma(1.0);
    let costs = Objective::new(params, kernel, &targets, &weights).costs;
    Ok((targets, costs))
}

/// `a` as one row-major vector.
fn flat(a: &Array2<f64>) -> Vec<f64> {
    a.as_standard_layout().iter().copied().collect()
}

/// A sparse matrix's row offsets, column indices and values as one round's vector (each index
/// exact in an `f64`), read back by [`csr`].
fn flat_csr(b: &Csr) -> Vec<f64> {
    let index = |i: &usize| *i as f64;
    let (indptr, indices) = (b.indptr().iter().map(index), b.indices().iter().map(index));
    indptr
        .chain(indices)
        .chain(b.data().iter().copied())
        .collect()
}

/// The sparse matrix of `n_rows x n_cols` that [`flat_csr`] wrote into `v`, checked as every
/// sparse matrix is ([`Csr::new`]).
fn csr(v: &[f64], n_rows: usize, n_cols: usize) -> Result<Csr> {
    let bad = || {
        invalid_data(format!(
            "a sparse basis of {} values, {n_rows} rows",
            v.len()
        ))
    };
    let nnz = v.len().checked_sub(n_rows + 1).ok_or_else(bad)?;
    if nnz % 2 != 0 {
        return Err(bad());
    }
    let (indptr, rest) = v.split_at(n_rows + 1);
    let (indices, data) = rest.split_at(nnz / 2);
    let index = |x: &f64| {
        (*x >= 0.0 && x.fract() == 0.0 && *x < usize::MAX as f64)
            .then_some(*x as usize)
            .ok_or_else(bad)
    };
    let indptr = indptr.iter().map(index).collect::<Result<_>>()?;
    let indices = indices.iter().map(index).collect::<Result<_>>()?;
    Csr::new(n_rows, n_cols, indptr, indices, data.to_vec())
}

/// A count that a basis round gives as an `f64`, or an error saying that it needs `what`.
fn whole(x: Option<&f64>, what: &str) -> Result<usize> {
    x.filter(|&&n| n >= 0.0 && n.fract() == 0.0)
        .map(|&n| n as usize)
        .ok_or_else(|| invalid_data(format!("a basis round needs {what}")))
}

/// A matrix of `cols` columns from a round's vector.
fn matrix(v: &[f64], cols: usize) -> Result<ArrayView2<'_, f64>> {
    let rows = v.len().checked_div(cols).unwrap_or(0);
    ArrayView2::from_shape((rows, cols), v).map_err(|_| {
        invalid_data(format!(
            "a round's matrix of {} values, {cols} columns",
            v.len()
        ))
    })
}

/// One partition of a distributed SparseMI fit: its bags' rows (owned) with the state of the
/// descent, answering the driver's rounds ([`SparsePartition::answer`]; the module docs list
/// them).
pub(crate) struct SparsePartition {
    rows: BagRows<Instances>,
    kernel: KernelKind,
    /// The width of the rows held: the instances', then `n_basis` after the round `basis`.
    x_width: usize,
    first_row: usize,
    n_rows: usize,
    n_problems: usize,
    /// Whether the rows held are the products with the basis vectors (round `basis`).
    products: bool,
}

impl SparsePartition {
    /// The bags `[lo, lo + m)` of a data set of `n_bags` bags: their rows `x` (the first one
    /// the data set's row `first_row`) with `m + 1` offsets `bag_ptr`, and per problem each
    /// bag's target and cost ([`problem_costs`]). The kernel width comes with the round
    /// `width`.
    pub(crate) fn new(
        params: &SparseMiValidParams,
        x: Instances,
        bag_ptr: Vec<usize>,
        (lo, n_bags, first_row): (usize, usize, usize),
        targets: Vec<Vec<f64>>,
        costs: Vec<Vec<f64>>,
    ) -> Result<Self> {
        let m = bag_ptr.len().saturating_sub(1);
        if targets.len() != costs.len() || targets.iter().chain(&costs).any(|t| t.len() != m) {
            return Err(invalid_data(format!(
                "a partition of {m} bags needs {m} targets and costs per problem"
            )));
        }
        check_partition(&x, &bag_ptr, lo)?;
        let (x_width, n_rows, n_problems) = (x.n_features(), x.n_rows(), targets.len());
        let norms = x.sq_norms();
        let kernel = params.kernel.with_gamma(f64::NAN);
        Ok(Self {
            rows: BagRows::new(kernel, x, norms, (bag_ptr, lo, n_bags), (targets, costs)),
            kernel: params.kernel,
            x_width,
            first_row,
            n_rows,
            n_problems,
            products: false,
        })
    }

    /// Refuses a round that reads the instances once they are replaced by their products with
    /// the basis vectors.
    fn check_instances(&self, op: &str) -> Result<()> {
        if self.products {
            return Err(invalid_data(format!(
                "a round {op:?} after the round \"basis\": the partition holds its rows' \
                 products with the basis vectors"
            )));
        }
        Ok(())
    }

    /// The rounds `basis` and `sparse_basis`: the rows become their products `X B^T` with the
    /// basis vectors `b`, computed as in the product over the data set's `n_total` rows.
    fn hold_products(&mut self, b: Instances, n_total: usize) -> Result<()> {
        self.check_instances("basis")?;
        if n_total < self.first_row + self.n_rows {
            return Err(invalid_data(format!(
                "a basis round for {n_total} rows; the partition holds rows up to {}",
                self.first_row + self.n_rows
            )));
        }
        if b.n_rows() == 0 {
            return Err(invalid_data("a basis round needs basis vectors"));
        }
        let p = self.rows.held().cross_gram_at(&b, self.first_row, n_total);
        self.rows.replace_rows(Instances::from(p));
        self.x_width = b.n_rows();
        self.products = true;
        Ok(())
    }
}

impl Answer for SparsePartition {
    /// Answers one round (the module docs list them).
    fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        let q = self.x_width;
        Ok(match op {
            "fold_values" => {
                self.check_instances(op)?;
                fold_values(self.rows.held(), s)
            }
            "width" => {
                self.rows.kernel = self.kernel.with_gamma(scalar(s)?);
                Vec::new()
            }
            "rows" => {
                self.check_instances(op)?;
                let mut out = Vec::new();
                for &r in v {
                    let r = r as usize;
                    if (self.first_row..self.first_row + self.n_rows).contains(&r) {
                        out.push(r as f64);
                        out.extend(self.rows.dense_row(r - self.first_row));
                    }
                }
                out
            }
            "basis" => {
                let n_total = whole(s.first(), "the data set's row count")?;
                self.hold_products(Instances::from(matrix(v, q)?.to_owned()), n_total)?;
                Vec::new()
            }
            "sparse_basis" => {
                let n_total = whole(s.first(), "the data set's row count")?;
                let b = csr(v, whole(s.get(1), "the number of basis vectors")?, q)?;
                self.hold_products(Instances::Sparse(b), n_total)?;
                Vec::new()
            }
            "eval" => {
                let v = matrix(v, q)?;
                if v.nrows() != s.len() {
                    return Err(invalid_data(
                        "an eval round needs one squared norm per vector",
                    ));
                }
                flat(self.rows.evaluate_at(v, s, false))
            }
            "trial" => {
                if !v.is_empty() {
                    self.rows.direction_of(matrix(v, q)?);
                }
                let (&step, norms) = s
                    .split_first()
                    .ok_or_else(|| invalid_data("a trial round needs its step"))?;
                flat(self.rows.trial_at(step, norms)?)
            }
            "gradient" => {
                if s.first() == Some(&1.0) {
                    self.rows.accept_candidate()?;
                }
                let per = v.len() / self.n_problems.max(1);
                if per == 0 || per * self.n_problems != v.len() {
                    return Err(invalid_data(
                        "a gradient round needs beta and b per problem",
                    ));
                }
                let sols: Vec<(ArrayView1<f64>, f64)> = v
                    .chunks_exact(per)
                    .map(|c| (ArrayView1::from(&c[..per - 1]), c[per - 1]))
                    .collect();
                let mut out = Vec::new();
                put_nodes(&self.rows.gradient_nodes(&sols)?, &mut out);
                out
            }
            _ => return Err(invalid_data(format!("no SparseMI round named {op:?}"))),
        })
    }
    fn held_bytes(&self) -> usize {
        self.rows.held_bytes()
    }
}

/// The driver's [`DescentRows`]: the rows held by the partitions that `dispatch` reaches.
struct RemoteRows<D> {
    dispatch: D,
    n_bags: usize,
    n_xv: usize,
    q: usize,
    /// Whether the partitions' candidate became current (sent with the next gradient round).
    accepted: bool,
    /// A new line-search direction (sent with the next trial round).
    direction: Vec<f64>,
}

impl<D: Dispatch> RemoteRows<D> {
    /// The rows of `n_bags` bags held by the partitions that `dispatch` reaches, for `n_xv`
    /// expansion vectors of `q` coordinates.
    fn new(dispatch: D, n_bags: usize, n_xv: usize, q: usize) -> Self {
        Self {
            dispatch,
            n_bags,
            n_xv,
            q,
            accepted: false,
            direction: Vec::new(),
        }
    }

    /// The descent ([`descend_with`]) from `start` over these rows.
    fn descend(
        mut self,
        params: &SparseMiValidParams,
        objective: &Objective,
        start: Basis,
        make: impl Fn(Array2<f64>) -> Basis,
    ) -> Result<(Basis, super::Point, Vec<f64>)> {
        descend_with(params, objective, &mut self, start, None, make)
    }

    /// `M` from the partitions' rows of it, in partition order.
    fn means(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Array2<f64>> {
        let m = self.dispatch.round(op, v, s)?.concat();
        Array2::from_shape_vec((self.n_bags, self.n_xv), m)
            .map_err(|_| invalid_data("the partitions' bag means do not cover the bags"))
    }
}

impl<D: Dispatch> DescentRows for RemoteRows<D> {
    fn evaluate(&mut self, basis: &Basis, _reuse: bool) -> Result<Array2<f64>> {
        self.accepted = false;
        self.means("eval", &flat(&basis.v), &basis.sq_norms)
    }

    fn direction(&mut self, grad: &Array2<f64>) -> Result<()> {
        self.direction = flat(grad);
        Ok(())
    }

    fn trial(&mut self, step: f64, sq_norms: &[f64]) -> Result<Array2<f64>> {
        let s: Vec<f64> = std::iter::once(step)
            .chain(sq_norms.iter().copied())
            .collect();
        let v = std::mem::take(&mut self.direction);
        self.means("trial", &v, &s)
    }

    fn accept(&mut self) -> Result<()> {
        self.accepted = true;
        Ok(())
    }

    fn data_gradient(&mut self, sols: &[Solution]) -> Result<(Array2<f64>, Vec<f64>)> {
        let mut v = Vec::new();
        for (beta, b) in coefficients(sols) {
            v.extend(beta.iter());
            v.push(b);
        }
        let s = [f64::from(u8::from(std::mem::take(&mut self.accepted)))];
        let zero: GradientSum = (vec![0.0; self.n_xv * self.q], vec![0.0; self.n_xv]);
        let mut nodes = Vec::new();
        for r in self.dispatch.round("gradient", &v, &s)? {
            nodes.extend(get_nodes(&zero, &mut Reader::new(&r))?);
        }
        gradient_of_sum(combine(self.n_bags, nodes, zero)?, self.n_xv)
    }
}

/// The rows `rows` of the data set (global indices), gathered from the partitions.
fn gather_rows(dispatch: &mut impl Dispatch, rows: &[usize], q: usize) -> Result<Array2<f64>> {
    let wanted: Vec<f64> = rows.iter().map(|&r| r as f64).collect();
    let mut found = std::collections::HashMap::new();
    for reply in dispatch.round("rows", &wanted, &[])? {
        let mut at = Reader::new(&reply);
        for _ in 0..reply.len() / (q + 1) {
            let r = at.count()?;
            found.insert(r, at.slice(q)?.to_vec());
        }
    }
    let mut out = Array2::zeros((rows.len(), q));
    for (mut o, r) in out.rows_mut().into_iter().zip(rows) {
        let row = found
            .get(r)
            .ok_or_else(|| invalid_data(format!("no partition holds row {r}")))?;
        o.assign(&ArrayView1::from(row));
    }
    Ok(out)
}

/// The fit of SparseMI / RSVM (direct or basis-vector mode) on bags held by the partitions
/// that `dispatch` reaches (each a [`SparsePartition`]), from the bags' offsets `bag_ptr` (all
/// of them), `labels` (class indices), the width `n_features` and the kernel width `gamma`
/// resolved for them: the [`SparseMiFit`] of the same fit in one process.
pub(crate) fn fit_distributed(
    params: &SparseMiValidParams,
    mut dispatch: impl Dispatch,
    bag_ptr: &[usize],
    labels: &[usize],
    n_features: usize,
    gamma: f64,
) -> Result<SparseMiFit> {
    let n_bags = bag_ptr.len().saturating_sub(1);
    let n = bag_ptr.last().copied().unwrap_or(0);
    validate_bag_ptr(bag_ptr, n)?;
    let n_classes = count_classes(labels, n_bags)?;
    params.class_weight.validate(n_classes)?;
    params.check_n_xv(n)?;
    params.check_n_basis(n)?;
    check_columns("init_basis", params.init_basis.as_ref(), n_features)?;
    check_init_xv_columns(params.init_xv.as_ref(), n_features)?;
    let kernel = params.kernel.with_gamma(gamma);
    dispatch.round("width", &[], &[gamma])?;
    let (targets, weights) = problems(params, labels, n_classes);
    let objective = Objective::new(params, kernel, &targets, &weights);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let (basis, point, history, initial_xv, xv) = match params.n_basis {
        None => {
            let initial_xv = match &params.init_xv {
                Some(z) => z.clone(),
                None => {
                    let rows = sample(&mut rng, n, params.n_xv).into_vec();
                    gather_rows(&mut dispatch, &rows, n_features)?
                }
            };
            let rows = RemoteRows::new(dispatch, n_bags, initial_xv.nrows(), n_features);
            let start = Basis::direct(initial_xv.clone());
            let (basis, point, history) = rows.descend(params, &objective, start, Basis::direct)?;
            let xv = basis.v.clone();
            (basis, point, history, initial_xv, xv)
        }
        Some(q) => {
            let bv = match &params.init_basis {
                Some(b) => b.clone(),
                None => {
                    let rows = sample(&mut rng, n, q).into_vec();
                    Instances::from(gather_rows(&mut dispatch, &rows, n_features)?)
                }
            };
            let (g, v0, initial_xv) = params.basis_start(&mut rng, &bv);
            match &bv {
                Instances::Sparse(b) => {
                    let s = [n as f64, b.n_rows() as f64];
                    dispatch.round("sparse_basis", &flat_csr(b), &s)?
                }
                dense => dispatch.round("basis", &flat(&dense.to_dense()), &[n as f64])?,
            };
            let rows = RemoteRows::new(dispatch, n_bags, params.n_xv, bv.n_rows());
            let make = |v| Basis::projected(v, g.view());
            let (basis, point, history) = rows.descend(params, &objective, make(v0), make)?;
            let xv = bv.combine_rows(&basis.v);
            (basis, point, history, initial_xv, xv)
        }
    };
    Ok(params.record(
        n_classes,
        (kernel, gamma),
        &basis,
        &point,
        history,
        &initial_xv,
        xv,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bags::Bags;
    use crate::fit::{Fit, ParamGuard};
    use crate::sparse_mi::SparseMiParams;
    use rand::Rng;

    use crate::solver::linear::{drops_for, restores_for, rows_of, Dropping, Local, Recovering};

    /// Bags of 2 to 9 rows; class `i % n_classes`, whose first rows move along feature `class`.
    fn bags(
        seed: u64,
        n_bags: usize,
        d: usize,
        n_classes: usize,
    ) -> (Array2<f64>, Vec<usize>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut ptr, mut labels, mut rows) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n_bags {
            let m = rng.random_range(2..=9);
            let class = i % n_classes;
            for r in 0..m {
                for k in 0..d {
                    let mut v = rng.random::<f64>() * 2.0 - 1.0;
                    if r < 2 && k == class && class > 0 {
                        v += 1.5;
                    }
                    rows.push(v);
                }
            }
            ptr.push(ptr[i] + m);
            labels.push(class);
        }
        let x = Array2::from_shape_vec((ptr[n_bags], d), rows).unwrap();
        (x, ptr, labels)
    }

    /// Basis vectors of width 4 for the tests' bags.
    fn given_basis(n_basis: usize) -> Instances {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        Instances::from(Array2::from_shape_fn((n_basis, 4), |_| {
            rng.random::<f64>() * 2.0 - 1.0
        }))
    }

    /// Basis vectors given as a sparse matrix of `n_basis x 4`, stored as a user may give them:
    /// column indices out of order, an explicit zero and a repeated column (which adds up).
    fn given_sparse_basis(n_basis: usize) -> Instances {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let (mut indptr, mut indices, mut data) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n_basis {
            let row: &[usize] = match i % 3 {
                0 => &[3, 0, 2],
                1 => &[1, 1, 2],
                _ => &[2, 0],
            };
            for &j in row {
                indices.push(j);
                data.push(if i == 1 && j == 2 {
                    0.0
                } else {
                    rng.random::<f64>() * 2.0 - 1.0
                });
            }
            indptr.push(indices.len());
        }
        Instances::Sparse(Csr::new(n_basis, 4, indptr, indices, data).unwrap())
    }

    /// SparseMI (two and three classes), RSVM and the linear kernel, in direct and basis-vector
    /// mode (random or given basis vectors, dense or sparse), f64 and f32 rows, over 1, 2, 3, 5 and 7 partitions
    /// (an empty one among them; the products with the basis vectors' blocks of rows cross
    /// partitions): the whole fit record (model, history, initial expansion vectors) equals the
    /// in-process fit's, bit for bit.
    #[test]
    fn a_fit_over_partitions_is_the_fit_in_one_process() {
        let basis = |n_basis: usize| SparseMiParams::new().n_basis(Some(n_basis));
        for (n_classes, params) in [
            (2, SparseMiParams::new().n_xv(4).max_iter(6)),
            (2, SparseMiParams::rsvm().n_xv(5).seed(3)),
            (
                2,
                SparseMiParams::new()
                    .n_xv(3)
                    .max_iter(4)
                    .kernel(KernelKind::Linear),
            ),
            (3, SparseMiParams::new().n_xv(4).max_iter(4)),
            (2, basis(12).n_xv(4).max_iter(6)),
            (2, SparseMiParams::rsvm().n_basis(Some(7)).n_xv(5).seed(3)),
            (2, basis(6).n_xv(3).max_iter(4).kernel(KernelKind::Linear)),
            (3, basis(10).n_xv(4).max_iter(4).seed(5)),
            (2, basis(5).init_basis(Some(given_basis(5))).max_iter(5)),
            (
                2,
                basis(5).init_basis(Some(given_sparse_basis(5))).max_iter(5),
            ),
            (
                3,
                basis(6).init_basis(Some(given_sparse_basis(6))).max_iter(4),
            ),
        ] {
            let (x, ptr, labels) = bags(7, 90, 4, n_classes);
            let n_bags = labels.len();
            let params = params.check().unwrap();
            for single in [false, true] {
                let rows = |r0: usize, r1: usize| rows_of(&x, r0, r1, single);
                let whole_bags = Bags::new(rows(0, ptr[n_bags]), ptr.clone()).unwrap();
                let whole = params.fit(&whole_bags, &labels).unwrap();
                assert!(params.max_iter == 0 || whole.n_iter > 1, "{}", whole.n_iter);
                let (targets, costs) = problem_costs(&params, &labels, n_bags).unwrap();
                for parts in [1, 2, 3, 5, 7] {
                    let kernels = Local::split(&ptr, parts, |lo, hi, local| {
                        let slice = |t: &Vec<Vec<f64>>| -> Vec<Vec<f64>> {
                            t.iter().map(|t| t[lo..hi].to_vec()).collect()
                        };
                        let at = (lo, n_bags, ptr[lo]);
                        let (t, c) = (slice(&targets), slice(&costs));
                        SparsePartition::new(&params, rows(ptr[lo], ptr[hi]), local, at, t, c)
                            .unwrap()
                    });
                    let fit =
                        fit_distributed(&params, kernels, &ptr, &labels, 4, whole.gamma).unwrap();
                    assert_eq!(fit, whole, "{n_classes} classes, {parts} partitions");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&fit.objective_history), bits(&whole.objective_history));
                }
            }
        }
    }

    /// SparseMI (two and three classes, direct and basis-vector mode, random and given sparse
    /// basis vectors) over 3 partitions (one empty) whose states are dropped at the first and the middle round of every kind (within
    /// line searches, at the gradients, at the products with the basis vectors), and all at
    /// once: one restore round per drop, and the whole fit record equals the undisturbed fit's,
    /// bit for bit. With no restore allowed: an error.
    #[test]
    fn a_fit_that_loses_partitions_is_the_undisturbed_fit() {
        for (n_classes, single, n_basis, sparse) in [
            (2, false, None, false),
            (3, true, None, false),
            (2, true, Some(9), false),
            (3, false, Some(6), false),
            (2, false, Some(5), true),
        ] {
            let params = SparseMiParams::new().n_xv(4).max_iter(6).n_basis(n_basis);
            let given = n_basis.filter(|_| sparse).map(given_sparse_basis);
            let params = params.init_basis(given).check().unwrap();
            let (x, ptr, labels) = bags(7, 60, 4, n_classes);
            let n_bags = labels.len();
            let (targets, costs) = problem_costs(&params, &labels, n_bags).unwrap();
            let cuts = Local::split(&ptr, 3, |lo, hi, local| (lo, hi, local)).0;
            let make = |k: usize| {
                let (lo, hi, local) = cuts[k].clone();
                let slice = |t: &Vec<Vec<f64>>| -> Vec<Vec<f64>> {
                    t.iter().map(|t| t[lo..hi].to_vec()).collect()
                };
                let (t, c) = (slice(&targets), slice(&costs));
                let rows = rows_of(&x, ptr[lo], ptr[hi], single);
                SparsePartition::new(&params, rows, local, (lo, n_bags, ptr[lo]), t, c).unwrap()
            };
            let fit_with = |drops: Vec<(u64, usize)>, retries: usize| {
                let mut driver = Recovering::new(Dropping::new(cuts.len(), make, drops), retries);
                let fit = fit_distributed(&params, &mut driver, &ptr, &labels, 4, 0.5);
                (
                    fit,
                    driver.restores(),
                    std::mem::take(&mut driver.link().ops),
                )
            };
            let (undisturbed, _, ops) = fit_with(Vec::new(), 0);
            let undisturbed = undisturbed.unwrap();
            assert!(undisturbed.n_iter > 1);
            let drops = drops_for(&ops, cuts.len());
            let (fit, restores, _) = fit_with(drops.clone(), drops.len());
            let fit = fit.unwrap();
            assert_eq!(restores, restores_for(&drops));
            assert_eq!(fit, undisturbed, "{n_classes} classes, n_basis {n_basis:?}");
            let round = if sparse { "sparse_basis" } else { "basis" };
            assert_eq!(n_basis.is_some(), ops.iter().any(|op| op == round));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&fit.objective_history),
                bits(&undisturbed.objective_history)
            );
            let (failed, _, _) = fit_with(vec![(ops.len() as u64 / 2, 0)], 0);
            let err = failed.unwrap_err().to_string();
            assert!(err.contains("no restore is left"), "{err}");
        }
    }

    /// A partition's products with the basis vectors ([`Instances::cross_gram_at`]) are its rows
    /// of the whole matrix's product, bit for bit, f64 and f32, for rows cut anywhere across
    /// the product's blocks (a width above the products' inner blocking too).
    #[test]
    fn a_partition_s_products_are_rows_of_the_whole_product() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let (n, d) = (1000, 600);
        let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>() - 0.5);
        let b = Instances::from(Array2::from_shape_fn((9, d), |_| rng.random::<f64>() - 0.5));
        let bits = |a: ArrayView2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for single in [false, true] {
            let whole = rows_of(&x, 0, n, single).cross_gram(&b);
            let cuts = [0, 1, 255, 257, 300, 300, 512, 700, 999, 1000];
            for w in cuts.windows(2) {
                let part = rows_of(&x, w[0], w[1], single).cross_gram_at(&b, w[0], n);
                let want = whole.slice(ndarray::s![w[0]..w[1], ..]);
                assert_eq!(bits(part.view()), bits(want), "rows {w:?}, f32 {single}");
            }
        }
    }

    /// What a partition says it holds ([`Answer::held_bytes`]): its rows and what it keeps per
    /// row and per bag; after the round `basis`, its rows' products with the basis vectors in
    /// place of its rows (an eval round then adds the descent's state).
    #[test]
    fn a_partition_s_bytes_follow_what_it_holds() {
        let (x, ptr, labels) = bags(1, 6, 40, 2);
        let (n, rows) = (x.nrows(), 8 * x.len());
        let params = SparseMiParams::new()
            .n_xv(2)
            .n_basis(Some(3))
            .check()
            .unwrap();
        let (targets, costs) = problem_costs(&params, &labels, 6).unwrap();
        let at = (0, 6, 0);
        let mut part =
            SparsePartition::new(&params, Instances::from(x), ptr, at, targets, costs).unwrap();
        let before = part.held_bytes();
        assert!(before >= rows + 8 * n, "{before}");
        part.answer("basis", &[0.5; 3 * 40], &[n as f64]).unwrap();
        assert_eq!(part.held_bytes(), before - rows + 8 * 3 * n);
        let after_basis = part.held_bytes();
        part.answer("width", &[], &[0.5]).unwrap();
        part.answer("eval", &[0.1; 2 * 3], &[0.1, 0.2]).unwrap();
        assert!(part.held_bytes() > after_basis);
    }

    #[test]
    fn bad_rounds_and_settings_are_refused() {
        let (x, ptr, labels) = bags(1, 6, 3, 2);
        let params = SparseMiParams::new().n_xv(2).check().unwrap();
        let (targets, costs) = problem_costs(&params, &labels, 6).unwrap();
        assert!(problem_costs(&params, &labels[..5], 6).is_err());
        let mut part =
            SparsePartition::new(&params, Instances::from(x), ptr, (0, 6, 0), targets, costs)
                .unwrap();
        assert!(part.answer("no such round", &[], &[]).is_err());
        assert!(part.answer("width", &[], &[]).is_err());
        assert!(part.answer("trial", &[], &[0.5]).is_err());
        assert!(part.answer("gradient", &[1.0, 2.0, 0.0], &[0.0]).is_err());
        assert!(part.answer("eval", &[0.0; 6], &[1.0]).is_err());
        assert!(part.answer("eval", &[0.0; 6], &[0.0, 0.0]).is_ok());
        assert!(part
            .answer("trial", &[0.0; 9], &[0.5, 0.0, 0.0, 0.0])
            .is_err());
        // the products with the basis vectors: a whole number of vectors of the rows' width,
        // the data set's row count, once, and no round reading the instances after it
        assert!(part.answer("basis", &[0.0; 4], &[6.0]).is_err());
        assert!(part.answer("basis", &[], &[6.0]).is_err());
        assert!(part.answer("basis", &[0.0; 6], &[]).is_err());
        assert!(part.answer("basis", &[0.0; 6], &[1.5]).is_err());
        let n = part.n_rows as f64;
        assert!(part.answer("basis", &[0.0; 6], &[n - 1.0]).is_err());
        // a sparse basis: offsets, indices and values that make a checked matrix of the rows'
        // width, and its number of vectors
        let sparse = [0.0, 1.0, 2.0, 0.0, 2.0, 1.0, 2.0];
        assert!(part.answer("sparse_basis", &sparse, &[n]).is_err());
        assert!(part.answer("sparse_basis", &sparse, &[n, 3.0]).is_err());
        assert!(part
            .answer("sparse_basis", &sparse[..6], &[n, 2.0])
            .is_err());
        assert!(part
            .answer("sparse_basis", &sparse[..2], &[n, 2.0])
            .is_err());
        assert!(part.answer("sparse_basis", &[0.0], &[n, 0.0]).is_err());
        assert!(part
            .answer("sparse_basis", &sparse, &[n - 1.0, 2.0])
            .is_err());
        for (at, bad) in [(3, 0.5), (4, 3.0), (4, -1.0), (1, 3.0), (6, f64::NAN)] {
            let mut v = sparse;
            v[at] = bad;
            assert!(part.answer("sparse_basis", &v, &[n, 2.0]).is_err(), "{v:?}");
        }
        assert!(part.answer("basis", &[1.0; 6], &[n]).is_ok());
        assert!(part.answer("basis", &[1.0; 6], &[n]).is_err());
        assert!(part.answer("sparse_basis", &sparse, &[n, 2.0]).is_err());
        assert!(part.answer("rows", &[0.0], &[]).is_err());
        assert!(part.answer("fold_values", &[], &[0.0, 0.0]).is_err());
        assert!(part.answer("eval", &[0.0; 4], &[0.0, 0.0]).is_ok());
    }
}
