"""float32 against float64 (issue 18, item 1): the same 10-fold cross-validation of SparseMI,
miSVM, MISVM and NSK on MUSK1 and MUSK2, once with the standardised bags in float64 and once
with the same bags rounded to float32 (the float32 run reads them in place: no float64 copy).

Both runs use the same folds, the same hyperparameters and the same seeds; the only difference
is the rounding of the inputs to float32 (and of the test bags given to ``decision_function``).
The aim of the issue is agreement within 0.5 accuracy points. Accuracy per fold is counted on
the test bags; the table gives the mean over folds and the number of test bags (of the whole
set) whose predicted label differs between the two runs.

Usage::

    python benches/studies.py float32 --out benches/results/float32_cv.txt
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import milsvm  # noqa: E402
from _protocol import DEFAULT_DATA, Report, load_mill_dense, standardise  # noqa: E402

METHODS = {
    "SparseMI": lambda: milsvm.SparseMI(n_xv=10, C=10.0, random_state=0),
    "miSVM": lambda: milsvm.miSVM(C=10.0, gamma="scale", n_xv=None),
    "MISVM": lambda: milsvm.MISVM(C=10.0, gamma="scale", n_xv=None),
    "NSK": lambda: milsvm.NSK(C=10.0, gamma="scale"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sets", nargs="+", default=["musk1", "musk2"])
    ap.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    out = Report()
    out(
        "float32 vs float64: 10-fold CV (stratified, seed 0), instances standardised on each "
        "training part in float64, then rounded to float32 for the float32 run"
    )
    for name in args.sets:
        X, ptr, y = load_mill_dense(args.data / name / f"{name}.data")
        bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(y))]
        out(f"\n{name}: {len(y)} bags, {len(X)} instances, {X.shape[1]} features")
        out.header(
            f"  {'method':<10}{'acc f64 %':>11}{'acc f32 %':>11}{'diff pt':>9}"
            f"{'labels differ':>15}{'max |score diff|':>18}{'fit s f64':>11}{'fit s f32':>11}",
            "  ",
        )
        folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
        for method in args.methods:
            acc = {np.float64: [], np.float32: []}
            secs = {np.float64: 0.0, np.float32: 0.0}
            n_differ, max_diff = 0, 0.0
            for tr, te in folds:
                train, test = standardise([bags[i] for i in tr], [bags[i] for i in te])
                pred, scores = {}, {}
                for dtype in (np.float64, np.float32):
                    tr_b = [np.ascontiguousarray(b, dtype=dtype) for b in train]
                    te_b = [np.ascontiguousarray(b, dtype=dtype) for b in test]
                    est = METHODS[method]()
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(tr_b, y[tr])
                    secs[dtype] += time.perf_counter() - t
                    scores[dtype] = est.decision_function(te_b)
                    pred[dtype] = est.predict(te_b)
                    acc[dtype].append(np.mean(pred[dtype] == y[te]))
                n_differ += int(np.sum(pred[np.float64] != pred[np.float32]))
                max_diff = max(
                    max_diff, float(np.max(np.abs(scores[np.float64] - scores[np.float32])))
                )
            a64, a32 = 100 * np.mean(acc[np.float64]), 100 * np.mean(acc[np.float32])
            out(
                f"  {method:<10}{a64:>11.2f}{a32:>11.2f}{a32 - a64:>9.2f}{n_differ:>15d}"
                f"{max_diff:>18.2e}{secs[np.float64]:>11.2f}{secs[np.float32]:>11.2f}"
            )
    if args.out:
        out.write(args.out)


if __name__ == "__main__":
    main()
