//! Choosing a reduced basis of `k` vectors from the training instances: `k` random instances, or
//! k-means centroids (k-means++ seeding, Arthur & Vassilvitskii 2007, then Lloyd iterations).
//!
//! The k-means here is written for speed on the shapes of this crate (thousands to hundreds of
//! thousands of instances, hundreds of centroids): the seeding keeps every point's squared
//! distance to its nearest centre and updates it with one pass per new centre; each Lloyd
//! iteration assigns all points with one matrix product `X C^T` (in row chunks, in parallel) and
//! recomputes the centres in a fixed order. Everything is seeded and gives the same centroids for
//! any number of threads.

use ndarray::{Array2, ArrayView1, Axis};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::bags::Instances;
use crate::kernel::Simd;

/// How a reduced basis is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BasisInit {
    /// k-means centroids of the training instances ([`kmeans`]).
    #[default]
    KMeans,
    /// Distinct random training instances.
    Random,
}

/// `k` basis vectors (`k x n_features`) chosen from the rows of `x` by `init`, seeded by `seed`.
/// `k` must not exceed the number of rows.
pub fn choose_basis(x: &Instances, k: usize, init: BasisInit, seed: u64) -> Array2<f64> {
    match init {
        BasisInit::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut rows = sample(&mut rng, x.n_rows(), k).into_vec();
            rows.sort_unstable();
            dense_rows(x, &rows)
        }
        BasisInit::KMeans => kmeans(x, k, 20, seed),
    }
}

/// The chosen rows of `x` as a dense matrix.
pub fn dense_rows(x: &Instances, rows: &[usize]) -> Array2<f64> {
    let mut z = Array2::zeros((rows.len(), x.n_features()));
    for (mut zr, &r) in z.rows_mut().into_iter().zip(rows) {
        zr.assign(&ArrayView1::from(&x.dense_row(r)));
    }
    z
}

/// k-means centroids (`k x n_features`) of the rows of `x`: k-means++ seeding (one candidate per
/// step), then at most `max_iter` Lloyd iterations, stopping early when at most one point in a
/// thousand changes its cluster (the centres are then updated once more).
/// A cluster that loses all its points keeps its centre.
pub fn kmeans(x: &Instances, k: usize, max_iter: usize, seed: u64) -> Array2<f64> {
    let n = x.n_rows();
    let k = k.min(n).max(1);
    let norms = x.sq_norms();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // k-means++ seeding.
    let mut chosen = vec![rng.random_range(0..n)];
    let mut nearest = distances_to(x, &norms, &x.dense_row(chosen[0]));
    while chosen.len() < k {
        let total: f64 = nearest.iter().sum();
        let next = if total > 0.0 {
            let mut target = rng.random::<f64>() * total;
            let mut pick = n - 1;
            for (i, &d) in nearest.iter().enumerate() {
                if target < d {
                    pick = i;
                    break;
                }
                target -= d;
            }
            pick
        } else {
            // all remaining points coincide with a centre: any unchosen row
            (0..n).find(|i| !chosen.contains(i)).unwrap_or(0)
        };
        chosen.push(next);
        let d = distances_to(x, &norms, &x.dense_row(next));
        nearest.iter_mut().zip(&d).for_each(|(a, &b)| *a = a.min(b));
    }
    let mut centres = dense_rows(x, &chosen);
    // Lloyd iterations.
    let mut assign = vec![usize::MAX; n];
    for _ in 0..max_iter {
        let c = Instances::Dense(centres.clone());
        let d = sq_distances(x, &norms, &c);
        let new: Vec<usize> = d
            .axis_iter(Axis(0))
            .into_par_iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |(bi, bv), (j, &v)| {
                            if v < bv {
                                (j, v)
                            } else {
                                (bi, bv)
                            }
                        },
                    )
                    .0
            })
            .collect();
        // Stop when at most one point in a thousand (and at least one point fewer than before)
        // changes its cluster: the last Lloyd steps move the centres by little and each costs a
        // full `X C^T` product.
        let changed = new.iter().zip(&assign).filter(|(a, b)| a != b).count();
        if changed == 0 {
            break;
        }
        let settled = changed * 100 <= n;
        assign = new;
        let mut sums = Array2::<f64>::zeros((k, x.n_features()));
        let mut counts = vec![0usize; k];
        for (i, &a) in assign.iter().enumerate() {
            counts[a] += 1;
            match x {
                Instances::Dense(m) => sums.row_mut(a).scaled_add(1.0, &m.row(i)),
                Instances::Sparse(m) => {
                    let (idx, val) = m.row(i);
                    let mut r = sums.row_mut(a);
                    for (&j, &v) in idx.iter().zip(val) {
                        r[j] += v;
                    }
                }
            }
        }
        for (j, &cnt) in counts.iter().enumerate() {
            if cnt > 0 {
                let mean = sums.row(j).mapv(|v| v / cnt as f64);
                centres.row_mut(j).assign(&mean);
            }
        }
        if settled {
            break;
        }
    }
    centres
}

/// Squared Euclidean distances between the rows of `x` (squared norms `norms`) and the rows of
/// `c` (`n x k`), from one product `X C^T`.
fn sq_distances(x: &Instances, norms: &[f64], c: &Instances) -> Array2<f64> {
    let cn = c.sq_norms();
    let mut g = x.cross_gram(c);
    g.axis_iter_mut(Axis(0))
        .into_par_iter()
        .zip(norms.par_iter())
        .for_each(|(mut r, &s)| {
            r.iter_mut()
                .zip(&cn)
                .for_each(|(v, &t)| *v = (s + t - 2.0 * *v).max(0.0));
        });
    g
}

/// Squared distances of every row of `x` to the single point `c` (dense).
fn distances_to(x: &Instances, norms: &[f64], c: &[f64]) -> Vec<f64> {
    let t: f64 = c.iter().map(|v| v * v).sum();
    let simd = Simd::detect();
    (0..x.n_rows())
        .into_par_iter()
        .map(|i| {
            let dot: f64 = match x {
                Instances::Dense(m) => match m.row(i).to_slice() {
                    Some(r) => simd.dot(r, c),
                    None => m.row(i).iter().zip(c).map(|(a, b)| a * b).sum(),
                },
                Instances::Sparse(m) => {
                    let (idx, val) = m.row(i);
                    idx.iter().zip(val).map(|(&j, &v)| v * c[j]).sum()
                }
            };
            (norms[i] + t - 2.0 * dot).max(0.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmeans_finds_separated_clusters() {
        let mut rows = Vec::new();
        for c in [0.0, 10.0, 20.0] {
            for i in 0..30 {
                rows.push(c + (i as f64) * 0.01);
                rows.push(-c);
            }
        }
        let x = Instances::Dense(Array2::from_shape_vec((90, 2), rows).unwrap_or_default());
        let c = kmeans(&x, 3, 20, 0);
        let mut firsts: Vec<f64> = c.column(0).to_vec();
        firsts.sort_by(f64::total_cmp);
        for (f, want) in firsts.iter().zip([0.145, 10.145, 20.145]) {
            assert!((f - want).abs() < 1e-9, "{firsts:?}");
        }
        assert_eq!(kmeans(&x, 3, 20, 0), c);
    }
}
