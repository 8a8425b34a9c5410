//! The model file: one versioned JSON document per fitted model.
//!
//! Version 7 (written by this build) is version 6 with one more optional field, the calibrated
//! members of an ensemble ([`Model::ensemble`]; absent, null or empty: none). A member holds
//! what differs from the model; it shares the model's pooling, bag features, classes and
//! scaler:
//!
//! ```text
//!   "ensemble": [{"kernel": ..., "xv": ..., "coef": ..., "intercept": [...],
//!                 "calibration": {"a": [...], "b": [...]}}, ...] | null,
//! ```
//!
//! Version 6 is version 5 with one more value of `pooling` and one more
//! optional field, the type of the training instances (absent or null: `"float64"`):
//!
//! ```text
//!   "pooling": ... | "xv_max",   // MILES: F(X) = sum_k coef_k max_p k(xv_k, x_p) + intercept
//!   "input_dtype": "float64" | "float32",
//! ```
//!
//! A file of an earlier version with `"xv_max"` is refused (no writer of those versions had
//! it); every other version-5 document reads the same as version 6.
//!
//! Version 5 is version 4 with one more optional field, what the kernel
//! expansion scores (absent or null: `"instances"`, every earlier version's meaning):
//!
//! ```text
//!   "bag_features": "instances" | "min_max",  // min_max: one vector of per-feature minima then
//!                                             // maxima per bag (STK); xv has 2 n_features columns
//! ```
//!
//! Version 4 is version 3 with two optional fields:
//!
//! ```text
//!   "scaler": {"mean": [...], "scale": [...]} | null,     // one value per feature
//!   "calibration": {"a": [...], "b": [...]} | null,       // Platt's sigmoid per output
//! ```
//!
//! Version 3:
//!
//! ```text
//! {
//!   "format": "milsvm-model",            // always this string
//!   "version": 3,
//!   "milsvm_version": "0.1.0",           // the writer (informative)
//!   "estimator": "SparseMI",             // or null
//!   "kernel": {"name": "rbf", "gamma": 0.1} | {"name": "linear"},
//!   "pooling": "mean" | "max" | "normalized_mean",
//!   "n_classes": 2,
//!   "classes": [0, 1],                   // or null; labels are numbers, strings or booleans
//!   "xv": {"layout": "dense", "shape": [n_xv, n_features], "data": [row-major values]}
//!       | {"layout": "csr", "shape": [n_xv, n_features], "indptr": [...], "indices": [...],
//!          "data": [...]},
//!   "coef": {"shape": [n_outputs, n_xv], "data": [row-major values]},
//!   "intercept": [one value per output],
//!   "params": {...},                     // estimator hyperparameters (optional)
//!   "info": {...}                        // training record (optional)
//! }
//! ```
//!
//! Versions 1 and 2 (an ndarray-serde `model` object, with `pooling` from version 2 on) are
//! still read. Reading never runs code: it parses JSON, and every inconsistency (a missing or
//! mistyped field, shapes that do not fit, a non-finite number, an unknown kernel, pooling or
//! version, a `classes` list of the wrong length) is one [`Error::ModelFile`] naming the field.

use ndarray::{Array1, Array2};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::{BagFeatures, Dtype, Model, Pooling};
use crate::bags::{Csr, Instances};
use crate::error::{Error, Result};

/// The version of the model file this build writes (7: an ensemble's members; 6: the
/// `"xv_max"` pooling of MILES and `input_dtype`; 5: `bag_features`; 4: a scaler and a
/// calibration; 3: sparse bases, classes and metadata in the core; 2 added `pooling`; 1 was the
/// first). Versions 1 to 7 are read.
pub const FORMAT_VERSION: u32 = 7;

const FORMAT: &str = "milsvm-model";

fn err(msg: impl Into<String>) -> Error {
    Error::ModelFile(msg.into())
}

/// Field `name` of `obj`, deserialised, or an error naming it.
fn field<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<T> {
    nested(obj, "", name)
}

/// Field `name` of the object at `parent` (for messages such as "field `xv.shape`").
fn nested<T: DeserializeOwned>(obj: &Map<String, Value>, parent: &str, name: &str) -> Result<T> {
    let path = if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    };
    let v = obj
        .get(name)
        .ok_or_else(|| err(format!("missing field `{path}`")))?;
    serde_json::from_value(v.clone()).map_err(|e| err(format!("field `{path}`: {e}")))
}

/// Optional field `name` (absent or null gives `None`).
fn opt_field<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<Option<T>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => field(obj, name).map(Some),
    }
}

fn object<'a>(v: &'a Value, name: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| err(format!("field `{name}` must be a JSON object")))
}

/// A row-major matrix `{"shape": [r, c], "data": [...]}`.
fn matrix(obj: &Map<String, Value>, name: &str) -> Result<Array2<f64>> {
    let m = object(
        obj.get(name)
            .ok_or_else(|| err(format!("missing field `{name}`")))?,
        name,
    )?;
    let shape: [usize; 2] = nested(m, name, "shape")?;
    let data: Vec<f64> = nested(m, name, "data")?;
    let need = shape[0].checked_mul(shape[1]);
    if need != Some(data.len()) {
        return Err(err(format!(
            "{name}: shape {} x {} does not fit {} values",
            shape[0],
            shape[1],
            data.len()
        )));
    }
    Array2::from_shape_vec((shape[0], shape[1]), data).map_err(|e| err(format!("{name}: {e}")))
}

fn basis(obj: &Map<String, Value>) -> Result<Instances> {
    let b = object(
        obj.get("xv")
            .ok_or_else(|| err("missing field `xv`".to_string()))?,
        "xv",
    )?;
    let layout: String = nested(b, "xv", "layout")?;
    match layout.as_str() {
        "dense" => Ok(Instances::from(matrix(obj, "xv")?)),
        "csr" => {
            let shape: [usize; 2] = nested(b, "xv", "shape")?;
            let indptr: Vec<usize> = nested(b, "xv", "indptr")?;
            let indices: Vec<usize> = nested(b, "xv", "indices")?;
            let data: Vec<f64> = nested(b, "xv", "data")?;
            if indptr.len() != shape[0].saturating_add(1) {
                return Err(err(format!(
                    "xv: indptr has {} entries for {} rows (expected rows + 1)",
                    indptr.len(),
                    shape[0]
                )));
            }
            let csr = Csr::new(shape[0], shape[1], indptr, indices, data)
                .map_err(|e| err(format!("xv: {e}")))?;
            Ok(Instances::Sparse(csr))
        }
        other => Err(err(format!(
            "xv.layout: unknown basis layout {other:?} (expected \"dense\" or \"csr\")"
        ))),
    }
}

fn metadata(obj: &Map<String, Value>, name: &str) -> Result<Map<String, Value>> {
    Ok(opt_field::<Map<String, Value>>(obj, name)?.unwrap_or_default())
}

/// The path (`calibration.a`, `coef.data`) of the value at `line`, `column` (1-based, as
/// serde_json reports an error) of the JSON `text`: object keys followed by a light scan of
/// strings, brackets and colons, so that a malformed number (`NaN`, `1e999`) is reported with
/// its field.
fn json_path_at(text: &str, line: usize, column: usize) -> String {
    let offset: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + column.saturating_sub(1);
    // one entry per open container: the key being read in an object (None in an array)
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut last_string = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if i >= offset {
            break;
        }
        match c {
            '"' => {
                last_string.clear();
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        c => last_string.push(c),
                    }
                }
            }
            '{' => stack.push(Some(String::new())),
            '[' => stack.push(None),
            '}' | ']' => {
                stack.pop();
            }
            ':' => {
                if let Some(Some(key)) = stack.last_mut() {
                    *key = last_string.clone();
                }
            }
            _ => {}
        }
    }
    stack
        .into_iter()
        .flatten()
        .filter(|k| !k.is_empty())
        .collect::<Vec<_>>()
        .join(".")
}

/// Reads a model file of any supported version; see the module docs.
pub(super) fn from_json(text: &str) -> Result<Model> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        let at = json_path_at(text, e.line(), e.column());
        let place = if at.is_empty() {
            String::new()
        } else {
            format!("field `{at}`: ")
        };
        err(format!("{place}not valid JSON: {e}"))
    })?;
    let obj = doc
        .as_object()
        .ok_or_else(|| err("the file must hold one JSON object"))?;
    let format: String = field(obj, "format")?;
    if format != FORMAT {
        return Err(err(format!(
            "field `format`: not a milsvm model file ({format:?}, expected {FORMAT:?})"
        )));
    }
    let version: u32 = field(obj, "version")?;
    let model = match version {
        3..=7 => read_v3(obj, version)?,
        1 | 2 => read_v1_v2(obj, version)?,
        v => {
            return Err(err(format!(
                "field `version`: unsupported model file version {v} (this build reads 1 to \
                 {FORMAT_VERSION})"
            )))
        }
    };
    if version < 6 && model.pooling == Pooling::XvMax {
        return Err(err(format!(
            "field `pooling`: \"xv_max\" needs model file version 6 or later, the file is \
             version {version}"
        )));
    }
    model.check()?;
    Ok(model)
}

/// Versions 3 to 7 (`bag_features` is read from version 5 on, `input_dtype` from 6 on,
/// `ensemble` from 7 on).
fn read_v3(obj: &Map<String, Value>, version: u32) -> Result<Model> {
    let bag_features = if version >= 5 {
        opt_field::<BagFeatures>(obj, "bag_features")?.unwrap_or_default()
    } else {
        BagFeatures::Instances
    };
    let input_dtype = if version >= 6 {
        opt_field::<Dtype>(obj, "input_dtype")?.unwrap_or_default()
    } else {
        Dtype::Float64
    };
    let mut model = Model {
        kernel: field(obj, "kernel")?,
        pooling: field(obj, "pooling")?,
        bag_features,
        n_classes: field(obj, "n_classes")?,
        classes: opt_field(obj, "classes")?,
        estimator: opt_field(obj, "estimator")?,
        xv: basis(obj)?,
        coef: matrix(obj, "coef")?,
        intercept: Array1::from(field::<Vec<f64>>(obj, "intercept")?),
        params: metadata(obj, "params")?,
        info: metadata(obj, "info")?,
        scaler: opt_field(obj, "scaler")?,
        calibration: opt_field(obj, "calibration")?,
        ensemble: Vec::new(),
        input_dtype,
    };
    if version >= 7 {
        let members = opt_field::<Vec<Value>>(obj, "ensemble")?.unwrap_or_default();
        model.ensemble = members
            .iter()
            .enumerate()
            .map(|(k, v)| read_member(v, &model).map_err(|e| in_member(k, e)))
            .collect::<Result<_>>()?;
    }
    Ok(model)
}

/// One member of `"ensemble"` (see the module docs), with what it shares taken from `model`.
fn read_member(v: &Value, model: &Model) -> Result<Model> {
    let obj = v
        .as_object()
        .ok_or_else(|| err("a member must be a JSON object"))?;
    let mut member = Model::new(
        field(obj, "kernel")?,
        basis(obj)?,
        matrix(obj, "coef")?,
        Array1::from(field::<Vec<f64>>(obj, "intercept")?),
        model.n_classes,
        model.pooling,
    );
    member.bag_features = model.bag_features;
    member.scaler = model.scaler.clone();
    member.input_dtype = model.input_dtype;
    member.calibration = Some(field(obj, "calibration")?);
    Ok(member)
}

/// A member's error, named under `ensemble[k]`.
fn in_member(k: usize, e: Error) -> Error {
    match e {
        Error::ModelFile(msg) => err(format!("ensemble[{k}]: {msg}")),
        other => other,
    }
}

/// Versions 1 and 2: `{"model": {kernel, xv, coef, intercept (ndarray serde), n_classes,
/// pooling (v2)}}`, with `estimator`, `params`, `classes`, `n_iter` and `objective_history`
/// added beside it by the Python package of that time.
fn read_v1_v2(obj: &Map<String, Value>, version: u32) -> Result<Model> {
    let m = object(
        obj.get("model")
            .ok_or_else(|| err("missing field `model`"))?,
        "model",
    )?;
    let pooling = if version >= 2 {
        opt_field::<Pooling>(m, "pooling")?.unwrap_or_default()
    } else {
        Pooling::Mean
    };
    let mut info = Map::new();
    for key in ["n_iter", "objective_history"] {
        if let Some(v) = obj.get(key) {
            info.insert(key.into(), v.clone());
        }
    }
    Ok(Model {
        kernel: field(m, "kernel")?,
        xv: Instances::from(field::<Array2<f64>>(m, "xv")?),
        coef: field(m, "coef")?,
        intercept: field(m, "intercept")?,
        n_classes: field(m, "n_classes")?,
        pooling,
        bag_features: BagFeatures::Instances,
        classes: opt_field(obj, "classes")?,
        estimator: opt_field(obj, "estimator")?,
        params: metadata(obj, "params")?,
        info,
        scaler: None,
        calibration: None,
        ensemble: Vec::new(),
        input_dtype: Dtype::Float64,
    })
}

/// The `"xv"` object of a basis.
fn basis_json(xv: &Instances) -> Value {
    match xv {
        Instances::Dense(_) | Instances::Dense32(_) => json!({
            "layout": "dense",
            "shape": [xv.n_rows(), xv.n_features()],
            "data": xv.to_dense().iter().copied().collect::<Vec<f64>>(),
        }),
        Instances::Sparse(z) => json!({
            "layout": "csr",
            "shape": [z.n_rows(), z.n_cols()],
            "indptr": z.indptr(),
            "indices": z.indices(),
            "data": z.data(),
        }),
    }
}

/// The `"coef"` object of a model.
fn coef_json(coef: &Array2<f64>) -> Value {
    json!({
        "shape": [coef.nrows(), coef.ncols()],
        "data": coef.iter().copied().collect::<Vec<f64>>(),
    })
}

/// Writes the version-7 document (after [`Model::check`]).
pub(super) fn to_json(model: &Model) -> Result<String> {
    model.check()?;
    let kernel: Value = serde_json::to_value(model.kernel).map_err(|e| err(e.to_string()))?;
    let pooling: Value = serde_json::to_value(model.pooling).map_err(|e| err(e.to_string()))?;
    let ensemble: Vec<Value> = model
        .ensemble
        .iter()
        .map(|m| {
            json!({
                "kernel": m.kernel,
                "xv": basis_json(&m.xv),
                "coef": coef_json(&m.coef),
                "intercept": m.intercept.to_vec(),
                "calibration": m.calibration,
            })
        })
        .collect();
    let doc = json!({
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "milsvm_version": env!("CARGO_PKG_VERSION"),
        "estimator": model.estimator,
        "kernel": kernel,
        "pooling": pooling,
        "bag_features": model.bag_features,
        "n_classes": model.n_classes,
        "classes": model.classes,
        "xv": basis_json(&model.xv),
        "coef": coef_json(&model.coef),
        "intercept": model.intercept.to_vec(),
        "params": model.params,
        "info": model.info,
        "scaler": model.scaler,
        "calibration": model.calibration,
        "ensemble": (!ensemble.is_empty()).then_some(ensemble),
        "input_dtype": model.input_dtype,
    });
    serde_json::to_string(&doc).map_err(|e| err(e.to_string()))
}

impl Model {
    /// The model as version-7 JSON (see [`file`](mod@crate::model::file)); fails if [`Model::check`]
    /// does.
    pub fn to_json(&self) -> Result<String> {
        to_json(self)
    }

    /// Reads a model from JSON of any supported version, checked.
    pub fn from_json(text: &str) -> Result<Self> {
        from_json(text)
    }

    /// Writes the JSON file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let text = self.to_json()?;
        std::fs::write(path.as_ref(), text)
            .map_err(|e| err(format!("{}: {e}", path.as_ref().display())))
    }

    /// Reads a JSON file.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let text = std::fs::read_to_string(path.as_ref())
            .map_err(|e| err(format!("{}: {e}", path.as_ref().display())))?;
        Self::from_json(&text)
    }
}
