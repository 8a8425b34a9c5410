//! Bindings of SVM-CC (`src/convex_combination.rs`).

use crate::convex_combination::{hinge_bias, StopReason, SvmCcParams};
use crate::smo::max_weights;

use super::set_kernel_svm::class_weight_of;
use super::*;

/// Fits SVM-CC; returns a dict with `xv`, `coef` (`n_outputs x n_xv`), `intercept`, `gamma`
/// and per binary problem `positive_bags`, `v`, `lp_intercept`, `qp_intercept`,
/// `objective_history`, `dv_history`, `n_iter`, `converged`; plus `smo_converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, c, kernel, gamma, class_weight=None, max_iter=80, tol=1e-4, smo_tol=1e-3, n_jobs=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_svmcc<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    c: f64,
    kernel: &str,
    gamma: &Bound<'py, PyAny>,
    class_weight: Option<&Bound<'py, PyAny>>,
    max_iter: i64,
    tol: f64,
    smo_tol: f64,
    n_jobs: Option<i64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = SvmCcParams {
        c,
        kernel: kernel_kind(kernel)?,
        gamma: gamma_of(gamma)?,
        class_weight: class_weight_of(class_weight)?,
        max_iter: count(max_iter, "max_iter")?,
        tol,
        smo_tol,
        n_jobs: n_jobs_of(n_jobs)?,
        observer: observer_of(progress),
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("positive_bags", fit.positive_bags)?;
    out.set_item("v", fit.v)?;
    out.set_item("lp_intercept", fit.lp_intercept)?;
    out.set_item("qp_intercept", fit.qp_intercept)?;
    out.set_item("objective_history", fit.objective_history)?;
    out.set_item("dv_history", fit.dv_history)?;
    out.set_item("n_iter", fit.n_iter)?;
    let converged: Vec<bool> = fit
        .stop_reason
        .iter()
        .map(|r| *r == StopReason::Converged)
        .collect();
    out.set_item("converged", converged)?;
    out.set_item("smo_converged", fit.smo_converged)?;
    Ok(out)
}

/// SVM-CC's LP step with `w` fixed (for tests against a general LP solver): `pos_scores` holds
/// the instance scores of each positive bag, `pos_weights` / `neg_weights` the slack weights;
/// returns `(v, b)`.
#[pyfunction]
pub(crate) fn svmcc_lp_step(
    pos_scores: Vec<Vec<f64>>,
    pos_weights: Vec<f64>,
    neg_scores: Vec<f64>,
    neg_weights: Vec<f64>,
) -> PyResult<(Vec<Vec<f64>>, f64)> {
    if pos_scores.len() != pos_weights.len() || neg_scores.len() != neg_weights.len() {
        return Err(PyValueError::new_err(
            "one weight per bag / instance is needed",
        ));
    }
    if pos_scores.iter().any(|s| s.is_empty()) {
        return Err(PyValueError::new_err("a positive bag has no score"));
    }
    let all_finite = pos_scores
        .iter()
        .flatten()
        .chain(&pos_weights)
        .chain(&neg_scores)
        .chain(&neg_weights)
        .all(|v| v.is_finite());
    if !all_finite {
        return Err(PyValueError::new_err("scores and weights must be finite"));
    }
    let v: Vec<Vec<f64>> = pos_scores.iter().map(|s| max_weights(s)).collect();
    let g: Vec<f64> = pos_scores
        .iter()
        .map(|s| s.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        .collect();
    Ok((v, hinge_bias(&g, &pos_weights, &neg_scores, &neg_weights)))
}
