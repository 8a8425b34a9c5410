//! The instance rows as the linear solvers' loops read them ([`RowsRef`]: one row-major slice
//! of `f64` or `f32`, or CSR) and the passes they share: `X v` and `X^T u` over fixed blocks of
//! rows (the same bits for any thread count), and one row's dot and scaled addition.

use rayon::prelude::*;

use crate::bags::{Csr, Instances};
use crate::kernel::Simd;

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
    /// The rows of `x` (dense rows are always row-major).
    pub(super) fn new(x: &'a Instances) -> Self {
        let d = x.n_features();
        match x {
            Instances::Dense(a) => RowsRef::Dense {
                data: a.as_slice(),
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
    pub(super) fn add_row(&self, j: usize, a: f64, acc: &mut [f64], simd: Simd) {
        on_rows!(
            *self,
            dense | data,
            d | simd.add_scaled(acc, a, dense_row(data, d, j)),
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
    let simd = Simd::detect();
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
                    // the rows with u_j != 0, four at a time (the same bits as one at a time)
                    let mut four = [0usize; 4];
                    let mut held = 0;
                    for (j, &uj) in u.iter().enumerate().take(hi).skip(lo) {
                        if uj != 0.0 {
                            four[held] = j;
                            held += 1;
                            if held == 4 {
                                let rows = four.map(|t| dense_row(data, d, t));
                                simd.add_scaled4(&mut acc, four.map(|t| u[t]), rows);
                                held = 0;
                            }
                        }
                    }
                    for &j in &four[..held] {
                        simd.add_scaled(&mut acc, u[j], dense_row(data, d, j));
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

/// [`xt_dot`] of `u` and of `v` (the same bits each) in one pass over the rows.
pub(super) fn xt_dot_pair(x: RowsRef, u: &[f64], v: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = u.len().min(v.len());
    let simd = Simd::detect();
    type Partial = (Option<Vec<f64>>, Option<Vec<f64>>);
    let partial: Vec<Partial> = (0..n.div_ceil(BLOCK_ROWS))
        .into_par_iter()
        .map(|blk| {
            let (lo, hi) = (blk * BLOCK_ROWS, ((blk + 1) * BLOCK_ROWS).min(n));
            let used = |w: &[f64]| w[lo..hi].iter().any(|&t| t != 0.0);
            let (mut au, mut av) = (used(u).then(|| vec![0.0; d]), used(v).then(|| vec![0.0; d]));
            for j in lo..hi {
                for (acc, w) in [(&mut au, u), (&mut av, v)] {
                    if let Some(acc) = acc.as_mut() {
                        if w[j] != 0.0 {
                            x.add_row(j, w[j], acc, simd);
                        }
                    }
                }
            }
            (au, av)
        })
        .collect();
    let (mut out_u, mut out_v) = (vec![0.0; d], vec![0.0; d]);
    for (au, av) in partial {
        for (out, acc) in [(&mut out_u, au), (&mut out_v, av)] {
            for (o, t) in out.iter_mut().zip(acc.into_iter().flatten()) {
                *o += t;
            }
        }
    }
    (out_u, out_v)
}
