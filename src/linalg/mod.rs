//! Small numeric helpers every floor shares, with no dependency inside the crate: the
//! fixed-order SIMD dot products and the element type of dense rows ([`Real`], `dots.rs`), and
//! zero-copy views of `ndarray` matrices as `faer` matrices for faer's products and
//! factorisations.

mod dots;

pub(crate) use dots::Simd;
pub use dots::{all_finite, Real};

use ndarray::ArrayView2;

/// A faer view of an ndarray view (no copy; any strides).
pub(crate) fn faer_ref(a: ArrayView2<'_, f64>) -> faer::MatRef<'_, f64> {
    let (m, n) = a.dim();
    let (rs, cs) = (a.strides()[0], a.strides()[1]);
    // SAFETY: the pointer, shape and strides describe exactly the elements of `a`, which stay
    // borrowed (immutably) for the lifetime of the returned view.
    unsafe { faer::MatRef::from_raw_parts(a.as_ptr(), m, n, rs, cs) }
}

/// A mutable faer view of an ndarray view (no copy; any strides).
pub(crate) fn faer_mut(mut a: ndarray::ArrayViewMut2<'_, f64>) -> faer::MatMut<'_, f64> {
    let (m, n) = a.dim();
    let (rs, cs) = (a.strides()[0], a.strides()[1]);
    // SAFETY: as in `faer_ref`; `a` is borrowed mutably (uniquely) for the returned lifetime.
    unsafe { faer::MatMut::from_raw_parts_mut(a.as_mut_ptr(), m, n, rs, cs) }
}
