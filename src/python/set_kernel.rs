//! Bindings of MI-Kernel and RS (`src/set_kernel/`).

use super::*;
use crate::set_kernel::{MiKernelFit, MiKernelParams, ReducedSetFit, ReducedSetParams};

fit_projection! {
    /// A fitted MI-Kernel (the Rust [`MiKernelFit`]).
    "MiKernelFit" PyMiKernelFit(py, fit: MiKernelFit) {
        /// The compiled model (the support bags' instances as expansion vectors, mean pooling).
        model: Py<model::PyModel> = fit.model.to_model()?,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// Indices of the support bags.
        support: Vec<usize> = fit.model.support(),
        /// Expansion vectors: the instances of the support bags.
        n_xv: usize = fit.model.n_xv(),
        /// Bag coefficients `alpha` (`n_outputs x n_bags`).
        coef: Py<PyArray2<f64>> = fit.model.coef,
        /// Bias of each output.
        intercept: Py<PyArray1<f64>> = fit.model.intercept,
        /// Per output: the objective (without the ridge).
        objective: Py<PyArray1<f64>> = fit.objective,
        /// Per output: the minimum of the ridged problem.
        ridged_objective: Py<PyArray1<f64>> = fit.ridged_objective,
        /// Largest number of solver iterations.
        n_iter: usize = fit.n_iter,
        /// Whether every solve met its stopping rule.
        inner_converged: bool = fit.converged,
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

/// The set kernel `K[i, j] = mean_p mean_q k(x_ip, x'_jq)` between the bags of `(x, bag_ptr)`
/// and of `(x2, bag_ptr2)`.
#[pyfunction]
#[pyo3(signature = (x: "Instances", bag_ptr, x2: "Instances", bag_ptr2, kernel, gamma, n_jobs=None))]
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

fit_projection! {
    /// A fitted RS (the Rust [`ReducedSetFit`]).
    "ReducedSetFit" PyReducedSetFit(py, fit: ReducedSetFit) {
        /// The compiled model (the reduced-set vectors, mean pooling).
        model: Py<model::PyModel> = fit.model,
        /// The kernel width used.
        gamma: f64 = fit.gamma,
        /// `sum_c ||w_c - sum_k gamma_ck phi(z_k)||^2` before the first vector and after each one.
        residual_history: Py<PyArray1<f64>> = fit.expansion.residual_history,
        /// Fixed-point iterations over all vectors.
        fixed_point_iterations: usize = fit.expansion.fixed_point_iterations,
        /// Expansion vectors of the approximated MI-Kernel.
        mi_kernel_n_xv: usize = fit.mi_kernel.model.n_xv(),
        /// Bag coefficients of the approximated MI-Kernel (`n_outputs x n_bags`).
        mi_kernel_coef: Py<PyArray2<f64>> = fit.mi_kernel.model.coef,
        /// Biases of the approximated MI-Kernel.
        mi_kernel_intercept: Py<PyArray1<f64>> = fit.mi_kernel.model.intercept,
        /// Whether every MI-Kernel solve met its stopping rule.
        inner_converged: bool = fit.mi_kernel.converged,
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
    m.add_function(wrap_pyfunction!(set_kernel_matrix, m)?)
}
