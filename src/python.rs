//! The Python bindings (`milsvm._core`): all PyO3 code of the crate, behind the `python`
//! feature. Inputs are copied into owned buffers, the GIL is released around the work, every
//! core [`Error`] becomes `ValueError`, and a panic (a bug) becomes `RuntimeError` instead of
//! reaching Python as `BaseException`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::bags::{validate_bag_ptr, Bags, Csr, Instances};
use crate::error::Error;
use crate::kernel::{basis_gradient, kernel_bag_means, Basis, Kernel, Rows};
use crate::model::Model;
use crate::params::{with_threads, Gamma, KernelKind};
use crate::solver::{InnerSolver, SquaredHinge};
use crate::sparse_mi::SparseMiParams;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// Runs `f` without the GIL; a panic becomes `RuntimeError`.
fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            PyRuntimeError::new_err(format!("internal error in milsvm (please report): {msg}"))
        })?
        .map_err(PyErr::from)
}

fn to_usize(v: &[i64], what: &str) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| PyValueError::new_err(format!("{what} holds a negative value ({x})")))
        })
        .collect()
}

/// Instances from a dense 2-D float64 array or a CSR tuple `(data, indices, indptr, n_cols)`.
fn instances(obj: &Bound<'_, PyAny>) -> PyResult<Instances> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        let (data, indices, indptr, n_cols): (
            PyReadonlyArray1<f64>,
            PyReadonlyArray1<i64>,
            PyReadonlyArray1<i64>,
            usize,
        ) = t.extract()?;
        let indptr = to_usize(indptr.as_slice()?, "indptr")?;
        let n_rows = indptr.len().saturating_sub(1);
        let csr = Csr::new(
            n_rows,
            n_cols,
            indptr,
            to_usize(indices.as_slice()?, "indices")?,
            data.as_slice()?.to_vec(),
        )?;
        return Ok(Instances::Sparse(csr));
    }
    let x: PyReadonlyArray2<f64> = obj.extract()?;
    Ok(Instances::Dense(x.as_array().to_owned()))
}

fn bags(obj: &Bound<'_, PyAny>, bag_ptr: PyReadonlyArray1<i64>) -> PyResult<Bags> {
    Ok(Bags::new(
        instances(obj)?,
        to_usize(bag_ptr.as_slice()?, "bag_ptr")?,
    )?)
}

fn kernel_of(name: &str, gamma: f64) -> PyResult<Kernel> {
    match name {
        "rbf" if gamma.is_finite() && gamma > 0.0 => Ok(Kernel::Rbf { gamma }),
        "rbf" => Err(PyValueError::new_err(format!(
            "gamma must be a finite number > 0, got {gamma}"
        ))),
        "linear" => Ok(Kernel::Linear),
        _ => Err(PyValueError::new_err(format!(
            "kernel must be 'rbf' or 'linear', got {name:?}"
        ))),
    }
}

fn solver_of(name: &str) -> PyResult<InnerSolver> {
    match name {
        "newton" => Ok(InnerSolver::Newton),
        "lbfgs" => Ok(InnerSolver::Lbfgs),
        _ => Err(PyValueError::new_err(format!(
            "solver must be 'newton' or 'lbfgs', got {name:?}"
        ))),
    }
}

fn n_jobs_of(n_jobs: Option<i64>) -> PyResult<Option<usize>> {
    match n_jobs {
        None | Some(-1) => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as usize)),
        Some(n) => Err(PyValueError::new_err(format!(
            "n_jobs must be None, -1 or an integer >= 1, got {n}"
        ))),
    }
}

/// Fits SparseMI (RSVM with `max_iter=0`); returns a dict of fitted arrays and diagnostics.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, n_xv, c, kernel, gamma, max_iter, max_line_search, tol, solver, seed, n_jobs, inner_tol=None, init_xv=None, n_basis=None, init_basis=None))]
#[allow(clippy::too_many_arguments)]
fn fit_sparse_mi<'py>(
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
        ..SparseMiParams::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
    out.set_item("xv", fit.model.xv.into_pyarray(py))?;
    out.set_item("coef", fit.model.coef.into_pyarray(py))?;
    out.set_item("intercept", fit.model.intercept.into_pyarray(py))?;
    out.set_item("initial_xv", fit.initial_xv.into_pyarray(py))?;
    out.set_item("objective_history", fit.objective_history)?;
    out.set_item("n_iter", fit.n_iter)?;
    out.set_item("gamma", fit.gamma)?;
    out.set_item("inner_converged", fit.inner_converged)?;
    Ok(out)
}

/// Bag scores `(n_bags, n_outputs)` of the label-mean model `(xv, coef, intercept)`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, xv, coef, intercept, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
fn decision_function<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    xv: PyReadonlyArray2<f64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = Model {
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

/// Two arrays returned to Python.
type ArrayPair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// Kernel values `K (N x n_basis)` and bag means `M (n_bags x n_basis)`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, z, kernel, gamma, n_jobs=None))]
fn kernel_bag_means_py<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    z: PyReadonlyArray2<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<ArrayPair<'py>> {
    let kernel = kernel_of(kernel, gamma)?;
    let x = PyRows::new(x)?;
    let bag_ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
    validate_bag_ptr(&bag_ptr, x.rows().n_rows())?;
    check_cols(x.rows().n_cols(), z.as_array().ncols())?;
    let basis = Basis::direct(z.as_array().to_owned());
    let n_jobs = n_jobs_of(n_jobs)?;
    let rows = x.rows();
    let (k, m) = run(py, || {
        with_threads(n_jobs, || {
            kernel_bag_means(kernel, rows, &rows.sq_norms(), &bag_ptr, &basis)
        })
    })?;
    Ok((k.into_pyarray(py), m.into_pyarray(py)))
}

fn check_cols(d: usize, dz: usize) -> PyResult<()> {
    if d != dz {
        return Err(PyValueError::new_err(format!(
            "the basis has {dz} features, the instances have {d}"
        )));
    }
    Ok(())
}

/// `G (n_basis x d)`, `G_k = sum_p A_pk d k(x_p, z_k) / d z_k`, given `K = k(X, Z)`.
#[pyfunction]
#[pyo3(signature = (x, z, k, a, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
fn kernel_basis_grad<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    z: PyReadonlyArray2<f64>,
    k: PyReadonlyArray2<f64>,
    a: PyReadonlyArray2<f64>,
    kernel: &str,
    gamma: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kernel = kernel_of(kernel, gamma)?;
    let x = PyRows::new(x)?;
    let rows = x.rows();
    check_cols(rows.n_cols(), z.as_array().ncols())?;
    let (k, a) = (k.as_array(), a.as_array());
    let shape = (rows.n_rows(), z.as_array().nrows());
    if k.dim() != shape || a.dim() != shape {
        return Err(PyValueError::new_err(format!(
            "K and A must both have shape {shape:?}"
        )));
    }
    let basis = Basis::direct(z.as_array().to_owned());
    let n_jobs = n_jobs_of(n_jobs)?;
    let g = run(py, || {
        with_threads(n_jobs, || basis_gradient(kernel, rows, k, a, &basis))
    })?;
    Ok(g.into_pyarray(py))
}

/// Instance rows for the low-level kernel functions: a dense NumPy array is borrowed without a
/// copy (after a finiteness check); a CSR tuple is converted.
enum PyRows<'py> {
    View(PyReadonlyArray2<'py, f64>),
    Owned(Instances),
}

impl<'py> PyRows<'py> {
    fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if obj.cast::<PyTuple>().is_ok() {
            return Ok(PyRows::Owned(instances(obj)?));
        }
        let x: PyReadonlyArray2<f64> = obj.extract()?;
        if x.as_array().iter().any(|v| !v.is_finite()) {
            return Err(PyValueError::new_err(
                "the instances have a non-finite value (NaN or infinity)",
            ));
        }
        Ok(PyRows::View(x))
    }

    fn rows(&self) -> Rows<'_> {
        match self {
            PyRows::View(x) => Rows::Dense(x.as_array()),
            PyRows::Owned(x) => Rows::from(x),
        }
    }
}

/// Minimises `1/2 b^T K b + sum_r c_r max(0, 1 - y_r (X b + b0)_r)^2`; returns
/// `(beta, b, value, iterations, converged)`.
#[pyfunction]
#[pyo3(signature = (k, x, y, c, solver="newton", tol=1e-10, max_iter=1000, warm_beta=None, warm_b=0.0))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn solve_squared_hinge<'py>(
    py: Python<'py>,
    k: PyReadonlyArray2<f64>,
    x: PyReadonlyArray2<f64>,
    y: PyReadonlyArray1<f64>,
    c: PyReadonlyArray1<f64>,
    solver: &str,
    tol: f64,
    max_iter: usize,
    warm_beta: Option<PyReadonlyArray1<f64>>,
    warm_b: f64,
) -> PyResult<(Bound<'py, PyArray1<f64>>, f64, f64, usize, bool)> {
    let solver = solver_of(solver)?;
    let (k, x): (Array2<f64>, Array2<f64>) = (k.as_array().to_owned(), x.as_array().to_owned());
    let (y, c) = (y.as_slice()?.to_vec(), c.as_slice()?.to_vec());
    let warm: Option<Array1<f64>> = warm_beta.map(|w| w.as_array().to_owned());
    if k.nrows() != k.ncols()
        || x.ncols() != k.nrows()
        || y.len() != x.nrows()
        || c.len() != x.nrows()
    {
        return Err(PyValueError::new_err(
            "shapes must be K (n, n), X (r, n), y (r,), c (r,)",
        ));
    }
    let sol = run(py, || {
        let p = SquaredHinge {
            k: k.view(),
            x: x.view(),
            y: &y,
            c: &c,
        };
        p.solve(
            solver,
            warm.as_ref().map(|w| (w.view(), warm_b)),
            tol,
            max_iter,
        )
    })?;
    Ok((
        sol.beta.into_pyarray(py),
        sol.b,
        sol.value,
        sol.iterations,
        sol.converged,
    ))
}

/// `(J, dJ/dbeta, dJ/db)` of the squared-hinge problem at `(beta, b)` (for gradient checks).
#[pyfunction]
fn squared_hinge_value_grad<'py>(
    py: Python<'py>,
    k: PyReadonlyArray2<f64>,
    x: PyReadonlyArray2<f64>,
    y: PyReadonlyArray1<f64>,
    c: PyReadonlyArray1<f64>,
    beta: PyReadonlyArray1<f64>,
    b: f64,
) -> PyResult<(f64, Bound<'py, PyArray1<f64>>, f64)> {
    let (k, x, beta) = (k.as_array(), x.as_array(), beta.as_array());
    let (y, c) = (y.as_slice()?, c.as_slice()?);
    if k.nrows() != k.ncols()
        || x.ncols() != k.nrows()
        || y.len() != x.nrows()
        || c.len() != x.nrows()
        || beta.len() != k.nrows()
    {
        return Err(PyValueError::new_err(
            "shapes must be K (n, n), X (r, n), y (r,), c (r,), beta (n,)",
        ));
    }
    let p = SquaredHinge { k, x, y, c };
    let (v, gbeta, gb) = p.value_grad(beta, b);
    Ok((v, gbeta.into_pyarray(py), gb))
}

/// `(g, dg/dZ)` of SparseMI at the expansion vectors `z` (for gradient checks).
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, z, c, kernel, gamma, solver="newton", inner_tol=1e-12))]
#[allow(clippy::too_many_arguments)]
fn sparse_mi_objective<'py>(
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

/// The versioned JSON text of a label-mean model (the format `milsvm::Model::load` reads).
#[pyfunction]
#[pyo3(signature = (xv, coef, intercept, kernel, gamma, n_classes))]
fn model_to_json(
    xv: PyReadonlyArray2<f64>,
    coef: PyReadonlyArray2<f64>,
    intercept: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    n_classes: usize,
) -> PyResult<String> {
    let model = Model {
        kernel: kernel_of(kernel, gamma)?,
        xv: xv.as_array().to_owned(),
        coef: coef.as_array().to_owned(),
        intercept: intercept.as_array().to_owned(),
        n_classes,
    };
    Ok(model.to_json()?)
}

/// Reads model JSON; returns a dict with `xv, coef, intercept, kernel, gamma, n_classes`.
#[pyfunction]
fn model_from_json<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyDict>> {
    let model = Model::from_json(text)?;
    let out = PyDict::new(py);
    let (name, gamma) = match model.kernel {
        Kernel::Rbf { gamma } => ("rbf", gamma),
        Kernel::Linear => ("linear", 1.0),
    };
    out.set_item("kernel", name)?;
    out.set_item("gamma", gamma)?;
    out.set_item("n_classes", model.n_classes)?;
    out.set_item("xv", model.xv.into_pyarray(py))?;
    out.set_item("coef", model.coef.into_pyarray(py))?;
    out.set_item("intercept", model.intercept.into_pyarray(py))?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// MI-Kernel and RS (src/set_kernel.rs)
// ---------------------------------------------------------------------------------------------

/// The kernel family named `kernel` (`"rbf"` or `"linear"`).
fn set_kernel_kind(kernel: &str) -> PyResult<KernelKind> {
    match kernel {
        "rbf" => Ok(KernelKind::Rbf),
        "linear" => Ok(KernelKind::Linear),
        _ => Err(PyValueError::new_err(format!(
            "kernel must be 'rbf' or 'linear', got {kernel:?}"
        ))),
    }
}

/// Fits MI-Kernel (the squared-hinge SVM on the set kernel); returns a dict with `coef`
/// (`n_outputs x n_bags`), `intercept`, `support`, `n_xv`, `gamma`, `objective`,
/// `ridged_objective`, `n_iter`, `converged`.
#[pyfunction]
#[pyo3(signature = (x, bag_ptr, labels, *, c, kernel, gamma, solver, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn fit_mi_kernel<'py>(
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
        kernel: set_kernel_kind(kernel)?,
        gamma: gamma.map_or(Gamma::Scale, Gamma::Value),
        solver: solver_of(solver)?,
        n_jobs: n_jobs_of(n_jobs)?,
        ..Default::default()
    };
    let bags = bags(x, bag_ptr)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let fit = run(py, || params.fit(&bags, &labels))?;
    let out = PyDict::new(py);
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
fn mi_kernel_decision_function<'py>(
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
fn set_kernel_matrix<'py>(
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
fn fit_reduced_set<'py>(
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
        kernel: set_kernel_kind(kernel)?,
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
    out.set_item("xv", fit.model.xv.into_pyarray(py))?;
    out.set_item("coef", fit.model.coef.into_pyarray(py))?;
    out.set_item("intercept", fit.model.intercept.into_pyarray(py))?;
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

/// The compiled core of milsvm.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(fit_sparse_mi, m)?)?;
    m.add_function(wrap_pyfunction!(decision_function, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_bag_means_py, m)?)?;
    m.add("kernel_bag_means", m.getattr("kernel_bag_means_py")?)?;
    m.add_function(wrap_pyfunction!(kernel_basis_grad, m)?)?;
    m.add_function(wrap_pyfunction!(solve_squared_hinge, m)?)?;
    m.add_function(wrap_pyfunction!(sparse_mi_objective, m)?)?;
    m.add_function(wrap_pyfunction!(squared_hinge_value_grad, m)?)?;
    m.add_function(wrap_pyfunction!(model_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(model_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(fit_mi_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(mi_kernel_decision_function, m)?)?;
    m.add_function(wrap_pyfunction!(set_kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(fit_reduced_set, m)?)?;
    Ok(())
}
