//! The loop of one binary problem: the annealing schedule (or the mi-SVM / MI-SVM heuristic)
//! around the SVM step, with its stopping rules.

use ndarray::Array1;

use super::bookkeeping::BinaryData;
use super::svm_step::SvmStep;
use super::{AnnealingMethod, AnnealingValidParams};
use crate::error::Result;
use crate::progress::{Progress, StopReason};

/// Temperatures of entropy history the estimate of [`AnnealingValidParams::expected_temperatures`]
/// fits its trend on.
const TREND_WINDOW: usize = 4;

impl AnnealingValidParams {
    /// The number of temperatures the annealing is expected to run, after the temperatures
    /// whose mean entropy of `p` is `entropies` (at most `cap`, at least one more than run, since
    /// the caller reports before its stopping test).
    ///
    /// Two estimates, the smaller wins. (a) The schedule: once `T <= eps C` the loop stops when
    /// `p` no longer moves with `T` (AL, ALP), which it soon does, so the step where
    /// `T0 / decay^k` reaches `eps C` bounds the run. (b) The entropy: it falls about
    /// geometrically per temperature once the labels start to settle; the log-linear trend of the
    /// last few temperatures, extrapolated to `eps`, says when the entropy rule fires. The
    /// estimate is only a forecast for progress bars (the stopping rules decide).
    pub(super) fn expected_temperatures(&self, entropies: &[f64], cap: usize) -> usize {
        let done = entropies.len();
        let t0 = self.t0.unwrap_or(10.0 * self.c);
        let cold = self.eps * self.c;
        let mut expected = if t0 > cold {
            ((t0 / cold).ln() / self.decay.ln()).ceil() as usize + 1
        } else {
            1
        };
        if done >= TREND_WINDOW {
            let recent = &entropies[done - TREND_WINDOW..];
            let (first, last) = (recent[0].max(1e-300), recent[TREND_WINDOW - 1].max(1e-300));
            let slope = (last.ln() - first.ln()) / (TREND_WINDOW - 1) as f64;
            if slope < 0.0 {
                let more = ((self.eps.ln() - last.ln()) / slope).max(0.0).ceil();
                if more.is_finite() {
                    expected = expected.min(done + more as usize);
                }
            }
        }
        expected.max(done + 1).min(cap).max(done)
    }

    /// One binary problem: the annealing loop (or the heuristic) around the SVM step.
    pub(super) fn run_binary(
        &self,
        mut svm: SvmStep,
        data: &BinaryData,
        problem: usize,
    ) -> Result<BinaryRun> {
        let method = self.method;
        let n = data.n_instances();
        let mut p = data.initial_p(method, self.init);
        let mut c_pos = vec![0.0; n];
        let mut c_neg = vec![0.0; n];
        let mut f = vec![0.0; n];
        let (history, temperatures, n_iter, n_solves, stop_reason) = if method.is_heuristic() {
            let mut local = LocalLabels {
                svm: &mut svm,
                data,
                params: self,
                p: &mut p,
                f: &mut f,
                c_pos: &mut c_pos,
                c_neg: &mut c_neg,
            };
            let first = labelling_hash(FNV_OFFSET, local.p);
            let rounds =
                self.heuristic_rounds(&mut local, data.relabel_units(method), first, problem)?;
            (
                rounds.history,
                Vec::new(),
                rounds.n_iter,
                rounds.n_solves,
                rounds.stop_reason,
            )
        } else {
            let mut local = LocalAnneal {
                svm: &mut svm,
                data,
                params: self,
                p: &mut p,
                start: Vec::new(),
                f: &mut f,
                c_pos: &mut c_pos,
                c_neg: &mut c_neg,
            };
            let rounds = self.annealing_rounds(&mut local, problem)?;
            (
                rounds.history,
                rounds.temperatures,
                rounds.n_iter,
                rounds.n_solves,
                rounds.stop_reason,
            )
        };
        let (beta, b) = svm.coef(n);
        let p_hat = data.p_hat(method, &p, self.eps);
        Ok(BinaryRun {
            beta,
            b,
            p,
            p_hat,
            objective_history: history,
            temperatures,
            n_iter,
            n_solves,
            stop_reason,
        })
    }
}

/// The start of [`labelling_hash`].
pub(super) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// A 64-bit hash of a labelling (FNV-1a over the bits of `p`, from the state `h`: a labelling
/// held in groups of rows is hashed group after group): the cycle rule of the heuristics
/// compares labellings by it (two labellings of equal hash taken as equal: a false match among
/// `k` rounds has probability about `k^2 / 2^65`).
pub(super) fn labelling_hash(mut h: u64, p: &[f64]) -> u64 {
    for v in p {
        for byte in v.to_bits().to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

pub(super) fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// The result of one binary problem.
pub(super) struct BinaryRun {
    pub(super) beta: Array1<f64>,
    pub(super) b: f64,
    pub(super) p: Vec<f64>,
    pub(super) p_hat: f64,
    pub(super) objective_history: Vec<f64>,
    pub(super) temperatures: Vec<f64>,
    pub(super) n_iter: usize,
    pub(super) n_solves: usize,
    pub(super) stop_reason: StopReason,
}

/// The labels of the heuristics (mi-SVM, MI-SVM) and the SVM step on them, wherever the rows
/// are: in process ([`LocalLabels`]) or in groups of bags, each group relabelling its own bags
/// (the rule is per bag) and reporting counts and its part of the hash.
pub(super) trait Relabelling {
    /// Solves the SVM step at the costs of the current labels (warm-started); its objective.
    fn solve(&mut self) -> Result<f64>;
    /// Relabels every positive bag from the scores of the last solve: `None` when no label
    /// changed, else the changed units ([`BinaryData::changed_units`]) and the new labelling's
    /// [`labelling_hash`].
    fn relabel(&mut self) -> Result<Option<(usize, u64)>>;
}

/// The rounds of a heuristic.
pub(super) struct HeuristicRounds {
    pub(super) history: Vec<f64>,
    pub(super) n_iter: usize,
    pub(super) n_solves: usize,
    pub(super) stop_reason: StopReason,
}

impl AnnealingValidParams {
    /// The rounds of mi-SVM / MI-SVM (Andrews et al. 2003): solve, relabel, until no label
    /// changes, at most `eps` of the `units` changeable labels change, or a labelling repeats
    /// (`first`: the hash of the starting one); the last labels are always trained on.
    pub(super) fn heuristic_rounds(
        &self,
        labels: &mut impl Relabelling,
        units: usize,
        first: u64,
        problem: usize,
    ) -> Result<HeuristicRounds> {
        let cap = self.outer_cap();
        let mut out = HeuristicRounds {
            history: Vec::new(),
            n_iter: 0,
            n_solves: 0,
            stop_reason: StopReason::MaxIter,
        };
        // the labellings seen so far (hashes), for the cycle rule
        let mut seen = vec![first];
        for _ in 0..cap {
            out.n_iter += 1;
            out.n_solves += 1;
            let value = labels.solve()?;
            out.history.push(value);
            self.observer.notify(Progress {
                problem,
                step: out.history.len(),
                max_steps: cap,
                objective: value,
                temperature: None,
                expected_steps: cap,
            });
            let Some((changed, hash)) = labels.relabel()? else {
                out.stop_reason = StopReason::Converged;
                break;
            };
            // Few labels changed, or the labelling is one seen before (the rounds would
            // cycle): stopped, the labels of this round trained on below.
            if changed as f64 <= self.eps * units as f64 || seen.contains(&hash) {
                out.stop_reason = StopReason::Converged;
                out.n_solves += 1;
                labels.solve()?;
                break;
            }
            seen.push(hash);
        }
        if out.stop_reason == StopReason::MaxIter {
            // The labels of the last round have not been trained on yet.
            out.n_solves += 1;
            labels.solve()?;
        }
        Ok(out)
    }
}

/// The labels `p` of the annealing methods (AL, AW, ALP) and the SVM step on them, wherever
/// the rows are: in process ([`LocalAnneal`]) or in groups of bags, each group updating its
/// own bags (the update is per bag) and reporting its nodes of the sums over the positive bags
/// in the fixed tree ([`crate::tree_sum`]).
pub(super) trait Annealed {
    /// Solves the SVM step at the costs of the current labels (warm-started), or, with
    /// `witnesses`, of AW-SVM's final witnesses ([`BinaryData::witnesses`]); its objective.
    fn solve(&mut self, witnesses: bool) -> Result<f64>;
    /// Keeps the current labels as the temperature's start.
    fn mark_start(&mut self) -> Result<()>;
    /// Updates every positive bag's labels at temperature `temp` from the last solve's
    /// scores; the mean KL from the previous labels ([`BinaryData::kl`]).
    fn update(&mut self, temp: f64) -> Result<f64>;
    /// The measures at the end of temperature `temp`.
    fn measures(&mut self, temp: f64) -> Result<Measures>;
}

/// The measures of the labels at the end of a temperature.
pub(super) struct Measures {
    /// [`BinaryData::temperature_terms`].
    pub(super) terms: f64,
    /// [`BinaryData::mean_entropy`].
    pub(super) entropy: f64,
    /// The largest change of a label from the temperature's start.
    pub(super) max_diff: f64,
    /// [`BinaryData::kl`] from the temperature's start.
    pub(super) kl_start: f64,
}

/// The temperatures of an annealing run.
pub(super) struct AnnealingRounds {
    pub(super) history: Vec<f64>,
    pub(super) temperatures: Vec<f64>,
    pub(super) n_iter: usize,
    pub(super) n_solves: usize,
    pub(super) stop_reason: StopReason,
}

impl AnnealingValidParams {
    /// The temperatures of AL-SVM, AW-SVM and ALP-SVM (Gehler and Chapelle 2007, Algorithms 1
    /// and 2): at each, alternate the SVM step and the update of `p` until `p` settles (mean
    /// KL below `eps`), then cool by `decay`, until the stopping rule; the last labels are
    /// always trained on (AW: its witnesses).
    pub(super) fn annealing_rounds(
        &self,
        labels: &mut impl Annealed,
        problem: usize,
    ) -> Result<AnnealingRounds> {
        let method = self.method;
        let cap = self.outer_cap();
        let mut out = AnnealingRounds {
            history: Vec::new(),
            temperatures: Vec::new(),
            n_iter: 0,
            n_solves: 0,
            stop_reason: StopReason::MaxIter,
        };
        let mut temp = self.t0.unwrap_or(10.0 * self.c);
        let mut value = 0.0;
        let mut entropies = Vec::new();
        for _ in 0..cap {
            out.n_iter += 1;
            labels.mark_start()?;
            for _ in 0..self.max_alternations {
                out.n_solves += 1;
                value = labels.solve(false)?;
                if labels.update(temp)? < self.eps {
                    break;
                }
            }
            out.temperatures.push(temp);
            let m = labels.measures(temp)?;
            out.history.push(value + m.terms);
            entropies.push(m.entropy);
            self.observer.notify(Progress {
                problem,
                step: out.history.len(),
                max_steps: cap,
                objective: out.history[out.history.len() - 1],
                temperature: Some(temp),
                expected_steps: self.expected_temperatures(&entropies, cap),
            });
            // AW: p no longer changes within a temperature (Algorithm 2). AL / ALP: the
            // entropy is below eps (Algorithm 1), or, once T is below eps C, p no longer
            // changes when T drops, measured as the inner loop measures it (the mean KL
            // between p at the start and at the end of the temperature below eps). ALP's
            // penalty can hold one instance of a bag at a fractional p for every T, so its
            // entropy need not vanish, and that p follows the scores with gain C / C2, so
            // it moves at the level of the SVM step's tolerance however cold T is; at high
            // T, p moves slowly, so the rule waits for a cold temperature.
            let done = match method {
                AnnealingMethod::Aw => m.max_diff <= self.eps,
                _ => m.entropy < self.eps || (temp <= self.eps * self.c && m.kl_start < self.eps),
            };
            if done {
                out.stop_reason = StopReason::Converged;
                break;
            }
            temp /= self.decay;
        }
        // The last update of p has not been trained on yet (AW: relabel first).
        out.n_solves += 1;
        labels.solve(method == AnnealingMethod::Aw)?;
        Ok(out)
    }
}

/// [`Annealed`] in process: every row's labels `p`, scores `f` and costs.
struct LocalAnneal<'s, 'a> {
    svm: &'s mut SvmStep<'a>,
    data: &'s BinaryData<'s>,
    params: &'s AnnealingValidParams,
    p: &'s mut Vec<f64>,
    start: Vec<f64>,
    f: &'s mut Vec<f64>,
    c_pos: &'s mut Vec<f64>,
    c_neg: &'s mut Vec<f64>,
}

impl Annealed for LocalAnneal<'_, '_> {
    fn solve(&mut self, witnesses: bool) -> Result<f64> {
        self.params.observer.cancel().check()?;
        let method = self.params.method;
        if witnesses {
            let w = self.data.witnesses(self.p, self.params.eps);
            self.data.costs_into(method, &w, self.c_pos, self.c_neg);
        } else {
            self.data.costs_into(method, self.p, self.c_pos, self.c_neg);
        }
        let value = self.svm.solve(self.c_pos, self.c_neg)?;
        self.svm.scores_into(self.f);
        Ok(value)
    }

    fn mark_start(&mut self) -> Result<()> {
        self.start.clone_from(self.p);
        Ok(())
    }

    fn update(&mut self, temp: f64) -> Result<f64> {
        let method = self.params.method;
        let q = self.p.clone();
        self.data
            .update_p(method, self.f, temp, self.params, self.p);
        Ok(self.data.kl(method, self.p, &q))
    }

    fn measures(&mut self, temp: f64) -> Result<Measures> {
        let (method, params) = (self.params.method, self.params);
        Ok(Measures {
            terms: self.data.temperature_terms(method, self.p, temp, params),
            entropy: self.data.mean_entropy(self.p),
            max_diff: max_abs_diff(self.p, &self.start),
            kl_start: self.data.kl(method, self.p, &self.start),
        })
    }
}

/// [`Relabelling`] in process: every row's labels `p`, scores `f` and costs.
struct LocalLabels<'s, 'a> {
    svm: &'s mut SvmStep<'a>,
    data: &'s BinaryData<'s>,
    params: &'s AnnealingValidParams,
    p: &'s mut Vec<f64>,
    f: &'s mut Vec<f64>,
    c_pos: &'s mut Vec<f64>,
    c_neg: &'s mut Vec<f64>,
}

impl Relabelling for LocalLabels<'_, '_> {
    fn solve(&mut self) -> Result<f64> {
        self.params.observer.cancel().check()?;
        let method = self.params.method;
        self.data.costs_into(method, self.p, self.c_pos, self.c_neg);
        let value = self.svm.solve(self.c_pos, self.c_neg)?;
        self.svm.scores_into(self.f);
        Ok(value)
    }

    fn relabel(&mut self) -> Result<Option<(usize, u64)>> {
        let method = self.params.method;
        let q = self.p.clone();
        self.data.update_p(method, self.f, 0.0, self.params, self.p);
        if *self.p == q {
            return Ok(None);
        }
        let changed = self.data.changed_units(method, self.p, &q);
        Ok(Some((changed, labelling_hash(FNV_OFFSET, self.p))))
    }
}

#[cfg(test)]
mod grouped_tests {
    use super::*;
    use crate::annealing::svm_step::LinearSvm;
    use crate::annealing::AnnealingParams;
    use crate::bags::Instances;
    use crate::fit::ParamGuard;
    use crate::params::KernelKind;
    use crate::progress::Cancel;
    use crate::solver::linear::{drive, mean_row, Parts, LINEAR_TOL};
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The heuristics' labels in groups of contiguous bags, each group with its rows' labels,
    /// and the SVM step solved over the groups ([`Parts`]).
    struct Grouped<'a> {
        params: &'a AnnealingValidParams,
        store: Parts<'a>,
        /// Each group's bag offsets into its own rows.
        ptrs: Vec<Vec<usize>>,
        targets: &'a [f64],
        costs: &'a [f64],
        cuts: Vec<usize>,
        p: Vec<Vec<f64>>,
        mean: Vec<f64>,
        warm: Option<(Vec<f64>, f64)>,
    }

    impl Grouped<'_> {
        fn data(&self, k: usize) -> BinaryData<'_> {
            let (lo, hi) = (self.cuts[k], self.cuts[k + 1]);
            BinaryData {
                bag_ptr: &self.ptrs[k],
                targets: &self.targets[lo..hi],
                costs: self.costs[lo..hi].to_vec(),
            }
        }
    }

    impl Relabelling for Grouped<'_> {
        fn solve(&mut self) -> Result<f64> {
            let method = self.params.method;
            for k in 0..self.p.len() {
                let n = self.p[k].len();
                let (mut cp, mut cn) = (vec![0.0; n], vec![0.0; n]);
                self.data(k)
                    .costs_into(method, &self.p[k], &mut cp, &mut cn);
                self.store.set_costs(k, cp, cn);
            }
            let warm = self.warm.as_ref().map(|(w, b)| (w.as_slice(), *b, true));
            let tol = self.params.inner_tol.unwrap_or(LINEAR_TOL);
            let max_iter = self.params.inner_max_iter;
            let cancel = Cancel::default();
            let out = drive(
                &mut self.store,
                Some(&self.mean),
                warm,
                tol,
                max_iter,
                &cancel,
            )?;
            self.warm = Some((out.w, out.b));
            Ok(out.value)
        }

        fn relabel(&mut self) -> Result<Option<(usize, u64)>> {
            let method = self.params.method;
            let (mut same, mut changed, mut hash) = (true, 0, FNV_OFFSET);
            for k in 0..self.p.len() {
                let q = self.p[k].clone();
                let mut p = std::mem::take(&mut self.p[k]);
                let data = self.data(k);
                data.update_p(method, self.store.scores(k), 0.0, self.params, &mut p);
                same &= p == q;
                changed += data.changed_units(method, &p, &q);
                hash = labelling_hash(hash, &p);
                self.p[k] = p;
            }
            Ok((!same).then_some((changed, hash)))
        }
    }

    /// Bags of 2 to 9 rows around a negative centre; a positive bag has one to three rows
    /// moved along the first two features.
    fn bags(seed: u64, n_bags: usize, d: usize) -> (Array2<f64>, Vec<usize>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut ptr = vec![0];
        let mut targets = Vec::new();
        let mut rows = Vec::new();
        for i in 0..n_bags {
            let m = rng.random_range(2..=9);
            let positive = i % 2 == 0;
            let witnesses = if positive { rng.random_range(1..=3) } else { 0 };
            for r in 0..m {
                for k in 0..d {
                    let mut v = 2.0 + rng.random::<f64>() * 2.0 - 1.0;
                    if r < witnesses && k < 2 {
                        v += 1.5;
                    }
                    rows.push(v);
                }
            }
            ptr.push(ptr[i] + m);
            targets.push(if positive { 1.0 } else { -1.0 });
        }
        let n = ptr[n_bags];
        let x = Array2::from_shape_vec((n, d), rows).unwrap();
        (x, ptr, targets)
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// mi-SVM and MI-SVM, linear, over 1, 2, 3, 5 and 7 groups of bags (an empty group among
    /// them): the weights, bias, objectives, rounds and labels of the fit in one process, bit
    /// for bit, for `f64` and `f32` rows.
    #[test]
    fn heuristic_fits_over_groups_of_bags_are_the_fit_in_one() {
        let (x, ptr, targets) = bags(3, 240, 5);
        let n_bags = targets.len();
        let costs = vec![1.0; n_bags];
        let x32 = Instances::from(crate::bags::DenseF32::from_array(
            x.mapv(|v| v as f32).view(),
        ));
        let x64 = Instances::from(x);
        for x in [&x64, &x32] {
            let n = x.n_rows();
            let mean = mean_row(x, &ptr);
            for method in [AnnealingParams::mi_svm(), AnnealingParams::big_mi_svm()] {
                let params = method.kernel(KernelKind::Linear).c(1.0).check().unwrap();
                let data = BinaryData {
                    bag_ptr: &ptr,
                    targets: &targets,
                    costs: costs.clone(),
                };
                let svm = LinearSvm {
                    x,
                    bag_ptr: &ptr,
                    mean: mean.clone(),
                    tol: params.inner_tol.unwrap_or(LINEAR_TOL),
                    max_iter: params.inner_max_iter,
                    cancel: Cancel::default(),
                };
                let step = SvmStep::Linear {
                    svm: &svm,
                    warm: None,
                };
                let whole = params.run_binary(step, &data, 0).unwrap();
                assert!(whole.n_iter > 1, "{:?}", params.method);
                let zeros = vec![0.0; n];
                for parts in [1, 2, 3, 5, 7] {
                    let mut cuts: Vec<usize> = (0..=parts).map(|p| p * n_bags / parts).collect();
                    if parts == 3 {
                        cuts.insert(2, cuts[1]); // an empty group
                    }
                    let ptrs: Vec<Vec<usize>> = cuts
                        .windows(2)
                        .map(|w| ptr[w[0]..=w[1]].iter().map(|&r| r - ptr[w[0]]).collect())
                        .collect();
                    let p: Vec<Vec<f64>> = cuts
                        .windows(2)
                        .map(|w| {
                            BinaryData {
                                bag_ptr: &ptr,
                                targets: &targets,
                                costs: costs.clone(),
                            }
                            .initial_p(params.method, params.init)
                                [ptr[w[0]]..ptr[w[1]]]
                                .to_vec()
                        })
                        .collect();
                    let first = p.iter().fold(FNV_OFFSET, |h, p| labelling_hash(h, p));
                    let mut grouped = Grouped {
                        params: &params,
                        store: Parts::split(x, &ptr, &cuts, &zeros, &zeros).unwrap(),
                        ptrs,
                        targets: &targets,
                        costs: &costs,
                        cuts: cuts.clone(),
                        p,
                        mean: mean.clone(),
                        warm: None,
                    };
                    let units = data.relabel_units(params.method);
                    let rounds = params
                        .heuristic_rounds(&mut grouped, units, first, 0)
                        .unwrap();
                    let what = format!("{:?}, {parts} groups", params.method);
                    let (w, b) = grouped.warm.clone().unwrap();
                    assert_eq!(bits(whole.beta.as_slice().unwrap()), bits(&w), "{what}");
                    assert_eq!(whole.b.to_bits(), b.to_bits(), "{what}");
                    assert_eq!(
                        bits(&whole.objective_history),
                        bits(&rounds.history),
                        "{what}"
                    );
                    assert_eq!(
                        (whole.n_iter, whole.n_solves),
                        (rounds.n_iter, rounds.n_solves)
                    );
                    assert_eq!(whole.stop_reason, rounds.stop_reason, "{what}");
                    assert_eq!(bits(&whole.p), bits(&grouped.p.concat()), "{what}");
                }
            }
        }
    }
}
