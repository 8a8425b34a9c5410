//! The Python bindings (`milsvm._core`): all PyO3 code of the crate, behind the `python`
//! feature. One file per algorithm family (its fit function and its typed fit result), beside
//! `convert` (Python values into the core's types, core errors into exceptions), `run` (GIL
//! release, panics, progress callbacks, Ctrl-C) and `model` (the compiled model). Dense inputs
//! that are C-contiguous and aligned are read in place (the caller does not write to them while
//! a call runs), others are copied; the GIL is released around the work, and a panic (a bug)
//! becomes `RuntimeError` instead of reaching Python as `BaseException`.

mod annealing;
mod baselines;
mod convert;
mod convex_combination;
mod core_fns;
mod distributed;
mod miles;
mod model;
mod one_class;
mod record;
mod run;
mod semi_supervised;
mod set_kernel;
mod set_kernel_svm;
mod sparse_mi;
mod threads;
mod two_stage;

use ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::bags::{validate_bag_ptr, Instances, Rows};
use crate::error::Error;
use crate::kernel::{basis_gradient, kernel_bag_means, Basis, Kernel};
use crate::model::Model;
use crate::params::{Gamma, Hyperparams, KernelKind, Value};
use crate::solver::{InnerSolver, SquaredHinge};
pub(crate) use convert::{bags, instances, to_usize, value_of};
use record::{fit_projection, fit_record};
use run::fit_bindings;
pub(crate) use run::{run, run_default};
use threads::on_threads;

/// The kernel named `name` (`"rbf"` with width `gamma > 0`, or `"linear"`).
pub(crate) fn kernel_of(name: &str, gamma: f64) -> PyResult<Kernel> {
    let kind: KernelKind = crate::params::ParamType::from_value(&Value::Str(name.into()))
        .map_err(|r| PyErr::from(r.into_error("kernel", &Value::Str(name.into()))))?;
    if kind == KernelKind::Rbf && !(gamma.is_finite() && gamma > 0.0) {
        return Err(PyValueError::new_err(format!(
            "gamma must be a finite number > 0, got {gamma}"
        )));
    }
    Ok(kind.with_gamma(gamma))
}

/// The inner solver named `name` (`"newton"` or `"lbfgs"`).
pub(crate) fn solver_of(name: &str) -> PyResult<InnerSolver> {
    InnerSolver::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!("solver must be 'newton' or 'lbfgs', got {name:?}"))
    })
}

/// Threads from Python: `None` or `-1` for every core, else a count `>= 1`.
pub(crate) fn n_jobs_of(n_jobs: Option<i64>) -> PyResult<Option<usize>> {
    let v = n_jobs.map_or(Value::None, Value::Int);
    crate::params::n_jobs_from_value(&v).map_err(|r| PyErr::from(r.into_error("n_jobs", &v)))
}

pub(crate) fn check_cols(d: usize, dz: usize) -> PyResult<()> {
    if d != dz {
        return Err(PyValueError::new_err(format!(
            "the basis has {dz} features, the instances have {d}"
        )));
    }
    Ok(())
}

/// The pooling named `name` (`"mean"`, `"max"`, `"normalized_mean"`, `"smil_mean"` or
/// `"xv_max"`).
pub(crate) fn pooling_of(name: &str) -> PyResult<crate::model::Pooling> {
    crate::model::Pooling::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "pooling must be 'mean', 'max', 'normalized_mean', 'smil_mean' or 'xv_max', got \
             {name:?}"
        ))
    })
}

/// The compiled core of milsvm: each family's binding file registers its own functions and
/// classes (see `run::fit_bindings!`).
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    model::register(m)?;
    core_fns::register(m)?;
    sparse_mi::register(m)?;
    set_kernel::register(m)?;
    set_kernel_svm::register(m)?;
    semi_supervised::register(m)?;
    annealing::register(m)?;
    distributed::register(m)?;
    convex_combination::register(m)?;
    one_class::register(m)?;
    baselines::register(m)?;
    miles::register(m)?;
    two_stage::register(m)?;
    Ok(())
}
