//! Bindings of one fit over partitions of the bags (`milsvm.distributed.fit`): the partition
//! kernel `Partition`, built on a worker from its bags and answering one numbered round per
//! call, and the driver `distributed_fit` (the annealing methods, SparseMI / RSVM), which runs
//! the fit without the GIL and calls the Python dispatcher (taking the GIL) once per round. A
//! partition lost with its worker is restored by replaying the rounds that changed its state
//! ([`Recovering`]), and the fit goes on.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyTypeError;

use super::annealing::PyAnnealingFit;
use super::convert::params_from;
use super::run::{observer_of, panic_error, Failure};
use super::sparse_mi::PySparseMiFit;
use super::*;
use crate::annealing::distributed::{binary_problem, fit_distributed, PartitionLabels};
use crate::annealing::{AnnealingParams, AnnealingValidParams};
use crate::fit::ParamGuard;
use crate::params::Hyperparams;
use crate::progress::{Cancel, Observer};
use crate::solver::linear::{Answer, Link, Logged, Recovering, Sequenced};
use crate::sparse_mi::distributed::{problem_costs, SparsePartition};
use crate::sparse_mi::{SparseMiParams, SparseMiValidParams};

/// The checked parameters of an annealing-family fit from the estimator's dict, reporting
/// to `observer` (if any).
fn annealing_params(
    params: &Bound<'_, PyDict>,
    observer: Option<Observer>,
) -> PyResult<AnnealingValidParams> {
    let mut p: AnnealingParams = params_from(params)?;
    if let Some(o) = observer {
        p.set_observer(o);
    }
    Ok(p.check()?)
}

/// The checked parameters of a SparseMI / RSVM fit from the estimator's dict, reporting to
/// `observer` (if any).
fn sparse_mi_params(
    params: &Bound<'_, PyDict>,
    observer: Option<Observer>,
) -> PyResult<SparseMiValidParams> {
    let mut p: SparseMiParams = params_from(params)?;
    if let Some(o) = observer {
        p.set_observer(o);
    }
    Ok(p.check()?)
}

/// One partition of a distributed fit, held by the worker that built it: the dense rows of its
/// bags (float32 or float64, read in place), their labels and the per-row state of the solve.
/// Its answers to the driver's rounds are vectors and scalars (`round`). It is never
/// pickled: a partition does not move. It numbers the rounds it answers: one sent again is
/// answered from its last reply, and one rebuilt from its bags (its worker was lost) says so
/// until `restore` has replayed the fit's rounds on it.
#[pyclass(name = "Partition", module = "milsvm._core")]
pub(crate) struct PyPartition {
    inner: Sequenced<Box<dyn Answer>>,
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
        let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
        let inner = Sequenced::new(run(py, || make(x, ptr))?);
        Ok(Self { inner })
    }
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
        let params = annealing_params(params, None)?;
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
        let params = sparse_mi_params(params, None)?;
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
    /// of the round's sums (tree nodes, flattened), or its counts. `seq`: the round's number
    /// in the fit (from 0); `None` for a round outside the fit that only reads the state
    /// (`fold_values`). Returns `None` when the partition holds no state of the fit past its
    /// round 0 (it was rebuilt: `restore` it).
    #[pyo3(signature = (op, v, s, seq=None))]
    fn round<'py>(
        &mut self,
        py: Python<'py>,
        op: &str,
        v: PyReadonlyArray1<f64>,
        s: Vec<f64>,
        seq: Option<u64>,
    ) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
        let v = v.as_slice()?.to_vec();
        let inner = &mut self.inner;
        let out = run(py, || match seq {
            Some(seq) => inner.answer_at(seq, op, &v, &s),
            None => inner.query(op, &v, &s).map(Some),
        })?;
        Ok(out.map(|o| o.into_pyarray(py)))
    }

    /// Brings a rebuilt partition to its state before round `seq` of the fit: `log` holds the
    /// rounds before it that changed the state, `(op, v, s)` in order, which it replays. A
    /// partition that holds that state already is left as it is.
    #[pyo3(signature = (seq, log))]
    fn restore(
        &mut self,
        py: Python<'_>,
        seq: u64,
        log: Vec<(String, PyReadonlyArray1<f64>, Vec<f64>)>,
    ) -> PyResult<()> {
        let log = log
            .into_iter()
            .map(|(op, v, s)| {
                Ok(Logged {
                    op,
                    v: v.as_slice()?.to_vec(),
                    s,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let inner = &mut self.inner;
        run(py, || inner.restore(seq, &log))
    }

    /// The bytes held: the rows (or, after SparseMI's round `basis`, their products with the
    /// basis vectors) and the fit's state, what Dask counts for the partition on its worker.
    fn __sizeof__(&self) -> usize {
        self.inner.held_bytes()
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
    let (targets, costs) = match family_params(family, params, None)? {
        Family::Annealing(p) => {
            crate::annealing::distributed::check_distributed(&p)?;
            let (t, c) = binary_problem(&p, &labels)?;
            (vec![t], vec![c])
        }
        Family::SparseMi(p) => problem_costs(&p, &labels, labels.len())?,
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

/// The Python dispatcher: `dispatch(seq, op, v, s)` returns one float64 array per partition,
/// in partition order; `dispatch.restore(parts, seq, log)` sends the restore round. An
/// exception with a `partitions` attribute (`PartitionLost`) names lost partitions; it is kept
/// until they are restored. Any other first exception is kept, to be raised after the fit
/// stops.
struct PyLink {
    f: Py<PyAny>,
    failure: Option<PyErr>,
    lost: Option<Vec<usize>>,
    lost_error: Option<PyErr>,
}

impl PyLink {
    /// Keeps the exception `e` of a call: lost partitions, or the fit's failure.
    fn fail(&mut self, py: Python<'_>, e: PyErr) -> Error {
        let parts = e
            .value(py)
            .getattr("partitions")
            .and_then(|p| p.extract::<Vec<usize>>());
        match parts {
            Ok(parts) if !parts.is_empty() => {
                self.lost = Some(parts);
                self.lost_error = Some(e);
            }
            _ => {
                self.failure.get_or_insert(e);
            }
        }
        Error::Cancelled
    }
}

impl Link for PyLink {
    fn round(
        &mut self,
        seq: u64,
        op: &str,
        v: &[f64],
        s: &[f64],
    ) -> crate::error::Result<Vec<Vec<f64>>> {
        Python::attach(|py| {
            let out = (|| -> PyResult<Vec<Vec<f64>>> {
                let v = PyArray1::from_slice(py, v);
                let replies = self.f.call1(py, (seq, op, v, s.to_vec()))?;
                let arrays: Vec<PyReadonlyArray1<f64>> = replies.extract(py)?;
                arrays.iter().map(|a| Ok(a.as_slice()?.to_vec())).collect()
            })();
            out.map_err(|e| self.fail(py, e))
        })
    }

    fn lost(&mut self) -> Option<Vec<usize>> {
        self.lost.take()
    }

    fn restore(&mut self, parts: &[usize], seq: u64, log: &[Logged]) -> crate::error::Result<()> {
        Python::attach(|py| {
            let out = (|| -> PyResult<()> {
                let log: Vec<_> = log
                    .iter()
                    .map(|r| (r.op.as_str(), PyArray1::from_slice(py, &r.v), r.s.clone()))
                    .collect();
                self.f
                    .call_method1(py, "restore", (parts.to_vec(), seq, log))?;
                Ok(())
            })();
            match out {
                Ok(()) => {
                    self.lost_error = None;
                    Ok(())
                }
                Err(e) => Err(self.fail(py, e)),
            }
        })
    }
}

/// The parameters of a distributed fit, by family.
enum Family {
    Annealing(AnnealingValidParams),
    SparseMi(SparseMiValidParams),
}

/// The checked parameters of `family` (`"annealing"` or `"sparse_mi"`) from `params`,
/// reporting to `observer` (if any).
fn family_params(
    family: &str,
    params: &Bound<'_, PyDict>,
    observer: Option<Observer>,
) -> PyResult<Family> {
    match family {
        "annealing" => Ok(Family::Annealing(annealing_params(params, observer)?)),
        "sparse_mi" => Ok(Family::SparseMi(sparse_mi_params(params, observer)?)),
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
/// two classes; partitions `Partition(...)`) or `"sparse_mi"` (SparseMI / RSVM, direct or
/// basis-vector mode; partitions `Partition.sparse_mi(...)`). The driver runs the fit without
/// the GIL and calls `dispatch(seq, op, v, s)` once per round (numbered from 0), which sends the
/// round to every partition and returns their replies in partition order. When it raises
/// `PartitionLost` naming partitions (their worker was lost, Dask rebuilt them), the driver
/// calls `dispatch.restore(parts, seq, log)` (one restore round: those partitions replay `log`,
/// the rounds that changed their state) and sends the round again, at most `retries` times in
/// the fit; beyond, the `PartitionLost` is raised. `bag_ptr`: the offsets of every bag in
/// partition order; `labels`: their class indices; `gamma`: the width resolved for them;
/// `progress` as for `fit_annealing` (an exception it raises stops the fit and is raised).
/// Returns what `fit_annealing` / `fit_sparse_mi` returns on the same bags.
#[pyfunction]
#[pyo3(signature = (family, dispatch, bag_ptr, labels, params: "Params", n_features, gamma, retries, progress: "Optional[Progress]" = None))]
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
    retries: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let failure: Failure = Failure::default();
    let observer = observer_of(progress, Cancel::new(), failure.clone());
    let family = family_params(family, params, Some(observer))?;
    let ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
    let labels = to_usize(labels.as_slice()?, "labels")?;
    let link = PyLink {
        f: dispatch,
        failure: None,
        lost: None,
        lost_error: None,
    };
    let mut link = Recovering::new(link, retries);
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
    let link = link.link();
    let callback_failure = failure.lock().ok().and_then(|mut slot| slot.take());
    if let Some(e) = link.failure.take().or(callback_failure) {
        return Err(e);
    }
    let out = out.map_err(panic_error)?;
    if let (Err(_), Some(e)) = (&out, link.lost_error.take()) {
        return Err(e);
    }
    Ok(match out.map_err(PyErr::from)? {
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
