//! Bindings of the fitted model form (`src/model.rs`): bag scores and the JSON model file.

use super::*;

/// Bag scores `(n_bags, n_outputs)` of the model `(xv, coef, intercept)`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, xv, coef, intercept, kernel, gamma, n_jobs=None, pooling="mean"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn decision_function<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    xv: PyReadonlyArray2<f64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
    pooling: &str,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = Model {
        pooling: pooling_of(pooling)?,
        kernel: kernel_of(kernel, gamma)?,
        xv: xv.as_array().to_owned(),
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes: if coef.as_array().nrows() == 1 {
            2
        } else {
            coef.as_array().nrows()
        },
    };
    let bags = bags(x, bag_ptr)?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let scores = run(py, || {
        with_threads(n_jobs, || model.decision_function(&bags))?
    })?;
    Ok(scores.into_pyarray(py))
}

/// The versioned JSON text of a model (the format `milsvm::Model::load` reads).
#[pyfunction]
#[pyo3(signature = (xv, coef, intercept, kernel, gamma, n_classes, pooling="mean"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn model_to_json(
    xv: PyReadonlyArray2<f64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_classes: usize,
    pooling: &str,
) -> PyResult<String> {
    let model = Model {
        kernel: kernel_of(kernel, gamma)?,
        xv: xv.as_array().to_owned(),
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes,
        pooling: pooling_of(pooling)?,
    };
    Ok(model.to_json()?)
}

/// Reads model JSON; returns a dict with `xv, coef, intercept, kernel, gamma, n_classes`.
#[pyfunction]
pub(crate) fn model_from_json<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyDict>> {
    let model = Model::from_json(text)?;
    let out = PyDict::new(py);
    let (name, gamma) = match model.kernel {
        Kernel::Rbf { gamma } => ("rbf", gamma),
        Kernel::Linear => ("linear", 1.0),
    };
    out.set_item("kernel", name)?;
    out.set_item("gamma", gamma)?;
    out.set_item("n_classes", model.n_classes)?;
    out.set_item(
        "pooling",
        match model.pooling {
            crate::model::Pooling::Mean => "mean",
            crate::model::Pooling::Max => "max",
        },
    )?;
    out.set_item("xv", model.xv.into_pyarray(py))?;
    out.set_item("coef", model.coef.into_pyarray(py))?;
    out.set_item("intercept", model.intercept.into_pyarray(py))?;
    Ok(out)
}

/// Instance scores `(n_instances, n_outputs)` of the model `(xv, coef, intercept)`.
#[pyfunction]
#[pyo3(signature = (x, xv, coef, intercept, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn instance_decision_function<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    xv: PyReadonlyArray2<f64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let n_out = coef.as_array().nrows();
    let model = Model {
        pooling: crate::model::Pooling::Max,
        kernel: kernel_of(kernel, gamma)?,
        xv: xv.as_array().to_owned(),
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes: if n_out == 1 { 2 } else { n_out },
    };
    let x = instances(x)?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let scores = run(py, || {
        with_threads(n_jobs, || model.instance_decision_function(&x))?
    })?;
    Ok(scores.into_pyarray(py))
}
