"""Reproduce the MUSK1 / MUSK2 columns of Table I of Fu et al. 2013 (TNNLS 24(9)), second block:
SparseMI and RSVM with N_xv in {10, 50, 100} XVs.

Protocol (paper, section V-B; spec/ALGORITHMS.md section 2):
  * 10-fold stratified CV over bags, repeated over --seeds split seeds (the paper: 10 repetitions);
    the accuracy of one repetition is the fraction of all bags classified correctly across the
    10 test folds; we print its mean and standard deviation over the seeds.
  * features standardised with the mean/std of the training instances of each outer fold
    (the inner CV reuses that scaling);
  * C and gamma chosen by 3-fold stratified CV (over bags) on the training part of each outer
    fold, for each method and N_xv separately. The paper does not give its grid; by default
    C in {0.1, 1, 10, 100} x gamma in {0.25, 1, 4} / d (d = number of features; 1/d is
    scikit-learn's "scale" after standardisation); --C-grid / --gamma-grid change it. Ties in
    inner-CV accuracy go to the first grid point (smallest C, then smallest gamma).
  * SparseMI: s_max = 10, t_max = 50, lambda = mean pairwise distance of the initial random XVs,
    random initial XVs (the same for SparseMI and RSVM in one fold); RSVM = the inner problem on
    the random XVs (no XV updates).

Run (from the repository root):

    python benches/reproduce_fu_table1.py --dataset musk1                    # milsvm backend
    python benches/reproduce_fu_table1.py --dataset musk1 --backend numpy    # reference impl.
    python benches/reproduce_fu_table1.py --dataset musk1 --backend numpy --quick
    python benches/reproduce_fu_table1.py --dataset musk2 --seeds 10 --n-jobs 2

--quick: one seed, fixed C (--C) and gamma (--gamma-scale / d), no inner CV (a smoke run).
Outer folds run in parallel with joblib (--n-jobs, default: all cores; each worker gets
1 BLAS thread and milsvm n_jobs = 1).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
if not DEFAULT_DATA.exists():
    DEFAULT_DATA = Path("/work/shared/data")

# Table I of Fu et al. 2013 (002_*.txt): accuracy mean and std in %, over 10 repetitions.
# N_xv = None: the first block (SparseMI with N_xv tuned by CV from {10, 50, 100, 500, 1000},
# average XVs MUSK1 170, MUSK2 10; MI-Kernel uses all training instances).
PAPER_TABLE1 = {
    "musk1": {
        ("SparseMI", 10): (88.44, 1.49), ("SparseMI", 50): (89.98, 1.19), ("SparseMI", 100): (90.40, 1.25),
        ("RSVM", 10): (74.66, 3.47), ("RSVM", 50): (87.23, 2.05), ("RSVM", 100): (89.02, 2.14),
        ("RS", 10): (88.68, 2.36), ("RS", 50): (89.61, 1.10), ("RS", 100): (90.18, 1.33),
        ("SparseMI", None): (90.12, 1.05), ("MI-Kernel", None): (89.93, 1.33),
    },
    "musk2": {
        ("SparseMI", 10): (88.52, 1.40), ("SparseMI", 50): (88.02, 2.91), ("SparseMI", 100): (87.98, 3.23),
        ("RSVM", 10): (77.70, 3.50), ("RSVM", 50): (86.71, 2.00), ("RSVM", 100): (88.26, 2.05),
        ("RS", 10): (86.39, 2.59), ("RS", 50): (89.92, 1.81), ("RS", 100): (89.16, 1.88),
        ("SparseMI", None): (88.52, 1.40), ("MI-Kernel", None): (90.26, 1.33),
    },
}

C_GRID = (0.1, 1.0, 10.0, 100.0)
GAMMA_SCALES = (0.25, 1.0, 4.0)  # times 1/d


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def load_mill_dense(path):
    """Minimal parser of the dense MILL format `inst,bag,label,f1,...` (contiguous bags).

    Returns X (N x d float64), bag_ptr (int64, m + 1), y (m,) in {0, 1}.
    """
    with open(path) as f:
        rows = [line.rstrip("\n").split(",", 3) for line in f if line.strip()]
    bag_names = [r[1] for r in rows]
    labels = np.array([int(float(r[2])) for r in rows])
    X = np.loadtxt((r[3] for r in rows), delimiter=",", dtype=np.float64, ndmin=2)
    starts = [0] + [p for p in range(1, len(rows)) if bag_names[p] != bag_names[p - 1]]
    if len(set(bag_names)) != len(starts):
        raise ValueError(f"{path}: bags are not contiguous")
    bag_ptr = np.array(starts + [len(rows)], dtype=np.int64)
    return np.ascontiguousarray(X), bag_ptr, labels[bag_ptr[:-1]]


class BagData:
    """Stacked instances X, offsets bag_ptr, labels y in {0, 1}; select bags by index."""

    def __init__(self, X, bag_ptr, y):
        self.X, self.bag_ptr, self.y = X, bag_ptr, y

    def __len__(self):
        return len(self.y)

    def subset(self, idx):
        parts = [self.X[self.bag_ptr[i]:self.bag_ptr[i + 1]] for i in idx]
        sizes = [len(p) for p in parts]
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return BagData(np.ascontiguousarray(np.vstack(parts)), ptr, self.y[idx])

    def scaled(self, mu, sd):
        return BagData(np.ascontiguousarray((self.X - mu) / sd), self.bag_ptr, self.y)

    def bags(self):
        return [self.X[self.bag_ptr[i]:self.bag_ptr[i + 1]] for i in range(len(self.y))]


# ----------------------------------------------------------------------------------------------
# Backends: fit on a training BagData, return 0/1 predictions for a test BagData
# ----------------------------------------------------------------------------------------------


def fit_predict(backend, method, n_xv, C, gamma, random_state, train, test, tol):
    max_iter = 50 if method == "SparseMI" else 0
    if backend == "numpy":
        import numpy_reference as ref

        model = ref.fit_sparse_mi(train.X, train.bag_ptr, train.y, n_xv=n_xv, C=C, gamma=gamma,
                                  max_iter=max_iter, max_line_search=10, tol=tol,
                                  solver="newton", random_state=random_state)
        f = ref.decision_function(test.X, test.bag_ptr, model["Z"], model["beta"], model["b"], gamma)
        return (f > 0).astype(int)

    import milsvm

    if method == "SparseMI":
        est = milsvm.SparseMI(n_xv=n_xv, C=C, gamma=gamma, max_iter=50, max_line_search=10,
                              tol=tol, random_state=random_state)
    else:
        est = milsvm.RSVM(n_xv=n_xv, C=C, gamma=gamma, random_state=random_state)
    if "n_jobs" in est.get_params():
        est.set_params(n_jobs=1)  # the outer folds run in parallel
    est.fit(train.bags(), train.y)
    return np.asarray(est.predict(test.bags())).astype(int)


# ----------------------------------------------------------------------------------------------
# One outer fold
# ----------------------------------------------------------------------------------------------


def run_outer_fold(data, train_idx, test_idx, seed, fold, args):
    """Standardise on the training instances, select (C, gamma) by inner 3-fold CV for each
    (method, N_xv), fit on the whole training part, count correct test bags."""
    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        train, test = data.subset(train_idx), data.subset(test_idx)
        mu, sd = train.X.mean(axis=0), train.X.std(axis=0)
        sd[sd == 0] = 1.0
        train, test = train.scaled(mu, sd), test.scaled(mu, sd)
        d = train.X.shape[1]
        rs = 1000 * seed + fold  # initial XVs: the same for every fit in this fold

        if args.quick:
            grid = [(args.C, args.gamma_scale / d)]
            inner = []
        else:
            grid = [(c, s / d) for c, s in itertools.product(args.C_grid, args.gamma_grid)]
            skf = StratifiedKFold(3, shuffle=True, random_state=1000 * seed + fold)
            inner = [(train.subset(a), train.subset(b))
                     for a, b in skf.split(np.zeros(len(train)), train.y)]

        out = {}
        for method, n_xv in itertools.product(args.methods, args.n_xv):
            if len(grid) > 1:
                scores = []
                for C, gamma in grid:
                    acc = [np.mean(fit_predict(args.backend, method, n_xv, C, gamma, rs, tr, va,
                                               args.tol) == va.y) for tr, va in inner]
                    scores.append(np.mean(acc))
                C, gamma = grid[int(np.argmax(scores))]  # first best in grid order
            else:
                C, gamma = grid[0]
            pred = fit_predict(args.backend, method, n_xv, C, gamma, rs, train, test, args.tol)
            out[(method, n_xv)] = dict(correct=int(np.sum(pred == test.y)), n=len(test),
                                       C=C, gamma_scale=round(gamma * d, 4))
        return seed, fold, out, time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=["musk1", "musk2"], default="musk1")
    parser.add_argument("--backend", choices=["milsvm", "numpy"], default="milsvm")
    parser.add_argument("--seeds", type=int, default=3, help="number of split seeds (0..seeds-1)")
    parser.add_argument("--methods", nargs="+", default=["SparseMI", "RSVM"], choices=["SparseMI", "RSVM"])
    parser.add_argument("--n-xv", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, fixed C / gamma, no inner CV (smoke run)")
    parser.add_argument("--C", type=float, default=1.0, help="C in --quick mode")
    parser.add_argument("--gamma-scale", type=float, default=1.0, help="gamma = this / d in --quick mode")
    parser.add_argument("--C-grid", type=float, nargs="+", default=list(C_GRID), dest="C_grid",
                        help="C values of the inner CV grid")
    parser.add_argument("--gamma-grid", type=float, nargs="+", default=list(GAMMA_SCALES),
                        help="gamma values of the inner CV grid, in units of 1/d")
    parser.add_argument("--tol", type=float, default=1e-6, help="SparseMI relative-decrease tolerance")
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count(), help="parallel outer folds")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if args.quick:
        args.seeds = 1
    if args.backend == "milsvm":
        try:
            import milsvm  # noqa: F401
        except ImportError as exc:
            sys.exit(f"cannot import milsvm ({exc}); build it or use --backend numpy")

    path = args.data / args.dataset / f"{args.dataset}.data"
    data = BagData(*load_mill_dense(path))
    print(f"{args.dataset}: {len(data)} bags ({int(data.y.sum())} positive), {data.X.shape[0]} instances, "
          f"{data.X.shape[1]} features; backend {args.backend}; seeds {args.seeds}; "
          + ("quick: C = %g, gamma = %g/d, no inner CV" % (args.C, args.gamma_scale) if args.quick else
             f"inner 3-fold CV over C {args.C_grid} x gamma {args.gamma_grid}/d"))

    tasks = []
    for seed in range(args.seeds):
        skf = StratifiedKFold(10, shuffle=True, random_state=seed)
        for fold, (tr, te) in enumerate(skf.split(np.zeros(len(data)), data.y)):
            tasks.append((tr, te, seed, fold))
    t0 = time.perf_counter()
    results = Parallel(n_jobs=args.n_jobs, verbose=0)(
        delayed(run_outer_fold)(data, tr, te, seed, fold, args) for tr, te, seed, fold in tasks)
    elapsed = time.perf_counter() - t0

    # accuracy of each seed = correct bags over all 10 test folds
    acc = {}
    chosen = {}
    for seed, fold, out, _ in results:
        for key, r in out.items():
            c, n = acc.setdefault(key, {}).get(seed, (0, 0))
            acc[key][seed] = (c + r["correct"], n + r["n"])
            chosen.setdefault(key, Counter())[(r["C"], r["gamma_scale"])] += 1

    paper = PAPER_TABLE1[args.dataset]
    print(f"\nTable I ({args.dataset.upper()}), accuracy % (mean +- std over {args.seeds} seed(s) of 10-fold CV)")
    header = f"{'method':<10} {'N_xv':>5}  {'ours':>15}  {'paper':>15}  {'diff':>6}  per seed"
    print(header)
    print("-" * len(header))
    for method, n_xv in itertools.product(args.methods, args.n_xv):
        per_seed = np.array([100.0 * c / n for c, n in (acc[(method, n_xv)][s] for s in range(args.seeds))])
        mean = per_seed.mean()
        std = f"{per_seed.std(ddof=1):5.2f}" if len(per_seed) > 1 else "    -"
        p = paper.get((method, n_xv))
        p_str = f"{p[0]:6.2f} +- {p[1]:4.2f}" if p else "-"
        diff = f"{mean - p[0]:+6.2f}" if p else "-"
        print(f"{method:<10} {n_xv:>5}  {mean:6.2f} +- {std}  {p_str:>15}  {diff:>6}  "
              + " ".join(f"{a:.1f}" for a in per_seed))
    print("\npaper's other rows (not run here): "
          + "; ".join(f"{m}{'' if n is None else ' N_xv=' + str(n)}: {v[0]:.2f} +- {v[1]:.2f}"
                      for (m, n), v in paper.items() if m in ("RS", "MI-Kernel") or n is None))
    if not args.quick:
        print("\nchosen (C, gamma*d) over the outer folds:")
        for key in itertools.product(args.methods, args.n_xv):
            print(f"  {key[0]:<9} {key[1]:>4}: " + ", ".join(
                f"({c:g}, {g:g}) x{k}" for (c, g), k in chosen[key].most_common()))
    fold_times = [r[3] for r in results]
    print(f"\nwall time {elapsed:.1f} s ({len(tasks)} outer folds, {args.n_jobs} jobs; "
          f"per fold median {np.median(fold_times):.1f} s)")


if __name__ == "__main__":
    main()
