//! Running core work from Python: without the GIL, with panics turned into `RuntimeError`
//! ([`run`]), and, for fits, with progress reports to a Python callback and cancellation by
//! Ctrl-C ([`fit_call`]).
//!
//! A fit runs where [`super::threads::place`] puts it. With `n_jobs = 1` that is the calling
//! thread: the fit's own cancellation checks look for signals there, at most every
//! `SIGNAL_POLL` (`PyErr_CheckSignals`, which runs Python's SIGINT handler on the main thread;
//! [`Cancel::with_poll`]). Otherwise the fit runs on a worker of its pool while the calling
//! thread polls for signals every `SIGNAL_POLL`. On `KeyboardInterrupt`, or when the progress
//! callback raises, the fit's [`Cancel`] flag is set; the core stops at its next check (well
//! under a second) and returns nothing, and the exception is raised here. The callback runs on
//! the fitting threads (with `n_jobs = 1`, the calling thread; an exception it raises, a Ctrl-C
//! included, stops the fit the same way).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::{instances, params_from, to_usize};
use super::threads::{on_threads, place, Place};
use crate::bags::Instances;
use crate::error::Error;
use crate::params::Hyperparams;
use crate::progress::{Cancel, Observer, Progress};

/// How often the calling thread looks for a pending signal while a fit runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The message of a caught panic.
pub(crate) fn panic_error(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    PyRuntimeError::new_err(format!("internal error in milsvm (please report): {msg}"))
}

/// Runs `f` without the GIL; a panic becomes `RuntimeError`. `f` chooses its threads (with
/// [`on_threads`]); for a call without `n_jobs`, see [`run_default`].
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

/// [`run`] on the threads `n_jobs = None` means ([`on_threads`]): for the calls that take no
/// `n_jobs` (from a thread that is its own pool's worker, rayon's global pool is out of reach).
pub(crate) fn run_default<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    run(py, || on_threads(None, f)?)
}

/// The first exception raised by a progress callback, kept to be raised after the fit.
pub(crate) type Failure = Arc<Mutex<Option<PyErr>>>;

/// An observer calling the Python `callback(problem, step, max_steps, objective,
/// temperature, expected_steps)` at every step of a fit (taking the GIL for the call). An exception in the
/// callback cancels the fit and is raised when it has stopped.
pub(crate) fn observer_of(
    callback: Option<Py<PyAny>>,
    cancel: Cancel,
    failure: Failure,
) -> Observer {
    let observer = match callback {
        None => Observer::default(),
        Some(cb) => {
            let cancel = cancel.clone();
            Observer::new(move |p: &Progress| {
                Python::attach(|py| {
                    let args = (
                        p.problem,
                        p.step,
                        p.max_steps,
                        p.objective,
                        p.temperature,
                        p.expected_steps,
                    );
                    if let Err(e) = cb.call1(py, args) {
                        if let Ok(mut slot) = failure.lock() {
                            slot.get_or_insert(e);
                        }
                        cancel.cancel();
                    }
                })
            })
        }
    };
    observer.with_cancel(cancel)
}

/// The cancellation flag of a fit that runs at `place`, and where a Ctrl-C it sees is kept.
/// On the calling thread ([`Place::Here`]) nobody else can look for signals, so the fit's own
/// checks do, at most every [`SIGNAL_POLL`] ([`Cancel::with_poll`]); elsewhere the calling
/// thread polls while it waits ([`spawn_and_poll`]).
fn cancel_for(place: &Place) -> (Cancel, Interrupt) {
    let interrupt: Interrupt = Arc::default();
    let cancel = match place {
        Place::Here(_) => {
            let slot = Arc::clone(&interrupt);
            Cancel::with_poll(SIGNAL_POLL, move || {
                match Python::attach(|py| py.check_signals()) {
                    Ok(()) => false,
                    Err(e) => {
                        if let Ok(mut slot) = slot.lock() {
                            slot.get_or_insert(e);
                        }
                        true
                    }
                }
            })
        }
        Place::Global | Place::Leased(_) => Cancel::new(),
    };
    (cancel, interrupt)
}

/// A `KeyboardInterrupt` (or another signal handler's exception) seen during a fit.
type Interrupt = Arc<Mutex<Option<PyErr>>>;

/// Runs `f` without the GIL at `place` ([`super::threads::place`]): on the calling thread, or
/// on a worker of the pool it will compute on (a leased pool, or rayon's global pool) while
/// the calling thread polls for signals (see the module docs); `cancel` and `interrupt` come
/// from [`cancel_for`] for that place. Raises, in order of precedence: the
/// `KeyboardInterrupt`, the callback's exception, the fit's error.
fn run_cancellable<T: Send>(
    py: Python<'_>,
    place: Place,
    (cancel, interrupt): (&Cancel, &Interrupt),
    failure: &Failure,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    let outcome = match place {
        Place::Here(pool) => py.detach(|| {
            let job = || catch_unwind(AssertUnwindSafe(f));
            match pool {
                Some(pool) => pool.install(job),
                None => job(),
            }
        }),
        Place::Global | Place::Leased(_) => {
            let lease = match place {
                Place::Leased(n) => Some(crate::threads::lease(n)?),
                Place::Global | Place::Here(_) => None,
            };
            let caller = std::thread::current();
            let done = AtomicBool::new(false);
            let slot = Mutex::new(None);
            let seen = py.detach(|| {
                let job = || {
                    let out = catch_unwind(AssertUnwindSafe(f));
                    if let Ok(mut slot) = slot.lock() {
                        *slot = Some(out);
                    }
                    done.store(true, Ordering::Release);
                    caller.unpark();
                };
                match &lease {
                    Some(lease) => lease
                        .pool()
                        .in_place_scope(|s| spawn_and_poll(s, job, &done, cancel)),
                    None => rayon::in_place_scope(|s| spawn_and_poll(s, job, &done, cancel)),
                }
            });
            if let (Some(e), Ok(mut slot)) = (seen, interrupt.lock()) {
                slot.get_or_insert(e);
            }
            slot.into_inner().ok().flatten().ok_or_else(|| {
                PyRuntimeError::new_err("internal error in milsvm: a fit returned nothing")
            })?
        }
    };
    if let Some(e) = interrupt.lock().ok().and_then(|mut slot| slot.take()) {
        return Err(e);
    }
    let stored = failure.lock().ok().and_then(|mut slot| slot.take());
    match outcome {
        Err(payload) => Err(panic_error(payload)),
        Ok(Err(Error::Cancelled)) => {
            Err(stored.unwrap_or_else(|| PyKeyboardInterrupt::new_err("the fit was cancelled")))
        }
        Ok(result) => match stored {
            Some(e) => Err(e),
            None => result.map_err(PyErr::from),
        },
    }
}

/// Spawns `job` on the pool of `s`, then waits for `done` on the calling thread, looking for
/// a pending signal every [`SIGNAL_POLL`]: the first one sets `cancel` and is returned.
fn spawn_and_poll<'scope>(
    s: &rayon::Scope<'scope>,
    job: impl FnOnce() + Send + 'scope,
    done: &AtomicBool,
    cancel: &Cancel,
) -> Option<PyErr> {
    s.spawn(|_| job());
    let mut interrupt: Option<PyErr> = None;
    while !done.load(Ordering::Acquire) {
        std::thread::park_timeout(SIGNAL_POLL);
        if interrupt.is_none() && !done.load(Ordering::Acquire) {
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                cancel.cancel();
                interrupt = Some(e);
            }
        }
    }
    interrupt
}

/// The stacked instances `x`, the offsets `bag_ptr` and the class indices `labels` as the core
/// takes them (made [`crate::bags::Bags`], which checks the values, where the fit runs: on its threads).
pub(crate) fn bags_and_labels(
    x: &Bound<'_, PyAny>,
    bag_ptr: PyReadonlyArray1<i64>,
    labels: PyReadonlyArray1<i64>,
) -> PyResult<(Instances, Vec<usize>, Vec<usize>)> {
    Ok((
        instances(x)?,
        to_usize(bag_ptr.as_slice()?, "bag_ptr")?,
        to_usize(labels.as_slice()?, "labels")?,
    ))
}

/// What every fit binding shares: the builder of type `P` from `params` with an observer of
/// `progress`, then the data from `input` (converted on the calling thread) and `f` run
/// cancellably on the fit's threads.
pub(crate) fn fit_call<P, I, T>(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    progress: Option<Py<PyAny>>,
    input: impl FnOnce() -> PyResult<I>,
    f: impl FnOnce(&P, I) -> Result<T, Error> + Send,
) -> PyResult<T>
where
    P: Hyperparams + Sync,
    I: Send,
    T: Send,
{
    let mut p: P = params_from(params)?;
    // n_jobs = 0 is refused by the fit's own check, on any pool
    let place = place(p.requested_n_jobs().filter(|&n| n > 0));
    let (cancel, interrupt) = cancel_for(&place);
    let failure: Failure = Arc::default();
    p.set_observer(observer_of(progress, cancel.clone(), failure.clone()));
    let input = input()?;
    run_cancellable(py, place, (&cancel, &interrupt), &failure, || f(&p, input))
}

/// Checks the parameters of a fit without data: the builder of type `P` filled from `params`
/// exactly as a fit binding fills it ([`fit_call`]), then every declared range and the cross-field hook
/// ([`crate::fit::ParamGuard::check_ref`]). Raises the `TypeError` / `ValueError` the fit would raise for
/// them; checks that need the data stay in the fit. A panic becomes `RuntimeError`.
pub(crate) fn check_with<P: Hyperparams>(params: &Bound<'_, PyDict>) -> PyResult<()> {
    let p: P = params_from(params)?;
    catch_unwind(AssertUnwindSafe(|| p.check_ref().map(|_| ())))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

/// One fit binding in the calling convention every fit shares, declared here once so that a
/// fit and its `C` path cannot drift apart: `$name(x, bag_ptr, labels, params, <args>,
/// progress=None)` fills the builder `$params` from the dict `params`, reads the stacked
/// instances `x` with their offsets `bag_ptr` and the class indices `labels`, runs `fit` on the
/// checked builder, the bags and the labels where the fit runs ([`fit_call`]), and turns its
/// output into the returned `$out` with `result`.
macro_rules! fit_binding {
    (
        $(#[$doc:meta])*
        $name:ident($($arg:ident: $ty:ty),*) -> $out:ty, $params:ty,
        fit: |$p:ident, $bags:ident, $labels:ident| $fit:expr,
        result: |$py:ident, $output:ident| $result:expr $(,)?
    ) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (x: "Instances", bag_ptr, labels, params: "Params", $($arg,)* progress: "Optional[Progress]" = None))]
        pub(crate) fn $name<'py>(
            py: Python<'py>,
            x: &Bound<'py, PyAny>,
            bag_ptr: PyReadonlyArray1<i64>,
            labels: PyReadonlyArray1<i64>,
            params: &Bound<'py, PyDict>,
            $($arg: $ty,)*
            progress: Option<Py<PyAny>>,
        ) -> PyResult<$out> {
            let $output = $crate::python::run::fit_call::<$params, _, _>(py, params, progress,
                || $crate::python::run::bags_and_labels(x, bag_ptr, labels),
                |$p, (x, bag_ptr, labels)| {
                    let $bags = &$crate::bags::Bags::new(x, bag_ptr)?;
                    let $labels = &labels;
                    $fit
                },
            )?;
            let $py = py;
            $result
        }
    };
}
pub(crate) use fit_binding;

/// Declares the bindings of one fit: `$fit(x, bag_ptr, labels, params, progress=None)`, which
/// fills the builder `$params` from the dict `params` and returns the typed result `$result`
/// (built by its `new(py, fit)`); `$check(params)`, which runs the same parsing and the
/// core's checks without data ([`check_with`]); and `$fit_hyperparameters()`, the builder's
/// declared parameters as `(name, default, range)` tuples; `register(m)` (or the name
/// given next) adds them and the result class. With `path $path` last (for a builder whose
/// checked type implements [`crate::fit::FitPath`]), also `$path(x, bag_ptr, labels, params, cs,
/// progress=None)`, the list of results at the values `cs` of `C` (a warm-started path).
macro_rules! fit_bindings {
    ($(#[$doc:meta])* $fit:ident, $check:ident, $specs:ident, $params:ty, $result:ty) => {
        $crate::python::run::fit_bindings!(
            $(#[$doc])* $fit, $check, $specs, $params, $result, register
        );
    };
    (
        $(#[$doc:meta])* $fit:ident, $check:ident, $specs:ident, $params:ty, $result:ty,
        $register:ident $(, path $path:ident)?
    ) => {
        $crate::python::run::fit_binding!(
            $(#[$doc])*
            $fit() -> $result, $params,
            fit: |p, bags, labels| $crate::fit::Fit::fit(p, bags, labels),
            result: |py, fit| <$result>::new(py, fit),
        );

        $(
            $crate::python::run::fit_binding!(
                /// The `C` path of this fit: one result per value of `cs`, in the order of `cs`,
                /// equal to independent fits up to the solver's tolerance (the `C` of `params` is
                /// ignored).
                $path(cs: Vec<f64>) -> Vec<$result>, $params,
                fit: |p, bags, labels| $crate::fit::FitPath::fit_path(p, bags, labels, &cs),
                result: |py, fits| fits.into_iter().map(|fit| <$result>::new(py, fit)).collect(),
            );
        )?

        /// Checks the parameters of this fit without data, as the fit parses and checks them:
        /// raises the same `TypeError` or `ValueError`; returns None when they pass. Checks
        /// that need the data (`n_xv` against the instances, ...) stay in the fit.
        #[pyfunction]
        #[pyo3(signature = (params: "Params"))]
        pub(crate) fn $check(params: &Bound<'_, PyDict>) -> PyResult<()> {
            $crate::python::run::check_with::<$params>(params)
        }

        /// The hyperparameters the core declares for this fit: `(name, default, range)`
        /// each, `range` the allowed values of a numeric parameter in words ("be a finite
        /// number > 0", "lie in (0, 1)") or None.
        #[pyfunction]
        #[pyo3(signature = () -> "Specs")]
        pub(crate) fn $specs(py: Python<'_>) -> PyResult<Vec<$crate::python::convert::SpecTuple<'_>>> {
            $crate::python::convert::specs_of::<$params>(py)
        }

        /// Adds the fit, its check, its hyperparameters, its path if any and its result class
        /// to the module.
        pub(crate) fn $register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            m.add_function(wrap_pyfunction!($fit, m)?)?;
            m.add_function(wrap_pyfunction!($check, m)?)?;
            $( m.add_function(wrap_pyfunction!($path, m)?)?; )?
            m.add_function(wrap_pyfunction!($specs, m)?)?;
            m.add_class::<$result>()
        }
    };
}
pub(crate) use fit_bindings;
