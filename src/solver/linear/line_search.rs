//! The exact line search of a Newton step ([`crate::solver::linear::drive`]): the minimiser
//! `t >= 0` of `phi(t) = J(w + t s_w, b + t s_b)`, which is piecewise quadratic, found by Newton
//! steps on `phi'(t) = ws + t ss + loss'(t)` kept inside a bracket `[lo, hi]` (bisection when a
//! step leaves it): the exact line search of LIBLINEAR's L2-loss primal solvers and Chapelle
//! (2007).
//!
//! Each trial sums `loss'(t)` and `loss''(t)` over the rows: a pass over their state in one
//! process, a round trip to every partition in a distributed fit. Where a call costs a round trip
//! ([`crate::solver::linear::RowStore::trials_per_call`] above 1), a call sums with the point the
//! search needs the points it is likely to need next, whose bits it can know before: the first ends
//! of the bracket with `t = 0` ([`first_ends`]), the next doublings while the bracket grows, and
//! with a bisection's midpoint the chain of bisections after it. Near the minimiser a Newton step
//! rounds onto the end of the bracket that the last Newton point set, and dozens of bisections
//! follow, each halving the bracket towards that end. A Newton point's successor is not known
//! before its sums, so it is summed alone. The points tried, and so the step, are those of one
//! point a call: a point summed before is read back, and the sums of one point are the same bits in
//! any call.

use crate::error::{Error, Result};

/// The doublings of the bracket summed ahead while it grows (module docs).
const DOUBLINGS_AHEAD: usize = 4;

/// The points tried and their `(phi', phi'')`, and the sums of the rows at points.
struct Trials<F> {
    terms: F,
    per_call: usize,
    ws: f64,
    ss: f64,
    tried: Vec<(f64, (f64, f64))>,
}

impl<F: FnMut(&[f64]) -> Result<Vec<(f64, f64)>>> Trials<F> {
    /// `(phi'(t), phi''(t))`; a point not tried before is summed with at most
    /// `per_call - 1` of `ahead`, the points the search may try next, that were not.
    fn at(&mut self, t: f64, ahead: impl IntoIterator<Item = f64>) -> Result<(f64, f64)> {
        if let Some(at) = self.find(t) {
            return Ok(at);
        }
        let mut ts = vec![t];
        for u in ahead {
            if ts.len() >= self.per_call {
                break;
            }
            if self.find(u).is_none() && !ts.iter().any(|v| v.to_bits() == u.to_bits()) {
                ts.push(u);
            }
        }
        let terms = (self.terms)(&ts)?;
        if terms.len() != ts.len() {
            return Err(Error::InvalidData(format!(
                "the line search asked for {} points and got the terms of {}",
                ts.len(),
                terms.len()
            )));
        }
        let at = self.tried.len(); // where t, the first point, goes
        for (&u, terms) in ts.iter().zip(terms) {
            self.record(u, terms);
        }
        Ok(self.tried[at].1)
    }

    /// Keeps `(phi'(t), phi''(t))` from the loss's terms at `t`.
    fn record(&mut self, t: f64, (l1, l2): (f64, f64)) {
        self.tried
            .push((t, (self.ws + t * self.ss + l1, self.ss + l2)));
    }

    fn find(&self, t: f64) -> Option<(f64, f64)> {
        self.tried
            .iter()
            .find(|(u, _)| u.to_bits() == t.to_bits())
            .map(|&(_, at)| at)
    }
}

/// The points summed with `t = 0`: the first two ends of the bracket, `t = 1` and `2` (a
/// relabelling's step often falls between them).
fn first_ends() -> impl Iterator<Item = f64> {
    doublings(1.0).take(2)
}

/// The bracket's ends the search tries while it grows from `hi` (`hi`, `2 hi`, ...).
fn doublings(hi: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(hi), |h| Some(h * 2.0)).take(DOUBLINGS_AHEAD)
}

/// The midpoints from `t` towards `end`, each between the last and `end`: the points the
/// search tries after `t` while every step is a bisection that moves the bracket's other end
/// (`phi'` keeps the sign it has at `t`), up to the last it would try ([`settled`]).
fn halvings(t: f64, end: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(t), move |&m| {
        let next = 0.5 * (m + end);
        (!settled(m, next, m.min(end), m.max(end))).then_some(next)
    })
    .skip(1)
}

/// The search's stopping rule: from the point `t`, the bracket then `[lo, hi]`, the next point
/// `next` is the step, not tried, when it moves less than the rounding of `t` or the bracket
/// is that narrow.
fn settled(t: f64, next: f64, lo: f64, hi: f64) -> bool {
    (next - t).abs() <= 1e-15 * t.abs().max(1.0) || hi - lo <= 1e-15 * hi
}

/// The minimiser `t >= 0` of `phi` along a step with `ws = w . s_w` and `ss = s_w . s_w`;
/// `terms(ts)` gives `(loss'(t), loss''(t))` at each point of `ts`, at most `per_call` of them a
/// call (module docs).
pub(super) fn line_search(
    terms: impl FnMut(&[f64]) -> Result<Vec<(f64, f64)>>,
    per_call: usize,
    ws: f64,
    ss: f64,
) -> Result<f64> {
    let mut trials = Trials {
        terms,
        per_call: per_call.max(1),
        ws,
        ss,
        tried: Vec::new(),
    };
    let (d0, _) = trials.at(0.0, first_ends())?;
    if d0 >= 0.0 {
        return Ok(0.0); // not a descent direction (the gradient is at rounding level)
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    let mut at_hi = trials.at(hi, doublings(hi * 2.0))?;
    let mut grow = 0;
    while at_hi.0 < 0.0 && grow < 60 {
        lo = hi;
        hi *= 2.0;
        at_hi = trials.at(hi, doublings(hi * 2.0))?;
        grow += 1;
    }
    if at_hi.0 < 0.0 {
        return Ok(hi);
    }
    // Newton from t = 1 (the full Newton step, usually exact), safeguarded by the bracket.
    let mut t = 1.0_f64.clamp(lo, hi);
    // with t a bisection's midpoint, the end of the bracket the bisections that follow are
    // likely to go towards
    let mut toward = None;
    for _ in 0..100 {
        // with a midpoint, the chain of bisections after it; with a Newton point, none (its
        // successor is as likely a Newton point as a bisection)
        let ahead = toward.map(|end| halvings(t, end)).into_iter().flatten();
        let (v, curv) = trials.at(t, ahead)?;
        if v == 0.0 {
            return Ok(t);
        }
        if v < 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let newton = if curv > 0.0 { t - v / curv } else { f64::NAN };
        let bisected = !(newton > lo && newton < hi);
        let next = if bisected { 0.5 * (lo + hi) } else { newton };
        // towards a Newton point that the steps round onto, or the end a midpoint did not move
        toward = match (bisected, toward) {
            (false, _) => None,
            (true, None) => Some(t),
            (true, Some(_)) => Some(if v < 0.0 { hi } else { lo }),
        };
        if settled(t, next, lo, hi) {
            return Ok(next);
        }
        t = next;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Rows along a line: scores `f`, step scores `z` and costs `c+`, `c-`, each a piece of
    /// the squared hinge `loss(t)` (the sums of `Part::line_nodes`, in row order).
    struct Line {
        rows: Vec<[f64; 4]>,
    }

    impl Line {
        fn random(rng: &mut impl Rng, n: usize) -> Self {
            let rows = (0..n)
                .map(|_| {
                    let f = rng.random_range(-3.0..3.0);
                    let z = if rng.random_bool(0.1) {
                        0.0
                    } else {
                        rng.random_range(-2.0..2.0)
                    };
                    let c = rng.random_range(0.0..2.0);
                    if rng.random_bool(0.5) {
                        [f, z, c, 0.0]
                    } else {
                        [f, z, 0.0, c]
                    }
                })
                .collect();
            Self { rows }
        }

        fn terms(&self, t: f64) -> (f64, f64) {
            let mut acc = (0.0, 0.0);
            for &row in &self.rows {
                super::super::add_line_terms(&mut acc, row, t);
            }
            acc
        }

        fn loss(&self, t: f64) -> f64 {
            self.rows
                .iter()
                .map(|&[f, z, cp, cn]| {
                    let fj = f + t * z;
                    cp * (1.0 - fj).max(0.0).powi(2) + cn * (1.0 + fj).max(0.0).powi(2)
                })
                .sum()
        }
    }

    /// The search with `per_call` points a call: its step, the points it was asked for (one
    /// call each, in order) and the points each call summed.
    fn search(line: &Line, per_call: usize, ws: f64, ss: f64) -> (f64, Vec<Vec<f64>>) {
        let mut calls = Vec::new();
        let t = line_search(
            |ts| {
                assert!(!ts.is_empty() && ts.len() <= per_call.max(1));
                calls.push(ts.to_vec());
                Ok(ts.iter().map(|&t| line.terms(t)).collect())
            },
            per_call,
            ws,
            ss,
        )
        .unwrap();
        (t, calls)
    }

    #[test]
    fn the_step_is_the_same_bits_for_any_points_a_call() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut needed_all, mut calls_all, mut tails) = (0, 0, 0);
        for case in 0..300 {
            let line = Line::random(&mut rng, 1 + case % 40);
            let ss = rng.random_range(1e-3..4.0);
            let ws = rng.random_range(-4.0..1.0) * ss;
            let (t1, one) = search(&line, 1, ws, ss);
            // one point a call: the points the search needs, each once
            let needed: Vec<f64> = one.iter().map(|ts| ts[0]).collect();
            let distinct: std::collections::HashSet<u64> =
                needed.iter().map(|t| t.to_bits()).collect();
            assert_eq!(distinct.len(), needed.len());
            for per_call in [2, 3, 8, 32] {
                let (t, calls) = search(&line, per_call, ws, ss);
                assert_eq!(t.to_bits(), t1.to_bits(), "case {case}, {per_call} a call");
                // every call's first point is one the search needs, in the same order
                let firsts: Vec<f64> = calls.iter().map(|ts| ts[0]).collect();
                assert!(firsts.iter().all(|f| needed.contains(f)));
                assert!(calls.len() <= needed.len());
                if per_call == 32 {
                    needed_all += needed.len();
                    calls_all += calls.len();
                    tails += usize::from(needed.len() > 10);
                }
            }
            // the step minimises phi: phi' changes sign there, or t = 0 where phi'(0) >= 0
            let phi = |t: f64| 0.5 * ss * t * t + ws * t + line.loss(t);
            if t1 > 0.0 {
                let h = 1e-7 * t1.max(1.0);
                let scale = phi(t1).abs().max(1.0);
                assert!(phi(t1) <= phi(t1 + h) + 1e-12 * scale, "case {case}");
                assert!(phi(t1) <= phi(t1 - h) + 1e-12 * scale, "case {case}");
            } else {
                let (d0, _) = line.terms(0.0);
                assert!(ws + d0 >= 0.0);
            }
        }
        // the cases with long bisection tails are there, and the points ahead spare most calls
        assert!(
            tails > 0 && 2 * calls_all < needed_all,
            "{tails}: {needed_all} in {calls_all}"
        );
    }

    #[test]
    fn terms_short_of_the_points_are_an_error() {
        let err = line_search(|_| Ok(Vec::new()), 4, -1.0, 1.0).unwrap_err();
        assert!(err.to_string().contains("asked for 3 points"), "{err}");
    }

    #[test]
    fn halvings_are_the_midpoints_the_search_takes() {
        let down: Vec<f64> = halvings(2.0, 1.0).take(3).collect();
        assert_eq!(down, [1.5, 1.25, 1.125]);
        let up: Vec<f64> = halvings(2.0, 4.0).take(3).collect();
        assert_eq!(up, [3.0, 3.5, 3.75]);
        // the chain ends with the last point the search would try
        let chain: Vec<f64> = halvings(2.0, 1.0).collect();
        let n = chain.len();
        assert!((48..=52).contains(&n), "{n}");
        let (last, before) = (chain[n - 1], chain[n - 2]);
        assert!(
            !settled(before, last, 1.0, before) && settled(last, 0.5 * (last + 1.0), 1.0, last)
        );
        let grow: Vec<f64> = doublings(2.0).take(3).collect();
        assert_eq!(grow, [2.0, 4.0, 8.0]);
    }
}
