"""One-class MI-SVM on synthetic bags with known instance labels (issue 9; Vijayanarasimhan's
report, sections 3-5 and Figures 3-4; ALGORITHMS.md section 5).

The report's data (SIVAL, Google images) are not available. Its section-5 hypothesis: when the
negatives of the positive bags come from the same distribution as the instances of the negative
bags (SIVAL), a two-class method (NSK) gains from the negative bags; when they come from a
different distribution (Google), NSK has to separate three distributions with one hyperplane and
a one-class method, which ignores the negative bags, may do better at finding the positives.
This script builds both situations with known instance labels and compares, by instance-level
AUROC on held-out bags,

* OCSVM:   ``milsvm.OneClassMISVM(bag_constraints=False)``, the plain one-class SVM on the
           instances of the positive training bags (report eq. 3-4);
* OCMISVM: ``milsvm.OneClassMISVM(bag_constraints=True)``, the one-class MI-SVM (Figures 1-2);
* NSK:     ``milsvm.NSK(norm="l1")``, the bag-level two-class SVM on the normalised set kernel.
           NSK only scores bags; an instance is scored as a singleton bag ``[x]``
           (``decision_function([x[None, :] for x in X])``). With ``norm="l1"`` that is the
           model's instance function ``f(x) + b`` (``F(X) = mean_p f(x_p) + b``).

Instance scores of the one-class methods: ``instance_decision_function`` (``f(x) = w.phi(x) -
rho``). Higher = more positive for all three.

Generator (``make_bags``; every instance in R^d, d = --dim, default 4):

* positive instances:          N(0, s_pos^2 I),            s_pos = --pos-std (0.5)
* negatives of negative bags:  N(D e_1, s_neg^2 I),        D = --sep (2), s_neg = --neg-std (1)
* negatives of positive bags:  scenario (a) the same N(D e_1, s_neg^2 I);
                               scenario (b) a third distribution N(D e_2, s_neg^2 I).

The third distribution of (b) is the negative-bag distribution rotated by 90 degrees about the
positive mean (same spread, same distance D from the positives), so the one-class methods, which
only see the positive bags, face training sets of the same difficulty in (a) and (b); what
changes is (i) for NSK, that positive and negative bags now differ by two things (the positives
and the third distribution), and (ii) at test time, that the negatives of negative bags come from
a distribution the one-class methods never saw. The positives are tighter than the negatives
(s_pos < s_neg): the report's premise that the positives form a compact concept among diverse
clutter; with equal spreads and a witness rate below 1/2 the negatives are the densest part of
a positive bag and no one-class method can find the positives.

Bags: every bag has --bag-size (25) instances (the report: Google bags of 25 images, SIVAL
images of ~30 segments); in a positive bag each instance is positive with probability
--witness-rate (0.3), at least one (a random one) forced positive; negative bags hold negatives
only. Per run: --train-bags (20) positive and as many negative training bags (the report trains
on 20 images = positive bags per run; the negative bags are used by NSK only), and --test-bags
(30) positive + 30 negative test bags, all drawn fresh. Run r draws with
``np.random.default_rng([seed, r])``; scenarios (a) and (b) of a run share every random number
(common random numbers): the same witness pattern and the same standard-normal noise, only the
centre of the positive bags' negatives differs, so per-run differences are paired across
scenarios too.

Hyperparameters: fixed in advance, never chosen on test data (nor on training data):

* kernel rbf, gamma = "median" for every method (1 / (2 sigma^2), sigma the median pairwise
  distance of the method's training instances: the positive bags' instances for the one-class
  methods, all training instances for NSK);
* nu = 0.9 for both one-class methods: the report's value (section 5.1: "nu = 0.9" for SIVAL and
  Google; the report's gamma of 5e-6 belongs to its image features and does not transfer);
* NSK: C = 1, norm "l1", default class weights (the classes are balanced);
* library defaults otherwise (one-class max_iter 20, SMO tol 1e-3); n_jobs = 1.

The sensitivity check (--sweep) reruns --sweep-runs runs for nu in {0.5, 0.9, 0.99}, gamma in
{1, 8} x the median rule and witness rate in {0.1, 0.3}; it reads test AUROC of many settings and
is reported as a sensitivity check only, not used to pick the main setting.

Measures, per run and scenario: instance-level AUROC over all instances of the test bags (main),
and over the instances of the positive test bags only (the report's Google "training images"
task: find the category among the noisy search results); per-run differences OCMISVM - OCSVM and
OCMISVM - NSK, summarised by mean +- std, wins/ties/losses and a two-sided Wilcoxon signed-rank
test (zero differences dropped). The one-class MI-SVM diagnostics: rounds, bag dual variables
> 0 (bags whose max constraint binds) and the positive training bags whose max is below rho
under the plain one-class SVM (violated constraints at the start), and any warnings.

Run (from the repository root, PYTHONPATH=python; about 5 s, 25 s with the sweep, one core):

    nice -n 10 python benches/studies.py one-class --runs 30 --seed 0 --sweep \\
        --out benches/results/one_class_synthetic.txt

Output: the table to --out (printed too) and the box plot of per-run differences (two panels,
scenarios a and b, like the report's Figures 3-4) to --out with suffix .png.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import milsvm  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.distance import pdist  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, add_seed  # noqa: E402

METHODS = ("OCSVM", "OCMISVM", "NSK")
DIFFS = (("OCMISVM", "OCSVM"), ("OCMISVM", "NSK"))
METRICS = ("all", "posbags")
METRIC_TEXT = {"all": "all test instances", "posbags": "instances of positive test bags"}


def make_bags(
    rng, n_pos, n_neg, *, dim=4, bag_size=25, witness_rate=0.3, sep=2.0, pos_std=0.5, neg_std=1.0
):
    """Draw ``n_pos`` positive and ``n_neg`` negative bags for both scenarios at once.

    Returns ``(bags_a, bags_b, y, inst_labels)``: the bags of scenario (a) (negatives of positive
    bags from the negative-bag distribution N(sep e_1, neg_std^2 I)) and of scenario (b) (from
    the third distribution N(sep e_2, neg_std^2 I)), built from the same random numbers; ``y``
    the bag labels (1 positive, 0 negative); ``inst_labels`` one 0/1 array per bag (1 = a
    positive instance, drawn from N(0, pos_std^2 I)).
    """
    if dim < 2:
        raise ValueError("dim must be >= 2 (the third distribution sits on the second axis)")
    centre_neg = np.zeros(dim)
    centre_neg[0] = sep
    centre_third = np.zeros(dim)
    centre_third[1] = sep
    bags_a, bags_b, y, labels = [], [], [], []
    for label, n in ((1, n_pos), (0, n_neg)):
        for _ in range(n):
            if label == 1:
                z = rng.random(bag_size) < witness_rate
                if not z.any():
                    z[rng.integers(bag_size)] = True
            else:
                z = np.zeros(bag_size, dtype=bool)
            noise = rng.standard_normal((bag_size, dim))
            xa = np.where(z[:, None], pos_std * noise, centre_neg + neg_std * noise)
            if label == 1:
                xb = np.where(z[:, None], pos_std * noise, centre_third + neg_std * noise)
            else:
                xb = xa.copy()
            bags_a.append(xa)
            bags_b.append(xb)
            y.append(label)
            labels.append(z.astype(int))
    return bags_a, bags_b, np.array(y), labels


def median_gamma(X):
    """The library's "median" rule, 1 / (2 sigma^2) with sigma the median pairwise distance
    (equal to the core's for <= 2000 rows); used to scale gamma in the sweep."""
    sigma = float(np.median(pdist(X)))
    return 1.0 / (2.0 * sigma * sigma) if sigma > 0 else 1.0


def fit_and_score(train, y, test, *, nu, gamma_factor, train_labels):
    """Fit the three methods and return ``(scores, info)``: instance scores of every test
    instance (concatenated in bag order) per method, and diagnostics (``train_labels``, the
    instance labels of the training bags, are used for the diagnostics only)."""
    pos_train = [b for b, t in zip(train, y) if t == 1]
    pos_labels = [lab for lab, t in zip(train_labels, y) if t == 1]
    if gamma_factor == 1.0:
        g_oc = g_nsk = "median"
    else:
        g_oc = gamma_factor * median_gamma(np.vstack(pos_train))
        g_nsk = gamma_factor * median_gamma(np.vstack(train))
    X_test = np.vstack(test)
    scores, info, caught = {}, {}, {}
    for name in METHODS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            if name == "NSK":
                model = milsvm.NSK(C=1.0, kernel="rbf", gamma=g_nsk, norm="l1", n_jobs=1).fit(
                    train, y
                )
                scores[name] = np.asarray(model.decision_function([x[None, :] for x in X_test]))
            else:
                model = milsvm.OneClassMISVM(
                    nu=nu, kernel="rbf", gamma=g_oc, bag_constraints=name == "OCMISVM", n_jobs=1
                ).fit(train, y)
                scores[name] = np.concatenate(model.instance_decision_function(test))
            caught[name] = [str(x.message) for x in w]
        if name == "OCSVM":
            train_scores = model.instance_decision_function(pos_train)
            info["violated_at_start"] = int(sum(s.max() < 0 for s in train_scores))
            info["argmax_positive"] = float(
                np.mean([lab[np.argmax(s)] for s, lab in zip(train_scores, pos_labels)])
            )
        if name == "OCMISVM":
            info["rounds"] = model.n_iter_
            info["binding_bags"] = int(np.sum(model.bag_dual_coef_ > 0))
            final = model.instance_decision_function(pos_train)
            info["binding_argmax_positive"] = [
                int(lab[np.argmax(f)])
                for f, lab, a in zip(final, pos_labels, model.bag_dual_coef_)
                if a > 0
            ]
            info["converged"] = model.converged_
        info[f"gamma_{name}"] = float(model.gamma_)
        info[f"const_{name}"] = bool(np.ptp(scores[name]) == 0)
    info["warnings"] = caught
    return scores, info


def auroc(labels, scores, mask=None):
    if mask is not None:
        labels, scores = labels[mask], scores[mask]
    return float(roc_auc_score(labels, scores))


def run_study(
    runs,
    seed,
    *,
    nu=0.9,
    gamma_factor=1.0,
    witness_rate=0.3,
    gen_kw=None,
    n_train=20,
    n_test=30,
    verbose=False,
):
    """All runs of one setting: ``res[scenario][metric][method]`` arrays of shape (runs,), and
    the per-run diagnostics ``diag[scenario]`` (list of dicts)."""
    gen_kw = dict(gen_kw or {})
    res = {s: {m: {k: np.empty(runs) for k in METHODS} for m in METRICS} for s in "ab"}
    diag = {s: [] for s in "ab"}
    for r in range(runs):
        rng = np.random.default_rng([seed, r])
        tr_a, tr_b, y_tr, lab_tr = make_bags(
            rng, n_train, n_train, witness_rate=witness_rate, **gen_kw
        )
        te_a, te_b, y_te, lab_te = make_bags(
            rng, n_test, n_test, witness_rate=witness_rate, **gen_kw
        )
        inst = np.concatenate(lab_te)
        in_pos_bag = np.concatenate([np.full(len(lab), t == 1) for lab, t in zip(lab_te, y_te)])
        for s, train, test in (("a", tr_a, te_a), ("b", tr_b, te_b)):
            scores, info = fit_and_score(
                train, y_tr, test, nu=nu, gamma_factor=gamma_factor, train_labels=lab_tr
            )
            for k in METHODS:
                res[s]["all"][k][r] = auroc(inst, scores[k])
                res[s]["posbags"][k][r] = auroc(inst, scores[k], in_pos_bag)
            diag[s].append(info)
        if verbose:
            print(
                f"  run {r:2d}: "
                + "  ".join(
                    f"{s}: " + " ".join(f"{k} {res[s]['all'][k][r]:.3f}" for k in METHODS)
                    for s in "ab"
                ),
                flush=True,
            )
    return res, diag


def paired_summary(d):
    """mean, std, median, wins, ties, losses, Wilcoxon p (None when every difference is 0)."""
    wins, ties, losses = int(np.sum(d > 0)), int(np.sum(d == 0)), int(np.sum(d < 0))
    p = None
    if np.any(d != 0):
        p = float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)
    return (
        float(d.mean()),
        float(d.std(ddof=1)) if len(d) > 1 else 0.0,
        float(np.median(d)),
        wins,
        ties,
        losses,
        p,
    )


def fmt_p(p):
    return "   n/a (all 0)" if p is None else f"{p:14.2g}"


def report_main(res, diag, args, seconds):
    lines = []
    add = lines.append
    add(
        "One-class MI-SVM, synthetic study (Vijayanarasimhan, section 5): instance-level AUROC on "
        "held-out bags"
    )
    add(
        f"runs {args.runs}, seed {args.seed}; per run {args.train_bags}+{args.train_bags} training "
        f"bags, {args.test_bags}+{args.test_bags} test bags of {args.bag_size} instances, witness "
        f"rate {args.witness_rate}, dim {args.dim}, positives N(0, {args.pos_std}^2 I), negatives "
        f"N({args.sep} e_1, {args.neg_std}^2 I); scenario (b): negatives of positive bags "
        f"N({args.sep} e_2, {args.neg_std}^2 I)"
    )
    add(
        "fixed hyperparameters: rbf, gamma='median' (each method's training instances), one-class "
        f"nu = {args.nu}, NSK C = 1 norm l1; NSK instance score = the instance as a singleton bag"
    )
    add("")
    for metric in METRICS:
        add(f"AUROC over {METRIC_TEXT[metric]} (mean +- std over runs)")
        add(f"{'scenario':<44}" + "".join(f"{k:>16}" for k in METHODS))
        for s, text in (
            ("a", "(a) pos-bag negatives ~ negative bags"),
            ("b", "(b) pos-bag negatives ~ third distr."),
        ):
            add(
                f"{text:<44}"
                + "".join(
                    f"{res[s][metric][k].mean():9.3f} +- {res[s][metric][k].std(ddof=1):.3f}"
                    for k in METHODS
                )
            )
        add("")
        add(
            f"per-run differences ({METRIC_TEXT[metric]}): mean +- std, median, wins/ties/losses, "
            "Wilcoxon p"
        )
        for s in "ab":
            for a, b in DIFFS:
                m, sd, med, wins, ties, losses, p = paired_summary(
                    res[s][metric][a] - res[s][metric][b]
                )
                add(
                    f"  ({s}) {a + ' - ' + b:<18} {m:+8.4f} +- {sd:.4f}   median {med:+8.4f}   "
                    f"W/T/L {wins:2d}/{ties:2d}/{losses:2d}   p {fmt_p(p)}"
                )
        add("")
    add("OCMISVM diagnostics (per scenario, over runs)")
    for s in "ab":
        rounds = np.array([d["rounds"] for d in diag[s]])
        binding = np.array([d["binding_bags"] for d in diag[s]])
        start = np.array([d["violated_at_start"] for d in diag[s]])
        conv = all(d["converged"] for d in diag[s])
        amax = np.mean([d["argmax_positive"] for d in diag[s]])
        same = int(np.sum(res[s]["all"]["OCMISVM"] == res[s]["all"]["OCSVM"]))
        bind_pos = [v for d in diag[s] for v in d["binding_argmax_positive"]]
        add(
            f"  ({s}) rounds {rounds.min()}-{rounds.max()} (mean {rounds.mean():.2f}); positive "
            f"training bags with max f < 0 under the plain OCSVM: mean {start.mean():.2f} of "
            f"{args.train_bags} (max {start.max()}); bag duals > 0 at the end: mean "
            f"{binding.mean():.2f} (max {binding.max()}); runs where OCMISVM = OCSVM exactly (test "
            f"AUROC): {same}/{args.runs}; all converged: {conv}"
        )
        add(
            "      top-scored instance of a positive training bag (plain OCSVM) is a positive: "
            f"{amax:.2f} (witness rate {args.witness_rate}); bags with a binding max constraint "
            f"whose top instance (final model) is a positive: {sum(bind_pos)}/{len(bind_pos)}"
        )
        g = {k: np.array([d[f"gamma_{k}"] for d in diag[s]]) for k in METHODS}
        add(
            f"      gamma (median rule): one-class {g['OCSVM'].mean():.4f} (range "
            f"{g['OCSVM'].min():.4f}-{g['OCSVM'].max():.4f}), NSK {g['NSK'].mean():.4f}"
        )
        const = {k: sum(d[f"const_{k}"] for d in diag[s]) for k in METHODS}
        warns = {k: sorted({m for d in diag[s] for m in d["warnings"][k]}) for k in METHODS}
        add(
            f"      constant-score runs: {const}; warnings: "
            + (
                "none"
                if not any(warns.values())
                else "; ".join(f"{k}: {v}" for k, v in warns.items() if v)
            )
        )
    add("")
    add(f"time: {seconds:.1f} s wall")
    return lines


def report_sweep(rows, args, seconds):
    lines = [
        "",
        f"Sensitivity check (--sweep, {args.sweep_runs} runs each, seed {args.seed + 1}; test "
        "AUROC over all test instances, mean over runs; d = OCMISVM - other, W/L = wins/losses)",
    ]
    head = (
        f"{'w':>5} {'nu':>5} {'gam x':>6} {'sc':>3} {'OCSVM':>7} {'OCMISVM':>8} {'NSK':>7}  "
        f"{'d vs OCSVM':>11} {'W/L':>6} {'binding':>8}  {'d vs NSK':>9} {'W/L':>6}"
    )
    lines.append(head)
    for (w, nu, gf), (res, diag) in rows:
        for s in "ab":
            r = res[s]["all"]
            d1 = r["OCMISVM"] - r["OCSVM"]
            d2 = r["OCMISVM"] - r["NSK"]
            binding = np.mean([d["binding_bags"] for d in diag[s]])
            lines.append(
                f"{w:5.2f} {nu:5.2f} {gf:6g} {s:>3} {r['OCSVM'].mean():7.3f} "
                f"{r['OCMISVM'].mean():8.3f} {r['NSK'].mean():7.3f}  {d1.mean():+11.4f} "
                f"{int(np.sum(d1 > 0)):>2}/{int(np.sum(d1 < 0)):<3} {binding:8.2f}  "
                f"{d2.mean():+9.4f} {int(np.sum(d2 > 0)):>2}/{int(np.sum(d2 < 0)):<3}"
            )
    lines.append(
        "('binding' = mean number of positive training bags whose max constraint has a dual > 0)"
    )
    lines.append(f"sweep time: {seconds:.1f} s wall")
    return lines


def plot(res, path, args):
    """Two scenario panels (columns a and b), like the report's Figures 3-4; the two differences
    live on very different scales, so each gets its own row (shared y within a row)."""
    fig, axes = plt.subplots(2, 2, figsize=(9.5, 7.5), sharey="row")
    titles = {
        "a": "(a) negatives of positive bags ~ negative bags",
        "b": "(b) negatives of positive bags ~ third distribution",
    }
    ticks = ["all test\ninstances", "positive test\nbags' instances"]
    colours = {"OCSVM": "#4c72b0", "NSK": "#dd8452"}
    jitter = np.random.default_rng(0)
    for row, (a, b) in enumerate(DIFFS):
        for col, s in enumerate("ab"):
            ax = axes[row, col]
            data = [res[s][metric][a] - res[s][metric][b] for metric in METRICS]
            bp = ax.boxplot(
                data,
                patch_artist=True,
                widths=0.5,
                showmeans=True,
                showfliers=False,
                medianprops=dict(color="k"),
                meanprops=dict(marker="D", markerfacecolor="k", markeredgecolor="k", markersize=4),
            )
            for patch, alpha in zip(bp["boxes"], (0.8, 0.4)):
                patch.set_facecolor(colours[b])
                patch.set_alpha(alpha)
            for i, d in enumerate(data, start=1):
                ax.plot(i + jitter.uniform(-0.1, 0.1, len(d)), d, ".", color="k", alpha=0.4, ms=3)
            ax.axhline(0.0, color="k", lw=0.8, ls="--")
            ax.set_xticks([1, 2])
            ax.set_xticklabels(ticks, fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            if row == 0:
                ax.set_title(titles[s], fontsize=10)
            if col == 0:
                ax.set_ylabel(f"AUROC({a}) - AUROC({b})", fontsize=9)
    fig.suptitle(
        f"Per-run differences in instance-level AUROC on held-out bags, {args.runs} runs "
        f"(box: quartiles, whiskers: 1.5 IQR, diamond: mean, dots: runs)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    add_seed(ap)
    ap.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "one_class_synthetic.txt",
        help="table file; the box plot goes beside it with suffix .png",
    )
    ap.add_argument("--nu", type=float, default=0.9)
    ap.add_argument("--dim", type=int, default=4)
    ap.add_argument("--bag-size", type=int, default=25)
    ap.add_argument("--witness-rate", type=float, default=0.3)
    ap.add_argument("--sep", type=float, default=2.0)
    ap.add_argument("--pos-std", type=float, default=0.5)
    ap.add_argument("--neg-std", type=float, default=1.0)
    ap.add_argument(
        "--train-bags", type=int, default=20, help="positive (and as many negative) training bags"
    )
    ap.add_argument(
        "--test-bags", type=int, default=30, help="positive (and as many negative) test bags"
    )
    ap.add_argument("--sweep", action="store_true", help="also run the sensitivity check")
    ap.add_argument("--sweep-runs", type=int, default=10)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    gen_kw = dict(
        dim=args.dim,
        bag_size=args.bag_size,
        sep=args.sep,
        pos_std=args.pos_std,
        neg_std=args.neg_std,
    )
    t0 = time.perf_counter()
    res, diag = run_study(
        args.runs,
        args.seed,
        nu=args.nu,
        witness_rate=args.witness_rate,
        gen_kw=gen_kw,
        n_train=args.train_bags,
        n_test=args.test_bags,
        verbose=args.verbose,
    )
    lines = report_main(res, diag, args, time.perf_counter() - t0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png = args.out.with_suffix(".png")
    plot(res, png, args)
    lines.append(f"box plot: {png}")
    if args.sweep:
        t1 = time.perf_counter()
        rows = []
        for w in (0.1, 0.3):
            for nu in (0.5, 0.9, 0.99):
                for gf in (1.0, 8.0):
                    rows.append(
                        (
                            (w, nu, gf),
                            run_study(
                                args.sweep_runs,
                                args.seed + 1,
                                nu=nu,
                                gamma_factor=gf,
                                witness_rate=w,
                                gen_kw=gen_kw,
                                n_train=args.train_bags,
                                n_test=args.test_bags,
                            ),
                        )
                    )
        lines += report_sweep(rows, args, time.perf_counter() - t1)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.write_text(text)


if __name__ == "__main__":
    main()
