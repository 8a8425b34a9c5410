//! A solve over partitions held elsewhere (the workers of a Dask cluster): [`OwnedPart`], one
//! partition of contiguous bags that owns its rows and answers the rounds of a [`RowStore`]
//! by name with its canonical tree nodes flattened to `f64`s, and [`RemoteParts`], the
//! driver's [`RowStore`] that sends each round to every partition through a [`Dispatch`] and
//! combines the replies with [`combine`], exactly as [`Parts`] combines its groups: the bits
//! of the solve in one process, for any partition of the bags.
//!
//! A message holds `d`-vectors and scalars only (the rows and the per-row state stay in the
//! partition), except the sketch's sampled rows ([`RowStore::sketch_rows`]: at most
//! `16 (d + 1)` rows per Newton step, as the in-process store gathers them).

use std::borrow::Cow;

use super::{
    sum_rows_nodes, weighted_columns, xt_dot_nodes, xt_dot_pair_nodes, FirstGradient, HessValue,
    Part, RowState, RowStore, RowsRef,
};
use crate::bags::Instances;
use crate::error::{Error, Result};
use crate::linalg::Simd;
use crate::tree_sum::{combine, Node, TreeValue};

/// The points of the line search one round may sum ([`RowStore::trials_per_call`]): the one
/// it needs and those it would try next if its steps stay bisections. Such a chain, near the
/// minimiser, runs to about 50 points (a bracket halved to the rounding of its ends); each point
/// costs a partition one pass over the state of its rows with a step score (4 `f64`s a row).
const LINE_POINTS_PER_ROUND: usize = 64;

/// A sum's value written as `f64`s and read back (the nodes of a round's reply).
pub(crate) trait Flat: TreeValue + Clone {
    /// Appends the value's entries.
    fn put(&self, out: &mut Vec<f64>);
    /// Reads a value of the shape of `zero`.
    fn get(zero: &Self, at: &mut Reader<'_>) -> Result<Self>;
}

/// A cursor over a reply.
pub(crate) struct Reader<'a> {
    data: &'a [f64],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [f64]) -> Self {
        Self { data, at: 0 }
    }

    /// The next entry.
    pub(crate) fn next(&mut self) -> Result<f64> {
        let v = self.data.get(self.at).copied().ok_or_else(short_reply)?;
        self.at += 1;
        Ok(v)
    }

    /// The next `n` entries.
    pub(crate) fn slice(&mut self, n: usize) -> Result<&'a [f64]> {
        let s = self
            .data
            .get(self.at..self.at + n)
            .ok_or_else(short_reply)?;
        self.at += n;
        Ok(s)
    }

    /// The next entry as a count.
    pub(crate) fn count(&mut self) -> Result<usize> {
        let v = self.next()?;
        if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 {
            Ok(v as usize)
        } else {
            Err(Error::InvalidData(format!(
                "a partition's reply holds {v} where a count belongs"
            )))
        }
    }
}

fn short_reply() -> Error {
    Error::InvalidData("a partition's reply ended early".into())
}

impl Flat for f64 {
    fn put(&self, out: &mut Vec<f64>) {
        out.push(*self);
    }
    fn get(_: &Self, at: &mut Reader<'_>) -> Result<Self> {
        at.next()
    }
}

impl Flat for Vec<f64> {
    fn put(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(self);
    }
    fn get(zero: &Self, at: &mut Reader<'_>) -> Result<Self> {
        Ok(at.slice(zero.len())?.to_vec())
    }
}

impl<A: Flat, B: Flat> Flat for (A, B) {
    fn put(&self, out: &mut Vec<f64>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn get(zero: &Self, at: &mut Reader<'_>) -> Result<Self> {
        Ok((A::get(&zero.0, at)?, B::get(&zero.1, at)?))
    }
}

/// Appends nodes: their number, then per node its level, index, whether touched and (if so)
/// its value.
pub(crate) fn put_nodes<T: Flat>(nodes: &[Node<T>], out: &mut Vec<f64>) {
    out.push(nodes.len() as f64);
    for node in nodes {
        out.push(f64::from(node.level));
        out.push(node.index as f64);
        match &node.value {
            Some(v) => {
                out.push(1.0);
                v.put(out);
            }
            None => out.push(0.0),
        }
    }
}

/// Reads the nodes [`put_nodes`] wrote, values of the shape of `zero`.
pub(crate) fn get_nodes<T: Flat>(zero: &T, at: &mut Reader<'_>) -> Result<Vec<Node<T>>> {
    let n = at.count()?;
    let mut nodes = Vec::with_capacity(n);
    for _ in 0..n {
        let level = u32::try_from(at.count()?)
            .map_err(|_| Error::InvalidData("a partition's reply: bad node level".into()))?;
        let index = at.count()?;
        let value = if at.next()? != 0.0 {
            Some(T::get(zero, at)?)
        } else {
            None
        };
        nodes.push(Node {
            level,
            index,
            value,
        });
    }
    Ok(nodes)
}

/// One partition of a distributed solve: the bags `[lo, hi)` of a data set of `n_bags`
/// bags, with their dense rows (owned), their costs and the per-row state of the solve.
pub(crate) struct OwnedPart {
    x: Instances,
    /// One offset per bag of the whole data set into this partition's rows ([`Part`]'s).
    ptr: Vec<usize>,
    lo: usize,
    hi: usize,
    c_pos: Vec<f64>,
    c_neg: Vec<f64>,
    state: RowState,
    simd: Simd,
}

impl OwnedPart {
    /// Its rows, offsets, costs and per-row state in bytes ([`Answer::held_bytes`]).
    pub(crate) fn held_bytes(&self) -> usize {
        use std::mem::size_of_val;
        let (ptr, c_pos, c_neg) = (&self.ptr[..], &self.c_pos[..], &self.c_neg[..]);
        self.x.nbytes()
            + size_of_val(ptr)
            + size_of_val(c_pos)
            + size_of_val(c_neg)
            + self.state.held_bytes()
    }

    /// The bags `[lo, lo + m)` of `n_bags`, `local_ptr` their `m + 1` row offsets into the
    /// dense rows `x` (no costs yet: every row without a loss term).
    pub(crate) fn new(x: Instances, local_ptr: &[usize], lo: usize, n_bags: usize) -> Result<Self> {
        let m = local_ptr.len().saturating_sub(1);
        let n = x.n_rows();
        if matches!(x, Instances::Sparse(_))
            || local_ptr.first() != Some(&0)
            || local_ptr.last() != Some(&n)
            || local_ptr.windows(2).any(|w| w[0] > w[1])
            || lo + m > n_bags
        {
            return Err(Error::InvalidData(format!(
                "a partition needs dense rows and bag offsets from 0 to its {n} rows, its bags \
                 [{lo}, {}) within the {n_bags} bags",
                lo + m
            )));
        }
        let mut ptr = vec![0; n_bags + 1];
        ptr[lo..=lo + m].copy_from_slice(local_ptr);
        ptr[lo + m..].fill(n);
        Ok(Self {
            x,
            ptr,
            lo,
            hi: lo + m,
            c_pos: vec![0.0; n],
            c_neg: vec![0.0; n],
            state: RowState::default(),
            simd: Simd::detect(),
        })
    }

    /// Rows held.
    pub(crate) fn n_rows(&self) -> usize {
        self.x.n_rows()
    }

    /// The rows held.
    pub(crate) fn rows(&self) -> &Instances {
        &self.x
    }

    /// The scores `f` of the last solve (row order).
    pub(crate) fn scores(&self) -> &[f64] {
        &self.state.f
    }

    /// Sets the rows' costs.
    pub(crate) fn set_costs(&mut self, c_pos: Vec<f64>, c_neg: Vec<f64>) {
        self.c_pos = c_pos;
        self.c_neg = c_neg;
    }

    /// Runs `op` on this partition as a [`Part`] (the state moved in and back out).
    fn with_part<R>(&mut self, op: impl FnOnce(&mut Part<'_>) -> R) -> R {
        let OwnedPart {
            x,
            ptr,
            lo,
            hi,
            c_pos,
            c_neg,
            state,
            simd,
        } = self;
        let rows = RowsRef::new(x);
        let mut part = Part {
            x: rows,
            ptr: std::mem::take(ptr),
            lo: *lo,
            hi: *hi,
            n: x.n_rows(),
            d: x.n_features(),
            c_pos: Cow::Borrowed(&c_pos[..]),
            c_neg: Cow::Borrowed(&c_neg[..]),
            state: std::mem::take(state),
            woodbury: None,
            simd: *simd,
        };
        let out = op(&mut part);
        *ptr = part.ptr;
        *state = part.state;
        out
    }

    /// Answers the round `op` ([`RemoteParts`] names them after the [`RowStore`] methods) with
    /// the `d`-vector `v` and the scalars `s`: the partition's nodes of each of the round's sums,
    /// in order ([`put_nodes`]), or its counts.
    pub(crate) fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        let d = self.x.n_features();
        let scalar = |k: usize| {
            s.get(k).copied().ok_or_else(|| {
                Error::InvalidData(format!("the round {op:?} needs {} scalars", k + 1))
            })
        };
        let pending = || -> Result<Option<f64>> { Ok((scalar(1)? != 0.0).then_some(scalar(2)?)) };
        if matches!(
            op,
            "set_scores" | "hessian" | "step_scores" | "finish_scores"
        ) && v.len() != d
        {
            return Err(Error::InvalidData(format!(
                "the round {op:?} needs a vector of {d} entries, got {}",
                v.len()
            )));
        }
        let mut out = Vec::new();
        match op {
            "mean" => {
                let inv_n = scalar(0)?;
                put_nodes(&self.with_part(|p| p.mean_nodes(inv_n)), &mut out);
            }
            "set_scores" => {
                let shift = scalar(0)?;
                self.with_part(|p| p.set_scores(v, shift));
            }
            "first_gradient" => self.with_part(|p| {
                put_nodes(&p.loss_nodes(), &mut out);
                let g0 = p.g0();
                put_nodes(
                    &xt_dot_pair_nodes(p.x, p.group(), &p.state.g, &g0, d),
                    &mut out,
                );
                put_nodes(&sum_rows_nodes(p.group(), &p.state.g), &mut out);
                put_nodes(&sum_rows_nodes(p.group(), &g0), &mut out);
                out.push(p.activate() as f64); // the next step's rows ([`RemoteParts`])
            }),
            "accept" => {
                let t = scalar(0)?;
                self.with_part(|p| {
                    p.advance(t);
                    put_nodes(&p.loss_nodes(), &mut out);
                    put_nodes(&xt_dot_nodes(p.x, p.group(), &p.state.g, d), &mut out);
                    put_nodes(&sum_rows_nodes(p.group(), &p.state.g), &mut out);
                    out.push(p.activate() as f64); // the next step's rows ([`RemoteParts`])
                });
            }
            "activate" => out.push(self.with_part(|p| p.activate()) as f64),
            "sum_d" => {
                self.with_part(|p| put_nodes(&sum_rows_nodes(p.group(), &p.state.dj), &mut out));
            }
            "sketch_rows" => {
                let step = s.first().copied();
                let rows = self.with_part(|p| p.sketch_rows(step));
                out.push(rows.len() as f64);
                for (row, weight) in rows {
                    out.push(weight);
                    out.extend_from_slice(&row);
                }
            }
            "jacobi_sums" => self.with_part(|p| {
                put_nodes(&sum_rows_nodes(p.group(), &p.state.dj), &mut out);
                put_nodes(&weighted_columns(p.x, p.group(), &p.state.dj, d), &mut out);
            }),
            "hessian" => {
                let (shift, pending) = (scalar(0)?, pending()?);
                let nodes = self.with_part(|p| p.hessian_nodes(v, shift, pending));
                put_nodes(&nodes, &mut out);
            }
            "step_scores" => {
                let (shift, pending) = (scalar(0)?, pending()?);
                let ts = s.get(3..).unwrap_or_default(); // the line search's first points
                self.with_part(|p| {
                    p.step_scores(v, shift, pending);
                    for &t in ts {
                        put_nodes(&p.line_nodes(t), &mut out);
                    }
                });
            }
            "line_terms" => {
                scalar(0)?; // at least one point
                self.with_part(|p| {
                    for &t in s {
                        put_nodes(&p.line_nodes(t), &mut out);
                    }
                });
            }
            "finish_scores" => {
                let shift = scalar(0)?;
                self.with_part(|p| p.finish_scores(v, shift));
            }
            _ => {
                return Err(Error::InvalidData(format!(
                    "a partition has no round {op:?}"
                )))
            }
        }
        Ok(out)
    }
}

/// Sends one round to every partition and returns their replies in partition order (the
/// driver's link to the partitions: a Dask client in the Python package, a loop in tests).
pub(crate) trait Dispatch {
    /// The replies of every partition to the round `op` with the vector `v` and scalars `s`.
    fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>>;
}

/// A partition of a distributed fit as a worker holds it: answers the round `op` with the
/// vector `v` and the scalars `s`.
pub(crate) trait Answer: Send + Sync {
    /// This partition's reply.
    fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>>;
    /// The bytes it holds: its rows (or what replaced them) and the fit's state, what a
    /// scheduler counts for it.
    fn held_bytes(&self) -> usize;
}

/// Rows `r0..r1` of `x` as instances, `f32` (`single`) or `f64` (the tests' partitions).
#[cfg(test)]
pub(crate) fn rows_of(x: &ndarray::Array2<f64>, r0: usize, r1: usize, single: bool) -> Instances {
    let part = x.slice(ndarray::s![r0..r1, ..]);
    if single {
        let part = part.mapv(|v| v as f32);
        Instances::from(crate::bags::DenseF32::from_array(part.view()))
    } else {
        Instances::from(part.to_owned())
    }
}

/// Partitions in process, answering in partition order (the tests' dispatcher).
#[cfg(test)]
pub(crate) struct Local<P>(pub(crate) Vec<P>);

#[cfg(test)]
impl<P> Local<P> {
    /// The bags of `ptr` in `parts` contiguous groups (with `parts == 3`, an empty one among
    /// them), each made by `make(lo, hi, offsets)` from its bags `[lo, hi)` and their offsets
    /// into its own rows.
    pub(crate) fn split(
        ptr: &[usize],
        parts: usize,
        make: impl Fn(usize, usize, Vec<usize>) -> P,
    ) -> Self {
        let n_bags = ptr.len() - 1;
        let mut cuts: Vec<usize> = (0..=parts).map(|p| p * n_bags / parts).collect();
        if parts == 3 {
            cuts.insert(2, cuts[1]); // an empty partition
        }
        Local(
            cuts.windows(2)
                .map(|w| {
                    let local = ptr[w[0]..=w[1]].iter().map(|&r| r - ptr[w[0]]).collect();
                    make(w[0], w[1], local)
                })
                .collect(),
        )
    }
}

#[cfg(test)]
impl<P: Answer> Dispatch for Local<P> {
    fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
        self.0.iter_mut().map(|p| p.answer(op, v, s)).collect()
    }
}

impl<T: Dispatch> Dispatch for &mut T {
    fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
        (**self).round(op, v, s)
    }
}

/// The driver's [`RowStore`] over partitions reached through `dispatch`: a round per method,
/// the partitions' nodes combined in the fixed tree over the `n_bags` bags. Fewer rounds than
/// calls, since a round trip costs more than the work it carries, and the calls come in a
/// fixed order ([`super::drive`]): the rounds of the gradient (`first_gradient`, `accept`)
/// also mark the rows of the next Newton step, so that its `activate` is answered from them;
/// the step's scores wait to go out with the line search's first trial; and a trial comes with
/// the points the search may try next ([`RowStore::trials_per_call`]).
pub(crate) struct RemoteParts<D> {
    dispatch: D,
    n_bags: usize,
    n_rows: usize,
    d: usize,
    /// The active rows the last round marked, if it was a gradient's.
    activated: Option<usize>,
    /// The round of the step's scores, not sent yet: its vector and scalars.
    step: Option<(Vec<f64>, [f64; 3])>,
}

impl<D: Dispatch> RemoteParts<D> {
    /// Partitions of `n_bags` bags and `n_rows` rows of `d` dense features in all.
    pub(crate) fn new(dispatch: D, n_bags: usize, n_rows: usize, d: usize) -> Self {
        Self {
            dispatch,
            n_bags,
            n_rows,
            d,
            activated: None,
            step: None,
        }
    }

    /// The replies of every partition to the round `op`. A line search's trial carries the
    /// step's scores not sent yet (one `step_scores` round, the trial's points after its
    /// scalars); any other round goes after them.
    pub(crate) fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
        self.activated = None;
        if op == "line_terms" {
            if let Some((s_w, scalars)) = self.step.take() {
                return self
                    .dispatch
                    .round("step_scores", &s_w, &[&scalars[..], s].concat());
            }
        }
        self.send_step()?;
        self.dispatch.round(op, v, s)
    }

    /// Sends the round of the step's scores, if it waits.
    fn send_step(&mut self) -> Result<()> {
        if let Some((s_w, scalars)) = self.step.take() {
            self.dispatch.round("step_scores", &s_w, &scalars)?;
        }
        Ok(())
    }

    /// One sum of every reply (read in turn), combined.
    fn sum<T: Flat>(&self, readers: &mut [Reader<'_>], zero: T) -> Result<T> {
        let mut nodes = Vec::new();
        for r in readers.iter_mut() {
            nodes.extend(get_nodes(&zero, r)?);
        }
        combine(self.n_bags, nodes, zero)
    }
}

/// The sum of a count read from every reply.
fn count(readers: &mut [Reader<'_>]) -> Result<usize> {
    readers.iter_mut().map(Reader::count).sum()
}

/// Readers over replies.
fn readers(replies: &[Vec<f64>]) -> Vec<Reader<'_>> {
    replies.iter().map(|r| Reader::new(r)).collect()
}

/// The flag and value of an optional step length, as scalars.
fn pending_scalars(shift: f64, pending: Option<f64>) -> [f64; 3] {
    match pending {
        Some(a) => [shift, 1.0, a],
        None => [shift, 0.0, 0.0],
    }
}

impl<D: Dispatch> RowStore for RemoteParts<D> {
    fn n_rows(&self) -> usize {
        self.n_rows
    }

    fn n_features(&self) -> usize {
        self.d
    }

    fn dense(&self) -> bool {
        true
    }

    fn mean(&mut self) -> Result<Vec<f64>> {
        if self.n_rows == 0 {
            return Ok(vec![0.0; self.d]);
        }
        let replies = self.round("mean", &[], &[1.0 / self.n_rows as f64])?;
        self.sum(&mut readers(&replies), vec![0.0; self.d])
    }

    fn set_scores(&mut self, w: &[f64], shift: f64) -> Result<()> {
        self.round("set_scores", w, &[shift]).map(drop)
    }

    fn first_gradient(&mut self) -> Result<FirstGradient> {
        let d = self.d;
        let replies = self.round("first_gradient", &[], &[])?;
        let mut r = readers(&replies);
        let loss = self.sum(&mut r, 0.0)?;
        let xt = self.sum(&mut r, (vec![0.0; d], vec![0.0; d]))?;
        let sum_g = self.sum(&mut r, 0.0)?;
        let sum_g0 = self.sum(&mut r, 0.0)?;
        self.activated = Some(count(&mut r)?);
        Ok(FirstGradient::new(loss, xt, sum_g, sum_g0))
    }

    fn accept(&mut self, t: f64) -> Result<(f64, Vec<f64>, f64)> {
        let replies = self.round("accept", &[], &[t])?;
        let mut r = readers(&replies);
        let loss = self.sum(&mut r, 0.0)?;
        let xt_g = self.sum(&mut r, vec![0.0; self.d])?;
        let sum_g = self.sum(&mut r, 0.0)?;
        self.activated = Some(count(&mut r)?);
        Ok((loss, xt_g, sum_g))
    }

    fn activate(&mut self) -> Result<usize> {
        if let Some(m) = self.activated.take() {
            return Ok(m);
        }
        let replies = self.round("activate", &[], &[])?;
        count(&mut readers(&replies))
    }

    fn sum_d(&mut self) -> Result<f64> {
        let replies = self.round("sum_d", &[], &[])?;
        self.sum(&mut readers(&replies), 0.0)
    }

    fn sketch_rows(&mut self, step: Option<f64>) -> Result<Vec<(Vec<f64>, f64)>> {
        let s: Vec<f64> = step.into_iter().collect();
        let replies = self.round("sketch_rows", &[], &s)?;
        let mut rows = Vec::new();
        for mut r in readers(&replies) {
            for _ in 0..r.count()? {
                let weight = r.next()?;
                rows.push((r.slice(self.d)?.to_vec(), weight));
            }
        }
        Ok(rows)
    }

    fn jacobi_sums(&mut self) -> Result<(f64, Vec<f64>, Vec<f64>)> {
        let d = self.d;
        let replies = self.round("jacobi_sums", &[], &[])?;
        let mut r = readers(&replies);
        let sum_d = self.sum(&mut r, 0.0)?;
        let (s1, s2) = self.sum(&mut r, (vec![0.0; d], vec![0.0; d]))?;
        Ok((sum_d, s1, s2))
    }

    fn woodbury(&mut self, _mu: &[f64]) -> Result<bool> {
        // dense rows only: the in-process store has no Woodbury factor for them either
        Ok(false)
    }

    fn woodbury_apply(&mut self, r_w: &[f64], r_b: f64) -> Result<(Vec<f64>, f64)> {
        Ok((r_w.to_vec(), r_b))
    }

    fn hessian(&mut self, p_w: &[f64], shift: f64, pending: Option<f64>) -> Result<HessValue> {
        let replies = self.round("hessian", p_w, &pending_scalars(shift, pending))?;
        self.sum(&mut readers(&replies), (vec![0.0; self.d], 0.0))
    }

    fn step_scores(&mut self, s_w: &[f64], shift: f64, pending: Option<f64>) -> Result<()> {
        self.send_step()?;
        self.step = Some((s_w.to_vec(), pending_scalars(shift, pending)));
        Ok(())
    }

    fn line_terms(&mut self, ts: &[f64]) -> Result<Vec<(f64, f64)>> {
        let replies = self.round("line_terms", &[], ts)?;
        let mut r = readers(&replies);
        ts.iter().map(|_| self.sum(&mut r, (0.0, 0.0))).collect()
    }

    fn trials_per_call(&self) -> usize {
        LINE_POINTS_PER_ROUND
    }

    fn finish_scores(&mut self, w: &[f64], shift: f64) -> Result<()> {
        self.round("finish_scores", w, &[shift]).map(drop)
    }
}
