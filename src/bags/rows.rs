//! [`Rows`]: borrowed instance rows, dense `f64` or `f32` or CSR, whatever owns them.

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use super::{Csr, Instances};
use crate::linalg::{all_finite, Real};

/// Rows per parallel work unit (a chunk of whole bags may be larger).
pub(crate) const CHUNK_ROWS: usize = 256;

/// Instance rows as the kernels, products and solvers see them: a borrowed view of
/// [`Instances`] or of any other rows (a basis, a block of rows).
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// Dense row-major rows.
    Dense(ArrayView2<'a, f64>),
    /// Dense rows of `f32`, read into `f64` arithmetic (exactly; see [`Real`]).
    Dense32(ArrayView2<'a, f32>),
    /// CSR rows (never densified).
    Sparse(&'a Csr),
}

impl<'a> From<&'a Instances> for Rows<'a> {
    fn from(x: &'a Instances) -> Self {
        match x {
            Instances::Dense(x) => Rows::Dense(x.view()),
            Instances::Dense32(x) => Rows::Dense32(x.view()),
            Instances::Sparse(x) => Rows::Sparse(x),
        }
    }
}

impl<'a> Rows<'a> {
    /// The same rows, borrowed for as long as `self` is (`Rows` is invariant in its lifetime:
    /// a callee that needs the rows for a shorter time than the caller has them takes these).
    pub fn reborrow(&self) -> Rows<'_> {
        match self {
            Rows::Dense(x) => Rows::Dense(x.view()),
            Rows::Dense32(x) => Rows::Dense32(x.view()),
            Rows::Sparse(x) => Rows::Sparse(x),
        }
    }

    /// Squared Euclidean norm of every row (rows in parallel, each summed as `ndarray`'s `dot`
    /// of the row with itself, in `f64` for `f32` rows too).
    pub fn sq_norms(&self) -> Vec<f64> {
        let n = self.n_rows();
        let mut out = vec![0.0; n];
        match self {
            Rows::Dense(x) => out
                .par_iter_mut()
                .with_min_len(CHUNK_ROWS)
                .enumerate()
                .for_each(|(i, o)| {
                    let r = x.row(i);
                    *o = r.dot(&r);
                }),
            Rows::Dense32(x) => out
                .par_chunks_mut(CHUNK_ROWS)
                .enumerate()
                .for_each(|(c, o)| {
                    let mut buf = Array1::zeros(x.ncols());
                    for (k, o) in o.iter_mut().enumerate() {
                        buf.iter_mut()
                            .zip(x.row(c * CHUNK_ROWS + k))
                            .for_each(|(b, &v)| *b = f64::from(v));
                        *o = buf.dot(&buf);
                    }
                }),
            Rows::Sparse(x) => out.iter_mut().enumerate().for_each(|(i, o)| {
                *o = x.row(i).1.iter().map(|v| v * v).sum();
            }),
        }
        out
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        match self {
            Rows::Dense(x) => x.nrows(),
            Rows::Dense32(x) => x.nrows(),
            Rows::Sparse(x) => x.n_rows(),
        }
    }
    /// Row dimension.
    pub fn n_cols(&self) -> usize {
        match self {
            Rows::Dense(x) => x.ncols(),
            Rows::Dense32(x) => x.ncols(),
            Rows::Sparse(x) => x.n_cols(),
        }
    }
    /// Whether the rows are stored dense (`f64` or `f32`).
    pub fn is_dense(&self) -> bool {
        !matches!(self, Rows::Sparse(_))
    }

    /// Rows `lo..hi` as a dense `f64` block: borrowed for `f64` rows, an exact copy for `f32`
    /// rows, the expanded rows (duplicate columns added) for CSR.
    pub fn dense_block(&self, lo: usize, hi: usize) -> CowArray<'a, f64, Ix2> {
        match *self {
            Rows::Dense(x) => CowArray::from(x.slice_move(s![lo..hi, ..])),
            Rows::Dense32(x) => CowArray::from(x.slice_move(s![lo..hi, ..]).mapv(f64::from)),
            Rows::Sparse(x) => {
                let mut out = Array2::zeros((hi - lo, x.n_cols()));
                for (r, mut o) in (lo..hi).zip(out.rows_mut()) {
                    let (idx, val) = x.row(r);
                    for (&j, &v) in idx.iter().zip(val) {
                        o[j] += v;
                    }
                }
                CowArray::from(out)
            }
        }
    }

    /// All rows as a dense `f64` matrix ([`Rows::dense_block`] of every row).
    pub fn to_f64(&self) -> CowArray<'a, f64, Ix2> {
        self.dense_block(0, self.n_rows())
    }

    /// The first row holding a NaN or an infinite value, if any (rows checked in parallel).
    pub fn first_non_finite_row(&self) -> Option<usize> {
        let n = self.n_rows();
        match self {
            Rows::Dense(x) => (0..n)
                .into_par_iter()
                .with_min_len(CHUNK_ROWS)
                .find_first(|&i| !row_finite(x.row(i))),
            Rows::Dense32(x) => (0..n)
                .into_par_iter()
                .with_min_len(CHUNK_ROWS)
                .find_first(|&i| !row_finite(x.row(i))),
            Rows::Sparse(x) => (0..n).find(|&i| !all_finite(x.row(i).1)),
        }
    }

    /// Calls `f(j, x_rj)` for the stored entries of row `r` in column order: every entry of a
    /// CSR row, the non-zero values of a dense row (in `f64`).
    #[inline]
    pub fn for_each_nonzero(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        match self {
            Rows::Sparse(x) => {
                let (idx, val) = x.row(r);
                idx.iter().zip(val).for_each(|(&j, &a)| f(j, a));
            }
            Rows::Dense(x) => x
                .row(r)
                .iter()
                .enumerate()
                .filter(|(_, &a)| a != 0.0)
                .for_each(|(j, &a)| f(j, a)),
            Rows::Dense32(x) => x
                .row(r)
                .iter()
                .enumerate()
                .filter(|(_, &a)| a != 0.0)
                .for_each(|(j, &a)| f(j, f64::from(a))),
        }
    }
}

/// Whether every value of a row is finite ([`all_finite`] on a contiguous row).
fn row_finite<T: Real>(row: ArrayView1<T>) -> bool {
    match row.as_slice() {
        Some(r) => all_finite(r),
        None => row.iter().all(|v| v.is_finite()),
    }
}
