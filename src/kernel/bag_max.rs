//! The bag-wise maximum of kernel values against a set of vectors,
//! `E[i, k] = max_{p in bag i} k(x_p, z_k)`: the instance-similarity embedding of MILES (Chen,
//! Bi & Wang, "MILES: Multiple-Instance Learning via Embedded Instance Selection", IEEE TPAMI
//! 28(12), 2006: the bag's similarity to a concept is its most similar instance's,
//! `s(z_k, B) = max_p exp(-gamma ||x_p - z_k||^2)`), and the per-vector max pooling of
//! `model::Pooling::XvMax`.
//!
//! The work runs over a grid of tasks, each one chunk of whole bags (about [`super::CHUNK_ROWS`]
//! rows, see `bag_chunks`) against one block of [`BLOCK_XV`] vectors: the task's inner products
//! (one sequential faer product for dense rows and vectors; index loops when either side is
//! CSR, which is never densified), then for each bag and vector the smallest squared distance
//! (Gaussian kernel: `exp` is decreasing, so the max of the kernel is `exp(-gamma d_min^2)`)
//! or the largest inner product (linear kernel). No more than one task's block of instance x
//! vector values is held at a time per thread. Every value is computed by the same operations
//! whatever the number of threads.

use ndarray::{s, Array2};
use rayon::prelude::*;

use super::{bag_chunks, Kernel};
use crate::bags::{FeatureIndex, Rows};
use crate::error::Result;
use crate::progress::Cancel;

/// Vectors per block of one task.
pub const BLOCK_XV: usize = 128;

/// `E[i, k] = max_{p in bag i} k(x_p, z_k)` (`n_bags x n_z`) for the instance rows `rows`
/// (squared norms `row_norms`) with bag offsets `bag_ptr`, and the vectors `z` (squared norms
/// `z_norms`; the same number of columns). Dense or CSR on either side. See the module docs.
///
/// The caller checks the shapes (`bag_ptr` valid for `rows`, one norm per row and per vector,
/// equal widths) and the finiteness of the values. Every task checks `cancel` before it starts;
/// once it is set, the call returns `Error::Cancelled`.
pub fn bag_max_kernel(
    kernel: Kernel,
    rows: Rows<'_>,
    row_norms: &[f64],
    bag_ptr: &[usize],
    z: Rows<'_>,
    z_norms: &[f64],
    cancel: &Cancel,
) -> Result<Array2<f64>> {
    let m = bag_ptr.len().saturating_sub(1);
    let nz = z.n_rows();
    let mut out = Array2::zeros((m, nz));
    if m == 0 || nz == 0 {
        return Ok(out);
    }
    let chunks = bag_chunks(bag_ptr);
    let blocks: Vec<(usize, usize)> = (0..nz)
        .step_by(BLOCK_XV)
        .map(|k0| (k0, (k0 + BLOCK_XV).min(nz)))
        .collect();
    // a CSR block of vectors is read through its entries grouped by feature
    let indexes: Vec<Option<FeatureIndex>> = blocks
        .iter()
        .map(|&(k0, k1)| match z {
            Rows::Sparse(zs) => Some(FeatureIndex::new(zs, k0..k1)),
            Rows::Dense(_) | Rows::Dense32(_) => None,
        })
        .collect();
    let tasks: Vec<(usize, usize)> = (0..chunks.len())
        .flat_map(|c| (0..blocks.len()).map(move |b| (c, b)))
        .collect();
    let parts: Vec<Array2<f64>> = tasks
        .par_iter()
        .map(|&(c, b)| {
            let (b0, b1) = chunks[c];
            let (k0, k1) = blocks[b];
            if cancel.is_cancelled() {
                return Array2::zeros((0, 0));
            }
            let (lo, hi) = (bag_ptr[b0], bag_ptr[b1]);
            let mut dots = Array2::zeros((hi - lo, k1 - k0));
            block_dots(rows, lo, hi, z, k0, k1, indexes[b].as_ref(), &mut dots);
            let mut part = Array2::zeros((b1 - b0, k1 - k0));
            for (bi, mut prow) in (b0..b1).zip(part.rows_mut()) {
                let (r0, r1) = (bag_ptr[bi] - lo, bag_ptr[bi + 1] - lo);
                match kernel {
                    Kernel::Rbf { gamma } => {
                        prow.fill(f64::INFINITY);
                        for r in r0..r1 {
                            let s2 = row_norms[lo + r];
                            for ((o, &d), &t) in
                                prow.iter_mut().zip(dots.row(r)).zip(&z_norms[k0..k1])
                            {
                                *o = o.min(s2 + t - 2.0 * d);
                            }
                        }
                        prow.mapv_inplace(|d2| -gamma * d2.max(0.0));
                        if let Some(p) = prow.as_slice_mut() {
                            super::exp_in_place(p);
                        }
                    }
                    Kernel::Linear => {
                        prow.fill(f64::NEG_INFINITY);
                        for r in r0..r1 {
                            for (o, &d) in prow.iter_mut().zip(dots.row(r)) {
                                *o = o.max(d);
                            }
                        }
                    }
                }
            }
            part
        })
        .collect();
    cancel.check()?;
    for (&(c, b), part) in tasks.iter().zip(parts) {
        let (b0, b1) = chunks[c];
        let (k0, k1) = blocks[b];
        out.slice_mut(s![b0..b1, k0..k1]).assign(&part);
    }
    Ok(out)
}

/// The inner products of rows `lo..hi` with vectors `k0..k1` into `out` (`(hi - lo) x (k1 -
/// k0)`); `index` is the block's [`FeatureIndex`] when `z` is CSR.
#[allow(clippy::too_many_arguments)]
fn block_dots(
    rows: Rows<'_>,
    lo: usize,
    hi: usize,
    z: Rows<'_>,
    k0: usize,
    k1: usize,
    index: Option<&FeatureIndex>,
    out: &mut Array2<f64>,
) {
    match (rows, z, index) {
        (Rows::Sparse(x), zd, _) if zd.is_dense() => {
            let zb = zd.dense_block(k0, k1);
            for (r, mut orow) in (lo..hi).zip(out.rows_mut()) {
                let (idx, val) = x.row(r);
                for (o, zrow) in orow.iter_mut().zip(zb.rows()) {
                    *o = idx.iter().zip(val).map(|(&j, &a)| a * zrow[j]).sum();
                }
            }
        }
        // dense rows and vectors (`f32` read into `f64` a block at a time)
        (x, zd, _) if x.is_dense() && zd.is_dense() => faer::linalg::matmul::matmul(
            crate::linalg::faer_mut(out.view_mut()),
            faer::Accum::Replace,
            crate::linalg::faer_ref(x.dense_block(lo, hi).view()),
            crate::linalg::faer_ref(zd.dense_block(k0, k1).t()),
            1.0,
            faer::Par::Seq,
        ),
        (_, Rows::Sparse(_), Some(index)) => {
            out.fill(0.0);
            for (r, mut orow) in (lo..hi).zip(out.rows_mut()) {
                let add = |j: usize, a: f64| {
                    let (ks, vs) = index.entries(j);
                    for (&k, &v) in ks.iter().zip(vs) {
                        orow[k] += a * v;
                    }
                };
                rows.for_each_nonzero(r, add);
            }
        }
        // unreachable: a CSR block always comes with its index, and every pair of dense kinds
        // is matched above
        _ => out.fill(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bags::Csr;
    use ndarray::array;

    fn reference(
        kernel: Kernel,
        x: &Array2<f64>,
        bag_ptr: &[usize],
        z: &Array2<f64>,
    ) -> Array2<f64> {
        let m = bag_ptr.len() - 1;
        Array2::from_shape_fn((m, z.nrows()), |(i, k)| {
            (bag_ptr[i]..bag_ptr[i + 1])
                .map(|p| {
                    let d: f64 = x
                        .row(p)
                        .iter()
                        .zip(z.row(k))
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum();
                    let dot: f64 = x.row(p).dot(&z.row(k));
                    match kernel {
                        Kernel::Rbf { gamma } => (-gamma * d).exp(),
                        Kernel::Linear => dot,
                    }
                })
                .fold(f64::NEG_INFINITY, f64::max)
        })
    }

    fn csr(x: &Array2<f64>) -> Csr {
        let (mut indptr, mut indices, mut data) = (vec![0], vec![], vec![]);
        for r in x.rows() {
            for (j, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    indices.push(j);
                    data.push(v);
                }
            }
            indptr.push(indices.len());
        }
        Csr::new(x.nrows(), x.ncols(), indptr, indices, data).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_layout_matches_the_definition() {
        let x = array![
            [0.0, 1.0, 0.0],
            [1.0, 0.5, 0.0],
            [2.0, 0.0, -1.0],
            [0.0, 0.0, 0.5],
            [-1.0, 2.0, 0.0]
        ];
        let z = array![[0.0, 1.0, 0.0], [0.0, 0.0, 3.0], [2.0, -1.0, 0.0]];
        let bag_ptr = [0, 2, 3, 5];
        let (xs, zs) = (csr(&x), csr(&z));
        let xn = Rows::Dense(x.view()).sq_norms();
        let zn = Rows::Dense(z.view()).sq_norms();
        for kernel in [Kernel::Rbf { gamma: 0.3 }, Kernel::Linear] {
            let want = reference(kernel, &x, &bag_ptr, &z);
            for (r, zz) in [
                (Rows::Dense(x.view()), Rows::Dense(z.view())),
                (Rows::Sparse(&xs), Rows::Dense(z.view())),
                (Rows::Dense(x.view()), Rows::Sparse(&zs)),
                (Rows::Sparse(&xs), Rows::Sparse(&zs)),
            ] {
                let got = bag_max_kernel(kernel, r, &xn, &bag_ptr, zz, &zn, &Cancel::default())
                    .unwrap_or_else(|e| panic!("{e}"));
                for (a, b) in got.iter().zip(&want) {
                    assert!(
                        (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                        "{kernel:?}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
