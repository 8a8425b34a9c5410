//! The Python bindings (`milsvm._core`): all PyO3 code of the crate, behind the `python`
//! feature, one file per algorithm family beside the shared conversions of this file. Inputs are
//! copied into owned buffers, the GIL is released around the work, every core [`Error`] becomes
//! `ValueError`, and a panic (a bug) becomes `RuntimeError` instead of reaching Python as
//! `BaseException`.

mod annealing;
mod convex_combination;
mod core_fns;
mod model;
mod one_class;
mod set_kernel;
mod set_kernel_svm;
mod sparse_mi;

use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::bags::{validate_bag_ptr, Bags, Csr, Instances};
use crate::error::Error;
use crate::kernel::{basis_gradient, kernel_bag_means, Basis, Kernel, Rows};
use crate::model::Model;
use crate::params::{with_threads, Gamma, KernelKind, Observer, Progress};
use crate::solver::{InnerSolver, SquaredHinge};
use crate::sparse_mi::SparseMiParams;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// Runs `f` without the GIL; a panic becomes `RuntimeError`.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            PyRuntimeError::new_err(format!("internal error in milsvm (please report): {msg}"))
        })?
        .map_err(PyErr::from)
}

pub(crate) fn to_usize(v: &[i64], what: &str) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| PyValueError::new_err(format!("{what} holds a negative value ({x})")))
        })
        .collect()
}

/// Instances from a dense 2-D float64 array or a CSR tuple `(data, indices, indptr, n_cols)`.
pub(crate) fn instances(obj: &Bound<'_, PyAny>) -> PyResult<Instances> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        let (data, indices, indptr, n_cols): (
            PyReadonlyArray1<f64>,
            PyReadonlyArray1<i64>,
            PyReadonlyArray1<i64>,
            usize,
        ) = t.extract()?;
        let indptr = to_usize(indptr.as_slice()?, "indptr")?;
        let n_rows = indptr.len().saturating_sub(1);
        let csr = Csr::new(
            n_rows,
            n_cols,
            indptr,
            to_usize(indices.as_slice()?, "indices")?,
            data.as_slice()?.to_vec(),
        )?;
        return Ok(Instances::Sparse(csr));
    }
    let x: PyReadonlyArray2<f64> = obj.extract()?;
    Ok(Instances::Dense(
        x.as_array().as_standard_layout().into_owned(),
    ))
}

pub(crate) fn bags(obj: &Bound<'_, PyAny>, bag_ptr: PyReadonlyArray1<i64>) -> PyResult<Bags> {
    Ok(Bags::new(
        instances(obj)?,
        to_usize(bag_ptr.as_slice()?, "bag_ptr")?,
    )?)
}

pub(crate) fn kernel_of(name: &str, gamma: f64) -> PyResult<Kernel> {
    match name {
        "rbf" if gamma.is_finite() && gamma > 0.0 => Ok(Kernel::Rbf { gamma }),
        "rbf" => Err(PyValueError::new_err(format!(
            "gamma must be a finite number > 0, got {gamma}"
        ))),
        "linear" => Ok(Kernel::Linear),
        _ => Err(PyValueError::new_err(format!(
            "kernel must be 'rbf' or 'linear', got {name:?}"
        ))),
    }
}

pub(crate) fn solver_of(name: &str) -> PyResult<InnerSolver> {
    match name {
        "newton" => Ok(InnerSolver::Newton),
        "lbfgs" => Ok(InnerSolver::Lbfgs),
        _ => Err(PyValueError::new_err(format!(
            "solver must be 'newton' or 'lbfgs', got {name:?}"
        ))),
    }
}

pub(crate) fn n_jobs_of(n_jobs: Option<i64>) -> PyResult<Option<usize>> {
    match n_jobs {
        None | Some(-1) => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as usize)),
        Some(n) => Err(PyValueError::new_err(format!(
            "n_jobs must be None, -1 or an integer >= 1, got {n}"
        ))),
    }
}

pub(crate) fn check_cols(d: usize, dz: usize) -> PyResult<()> {
    if d != dz {
        return Err(PyValueError::new_err(format!(
            "the basis has {dz} features, the instances have {d}"
        )));
    }
    Ok(())
}

/// The kernel width from Python: `"scale"`, `"median"` or a number (its range is checked by the
/// core).
pub(crate) fn gamma_of(obj: &Bound<'_, PyAny>) -> PyResult<Gamma> {
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "scale" => Ok(Gamma::Scale),
            "median" => Ok(Gamma::Median),
            _ => Err(PyValueError::new_err(format!(
                "gamma must be 'scale', 'median' or a float > 0, got {s:?}"
            ))),
        };
    }
    Ok(Gamma::Value(obj.extract::<f64>()?))
}

/// The pooling named `name` (`"mean"`, `"max"` or `"normalized_mean"`).
pub(crate) fn pooling_of(name: &str) -> PyResult<crate::model::Pooling> {
    match name {
        "mean" => Ok(crate::model::Pooling::Mean),
        "max" => Ok(crate::model::Pooling::Max),
        "normalized_mean" => Ok(crate::model::Pooling::NormalizedMean),
        "smil_mean" => Ok(crate::model::Pooling::SmilMean),
        _ => Err(PyValueError::new_err(format!(
            "pooling must be 'mean', 'max', 'normalized_mean' or 'smil_mean', got {name:?}"
        ))),
    }
}

/// The kernel family named `kernel` (`"rbf"` or `"linear"`).
pub(crate) fn kernel_kind(kernel: &str) -> PyResult<KernelKind> {
    match kernel {
        "rbf" => Ok(KernelKind::Rbf),
        "linear" => Ok(KernelKind::Linear),
        _ => Err(PyValueError::new_err(format!(
            "kernel must be 'rbf' or 'linear', got {kernel:?}"
        ))),
    }
}

/// An observer calling the Python `callback(problem, step, max_steps, objective, temperature)`
/// at every step of a fit (with the GIL taken for the call; an exception in the callback is
/// printed and ignored: it cannot stop the fit).
pub(crate) fn observer_of(callback: Option<Py<PyAny>>) -> Observer {
    match callback {
        None => Observer::default(),
        Some(cb) => Observer::new(move |p: &Progress| {
            Python::attach(|py| {
                if let Err(e) = cb.call1(
                    py,
                    (p.problem, p.step, p.max_steps, p.objective, p.temperature),
                ) {
                    e.print(py);
                }
            })
        }),
    }
}

/// A non-negative count from Python, or `ValueError` naming it.
pub(crate) fn count(v: i64, name: &str) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| {
        PyValueError::new_err(format!("{name} must be a non-negative integer, got {v}"))
    })
}

/// The compiled core of milsvm.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(sparse_mi::fit_sparse_mi, m)?)?;
    m.add_class::<model::PyModel>()?;
    m.add_function(wrap_pyfunction!(core_fns::kernel_bag_means_py, m)?)?;
    m.add("kernel_bag_means", m.getattr("kernel_bag_means_py")?)?;
    m.add_function(wrap_pyfunction!(core_fns::kernel_basis_grad, m)?)?;
    m.add_function(wrap_pyfunction!(core_fns::solve_squared_hinge, m)?)?;
    m.add_function(wrap_pyfunction!(sparse_mi::sparse_mi_objective, m)?)?;
    m.add_function(wrap_pyfunction!(core_fns::squared_hinge_value_grad, m)?)?;
    m.add_function(wrap_pyfunction!(core_fns::solve_dual, m)?)?;
    m.add_function(wrap_pyfunction!(set_kernel::fit_mi_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(
        set_kernel::mi_kernel_decision_function,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(set_kernel::set_kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(set_kernel::fit_reduced_set, m)?)?;
    m.add_function(wrap_pyfunction!(annealing::fit_annealing, m)?)?;
    m.add_function(wrap_pyfunction!(annealing::probability_update, m)?)?;
    m.add_function(wrap_pyfunction!(set_kernel_svm::fit_set_kernel_svm, m)?)?;
    m.add_function(wrap_pyfunction!(convex_combination::fit_svmcc, m)?)?;
    m.add_function(wrap_pyfunction!(convex_combination::svmcc_lp_step, m)?)?;
    m.add_function(wrap_pyfunction!(one_class::fit_one_class, m)?)?;
    Ok(())
}
