//! The per-iteration scans of the SMO over a block of active positions: the first index of the
//! working set (`argmax -y_t G_t` over `I_up`), the second (WSS 2's largest decrease over
//! `I_low`) and the gradient update fused with the next first index. They read the signed
//! gradient `yg_t = y_t G_t`, never `y` itself.
//!
//! Each scan keeps [`LANES`] independent accumulators (position `lo + k` feeds lane
//! `k mod LANES`), merged in lane order at the end of the block. The AVX2 code holds the lanes
//! in registers of four and performs the same floating-point operations per element (no FMA), so
//! both paths give bitwise the same result, and the scans are short dependency chains instead of
//! one long one. (Eight lanes in two registers, measured on the MUSK2 ALP-SVM fit, were slower:
//! the accumulators no longer fit the sixteen vector registers.)

use super::{NIL, TAU};
use crate::linalg::Simd;

/// Accumulators per block.
pub(super) const LANES: usize = 4;

/// A running maximum over positions with its position; ties go to the later position, as in
/// one sequential pass.
#[derive(Debug, Clone, Copy)]
pub(super) struct ArgMax {
    pub(super) value: f64,
    pub(super) pos: usize,
}

impl ArgMax {
    /// Nothing seen yet: any finite value replaces it, `-inf` never does.
    pub(super) const EMPTY: Self = Self {
        value: f64::MIN,
        pos: NIL,
    };

    #[inline(always)]
    fn push(&mut self, value: f64, pos: usize) {
        if value >= self.value {
            *self = Self { value, pos };
        }
    }

    /// The maximum of two results over disjoint positions (the later position on ties).
    pub(super) fn merge(self, other: Self) -> Self {
        match (self.pos, other.pos) {
            (NIL, _) => other,
            (_, NIL) => self,
            _ if other.value > self.value
                || (other.value == self.value && other.pos > self.pos) =>
            {
                other
            }
            _ => self,
        }
    }
}

/// The best second index of WSS 2 so far: the gain `num / den` kept as a fraction (compared by
/// cross-multiplication, no division in the loop), with `gmax2 = max y_t G_t` over `I_low`.
#[derive(Debug, Clone, Copy)]
pub(super) struct SecondChoice {
    num: f64,
    den: f64,
    pub(super) pos: usize,
    pub(super) gmax2: f64,
}

impl SecondChoice {
    pub(super) const EMPTY: Self = Self {
        num: -1.0,
        den: 1.0,
        pos: NIL,
        gmax2: f64::NEG_INFINITY,
    };

    #[inline(always)]
    fn push(&mut self, v: f64, num: f64, den: f64, pos: usize) {
        if v > self.gmax2 {
            self.gmax2 = v;
        }
        if num * self.den >= self.num * den {
            self.num = num;
            self.den = den;
            self.pos = pos;
        }
    }

    /// The better of two results over disjoint positions (the later position on ties).
    pub(super) fn merge(self, other: Self) -> Self {
        let gmax2 = if other.gmax2 > self.gmax2 {
            other.gmax2
        } else {
            self.gmax2
        };
        let (a, b) = (self.num * other.den, other.num * self.den);
        let best = match (self.pos, other.pos) {
            (NIL, _) => other,
            (_, NIL) => self,
            _ if b > a || (b == a && other.pos > self.pos) => other,
            _ => self,
        };
        Self { gmax2, ..best }
    }
}

/// The inputs of the second-index scan that do not depend on the position.
#[derive(Debug, Clone, Copy)]
pub(super) struct SecondInputs<'a> {
    /// `-y_i G_i` of the first index.
    pub(super) gmax: f64,
    /// `Q_ii + d_i` of the first index.
    pub(super) qd_i: f64,
    /// The kernel row of the first index's point.
    pub(super) row: &'a [f64],
    /// Every point of the scan is below this bound.
    pub(super) point_bound: usize,
}

/// The per-position arrays the second-index scan reads (one value per position each).
#[derive(Debug, Clone, Copy)]
pub(super) struct SecondColumns<'a> {
    /// `y_t G_t`.
    pub(super) yg: &'a [f64],
    /// The `I_low` offsets (`0` or `-inf`).
    pub(super) low: &'a [f64],
    /// `Q_tt + d_t`.
    pub(super) qd: &'a [f64],
    /// The point of each position (its index into a kernel row).
    pub(super) point: &'a [u32],
}

impl SecondColumns<'_> {
    /// The positions below `hi`.
    fn until(self, hi: usize) -> Self {
        Self {
            yg: &self.yg[..hi],
            low: &self.low[..hi],
            qd: &self.qd[..hi],
            point: &self.point[..hi],
        }
    }
}

/// WSS 2 over positions `lo..hi`: `gmax2 = max y_j G_j` over `I_low` and the `j` of the largest
/// `grad_diff^2 / quad` among `grad_diff = gmax + y_j G_j > 0` (Fan et al. 2005, eq. (17)),
/// with `quad = Q_ii + Q_jj - 2 K_ij` (`TAU` when not positive).
pub(super) fn second_choice(
    simd: Simd,
    lo: usize,
    hi: usize,
    inp: SecondInputs<'_>,
    cols: SecondColumns<'_>,
) -> SecondChoice {
    let cols = cols.until(hi);
    let mut acc = [SecondChoice::EMPTY; LANES];
    let mut done = lo;
    #[cfg(target_arch = "x86_64")]
    {
        if simd.avx2() && inp.point_bound <= inp.row.len() {
            // SAFETY: the CPU has AVX2; every slice holds `hi` values and every point indexes
            // `row` (all points are below `point_bound`, checked against the row just above).
            done = unsafe { avx2::second_choice(lo, hi, inp, cols, &mut acc) };
        }
    }
    let _ = simd;
    let SecondColumns { yg, low, qd, point } = cols;
    let row = inp.row;
    let step = |s: &mut SecondChoice, k: usize| {
        let v = yg[k] + low[k];
        let grad_diff = inp.gmax + v;
        // Q_ii + Q_jj - 2 y_i y_j Q_ij = K_ii + d_i + K_jj + d_j - 2 K_ij.
        let quad = inp.qd_i + qd[k] - 2.0 * row[point[k] as usize];
        let quad = if quad > 0.0 { quad } else { TAU };
        // Non-candidates get `-inf`, which never wins (`den > 0`).
        let num = if grad_diff > 0.0 {
            grad_diff * grad_diff
        } else {
            f64::NEG_INFINITY
        };
        s.push(v, num, quad, k);
    };
    fold_rest(
        done,
        hi,
        acc,
        step,
        SecondChoice::merge,
        SecondChoice::EMPTY,
    )
}

/// `argmax { -y_t G_t : t in I_up }` over positions `lo..hi` (`yg`: `y_t G_t`; `up`: the
/// `I_up` offsets).
pub(super) fn first_choice(simd: Simd, lo: usize, hi: usize, yg: &[f64], up: &[f64]) -> ArgMax {
    let (yg, up) = (&yg[..hi], &up[..hi]);
    let mut acc = [ArgMax::EMPTY; LANES];
    let mut done = lo;
    #[cfg(target_arch = "x86_64")]
    {
        if simd.avx2() {
            // SAFETY: the CPU has AVX2; every slice holds `hi` values.
            done = unsafe { avx2::first_choice(lo, hi, yg, up, &mut acc) };
        }
    }
    let _ = simd;
    let step = |m: &mut ArgMax, k: usize| m.push(-yg[k] + up[k], k);
    fold_rest(done, hi, acc, step, ArgMax::merge, ArgMax::EMPTY)
}

/// The coefficients of one gradient update: `G_k += y_k (ci K(m_i, m_k) + cj K(m_j, m_k))`, that
/// is `yg_k += ci K(m_i, m_k) + cj K(m_j, m_k)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct UpdateInputs<'a> {
    pub(super) ci: f64,
    pub(super) cj: f64,
    pub(super) row_i: &'a [f64],
    pub(super) row_j: &'a [f64],
    /// Every point of the scan is below this bound.
    pub(super) point_bound: usize,
}

/// The gradient update of positions `lo..lo + yg.len()` (`yg` is that block of the signed
/// gradient), fused with the scan for the next first index over the updated values.
pub(super) fn update_and_first(
    simd: Simd,
    lo: usize,
    yg: &mut [f64],
    inp: UpdateInputs<'_>,
    point: &[u32],
    up: &[f64],
) -> ArgMax {
    let hi = lo + yg.len();
    let (point, up) = (&point[..hi], &up[..hi]);
    let mut acc = [ArgMax::EMPTY; LANES];
    let mut done = lo;
    #[cfg(target_arch = "x86_64")]
    {
        let n = inp.row_i.len().min(inp.row_j.len());
        if simd.avx2() && inp.point_bound <= n {
            // SAFETY: the CPU has AVX2; `g` holds positions `lo..hi`, the other slices `hi`
            // values, and every point indexes both rows (all points are below `point_bound`,
            // checked against the rows just above).
            done = unsafe { avx2::update_and_first(lo, yg, inp, point, up, &mut acc) };
        }
    }
    let _ = simd;
    let step = |m: &mut ArgMax, k: usize| {
        let pk = point[k];
        let h = &mut yg[k - lo];
        *h += inp.ci * inp.row_i[pk as usize] + inp.cj * inp.row_j[pk as usize];
        m.push(-*h + up[k], k);
    };
    fold_rest(done, hi, acc, step, ArgMax::merge, ArgMax::EMPTY)
}

/// Continues the lanes `acc` over positions `from..hi` (`from - lo` a multiple of [`LANES`]
/// when the vector code ran: it stops at the last full group), then merges them.
#[inline(always)]
fn fold_rest<T: Copy>(
    from: usize,
    hi: usize,
    mut acc: [T; LANES],
    mut step: impl FnMut(&mut T, usize),
    merge: impl Fn(T, T) -> T,
    empty: T,
) -> T {
    let mut k = from;
    while k + LANES <= hi {
        for (l, a) in acc.iter_mut().enumerate() {
            step(a, k + l);
        }
        k += LANES;
    }
    for (l, a) in acc.iter_mut().enumerate().take(hi - k) {
        step(a, k + l);
    }
    acc.into_iter().fold(empty, merge)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{ArgMax, SecondChoice, SecondColumns, SecondInputs, UpdateInputs, LANES, TAU};

    /// Lanes per register; a scan holds [`LANES`] lanes in `LANES / WIDTH` registers, so that
    /// the running comparisons form independent dependency chains.
    const WIDTH: usize = 4;
    const REGS: usize = LANES / WIDTH;

    /// Positions `k..k + 4` as `f64` lanes (exact below 2^53).
    #[inline(always)]
    unsafe fn positions(k: usize) -> __m256d {
        let k = k as f64;
        _mm256_setr_pd(k, k + 1.0, k + 2.0, k + 3.0)
    }

    /// The first positions of each register's lanes, from group start `k`.
    #[inline(always)]
    unsafe fn start_positions(k: usize) -> [__m256d; REGS] {
        std::array::from_fn(|r| positions(k + r * WIDTH))
    }

    /// The loop every scan shares: the full groups of [`LANES`] positions of `lo..hi`, in order;
    /// in each, `at(r, k, pos)` per register `r`, `k` its first position and `pos` its lanes'
    /// positions as `f64`. Returns where the groups end.
    #[inline(always)]
    unsafe fn groups(lo: usize, hi: usize, mut at: impl FnMut(usize, usize, __m256d)) -> usize {
        let step = _mm256_set1_pd(LANES as f64);
        let mut pos = start_positions(lo);
        let mut k = lo;
        while k + LANES <= hi {
            for (r, pos) in pos.iter_mut().enumerate() {
                at(r, k + r * WIDTH, *pos);
                *pos = _mm256_add_pd(*pos, step);
            }
            k += LANES;
        }
        k
    }

    /// `row[point[k..k + 4]]`.
    #[inline(always)]
    unsafe fn gather(row: &[f64], point: &[u32], k: usize) -> __m256d {
        let at = |k: usize| *row.get_unchecked(*point.get_unchecked(k) as usize);
        _mm256_setr_pd(at(k), at(k + 1), at(k + 2), at(k + 3))
    }

    /// The four values of a register.
    #[inline(always)]
    unsafe fn lanes(v: __m256d) -> [f64; WIDTH] {
        let mut out = [0.0; WIDTH];
        _mm256_storeu_pd(out.as_mut_ptr(), v);
        out
    }

    /// A position lane back as an index (`-1`: nothing seen).
    #[inline(always)]
    fn index(p: f64) -> usize {
        if p < 0.0 {
            super::NIL
        } else {
            p as usize
        }
    }

    /// Four lanes of [`ArgMax`].
    #[derive(Clone, Copy)]
    struct MaxLanes {
        best: __m256d,
        pos: __m256d,
    }

    impl MaxLanes {
        #[inline(always)]
        unsafe fn empty() -> Self {
            Self {
                best: _mm256_set1_pd(f64::MIN),
                pos: _mm256_set1_pd(-1.0),
            }
        }

        /// [`ArgMax::push`] per lane: take `(v, pos)` where `v >= best`.
        #[inline(always)]
        unsafe fn push(&mut self, v: __m256d, pos: __m256d) {
            let take = _mm256_cmp_pd::<_CMP_GE_OQ>(v, self.best);
            self.best = _mm256_blendv_pd(self.best, v, take);
            self.pos = _mm256_blendv_pd(self.pos, pos, take);
        }

        #[inline(always)]
        unsafe fn store(self, acc: &mut [ArgMax]) {
            let (v, p) = (lanes(self.best), lanes(self.pos));
            for (l, a) in acc.iter_mut().enumerate() {
                *a = ArgMax {
                    value: v[l],
                    pos: index(p[l]),
                };
            }
        }
    }

    /// Four lanes of [`SecondChoice`].
    #[derive(Clone, Copy)]
    struct SecondLanes {
        gmax2: __m256d,
        num: __m256d,
        den: __m256d,
        pos: __m256d,
    }

    impl SecondLanes {
        #[inline(always)]
        unsafe fn empty() -> Self {
            Self {
                gmax2: _mm256_set1_pd(f64::NEG_INFINITY),
                num: _mm256_set1_pd(-1.0),
                den: _mm256_set1_pd(1.0),
                pos: _mm256_set1_pd(-1.0),
            }
        }

        /// [`SecondChoice::push`] per lane.
        #[inline(always)]
        unsafe fn push(&mut self, v: __m256d, num: __m256d, den: __m256d, pos: __m256d) {
            // `if v > gmax2 { gmax2 = v }`
            self.gmax2 =
                _mm256_blendv_pd(self.gmax2, v, _mm256_cmp_pd::<_CMP_GT_OQ>(v, self.gmax2));
            let take = _mm256_cmp_pd::<_CMP_GE_OQ>(
                _mm256_mul_pd(num, self.den),
                _mm256_mul_pd(self.num, den),
            );
            self.num = _mm256_blendv_pd(self.num, num, take);
            self.den = _mm256_blendv_pd(self.den, den, take);
            self.pos = _mm256_blendv_pd(self.pos, pos, take);
        }

        #[inline(always)]
        unsafe fn store(self, acc: &mut [SecondChoice]) {
            let (m2, n, d, p) = (
                lanes(self.gmax2),
                lanes(self.num),
                lanes(self.den),
                lanes(self.pos),
            );
            for (l, a) in acc.iter_mut().enumerate() {
                *a = SecondChoice {
                    num: n[l],
                    den: d[l],
                    pos: index(p[l]),
                    gmax2: m2[l],
                };
            }
        }
    }

    /// The full groups of [`LANES`] of `lo..hi` into `acc`; returns where the groups end.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn second_choice(
        lo: usize,
        hi: usize,
        inp: SecondInputs<'_>,
        cols: SecondColumns<'_>,
        acc: &mut [SecondChoice; LANES],
    ) -> usize {
        let SecondColumns { yg, low, qd, point } = cols;
        let gmax = _mm256_set1_pd(inp.gmax);
        let qd_i = _mm256_set1_pd(inp.qd_i);
        let two = _mm256_set1_pd(2.0);
        let tau = _mm256_set1_pd(TAU);
        let zero = _mm256_setzero_pd();
        let neg_inf = _mm256_set1_pd(f64::NEG_INFINITY);
        let mut regs = [SecondLanes::empty(); REGS];
        let k = groups(lo, hi, |r, k, pos| {
            let v = _mm256_add_pd(
                _mm256_loadu_pd(yg.as_ptr().add(k)),
                _mm256_loadu_pd(low.as_ptr().add(k)),
            );
            let grad_diff = _mm256_add_pd(gmax, v);
            let quad = _mm256_sub_pd(
                _mm256_add_pd(qd_i, _mm256_loadu_pd(qd.as_ptr().add(k))),
                _mm256_mul_pd(two, gather(inp.row, point, k)),
            );
            let quad = _mm256_blendv_pd(tau, quad, _mm256_cmp_pd::<_CMP_GT_OQ>(quad, zero));
            let num = _mm256_blendv_pd(
                neg_inf,
                _mm256_mul_pd(grad_diff, grad_diff),
                _mm256_cmp_pd::<_CMP_GT_OQ>(grad_diff, zero),
            );
            regs[r].push(v, num, quad, pos);
        });
        if k > lo {
            for (r, chunk) in acc.chunks_exact_mut(WIDTH).enumerate() {
                regs[r].store(chunk);
            }
        }
        k
    }

    /// The full groups of [`LANES`] of `lo..hi` into `acc`; returns where the groups end.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn first_choice(
        lo: usize,
        hi: usize,
        yg: &[f64],
        up: &[f64],
        acc: &mut [ArgMax; LANES],
    ) -> usize {
        let mut regs = [MaxLanes::empty(); REGS];
        let k = groups(lo, hi, |r, k, pos| {
            let v = first_value(
                _mm256_loadu_pd(yg.as_ptr().add(k)),
                _mm256_loadu_pd(up.as_ptr().add(k)),
            );
            regs[r].push(v, pos);
        });
        store_max(k > lo, &regs, acc);
        k
    }

    /// The full groups of [`LANES`] of the block `lo..lo + yg.len()` into `acc`; returns where
    /// the groups end.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn update_and_first(
        lo: usize,
        yg: &mut [f64],
        inp: UpdateInputs<'_>,
        point: &[u32],
        up: &[f64],
        acc: &mut [ArgMax; LANES],
    ) -> usize {
        let hi = lo + yg.len();
        let ci = _mm256_set1_pd(inp.ci);
        let cj = _mm256_set1_pd(inp.cj);
        let mut regs = [MaxLanes::empty(); REGS];
        let gp = yg.as_mut_ptr();
        let k = groups(lo, hi, |r, k, pos| {
            let ri = gather(inp.row_i, point, k);
            let rj = gather(inp.row_j, point, k);
            let h = _mm256_add_pd(
                _mm256_loadu_pd(gp.add(k - lo)),
                _mm256_add_pd(_mm256_mul_pd(ci, ri), _mm256_mul_pd(cj, rj)),
            );
            _mm256_storeu_pd(gp.add(k - lo), h);
            let v = first_value(h, _mm256_loadu_pd(up.as_ptr().add(k)));
            regs[r].push(v, pos);
        });
        store_max(k > lo, &regs, acc);
        k
    }

    /// `-yg + up_off` of four positions (as [`ArgMax::push`]'s scalar caller computes it).
    #[inline(always)]
    unsafe fn first_value(yg: __m256d, up: __m256d) -> __m256d {
        _mm256_add_pd(_mm256_xor_pd(yg, _mm256_set1_pd(-0.0)), up)
    }

    /// The registers' lanes into `acc` when any group was scanned.
    #[inline(always)]
    unsafe fn store_max(any: bool, regs: &[MaxLanes; REGS], acc: &mut [ArgMax; LANES]) {
        if any {
            for (r, chunk) in acc.chunks_exact_mut(WIDTH).enumerate() {
                regs[r].store(chunk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 scans and the portable ones give the same results bitwise, on blocks of every
    /// length modulo eight (two groups of lanes and more), with members and non-members of `I_up` / `I_low`, ties and
    /// non-positive curvature.
    #[test]
    fn simd_and_portable_scans_agree() {
        let portable = Simd::portable();
        let best = Simd::detect();
        let n_points = 37;
        let row: Vec<f64> = (0..n_points)
            .map(|m| ((m * 7 % 11) as f64) / 10.0)
            .collect();
        let row2: Vec<f64> = (0..n_points)
            .map(|m| ((m * 5 % 13) as f64) / 12.0)
            .collect();
        for len in [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 19, 64, 67] {
            for lo in [0, 3] {
                let hi = lo + len;
                let n = hi + 2;
                let y: Vec<f64> = (0..n)
                    .map(|k| if k % 3 == 0 { -1.0 } else { 1.0 })
                    .collect();
                // Repeated values make ties.
                let g: Vec<f64> = (0..n).map(|k| ((k * 13 % 7) as f64 - 3.0) / 4.0).collect();
                let yg: Vec<f64> = y.iter().zip(&g).map(|(a, b)| a * b).collect();
                let off = |k: usize| if k % 5 == 1 { f64::NEG_INFINITY } else { 0.0 };
                let up: Vec<f64> = (0..n).map(off).collect();
                let low: Vec<f64> = (0..n).map(|k| off(k + 2)).collect();
                let qd: Vec<f64> = (0..n).map(|k| if k % 7 == 0 { 0.0 } else { 1.0 }).collect();
                let point: Vec<u32> = (0..n).map(|k| ((k * 3) % n_points) as u32).collect();
                let inp = SecondInputs {
                    gmax: 0.4,
                    qd_i: 1.0,
                    row: &row,
                    point_bound: n_points,
                };
                let cols = SecondColumns {
                    yg: &yg,
                    low: &low,
                    qd: &qd,
                    point: &point,
                };
                let a = second_choice(portable, lo, hi, inp, cols);
                let b = second_choice(best, lo, hi, inp, cols);
                assert_eq!(
                    (a.num.to_bits(), a.den.to_bits(), a.pos, a.gmax2.to_bits()),
                    (b.num.to_bits(), b.den.to_bits(), b.pos, b.gmax2.to_bits()),
                    "second choice, lo {lo} len {len}"
                );
                let a = first_choice(portable, lo, hi, &yg, &up);
                let b = first_choice(best, lo, hi, &yg, &up);
                assert_eq!((a.value.to_bits(), a.pos), (b.value.to_bits(), b.pos));
                let upd = UpdateInputs {
                    ci: 0.3,
                    cj: -0.7,
                    row_i: &row,
                    row_j: &row2,
                    point_bound: n_points,
                };
                let (mut ga, mut gb) = (yg[lo..hi].to_vec(), yg[lo..hi].to_vec());
                let a = update_and_first(portable, lo, &mut ga, upd, &point, &up);
                let b = update_and_first(best, lo, &mut gb, upd, &point, &up);
                assert_eq!((a.value.to_bits(), a.pos), (b.value.to_bits(), b.pos));
                for (u, v) in ga.iter().zip(&gb) {
                    assert_eq!(u.to_bits(), v.to_bits());
                }
                // The first index is a member of I_up of the largest value (the later of ties).
                let reference = (lo..hi)
                    .filter(|&k| up[k] == 0.0)
                    .map(|k| (-y[k] * g[k], k))
                    .fold(None, |acc: Option<(f64, usize)>, (v, k)| match acc {
                        Some((w, _)) if w > v => acc,
                        _ => Some((v, k)),
                    });
                let got = first_choice(best, lo, hi, &yg, &up);
                match reference {
                    Some((v, k)) => assert_eq!((got.value, got.pos), (v, k)),
                    None => assert_eq!(got.pos, NIL),
                }
            }
        }
    }
}
