//! Bindings of MI-Kernel and RS (`src/set_kernel/`).

use super::*;
use crate::set_kernel::{MiKernelFit, MiKernelParams, ReducedSetFit, ReducedSetParams};

/// A fitted MI-Kernel (the Rust [`MiKernelFit`]).
#[pyclass(name = "MiKernelFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyMiKernelFit {
    /// The compiled model (the support bags' instances as expansion vectors, mean pooling).
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// Indices of the support bags.
    support: Vec<usize>,
    /// Expansion vectors: the instances of the support bags.
    n_xv: usize,
    /// Bag coefficients `alpha` (`n_outputs x n_bags`).
    coef: Py<PyArray2<f64>>,
    /// Bias of each output.
    intercept: Py<PyArray1<f64>>,
    /// Per output: the objective (without the ridge).
    objective: Vec<f64>,
    /// Per output: the minimum of the ridged problem.
    ridged_objective: Vec<f64>,
    /// Largest number of solver iterations.
    n_iter: usize,
    /// Whether every solve met its stopping rule.
    inner_converged: bool,
}

impl PyMiKernelFit {
    fn new(py: Python<'_>, fit: MiKernelFit) -> PyResult<Self> {
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(fit.model.to_model()?)?)?,
            gamma: fit.gamma,
            support: fit.model.support(),
            n_xv: fit.model.n_xv(),
            coef: fit.model.coef.into_pyarray(py).unbind(),
            intercept: fit.model.intercept.into_pyarray(py).unbind(),
            objective: fit.objective,
            ridged_objective: fit.ridged_objective,
            n_iter: fit.n_iter,
            inner_converged: fit.converged,
        })
    }
}

fit_bindings!(
    /// Fits MI-Kernel with the parameters of `params` (names as in `milsvm.MIKernel`).
    fit_mi_kernel,
    check_mi_kernel,
    fit_mi_kernel_hyperparameters,
    MiKernelParams,
    PyMiKernelFit,
    register_mi_kernel,
    path fit_mi_kernel_path
);

/// Bag scores `(n_bags, n_outputs)` of a set-kernel model: `coef` (`n_outputs x n_train_bags`)
/// over the training bags `(train_x, train_bag_ptr)`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, train_x, train_bag_ptr, coef, intercept, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mi_kernel_decision_function<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    train_x: &Bound<'py, PyAny>,
    train_bag_ptr: PyReadonlyArray1<i64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = crate::set_kernel::SetKernelModel {
        kernel: kernel_of(kernel, gamma)?,
        bags: std::sync::Arc::new(bags(train_x, train_bag_ptr)?),
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes: 2,
    };
    let bags = bags(x, bag_ptr)?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let scores = run(py, || {
        on_threads(n_jobs, || model.decision_function(&bags))?
    })?;
    Ok(scores.into_pyarray(py))
}

/// The set kernel `K[i, j] = mean_p mean_q k(x_ip, x'_jq)` between the bags of `(x, bag_ptr)`
/// and of `(x2, bag_ptr2)`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, x2, bag_ptr2, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn set_kernel_matrix<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    x2: &Bound<'py, PyAny>,
    bag_ptr2: PyReadonlyArray1<i64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kernel = kernel_of(kernel, gamma)?;
    let (a, b) = (bags(x, bag_ptr)?, bags(x2, bag_ptr2)?);
    let n_jobs = n_jobs_of(n_jobs)?;
    let k = run(py, || {
        on_threads(n_jobs, || crate::set_kernel::set_kernel(kernel, &a, &b))?
    })?;
    Ok(k.into_pyarray(py))
}

/// A fitted RS (the Rust [`ReducedSetFit`]).
#[pyclass(name = "ReducedSetFit", module = "milsvm._core", frozen, get_all)]
pub(crate) struct PyReducedSetFit {
    /// The compiled model (the reduced-set vectors, mean pooling).
    model: Py<model::PyModel>,
    /// The kernel width used.
    gamma: f64,
    /// `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2` before the first vector and after each one.
    residual_history: Vec<f64>,
    /// Fixed-point iterations over all vectors.
    fixed_point_iterations: usize,
    /// Expansion vectors of the approximated MI-Kernel.
    mi_kernel_n_xv: usize,
    /// Bag coefficients of the approximated MI-Kernel (`n_outputs x n_bags`).
    mi_kernel_coef: Py<PyArray2<f64>>,
    /// Biases of the approximated MI-Kernel.
    mi_kernel_intercept: Py<PyArray1<f64>>,
    /// Whether every MI-Kernel solve met its stopping rule.
    inner_converged: bool,
}

impl PyReducedSetFit {
    fn new(py: Python<'_>, fit: ReducedSetFit) -> PyResult<Self> {
        Ok(Self {
            model: Py::new(py, model::PyModel::wrap(fit.model)?)?,
            gamma: fit.gamma,
            residual_history: fit.expansion.residual_history,
            fixed_point_iterations: fit.expansion.fixed_point_iterations,
            mi_kernel_n_xv: fit.mi_kernel.model.n_xv(),
            mi_kernel_coef: fit.mi_kernel.model.coef.into_pyarray(py).unbind(),
            mi_kernel_intercept: fit.mi_kernel.model.intercept.into_pyarray(py).unbind(),
            inner_converged: fit.mi_kernel.converged,
        })
    }
}

fit_bindings!(
    /// Fits RS with the parameters of `params` (names as in `milsvm.ReducedSet`, plus `seed`).
    fit_reduced_set,
    check_reduced_set,
    fit_reduced_set_hyperparameters,
    ReducedSetParams,
    PyReducedSetFit,
    register_reduced_set,
    path fit_reduced_set_path
);

/// Adds MI-Kernel, RS and the set-kernel functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_mi_kernel(m)?;
    register_reduced_set(m)?;
    m.add_function(wrap_pyfunction!(mi_kernel_decision_function, m)?)?;
    m.add_function(wrap_pyfunction!(set_kernel_matrix, m)?)
}
