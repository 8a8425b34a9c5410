//! The whole kernel matrix of a small instance set, computed at once ([`full_kernel`]) and
//! kept by [`InstanceGram`](super::InstanceGram) for every solve on it.
//!
//! A dual solver on a few thousand instances ends up asking for most kernel rows: SIL, miSVM
//! and MI-SVM computed 72-92 % of the rows of MUSK1 and Elephant (one fold, `C = 10`), sMIL
//! 47-63 % of its units'. Row by row, the inner products run at the speed of a matrix-vector
//! product (about 10 G multiply-adds/s on this crate's reference machine); the whole matrix is
//! one matrix product, half of it by symmetry, at several times that speed. The annealing family,
//! SVM-CC and the one-class MI-SVM solve many problems on one instance kernel, which then costs
//! one product for all of them.

use ndarray::{s, ArrayViewMut2};
use rayon::prelude::*;

use crate::kernel::{Kernel, Rows};
use crate::solver::{faer_mut, faer_ref};

/// Rows of one block product of [`full_kernel`] for `n` points: a function of `n` alone, so
/// that every value is computed by the same operations whatever the thread count.
///
/// Only the upper triangle's blocks are computed, so smaller blocks skip more of the lower
/// triangle, at some loss of speed per product. faer's products of these shapes (one thread,
/// this crate's reference machine, session 33): with 64-row blocks, 185 us for 180 points of
/// 460 features (256 us with one 180-row block), 409 us for 476 x 166 (489 us with 256-row
/// blocks), 3.80 ms for 1,250 x 230 (3.98 ms); from about 2,000 points on, 128-row blocks are
/// the faster (15.5 ms for 2,500 x 230, against 16.0 ms).
fn block_rows(n: usize) -> usize {
    if n <= 1536 {
        64
    } else {
        128
    }
}
/// Tile edge of the transposed copy that fills the lower triangle.
const TILE: usize = 64;

/// The kernel matrix of the dense rows `rows` (`n x n`, row-major), exactly symmetric, with the
/// diagonal `diag`: the inner products of the upper triangle, block row by block row (each
/// block `X_I [X_I; X_J..]^T` one sequential product, the blocks in parallel), turned into
/// kernel values with the squared norms `sq_norms` ([`Kernel::finish_rows`]), then copied to
/// the lower triangle. The same bits for any thread count.
///
/// `rows` must be dense (CSR rows would be densified a block at a time).
pub(crate) fn full_kernel(
    kernel: Kernel,
    rows: Rows<'_>,
    sq_norms: &[f64],
    diag: &[f64],
) -> Vec<f64> {
    let n = rows.n_rows();
    let mut k = vec![0.0; n * n];
    if n == 0 {
        return k;
    }
    prefault(&mut k);
    let block = block_rows(n);
    k.par_chunks_mut(block * n)
        .enumerate()
        .for_each(|(b, chunk)| {
            let lo = b * block;
            let hi = (lo + block).min(n);
            let xi = rows.dense_block(lo, hi);
            let xj = rows.dense_block(lo, n);
            let Ok(mut dst) = ArrayViewMut2::from_shape((hi - lo, n), chunk) else {
                return; // the chunk is `(hi - lo) x n` by construction
            };
            faer::linalg::matmul::matmul(
                faer_mut(dst.slice_mut(s![.., lo..])),
                faer::Accum::Replace,
                faer_ref(xi.view()),
                faer_ref(xj.t()),
                1.0,
                faer::Par::Seq,
            );
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
/// write. A page fault costs about 2 us on this crate's reference machine (a virtual machine):
/// for the 12.8 MB matrix of Elephant's 1,264 instances, 3,125 faults, against a fit of about
/// 30 ms. Elsewhere, or on a kernel without these calls (before Linux 5.14), nothing is done,
/// and the pages are mapped at their first write.
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
