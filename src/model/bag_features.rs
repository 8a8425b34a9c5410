//! What the kernel expansion of a model scores: every instance of a bag (then pooled), or one
//! vector of statistics per bag.
//!
//! [`BagFeatures::MinMax`] is the statistic of Gaertner, Flach, Kowalczyk & Smola's statistic
//! kernel (STK; "Multi-instance kernels", ICML 2002, section 4.2): a bag `X` of `d` features is the
//! `2d` vector `s(X) = (min_p x_p1, ..., min_p x_pd, max_p x_p1, ..., max_p x_pd)`. A CSR bag
//! counts the values it does not store as zeros. The model's basis then has `2d` columns and its
//! bag score is `f(s(X))`; the model takes `d` features.

use ndarray::Array2;

use super::BagView;
use crate::bags::Rows;
use crate::error::{Error, Result};
use crate::linalg::{all_finite, Real};
use crate::simd::compiled_forms;

crate::choice::choices! {
/// What the kernel expansion `f` of a model scores.
pub enum BagFeatures {
    /// Every instance, `f(x_p)`; the bag score pools them ([`super::Pooling`]).
    Instances = "instances",
    /// One vector per bag, the per-feature minima then maxima of its instances (`2d` values):
    /// `F(X) = f(s(X))` (Gaertner et al.'s statistic kernel). Instance scores are not defined.
    MinMax = "min_max",
}
}

impl BagFeatures {
    /// Columns of the basis for `d` input features.
    pub fn basis_width(&self, d: usize) -> usize {
        match self {
            BagFeatures::Instances => d,
            BagFeatures::MinMax => 2 * d,
        }
    }

    /// Input features for a basis of `width` columns (`None`: no whole number of them).
    pub fn input_width(&self, width: usize) -> Option<usize> {
        match self {
            BagFeatures::Instances => Some(width),
            BagFeatures::MinMax => width.is_multiple_of(2).then_some(width / 2),
        }
    }
}

/// The min/max statistics of one bag of `d` features into `out` (`2d` values: minima, then
/// maxima). A non-finite value is an error (`min` and `max` would hide a NaN).
pub fn min_max_into(bag: BagView<'_>, out: &mut [f64]) -> Result<()> {
    bag_min_max(bag, out, Check::Finite)
}

/// Whether [`bag_min_max`] checks the values finite, or knows them to be (the values of a
/// validated [`crate::bags::Bags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Finite,
    Known,
}

/// [`min_max_into`], with the finiteness check made or skipped as `check` says.
fn bag_min_max(bag: BagView<'_>, out: &mut [f64], check: Check) -> Result<()> {
    let d = bag.n_features();
    debug_assert_eq!(out.len(), 2 * d);
    let (lo, hi) = out.split_at_mut(d);
    let n = bag.n_instances();
    match bag {
        BagView::Dense { data, .. } => dense_min_max(data, d, lo, hi, check)?,
        BagView::Dense32 { data, .. } => dense_min_max(data, d, lo, hi, check)?,
        BagView::Csr {
            indptr,
            indices,
            data,
            ..
        } => {
            if check == Check::Finite && !all_finite(data) {
                return Err(non_finite());
            }
            // each instance densified (duplicate entries add up, as everywhere in the crate)
            let mut row = vec![0.0; d];
            let base = indptr[0];
            for p in 0..n {
                let r = indptr[p] - base..indptr[p + 1] - base;
                row.fill(0.0);
                for (&j, &v) in indices[r.clone()].iter().zip(&data[r]) {
                    row[j] += v;
                }
                // always: duplicate entries of finite values can add up to an infinity
                if !all_finite(&row) {
                    return Err(non_finite());
                }
                if p == 0 {
                    lo.copy_from_slice(&row);
                    hi.copy_from_slice(&row);
                } else {
                    for ((a, b), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(&row) {
                        *a = a.min(v);
                        *b = b.max(v);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The min/max statistics of every bag of `rows` (`n_bags x 2d`); a non-finite value is an
/// error naming its bag. `bag_ptr` must be valid for `rows`.
pub fn min_max_rows(rows: Rows<'_>, bag_ptr: &[usize]) -> Result<Array2<f64>> {
    rows_min_max(rows, bag_ptr, Check::Finite)
}

/// The min/max statistics of every bag of validated bags (`n_bags x 2d`), whose values
/// [`Bags::new`](crate::bags::Bags::new) has checked finite: one pass over the values, where
/// [`min_max_rows`] makes two.
pub(crate) fn bags_min_max(bags: &crate::bags::Bags) -> Result<Array2<f64>> {
    rows_min_max(Rows::from(bags.instances()), bags.bag_ptr(), Check::Known)
}

/// [`min_max_rows`], with the finiteness check made or skipped as `check` says.
fn rows_min_max(rows: Rows<'_>, bag_ptr: &[usize], check: Check) -> Result<Array2<f64>> {
    with_rows_in_order(rows, |rows| rows_in_order_min_max(rows, bag_ptr, check))
}

/// `f` of `rows` with dense rows in row-major order: `rows` itself, or a row-major copy of
/// dense rows with other strides (the statistics read each bag as one slice).
fn with_rows_in_order<T>(rows: Rows<'_>, f: impl FnOnce(Rows<'_>) -> T) -> T {
    match rows {
        Rows::Dense(x) if !x.is_standard_layout() => {
            f(Rows::Dense(x.as_standard_layout().into_owned().view()))
        }
        Rows::Dense32(x) if !x.is_standard_layout() => {
            f(Rows::Dense32(x.as_standard_layout().into_owned().view()))
        }
        _ => f(rows),
    }
}

/// [`rows_min_max`] of rows in row-major order ([`with_rows_in_order`]).
fn rows_in_order_min_max(rows: Rows<'_>, bag_ptr: &[usize], check: Check) -> Result<Array2<f64>> {
    let d = rows.n_cols();
    let m = bag_ptr.len().saturating_sub(1);
    let mut out = Array2::zeros((m, 2 * d));
    for (i, mut o) in out.rows_mut().into_iter().enumerate() {
        let (lo, hi) = (bag_ptr[i], bag_ptr[i + 1]);
        if lo == hi {
            return Err(Error::InvalidData(format!("bag {i} is empty")));
        }
        let o = o
            .as_slice_mut()
            .ok_or_else(|| Error::Mismatch("statistics buffer not contiguous".into()))?;
        bag_min_max(BagView::of(rows, lo, hi), o, check).map_err(|e| match e {
            Error::InvalidData(_) => Error::InvalidData(format!("bag {i} has a non-finite value")),
            e => e,
        })?;
    }
    Ok(out)
}

/// The min/max statistics of bags given one by one, `bags[i]` the instances of bag `i`
/// (`n_bags x 2d`): [`min_max_rows`] of the same bags stacked, bit for bit, without stacking
/// them (each bag is read once, where it lies). Every bag needs at least one instance and the
/// `d` features of bag 0; a non-finite value is an error naming its bag and instance.
pub fn min_max_bags(bags: &[Rows<'_>]) -> Result<Array2<f64>> {
    let Some(first) = bags.first() else {
        return Err(Error::InvalidData("no bags were given".into()));
    };
    let d = first.n_cols();
    let mut out = Array2::zeros((bags.len(), 2 * d));
    for (i, (&rows, mut o)) in bags.iter().zip(out.rows_mut()).enumerate() {
        let n = rows.n_rows();
        if n == 0 {
            return Err(Error::InvalidData(format!(
                "bag {i} is empty: every bag needs at least one instance"
            )));
        }
        if rows.n_cols() != d {
            return Err(Error::InvalidData(format!(
                "bag {i} has {} features, bag 0 has {d}",
                rows.n_cols()
            )));
        }
        let o = o
            .as_slice_mut()
            .ok_or_else(|| Error::Mismatch("statistics buffer not contiguous".into()))?;
        let read = with_rows_in_order(rows, |rows| {
            bag_min_max(BagView::of(rows, 0, n), o, Check::Finite)
        });
        read.map_err(|e| match e {
            Error::InvalidData(_) => Error::InvalidData(format!(
                "bag {i} has a non-finite value (NaN or infinity) in instance {}",
                rows.first_non_finite_row().unwrap_or(0)
            )),
            e => e,
        })?;
    }
    Ok(out)
}

compiled_forms! {
    /// The per-feature minima and maxima of dense rows (`d` values each) into `lo` and `hi`.
    ///
    /// The values are finite (checked first unless `check` says they are known to be), so plain
    /// comparisons give the same minima as `f64::min` (which must also handle NaN) and compile to
    /// one instruction. Rows go four at a time: `lo` and `hi` are read and written once per four
    /// rows instead of once per row.
    ///
    /// With AVX-512 or AVX2 code where the CPU has it (minima, maxima and the finiteness check are
    /// exact: the same results as the portable loop). The finiteness check, one chain of adds
    /// per eight values, then bounds the time; STK's fits in `benches/bench_peers.py` measure
    /// it.
    fn dense_min_max<T: Real>(
        data: &[T], d: usize, lo: &mut [f64], hi: &mut [f64], check: Check
    ) -> Result<()>
        = dense_min_max_lanes, avx512: dense_min_max_avx512, avx2: dense_min_max_avx2;
}

/// The loop of [`dense_min_max`], inlined into each of its compiled forms.
#[inline(always)]
fn dense_min_max_lanes<T: Real>(
    data: &[T],
    d: usize,
    lo: &mut [f64],
    hi: &mut [f64],
    check: Check,
) -> Result<()> {
    if check == Check::Finite && !all_finite(data) {
        return Err(non_finite());
    }
    let (first, rest) = data.split_at(d.min(data.len()));
    for ((a, b), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(first) {
        (*a, *b) = (v.to_f64(), v.to_f64());
    }
    let lesser = |a: f64, b: f64| if b < a { b } else { a };
    let greater = |a: f64, b: f64| if b > a { b } else { a };
    let mut groups = rest.chunks_exact(4 * d.max(1));
    for g in &mut groups {
        let (r0, g) = g.split_at(d);
        let (r1, g) = g.split_at(d);
        let (r2, r3) = g.split_at(d);
        let rows = r0.iter().zip(r1).zip(r2).zip(r3);
        for ((a, b), (((&v0, &v1), &v2), &v3)) in lo.iter_mut().zip(hi.iter_mut()).zip(rows) {
            let (v0, v1, v2, v3) = (v0.to_f64(), v1.to_f64(), v2.to_f64(), v3.to_f64());
            *a = lesser(*a, lesser(lesser(v0, v1), lesser(v2, v3)));
            *b = greater(*b, greater(greater(v0, v1), greater(v2, v3)));
        }
    }
    for x in groups.remainder().chunks_exact(d.max(1)) {
        for ((a, b), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(x) {
            *a = lesser(*a, v.to_f64());
            *b = greater(*b, v.to_f64());
        }
    }
    Ok(())
}

fn non_finite() -> Error {
    Error::InvalidData("the bag has a non-finite value".into())
}

/// The error of instance scores asked of a model that scores bags by their statistics.
pub(super) fn no_instance_scores() -> Error {
    Error::InvalidParameter(
        "instance scores are not defined for a model that scores a bag by the min/max statistics \
         of its instances (bag_features = \"min_max\", STK): the score of a bag is not a pooling \
         of per-instance scores"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2};

    /// A min/max loop: [`dense_min_max`] or one of its forms.
    type MinMaxLoop = fn(&[f64], usize, &mut [f64], &mut [f64], Check) -> Result<()>;

    /// The compiled forms of the min/max loop give the portable loop's values, bit for bit,
    /// signed zeros included, and find the same non-finite values.
    #[test]
    fn compiled_forms_equal_the_portable_loop() {
        for (n, d) in [(1usize, 1usize), (3, 5), (9, 17), (13, 166)] {
            let data: Vec<f64> = (0..n * d)
                .map(|k| match k % 7 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => ((k * 37) % 23) as f64 - 11.5,
                })
                .collect();
            let run = |f: MinMaxLoop, data: &[f64]| {
                let (mut lo, mut hi) = (vec![0.0; d], vec![0.0; d]);
                let ok = f(data, d, &mut lo, &mut hi, Check::Finite).is_ok();
                (
                    ok,
                    lo.iter()
                        .chain(&hi)
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>(),
                )
            };
            assert_eq!(run(dense_min_max, &data), run(dense_min_max_lanes, &data));
            let mut bad = data.clone();
            bad[n * d - 1] = f64::INFINITY;
            assert!(!run(dense_min_max, &bad).0 && !run(dense_min_max_lanes, &bad).0);
        }
    }

    /// Bags given one by one give the statistics of the same bags stacked, bit for bit, for
    /// float64 and float32 values and any strides; an empty bag, a bag of another width and a
    /// non-finite value are errors naming the bag (and the instance).
    #[test]
    fn bags_one_by_one_equal_the_stacked_bags() {
        let sizes = [1usize, 6, 3, 9, 2];
        let n: usize = sizes.iter().sum();
        let x = Array2::from_shape_fn((n, 5), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 4.5);
        let mut ptr = vec![0];
        for k in sizes {
            ptr.push(ptr.last().copied().unwrap_or(0) + k);
        }
        let want = min_max_rows(Rows::Dense(x.view()), &ptr).expect("finite bags");
        let parts: Vec<Array2<f64>> = ptr
            .windows(2)
            .map(|w| x.slice(s![w[0]..w[1], ..]).to_owned())
            .collect();
        let rows: Vec<Rows<'_>> = parts.iter().map(|b| Rows::Dense(b.view())).collect();
        assert_eq!(min_max_bags(&rows).expect("finite bags"), want);
        let transposed: Vec<Array2<f64>> = parts
            .iter()
            .map(|b| b.t().as_standard_layout().into_owned())
            .collect();
        let rows: Vec<Rows<'_>> = transposed.iter().map(|b| Rows::Dense(b.t())).collect();
        assert_eq!(min_max_bags(&rows).expect("finite bags"), want);
        let singles: Vec<Array2<f32>> = parts.iter().map(|b| b.mapv(|v| v as f32)).collect();
        let rows: Vec<Rows<'_>> = singles.iter().map(|b| Rows::Dense32(b.view())).collect();
        assert_eq!(min_max_bags(&rows).expect("finite bags"), want);

        let mut broken = parts.clone();
        broken[3][[4, 2]] = f64::NAN;
        let rows: Vec<Rows<'_>> = broken.iter().map(|b| Rows::Dense(b.view())).collect();
        let err = min_max_bags(&rows).expect_err("a NaN").to_string();
        assert!(
            err.contains("bag 3 has a non-finite value (NaN or infinity) in instance 4"),
            "{err}"
        );
        let empty = Array2::<f64>::zeros((0, 5));
        let narrow = Array2::<f64>::zeros((2, 4));
        for (bad, what) in [
            (&empty, "bag 1 is empty"),
            (&narrow, "bag 1 has 4 features, bag 0 has 5"),
        ] {
            let rows = [Rows::Dense(parts[0].view()), Rows::Dense(bad.view())];
            let err = min_max_bags(&rows).expect_err("a bad bag").to_string();
            assert!(err.contains(what), "{err}");
        }
        assert!(min_max_bags(&[]).is_err());
    }
}
