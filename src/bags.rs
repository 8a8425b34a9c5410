//! Bags of instances: dense or CSR instance rows plus bag offsets, validated once.
//!
//! A multiple-instance data set is a list of bags; bag `i` owns the instance rows
//! `bag_ptr[i]..bag_ptr[i + 1]` of one instance matrix. The instances are either a dense
//! row-major matrix or a CSR matrix ([`Csr`]); sparse instances are never densified.

use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};

use crate::error::{invalid_data, Result};

mod by_feature;
mod dense;
mod rows;
pub(crate) use by_feature::FeatureIndex;
pub use dense::{Dense, DenseF32, DenseF64};
pub use rows::Rows;
pub(crate) use rows::CHUNK_ROWS;

/// A compressed sparse row matrix of `f64` (the layout of `scipy.sparse.csr_matrix`). Serde
/// reads it through [`Csr::new`], so a deserialised matrix is checked like a built one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "CsrParts")]
pub struct Csr {
    n_rows: usize,
    n_cols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<f64>,
}

/// The fields of a [`Csr`] as stored, before their check.
#[derive(serde::Deserialize)]
struct CsrParts {
    n_rows: usize,
    n_cols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<f64>,
}

impl TryFrom<CsrParts> for Csr {
    type Error = crate::error::Error;
    fn try_from(p: CsrParts) -> Result<Csr> {
        Csr::new(p.n_rows, p.n_cols, p.indptr, p.indices, p.data)
    }
}

impl Csr {
    /// Builds a CSR matrix, checking that `indptr` has `n_rows + 1` non-decreasing entries
    /// from 0 to `data.len()`, that every column index is below `n_cols` and that every value
    /// is finite. Column indices need not be sorted; duplicates add up.
    pub fn new(
        n_rows: usize,
        n_cols: usize,
        indptr: Vec<usize>,
        indices: Vec<usize>,
        data: Vec<f64>,
    ) -> Result<Self> {
        if indptr.len() != n_rows + 1 {
            return Err(invalid_data(format!(
                "CSR indptr has {} entries, expected n_rows + 1 = {}",
                indptr.len(),
                n_rows + 1
            )));
        }
        if indices.len() != data.len() {
            return Err(invalid_data(format!(
                "CSR indices ({}) and data ({}) differ in length",
                indices.len(),
                data.len()
            )));
        }
        if indptr[0] != 0 || indptr[n_rows] != data.len() || indptr.windows(2).any(|w| w[0] > w[1])
        {
            return Err(invalid_data(
                "CSR indptr must rise monotonically from 0 to the number of stored values",
            ));
        }
        if let Some(&j) = indices.iter().find(|&&j| j >= n_cols) {
            return Err(invalid_data(format!(
                "CSR column index {j} is out of range for {n_cols} columns"
            )));
        }
        if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
            let row = indptr.partition_point(|&p| p <= pos) - 1;
            return Err(invalid_data(format!(
                "instance {row} has a non-finite value ({})",
                data[pos]
            )));
        }
        Ok(Self {
            n_rows,
            n_cols,
            indptr,
            indices,
            data,
        })
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Number of stored values.
    pub fn nnz(&self) -> usize {
        self.data.len()
    }
    /// Row offsets (`n_rows + 1` entries).
    pub fn indptr(&self) -> &[usize] {
        &self.indptr
    }
    /// Column index of each stored value.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }
    /// Stored values.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// The column indices and values of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> (&[usize], &[f64]) {
        let (lo, hi) = (self.indptr[i], self.indptr[i + 1]);
        (&self.indices[lo..hi], &self.data[lo..hi])
    }

    /// A new matrix holding the given rows, in the given order.
    pub fn select_rows(&self, rows: &[usize]) -> Csr {
        let mut indptr = Vec::with_capacity(rows.len() + 1);
        let mut indices = Vec::new();
        let mut data = Vec::new();
        indptr.push(0);
        for &r in rows {
            let (idx, val) = self.row(r);
            indices.extend_from_slice(idx);
            data.extend_from_slice(val);
            indptr.push(data.len());
        }
        Csr {
            n_rows: rows.len(),
            n_cols: self.n_cols,
            indptr,
            indices,
            data,
        }
    }

    /// The dense copy of this matrix (for tests and small data only).
    pub fn to_dense(&self) -> Array2<f64> {
        let mut out = Array2::zeros((self.n_rows, self.n_cols));
        for i in 0..self.n_rows {
            let (idx, val) = self.row(i);
            for (&j, &v) in idx.iter().zip(val) {
                out[[i, j]] += v;
            }
        }
        out
    }
}

impl From<Array2<f64>> for Instances {
    /// Dense rows, without a copy when `x` is in row-major order.
    fn from(x: Array2<f64>) -> Self {
        Instances::Dense(x.into())
    }
}

/// Instance rows, dense (`f64` or `f32`) or sparse.
///
/// `f32` rows ([`Instances::Dense32`]) are kept in single precision and read into `f64`
/// arithmetic everywhere (see [`crate::linalg::Real`]): a fit or a prediction on them gives the
/// same bits as on the same values stored as [`Instances::Dense`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Instances {
    /// A dense row-major `n_instances x n_features` matrix of `f64` (owned or borrowed).
    Dense(DenseF64),
    /// A dense row-major `n_instances x n_features` matrix of `f32` (owned or borrowed).
    Dense32(DenseF32),
    /// A CSR `n_instances x n_features` matrix.
    Sparse(Csr),
}

impl From<DenseF32> for Instances {
    fn from(x: DenseF32) -> Self {
        Instances::Dense32(x)
    }
}

impl Instances {
    /// Number of instance rows.
    pub fn n_rows(&self) -> usize {
        self.rows().n_rows()
    }
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.rows().n_cols()
    }
    /// The rows as the kernel code reads them.
    pub fn rows(&self) -> Rows<'_> {
        Rows::from(self)
    }
    /// The NumPy name of the type the values are stored in (`"float64"` for dense `f64` and
    /// CSR, `"float32"`).
    pub fn dtype(&self) -> &'static str {
        match self {
            Instances::Dense32(_) => "float32",
            Instances::Dense(_) | Instances::Sparse(_) => "float64",
        }
    }
    /// Squared Euclidean norm of every row.
    pub fn sq_norms(&self) -> Vec<f64> {
        self.rows().sq_norms()
    }
    /// Mean and variance of all entries (zeros of a sparse matrix included), as used by
    /// `gamma = "scale"`.
    pub fn mean_var(&self) -> (f64, f64) {
        let n = (self.n_rows() * self.n_features()) as f64;
        let add = |(a, b): (f64, f64), v: f64| (a + v, b + v * v);
        let (s, s2) = match self {
            Instances::Dense(x) => x.as_slice().iter().fold((0.0, 0.0), |acc, &v| add(acc, v)),
            Instances::Dense32(x) => x
                .as_slice()
                .iter()
                .fold((0.0, 0.0), |acc, &v| add(acc, f64::from(v))),
            Instances::Sparse(x) => x.data().iter().fold((0.0, 0.0), |acc, &v| add(acc, v)),
        };
        let mean = s / n;
        (mean, (s2 / n - mean * mean).max(0.0))
    }
    /// The bytes of the values (and of a CSR matrix's offsets and column indices).
    pub fn nbytes(&self) -> usize {
        use std::mem::size_of_val;
        match self {
            Instances::Dense(x) => size_of_val(x.as_slice()),
            Instances::Dense32(x) => size_of_val(x.as_slice()),
            Instances::Sparse(x) => {
                size_of_val(x.data()) + size_of_val(x.indices()) + size_of_val(x.indptr())
            }
        }
    }
    /// The rows given, in order, as a new matrix of the same kind.
    pub fn select_rows(&self, rows: &[usize]) -> Instances {
        match self {
            Instances::Dense(x) => Instances::Dense(x.select_rows(rows)),
            Instances::Dense32(x) => Instances::Dense32(x.select_rows(rows)),
            Instances::Sparse(x) => Instances::Sparse(x.select_rows(rows)),
        }
    }
    /// The inner products of every row of `self` with every row of `other`
    /// (`self.n_rows() x other.n_rows()`, dense), never densifying a sparse operand.
    /// Rows of `self` are processed in parallel; each output row is computed in one fixed order.
    pub fn cross_gram(&self, other: &Instances) -> Array2<f64> {
        self.cross_gram_at(other, 0, self.n_rows())
    }

    /// The rows of `X.cross_gram(other)` that `self` holds, `self` being the rows
    /// `first_row..first_row + self.n_rows()` of a matrix `X` of `n_total` rows, with the bits
    /// of `X`'s product: dense rows are multiplied in the fixed blocks of [`CROSS_GRAM_ROWS`] of
    /// `X`'s rows, a block that `self` holds in part with the rows it does not hold set to zero
    /// (each value of a block's product depends on its own row, the block's shape and `other`
    /// only); sparse operands are multiplied row by row. The partitions of a distributed
    /// SparseMI fit in basis-vector mode compute their products with the basis vectors this way.
    pub(crate) fn cross_gram_at(
        &self,
        other: &Instances,
        first_row: usize,
        n_total: usize,
    ) -> Array2<f64> {
        use rayon::prelude::*;
        let (n, q) = (self.n_rows(), other.n_rows());
        let mut out = Array2::zeros((n, q));
        if n == 0 {
            return out;
        }
        match (self.rows(), other.rows()) {
            (Rows::Sparse(x), Rows::Sparse(b)) => sparse_cross_gram(Rows::Sparse(x), b, &mut out),
            (x, Rows::Sparse(b)) => sparse_cross_gram(x, b, &mut out),
            (Rows::Sparse(x), b) => {
                // `b^T` once, row-major (`f32` values read exactly into `f64`).
                let bt = b.to_f64().t().as_standard_layout().into_owned();
                out.axis_iter_mut(ndarray::Axis(0))
                    .into_par_iter()
                    .enumerate()
                    .for_each(|(i, mut o)| {
                        let (idx, val) = x.row(i);
                        for (&j, &a) in idx.iter().zip(val) {
                            o.scaled_add(a, &bt.row(j));
                        }
                    });
            }
            (x, b) => {
                // Fixed blocks of X's rows, one sequential faer product each (in parallel):
                // every value is computed by the same operations whatever the thread count or
                // the rows held. faer's kernel is faster than ndarray's matrixmultiply on these
                // tiles. `f32` rows are read into `f64` a block at a time.
                let b = b.to_f64();
                let bt = crate::linalg::faer_ref(b.t());
                let product = |o: ArrayViewMut2<f64>, xb: ArrayView2<f64>| {
                    faer::linalg::matmul::matmul(
                        crate::linalg::faer_mut(o),
                        faer::Accum::Replace,
                        crate::linalg::faer_ref(xb),
                        bt,
                        1.0,
                        faer::Par::Seq,
                    )
                };
                // (X's rows of the block, the rows of `self` in it)
                let blocks: Vec<((usize, usize), (usize, usize))> =
                    (first_row - first_row % CROSS_GRAM_ROWS..first_row + n)
                        .step_by(CROSS_GRAM_ROWS)
                        .map(|lo| {
                            let hi = (lo + CROSS_GRAM_ROWS).min(n_total);
                            let held = (
                                lo.max(first_row) - first_row,
                                hi.min(first_row + n) - first_row,
                            );
                            ((lo, hi), held)
                        })
                        .collect();
                let mut chunks = Vec::with_capacity(blocks.len());
                let mut rest = out.view_mut();
                for &(_, (lo, hi)) in &blocks {
                    let (chunk, tail) = rest.split_at(ndarray::Axis(0), hi - lo);
                    chunks.push(chunk);
                    rest = tail;
                }
                chunks.into_par_iter().zip(blocks.into_par_iter()).for_each(
                    |(mut o, ((glo, ghi), (lo, hi)))| {
                        let xb = x.dense_block(lo, hi);
                        if hi - lo == ghi - glo {
                            product(o, xb.view());
                        } else {
                            let at = first_row + lo - glo;
                            let mut padded = Array2::zeros((ghi - glo, xb.ncols()));
                            padded.slice_mut(s![at..at + hi - lo, ..]).assign(&xb);
                            let mut full = Array2::zeros((ghi - glo, q));
                            product(full.view_mut(), padded.view());
                            o.assign(&full.slice(s![at..at + hi - lo, ..]));
                        }
                    },
                );
            }
        }
        out
    }

    /// `coef * self` (`coef.nrows() x n_features`, dense): linear combinations of the rows.
    /// Dense rows (`f64` or `f32`) are combined in fixed blocks of rows in parallel, the
    /// blocks' sums added in order (the same bits for any thread count; one block, one
    /// product, below [`COMBINE_ROWS`] rows).
    pub fn combine_rows(&self, coef: &Array2<f64>) -> Array2<f64> {
        use rayon::prelude::*;
        match self {
            Instances::Dense(_) | Instances::Dense32(_) => {
                let (rows, n) = (self.rows(), self.n_rows());
                let bounds: Vec<(usize, usize)> = (0..n)
                    .step_by(COMBINE_ROWS)
                    .map(|lo| (lo, (lo + COMBINE_ROWS).min(n)))
                    .collect();
                let partial: Vec<Array2<f64>> = bounds
                    .par_iter()
                    .map(|&(lo, hi)| coef.slice(s![.., lo..hi]).dot(&rows.dense_block(lo, hi)))
                    .collect();
                let mut parts = partial.into_iter();
                let mut out = parts
                    .next()
                    .unwrap_or_else(|| Array2::zeros((coef.nrows(), self.n_features())));
                for p in parts {
                    out += &p;
                }
                out
            }
            Instances::Sparse(x) => {
                let mut out = Array2::zeros((coef.nrows(), x.n_cols()));
                for (c, mut o) in coef.rows().into_iter().zip(out.rows_mut()) {
                    for (r, &w) in c.iter().enumerate() {
                        let (idx, val) = x.row(r);
                        for (&j, &v) in idx.iter().zip(val) {
                            o[j] += w * v;
                        }
                    }
                }
                out
            }
        }
    }

    /// The rows as a dense matrix (a copy; sparse rows are expanded).
    pub fn to_dense(&self) -> Array2<f64> {
        self.rows().to_f64().into_owned()
    }

    /// The chosen rows, in the given order, as a dense `rows.len() x n_features` matrix (a copy).
    /// A sparse row is expanded as in [`Instances::dense_row`]: its stored values are added in
    /// order into a zero row, so duplicate columns add up.
    pub fn dense_rows(&self, rows: &[usize]) -> Array2<f64> {
        let mut z = Array2::zeros((rows.len(), self.n_features()));
        for (mut zr, &r) in z.rows_mut().into_iter().zip(rows) {
            match self {
                Instances::Dense(x) => zr.iter_mut().zip(x.row(r)).for_each(|(z, &v)| *z = v),
                Instances::Dense32(x) => zr
                    .iter_mut()
                    .zip(x.row(r))
                    .for_each(|(z, &v)| *z = f64::from(v)),
                Instances::Sparse(x) => {
                    let (idx, val) = x.row(r);
                    for (&j, &v) in idx.iter().zip(val) {
                        zr[j] += v;
                    }
                }
            }
        }
        z
    }

    /// Rows `lo..hi` as a dense `(hi - lo) x n_features` matrix (a copy; sparse rows expanded as
    /// by [`Instances::dense_rows`]).
    pub fn dense_block(&self, lo: usize, hi: usize) -> Array2<f64> {
        self.rows().dense_block(lo, hi).into_owned()
    }

    /// Row `i` as a dense vector.
    pub fn dense_row(&self, i: usize) -> Vec<f64> {
        self.rows().dense_block(i, i + 1).iter().copied().collect()
    }
}

/// Rows per block of [`Instances::combine_rows`] on dense rows.
pub const COMBINE_ROWS: usize = 8192;

/// Rows per block of [`Instances::cross_gram`] on dense rows (blocks of the whole matrix's rows
/// from its first, [`Instances::cross_gram_at`]).
pub(crate) const CROSS_GRAM_ROWS: usize = 256;

/// A validated set of bags: instances plus bag offsets.
///
/// Invariants (checked by [`Bags::new`]): at least one bag, no empty bag, offsets that cover
/// every instance row exactly once, at least one feature, and only finite values.
#[derive(Debug, Clone, PartialEq)]
pub struct Bags {
    instances: Instances,
    bag_ptr: Vec<usize>,
}

impl Bags {
    /// Validates and wraps instances and bag offsets (`bag_ptr[0] = 0`,
    /// `bag_ptr[m] = n_instances`, strictly increasing).
    pub fn new(instances: Instances, bag_ptr: Vec<usize>) -> Result<Self> {
        validate_bag_ptr(&bag_ptr, instances.n_rows())?;
        if instances.n_features() == 0 {
            return Err(invalid_data("instances have no features"));
        }
        if let Some(row) = instances.rows().first_non_finite_row() {
            let bag = bag_ptr.partition_point(|&p| p <= row) - 1;
            return Err(invalid_data(format!(
                "bag {bag} has a non-finite value (NaN or infinity) in instance {}",
                row - bag_ptr[bag]
            )));
        }
        Ok(Self { instances, bag_ptr })
    }

    /// Builds dense bags from a list of per-bag matrices that share one number of columns.
    pub fn from_dense_bags(bags: &[Array2<f64>]) -> Result<Self> {
        if bags.is_empty() {
            return Err(invalid_data("no bags were given"));
        }
        let d = bags[0].ncols();
        let mut bag_ptr = vec![0];
        let mut flat = Vec::new();
        for (i, b) in bags.iter().enumerate() {
            if b.ncols() != d {
                return Err(invalid_data(format!(
                    "bag {i} has {} features, bag 0 has {d}",
                    b.ncols()
                )));
            }
            if b.nrows() == 0 {
                return Err(invalid_data(format!("bag {i} is empty")));
            }
            flat.extend(b.iter().copied());
            bag_ptr.push(bag_ptr[i] + b.nrows());
        }
        let n = bag_ptr[bags.len()];
        let x = Array2::from_shape_vec((n, d), flat).map_err(|e| invalid_data(e.to_string()))?;
        Self::new(Instances::from(x), bag_ptr)
    }

    /// The instance rows.
    pub fn instances(&self) -> &Instances {
        &self.instances
    }
    /// Bag offsets (`n_bags + 1` entries).
    pub fn bag_ptr(&self) -> &[usize] {
        &self.bag_ptr
    }
    /// Number of bags.
    pub fn n_bags(&self) -> usize {
        self.bag_ptr.len() - 1
    }
    /// Number of instances over all bags.
    pub fn n_instances(&self) -> usize {
        self.instances.n_rows()
    }
    /// Number of features of an instance.
    pub fn n_features(&self) -> usize {
        self.instances.n_features()
    }
    /// Whether the instances are stored sparse.
    pub fn is_sparse(&self) -> bool {
        matches!(self.instances, Instances::Sparse(_))
    }
    /// The instance rows of bag `i`.
    pub fn bag_range(&self, i: usize) -> std::ops::Range<usize> {
        self.bag_ptr[i]..self.bag_ptr[i + 1]
    }
    /// The bags given, in order, as a new set.
    pub fn select_bags(&self, bags: &[usize]) -> Result<Bags> {
        let mut rows = Vec::new();
        let mut bag_ptr = vec![0];
        for &b in bags {
            if b >= self.n_bags() {
                return Err(invalid_data(format!("bag index {b} out of range")));
            }
            rows.extend(self.bag_range(b));
            bag_ptr.push(rows.len());
        }
        Bags::new(self.instances.select_rows(&rows), bag_ptr)
    }
}

/// The CSR part of [`Instances::cross_gram`]: rows `x` (any kind) against CSR rows `b`, through
/// a column index of `b` (for feature `j`, the `(row, value)` pairs that use it).
fn sparse_cross_gram(x: Rows<'_>, b: &Csr, out: &mut Array2<f64>) {
    use rayon::prelude::*;
    let mut by_col: Vec<Vec<(usize, f64)>> = vec![Vec::new(); b.n_cols()];
    for r in 0..b.n_rows() {
        let (idx, val) = b.row(r);
        for (&j, &v) in idx.iter().zip(val) {
            by_col[j].push((r, v));
        }
    }
    out.axis_iter_mut(ndarray::Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(i, mut o)| {
            let add = |j: usize, a: f64| {
                for &(r, v) in &by_col[j] {
                    o[r] += a * v;
                }
            };
            x.for_each_nonzero(i, add);
        });
}

/// Checks bag offsets for `n` instance rows: at least one bag, starting at 0, ending at `n`,
/// strictly increasing (no empty bag).
pub fn validate_bag_ptr(bag_ptr: &[usize], n: usize) -> Result<()> {
    if bag_ptr.len() < 2 {
        return Err(invalid_data("no bags were given"));
    }
    if bag_ptr[0] != 0 || bag_ptr[bag_ptr.len() - 1] != n {
        return Err(invalid_data(format!(
            "bag offsets must start at 0 and end at the number of instances ({n})"
        )));
    }
    if let Some(i) = bag_ptr.windows(2).position(|w| w[1] <= w[0]) {
        return Err(invalid_data(format!("bag {i} is empty")));
    }
    Ok(())
}

/// Checks labels against bags: one class index per bag, at least two classes present.
/// Returns the number of classes (largest index + 1).
pub fn validate_labels(bags: &Bags, labels: &[usize]) -> Result<usize> {
    count_classes(labels, bags.n_bags())
}

/// [`validate_labels`] for `n_bags` bags held elsewhere (a distributed fit).
pub fn count_classes(labels: &[usize], n_bags: usize) -> Result<usize> {
    if labels.len() != n_bags {
        return Err(invalid_data(format!(
            "{} labels for {n_bags} bags",
            labels.len(),
        )));
    }
    let max = labels.iter().copied().max().unwrap_or(0);
    if max >= labels.len() {
        return Err(invalid_data(format!(
            "class index {max} is too large: class indices must be 0..n_classes, and every class needs a bag"
        )));
    }
    let n_classes = max + 1;
    let mut seen = vec![false; n_classes];
    for &l in labels {
        seen[l] = true;
    }
    if n_classes < 2 || seen.iter().filter(|&&s| s).count() < 2 {
        return Err(invalid_data(
            "the labels hold a single class; at least two are needed",
        ));
    }
    if let Some(c) = seen.iter().position(|&s| !s) {
        return Err(invalid_data(format!(
            "class index {c} has no bag; class indices must be 0..n_classes"
        )));
    }
    Ok(n_classes)
}
