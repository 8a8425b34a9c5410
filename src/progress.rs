//! The channel between a running fit and its caller: progress reports going out
//! ([`Progress`], through an [`Observer`]) and cancellation coming in ([`Cancel`]).
//!
//! Every params struct of the crate carries an [`Observer`] (set with `.observer(...)`). A fit
//! reports each outer step (a SparseMI iteration, an annealing temperature, a relabelling
//! round) to it, and checks its [`Cancel`] flag at least between such steps and inside every
//! long inner loop (SMO iterations, Gram blocks, k-means passes); once the flag is set the fit
//! returns [`Error::Cancelled`] within about a millisecond of work, with nothing half-built
//! returned. The Python bindings set the flag on Ctrl-C.
//!
//! ```
//! use milsvm::progress::{Cancel, Observer};
//! use milsvm::{Bags, Error, NskParams};
//! use ndarray::array;
//!
//! let bags = Bags::from_dense_bags(&[array![[0.0]], array![[1.0]], array![[0.1]], array![[0.9]]])?;
//! let cancel = Cancel::new();
//! cancel.cancel(); // e.g. from another thread, while the fit runs
//! let params = NskParams::new().observer(Observer::default().with_cancel(cancel));
//! assert!(matches!(params.fit(&bags, &[0, 1, 0, 1]), Err(Error::Cancelled)));
//! # Ok::<(), milsvm::Error>(())
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// One step of a long fit, as reported to an [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The binary problem (its one-vs-rest class index; 0 for a binary fit).
    pub problem: usize,
    /// Steps done: outer iterations (SparseMI), temperatures (annealing) or rounds (mi-SVM /
    /// MI-SVM, SVM-CC, the one-class MI-SVM).
    pub step: usize,
    /// The cap on steps (`max_iter`).
    pub max_steps: usize,
    /// The objective after the step.
    pub objective: f64,
    /// The temperature of the step (annealing only).
    pub temperature: Option<f64>,
    /// The fit's current estimate of the steps it will take (at most `max_steps`; equal to it
    /// when the method has no better estimate). Annealing stops once the instance labels
    /// settle, usually long before `max_steps`: its estimate follows the schedule and the
    /// entropy of `p` (see [`crate::annealing`]).
    pub expected_steps: usize,
}

/// A cancellation flag shared between a fit and whoever may stop it (another thread, a signal
/// handler). Cloning shares the flag; the default flag can never be set.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// A new flag, not set.
    pub fn new() -> Self {
        Self(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Sets the flag: every fit observing it stops with [`Error::Cancelled`].
    pub fn cancel(&self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the flag is set.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `Err(Error::Cancelled)` once the flag is set.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// The function type an [`Observer`] calls.
pub type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// What a fit reports to and listens to: a progress callback (for progress bars and
/// per-iteration logs) and a [`Cancel`] flag. The callback is called from the fitting threads
/// (several at once for one-vs-rest problems), so it must be cheap and thread-safe; it cannot
/// change the fit. The default observes nothing and is never cancelled.
#[derive(Clone, Default)]
pub struct Observer {
    progress: Option<Arc<ProgressFn>>,
    cancel: Cancel,
}

impl Observer {
    /// An observer calling `f` at every step.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        Self {
            progress: Some(Arc::new(f)),
            cancel: Cancel::default(),
        }
    }

    /// The same observer, also stopping the fit once `cancel` is set.
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// The cancellation flag the fit checks.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// Reports one step.
    pub(crate) fn notify(&self, progress: Progress) {
        if let Some(f) = &self.progress {
            f(&progress);
        }
    }

    /// `Err(Error::Cancelled)` once the fit has been cancelled.
    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        self.cancel.check()
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.progress.is_some() {
            "Observer(..)"
        } else {
            "Observer(none)"
        })
    }
}

/// Two observers are equal when they call the same function object (or none) and share the
/// same cancellation flag (or have none).
impl PartialEq for Observer {
    fn eq(&self, other: &Self) -> bool {
        let same_fn = match (&self.progress, &other.progress) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        let same_flag = match (&self.cancel.0, &other.cancel.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_fn && same_flag
    }
}
