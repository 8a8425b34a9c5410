//! Bindings of one fit over partitions of the bags (`milsvm.distributed.fit`): the partition
//! kernel `Partition`, built on a worker from its bags and answering one round per call, and
//! the driver `distributed_fit` (the annealing methods, SparseMI / RSVM), which runs the fit
//! without the GIL and calls the Python dispatcher (taking the GIL) once per round.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyTypeError;

use super::annealing::PyAnnealingFit;
use super::convert::params_from;
use super::run::panic_error;
use super::sparse_mi::PySparseMiFit;
use super::*;
use crate::annealing::distributed::{binary_problem, fit_distributed, PartitionLabels};
use crate::annealing::{AnnealingParams, AnnealingValidParams};
use crate::fit::ParamGuard;
use crate::solver::linear::{Answer, Dispatch};
use crate::sparse_mi::distributed::{problem_costs, SparsePartition};
use crate::sparse_mi::{SparseMiParams, SparseMiValidParams};

/// The checked parameters of an annealing-family fit from the estimator's dict.
fn annealing_params(params: &Bound<'_, PyDict>) -> PyResult<AnnealingValidParams> {
    let p: AnnealingParams = params_from(params)?;
    Ok(p.check()?)
}

/// The checked parameters of a SparseMI / RSVM fit from the estimator's dict.
fn sparse_mi_params(params: &Bound<'_, PyDict>) -> PyResult<SparseMiValidParams> {
    let p: SparseMiParams = params_from(params)?;
    Ok(p.check()?)
}

/// One partition of a distributed fit, held by the worker that built it: the dense rows of its
/// bags (float32 or float64, read in place), their labels and the per-row state of the solve.
/// Its answers to the driver's rounds are vectors and scalars (`round`). It is never
/// pickled: a partition does not move.
#[pyclass(name = "Partition", module = "milsvm._core")]
pub(crate) struct PyPartition {
    inner: Box<dyn Answer>,
    nbytes: usize,
}

impl PyPartition {
    /// The partition of the rows `x` with offsets `bag_ptr` that `make` builds from them.
    fn build(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        make: impl FnOnce(Instances, Vec<usize>) -> crate::error::Result<Box<dyn Answer>> + Send,
    ) -> PyResult<Self> {
        let x = instances(x)?;
        let nbytes = rows_nbytes(&x);
        let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
        let inner = run(py, || make(x, ptr))?;
        Ok(Self { inner, nbytes })
    }
}

/// The bytes of the rows `x`.
fn rows_nbytes(x: &Instances) -> usize {
    let width = match x {
        Instances::Dense32(_) => 4,
        _ => 8,
    };
    width * x.n_rows() * x.n_features()
}

#[pymethods]
impl PyPartition {
    /// The bags `lo, lo + 1, ...` of a data set of `n_bags` bags: their stacked rows `x`
    /// (C-contiguous float32 or float64), their row offsets `bag_ptr` (`m + 1`), and each bag's
    /// target (+1 / -1) and cost (`distributed_problems`); `params` as for
    /// `fit_annealing`.
    #[new]
    #[pyo3(signature = (x: "Instances", bag_ptr, lo, n_bags, targets, costs, params: "Params"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        lo: usize,
        n_bags: usize,
        targets: PyReadonlyArray1<f64>,
        costs: PyReadonlyArray1<f64>,
        params: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let params = annealing_params(params)?;
        let (targets, costs) = (targets.as_slice()?.to_vec(), costs.as_slice()?.to_vec());
        Self::build(py, x, bag_ptr, move |x, ptr| {
            let p = PartitionLabels::new(params, x, ptr, lo, n_bags, targets, costs)?;
            Ok(Box::new(p) as Box<dyn Answer>)
        })
    }

    /// The partition of a SparseMI / RSVM fit: of the rows `x` with offsets `bag_ptr`, `at` =
    /// `(lo, n_bags, first_row)`: its bags are `lo, lo + 1, ...` of `n_bags`, its first row
    /// the data set's row `first_row`; `problems`: per problem (rows) each bag's target, and
    /// its cost (`distributed_problems`). The driver sends the kernel width first.
    #[staticmethod]
    #[pyo3(signature = (x: "Instances", bag_ptr, at, problems, params: "Params"))]
    fn sparse_mi(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        at: (usize, usize, usize),
        problems: (PyReadonlyArray2<f64>, PyReadonlyArray2<f64>),
        params: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let params = sparse_mi_params(params)?;
        let rows = |a: PyReadonlyArray2<f64>| -> Vec<Vec<f64>> {
            a.as_array()
                .rows()
                .into_iter()
                .map(|r| r.to_vec())
                .collect()
        };
        let (targets, costs) = (rows(problems.0), rows(problems.1));
        Self::build(py, x, bag_ptr, move |x, ptr| {
            let p = SparsePartition::new(&params, x, ptr, at, targets, costs)?;
            Ok(Box::new(p) as Box<dyn Answer>)
        })
    }

    /// Answers the round `op` with the vector `v` and the scalars `s`: this partition's part
    /// of the round's sums (tree nodes, flattened), or its counts.
    #[pyo3(signature = (op, v, s))]
    fn round<'py>(
        &mut self,
        py: Python<'py>,
        op: &str,
        v: PyReadonlyArray1<f64>,
        s: Vec<f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let v = v.as_slice()?.to_vec();
        let inner = &mut self.inner;
        let out = run(py, || inner.answer(op, &v, &s))?;
        Ok(out.into_pyarray(py))
    }

    /// The bytes of the rows held (what Dask would have to move to run a round elsewhere).
    fn __sizeof__(&self) -> usize {
        self.nbytes
    }

    /// Refused: a partition stays on the worker that built it.
    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "a milsvm Partition stays on the worker that built it and cannot be pickled",
        ))
    }
}

/// Two float64 matrices.
type MatrixPair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// The targets (+1 / -1) and costs (`C` times the class weight) of every bag of the problems of
/// a distributed fit of `family` (as `distributed_fit`) on `labels` (class indices) under
/// `params`, one row per problem: the annealing methods' one binary problem (class 1
/// positive); SparseMI's / RSVM's one problem for two classes, one per class for more.
#[pyfunction]
#[pyo3(signature = (family, labels, params: "Params"))]
pub(crate) fn distributed_problems<'py>(
    py: Python<'py>,
    family: &str,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'py, PyDict>,
) -> PyResult<MatrixPair<'py>> {
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let (targets, costs) = match family_params(family, params)? {
        Family::Annealing(p) => {
            crate::annealing::distributed::check_distributed(&p)?;
            let (t, c) = binary_problem(&p, &labels)?;
            (vec![t], vec![c])
        }
        Family::SparseMi(p) => {
            crate::sparse_mi::distributed::check_distributed(&p)?;
            problem_costs(&p, &labels, labels.len())?
        }
    };
    let matrix = |t: Vec<Vec<f64>>| {
        let (r, c) = (t.len(), t.first().map_or(0, Vec::len));
        ndarray::Array2::from_shape_vec((r, c), t.concat()).map_err(|e| {
            PyErr::from(Error::InvalidData(format!(
                "problems of unequal length: {e}"
            )))
        })
    };
    Ok((
        matrix(targets)?.into_pyarray(py),
        matrix(costs)?.into_pyarray(py),
    ))
}

/// The Python dispatcher: `dispatch(op, v, s)` returns one float64 array per partition, in
/// partition order. Its first exception is kept, to be raised after the fit stops.
struct PyDispatch {
    f: Py<PyAny>,
    failure: Option<PyErr>,
}

impl Dispatch for PyDispatch {
    fn round(&mut self, op: &str, v: &[f64], s: &[f64]) -> crate::error::Result<Vec<Vec<f64>>> {
        let out = Python::attach(|py| -> PyResult<Vec<Vec<f64>>> {
            let v = PyArray1::from_slice(py, v);
            let replies = self.f.call1(py, (op, v, s.to_vec()))?;
            let arrays: Vec<PyReadonlyArray1<f64>> = replies.extract(py)?;
            arrays.iter().map(|a| Ok(a.as_slice()?.to_vec())).collect()
        });
        out.map_err(|e| {
            self.failure.get_or_insert(e);
            Error::Cancelled
        })
    }
}

/// The parameters of a distributed fit, by family.
enum Family {
    Annealing(AnnealingValidParams),
    SparseMi(SparseMiValidParams),
}

/// The checked parameters of `family` (`"annealing"` or `"sparse_mi"`) from `params`.
fn family_params(family: &str, params: &Bound<'_, PyDict>) -> PyResult<Family> {
    match family {
        "annealing" => Ok(Family::Annealing(annealing_params(params)?)),
        "sparse_mi" => Ok(Family::SparseMi(sparse_mi_params(params)?)),
        _ => Err(PyValueError::new_err(format!(
            "family must be 'annealing' or 'sparse_mi', got {family:?}"
        ))),
    }
}

/// A distributed fit's result, by family.
enum Fitted {
    Annealing(crate::annealing::AnnealingFit),
    SparseMi(crate::sparse_mi::SparseMiFit),
}

/// The fit of `family` on bags held by partitions: `"annealing"` (an annealing method, linear,
/// two classes; partitions `Partition(...)`) or `"sparse_mi"` (SparseMI / RSVM, direct mode;
/// partitions `Partition.sparse_mi(...)`). The driver runs the fit without the GIL and calls
/// `dispatch(op, v, s)` once per round, which sends the round to every partition and returns
/// their replies in partition order. `bag_ptr`: the offsets of every bag in partition order;
/// `labels`: their class indices; `gamma`: the width resolved for them. Returns what
/// `fit_annealing` / `fit_sparse_mi` returns on the same bags.
#[pyfunction]
#[pyo3(signature = (family, dispatch, bag_ptr, labels, params: "Params", n_features, gamma))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn distributed_fit(
    py: Python<'_>,
    family: &str,
    dispatch: Py<PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'_, PyDict>,
    n_features: usize,
    gamma: f64,
) -> PyResult<Py<PyAny>> {
    let family = family_params(family, params)?;
    let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let mut link = PyDispatch {
        f: dispatch,
        failure: None,
    };
    let out = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| match &family {
            Family::Annealing(p) => fit_distributed(p, &mut link, &ptr, &labels, n_features, gamma)
                .map(Fitted::Annealing),
            Family::SparseMi(p) => crate::sparse_mi::distributed::fit_distributed(
                p, &mut link, &ptr, &labels, n_features, gamma,
            )
            .map(Fitted::SparseMi),
        }))
    });
    if let Some(e) = link.failure.take() {
        return Err(e);
    }
    Ok(match out.map_err(panic_error)?.map_err(PyErr::from)? {
        Fitted::Annealing(fit) => Py::new(py, PyAnnealingFit::new(py, fit)?)?.into_any(),
        Fitted::SparseMi(fit) => Py::new(py, PySparseMiFit::new(py, fit)?)?.into_any(),
    })
}

/// Adds the partition kernel and the driver to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPartition>()?;
    m.add_function(wrap_pyfunction!(distributed_problems, m)?)?;
    m.add_function(wrap_pyfunction!(distributed_fit, m)?)
}
