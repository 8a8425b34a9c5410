"""Reproduce Table 1 of Yang & Deng, A convex combination approach for multi-instance learning
(SVM-CC; ALGORITHMS.md section 4): 10-fold CV accuracy on MUSK1 (rbf), Elephant (linear) and
TST1 (linear), with NSK (norm="l1") and sMIL fitted on the same splits beside it.

Protocol:
  * outer CV: StratifiedKFold(--folds, shuffle=True, random_state=--seed) over bags (default 10
    folds, seed 0); accuracy = correct test bags over all test bags of the folds run
    (--run-folds N runs only the first N outer folds: a partial estimate, flagged as such);
  * features standardised with the mean / std of the training instances of each outer fold for
    MUSK1 and Elephant (the inner CV reuses the outer fold's scaling); TST1 kept raw and sparse
    (scipy CSR bags are passed to milsvm as they are);
  * model selection (the paper's): C in {2^i}, and for rbf gamma in {2^i / d} (d = number of
    features, i.e. the grid centred on 1/d), i in -8..8 every --grid-step exponent (step 4:
    -8, -4, 0, 4, 8); the point with the best mean accuracy of a 3-fold stratified inner CV on
    the training part (StratifiedKFold(3, shuffle=True, random_state=1000*seed+fold); ties: the
    first in grid order) is refitted on the whole training part and tested;
  * methods: SVMCC (milsvm.SVMCC, max_iter 80, tol 1e-4, its default lp_rule and bounds), NSK
    (milsvm.NSK(norm="l1")), sMIL (milsvm.sMIL); default class weights, n_jobs=1, every fit
    single-threaded;
  * kernels per data set as in the paper's Table 1: MUSK1 rbf, Elephant linear, TST1 linear
    (the same kernel for NSK and sMIL). The paper gives SVM-CC numbers only.

Protocol variants (each one keeps the inner selection on the training part; a variant's folds are
logged under its own settings, the defaults reproduce the protocol above):
  * --gamma-scale over-d | raw | sigma: gamma = 2^j / d (default), gamma = 2^j (the paper's
    "gamma in {2^i}" read literally, kernel exp(-gamma ||x - y||^2); the same set as
    sigma^2 = 2^j for exp(-||x - y||^2 / sigma^2)), or gamma = 1 / sigma^2 with sigma = 2^j;
  * --no-standardise: MUSK1 / Elephant features kept raw (the paper says nothing of scaling);
  * --cc-bounds paper | split | equal (SVMCC only, milsvm.SVMCC's `bounds`): paper = section 3's
    bounds, milsvm's default (C1 = C2 = C for the linear kernel, Algorithm 1; for rbf, Algorithm
    2, C1 = C n_neg_inst / (n_pos_bags + n_neg_inst), C2 = C n_pos_bags / (...)); split =
    Algorithm 2's bounds with either kernel (milsvm's only rule before `bounds` existed: the fold
    logs written before it, with no `cc_lp_rule` in their settings, have split bounds for the
    linear sets too), equal = C1 = C2 = C with either kernel;
  * --bias qp | lp (SVMCC rbf only): the decision function's bias from the last QP (eq. 36-37,
    the library's choice for rbf) or from the last LP (as Algorithm 1's eq. 20);
  * --lp-rule project | max | ref-max | ref-keep | ref-project (SVMCC only): project (default) and
    max = milsvm.SVMCC with that `lp_rule` (project: v kept while optimal, else projected onto the
    LP's optimal face; max: v on the best instance, milsvm's only rule before `lp_rule` existed);
    ref-* fit svmcc_lp_rules.py's Python reference (beside this file) (libsvm QP) with its rule
    max, keep or project (see that file: the LP's optimum in v is not unique, the paper's linprog
    returned some point of the optimal face). Every library run records its rule as `cc_lp_rule` in
    the settings key (logs without it were written by the library before `lp_rule`, which used max);
    the reference runs keep their old key (`lp_rule`: max / keep / project);
  * --inner cv3 | cv10 | tune10: 3-fold (default) or 10-fold stratified inner CV on the training
    part, or the paper's wording read as Mangasarian & Wild's protocol: one stratified random
    10 % of the training bags is the tuning set, each grid point is fitted on the other 90 % and
    scored on it (ties: the first in grid order, as everywhere).

Several seeds in one call (--seed 0 1 2 3 4) run one after the other and the report adds, per
data set and method, the accuracy of each seed and their mean.

Run (from the repository root; OMP_NUM_THREADS=1):

    nice -n 10 python benches/papers.py yd-table1 --grid-step 4 --datasets musk1
    nice -n 10 python benches/papers.py yd-table1 --grid-step 4 --datasets tst1 \\
        --methods SVMCC sMIL
    nice -n 10 python benches/papers.py yd-table1 --grid-step 4 --datasets elephant \\
        --run-folds 3

Every finished outer fold is appended to --log (JSON lines, default
benches/results/yd_table1_folds.jsonl); the table is built from all log lines with the same
settings, so separate runs (data sets / methods / folds) add up, and --report-only reprints it.
Output: printed and written to benches/results/yd_table1.txt (--out).
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
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, add_choice, data_dir  # noqa: E402
from _protocol import Report, standardise  # noqa: E402

DATA = data_dir()
DATASETS = ["musk1", "elephant", "tst1"]
METHODS = ["SVMCC", "NSK", "sMIL"]
KERNEL = {"musk1": "rbf", "elephant": "linear", "tst1": "linear"}
STANDARDISE = {"musk1": True, "elephant": True, "tst1": False}
PAPER = {"musk1": 88.9, "elephant": 81.5, "tst1": 95.0}  # Yang & Deng Table 1, SVM-CC, 10-fold CV %


def load(name):
    from milsvm.datasets import load_mill

    bags, y = load_mill(DATA / name / f"{name}.data")
    return bags, np.asarray(y)


def gamma_of(j, d, scale):
    if scale == "over-d":
        return 2.0**j / d
    if scale == "raw":
        return 2.0**j
    if scale == "sigma":
        return 2.0 ** (-2 * j)
    raise ValueError(scale)


def grid(kernel, d, step, scale="over-d"):
    exps = list(range(-8, 9, step))
    if 8 not in exps:
        exps.append(8)
    if kernel == "linear":
        return [dict(C=2.0**i) for i in exps]
    return [dict(C=2.0**i, gamma=gamma_of(j, d, scale)) for i in exps for j in exps]


def exps_of(point, grid_points, step):
    """The grid exponents (i, j) of a chosen point (j None for linear)."""
    exps = list(range(-8, 9, step))
    if 8 not in exps:
        exps.append(8)
    k = grid_points.index(point)
    if "gamma" not in point:
        return exps[k], None
    return exps[k // len(exps)], exps[k % len(exps)]


def is_ref(method, opts):
    return method == "SVMCC" and opts.get("lp_rule", "project").startswith("ref-")


def make(method, kernel, point, opts=None):
    import milsvm

    opts = opts or {}
    if is_ref(method, opts):
        from svmcc_lp_rules import RefSVMCC

        return RefSVMCC(
            C=point["C"],
            kernel=kernel,
            gamma=point.get("gamma", 0.0),
            lp_rule=opts["lp_rule"][len("ref-") :],
            bounds=opts.get("cc_bounds", "paper"),
            bias=opts.get("bias", "qp"),
        )

    kw = dict(kernel=kernel, n_jobs=1, **point)
    if method == "SVMCC":
        return milsvm.SVMCC(
            lp_rule=opts.get("lp_rule", "project"), bounds=opts.get("cc_bounds", "paper"), **kw
        )
    if method == "NSK":
        return milsvm.NSK(norm="l1", **kw)
    if method == "sMIL":
        return milsvm.sMIL(**kw)
    raise ValueError(method)


def fit_score(method, kernel, point, trb, ytr, teb, yte, opts=None):
    opts = opts or {}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = make(method, kernel, point, opts).fit(trb, ytr)
        if (
            method == "SVMCC"
            and kernel == "rbf"
            and opts.get("bias") == "lp"
            and not is_ref(method, opts)
        ):
            score = m.decision_function(teb) - m.intercept_ + m.lp_intercept_
            pred = np.where(score > 0, m.classes_[1], m.classes_[0])
        else:
            pred = m.predict(teb)
    return int(np.sum(pred == yte)), len(yte), [str(x.message)[:100] for x in w]


def run_fold(name, bags, y, tr, te, method, kernel, step, seed, fold, opts=None):
    opts = opts or {}
    t0 = time.perf_counter()
    trb, teb = [bags[i] for i in tr], [bags[i] for i in te]
    if STANDARDISE[name] and not opts.get("no_standardise"):
        trb, teb = standardise(trb, teb)
    ytr, yte = y[tr], y[te]
    d = trb[0].shape[1]
    g = grid(kernel, d, step, opts.get("gamma_scale", "over-d"))
    rs = 1000 * seed + fold
    sel = opts.get("inner", "cv3")
    if sel == "tune10":
        from sklearn.model_selection import StratifiedShuffleSplit

        inner = list(
            StratifiedShuffleSplit(1, test_size=0.1, random_state=rs).split(np.zeros(len(ytr)), ytr)
        )
    else:
        k = 10 if sel == "cv10" else 3
        inner = list(
            StratifiedKFold(k, shuffle=True, random_state=rs).split(np.zeros(len(ytr)), ytr)
        )
    nwarn = 0
    if len(g) == 1:
        best = g[0]
    else:
        scores = []
        for p in g:
            accs = []
            for a, b in inner:
                c, n, w = fit_score(
                    method,
                    kernel,
                    p,
                    [trb[i] for i in a],
                    ytr[a],
                    [trb[i] for i in b],
                    ytr[b],
                    opts,
                )
                accs.append(c / n)
                nwarn += len(w)
            scores.append(float(np.mean(accs)))
        best = g[int(np.argmax(scores))]
    t1 = time.perf_counter()
    c, n, w = fit_score(method, kernel, best, trb, ytr, teb, yte, opts)
    ci, gj = exps_of(best, g, step)
    return dict(
        correct=c,
        n=n,
        C=best["C"],
        gamma_d=best.get("gamma", 0.0) * d,
        gamma=best.get("gamma", 0.0),
        c_exp=ci,
        gamma_exp=gj,
        warnings_inner=nwarn,
        warnings_final=w,
        seconds=time.perf_counter() - t0,
        seconds_final=time.perf_counter() - t1,
    )


def settings_of(args, seed):
    """The key of a run's fold-log lines: the protocol and every option that changes a result."""
    settings = dict(folds=args.folds, grid_step=args.grid_step, seed=seed)
    defaults = dict(
        gamma_scale="over-d", no_standardise=False, cc_bounds="paper", bias="qp", inner="cv3"
    )
    opts = {k: getattr(args, k) for k in defaults}
    settings.update({k: v for k, v in opts.items() if v != defaults[k]})
    opts["lp_rule"] = args.lp_rule
    if args.lp_rule.startswith("ref-"):
        settings["lp_rule"] = args.lp_rule[len("ref-") :]  # the reference runs' key of old
    else:
        settings["cc_lp_rule"] = args.lp_rule
    return settings, opts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=DATASETS, choices=DATASETS)
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--folds", type=int, default=10, help="outer CV folds (default 10)")
    ap.add_argument("--run-folds", type=int, default=None, help="run only the first N outer folds")
    ap.add_argument(
        "--grid-step", type=int, default=1, help="use every k-th exponent of -8..8 (default 1)"
    )
    ap.add_argument(
        "--seed", type=int, nargs="+", default=[0], help="outer split seed(s), run in turn"
    )
    ap.add_argument("--log", type=Path, default=RESULTS / "yd_table1_folds.jsonl")
    ap.add_argument("--out", type=Path, default=RESULTS / "yd_table1.txt")
    ap.add_argument("--report-only", action="store_true")
    gammas = "rbf grid: gamma = 2^j/d (default), 2^j, or 1/sigma^2 with sigma = 2^j"
    add_choice(ap, "--gamma-scale", "over-d raw sigma", gammas)
    ap.add_argument(
        "--no-standardise", action="store_true", help="keep MUSK1 / Elephant features raw"
    )
    bounds = "SVMCC bounds: section 3's per kernel (default), the C1/C2 split, or C1 = C2 = C"
    add_choice(ap, "--cc-bounds", "paper split equal", bounds)
    add_choice(ap, "--bias", "qp lp", "SVMCC rbf: decision bias from the QP or the LP")
    rules = "SVMCC: milsvm.SVMCC's lp_rule, or ref-RULE: the Python reference with that rule"
    add_choice(ap, "--lp-rule", "project max ref-max ref-keep ref-project", rules)
    inner = "selection: 3- or 10-fold inner CV, or one 10%% tuning set"
    add_choice(ap, "--inner", "cv3 cv10 tune10", inner)
    args = ap.parse_args()
    t_start = time.perf_counter()
    lines = (
        [json.loads(line) for line in args.log.read_text().splitlines()]
        if args.log.exists()
        else []
    )
    done = {}  # seed -> {(dataset, method, fold): result}
    for seed in args.seed:
        settings, opts = settings_of(args, seed)
        done[seed] = {
            (r["dataset"], r["method"], r["fold"]): r["result"]
            for r in lines
            if r["settings"] == settings
        }
    datas = {}
    if not args.report_only:
        for seed in args.seed:
            settings, opts = settings_of(args, seed)
            for name in args.datasets:
                bags, y = datas.setdefault(name, load(name))
                folds = list(
                    StratifiedKFold(args.folds, shuffle=True, random_state=seed).split(
                        np.zeros(len(y)), y
                    )
                )
                nrun = len(folds) if args.run_folds is None else min(args.run_folds, len(folds))
                for fold, (tr, te) in enumerate(folds[:nrun]):
                    for m in args.methods:
                        if (name, m, fold) in done[seed]:
                            continue
                        r = run_fold(
                            name, bags, y, tr, te, m, KERNEL[name], args.grid_step, seed, fold, opts
                        )
                        done[seed][(name, m, fold)] = r
                        with open(args.log, "a") as f:
                            f.write(
                                json.dumps(
                                    dict(
                                        settings=settings,
                                        dataset=name,
                                        method=m,
                                        fold=fold,
                                        result=r,
                                    )
                                )
                                + "\n"
                            )
                        print(
                            f"  seed {seed} {name} {m} fold {fold}: {r['correct']}/{r['n']} "
                            f"C=2^{r['c_exp']} gamma=2^{r['gamma_exp']} (grid exponents) "
                            f"{r['seconds']:.1f} s",
                            flush=True,
                        )

    import milsvm

    out = Report()

    exps = list(range(-8, 9, args.grid_step))
    gdesc = {
        "over-d": "gamma = 2^j / d",
        "raw": "gamma = 2^j",
        "sigma": "gamma = 1/sigma^2, sigma = 2^j",
    }
    sdesc = {"cv3": "3-fold inner CV", "cv10": "10-fold inner CV", "tune10": "a 10% tuning set"}
    from collections import Counter

    accs = {}  # (dataset, method) -> [accuracy of each complete seed]
    for seed in args.seed:
        settings, opts = settings_of(args, seed)
        d = done[seed]
        out(
            f"Yang & Deng Table 1 (SVM-CC), {args.folds}-fold stratified CV over bags (seed "
            f"{seed}); C = 2^i (rbf: {gdesc[args.gamma_scale]}), i, j in {exps}, by "
            f"{sdesc[args.inner]} on each training part"
        )
        out(
            (
                "MUSK1/Elephant raw"
                if args.no_standardise
                else "MUSK1/Elephant standardised per training fold"
            )
            + f", TST1 raw sparse; SVMCC bounds {args.cc_bounds}, rbf bias {args.bias}, LP rule "
            f"{args.lp_rule}; milsvm {milsvm.__version__}, n_jobs=1"
        )
        out(f"settings key: {json.dumps(settings)}")
        out(
            "NSK (norm l1) and sMIL: same splits, same grid, same kernel; the paper reports "
            "SVM-CC only"
        )
        out()
        hdr = (
            f"{'dataset':<9} {'kernel':<6} {'method':<6} {'folds':>5} {'ours %':>7} {'paper %':>7} "
            f"{'diff':>6} {'time s':>7} {'warn':>5}  chosen (i, j) x count"
        )
        out(hdr)
        out("-" * len(hdr))
        for name in DATASETS:
            for m in METHODS:
                rs = [(f, d[(name, m, f)]) for f in range(args.folds) if (name, m, f) in d]
                if not rs:
                    continue
                c = sum(r["correct"] for _, r in rs)
                n = sum(r["n"] for _, r in rs)
                acc = 100.0 * c / n
                if len(rs) == args.folds:
                    accs.setdefault((name, m), []).append((seed, acc))
                paper = PAPER[name] if m == "SVMCC" else None
                secs = sum(r["seconds"] for _, r in rs)
                nw = sum(r["warnings_inner"] + len(r["warnings_final"]) for _, r in rs)
                ch = Counter(
                    (
                        r.get("c_exp", round(np.log2(r["C"]))),
                        r.get(
                            "gamma_exp", round(np.log2(r["gamma_d"])) if r["gamma_d"] > 0 else None
                        ),
                    )
                    for _, r in rs
                )
                chs = ", ".join(
                    f"({a},{b})x{k}" if KERNEL[name] == "rbf" else f"i={a} x{k}"
                    for (a, b), k in ch.most_common(5)
                )
                partial = (
                    ""
                    if len(rs) == args.folds
                    else f"  [partial: {len(rs)}/{args.folds} folds, {n} bags]"
                )
                out(
                    f"{name:<9} {KERNEL[name]:<6} {m:<6} {len(rs):>5} {acc:7.1f} "
                    f"{(f'{paper:.1f}' if paper else '-'):>7} "
                    f"{(f'{acc - paper:+.1f}' if paper else '-'):>6} {secs:7.1f} {nw:5d}  "
                    f"{chs}{partial}"
                )
                wt = sorted({w for _, r in rs for w in r["warnings_final"]})
                if wt:
                    out("          final-fit warnings: " + " | ".join(wt)[:300])
        out()
    if len(args.seed) > 1:
        out(
            f"Over the seeds (complete {args.folds}-fold runs only): accuracy % per seed, mean and "
            "standard deviation"
        )
        for (name, m), sa in accs.items():
            a = np.array([x for _, x in sa])
            paper = PAPER[name] if m == "SVMCC" else None
            per = ", ".join(f"{x:.1f} (seed {sd})" for sd, x in sa)
            out(
                f"  {name:<9} {m:<6} {per}; mean {a.mean():.1f} +- "
                f"{a.std(ddof=1) if len(a) > 1 else 0.0:.1f}"
                + (f" (paper {paper:.1f}, diff {a.mean() - paper:+.1f})" if paper else "")
            )
        out()
    out(f"wall time of this invocation {time.perf_counter() - t_start:.1f} s")
    out.write(args.out)


if __name__ == "__main__":
    main()
