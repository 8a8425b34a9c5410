"""Reproduce Figure 1 of Gehler & Chapelle (AISTATS 2007), section 5: the 2-D toy data set.

Protocol (paper, section 5):
  * for each fraction f = 0.1, 0.2, ..., 1.0 of positive instances in a positive bag and each
    of R independent runs (the paper: 50; --runs), draw 30 training and 100 test bags with
    milsvm.datasets.make_annealing_toy(f, n_bags, random_state, return_instance_labels=True)
    (seeds: training 100000 * run + 1000 * k + 1, test ... + 2, k the index of f, so every
    run and f has its own data, the same for every method);
  * fit, with C = 100 and an RBF kernel of width sigma = 1 (gamma = 1 / (2 sigma^2) = 0.5):
      mi-SVM      = ALSVM(T0=1e-8, init="labels")   (AL-SVM, T = 1e-8)
      AL-SVM DA   = ALSVM(T0=None)  (T0 = 10 C)
      MI-SVM*     = AWSVM(T0=1e-8)                  (AW-SVM, T = 1e-8)
      AW-SVM DA   = AWSVM(T0=None)  (T0 = 10 C)
  * record the test bag error (predict vs y), the test instance error
    (instance_decision_function > 0 vs the true instance labels) and p_hat_ (mean fraction of
    positives in the training positive bags); report the mean over the runs.

The paper's claims (its Figure 1 is a plot only; no numbers are given):
  * mi-SVM (AL, T = 1e-8): low instance error when f is large, high when f is small;
  * annealed AL-SVM (T = 10C): the reverse (it underestimates the positives), and a better
    bag error than its non-annealed counterpart;
  * AW-SVM annealed and non-annealed: about the same.

Run (from the repository root):

    python benches/papers.py gc-figure1 --runs 10
    python benches/papers.py gc-figure1 --runs 30

Output: benches/results/fig1_annealing_toy.txt (the table, also printed) and
benches/results/fig1_annealing_toy.png (bag error and instance error vs f, one line per method).
--out-prefix changes the two paths' stem.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS  # noqa: E402

FRACTIONS = [round(0.1 * k, 1) for k in range(1, 11)]
METHODS = ["mi-SVM (AL T=1e-8)", "AL-SVM (T0=10C)", "AW-SVM (T=1e-8)", "AW-SVM (T0=10C)"]
SHORT = ["AL T=1e-8", "AL T=10C", "AW T=1e-8", "AW T=10C"]


def true_fraction(f):
    """Expected fraction of positive instances in a positive bag of make_annealing_toy:
    ceil(f m) / m (at least 1 positive) with m uniform on 1..10."""
    return float(np.mean([max(1, min(m, int(np.ceil(f * m - 1e-9)))) / m for m in range(1, 11)]))


def make_estimators(C, gamma, n_jobs):
    from milsvm import ALSVM, AWSVM

    kw = dict(C=C, gamma=gamma, n_jobs=n_jobs)
    return [
        ALSVM(T0=1e-8, init="labels", **kw),
        ALSVM(T0=None, **kw),
        AWSVM(T0=1e-8, **kw),
        AWSVM(T0=None, **kw),
    ]


def one_run(f, k, run, args):
    """Errors (bag, instance), p_hat, objective, fit seconds, warnings: one row per method."""
    from milsvm.datasets import make_annealing_toy

    base = 100000 * run + 1000 * k
    tr_bags, tr_y = make_annealing_toy(f, args.n_train, random_state=base + 1)
    te_bags, te_y, te_z = make_annealing_toy(
        f, args.n_test, random_state=base + 2, return_instance_labels=True
    )
    z = np.concatenate(te_z)
    rows = []
    for est in make_estimators(args.C, args.gamma, args.n_jobs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(tr_bags, tr_y)
        bag_err = np.mean(np.asarray(est.predict(te_bags)) != te_y)
        s = np.concatenate(est.instance_decision_function(te_bags))
        inst_err = np.mean((s > 0).astype(int) != z)
        obj = float(est.objective_history_[-1]) if len(est.objective_history_) else np.nan
        rows.append((bag_err, inst_err, est.p_hat_, obj, est.fit_time_, len(caught)))
    return rows


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=50, help="independent runs per f (the paper: 50)"
    )
    parser.add_argument("--n-train", type=int, default=30)
    parser.add_argument("--n-test", type=int, default=100)
    parser.add_argument("--C", type=float, default=100.0)
    parser.add_argument("--gamma", type=float, default=0.5, help="1 / (2 sigma^2), sigma = 1")
    parser.add_argument("--n-jobs", type=int, default=1, help="milsvm threads per fit")
    parser.add_argument("--out-prefix", type=Path, default=RESULTS / "fig1_annealing_toy")
    args = parser.parse_args()
    args.out_prefix.parent.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    # res[k, run, method, quantity]
    res = np.zeros((len(FRACTIONS), args.runs, len(METHODS), 6))
    for k, f in enumerate(FRACTIONS):
        for run in range(args.runs):
            res[k, run] = one_run(f, k, run, args)
        print(f"  f = {f:.1f} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    elapsed = time.perf_counter() - t0

    mean = res.mean(axis=1)
    se = res.std(axis=1, ddof=1) / np.sqrt(args.runs) if args.runs > 1 else np.zeros_like(mean)
    lines = [
        f"Figure 1 of Gehler & Chapelle 2007 (2-D toy): {args.runs} runs per f, {args.n_train} "
        f"training / {args.n_test} test bags, C = {args.C:g}, gamma = {args.gamma:g} (sigma = "
        f"{np.sqrt(1 / (2 * args.gamma)):g}); mean over runs (+- standard error, %)",
        "",
    ]
    for q, title in (
        (0, "test BAG error %"),
        (1, "test INSTANCE error %"),
        (2, "p_hat (training, %)"),
    ):
        lines.append(
            title
            + (
                "   [true: expected fraction ceil(f m)/m of positives in a positive bag, "
                "m uniform on 1..10]"
                if q == 2
                else ""
            )
        )
        lines.append(
            f"{'f':>4}  " + "  ".join(f"{s:>15}" for s in SHORT) + ("   true" if q == 2 else "")
        )
        for k, f in enumerate(FRACTIONS):
            cells = [
                f"{100 * mean[k, m, q]:6.1f} +- {100 * se[k, m, q]:4.1f}"
                for m in range(len(METHODS))
            ]
            lines.append(
                f"{f:4.1f}  "
                + "  ".join(f"{c:>15}" for c in cells)
                + (f"  {100 * true_fraction(f):5.1f}" if q == 2 else "")
            )
        lines.append("")
    # objective comparison (DA should reach a lower objective)
    lines.append(
        "final objective: fraction of runs where the annealed fit is lower than the T=1e-8 fit"
    )
    lines.append(f"{'f':>4}  {'AL: T=10C < T=1e-8':>20}  {'AW: T=10C < T=1e-8':>20}")
    for k, f in enumerate(FRACTIONS):
        al = np.mean(res[k, :, 1, 3] < res[k, :, 0, 3])
        aw = np.mean(res[k, :, 3, 3] < res[k, :, 2, 3])
        lines.append(f"{f:4.1f}  {100 * al:19.0f}%  {100 * aw:19.0f}%")
    lines.append("")
    fit_s = res[..., 4].sum(axis=(0, 1))
    nwarn = res[..., 5].sum(axis=(0, 1)).astype(int)
    lines.append(
        "total fit seconds per method: " + ", ".join(f"{s} {t:.1f}" for s, t in zip(SHORT, fit_s))
    )
    lines.append(
        "warnings (ConvergenceWarning etc.) per method: "
        + ", ".join(f"{s} {n}" for s, n in zip(SHORT, nwarn))
    )
    lines.append("")
    # the paper's claims vs ours
    lo, hi = slice(0, 3), slice(7, 10)  # f in 0.1-0.3 and 0.8-1.0
    ie = 100 * mean[:, :, 1]
    be = 100 * mean[:, :, 0]
    lines.append(
        "paper's qualitative claims (Figure 1 / section 5) vs ours "
        "(small f = 0.1-0.3, large f = 0.8-1.0, instance error %):"
    )
    lines.append(
        f"  mi-SVM (AL T=1e-8): low instance error at large f, high at small f. ours: small f "
        f"{ie[lo, 0].mean():.1f}, large f {ie[hi, 0].mean():.1f} -> "
        f"{'agrees' if ie[lo, 0].mean() > ie[hi, 0].mean() else 'DISAGREES'}"
    )
    lines.append(
        f"  annealed AL (T0=10C): the reverse. ours: small f {ie[lo, 1].mean():.1f}, large f "
        f"{ie[hi, 1].mean():.1f} -> "
        f"{'agrees' if ie[lo, 1].mean() < ie[hi, 1].mean() else 'DISAGREES'}; "
        f"better than mi-SVM at small f: {ie[lo, 1].mean():.1f} vs {ie[lo, 0].mean():.1f}, "
        f"worse at large f: {ie[hi, 1].mean():.1f} vs {ie[hi, 0].mean():.1f}"
    )
    lines.append(
        f"  annealed AL has a better BAG error than mi-SVM: mean over f {be[:, 1].mean():.1f} vs "
        f"{be[:, 0].mean():.1f} -> "
        f"{'agrees' if be[:, 1].mean() < be[:, 0].mean() else 'DISAGREES'} (f where it holds: "
        f"{int(np.sum(be[:, 1] < be[:, 0]))}/10)"
    )
    lines.append(
        "  mi-SVM overestimates p, annealed AL underestimates it: p_hat mean over f "
        f"{100 * mean[:, 0, 2].mean():.0f}% vs {100 * mean[:, 1, 2].mean():.0f}% (true fraction "
        f"ceil(f m)/m, mean over f: {100 * np.mean([true_fraction(f) for f in FRACTIONS]):.0f}%)"
    )
    d_bag = np.abs(be[:, 2] - be[:, 3]).max()
    d_ins = np.abs(ie[:, 2] - ie[:, 3]).max()
    lines.append(
        f"  AW annealed and not: similar. ours: largest |difference| over f: bag {d_bag:.1f} "
        f"points, instance {d_ins:.1f} points"
    )
    lines.append("")
    lines.append(f"wall time {elapsed:.1f} s ({len(FRACTIONS) * args.runs * len(METHODS)} fits)")
    text = "\n".join(lines)
    print(text)
    args.out_prefix.with_suffix(".txt").write_text(text + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    styles = ["o-", "s--", "^-", "v--"]
    for ax, q, title in ((axes[0], 0, "bag error"), (axes[1], 1, "instance (pattern) error")):
        for m, name in enumerate(METHODS):
            ax.errorbar(
                FRACTIONS,
                100 * mean[:, m, q],
                yerr=100 * se[:, m, q],
                fmt=styles[m],
                label=name,
                capsize=2,
                ms=4,
            )
        ax.set_xlabel("fraction f of positives in a positive bag")
        ax.set_ylabel(f"test {title} %")
        ax.set_title(f"{title}, mean over {args.runs} runs")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Gehler & Chapelle 2007, Fig. 1 (C={args.C:g}, sigma=1)")
    fig.tight_layout()
    fig.savefig(args.out_prefix.with_suffix(".png"), dpi=110)
    print(f"wrote {args.out_prefix.with_suffix('.txt')} and {args.out_prefix.with_suffix('.png')}")


if __name__ == "__main__":
    main()
