"""Warm-started C paths (issue 19, item 4): a grid over C as one ``fit_path`` against
independent fits of the same grid, in one process, one run each.

Part 1, "fits": per data set, the first outer training part of ``StratifiedKFold(10,
shuffle=True, random_state=0)``, standardised with its instances (``BagStandardScaler``); per
estimator, the grid ``C = 2^-4 .. 2^8`` (13 values) fitted (a) as 13 independent fits
(``cls(C=c).fit``), (b) as one ``cls().fit_path(bags, y, Cs)``. Printed: the seconds each way,
their ratio, and the largest difference of the decision values of the two models of every C on
the training and the test part (0 means bit for bit).

Part 2, "cv": the inner grid search of ``milsvm cv`` (``cross_validate`` with ``grid={"C": Cs}``,
3 inner folds, standardised, ``n_jobs=1``) with path tasks (the code's default for the
estimators with a path) and without them (``_crossval._c_groups`` replaced, for this run only,
by one task per candidate: what ``cross_validate`` did before the path tasks). Printed: the
wall-clock seconds of the whole CV, the summed seconds of the inner grid-search tasks, their
ratio, and whether every fold chose the same C with the same inner accuracies and gave the
same outer accuracy.

The estimators with a path (MIKernel, ReducedSet, NSK, sMIL, RSVM, SIL, STK) take their default
parameters (rbf, default gamma) with ``random_state=0`` where they have one; SparseMI (its
descent refitted at every C: ``fit_path`` is one fit per C) is the reference without a path.
Estimators run with ``n_jobs=1``. NumPy runs in the timed code (scaling, scoring), so run
without the machine's OpenBLAS overrides:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -v \\
        python benches/bench_c_path.py > benches/results/c_path.txt

SIL and STK (their paths came later, session 34) were run apart:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -v python benches/bench_c_path.py \\
        --estimators SIL STK --datasets musk1 elephant > benches/results/c_path_sil_stk.txt
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import milsvm
import numpy as np
from milsvm import _crossval
from milsvm.cli import load_data
from sklearn.model_selection import StratifiedKFold

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

FILES = {
    "musk1": "musk1/musk1.data",
    "musk2": "musk2/musk2.data",
    "elephant": "elephant/elephant.data",
}

#: Parameters besides C; every estimator also gets n_jobs=1.
ESTIMATORS = {
    "MIKernel": {},
    "ReducedSet": {"random_state": 0},
    "NSK": {},
    "sMIL": {},
    "RSVM": {"random_state": 0},
    "SparseMI": {"random_state": 0},
    "SIL": {},
    "STK": {},
}

#: Outer folds of the CV part per data set (10 where it is quick; fewer on the large sets).
CV_FOLDS = {"musk1": 10, "elephant": 3, "musk2": 3}
#: Estimators left out of the CV part per data set (too slow for one quiet run).
CV_SKIP = {"musk2": {"ReducedSet"}}


def load(dataset):
    bags, y, _, _ = load_data(DATA / FILES[dataset])
    return milsvm.as_bags(bags), np.asarray(y)


def first_split(bags, y):
    train, test = next(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    scaler = milsvm.BagStandardScaler().fit(bags[train])
    return scaler.transform(bags[train]), y[train], scaler.transform(bags[test]), y[test]


def max_diff(a, b, bags):
    return float(np.max(np.abs(a.decision_function(bags) - b.decision_function(bags))))


def part_fits(name, bags, y, Cs):
    cls = getattr(milsvm, name)
    params = {**ESTIMATORS[name], "n_jobs": 1}
    tr, ytr, te, _ = first_split(bags, y)
    start = time.perf_counter()
    independent = [cls(**params, C=c).fit(tr, ytr) for c in Cs]
    t_ind = time.perf_counter() - start
    start = time.perf_counter()
    path = cls(**params).fit_path(tr, ytr, Cs)
    t_path = time.perf_counter() - start
    diff = max(max(max_diff(a, b, tr), max_diff(a, b, te)) for a, b in zip(independent, path))
    return t_ind, t_path, diff


def cv_run(cls, params, bags, y, folds, Cs, path_tasks):
    saved = _crossval._c_groups
    if not path_tasks:
        _crossval._c_groups = lambda cls, candidates, fixed: [[c] for c in range(len(candidates))]
    try:
        start = time.perf_counter()
        result = _crossval.cross_validate(
            cls,
            params,
            bags,
            y,
            folds=folds,
            seed=0,
            grid={"C": Cs},
            inner_folds=3,
            scale=True,
            n_jobs=1,
        )
        wall = time.perf_counter() - start
    finally:
        _crossval._c_groups = saved
    return wall, result


def part_cv(name, bags, y, folds, Cs):
    cls = getattr(milsvm, name)
    params = {**ESTIMATORS[name], "n_jobs": 1}
    wall_i, res_i = cv_run(cls, params, bags, y, folds, Cs, path_tasks=False)
    wall_p, res_p = cv_run(cls, params, bags, y, folds, Cs, path_tasks=True)
    search_i = sum(f["search_time"] for f in res_i.folds)
    search_p = sum(f["search_time"] for f in res_p.folds)
    same_c = all(a["params"] == b["params"] for a, b in zip(res_i.folds, res_p.folds))
    inner_diff = max(
        abs(a["inner_accuracy"] - b["inner_accuracy"]) for a, b in zip(res_i.folds, res_p.folds)
    )
    outer_same = all(a["accuracy"] == b["accuracy"] for a, b in zip(res_i.folds, res_p.folds))
    chosen = [f["params"]["C"] for f in res_p.folds]
    return wall_i, wall_p, search_i, search_p, same_c, inner_diff, outer_same, chosen


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--datasets", nargs="+", default=["musk1", "elephant", "musk2"], choices=list(FILES)
    )
    ap.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS))
    ap.add_argument("--parts", nargs="+", default=["fits", "cv"], choices=["fits", "cv"])
    args = ap.parse_args(argv)
    Cs = [2.0**k for k in range(-4, 9)]
    print(
        f"C grid: 2^-4 .. 2^8 ({len(Cs)} values); n_jobs=1; milsvm {milsvm.__version__}", flush=True
    )
    total = time.perf_counter()
    for dataset in args.datasets:
        bags, y = load(dataset)
        print(f"\n== {dataset}: {len(y)} bags, {bags.n_instances} instances", flush=True)
        if "fits" in args.parts:
            print("part 1, fits on the first outer training part (90%):")
            print(
                f"  {'estimator':10s} {'independent s':>13s} {'path s':>8s} {'ratio':>6s}  max "
                "|decision difference|"
            )
            for name in args.estimators:
                t_ind, t_path, diff = part_fits(name, bags, y, Cs)
                print(
                    f"  {name:10s} {t_ind:13.3f} {t_path:8.3f} {t_ind / t_path:5.2f}x  {diff:.3g}",
                    flush=True,
                )
        if "cv" in args.parts:
            folds = CV_FOLDS[dataset]
            print(
                f"part 2, cross_validate, {folds} outer folds x 3 inner folds x {len(Cs)} C, "
                "scale=True:"
            )
            print(
                f"  {'estimator':10s} {'wall s (no path / path)':>24s} {'inner search s':>18s} "
                f"{'ratio':>6s}  same C / max inner-acc diff / same outer acc; chosen C (path)"
            )
            for name in args.estimators:
                if name in CV_SKIP.get(dataset, ()):
                    print(f"  {name:10s} skipped (too slow for one quiet run)", flush=True)
                    continue
                wall_i, wall_p, s_i, s_p, same_c, inner_diff, outer_same, chosen = part_cv(
                    name, bags, y, folds, Cs
                )
                print(
                    f"  {name:10s} {wall_i:11.2f} / {wall_p:9.2f} {s_i:8.2f} / {s_p:7.2f} "
                    f"{s_i / s_p:5.2f}x  {'yes' if same_c else 'NO'} / {inner_diff:.3g} / "
                    f"{'yes' if outer_same else 'NO'}; {[f'{c:g}' for c in chosen]}",
                    flush=True,
                )
    print(f"\ntotal {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main()
