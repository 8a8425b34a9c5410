//! The whole kernel matrix of a small instance set, computed at once ([`full_kernel`]) and
//! kept by [`InstanceGram`](super::InstanceGram) for every solve on it.
//!
//! A dual solver on a few thousand instances ends up asking for most kernel rows: SIL, miSVM
//! and MI-SVM computed 72-92 % of the rows of MUSK1 and Elephant (one fold, `C = 10`), sMIL
//! 47-63 % of its units'. Row by row, the inner products run at the speed of a matrix-vector
//! product; the whole matrix is one matrix product, half of it by symmetry, at several times
//! that speed (measured by `benches/gram_blocks.rs`). The annealing family,
//! SVM-CC and the one-class MI-SVM solve many problems on one instance kernel, which then costs
//! one product for all of them.

use ndarray::{s, ArrayViewMut2};
use rayon::prelude::*;

use crate::bags::Rows;
use crate::kernel::{without_constant_features, Kernel};
use crate::linalg::{faer_mut, faer_ref};

/// Rows of one block product of [`full_kernel`] for `n` points: a function of `n` alone, so
/// that every value is computed by the same operations whatever the thread count. The height
/// does not change faer's sums over the features either: from 2 rows up, every height gives
/// the same bits (a unit test checks it).
///
/// Only the upper triangle's blocks are computed, so smaller blocks skip more of the lower
/// triangle, at some loss of speed per product: 32-row blocks are the fastest below 128
/// points, 64-row blocks up to about a thousand points, 128-row blocks from there on. The
/// heights were chosen by `benches/gram_blocks.rs`, which times each height on the shapes of
/// STK's statistic vectors and of MUSK1's and Elephant's instances.
fn block_rows(n: usize) -> usize {
    if n < 128 {
        32
    } else if n < 1024 {
        64
    } else {
        128
    }
}

/// Tile edge of the transposed copy that fills the lower triangle.
const TILE: usize = 64;

/// Columns of one product of [`full_kernel`]: a block row is multiplied by the rows of `X` in
/// chunks of this many (a last chunk of fewer than [`MIN_CHUNK`] joins the one before), so
/// that faer's packed copy of them (kept in a buffer per thread, whose pages are mapped at
/// their first write) is as large for 83 points as for 83,000. A process's first product on
/// more points than its earlier ones otherwise maps new pages of that buffer, and those page
/// faults cost more than the chunking does. The values are the same bits (a unit test checks
/// it); `benches/gram_blocks.rs` measures a process's first products with and without chunks
/// (page faults and time) and the steady time of both.
const CHUNK: usize = 64;
/// The narrowest chunk of [`CHUNK`]'s split (one column would be a matrix-vector product).
const MIN_CHUNK: usize = 8;

/// The column chunks `[c0, c1)` of `lo..n` ([`CHUNK`]).
fn chunks(lo: usize, n: usize) -> impl Iterator<Item = (usize, usize)> {
    (lo..n).step_by(CHUNK).filter_map(move |c0| {
        let c1 = (c0 + CHUNK).min(n);
        if c0 > lo && c1 - c0 < MIN_CHUNK {
            return None; // joined to the chunk before
        }
        Some((c0, if n - c1 < MIN_CHUNK { n } else { c1 }))
    })
}

/// The kernel matrix of the dense rows `rows` (`n x n`, row-major), exactly symmetric, with the
/// diagonal `diag`: the inner products of the upper triangle, block row by block row (each
/// block `X_I [X_I; X_J..]^T` one sequential product, the blocks in parallel), turned into
/// kernel values with the squared norms `sq_norms` ([`Kernel::finish_rows`]), then copied to
/// the lower triangle. The same bits for any thread count. With the Gaussian kernel, features
/// constant over the rows are left out of the products and the norms
/// ([`without_constant_features`]; `sq_norms` are then those of the other features).
///
/// `rows` must be dense (CSR rows would be densified a block at a time).
pub(crate) fn full_kernel(
    kernel: Kernel,
    rows: Rows<'_>,
    sq_norms: &[f64],
    diag: &[f64],
) -> Vec<f64> {
    let block = block_rows(rows.n_rows());
    // features constant over the rows add nothing to a distance between two of them
    match without_constant_features(kernel, rows) {
        Some(reduced) => {
            let rows = reduced.rows();
            blocked_kernel(kernel, rows, &rows.sq_norms(), diag, block)
        }
        None => blocked_kernel(kernel, rows, sq_norms, diag, block),
    }
}

/// [`full_kernel`] by row blocks of `block` rows.
fn blocked_kernel(
    kernel: Kernel,
    rows: Rows<'_>,
    sq_norms: &[f64],
    diag: &[f64],
    block: usize,
) -> Vec<f64> {
    let n = rows.n_rows();
    let mut k = vec![0.0; n * n];
    if n == 0 {
        return k;
    }
    prefault(&mut k);
    let block = block.max(1);
    k.par_chunks_mut(block * n)
        .enumerate()
        .for_each(|(b, chunk)| {
            let lo = b * block;
            let hi = (lo + block).min(n);
            let xi = rows.dense_block(lo, hi);
            let Ok(mut dst) = ArrayViewMut2::from_shape((hi - lo, n), chunk) else {
                return; // the chunk is `(hi - lo) x n` by construction
            };
            for (c0, c1) in chunks(lo, n) {
                faer::linalg::matmul::matmul(
                    faer_mut(dst.slice_mut(s![.., c0..c1])),
                    faer::Accum::Replace,
                    faer_ref(xi.view()),
                    faer_ref(rows.dense_block(c0, c1).t()),
                    1.0,
                    faer::Par::Seq,
                );
            }
            for (i, row) in (lo..).zip(chunk.chunks_exact_mut(n)) {
                kernel.finish_rows(&mut row[lo..], sq_norms, i, &sq_norms[lo..]);
            }
        });
    // the strict lower triangle from the upper one, tile by tile
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0..(j0 + TILE).min(i) {
                    k[i * n + j] = k[j * n + i];
                }
            }
        }
    }
    for (i, &d) in diag.iter().enumerate().take(n) {
        k[i * n + i] = d;
    }
    k
}

/// Buffers from this size on are mapped in one call ([`prefault`]).
const PREFAULT_MIN_BYTES: usize = 256 << 10;
/// From this size on, a buffer asks for transparent huge pages.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Maps the pages of a fresh zeroed buffer in one call (Linux: `MADV_POPULATE_WRITE`, and
/// `MADV_HUGEPAGE` first from 2 MiB on), instead of one page fault per page at its first
/// write: the 12.8 MB matrix of Elephant's 1,264 instances is 3,125 pages, and on a virtual
/// machine each fault is costly against the fit (measured in the peers' first fits,
/// `benches/bench_peers.py`). Elsewhere, or on a kernel without these calls (before Linux
/// 5.14), nothing is done, and the pages are mapped at their first write.
fn prefault(buf: &mut [f64]) {
    #[cfg(target_os = "linux")]
    {
        let bytes = std::mem::size_of_val(buf);
        if bytes < PREFAULT_MIN_BYTES {
            return;
        }
        // SAFETY: `sysconf` has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(1);
        let start = buf.as_mut_ptr() as usize;
        let lo = start.next_multiple_of(page);
        let hi = (start + bytes) / page * page;
        if hi <= lo {
            return;
        }
        let ptr = lo as *mut libc::c_void;
        // SAFETY: `[lo, hi)` lies inside `buf`, which this function borrows mutably. Neither
        // advice changes the values (zero) or the protection of the memory: one backs it with
        // huge pages where it can, the other maps its pages now as a write would. A kernel that
        // does not know them returns an error, which is ignored (the pages are then mapped at
        // their first write, as without these calls).
        unsafe {
            if bytes >= HUGE_PAGE_BYTES {
                libc::madvise(ptr, hi - lo, libc::MADV_HUGEPAGE);
            }
            libc::madvise(ptr, hi - lo, libc::MADV_POPULATE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// The kernel matrix of `x` from one faer product of all its rows, without blocks or
    /// chunks: what [`blocked_kernel`] must give bit for bit.
    fn one_product(kernel: Kernel, x: &Array2<f64>, sq: &[f64], diag: &[f64]) -> Vec<f64> {
        let n = x.nrows();
        let mut k = Array2::<f64>::zeros((n, n));
        faer::linalg::matmul::matmul(
            faer_mut(k.view_mut()),
            faer::Accum::Replace,
            faer_ref(x.view()),
            faer_ref(x.t()),
            1.0,
            faer::Par::Seq,
        );
        let mut k = k.into_raw_vec_and_offset().0;
        for (i, row) in k.chunks_exact_mut(n).enumerate() {
            kernel.finish_rows(row, sq, i, sq);
            row[i] = diag[i];
        }
        k
    }

    /// Neither the block height nor the column chunks change a value or the symmetry: every
    /// height from 2 rows up, with chunks of [`CHUNK`] columns (and a last chunk that a
    /// remainder narrower than [`MIN_CHUNK`] joins), gives the bits of one product of all the
    /// rows, which are the kernel of the rows' own inner products to rounding.
    #[test]
    fn every_block_height_and_chunk_give_the_same_bits() {
        let d = 37;
        // 300: chunks of 64 and a last one of 44; 65, 129, 199: remainders of 1 and 7 joined
        for n in [300, 65, 129, 199] {
            let x = Array2::from_shape_fn((n, d), |(i, j)| {
                ((i * 7919 + j * 104_729) % 1009) as f64 / 250.0 - 2.0
            });
            let sq: Vec<f64> = x.rows().into_iter().map(|r| r.dot(&r)).collect();
            for kernel in [Kernel::Linear, Kernel::Rbf { gamma: 0.05 }] {
                let diag: Vec<f64> = sq.iter().map(|&s| kernel.from_dot(s, s, s)).collect();
                let one = one_product(kernel, &x, &sq, &diag);
                // block_rows's heights, and others down to 2 (a last block of 1 row with
                // n - 1); blocks of one row each would be matrix-vector products, summed
                // otherwise
                for block in [n, 128, 64, 32, 17, 8, 2, n - 1] {
                    let k = blocked_kernel(kernel, Rows::Dense(x.view()), &sq, &diag, block);
                    for i in 0..n {
                        for j in i..n {
                            let (a, b) = (k[i * n + j], one[i * n + j]);
                            assert_eq!(
                                a.to_bits(),
                                b.to_bits(),
                                "{kernel:?} n {n} block {block}: ({i}, {j})"
                            );
                            assert_eq!(a.to_bits(), k[j * n + i].to_bits());
                        }
                    }
                }
                for i in 0..n {
                    for j in 0..n {
                        let dot = x.row(i).dot(&x.row(j));
                        let want = kernel.from_dot(dot, sq[i], sq[j]);
                        assert!((one[i * n + j] - want).abs() <= 1e-12 * want.abs().max(1.0));
                    }
                }
            }
        }
    }

    /// With the Gaussian kernel, features constant over the rows change no bit of the matrix
    /// (it is that of the other features, their own norms given or not); the linear kernel
    /// keeps every feature (a constant one adds to every product).
    #[test]
    fn constant_features_change_no_bit_of_the_gaussian_matrix() {
        let n = 90;
        let narrow = Array2::from_shape_fn((n, 9), |(i, j)| {
            ((i * 7919 + j * 104_729) % 1009) as f64 / 250.0 - 2.0
        });
        let mut wide = Array2::<f64>::from_elem((n, 12), 2.5);
        wide.column_mut(4).fill(0.0);
        for (k, j) in [0, 1, 2, 3, 5, 6, 7, 8, 10].into_iter().enumerate() {
            wide.column_mut(j).assign(&narrow.column(k));
        }
        let norms =
            |x: &Array2<f64>| -> Vec<f64> { x.rows().into_iter().map(|r| r.dot(&r)).collect() };
        let (sq_n, sq_w) = (norms(&narrow), norms(&wide));
        let gaussian = Kernel::Rbf { gamma: 0.05 };
        let diag = vec![1.0; n];
        let want = full_kernel(gaussian, Rows::Dense(narrow.view()), &sq_n, &diag);
        let got = full_kernel(gaussian, Rows::Dense(wide.view()), &sq_w, &diag);
        assert!(want
            .iter()
            .zip(&got)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        let linear = full_kernel(Kernel::Linear, Rows::Dense(wide.view()), &sq_w, &sq_w);
        let dot = wide.dot(&wide.t());
        assert!(linear
            .iter()
            .zip(&dot)
            .all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs().max(1.0)));
    }

    /// The chunks cover `lo..n` in order, each at most [`CHUNK`] + [`MIN_CHUNK`] - 1 and at
    /// least [`MIN_CHUNK`] columns wide (or all of `lo..n` when it is narrower).
    #[test]
    fn chunks_cover_the_columns() {
        for n in 1..300 {
            for lo in [0, 1, 63, 64, 130].into_iter().filter(|&lo| lo < n) {
                let c: Vec<_> = chunks(lo, n).collect();
                assert_eq!(c.first().map(|c| c.0), Some(lo));
                assert_eq!(c.last().map(|c| c.1), Some(n));
                for w in c.windows(2) {
                    assert_eq!(w[0].1, w[1].0);
                }
                for &(c0, c1) in &c {
                    assert!(c1 - c0 < CHUNK + MIN_CHUNK);
                    assert!(c1 - c0 >= MIN_CHUNK.min(n - lo), "n {n} lo {lo}: {c:?}");
                }
            }
        }
    }
}
