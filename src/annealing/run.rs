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
        let mut history = Vec::new();
        let mut temperatures = Vec::new();
        let mut n_solves = 0;
        let mut stop_reason = StopReason::MaxIter;
        let mut n_iter = 0;
        let cap = self.outer_cap();
        let cancel = self.observer.cancel().clone();
        let mut solve = |p: &[f64], f: &mut [f64]| -> Result<f64> {
            cancel.check()?;
            data.costs_into(method, p, &mut c_pos, &mut c_neg);
            let value = svm.solve(&c_pos, &c_neg)?;
            svm.scores_into(f);
            Ok(value)
        };
        if method.is_heuristic() {
            // the labellings seen so far (hashes), for the cycle rule
            let mut seen = vec![labelling_hash(&p)];
            let units = data.relabel_units(method);
            for _ in 0..cap {
                n_iter += 1;
                n_solves += 1;
                let value = solve(&p, &mut f)?;
                history.push(value);
                self.observer.notify(Progress {
                    problem,
                    step: history.len(),
                    max_steps: cap,
                    objective: value,
                    temperature: None,
                    expected_steps: cap,
                });
                let q = p.clone();
                data.update_p(method, &f, 0.0, self, &mut p);
                if p == q {
                    stop_reason = StopReason::Converged;
                    break;
                }
                // Few labels changed, or the labelling is one seen before (the rounds would
                // cycle): stopped, the labels of this round trained on below.
                let changed = data.changed_units(method, &p, &q);
                let hash = labelling_hash(&p);
                if changed as f64 <= self.eps * units as f64 || seen.contains(&hash) {
                    stop_reason = StopReason::Converged;
                    n_solves += 1;
                    solve(&p, &mut f)?;
                    break;
                }
                seen.push(hash);
            }
            if stop_reason == StopReason::MaxIter {
                // The labels of the last round have not been trained on yet.
                n_solves += 1;
                solve(&p, &mut f)?;
            }
        } else {
            let mut temp = self.t0.unwrap_or(10.0 * self.c);
            let mut value = 0.0;
            let mut entropies = Vec::new();
            for _ in 0..cap {
                n_iter += 1;
                let start = p.clone();
                for _ in 0..self.max_alternations {
                    n_solves += 1;
                    value = solve(&p, &mut f)?;
                    let q = p.clone();
                    data.update_p(method, &f, temp, self, &mut p);
                    if data.kl(method, &p, &q) < self.eps {
                        break;
                    }
                }
                temperatures.push(temp);
                history.push(value + data.temperature_terms(method, &p, temp, self));
                entropies.push(data.mean_entropy(&p));
                self.observer.notify(Progress {
                    problem,
                    step: history.len(),
                    max_steps: cap,
                    objective: history[history.len() - 1],
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
                    AnnealingMethod::Aw => max_abs_diff(&p, &start) <= self.eps,
                    _ => {
                        data.mean_entropy(&p) < self.eps
                            || (temp <= self.eps * self.c && data.kl(method, &p, &start) < self.eps)
                    }
                };
                if done {
                    stop_reason = StopReason::Converged;
                    break;
                }
                temp /= self.decay;
            }
            // The last update of p has not been trained on yet (AW: relabel first).
            if method == AnnealingMethod::Aw {
                let witnesses: Vec<f64> = data.witnesses(&p, self.eps);
                n_solves += 1;
                solve(&witnesses, &mut f)?;
            } else {
                n_solves += 1;
                solve(&p, &mut f)?;
            }
        }
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

/// A 64-bit hash of a labelling (FNV-1a over the bits of `p`): the cycle rule of the heuristics
/// compares labellings by it (two labellings of equal hash taken as equal: a false match among
/// `k` rounds has probability about `k^2 / 2^65`).
fn labelling_hash(p: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in p {
        for byte in v.to_bits().to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
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
