//! The Python classes of the fit results: each declared once by [`fit_record!`] (the class, its
//! read-only fields with their docs and its `new` from the Rust record), every field converted
//! from the record by [`ToPy`].

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

use crate::progress::StopReason;

/// A value of a Rust fit record as the field of its Python class holds it: the same value for
/// plain data (numbers, lists, strings), NumPy arrays for the per-instance vectors and
/// matrices, a compiled `Model` for the model, `converged` flags for the stop reasons.
pub(crate) trait ToPy<T> {
    fn to_py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> ToPy<T> for T {
    fn to_py(self, _py: Python<'_>) -> PyResult<T> {
        Ok(self)
    }
}

impl ToPy<Py<super::model::PyModel>> for crate::model::Model {
    fn to_py(self, py: Python<'_>) -> PyResult<Py<super::model::PyModel>> {
        Py::new(py, super::model::PyModel::wrap(self)?)
    }
}

impl ToPy<Py<PyArray1<f64>>> for Vec<f64> {
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyArray1<f64>>> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy<Py<PyArray1<f64>>> for ndarray::Array1<f64> {
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyArray1<f64>>> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy<Py<PyArray2<f64>>> for ndarray::Array2<f64> {
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyArray2<f64>>> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy<Vec<Py<PyArray1<f64>>>> for Vec<Vec<f64>> {
    fn to_py(self, py: Python<'_>) -> PyResult<Vec<Py<PyArray1<f64>>>> {
        self.into_iter().map(|v| v.to_py(py)).collect()
    }
}

impl ToPy<bool> for StopReason {
    fn to_py(self, _py: Python<'_>) -> PyResult<bool> {
        Ok(self.converged())
    }
}

impl ToPy<Vec<bool>> for Vec<StopReason> {
    fn to_py(self, _py: Python<'_>) -> PyResult<Vec<bool>> {
        Ok(self.iter().map(StopReason::converged).collect())
    }
}

/// Witness indices with `-1` for "none" (the bag mean), as NumPy-friendly integers.
impl ToPy<Vec<Vec<i64>>> for Vec<Vec<Option<usize>>> {
    fn to_py(self, _py: Python<'_>) -> PyResult<Vec<Vec<i64>>> {
        Ok(self
            .iter()
            .map(|w| {
                w.iter()
                    .map(|t| t.and_then(|t| i64::try_from(t).ok()).unwrap_or(-1))
                    .collect()
            })
            .collect())
    }
}

/// Declares the Python class `$name` (`milsvm._core.$name`, frozen, every field readable) of
/// the Rust fit record `$rec`: one line per field, `name: PythonSideType = expression` with the
/// record bound to `$fit` (and the GIL token to `$pyv`), the value converted by [`ToPy`];
/// `$py::new(py, record)` builds it.
/// The field's doc comment is the attribute's docstring (and the stub's, `scripts/gen_stub.py`).
macro_rules! fit_record {
    (
        $(#[$doc:meta])*
        $name:literal $py:ident($pyv:ident, $fit:ident: $rec:ty) {
            $( $(#[$fdoc:meta])* $field:ident: $fty:ty = $conv:expr ),* $(,)?
        }
    ) => {
        $(#[$doc])*
        #[pyclass(name = $name, module = "milsvm._core", frozen, get_all)]
        pub(crate) struct $py {
            $( $(#[$fdoc])* $field: $fty, )*
        }

        impl $py {
            pub(crate) fn new($pyv: Python<'_>, $fit: $rec) -> PyResult<Self> {
                use $crate::python::record::ToPy;
                Ok(Self {
                    $( $field: ToPy::<$fty>::to_py($conv, $pyv)?, )*
                })
            }
        }
    };
}
pub(crate) use fit_record;
