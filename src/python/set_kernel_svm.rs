//! Bindings of NSK and sMIL (`src/set_kernel_svm.rs`).

use crate::params::ClassWeight;
use crate::set_kernel_svm::{NskParams, SetNorm, SmilParams};

use super::*;

/// `None`, `"balanced"` or one weight per class index.
pub(crate) fn class_weight_of(class_weight: Option<&Bound<'_, PyAny>>) -> PyResult<ClassWeight> {
    Ok(match class_weight {
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
    })
}

/// An optional iteration cap from Python (`None` or an integer >= 0; 0 is rejected by the
/// core's `validate`).
pub(crate) fn opt_count(v: Option<i64>, name: &str) -> PyResult<Option<usize>> {
    v.map(|q| count(q, name)).transpose()
}

/// Fits NSK (`method="nsk"`, `norm` `"l1"` or `"l2"`) or sMIL (`method="smil"`); returns a dict
/// with `xv`, `coef` (`n_outputs x n_xv`), `intercept`, `gamma`, `objective`, `alpha`,
/// `n_support`, `n_iter`, `converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, method, c, kernel, gamma, norm="l1", class_weight=None, tol=1e-3, max_iter=None, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_set_kernel_svm<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    method: &str,
    c: f64,
    kernel: &str,
    gamma: &Bound<'py, PyAny>,
    norm: &str,
    class_weight: Option<&Bound<'py, PyAny>>,
    tol: f64,
    max_iter: Option<i64>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let norm = match norm {
        "l1" => SetNorm::L1,
        "l2" => SetNorm::L2,
        _ => {
            return Err(PyValueError::new_err(format!(
                "norm must be 'l1' or 'l2', got {norm:?}"
            )))
        }
    };
    let kernel = kernel_kind(kernel)?;
    let gamma = gamma_of(gamma)?;
    let class_weight = class_weight_of(class_weight)?;
    let max_iter = opt_count(max_iter, "max_iter")?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = match method {
        "nsk" => {
            let params = NskParams {
                c,
                kernel,
                gamma,
                norm,
                class_weight,
                tol,
                max_iter,
                n_jobs,
            };
            run(py, || params.fit(&bags, &labels))?
        }
        "smil" => {
            let params = SmilParams {
                c,
                kernel,
                gamma,
                class_weight,
                tol,
                max_iter,
                n_jobs,
            };
            run(py, || params.fit(&bags, &labels))?
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "method must be 'nsk' or 'smil', got {method:?}"
            )))
        }
    };
    let out = PyDict::new(py);
    out.set_item("model", super::model::PyModel::wrap(fit.model)?)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("objective", fit.objective)?;
    let alpha: Vec<Bound<'py, PyArray1<f64>>> =
        fit.alpha.into_iter().map(|v| v.into_pyarray(py)).collect();
    out.set_item("alpha", alpha)?;
    out.set_item("n_support", fit.n_support)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("converged", fit.converged)?;
    Ok(out)
}
