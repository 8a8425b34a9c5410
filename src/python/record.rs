//! The Python classes of the fit results. A record the Python class mirrors field by field is
//! declared once, in the core (`crate::record::record!`), and its class is written here by
//! passing [`fit_record!`] to the record's field-list macro; every field is converted by
//! [`ToPy`], which maps each Rust field type to one Python type. A class that is a projection
//! of its record (fields of nested records, values computed from the record) lists its fields
//! with [`fit_projection!`].

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

use crate::params::SvmRoute;
use crate::progress::StopReason;

/// A value of a Rust fit record as the field of its Python class holds it (`Py`, one type per
/// Rust type): the same value for plain data (numbers, lists of counts, strings), NumPy arrays
/// for the vectors of floats, a compiled `Model` for the model, `converged` flags for the stop
/// reasons, names for the enums.
pub(crate) trait ToPy {
    type Py;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py>;
}

/// Types that Python holds as they are.
macro_rules! as_is {
    ($($t:ty),*) => {$(
        impl ToPy for $t {
            type Py = $t;
            fn to_py(self, _py: Python<'_>) -> PyResult<$t> {
                Ok(self)
            }
        }
    )*};
}
as_is!(
    f64,
    usize,
    bool,
    String,
    Option<usize>,
    Vec<usize>,
    Vec<bool>,
    Vec<Vec<usize>>
);

impl<T> ToPy for Py<T> {
    type Py = Py<T>;
    fn to_py(self, _py: Python<'_>) -> PyResult<Py<T>> {
        Ok(self)
    }
}

impl ToPy for crate::model::Model {
    type Py = Py<super::model::PyModel>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        Py::new(py, super::model::PyModel::wrap(self)?)
    }
}

/// A nested record (the stages of a two-stage fit) as its own Python class.
impl ToPy for crate::fit::SvmFit {
    type Py = Py<super::set_kernel_svm::PySvmFit>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        Py::new(py, super::set_kernel_svm::PySvmFit::new(py, self)?)
    }
}

impl ToPy for Vec<f64> {
    type Py = Py<PyArray1<f64>>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy for ndarray::Array1<f64> {
    type Py = Py<PyArray1<f64>>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy for ndarray::Array2<f64> {
    type Py = Py<PyArray2<f64>>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        Ok(self.into_pyarray(py).unbind())
    }
}

impl ToPy for Vec<Vec<f64>> {
    type Py = Vec<Py<PyArray1<f64>>>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        self.into_iter().map(|v| v.to_py(py)).collect()
    }
}

impl ToPy for Vec<Vec<Vec<f64>>> {
    type Py = Vec<Vec<Py<PyArray1<f64>>>>;
    fn to_py(self, py: Python<'_>) -> PyResult<Self::Py> {
        self.into_iter().map(|v| v.to_py(py)).collect()
    }
}

impl ToPy for StopReason {
    type Py = bool;
    fn to_py(self, _py: Python<'_>) -> PyResult<bool> {
        Ok(self.converged())
    }
}

impl ToPy for Vec<StopReason> {
    type Py = Vec<bool>;
    fn to_py(self, _py: Python<'_>) -> PyResult<Vec<bool>> {
        Ok(self.iter().map(StopReason::converged).collect())
    }
}

impl ToPy for SvmRoute {
    type Py = String;
    fn to_py(self, _py: Python<'_>) -> PyResult<String> {
        Ok(self.as_str().to_string())
    }
}

/// Witness indices with `-1` for "none" (the bag mean), as NumPy-friendly integers.
impl ToPy for Vec<Vec<Option<usize>>> {
    type Py = Vec<Vec<i64>>;
    fn to_py(self, _py: Python<'_>) -> PyResult<Self::Py> {
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

/// The Python class `$name` (`milsvm._core.$name`, frozen, every field readable) of a core
/// record, written by the record's field-list macro:
/// `annealing_fit_fields!(fit_record! { /// doc "AnnealingFit" PyAnnealingFit })`. Each field
/// keeps its name (or the `#[py(name = "...")]` of its declaration), its doc (the attribute's
/// docstring, and the stub's: `scripts/gen_stub.py`) and its value converted by [`ToPy`];
/// `$py::new(py, record)` builds it.
macro_rules! fit_record {
    (
        $(#[$doc:meta])*
        $name:literal $py:ident
        $rec:ident {
            $( [$($fdoc:literal)*] [$(name = $alias:literal)?] $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$doc])*
        #[pyclass(name = $name, module = "milsvm._core", frozen, get_all)]
        pub(crate) struct $py {
            $(
                $(#[doc = $fdoc])*
                $(#[pyo3(name = $alias)])?
                $field: <$ty as $crate::python::record::ToPy>::Py,
            )*
        }

        impl $py {
            pub(crate) fn new(py: Python<'_>, fit: $rec) -> PyResult<Self> {
                use $crate::python::record::ToPy;
                Ok(Self {
                    $( $field: fit.$field.to_py(py)?, )*
                })
            }
        }
    };
}
pub(crate) use fit_record;

/// Declares the Python class `$name` of a projection of the Rust fit record `$rec` (the class
/// is not the record field by field): one line per field, `name: PythonSideType = expression`
/// with the record bound to `$fit` (and the GIL token to `$pyv`), the value converted by
/// [`ToPy`]; `$py::new(py, record)` builds it. The field's doc comment is the attribute's
/// docstring (and the stub's, `scripts/gen_stub.py`).
macro_rules! fit_projection {
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
                    $( $field: {
                        let value: $fty = $conv.to_py($pyv)?;
                        value
                    }, )*
                })
            }
        }
    };
}
pub(crate) use fit_projection;
