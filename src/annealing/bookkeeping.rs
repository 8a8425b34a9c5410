//! The bookkeeping of `p` for one binary problem ([`BinaryData`]): the starting `p`, the row
//! costs it gives the SVM step, the per-bag update, and the measures of the loop (KL between
//! rounds, entropy, the temperature terms of the objective, AW-SVM's witnesses, `p_hat`).

use rayon::prelude::*;

use crate::tree_sum::sum_bags;

use super::updates::{al_update, alp_update, aw_update, loss_difference, squared_hinge};
use super::{AnnealingMethod, AnnealingValidParams, InitialLabels};

/// The bags of one binary problem: offsets, targets (+1 / -1 per bag) and cost `C w_i` per bag.
pub(super) struct BinaryData<'a> {
    pub(super) bag_ptr: &'a [usize],
    pub(super) targets: &'a [f64],
    pub(super) costs: Vec<f64>,
}

impl BinaryData<'_> {
    pub(super) fn n_instances(&self) -> usize {
        self.bag_ptr[self.bag_ptr.len() - 1]
    }

    fn positive_bags(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.targets.len()).filter(|&i| self.targets[i] > 0.0)
    }

    /// `sum_i term(rows of bag i)` over the positive bags, in the fixed tree over the bags
    /// ([`crate::tree_sum`]: the same bits for any thread count and any split of the bags).
    fn sum_positive_bags<F>(&self, term: F) -> f64
    where
        F: Fn(std::ops::Range<usize>) -> f64 + Sync,
    {
        sum_bags(self.bag_ptr, 0.0, |i, acc: &mut f64| {
            if self.targets[i] > 0.0 {
                *acc = term(self.bag_ptr[i]..self.bag_ptr[i + 1]);
                true
            } else {
                false
            }
        })
    }

    /// The starting `p`: AL / ALP 1/2 (or 1) in positive bags, mi-SVM 1; AW / MI-SVM `1/m_i`;
    /// negative bags 0 (labels) or 1 (witness weights).
    pub(super) fn initial_p(&self, method: AnnealingMethod, init: InitialLabels) -> Vec<f64> {
        let mut p = vec![0.0; self.n_instances()];
        for (i, &t) in self.targets.iter().enumerate() {
            let (lo, hi) = (self.bag_ptr[i], self.bag_ptr[i + 1]);
            let v = match (method.labels_instances(), t > 0.0) {
                (true, false) => 0.0,
                (false, false) => 1.0,
                (false, true) => 1.0 / (hi - lo) as f64,
                (true, true) => match (method, init) {
                    (AnnealingMethod::MiSvm, _) | (_, InitialLabels::BagLabels) => 1.0,
                    _ => 0.5,
                },
            };
            p[lo..hi].fill(v);
        }
        p
    }

    /// Row costs of the SVM step under `p`.
    pub(super) fn costs_into(
        &self,
        method: AnnealingMethod,
        p: &[f64],
        c_pos: &mut [f64],
        c_neg: &mut [f64],
    ) {
        for (i, (&t, &c)) in self.targets.iter().zip(&self.costs).enumerate() {
            for j in self.bag_ptr[i]..self.bag_ptr[i + 1] {
                if t < 0.0 {
                    c_pos[j] = 0.0;
                    c_neg[j] = c;
                } else if method.labels_instances() {
                    c_pos[j] = c * p[j];
                    c_neg[j] = c * (1.0 - p[j]);
                } else {
                    c_pos[j] = c * p[j];
                    c_neg[j] = 0.0;
                }
            }
        }
    }

    /// The `p`-update of every positive bag at temperature `temp` (0: the heuristics' hard
    /// rules), in parallel over bags.
    pub(super) fn update_p(
        &self,
        method: AnnealingMethod,
        f: &[f64],
        temp: f64,
        params: &AnnealingValidParams,
        p: &mut [f64],
    ) {
        let mut slices: Vec<(usize, &mut [f64])> = Vec::with_capacity(self.targets.len());
        let mut rest = p;
        for i in 0..self.targets.len() {
            let (head, tail) = rest.split_at_mut(self.bag_ptr[i + 1] - self.bag_ptr[i]);
            slices.push((i, head));
            rest = tail;
        }
        slices
            .into_par_iter()
            .filter(|(i, _)| self.targets[*i] > 0.0)
            .for_each(|(i, out)| {
                let c = self.costs[i];
                let fb = &f[self.bag_ptr[i]..self.bag_ptr[i + 1]];
                match method {
                    AnnealingMethod::Al | AnnealingMethod::MiSvm => {
                        let t: Vec<f64> = fb.iter().map(|&v| c * loss_difference(v)).collect();
                        al_update(&t, temp, out);
                    }
                    AnnealingMethod::Alp => {
                        let t: Vec<f64> = fb.iter().map(|&v| c * loss_difference(v)).collect();
                        alp_update(&t, temp, params.c2, params.p_star, out);
                    }
                    AnnealingMethod::Aw => {
                        let t: Vec<f64> = fb.iter().map(|&v| c * squared_hinge(1.0, v)).collect();
                        aw_update(&t, temp, out);
                    }
                    AnnealingMethod::MISvm => {
                        // The witness: the instance of largest score (the first of ties).
                        let best = fb
                            .iter()
                            .enumerate()
                            .fold(0, |b, (j, &v)| if v > fb[b] { j } else { b });
                        out.fill(0.0);
                        out[best] = 1.0;
                    }
                }
            });
    }

    /// The labels the heuristics' relabelling can change: the instances of positive bags
    /// (mi-SVM) or the positive bags' witnesses (MI-SVM).
    pub(super) fn relabel_units(&self, method: AnnealingMethod) -> usize {
        self.positive_bags()
            .map(|i| {
                if method.labels_instances() {
                    self.bag_ptr[i + 1] - self.bag_ptr[i]
                } else {
                    1
                }
            })
            .sum()
    }

    /// Of [`BinaryData::relabel_units`], those that differ between the rounds `p` and `q`.
    pub(super) fn changed_units(&self, method: AnnealingMethod, p: &[f64], q: &[f64]) -> usize {
        self.positive_bags()
            .map(|i| {
                let r = self.bag_ptr[i]..self.bag_ptr[i + 1];
                let changed = p[r.clone()]
                    .iter()
                    .zip(&q[r])
                    .filter(|(a, b)| a != b)
                    .count();
                if method.labels_instances() {
                    changed
                } else {
                    usize::from(changed > 0)
                }
            })
            .sum()
    }

    /// Mean over positive bags of the divergence between two rounds: the Bernoulli KL per
    /// instance (labels) or the categorical KL per bag (witness weights).
    pub(super) fn kl(&self, method: AnnealingMethod, p: &[f64], q: &[f64]) -> f64 {
        let total = self.sum_positive_bags(|r| kl_term(method, p, q, r));
        self.per_unit(total, self.relabel_units(method))
    }

    /// Mean binary entropy of `p` over the instances of positive bags.
    pub(super) fn mean_entropy(&self, p: &[f64]) -> f64 {
        let total = self.sum_positive_bags(|r| entropy_term(p, r));
        self.per_unit(total, self.relabel_units(AnnealingMethod::MiSvm))
    }

    /// `total / count`, 0 without units (no positive bag).
    pub(super) fn per_unit(&self, total: f64, count: usize) -> f64 {
        if count == 0 {
            0.0
        } else {
            total / count as f64
        }
    }

    /// The entropy and penalty terms of the annealed objective at temperature `temp`
    /// ([`temperature_term`] summed over the positive bags).
    pub(super) fn temperature_terms(
        &self,
        method: AnnealingMethod,
        p: &[f64],
        temp: f64,
        params: &AnnealingValidParams,
    ) -> f64 {
        self.sum_positive_bags(|r| temperature_term(method, p, temp, params, r))
    }

    /// AW-SVM's final labels: weight 1 for the instances of positive bags with `p > eps`, 0 for
    /// the others; negative bags unchanged.
    pub(super) fn witnesses(&self, p: &[f64], eps: f64) -> Vec<f64> {
        let mut w = p.to_vec();
        for i in self.positive_bags() {
            for v in &mut w[self.bag_ptr[i]..self.bag_ptr[i + 1]] {
                *v = if *v > eps { 1.0 } else { 0.0 };
            }
        }
        w
    }

    /// Mean fraction of positives per positive bag.
    pub(super) fn p_hat(&self, method: AnnealingMethod, p: &[f64], eps: f64) -> f64 {
        let threshold = if method.labels_instances() { 0.5 } else { eps };
        let total = self.sum_positive_bags(|r| {
            let bag = &p[r];
            bag.iter().filter(|&&v| v > threshold).count() as f64 / bag.len() as f64
        });
        let count = self.positive_bags().count();
        if count == 0 {
            0.0
        } else {
            total / count as f64
        }
    }
}

/// One positive bag's (rows `r`) summand of [`BinaryData::kl`].
pub(super) fn kl_term(
    method: AnnealingMethod,
    p: &[f64],
    q: &[f64],
    r: std::ops::Range<usize>,
) -> f64 {
    if method.labels_instances() {
        r.map(|j| xlogy(p[j], q[j]) + xlogy(1.0 - p[j], 1.0 - q[j]))
            .fold(0.0, |a, t| a + t)
    } else {
        r.map(|j| xlogy(p[j], q[j])).fold(0.0, |a, t| a + t)
    }
}

/// One positive bag's summand of [`BinaryData::mean_entropy`].
pub(super) fn entropy_term(p: &[f64], r: std::ops::Range<usize>) -> f64 {
    p[r].iter()
        .fold(0.0, |a, &v| a - (plogp(v) + plogp(1.0 - v)))
}

/// One positive bag's entropy and penalty terms of the annealed objective at temperature
/// `temp`: `T sum [p ln p + (1 - p) ln(1 - p)]` (AL, ALP) or `T sum p ln p` (AW), plus ALP's
/// `C2 (sum_j p_ij - m_i p*)^2`.
pub(super) fn temperature_term(
    method: AnnealingMethod,
    p: &[f64],
    temp: f64,
    params: &AnnealingValidParams,
    r: std::ops::Range<usize>,
) -> f64 {
    let bag = &p[r];
    let mut total = if method.labels_instances() {
        temp * bag.iter().map(|&v| plogp(v) + plogp(1.0 - v)).sum::<f64>()
    } else {
        temp * bag.iter().map(|&v| plogp(v)).sum::<f64>()
    };
    if method == AnnealingMethod::Alp {
        let s: f64 = bag.iter().sum::<f64>() - bag.len() as f64 * params.p_star;
        total += params.c2 * s * s;
    }
    total
}

/// `x ln x` with `0 ln 0 = 0`.
fn plogp(x: f64) -> f64 {
    if x > 0.0 {
        x * x.ln()
    } else {
        0.0
    }
}

/// `x ln(x / y)` with `0 ln(0 / y) = 0` (the KL summand; `y` clamped away from 0).
fn xlogy(x: f64, y: f64) -> f64 {
    if x > 0.0 {
        x * (x / y.max(f64::MIN_POSITIVE)).ln()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_labels_count_instances_for_mi_svm_and_bags_for_big_mi_svm() {
        // bags of 3, 2 (negative) and 4 rows
        let data = BinaryData {
            bag_ptr: &[0, 3, 5, 9],
            targets: &[1.0, -1.0, 1.0],
            costs: vec![1.0; 3],
        };
        assert_eq!(data.relabel_units(AnnealingMethod::MiSvm), 7);
        assert_eq!(data.relabel_units(AnnealingMethod::MISvm), 2);
        let q = [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        // two labels of the first bag and one of the last change; a negative bag's entries
        // never count
        let p = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0];
        assert_eq!(data.changed_units(AnnealingMethod::MiSvm, &p, &q), 3);
        assert_eq!(data.changed_units(AnnealingMethod::MISvm, &p, &q), 2);
        assert_eq!(data.changed_units(AnnealingMethod::MiSvm, &q, &q), 0);
    }
}
