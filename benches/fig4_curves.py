"""Fig. 4-style convergence curves of SparseMI (Fu et al. 2013, section V-E): the cost g(Z) and the
test accuracy against the outer iteration, for MUSK1 (N_xv = 10), COREL-20 (N_xv = 100, 20-class
one-vs-rest with shared XVs) and TST1 (N_xv = 10 in basis-vector mode with 100 basis vectors,
sparse input).

Protocol: --splits stratified random 50/50 train/test splits (the paper: 10; default 1), fixed C
and gamma (no CV; --C-musk1 etc.), dense features standardised on the training instances, TST1
raw TF-IDF (see reproduce_fu_table2.py for why). For each split, SparseMI is fitted once with
max_iter = T (--T, default 50; tol = 0, random_state = the split seed): its objective_history_
gives the cost at t = 0..T. The descent is deterministic, so a fit with max_iter = t is the prefix
of that path: the test accuracy at t is taken from refits with max_iter = t on a coarse grid
(--acc-iters, default 0 1 2 5 10 20 30 50), which keeps the run cheap; the script checks that
each refit's objective history equals the prefix of the full one. Curves are averaged over the
splits. t = 0 is RSVM (the random initial XVs, no update).

Output: a table per data set (t, cost, test accuracy), and PNGs in benches/out/
(fig4_<dataset>.png per data set and fig4_curves.png with all panels): cost solid on the left
axis, test accuracy dashed with markers on the right axis.

Run (from the repository root):

    python benches/fig4_curves.py                     # 1 split, T = 50, all three data sets
    python benches/fig4_curves.py --splits 10         # as the paper
    python benches/fig4_curves.py --quick             # T = 10, acc at 0 1 2 5 10 (smoke run)
    python benches/fig4_curves.py --datasets musk1 tst1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedShuffleSplit

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from _protocol import DEFAULT_DATA  # noqa: E402

LABEL = {"musk1": "MUSK1", "corel20": "COREL-20", "tst1": "TST1"}


def load(name, data_dir):
    import milsvm
    import milsvm.datasets

    path = {
        "musk1": "musk1/musk1.data",
        "corel20": "corel/corel2000.data",
        "tst1": "tst1/tst1.data",
    }[name]
    bags, y = milsvm.datasets.load_mill(data_dir / path)
    return milsvm.as_bags(bags), np.asarray(y)


def params(name, args, d):
    """SparseMI keyword arguments of one data set (gamma may be "scale")."""
    if name == "musk1":
        return dict(n_xv=args.n_xv_musk1, C=args.C_musk1, gamma=1.0 / d)
    if name == "corel20":
        return dict(n_xv=args.n_xv_corel20, C=args.C_corel20, gamma=1.0 / d)
    return dict(n_xv=10, n_basis=100, C=args.C_tst1, gamma="scale")


def curves(name, args):
    """Cost per iteration and test accuracy on the grid, averaged over the splits."""
    import milsvm

    bags, y = load(name, args.data)
    T = args.T
    grid = sorted({t for t in args.acc_iters if t <= T} | {0, T})
    costs, accs, prefix_err, fit_s = [], [], 0.0, 0.0
    for split in range(args.splits):
        tr, te = next(
            StratifiedShuffleSplit(1, test_size=0.5, random_state=split).split(np.zeros(len(y)), y)
        )
        train, test = bags[tr], bags[te]
        if not train.is_sparse:
            sc = milsvm.BagStandardScaler().fit(train)
            train, test = sc.transform(train), sc.transform(test)
        kw = params(name, args, train.n_features)
        t0 = time.perf_counter()
        full = milsvm.SparseMI(
            max_iter=T, tol=0.0, random_state=split, n_jobs=args.n_jobs, **kw
        ).fit(train, y[tr])
        fit_s += time.perf_counter() - t0
        h = full.objective_history_
        # pad a path that stopped early (no decreasing step) with its last value
        costs.append(np.concatenate([h, np.full(T + 1 - len(h), h[-1])]))
        acc = []
        for t in grid:
            est = (
                full
                if t == T
                else milsvm.SparseMI(
                    max_iter=t, tol=0.0, random_state=split, n_jobs=args.n_jobs, **kw
                ).fit(train, y[tr])
            )
            n = min(len(est.objective_history_), len(h))
            prefix_err = max(
                prefix_err,
                float(np.max(np.abs(est.objective_history_[:n] - h[:n]) / np.abs(h[:n]))),
            )
            acc.append(100.0 * np.mean(est.predict(test) == y[te]))
        accs.append(acc)
    info = dict(
        n_bags=len(y),
        n_train=len(tr),
        classes=len(np.unique(y)),
        params=kw,
        n_iter=full.n_iter_,
        prefix_err=prefix_err,
        fit_s=fit_s / args.splits,
    )
    return np.mean(costs, axis=0), np.array(grid), np.mean(accs, axis=0), info


def plot(ax, name, cost, grid, acc, info):
    ax.plot(np.arange(len(cost)), cost, "-", color="tab:blue", lw=2, label="cost g(Z)")
    ax.set_xlabel("iteration t")
    ax.set_ylabel("cost g(Z)", color="tab:blue")
    ax.tick_params(axis="y", labelcolor="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(grid, acc, "--o", color="tab:red", ms=4, label="test accuracy")
    ax2.set_ylabel("test accuracy %", color="tab:red")
    ax2.tick_params(axis="y", labelcolor="tab:red")
    p = info["params"]
    extra = f", Q={p['n_basis']}" if "n_basis" in p else ""
    ax.set_title(f"{LABEL[name]}: N_xv={p['n_xv']}{extra}, C={p['C']:g}", fontsize=10)
    ax.grid(alpha=0.3)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", choices=list(LABEL), default=list(LABEL))
    parser.add_argument("--splits", type=int, default=1, help="50/50 splits averaged (paper: 10)")
    parser.add_argument(
        "--T", type=int, default=50, help="outer iterations of the full path (paper: 50)"
    )
    parser.add_argument(
        "--acc-iters",
        type=int,
        nargs="+",
        default=[0, 1, 2, 5, 10, 20, 30, 50],
        help="iterations at which the test accuracy is measured (by a refit)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="T = 10, accuracy at 0 1 2 5 10, 1 split"
    )
    parser.add_argument("--C-musk1", type=float, default=10.0)
    parser.add_argument("--C-corel20", type=float, default=10.0)
    parser.add_argument("--C-tst1", type=float, default=10.0)
    parser.add_argument("--n-xv-musk1", type=int, default=10)
    parser.add_argument("--n-xv-corel20", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count(), help="milsvm threads")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if args.quick:
        args.T, args.acc_iters, args.splits = 10, [0, 1, 2, 5, 10], 1

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args.out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    results = {}
    for name in args.datasets:
        t0 = time.perf_counter()
        cost, grid, acc, info = curves(name, args)
        results[name] = (cost, grid, acc, info)
        p = info["params"]
        params = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.items()
        )
        print(
            f"\n{LABEL[name]}: {info['n_bags']} bags ({info['classes']} classes), train "
            f"{info['n_train']}; SparseMI "
            f"{params}; "
            f"{args.splits} split(s); full fit {info['fit_s']:.2f} s ({info['n_iter']} "
            f"iterations); refits match the prefix of the path to {info['prefix_err']:.1e} "
            f"(relative); {time.perf_counter() - t0:.1f} s in all"
        )
        print(f"  {'t':>3} {'cost g':>14} {'rel. to t=0':>11} {'test acc %':>10}")
        for t in range(len(cost)):
            a = acc[list(grid).index(t)] if t in grid else None
            if a is not None or t % 5 == 0:
                a_str = f"{a:10.2f}" if a is not None else ""
                print(f"  {t:>3} {cost[t]:14.6g} {cost[t] / cost[0]:11.4f} {a_str}")
        fig, ax = plt.subplots(figsize=(5, 3.6))
        plot(ax, name, cost, grid, acc, info)
        fig.tight_layout()
        fig.savefig(args.out / f"fig4_{name}.png", dpi=110)
        plt.close(fig)

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.8), squeeze=False)
    for ax, (name, (cost, grid, acc, info)) in zip(axes[0], results.items()):
        plot(ax, name, cost, grid, acc, info)
    fig.suptitle(
        f"SparseMI: cost (solid) and test accuracy (dashed) per iteration, "
        f"mean of {args.splits} 50/50 split(s)",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(args.out / "fig4_curves.png", dpi=110)
    plt.close(fig)
    print(
        f"\nwrote {', '.join(str(args.out / f'fig4_{n}.png') for n in results)} and "
        f"{args.out / 'fig4_curves.png'}; total {time.perf_counter() - t_all:.1f} s"
    )


if __name__ == "__main__":
    main()
