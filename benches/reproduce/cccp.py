"""10-fold cross-validation of the CCCP estimators, stMIL (Bunescu & Mooney 2007) and MissSVM
(Zhou & Xu 2007), with sMIL and SIL beside them as the convex baselines they start from or relate
to: accuracy, bag-level AUC and fit time on MUSK1, MUSK2, Elephant (rbf kernel, instances
standardised on each training part) and TST1, TST2 (linear kernel, sparse instances as read).

C is chosen per outer fold, for every method and every set, by a 3-fold inner cross-validation
(accuracy) on the training part over the grid {1, 10, 100}. gamma is "scale" throughout,
transductive_weight its default 1. stMIL and MissSVM run twice: with their own start only
(``restarts=0``, the default) and with ``restarts=5`` random restarts (``random_state=0``), the
run of least objective kept; the "restart won" column is the fraction of the outer folds' final
fits whose model came from a restart.

Usage::

    python benches/papers.py cccp                      # every set
    python benches/papers.py cccp --datasets musk1 elephant
    python benches/papers.py cccp --quick              # 3 outer folds, MUSK1 only

The papers' own numbers for these sets are not printed: neither paper's text (nor a table that
quotes them) could be read from this project's sources or its search corpora (see
benches/RESULTS.md, section "stMIL and MissSVM"), so no "paper" column is given and no 3-point
check is made.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import milsvm  # noqa: E402
import milsvm.datasets  # noqa: E402
from _protocol import DEFAULT_DATA, Report, standardise  # noqa: E402

#: Per set: file, kernel, whether to standardise.
SETS = {
    "musk1": ("musk1/musk1.data", "rbf", True),
    "elephant": ("elephant/elephant.data", "rbf", True),
    "musk2": ("musk2/musk2.data", "rbf", True),
    "tst1": ("tst1/tst1.data", "linear", False),
    "tst2": ("tst2/tst2.data", "linear", False),
}
GRID = [1.0, 10.0, 100.0]
RESTARTS = 5
#: Row name -> (estimator class, extra parameters).
METHODS = {
    "stMIL": (milsvm.stMIL, {}),
    "stMIL-r5": (milsvm.stMIL, {"restarts": RESTARTS, "random_state": 0}),
    "MissSVM": (milsvm.MissSVM, {}),
    "MissSVM-r5": (milsvm.MissSVM, {"restarts": RESTARTS, "random_state": 0}),
    "sMIL": (milsvm.sMIL, {}),
    "SIL": (milsvm.SIL, {}),
}


def fit(method, kernel, C, bags, y):
    cls, extra = METHODS[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(C=C, kernel=kernel, **extra).fit(bags, y)


def choose_c(method, kernel, bags, y, seed):
    inner = StratifiedKFold(3, shuffle=True, random_state=seed)
    scores = []
    for C in GRID:
        acc = []
        for tr, te in inner.split(np.zeros(len(y)), y):
            est = fit(method, kernel, C, [bags[i] for i in tr], y[tr])
            acc.append(np.mean(est.predict([bags[i] for i in te]) == y[te]))
        scores.append(np.mean(acc))
    return GRID[int(np.argmax(scores))]


def run_set(name, methods, folds, out):
    path, kernel, scale = SETS[name]
    bags, y = milsvm.datasets.load_mill(DEFAULT_DATA / path)
    y = np.asarray(y)
    out(
        f"\n{name}: {len(bags)} bags, {sum(b.shape[0] for b in bags)} instances, "
        f"{bags[0].shape[1]} features, kernel={kernel}, C by inner 3-fold CV over {GRID}"
    )
    out.header(
        f"  {'method':10s} {'accuracy':>15s} {'AUC':>15s} {'fit s (mean)':>13s} "
        f"{'CCCP steps':>11s} {'restart won':>12s}  C chosen",
        indent="  ",
    )
    outer = StratifiedKFold(10, shuffle=True, random_state=0)
    splits = list(outer.split(np.zeros(len(y)), y))[:folds]
    for m in methods:
        acc, auc, secs, steps, won, chosen = [], [], [], [], [], []
        t_set = time.perf_counter()
        for k, (tr, te) in enumerate(splits):
            btr, bte = [bags[i] for i in tr], [bags[i] for i in te]
            if scale:
                btr, bte = standardise(btr, bte)
            C = choose_c(m, kernel, btr, y[tr], k)
            t = time.perf_counter()
            est = fit(m, kernel, C, btr, y[tr])
            secs.append(time.perf_counter() - t)
            s = est.decision_function(bte)
            acc.append(np.mean(est.predict(bte) == y[te]))
            auc.append(roc_auc_score(y[te], s))
            runs = getattr(est, "run_objectives_", None)
            steps.append(est.n_iter_ if runs is not None else 0)
            won.append(runs is not None and int(np.argmin(runs)) > 0)
            chosen.append(C)
        cs = ",".join(f"{c:g}" for c in sorted(set(chosen)))
        w = f"{np.mean(won):12.1f}" if m.endswith("-r5") else f"{'':12s}"
        out(
            f"  {m:10s} {100 * np.mean(acc):7.1f} ± {100 * np.std(acc):5.1f} {np.mean(auc):7.3f} ± "
            f"{np.std(auc):5.3f} {np.mean(secs):13.3f} {np.mean(steps):11.1f} {w}  {cs}   "
            f"({time.perf_counter() - t_set:.0f} s with the inner CV)"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=list(SETS), default=list(SETS))
    ap.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    ap.add_argument("--quick", action="store_true", help="3 outer folds on MUSK1")
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = ap.parse_args()
    out = Report()
    folds = 3 if args.quick else 10
    sets = ["musk1"] if args.quick else args.datasets
    out(
        f"reproduce_cccp: {folds} outer folds (of a 10-fold split, seed 0); mean ± std over folds; "
        "fit time of the final fit per fold (machine shared, timings noisy)"
    )
    t0 = time.perf_counter()
    for name in sets:
        run_set(name, args.methods, folds, out)
    out(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.out:
        out.write(args.out)


if __name__ == "__main__":
    main()
