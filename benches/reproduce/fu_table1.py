"""Reproduce the second block of Table I of Fu et al. 2013 (TNNLS 24(9)): SparseMI, RSVM and RS
with N_xv in {10, 50, 100} XVs, and the MI-Kernel row of the first block, on MUSK1, MUSK2,
COREL-10 and COREL-20.

Protocol (paper, section V-B; spec/ALGORITHMS.md section 2):
  * MUSK1 / MUSK2: 10-fold stratified CV over bags, repeated over --seeds split seeds (the paper:
    10 repetitions); the accuracy of one repetition is the fraction of all bags classified
    correctly across the 10 test folds.
    COREL-10 / COREL-20 (corel/corel2000.data of the data folder; COREL-10 = the bags of classes
    0..9, 1000 bags; COREL-20 = all 2000 bags, 20 classes): one stratified random 50% train / 50%
    test split per seed (the paper: 10 splits); the accuracy of a repetition is the test accuracy.
    We print the mean and standard deviation over the seeds.
  * features standardised with the mean/std of the training instances of each outer fold / split
    (the inner CV reuses that scaling);
  * C and gamma chosen by 3-fold stratified CV (over bags) on the training part, for each method
    and N_xv separately. The paper does not give its grid; by default
    C in {0.1, 1, 10, 100} x gamma in {0.25, 1, 4} / d (d = number of features; 1/d is
    scikit-learn's "scale" after standardisation); --C-grid / --gamma-grid change it. Ties in
    inner-CV accuracy go to the first grid point (smallest C, then smallest gamma).
  * SparseMI: s_max = 10, t_max = 50, lambda = mean pairwise distance of the initial random XVs,
    random initial XVs (the same for SparseMI and RSVM in one fold); RSVM = the inner problem on
    the random XVs (no XV updates); RS = milsvm.ReducedSet (MI-Kernel approximated by N_xv
    reduced-set vectors); MI-Kernel = milsvm.MIKernel (the dense set-kernel SVM; it has no N_xv:
    one row, with the mean number of XVs it keeps, n_xv_, beside the paper's count).
  * multi-class (COREL): SparseMI / RSVM / RS / MI-Kernel are one-vs-rest inside milsvm
    (SparseMI and RS share their XVs over the classes, so N_xv counts the whole model).

The protocol code (inner CV, tally, log, printed comparison) is shared: benches/_protocol.py.
--log FILE appends each finished outer fold / split to FILE (JSON lines) and a rerun with the same
settings skips the folds already there, so a run of hours can be stopped and resumed.

Run (from the repository root):

    python benches/papers.py fu-table1 --dataset musk1                    # milsvm backend
    python benches/papers.py fu-table1 --dataset musk1 --backend numpy    # reference impl.
    python benches/papers.py fu-table1 --dataset musk1 --backend numpy --quick
    python benches/papers.py fu-table1 --dataset musk2 --seeds 10 --n-jobs 2
    python benches/papers.py fu-table1 --dataset corel10 --seeds 10 \\
        --methods SparseMI RSVM RS MIKernel
    python benches/papers.py fu-table1 --dataset corel20 --quick --n-xv 10 --C 10

--methods: any of SparseMI RSVM RS MIKernel (default SparseMI RSVM; RS and MIKernel need a milsvm
that has milsvm.ReducedSet / milsvm.MIKernel, and are skipped with a message otherwise; the numpy
backend has SparseMI / RSVM on binary data only). --n-xv selects the N_xv values (MIKernel ignores
it). --quick: one seed, fixed C (--C) and gamma (--gamma-scale / d), no inner CV (a smoke run).
Outer folds / splits run in parallel with joblib (--n-jobs, default: all cores; each worker gets
1 BLAS thread and milsvm n_jobs = --n-jobs // number of parallel workers, at least 1; results do
not depend on it).

Output: per (method, N_xv) the accuracy (mean +- std over seeds) beside the paper's, their
difference, the per-seed accuracies and the seconds spent (inner CV included); for MI-Kernel the
mean number of XVs; then, per baseline (RS, RSVM), whether SparseMI beats it at each N_xv run
(the paper claims it does, most clearly at N_xv = 10), with the paper's own difference.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import _protocol as protocol  # noqa: E402
from _common import add_list, picked  # noqa: E402
from _protocol import load_mill_dense  # noqa: E402

# Table I of Fu et al. 2013 (002_*.txt): accuracy mean and std in %, over 10 repetitions.
# N_xv = None: the first block (SparseMI with N_xv tuned by CV from {10, 50, 100, 500, 1000},
# average XVs MUSK1 170, MUSK2 10, COREL-10 120, COREL-20 340; MI-Kernel uses all training
# instances of its support bags, counts in PAPER_MIKERNEL_NXV).
PAPER_TABLE1 = {
    "musk1": {
        ("SparseMI", 10): (88.44, 1.49),
        ("SparseMI", 50): (89.98, 1.19),
        ("SparseMI", 100): (90.40, 1.25),
        ("RSVM", 10): (74.66, 3.47),
        ("RSVM", 50): (87.23, 2.05),
        ("RSVM", 100): (89.02, 2.14),
        ("RS", 10): (88.68, 2.36),
        ("RS", 50): (89.61, 1.10),
        ("RS", 100): (90.18, 1.33),
        ("SparseMI", None): (90.12, 1.05),
        ("MI-Kernel", None): (89.93, 1.33),
    },
    "musk2": {
        ("SparseMI", 10): (88.52, 1.40),
        ("SparseMI", 50): (88.02, 2.91),
        ("SparseMI", 100): (87.98, 3.23),
        ("RSVM", 10): (77.70, 3.50),
        ("RSVM", 50): (86.71, 2.00),
        ("RSVM", 100): (88.26, 2.05),
        ("RS", 10): (86.39, 2.59),
        ("RS", 50): (89.92, 1.81),
        ("RS", 100): (89.16, 1.88),
        ("SparseMI", None): (88.52, 1.40),
        ("MI-Kernel", None): (90.26, 1.33),
    },
    "corel10": {
        ("SparseMI", 10): (80.10, 1.31),
        ("SparseMI", 50): (84.19, 1.20),
        ("SparseMI", 100): (84.31, 1.32),
        ("RSVM", 10): (69.25, 2.17),
        ("RSVM", 50): (76.94, 1.64),
        ("RSVM", 100): (77.63, 1.58),
        ("RS", 10): (75.13, 2.30),
        ("RS", 50): (79.87, 1.72),
        ("RS", 100): (78.81, 2.04),
        ("SparseMI", None): (84.63, 1.29),
        ("MI-Kernel", None): (84.30, 1.48),
    },
    "corel20": {
        ("SparseMI", 10): (62.49, 1.23),
        ("SparseMI", 50): (71.66, 1.13),
        ("SparseMI", 100): (72.22, 1.39),
        ("RSVM", 10): (48.53, 2.80),
        ("RSVM", 50): (62.54, 1.45),
        ("RSVM", 100): (63.82, 1.57),
        ("RS", 10): (55.20, 1.80),
        ("RS", 50): (66.27, 1.51),
        ("RS", 100): (65.35, 1.31),
        ("SparseMI", None): (72.97, 1.12),
        ("MI-Kernel", None): (73.19, 1.04),
    },
}
# MI-Kernel's number of XVs in Table I (mean +- std over the repetitions)
PAPER_MIKERNEL_NXV = {
    "musk1": (362.4, 3.4),
    "musk2": (3531.2, 135.6),
    "corel10": (1692.6, 214.4),
    "corel20": (3664.8, 144.6),
}

C_GRID = (0.1, 1.0, 10.0, 100.0)
GAMMA_SCALES = (0.25, 1.0, 4.0)  # times 1/d
METHODS = ("SparseMI", "RSVM", "RS", "MIKernel")
PAPER_NAME = {"MIKernel": "MI-Kernel"}  # our method name -> the paper's
MILSVM_CLASS = {"SparseMI": "SparseMI", "RSVM": "RSVM", "RS": "ReducedSet", "MIKernel": "MIKernel"}


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


class BagData:
    """Stacked instances X, offsets bag_ptr, labels y; select bags by index."""

    def __init__(self, X, bag_ptr, y):
        self.X, self.bag_ptr, self.y = X, bag_ptr, y

    def __len__(self):
        return len(self.y)

    def subset(self, idx):
        parts = [self.X[self.bag_ptr[i] : self.bag_ptr[i + 1]] for i in idx]
        sizes = [len(p) for p in parts]
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return BagData(np.ascontiguousarray(np.vstack(parts)), ptr, self.y[idx])

    def scaled(self, mu, sd):
        return BagData(np.ascontiguousarray((self.X - mu) / sd), self.bag_ptr, self.y)

    def bags(self):
        return [self.X[self.bag_ptr[i] : self.bag_ptr[i + 1]] for i in range(len(self.y))]


def load_dataset(name, data_dir):
    """BagData of musk1 / musk2 / corel10 / corel20."""
    if name.startswith("corel"):
        data = BagData(*load_mill_dense(data_dir / "corel" / "corel2000.data"))
        if name == "corel10":
            data = data.subset(np.flatnonzero(data.y < 10))
        return data
    return BagData(*load_mill_dense(data_dir / name / f"{name}.data"))


def outer_splits(name, data, seed):
    """(train, test) bag indices of one repetition: 10 stratified folds for MUSK, one stratified
    50/50 split for the other sets (the paper's protocol)."""
    if name.startswith("musk"):
        return list(
            StratifiedKFold(10, shuffle=True, random_state=seed).split(np.zeros(len(data)), data.y)
        )
    return list(
        StratifiedShuffleSplit(1, test_size=0.5, random_state=seed).split(
            np.zeros(len(data)), data.y
        )
    )


# ----------------------------------------------------------------------------------------------
# Backends: fit on a training BagData, return predictions for a test BagData (and model info)
# ----------------------------------------------------------------------------------------------


def fit_predict(backend, method, n_xv, C, gamma, random_state, train, test, tol, threads=1):
    """Predicted labels of the test bags and a dict of model facts (n_xv_ for MIKernel)."""
    max_iter = 50 if method == "SparseMI" else 0
    if backend == "numpy":
        import numpy_reference as ref

        # Newton steps, at most 10 line-search trials: the reference's defaults (the paper's)
        model = ref.fit_sparse_mi(
            train.X,
            train.bag_ptr,
            train.y,
            n_xv=n_xv,
            C=C,
            gamma=gamma,
            max_iter=max_iter,
            tol=tol,
            random_state=random_state,
        )
        f = ref.decision_function(
            test.X, test.bag_ptr, model["Z"], model["beta"], model["b"], gamma
        )
        return (f > 0).astype(int), {}

    import milsvm

    if method == "SparseMI":
        # max_iter=50, max_line_search=10 and Newton steps: SparseMI's defaults, the paper's
        est = milsvm.SparseMI(n_xv=n_xv, C=C, gamma=gamma, tol=tol, random_state=random_state)
    elif method == "RSVM":
        est = milsvm.RSVM(n_xv=n_xv, C=C, gamma=gamma, random_state=random_state)
    elif method == "RS":
        est = milsvm.ReducedSet(n_xv=n_xv, C=C, gamma=gamma, random_state=random_state)
    elif method == "MIKernel":
        est = milsvm.MIKernel(C=C, gamma=gamma)
    else:
        raise ValueError(method)
    if "n_jobs" in est.get_params():
        est.set_params(n_jobs=threads)  # the outer folds run in parallel
    est.fit(train.bags(), train.y)
    info = {"n_xv": int(est.n_xv_)} if method == "MIKernel" else {}
    return np.asarray(est.predict(test.bags())).astype(int), info


def configs(args):
    """The (method, N_xv) rows to run; MIKernel has one row, N_xv = None."""
    out = []
    for method in args.methods:
        if method == "MIKernel":
            out.append((method, None))
        else:
            out.extend((method, n) for n in args.n_xv)
    return out


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

        grid, parts = protocol.inner_grid(args, train.y, rs)
        grid = [(c, s / d) for c, s in grid]
        inner = [(train.subset(a), train.subset(b)) for a, b in parts]

        def fp(method, n_xv, C, gamma, tr, te):
            return fit_predict(
                args.backend, method, n_xv, C, gamma, rs, tr, te, args.tol, args.threads
            )

        out = {}
        for method, n_xv in configs(args):
            t1 = time.perf_counter()
            C, gamma = protocol.choose_by_inner_cv(
                grid, inner, lambda pt, tr, va: np.mean(fp(method, n_xv, *pt, tr, va)[0] == va.y)
            )
            pred, info = fp(method, n_xv, C, gamma, train, test)
            out[(method, n_xv)] = dict(
                correct=int(np.sum(pred == test.y)),
                n=len(test),
                C=C,
                gamma_scale=round(gamma * d, 4),
                seconds=time.perf_counter() - t1,
                **info,
            )
        return seed, fold, out, time.perf_counter() - t0


def settings(args):
    """The arguments a logged fold must share with this run to be reused."""
    return picked(args, "dataset backend quick C gamma_scale C_grid gamma_grid tol")


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def paper_key(method, n_xv):
    return (PAPER_NAME.get(method, method), n_xv)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dataset", choices=["musk1", "musk2", "corel10", "corel20"], default="musk1"
    )
    parser.add_argument("--backend", choices=["milsvm", "numpy"], default="milsvm")
    parser.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="number of repetitions = split seeds 0..seeds-1 (the paper: 10)",
    )
    parser.add_argument("--methods", nargs="+", default=["SparseMI", "RSVM"], choices=list(METHODS))
    add_list(parser, "--n-xv", int, [10, 50, 100], "N_xv values to run (MIKernel ignores it)")
    protocol.add_protocol_args(parser, 1.0, C_GRID, GAMMA_SCALES, "1/d", "fold")
    args = protocol.parse_protocol_args(parser)
    if args.backend == "milsvm":
        try:
            import milsvm
        except ImportError as exc:
            sys.exit(f"cannot import milsvm ({exc}); build it or use --backend numpy")
        protocol.skip_missing_methods(milsvm, args.methods, MILSVM_CLASS)
    else:
        dropped = [m for m in args.methods if m not in ("SparseMI", "RSVM")]
        if dropped:
            print(
                f"note: the numpy backend has SparseMI and RSVM only: skipping {', '.join(dropped)}"
            )
        args.methods = [m for m in args.methods if m in ("SparseMI", "RSVM")]
        if args.dataset.startswith("corel"):
            sys.exit("the numpy backend is binary only: use --backend milsvm for COREL")
    if not args.methods:
        sys.exit("no method left to run")

    data = load_dataset(args.dataset, args.data)
    classes = np.unique(data.y)
    kind = "10-fold CV" if args.dataset.startswith("musk") else "50/50 stratified split"
    print(
        f"{args.dataset}: {len(data)} bags ({len(classes)} classes, "
        + (
            f"{int(np.sum(data.y == classes[1]))} positive"
            if len(classes) == 2
            else f"{len(data) // len(classes)} a class"
        )
        + f"), {data.X.shape[0]} instances, "
        f"{data.X.shape[1]} features; backend {args.backend}; {args.seeds} seed(s) of {kind}; "
        + protocol.describe_grid(args, "/d")
    )

    tasks = []
    for seed in range(args.seeds):
        for fold, (tr, te) in enumerate(outer_splits(args.dataset, data, seed)):
            tasks.append((tr, te, seed, fold))
    outer = protocol.run_outer_parts(
        run_outer_fold, (data,), tasks, configs(args), args, "fold", settings(args)
    )

    # accuracy of each seed = correct bags over all test folds of that seed
    per_seed, chosen, seconds, nxv = protocol.tally(outer.results, args.seeds)
    paper = PAPER_TABLE1[args.dataset]
    rows = configs(args)
    what = "10-fold CV" if args.dataset.startswith("musk") else "a 50/50 split"
    protocol.print_table(
        f"\nTable I ({args.dataset.upper()}), accuracy % (mean +- std over {args.seeds} seed(s) of "
        f"{what})",
        rows,
        per_seed,
        seconds,
        lambda key: paper.get(paper_key(*key)),
    )
    for key, counts in nxv.items():
        p = PAPER_MIKERNEL_NXV[args.dataset]
        print(
            f"  {key[0]} XVs (instances of support bags): ours {np.mean(counts):.1f} +- "
            f"{np.std(counts, ddof=1) if len(counts) > 1 else 0:.1f} over {len(counts)} fit(s), "
            f"paper {p[0]:.1f} +- {p[1]:.1f}"
        )

    if "SparseMI" in args.methods:
        pairs = [
            (f"SparseMI > {base:<4} N_xv={n_xv}", ("SparseMI", n_xv), (base, n_xv))
            for base in ("RS", "RSVM")
            if base in args.methods
            for n_xv in args.n_xv
        ]
        if pairs:
            protocol.print_wins(
                pairs,
                per_seed,
                lambda key: paper.get(paper_key(*key)),
                " (paper: in most cases, the gap largest at N_xv = 10)",
            )

    run = {paper_key(*k) for k in rows}
    others = [(k, v) for k, v in paper.items() if k not in run]
    if others:
        print(
            "\npaper's other rows (not run here): "
            + "; ".join(
                f"{m}{' (N_xv tuned)' if n is None and m == 'SparseMI' else ''}"
                f"{'' if n is None else ' N_xv=' + str(n)}: {v[0]:.2f} +- {v[1]:.2f}"
                for (m, n), v in others
            )
        )
    if not args.quick:
        protocol.print_chosen(rows, chosen, "(1/d)")
    outer.print_wall(args.threads, "outer folds/splits", "fold")


if __name__ == "__main__":
    main()
