//! The annealing fits (mi-SVM, MI-SVM, AL-SVM, AW-SVM, ALP-SVM; linear) over partitions of
//! the bags held elsewhere (the workers of a Dask cluster): [`PartitionLabels`] is one
//! partition's rows and labels, answering rounds; [`fit_distributed`] is the driver, which runs
//! the heuristic's rounds ([`AnnealingValidParams::heuristic_rounds`]) or the temperatures
//! ([`AnnealingValidParams::annealing_rounds`]; the means of KL, entropy and the temperature
//! terms combined from the partitions' nodes over the positive bags) and the Newton-CG driver
//! ([`crate::solver::linear::drive`]) on `d`-vectors and scalars, every sum combined from the
//! partitions' nodes in the fixed tree over the bags: the fit in one process, bit for bit.
//!
//! The cycle rule compares labellings by a hash: in process, FNV-1a over every label in row
//! order ([`labelling_hash`]); here, FNV-1a over the partitions' own FNV-1a hashes in partition
//! order (each computed where its labels are, in parallel). Both are 64-bit hashes of the
//! whole labelling; they differ only in which pairs of labellings collide (probability about
//! `k^2 / 2^65` among `k` rounds), so the rounds are the same.

use ndarray::{Array1, Array2};

use super::bookkeeping::{entropy_term, kl_term, temperature_term, BinaryData};
use super::run::{labelling_hash, max_abs_diff, Annealed, Measures, Relabelling, FNV_OFFSET};
use super::{AnnealingFit, AnnealingMethod, AnnealingValidParams};
use crate::bags::{validate_bag_ptr, Instances};
use crate::error::{invalid_data, invalid_param, Result};
use crate::model::{Model, Pooling};
use crate::params::{KernelKind, SvmRoute};
use crate::solver::linear::{
    drive, get_nodes, put_nodes, stack_weights, Answer, Dispatch, OwnedPart, Reader, RemoteParts,
    LINEAR_TOL,
};
use crate::tree_sum::{combine, partial_bags};

/// The per-bag targets (`+1` for class 1) and costs (`C` times the class weight) of the
/// binary problem of `labels` (class indices 0 and 1), as the in-process fit sets them.
pub(crate) fn binary_problem(
    params: &AnnealingValidParams,
    labels: &[usize],
) -> Result<(Vec<f64>, Vec<f64>)> {
    if labels.iter().any(|&l| l > 1) || !labels.contains(&0) || !labels.contains(&1) {
        return Err(invalid_data(
            "a distributed fit needs two classes (class indices 0 and 1), each with a bag",
        ));
    }
    params.class_weight.validate(2)?;
    let targets: Vec<f64> = labels
        .iter()
        .map(|&l| if l == 1 { 1.0 } else { -1.0 })
        .collect();
    let costs = params
        .class_weight
        .bag_weights(&targets, labels)
        .iter()
        .map(|w| params.c * w)
        .collect();
    Ok((targets, costs))
}

/// Checks that `params` take the distributed route: any annealing method (mi-SVM, MI-SVM,
/// AL-SVM, AW-SVM, ALP-SVM) with the linear kernel and the linear solver.
pub(crate) fn check_distributed(params: &AnnealingValidParams) -> Result<()> {
    if params.kernel != KernelKind::Linear || params.route() != SvmRoute::Linear {
        return Err(invalid_param(
            "a distributed fit supports miSVM, MISVM, ALSVM, AWSVM and ALPSVM with \
             kernel='linear' (the linear solver)"
                .to_string(),
        ));
    }
    Ok(())
}

/// The checks of an in-process fit's bags (offsets, finite values) for a partition's rows `x`
/// with offsets `bag_ptr`, its first bag `lo` of the whole (a partition without bags passes).
pub(crate) fn check_partition(x: &Instances, bag_ptr: &[usize], lo: usize) -> Result<()> {
    if bag_ptr.len() > 1 {
        validate_bag_ptr(bag_ptr, x.n_rows())?;
        if let Some(row) = x.rows().first_non_finite_row() {
            let bag = bag_ptr.partition_point(|&p| p <= row) - 1;
            return Err(invalid_data(format!(
                "bag {} has a non-finite value (NaN or infinity) in instance {}",
                lo + bag,
                row - bag_ptr[bag]
            )));
        }
    }
    Ok(())
}

/// One partition of a distributed fit: the rows of its bags (owned) with their labels `p`,
/// answering the driver's rounds ([`PartitionLabels::answer`]).
pub(crate) struct PartitionLabels {
    part: OwnedPart,
    params: AnnealingValidParams,
    /// This partition's bag offsets into its rows.
    ptr: Vec<usize>,
    lo: usize,
    n_bags: usize,
    targets: Vec<f64>,
    costs: Vec<f64>,
    p: Vec<f64>,
    /// The labels at the start of the temperature (the annealing methods).
    start: Vec<f64>,
}

impl PartitionLabels {
    /// The bags `[lo, lo + m)` of a data set of `n_bags` bags: their dense rows `x` with `m + 1`
    /// offsets `bag_ptr`, and each bag's target and cost ([`binary_problem`]).
    pub(crate) fn new(
        params: AnnealingValidParams,
        x: Instances,
        bag_ptr: Vec<usize>,
        lo: usize,
        n_bags: usize,
        targets: Vec<f64>,
        costs: Vec<f64>,
    ) -> Result<Self> {
        check_distributed(&params)?;
        let m = bag_ptr.len().saturating_sub(1);
        if targets.len() != m || costs.len() != m {
            return Err(invalid_data(format!(
                "a partition of {m} bags needs {m} targets and costs, got {} and {}",
                targets.len(),
                costs.len()
            )));
        }
        check_partition(&x, &bag_ptr, lo)?;
        let part = OwnedPart::new(x, &bag_ptr, lo, n_bags)?;
        Ok(Self {
            part,
            params,
            ptr: bag_ptr,
            lo,
            n_bags,
            targets,
            costs,
            p: Vec::new(),
            start: Vec::new(),
        })
    }

    fn data(&self) -> BinaryData<'_> {
        BinaryData {
            bag_ptr: &self.ptr,
            targets: &self.targets,
            costs: self.costs.clone(),
        }
    }

    /// This partition's canonical nodes of `sum_i term(rows of bag i)` over its positive bags
    /// in the tree over every bag ([`crate::tree_sum::partial_bags`]), appended to `out`.
    fn positive_nodes<F>(&self, term: F, out: &mut Vec<f64>)
    where
        F: Fn(std::ops::Range<usize>) -> f64 + Sync,
    {
        let m = self.targets.len();
        let mut global = vec![0; self.n_bags + 1];
        global[self.lo..=self.lo + m].copy_from_slice(&self.ptr);
        global[self.lo + m..].fill(self.part.n_rows());
        let (lo, targets, global) = (self.lo, &self.targets, &global);
        let nodes = partial_bags(global, lo, lo + m, 0.0, |k, acc: &mut f64| {
            if targets[k - lo] > 0.0 {
                *acc = term(global[k]..global[k + 1]);
                true
            } else {
                false
            }
        });
        put_nodes(&nodes, out);
    }

    /// Answers one round: the labels' rounds (`init`, `costs`, `relabel`, `p_hat`, `labels`,
    /// `fold_values`; the annealing's `witness_costs`, `mark`, `update` and `measures`) here,
    /// the solver's ([`OwnedPart::answer`]) by the rows.
    pub(crate) fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        let method = self.params.method;
        Ok(match op {
            "init" => {
                self.p = self.data().initial_p(method, self.params.init);
                hash_words(labelling_hash(FNV_OFFSET, &self.p)).to_vec()
            }
            "costs" => {
                let n = self.part.n_rows();
                let (mut cp, mut cn) = (vec![0.0; n], vec![0.0; n]);
                self.data().costs_into(method, &self.p, &mut cp, &mut cn);
                self.part.set_costs(cp, cn);
                Vec::new()
            }
            "witness_costs" => {
                let n = self.part.n_rows();
                let (mut cp, mut cn) = (vec![0.0; n], vec![0.0; n]);
                let data = self.data();
                let w = data.witnesses(&self.p, self.params.eps);
                data.costs_into(method, &w, &mut cp, &mut cn);
                self.part.set_costs(cp, cn);
                Vec::new()
            }
            "mark" => {
                self.start.clone_from(&self.p);
                Vec::new()
            }
            "update" => {
                // s = [T]: the nodes of the KL's sum between the new labels and these
                let temp = scalar(s)?;
                let q = self.p.clone();
                let mut p = std::mem::take(&mut self.p);
                self.data()
                    .update_p(method, self.part.scores(), temp, &self.params, &mut p);
                self.p = p;
                let mut out = Vec::new();
                self.positive_nodes(|r| kl_term(method, &self.p, &q, r), &mut out);
                out
            }
            "measures" => {
                // s = [T]: the nodes of the temperature terms, the entropy and the KL from
                // the temperature's start, then the largest change from it
                let temp = scalar(s)?;
                let (p, start, params) = (&self.p, &self.start, &self.params);
                let mut out = Vec::new();
                self.positive_nodes(|r| temperature_term(method, p, temp, params, r), &mut out);
                self.positive_nodes(|r| entropy_term(p, r), &mut out);
                self.positive_nodes(|r| kl_term(method, p, start, r), &mut out);
                out.push(max_abs_diff(p, start));
                out
            }
            "relabel" => {
                let q = self.p.clone();
                let mut p = std::mem::take(&mut self.p);
                let data = self.data();
                data.update_p(method, self.part.scores(), 0.0, &self.params, &mut p);
                let same = p == q;
                let changed = data.changed_units(method, &p, &q);
                let [hi, lo] = hash_words(labelling_hash(FNV_OFFSET, &p));
                self.p = p;
                vec![f64::from(u8::from(same)), changed as f64, hi, lo]
            }
            "p_hat" => {
                // the terms of BinaryData::p_hat, as this partition's nodes in the tree over
                // every bag
                let threshold = if method.labels_instances() {
                    0.5
                } else {
                    self.params.eps
                };
                let mut global = vec![0; self.n_bags + 1];
                let n = self.part.n_rows();
                global[self.lo..=self.lo + self.targets.len()].copy_from_slice(&self.ptr);
                global[self.lo + self.targets.len()..].fill(n);
                let (lo, p, targets) = (self.lo, &self.p, &self.targets);
                let nodes =
                    partial_bags(&global, lo, lo + targets.len(), 0.0, |k, acc: &mut f64| {
                        if targets[k - lo] > 0.0 {
                            let bag = &p[global[k]..global[k + 1]];
                            *acc = bag.iter().filter(|&&v| v > threshold).count() as f64
                                / bag.len() as f64;
                            true
                        } else {
                            false
                        }
                    });
                let mut out = Vec::new();
                put_nodes(&nodes, &mut out);
                out.push(targets.iter().filter(|&&t| t > 0.0).count() as f64);
                out
            }
            "labels" => self.p.clone(),
            "fold_values" => fold_values(self.part.rows(), s),
            _ => self.part.answer(op, v, s)?,
        })
    }
}

/// The round `fold_values` of a partition's rows `x`: the running (sum, sum of squares) of
/// [`Instances::mean_var`] continued from `s` (the width rule `gamma = "scale"`, partition
/// after partition).
pub(crate) fn fold_values(x: &Instances, s: &[f64]) -> Vec<f64> {
    let (mut a, mut b) = (
        s.first().copied().unwrap_or(0.0),
        s.get(1).copied().unwrap_or(0.0),
    );
    let mut add = |v: f64| {
        a += v;
        b += v * v;
    };
    match x {
        Instances::Dense(x) => x.as_slice().iter().for_each(|&v| add(v)),
        Instances::Dense32(x) => x.as_slice().iter().for_each(|&v| add(f64::from(v))),
        Instances::Sparse(x) => x.data().iter().for_each(|&v| add(v)),
    }
    vec![a, b]
}

impl Answer for PartitionLabels {
    fn answer(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<f64>> {
        PartitionLabels::answer(self, op, v, s)
    }
    fn held_bytes(&self) -> usize {
        use std::mem::size_of_val;
        let vectors = [&self.targets, &self.costs, &self.p, &self.start];
        self.part.held_bytes()
            + size_of_val(&self.ptr[..])
            + vectors.iter().map(|v| size_of_val(&v[..])).sum::<usize>()
    }
}

/// The one scalar of a round's `s`.
pub(crate) fn scalar(s: &[f64]) -> Result<f64> {
    match s {
        [t] => Ok(*t),
        _ => Err(invalid_data(format!(
            "this round takes one scalar, got {}",
            s.len()
        ))),
    }
}

/// A hash as two exact `f64` words (high and low 32 bits).
fn hash_words(h: u64) -> [f64; 2] {
    [(h >> 32) as f64, (h & 0xffff_ffff) as f64]
}

fn hash_of(hi: f64, lo: f64) -> u64 {
    ((hi as u64) << 32) | (lo as u64)
}

/// The labelling hash of the partitions' hashes ([`fit_distributed`]'s module docs).
fn chain(hashes: &[u64]) -> u64 {
    let as_values: Vec<f64> = hashes.iter().map(|&h| f64::from_bits(h)).collect();
    labelling_hash(FNV_OFFSET, &as_values)
}

/// The first `k` words of every reply.
fn words(replies: &[Vec<f64>], k: usize) -> Result<Vec<&[f64]>> {
    replies
        .iter()
        .map(|r| {
            r.get(..k)
                .ok_or_else(|| invalid_data("a partition's reply ended early"))
        })
        .collect()
}

/// The driver's [`Relabelling`]: the labels held by the partitions, the SVM step solved over
/// them ([`RemoteParts`]).
struct RemoteLabels<'a, D> {
    params: &'a AnnealingValidParams,
    store: RemoteParts<D>,
    mean: Vec<f64>,
    warm: Option<(Vec<f64>, f64)>,
}

/// One SVM step over the partitions: the round `op` sets each partition's costs from its labels,
/// then the Newton-CG driver runs its rounds, warm-started from the previous step's `(w, b)`.
fn remote_solve<D: Dispatch>(
    params: &AnnealingValidParams,
    store: &mut RemoteParts<D>,
    mean: &[f64],
    warm: &mut Option<(Vec<f64>, f64)>,
    op: &str,
) -> Result<f64> {
    let cancel = params.observer.cancel().clone();
    cancel.check()?;
    store.round(op, &[], &[])?;
    let start = warm.as_ref().map(|(w, b)| (w.as_slice(), *b, true));
    let out = drive(
        store,
        Some(mean),
        start,
        params.inner_tol.unwrap_or(LINEAR_TOL),
        params.inner_max_iter,
        &cancel,
    )?;
    *warm = Some((out.w, out.b));
    Ok(out.value)
}

impl<D: Dispatch> Relabelling for RemoteLabels<'_, D> {
    fn solve(&mut self) -> Result<f64> {
        remote_solve(
            self.params,
            &mut self.store,
            &self.mean,
            &mut self.warm,
            "costs",
        )
    }

    fn relabel(&mut self) -> Result<Option<(usize, u64)>> {
        let replies = self.store.round("relabel", &[], &[])?;
        let (mut same, mut changed, mut hashes) = (true, 0, Vec::with_capacity(replies.len()));
        for w in words(&replies, 4)? {
            same &= w[0] != 0.0;
            changed += Reader::new(&w[1..2]).count()?;
            hashes.push(hash_of(w[2], w[3]));
        }
        Ok((!same).then_some((changed, chain(&hashes))))
    }
}

/// The driver's [`Annealed`]: the labels held by the partitions, the SVM step solved over
/// them ([`RemoteParts`]), every mean combined from the partitions' nodes in the tree over
/// the bags and divided as [`BinaryData`] divides it.
struct RemoteAnneal<'a, D> {
    params: &'a AnnealingValidParams,
    data: &'a BinaryData<'a>,
    store: RemoteParts<D>,
    mean: Vec<f64>,
    warm: Option<(Vec<f64>, f64)>,
}

impl<D: Dispatch> Annealed for RemoteAnneal<'_, D> {
    fn solve(&mut self, witnesses: bool) -> Result<f64> {
        let op = if witnesses { "witness_costs" } else { "costs" };
        remote_solve(self.params, &mut self.store, &self.mean, &mut self.warm, op)
    }

    fn mark_start(&mut self) -> Result<()> {
        self.store.round("mark", &[], &[])?;
        Ok(())
    }

    fn update(&mut self, temp: f64) -> Result<f64> {
        let replies = self.store.round("update", &[], &[temp])?;
        let mut nodes = Vec::new();
        for r in &replies {
            nodes.extend(get_nodes(&0.0, &mut Reader::new(r))?);
        }
        let total = combine(self.data.targets.len(), nodes, 0.0)?;
        let units = self.data.relabel_units(self.params.method);
        Ok(self.data.per_unit(total, units))
    }

    fn measures(&mut self, temp: f64) -> Result<Measures> {
        let replies = self.store.round("measures", &[], &[temp])?;
        let (mut terms, mut entropy, mut kl) = (Vec::new(), Vec::new(), Vec::new());
        let mut max_diff = 0.0_f64;
        for r in &replies {
            let mut at = Reader::new(r);
            terms.extend(get_nodes(&0.0, &mut at)?);
            entropy.extend(get_nodes(&0.0, &mut at)?);
            kl.extend(get_nodes(&0.0, &mut at)?);
            max_diff = max_diff.max(at.next()?);
        }
        let (data, n_bags) = (self.data, self.data.targets.len());
        Ok(Measures {
            terms: combine(n_bags, terms, 0.0)?,
            entropy: data.per_unit(
                combine(n_bags, entropy, 0.0)?,
                data.relabel_units(AnnealingMethod::MiSvm),
            ),
            max_diff,
            kl_start: data.per_unit(
                combine(n_bags, kl, 0.0)?,
                data.relabel_units(self.params.method),
            ),
        })
    }
}

/// The fit of [`crate::annealing::AnnealingParams`] (any method, linear; two classes)
/// on bags held by the partitions that `dispatch` reaches, built with [`PartitionLabels`] from
/// the bags' offsets `bag_ptr` (all of them), `labels` and the width `gamma` resolved for
/// them: the [`AnnealingFit`] of the same fit in one process.
pub(crate) fn fit_distributed(
    params: &AnnealingValidParams,
    dispatch: impl Dispatch,
    bag_ptr: &[usize],
    labels: &[usize],
    n_features: usize,
    gamma: f64,
) -> Result<AnnealingFit> {
    check_distributed(params)?;
    validate_bag_ptr(bag_ptr, bag_ptr.last().copied().unwrap_or(0))?;
    if labels.len() + 1 != bag_ptr.len() {
        return Err(invalid_data(format!(
            "{} labels for {} bags",
            labels.len(),
            bag_ptr.len() - 1
        )));
    }
    let (targets, costs) = binary_problem(params, labels)?;
    let n_bags = labels.len();
    let n = bag_ptr[n_bags];
    let d = n_features;
    let mut store = RemoteParts::new(dispatch, n_bags, n, d);
    use crate::solver::linear::RowStore;
    let mean = store.mean()?;
    let replies = store.round("init", &[], &[])?;
    let first: Vec<u64> = words(&replies, 2)?
        .iter()
        .map(|w| hash_of(w[0], w[1]))
        .collect();
    let data = BinaryData {
        bag_ptr,
        targets: &targets,
        costs,
    };
    let (rounds, temperatures, w, b, mut store) = if params.method.is_heuristic() {
        let units = data.relabel_units(params.method);
        let mut labels_store = RemoteLabels {
            params,
            store,
            mean,
            warm: None,
        };
        let out = params.heuristic_rounds(&mut labels_store, units, chain(&first), 0)?;
        let (w, b) = labels_store.warm.take().unwrap_or((vec![0.0; d], 0.0));
        let rounds = (out.history, out.n_iter, out.n_solves, out.stop_reason);
        (rounds, Vec::new(), w, b, labels_store.store)
    } else {
        let mut anneal = RemoteAnneal {
            params,
            data: &data,
            store,
            mean,
            warm: None,
        };
        let out = params.annealing_rounds(&mut anneal, 0)?;
        let (w, b) = anneal.warm.take().unwrap_or((vec![0.0; d], 0.0));
        let rounds = (out.history, out.n_iter, out.n_solves, out.stop_reason);
        (rounds, out.temperatures, w, b, anneal.store)
    };
    let (history, n_iter, n_solves, stop_reason) = rounds;
    let replies = store.round("p_hat", &[], &[])?;
    let (mut nodes, mut positive) = (Vec::new(), 0);
    for r in &replies {
        let mut at = Reader::new(r);
        nodes.extend(get_nodes(&0.0, &mut at)?);
        positive += at.count()?;
    }
    let total = combine(n_bags, nodes, 0.0)?;
    let p_hat = if positive == 0 {
        0.0
    } else {
        total / positive as f64
    };
    let p: Vec<f64> = store.round("labels", &[], &[])?.concat();
    if p.len() != n {
        return Err(invalid_data(format!(
            "the partitions hold {} labels for {n} instances",
            p.len()
        )));
    }
    let beta = Array1::from_vec(w);
    let xv = stack_weights(&[&beta], d);
    let model = Model::new(
        params.kernel.with_gamma(gamma),
        xv,
        Array2::eye(1),
        Array1::from_vec(vec![b]),
        2,
        Pooling::Max,
    );
    Ok(AnnealingFit {
        model,
        p: vec![p],
        p_hat: vec![p_hat],
        objective_history: vec![history],
        temperatures: vec![temperatures],
        n_iter: vec![n_iter],
        n_solves: vec![n_solves],
        stop_reason: vec![stop_reason],
        gamma,
        solver: SvmRoute::Linear,
        n_xv: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annealing::AnnealingParams;
    use crate::bags::Bags;
    use crate::fit::{Fit, ParamGuard};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use crate::solver::linear::{drops_for, restores_for, rows_of, Dropping, Local, Recovering};

    /// Bags of 2 to 9 rows; a positive bag has one to three rows moved along two features.
    fn bags(seed: u64, n_bags: usize, d: usize) -> (Array2<f64>, Vec<usize>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut ptr, mut labels, mut rows) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n_bags {
            let m = rng.random_range(2..=9);
            let positive = i % 3 != 0;
            let witnesses = if positive { rng.random_range(1..=3) } else { 0 };
            for r in 0..m {
                for k in 0..d {
                    let mut v = 2.0 + rng.random::<f64>() * 2.0 - 1.0;
                    if r < witnesses && k < 2 {
                        v += 1.2;
                    }
                    rows.push(v);
                }
            }
            ptr.push(ptr[i] + m);
            labels.push(usize::from(positive));
        }
        let x = Array2::from_shape_vec((ptr[n_bags], d), rows).unwrap();
        (x, ptr, labels)
    }

    /// The `make` of [`Local::split`] for the bags `x`, `ptr`, `labels` (in `f32` rows when
    /// `single`): the partition of the bags `[lo, hi)`, with `local` their offsets into its own
    /// rows, and their targets and costs of `params`'s binary problem.
    fn partitions<'a>(
        params: &'a AnnealingValidParams,
        x: &'a Array2<f64>,
        ptr: &'a [usize],
        labels: &[usize],
        single: bool,
    ) -> impl Fn(usize, usize, Vec<usize>) -> PartitionLabels + 'a {
        let (targets, costs) = binary_problem(params, labels).unwrap();
        move |lo, hi, local| {
            PartitionLabels::new(
                params.clone(),
                rows_of(x, ptr[lo], ptr[hi], single),
                local,
                lo,
                ptr.len() - 1,
                targets[lo..hi].to_vec(),
                costs[lo..hi].to_vec(),
            )
            .unwrap()
        }
    }

    /// `fit` equals `expected`, and its scores and objective history do to the bit.
    fn assert_same_fit(fit: &AnnealingFit, expected: &AnnealingFit, what: &str) {
        assert_eq!(fit, expected, "{what}");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fit.p[0]), bits(&expected.p[0]), "{what}");
        assert_eq!(
            bits(&fit.objective_history[0]),
            bits(&expected.objective_history[0]),
            "{what}"
        );
    }

    /// mi-SVM and MI-SVM, linear, f64 and f32 rows, over 1, 2, 3, 5 and 7 partitions (an
    /// empty one among them): the whole fit record equals the in-process fit's.
    #[test]
    fn a_fit_over_partitions_is_the_fit_in_one_process() {
        let (x, ptr, labels) = bags(5, 150, 4);
        let n_bags = labels.len();
        for single in [false, true] {
            let whole_bags = Bags::new(rows_of(&x, 0, ptr[n_bags], single), ptr.clone()).unwrap();
            for method in [
                AnnealingParams::mi_svm(),
                AnnealingParams::big_mi_svm(),
                AnnealingParams::al(),
                AnnealingParams::aw(),
                AnnealingParams::alp(),
            ] {
                let params = method.kernel(KernelKind::Linear).c(1.0).check().unwrap();
                let whole = params.fit(&whole_bags, &labels).unwrap();
                assert!(whole.n_iter[0] > 1);
                let make = partitions(&params, &x, &ptr, &labels, single);
                for parts in [1, 2, 3, 5, 7] {
                    let kernels = Local::split(&ptr, parts, &make);
                    let fit =
                        fit_distributed(&params, kernels, &ptr, &labels, 4, whole.gamma).unwrap();
                    let what = format!("{:?}, {parts} partitions", params.method);
                    assert_same_fit(&fit, &whole, &what);
                }
            }
        }
    }

    /// A dispatcher that keeps each round's name and number of scalars.
    struct Logging<D> {
        inner: D,
        rounds: Vec<(String, usize)>,
    }

    impl<D: Dispatch> Dispatch for Logging<D> {
        fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> Result<Vec<Vec<f64>>> {
            self.rounds.push((op.to_string(), s.len()));
            self.inner.round(op, v, s)
        }
    }

    #[test]
    fn a_round_carries_what_the_driver_knows_before() {
        let (x, ptr, labels) = bags(5, 150, 4);
        let whole_bags = Bags::new(rows_of(&x, 0, ptr[labels.len()], false), ptr.clone()).unwrap();
        let params = AnnealingParams::mi_svm()
            .kernel(KernelKind::Linear)
            .c(1.0)
            .check()
            .unwrap();
        let whole = params.fit(&whole_bags, &labels).unwrap();
        let make = partitions(&params, &x, &ptr, &labels, false);
        let mut log = Logging {
            inner: Local::split(&ptr, 3, &make),
            rounds: Vec::new(),
        };
        let fit = fit_distributed(&params, &mut log, &ptr, &labels, 4, whole.gamma).unwrap();
        assert_same_fit(&fit, &whole, "rounds logged");
        let of = |name: &str| -> Vec<usize> {
            log.rounds
                .iter()
                .filter(|(op, _)| op == name)
                .map(|&(_, n)| n)
                .collect()
        };
        // the gradient's rounds mark the step's rows: no round of their own
        assert!(of("activate").is_empty());
        // every step's scores go out with the line search's first trial (t = 0, 1, 2)
        let steps = of("step_scores");
        assert!(
            !steps.is_empty() && steps.iter().all(|&n| n == 3 + 3),
            "{steps:?}"
        );
        // a bisection's trial sums the bisections after it
        let trials = of("line_terms");
        assert!(trials.iter().any(|&n| n > 1), "{trials:?}");
    }

    /// What a partition says it holds ([`Answer::held_bytes`]): its rows in their own type
    /// (the same bags in f64 hold 4 bytes a value more than in f32, the state being the same),
    /// and the fit's per-row state, which a fit run on it leaves allocated.
    #[test]
    fn a_partition_s_bytes_are_its_rows_and_its_state() {
        let (x, ptr, labels) = bags(5, 60, 4);
        let params = AnnealingParams::mi_svm()
            .kernel(KernelKind::Linear)
            .check()
            .unwrap();
        let held = |single: bool, fit: bool| {
            let mut kernels = Local::split(&ptr, 1, partitions(&params, &x, &ptr, &labels, single));
            if fit {
                fit_distributed(&params, &mut kernels, &ptr, &labels, 4, 1.0).unwrap();
            }
            kernels.0[0].held_bytes()
        };
        let (f32_rows, f64_rows) = (held(true, false), held(false, false));
        assert_eq!(f64_rows - f32_rows, 4 * x.len());
        assert!(f32_rows >= 4 * x.len() + 8 * (x.nrows() + labels.len()));
        assert!(
            held(true, true) >= f32_rows + 4 * 8 * x.nrows(),
            "f, g, D, z a row"
        );
    }

    /// mi-SVM, MI-SVM and AL-SVM over 3 partitions (one empty) whose states are dropped at the
    /// first and the middle round of every kind (within line searches, Newton steps, relabelling
    /// and temperature steps), and all at once: one restore round per drop, and the whole fit
    /// record equals the undisturbed fit's, bit for bit. With no restore allowed: an error.
    #[test]
    fn a_fit_that_loses_partitions_is_the_undisturbed_fit() {
        let (x, ptr, labels) = bags(5, 60, 4);
        let kinds = [
            (AnnealingParams::mi_svm(), false),
            (AnnealingParams::big_mi_svm(), true),
            (AnnealingParams::al(), false),
        ];
        for (method, single) in kinds {
            let params = method.kernel(KernelKind::Linear).c(1.0).check().unwrap();
            let cuts = Local::split(&ptr, 3, |lo, hi, local| (lo, hi, local)).0;
            let partition = partitions(&params, &x, &ptr, &labels, single);
            let make = |k: usize| {
                let (lo, hi, local) = cuts[k].clone();
                partition(lo, hi, local)
            };
            let fit_with = |drops: Vec<(u64, usize)>, retries: usize| {
                let mut driver = Recovering::new(Dropping::new(cuts.len(), make, drops), retries);
                let fit = fit_distributed(&params, &mut driver, &ptr, &labels, 4, 1.0);
                (
                    fit,
                    driver.restores(),
                    std::mem::take(&mut driver.link().ops),
                )
            };
            let (undisturbed, _, ops) = fit_with(Vec::new(), 0);
            let undisturbed = undisturbed.unwrap();
            let drops = drops_for(&ops, cuts.len());
            let (fit, restores, _) = fit_with(drops.clone(), drops.len());
            let fit = fit.unwrap();
            assert_eq!(restores, restores_for(&drops), "{:?}", params.method);
            assert_same_fit(&fit, &undisturbed, &format!("{:?}", params.method));
            let (failed, _, _) = fit_with(vec![(ops.len() as u64 / 2, 0)], 0);
            let err = failed.unwrap_err().to_string();
            assert!(err.contains("no restore is left"), "{err}");
        }
    }

    #[test]
    fn bad_partitions_are_refused() {
        let (x, ptr, labels) = bags(1, 6, 3);
        let params = AnnealingParams::mi_svm()
            .kernel(KernelKind::Linear)
            .check()
            .unwrap();
        let (targets, costs) = binary_problem(&params, &labels).unwrap();
        let mut nan = x.clone();
        nan[[ptr[4] + 1, 2]] = f64::NAN;
        let err = PartitionLabels::new(
            params.clone(),
            Instances::from(nan.slice(ndarray::s![ptr[3]..ptr[6], ..]).to_owned()),
            ptr[3..].iter().map(|&r| r - ptr[3]).collect(),
            3,
            6,
            targets[3..].to_vec(),
            costs[3..].to_vec(),
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().contains("bag 4 has a non-finite value"),
            "{err}"
        );
        let rbf = AnnealingParams::al().check().unwrap();
        assert!(check_distributed(&rbf).is_err());
        assert!(binary_problem(&params, &[0, 2, 1]).is_err());
        let mut kernel =
            PartitionLabels::new(params, Instances::from(x), ptr, 0, 6, targets, costs).unwrap();
        assert!(kernel.answer("no such round", &[], &[]).is_err());
        assert!(kernel.answer("hessian", &[1.0], &[0.0, 0.0, 0.0]).is_err());
        assert!(kernel.answer("mean", &[], &[]).is_err());
        // the line search's rounds: no point, or the step's scalars cut short
        assert!(kernel.answer("line_terms", &[], &[]).is_err());
        let s_w = [0.0; 3];
        assert!(kernel.answer("step_scores", &s_w, &[0.0]).is_err());
        assert!(kernel.answer("step_scores", &s_w, &[0.0, 0.0]).is_err());
        // after the gradient (which marks the step's rows), the step's scores with no point of
        // the line search sum none; with two, two sums of the same shape as a trial's
        kernel.answer("set_scores", &s_w, &[0.0]).unwrap();
        kernel.answer("first_gradient", &[], &[]).unwrap();
        let none = kernel
            .answer("step_scores", &s_w, &[0.0, 0.0, 0.0])
            .unwrap();
        assert!(none.is_empty());
        let two = kernel
            .answer("step_scores", &s_w, &[0.0, 0.0, 0.0, 0.0, 1.0])
            .unwrap();
        let one = kernel.answer("line_terms", &[], &[0.0]).unwrap();
        assert!(!one.is_empty() && two.len() == 2 * one.len());
    }
}
