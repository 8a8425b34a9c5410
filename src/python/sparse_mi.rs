//! Bindings of SparseMI and RSVM (`src/sparse_mi.rs`).

use super::*;
use crate::sparse_mi::{sparse_mi_fit_fields, SparseMiFit, SparseMiParams};

sparse_mi_fit_fields!(fit_record! {
    /// A fitted SparseMI / RSVM (the Rust [`SparseMiFit`]).
    "SparseMiFit" PySparseMiFit
});

fit_bindings!(
    /// Fits SparseMI (RSVM with `max_iter=0`) with the parameters of `params` (names as in
    /// `milsvm.SparseMI`, plus `seed`, `init_xv`, `init_basis`).
    fit_sparse_mi,
    check_sparse_mi,
    fit_sparse_mi_hyperparameters,
    SparseMiParams,
    PySparseMiFit,
    register_fit,
    path fit_sparse_mi_path
);

/// Adds the SparseMI fit and its objective to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fit(m)?;
    m.add_function(wrap_pyfunction!(sparse_mi_objective, m)?)
}

/// `(g, dg/dZ)` of SparseMI at the expansion vectors `z` (for gradient checks).
#[pyfunction]
#[pyo3(signature = (x: "Instances", bag_ptr, labels, z, c, kernel, gamma, solver="newton", inner_tol=1e-12))]
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
    let z = z.as_array().to_owned();
    let mut params = SparseMiParams::new()
        .n_xv(z.nrows())
        .c(c)
        .gamma(Gamma::Value(gamma))
        .inner_tol(Some(inner_tol));
    params.set("kernel", &Value::Str(kernel.into()))?;
    params.set("solver", &Value::Str(solver.into()))?;
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    check_cols(bags.n_features(), z.ncols())?;
    let (g, grad) = run_default(py, || {
        crate::sparse_mi::objective_and_gradient(&params, &bags, &labels, z)
    })?;
    Ok((g, grad.into_pyarray(py)))
}
