//! The C library of milsvm: load a model file written by the Python package or the Rust crate,
//! and score bags with it, from C or any language with a C FFI (C++, Go, Java, C#).
//!
//! The header `include/milsvm.h` is generated from this file by cbindgen (`cbindgen.toml`); a
//! test (`tests/header.rs`) fails when the checked-in header is stale.
//!
//! Conventions:
//! * a bag `x` is `n_instances x n_features` values, row-major;
//! * a call returns [`MilsvmStatus::MILSVM_OK`] (0) or one of the other codes of
//!   [`MilsvmStatus`], with the message in [`milsvm_last_error`] (per thread);
//! * the scores are those of the core's serving path ([`milsvm::Predictor::score_bag`]), which
//!   equal Python's `decision_function` bit for bit, and the probabilities Python's
//!   `predict_proba`;
//! * a model is immutable once loaded: one model may be scored by many threads at once. Each
//!   thread scores in its own workspace (thread-local), so that a warm thread allocates nothing
//!   per call;
//! * no panic crosses the boundary: it is caught and returned as
//!   [`MilsvmStatus::MILSVM_ERR_INTERNAL`].

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use milsvm::model::{BagValue, FORMAT_VERSION};
use milsvm::{BagView, Model, Predictor, Workspace};

/// A loaded model, compiled for prediction (opaque to C). Immutable: it may be shared by
/// threads.
pub struct MilsvmModel {
    predictor: Predictor,
}

/// The result of a call: 0 on success, else what went wrong (the message is in
/// `milsvm_last_error()`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MilsvmStatus {
    /// Success.
    MILSVM_OK = 0,
    /// A required pointer argument is NULL.
    MILSVM_ERR_NULL_POINTER = 1,
    /// A size is zero: no instances, no features, or an empty JSON text.
    MILSVM_ERR_EMPTY = 2,
    /// `n_features` is not the model's number of features.
    MILSVM_ERR_WIDTH = 3,
    /// The bag holds a NaN or an infinite value.
    MILSVM_ERR_NON_FINITE = 4,
    /// Probabilities were asked of a model fitted without `probability=True`.
    MILSVM_ERR_NO_PROBABILITIES = 5,
    /// Instance scores were asked of a model that has none (STK: `bag_features = "min_max"`).
    MILSVM_ERR_NO_INSTANCE_SCORES = 6,
    /// The model file cannot be read (missing, unreadable).
    MILSVM_ERR_IO = 7,
    /// The text is not a JSON document (truncated, not UTF-8, or a non-finite number such as a
    /// bare `NaN`).
    MILSVM_ERR_PARSE = 8,
    /// The file is of a newer model-file version than this library reads.
    MILSVM_ERR_VERSION = 9,
    /// The document is JSON but not a valid model (a missing or mistyped field, shapes that do
    /// not fit, an unknown kernel or pooling, a non-finite coefficient).
    MILSVM_ERR_INVALID_MODEL = 10,
    /// `n_instances x n_features` exceeds the address space.
    MILSVM_ERR_SIZE = 11,
    /// A score is not finite: the bag's values or the model's overflow `double`.
    MILSVM_ERR_OVERFLOW = 12,
    /// An internal error (a caught panic); please report it.
    MILSVM_ERR_INTERNAL = 13,
}

use MilsvmStatus::*;

/// A failure: its code and its message.
struct Failure(MilsvmStatus, String);

type Outcome<T> = std::result::Result<T, Failure>;

fn fail<T>(code: MilsvmStatus, msg: impl Into<String>) -> Outcome<T> {
    Err(Failure(code, msg.into()))
}

thread_local! {
    /// The message of this thread's last failure (NUL-terminated).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// This thread's scratch buffers: grown to the largest bag seen, then reused.
    static WORKSPACE: RefCell<Workspace> = RefCell::new(Workspace::default());
}

/// Records `msg` as this thread's last error (interior NULs replaced).
fn set_last_error(msg: &str) {
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // a thread being torn down has no slot left: the code alone reports the failure then
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error (please report it): {what}")
}

/// Runs `f` with panics caught; a failure is recorded and its code returned.
fn guarded(f: impl FnOnce() -> Outcome<()>) -> c_int {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MILSVM_OK,
        Ok(Err(Failure(code, msg))) => {
            set_last_error(&msg);
            code
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()));
            MILSVM_ERR_INTERNAL
        }
    };
    code as c_int
}

/// The code of a core error met while scoring.
fn scoring_failure(e: milsvm::Error) -> Failure {
    let code = match &e {
        milsvm::Error::Mismatch(_) => MILSVM_ERR_WIDTH,
        milsvm::Error::InvalidData(m) if m.contains("non-finite value") => MILSVM_ERR_NON_FINITE,
        milsvm::Error::InvalidData(m) if m.contains("not finite") => MILSVM_ERR_OVERFLOW,
        milsvm::Error::InvalidData(m) if m.contains("empty") => MILSVM_ERR_EMPTY,
        milsvm::Error::InvalidParameter(m) if m.contains("probabilities") => {
            MILSVM_ERR_NO_PROBABILITIES
        }
        milsvm::Error::InvalidParameter(m) if m.contains("instance scores") => {
            MILSVM_ERR_NO_INSTANCE_SCORES
        }
        _ => MILSVM_ERR_INTERNAL,
    };
    Failure(code, e.to_string())
}

/// Reads and compiles a model from its JSON text.
fn compile(text: &[u8]) -> Outcome<Box<MilsvmModel>> {
    if text.is_empty() {
        return fail(MILSVM_ERR_EMPTY, "the model text is empty");
    }
    let Ok(text) = std::str::from_utf8(text) else {
        return fail(MILSVM_ERR_PARSE, "the model text is not UTF-8");
    };
    let model = Model::from_json(text).map_err(|e| {
        let code = match serde_json::from_str::<serde_json::Value>(text) {
            Err(_) => MILSVM_ERR_PARSE,
            Ok(doc) => match doc.get("version").and_then(serde_json::Value::as_u64) {
                Some(v) if v > u64::from(FORMAT_VERSION) => MILSVM_ERR_VERSION,
                _ => MILSVM_ERR_INVALID_MODEL,
            },
        };
        Failure(code, e.to_string())
    })?;
    let predictor =
        Predictor::new(&model).map_err(|e| Failure(MILSVM_ERR_INVALID_MODEL, e.to_string()))?;
    Ok(Box::new(MilsvmModel { predictor }))
}

/// Stores `model` in `*out` (checked non-NULL by the caller).
fn hand_out(model: Box<MilsvmModel>, out: *mut *mut MilsvmModel) {
    // SAFETY: the caller checked `out` is not NULL; C guarantees it points to a writable slot
    unsafe { *out = Box::into_raw(model) };
}

/// Loads the model file at `path` (a NUL-terminated path) into `*out`, to be freed with
/// `milsvm_model_free`. Every model-file version up to this library's is read; on failure
/// `*out` is set to NULL.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `out` NULL or a writable pointer slot.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_load(
    path: *const c_char,
    out: *mut *mut MilsvmModel,
) -> c_int {
    guarded(|| {
        if out.is_null() {
            return fail(MILSVM_ERR_NULL_POINTER, "out is NULL");
        }
        // SAFETY: `out` is not NULL and writable (the caller's contract)
        unsafe { *out = std::ptr::null_mut() };
        if path.is_null() {
            return fail(MILSVM_ERR_NULL_POINTER, "path is NULL");
        }
        // SAFETY: `path` is a NUL-terminated string (the caller's contract)
        let path = unsafe { CStr::from_ptr(path) };
        #[cfg(unix)]
        let path = {
            use std::os::unix::ffi::OsStrExt;
            std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()))
        };
        #[cfg(not(unix))]
        let owned = std::path::PathBuf::from(path.to_string_lossy().into_owned());
        #[cfg(not(unix))]
        let path = owned.as_path();
        let text = std::fs::read(path)
            .or_else(|e| fail(MILSVM_ERR_IO, format!("{}: {e}", path.display())))?;
        let model = compile(&text)
            .map_err(|Failure(code, msg)| Failure(code, format!("{}: {msg}", path.display())))?;
        hand_out(model, out);
        Ok(())
    })
}

/// Reads a model from `len` bytes of JSON text at `json` (no NUL needed) into `*out`, to be
/// freed with `milsvm_model_free`; on failure `*out` is set to NULL.
///
/// # Safety
/// `json` must be NULL or point to `len` readable bytes; `out` NULL or a writable pointer slot.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_from_json(
    json: *const c_char,
    len: usize,
    out: *mut *mut MilsvmModel,
) -> c_int {
    guarded(|| {
        if out.is_null() {
            return fail(MILSVM_ERR_NULL_POINTER, "out is NULL");
        }
        // SAFETY: `out` is not NULL and writable (the caller's contract)
        unsafe { *out = std::ptr::null_mut() };
        if json.is_null() {
            return fail(MILSVM_ERR_NULL_POINTER, "json is NULL");
        }
        if len == 0 {
            return fail(MILSVM_ERR_EMPTY, "the model text is empty (len = 0)");
        }
        // SAFETY: `json` points to `len` readable bytes (the caller's contract)
        let text = unsafe { std::slice::from_raw_parts(json.cast::<u8>(), len) };
        hand_out(compile(text)?, out);
        Ok(())
    })
}

/// Frees a model from `milsvm_model_load` or `milsvm_model_from_json`; NULL is a no-op.
///
/// # Safety
/// `model` must be NULL or a model from this library not freed before, which no other thread is
/// using.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_free(model: *mut MilsvmModel) {
    if model.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `model` came from `Box::into_raw` and is freed once (the caller's contract)
        drop(unsafe { Box::from_raw(model) });
    }));
}

/// The model of a pointer, or 0 for NULL.
fn with_model(model: *const MilsvmModel, f: impl FnOnce(&Predictor) -> usize) -> usize {
    // SAFETY: a non-NULL `model` is a live model from this library (the caller's contract)
    match unsafe { model.as_ref() } {
        Some(m) => catch_unwind(AssertUnwindSafe(|| f(&m.predictor))).unwrap_or(0),
        None => 0,
    }
}

/// Number of features of an instance (0 for NULL).
///
/// # Safety
/// `model` must be NULL or a live model from this library.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_n_features(model: *const MilsvmModel) -> usize {
    with_model(model, Predictor::n_features)
}

/// Number of scores per bag, the columns of Python's `decision_function` (1 for a binary model,
/// else one per class; 0 for NULL).
///
/// # Safety
/// `model` must be NULL or a live model from this library.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_n_outputs(model: *const MilsvmModel) -> usize {
    with_model(model, Predictor::n_outputs)
}

/// Number of classes, the probabilities per bag (0 for NULL).
///
/// # Safety
/// `model` must be NULL or a live model from this library.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_n_classes(model: *const MilsvmModel) -> usize {
    with_model(model, Predictor::n_classes)
}

/// 1 if the model gives class probabilities (fitted with `probability=True` or `"ensemble"`),
/// else 0 (also for NULL).
///
/// # Safety
/// `model` must be NULL or a live model from this library.
#[no_mangle]
pub unsafe extern "C" fn milsvm_model_has_probabilities(model: *const MilsvmModel) -> c_int {
    with_model(model, |p| usize::from(p.has_probabilities())) as c_int
}

/// The checked arguments of a scoring call: the model, the bag, the output buffer.
struct Call<'a, T> {
    predictor: &'a Predictor,
    x: &'a [T],
    n_features: usize,
    out: &'a mut [f64],
}

/// What the output buffer of a call holds, per bag.
#[derive(Clone, Copy)]
enum OutputSize {
    /// One value per output (bag scores).
    Outputs,
    /// One value per class (probabilities).
    Classes,
    /// One row of outputs per instance (instance scores).
    InstancesOutputs,
}

/// Checks the arguments of a scoring call (NULL pointers, zero sizes, the width, the size) and
/// builds the slices (the values are checked finite as the bag is scored, [`score`]).
///
/// # Safety
/// The pointers are NULL or valid for the sizes given (the caller's contract).
unsafe fn checked<'a, T: BagValue>(
    model: *const MilsvmModel,
    x: *const T,
    n_instances: usize,
    n_features: usize,
    out: *mut f64,
    size: OutputSize,
) -> Outcome<Call<'a, T>> {
    // SAFETY: a non-NULL `model` is a live model from this library (the caller's contract)
    let Some(model) = (unsafe { model.as_ref() }) else {
        return fail(MILSVM_ERR_NULL_POINTER, "model is NULL");
    };
    let predictor = &model.predictor;
    if x.is_null() {
        return fail(MILSVM_ERR_NULL_POINTER, "x is NULL");
    }
    if out.is_null() {
        return fail(MILSVM_ERR_NULL_POINTER, "the output buffer is NULL");
    }
    if n_instances == 0 {
        return fail(MILSVM_ERR_EMPTY, "the bag is empty (n_instances = 0)");
    }
    if n_features == 0 {
        return fail(MILSVM_ERR_EMPTY, "n_features is 0");
    }
    if n_features != predictor.n_features() {
        return fail(
            MILSVM_ERR_WIDTH,
            format!(
                "the bag has {n_features} features, the model was fitted on {}",
                predictor.n_features()
            ),
        );
    }
    let limit = isize::MAX as usize / std::mem::size_of::<f64>();
    let n_values = n_instances.checked_mul(n_features).filter(|&n| n <= limit);
    let n_out = match size {
        OutputSize::Outputs => Some(predictor.n_outputs()),
        OutputSize::Classes => Some(predictor.n_classes()),
        OutputSize::InstancesOutputs => n_instances.checked_mul(predictor.n_outputs()),
    }
    .filter(|&n| n <= limit);
    let (Some(n_values), Some(n_out)) = (n_values, n_out) else {
        return fail(
            MILSVM_ERR_SIZE,
            format!("a bag of {n_instances} x {n_features} values exceeds the address space"),
        );
    };
    // SAFETY: `x` points to `n_instances x n_features` readable values and `out` to `n_out`
    // writable doubles not overlapping `x` (the caller's contract); both sizes fit `isize`
    let (x, out) = unsafe {
        (
            std::slice::from_raw_parts(x, n_values),
            std::slice::from_raw_parts_mut(out, n_out),
        )
    };
    Ok(Call {
        predictor,
        x,
        n_features,
        out,
    })
}

/// Runs `f` on the checked call with this thread's workspace. A non-finite value of the bag is
/// found by the core as it scores (the squared norm of its instance is not finite), at no cost
/// to a finite bag; the message then names its instance and feature.
fn score<T: BagValue>(
    call: Call<'_, T>,
    f: impl Fn(&Predictor, BagView<'_>, &mut Workspace, &mut [f64]) -> milsvm::Result<()>,
) -> Outcome<()> {
    let (x, d) = (call.x, call.n_features);
    let located = |failure: Failure| match x.iter().position(|v| !v.is_finite()) {
        Some(i) if failure.0 == MILSVM_ERR_NON_FINITE => Failure(
            MILSVM_ERR_NON_FINITE,
            format!(
                "the bag has a non-finite value (instance {}, feature {})",
                i / d,
                i % d
            ),
        ),
        _ => failure,
    };
    let bag = T::dense_bag(x, d).map_err(scoring_failure)?;
    let (predictor, out) = (call.predictor, call.out);
    let warm = WORKSPACE.try_with(|ws| match ws.try_borrow_mut() {
        Ok(mut ws) => Some(f(predictor, bag, &mut ws, &mut *out)),
        Err(_) => None,
    });
    match warm {
        Ok(Some(result)) => result,
        // reentered on this thread (a signal handler), or a thread being torn down: a fresh
        // workspace, allocating once
        _ => f(predictor, bag, &mut Workspace::default(), out),
    }
    .map_err(|e| located(scoring_failure(e)))
}

/// What a scoring entry point computes: the size of its output, and the core's function of
/// one bag.
struct Scoring {
    size: OutputSize,
    op: fn(&Predictor, BagView<'_>, &mut Workspace, &mut [f64]) -> milsvm::Result<()>,
}

/// `milsvm_score_bag_*`: the bag scores.
const BAG_SCORES: Scoring = Scoring {
    size: OutputSize::Outputs,
    op: Predictor::score_bag,
};

/// `milsvm_predict_proba_bag_*`: the class probabilities.
const PROBABILITIES: Scoring = Scoring {
    size: OutputSize::Classes,
    op: Predictor::predict_proba_bag,
};

/// `milsvm_instance_scores_*`: the instance scores.
const INSTANCE_SCORES: Scoring = Scoring {
    size: OutputSize::InstancesOutputs,
    op: Predictor::bag_instance_scores_into,
};

impl Scoring {
    /// The body of every scoring entry point, for bags of doubles and of floats alike: the
    /// arguments checked, then the bag scored into `out`.
    ///
    /// # Safety
    /// The pointers are NULL or valid for the sizes given (the entry point's contract).
    unsafe fn run<T: BagValue>(
        &self,
        model: *const MilsvmModel,
        x: *const T,
        n_instances: usize,
        n_features: usize,
        out: *mut f64,
    ) -> c_int {
        guarded(|| {
            // SAFETY: forwarded caller's contract
            let call = unsafe { checked(model, x, n_instances, n_features, out, self.size) }?;
            if matches!(self.size, OutputSize::Classes) {
                no_probabilities(call.predictor)?;
            }
            score(call, self.op)
        })
    }
}

/// The refusal of probabilities from a model without them.
fn no_probabilities(p: &Predictor) -> Outcome<()> {
    if p.has_probabilities() {
        return Ok(());
    }
    fail(
        MILSVM_ERR_NO_PROBABILITIES,
        "the model has no probabilities: fit it with probability=True (or \"ensemble\")",
    )
}

/// The bag scores of one bag (`n_outputs` values into `scores`): Python's `decision_function`
/// of the bag.
///
/// # Safety
/// `model` NULL or a live model; `x` NULL or `n_instances x n_features` readable doubles;
/// `scores` NULL or `n_outputs` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn milsvm_score_bag_f64(
    model: *const MilsvmModel,
    x: *const f64,
    n_instances: usize,
    n_features: usize,
    scores: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { BAG_SCORES.run(model, x, n_instances, n_features, scores) }
}

/// [`milsvm_score_bag_f64`] of single-precision values (read exactly into double arithmetic: the
/// scores equal those of the same values given as doubles).
///
/// # Safety
/// As [`milsvm_score_bag_f64`], with `x` of floats.
#[no_mangle]
pub unsafe extern "C" fn milsvm_score_bag_f32(
    model: *const MilsvmModel,
    x: *const f32,
    n_instances: usize,
    n_features: usize,
    scores: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { BAG_SCORES.run(model, x, n_instances, n_features, scores) }
}

/// The class probabilities of one bag (`n_classes` values into `proba`): Python's
/// `predict_proba` of the bag. Fails with `MILSVM_ERR_NO_PROBABILITIES` for a model fitted
/// without `probability`.
///
/// # Safety
/// `model` NULL or a live model; `x` NULL or `n_instances x n_features` readable doubles;
/// `proba` NULL or `n_classes` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn milsvm_predict_proba_bag_f64(
    model: *const MilsvmModel,
    x: *const f64,
    n_instances: usize,
    n_features: usize,
    proba: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { PROBABILITIES.run(model, x, n_instances, n_features, proba) }
}

/// [`milsvm_predict_proba_bag_f64`] of single-precision values.
///
/// # Safety
/// As [`milsvm_predict_proba_bag_f64`], with `x` of floats.
#[no_mangle]
pub unsafe extern "C" fn milsvm_predict_proba_bag_f32(
    model: *const MilsvmModel,
    x: *const f32,
    n_instances: usize,
    n_features: usize,
    proba: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { PROBABILITIES.run(model, x, n_instances, n_features, proba) }
}

/// The instance scores of one bag as its pooling counts them (`n_instances x n_outputs` values,
/// row-major, into `scores`): Python's `instance_decision_function` of the bag (their mean, or
/// max, or for MILES their sum, is the bag score). Fails with `MILSVM_ERR_NO_INSTANCE_SCORES`
/// for STK.
///
/// # Safety
/// `model` NULL or a live model; `x` NULL or `n_instances x n_features` readable doubles;
/// `scores` NULL or `n_instances x n_outputs` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn milsvm_instance_scores_f64(
    model: *const MilsvmModel,
    x: *const f64,
    n_instances: usize,
    n_features: usize,
    scores: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { INSTANCE_SCORES.run(model, x, n_instances, n_features, scores) }
}

/// [`milsvm_instance_scores_f64`] of single-precision values.
///
/// # Safety
/// As [`milsvm_instance_scores_f64`], with `x` of floats.
#[no_mangle]
pub unsafe extern "C" fn milsvm_instance_scores_f32(
    model: *const MilsvmModel,
    x: *const f32,
    n_instances: usize,
    n_features: usize,
    scores: *mut f64,
) -> c_int {
    // SAFETY: forwarded caller's contract
    unsafe { INSTANCE_SCORES.run(model, x, n_instances, n_features, scores) }
}

/// The message of this thread's last failure ("" if none). The pointer stays valid until the
/// next failing call on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn milsvm_last_error() -> *const c_char {
    static NONE: &CStr = c"";
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(NONE.as_ptr())
}

/// The library's version ("0.1.0"), a static string.
#[no_mangle]
pub extern "C" fn milsvm_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"",
        };
    VERSION.as_ptr()
}

/// The newest model-file version this library reads.
#[no_mangle]
pub extern "C" fn milsvm_model_format_version() -> u32 {
    FORMAT_VERSION
}
