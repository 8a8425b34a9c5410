//! Bindings of one fit over partitions of the bags (`milsvm.distributed.fit`): the partition
//! kernel `Partition`, built on a worker from its bags and answering one round per call, and
//! the driver `distributed_fit_annealing`, which runs the fit without the GIL and calls the
//! Python dispatcher (taking the GIL) once per round.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyTypeError;

use super::annealing::PyAnnealingFit;
use super::convert::params_from;
use super::run::panic_error;
use super::*;
use crate::annealing::distributed::{binary_problem, fit_distributed, PartitionLabels};
use crate::annealing::{AnnealingParams, AnnealingValidParams};
use crate::fit::ParamGuard;
use crate::solver::linear::Dispatch;

/// The checked parameters of an annealing-family fit from the estimator's dict.
fn annealing_params(params: &Bound<'_, PyDict>) -> PyResult<AnnealingValidParams> {
    let p: AnnealingParams = params_from(params)?;
    Ok(p.check()?)
}

/// One partition of a distributed fit, held by the worker that built it: the dense rows of its
/// bags (float32 or float64, read in place), their labels and the per-row state of the solve.
/// Its answers to the driver's rounds are `d`-vectors and scalars (`round`). It is never
/// pickled: a partition does not move.
#[pyclass(name = "Partition", module = "milsvm._core")]
pub(crate) struct PyPartition {
    inner: PartitionLabels,
    nbytes: usize,
}

#[pymethods]
impl PyPartition {
    /// The bags `lo, lo + 1, ...` of a data set of `n_bags` bags: their stacked rows `x`
    /// (C-contiguous float32 or float64), their row offsets `bag_ptr` (`m + 1`), and each bag's
    /// target (+1 / -1) and cost (`annealing_binary_problem`); `params` as for
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
        let x = instances(x)?;
        let nbytes = match &x {
            Instances::Dense32(_) => 4,
            _ => 8,
        } * x.n_rows()
            * x.n_features();
        let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
        let (targets, costs) = (targets.as_slice()?.to_vec(), costs.as_slice()?.to_vec());
        let inner = run(py, || {
            PartitionLabels::new(params, x, ptr, lo, n_bags, targets, costs)
        })?;
        Ok(Self { inner, nbytes })
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

/// Two float64 arrays.
type ArrayPair<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// The per-bag targets (+1 for class 1, else -1) and costs (`C` times the class weight) of
/// the binary problem of `labels` (class indices 0 and 1) under `params`.
#[pyfunction]
#[pyo3(signature = (labels, params: "Params"))]
pub(crate) fn annealing_binary_problem<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'py, PyDict>,
) -> PyResult<ArrayPair<'py>> {
    let params = annealing_params(params)?;
    crate::annealing::distributed::check_distributed(&params)?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let (targets, costs) = binary_problem(&params, &labels)?;
    Ok((targets.into_pyarray(py), costs.into_pyarray(py)))
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

/// The fit of an annealing method (linear, two classes) on bags held by partitions: the driver
/// runs the fit without the GIL and calls `dispatch(op, v, s)` once per round, which sends the
/// round to every `Partition` and returns their replies in partition order. `bag_ptr`: the
/// offsets of every bag in partition order; `labels`: their class indices; `gamma`: the width
/// the fit records. Returns what `fit_annealing` returns on the same bags.
#[pyfunction]
#[pyo3(signature = (dispatch, bag_ptr, labels, params: "Params", n_features, gamma))]
pub(crate) fn distributed_fit_annealing(
    py: Python<'_>,
    dispatch: Py<PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'_, PyDict>,
    n_features: usize,
    gamma: f64,
) -> PyResult<PyAnnealingFit> {
    let params = annealing_params(params)?;
    let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let mut link = PyDispatch {
        f: dispatch,
        failure: None,
    };
    let out = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            fit_distributed(&params, &mut link, &ptr, &labels, n_features, gamma)
        }))
    });
    if let Some(e) = link.failure.take() {
        return Err(e);
    }
    let fit = out.map_err(panic_error)?.map_err(PyErr::from)?;
    PyAnnealingFit::new(py, fit)
}

/// Adds the partition kernel and the driver to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPartition>()?;
    m.add_function(wrap_pyfunction!(annealing_binary_problem, m)?)?;
    m.add_function(wrap_pyfunction!(distributed_fit_annealing, m)?)
}
