//! Choosing a reduced basis of `k` vectors from the training instances: `k` random instances, or
//! k-means centroids (k-means++ seeding, Arthur & Vassilvitskii 2007, then Lloyd iterations).
//!
//! The k-means here is written for speed on the shapes of this crate (thousands to hundreds of
//! thousands of instances, hundreds of centroids): the seeding keeps every point's squared
//! distance to its nearest centre and updates it with one pass per new centre, skipping the
//! points the triangle inequality settles; the Lloyd iterations keep Elkan's bounds (Elkan 2003)
//! and compute only the distances these cannot settle, the many-distance points with one matrix
//! product `X_S C^T` (in row chunks, in parallel); the centres are recomputed in a fixed order.
//! Everything is seeded and gives the same centroids for any number of threads.

use ndarray::{Array2, Axis};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::bags::Instances;
use crate::linalg::Simd;

crate::choice::choices! {
    /// How a reduced basis is chosen.
    pub enum BasisInit {
        /// k-means centroids of the training instances ([`kmeans`]).
        KMeans = "kmeans",
        /// Distinct random training instances.
        Random = "random",
    }
}

/// `k` basis vectors (`k x n_features`) chosen from the rows of `x` by `init`, seeded by `seed`.
/// `k` must not exceed the number of rows.
pub fn choose_basis(x: &Instances, k: usize, init: BasisInit, seed: u64) -> Array2<f64> {
    match init {
        BasisInit::Random => x.dense_rows(&random_rows(x.n_rows(), k, seed)),
        BasisInit::KMeans => kmeans(x, k, 20, seed),
    }
}

/// `k` distinct row indices of `0..n`, increasing, drawn uniformly and seeded by `seed` (the
/// rows of [`choose_basis`] with [`BasisInit::Random`]; a caller that keeps CSR rows CSR takes
/// them with [`Instances::select_rows`]). `k` must not exceed `n`.
pub fn random_rows(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows = sample(&mut rng, n, k.min(n)).into_vec();
    rows.sort_unstable();
    rows
}

/// The chosen rows of `x` as a dense matrix: [`Instances::dense_rows`], kept under this path.
pub fn dense_rows(x: &Instances, rows: &[usize]) -> Array2<f64> {
    x.dense_rows(rows)
}

/// k-means centroids (`k x n_features`) of the rows of `x`: k-means++ seeding (one candidate per
/// step, its distance updates pruned by the triangle inequality, see `update_nearest`), then at
/// most `max_iter` Lloyd iterations (the seeding's nearest seeds are the first assignment),
/// stopping early when at most one point in a hundred changes its cluster (the centres are then
/// updated once more). A cluster that loses all its points keeps its centre. `max_iter = 0`
/// returns the seeds.
///
/// The Lloyd assignments use Elkan's bounds (Elkan 2003, ICML): a lower bound on each point's
/// distance to every other centre, loosened by how far the centres move, and half the distances
/// between centres, so that only the pairs these cannot settle are computed (on MUSK2 with 500
/// centres, under 1 % of them). Points with many unsettled pairs are computed whole
/// with one matrix product `X_S C^T` over just those rows. The bounds take `4 n k` bytes; above
/// [`MAX_BOUND_BYTES`] every assignment is computed with the product instead.
pub fn kmeans(x: &Instances, k: usize, max_iter: usize, seed: u64) -> Array2<f64> {
    kmeans_within(x, k, max_iter, seed, MAX_BOUND_BYTES)
}

/// [`kmeans`] with at most `bound_bytes` for Elkan's bounds.
fn kmeans_within(
    x: &Instances,
    k: usize,
    max_iter: usize,
    seed: u64,
    bound_bytes: usize,
) -> Array2<f64> {
    let n = x.n_rows();
    let k = k.min(n).max(1);
    let norms = x.sq_norms();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut bounds = Bounds::new(n, k, max_iter > 0, bound_bytes);
    // k-means++ seeding.
    let mut chosen = vec![rng.random_range(0..n)];
    let mut seeds = vec![x.dense_row(chosen[0])];
    let mut nearest = distances_to(x, &norms, &seeds[0]);
    if bounds.width == k {
        for (l, &d) in bounds.lower.chunks_exact_mut(k).zip(&nearest) {
            l[0] = round_down(d.sqrt());
        }
    }
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
        update_nearest(x, &norms, &c, &seeds, &mut nearest, &mut bounds);
        seeds.push(c);
    }
    let mut centres = x.dense_rows(&chosen);
    if max_iter == 0 {
        return centres;
    }
    let mut settled = false;
    for iter in 0.. {
        let moved = update_centres(x, &bounds.owner, &mut centres);
        if settled || iter + 1 == max_iter {
            break;
        }
        let changed = bounds.reassign(x, &norms, &centres, &moved);
        // Stop when no point changes its cluster, or after one more centre update when at most
        // one point in a hundred does: the last Lloyd steps move the centres by little.
        if changed == 0 {
            break;
        }
        settled = changed * 100 <= n;
    }
    centres
}

/// The most memory Elkan's lower bounds may take (`4 n k` bytes): 256 MiB.
pub const MAX_BOUND_BYTES: usize = 1 << 28;

/// Every point's cluster in the Lloyd iterations, with Elkan's lower bounds on the distances to
/// the other centres, kept relative to how far each centre has drifted so that moving the
/// centres costs no pass over the bounds.
struct Bounds {
    /// The index of each point's centre.
    owner: Vec<usize>,
    /// `lower[i * width + j] - drift[j] <= |x_i - c_j|` (stored as `f32`, rounded down) for every
    /// centre `j != owner[i]`; `width` is `k`, or 1 with the bounds unused when they would not
    /// fit in [`MAX_BOUND_BYTES`].
    lower: Vec<f32>,
    width: usize,
    /// How far each centre has moved in all (the sum of its moves) since the seeding.
    drift: Vec<f64>,
}

/// `v` rounded down to an `f32` (the relative margin is above `f32` rounding).
fn round_down(v: f64) -> f32 {
    (v * (1.0 - 1e-6)) as f32
}

/// What one point's assignment step needs after the bounds settled what they could.
enum Step {
    /// Done by the bounds and a few distances; whether the point changed cluster.
    Done(bool),
    /// Too many unsettled pairs: compute all its distances with the matrix product.
    Whole,
}

impl Bounds {
    fn new(n: usize, k: usize, enabled: bool, max_bytes: usize) -> Self {
        let width = if enabled && n.saturating_mul(k).saturating_mul(4) <= max_bytes {
            k
        } else {
            1
        };
        Self {
            owner: vec![0; n],
            lower: vec![f32::INFINITY; n * width],
            width,
            drift: vec![0.0; k],
        }
    }

    /// One Lloyd assignment after the centres moved by `moved` (per centre). Each point's
    /// distance to its own centre `u` is computed; a pair `(i, j)` is settled when its lower
    /// bound or half the distance between the two centres (`|x - c_j| >= |c_a - c_j| - u`)
    /// exceeds `u` by a margin far above the rounding of the computed distances, and the
    /// distances of the other pairs are computed one by one (a point with more than `k / 8` of
    /// them: all at once, in one matrix product with the other such points). Returns how many
    /// points changed cluster.
    fn reassign(
        &mut self,
        x: &Instances,
        norms: &[f64],
        centres: &Array2<f64>,
        moved: &[f64],
    ) -> usize {
        let k = centres.nrows();
        let simd = Simd::detect();
        let c = Instances::from(centres.clone());
        let cn = c.sq_norms();
        let cmax = cn.iter().fold(0.0f64, |a, &b| a.max(b));
        for (d, m) in self.drift.iter_mut().zip(moved) {
            *d += m;
        }
        let steps: Vec<Step> = if self.width == k {
            let half: Vec<f32> = sq_distances(&c, &cn, &c)
                .iter()
                .map(|&v| round_down(0.5 * v.sqrt()))
                .collect();
            let drift = &self.drift;
            // The drifts rounded up to `f32`, and a factor above `f32` rounding.
            let drift32: Vec<f32> = drift.iter().map(|&d| (d * (1.0 + 1e-6)) as f32).collect();
            const GROW: f32 = 1.0 + 1e-6;
            let dist = |i: usize, j: usize| {
                let cj = centres.row(j);
                sq_distance(x, norms, i, cj.as_slice().unwrap_or_default(), cn[j], simd).sqrt()
            };
            self.lower
                .par_chunks_mut(k)
                .zip(self.owner.par_iter_mut())
                .enumerate()
                .map_init(Vec::new, |open, (i, (row, a))| {
                    // Pair (i, j) is open while `lower - drift` and `half` are at most
                    // `thr = sqrt(u^2 + tol)` (rounded up): not separated from `u` by the margin.
                    let tol = 1e-9 * (norms[i] + cmax + 1.0);
                    let thr = |u: f64| (u * u + tol).sqrt() * (1.0 + 1e-6);
                    let start = *a;
                    let mut u = dist(i, *a);
                    let t = thr(u);
                    let h = &half[*a * k..(*a + 1) * k];
                    // Counted branch-free in `f32` (rounded up), then listed; the own centre's
                    // bound (never read) is set to 0 so that it counts once.
                    row[*a] = 0.0;
                    let t32 = t as f32 * GROW;
                    let is_open =
                        |(&l, &d): (&f32, &f32), h: f32| (l <= (t32 + d) * GROW) & (h <= t32);
                    let pairs = || row.iter().zip(&drift32).zip(h);
                    let n_open = pairs().filter(|&(ld, &h)| is_open(ld, h)).count() - 1;
                    if n_open * 8 > k {
                        return Step::Whole;
                    }
                    open.clear();
                    if n_open > 0 {
                        let listed = pairs()
                            .enumerate()
                            .filter(|&(j, (ld, &h))| is_open(ld, h) && j != *a);
                        open.extend(listed.map(|(j, _)| j));
                    }
                    let mut t = t;
                    for &j in open.iter() {
                        if half[*a * k + j] as f64 <= t && row[j] as f64 - drift[j] <= t {
                            let d = dist(i, j);
                            row[j] = round_down(d + drift[j]);
                            if d < u {
                                row[*a] = round_down(u + drift[*a]);
                                (*a, u) = (j, d);
                                t = thr(d);
                            }
                        }
                    }
                    Step::Done(*a != start)
                })
                .collect()
        } else {
            (0..self.owner.len()).map(|_| Step::Whole).collect()
        };
        let mut changed = steps
            .iter()
            .filter(|s| matches!(s, Step::Done(true)))
            .count();
        let whole: Vec<usize> = (0..steps.len())
            .filter(|&i| matches!(steps[i], Step::Whole))
            .collect();
        if whole.is_empty() {
            return changed;
        }
        let sub_norms: Vec<f64> = whole.iter().map(|&i| norms[i]).collect();
        let d = sq_distances(&x.select_rows(&whole), &sub_norms, &c);
        for (&i, drow) in whole.iter().zip(d.rows()) {
            let (mut best, mut arg) = (f64::INFINITY, 0);
            for (j, &v) in drow.iter().enumerate() {
                if v < best {
                    (best, arg) = (v, j);
                }
            }
            if self.width == k {
                let row = &mut self.lower[i * k..(i + 1) * k];
                for ((l, &v), &d) in row.iter_mut().zip(drow).zip(&self.drift) {
                    *l = round_down(v.sqrt() + d);
                }
            }
            changed += usize::from(self.owner[i] != arg);
            self.owner[i] = arg;
        }
        changed
    }
}

/// Sets each centre to the mean of its points (summed in point order; a centre without points
/// stays) and returns how far each centre moved.
fn update_centres(x: &Instances, owner: &[usize], centres: &mut Array2<f64>) -> Vec<f64> {
    let k = centres.nrows();
    let mut sums = Array2::<f64>::zeros((k, x.n_features()));
    let mut counts = vec![0usize; k];
    for (i, &a) in owner.iter().enumerate() {
        counts[a] += 1;
        match x {
            Instances::Dense(m) => sums.row_mut(a).scaled_add(1.0, &ndarray::aview1(m.row(i))),
            Instances::Dense32(m) => sums
                .row_mut(a)
                .iter_mut()
                .zip(m.row(i))
                .for_each(|(s, &v)| *s += f64::from(v)),
            Instances::Sparse(m) => {
                let (idx, val) = m.row(i);
                let mut r = sums.row_mut(a);
                for (&j, &v) in idx.iter().zip(val) {
                    r[j] += v;
                }
            }
        }
    }
    let mut moved = vec![0.0; k];
    for (j, &cnt) in counts.iter().enumerate() {
        if cnt > 0 {
            let mean = sums.row(j).mapv(|v| v / cnt as f64);
            moved[j] = sq_diff(
                mean.as_slice().unwrap_or_default(),
                centres.row(j).as_slice().unwrap_or_default(),
            )
            .sqrt();
            centres.row_mut(j).assign(&mean);
        }
    }
    moved
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
/// (`bounds.owner[i]` indexes the seed of `nearest[i]` in `seeds`, and becomes `seeds.len()`
/// where `c` is nearer; the bounds get a lower bound on `|x_i - c|`), skipping the points that `c` provably cannot come nearer to. By the triangle inequality
/// `|x - c| >= |c - s| - |x - s|`, so with `s` the owner seed and `r = |x - s|`, a gap
/// `|c - s| >= 2 r` keeps `s`; the test asks the bound to clear `r^2` by a margin far above the
/// rounding of the computed distances, so a skipped point is one whose computed distance would not
/// have been smaller either, and the seeding is exactly the one without skipping. Late in the
/// seeding most points are skipped, and their feature rows are never read.
fn update_nearest(
    x: &Instances,
    norms: &[f64],
    c: &[f64],
    seeds: &[Vec<f64>],
    nearest: &mut [f64],
    bounds: &mut Bounds,
) {
    let t = sq_norm(c);
    let gap: Vec<f64> = seeds.iter().map(|s| sq_diff(s, c).sqrt()).collect();
    let new = seeds.len();
    let simd = Simd::detect();
    let width = bounds.width;
    let keep = width > new;
    nearest
        .par_iter_mut()
        .zip(bounds.owner.par_iter_mut())
        .zip(bounds.lower.par_chunks_mut(width))
        .enumerate()
        .for_each(|(i, ((d, o), l))| {
            let (r, g) = (d.sqrt(), gap[*o]);
            if g >= 2.0 * r && (g - r) * (g - r) > *d + 1e-9 * (norms[i] + t + 1.0) {
                if keep {
                    l[new] = round_down(g - r);
                }
                return;
            }
            let dist = sq_distance(x, norms, i, c, t, simd);
            if keep {
                l[new] = round_down(dist.sqrt());
            }
            if dist < *d {
                *d = dist;
                *o = new;
            }
        });
}

/// `|a - b|^2` from the differences (four running sums, so that it vectorises).
fn sq_diff(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    let mut acc = [0.0; 4];
    for (x, y) in ca.zip(cb) {
        for l in 0..4 {
            acc[l] += (x[l] - y[l]) * (x[l] - y[l]);
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `|c|^2`.
fn sq_norm(c: &[f64]) -> f64 {
    c.iter().map(|v| v * v).sum()
}

/// `|x_i - c|^2 = |x_i|^2 + |c|^2 - 2 x_i . c` (clipped at 0), with `t = |c|^2`.
#[inline]
fn sq_distance(x: &Instances, norms: &[f64], i: usize, c: &[f64], t: f64, simd: Simd) -> f64 {
    let dot: f64 = match x {
        Instances::Dense(m) => simd.dot(m.row(i), c),
        Instances::Dense32(m) => simd.dot(m.row(i), c),
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

    /// Uniform draws in [0, 1) from a seeded linear congruential generator.
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The pruned seeding update gives bitwise the distances and owners of the plain one (the
    /// minimum over all seeds, the first seed on ties), on clustered points where most updates
    /// are skipped, with duplicate seeds and points equal to a seed.
    #[test]
    fn pruned_seeding_update_is_exact() {
        let (n, d) = (400, 5);
        let mut unif = uniform(12345);
        let x = Array2::from_shape_fn((n, d), |(i, _)| (i % 7) as f64 * 3.0 + unif() * 0.5);
        let inst = Instances::from(x.clone());
        let norms = inst.sq_norms();
        let picks = [3usize, 10, 3, 250, 17, 399, 42, 5, 6, 11, 200, 201];
        let seeds: Vec<Vec<f64>> = picks.iter().map(|&r| x.row(r).to_vec()).collect();
        let mut nearest = distances_to(&inst, &norms, &seeds[0]);
        let mut bounds = Bounds::new(n, seeds.len(), true, MAX_BOUND_BYTES);
        for (l, &d) in bounds.lower.chunks_exact_mut(seeds.len()).zip(&nearest) {
            l[0] = round_down(d.sqrt());
        }
        for s in 1..seeds.len() {
            update_nearest(
                &inst,
                &norms,
                &seeds[s],
                &seeds[..s],
                &mut nearest,
                &mut bounds,
            );
        }
        let simd = Simd::detect();
        for (i, &near) in nearest.iter().enumerate() {
            let (mut best, mut arg) = (f64::INFINITY, 0);
            for (s, c) in seeds.iter().enumerate() {
                let v = sq_distance(&inst, &norms, i, c, sq_norm(c), simd);
                if v < best {
                    (best, arg) = (v, s);
                }
            }
            assert_eq!(near.to_bits(), best.to_bits(), "point {i}");
            assert_eq!(bounds.owner[i], arg, "point {i}");
            // The lower bounds hold for every seed.
            for (s, c) in seeds.iter().enumerate() {
                let v = sq_distance(&inst, &norms, i, c, sq_norm(c), simd).sqrt();
                let l = bounds.lower[i * seeds.len() + s] as f64;
                assert!(l <= v + 1e-9, "point {i} seed {s}: {l} > {v}");
            }
        }
    }

    /// Lloyd's iterations with Elkan's bounds (and without, when they would not fit) give the
    /// centres of plain Lloyd iterations (all distances every time, the same stopping rule) from
    /// the same seeds.
    #[test]
    fn bounded_lloyd_equals_plain_lloyd() {
        let (n, d, k) = (600, 4, 25);
        let mut unif = uniform(777);
        let x = Array2::from_shape_fn((n, d), |(i, j)| ((i * (j + 3)) % 5) as f64 + unif());
        let inst = Instances::from(x.clone());
        let norms = inst.sq_norms();
        let indptr: Vec<usize> = (0..=n).map(|i| i * d).collect();
        let indices: Vec<usize> = (0..n * d).map(|e| e % d).collect();
        let csr = crate::bags::Csr::new(n, d, indptr, indices, x.iter().copied().collect());
        let sparse = Instances::Sparse(
            csr.map_err(|e| e.to_string())
                .unwrap_or_else(|e| panic!("{e}")),
        );
        for max_iter in [1, 2, 3, 20] {
            let got = kmeans(&inst, k, max_iter, 9);
            let mut want = kmeans(&inst, k, 0, 9);
            let mut owner = vec![usize::MAX; n];
            for _ in 0..max_iter {
                let d2 = sq_distances(&inst, &norms, &Instances::from(want.clone()));
                let new: Vec<usize> = d2
                    .rows()
                    .into_iter()
                    .map(|r| (0..k).fold(0, |b, j| if r[j] < r[b] { j } else { b }))
                    .collect();
                let changed = new.iter().zip(&owner).filter(|(a, b)| a != b).count();
                if changed == 0 {
                    break;
                }
                owner = new;
                update_centres(&inst, &owner, &mut want);
                if changed * 100 <= n {
                    break;
                }
            }
            // With Elkan's bounds and without them (every assignment by the matrix product),
            // and on the same points stored sparse.
            let plain = kmeans_within(&inst, k, max_iter, 9, 0);
            let sparse = kmeans(&sparse, k, max_iter, 9);
            for (name, c) in [
                ("bounded", &got),
                ("unbounded", &plain),
                ("sparse", &sparse),
            ] {
                let err = (c - &want).iter().fold(0.0f64, |a, v| a.max(v.abs()));
                assert!(err < 1e-12, "{name}, max_iter {max_iter}: {err}");
            }
        }
    }

    /// The same centres on 1 and 2 threads (the bounds pass, the seeding and the products all
    /// run in parallel).
    #[test]
    fn kmeans_does_not_depend_on_threads() {
        let mut unif = uniform(4242);
        let x = Array2::from_shape_fn((3000, 8), |(i, _)| (i % 11) as f64 + 2.0 * unif());
        let inst = Instances::from(x);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map(|pool| pool.install(|| kmeans(&inst, 60, 20, 3)))
                .map_err(|e| e.to_string())
        };
        assert_eq!(run(1), run(2));
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
        let x = Instances::from(Array2::from_shape_vec((90, 2), rows).unwrap_or_default());
        let c = kmeans(&x, 3, 20, 0);
        let mut firsts: Vec<f64> = c.column(0).to_vec();
        firsts.sort_by(f64::total_cmp);
        for (f, want) in firsts.iter().zip([0.145, 10.145, 20.145]) {
            assert!((f - want).abs() < 1e-9, "{firsts:?}");
        }
        assert_eq!(kmeans(&x, 3, 20, 0), c);
    }
}
