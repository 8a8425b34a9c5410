//! The normalised set kernel between two sets of bags ([`set_kernel`]) and the Gram matrix of
//! one set ([`set_kernel_gram`]), computed in blocks of instances, never `N x N`.

use ndarray::{s, Array2, Axis};
use rayon::prelude::*;

use crate::bags::{Bags, Instances};
use crate::error::{Error, Result};
use crate::kernel::{kernel_bag_means, Basis, Kernel, Rows};
use crate::progress::Cancel;
use crate::solver::{faer_mut, faer_ref};

/// Entries of one block of instance kernel values (the memory bound of [`set_kernel`]).
const BLOCK_ENTRIES: usize = 1 << 22;
/// Largest number of instances in one basis block.
const MAX_BLOCK: usize = 4096;

/// The normalised set kernel (Fu et al. 2011, Lemma 1; Gaertner et al. 2002)
/// `K[i, j] = (1 / (n_i n_j)) sum_{p in bag i of a} sum_{q in bag j of b} k(x_p, x_q)`
/// between the bags of `a` (rows) and of `b` (columns).
///
/// The instances of `b` are taken in blocks of at most `2^22 / max(N_a, d)` (and at most 4096)
/// as the basis of [`kernel_bag_means`], whose bag means over `a` are then averaged over the
/// bags of `b`: the memory is one `N_a x block` kernel block, never `N_a x N_b`. CSR instances
/// of `a` stay sparse; a block of `b` is densified (`block x d`, also bounded by the budget).
pub fn set_kernel(kernel: Kernel, a: &Bags, b: &Bags) -> Result<Array2<f64>> {
    if a.n_features() != b.n_features() {
        return Err(Error::Mismatch(format!(
            "the bags have {} features, the training bags {}",
            a.n_features(),
            b.n_features()
        )));
    }
    if kernel == Kernel::Linear {
        // Linear kernel: the set kernel is the inner product of the bag means, one product of
        // two (n_bags x n_features) matrices, sparse ones kept sparse.
        return Ok(bag_means(a)?.cross_gram(&bag_means(b)?));
    }
    let rows = Rows::from(a.instances());
    let norms = a.instances().sq_norms();
    let ptr = b.bag_ptr();
    let n_b = b.n_instances();
    let width = (BLOCK_ENTRIES / a.n_instances().max(a.n_features()).max(1)).clamp(1, MAX_BLOCK);
    let mut out = Array2::<f64>::zeros((a.n_bags(), b.n_bags()));
    let mut bag = 0;
    let mut lo = 0;
    while lo < n_b {
        let hi = (lo + width).min(n_b);
        let basis = Basis::direct(b.instances().dense_block(lo, hi));
        let (_, means) = kernel_bag_means(kernel, rows, &norms, a.bag_ptr(), &basis);
        for (t, col) in (lo..hi).zip(means.columns()) {
            while t >= ptr[bag + 1] {
                bag += 1;
            }
            let mut target = out.column_mut(bag);
            target += &col;
        }
        lo = hi;
    }
    for (j, mut col) in out.columns_mut().into_iter().enumerate() {
        col /= (ptr[j + 1] - ptr[j]) as f64;
    }
    Ok(out)
}

/// The mean instance of every bag (`n_bags x n_features`), of the same kind (dense or CSR) as
/// the instances; a CSR mean keeps the bag's entries scaled by `1/n_i` (repeated columns add up).
fn bag_means(bags: &Bags) -> Result<Instances> {
    let ptr = bags.bag_ptr();
    match bags.instances() {
        x @ (Instances::Dense(_) | Instances::Dense32(_)) => {
            let rows = x.rows();
            let mut out = Array2::zeros((bags.n_bags(), x.n_features()));
            for (i, mut row) in out.rows_mut().into_iter().enumerate() {
                if let Some(mean) = rows.dense_block(ptr[i], ptr[i + 1]).mean_axis(Axis(0)) {
                    row.assign(&mean);
                }
            }
            Ok(Instances::from(out))
        }
        Instances::Sparse(x) => {
            let mut indptr = vec![0];
            let (mut indices, mut data) = (Vec::new(), Vec::new());
            for i in 0..bags.n_bags() {
                let inv = 1.0 / (ptr[i + 1] - ptr[i]) as f64;
                for r in ptr[i]..ptr[i + 1] {
                    let (idx, val) = x.row(r);
                    indices.extend_from_slice(idx);
                    data.extend(val.iter().map(|v| v * inv));
                }
                indptr.push(data.len());
            }
            Ok(Instances::Sparse(crate::bags::Csr::new(
                bags.n_bags(),
                x.n_cols(),
                indptr,
                indices,
                data,
            )?))
        }
    }
}

/// The set-kernel Gram matrix of one set of bags ([`set_kernel`] of `bags` with itself),
/// exactly symmetric. Dense instances with the Gaussian kernel: the upper triangle only, in
/// cache-sized tiles of instance pairs (`gram_row_block`); otherwise the full product averaged
/// with its transpose.
pub fn set_kernel_gram(kernel: Kernel, bags: &Bags) -> Result<Array2<f64>> {
    set_kernel_gram_cancellable(kernel, bags, &Cancel::default())
}

/// [`set_kernel_gram`], stopping with [`crate::Error::Cancelled`] once `cancel` is set (checked
/// before each row block of the tiled path).
pub fn set_kernel_gram_cancellable(
    kernel: Kernel,
    bags: &Bags,
    cancel: &Cancel,
) -> Result<Array2<f64>> {
    let x = match (kernel, bags.instances().rows()) {
        (Kernel::Rbf { .. }, Rows::Dense(x)) if !x.is_standard_layout() => {
            let owned = x.as_standard_layout().into_owned();
            return set_kernel_gram_cancellable(
                kernel,
                &Bags::new(Instances::from(owned), bags.bag_ptr().to_vec())?,
                cancel,
            );
        }
        (Kernel::Rbf { .. }, x) if x.is_dense() => x,
        _ => {
            let k = set_kernel(kernel, bags, bags)?;
            return Ok((&k + &k.t()) * 0.5);
        }
    };
    let norms = bags.instances().sq_norms();
    let ptr = bags.bag_ptr();
    let m = bags.n_bags();
    // Row blocks of whole bags; each fills the rows of `out` of its own bags (sums over instance
    // pairs), in parallel.
    let mut blocks = Vec::new();
    let mut b0 = 0;
    for b in 0..m {
        if ptr[b + 1] - ptr[b0] >= TILE_ROWS || b + 1 == m {
            blocks.push((b0, b + 1));
            b0 = b + 1;
        }
    }
    let mut out = Array2::<f64>::zeros((m, m));
    if let Some(buf) = out.as_slice_mut() {
        let mut pieces = Vec::with_capacity(blocks.len());
        let mut rest = buf;
        for &(b0, b1) in &blocks {
            let (head, tail) = rest.split_at_mut((b1 - b0) * m);
            pieces.push(head);
            rest = tail;
        }
        pieces
            .into_par_iter()
            .zip(blocks.par_iter())
            .for_each(|(rows, &(b0, b1))| {
                if !cancel.is_cancelled() {
                    gram_row_block(kernel, x, &norms, ptr, b0, b1, rows)
                }
            });
    }
    cancel.check()?;
    for i in 0..m {
        let ni = (ptr[i + 1] - ptr[i]) as f64;
        for j in i..m {
            let nj = (ptr[j + 1] - ptr[j]) as f64;
            out[[i, j]] /= ni * nj;
        }
    }
    for i in 0..m {
        for j in 0..i {
            out[[i, j]] = out[[j, i]];
        }
    }
    Ok(out)
}

/// Instance rows per tile of `gram_row_block` (whole bags, so a tile may hold more).
const TILE_ROWS: usize = 128;
/// Instance columns per tile of `gram_row_block`.
const TILE_COLS: usize = 256;

/// Rows `b0..b1` of the unnormalised set-kernel Gram matrix, from the first of those bags'
/// columns on (the upper triangle; `rows` is `(b1 - b0) x n_bags`, row-major): for each tile of
/// `TILE_COLS` instance columns, the inner products of the block's instances with the tile's
/// (one faer product; measured 1.3x faster than matrixmultiply on these shapes here), turned into
/// kernel values and summed into `rows` by the bags of the row and
/// the column. The tile stays in cache; every sum runs in one fixed order. `x` is dense (`f32`
/// rows are read into `f64` a block at a time).
fn gram_row_block(
    kernel: Kernel,
    x: Rows<'_>,
    norms: &[f64],
    ptr: &[usize],
    b0: usize,
    b1: usize,
    rows: &mut [f64],
) {
    let m = ptr.len() - 1;
    let (r0, r1) = (ptr[b0], ptr[b1]);
    let n = x.n_rows();
    let xr = x.dense_block(r0, r1);
    let mut tile = Array2::<f64>::zeros((r1 - r0, TILE_COLS));
    let mut c0 = r0;
    // The bag of the first column of the tile.
    let mut cbag = b0;
    while c0 < n {
        let c1 = (c0 + TILE_COLS).min(n);
        let w = c1 - c0;
        let mut t = tile.slice_mut(s![.., ..w]);
        faer::linalg::matmul::matmul(
            faer_mut(t.view_mut()),
            faer::Accum::Replace,
            faer_ref(xr.view()),
            faer_ref(x.dense_block(c0, c1).t()),
            1.0,
            faer::Par::Seq,
        );
        let Some(tbuf) = tile.as_slice_mut() else {
            return; // unreachable: the tile is a fresh standard-layout array
        };
        // Kernel values of the tile's rows (row stride TILE_COLS, the first `w` columns used).
        for (r, trow) in tbuf.chunks_exact_mut(TILE_COLS).enumerate() {
            kernel.finish_rows(&mut trow[..w], &norms[r0 + r..], 0, &norms[c0..c1]);
        }
        // Sum each row's values by the bag of their column.
        let mut rbag = b0;
        for (r, trow) in (r0..r1).zip(tbuf.chunks_exact(TILE_COLS)) {
            while r >= ptr[rbag + 1] {
                rbag += 1;
            }
            let orow = &mut rows[(rbag - b0) * m..(rbag - b0 + 1) * m];
            let mut j = cbag;
            let mut c = c0;
            while c < c1 {
                let end = ptr[j + 1].min(c1);
                orow[j] += trow[c - c0..end - c0].iter().sum::<f64>();
                c = end;
                j += 1;
            }
        }
        c0 = c1;
        while cbag < m && ptr[cbag + 1] <= c0 {
            cbag += 1;
        }
    }
}
