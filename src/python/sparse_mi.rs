//! Bindings of SparseMI and RSVM (`src/sparse_mi.rs`).

use super::*;

/// Fits SparseMI (RSVM with `max_iter=0`); returns a dict of fitted arrays and diagnostics.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, n_xv, c, kernel, gamma, max_iter, max_line_search, tol, solver, seed, n_jobs, inner_tol=None, init_xv=None, n_basis=None, init_basis=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_sparse_mi<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    n_xv: i64,
    c: f64,
    kernel: &str,
    gamma: Option<f64>,
    max_iter: i64,
    max_line_search: i64,
    tol: f64,
    solver: &str,
    seed: u64,
    n_jobs: Option<i64>,
    inner_tol: Option<f64>,
    init_xv: Option<PyReadonlyArray2<f64>>,
    n_basis: Option<i64>,
    init_basis: Option<&Bound<'py, PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let count = |v: i64, name: &str| {
        usize::try_from(v).map_err(|_| {
            PyValueError::new_err(format!("{name} must be a non-negative integer, got {v}"))
        })
    };
    let params = SparseMiParams {
        n_xv: count(n_xv, "n_xv")?,
        c,
        kernel: match kernel {
            "rbf" => KernelKind::Rbf,
            "linear" => KernelKind::Linear,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "kernel must be 'rbf' or 'linear', got {kernel:?}"
                )))
            }
        },
        gamma: gamma.map_or(Gamma::Scale, Gamma::Value),
        max_iter: count(max_iter, "max_iter")?,
        max_line_search: count(max_line_search, "max_line_search")?,
        tol,
        solver: solver_of(solver)?,
        inner_tol,
        seed,
        n_jobs: n_jobs_of(n_jobs)?,
        init_xv: init_xv.map(|z| z.as_array().to_owned()),
        n_basis: n_basis.map(|q| count(q, "n_basis")).transpose()?,
        init_basis: init_basis.map(instances).transpose()?,
        observer: observer_of(progress),
        ..SparseMiParams::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("initial_xv", fit.initial_xv.into_pyarray(py))?;
    out.set_item("objective_history", fit.objective_history)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("inner_converged", fit.inner_converged)?;
    Ok(out)
}

/// `(g, dg/dZ)` of SparseMI at the expansion vectors `z` (for gradient checks).
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, z, c, kernel, gamma, solver="newton", inner_tol=1e-12))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sparse_mi_objective<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    z: PyReadonlyArray2<f64>,
    c: f64,
    kernel: &str,
    gamma: f64,
    solver: &str,
    inner_tol: f64,
) -> PyResult<(f64, Bound<'py, PyArray2<f64>>)> {
    let kind = match kernel_of(kernel, gamma)? {
        Kernel::Linear => KernelKind::Linear,
        Kernel::Rbf { .. } => KernelKind::Rbf,
    };
    let z = z.as_array().to_owned();
    let params = SparseMiParams {
        n_xv: z.nrows(),
        c,
        kernel: kind,
        gamma: Gamma::Value(gamma),
        solver: solver_of(solver)?,
        inner_tol: Some(inner_tol),
        ..SparseMiParams::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    check_cols(bags.n_features(), z.ncols())?;
    let (g, grad) = run(py, || {
        crate::sparse_mi::objective_and_gradient(&params, &bags, &labels, z)
    })?;
    Ok((g, grad.into_pyarray(py)))
}
