"""Two speed/memory measurements of SparseMI.

(a) TST1, sparse against densified input. The same fit,
    ``SparseMI(n_xv=10, n_basis=100, max_iter=50, random_state=0)`` (C = 1, gamma = "scale",
    --threads milsvm threads, default 1), on all 400 TST1 bags (3,224 instances x 66,552 TF-IDF
    features, ~17 nonzeros an instance), once with the bags as CSR matrices (the basis-vector mode
    works on X B^T, a sparse product, and never densifies X) and once the naive way: the same bags
    densified with ``.toarray()`` (1.7 GB of float64) and passed to the same estimator.
    Each runs in its own child process (``--child sparse|dense``) so that their peak memory is
    measured separately: the child reads ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after
    importing numpy / scipy / milsvm (the baseline) and again after the fit; we report the
    absolute peak RSS and its increase over the baseline (the increase holds the data, densified
    or not, and the fit's own memory). Wall time is that of ``fit`` alone (min over --reps fits
    in the child); the load / densify time is printed apart. Targets: sparse >= 20x faster and
    >= 10x less memory (increase) than dense. The final objective g and the training predictions
    of the two fits are compared (same random basis instances: they should agree up to rounding).

(b) COREL-20, multi-class SparseMI (20 one-vs-rest problems with shared XVs): all 2000 bags,
    features standardised (milsvm.BagStandardScaler on all instances), n_xv = 100, C = 10,
    gamma = 1/d, max_iter = 20, random_state = 0; fit with n_jobs = 1 and n_jobs = 2 (min over
    --reps fits each), the time ratio, and an assertion that the two models are bitwise identical
    (np.array_equal on xv_, coef_ and intercept_). On a loaded machine the n_jobs = 2 speed-up
    is lower than on an idle one: the load average is printed.

Run (from the repository root):

    python benches/speed.py sparse                 # both parts
    python benches/speed.py sparse --skip-corel    # (a) only
    python benches/speed.py sparse --skip-tst1 --reps 3
    python benches/speed.py sparse --child sparse  # one child alone (prints one JSON line)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import child_command  # noqa: E402
from _protocol import DEFAULT_DATA  # noqa: E402


def _rss_kb():
    """Current resident set size in KiB (Linux /proc)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def child(mode, args):
    """One TST1 fit in this process; prints a JSON line with times and memory."""
    import gc

    import milsvm
    import milsvm.datasets
    import numpy as np
    import scipy.sparse  # noqa: F401

    # the memory readings in KiB, as they are taken: after the imports, after the data, at the end
    mem = dict(
        base_peak_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
        base_rss_kb=_rss_kb(),
    )
    t0 = time.perf_counter()
    bags, y = milsvm.datasets.load_mill(args.data / "tst1" / "tst1.data")
    if mode == "dense":
        bags = [b.toarray() for b in bags]
        gc.collect()
    prep = time.perf_counter() - t0
    mem["data_rss_kb"] = _rss_kb()
    times = []
    for _ in range(args.reps):
        est = milsvm.SparseMI(
            n_xv=10, n_basis=100, max_iter=50, random_state=0, n_jobs=args.threads
        )
        t0 = time.perf_counter()
        est.fit(bags, y)
        times.append(time.perf_counter() - t0)
    mem["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pred = np.asarray(est.predict(bags))
    print(
        json.dumps(
            dict(
                mode=mode,
                fit_s=min(times),
                fit_times=times,
                prep_s=prep,
                **mem,
                n_iter=int(est.n_iter_),
                g0=float(est.objective_history_[0]),
                g=float(est.objective_history_[-1]),
                train_acc=float(np.mean(pred == y)),
                pred=pred.tolist(),
                n_features=int(est.n_features_in_),
            )
        )
    )


def run_child(mode, args):
    cmd = child_command(
        __file__,
        "--child",
        mode,
        "--reps",
        args.reps,
        "--threads",
        args.threads,
        "--data",
        args.data,
    )
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"child {mode} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mib(kb):
    return kb / 1024.0


def part_tst1(args):
    print(
        "(a) TST1: SparseMI(n_xv=10, n_basis=100, max_iter=50, random_state=0, "
        f"n_jobs={args.threads}), sparse CSR bags vs densified bags, each in its own process (min "
        f"over {args.reps} fit(s))"
    )
    res = {}
    for mode in ("sparse", "dense"):
        res[mode] = run_child(mode, args)
    s, d = res["sparse"], res["dense"]
    header = (
        f"  {'input':<7} {'fit s':>8} {'load s':>7} {'peak RSS MiB':>13} {'baseline':>9} "
        f"{'increase':>9}  {'iters':>5} {'g':>12} {'train acc':>9}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for mode in ("sparse", "dense"):
        r = res[mode]
        inc = r["peak_kb"] - r["base_peak_kb"]
        print(
            f"  {mode:<7} {r['fit_s']:8.3f} {r['prep_s']:7.2f} {mib(r['peak_kb']):13.1f} "
            f"{mib(r['base_peak_kb']):9.1f} {mib(inc):9.1f}  {r['n_iter']:>5} {r['g']:12.6g} "
            f"{r['train_acc']:9.4f}"
        )
    speed = d["fit_s"] / s["fit_s"]
    inc_ratio = (d["peak_kb"] - d["base_peak_kb"]) / max(1, s["peak_kb"] - s["base_peak_kb"])
    abs_ratio = d["peak_kb"] / s["peak_kb"]
    agree = sum(a == b for a, b in zip(s["pred"], d["pred"])) / len(s["pred"])
    rel_g = abs(s["g"] - d["g"]) / abs(d["g"])
    print(
        f"  dense / sparse: fit time {speed:.1f}x (target >= 20x: "
        f"{'met' if speed >= 20 else 'NOT met'}); memory increase {inc_ratio:.1f}x (target >= "
        f"10x: {'met' if inc_ratio >= 10 else 'NOT met'}); absolute peak RSS {abs_ratio:.1f}x"
    )
    print(
        f"  agreement: final g relative difference {rel_g:.2e}, training predictions identical on "
        f"{100 * agree:.1f}% of bags"
    )
    return res


def part_corel(args):
    import milsvm
    import milsvm.datasets
    import numpy as np

    bags, y = milsvm.datasets.load_mill(args.data / "corel" / "corel2000.data")
    B = milsvm.BagStandardScaler().fit(bags).transform(bags)
    d = B.n_features
    print(
        f"\n(b) COREL-20: {len(B)} bags, {B.n_instances} instances, {d} features, "
        f"{len(np.unique(y))} classes; SparseMI(n_xv=100, C=10, gamma=1/{d}, max_iter=20, "
        f"random_state=0), standardised; min over {args.reps} fit(s); load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    models, times = {}, {}
    for n_jobs in (1, 2):
        ts = []
        for _ in range(args.reps):
            est = milsvm.SparseMI(
                n_xv=100, C=10.0, gamma=1.0 / d, max_iter=20, random_state=0, n_jobs=n_jobs
            )
            t0 = time.perf_counter()
            est.fit(B, y)
            ts.append(time.perf_counter() - t0)
        models[n_jobs], times[n_jobs] = est, min(ts)
        print(
            f"  n_jobs={n_jobs}: fit {times[n_jobs]:.3f} s ({est.n_iter_} iterations, "
            f"g {est.objective_history_[0]:.6g} -> {est.objective_history_[-1]:.6g})"
        )
    a, b = models[1], models[2]
    same = (
        np.array_equal(a.xv_, b.xv_)
        and np.array_equal(a.coef_, b.coef_)
        and np.array_equal(a.intercept_, b.intercept_)
    )
    print(
        f"  speed-up n_jobs=2 / n_jobs=1: {times[1] / times[2]:.2f}x; models bitwise identical: "
        f"{same}"
    )
    assert same, "n_jobs=1 and n_jobs=2 gave different models"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", choices=["sparse", "dense"], help=argparse.SUPPRESS)
    parser.add_argument(
        "--reps", type=int, default=1, help="fits per measurement (the minimum time is kept)"
    )
    parser.add_argument("--threads", type=int, default=1, help="milsvm n_jobs of the TST1 fits")
    parser.add_argument("--skip-tst1", action="store_true")
    parser.add_argument("--skip-corel", action="store_true")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if args.child:
        child(args.child, args)
        return
    t0 = time.perf_counter()
    if not args.skip_tst1:
        part_tst1(args)
    if not args.skip_corel:
        part_corel(args)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
