//! Bindings of the annealing family (`src/annealing/`).

use crate::annealing::{AnnealingMethod, AnnealingParams, InitialLabels, StopReason};
use crate::params::ClassWeight;

use super::*;

/// Fits a method of the annealing family (`method`: `"al"`, `"aw"`, `"alp"`, `"mi"`, `"MI"`);
/// returns a dict with `xv`, `coef` (`n_outputs x n_xv`), `intercept`, `gamma`, and per binary
/// problem `p`, `p_hat`, `objective_history`, `temperatures`, `n_iter`, `n_solves`, `converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, method, c, kernel, gamma, c2=1.0, p_star=0.5, t0=None, decay=1.5, eps=1e-4, max_temperatures=200, max_iter=50, init="uniform", n_xv=None, xv_init="kmeans", init_xv=None, class_weight=None, seed=0, n_jobs=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_annealing<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    method: &str,
    c: f64,
    kernel: &str,
    gamma: &Bound<'py, PyAny>,
    c2: f64,
    p_star: f64,
    t0: Option<f64>,
    decay: f64,
    eps: f64,
    max_temperatures: i64,
    max_iter: i64,
    init: &str,
    n_xv: Option<i64>,
    xv_init: &str,
    init_xv: Option<PyReadonlyArray2<f64>>,
    class_weight: Option<&Bound<'py, PyAny>>,
    seed: u64,
    n_jobs: Option<i64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let method = match method {
        "al" => AnnealingMethod::Al,
        "aw" => AnnealingMethod::Aw,
        "alp" => AnnealingMethod::Alp,
        "mi" => AnnealingMethod::MiSvm,
        "MI" => AnnealingMethod::MISvm,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown annealing method {method:?}"
            )))
        }
    };
    let init = match init {
        "uniform" => InitialLabels::Uniform,
        "labels" => InitialLabels::BagLabels,
        _ => {
            return Err(PyValueError::new_err(format!(
                "init must be 'uniform' or 'labels', got {init:?}"
            )))
        }
    };
    let xv_init = match xv_init {
        "kmeans" => crate::basis::BasisInit::KMeans,
        "random" => crate::basis::BasisInit::Random,
        _ => {
            return Err(PyValueError::new_err(format!(
                "xv_init must be 'kmeans', 'random' or an array, got {xv_init:?}"
            )))
        }
    };
    let class_weight = match class_weight {
        None => ClassWeight::Uniform,
        Some(obj) => match obj.extract::<String>() {
            Ok(s) if s == "balanced" => ClassWeight::Balanced,
            Ok(s) => {
                return Err(PyValueError::new_err(format!(
                    "class_weight must be None, 'balanced' or a dict, got {s:?}"
                )))
            }
            Err(_) => ClassWeight::Given(obj.extract::<Vec<f64>>()?),
        },
    };
    let params = AnnealingParams {
        method,
        c,
        c2,
        p_star,
        kernel: kernel_kind(kernel)?,
        gamma: gamma_of(gamma)?,
        t0,
        decay,
        eps,
        max_temperatures: count(max_temperatures, "max_temperatures")?,
        max_iter: count(max_iter, "max_iter")?,
        init,
        n_xv: n_xv.map(|q| count(q, "n_xv")).transpose()?,
        xv_init,
        init_xv: init_xv.map(|z| z.as_array().to_owned()),
        class_weight,
        seed,
        n_jobs: n_jobs_of(n_jobs)?,
        observer: observer_of(progress),
        ..AnnealingParams::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("gamma", fit.gamma)?;
    let p: Vec<Bound<'py, PyArray1<f64>>> = fit.p.into_iter().map(|v| v.into_pyarray(py)).collect();
    out.set_item("p", p)?;
    out.set_item("p_hat", fit.p_hat)?;
    out.set_item("objective_history", fit.objective_history)?;
    out.set_item("temperatures", fit.temperatures)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("n_solves", fit.n_solves)?;
    let converged: Vec<bool> = fit
        .stop_reason
        .iter()
        .map(|r| *r == StopReason::Converged)
        .collect();
    out.set_item("converged", converged)?;
    Ok(out)
}

/// One bag's probability update of the annealing family (for tests against a general
/// optimiser): `kind` is `"al"` (eq. 8), `"aw"` (eq. 11) or `"alp"` (section 6); `t` holds
/// `C d_j` (AL, ALP) or `C l_j` (AW); `temp >= 0`.
#[pyfunction]
#[pyo3(signature = (kind, t, temp, c2=0.0, p_star=0.0))]
pub(crate) fn probability_update<'py>(
    py: Python<'py>,
    kind: &str,
    t: PyReadonlyArray1<f64>,
    temp: f64,
    c2: f64,
    p_star: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let t = t.as_slice()?;
    if t.is_empty() || temp.is_nan() || temp < 0.0 || t.iter().any(|v| v.is_nan()) {
        return Err(PyValueError::new_err(
            "t must be a non-empty array without NaN and temp a number >= 0",
        ));
    }
    let mut out = vec![0.0; t.len()];
    match kind {
        "al" => crate::annealing::al_update(t, temp, &mut out),
        "aw" => crate::annealing::aw_update(t, temp, &mut out),
        "alp" => crate::annealing::alp_update(t, temp, c2, p_star, &mut out),
        _ => {
            return Err(PyValueError::new_err(format!(
                "kind must be 'al', 'aw' or 'alp', got {kind:?}"
            )))
        }
    }
    Ok(out.into_pyarray(py))
}
