"""Witness detection (issue 19, item 2): how well does each estimator find the positive
instances of a bag it was never told about? Instance-level AUROC against known instance labels,
for every estimator of ``milsvm._registry.ESTIMATORS`` (13), on two kinds of data.

Data
----
* **toy**: the 2-D toy of Gehler & Chapelle (AISTATS 2007, section 5),
  ``milsvm.datasets.make_annealing_toy(f, n_bags, return_instance_labels=True)``: bag sizes
  uniform on 1..10, half the bags positive, a positive bag holds ``ceil(f m)`` instances of the
  positive disc and the rest from the negative region. As in the paper: 30 training and 100
  test bags, and the fraction ``f`` of positive instances varied (--fractions, default 0.1,
  0.3, 0.5, 0.7; f = 1 is left out because a positive bag then has no negative to rank).
  Features as generated (no scaling). Seeds: training ``10000 s + 100 k + 1``, test ``... + 2``
  (s the seed, k the index of f).
* **digits**: the MNIST-bags protocol of Ilse, Tomczak & Welling (ICML 2018, "Attention-based
  deep multiple instance learning", section 5.2) on scikit-learn's bundled 8x8 digits
  (``sklearn.datasets.load_digits``: 1797 images, about 180 per digit, 64 pixel values 0..16).
  ``make_digit_bags`` below: a bag's size is ``max(1, round(N(10, 2^2)))`` (the authors' code
  truncates with ``int()`` instead; rounding keeps the mean at 10), its images are drawn
  uniformly with replacement from an image pool, a bag is positive when it holds at least one
  "9", and an instance is positive when it is a "9". As in the paper the bag labels are not
  balanced: about 1 - 0.9^10 = 65% of the bags are positive, and a positive bag holds on average
  about 1.5 nines among 10 images. Ilse et al. draw training bags from MNIST's training images
  and test bags from its test images; here each seed splits the 1797 images 50/50 (stratified by
  digit) into a training pool and a test pool (so a test image is never seen in training; with
  about 900 images a pool, an image appears in about two training bags of a 200-bag set and in
  several test bags). --train-bags (default 50, 100, 200; the paper's smallest sizes) training
  bags and --digit-test-bags (500; the paper: 1000) test bags, the test bags the same for every
  training size of a seed. Features: the 64 pixels standardised with the mean and std of the
  training instances (a pixel constant there is only centred). Seeds: pool split and test bags
  ``default_rng([s, 0])``, training bags ``default_rng([s, n_train])``.

Estimators and hyperparameters
------------------------------
Every estimator with ``n_jobs=1`` and its defaults except:

* kernel rbf everywhere (SVMCC's default is linear: ``kernel="rbf"`` is set);
* SparseMI, RSVM, ReducedSet: ``n_xv`` = 10 on the toy (the README's MUSK setting), 20 on the
  digits (ten digit classes in 64 dimensions); ``random_state`` = the seed;
* NSK ``norm="l1"`` (the default; its instance scores are then ``f(x) + b``); ALPSVM ``C2=1``,
  ``p_star=0.5`` (the defaults: the witness rate is treated as unknown);
* OneClassMISVM fits on the positive training bags only (it ignores the others by design); its
  grid is over ``nu`` instead of ``C``.

``C`` (``nu``) and ``gamma`` are chosen per estimator, seed and setting by 3-fold stratified
bag-level cross-validation on the training bags (``StratifiedKFold(3, shuffle=True,
random_state=seed)``), the criterion being the mean bag-level AUROC of ``decision_function`` on
the validation folds (instance labels are never used for the choice; ties: the first grid
point), then refitted on all training bags. Grid: C in {0.1, 1, 10, 100} (nu in {0.1, 0.5, 0.9}
for OneClassMISVM) times gamma = a factor times a base width: on the toy the paper's sigma = 1
(gamma 0.5), factors {0.25, 0.5, 1, 2, 4} (20 points); on the digits scikit-learn's "scale",
``1 / (64 var(X))`` of the standardised training instances, factors {0.5, 1, 2, 4} (16 points).
The grid was widened upward after a one-seed trial run on C in {0.1, 1, 10} x factors {0.5, 1,
2}, in which the inner CV often chose the upper edges; the digits leave out the factor 0.25 to
keep the run short. An inner fit that raises scores -inf; an estimator whose every grid point
fails is reported as failed.

Measures (on the test bags; per seed, then mean +- std over --seeds seeds, default 5)
--------------------------------------------------------------------------------------
* bag AUROC: ``decision_function`` against the bag labels;
* instance AUROC, all: ``instance_decision_function`` of every test instance against its label
  (the instances of negative bags are all negatives);
* instance AUROC, positive bags: the same over the instances of the positive test bags only,
  the witness-finding task proper (bag labels cannot help there);
* fit s: seconds of the final ``fit`` on all training bags (one thread); CV s: seconds of the
  inner fits of the grid search. Times are wall clock on a shared machine with two worker
  processes (--n-jobs), so read them as rough.

``instance_decision_function`` is each estimator's own instance score, whose mean over a bag
(max, for the max-pooling estimators) is the bag score. For sMIL it includes the bag's threshold
shift ``1 - 1/|X|``, so the instances of small bags are shifted down; that is the library's
definition and is kept. The "pool" column says how each estimator pools instance scores.

Run (from the repository root, with milsvm installed). Most of the time goes to the grid search
of ALSVM, AWSVM and ALPSVM on 200 digit bags (full-basis SMO fits of ~2000 instances). The
recorded run took 38 minutes wall and 75 minutes in tasks on two cores that other jobs loaded
(load average 4-11); a one-seed trial on a smaller grid took 2 minutes, so expect 15-20 minutes
on two idle cores. ``--seeds 3`` or ``--train-bags 50 100`` make it shorter.

    nice -n 10 python benches/studies.py witness --out benches/results/witness_detection.txt

``--quick`` (a few seconds): one seed, f = 0.3 and 50 training bags only, 100 digit test
bags, no grid search (C = 1, nu = 0.5, gamma = 1 x the base width), one process; it writes a
file only with --out. ``--estimators NAME ...`` runs a subset.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, add_out  # noqa: E402
from _protocol import standardise  # noqa: E402

TOY_TRAIN_BAGS, TOY_TEST_BAGS = 30, 100
TOY_BASE_GAMMA = 0.5  # Gehler & Chapelle's RBF width sigma = 1: gamma = 1 / (2 sigma^2)
GAMMA_FACTORS = {"toy": (0.25, 0.5, 1.0, 2.0, 4.0), "digits": (0.5, 1.0, 2.0, 4.0)}
C_GRID = (0.1, 1.0, 10.0, 100.0)
NU_GRID = (0.1, 0.5, 0.9)
N_XV = {"toy": 10, "digits": 20}
XV_ESTIMATORS = ("SparseMI", "RSVM", "ReducedSet")


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_digit_bags(n_bags, images, digits, rng, target=9, mean_size=10.0, std_size=2.0):
    """Bags of digit images after Ilse, Tomczak & Welling (2018), section 5.2 (MNIST-bags).

    Each bag has ``max(1, round(N(mean_size, std_size^2)))`` images drawn uniformly with
    replacement from ``images`` (rows, with their digits ``digits``); it is positive when it holds
    at least one image of ``target``; an instance is positive when it is a ``target``.

    Returns ``bags`` (list of float64 arrays), ``y`` (int64 0/1 per bag) and ``z`` (list of int64
    0/1 arrays, the instance labels).
    """
    bags, y, z = [], [], []
    for _ in range(n_bags):
        m = max(1, int(round(rng.normal(mean_size, std_size))))
        idx = rng.integers(0, len(images), size=m)
        lab = (digits[idx] == target).astype(np.int64)
        bags.append(np.ascontiguousarray(images[idx], dtype=np.float64))
        y.append(int(lab.any()))
        z.append(lab)
    return bags, np.array(y, dtype=np.int64), z


def digit_pools(seed):
    """The seed's 50/50 split (stratified by digit) of scikit-learn's digits into a training pool
    and a test pool, and the generator of its test bags."""
    from sklearn.datasets import load_digits

    X, t = load_digits(return_X_y=True)
    rng = np.random.default_rng([seed, 0])
    train_idx, test_idx = [], []
    for d in range(10):
        idx = rng.permutation(np.flatnonzero(t == d))
        half = len(idx) // 2
        train_idx.append(idx[:half])
        test_idx.append(idx[half:])
    tr, te = np.concatenate(train_idx), np.concatenate(test_idx)
    return (X[tr], t[tr]), (X[te], t[te]), rng


def digit_data(seed, sizes, n_test):
    """{n_train: (train bags, y, z, test bags, y, z)} of one seed, standardised on the training
    instances of each training set; the test bags are the same images for every size."""
    (Xtr, ttr), (Xte, tte), rng = digit_pools(seed)
    test = make_digit_bags(n_test, Xte, tte, rng)
    out = {}
    for n in sizes:
        train = make_digit_bags(n, Xtr, ttr, np.random.default_rng([seed, n]))
        tr_bags, te_bags = standardise(train[0], test[0])
        out[n] = (tr_bags, train[1], train[2], te_bags, test[1], test[2])
    return out


def toy_data(seed, k, f):
    from milsvm.datasets import make_annealing_toy

    base = 10000 * seed + 100 * k
    tr = make_annealing_toy(f, TOY_TRAIN_BAGS, random_state=base + 1, return_instance_labels=True)
    te = make_annealing_toy(f, TOY_TEST_BAGS, random_state=base + 2, return_instance_labels=True)
    return (*tr, *te)


def scale_gamma(bags):
    """scikit-learn's "scale" width, 1 / (n_features var(X)), over the instances of ``bags``."""
    X = np.vstack(bags)
    v = float(X.var())
    return 1.0 / (X.shape[1] * v) if v > 0 else 1.0


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------


def make_estimator(name, kind, seed, point):
    """The estimator ``name`` with the fixed settings of the docstring and the grid point
    ``point`` = (C or nu, gamma)."""
    from milsvm._registry import ESTIMATORS

    cls = ESTIMATORS[name]
    c, gamma = point
    kw = dict(n_jobs=1, gamma=gamma)
    kw["nu" if name == "OneClassMISVM" else "C"] = c
    if name == "SVMCC":
        kw["kernel"] = "rbf"
    if name in XV_ESTIMATORS:
        kw["n_xv"] = N_XV[kind]
    if "random_state" in cls().get_params():
        kw["random_state"] = seed
    return cls(**kw)


def grid_points(name, kind, base_gamma, quick):
    first = NU_GRID if name == "OneClassMISVM" else C_GRID
    if quick:
        return [(0.5 if name == "OneClassMISVM" else 1.0, base_gamma)]
    return [(c, g * base_gamma) for c in first for g in GAMMA_FACTORS[kind]]


def fit_quiet(est, bags, y):
    """Fit; return the warnings' messages (ConvergenceWarning and the like)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(bags, y)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def choose(name, kind, seed, bags, y, grid):
    """The grid point of the best mean validation bag AUROC (3-fold stratified CV; ties: the
    first), the seconds of the inner fits and the number of inner fits that raised."""
    if len(grid) == 1:
        return grid[0], 0.0, 0
    folds = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    scores, seconds, failed = [], 0.0, 0
    for point in grid:
        vals = []
        for tr, va in folds:
            est = make_estimator(name, kind, seed, point)
            t0 = time.perf_counter()
            try:
                fit_quiet(est, [bags[i] for i in tr], y[tr])
                vals.append(roc_auc_score(y[va], est.decision_function([bags[i] for i in va])))
            except Exception:  # noqa: BLE001 - an inner fit that raises loses this grid point
                vals.append(-np.inf)
                failed += 1
            seconds += time.perf_counter() - t0
        scores.append(np.mean(vals))
    best = int(np.argmax(scores))
    if not np.isfinite(scores[best]):
        raise RuntimeError("every grid point failed in the inner CV")
    return grid[best], seconds, failed


def run_task(kind, setting, seed, name, data, quick):
    """One estimator on one data set of one seed: the grid search, the refit and the test
    measures, as a dict (``error`` set instead when it failed)."""
    tr_bags, tr_y, _, te_bags, te_y, te_z = data
    base = TOY_BASE_GAMMA if kind == "toy" else scale_gamma(tr_bags)
    out = dict(kind=kind, setting=setting, seed=seed, name=name)
    t_start = time.perf_counter()
    try:
        point, cv_s, inner_failed = choose(
            name, kind, seed, tr_bags, tr_y, grid_points(name, kind, base, quick)
        )
        est = make_estimator(name, kind, seed, point)
        t0 = time.perf_counter()
        caught = fit_quiet(est, tr_bags, tr_y)
        fit_s = time.perf_counter() - t0
        bag_scores = np.asarray(est.decision_function(te_bags))
        inst = est.instance_decision_function(te_bags)
        s, z = np.concatenate(inst), np.concatenate(te_z)
        in_pos = np.concatenate([np.full(len(b), t == 1) for b, t in zip(te_z, te_y)])
        out.update(
            bag=roc_auc_score(te_y, bag_scores),
            inst=roc_auc_score(z, s),
            inst_pos=roc_auc_score(z[in_pos], s[in_pos])
            if 0 < z[in_pos].sum() < in_pos.sum()
            else np.nan,
            fit_s=fit_s,
            cv_s=cv_s,
            inner_failed=inner_failed,
            point=(point[0], round(point[1] / base, 6)),
            pooling=est.model_.pooling,
            warnings=sorted(set(m.split(":")[0] for m in caught)),
            const=bool(np.ptp(s) == 0),
        )
    except Exception as e:  # noqa: BLE001 - reported in the table, never dropped
        out["error"] = f"{type(e).__name__}: {e}"[:120]
    out["task_s"] = time.perf_counter() - t_start
    return out


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def pm(a, digits=3):
    a = np.asarray([x for x in a if np.isfinite(x)])
    if not len(a):
        return "n/a"
    sd = a.std(ddof=1) if len(a) > 1 else 0.0
    return f"{a.mean():.{digits}f} ± {sd:.{digits}f}"


def pm_time(a):
    a = np.asarray(a)
    return f"{a.mean():.2f} ± {a.std(ddof=1) if len(a) > 1 else 0.0:.2f}"


def setting_label(kind, setting):
    if kind == "toy":
        return f"toy, f = {setting} ({TOY_TRAIN_BAGS} training bags, {TOY_TEST_BAGS} test bags)"
    return f"digits, {setting} training bags"


def data_stats(data):
    tr_bags, tr_y, tr_z, te_bags, te_y, te_z = data

    def one(bags, y, z):
        sizes = np.array([len(b) for b in bags])
        wit = np.mean([zz.mean() for zz, t in zip(z, y) if t == 1])
        return (
            f"{len(bags)} bags, {sizes.sum()} instances, {int(y.sum())} positive, witness rate "
            f"{wit:.2f}"
        )

    return f"train {one(tr_bags, tr_y, tr_z)}; test {one(te_bags, te_y, te_z)}"


def report(results, settings, names, seeds, stats):
    """The per-setting tables and the summary tables, as a list of lines."""
    lines = []
    add = lines.append
    by = {}
    for r in results:
        by.setdefault((r["kind"], r["setting"], r["name"]), []).append(r)
    head = (
        f"{'estimator':<14} {'pool':<10} {'bag AUROC':>14} {'inst AUROC':>14} "
        f"{'inst AUROC pos':>15} {'fit s':>12} {'CV s':>8}  {'chosen (C|nu, gamma x)':<26} notes"
    )
    for kind, setting in settings:
        add(f"== {setting_label(kind, setting)}; {len(seeds)} seeds")
        for line in stats[kind, setting]:
            add(f"   {line}")
        add(head)
        add("-" * len(head))
        for name in names:
            rs = by.get((kind, setting, name), [])
            ok = [r for r in rs if "error" not in r]
            notes = []
            errs = [r["error"] for r in rs if "error" in r]
            if errs:
                notes.append(f"FAILED {len(errs)}/{len(rs)}: {errs[0]}")
            if not ok:
                add(f"{name:<14} {'-':<10} {'failed':>14}  " + "; ".join(notes))
                continue
            warn = Counter(w for r in ok for w in r["warnings"])
            notes += [f"{w} in {k}/{len(ok)} fits" for w, k in warn.items()]
            inner = sum(r["inner_failed"] for r in ok)
            if inner:
                notes.append(f"{inner} inner fits raised")
            const = sum(r["const"] for r in ok)
            if const:
                notes.append(f"constant scores in {const}/{len(ok)}")
            chosen = Counter(r["point"] for r in ok).most_common(2)
            ch = ", ".join(f"({c:g}, {g:g})x{k}" for (c, g), k in chosen)
            add(
                f"{name:<14} {ok[0]['pooling']:<10} {pm([r['bag'] for r in ok]):>14} "
                f"{pm([r['inst'] for r in ok]):>14} {pm([r['inst_pos'] for r in ok]):>15} "
                f"{pm_time([r['fit_s'] for r in ok]):>12} {np.mean([r['cv_s'] for r in ok]):8.1f}  "
                f"{ch:<26} " + "; ".join(notes)
            )
        add("")
    # summary tables: one column per setting
    cols = [(k, s) for k, s in settings]
    short = [f"f={s}" if k == "toy" else f"n={s}" for k, s in cols]
    for key, title in (
        ("inst_pos", "instance AUROC within positive test bags (witness finding)"),
        ("inst", "instance AUROC over all test instances"),
        ("bag", "bag AUROC"),
        ("fit_s", "fit seconds (final fit, one thread)"),
    ):
        add(
            f"== summary: {title}, mean over seeds (toy columns f = fraction of positives; digits "
            "columns n = training bags)"
        )
        hdr = f"{'estimator':<14}" + "".join(f"{c:>9}" for c in short)
        add(hdr)
        add("-" * len(hdr))
        for name in names:
            cells = []
            for k, s in cols:
                vals = [r[key] for r in by.get((k, s, name), []) if "error" not in r]
                vals = [v for v in vals if np.isfinite(v)]
                cells.append(
                    f"{np.mean(vals):9.3f}"
                    if vals and key != "fit_s"
                    else f"{np.mean(vals):9.2f}"
                    if vals
                    else f"{'fail':>9}"
                )
            add(f"{name:<14}" + "".join(cells))
        add("")
    return lines


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="one seed, f = 0.3 and 50 training bags, no grid search, one process",
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--fractions", type=float, nargs="*", default=[0.1, 0.3, 0.5, 0.7])
    ap.add_argument("--train-bags", type=int, nargs="*", default=[50, 100, 200])
    ap.add_argument("--digit-test-bags", type=int, default=500)
    ap.add_argument(
        "--estimators", nargs="+", default=None, help="a subset of the registry (default: all)"
    )
    ap.add_argument("--n-jobs", type=int, default=2, help="worker processes (one thread a fit)")
    add_out(ap, None, "table file (default: benches/results/witness_detection.txt; --quick: none)")
    args = ap.parse_args(argv)

    from milsvm._registry import ESTIMATORS, resolve

    names = [resolve(n).__name__ for n in args.estimators] if args.estimators else list(ESTIMATORS)
    if args.quick:
        args.seeds, args.fractions, args.train_bags, args.digit_test_bags, args.n_jobs = (
            1,
            [0.3],
            [50],
            100,
            1,
        )
    out_path = args.out if args.out or args.quick else RESULTS / "witness_detection.txt"
    seeds = list(range(args.seeds))

    t0 = time.perf_counter()
    data, stats = {}, {}
    for s in seeds:
        for k, f in enumerate(args.fractions):
            data["toy", f, s] = toy_data(s, k, f)
        for n, d in digit_data(s, args.train_bags, args.digit_test_bags).items():
            data["digits", n, s] = d
    settings = [("toy", f) for f in args.fractions] + [("digits", n) for n in args.train_bags]
    for kind, setting in settings:
        stats[kind, setting] = [f"seed 0: {data_stats(data[kind, setting, 0])}"]

    # the largest problems first (the slowest tasks), for a balanced parallel run
    tasks = [
        (kind, setting, s, name)
        for kind, setting in settings[::-1]
        for s in seeds
        for name in names
    ]
    print(
        f"{len(tasks)} tasks ({len(names)} estimators, {len(settings)} settings, {len(seeds)} "
        f"seeds), {args.n_jobs} process(es)",
        flush=True,
    )
    if args.n_jobs == 1:
        results = []
        for kind, setting, s, name in tasks:
            results.append(run_task(kind, setting, s, name, data[kind, setting, s], args.quick))
    else:
        from joblib import Parallel, delayed

        results = []
        gen = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
            delayed(run_task)(kind, setting, s, name, data[kind, setting, s], args.quick)
            for kind, setting, s, name in tasks
        )
        for r in gen:
            results.append(r)
            status = r.get("error") or (
                f"bag {r['bag']:.3f} inst {r['inst']:.3f} pos {r['inst_pos']:.3f} "
                f"fit {r['fit_s']:.2f} s"
            )
            print(
                f"  [{len(results)}/{len(tasks)} {time.perf_counter() - t0:6.0f} s] {r['kind']} "
                f"{r['setting']} seed {r['seed']} {r['name']}: {status} ({r['task_s']:.1f} s)",
                flush=True,
            )
    wall = time.perf_counter() - t0

    lines = [
        "Witness detection: instance-level AUROC against known instance labels "
        "(benches/studies.py witness; protocol in its docstring)",
        "command: python " + " ".join([str(Path(sys.argv[0]).as_posix())] + sys.argv[1:])
        if argv is None
        else "command: (called from Python) " + " ".join(argv),
        f"seeds {seeds}; grid search "
        f"{'off (--quick)' if args.quick else 'by 3-fold bag-level CV on bag AUROC'}; "
        f"{args.n_jobs} worker process(es), one thread a fit; mean ± std over seeds",
        "columns: bag AUROC (test bags), inst AUROC (all test instances), inst AUROC pos "
        "(instances of positive test bags only), fit s (final fit), CV s (inner fits of the grid "
        "search, mean over seeds), chosen grid point (most frequent two: C or nu, gamma over the "
        "base width; xK = K seeds)",
        "",
    ]
    lines += report(results, settings, names, seeds, stats)
    lines.append(
        f"total: {wall:.0f} s wall, {sum(r['task_s'] for r in results):.0f} s in tasks "
        f"(milsvm {__import__('milsvm').__version__}, {os.cpu_count()} cores)"
    )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(text)
        print(f"wrote {out_path}")
    return results


if __name__ == "__main__":
    main()
