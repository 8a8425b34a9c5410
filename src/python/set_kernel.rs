//! Bindings of MI-Kernel and RS (`src/set_kernel/`).

use super::*;

/// Fits MI-Kernel (the squared-hinge SVM on the set kernel); returns a dict with `coef`
/// (`n_outputs x n_bags`), `intercept`, `support`, `n_xv`, `gamma`, `objective`,
/// `ridged_objective`, `n_iter`, `converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, c, kernel, gamma, solver, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_mi_kernel<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    c: f64,
    kernel: &str,
    gamma: Option<f64>,
    solver: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = crate::set_kernel::MiKernelParams {
        c,
        kernel: kernel_kind(kernel)?,
        gamma: gamma.map_or(Gamma::Scale, Gamma::Value),
        solver: solver_of(solver)?,
        n_jobs: n_jobs_of(n_jobs)?,
        ..Default::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model.to_model()?)?)?;
    out.set_item("support", fit.model.support())?;
    out.set_item("n_xv", fit.model.n_xv())?;
    out.set_item("coef", fit.model.coef.into_pyarray(py))?;
    out.set_item("intercept", fit.model.intercept.into_pyarray(py))?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("objective", fit.objective)?;
    out.set_item("ridged_objective", fit.ridged_objective)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("converged", fit.converged)?;
    Ok(out)
}

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
        bags: bags(train_x, train_bag_ptr)?,
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes: 2,
    };
    let bags = bags(x, bag_ptr)?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let scores = run(py, || {
        with_threads(n_jobs, || model.decision_function(&bags))?
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
        with_threads(n_jobs, || crate::set_kernel::set_kernel(kernel, &a, &b))?
    })?;
    Ok(k.into_pyarray(py))
}

/// Fits RS (reduced-set approximation of MI-Kernel); returns a dict with `xv`, `coef`,
/// `intercept`, `gamma`, `residual_history`, `fixed_point_iterations` and the approximated
/// MI-Kernel's `mi_kernel_coef`, `mi_kernel_intercept`, `mi_kernel_n_xv`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, n_xv, c, kernel, gamma, max_fixed_point_iter, n_restarts, solver, seed, n_jobs, tol=1e-6))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_reduced_set<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    n_xv: i64,
    c: f64,
    kernel: &str,
    gamma: Option<f64>,
    max_fixed_point_iter: i64,
    n_restarts: i64,
    solver: &str,
    seed: u64,
    n_jobs: Option<i64>,
    tol: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let count = |v: i64, name: &str| {
        usize::try_from(v).map_err(|_| {
            PyValueError::new_err(format!("{name} must be a non-negative integer, got {v}"))
        })
    };
    let params = crate::set_kernel::ReducedSetParams {
        n_xv: count(n_xv, "n_xv")?,
        c,
        kernel: kernel_kind(kernel)?,
        gamma: gamma.map_or(Gamma::Scale, Gamma::Value),
        max_fixed_point_iter: count(max_fixed_point_iter, "max_fixed_point_iter")?,
        n_restarts: count(n_restarts, "n_restarts")?,
        tol,
        solver: solver_of(solver)?,
        seed,
        n_jobs: n_jobs_of(n_jobs)?,
        ..Default::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("mi_kernel_n_xv", fit.mi_kernel.model.n_xv())?;
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("residual_history", fit.expansion.residual_history)?;
    out.set_item(
        "fixed_point_iterations",
        fit.expansion.fixed_point_iterations,
    )?;
    out.set_item("mi_kernel_coef", fit.mi_kernel.model.coef.into_pyarray(py))?;
    out.set_item(
        "mi_kernel_intercept",
        fit.mi_kernel.model.intercept.into_pyarray(py),
    )?;
    Ok(out)
}
