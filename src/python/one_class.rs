//! Bindings of the one-class MI-SVM (`src/one_class.rs`).

use crate::convex_combination::StopReason;
use crate::one_class::OneClassParams;

use super::*;

/// Fits the one-class MI-SVM on the bags labelled 1; returns a dict with `xv`, `coef`
/// (`1 x n_xv`), `intercept` (`-rho`), `gamma`, `alpha`, `bag_alpha`, `active`,
/// `objective_history`, `n_iter`, `converged`, `smo_converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, nu, kernel, gamma, bag_constraints=true, max_iter=20, tol=1e-3, n_jobs=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_one_class<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    nu: f64,
    kernel: &str,
    gamma: &Bound<'py, PyAny>,
    bag_constraints: bool,
    max_iter: i64,
    tol: f64,
    n_jobs: Option<i64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = OneClassParams {
        nu,
        kernel: kernel_kind(kernel)?,
        gamma: gamma_of(gamma)?,
        bag_constraints,
        max_iter: count(max_iter, "max_iter")?,
        tol,
        n_jobs: n_jobs_of(n_jobs)?,
        observer: observer_of(progress),
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("alpha", fit.alpha.into_pyarray(py))?;
    out.set_item("bag_alpha", fit.bag_alpha.into_pyarray(py))?;
    out.set_item("active", fit.active)?;
    out.set_item("objective_history", fit.objective_history)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("converged", fit.stop_reason == StopReason::Converged)?;
    out.set_item("smo_converged", fit.smo_converged)?;
    Ok(out)
}
