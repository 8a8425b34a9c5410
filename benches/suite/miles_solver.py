"""The choice of MILES's 1-norm SVM solver, measured: on the same embeddings, milsvm's revised
simplex on the paper's hinge LP against scipy's HiGHS on the same LP (dual simplex and interior
point), and against the other formulation the brief allows, the l1-penalised squared hinge by
coordinate descent (scikit-learn's ``LinearSVC(penalty="l1", loss="squared_hinge", dual=False)``,
LIBLINEAR's ``solve_l1r_l2_svc``, which also penalises the intercept): test accuracy, AUC,
selected concepts and solve time, on MUSK1 and MUSK2.

Folds: StratifiedKFold(10, shuffle=True, random_state=0); per fold the training bags
standardised, gamma = 1 / (d Var[X_train]), the embeddings of the training and the test bags
against every training instance computed once (``milsvm._core.miles_embedding``); then each
solver at each C of --Cs (no class weights). Accuracy: correct test bags over all bags; AUC:
mean of the folds' test AUC; concepts: nonzero weights (|w| > 1e-9 for the interior point).
The LP objectives of the simplex and HiGHS are compared (largest relative difference).

Run (from the repository root):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benches/speed.py miles-solver

Output: printed and written to benches/results/miles_solver.txt.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.optimize as so
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import LinearSVC

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, benchmark_parser  # noqa: E402
from _protocol import DEFAULT_DATA, Report, load_mill_dense, standardise  # noqa: E402
from milsvm import _core  # noqa: E402

DATASETS = {
    "MUSK1": DEFAULT_DATA / "musk1" / "musk1.data",
    "MUSK2": DEFAULT_DATA / "musk2" / "musk2.data",
}


def highs(E, y, cost, method):
    m, n = E.shape
    A = np.hstack([-y[:, None] * E, y[:, None] * E, -y[:, None], y[:, None], -np.eye(m)])
    c = np.concatenate([np.ones(2 * n), [0.0, 0.0], cost])
    r = so.linprog(c, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method=method)
    x = r.x
    return x[:n] - x[n : 2 * n], x[2 * n] - x[2 * n + 1], r.fun


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--Cs", type=float, nargs="+", default=[0.3, 1.0, 3.0, 10.0, 30.0])
    ap.add_argument("--out", type=Path, default=RESULTS / "miles_solver.txt")
    args = ap.parse_args()
    out = Report()
    out(
        "MILES's 1-norm SVM, one embedding per fold (10-fold CV, seed 0, standardised, gamma = "
        "scale):"
    )
    out("simplex = milsvm (paper's hinge LP); highs-ds / highs-ipm = scipy linprog on the same LP;")
    out("l1-sqhinge = LinearSVC(penalty='l1', loss='squared_hinge', dual=False) (liblinear CD).")
    out()
    solvers = ["simplex", "highs-ds", "highs-ipm", "l1-sqhinge"]
    for name in args.datasets:
        X, ptr, y = load_mill_dense(DATASETS[name])
        bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(ptr) - 1)]
        stats = {
            (s, C): {"correct": 0, "auc": [], "nnz": [], "sec": []}
            for s in solvers
            for C in args.Cs
        }
        worst = 0.0
        emb_sec = []
        for train, test in StratifiedKFold(10, shuffle=True, random_state=0).split(
            np.zeros(len(y)), y
        ):
            tr, te = standardise([bags[i] for i in train], [bags[i] for i in test])
            Xtr, Xte = np.vstack(tr), np.vstack(te)
            ptr_tr = np.concatenate([[0], np.cumsum([len(b) for b in tr])]).astype(np.int64)
            ptr_te = np.concatenate([[0], np.cumsum([len(b) for b in te])]).astype(np.int64)
            gamma = 1.0 / (Xtr.shape[1] * Xtr.var())
            t0 = time.perf_counter()
            E = _core.miles_embedding(Xtr, ptr_tr, Xtr, "rbf", gamma)
            emb_sec.append(time.perf_counter() - t0)
            Et = _core.miles_embedding(Xte, ptr_te, Xtr, "rbf", gamma)
            yy = np.where(y[train] == 1, 1.0, -1.0)
            for C in args.Cs:
                cost = np.full(len(yy), C)
                for s in solvers:
                    t0 = time.perf_counter()
                    if s == "simplex":
                        w, b, obj, *_ = _core.solve_l1_svm(E, yy, cost)
                        ref_obj = obj
                    elif s.startswith("highs"):
                        w, b, obj = highs(E, yy, cost, s)
                        worst = max(worst, abs(obj - ref_obj) / max(1.0, abs(ref_obj)))
                    else:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            svc = LinearSVC(
                                penalty="l1", loss="squared_hinge", dual=False, C=C, max_iter=10000
                            ).fit(E, y[train])
                        w, b = svc.coef_[0], svc.intercept_[0]
                    sec = time.perf_counter() - t0
                    f = Et @ w + b
                    st = stats[(s, C)]
                    st["correct"] += int(np.sum((f > 0).astype(int) == y[test]))
                    st["auc"].append(roc_auc_score(y[test], f))
                    st["nnz"].append(int(np.sum(np.abs(w) > 1e-9)))
                    st["sec"].append(sec)
        out(
            f"{name}: {len(y)} bags, embedding of a training part {np.mean(emb_sec):.2f} s (mean "
            f"over folds); largest relative LP objective difference simplex vs HiGHS: {worst:.1e}"
        )
        hdr = (
            f"  {'solver':11s} {'C':>5s} {'accuracy %':>10s} {'AUC':>6s} {'concepts':>8s} "
            f"{'solve s':>8s}"
        )
        out.header(hdr, indent="  ")
        for s in solvers:
            for C in args.Cs:
                st = stats[(s, C)]
                out(
                    f"  {s:11s} {C:5g} {100.0 * st['correct'] / len(y):10.1f} "
                    f"{np.mean(st['auc']):6.3f} {np.mean(st['nnz']):8.1f} "
                    f"{np.mean(st['sec']):8.3f}"
                )
        out()
    out.write(args.out)


if __name__ == "__main__":
    main()
