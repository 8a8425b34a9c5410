//! The instance rows as the linear solvers' loops read them ([`RowsRef`]: one row-major slice
//! of `f64` or `f32`, or CSR) and the passes they share: `X v` row by row, `X^T u` and the sums
//! over rows in the fixed tree over bags ([`crate::tree_sum`]: the same bits for any thread count
//! and any partition of the bags), and one row's dot and scaled addition.

use rayon::prelude::*;

use crate::bags::{Csr, Instances};
use crate::linalg::Simd;
use crate::tree_sum::{partial_bags, Node};

/// Rows per parallel task of the row-by-row passes (each row on its own: any size gives the same
/// bits).
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

/// Whether four rows, in increasing order, lie next to each other in memory (then the loops
/// read them one after another, else four at a time).
///
/// Why: the CPU's stream prefetcher follows one run of addresses. A row read alone, after the
/// one before it, streams at the rate of a plain read. Four adjacent rows read side by side
/// (lane `k` of each at once) are four short runs interleaved within a few pages, which the
/// prefetcher follows badly. For rows that are apart, reading four side by side is the faster
/// way, since their misses overlap. Either way gives the same bits (`linalg::dots`: a dot is
/// the same for any grouping of rows, and four scaled additions in row order are the same as
/// one at a time). `cargo bench --bench row_reads` measures one core's rate in each pattern,
/// `benches/speed.py threads` the fits'.
#[inline]
pub(super) fn adjacent(four: &[usize]) -> bool {
    four.len() == 4 && four[0] + 3 == four[3]
}

/// `acc += sum_j u_j x_j` over the rows `lo..hi` with `u_j != 0`, one after another (four at a
/// time for dense rows that are apart, see [`adjacent`]: the same bits as one at a time);
/// whether any row had `u_j != 0`.
fn add_rows(x: RowsRef, u: &[f64], lo: usize, hi: usize, acc: &mut [f64], simd: Simd) -> bool {
    let mut read = 0;
    on_rows!(
        x,
        dense | data,
        d | {
            let mut four = [0usize; 4];
            let mut held = 0;
            for (j, &uj) in u.iter().enumerate().take(hi).skip(lo) {
                if uj != 0.0 {
                    read += 1;
                    four[held] = j;
                    held += 1;
                    if held == 4 {
                        let rows = four.map(|t| dense_row(data, d, t));
                        if adjacent(&four) {
                            for (t, row) in four.iter().zip(rows) {
                                simd.add_scaled(acc, u[*t], row);
                            }
                        } else {
                            simd.add_scaled4(acc, four.map(|t| u[t]), rows);
                        }
                        held = 0;
                    }
                }
            }
            for &j in &four[..held] {
                simd.add_scaled(acc, u[j], dense_row(data, d, j));
            }
        },
        sparse | c | {
            for (j, &uj) in u.iter().enumerate().take(hi).skip(lo) {
                if uj != 0.0 {
                    read += 1;
                    let (idx, val) = c.row(j);
                    for (&i, &xv) in idx.iter().zip(val) {
                        acc[i] += uj * xv;
                    }
                }
            }
        }
    );
    super::linear::note_rows(read);
    read > 0
}

/// The bags `[lo, hi)` of a group of rows: `ptr` has one offset per bag of the whole data set
/// (`n_bags + 1`) into the group's own rows, `0` before the group and its row count after it,
/// so that every leaf outside the group is empty.
#[derive(Clone, Copy)]
pub(super) struct Group<'a> {
    pub(super) ptr: &'a [usize],
    pub(super) lo: usize,
    pub(super) hi: usize,
}

/// `sum_j u_j x_j` over the rows with `u_j != 0`: the group's canonical nodes in the fixed tree
/// over the bags ([`crate::tree_sum`]).
pub(super) fn xt_dot_nodes(x: RowsRef, g: Group, u: &[f64], d: usize) -> Vec<Node<Vec<f64>>> {
    let simd = Simd::detect();
    let ptr = g.ptr;
    partial_bags(ptr, g.lo, g.hi, vec![0.0; d], |k, acc: &mut Vec<f64>| {
        add_rows(x, u, ptr[k], ptr[k + 1], acc, simd)
    })
}

/// [`xt_dot_nodes`] of `u` and of `v` in one pass over the rows.
pub(super) fn xt_dot_pair_nodes(
    x: RowsRef,
    g: Group,
    u: &[f64],
    v: &[f64],
    d: usize,
) -> Vec<Node<(Vec<f64>, Vec<f64>)>> {
    let simd = Simd::detect();
    pair_nodes(g, d, |lo, hi, (su, sv)| {
        let tu = add_rows(x, u, lo, hi, su, simd);
        let tv = add_rows(x, v, lo, hi, sv, simd);
        tu || tv
    })
}

/// Two sums of `d`-vectors in one pass over the group's bags: `leaf(lo, hi, sums)` adds the
/// rows `lo..hi` of a bag and says whether it added any; the group's nodes in the tree over the
/// bags.
pub(super) fn pair_nodes(
    g: Group,
    d: usize,
    leaf: impl Fn(usize, usize, &mut (Vec<f64>, Vec<f64>)) -> bool + Sync,
) -> Vec<Node<(Vec<f64>, Vec<f64>)>> {
    let ptr = g.ptr;
    partial_bags(ptr, g.lo, g.hi, (vec![0.0; d], vec![0.0; d]), |k, acc| {
        leaf(ptr[k], ptr[k + 1], acc)
    })
}

/// `sum_j u_j`: the group's canonical nodes in the fixed tree over the bags (each bag's entries
/// added in order).
pub(super) fn sum_rows_nodes(g: Group, u: &[f64]) -> Vec<Node<f64>> {
    let ptr = g.ptr;
    partial_bags(ptr, g.lo, g.hi, 0.0, |k, acc: &mut f64| {
        for &v in &u[ptr[k]..ptr[k + 1]] {
            *acc += v;
        }
        ptr[k + 1] > ptr[k]
    })
}
