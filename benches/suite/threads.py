"""One fit on 1 and on 2 (or more) threads, against the machine's plain read of memory (issue
40, "every core"): linear MISVM and miSVM, and SparseMI (rbf, ``n_xv=10``, 10 outer
iterations, as in ``benches/scale.py deep``), on float32 embedding bags
(``milsvm.datasets.make_embedding_bags``, seed 0; the default is about 400k x 512)::

    nice python benches/speed.py threads                      # 1 and 2 threads, best of 3
    nice python benches/speed.py threads --threads 1 16 --bags 2000 \
        --estimators MISVM miSVM SparseMI                     # a 16-core machine
    python benches/speed.py threads --smoke

The runs are interleaved (1, 2, 1, 2, ...) and the best of ``--repeats`` is kept for each
thread count, so that a load that comes and goes hits both alike. For each fit it prints the
time, the speed-up over the first thread count, the passes over the data (the rows the
linear solver's passes read, over the rows: ``milsvm._core.linear_rows_read``; ``-`` for
SparseMI, whose passes that counter does not count), the bytes of one pass, and the bytes read
per second against a plain read of the same matrix on as many threads (NumPy's ``float32``
maximum, a SIMD loop bound by memory, of one contiguous share of the rows per thread, the GIL
released: the bandwidth the machine allows a plain read). A loop bound by the cores rather than
memory (``np.sin`` over arrays that stay in cache) gives the speed-up the machine allows work
that does not wait on memory.
"""

from __future__ import annotations

import argparse
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import deep_scale
import numpy as np


def plain_read(X, threads, repeats=5):
    """Bytes per second of a plain read of ``X`` (the maximum of its values) on ``threads``
    threads (best of ``repeats``)."""
    cuts = np.linspace(0, X.shape[0], threads + 1).astype(int)
    shares = [X[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    best = np.inf
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(lambda s: float(np.maximum.reduce(s, axis=None)), shares))
            best = min(best, time.perf_counter() - start)
    return X.nbytes / best


def plain_compute(threads, repeats=5, calls=500, size=65536):
    """Values per second of a loop bound by the cores, not memory, on ``threads`` threads (best
    of ``repeats``): each thread applies ``np.sin`` in place ``calls`` times to its own
    ``size``-value float64 array (512 KiB, in its core's L2 cache; the GIL released in the
    ufunc's loop). Its ratio between thread counts is what the machine allows work that does
    not wait on memory."""
    arrays = [np.linspace(0.0, 1.0, size) for _ in range(threads)]

    def work(k):
        for _ in range(calls):
            np.sin(arrays[k], out=arrays[k])

    best = np.inf
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(work, range(threads)))
            best = min(best, time.perf_counter() - start)
    return threads * calls * size / best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bags", type=int, default=800, help="bags (default 800)")
    ap.add_argument("--bag-size", type=int, default=500, help="mean instances a bag (500)")
    ap.add_argument("--features", type=int, default=512, help="features (default 512)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts")
    ap.add_argument("--repeats", type=int, default=3, help="fits per thread count (best kept)")
    ap.add_argument(
        "--estimators",
        nargs="+",
        default=["MISVM", "miSVM"],
        choices=["MISVM", "miSVM", "SparseMI"],
    )
    ap.add_argument("--smoke", action="store_true", help="a small set, one repeat")
    args = ap.parse_args()
    if args.smoke:
        args.bags, args.bag_size, args.features, args.repeats = 40, 50, 32, 1

    import milsvm
    from milsvm import _core
    from milsvm.datasets import make_embedding_bags
    from sklearn.exceptions import ConvergenceWarning

    bags, y = make_embedding_bags(
        args.bags, mean_bag_size=args.bag_size, n_features=args.features, random_state=0
    )
    sizes = [len(b) for b in bags]
    X = np.concatenate(bags).astype(np.float32, copy=False)
    del bags
    data = milsvm.Bags.from_instances(X, sizes)
    n, d = X.shape
    row_bytes = d * X.itemsize
    print(
        f"# {n} x {d} float32 ({X.nbytes / 1e9:.2f} GB) in {args.bags} bags; "
        f"threads {args.threads}, best of {args.repeats}, interleaved"
    )
    read = {t: plain_read(X, t) for t in args.threads}
    for t in args.threads:
        print(f"plain read, {t} thread(s): {read[t] / 1e9:.1f} GB/s")
    compute = {t: plain_compute(t) for t in args.threads}
    for t in args.threads:
        print(
            f"compute-bound loop, {t} thread(s): {compute[t] / 1e9:.2f} G values/s "
            f"({compute[t] / compute[args.threads[0]]:.2f}x)"
        )

    # a build without the counter prints no passes
    rows_read = getattr(_core, "linear_rows_read", lambda: float("nan"))

    def make(name, threads):
        # the configurations of benches/scale.py deep, on `threads` threads
        method = name if name == "SparseMI" else f"{name}-linear"
        return deep_scale.estimator(method).set_params(n_jobs=threads)

    def fit(name, threads):
        est = make(name, threads)
        before = rows_read()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(data, y)
        seconds = time.perf_counter() - start
        return seconds, rows_read() - before, est.n_iter_

    # one small fit first: the imports a first fit makes are not timed
    small = milsvm.Bags.from_instances(X[: sizes[0] + sizes[1]], sizes[:2])
    for name in args.estimators:
        make(name, 1).fit(small, [0, 1])

    print(
        f"{'estimator':<9} {'threads':>7} {'best s':>8} {'speed-up':>8} {'passes':>7} "
        f"{'MB/pass':>8} {'GB/s':>6} {'of read':>7}  rounds"
    )
    for name in args.estimators:
        best = {t: None for t in args.threads}
        for _ in range(args.repeats):
            for t in args.threads:
                run = fit(name, t)
                if best[t] is None or run[0] < best[t][0]:
                    best[t] = run
        base = best[args.threads[0]][0]
        for t in args.threads:
            seconds, rows, rounds = best[t]
            rate = rows * row_bytes / seconds
            passes, gbs, share = (
                (f"{rows / n:>7.1f}", f"{rate / 1e9:>6.1f}", f"{rate / read[t]:>6.0%}")
                if rows
                else (f"{'-':>7}", f"{'-':>6}", f"{'-':>6}")
            )
            print(
                f"{name:<9} {t:>7} {seconds:>8.3f} {base / seconds:>7.2f}x {passes} "
                f"{n * row_bytes / 1e6:>8.1f} {gbs} {share}  {rounds}"
            )


if __name__ == "__main__":
    main()
