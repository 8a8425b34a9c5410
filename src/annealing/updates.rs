//! The closed-form `p`-updates of one positive bag (AL-SVM, AW-SVM, ALP-SVM and their
//! zero-temperature limits) and the losses and the sigmoid they are built on.

/// The squared hinge `l(y, f) = max(0, 1 - y f)^2`.
#[inline]
pub fn squared_hinge(y: f64, f: f64) -> f64 {
    let m = (1.0 - y * f).max(0.0);
    m * m
}

/// `d = l(+1, f) - l(-1, f)`, the loss difference of AL-SVM's update (eq. 8).
#[inline]
pub fn loss_difference(f: f64) -> f64 {
    squared_hinge(1.0, f) - squared_hinge(-1.0, f)
}

/// The logistic function, stable for every argument (`+-inf` give 1 and 0).
#[inline]
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// AL-SVM's update of one positive bag (Gehler & Chapelle eq. 8): the minimiser over
/// `p in [0, 1]^m`, `sum_j p_j >= 1`, of
/// `sum_j [p_j t_j + T (p_j ln p_j + (1 - p_j) ln(1 - p_j))]`, `t_j = C d_j`, which is
/// `p_j = sigmoid((lambda - t_j) / T)` with `lambda = 0` if that satisfies the constraint and
/// else the exact root of `sum_j p_j = 1` ([`simplex_sigmoid`]). A bag of one instance gets
/// `p = 1`. `T = 0` gives the zero-temperature limit (mi-SVM's relabelling: `p_j = 1` where
/// `t_j < 0`, 0 where `t_j > 0`, 1/2 at 0; when no instance is positive, the smallest `t_j`
/// takes the mass, shared among ties).
pub fn al_update(t: &[f64], temp: f64, out: &mut [f64]) {
    if t.len() == 1 {
        out[0] = 1.0;
        return;
    }
    let mut sum = 0.0;
    for (o, &tj) in out.iter_mut().zip(t) {
        *o = if temp > 0.0 {
            sigmoid(-tj / temp)
        } else if tj < 0.0 {
            1.0
        } else if tj > 0.0 {
            0.0
        } else {
            0.5
        };
        sum += *o;
    }
    if sum < 1.0 {
        simplex_sigmoid(t, temp, out);
    }
}

/// The root of `sum_j sigmoid((lambda - t_j) / T) = 1` in `lambda`, written into `out` as the
/// probabilities. Solved in the shifted variable `mu = (lambda - t_min) / T` against the gaps
/// `delta_j = (t_j - t_min) / T >= 0` (log-sum-exp form: finite for any `T > 0`, infinite `t_j`
/// and ties), by a safeguarded Newton iteration on the bracket `[-ln m, delta_(2)]` to machine
/// precision. `T = 0`: the smallest `t_j` takes the mass (ties share it).
pub fn simplex_sigmoid(t: &[f64], temp: f64, out: &mut [f64]) {
    let m = t.len();
    let t_min = t.iter().copied().fold(f64::INFINITY, f64::min);
    if t_min == f64::INFINITY || t_min.is_nan() {
        out.fill(1.0 / m as f64);
        return;
    }
    let delta: Vec<f64> = t
        .iter()
        .map(|&tj| {
            if temp > 0.0 {
                (tj - t_min) / temp
            } else if tj == t_min {
                0.0
            } else {
                f64::INFINITY
            }
        })
        .collect();
    // Second smallest gap (0 when the smallest is tied).
    let mut first = f64::INFINITY;
    let mut second = f64::INFINITY;
    for &d in &delta {
        if d < first {
            second = first;
            first = d;
        } else if d < second {
            second = d;
        }
    }
    if second == f64::INFINITY {
        // Only the smallest term is finite: it takes the whole mass.
        for (o, &d) in out.iter_mut().zip(&delta) {
            *o = if d == 0.0 { 1.0 } else { 0.0 };
        }
        return;
    }
    let g = |mu: f64| -> (f64, f64) {
        let (mut s, mut ds) = (-1.0, 0.0);
        for &d in &delta {
            let p = sigmoid(mu - d);
            s += p;
            ds += p * (1.0 - p);
        }
        (s, ds)
    };
    let mu = increasing_root(g, -(m as f64).ln(), second);
    let mut sum = 0.0;
    for (o, &d) in out.iter_mut().zip(&delta) {
        *o = sigmoid(mu - d);
        sum += *o;
    }
    if sum > 0.0 {
        out.iter_mut().for_each(|o| *o /= sum);
    }
}

/// The root of an increasing function `f` on `[lo, hi]` (`f(lo) <= 0 <= f(hi)`), given with its
/// derivative (`f(x) = (value, slope)`), to machine precision: Newton steps kept inside the
/// bracket (a step that leaves it bisects), at most [`NEWTON_STEPS`] of them; if they have not
/// converged by then (steps that keep landing near alternate ends of the bracket shrink it
/// slowly), bisection finishes the job.
fn increasing_root(f: impl Fn(f64) -> (f64, f64), mut lo: f64, mut hi: f64) -> f64 {
    let close = |lo: f64, hi: f64, x: f64| hi - lo <= 4.0 * f64::EPSILON * x.abs().max(1.0);
    let mut x = 0.5 * (lo + hi);
    for _ in 0..NEWTON_STEPS {
        let (v, dv) = f(x);
        if v == 0.0 {
            return x;
        }
        if v < 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let mut next = if dv > 0.0 { x - v / dv } else { f64::NAN };
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if next == x || close(lo, hi, x) {
            return next;
        }
        x = next;
    }
    // Bisection halves the bracket at every step: at most ~2100 steps from any f64 bracket.
    while !close(lo, hi, x) {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        let (v, _) = f(mid);
        if v == 0.0 {
            return mid;
        }
        if v < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        x = 0.5 * (lo + hi);
    }
    x
}

/// Newton steps of [`increasing_root`] before it falls back to bisection.
const NEWTON_STEPS: usize = 200;

/// AW-SVM's update of one positive bag (eq. 11): `p = softmax(-t / T)`, `t_j = C l(+1, f_j)`,
/// the minimiser of `sum_j [p_j t_j + T p_j ln p_j]` on the simplex; shifted by the smallest
/// `t_j`, so finite for any `T > 0` and infinite losses. `T = 0`: the instances of smallest
/// loss share the mass.
pub fn aw_update(t: &[f64], temp: f64, out: &mut [f64]) {
    let m = t.len();
    let t_min = t.iter().copied().fold(f64::INFINITY, f64::min);
    if t_min == f64::INFINITY || t_min.is_nan() {
        out.fill(1.0 / m as f64);
        return;
    }
    let mut sum = 0.0;
    for (o, &tj) in out.iter_mut().zip(t) {
        *o = if tj == t_min {
            1.0
        } else if temp > 0.0 {
            (-(tj - t_min) / temp).exp()
        } else {
            0.0
        };
        sum += *o;
    }
    out.iter_mut().for_each(|o| *o /= sum);
}

/// ALP-SVM's update of one positive bag (section 6): the minimiser of
/// `sum_j [p_j t_j + T (p_j ln p_j + (1 - p_j) ln(1 - p_j))] + C2 (sum_j p_j - m p*)^2`
/// over `[0, 1]^m` with `sum_j p_j >= 1`. Without the constraint,
/// `p_j = sigmoid((-t_j - nu) / T)` with `nu = 2 C2 (sum_j p_j - m p*)`, a monotone fixed point
/// in `nu` on `[-2 C2 m p*, 2 C2 m (1 - p*)]`, solved by safeguarded Newton; if its sum is below
/// 1 the constraint is active, the penalty is constant on `sum_j p_j = 1`, and the solution is
/// that of AL-SVM on the simplex ([`simplex_sigmoid`]).
///
/// When `T` is below [`ALP_COLD`] times the scale of the fixed point (`max |t_j| + 2 C2 m`),
/// the sigmoid is a step narrower than the rounding of `nu`, and the `p_j` at the step would be
/// an arbitrary value; the update is then the exact `T = 0` minimiser ([`alp_update_cold`]), the
/// limit of the tempered one.
pub fn alp_update(t: &[f64], temp: f64, c2: f64, p_star: f64, out: &mut [f64]) {
    let m = t.len();
    if m == 1 {
        out[0] = 1.0;
        return;
    }
    if c2 == 0.0 {
        al_update(t, temp, out);
        return;
    }
    let scale = t.iter().fold(0.0_f64, |a, &v| a.max(v.abs())) + 2.0 * c2 * m as f64;
    if temp <= ALP_COLD * scale || !scale.is_finite() {
        alp_update_cold(t, c2, p_star, out);
        return;
    }
    let mp = m as f64 * p_star;
    let h = |nu: f64| -> (f64, f64) {
        let (mut s, mut ds) = (0.0, 0.0);
        for &tj in t {
            let p = sigmoid((-tj - nu) / temp);
            s += p;
            ds += p * (1.0 - p);
        }
        (nu - 2.0 * c2 * (s - mp), 1.0 + 2.0 * c2 * ds / temp)
    };
    let nu = increasing_root(h, -2.0 * c2 * mp, 2.0 * c2 * (m as f64 - mp));
    let mut sum = 0.0;
    for (o, &tj) in out.iter_mut().zip(t) {
        *o = sigmoid((-tj - nu) / temp);
        sum += *o;
    }
    if sum < 1.0 {
        simplex_sigmoid(t, temp, out);
    }
}

/// Temperatures (relative to the scale of ALP's fixed point) below which [`alp_update`] takes
/// the exact `T = 0` minimiser: the tempered solution differs from it by `O(T / scale)` there,
/// far below the solver tolerances, while `nu`'s rounding (`~1e-16 scale`) is no longer small
/// against the step width `T`.
pub const ALP_COLD: f64 = 1e-9;

/// ALP-SVM's update of one positive bag at `T = 0`: the minimiser of
/// `F(p) = sum_j p_j t_j + C2 (sum_j p_j - m p*)^2` over `[0, 1]^m` with `sum_j p_j >= 1`.
/// For a total `s = sum_j p_j` the best `p` fills the instances in increasing `t`, so
/// `F(s) = L(s) + C2 (s - m p*)^2` with `L` piecewise linear and convex (slope `t_(k+1)` on
/// `(k, k + 1)`, `t` sorted); its minimiser is `s = m p* - t_(k+1) / (2 C2)` when that lies in
/// `(k, k + 1)`, else the integer `k` where the slopes change sign, and at least 1. Instances
/// tied at the boundary value share its mass equally (a continuous, order-free choice).
/// Infinite `t` are allowed (such an instance is filled last, or first).
pub fn alp_update_cold(t: &[f64], c2: f64, p_star: f64, out: &mut [f64]) {
    let m = t.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| t[a].total_cmp(&t[b]));
    let sorted: Vec<f64> = order.iter().map(|&j| t[j]).collect();
    let mp = m as f64 * p_star;
    // F'(s) on (k, k + 1) is sorted[k] + 2 C2 (s - mp), increasing in s and k.
    let mut total = m as f64;
    for (k, &tk) in sorted.iter().enumerate() {
        let s = mp - tk / (2.0 * c2);
        if s <= k as f64 {
            total = k as f64;
            break;
        }
        if s < (k + 1) as f64 {
            total = s;
            break;
        }
    }
    let total = total.max(1.0);
    // Fill in increasing t; the group tied at the boundary shares what is left.
    out.fill(0.0);
    let mut left = total;
    let mut g = 0;
    while g < m && left > 0.0 {
        let mut h = g + 1;
        while h < m && sorted[h] == sorted[g] {
            h += 1;
        }
        let size = (h - g) as f64;
        let each = (left / size).min(1.0);
        for &j in &order[g..h] {
            out[j] = each;
        }
        left -= each * size;
        g = h;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn al_update_extremes_are_finite_and_feasible() {
        for temp in [1e-300, 1e-8, 1.0, 1e8] {
            for t in [
                vec![1e300, 2e300, f64::INFINITY],
                vec![0.5, 0.5, 0.5],
                vec![-1.0, 3.0],
                vec![f64::INFINITY, f64::INFINITY],
                vec![f64::NEG_INFINITY, 1.0],
            ] {
                let mut p = vec![0.0; t.len()];
                al_update(&t, temp, &mut p);
                assert!(p.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
                let s: f64 = p.iter().sum();
                assert!(s >= 1.0 - 1e-12, "{t:?} {temp} {p:?}");
            }
        }
        let mut p = vec![0.0; 3];
        al_update(&[0.5, 0.5, 0.5], 1e-300, &mut p);
        assert!(p.iter().all(|&v| (v - 1.0 / 3.0).abs() < 1e-12));
    }

    #[test]
    fn aw_update_is_a_distribution() {
        for temp in [0.0, 1e-300, 1.0, 1e300] {
            for t in [
                vec![1e300, f64::INFINITY, 0.0],
                vec![2.0, 2.0],
                vec![f64::INFINITY; 3],
            ] {
                let mut p = vec![0.0; t.len()];
                aw_update(&t, temp, &mut p);
                let s: f64 = p.iter().sum();
                assert!((s - 1.0).abs() < 1e-12 && p.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn alp_update_is_feasible() {
        for temp in [1e-300, 1e-3, 1.0, 1e6] {
            let t = vec![-2.0, 0.3, 5.0, 1e300];
            let mut p = vec![0.0; t.len()];
            alp_update(&t, temp, 10.0, 0.5, &mut p);
            assert!(p.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
            assert!(p.iter().sum::<f64>() >= 1.0 - 1e-12);
        }
    }

    #[test]
    fn alp_update_reaches_the_fixed_point_where_newton_alternates() {
        // Newton on nu alternates between the ends of its bracket here; before the bisection
        // fallback the update stopped at sum p = 0.25 and returned the simplex solution.
        let t = [9.0, 9.0, 10.0, 10.0, 19.0, 19.0, 1.19140625];
        let (temp, c2, p_star) = (1.0, 10.0, 1.0);
        let mut p = [0.0; 7];
        alp_update(&t, temp, c2, p_star, &mut p);
        let sum: f64 = p.iter().sum();
        let nu = 2.0 * c2 * (sum - 7.0 * p_star);
        for (&pj, &tj) in p.iter().zip(&t) {
            assert!((pj - sigmoid((-tj - nu) / temp)).abs() < 1e-12, "{p:?}");
        }
        assert!((sum - 6.05).abs() < 0.01, "{sum}");
    }

    #[test]
    fn increasing_root_finishes_by_bisection() {
        // a step function's slope is useless to Newton: bisection must still find the jump
        let root = increasing_root(|x| (if x < 0.3 { -1.0 } else { 1.0 }, 1e-300), -1.0, 1.0);
        assert!((root - 0.3).abs() < 1e-12, "{root}");
    }
}
