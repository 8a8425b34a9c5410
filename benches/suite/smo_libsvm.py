"""milsvm's SMO (the Rust dual solver, src/smo) against libsvm (sklearn.svm.SVC) on the same
plain binary C-SVM dual `min 1/2 a^T Q a - 1^T a, y^T a = 0, 0 <= a <= C`, `Q_ij = y_i y_j K_ij`.

Both solvers get the same RBF Gram matrix K (computed once with NumPy): libsvm through
`SVC(kernel="precomputed", C=C, tol=1e-3)`, milsvm through `milsvm._core.solve_dual(K, y, C)`
(tol 1e-3; milsvm's tol is relative to the problem's gradient scale, which is 2 here, libsvm's
absolute, so the stopping points differ slightly). milsvm reads the rows of K in place; its
per-iteration scans run on two threads only when more than 4,096 samples are active.

A second milsvm column solves the same problem from the instances X instead of K
(`solve_dual(X, y, C, kernel="rbf", gamma=...)`: kernel rows computed on demand, in parallel
with two threads, and cached); it is compared with libsvm's time plus NumPy's time for K,
which is what the precomputed route costs a user who starts from X.

Problems: n in {1000, 2000, 5000, 10000} points in 20-d, two Gaussian classes N(+-mu 1, I)
with mu = 0.25 (overlapping: Bayes error about 13%), n/2 per class, seed 0; gamma = 1/20;
C in {1, 10}. Times: median of --repeats runs, each solver and thread count in turn in the same
process. Reported: the dual objectives of both solvers on K and their relative difference, the
agreement of the training predictions, iterations.

Run (from the repository root; NumPy's Gram with the machine's OpenBLAS variables unset):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE nice -n 5 python benches/speed.py smo

Output: printed and written to benches/results/smo_vs_libsvm.txt (--out).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS  # noqa: E402
from _protocol import Report  # noqa: E402


def problem(n, d=20, mu=0.25, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([-1.0, 1.0], [n // 2, n - n // 2])
    X = rng.standard_normal((n, d)) + mu * y[:, None]
    return X, y


def rbf_gram(X, gamma):
    sq = np.einsum("ij,ij->i", X, X)
    D = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return np.exp(-gamma * D)


def dual_objective(a, K, y):
    ya = a * y
    return 0.5 * ya @ K @ ya - a.sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "smo_vs_libsvm.txt")
    args = ap.parse_args()
    import milsvm
    import sklearn
    import threadpoolctl
    from milsvm import _core
    from sklearn.svm import SVC

    t_start = time.perf_counter()
    out = Report()

    blas = [
        (p["internal_api"], p.get("architecture"), p["num_threads"])
        for p in threadpoolctl.threadpool_info()
        if p["user_api"] == "blas"
    ]
    out(
        "milsvm SMO (_core.solve_dual) vs libsvm (SVC kernel='precomputed') on the same K, tol 1e-3"
    )
    out(
        f"milsvm {milsvm.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
        f"BLAS {blas}; 20-d two Gaussians (mu=+-0.25), gamma=1/20; times: median of {args.repeats}"
    )
    out()
    hdr = (
        f"{'n':>6} {'C':>4} {'K s':>6} {'libsvm':>7} {'ours 1t':>7} {'ours 2t':>7} {'r1':>5} "
        f"{'r2':>5} {'X 1t':>6} {'X 2t':>6} {'rX1':>5} {'rX2':>5} {'obj libsvm':>12} "
        f"{'obj ours':>12} {'rel dobj':>9} {'agree':>6} {'it lib':>7} {'it ours':>7}"
    )
    out.header(hdr)
    gamma = 1.0 / 20
    for n in args.n:
        X, y = problem(n)
        tk = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            K = rbf_gram(X, gamma)
            tk.append(time.perf_counter() - t)
        for C in args.C:
            u = np.full(n, C)
            times = {k: [] for k in ("lib", "p1", "p2", "x1", "x2")}
            for _ in range(args.repeats):
                svc = SVC(kernel="precomputed", C=C, tol=1e-3)
                t = time.perf_counter()
                svc.fit(K, y)
                times["lib"].append(time.perf_counter() - t)
                for j in (1, 2):
                    t = time.perf_counter()
                    r = _core.solve_dual(K, y, u, tol=1e-3, n_jobs=j)
                    times[f"p{j}"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    _core.solve_dual(X, y, u, kernel="rbf", gamma=gamma, tol=1e-3, n_jobs=j)
                    times[f"x{j}"].append(time.perf_counter() - t)
            med = {k: float(np.median(v)) for k, v in times.items()}
            a_lib = np.zeros(n)
            a_lib[svc.support_] = np.abs(svc.dual_coef_[0])
            obj_lib = dual_objective(a_lib, K, y)
            obj_ours = dual_objective(r["alpha"], K, y)
            f_ours = (K @ (r["alpha"] * y)) + r["b"]
            agree = np.mean(np.sign(f_ours) == np.sign(svc.decision_function(K)))
            base = med["lib"] + float(np.median(tk))
            out(
                f"{n:6d} {C:4g} {np.median(tk):6.3f} {med['lib']:7.3f} {med['p1']:7.3f} "
                f"{med['p2']:7.3f} {med['p1'] / med['lib']:5.2f} {med['p2'] / med['lib']:5.2f} "
                f"{med['x1']:6.3f} {med['x2']:6.3f} {med['x1'] / base:5.2f} "
                f"{med['x2'] / base:5.2f} {obj_lib:12.4f} {obj_ours:12.4f} "
                f"{(obj_ours - obj_lib) / abs(obj_lib):9.1e} {agree:6.4f} {svc.n_iter_[0]:7d} "
                f"{r['iterations']:7d}"
            )
            if not r["converged"]:
                out("       note: milsvm's SMO did not converge")
        del K
    out()
    out(
        "K s: NumPy's RBF Gram matrix; libsvm, ours 1t / 2t: the solve on K (1 or 2 threads); r1, "
        "r2 = ours / libsvm; X 1t / 2t: ours from the instances (kernel rows computed and cached "
        "by the solver); rX = X time / (K s + libsvm); obj: dual objectives on K; agree: training "
        "sign agreement"
    )
    out(f"wall time {time.perf_counter() - t_start:.1f} s")
    out.write(args.out)


if __name__ == "__main__":
    main()
