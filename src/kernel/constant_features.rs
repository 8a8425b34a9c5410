//! Features that keep one value over a set of instance rows.
//!
//! The Gaussian kernel `exp(-gamma ||x - z||^2)` depends on `x - z` only, and a feature with
//! the same value in two rows adds nothing to their distance. The kernel matrix of a set of
//! rows can therefore be formed on the features that vary over them ([`varying_part`]): the
//! same values as with every feature, up to rounding, and the bits of
//! the same data without those features. Data sets hold such features: the Elephant set has
//! 120 constant ones of 230, 87 of them zero (they stay constant after standardisation), so its
//! products cost half as much without them.
//!
//! The reduction holds between the rows themselves only: another row (a test instance) may
//! differ in those features, so kernel values against other rows use every feature.

use ndarray::ArrayView2;

use crate::bags::{Dense, Instances, Rows};
use crate::kernel::Kernel;
use crate::linalg::Real;
use crate::simd::compiled_forms;

/// The rows of `x` without the features that are constant over them, when the kernel matrix
/// of `x` with itself is the same without them ([`Kernel::Rbf`]) and there is one to drop; a
/// new row-major matrix of `x`'s type. `None`: use `x` as it is (the linear kernel, CSR rows,
/// or every feature varies). Kernel values between these rows must then be formed with the
/// squared norms of the returned rows.
pub(crate) fn without_constant_features(kernel: Kernel, x: Rows<'_>) -> Option<Instances> {
    match (kernel, x) {
        (Kernel::Linear, _) | (_, Rows::Sparse(_)) => None,
        (Kernel::Rbf { .. }, Rows::Dense(x)) => varying_part(x).map(Instances::Dense),
        (Kernel::Rbf { .. }, Rows::Dense32(x)) => varying_part(x).map(Instances::Dense32),
    }
}

/// The columns of `x` whose value differs between two of its rows, in order, as a new
/// row-major matrix of `x`'s type; `None` where there is nothing to drop: every column varies,
/// or none does (a single distinct row, whose kernel matrix is all ones either way). `0.0` and
/// `-0.0` count as one value: a feature of zeros of either sign adds zero to every distance.
fn varying_part<T: Real>(x: ArrayView2<'_, T>) -> Option<Dense<T>> {
    let varies = varying_mask(x);
    let kept: Vec<usize> = (0..varies.len()).filter(|&j| varies[j]).collect();
    (!kept.is_empty() && kept.len() < varies.len()).then(|| gather(x, &kept))
}

compiled_forms! {
    /// Whether each column of `x` holds a value other than its first row's (all `false` for
    /// fewer than two rows). The scan stops at the first row after which every column varies,
    /// so data without constant features costs a row or two. Compiled for AVX-512 and AVX2
    /// (exact comparisons). Scanning Elephant's 1,264 x 230 values whole costs about 1 % of
    /// NSK's core fit (perf).
    fn varying_mask<T: Real>(x: ArrayView2<'_, T>) -> Vec<bool>
        = varying_mask_lanes, avx512: varying_mask_avx512, avx2: varying_mask_avx2;
}

/// The loop of [`varying_mask`], inlined into each compiled form.
#[inline(always)]
fn varying_mask_lanes<T: Real>(x: ArrayView2<'_, T>) -> Vec<bool> {
    let mut varies = vec![false; x.ncols()];
    let Some(first) = x.rows().into_iter().next() else {
        return varies;
    };
    let first: Vec<T> = first.to_vec();
    // a strided row is copied here first, so that the comparisons run on a slice
    let mut copy = Vec::new();
    for row in x.rows().into_iter().skip(1) {
        let row = match row.as_slice() {
            Some(row) => row,
            None => {
                copy.clear();
                copy.extend(row.iter().copied());
                &copy
            }
        };
        mark_differences(&mut varies, &first, row);
        if varies.iter().all(|&v| v) {
            break;
        }
    }
    varies
}

/// `varies[j] |= first[j] != row[j]` for every `j` (a loop the compiler vectorises).
#[inline(always)]
fn mark_differences<T: Real>(varies: &mut [bool], first: &[T], row: &[T]) {
    for ((v, &a), &b) in varies.iter_mut().zip(first).zip(row) {
        *v |= a != b;
    }
}

/// The columns `features` of every row of `x`, row-major.
fn gather<T: Copy>(x: ArrayView2<'_, T>, features: &[usize]) -> Dense<T> {
    let mut data = Vec::with_capacity(x.nrows() * features.len());
    for row in x.rows() {
        data.extend(features.iter().map(|&j| row[j]));
    }
    Dense::from_parts(x.nrows(), features.len(), data)
}

#[cfg(test)]
mod tests {
    use ndarray::{array, Array2};

    use super::*;

    /// Constant columns, a column of zeros of both signs among them, are dropped; the kept
    /// columns are copied in order and in the rows' own type; the linear kernel keeps them all.
    #[test]
    fn varying_features_skip_constant_and_signed_zero_columns() {
        let x = array![
            [1.0, 0.0, 2.0, 5.0, -0.0],
            [1.0, 3.0, 2.0, 5.0, 0.0],
            [1.0, 3.0, 2.5, 5.0, 0.0],
        ];
        let gaussian = Kernel::Rbf { gamma: 1.0 };
        let kept = without_constant_features(gaussian, Rows::Dense(x.view()))
            .expect("two of five columns vary");
        let Rows::Dense(k) = kept.rows() else {
            panic!("dense rows stay dense")
        };
        assert_eq!(k, array![[0.0, 2.0], [3.0, 2.0], [3.0, 2.5]]);
        let x32 = x.mapv(|v| v as f32);
        let kept32 = without_constant_features(gaussian, Rows::Dense32(x32.view()))
            .expect("two of five columns vary");
        assert_eq!(kept32.dtype(), "float32");
        let Rows::Dense32(k32) = kept32.rows() else {
            panic!("f32 rows stay f32")
        };
        assert_eq!(k32, array![[0.0f32, 2.0], [3.0, 2.0], [3.0, 2.5]]);
        assert!(without_constant_features(Kernel::Linear, Rows::Dense(x.view())).is_none());
    }

    /// The compiled forms of the scan find the portable loop's columns, in `f64` and `f32`,
    /// for widths that leave every remainder of the vector width, with constant columns among
    /// varying ones and the difference in the last row only; strided rows too.
    #[test]
    fn compiled_scans_give_the_portable_mask() {
        for d in [1, 5, 8, 17, 33] {
            let mut x = Array2::from_shape_fn((40, d), |(i, j)| match j % 3 {
                0 => 1.5,
                1 => ((i * 7 + j) % 5) as f64,
                _ => -0.0,
            });
            x[[39, d - 1]] += 1.0;
            let want = varying_mask_lanes(x.view());
            assert!(want[d - 1] && (d < 2 || (want[1] && !want[0])));
            let x32 = x.mapv(|v| v as f32);
            assert_eq!(varying_mask_lanes(x32.view()), want);
            // column-major rows: each row copied before it is compared
            let columns = x.t().as_standard_layout().into_owned();
            assert_eq!(varying_mask(columns.t()), want);
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    assert_eq!(unsafe { varying_mask_avx2(x.view()) }, want);
                    assert_eq!(unsafe { varying_mask_avx2(x32.view()) }, want);
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    assert_eq!(unsafe { varying_mask_avx512(x.view()) }, want);
                    assert_eq!(unsafe { varying_mask_avx512(x32.view()) }, want);
                }
            }
        }
    }

    /// Nothing is dropped when every column varies, when none does, and for one row or none.
    #[test]
    fn nothing_to_drop_gives_none() {
        // every feature varies; no feature does; one row; no rows
        let varied = array![[1.0, 2.0], [2.0, 1.0]];
        let same = array![[1.0, 2.0], [1.0, 2.0]];
        for x in [
            varied,
            same,
            array![[1.0, 2.0]],
            Array2::<f64>::zeros((0, 2)),
        ] {
            assert!(varying_part(x.view()).is_none(), "{x}");
        }
    }
}
