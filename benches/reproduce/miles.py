"""MILES (Chen, Bi & Wang, TPAMI 2006) on MUSK1, MUSK2 and Elephant: 10-fold bag-level
cross-validation, accuracy and AUC, printed beside the published numbers.

Protocol (the one Fu et al. 2013 used for their MILES column, section V-B of
../shared/papers/002; close to the paper's own, which chose its lambda and sigma by
cross-validation on the training part): StratifiedKFold(10, shuffle=True, random_state=seed) over
the bags for each seed of --seeds; each training part's bags standardised with the mean / std of
its instances (``_protocol.standardise``) and the test part with the same; every training
instance a candidate concept (``n_concepts=None``, the paper's choice); (C, gamma) chosen on each
training part by 3-fold inner StratifiedKFold (seed 0) accuracy over --C-grid x --gamma-grid
(gamma in units of the "scale" width 1 / (d Var[X]) of the training part; the C values of one
gamma fitted as one ``fit_path``, which computes the embedding once); ties go to the first
(gamma, then C) in grid order; the model refitted on the whole training part. AUC from the test
bags' decision values, per fold; accuracy per seed = correct test bags / all bags.

The paper's (lambda, mu) and this C: ``C = 1 / lambda`` with class weights (mu, 1 - mu); mu = 0.5
(the paper's MUSK setting) is ``C = 0.5 / lambda`` with no class weights, which is what runs
here. The paper's grid, lambda in 0.1 ... 0.6, is C in 0.83 ... 5 in these units.

Published numbers: Fu et al. 2013 (TNNLS, Table I; ../shared/papers/002, also 000 Table 1)
ran MILES with this protocol: MUSK1 85.73 +- 1.05 %, MUSK2 87.64 +- 1.23 % (10 repeats), 40.8
and 42.5 selected concepts. Chen et al. 2006's own drug-activity table gives MUSK1 86.3 % and
MUSK2 87.7 % (as recalled: the paper's text could not be retrieved from the sources available
here, so these two figures are not re-read). No source here reports MILES on Elephant (nor on
Fox and Tiger, which are not in the data folder).

Run (from the repository root; about 10-20 minutes on two shared cores):

    python benches/papers.py miles --seeds 0 1 2

Output: printed and written to benches/results/miles.txt, the folds to
benches/results/miles_folds.jsonl.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from joblib import Parallel, delayed
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import milsvm  # noqa: E402
from _common import RESULTS, add_list, benchmark_parser  # noqa: E402
from _protocol import Report, load_mill_bags, mill_file, standardise  # noqa: E402

DATASETS = ("MUSK1", "MUSK2", "Elephant")

#: Published MILES accuracies (%): (Fu et al. 2013 Table I, Chen et al. 2006).
PUBLISHED = {
    "MUSK1": ("85.73 +- 1.05 (40.8 concepts)", "86.3 (recalled)"),
    "MUSK2": ("87.64 +- 1.23 (42.5 concepts)", "87.7 (recalled)"),
    "Elephant": ("n/a", "n/a"),
}


def scale_width(bags):
    X = np.vstack(bags)
    v = X.var()
    return 1.0 / (X.shape[1] * v) if v > 0 else 1.0


def path_scores(train, y_train, test, Cs, gamma):
    """The test decision values of one fit_path over Cs, and the fitted estimators."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = milsvm.MILES(gamma=gamma, n_jobs=1).fit_path(train, y_train, Cs)
    return [e.decision_function(test) for e in fits], fits


def run_fold(name, bags, y, train, test, seed, fold, Cs, gscales):
    start = time.perf_counter()
    tr, te = standardise([bags[i] for i in train], [bags[i] for i in test])
    ytr = y[train]
    # inner CV: accuracy per (gamma, C)
    inner = StratifiedKFold(3, shuffle=True, random_state=0)
    acc = np.zeros((len(gscales), len(Cs)))
    for itr, iva in inner.split(np.zeros(len(ytr)), ytr):
        a, b = standardise([tr[i] for i in itr], [tr[i] for i in iva])
        unit = scale_width(a)
        for gi, gs in enumerate(gscales):
            scores, _ = path_scores(a, ytr[itr], b, Cs, gs * unit)
            for ci, f in enumerate(scores):
                acc[gi, ci] += np.mean((f > 0).astype(int) == ytr[iva]) / 3
    gi, ci = np.unravel_index(int(np.argmax(acc)), acc.shape)  # first maximum in grid order
    gamma = gscales[gi] * scale_width(tr)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = milsvm.MILES(C=Cs[ci], gamma=gamma, n_jobs=1).fit(tr, ytr)
    fit_seconds = time.perf_counter() - t0
    f = est.decision_function(te)
    return {
        "data": name,
        "seed": seed,
        "fold": fold,
        "C": Cs[ci],
        "gamma_scale": gscales[gi],
        "correct": int(np.sum((f > 0).astype(int) == y[test])),
        "n": len(test),
        "auc": float(roc_auc_score(y[test], f)),
        "n_selected": int(est.n_selected_),
        "n_concepts": int(est.n_concepts_),
        "pivots": int(est.n_iter_),
        "fit_seconds": fit_seconds,
        "seconds": time.perf_counter() - start,
        "scores": f.tolist(),
        "test": [int(i) for i in test],
    }


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    add_list(ap, "--seeds", int, [0, 1, 2])
    add_list(ap, "--C-grid", float, [0.3, 1.0, 3.0, 10.0, 30.0], dest="C_grid")
    gammas = "gamma values in units of the 'scale' width of the training part"
    add_list(ap, "--gamma-grid", float, [0.3, 1.0, 3.0], gammas)
    ap.add_argument("--n-jobs", type=int, default=2, help="outer folds in parallel (processes)")
    ap.add_argument("--out", type=Path, default=RESULTS / "miles.txt")
    ap.add_argument("--folds-out", type=Path, default=RESULTS / "miles_folds.jsonl")
    args = ap.parse_args()
    out = Report()
    out(
        "MILES: 10-fold stratified CV per seed, standardised per training part, every training "
        "instance a concept,"
    )
    out(
        f"(C, gamma) by 3-fold inner CV over C {args.C_grid} x gamma {args.gamma_grid} x scale; "
        f"seeds {args.seeds};"
    )
    out(f"milsvm {milsvm.__version__}, n_jobs=1 per fit, {args.n_jobs} folds in parallel")
    out()
    rows = []
    start = time.perf_counter()
    for name in args.datasets:
        bags, y = load_mill_bags(mill_file(name))
        tasks = []
        for seed in args.seeds:
            outer = StratifiedKFold(10, shuffle=True, random_state=seed)
            for fold, (train, test) in enumerate(outer.split(np.zeros(len(y)), y)):
                tasks.append((train, test, seed, fold))
        rows += Parallel(n_jobs=args.n_jobs)(
            delayed(run_fold)(name, bags, y, tr, te, s, f, args.C_grid, args.gamma_grid)
            for tr, te, s, f in tasks
        )
        print(f"{name} done, {time.perf_counter() - start:.0f} s", flush=True)
    with open(args.folds_out, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    hdr = (
        f"{'data':9s} {'accuracy % (seeds)':>20s} {'AUC (folds)':>15s} {'concepts':>9s} {'of':>6s} "
        f"{'fit s':>6s}  Fu et al. 2013 Table I | Chen et al. 2006"
    )
    out.header(hdr)
    by_set = {name: [r for r in rows if r["data"] == name] for name in args.datasets}
    per_seed = {
        name: [
            100.0
            * sum(r["correct"] for r in rs if r["seed"] == s)
            / sum(r["n"] for r in rs if r["seed"] == s)
            for s in args.seeds
        ]
        for name, rs in by_set.items()
    }
    for name, rs in by_set.items():
        aucs = [r["auc"] for r in rs]
        fu, chen = PUBLISHED[name]
        out(
            f"{name:9s} {np.mean(per_seed[name]):10.2f} +- {np.std(per_seed[name]):5.2f} "
            f"{np.mean(aucs):7.3f} "
            f"+- {np.std(aucs):5.3f} {np.mean([r['n_selected'] for r in rs]):9.1f} "
            f"{np.mean([r['n_concepts'] for r in rs]):6.0f} "
            f"{np.mean([r['fit_seconds'] for r in rs]):6.2f}  {fu} | {chen}"
        )
    out()
    out("per seed (accuracy %):")
    for name, rs in by_set.items():
        chosen = {}
        for r in rs:
            key = (r["C"], r["gamma_scale"])
            chosen[key] = chosen.get(key, 0) + 1
        top = ", ".join(
            f"C={c:g}/g={g:g}x{n}"
            for (c, g), n in sorted(chosen.items(), key=lambda kv: -kv[1])[:4]
        )
        out(f"  {name:9s} " + " ".join(f"{a:6.2f}" for a in per_seed[name]) + f"   chosen: {top}")
    out()
    out(f"total {time.perf_counter() - start:.0f} s")
    out.write(args.out)


if __name__ == "__main__":
    main()
