//! Dense instance rows: a row-major `n_rows x n_cols` matrix of `f64` or `f32` ([`Dense`]),
//! owned or borrowed from a caller's buffer without a copy.
//!
//! Embeddings of foundation models come as `float32`; holding them as `f64` would double the
//! memory of the largest object of a fit. The crate keeps such data in `f32` and reads it into
//! `f64` arithmetic ([`crate::linalg::Real`]): every result computed from a [`DenseF32`] equals,
//! bit for bit, the result computed from the same values stored as `f64`.
//!
//! A borrowed matrix ([`Dense::from_shared`]) points into memory that an *owner* keeps alive
//! (the Python binding passes the NumPy array, so a memory-mapped `.npy` file is read in place,
//! and a fit on `float64` bags holds no second copy of them).

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use ndarray::{Array2, ArrayView2};

use crate::error::{invalid_data, Result};

/// The values of a [`Dense`]: a vector of its own, or a caller's buffer kept alive by `owner`.
enum Storage<T> {
    Owned(Vec<T>),
    Shared {
        ptr: NonNull<T>,
        len: usize,
        _owner: Arc<dyn Send + Sync>,
    },
}

// SAFETY: a `Shared` buffer is only read, and the contract of `Dense::from_shared` is that
// nobody writes to it while the matrix lives; `_owner` is `Send + Sync`. `Owned` is a `Vec` of
// plain numbers (`T: Send + Sync`).
unsafe impl<T: Send + Sync> Send for Storage<T> {}
// SAFETY: as for `Send`: shared access is read-only.
unsafe impl<T: Send + Sync> Sync for Storage<T> {}

/// A dense row-major `n_rows x n_cols` matrix of instance values (see the module docs).
pub struct Dense<T> {
    n_rows: usize,
    n_cols: usize,
    data: Storage<T>,
}

/// Dense rows of `f32` (read into `f64` arithmetic).
pub type DenseF32 = Dense<f32>;
/// Dense rows of `f64`.
pub type DenseF64 = Dense<f64>;

impl<T: Copy> Dense<T> {
    /// A matrix that owns `data` (`n_rows * n_cols` values, row-major).
    pub fn from_vec(n_rows: usize, n_cols: usize, data: Vec<T>) -> Result<Self> {
        if n_rows.checked_mul(n_cols) != Some(data.len()) {
            return Err(invalid_data(format!(
                "{} values do not make a {n_rows} x {n_cols} matrix",
                data.len()
            )));
        }
        Ok(Self {
            n_rows,
            n_cols,
            data: Storage::Owned(data),
        })
    }

    /// A matrix from values whose length the caller has made `n_rows * n_cols`.
    pub(crate) fn from_parts(n_rows: usize, n_cols: usize, data: Vec<T>) -> Self {
        debug_assert_eq!(data.len(), n_rows * n_cols);
        Self {
            n_rows,
            n_cols,
            data: Storage::Owned(data),
        }
    }

    /// A row-major copy of `a` (any layout).
    pub fn from_array(a: ArrayView2<'_, T>) -> Self {
        let (n_rows, n_cols) = a.dim();
        let data = match a.as_slice() {
            Some(s) => s.to_vec(),
            None => a.iter().copied().collect(),
        };
        Self {
            n_rows,
            n_cols,
            data: Storage::Owned(data),
        }
    }

    /// A matrix over a caller's buffer, without a copy: `ptr` points to `n_rows * n_cols`
    /// row-major values, kept alive by `owner` (held until the matrix and its clones are
    /// dropped).
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `n_rows * n_cols` values, suitably aligned for `T`,
    /// for as long as `owner` lives, and nothing may write to those values while any matrix built
    /// on them exists.
    pub unsafe fn from_shared(
        ptr: *const T,
        n_rows: usize,
        n_cols: usize,
        owner: Arc<dyn Send + Sync>,
    ) -> Result<Self> {
        let len = n_rows
            .checked_mul(n_cols)
            .ok_or_else(|| invalid_data(format!("a {n_rows} x {n_cols} matrix is too large")))?;
        let data = match NonNull::new(ptr.cast_mut()) {
            Some(ptr) if len > 0 => Storage::Shared {
                ptr,
                len,
                _owner: owner,
            },
            _ => Storage::Owned(Vec::new()),
        };
        Ok(Self {
            n_rows,
            n_cols,
            data,
        })
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Whether the values are a caller's buffer (not copied).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.data, Storage::Shared { .. })
    }

    /// All values, row-major.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.data {
            Storage::Owned(v) => v,
            // SAFETY: `from_shared`'s contract: `len` readable values while `_owner` lives, which
            // is at least as long as `self`.
            Storage::Shared { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[T] {
        &self.as_slice()[i * self.n_cols..(i + 1) * self.n_cols]
    }

    /// The rows given, in order, as a new owned matrix (one slice copy per row).
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        let mut data = Vec::with_capacity(rows.len() * self.n_cols);
        for &r in rows {
            data.extend_from_slice(self.row(r));
        }
        Self::from_parts(rows.len(), self.n_cols, data)
    }

    /// The matrix as an array view (standard layout).
    pub fn view(&self) -> ArrayView2<'_, T> {
        // The shape matches the length (checked at construction); the fallback is unreachable.
        ArrayView2::from_shape((self.n_rows, self.n_cols), self.as_slice())
            .unwrap_or_else(|_| ndarray::aview2::<T, 0>(&[]))
    }
}

impl<T: Copy> From<Array2<T>> for Dense<T> {
    /// Takes the array's values without a copy when they are in row-major order.
    fn from(a: Array2<T>) -> Self {
        let (n_rows, n_cols) = a.dim();
        if !a.is_standard_layout() {
            return Self::from_array(a.view());
        }
        let (mut data, offset) = a.into_raw_vec_and_offset();
        let start = offset.unwrap_or(0);
        if start != 0 || data.len() != n_rows * n_cols {
            data = data[start..start + n_rows * n_cols].to_vec();
        }
        Self::from_parts(n_rows, n_cols, data)
    }
}

impl<T: Copy> Clone for Dense<T> {
    /// An owned matrix copies its values; a borrowed one shares the caller's buffer.
    fn clone(&self) -> Self {
        let data = match &self.data {
            Storage::Owned(v) => Storage::Owned(v.clone()),
            Storage::Shared { ptr, len, _owner } => Storage::Shared {
                ptr: *ptr,
                len: *len,
                _owner: Arc::clone(_owner),
            },
        };
        Self {
            n_rows: self.n_rows,
            n_cols: self.n_cols,
            data,
        }
    }
}

impl<T: Copy + PartialEq> PartialEq for Dense<T> {
    fn eq(&self, other: &Self) -> bool {
        self.n_rows == other.n_rows
            && self.n_cols == other.n_cols
            && self.as_slice() == other.as_slice()
    }
}

impl<T: Copy> fmt::Debug for Dense<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dense")
            .field("n_rows", &self.n_rows)
            .field("n_cols", &self.n_cols)
            .field("borrowed", &self.is_borrowed())
            .finish()
    }
}

/// The fields of a [`DenseF32`] as serialised (a [`DenseF64`] is serialised as an `ndarray`
/// matrix, as it was when it was one).
#[derive(serde::Serialize, serde::Deserialize)]
struct Parts {
    n_rows: usize,
    n_cols: usize,
    data: Vec<f32>,
}

impl serde::Serialize for DenseF32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Parts {
            n_rows: self.n_rows,
            n_cols: self.n_cols,
            data: self.as_slice().to_vec(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for DenseF32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let p = Parts::deserialize(d)?;
        DenseF32::from_vec(p.n_rows, p.n_cols, p.data).map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for DenseF64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.view().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for DenseF64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(Array2::<f64>::deserialize(d)?.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_buffers_are_read_in_place_and_kept_alive() {
        let owner: Arc<Vec<f32>> = Arc::new((0..12).map(|v| v as f32).collect());
        let ptr = owner.as_ptr();
        // SAFETY: `owner` holds 12 values and is never written.
        let m = unsafe { DenseF32::from_shared(ptr, 3, 4, owner.clone()) }.unwrap_or_else(|e| {
            panic!("{e}");
        });
        assert!(m.is_borrowed());
        assert_eq!(m.as_slice().as_ptr(), ptr);
        assert_eq!(m.row(2), &[8.0, 9.0, 10.0, 11.0]);
        let c = m.clone();
        drop(m);
        drop(owner);
        assert_eq!(c.row(1), &[4.0, 5.0, 6.0, 7.0]);
        assert_eq!(c.view()[[2, 3]], 11.0);
    }

    #[test]
    fn arrays_are_taken_without_a_copy_and_serialised_as_arrays() {
        let a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64);
        let ptr = a.as_ptr();
        let m = DenseF64::from(a.clone());
        assert!(!m.is_borrowed());
        assert_eq!(m.view(), a.view());
        let moved = DenseF64::from(a.clone());
        assert_eq!(moved.row(2), &[8.0, 9.0, 10.0, 11.0]);
        let own = a;
        assert_eq!(DenseF64::from(own).as_slice().as_ptr(), ptr);
        // a transposed (column-major) array and a sliced one are copied in row order
        let t = Array2::from_shape_fn((4, 3), |(i, j)| (j * 4 + i) as f64).reversed_axes();
        assert_eq!(DenseF64::from(t.clone()).view(), t.view());
        let mut s = Array2::from_shape_fn((5, 4), |(i, j)| (i * 4 + j) as f64);
        s.slice_axis_inplace(ndarray::Axis(0), ndarray::Slice::from(2..4));
        assert_eq!(DenseF64::from(s.clone()).view(), s.view());
        // the serialised form is the array's, so that files written before read the same
        let json = serde_json::to_string(&m).unwrap_or_default();
        assert_eq!(json, serde_json::to_string(&m.view()).unwrap_or_default());
        let back: DenseF64 = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, m);
    }

    #[test]
    fn owned_matrices_check_their_shape() {
        assert!(DenseF32::from_vec(2, 3, vec![0.0; 5]).is_err());
        let m = DenseF32::from_vec(2, 3, vec![1.0; 6]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!m.is_borrowed());
        let json = serde_json::to_string(&m).unwrap_or_default();
        let back: DenseF32 = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, m);
    }
}
