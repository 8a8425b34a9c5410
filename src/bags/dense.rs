//! Dense single-precision instance rows: a row-major `n_rows x n_cols` matrix of `f32`, owned or
//! borrowed from a caller's buffer without a copy.
//!
//! Embeddings of foundation models come as `float32`; holding them as `f64` would double the
//! memory of the largest object of a fit. The crate keeps such data in `f32` and reads it into
//! `f64` arithmetic ([`crate::kernel::Real`]): every result computed from a [`DenseF32`] equals,
//! bit for bit, the result computed from the same values stored as `f64`.
//!
//! A borrowed matrix ([`DenseF32::from_shared`]) points into memory that an *owner* keeps alive
//! (the Python binding passes the NumPy array, so a memory-mapped `.npy` file is read in place).

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use ndarray::ArrayView2;

use crate::error::{invalid_data, Result};

/// The values of a [`DenseF32`]: a vector of its own, or a caller's buffer kept alive by `owner`.
enum Storage {
    Owned(Vec<f32>),
    Shared {
        ptr: NonNull<f32>,
        len: usize,
        _owner: Arc<dyn Send + Sync>,
    },
}

// SAFETY: a `Shared` buffer is only read, and the contract of `DenseF32::from_shared` is that
// nobody writes to it while the matrix lives; `_owner` is `Send + Sync`. `Owned` is a `Vec`.
unsafe impl Send for Storage {}
// SAFETY: as for `Send`: shared access is read-only.
unsafe impl Sync for Storage {}

/// A dense row-major `n_rows x n_cols` matrix of `f32` instance values (see the module docs).
pub struct DenseF32 {
    n_rows: usize,
    n_cols: usize,
    data: Storage,
}

impl DenseF32 {
    /// A matrix that owns `data` (`n_rows * n_cols` values, row-major).
    pub fn from_vec(n_rows: usize, n_cols: usize, data: Vec<f32>) -> Result<Self> {
        if n_rows.checked_mul(n_cols) != Some(data.len()) {
            return Err(invalid_data(format!(
                "{} float32 values do not make a {n_rows} x {n_cols} matrix",
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
    pub(crate) fn from_parts(n_rows: usize, n_cols: usize, data: Vec<f32>) -> Self {
        debug_assert_eq!(data.len(), n_rows * n_cols);
        Self {
            n_rows,
            n_cols,
            data: Storage::Owned(data),
        }
    }

    /// A row-major copy of `a` (any layout).
    pub fn from_array(a: ArrayView2<'_, f32>) -> Self {
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
    /// row-major `f32` values, kept alive by `owner` (held until the matrix and its clones are
    /// dropped).
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `n_rows * n_cols` values, suitably aligned for `f32`,
    /// for as long as `owner` lives, and nothing may write to those values while any matrix built
    /// on them exists.
    pub unsafe fn from_shared(
        ptr: *const f32,
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
    pub fn as_slice(&self) -> &[f32] {
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
    pub fn row(&self, i: usize) -> &[f32] {
        &self.as_slice()[i * self.n_cols..(i + 1) * self.n_cols]
    }

    /// The matrix as an array view (standard layout).
    pub fn view(&self) -> ArrayView2<'_, f32> {
        // The shape matches the length (checked at construction); the fallback is unreachable.
        ArrayView2::from_shape((self.n_rows, self.n_cols), self.as_slice())
            .unwrap_or_else(|_| ndarray::aview2::<f32, 0>(&[]))
    }
}

impl Clone for DenseF32 {
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

impl PartialEq for DenseF32 {
    fn eq(&self, other: &Self) -> bool {
        self.n_rows == other.n_rows
            && self.n_cols == other.n_cols
            && self.as_slice() == other.as_slice()
    }
}

impl fmt::Debug for DenseF32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DenseF32")
            .field("n_rows", &self.n_rows)
            .field("n_cols", &self.n_cols)
            .field("borrowed", &self.is_borrowed())
            .finish()
    }
}

/// The fields of a [`DenseF32`] as serialised.
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
    fn owned_matrices_check_their_shape() {
        assert!(DenseF32::from_vec(2, 3, vec![0.0; 5]).is_err());
        let m = DenseF32::from_vec(2, 3, vec![1.0; 6]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!m.is_borrowed());
        let json = serde_json::to_string(&m).unwrap_or_default();
        let back: DenseF32 = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, m);
    }
}
