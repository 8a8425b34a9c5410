//! Bindings of SIL and STK (`src/baselines.rs`).

use numpy::PyArrayMethods;
use pyo3::types::PyList;

use super::run::fit_call;
use super::set_kernel_svm::PySvmFit;
use super::*;
use crate::baselines::{SilParams, StkParams, StkValidParams};
use crate::fit::ParamGuard;
use crate::model::min_max_bags;

fit_bindings!(
    /// Fits SIL with the parameters of `params` (names as in `milsvm.SIL`).
    fit_sil,
    check_sil,
    fit_sil_hyperparameters,
    SilParams,
    PySvmFit,
    register_sil,
    path fit_sil_path
);

fit_bindings!(
    /// Fits STK with the parameters of `params` (names as in `milsvm.STK`).
    fit_stk,
    check_stk,
    fit_stk_hyperparameters,
    StkParams,
    PySvmFit,
    register_stk,
    path fit_stk_path
);

/// Fits STK on `bags`, a list of 2-D float64 or float32 arrays (one per bag), each read where
/// it lies (no stacked copy; [`StkValidParams::fit_statistics`]): the model of [`fit_stk`] on
/// the same bags stacked, bit for bit.
#[pyfunction]
#[pyo3(signature = (bags: "List[NDArray[Any]]", labels, params: "Params", progress: "Optional[Progress]" = None))]
fn fit_stk_bags(
    py: Python<'_>,
    bags: &Bound<'_, PyList>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'_, PyDict>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PySvmFit> {
    let c = fit_stk_list(py, bags, labels, params, None, progress)?.pop();
    PySvmFit::new(
        py,
        c.ok_or_else(|| PyValueError::new_err("the fit returned no model"))?,
    )
}

/// The `C` path of [`fit_stk_bags`]: one result per value of `cs`, in the order of `cs` (the
/// `C` of `params` is ignored), each equal to its own fit bit for bit.
#[pyfunction]
#[pyo3(signature = (bags: "List[NDArray[Any]]", labels, params: "Params", cs, progress: "Optional[Progress]" = None))]
fn fit_stk_bags_path(
    py: Python<'_>,
    bags: &Bound<'_, PyList>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'_, PyDict>,
    cs: Vec<f64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<PySvmFit>> {
    fit_stk_list(py, bags, labels, params, Some(cs), progress)?
        .into_iter()
        .map(|fit| PySvmFit::new(py, fit))
        .collect()
}

/// One bag of [`fit_stk_bags`]: an aligned float64 or float32 NumPy array, referenced while
/// the fit reads it in place, or the copy of an unaligned one.
enum BagArray<'py> {
    F64(Bound<'py, PyArray2<f64>>),
    F32(Bound<'py, PyArray2<f32>>),
    Copied(Instances),
}

/// Whether `p` is a valid address for a value of `T` (NumPy arrays can be unaligned views).
fn aligned<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(std::mem::align_of::<T>())
}

impl<'py> BagArray<'py> {
    /// Item `i` of the bag list, or a `TypeError` naming it.
    fn of(i: usize, obj: Bound<'py, PyAny>) -> PyResult<Self> {
        let obj = match obj.cast_into::<PyArray2<f64>>() {
            Ok(a) if aligned(a.data()) => return Ok(Self::F64(a)),
            Ok(a) => return Ok(Self::Copied(instances(a.as_any())?)),
            Err(e) => e.into_inner(),
        };
        match obj.cast_into::<PyArray2<f32>>() {
            Ok(a) if aligned(a.data()) => Ok(Self::F32(a)),
            Ok(a) => Ok(Self::Copied(instances(a.as_any())?)),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "bag {i} must be a 2-D float64 or float32 NumPy array"
            ))),
        }
    }

    /// The bag's values (any strides).
    fn rows(&self) -> Rows<'_> {
        match self {
            // SAFETY: the array's data is aligned (checked by `of`) and kept alive by this
            // reference for as long as the view; the binding's contract (as for every input of
            // a fit, see `convert::dense`) is that nothing writes to it while the fit reads it.
            Self::F64(a) => Rows::Dense(unsafe { a.as_array() }),
            // SAFETY: as above.
            Self::F32(a) => Rows::Dense32(unsafe { a.as_array() }),
            Self::Copied(x) => Rows::from(x),
        }
    }
}

/// What [`fit_stk_bags`] and its path share: the bags' statistic vectors ([`min_max_bags`],
/// which checks the values) and the fits on them, where the fit runs; `cs = None` is the one
/// `C` of `params`. The bags are read in place: a conversion per bag (a borrow record and a
/// reference owner each) would cost about as much as stacking them.
fn fit_stk_list(
    py: Python<'_>,
    bags: &Bound<'_, PyList>,
    labels: PyReadonlyArray1<i64>,
    params: &Bound<'_, PyDict>,
    cs: Option<Vec<f64>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<crate::baselines::PlainSvmFit>> {
    let arrays = bags
        .iter()
        .enumerate()
        .map(|(i, b)| BagArray::of(i, b))
        .collect::<PyResult<Vec<_>>>()?;
    fit_call::<StkParams, _, _>(
        py,
        params,
        progress,
        || {
            let rows: Vec<Rows<'_>> = arrays.iter().map(BagArray::rows).collect();
            Ok((rows, to_usize(labels.as_slice()?, "labels")?))
        },
        |p, (rows, labels)| {
            let p: &StkValidParams = p.check_ref()?;
            let cs = cs.unwrap_or_else(|| vec![*p.c()]);
            p.fit_statistics(min_max_bags(&rows)?, &labels, &cs)
        },
    )
}

/// Adds the SIL and STK fits to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_sil(m)?;
    register_stk(m)?;
    m.add_function(wrap_pyfunction!(fit_stk_bags, m)?)?;
    m.add_function(wrap_pyfunction!(fit_stk_bags_path, m)?)?;
    // the parameters of `fit_stk_bags` are STK's: its check is `check_stk`
    m.add("check_stk_bags", m.getattr("check_stk")?)
}
