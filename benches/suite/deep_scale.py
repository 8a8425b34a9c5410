"""Deep-feature scale (issue 18): fits on pathology-shaped float32 embedding bags read from
memory-mapped ``.npy`` files, each fit in its own process under ``/usr/bin/time -v`` (fit time,
test AUC, peak RSS beside the data's own size).

Three steps, each a subcommand:

    # 1. the data: training bags (X.npy, sizes.npy, y.npy) and test bags of the same draw
    python benches/scale.py deep make --dir /tmp/deep1m --n-bags 1000 --test-bags 200 \
        --mean-bag-size 1000 --n-features 512
    # 2. one fit (what the driver runs under /usr/bin/time -v)
    python benches/scale.py deep fit --dir /tmp/deep1m --method MISVM-linear
    # 3. the driver: every method in its own process, one at a time, a table
    python benches/scale.py deep run --dir /tmp/deep1m --methods MISVM-linear miSVM-linear \
        ALSVM-linear SparseMI DIY --out benches/results/deep_scale_1m.txt

The bags are ``milsvm.datasets.make_embedding_bags(n_bags + test_bags, ...)`` (seed 0, defaults
otherwise: 5 % witnesses, separation 6), split into the first ``n_bags`` for training and the
rest for testing; the training instances are one C-contiguous float32 matrix in ``X.npy``,
loaded with ``mmap_mode="r"`` and given as ``Bags.from_instances(X, sizes)``: the core reads the
file's pages in place (no copy). ``DIY`` is the relabelling loop users write around
scikit-learn's ``LinearSVC`` (liblinear, float64: it copies the data to float64).

Methods: ``MISVM-linear``, ``miSVM-linear``, ``ALSVM-linear`` (``kernel="linear"``, C = 1, the
linear primal route), ``SparseMI`` (rbf, ``n_xv=10``, C = 1, ``gamma="scale"``,
``max_iter=10``), ``DIY``. Unset ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` for the DIY row
(the driver does it for every child).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import add_seed  # noqa: E402
from _protocol import diy_mi_svm  # noqa: E402

METHODS = ("MISVM-linear", "miSVM-linear", "ALSVM-linear", "SparseMI", "DIY")


def make(args):
    from milsvm.datasets import make_embedding_bags

    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    n_total = args.n_bags + args.test_bags
    bags, y = make_embedding_bags(
        n_total,
        mean_bag_size=args.mean_bag_size,
        n_features=args.n_features,
        random_state=args.seed,
    )
    n_instances = sum(len(b) for b in bags[: args.n_bags])
    for name, lo, hi in (("", 0, args.n_bags), ("test_", args.n_bags, n_total)):
        sizes = np.array([len(b) for b in bags[lo:hi]], dtype=np.int64)
        lab = y[lo:hi]
        out = np.lib.format.open_memmap(
            d / f"{name}X.npy",
            mode="w+",
            dtype=np.float32,
            shape=(int(sizes.sum()), args.n_features),
        )
        row = 0
        for i in range(lo, hi):
            # each bag is released once written, so that the peak stays near the data's size
            b, bags[i] = bags[i], None
            out[row : row + len(b)] = b
            row += len(b)
            if i % 100 == 99:
                out.flush()
        out.flush()
        del out
        np.save(d / f"{name}sizes.npy", sizes)
        np.save(d / f"{name}y.npy", lab)
    meta = {
        "n_bags": args.n_bags,
        "test_bags": args.test_bags,
        "mean_bag_size": args.mean_bag_size,
        "n_features": args.n_features,
        "seed": args.seed,
        "n_instances": int(n_instances),
    }
    (d / "meta.json").write_text(json.dumps(meta))
    print(json.dumps(meta))


def load(d, prefix=""):
    import milsvm

    X = np.load(d / f"{prefix}X.npy", mmap_mode="r")
    sizes = np.load(d / f"{prefix}sizes.npy")
    y = np.load(d / f"{prefix}y.npy")
    return milsvm.Bags.from_instances(X, sizes), y


def estimator(method):
    import milsvm

    if method == "MISVM-linear":
        return milsvm.MISVM(kernel="linear", C=1.0)
    if method == "miSVM-linear":
        return milsvm.miSVM(kernel="linear", C=1.0)
    if method == "ALSVM-linear":
        return milsvm.ALSVM(kernel="linear", C=1.0)
    if method == "SparseMI":
        return milsvm.SparseMI(n_xv=10, C=1.0, max_iter=10, random_state=0)
    raise ValueError(method)


def diy(bags, y, test):
    """mi-SVM by relabelling around scikit-learn's LinearSVC (float64), as users write it."""
    svc = diy_mi_svm(np.asarray(bags.X, dtype=np.float64), bags.bag_ptr, y)
    Xt = np.asarray(test.X, dtype=np.float64)
    ft = svc.decision_function(Xt)
    return np.array([ft[test.bag_ptr[i] : test.bag_ptr[i + 1]].max() for i in range(len(test))])


def fit(args):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import roc_auc_score

    d = Path(args.dir)
    bags, y = load(d)
    test, yt = load(d, "test_")
    start = time.perf_counter()
    extra = ""
    if args.method == "DIY":
        scores = diy(bags, y, test)
        seconds = time.perf_counter() - start
    else:
        est = estimator(args.method)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(bags, y)
        seconds = time.perf_counter() - start
        scores = est.decision_function(test)
        extra = f"n_iter={est.n_iter_}"
        if hasattr(est, "converged_"):
            # whether the fit stopped by its rule rather than at max_iter
            extra += f" converged={est.converged_}"
        if hasattr(est, "solver_"):
            extra += f" solver={est.solver_}"
    auc = roc_auc_score(yt, scores)
    print(
        json.dumps({"method": args.method, "fit_seconds": seconds, "test_auc": auc, "extra": extra})
    )


def peak_rss_gb(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 2**20 if m else float("nan")


def run(args):
    d = Path(args.dir)
    meta = json.loads((d / "meta.json").read_text())
    data_gb = meta["n_instances"] * meta["n_features"] * 4 / 2**30
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    lines = [
        f"# {meta['n_instances']} training instances x {meta['n_features']} float32 "
        f"({data_gb:.2f} GiB) in {meta['n_bags']} bags, {meta['test_bags']} test bags; seed "
        f"{meta['seed']}; {time.strftime('%Y-%m-%d %H:%M')}",
        f"{'method':<14} {'fit s':>8} {'test AUC':>9} {'peak RSS GiB':>12}  extra",
    ]
    print(lines[0]), print(lines[1])
    for method in args.methods:
        cmd = [
            "/usr/bin/time",
            "-v",
            sys.executable,
            __file__,
            "fit",
            "--dir",
            str(d),
            "--method",
            method,
        ]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            line = f"{method:<14} timed out after {args.timeout:.0f} s"
            print(line, flush=True)
            lines.append(line)
            continue
        try:
            r = json.loads(p.stdout.strip().splitlines()[-1])
            line = (
                f"{method:<14} {r['fit_seconds']:8.1f} {r['test_auc']:9.4f} "
                f"{peak_rss_gb(p.stderr):12.2f}  {r['extra']}"
            )
        except (IndexError, json.JSONDecodeError):
            line = f"{method:<14} failed: {p.stderr.strip().splitlines()[-3:]}"
        print(line, flush=True)
        lines.append(line)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("--dir", required=True)
    p.add_argument("--n-bags", type=int, default=1000)
    p.add_argument("--test-bags", type=int, default=200)
    p.add_argument("--mean-bag-size", type=int, default=1000)
    p.add_argument("--n-features", type=int, default=512)
    add_seed(p)
    p = sub.add_parser("fit")
    p.add_argument("--dir", required=True)
    p.add_argument("--method", choices=METHODS, required=True)
    p = sub.add_parser("run")
    p.add_argument("--dir", required=True)
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--out")
    args = parser.parse_args()
    {"make": make, "fit": fit, "run": run}[args.cmd](args)


if __name__ == "__main__":
    main()
