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
/// step, its distance updates pruned by the triangle inequality, see `update_nearest`), then at
/// most `max_iter` Lloyd iterations, stopping early when at most one point in a hundred changes
/// its cluster (the centres are then updated once more).
/// A cluster that loses all its points keeps its centre.
pub fn kmeans(x: &Instances, k: usize, max_iter: usize, seed: u64) -> Array2<f64> {
    let n = x.n_rows();
    let k = k.min(n).max(1);
    let norms = x.sq_norms();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // k-means++ seeding.
    let mut chosen = vec![rng.random_range(0..n)];
    let mut seeds = vec![x.dense_row(chosen[0])];
    let mut nearest = distances_to(x, &norms, &seeds[0]);
    // The index (into `chosen`) of each point's nearest seed.
    let mut owner = vec![0usize; n];
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
        let c = x.dense_row(next);
        update_nearest(x, &norms, &c, &seeds, &mut nearest, &mut owner);
        seeds.push(c);
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
    let t = sq_norm(c);
    let simd = Simd::detect();
    (0..x.n_rows())
        .into_par_iter()
        .map(|i| sq_distance(x, norms, i, c, t, simd))
        .collect()
}

/// One step of the seeding: `nearest[i] = min(nearest[i], |x_i - c|^2)` for a new seed `c`
/// (`owner[i]` indexes the seed of `nearest[i]` in `seeds`, and becomes `seeds.len()` where `c`
/// is nearer), skipping the points that `c` provably cannot come nearer to. By the triangle
/// inequality `|x - c| >= |c - s| - |x - s|`, so with `s` the owner seed and `r = |x - s|`, a
/// gap `|c - s| >= 2 r` keeps `s`; the test asks the bound to clear `r^2` by a margin far above
/// the rounding of the computed distances, so a skipped point is one whose computed distance
/// would not have been smaller either, and the seeding is exactly the one without skipping.
/// Late in the seeding most points are skipped, and their feature rows are never read.
fn update_nearest(
    x: &Instances,
    norms: &[f64],
    c: &[f64],
    seeds: &[Vec<f64>],
    nearest: &mut [f64],
    owner: &mut [usize],
) {
    let t = sq_norm(c);
    let gap: Vec<f64> = seeds
        .iter()
        .map(|s| {
            s.iter()
                .zip(c)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let new = seeds.len();
    let simd = Simd::detect();
    nearest
        .par_iter_mut()
        .zip(owner.par_iter_mut())
        .enumerate()
        .for_each(|(i, (d, o))| {
            let (r, g) = (d.sqrt(), gap[*o]);
            if g >= 2.0 * r && (g - r) * (g - r) > *d + 1e-9 * (norms[i] + t + 1.0) {
                return;
            }
            let dist = sq_distance(x, norms, i, c, t, simd);
            if dist < *d {
                *d = dist;
                *o = new;
            }
        });
}

/// `|c|^2`.
fn sq_norm(c: &[f64]) -> f64 {
    c.iter().map(|v| v * v).sum()
}

/// `|x_i - c|^2 = |x_i|^2 + |c|^2 - 2 x_i . c` (clipped at 0), with `t = |c|^2`.
#[inline]
fn sq_distance(x: &Instances, norms: &[f64], i: usize, c: &[f64], t: f64, simd: Simd) -> f64 {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pruned seeding update gives bitwise the distances and owners of the plain one (the
    /// minimum over all seeds, the first seed on ties), on clustered points where most updates
    /// are skipped, with duplicate seeds and points equal to a seed.
    #[test]
    fn pruned_seeding_update_is_exact() {
        let (n, d) = (400, 5);
        let mut state = 12345u64;
        let mut unif = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let x = Array2::from_shape_fn((n, d), |(i, _)| (i % 7) as f64 * 3.0 + unif() * 0.5);
        let inst = Instances::Dense(x.clone());
        let norms = inst.sq_norms();
        let picks = [3usize, 10, 3, 250, 17, 399, 42, 5, 6, 11, 200, 201];
        let seeds: Vec<Vec<f64>> = picks.iter().map(|&r| x.row(r).to_vec()).collect();
        let mut nearest = distances_to(&inst, &norms, &seeds[0]);
        let mut owner = vec![0usize; n];
        for s in 1..seeds.len() {
            update_nearest(
                &inst,
                &norms,
                &seeds[s],
                &seeds[..s],
                &mut nearest,
                &mut owner,
            );
        }
        let simd = Simd::detect();
        for i in 0..n {
            let (mut best, mut arg) = (f64::INFINITY, 0);
            for (s, c) in seeds.iter().enumerate() {
                let v = sq_distance(&inst, &norms, i, c, sq_norm(c), simd);
                if v < best {
                    (best, arg) = (v, s);
                }
            }
            assert_eq!(nearest[i].to_bits(), best.to_bits(), "point {i}");
            assert_eq!(owner[i], arg, "point {i}");
        }
    }

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
