//! The one conversion module of the bindings: Python values into the core's types and core
//! errors into Python exceptions.
//!
//! * Hyperparameters: any Python value becomes a [`Value`] ([`value_of`]) and a dict of them
//!   fills a builder by name ([`params_from`]), so that every type the core declares (kernel
//!   width rules, enums, class weights, arrays) is parsed once, by the core, for every
//!   estimator.
//! * Data: stacked instances (a 2-D float64 array or a CSR tuple) with bag offsets.
//! * Errors: [`Error::ParameterType`] is `TypeError`, [`Error::Cancelled`] is
//!   `KeyboardInterrupt`, every other [`Error`] is `ValueError`.

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};

use std::sync::Arc;

use crate::bags::{Bags, Csr, Dense, Instances};
use crate::error::Error;
use crate::params::{Hyperparams, Value};

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::ParameterType(msg) => PyTypeError::new_err(msg),
            Error::Cancelled => PyKeyboardInterrupt::new_err("the fit was cancelled"),
            e => PyValueError::new_err(e.to_string()),
        }
    }
}

/// Non-negative integers from Python (`what` names them in the error).
pub(crate) fn to_usize(v: &[i64], what: &str) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| PyValueError::new_err(format!("{what} holds a negative value ({x})")))
        })
        .collect()
}

/// A CSR tuple `(data, indices, indptr, n_cols)` as [`Csr`].
fn csr_of(t: &Bound<'_, PyTuple>) -> PyResult<Csr> {
    let (data, indices, indptr, n_cols): (
        PyReadonlyArray1<f64>,
        PyReadonlyArray1<i64>,
        PyReadonlyArray1<i64>,
        usize,
    ) = t.extract()?;
    let indptr = to_usize(indptr.as_slice()?, "indptr")?;
    let n_rows = indptr.len().saturating_sub(1);
    Ok(Csr::new(
        n_rows,
        n_cols,
        indptr,
        to_usize(indices.as_slice()?, "indices")?,
        data.as_slice()?.to_vec(),
    )?)
}

/// Instances from a dense 2-D float64 or float32 array or a CSR tuple `(data, indices, indptr,
/// n_cols)`. A dense array is read in place when it is C-contiguous and aligned (kept alive by a
/// reference held as long as the instances, so that a memory-mapped `.npy` file is never
/// copied), else copied once into a row-major matrix of its type; a model never keeps such a
/// borrow ([`crate::Model::new`] copies it). Python code must not write to the array while the
/// core uses it (the fit releases the GIL).
pub(crate) fn instances(obj: &Bound<'_, PyAny>) -> PyResult<Instances> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(Instances::Sparse(csr_of(t)?));
    }
    if let Ok(x) = obj.extract::<PyReadonlyArray2<f32>>() {
        return Ok(Instances::Dense32(dense(obj, &x)?));
    }
    let x: PyReadonlyArray2<f64> = obj.extract()?;
    Ok(Instances::Dense(dense(obj, &x)?))
}

/// A float32 or float64 array as a [`Dense`] matrix: borrowed when C-contiguous and aligned,
/// else copied.
fn dense<T: numpy::Element + Copy + Send + Sync>(
    obj: &Bound<'_, PyAny>,
    x: &PyReadonlyArray2<'_, T>,
) -> PyResult<Dense<T>> {
    let view = x.as_array();
    let (n, d) = view.dim();
    // `as_slice` also accepts a Fortran-ordered array: only a C-contiguous one is row-major.
    if let Some(all) = x.as_slice().ok().filter(|_| x.is_c_contiguous()) {
        let ptr = all.as_ptr();
        if ptr.align_offset(std::mem::align_of::<T>()) == 0 {
            let owner: Arc<dyn Send + Sync> = Arc::new(obj.clone().unbind());
            // SAFETY: `ptr` points to the `n * d` row-major values of the array `obj` (a
            // C-contiguous, aligned slice), which `owner` keeps alive; the binding's contract
            // (above) is that nothing writes to it meanwhile.
            return Ok(unsafe { Dense::from_shared(ptr, n, d, owner) }?);
        }
    }
    Ok(Dense::from_array(view))
}

/// Bags from stacked instances (see [`instances`]) and bag offsets.
pub(crate) fn bags(obj: &Bound<'_, PyAny>, bag_ptr: PyReadonlyArray1<i64>) -> PyResult<Bags> {
    Ok(Bags::new(
        instances(obj)?,
        to_usize(bag_ptr.as_slice()?, "bag_ptr")?,
    )?)
}

/// Whether `obj` is a NumPy array.
fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<numpy::PyUntypedArray>()
}

/// A Python value as a [`Value`]: `None`, bools (Python or NumPy), strings, integers (anything
/// with `__index__`), 2-D arrays (as float64 matrices), CSR tuples, lists or 1-D arrays of
/// numbers, real numbers (anything with `__float__`); anything else is [`Value::Other`] naming
/// its type, which the core refuses with a `TypeError`.
pub(crate) fn value_of(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::None);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    // `to_cow`, not `to_string`: Display on a Python object runs `PyObject_Str`, which handles
    // a pending Ctrl-C and then swallows its `KeyboardInterrupt` (pyo3 writes it as
    // unraisable), so that the fit would run on uninterrupted.
    let type_name = obj.get_type().name()?.to_cow()?.into_owned();
    if type_name == "bool_" || type_name == "bool" {
        return Ok(Value::Bool(obj.is_truthy()?));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_cow()?.into_owned()));
    }
    if is_ndarray(obj) {
        let a = obj.cast::<numpy::PyUntypedArray>()?;
        return Ok(match a.ndim() {
            2 => {
                let x: PyReadonlyArray2<f64> =
                    obj.call_method1("astype", ("float64",))?.extract()?;
                Value::Matrix(x.as_array().as_standard_layout().into_owned())
            }
            1 => Value::List(obj.call_method1("astype", ("float64",))?.extract()?),
            _ => Value::Other(format!("{}-D array", a.ndim())),
        });
    }
    if !obj.is_instance_of::<PyFloat>() && obj.hasattr("__index__")? {
        let i = obj.call_method0("__index__")?;
        return match i.extract::<i64>() {
            Ok(v) => Ok(Value::Int(v)),
            Err(_) => {
                let shown = i.str()?.to_cow()?.into_owned();
                Err(PyValueError::new_err(format!(
                    "the integer {shown} does not fit in 64 bits"
                )))
            }
        };
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        if t.len() == 4 && t.get_item(0).is_ok_and(|d| is_ndarray(&d)) {
            return Ok(Value::Instances(Instances::Sparse(csr_of(t)?)));
        }
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return Ok(match obj.extract::<Vec<f64>>() {
            Ok(v) => Value::List(v),
            Err(_) => Value::Other(type_name),
        });
    }
    if obj.hasattr("__float__")? {
        if let Ok(x) = obj.extract::<f64>() {
            return Ok(Value::Float(x));
        }
    }
    Ok(Value::Other(type_name))
}

/// A [`Value`] as a Python object (matrices and instances as NumPy arrays or CSR tuples).
pub(crate) fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    use numpy::IntoPyArray;
    Ok(match value {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(x) => x.into_pyobject(py)?.into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::List(v) => v.clone().into_pyobject(py)?.into_any(),
        Value::Matrix(m) => m.clone().into_pyarray(py).into_any(),
        Value::Instances(x) => x.to_dense().into_pyarray(py).into_any(),
        Value::Other(t) => t.into_pyobject(py)?.into_any(),
    })
}

/// One declared hyperparameter for Python: `(name, default, range)`, `range` the allowed
/// values in words ([`crate::params::Range::describe`]) or None. The field's doc comment stays
/// in rustdoc: the Python text of a parameter is its estimator's docstring (DECISIONS.md, "One
/// source per fact in the Python layer").
pub(crate) type SpecTuple<'py> = (&'static str, Bound<'py, PyAny>, Option<String>);

/// The declared hyperparameters of builder `P` as `(name, default, range)` tuples.
pub(crate) fn specs_of<'py, P: Hyperparams>(py: Python<'py>) -> PyResult<Vec<SpecTuple<'py>>> {
    P::specs()
        .into_iter()
        .map(|s| {
            let range = s.range.map(|r| r.describe());
            Ok((s.name, value_to_py(py, &s.default)?, range))
        })
        .collect()
}

/// A builder filled from a dict `{name: value}` (names as the Python estimators spell them);
/// the first refused entry raises `TypeError` or `ValueError` naming it.
pub(crate) fn params_from<P: Hyperparams>(params: &Bound<'_, PyDict>) -> PyResult<P> {
    let mut p = P::default();
    for (key, value) in params.iter() {
        let name: String = key.extract()?;
        p.set(&name, &value_of(&value)?)?;
    }
    Ok(p)
}
