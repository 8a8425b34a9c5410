//! The normalised set kernel between two sets of bags ([`set_kernel`]) and the Gram matrix of
//! one set ([`set_kernel_gram`]), computed in blocks of instances, never `N x N`.

use ndarray::{s, Array2, Axis};
use rayon::prelude::*;

use crate::bags::{Bags, Instances, Rows};
use crate::error::{Error, Result};
use crate::kernel::{kernel_bag_means, without_constant_features, Basis, Kernel};
use crate::linalg::{faer_mut, faer_ref};
use crate::progress::Cancel;

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
/// cache-sized tiles of instance pairs (`gram_row_block`), on the features that vary over the
/// instances (a feature constant over them adds nothing to a distance between two of them;
/// Elephant has 120 of 230, and its NSK fits in `benches/bench_peers.py` measure the saving);
/// otherwise the full product averaged with its transpose.
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
    tiled_gram(kernel, bags, cancel, SUB_ROWS)
}

/// [`set_kernel_gram_cancellable`] with sub-blocks of at least `sub_rows` rows
/// ([`sub_blocks`]; `usize::MAX`: each row block whole).
fn tiled_gram(
    kernel: Kernel,
    bags: &Bags,
    cancel: &Cancel,
    sub_rows: usize,
) -> Result<Array2<f64>> {
    let x = match (kernel, bags.instances().rows()) {
        (Kernel::Rbf { .. }, x) if x.is_dense() => x,
        _ => {
            let k = set_kernel(kernel, bags, bags)?;
            return Ok((&k + &k.t()) * 0.5);
        }
    };
    // Features constant over the instances add nothing to their distances: the products run
    // on the others (a row-major copy of those; a copy in row-major order too if `x` is not).
    let reduced = match (without_constant_features(kernel, x), x) {
        (Some(reduced), _) => Some(reduced),
        (None, Rows::Dense(v)) if !v.is_standard_layout() => {
            Some(Instances::from(v.as_standard_layout().into_owned()))
        }
        (None, _) => None,
    };
    let x = reduced.as_ref().map_or(x, Instances::rows);
    let norms = x.sq_norms();
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
                    gram_row_block(kernel, x, &norms, ptr, (b0, b1, sub_rows), rows)
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
/// Rows of a sub-block (whole bags; see [`sub_blocks`]) where a tile meets its block's own
/// rows.
const SUB_ROWS: usize = 32;
/// The narrowest product of a sub-block: a sub-block that needs fewer of a tile's columns
/// computes this many (the extra ones unused), since a product of one column is a
/// matrix-vector product, whose sums run in another order.
const MIN_WIDTH: usize = 8;

/// The first column of a sub-block's product in the tile `c0..c1`: the first one it needs,
/// `need` (the first of its own), moved left to make the product [`MIN_WIDTH`] wide if the
/// tile allows.
fn first_column(need: usize, c0: usize, c1: usize) -> usize {
    need.min(c1.saturating_sub(MIN_WIDTH)).max(c0)
}

/// Whether the product of the sub-block rows `s0..s1` with the columns it needs in the tile
/// `c0..c1` (`d` features) is one of faer's general products, whose value for a pair of
/// instances is the same bits whatever the shape (a unit test checks it): two rows and two
/// columns or more, and more than `16^3` multiply-adds (smaller ones go to `nano-gemm`, and
/// one row or column to a matrix-vector product, each summing in another order). A sub-block
/// that needs none of the tile's columns has no product.
fn full_sized(s0: usize, s1: usize, c0: usize, c1: usize, d: usize) -> bool {
    let need = s0.max(c0);
    if need >= c1 {
        return true;
    }
    let (h, w) = (s1 - s0, c1 - first_column(need, c0, c1));
    h >= 2 && w >= 2 && h * w * d > 16 * 16 * 16
}

/// The sub-blocks of the bags `b0..b1`: `(first bag, first row, end row)` each, whole bags of
/// at least `min_rows` rows in order, the last one possibly smaller but never a single row
/// unless the bags hold only one.
fn sub_blocks(ptr: &[usize], b0: usize, b1: usize, min_rows: usize) -> Vec<(usize, usize, usize)> {
    let mut subs: Vec<(usize, usize, usize)> = Vec::new();
    let mut first = b0;
    for b in b0..b1 {
        if ptr[b + 1] - ptr[first] >= min_rows || b + 1 == b1 {
            subs.push((first, ptr[first], ptr[b + 1]));
            first = b + 1;
        }
    }
    if let [.., prev, last] = subs.as_mut_slice() {
        if last.2 - last.1 < 2 {
            prev.2 = last.2;
            subs.pop();
        }
    }
    subs
}

/// Rows `b0..b1` of the unnormalised set-kernel Gram matrix, from the first of those bags'
/// columns on (the upper triangle; `rows` is `(b1 - b0) x n_bags`, row-major): for each tile of
/// `TILE_COLS` instance columns, the inner products of the block's instances with the tile's
/// (faer products, faster than matrixmultiply on these shapes), turned into
/// kernel values and summed into `rows` by the bags of the row and the column. Where a tile
/// meets the block's own rows, each sub-block of at least `sub_rows` rows ([`sub_blocks`])
/// starts at its own first column, so that most pairs below the diagonal there, which the
/// symmetric copy overwrites, are not computed (NSK's fits in `benches/bench_peers.py`
/// measure it). The tile stays in cache; every sum runs in one
/// fixed order, the same whatever the sub-blocks (a unit test checks the bits). `x` is dense
/// (`f32` rows are read into `f64` a block at a time).
fn gram_row_block(
    kernel: Kernel,
    x: Rows<'_>,
    norms: &[f64],
    ptr: &[usize],
    (b0, b1, sub_rows): (usize, usize, usize),
    rows: &mut [f64],
) {
    let (r0, r1) = (ptr[b0], ptr[b1]);
    let (n, d) = (x.n_rows(), x.n_cols());
    let xr = x.dense_block(r0, r1);
    let mut tile = Array2::<f64>::zeros((r1 - r0, TILE_COLS));
    let whole = [(b0, r0, r1)];
    let subs = sub_blocks(ptr, b0, b1, sub_rows);
    let mut c0 = r0;
    // The bag of the first column of the tile.
    let mut cbag = b0;
    while c0 < n {
        let c1 = (c0 + TILE_COLS).min(n);
        let xc = x.dense_block(c0, c1);
        // past the block's own rows (or where a sub-block's product would be small), one
        // product for the whole block
        let split = c0 < r1
            && subs
                .iter()
                .all(|&(_, s0, s1)| full_sized(s0, s1, c0, c1, d));
        let parts: &[(usize, usize, usize)] = if split { &subs } else { &whole };
        for &(sb, s0, s1) in parts {
            let need = s0.max(c0);
            if need >= c1 {
                continue;
            }
            let cs = first_column(need, c0, c1);
            let mut t = tile.slice_mut(s![s0 - r0..s1 - r0, cs - c0..c1 - c0]);
            faer::linalg::matmul::matmul(
                faer_mut(t.view_mut()),
                faer::Accum::Replace,
                faer_ref(xr.slice(s![s0 - r0..s1 - r0, ..])),
                faer_ref(xc.slice(s![cs - c0.., ..]).t()),
                1.0,
                faer::Par::Seq,
            );
            let jbag = if need == c0 { cbag } else { sb };
            sum_by_bags(
                kernel,
                &mut tile,
                (s0, s1),
                (cs, need, c0, c1),
                norms,
                ptr,
                (b0, jbag),
                rows,
            );
        }
        c0 = c1;
        while cbag + 1 < ptr.len() && ptr[cbag + 1] <= c0 {
            cbag += 1;
        }
    }
}

/// The kernel values of the products in `tile` of the rows `s0..s1` with the columns
/// `cs..c1` (the tile's column 0 is `c0`), summed into `rows` (the Gram rows of the bags from
/// `b0` on) by the bag of the row and of the column, from column `need` (the first column of
/// bag `jbag`, or the tile's first) on.
#[allow(clippy::too_many_arguments)]
fn sum_by_bags(
    kernel: Kernel,
    tile: &mut Array2<f64>,
    (s0, s1): (usize, usize),
    (cs, need, c0, c1): (usize, usize, usize, usize),
    norms: &[f64],
    ptr: &[usize],
    (b0, jbag): (usize, usize),
    rows: &mut [f64],
) {
    let m = ptr.len() - 1;
    let r0 = ptr[b0];
    let Some(tbuf) = tile.as_slice_mut() else {
        return; // unreachable: the tile is a fresh standard-layout array
    };
    let mut rbag = b0;
    for (r, trow) in (s0..s1).zip(tbuf[(s0 - r0) * TILE_COLS..].chunks_exact_mut(TILE_COLS)) {
        while r >= ptr[rbag + 1] {
            rbag += 1;
        }
        kernel.finish_rows(&mut trow[cs - c0..c1 - c0], &norms[r..], 0, &norms[cs..c1]);
        let orow = &mut rows[(rbag - b0) * m..(rbag - b0 + 1) * m];
        let mut j = jbag;
        let mut c = need;
        while c < c1 {
            let end = ptr[j + 1].min(c1);
            orow[j] += trow[c - c0..end - c0].iter().sum::<f64>();
            c = end;
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bags of the given sizes, with instances of `d` features.
    fn bags_of(sizes: &[usize], d: usize) -> Bags {
        let mut ptr = vec![0];
        for s in sizes {
            ptr.push(ptr[ptr.len() - 1] + s);
        }
        let n = ptr[ptr.len() - 1];
        let x = Array2::from_shape_fn((n, d), |(i, j)| {
            ((i * 7919 + j * 104_729) % 1009) as f64 / 250.0 - 2.0
        });
        Bags::new(Instances::from(x), ptr).unwrap()
    }

    /// Sub-blocks change no bit of the Gram matrix: every sub-block height gives the matrix of
    /// whole row blocks (`usize::MAX`), which is [`set_kernel`] to rounding, for bags of one to
    /// twelve instances, of a hundred and of three hundred (blocks wider than a tile), over
    /// several tiles and row blocks.
    #[test]
    fn sub_blocks_give_the_bits_of_whole_blocks() {
        for (case, sizes) in [
            (0..150).map(|i| 1 + (i * 7) % 12).collect::<Vec<_>>(),
            (0..90)
                .map(|i| if i % 5 == 0 { 1 } else { 2 + (i * 3) % 9 })
                .collect(),
            vec![3, 1, 100, 1, 1, 40, 300, 2, 1, 5, 1],
            vec![1; 70],
        ]
        .into_iter()
        .enumerate()
        {
            for d in [13, 166] {
                let bags = bags_of(&sizes, d);
                let kernel = Kernel::Rbf {
                    gamma: 0.3 / d as f64,
                };
                let whole = tiled_gram(kernel, &bags, &Cancel::default(), usize::MAX).unwrap();
                for sub_rows in [SUB_ROWS, 2, 5, 17, 64] {
                    let got = tiled_gram(kernel, &bags, &Cancel::default(), sub_rows).unwrap();
                    for ((i, j), w) in whole.indexed_iter() {
                        let g = got[[i, j]];
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "case {case} d {d} sub {sub_rows}: ({i}, {j})"
                        );
                    }
                }
                let reference = set_kernel(kernel, &bags, &bags).unwrap();
                for ((i, j), w) in whole.indexed_iter() {
                    assert!(
                        (w - reference[[i, j]]).abs() <= 1e-12,
                        "case {case}: ({i}, {j})"
                    );
                }
            }
        }
    }

    /// Features constant over the instances change no bit of the Gaussian Gram matrix: with a
    /// zero feature, a feature of zeros of both signs and two of other constants put among
    /// the others, it is the matrix of the bags without them (whose products and norms skip
    /// nothing), and [`set_kernel`] of every feature to rounding; the same from `f32` rows.
    #[test]
    fn constant_features_change_no_bit() {
        let sizes: Vec<usize> = (0..60).map(|i| 1 + (i * 5) % 9).collect();
        let narrow = bags_of(&sizes, 20);
        let Rows::Dense(x) = narrow.instances().rows() else {
            panic!("dense bags")
        };
        let n = x.nrows();
        let constants = [(0, 0.0), (7, 3.7), (12, -0.0), (22, 1.0)];
        let mut wide = Array2::<f64>::zeros((n, 24));
        let mut from = 0;
        for j in 0..24 {
            match constants.iter().find(|c| c.0 == j) {
                Some(&(_, c)) => wide.column_mut(j).fill(c),
                None => {
                    wide.column_mut(j).assign(&x.column(from));
                    from += 1;
                }
            }
        }
        wide[[3, 12]] = 0.0;
        let ptr = narrow.bag_ptr().to_vec();
        let wide32 = Bags::new(
            Instances::from(crate::bags::DenseF32::from_array(
                wide.mapv(|v| v as f32).view(),
            )),
            ptr.clone(),
        )
        .unwrap();
        let narrow32 = Bags::new(
            Instances::from(crate::bags::DenseF32::from_array(
                x.mapv(|v| v as f32).view(),
            )),
            ptr.clone(),
        )
        .unwrap();
        let wide = Bags::new(Instances::from(wide), ptr).unwrap();
        let kernel = Kernel::Rbf { gamma: 0.05 };
        let cancel = Cancel::default();
        let want = tiled_gram(kernel, &narrow, &cancel, SUB_ROWS).unwrap();
        let got = tiled_gram(kernel, &wide, &cancel, SUB_ROWS).unwrap();
        let reference = set_kernel(kernel, &wide, &wide).unwrap();
        for ((i, j), w) in want.indexed_iter() {
            assert_eq!(got[[i, j]].to_bits(), w.to_bits(), "({i}, {j})");
            assert!((w - reference[[i, j]]).abs() <= 1e-12, "({i}, {j})");
        }
        let want32 = tiled_gram(kernel, &narrow32, &cancel, SUB_ROWS).unwrap();
        let got32 = tiled_gram(kernel, &wide32, &cancel, SUB_ROWS).unwrap();
        assert!(want32
            .iter()
            .zip(&got32)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    /// Sub-blocks cover the bags in order, whole, each of at least `min_rows` rows but the
    /// last, which holds two rows or more unless it is the only one.
    #[test]
    fn sub_blocks_cover_the_bags() {
        let sizes = [1, 1, 30, 1, 33, 2, 1, 1, 1, 40, 1];
        let mut ptr = vec![0];
        for s in sizes {
            ptr.push(ptr[ptr.len() - 1] + s);
        }
        for min_rows in [SUB_ROWS, 1, 2, 3, 100] {
            for b0 in 0..sizes.len() {
                for b1 in b0 + 1..=sizes.len() {
                    let subs = sub_blocks(&ptr, b0, b1, min_rows);
                    assert_eq!(subs[0].1, ptr[b0]);
                    assert_eq!(subs[subs.len() - 1].2, ptr[b1]);
                    for (k, &(sb, s0, s1)) in subs.iter().enumerate() {
                        assert_eq!(ptr[sb], s0);
                        assert!(ptr[b0..=b1].contains(&s1));
                        if k + 1 < subs.len() {
                            assert_eq!(s1, subs[k + 1].1);
                            assert!(s1 - s0 >= min_rows);
                        } else if subs.len() > 1 {
                            assert!(s1 - s0 >= 2, "{b0}..{b1}: {subs:?}");
                        }
                    }
                }
            }
        }
    }
}
