//! Bindings of MILES (`src/miles.rs`), its embedding and its 1-norm SVM solver.

use super::*;
use crate::miles::{miles_fit_fields, MilesFit, MilesParams};
use crate::progress::Cancel;
use crate::solver::l1_svm::{solve_l1_svm, L1SvmProblem, L1SvmSettings};

miles_fit_fields!(fit_record! {
    /// A fitted MILES (the Rust [`MilesFit`]; per binary problem where a list).
    "MilesFit" PyMilesFit
});

fit_bindings!(
    /// Fits MILES with the parameters of `params` (names as in `milsvm.MILES`, plus `seed`).
    fit_miles,
    check_miles,
    fit_miles_hyperparameters,
    MilesParams,
    PyMilesFit,
    register_fit,
    path fit_miles_path
);

/// The MILES embedding `E[i, k] = max_{x in bag i} k(z_k, x)` (`n_bags x n_concepts`) of the
/// bags `(x, bag_ptr)` against the concepts `z` (each a 2-D float64 array or a CSR tuple).
#[pyfunction]
#[pyo3(signature = (x: "Instances", bag_ptr, z: "Instances", kernel, gamma, n_jobs=None))]
fn miles_embedding<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    z: &Bound<'py, PyAny>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kernel = kernel_of(kernel, gamma)?;
    let bags = bags(x, bag_ptr)?;
    let z = instances(z)?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let e = run(py, || {
        on_threads(n_jobs, || crate::miles::embedding(kernel, &bags, &z))?
    })?;
    Ok(e.into_pyarray(py))
}

/// Solves the 1-norm SVM LP `min sum_k |w_k| + sum_i cost_i max(0, 1 - y_i (x_i . w + b))`
/// (`milsvm::solver::l1_svm`); returns `(w, b, objective, dual, iterations, converged)`.
#[pyfunction]
#[pyo3(name = "solve_l1_svm", signature = (x, y, cost, tol=1e-9, max_iter=None))]
#[allow(clippy::type_complexity)]
fn solve_l1_svm_py<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<f64>,
    y: PyReadonlyArray1<f64>,
    cost: PyReadonlyArray1<f64>,
    tol: f64,
    max_iter: Option<usize>,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    f64,
    f64,
    Bound<'py, PyArray1<f64>>,
    usize,
    bool,
)> {
    if !(tol.is_finite() && tol > 0.0 && tol < 1.0) {
        return Err(PyValueError::new_err(format!(
            "tol must lie in (0, 1), got {tol}"
        )));
    }
    let x: Array2<f64> = x.as_array().to_owned();
    let (y, cost) = (y.as_slice()?.to_vec(), cost.as_slice()?.to_vec());
    if y.len() != x.nrows() || cost.len() != x.nrows() {
        return Err(PyValueError::new_err(format!(
            "x has {} rows, y {} values and cost {}",
            x.nrows(),
            y.len(),
            cost.len()
        )));
    }
    let settings = L1SvmSettings {
        tol,
        max_iter,
        ..L1SvmSettings::default()
    };
    let s = run_default(py, || {
        let problem = L1SvmProblem {
            x: x.view(),
            y: &y,
            cost: &cost,
        };
        solve_l1_svm(&problem, &settings, &Cancel::default(), |_, _| {})
    })?;
    Ok((
        s.w.into_pyarray(py),
        s.b,
        s.objective,
        s.dual.into_pyarray(py),
        s.iterations,
        s.converged,
    ))
}

/// Adds the MILES fit, its embedding and its LP solver to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fit(m)?;
    m.add_function(wrap_pyfunction!(miles_embedding, m)?)?;
    m.add_function(wrap_pyfunction!(solve_l1_svm_py, m)?)
}
