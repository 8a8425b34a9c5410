"""The thread pools fits run on (``src/threads.rs``, ``src/python/threads.rs``): a fit with
``n_jobs=1`` runs on the calling thread; with ``n_jobs=n > 1`` it computes on ``n`` threads, on
a pool kept after use; fits from several Python threads at once each get their own pool; a
forked child builds its own pools instead of using its parent's, whose threads it does not
have; a thread that ran a one-thread fit still gives ``n_jobs=None`` every core.

Each check runs in a fresh process, so that no earlier fit has built a pool.
"""

import subprocess
import sys
import textwrap

import milsvm
import numpy as np
from conftest import easy_bags

HEADER = textwrap.dedent("""
    import os, sys, numpy as np, milsvm
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(3, 4)) + (i % 2) for i in range(40)]
    y = np.arange(40) % 2
    def threads():
        return len(os.listdir("/proc/self/task"))
""")


def run(body):
    """Runs HEADER + body in a fresh interpreter with one BLAS thread; returns its stdout."""
    env = {
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-c", HEADER + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_fit_with_n_jobs_uses_that_many_threads_and_keeps_its_pool():
    # Before: the bags were checked on rayon's global pool (one thread per core, kept), every
    # fit spawned a thread of its own plus a new pool, and then a one-thread fit ran on a
    # pool thread of its own.
    before, after_one, after_three, after_two, again = run("""
        before = threads()
        milsvm.STK(n_jobs=1).fit(bags, y)
        after_one = threads()
        for _ in range(3):
            milsvm.NSK(n_jobs=1).fit(bags, y)
        after_three = threads()
        milsvm.NSK(n_jobs=2).fit(bags, y)
        after_two = threads()
        milsvm.STK(n_jobs=2).fit(bags, y)
        print(before, after_one, after_three, after_two, threads())
    """)
    assert after_one == before  # n_jobs=1: the calling thread, no other
    assert after_three == after_one
    assert int(after_two) - int(after_three) == 2  # a pool of two, kept
    assert again == after_two  # reused, not rebuilt


def test_pools_per_thread_count():
    counts = run("""
        base = threads()
        milsvm.STK(n_jobs=2).fit(bags, y)
        two = threads()
        milsvm.STK(n_jobs=3).fit(bags, y)
        milsvm.STK(n_jobs=2).fit(bags, y)
        print(two - base, threads() - base)
    """)
    assert counts == ["2", "5"]


def test_after_a_one_thread_call_n_jobs_none_still_uses_more_threads_and_gives_the_same_results():
    # The calling thread becomes the one worker of its own pool, from which rayon's global pool
    # is out of reach: n_jobs=None must not run on that one thread, nor wait on it (a hang).
    out = run("""
        base = threads()
        one = milsvm.STK(n_jobs=1).fit(bags, y)
        s1 = one.decision_function(bags)
        after_one = threads()
        every = milsvm.NSK().fit(bags, y)
        s_none = every.decision_function(bags)
        s_none_of_one = one.set_params(n_jobs=None).decision_function(bags)
        ref = milsvm.NSK(n_jobs=3).fit(bags, y).decision_function(bags)
        print(after_one - base, threads() - after_one,
              np.array_equal(s_none, ref), np.array_equal(s1, s_none_of_one))
    """)
    added_by_one, added_later, same, same_of_one = out
    assert added_by_one == "0"
    assert int(added_later) >= 1 + 3  # a pool for n_jobs=None (every core) and one of three
    assert same == "True" and same_of_one == "True"


def test_a_forked_child_builds_its_own_pool():
    # The child inherits the parent's idle pool but not its thread: using it would hang.
    out = run("""
        import multiprocessing as mp
        s = milsvm.STK(n_jobs=1).fit(bags, y).decision_function(bags)
        def child(_):
            return milsvm.STK(n_jobs=1).fit(bags, y).decision_function(bags)
        with mp.get_context("fork").Pool(1) as pool:
            c = pool.apply_async(child, (0,)).get(timeout=120)
        print(np.array_equal(s, c))
    """)
    assert out == ["True"]


def test_concurrent_fits_from_python_threads_equal_serial_fits():
    from concurrent.futures import ThreadPoolExecutor

    data = [easy_bags(n_bags=30, seed=s) for s in range(6)]

    def fit(bags_y):
        bags, y = bags_y
        return milsvm.NSK(n_jobs=1).fit(bags, y).decision_function(bags)

    serial = [fit(d) for d in data]
    with ThreadPoolExecutor(3) as ex:
        concurrent = list(ex.map(fit, data))
    for a, b in zip(serial, concurrent):
        np.testing.assert_array_equal(a, b)


def test_one_thread_calls_from_many_short_lived_threads_all_work_alike():
    # Past the cap on threads with a pool of their own (64), threads run one-thread calls on a
    # leased pool: the same results, and no thread left behind per call.
    out = run("""
        import threading
        ref = milsvm.STK(n_jobs=1).fit(bags, y).decision_function(bags)
        results = []
        def one():
            results.append(milsvm.STK(n_jobs=1).fit(bags, y).decision_function(bags))
        base = threads()
        for _ in range(100):
            t = threading.Thread(target=one)
            t.start()
            t.join()
        print(len(results), all(np.array_equal(r, ref) for r in results), threads() - base <= 1)
    """)
    assert out == ["100", "True", "True"]
