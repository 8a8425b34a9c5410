"""SVM-CC's round cap (max_iter, the paper's k > 80) on the Table 1 protocol of
reproduce_yd_table1.py.

For one data set and split seed already logged by reproduce_yd_table1.py, it reports
  * how many fits of that run stopped at max_iter: the inner-CV fits (one warning each, counted
    by the script as `warnings_inner`; grid points x 3 inner folds per outer fold) and the final
    fits;
  * for each outer fold, the final fit at the chosen (C, gamma) refitted on the same training part
    with max_iter = 80 and with larger caps (the selection is kept as it was): rounds run, whether
    the stopping rule ||v_new - v|| < tol was met, the smallest and largest change of v over the
    last 20 rounds (a cycle shows as a band that does not shrink), the test accuracy, and how many
    test predictions differ from the max_iter = 80 fit.

Run (from the repository root; OMP_NUM_THREADS=1), after the reproduce_yd_table1.py run it reads:

    python benches/svmcc_max_iter.py --dataset elephant --seed 0 --max-iter 80 400 2000 \\
        --log benches/results/yd_table1_lp_folds.jsonl \\
        --out benches/results/svmcc_max_iter_elephant.txt
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _protocol import Report, standardise  # noqa: E402
from reproduce_yd_table1 import KERNEL, STANDARDISE, gamma_of, load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=sorted(KERNEL), required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--lp-rule", choices=["project", "max"], default="project")
    ap.add_argument("--max-iter", type=int, nargs="+", default=[80, 1000])
    ap.add_argument("--log", type=Path, default=HERE / "results" / "yd_table1_lp_folds.jsonl")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import milsvm

    caps = sorted(set(args.max_iter) | {80})
    settings = dict(folds=args.folds, grid_step=1, seed=args.seed, cc_lp_rule=args.lp_rule)
    logged = {
        r["fold"]: r["result"]
        for r in map(json.loads, args.log.read_text().splitlines())
        if r["settings"] == settings and r["dataset"] == args.dataset and r["method"] == "SVMCC"
    }
    if len(logged) != args.folds:
        sys.exit(
            f"{args.log}: {len(logged)} of {args.folds} folds logged for {args.dataset} under "
            f"{settings}"
        )
    kernel = KERNEL[args.dataset]
    bags, y = load(args.dataset)
    out = Report()
    npoints = 17 if kernel == "linear" else 17 * 17
    n_inner = args.folds * npoints * 3
    w_inner = sum(r["warnings_inner"] for r in logged.values())
    w_final = sum(len(r["warnings_final"]) for r in logged.values())
    out(
        f"SVM-CC max_iter on {args.dataset} ({kernel}), seed {args.seed}, LP rule {args.lp_rule}, "
        f"bounds paper; run read from {args.log.name}, settings {json.dumps(settings)}"
    )
    out(
        f"fits that stopped at max_iter=80 in that run: inner CV {w_inner} of {n_inner} "
        f"({100.0 * w_inner / n_inner:.1f} %), final fits {w_final} of {args.folds}"
    )
    out()
    out("final fit at the chosen point, refitted with each cap (selection unchanged)")
    hdr = (
        f"{'fold':>4} {'C':>9} {'gamma':>9} {'cap':>5} {'rounds':>6} {'conv':>5} "
        f"{'dv last-20 min':>14} {'max':>9} {'correct':>7} {'differ':>6} {'s':>6}"
    )
    out(hdr)
    out("-" * len(hdr))
    folds = list(
        StratifiedKFold(args.folds, shuffle=True, random_state=args.seed).split(np.zeros(len(y)), y)
    )
    tot = {c: [0, 0, 0, 0] for c in caps}  # correct, n, differing predictions, converged fits
    for fold, (tr, te) in enumerate(folds):
        r = logged[fold]
        trb, teb = [bags[i] for i in tr], [bags[i] for i in te]
        if STANDARDISE[args.dataset]:
            trb, teb = standardise(trb, teb)
        d = trb[0].shape[1]
        point = dict(C=2.0 ** r["c_exp"])
        if kernel == "rbf":
            point["gamma"] = gamma_of(r["gamma_exp"], d, "over-d")
        base = None
        for cap in caps:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = milsvm.SVMCC(
                    kernel=kernel, lp_rule=args.lp_rule, max_iter=cap, n_jobs=1, **point
                )
                m.fit(trb, y[tr])
            pred = m.predict(teb)
            secs = time.perf_counter() - t0
            if base is None:
                base = pred
            correct = int(np.sum(pred == y[te]))
            differ = int(np.sum(pred != base))
            tail = np.asarray(m.dv_history_)[-20:]
            t = tot[cap]
            t[0] += correct
            t[1] += len(te)
            t[2] += differ
            t[3] += int(m.converged_)
            out(
                f"{fold:>4} {point['C']:>9.4g} {point.get('gamma', 0.0):>9.3g} {cap:>5} "
                f"{m.n_iter_:>6} {str(bool(m.converged_)):>5} {tail.min():>14.2e} "
                f"{tail.max():>9.2e} {correct:>4}/{len(te):<2} {differ:>6} {secs:>6.2f}"
            )
    out()
    for cap in caps:
        c, n, dif, conv = tot[cap]
        out(
            f"max_iter={cap:<5}: accuracy {100.0 * c / n:.1f} % ({c}/{n}); converged "
            f"{conv}/{args.folds} final fits; {dif} test predictions differ from max_iter=80"
        )
    if args.out:
        out.write(args.out)


if __name__ == "__main__":
    main()
