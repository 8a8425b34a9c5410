"""milsvm's SMO (the Rust dual solver, src/smo.rs) against libsvm (sklearn.svm.SVC) on the same
plain binary SVM dual.

milsvm has no direct Python binding of the SMO, so its side is milsvm.NSK(kernel="rbf",
norm="l1") on bags of ONE instance each: the set kernel of two singleton bags is the instance
kernel, so NSK's dual is exactly the C-SVM dual `min 1/2 a^T Q a - 1^T a, y^T a = 0,
0 <= a <= C` with `Q_ij = y_i y_j exp(-gamma ||x_i - x_j||^2)`. libsvm's side is
SVC(kernel="precomputed", C=C, tol=1e-3) on the RBF Gram matrix computed with NumPy. Both use
tol 1e-3 (milsvm's tol is relative to the problem's gradient scale, libsvm's absolute, so the
stopping points differ slightly).

Problems: n in {1000, 2000, 5000} points in 20-d, two Gaussian classes N(+-mu 1, I) with
mu = 0.25 (overlapping: Bayes error about 13%), n/2 per class, seed 0; gamma = 1/20 (1/d);
C from --C (default 1 and 10).

Reported per (n, C): fit times (median of --repeats; NSK's includes its own kernel rows, libsvm's
excludes the Gram matrix, whose NumPy time is listed separately), the ratio, max |diff| of the
training decision values, the two dual objectives and their relative difference, the number
of support vectors, and the agreement of the predicted labels. Everything single-threaded
(OMP_NUM_THREADS=1, n_jobs=1).

Run (from the repository root):

    OMP_NUM_THREADS=1 nice -n 10 /work/venv-bench2/bin/python benches/bench_smo.py

Output: printed and written to benches/results/smo_vs_libsvm.txt (--out).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

HERE = Path(__file__).resolve().parent


def problem(n, d=20, mu=0.25, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], [n // 2, n - n // 2])
    X = rng.standard_normal((n, d)) + np.where(y[:, None] == 1, mu, -mu)
    return X, y


def rbf_gram(X, gamma):
    sq = np.einsum("ij,ij->i", X, X)
    D = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return np.exp(-gamma * D)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "smo_vs_libsvm.txt")
    args = ap.parse_args()
    import milsvm
    import sklearn
    from sklearn.svm import SVC

    t_start = time.perf_counter()
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out("milsvm SMO (NSK rbf, norm l1, on singleton bags) vs libsvm (SVC kernel='precomputed'), tol 1e-3, "
        "1 thread")
    out(f"milsvm {milsvm.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}; 20-d two "
        f"Gaussians (mu=+-0.25), gamma=1/20; times: median of {args.repeats}")
    out()
    hdr = (f"{'n':>5} {'C':>5} {'gram s':>7} {'libsvm s':>8} {'milsvm s':>8} {'ratio':>6} {'ratio2':>6} {'max|dF|':>9} "
           f"{'obj libsvm':>12} {'obj milsvm':>12} {'rel dobj':>9} {'nSV lib':>7} {'nSV mil':>7} "
           f"{'pred agree':>10} {'it mil':>7} {'b lib':>8} {'b mil':>8}")
    out(hdr)
    out("-" * len(hdr))
    gamma = 1.0 / 20
    for n in args.n:
        X, y = problem(n)
        bags = [X[i:i + 1] for i in range(n)]
        tg = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            K = rbf_gram(X, gamma)
            tg.append(time.perf_counter() - t)
        for C in args.C:
            tl, tm = [], []
            for _ in range(args.repeats):
                svc = SVC(kernel="precomputed", C=C, tol=1e-3)
                t = time.perf_counter()
                svc.fit(K, y)
                tl.append(time.perf_counter() - t)
                nsk = milsvm.NSK(C=C, kernel="rbf", gamma=gamma, norm="l1", tol=1e-3, n_jobs=1)
                t = time.perf_counter()
                nsk.fit(bags, y)
                tm.append(time.perf_counter() - t)
            f_lib = svc.decision_function(K)
            f_mil = nsk.decision_function(bags)
            dc = svc.dual_coef_[0]
            sv = svc.support_
            obj_lib = 0.5 * dc @ K[np.ix_(sv, sv)] @ dc - np.abs(dc).sum()
            obj_mil = nsk.objective_
            # milsvm's objective recomputed from its dual variables on the NumPy Gram (a check of objective_)
            ys = np.where(y == nsk.classes_[1], 1.0, -1.0)
            a = nsk.dual_coef_ * ys
            obj_mil_np = 0.5 * a @ K @ a - nsk.dual_coef_.sum()
            mdf = np.max(np.abs(f_lib - f_mil))
            agree = np.mean(svc.predict(K) == nsk.predict(bags))
            out(f"{n:5d} {C:5g} {np.median(tg):7.2f} {np.median(tl):8.2f} {np.median(tm):8.2f} "
                f"{np.median(tm) / np.median(tl):6.2f} {np.median(tm) / (np.median(tl) + np.median(tg)):6.2f} {mdf:9.2e} {obj_lib:12.4f} {obj_mil:12.4f} "
                f"{(obj_mil - obj_lib) / abs(obj_lib):9.1e} {len(sv):7d} {nsk.n_support_:7d} {agree:10.4f} "
                f"{nsk.n_iter_:7d} {svc.intercept_[0]:8.4f} {nsk.intercept_:8.4f}")
            if abs(obj_mil_np - obj_mil) > 1e-6 * abs(obj_mil):
                out(f"      note: milsvm objective_ {obj_mil:.6f} != recomputed from dual_coef_ {obj_mil_np:.6f}")
            if not nsk.converged_:
                out("      note: milsvm SMO did not converge")
        del K
    out()
    out("gram s: NumPy RBF Gram (libsvm's input, not in 'libsvm s'); milsvm s: NSK.fit end to end (its own "
        "kernel rows included); ratio = milsvm / libsvm; ratio2 = milsvm / (gram + libsvm)")
    out(f"wall time {time.perf_counter() - t_start:.1f} s")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
