//! The thread pools that fits and predictions run on ([`with_threads`]).
//!
//! A call with `n_jobs = n` runs on a pool of `n` threads. Building a pool spawns its threads,
//! which costs as much as a small fit and used to be paid at every call. Pools are therefore kept
//! after use and lent out again ([`lease`]): a call takes an idle pool of its size, or builds
//! one when every pool of that size is in use (calls from several threads at once each get
//! their own pool, so they run side by side as before), and gives it back when it returns.
//! Results never depend on which pool of a size a call gets: every parallel loop of the crate
//! gives the same bits for any thread count.
//!
//! A process forked after a pool was built has none of its threads. The idle pools are keyed
//! by the process id and forgotten in a child, which builds its own.

use std::sync::{Arc, Mutex, OnceLock};

use rayon::ThreadPool;

use crate::error::{Error, Result};

/// The idle pools, with the id of the process that built them.
struct Idle {
    pid: u32,
    pools: Vec<(usize, Arc<ThreadPool>)>,
}

fn idle() -> &'static Mutex<Idle> {
    static IDLE: OnceLock<Mutex<Idle>> = OnceLock::new();
    IDLE.get_or_init(|| {
        Mutex::new(Idle {
            pid: std::process::id(),
            pools: Vec::new(),
        })
    })
}

/// A pool of `n` threads lent to one caller; back to the idle pools when dropped.
pub struct Lease {
    n: usize,
    pool: Arc<ThreadPool>,
}

impl Lease {
    /// The pool.
    pub fn pool(&self) -> &ThreadPool {
        &self.pool
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(mut idle) = idle().lock() {
            if idle.pid == std::process::id() {
                idle.pools.push((self.n, Arc::clone(&self.pool)));
            }
        }
    }
}

/// An idle pool of `n` threads, or a new one if none is idle.
pub fn lease(n: usize) -> Result<Lease> {
    let reused = idle().lock().ok().and_then(|mut idle| {
        let pid = std::process::id();
        if idle.pid != pid {
            // Forked: the pools' threads do not exist here; never touch them again.
            std::mem::forget(std::mem::take(&mut idle.pools));
            idle.pid = pid;
        }
        let k = idle.pools.iter().rposition(|(m, _)| *m == n)?;
        Some(idle.pools.swap_remove(k).1)
    });
    let pool = match reused {
        Some(pool) => pool,
        None => Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Error::Solver(e.to_string()))?,
        ),
    };
    Ok(Lease { n, pool })
}

/// Runs `f` on `n_jobs` threads: `None` on the calling thread (rayon's global pool for its
/// parallel loops, or the pool the caller already runs on); `Some(n)` on the calling thread
/// when it already runs on a pool of `n` threads, else on a leased pool of `n` threads.
pub fn with_threads<T: Send>(n_jobs: Option<usize>, f: impl FnOnce() -> T + Send) -> Result<T> {
    match n_jobs {
        Some(n) if !on_pool_of(n) => Ok(lease(n)?.pool().install(f)),
        _ => Ok(f()),
    }
}

/// Whether the calling thread is a worker of a pool of `n` threads.
pub fn on_pool_of(n: usize) -> bool {
    rayon::current_thread_index().is_some() && rayon::current_num_threads() == n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_the_requested_number_of_threads() {
        for n in [1, 2, 3] {
            assert_eq!(
                with_threads(Some(n), rayon::current_num_threads).ok(),
                Some(n)
            );
        }
        // nested: the same size runs in place, another size on its own pool
        let nested = with_threads(Some(2), || {
            let same = with_threads(Some(2), rayon::current_num_threads).ok();
            let other = with_threads(Some(1), rayon::current_num_threads).ok();
            (same, other)
        });
        assert_eq!(nested.ok(), Some((Some(2), Some(1))));
    }

    #[test]
    fn idle_pools_are_reused_and_concurrent_callers_get_their_own() {
        let a = lease(5).ok();
        let b = lease(5).ok();
        let (pa, pb) = (
            a.as_ref().map(|l| l.pool() as *const _),
            b.as_ref().map(|l| l.pool() as *const _),
        );
        assert!(
            pa.is_some() && pb.is_some() && pa != pb,
            "two leases at once, one pool"
        );
        drop(b);
        let c = lease(5).ok();
        assert_eq!(
            c.as_ref().map(|l| l.pool() as *const _),
            pb,
            "an idle pool was not reused"
        );
        drop(a);
    }
}
