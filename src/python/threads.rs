//! Where the bindings' calls run ([`on_threads`]): `n_jobs = 1` on the calling thread itself.
//!
//! The core runs a call with `n_jobs = n` on a pool of `n` threads ([`crate::threads`]). For
//! `n = 1` that is a hand-off to another thread and back (two sleeping threads woken), which
//! costs more than a small call's work: several times the core fit of four one-instance bags,
//! or STK's score of one bag (the peers' first fits in `benches/bench_peers.py` measure it).
//! The calling thread of a one-thread call is therefore made the one
//! thread of its own pool (rayon's `use_current_thread`), built at its first such call and kept
//! (for at most [`MAX_OWN_POOLS`] threads of a process): the call runs there, and the core's
//! parallel loops in it run in place.
//!
//! A thread so made stays a worker of that pool: rayon's global pool, which the core uses for
//! `n_jobs = None`, is out of its reach. Calls with `None` from such a thread run on a leased
//! pool of the global pool's size instead (the same number of threads, at the cost of one
//! hand-off against a thread that never ran a one-thread call), so that they
//! keep every core. Rayon is private to this extension module: no other library in the
//! process shares these pools.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use rayon::ThreadPool;

use crate::error::Result;
use crate::threads::{lease, on_pool_of};

thread_local! {
    /// This thread's own pool of one thread (itself), once asked for: `None` when the thread
    /// was already another pool's worker, or [`MAX_OWN_POOLS`] threads had one ([`own_pool`]).
    static OWN: OnceCell<Option<&'static ThreadPool>> = const { OnceCell::new() };
}

/// Threads given a pool of their own at most: each such pool stays allocated after its thread
/// ends (rayon keeps the worker state of a thread it did not spawn), about 10 KB measured, so a
/// program that starts a thread per call (a thread-per-request server) would grow without
/// bound. Later threads run one-thread calls on a leased pool, with the hand-off.
const MAX_OWN_POOLS: usize = 64;

/// Own pools built so far, in the process ([`MAX_OWN_POOLS`]).
static OWN_POOLS: AtomicUsize = AtomicUsize::new(0);

/// This thread's own one-thread pool: built at the first call (and never freed: a pool that
/// runs on its builder's thread cannot be shut down), or `None` on a thread that is a worker of
/// another pool, or once [`MAX_OWN_POOLS`] threads have one.
pub(crate) fn own_pool() -> Option<&'static ThreadPool> {
    OWN.with(|own| {
        *own.get_or_init(|| {
            if rayon::current_thread_index().is_some()
                || OWN_POOLS.fetch_add(1, Ordering::Relaxed) >= MAX_OWN_POOLS
            {
                return None;
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .ok()?;
            Some(&*Box::leak(Box::new(pool)))
        })
    })
}

/// The number of threads `n_jobs = None` means, as rayon sizes its global pool (which the
/// bindings never configure): `RAYON_NUM_THREADS` when set to a number > 0, else the
/// parallelism the system grants the process. Worked out here rather than asked of rayon, whose
/// answer on its own pool's worker is that pool's size, and whose global pool would be built
/// (its threads spawned) by the question.
pub(crate) fn default_threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1)
    })
}

/// Where a call with `n_jobs` runs from the calling thread ([`place`]).
pub(crate) enum Place {
    /// On the calling thread: inside this thread's own pool when given, else in place (the
    /// thread already is a worker of a pool of the requested size).
    Here(Option<&'static ThreadPool>),
    /// On rayon's global pool (`n_jobs = None` from a thread that is no pool's worker).
    Global,
    /// On a leased pool of this many threads ([`crate::threads::lease`]).
    Leased(usize),
}

/// Where a call with `n_jobs` (`Some(n)`, `n >= 1`, or `None`) runs from this thread: a
/// one-thread call here (in this thread's own pool, built at its first such call), `None` on
/// the global pool (on a leased pool of its size from a pool's worker, which cannot reach the
/// global pool), `Some(n)` on a leased pool of `n` threads.
pub(crate) fn place(n_jobs: Option<usize>) -> Place {
    match n_jobs {
        Some(n) if on_pool_of(n) => Place::Here(None),
        Some(1) => own_pool().map_or(Place::Leased(1), |pool| Place::Here(Some(pool))),
        Some(n) => Place::Leased(n),
        None if rayon::current_thread_index().is_some() => Place::Leased(default_threads()),
        None => Place::Global,
    }
}

/// Runs `f` with `n_jobs` threads where [`place`] puts it. Used by the bindings in place of
/// [`crate::threads::with_threads`] (which never makes a thread its own pool's worker: that
/// would change what rayon's global pool means to a Rust program's own code on that thread).
pub(crate) fn on_threads<T: Send>(
    n_jobs: Option<usize>,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    Ok(match place(n_jobs) {
        Place::Here(None) | Place::Global => f(),
        Place::Here(Some(pool)) => pool.install(f),
        Place::Leased(n) => lease(n)?.pool().install(f),
    })
}
