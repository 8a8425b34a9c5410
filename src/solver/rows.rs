//! The instance rows as the linear solvers' loops read them ([`RowsRef`]: one row-major slice
//! of `f64` or `f32`, or CSR) and the passes they share: `X v` and `X^T u` over fixed blocks of
//! rows (the same bits for any thread count), and one row's dot and scaled addition.

use rayon::prelude::*;

use crate::bags::{Csr, Instances};
use crate::kernel::{Real, Simd};

/// Rows per block of `X^T u` (fixed: the partial sums and their order do not depend on the
/// number of threads).
pub(super) const BLOCK_ROWS: usize = 2048;

/// The instance rows as the loops read them: one row-major slice (`f64` or `f32`), or CSR.
#[derive(Clone, Copy)]
pub(super) enum RowsRef<'a> {
    Dense { data: &'a [f64], d: usize },
    Dense32 { data: &'a [f32], d: usize },
    Sparse(&'a Csr),
}

/// Row `j` of a dense row-major matrix of `d` columns.
#[inline]
pub(super) fn dense_row<T>(data: &[T], d: usize, j: usize) -> &[T] {
    &data[j * d..(j + 1) * d]
}

/// `match` on a [`RowsRef`] with one body for both dense element types (`$data: &[T]` with
/// `T: Real`, `$d` its row length) and one for CSR (`$c`).
macro_rules! on_rows {
    ($x:expr, dense |$data:ident, $d:ident| $dense:expr, sparse |$c:ident| $sparse:expr) => {
        match $x {
            RowsRef::Dense { data: $data, d: $d } => $dense,
            RowsRef::Dense32 { data: $data, d: $d } => $dense,
            RowsRef::Sparse($c) => $sparse,
        }
    };
}

/// `out_j = x_j . v` for every row (in parallel, each row on its own: thread-count independent).
pub(super) fn x_dot(x: RowsRef, v: &[f64], simd: Simd, out: &mut [f64]) {
    on_rows!(
        x,
        dense | data,
        d | {
            out.par_chunks_mut(BLOCK_ROWS)
                .enumerate()
                .for_each(|(blk, o)| {
                    let lo = blk * BLOCK_ROWS;
                    for (k, oj) in o.iter_mut().enumerate() {
                        let j = lo + k;
                        *oj = simd.dot(dense_row(data, d, j), v);
                    }
                });
        },
        sparse | c | {
            out.par_chunks_mut(BLOCK_ROWS)
                .enumerate()
                .for_each(|(blk, o)| {
                    let lo = blk * BLOCK_ROWS;
                    for (k, oj) in o.iter_mut().enumerate() {
                        let (idx, val) = c.row(lo + k);
                        *oj = idx.iter().zip(val).map(|(&i, &x)| x * v[i]).sum();
                    }
                });
        }
    )
}

/// Moves `on_rows!` into the modules of the solver.
pub(super) use on_rows;

impl<'a> RowsRef<'a> {
    /// The rows of `x`; a dense `f64` matrix not in row-major order is copied into `copy`.
    pub(super) fn new(x: &'a Instances, copy: &'a mut Vec<f64>) -> Self {
        let d = x.n_features();
        match x {
            Instances::Dense(a) => RowsRef::Dense {
                data: match a.as_slice() {
                    Some(data) => data,
                    None => {
                        *copy = a.iter().copied().collect();
                        copy
                    }
                },
                d,
            },
            Instances::Dense32(a) => RowsRef::Dense32 {
                data: a.as_slice(),
                d,
            },
            Instances::Sparse(c) => RowsRef::Sparse(c),
        }
    }

    /// `x_j . v`.
    #[inline]
    pub(super) fn row_dot(&self, j: usize, v: &[f64], simd: Simd) -> f64 {
        on_rows!(
            *self,
            dense | data,
            d | simd.dot(dense_row(data, d, j), v),
            sparse | c | {
                let (idx, val) = c.row(j);
                idx.iter().zip(val).map(|(&i, &x)| x * v[i]).sum()
            }
        )
    }

    /// `acc += a x_j`.
    #[inline]
    pub(super) fn add_row(&self, j: usize, a: f64, acc: &mut [f64]) {
        on_rows!(
            *self,
            dense | data,
            d | {
                for (s, &xv) in acc.iter_mut().zip(dense_row(data, d, j)) {
                    *s += a * xv.to_f64();
                }
            },
            sparse | c | {
                let (idx, val) = c.row(j);
                for (&i, &xv) in idx.iter().zip(val) {
                    acc[i] += a * xv;
                }
            }
        )
    }
}

/// `sum_j u_j x_j` over the rows with `u_j != 0`: a partial sum per block of rows, the blocks
/// added in order.
pub(super) fn xt_dot(x: RowsRef, u: &[f64], d: usize) -> Vec<f64> {
    let n = u.len();
    let partial: Vec<Option<Vec<f64>>> = (0..n.div_ceil(BLOCK_ROWS))
        .into_par_iter()
        .map(|blk| {
            let (lo, hi) = (blk * BLOCK_ROWS, ((blk + 1) * BLOCK_ROWS).min(n));
            if u[lo..hi].iter().all(|&v| v == 0.0) {
                return None;
            }
            let mut acc = vec![0.0; d];
            on_rows!(
                x,
                dense | data,
                d | {
                    for (j, &uj) in u.iter().enumerate().take(hi).skip(lo) {
                        if uj != 0.0 {
                            for (s, &xv) in acc.iter_mut().zip(dense_row(data, d, j)) {
                                *s += uj * xv.to_f64();
                            }
                        }
                    }
                },
                sparse | c | {
                    for (j, &uj) in u.iter().enumerate().take(hi).skip(lo) {
                        if uj != 0.0 {
                            let (idx, val) = c.row(j);
                            for (&i, &xv) in idx.iter().zip(val) {
                                acc[i] += uj * xv;
                            }
                        }
                    }
                }
            );
            Some(acc)
        })
        .collect();
    let mut out = vec![0.0; d];
    for acc in partial.into_iter().flatten() {
        for (o, v) in out.iter_mut().zip(acc) {
            *o += v;
        }
    }
    out
}
