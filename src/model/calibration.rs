//! Probabilities from bag scores: Platt's sigmoid per output (Platt 2000, "Probabilistic outputs
//! for support vector machines"), fitted as Lin, Lin & Weng (2007, "A note on Platt's
//! probabilistic outputs for support vector machines", Algorithm 1) fit it, and the coupling of
//! one-vs-rest outputs into class probabilities.
//!
//! For an output with score `F`, `P(positive | F) = 1 / (1 + exp(a F + b))`. `(a, b)` minimise
//! the log-loss of held-out scores against Platt's smoothed targets
//! `t+ = (N+ + 1) / (N+ + 2)`, `t- = 1 / (N- + 2)` (the priors of section 2.2), by Newton's
//! method with a backtracking line search in a numerically stable form, from `a = 0`,
//! `b = ln((N- + 1) / (N+ + 1))`. Binary models give `[1 - p, p]`; a one-vs-rest model gives each
//! class its own output's `p` and normalises them to sum 1 (uniform where every `p` is 0): the
//! coupling of scikit-learn's `CalibratedClassifierCV`.

use serde::{Deserialize, Serialize};

use crate::error::{invalid_data, Error, Result};

/// Platt's sigmoid of every output: `P(positive | F_c) = 1 / (1 + exp(a_c F_c + b_c))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Slopes `a_c`, one per output (negative when higher scores mean more positive).
    pub a: Vec<f64>,
    /// Offsets `b_c`, one per output.
    pub b: Vec<f64>,
}

/// `1 / (1 + exp(a f + b))`, without overflow.
#[inline]
fn sigmoid_of(a: f64, b: f64, f: f64) -> f64 {
    let z = a * f + b;
    if z >= 0.0 {
        let e = (-z).exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + z.exp())
    }
}

impl Calibration {
    /// Checks the parameters against `n_outputs` (the messages name the field, as the model
    /// file's checks do).
    pub fn check(&self, n_outputs: usize) -> Result<()> {
        if self.a.len() != n_outputs || self.b.len() != n_outputs {
            return Err(Error::ModelFile(format!(
                "calibration: {} slopes and {} offsets for {n_outputs} outputs",
                self.a.len(),
                self.b.len()
            )));
        }
        if self.a.iter().chain(&self.b).any(|v| !v.is_finite()) {
            return Err(Error::ModelFile(
                "calibration: a sigmoid parameter is not finite".into(),
            ));
        }
        Ok(())
    }

    /// Class probabilities of one bag from its scores (`n_outputs` values) into `out`
    /// (`n_classes` values: 2 for a binary model, else one per output).
    pub fn probabilities(&self, scores: &[f64], out: &mut [f64]) {
        if scores.len() == 1 {
            let p = sigmoid_of(self.a[0], self.b[0], scores[0]);
            out[0] = 1.0 - p;
            out[1] = p;
            return;
        }
        let mut total = 0.0;
        for ((o, &f), (&a, &b)) in out.iter_mut().zip(scores).zip(self.a.iter().zip(&self.b)) {
            *o = sigmoid_of(a, b, f);
            total += *o;
        }
        if total > 0.0 {
            out.iter_mut().for_each(|o| *o /= total);
        } else {
            let k = out.len() as f64;
            out.iter_mut().for_each(|o| *o = 1.0 / k);
        }
    }
}

/// Platt's `(a, b)` for held-out `scores` of one output and whether each bag is `positive`
/// (see the module docs). Fails on empty or mismatched input, non-finite scores, or one class
/// only.
pub fn fit_sigmoid(scores: &[f64], positive: &[bool]) -> Result<(f64, f64)> {
    if scores.len() != positive.len() || scores.is_empty() {
        return Err(invalid_data(format!(
            "fit_sigmoid: {} scores for {} labels",
            scores.len(),
            positive.len()
        )));
    }
    if scores.iter().any(|v| !v.is_finite()) {
        return Err(invalid_data("fit_sigmoid: a score is not finite"));
    }
    let n_pos = positive.iter().filter(|&&p| p).count() as f64;
    let n_neg = scores.len() as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return Err(invalid_data(
            "fit_sigmoid: the scores must come from bags of both classes",
        ));
    }
    let (hi, lo) = ((n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0));
    let t: Vec<f64> = positive.iter().map(|&p| if p { hi } else { lo }).collect();
    // the objective sum_i t_i (a f_i + b) + ln(1 + exp(-(a f_i + b))), stable in both signs
    let objective = |a: f64, b: f64| -> f64 {
        scores
            .iter()
            .zip(&t)
            .map(|(&f, &ti)| {
                let z = a * f + b;
                if z >= 0.0 {
                    ti * z + (-z).exp().ln_1p()
                } else {
                    (ti - 1.0) * z + z.exp().ln_1p()
                }
            })
            .sum()
    };
    let (mut a, mut b) = (0.0, ((n_neg + 1.0) / (n_pos + 1.0)).ln());
    let mut value = objective(a, b);
    const SIGMA: f64 = 1e-12; // keeps the Hessian positive definite
    const MIN_STEP: f64 = 1e-10;
    for _ in 0..100 {
        // gradient and Hessian at (a, b)
        let (mut h11, mut h22, mut h21, mut g1, mut g2) = (SIGMA, SIGMA, 0.0, 0.0, 0.0);
        for (&f, &ti) in scores.iter().zip(&t) {
            let z = a * f + b;
            let (p, q) = if z >= 0.0 {
                let e = (-z).exp();
                (e / (1.0 + e), 1.0 / (1.0 + e))
            } else {
                let e = z.exp();
                (1.0 / (1.0 + e), e / (1.0 + e))
            };
            let d2 = p * q;
            h11 += f * f * d2;
            h22 += d2;
            h21 += f * d2;
            let d1 = ti - p;
            g1 += f * d1;
            g2 += d1;
        }
        if g1.abs() < 1e-5 && g2.abs() < 1e-5 {
            break;
        }
        let det = h11 * h22 - h21 * h21;
        let da = -(h22 * g1 - h21 * g2) / det;
        let db = -(-h21 * g1 + h11 * g2) / det;
        let gd = g1 * da + g2 * db;
        let mut step = 1.0;
        loop {
            let (na, nb) = (a + step * da, b + step * db);
            let nv = objective(na, nb);
            if nv < value + 1e-4 * step * gd {
                a = na;
                b = nb;
                value = nv;
                break;
            }
            step *= 0.5;
            if step < MIN_STEP {
                return Ok((a, b)); // no further decrease: the current point is the best found
            }
        }
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_fit_reaches_a_stationary_point_and_couples_classes() {
        let scores = [-2.0, -1.5, -0.3, 0.2, 0.4, 1.1, 1.7, -0.1, 0.9, 2.5];
        let positive = [
            false, false, false, true, false, true, true, true, true, true,
        ];
        let (a, b) = fit_sigmoid(&scores, &positive).unwrap_or((f64::NAN, f64::NAN));
        assert!(a < 0.0, "{a}");
        // the gradient of the smoothed log-loss vanishes at (a, b)
        let np = positive.iter().filter(|&&p| p).count() as f64;
        let nn = positive.len() as f64 - np;
        let (g1, g2) = scores
            .iter()
            .zip(&positive)
            .fold((0.0, 0.0), |(g1, g2), (&f, &p)| {
                let t = if p {
                    (np + 1.0) / (np + 2.0)
                } else {
                    1.0 / (nn + 2.0)
                };
                let d = t - sigmoid_of(a, b, f);
                (g1 + f * d, g2 + d)
            });
        assert!(g1.abs() < 1e-5 && g2.abs() < 1e-5, "{g1} {g2}");
        let cal = Calibration {
            a: vec![a, -1.0, -2.0],
            b: vec![b, 0.0, 1.0],
        };
        let mut out = [0.0; 3];
        cal.probabilities(&[0.3, -0.2, 1.0], &mut out);
        assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        let mut two = [0.0; 2];
        cal.probabilities(&[0.3], &mut two);
        assert!((two[1] - sigmoid_of(a, b, 0.3)).abs() < 1e-15 && two[0] + two[1] == 1.0);
        assert!(fit_sigmoid(&[1.0, 2.0], &[true, true]).is_err());
    }
}
