"""Both routes of the annealing family's linear kernel (``solver="linear"``: Newton-CG in the
input space; ``solver="kernel"``: the dual SMO over the instances) on the first outer training
part of each benchmark set (10-fold stratified over bags, seed 0), standardised by
``BagStandardScaler`` as ``milsvm cv`` does (``--raw``: the rows as read). ``C = 1``,
``n_jobs=1``; printed: fit seconds, accuracy on that fold's test part, the last objective.
``--inner-tol`` sets the kernel route's tolerance (default: the estimator's, 1e-3).

    python benches/speed.py linear-standardised [--sets musk1 elephant musk2 tst1 tst2]
        [--methods MISVM miSVM ALSVM] [--raw] [--inner-tol 1e-5]

benches/RESULTS.md, "The linear route on standardised sparse text".
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import milsvm
import milsvm.datasets
import numpy as np
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _protocol import mill_file  # noqa: E402

SETS = ("musk1", "elephant", "musk2", "tst1", "tst2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--methods", nargs="+", default=["MISVM", "miSVM", "ALSVM"])
    ap.add_argument("--raw", action="store_true", help="do not standardise")
    ap.add_argument("--inner-tol", type=float, default=None, help="the kernel route's inner_tol")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for name in args.sets:
        bags, y = milsvm.datasets.load_mill(mill_file(name))
        y = np.asarray(y)
        tr, te = next(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
        train, test = [bags[i] for i in tr], [bags[i] for i in te]
        if not args.raw:
            scaler = milsvm.BagStandardScaler().fit(train)
            train, test = scaler.transform(train), scaler.transform(test)
        n, d = sum(b.shape[0] for b in train), train[0].shape[1]
        for method in args.methods:
            row = []
            for solver in ["linear", "kernel"]:
                extra = (
                    {"inner_tol": args.inner_tol} if solver == "kernel" and args.inner_tol else {}
                )
                est = getattr(milsvm, method)(
                    C=1.0, kernel="linear", solver=solver, n_jobs=1, **extra
                )
                t = time.perf_counter()
                est.fit(train, y[tr])
                seconds = time.perf_counter() - t
                acc = np.mean(est.predict(test) == y[te])
                row.append(
                    f"{solver} {seconds:7.2f} s acc {acc:.3f} obj {est.objective_history_[-1]:.6g}"
                )
            print(f"{name:8} n={n:6} d={d:6} {method:6} | " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
