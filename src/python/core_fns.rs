//! Bindings of the shared ground floor: kernel values, basis gradients and the squared-hinge
//! solver (`src/kernel/mod.rs`, `src/solver/mod.rs`), for tests and the reference benchmarks.

use super::*;
use crate::progress::StopReason;
use crate::smo::{DualArrays, InstanceGram, PrecomputedGram, Smo, SmoParams};

/// Two arrays returned to Python.
type ArrayPair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// The checked `(scores, targets)` of the sMIL bag-score functions: equal lengths, finite
/// scores; targets `> 0` for the positive bags.
fn scores_and_targets(scores: &[f64], targets: &[f64]) -> PyResult<()> {
    if scores.len() != targets.len() {
        return Err(PyValueError::new_err(format!(
            "scores has {} entries, targets {}",
            scores.len(),
            targets.len()
        )));
    }
    if scores.iter().chain(targets).any(|v| !v.is_finite()) {
        return Err(PyValueError::new_err("scores and targets must be finite"));
    }
    Ok(())
}

/// The ROC AUC of bag scores, ties counted 1/2 ([`crate::set_kernel_svm::bag_auc`]; targets
/// `> 0` positive).
#[pyfunction]
pub(crate) fn bag_auc(
    scores: PyReadonlyArray1<f64>,
    targets: PyReadonlyArray1<f64>,
) -> PyResult<f64> {
    let (s, t) = (scores.as_slice()?, targets.as_slice()?);
    scores_and_targets(s, t)?;
    Ok(crate::set_kernel_svm::bag_auc(s, t))
}

/// sMIL's `bag_score="auto"` choice on one binary problem's out-of-fold plain means `oof`, the
/// bags' `sizes` and `targets` (`> 0` positive): `(keep_shift, t)`, `keep_shift` the choice
/// ([`crate::set_kernel_svm::smil_auto_keeps_shift`]) and `t` Platt's threshold of `oof`
/// ([`crate::set_kernel_svm::smil_platt_threshold`]), the plain mean's candidate threshold; the
/// library's rule for the benchmarks.
#[pyfunction]
pub(crate) fn smil_auto_rule(
    oof: PyReadonlyArray1<f64>,
    sizes: PyReadonlyArray1<f64>,
    targets: PyReadonlyArray1<f64>,
) -> PyResult<(bool, f64)> {
    let (o, n, t) = (oof.as_slice()?, sizes.as_slice()?, targets.as_slice()?);
    scores_and_targets(o, t)?;
    if n.len() != o.len() || n.iter().any(|&v| !(v >= 1.0 && v.is_finite())) {
        return Err(PyValueError::new_err(
            "sizes must have one entry (a count >= 1) per score",
        ));
    }
    let keep = crate::set_kernel_svm::smil_auto_keeps_shift(&[o.to_vec()], n, &[t.to_vec()])?;
    Ok((keep, crate::set_kernel_svm::smil_platt_threshold(o, t)?))
}

/// Kernel values `K (N x n_basis)` and bag means `M (n_bags x n_basis)`.
#[pyfunction]
#[pyo3(signature = (x: "Instances", bag_ptr, z, kernel, gamma, n_jobs=None))]
pub(crate) fn kernel_bag_means_py<'py>(
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
        on_threads(n_jobs, || {
            kernel_bag_means(kernel, rows, &rows.sq_norms(), &bag_ptr, &basis)
        })
    })?;
    Ok((k.into_pyarray(py), m.into_pyarray(py)))
}

/// `G (n_basis x d)`, `G_k = sum_p A_pk d k(x_p, z_k) / d z_k`, given `K = k(X, Z)`.
#[pyfunction]
#[pyo3(signature = (x: "Instances", z, k, a, kernel, gamma, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn kernel_basis_grad<'py>(
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
        on_threads(n_jobs, || basis_gradient(kernel, rows, k, a, &basis))
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
pub(crate) fn solve_squared_hinge<'py>(
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
    let sol = run_default(py, || {
        let p = SquaredHinge {
            k: k.view(),
            x: x.view(),
            y: &y,
            c: &c,
            c_opp: &[],
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
pub(crate) fn squared_hinge_value_grad<'py>(
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
    let p = SquaredHinge {
        k,
        x,
        y,
        c,
        c_opp: &[],
    };
    let (v, gbeta, gb) = p.value_grad(beta, b);
    Ok((v, gbeta.into_pyarray(py), gb))
}

/// One dual QP `min 1/2 a^T (Q + diag d) a - p^T a, y^T a = delta, 0 <= a <= u` with
/// `Q_ij = y_i y_j K(m_i, m_j)`, solved by the SMO of `src/smo/`. `x` is the kernel matrix
/// over the points when `kernel == "precomputed"`, else the points themselves (dense or a CSR
/// tuple) with the instance kernel `kernel` / `gamma`: its whole matrix stored when dense and at
/// most `store_mb` (as every fit does, up to [`crate::smo::STORE_MAX_BYTES`]), else rows
/// computed on demand, in parallel. Returns a dict: `alpha`, `q_alpha`, `b`, `objective`,
/// `iterations`, `converged`, `kernel_rows` (rows computed on demand).
#[pyfunction]
#[pyo3(signature = (x: "Instances", y, u, *, kernel="precomputed", gamma=1.0, p=None, d=None, point=None, delta=0.0, tol=1e-3, shrinking=true, cache_mb=200.0, store_mb=128.0, max_iter=None, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_dual<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<f64>,
    u: PyReadonlyArray1<f64>,
    kernel: &str,
    gamma: f64,
    p: Option<PyReadonlyArray1<f64>>,
    d: Option<PyReadonlyArray1<f64>>,
    point: Option<PyReadonlyArray1<i64>>,
    delta: f64,
    tol: f64,
    shrinking: bool,
    cache_mb: f64,
    store_mb: f64,
    max_iter: Option<usize>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let y = y.as_slice()?.to_vec();
    let n = y.len();
    let u = u.as_slice()?.to_vec();
    let p = match p {
        Some(p) => p.as_slice()?.to_vec(),
        None => vec![1.0; n],
    };
    let d = match d {
        Some(d) => d.as_slice()?.to_vec(),
        None => vec![0.0; n],
    };
    let point = match point {
        Some(m) => to_usize(m.as_slice()?, "point")?,
        None => (0..n).collect(),
    };
    for (name, mb) in [("cache_mb", cache_mb), ("store_mb", store_mb)] {
        if !(mb.is_finite() && mb >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "{name} must be a finite number >= 0, got {mb}"
            )));
        }
    }
    let params = SmoParams {
        tol,
        max_iter,
        shrinking,
        cache_bytes: (cache_mb * 1048576.0) as usize,
    };
    let n_jobs = n_jobs_of(n_jobs)?;
    let arrays = DualArrays {
        y,
        point,
        p,
        d,
        u,
        delta,
    };
    let problem = arrays.view();
    let (sol, rows) = if kernel == "precomputed" {
        let k: PyReadonlyArray2<f64> = x.extract()?;
        let kv = k.as_array();
        run(py, || {
            on_threads(n_jobs, || -> Result<_, Error> {
                let gram = PrecomputedGram::from_view(kv)?;
                let mut smo = Smo::new(&gram, params)?;
                let sol = smo.solve(&problem, None)?;
                Ok((sol, smo.kernel_rows_computed()))
            })?
        })?
    } else {
        let kernel = kernel_of(kernel, gamma)?;
        let x = instances(x)?;
        run(py, || {
            on_threads(n_jobs, || -> Result<_, Error> {
                let gram = InstanceGram::new(kernel, Rows::from(&x))?
                    .with_store_limit((store_mb * 1048576.0) as usize);
                let mut smo = Smo::new(&gram, params)?;
                let sol = smo.solve(&problem, None)?;
                Ok((sol, smo.kernel_rows_computed()))
            })?
        })?
    };
    let out = PyDict::new(py);
    out.set_item("converged", sol.termination == StopReason::Converged)?;
    out.set_item("alpha", sol.alpha.into_pyarray(py))?;
    out.set_item("q_alpha", sol.q_alpha.into_pyarray(py))?;
    out.set_item("b", sol.b)?;
    out.set_item("objective", sol.objective)?;
    out.set_item("iterations", sol.iterations)?;
    out.set_item("kernel_rows", rows)?;
    Ok(out)
}

/// The width `gamma` (`"scale"`, `"median"` or a number > 0) resolves to on the instances `x`
/// (a 2-D float64 array or a CSR tuple), as every fit resolves it.
#[pyfunction]
#[pyo3(signature = (x: "Instances", gamma: "Union[str, float]"))]
pub(crate) fn kernel_width(x: &Bound<'_, PyAny>, gamma: &Bound<'_, PyAny>) -> PyResult<f64> {
    use crate::params::{ParamType, Range};
    let value = value_of(gamma)?;
    let g = Gamma::from_value(&value).map_err(|r| PyErr::from(r.into_error("gamma", &value)))?;
    g.check_range("gamma", &Range::Positive, false)?;
    Ok(g.resolve(&instances(x)?))
}

/// The rows the linear solver's passes have read in this process so far (a counter that only
/// grows): the difference over a fit, divided by the rows, is the number of passes over the
/// data, for the benchmarks of the passes against the machine's read bandwidth.
#[pyfunction]
pub(crate) fn linear_rows_read() -> u64 {
    crate::solver::linear::rows_read()
}

/// Adds the ground-floor functions (kernels, solvers, the kernel width) to the module, and the
/// default tolerances of the inner solvers (`inner_tol=None`) and the margin of sMIL's auto
/// bag score, which the docstrings quote.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NEWTON_TOL", InnerSolver::Newton.default_tol())?;
    m.add(
        "SMIL_AUTO_AUC_MARGIN",
        crate::set_kernel_svm::SMIL_AUTO_AUC_MARGIN,
    )?;
    m.add("LBFGS_TOL", InnerSolver::Lbfgs.default_tol())?;
    m.add("LINEAR_TOL", crate::solver::linear::LINEAR_TOL)?;
    m.add_function(wrap_pyfunction!(kernel_bag_means_py, m)?)?;
    m.add_function(wrap_pyfunction!(bag_auc, m)?)?;
    m.add_function(wrap_pyfunction!(smil_auto_rule, m)?)?;
    m.add("kernel_bag_means", m.getattr("kernel_bag_means_py")?)?;
    m.add_function(wrap_pyfunction!(kernel_basis_grad, m)?)?;
    m.add_function(wrap_pyfunction!(solve_squared_hinge, m)?)?;
    m.add_function(wrap_pyfunction!(squared_hinge_value_grad, m)?)?;
    m.add_function(wrap_pyfunction!(solve_dual, m)?)?;
    m.add_function(wrap_pyfunction!(linear_rows_read, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_width, m)?)
}
