//! `milsvm._core.Model`: the fitted model form (`src/model/`) as one compiled Python object.
//! Every estimator holds one; prediction, `save` and the Rust side all go through it, and its
//! arrays are read-only views of the Rust buffers.

use std::path::PathBuf;
use std::sync::OnceLock;

use pyo3::types::PyType;
use serde_json::{Map, Value};

use super::*;
use crate::model::{fit_sigmoid, BagValue, Calibration, Pooling, Predictor, Scaler, Workspace};
use numpy::PyUntypedArrayMethods;

/// A fitted model compiled for prediction (see `milsvm::model` in the Rust docs).
#[pyclass(name = "Model", module = "milsvm._core", frozen)]
pub(crate) struct PyModel {
    model: Model,
    /// The compiled form, made at the first prediction: the models of a `C` path that are only
    /// scored together (`decision_functions`) never need their own.
    predictor: OnceLock<Predictor>,
}

/// Two vectors returned to Python (a scaler's mean and scale, a sigmoid's slopes and offsets).
type VectorPair<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// A predictor method over stacked instance rows with bag offsets.
type RowsMethod = fn(&Predictor, Rows<'_>, &[usize]) -> crate::error::Result<Array2<f64>>;

impl PyModel {
    /// Wraps a fitted core model, checked here ([`Model::check`]) and compiled at its first
    /// prediction.
    pub(crate) fn wrap(model: Model) -> PyResult<Self> {
        model.check()?;
        Ok(Self {
            model,
            predictor: OnceLock::new(),
        })
    }

    /// The compiled model, compiled now if this is the first prediction.
    fn predictor(&self) -> PyResult<&Predictor> {
        if let Some(p) = self.predictor.get() {
            return Ok(p);
        }
        let compiled = Predictor::new(&self.model)?;
        Ok(self.predictor.get_or_init(|| compiled))
    }

    /// Runs `method` on stacked instances from Python (a float64 array read in place, or a CSR
    /// tuple) with bag offsets, without the GIL, on `n_jobs` threads.
    fn per_bag<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        n_jobs: Option<i64>,
        method: RowsMethod,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let predictor = self.predictor()?;
        let scores = with_rows(py, x, bag_ptr, n_jobs, |rows, bag_ptr| {
            method(predictor, rows, bag_ptr)
        })?;
        Ok(scores.into_pyarray(py))
    }
}

/// Runs `f` on stacked instances from Python (a float64 or float32 array read in place, or a
/// CSR tuple)
/// with bag offsets, without the GIL, on `n_jobs` threads.
fn with_rows<'py, T: Send>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    n_jobs: Option<i64>,
    f: impl FnOnce(Rows<'_>, &[usize]) -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    let bag_ptr = to_usize(bag_ptr.as_slice()?, "bag_ptr")?;
    let n_jobs = n_jobs_of(n_jobs)?;
    let not_rows =
        || PyValueError::new_err("x must be a 2-D float64 or float32 array or a CSR tuple");
    let dense = x.extract::<PyReadonlyArray2<f64>>().ok();
    let dense32 = x.extract::<PyReadonlyArray2<f32>>().ok();
    let csr = match (&dense, &dense32) {
        (None, None) => match instances(x)? {
            Instances::Sparse(csr) => Some(csr),
            _ => return Err(not_rows()),
        },
        _ => None,
    };
    let rows = match (&dense, &dense32, &csr) {
        (Some(d), _, _) => Rows::Dense(d.as_array()),
        (None, Some(d), _) => Rows::Dense32(d.as_array()),
        (None, None, Some(csr)) => Rows::Sparse(csr),
        _ => return Err(not_rows()),
    };
    run(py, || on_threads(n_jobs, || f(rows, &bag_ptr))?)
}

/// Bag scores `(n_bags, n_outputs)` of every model in `models` on stacked instances with bag
/// offsets, the kernel values computed once over the union of their expansion vectors (the
/// models of a C path; `milsvm::model::decision_functions`).
#[pyfunction]
#[pyo3(signature = (models, x: "Instances", bag_ptr, n_jobs=None))]
fn decision_functions<'py>(
    py: Python<'py>,
    models: Vec<Bound<'py, PyModel>>,
    x: &Bound<'py, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    n_jobs: Option<i64>,
) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
    let refs: Vec<&Model> = models.iter().map(|m| &m.get().model).collect();
    let scores = with_rows(py, x, bag_ptr, n_jobs, |rows, bag_ptr| {
        // every PyModel was checked when wrapped
        crate::model::decision_functions_of_checked(&refs, rows, bag_ptr)
    })?;
    Ok(scores.into_iter().map(|s| s.into_pyarray(py)).collect())
}

/// Platt's `(a, b)` for held-out `scores` and whether each bag is `positive`
/// (`milsvm::model::fit_sigmoid`).
#[pyfunction]
#[pyo3(name = "fit_sigmoid")]
fn fit_sigmoid_py(scores: PyReadonlyArray1<f64>, positive: Vec<bool>) -> PyResult<(f64, f64)> {
    Ok(fit_sigmoid(scores.as_slice()?, &positive)?)
}

/// Registers `Model`, `fit_sigmoid` and `decision_functions`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModel>()?;
    m.add_function(wrap_pyfunction!(decision_functions, m)?)?;
    m.add_function(wrap_pyfunction!(fit_sigmoid_py, m)?)
}

/// The JSON object in `text` (a Python-side `json.dumps`), or `ValueError` naming `what`.
fn json_object(text: Option<&str>, what: &str) -> PyResult<Option<Map<String, Value>>> {
    text.map(|t| match serde_json::from_str::<Value>(t) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(PyValueError::new_err(format!(
            "{what} must be a JSON object"
        ))),
        Err(e) => Err(PyValueError::new_err(format!("{what}: {e}"))),
    })
    .transpose()
}

fn pooling_name(p: Pooling) -> &'static str {
    match p {
        Pooling::Mean => "mean",
        Pooling::Max => "max",
        Pooling::NormalizedMean => "normalized_mean",
        Pooling::SmilMean => "smil_mean",
        Pooling::XvMax => "xv_max",
    }
}

/// A read-only NumPy view of `array`, kept alive by `owner`.
fn view<'py, S: ndarray::Data<Elem = f64>, D: ndarray::Dimension>(
    array: &ndarray::ArrayBase<S, D>,
    owner: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, numpy::PyArray<f64, D>>> {
    // SAFETY: `owner` is the frozen `Model` that owns `array`; nothing mutates it while the
    // view lives, and the view is made read-only below.
    let arr = unsafe { numpy::PyArray::borrow_from_array(array, owner) };
    arr.getattr("flags")?.setattr("writeable", false)?;
    Ok(arr)
}

#[pymethods]
impl PyModel {
    /// `Model(xv, coef, intercept, kernel, gamma, n_classes, pooling="mean")`: `xv` a 2-D
    /// float64 array or a CSR tuple `(data, indices, indptr, n_cols)`; `coef` of shape
    /// `(n_outputs, n_xv)`.
    #[new]
    #[pyo3(signature = (xv: "Instances", coef, intercept, kernel, gamma, n_classes, pooling="mean"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        xv: &Bound<'_, PyAny>,
        coef: PyReadonlyArray2<f64>,
        intercept: PyReadonlyArray1<f64>,
        kernel: &str,
        gamma: f64,
        n_classes: usize,
        pooling: &str,
    ) -> PyResult<Self> {
        let model = Model::new(
            kernel_of(kernel, gamma)?,
            instances(xv)?,
            coef.as_array().to_owned(),
            intercept.as_array().to_owned(),
            n_classes,
            pooling_of(pooling)?,
        );
        Self::wrap(model)
    }

    /// Reads model JSON (any supported version); `ValueError` naming the field at fault.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Self::wrap(Model::from_json(text)?)
    }

    /// Reads a model file.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        Self::wrap(Model::load(path)?)
    }

    /// The model as versioned JSON with the given metadata (`classes`, `params`, `info` as JSON
    /// text); `None` keeps what the model holds.
    #[pyo3(signature = (estimator=None, classes=None, params=None, info=None))]
    fn to_json(
        &self,
        estimator: Option<String>,
        classes: Option<&str>,
        params: Option<&str>,
        info: Option<&str>,
    ) -> PyResult<String> {
        let mut m = self.model.clone();
        if estimator.is_some() {
            m.estimator = estimator;
        }
        if let Some(c) = classes {
            let v: Vec<Value> = serde_json::from_str(c)
                .map_err(|e| PyValueError::new_err(format!("classes: {e}")))?;
            m.classes = Some(v);
        }
        if let Some(p) = json_object(params, "params")? {
            m.params = p;
        }
        if let Some(i) = json_object(info, "info")? {
            m.info = i;
        }
        Ok(m.to_json()?)
    }

    /// Bag scores `(n_bags, n_outputs)` of stacked instances (a C-contiguous float64 array,
    /// read in place, or a CSR tuple) with bag offsets.
    #[pyo3(signature = (x: "Instances", bag_ptr, n_jobs=None))]
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.per_bag(py, x, bag_ptr, n_jobs, Predictor::decision_function_rows)
    }

    /// Instance scores `(n_instances, n_outputs)` of stacked instances with bag offsets, as the
    /// model's pooling counts them (their mean, or max, or for `xv_max` their sum, over a bag
    /// is the bag's score; see the Rust `Predictor::bag_instance_scores`).
    #[pyo3(signature = (x: "Instances", bag_ptr, n_jobs=None))]
    fn bag_instance_scores<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.per_bag(py, x, bag_ptr, n_jobs, Predictor::bag_instance_scores)
    }

    /// The scores of one bag given as a 2-D float64 or float32 array (one instance per row), as
    /// a list of `n_outputs` floats, computed on the calling thread: the low-latency path.
    #[pyo3(signature = (x: "Union[NDArray[np.float64], NDArray[np.float32]]"))]
    fn decision_function_bag(&self, x: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
        let predictor = self.predictor()?;
        match x.extract::<PyReadonlyArray2<'_, f32>>() {
            Ok(x) => score_bag(predictor, &x),
            Err(_) => score_bag(predictor, &x.extract::<PyReadonlyArray2<'_, f64>>()?),
        }
    }

    /// Instance scores `(n_instances, n_outputs)`.
    #[pyo3(signature = (x: "Instances", n_jobs=None))]
    fn instance_decision_function<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = instances(x)?;
        let n_jobs = n_jobs_of(n_jobs)?;
        let predictor = self.predictor()?;
        let scores = run(py, || {
            on_threads(n_jobs, || predictor.instance_decision_function(&x))?
        })?;
        Ok(scores.into_pyarray(py))
    }

    /// Class probabilities `(n_bags, n_classes)` of stacked instances with bag offsets: Platt's
    /// sigmoid of each bag score and the coupling of `Calibration::probabilities` (binary
    /// models `[1 - p, p]`, one-vs-rest models normalised), or the mean of an ensemble's
    /// members' (`Predictor::predict_proba_rows`). `ValueError` if the model has neither.
    #[pyo3(signature = (x: "Instances", bag_ptr, n_jobs=None))]
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        bag_ptr: PyReadonlyArray1<i64>,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.per_bag(py, x, bag_ptr, n_jobs, Predictor::predict_proba_rows)
    }

    /// A copy of the model that standardises every instance with `(mean, scale)` (one value
    /// per feature each) before the kernel; `None` removes the scaler.
    #[pyo3(signature = (scaler))]
    fn with_scaler(&self, scaler: Option<(Vec<f64>, Vec<f64>)>) -> PyResult<Self> {
        let mut m = self.model.clone();
        m.set_scaler(scaler.map(|(mean, scale)| Scaler { mean, scale }));
        Self::wrap(m)
    }

    /// A copy of the model with Platt's sigmoid `(a, b)` per output (one value per output
    /// each); `None` removes the calibration.
    #[pyo3(signature = (calibration))]
    fn with_calibration(&self, calibration: Option<(Vec<f64>, Vec<f64>)>) -> PyResult<Self> {
        let mut m = self.model.clone();
        m.calibration = calibration.map(|(a, b)| Calibration { a, b });
        Self::wrap(m)
    }

    /// A copy of the model whose probabilities are the mean of the calibrated `members`' (each
    /// a model with its sigmoid, fitted on one training part of the internal cross-validation;
    /// they take this model's scaler); an empty list removes the ensemble. `ValueError` if a
    /// member does not fit the model (`Model::ensemble`'s rules) or the model has a calibration.
    #[pyo3(signature = (members))]
    fn with_ensemble(&self, members: Vec<PyRef<'_, PyModel>>) -> PyResult<Self> {
        let mut m = self.model.clone();
        m.ensemble = members
            .iter()
            .map(|p| {
                let mut member = p.model.clone();
                member.scaler = m.scaler.clone();
                member
            })
            .collect();
        Self::wrap(m)
    }

    /// The calibrated members of an ensemble (`probability="ensemble"`), as models; empty
    /// otherwise.
    #[getter]
    fn ensemble(&self) -> PyResult<Vec<PyModel>> {
        self.model
            .ensemble
            .iter()
            .map(|m| Self::wrap(m.clone()))
            .collect()
    }

    /// A copy of the model recording that it was fitted on instances of `dtype` (`"float64"`
    /// or `"float32"`; written to the model file as `input_dtype`).
    fn with_input_dtype(&self, dtype: &str) -> PyResult<Self> {
        let mut m = self.model.clone();
        m.input_dtype = crate::model::Dtype::from_name(dtype).ok_or_else(|| {
            PyValueError::new_err(format!(
                "input_dtype must be one of {}, got {dtype:?}",
                crate::model::Dtype::NAMES.join(", ")
            ))
        })?;
        Self::wrap(m)
    }

    /// The type of the training instances: `"float64"` or `"float32"`.
    #[getter]
    fn input_dtype(&self) -> &'static str {
        self.model.input_dtype.as_str()
    }

    /// The standardisation `(mean, scale)` applied before the kernel, or `None`.
    #[getter]
    fn scaler<'py>(&self, py: Python<'py>) -> Option<VectorPair<'py>> {
        self.model.scaler.as_ref().map(|s| {
            (
                s.mean.clone().into_pyarray(py),
                s.scale.clone().into_pyarray(py),
            )
        })
    }

    /// Platt's sigmoid `(a, b)` of every output (`P = 1 / (1 + exp(a F + b))`), or `None`.
    #[getter]
    fn calibration<'py>(&self, py: Python<'py>) -> Option<VectorPair<'py>> {
        self.model
            .calibration
            .as_ref()
            .map(|c| (c.a.clone().into_pyarray(py), c.b.clone().into_pyarray(py)))
    }

    /// The dense basis `(n_xv, n_features)` as a read-only view, or for a CSR basis the tuple
    /// `(data, indices, indptr, (n_xv, n_features))`.
    ///
    /// Python type: `Union[NDArray[np.float64], CsrParts]`.
    #[getter]
    fn xv<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        match &slf.get().model.xv {
            Instances::Dense(z) => Ok(view(&z.view(), slf.clone().into_any())?.into_any()),
            // a model's basis is held in f64 (`Model::new` widens f32 rows)
            Instances::Dense32(_) => Ok(slf.get().model.xv.to_dense().into_pyarray(py).into_any()),
            Instances::Sparse(z) => {
                let idx: Vec<i64> = z.indices().iter().map(|&j| j as i64).collect();
                let ptr: Vec<i64> = z.indptr().iter().map(|&j| j as i64).collect();
                let t = (
                    z.data().to_vec().into_pyarray(py),
                    idx.into_pyarray(py),
                    ptr.into_pyarray(py),
                    (z.n_rows(), z.n_cols()),
                );
                Ok(t.into_pyobject(py)?.into_any())
            }
        }
    }

    /// Whether the basis is stored as CSR.
    #[getter]
    fn is_sparse(&self) -> bool {
        matches!(self.model.xv, Instances::Sparse(_))
    }

    /// Coefficients `(n_outputs, n_xv)` (read-only view).
    #[getter]
    fn coef<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        view(&slf.get().model.coef, slf.clone().into_any())
    }

    /// Biases `(n_outputs,)` (read-only view).
    #[getter]
    fn intercept<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        view(&slf.get().model.intercept, slf.clone().into_any())
    }

    /// `"rbf"` or `"linear"`.
    #[getter]
    fn kernel(&self) -> &'static str {
        match self.model.kernel {
            Kernel::Rbf { .. } => "rbf",
            Kernel::Linear => "linear",
        }
    }

    /// The Gaussian width (`None` for the linear kernel).
    #[getter]
    fn gamma(&self) -> Option<f64> {
        match self.model.kernel {
            Kernel::Rbf { gamma } => Some(gamma),
            Kernel::Linear => None,
        }
    }

    /// `"mean"`, `"max"`, `"normalized_mean"`, `"smil_mean"` or `"xv_max"`.
    #[getter]
    fn pooling(&self) -> &'static str {
        pooling_name(self.model.pooling)
    }

    /// What the kernel expansion scores: `"instances"` (each instance, then the pooling) or
    /// `"min_max"` (one vector of per-feature minima and maxima per bag: STK).
    #[getter]
    fn bag_features(&self) -> &'static str {
        self.model.bag_features.as_str()
    }

    /// Number of classes.
    #[getter]
    fn n_classes(&self) -> usize {
        self.model.n_classes
    }

    /// Number of features of an instance.
    #[getter]
    fn n_features(&self) -> usize {
        self.model.n_features()
    }

    /// Number of expansion vectors.
    #[getter]
    fn n_xv(&self) -> usize {
        self.model.n_xv()
    }

    /// Number of outputs (1 for binary models).
    #[getter]
    fn n_outputs(&self) -> usize {
        self.model.n_outputs()
    }

    /// The estimator name stored with the model, if any.
    #[getter]
    fn estimator(&self) -> Option<String> {
        self.model.estimator.clone()
    }

    /// The class labels as JSON text, if stored.
    #[getter]
    fn classes_json(&self) -> PyResult<Option<String>> {
        self.model
            .classes
            .as_ref()
            .map(|c| serde_json::to_string(c).map_err(|e| PyValueError::new_err(e.to_string())))
            .transpose()
    }

    /// The stored hyperparameters as JSON text.
    #[getter]
    fn params_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.model.params).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The stored training record as JSON text.
    #[getter]
    fn info_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.model.info).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Pickle support: the model is rebuilt from its JSON text (exact round trip).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let cls: Bound<'py, PyType> = slf.get_type();
        Ok((cls.getattr("from_json")?, (slf.get().model.to_json()?,)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Model(kernel={:?}, n_xv={}, n_features={}, n_outputs={}, pooling={:?}{})",
            self.kernel(),
            self.model.n_xv(),
            self.model.n_features(),
            self.model.n_outputs(),
            self.pooling(),
            if self.is_sparse() { ", sparse" } else { "" }
        )
    }
}

/// The scores of one dense bag (float64 or float32), as a list of `n_outputs` floats.
fn score_bag<T: BagValue + numpy::Element>(
    predictor: &Predictor,
    x: &PyReadonlyArray2<'_, T>,
) -> PyResult<Vec<f64>> {
    let mut out = vec![0.0; predictor.n_outputs()];
    let mut owned = None;
    let bag = T::dense_bag(row_major(x, &mut owned), x.as_array().ncols())?;
    predictor.score_bag(bag, &mut Workspace::default(), &mut out)?;
    Ok(out)
}

/// The values of `x` row-major: the array's own when it is C-contiguous, else a copy kept in
/// `owned`.
fn row_major<'a, T: numpy::Element + Clone>(
    x: &'a PyReadonlyArray2<'_, T>,
    owned: &'a mut Option<ndarray::Array2<T>>,
) -> &'a [T] {
    // `as_slice` also accepts a Fortran-ordered array: only a C-contiguous one is row-major.
    if let Some(s) = x.as_slice().ok().filter(|_| x.is_c_contiguous()) {
        return s;
    }
    owned
        .insert(x.as_array().as_standard_layout().into_owned())
        .as_slice()
        .unwrap_or(&[])
}
