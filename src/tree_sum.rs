//! Sums over bags in one fixed pairwise tree: the same bits for any thread count and for any
//! partition of the bags into contiguous groups.
//!
//! # The tree
//!
//! The leaves are the bags, indexed globally `0..n`. A leaf's value is the sum of its rows'
//! terms added one after another in row order (a bag is never split, so a leaf is computed
//! whole wherever its bag lives). Above the leaves the tree is the dyadic one: node `(l, k)`
//! covers the leaves `[k 2^l, min((k + 1) 2^l, n))` and, for `l > 0`, is its left child
//! `(l - 1, 2k)` plus its right child `(l - 1, 2k + 1)` (left first), or the left child alone
//! when the right one starts at or past `n`. The root is `(L, 0)` with `2^L >= n`. The shape
//! depends on `n` alone.
//!
//! Each node also records whether any leaf below it added a term (`touched`): a node whose
//! child is untouched takes the other child as it is (no addition of zeros). This spares the
//! cost of bags without terms (rows without a loss term, inactive rows) and is part of the
//! definition: a node is the same value however it is computed.
//!
//! # Why a dyadic tree over bags
//!
//! A partition of the bags into contiguous groups (the partitions of a Dask collection, where
//! a bag never crosses a partition) can cut anywhere between two bags, so the leaves must be
//! bags: a leaf of several bags, summed in order, would be cut, and the two pieces added in
//! another order. Fixed-size blocks of bags fail the same way. With one bag per leaf, every
//! node `(l, k)` whose leaves lie inside one group is computed by that group alone, and a
//! group `[lo, hi)` is the disjoint union of its *canonical nodes* ([`canonical_nodes`]: the
//! maximal aligned nodes inside it, at most `2 log2 n` of them). A group reports those nodes'
//! values ([`Tree::partial_sums`]); the driver ([`combine`]) computes every node above them
//! from its children by the same rule, so the root is the value of the whole sum computed in
//! one process, bit for bit, for any partition. Threads are one more partition: a node is split
//! between two tasks only at its children, so the thread count never changes a node either.
//!
//! The leaves cost one reset and, when touched, one addition of a value (a vector of `d` for
//! `X^T u`) per bag, on top of the rows' terms: small against the rows when bags hold several
//! instances.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Rows below which a node is summed on one thread (larger nodes split at their children).
const SEQUENTIAL_ROWS: usize = 4096;

/// A value summed in the tree: reset to zero, and added to (elementwise).
pub trait TreeValue: Send + Sized {
    /// A zero of the same shape as `self`.
    fn zero_like(&self) -> Self;
    /// Sets every entry to zero.
    fn reset(&mut self);
    /// `self += other`, entry by entry.
    fn add(&mut self, other: &Self);
}

impl TreeValue for f64 {
    fn zero_like(&self) -> Self {
        0.0
    }
    fn reset(&mut self) {
        *self = 0.0;
    }
    fn add(&mut self, other: &Self) {
        *self += *other;
    }
}

impl TreeValue for Vec<f64> {
    fn zero_like(&self) -> Self {
        vec![0.0; self.len()]
    }
    fn reset(&mut self) {
        self.iter_mut().for_each(|v| *v = 0.0);
    }
    fn add(&mut self, other: &Self) {
        self.iter_mut().zip(other).for_each(|(a, &b)| *a += b);
    }
}

impl<A: TreeValue, B: TreeValue> TreeValue for (A, B) {
    fn zero_like(&self) -> Self {
        (self.0.zero_like(), self.1.zero_like())
    }
    fn reset(&mut self) {
        self.0.reset();
        self.1.reset();
    }
    fn add(&mut self, other: &Self) {
        self.0.add(&other.0);
        self.1.add(&other.1);
    }
}

impl<A: TreeValue, B: TreeValue, C: TreeValue> TreeValue for (A, B, C) {
    fn zero_like(&self) -> Self {
        (self.0.zero_like(), self.1.zero_like(), self.2.zero_like())
    }
    fn reset(&mut self) {
        self.0.reset();
        self.1.reset();
        self.2.reset();
    }
    fn add(&mut self, other: &Self) {
        self.0.add(&other.0);
        self.1.add(&other.1);
        self.2.add(&other.2);
    }
}

/// The level of the root of the tree over `n` leaves (`2^L >= n`).
pub fn root_level(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// The leaves `[lo, hi)` of node `(l, k)` in the tree over `n` leaves.
fn span(n: usize, l: u32, k: usize) -> (usize, usize) {
    let lo = k << l;
    (lo, lo.saturating_add(1usize << l).min(n))
}

/// One node's value as a group reports it: `value` `None` when no leaf below it added a term.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<T> {
    /// The node's level (0: a leaf).
    pub level: u32,
    /// Its index within its level.
    pub index: usize,
    /// Its value, `None` if untouched.
    pub value: Option<T>,
}

/// The maximal aligned nodes inside the leaves `[lo, hi)` of the tree over `n` leaves, left to
/// right (empty for an empty range).
pub fn canonical_nodes(lo: usize, hi: usize, n: usize) -> Vec<(u32, usize)> {
    let hi = hi.min(n);
    let mut out = Vec::new();
    let mut i = lo;
    while i < hi {
        // the highest level whose node starts at i and ends inside the range
        let mut l = 0;
        while l < root_level(n) {
            let up = l + 1;
            if !i.is_multiple_of(1usize << up) || span(n, up, i >> up).1 > hi {
                break;
            }
            l = up;
        }
        out.push((l, i >> l));
        i = span(n, l, i >> l).1;
    }
    out
}

/// Adds `right` (`touched`: whether it holds a term) into `left`; the rule of every inner node.
fn join<T: TreeValue>(left: &mut T, left_touched: bool, right: &mut T, right_touched: bool) {
    if right_touched {
        if left_touched {
            left.add(right);
        } else {
            std::mem::swap(left, right);
        }
    }
}

/// The sum of a tree: the bags' row offsets `ptr` (to size the tasks), the offsets `optr` of
/// each bag's entries in a per-row output (`ptr` itself, or the offsets of a subset of rows such
/// as the active ones), a zero value of the right shape, and the leaf function, which adds bag
/// `k`'s terms into a zero value, may write the bag's entries of the output, and says whether it
/// added any term.
pub struct Tree<'a, T, S, F> {
    n: usize,
    ptr: &'a [usize],
    optr: &'a [usize],
    proto: T,
    leaf: F,
    _out: std::marker::PhantomData<fn(&mut [S])>,
}

/// The sum over the bags of `ptr` with a leaf function that writes no output.
pub fn sum_bags<T, F>(ptr: &[usize], proto: T, leaf: F) -> T
where
    T: TreeValue + Sync,
    F: Fn(usize, &mut T) -> bool + Sync,
{
    let rows = ptr.last().copied().unwrap_or(0);
    Tree::new(ptr, ptr, proto, |k, out: &mut T, _: &mut [()]| leaf(k, out)).sum(&mut vec![(); rows])
}

/// The canonical nodes of the bags `[lo, hi)` of `ptr` ([`Tree::partial_sums`]) with a leaf
/// function that writes no output: one group's part of [`sum_bags`], for [`combine`].
pub fn partial_bags<T, F>(ptr: &[usize], lo: usize, hi: usize, proto: T, leaf: F) -> Vec<Node<T>>
where
    T: TreeValue + Sync,
    F: Fn(usize, &mut T) -> bool + Sync,
{
    let rows = ptr
        .get(hi)
        .copied()
        .unwrap_or(0)
        .saturating_sub(ptr.get(lo).copied().unwrap_or(0));
    Tree::new(ptr, ptr, proto, |k, out: &mut T, _: &mut [()]| leaf(k, out)).partial_sums(
        lo,
        hi,
        &mut vec![(); rows],
    )
}

impl<'a, T, S, F> Tree<'a, T, S, F>
where
    T: TreeValue + Sync,
    S: Send,
    F: Fn(usize, &mut T, &mut [S]) -> bool + Sync,
{
    /// The tree over the bags of `ptr` (`n + 1` row offsets), the bag `k` writing the entries
    /// `optr[k]..optr[k + 1]` of the output.
    pub fn new(ptr: &'a [usize], optr: &'a [usize], proto: T, leaf: F) -> Self {
        Self {
            n: ptr.len().saturating_sub(1),
            ptr,
            optr,
            proto,
            leaf,
            _out: std::marker::PhantomData,
        }
    }

    /// Node `(l, k)` into `out` (whose content is replaced), writing `dst` (the node's entries
    /// of the output); whether it is touched.
    fn node(&self, l: u32, k: usize, out: &mut T, scratch: &mut Vec<T>, dst: &mut [S]) -> bool {
        let (lo, hi) = span(self.n, l, k);
        if l == 0 {
            out.reset();
            return (self.leaf)(k, out, dst);
        }
        let right_lo = (2 * k + 1) << (l - 1);
        if right_lo >= self.n {
            return self.node(l - 1, 2 * k, out, scratch, dst);
        }
        let (dl, dr) = dst.split_at_mut(self.optr[right_lo] - self.optr[lo]);
        if self.ptr[hi] - self.ptr[lo] > SEQUENTIAL_ROWS {
            let mut right = self.proto.zero_like();
            let (lt, rt) = rayon::join(
                || self.node(l - 1, 2 * k, out, &mut Vec::new(), dl),
                || self.node(l - 1, 2 * k + 1, &mut right, &mut Vec::new(), dr),
            );
            join(out, lt, &mut right, rt);
            return lt || rt;
        }
        let lt = self.node(l - 1, 2 * k, out, scratch, dl);
        let mut right = scratch.pop().unwrap_or_else(|| self.proto.zero_like());
        let rt = self.node(l - 1, 2 * k + 1, &mut right, scratch, dr);
        join(out, lt, &mut right, rt);
        scratch.push(right);
        lt || rt
    }

    /// The value of node `(l, k)` (`None`: untouched).
    fn value(&self, l: u32, k: usize, dst: &mut [S]) -> Option<T> {
        let mut out = self.proto.zero_like();
        self.node(l, k, &mut out, &mut Vec::new(), dst)
            .then_some(out)
    }

    /// The whole sum (zero when no bag added a term), writing the output `dst` (its
    /// `optr[n]` entries).
    pub fn sum(&self, dst: &mut [S]) -> T {
        if self.n == 0 {
            return self.proto.zero_like();
        }
        self.value(root_level(self.n), 0, dst)
            .unwrap_or_else(|| self.proto.zero_like())
    }

    /// The canonical nodes of the bags `[lo, hi)` with their values ([`canonical_nodes`]): what
    /// a group holding those bags reports, for [`combine`]; `dst` holds the output entries
    /// `optr[lo]..optr[hi]`.
    pub fn partial_sums(&self, lo: usize, hi: usize, mut dst: &mut [S]) -> Vec<Node<T>> {
        let mut jobs = Vec::new();
        for (level, index) in canonical_nodes(lo, hi, self.n) {
            let (a, b) = span(self.n, level, index);
            let (head, rest) = std::mem::take(&mut dst).split_at_mut(self.optr[b] - self.optr[a]);
            dst = rest;
            jobs.push((level, index, head));
        }
        jobs.into_par_iter()
            .map(|(level, index, head)| Node {
                level,
                index,
                value: self.value(level, index, head),
            })
            .collect()
    }
}

/// The sum over all `n` leaves from the canonical nodes that groups covering `[0, n)` reported
/// ([`Tree::partial_sums`]), the nodes above them computed by the tree's rule: the bits of
/// [`Tree::sum`]. `zero`: the value of an untouched sum. Fails when the nodes do not cover the
/// leaves exactly once.
pub fn combine<T: TreeValue>(n: usize, nodes: Vec<Node<T>>, zero: T) -> Result<T> {
    if n == 0 {
        return Ok(zero);
    }
    let mut slots: std::collections::HashMap<(u32, usize), Option<T>> =
        std::collections::HashMap::with_capacity(nodes.len());
    for node in nodes {
        if slots.insert((node.level, node.index), node.value).is_some() {
            return Err(Error::InvalidData(format!(
                "partial sums: node ({}, {}) reported twice",
                node.level, node.index
            )));
        }
    }
    fn get<T: TreeValue>(
        n: usize,
        l: u32,
        k: usize,
        slots: &mut std::collections::HashMap<(u32, usize), Option<T>>,
    ) -> Result<Option<T>> {
        if let Some(v) = slots.remove(&(l, k)) {
            return Ok(v);
        }
        if l == 0 {
            return Err(Error::InvalidData(format!(
                "partial sums: no group reported bag {k}"
            )));
        }
        let mut left = get(n, l - 1, 2 * k, slots)?;
        if (2 * k + 1) << (l - 1) >= n {
            return Ok(left);
        }
        let mut right = get(n, l - 1, 2 * k + 1, slots)?;
        Ok(match (left.as_mut(), right.as_mut()) {
            (Some(a), Some(b)) => {
                a.add(b);
                left
            }
            (None, _) => right,
            (Some(_), None) => left,
        })
    }
    let root = get(n, root_level(n), 0, &mut slots)?;
    if !slots.is_empty() {
        return Err(Error::InvalidData(
            "partial sums: nodes overlap or lie outside the bags".into(),
        ));
    }
    Ok(root.unwrap_or(zero))
}

/// `sum_k leaf(k)` over the `n` scalar leaves in the tree (each leaf one value; a leaf of `0.0`
/// counts as touched): the scalar sums over bags whose terms are already per bag.
pub fn sum_scalars(values: &[f64]) -> f64 {
    let ptr: Vec<usize> = (0..=values.len()).collect();
    sum_bags(&ptr, 0.0, |k, out: &mut f64| {
        *out = values[k];
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_terms(k: usize) -> Vec<f64> {
        // terms of very different magnitudes, so that the order of additions shows in the bits
        (0..(k % 5))
            .map(|j| ((k * 7 + j) as f64).sin() * 10f64.powi((k % 9) as i32 - 4))
            .collect()
    }

    type Value = (Vec<f64>, f64);

    /// The tree of `leaf_terms`, each row's output its bag's index.
    fn tree(
        ptr: &[usize],
    ) -> Tree<'_, Value, usize, impl Fn(usize, &mut Value, &mut [usize]) -> bool + Sync + '_> {
        Tree::new(
            ptr,
            ptr,
            (vec![0.0; 3], 0.0),
            |k, out: &mut Value, dst: &mut [usize]| {
                let terms = leaf_terms(k);
                for (j, t) in terms.iter().enumerate() {
                    out.0[j % 3] += t;
                    out.1 += t * t;
                    dst[j] = k;
                }
                !terms.is_empty()
            },
        )
    }

    fn rows_bag(ptr: &[usize]) -> Vec<usize> {
        (0..ptr.len() - 1)
            .flat_map(|k| std::iter::repeat_n(k, ptr[k + 1] - ptr[k]))
            .collect()
    }

    fn ptr_of(n: usize) -> Vec<usize> {
        let mut ptr = vec![0];
        for k in 0..n {
            ptr.push(ptr[k] + leaf_terms(k).len());
        }
        ptr
    }

    #[test]
    fn canonical_nodes_cover_each_leaf_once() {
        for n in 0..40 {
            for lo in 0..=n {
                for hi in lo..=n {
                    let mut covered = vec![];
                    for (l, k) in canonical_nodes(lo, hi, n) {
                        let (a, b) = span(n, l, k);
                        covered.extend(a..b);
                    }
                    assert_eq!(covered, (lo..hi).collect::<Vec<_>>(), "n {n} [{lo}, {hi})");
                }
            }
        }
    }

    #[test]
    fn any_partition_gives_the_bits_of_the_whole() {
        for n in [1, 2, 3, 5, 17, 64, 100, 1000] {
            let ptr = ptr_of(n);
            let t = tree(&ptr);
            let mut dst = vec![usize::MAX; ptr[n]];
            let whole = t.sum(&mut dst);
            assert_eq!(dst, rows_bag(&ptr));
            // a sequential sum differs in the last bits: the test can fail
            let mut cuts_seen = 0;
            for parts in [1, 2, 3, 5, 7] {
                for shift in 0..3 {
                    let mut cuts: Vec<usize> = (0..=parts)
                        .map(|p| (p * n / parts + shift).min(n))
                        .collect();
                    cuts[0] = 0;
                    let mut nodes = Vec::new();
                    let mut dst = vec![usize::MAX; ptr[n]];
                    for w in cuts.windows(2) {
                        let part = &mut dst[ptr[w[0]]..ptr[w[1]]];
                        nodes.extend(t.partial_sums(w[0], w[1], part));
                    }
                    assert_eq!(dst, rows_bag(&ptr));
                    let got = combine(n, nodes, (vec![0.0; 3], 0.0)).unwrap();
                    assert_eq!(
                        got.0.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        whole.0.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                    );
                    assert_eq!(got.1.to_bits(), whole.1.to_bits());
                    cuts_seen += 1;
                }
            }
            assert!(cuts_seen > 0);
        }
    }

    #[test]
    fn the_sum_is_the_sum() {
        let ptr = ptr_of(300);
        let got = tree(&ptr).sum(&mut vec![0; ptr[300]]);
        let exact: f64 = (0..300).flat_map(leaf_terms).map(|t| t * t).sum();
        assert!((got.1 - exact).abs() <= 1e-12 * exact);
    }

    #[test]
    fn the_thread_count_does_not_change_the_bits() {
        let n = 20_000;
        let ptr = ptr_of(n);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| tree(&ptr).sum(&mut vec![0; ptr[n]]))
        };
        let (a, b, c) = (run(1), run(2), run(3));
        assert_eq!(a, b);
        assert_eq!(a, c);
    }

    #[test]
    fn combine_refuses_gaps_and_overlaps() {
        let ptr = ptr_of(10);
        let t = tree(&ptr);
        let zero = (vec![0.0; 3], 0.0);
        let mut dst = vec![0; ptr[10]];
        assert!(combine(10, t.partial_sums(0, 9, &mut dst), zero.clone()).is_err());
        let mut nodes = t.partial_sums(0, 10, &mut dst);
        nodes.extend(t.partial_sums(3, 4, &mut dst[ptr[3]..ptr[4]]));
        assert!(combine(10, nodes, zero).is_err());
    }
}
