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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

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
    /// entropy of `p` (see `annealing`).
    pub expected_steps: usize,
}

/// A cancellation flag shared between a fit and whoever may stop it (another thread, a signal
/// handler, or a poll the fit's own checks run: [`Cancel::with_poll`]). Cloning shares the
/// flag; the default flag can never be set.
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<Flag>>);

/// The shared state of a [`Cancel`].
struct Flag {
    set: AtomicBool,
    poll: Option<Poll>,
}

/// A function the checks of a [`Cancel`] call now and then ([`Cancel::with_poll`]).
struct Poll {
    /// Run only on this thread (the one that made the flag).
    thread: ThreadId,
    /// Nanoseconds since `start` before which the next check does not poll.
    next: AtomicU64,
    start: Instant,
    every: Duration,
    f: Box<dyn Fn() -> bool + Send + Sync>,
}

impl Cancel {
    /// A new flag, not set.
    pub fn new() -> Self {
        Self(Some(Arc::new(Flag {
            set: AtomicBool::new(false),
            poll: None,
        })))
    }

    /// A new flag, not set, that also sets itself when `poll` returns true. The flag's checks
    /// ([`Cancel::is_cancelled`], [`Cancel::check`]) on the calling thread run `poll` at most
    /// once every `every` (the first after `every`); on other threads they only read the flag.
    /// This is how a fit that runs on the thread which must watch for an event (Python's
    /// signal handlers run only on the main thread) still sees it: the Python bindings poll
    /// for Ctrl-C this way when `n_jobs = 1` fits run on the calling thread.
    pub fn with_poll(every: Duration, poll: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(Flag {
            set: AtomicBool::new(false),
            poll: Some(Poll {
                thread: std::thread::current().id(),
                next: AtomicU64::new(duration_nanos(every)),
                start: Instant::now(),
                every,
                f: Box::new(poll),
            }),
        })))
    }

    /// Sets the flag: every fit observing it stops with [`Error::Cancelled`].
    pub fn cancel(&self) {
        if let Some(flag) = &self.0 {
            flag.set.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the flag is set (after running its poll, when one is due: [`Cancel::with_poll`]).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        match &self.0 {
            None => false,
            Some(flag) if flag.set.load(Ordering::Relaxed) => true,
            Some(flag) => {
                let asked = flag.poll.as_ref().is_some_and(Poll::due_and_true);
                if asked {
                    flag.set.store(true, Ordering::Relaxed);
                }
                asked
            }
        }
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

    /// Whether the flag is set, without polling.
    fn is_set_now(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.set.load(Ordering::Relaxed))
    }
}

impl Poll {
    /// Runs the poll if it is due on this thread; whether it asked to cancel.
    fn due_and_true(&self) -> bool {
        if std::thread::current().id() != self.thread {
            return false;
        }
        let now = duration_nanos(self.start.elapsed());
        if now < self.next.load(Ordering::Relaxed) {
            return false;
        }
        self.next.store(
            now.saturating_add(duration_nanos(self.every)),
            Ordering::Relaxed,
        );
        (self.f)()
    }
}

/// A duration in nanoseconds, saturated at `u64::MAX` (about 584 years).
fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Cancel").field(&self.is_set_now()).finish()
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

/// Why an iterative method stopped (every family's outer loop reports one per binary problem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The method's stopping rule was met (the change fell below `tol`, the entropy below
    /// `eps`, no label or constraint changed, the KKT gap below the tolerance).
    Converged,
    /// The cap (`max_iter`) was reached first; the last iterate is kept.
    MaxIter,
}

impl StopReason {
    /// Whether the stopping rule was met.
    pub fn converged(&self) -> bool {
        *self == StopReason::Converged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_poll_runs_on_its_own_thread_when_due_and_its_true_sets_the_flag() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        // due at every check; asks to cancel at its third call
        let cancel = Cancel::with_poll(Duration::ZERO, move || {
            seen.fetch_add(1, Ordering::Relaxed) >= 2
        });
        std::thread::scope(|s| {
            s.spawn(|| assert!(!cancel.is_cancelled(), "another thread's check"));
        });
        assert_eq!(calls.load(Ordering::Relaxed), 0, "polled on another thread");
        assert!(!cancel.is_cancelled());
        assert!(cancel.check().is_ok());
        assert!(matches!(cancel.check(), Err(Error::Cancelled)));
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        // set: later checks read the flag and poll no more, on every clone and thread
        let clone = cancel.clone();
        assert!(clone.is_cancelled());
        std::thread::scope(|s| {
            s.spawn(|| assert!(clone.is_cancelled()));
        });
        assert_eq!(calls.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_poll_is_not_run_before_it_is_due() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let cancel = Cancel::with_poll(Duration::from_secs(3600), move || {
            seen.fetch_add(1, Ordering::Relaxed);
            true
        });
        for _ in 0..1000 {
            assert!(!cancel.is_cancelled());
        }
        assert_eq!(calls.load(Ordering::Relaxed), 0);
        cancel.cancel();
        assert!(cancel.is_cancelled());
        assert_eq!(format!("{cancel:?}"), "Cancel(true)");
    }
}
