//! The data-touching steps of SparseMI's outer loop ([`DescentRows`]): the inner products of
//! the rows with the expansion vectors, their kernel values and bag means `M` (Fu et al. 2013,
//! eq. 5), and the data term of the gradient (eq. 13), `sum_ip a_ip dk(x_ip, z_k)/dz_k`.
//! [`BagRows`] holds contiguous bags `[lo, lo + m)` of a data set of `n_bags` bags with that
//! state: in process it holds every bag, in a distributed fit one partition
//! ([`super::distributed`]). The gradient's sums run in the fixed tree over the bags
//! ([`crate::tree_sum`]), so any partition of the bags into contiguous groups gives the bits of
//! the fit in one process.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use crate::bags::{Instances, Rows};
use crate::error::{invalid_data, Result};
use crate::kernel::{cross_dots, kernel_bag_means_from_dots, Basis, Kernel};
use crate::solver::Solution;
use crate::tree_sum::{combine, partial_bags, Node};

/// The data term of the gradient as the tree sums it: `(sum_p W[p,k] F_p` for every `k`, row
/// after row (`n_basis x q`, flat), `sum_p W[p,k]` (`n_basis`)).
pub(crate) type GradientSum = (Vec<f64>, Vec<f64>);

/// The steps of the outer loop that read the rows (Fu et al. 2013, Algorithm 1), in process
/// ([`BagRows`]) or over partitions ([`super::distributed`]). Each returns what the driver's
/// small work needs: the bag means `M` (`n_bags x n_basis`) or the gradient's data term.
pub(crate) trait DescentRows {
    /// The point at `basis` becomes the current one (`reuse`: keep the current inner products,
    /// which are those of `basis`); its `M`.
    fn evaluate(&mut self, basis: &Basis, reuse: bool) -> Result<Array2<f64>>;
    /// The line-search direction `G`: the inner products `F G^T` for [`DescentRows::trial`]
    /// (partitions compute them with the first trial).
    fn direction(&mut self, grad: &Array2<f64>) -> Result<()>;
    /// The trial point `V - step G` (squared norms `sq_norms`), from the current inner products
    /// `D(V - l G) = D(V) - l F G^T`, kept as the candidate; its `M`.
    fn trial(&mut self, step: f64, sq_norms: &[f64]) -> Result<Array2<f64>>;
    /// The candidate becomes the current point.
    fn accept(&mut self) -> Result<()>;
    /// The gradient's data term at the current point for the inner solutions `sols` (one per
    /// problem), summed in the tree over the bags ([`BagRows::gradient_nodes`]).
    fn data_gradient(&mut self, sols: &[Solution]) -> Result<(Array2<f64>, Vec<f64>)>;
}

/// Rows held by a [`BagRows`]: borrowed (in process) or owned (a partition).
pub(crate) trait HoldsRows: Sync {
    /// The rows.
    fn rows(&self) -> Rows<'_>;
}

impl HoldsRows for Rows<'_> {
    fn rows(&self) -> Rows<'_> {
        self.reborrow()
    }
}

impl HoldsRows for Instances {
    fn rows(&self) -> Rows<'_> {
        Instances::rows(self)
    }
}

/// Inner products, kernel values and bag means at one point.
struct Values {
    dots: Array2<f64>,
    k_x: Array2<f64>,
    m: Array2<f64>,
}

/// The bags `[lo, lo + m)` of a data set of `n_bags` bags: their rows, squared norms, offsets
/// (`m + 1`, into these rows), the targets and costs of every problem, and the state of the
/// descent (the current point, the candidate of the line search, the direction's products).
pub(crate) struct BagRows<R> {
    pub(crate) kernel: Kernel,
    x: R,
    norms: Vec<f64>,
    ptr: Vec<usize>,
    lo: usize,
    n_bags: usize,
    /// Per problem: `+1 / -1` per bag (these bags).
    targets: Vec<Vec<f64>>,
    /// Per problem: `C` times the class weight per bag (these bags).
    pub(crate) costs: Vec<Vec<f64>>,
    current: Option<Values>,
    candidate: Option<Values>,
    grad_dots: Option<Array2<f64>>,
}

/// The inner products `F W^T` of the rows with the rows of `w`.
fn dots_with(rows: Rows<'_>, w: ArrayView2<f64>) -> Array2<f64> {
    let basis = Basis {
        v: w.to_owned(),
        u: Array2::zeros((0, 0)),
        sq_norms: Vec::new(),
    };
    cross_dots(rows, &basis)
}

impl<R: HoldsRows> BagRows<R> {
    /// The bags `[lo, lo + ptr.len() - 1)` of `n_bags`, with rows `x` and their squared norms,
    /// and the `(targets, costs)` of every problem.
    pub(crate) fn new(
        kernel: Kernel,
        x: R,
        norms: Vec<f64>,
        (ptr, lo, n_bags): (Vec<usize>, usize, usize),
        (targets, costs): (Vec<Vec<f64>>, Vec<Vec<f64>>),
    ) -> Self {
        Self {
            kernel,
            x,
            norms,
            ptr,
            lo,
            n_bags,
            targets,
            costs,
            current: None,
            candidate: None,
            grad_dots: None,
        }
    }

    fn values(&self, dots: Array2<f64>, sq_norms: &[f64]) -> Values {
        let (k_x, m) =
            kernel_bag_means_from_dots(self.kernel, dots.view(), &self.norms, &self.ptr, sq_norms);
        Values { dots, k_x, m }
    }

    fn current(&self) -> Result<&Values> {
        self.current
            .as_ref()
            .ok_or_else(|| invalid_data("SparseMI rows: no point evaluated yet"))
    }

    /// The rows as held.
    #[cfg(any(feature = "python", test))]
    pub(crate) fn held(&self) -> &R {
        &self.x
    }

    /// The rows become `x` (the same instances in other coordinates: basis-vector mode's
    /// products with the basis vectors, whose squared norms are still those of the instances);
    /// the descent's state is dropped.
    #[cfg(any(feature = "python", test))]
    pub(crate) fn replace_rows(&mut self, x: R) {
        self.x = x;
        self.current = None;
        self.candidate = None;
        self.grad_dots = None;
    }

    /// Row `i` of these rows, dense.
    #[cfg(any(feature = "python", test))]
    pub(crate) fn dense_row(&self, i: usize) -> Vec<f64> {
        self.x
            .rows()
            .dense_block(i, i + 1)
            .iter()
            .copied()
            .collect()
    }

    /// [`DescentRows::evaluate`] from the coordinates `v` and squared norms of the basis.
    pub(crate) fn evaluate_at(
        &mut self,
        v: ArrayView2<f64>,
        sq_norms: &[f64],
        reuse: bool,
    ) -> &Array2<f64> {
        let dots = match (reuse, self.current.take()) {
            (true, Some(c)) => c.dots,
            _ => dots_with(self.x.rows(), v),
        };
        self.candidate = None;
        &self.current.insert(self.values(dots, sq_norms)).m
    }

    /// [`DescentRows::direction`].
    pub(crate) fn direction_of(&mut self, grad: ArrayView2<f64>) {
        self.grad_dots = Some(dots_with(self.x.rows(), grad));
    }

    /// [`DescentRows::trial`].
    pub(crate) fn trial_at(&mut self, step: f64, sq_norms: &[f64]) -> Result<&Array2<f64>> {
        let g = self
            .grad_dots
            .as_ref()
            .ok_or_else(|| invalid_data("SparseMI rows: a trial before a direction"))?;
        let cur = &self.current()?.dots;
        if g.dim() != cur.dim() || sq_norms.len() != cur.ncols() {
            return Err(invalid_data(
                "SparseMI rows: a trial of another number of expansion vectors",
            ));
        }
        let dots = ndarray::Zip::from(cur)
            .and(g)
            .map_collect(|&d, &g| d - step * g);
        Ok(&self.candidate.insert(self.values(dots, sq_norms)).m)
    }

    /// [`DescentRows::accept`].
    pub(crate) fn accept_candidate(&mut self) -> Result<()> {
        let c = self
            .candidate
            .take()
            .ok_or_else(|| invalid_data("SparseMI rows: no candidate to accept"))?;
        self.current = Some(c);
        Ok(())
    }

    /// This group's canonical nodes, in the tree over every bag, of the gradient's data term
    /// at the current point: `W[p, k] = (sum_c a_ci beta_ck) K[p, k]` for the rows `p` of bag
    /// `i` (Gaussian; without `K[p, k]` for the linear kernel), `a_ci = 2 C_ci (F_ci - y_ci) /
    /// n_i` where `y_ci F_ci < 1` (eq. 13), `F_ci = M_i . beta_c + b_c`. `sols`: `(beta_c,
    /// b_c)` per problem. A bag without a loss term adds nothing.
    pub(crate) fn gradient_nodes(
        &self,
        sols: &[(ArrayView1<f64>, f64)],
    ) -> Result<Vec<Node<GradientSum>>> {
        let cur = self.current()?;
        let rows = self.x.rows();
        let (nb, q) = (cur.m.ncols(), rows.n_cols());
        let m = self.ptr.len().saturating_sub(1);
        if sols.len() != self.targets.len() || sols.iter().any(|(beta, _)| beta.len() != nb) {
            return Err(invalid_data(format!(
                "SparseMI rows: {} problems of {nb} coefficients expected",
                self.targets.len()
            )));
        }
        // the offsets of every bag, these bags' own, the others' empty
        let mut global = vec![0; self.n_bags + 1];
        global[self.lo..=self.lo + m].copy_from_slice(&self.ptr);
        global[self.lo + m..].fill(rows.n_rows());
        let lo = self.lo;
        let rbf = matches!(self.kernel, Kernel::Rbf { .. });
        let leaf = |k: usize, acc: &mut GradientSum| {
            let i = k - lo;
            let (r0, r1) = (self.ptr[i], self.ptr[i + 1]);
            let mut a = ndarray::Array1::<f64>::zeros(nb);
            let mut touched = false;
            for (c, (beta, b)) in sols.iter().enumerate() {
                let (y, f) = (self.targets[c][i], cur.m.row(i).dot(beta) + b);
                if y * f < 1.0 {
                    a.scaled_add(self.costs[c][i] * 2.0 * (f - y) / (r1 - r0) as f64, beta);
                    touched = true;
                }
            }
            if !touched {
                return false;
            }
            // the bag's weights W (rows x n_basis), their column sums in row order
            let mut w = Array2::<f64>::zeros((r1 - r0, nb));
            for (p, mut wrow) in (r0..).zip(w.rows_mut()) {
                for (kk, wk) in wrow.iter_mut().enumerate() {
                    *wk = if rbf { a[kk] * cur.k_x[[p, kk]] } else { a[kk] };
                    acc.1[kk] += *wk;
                }
            }
            // W^T F of the bag's rows: one product (its bits depend on the bag alone)
            match rows {
                Rows::Sparse(x) => {
                    for (p, wrow) in (r0..).zip(w.rows()) {
                        let (idx, val) = x.row(p);
                        for (kk, &wk) in wrow.iter().enumerate() {
                            let dst = &mut acc.0[kk * q..(kk + 1) * q];
                            for (&j, &v) in idx.iter().zip(val) {
                                dst[j] += wk * v;
                            }
                        }
                    }
                }
                _ => {
                    if let Ok(mut out) = ArrayViewMut2::from_shape((nb, q), &mut acc.0[..]) {
                        general_mat_mul(1.0, &w.t(), &rows.dense_block(r0, r1), 0.0, &mut out);
                    }
                }
            }
            true
        };
        Ok(partial_bags(
            &global,
            lo,
            lo + m,
            (vec![0.0; nb * q], vec![0.0; nb]),
            leaf,
        ))
    }
}

impl BagRows<Instances> {
    /// The bytes held: the rows, their norms and offsets, the bags' targets and costs, and the
    /// descent's state.
    #[cfg(any(feature = "python", test))]
    pub(crate) fn held_bytes(&self) -> usize {
        use std::mem::size_of_val;
        let per_bag = self.targets.iter().chain(&self.costs);
        let values = [&self.current, &self.candidate].into_iter().flatten();
        self.x.nbytes()
            + size_of_val(&self.norms[..])
            + size_of_val(&self.ptr[..])
            + per_bag.map(|v| size_of_val(&v[..])).sum::<usize>()
            + values
                .map(|v| 8 * (v.dots.len() + v.k_x.len() + v.m.len()))
                .sum::<usize>()
            + self.grad_dots.as_ref().map_or(0, |g| 8 * g.len())
    }
}

/// The pairs `(beta_c, b_c)` of the inner solutions.
pub(crate) fn coefficients(sols: &[Solution]) -> Vec<(ArrayView1<'_, f64>, f64)> {
    sols.iter().map(|s| (s.beta.view(), s.b)).collect()
}

/// The gradient's data term from the root of its tree: `n_basis x q` and the column sums.
pub(crate) fn gradient_of_sum(sum: GradientSum, nb: usize) -> Result<(Array2<f64>, Vec<f64>)> {
    let q = sum.0.len().checked_div(nb).unwrap_or(0);
    let g = Array2::from_shape_vec((nb, q), sum.0)
        .map_err(|_| invalid_data("SparseMI: a gradient of the wrong shape"))?;
    Ok((g, sum.1))
}

impl<R: HoldsRows> DescentRows for BagRows<R> {
    fn evaluate(&mut self, basis: &Basis, reuse: bool) -> Result<Array2<f64>> {
        Ok(self
            .evaluate_at(basis.v.view(), &basis.sq_norms, reuse)
            .clone())
    }

    fn direction(&mut self, grad: &Array2<f64>) -> Result<()> {
        self.direction_of(grad.view());
        Ok(())
    }

    fn trial(&mut self, step: f64, sq_norms: &[f64]) -> Result<Array2<f64>> {
        Ok(self.trial_at(step, sq_norms)?.clone())
    }

    fn accept(&mut self) -> Result<()> {
        self.accept_candidate()
    }

    fn data_gradient(&mut self, sols: &[Solution]) -> Result<(Array2<f64>, Vec<f64>)> {
        let nb = self.current()?.m.ncols();
        let q = self.x.rows().n_cols();
        let nodes = self.gradient_nodes(&coefficients(sols))?;
        let sum = combine(self.n_bags, nodes, (vec![0.0; nb * q], vec![0.0; nb]))?;
        gradient_of_sum(sum, nb)
    }
}
