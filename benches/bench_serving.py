"""Prediction speed of a fitted model from Python, against hand-written NumPy for the same formula
(issue 10, item 3). One run, one machine; ratios are measured within the run.

Model: SparseMI with 10 expansion vectors fitted on the bundled MUSK1 (standardised features),
Gaussian kernel. The formula both sides compute is

    F(X) = mean_p sum_k beta_k exp(-gamma ||x_p - z_k||^2) + b.

(a) one MUSK1 bag (a 5-instance bag): ``est.decision_function_bag(bag)`` (the serving path),
    ``est.decision_function([bag])`` (the general path), and ten lines of NumPy;
    aim: the serving path at most half NumPy's time.
(b) all of MUSK2 (6,598 instances x 166, 102 bags) scored by the same model: stacked instances
    in a ``milsvm.Bags`` against NumPy on the same stacked array and offsets (and both from a
    list of per-bag arrays); aim: at least 5x faster than NumPy. The physical floor is reported
    too: NumPy's GEMM ``X @ Z.T`` of the same shapes (one read of X).

Run from the repository root, with the machine's NumPy slow-down variables unset for this
command only:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benches/bench_serving.py

Prints the BLAS in use (threadpoolctl), medians over many calls, and the ratios.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import milsvm
import numpy as np
from milsvm.datasets import load_mill, load_musk1
from threadpoolctl import threadpool_info

MUSK2 = Path(os.environ.get("MILSVM_DATA", "../shared/data")) / "musk2" / "musk2.data"


def numpy_bag(x, z, zn, beta, b, gamma):
    """NumPy: one bag."""
    xn = np.einsum("ij,ij->i", x, x)
    k = np.exp(-gamma * np.maximum(xn[:, None] + zn[None, :] - 2.0 * (x @ z.T), 0.0))
    return float((k @ beta).mean() + b)


def numpy_bags(X, ptr, z, zn, beta, b, gamma):
    """NumPy: stacked instances with bag offsets."""
    xn = np.einsum("ij,ij->i", X, X)
    k = np.exp(-gamma * np.maximum(xn[:, None] + zn[None, :] - 2.0 * (X @ z.T), 0.0))
    f = k @ beta
    return np.add.reduceat(f, ptr[:-1]) / np.diff(ptr) + b


def per_call(fn, min_time=0.5, repeat=7):
    """Median over `repeat` rounds of the mean time per call (each round at least min_time /
    repeat)."""
    fn()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt > min_time / repeat:
            break
        n *= 4
    rounds = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t) / n)
    return float(np.median(rounds))


def fmt(t):
    return f"{t * 1e6:9.2f} us" if t < 1e-3 else f"{t * 1e3:9.3f} ms"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="threads for milsvm's batch path (default: all)"
    )
    args = parser.parse_args(argv)

    print(
        f"milsvm {milsvm.__version__}; numpy {np.__version__}; cores {os.cpu_count()}; "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')!r} "
        f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')!r}"
    )
    for lib in threadpool_info():
        print(
            f"  BLAS: {lib.get('internal_api')} {lib.get('version')} "
            f"threads={lib.get('num_threads')} core={lib.get('architecture')}"
        )

    bags, y = load_musk1()
    X1 = np.concatenate(bags)
    mu, sd = X1.mean(0), X1.std(0)
    sd[sd == 0] = 1.0
    bags = [(b - mu) / sd for b in bags]
    est = milsvm.SparseMI(n_xv=10, C=10.0, random_state=0, n_jobs=args.n_jobs).fit(bags, y)
    z = np.ascontiguousarray(est.xv_)
    zn = np.einsum("ij,ij->i", z, z)
    beta, b, gamma = np.asarray(est.coef_), est.intercept_, est.gamma_

    # (a) one bag
    bag = next(bg for bg in bags if len(bg) == 5)
    bag = np.ascontiguousarray(bag)
    ours = est.decision_function_bag(bag)
    ref = numpy_bag(bag, z, zn, beta, b, gamma)
    assert abs(ours - ref) <= 1e-10 * (1 + abs(ref)), (ours, ref)
    t_np = per_call(lambda: numpy_bag(bag, z, zn, beta, b, gamma))
    t_fast = per_call(lambda: est.decision_function_bag(bag))
    t_gen = per_call(lambda: est.decision_function([bag]))
    t_model = per_call(lambda: est.model_.decision_function_bag(bag))
    print(
        f"\n(a) one MUSK1 bag ({bag.shape[0]} x {bag.shape[1]}), 10 XVs; |ours - numpy| = "
        f"{abs(ours - ref):.1e}"
    )
    print(f"  numpy (10 lines)                     {fmt(t_np)}")
    print(
        f"  est.decision_function_bag(bag)       {fmt(t_fast)}   numpy / ours = "
        f"{t_np / t_fast:5.2f}  (aim >= 2)"
    )
    print(
        f"  est.model_.decision_function_bag     {fmt(t_model)}   numpy / ours = "
        f"{t_np / t_model:5.2f}"
    )
    print(
        f"  est.decision_function([bag])         {fmt(t_gen)}   numpy / ours = {t_np / t_gen:5.2f}"
    )

    # (b) all of MUSK2
    bags2, _ = load_mill(MUSK2)
    bags2 = [np.ascontiguousarray((b2 - mu) / sd) for b2 in bags2]
    B = milsvm.Bags.from_instances(np.concatenate(bags2), [len(b2) for b2 in bags2])
    X, ptr = B.X, B.bag_ptr
    ours = est.decision_function(B)
    ref = numpy_bags(X, ptr, z, zn, beta, b, gamma)
    err = float(np.max(np.abs(ours - ref) / (1 + np.abs(ref))))
    t_np = per_call(lambda: numpy_bags(X, ptr, z, zn, beta, b, gamma), min_time=2.0)
    t_ours = per_call(lambda: est.decision_function(B), min_time=2.0)
    t_gemm = per_call(lambda: X @ z.T, min_time=2.0)

    def np_list():
        Xl = np.concatenate(bags2)
        p = np.concatenate([[0], np.cumsum([len(b2) for b2 in bags2])])
        return numpy_bags(Xl, p, z, zn, beta, b, gamma)

    t_np_list = per_call(np_list, min_time=2.0)
    t_ours_list = per_call(lambda: est.decision_function(bags2), min_time=2.0)
    print(
        f"\n(b) all of MUSK2 ({X.shape[0]} x {X.shape[1]}, {len(bags2)} bags), 10 XVs; max rel. "
        f"diff {err:.1e}"
    )
    print(f"  numpy (stacked X, offsets)           {fmt(t_np)}")
    print(
        f"  est.decision_function(Bags)          {fmt(t_ours)}   numpy / ours = "
        f"{t_np / t_ours:5.2f}  (aim >= 5)"
    )
    print(
        f"  numpy GEMM X @ Z.T alone (floor)     {fmt(t_gemm)}   floor / ours = "
        f"{t_gemm / t_ours:5.2f}"
    )
    print(f"  numpy from a list of bags            {fmt(t_np_list)}")
    print(
        f"  est.decision_function(list of bags)  {fmt(t_ours_list)}   numpy / ours = "
        f"{t_np_list / t_ours_list:5.2f}"
    )


if __name__ == "__main__":
    main()
