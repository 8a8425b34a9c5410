"""Speed of milsvm (Rust core) against the NumPy reference (benches/suite/numpy_reference.py),
one run, one machine.

Three measurements, all on z-scored features (mean/std of all instances), fixed
gamma = 1 / (d * var) = 1/166 after standardisation, C = 1:

  (a) MUSK1, SparseMI fit (n_xv=10, max_iter=50), same solver on both sides (newton; lbfgs as
      well): median fit time over --reps repetitions, ratio numpy / rust; final g and agreement
      of the test-bag predictions.                                           target >= 10x
  (b) all of MUSK2 (6,598 instances), n_xv=100, --musk2-iter outer iterations: time per outer
      iteration (and per inner solve where known), ratio numpy / rust.    target >= 1.5x
  (c) the kernel + gradient step at MUSK2 shapes (X 6598x166, Z 100x166):
      milsvm._core.kernel_bag_means + kernel_basis_grad, counted as 4 N d n_xv flops, against
      NumPy's X @ Z.T + X.T @ W of the same shapes (best of many): rust GFLOP/s / numpy GFLOP/s
                                                                           target >= 0.5
      and against the same step written with the reference functions (time ratio, info).

Run (from the repository root):

    python benches/speed.py numpy                  # both sides (needs the built milsvm package)
    python benches/speed.py numpy --numpy-only     # NumPy side alone
    python benches/speed.py numpy --threads 1      # n_jobs for milsvm, BLAS threads for NumPy

--threads (default: all cores) is passed to milsvm as n_jobs and also caps NumPy's BLAS threads
(threadpoolctl), so both sides get the same number of cores; --numpy-threads overrides the NumPy
side (e.g. 1, which is often NumPy's fastest setting for the small MUSK1 problem). The BLAS setup
and the background load of the machine are printed: with another process holding a core,
multi-threaded OpenBLAS (and any thread pool) slows down by 10x or more, so compare the two
sides within one run on an idle machine, or use --threads 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import numpy_reference as ref  # noqa: E402
from _protocol import DEFAULT_DATA, load_mill_dense  # noqa: E402

GAMMA = 1.0 / 166.0
C = 1.0
TOL = 1e-6  # outer-loop relative-decrease tolerance, the same on both sides


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def standardise(X):
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    return np.ascontiguousarray((X - mu) / sd)


def subset(X, bag_ptr, idx):
    """Stacked instances and offsets of the bags idx (in that order)."""
    parts = [X[bag_ptr[i] : bag_ptr[i + 1]] for i in idx]
    return ref.stack_bags(parts)


def as_list(X, bag_ptr):
    return [X[bag_ptr[i] : bag_ptr[i + 1]] for i in range(len(bag_ptr) - 1)]


# ----------------------------------------------------------------------------------------------
# Timing helpers
# ----------------------------------------------------------------------------------------------


def time_calls(fn, reps, warmup=1):
    """Run fn warmup + reps times; return (array of times of the timed runs, last result)."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return np.array(times), out


def fmt_t(t):
    if t is None:
        return "-"
    return f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.3f} s"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, numpy_val, rust_val, ratio, target, target_value=None):
        if ratio is None:
            verdict = "n/a"
        elif target_value is None:
            verdict = "info"
        else:
            verdict = "ok" if ratio >= target_value else "BELOW"
        self.rows.append(
            (name, numpy_val, rust_val, "-" if ratio is None else f"{ratio:.2f}", target, verdict)
        )

    def print(self):
        head = ("measurement", "numpy", "milsvm (rust)", "ratio", "target", "")
        widths = [max(len(str(r[i])) for r in self.rows + [head]) for i in range(len(head))]
        line = "  ".join(f"{{:<{w}}}" for w in widths)
        print(line.format(*head))
        print("  ".join("-" * w for w in widths))
        for r in self.rows:
            print(line.format(*r))


# ----------------------------------------------------------------------------------------------
# milsvm side (optional)
# ----------------------------------------------------------------------------------------------


def rust_sparse_mi(milsvm, bags, y, Z0, **params):
    """Set up milsvm.SparseMI so that both sides start from the same XVs.

    Either milsvm accepts an array as `init` (then both start from Z0), or the fitted estimator
    reports `initial_xv_` (then the NumPy side starts from those). Returns
    (fit: () -> fitted estimator, a fitted estimator, initial XVs for the NumPy side, description).
    """
    try:
        est = milsvm.SparseMI(init=Z0, **params).fit(bags, y)
        return (
            (lambda: milsvm.SparseMI(init=Z0, **params).fit(bags, y)),
            est,
            Z0,
            "same initial XVs",
        )
    except (TypeError, ValueError):
        pass
    est = milsvm.SparseMI(**params).fit(bags, y)
    fit = lambda: milsvm.SparseMI(**params).fit(bags, y)  # noqa: E731
    Z_rs = getattr(est, "initial_xv_", None)
    if Z_rs is not None:
        return fit, est, np.array(Z_rs, dtype=np.float64), "same initial XVs (milsvm's initial_xv_)"
    return fit, est, Z0, "different random initial XVs"


def matching_step_rule(est, Xtr, ptr_tr, ytr, Z0, **params):
    """The reference's step_init rule that reproduces milsvm's first iterations of g (rel. 1e-6),
    so that both sides do the same work; None if neither does."""
    h_rs = np.asarray(est.objective_history_)
    k = min(len(h_rs), 4)
    for rule in ("distance", "distance_over_grad"):
        p = dict(params, max_iter=min(params["max_iter"], k - 1))
        h_np = np.asarray(
            ref.fit_sparse_mi(Xtr, ptr_tr, ytr, init_Z=Z0, step_init=rule, **p)["history"]
        )
        if len(h_np) >= k and np.allclose(h_np[:k], h_rs[:k], rtol=1e-6, atol=0):
            return rule
    return None


def fit_both(milsvm, Xtr, ptr_tr, ytr, Z0, reps, threads, **params):
    """Time the NumPy reference and (if present) milsvm on the same problem.

    Returns (numpy times, numpy result, milsvm times or None, milsvm estimator or None, note)."""
    fit_rs, note, rule = None, "", "distance"
    if milsvm is not None:
        fit_rs, est, Z0, note = rust_sparse_mi(
            milsvm, as_list(Xtr, ptr_tr), ytr, Z0, random_state=0, n_jobs=threads, **params
        )
        found = matching_step_rule(est, Xtr, ptr_tr, ytr, Z0, **params)
        if found is None:
            note += "; no step rule of the reference reproduces milsvm's g history"
        else:
            rule = found
            note += f"; reference step_init={rule!r} reproduces milsvm's first iterations"
    times, res = time_calls(
        lambda: ref.fit_sparse_mi(Xtr, ptr_tr, ytr, init_Z=Z0, step_init=rule, **params), reps
    )
    times_r = est = None
    if fit_rs is not None:
        times_r, est = time_calls(fit_rs, reps)
    return times, res, times_r, est, note


# ----------------------------------------------------------------------------------------------
# (a) MUSK1 fit
# ----------------------------------------------------------------------------------------------


def bench_musk1(milsvm, table, args):
    from sklearn.model_selection import StratifiedKFold

    X, ptr, y = load_mill_dense(args.data / "musk1" / "musk1.data")
    X = standardise(X)
    train, test = next(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    Xtr, ptr_tr = subset(X, ptr, train)
    Xte, ptr_te = subset(X, ptr, test)
    ytr, yte = y[train], y[test]
    Z0 = Xtr[np.random.default_rng(0).choice(Xtr.shape[0], 10, replace=False)].copy()
    print(
        f"\n(a) MUSK1: {len(train)} training bags ({Xtr.shape[0]} instances), {len(test)} test "
        f"bags, n_xv=10, max_iter=50, C={C}, gamma=1/166, tol={TOL}"
    )

    for solver, reps in (("newton", args.reps), ("lbfgs", max(3, args.reps // 2 + 1))):
        times, res, times_r, est, note = fit_both(
            milsvm,
            Xtr,
            ptr_tr,
            ytr,
            Z0,
            reps,
            args.threads,
            n_xv=10,
            C=C,
            gamma=GAMMA,
            max_iter=50,
            max_line_search=10,
            tol=TOL,
            solver=solver,
        )
        t_np = float(np.median(times))
        f_np = ref.decision_function(Xte, ptr_te, res["Z"], res["beta"], res["b"], GAMMA)
        pred_np = (f_np > 0).astype(int)
        print(
            f"  numpy  {solver:6s}: median {fmt_t(t_np)} (min {fmt_t(times.min())}, {reps} reps), "
            f"n_iter {res['n_iter']}, inner solves {res['n_inner_solves']}, "
            f"g {res['history'][0]:.6f} -> {res['history'][-1]:.8f}, "
            f"test acc {np.mean(pred_np == yte):.3f}"
        )
        t_rs = ratio = None
        if est is not None:
            t_rs = float(np.median(times_r))
            ratio = t_np / t_rs
            pred_rs = np.asarray(est.predict(as_list(Xte, ptr_te))).astype(int)
            g_rs = est.objective_history_
            print(
                f"  milsvm {solver:6s}: median {fmt_t(t_rs)} (min {fmt_t(times_r.min())}), "
                f"n_iter {est.n_iter_}, g {g_rs[0]:.6f} -> {g_rs[-1]:.8f}, "
                f"test acc {np.mean(pred_rs == yte):.3f}"
            )
            print(
                f"      {note}: |g_np - g_rs| / g_np = "
                f"{abs(res['history'][-1] - g_rs[-1]) / res['history'][-1]:.1e}, "
                f"test predictions agree {np.mean(pred_rs == pred_np) * 100:.0f}%"
            )
        table.add(
            f"(a) MUSK1 fit, {solver}, median",
            fmt_t(t_np),
            fmt_t(t_rs),
            ratio,
            ">= 10x" if solver == "newton" else "(info)",
            10.0 if solver == "newton" else None,
        )


# ----------------------------------------------------------------------------------------------
# (b) MUSK2 per outer iteration
# ----------------------------------------------------------------------------------------------


def bench_musk2_fit(milsvm, X, ptr, y, table, args):
    n_iter = args.musk2_iter
    Z0 = X[np.random.default_rng(0).choice(X.shape[0], 100, replace=False)].copy()
    print(
        f"\n(b) MUSK2: all {len(y)} bags ({X.shape[0]} instances), n_xv=100, max_iter={n_iter}, "
        "newton"
    )
    times, res, times_r, est, note = fit_both(
        milsvm,
        X,
        ptr,
        y,
        Z0,
        args.reps_musk2,
        args.threads,
        n_xv=100,
        C=C,
        gamma=GAMMA,
        max_iter=n_iter,
        max_line_search=10,
        tol=TOL,
        solver="newton",
    )
    t_np = float(np.median(times))
    per_iter_np = t_np / max(res["n_iter"], 1)
    per_solve_np = t_np / res["n_inner_solves"]
    print(
        f"  numpy : total median {fmt_t(t_np)}, n_iter {res['n_iter']}, inner solves "
        f"{res['n_inner_solves']}, per outer iteration {fmt_t(per_iter_np)}, per inner solve "
        f"{fmt_t(per_solve_np)}, g {res['history'][0]:.6f} -> {res['history'][-1]:.8f}"
    )
    per_iter_rs = ratio = per_solve_rs = None
    if est is not None:
        t_rs = float(np.median(times_r))
        per_iter_rs = t_rs / max(est.n_iter_, 1)
        n_solves_rs = getattr(est, "n_inner_solves_", None)
        per_solve_rs = t_rs / n_solves_rs if n_solves_rs else None
        ratio = per_iter_np / per_iter_rs
        print(
            f"  milsvm: total median {fmt_t(t_rs)}, n_iter {est.n_iter_}, inner solves "
            f"{n_solves_rs if n_solves_rs else 'not reported'}, per outer iteration "
            f"{fmt_t(per_iter_rs)}, per inner solve {fmt_t(per_solve_rs)}, "
            f"g {est.objective_history_[0]:.6f} -> {est.objective_history_[-1]:.8f} ({note})"
        )
    table.add(
        "(b) MUSK2 n_xv=100, per outer iteration",
        fmt_t(per_iter_np),
        fmt_t(per_iter_rs),
        ratio,
        ">= 1.5x",
        1.5,
    )
    if per_solve_rs is not None:
        table.add(
            "(b) MUSK2 n_xv=100, per inner solve",
            fmt_t(per_solve_np),
            fmt_t(per_solve_rs),
            per_solve_np / per_solve_rs,
            "(info)",
        )


# ----------------------------------------------------------------------------------------------
# (c) kernel + gradient step
# ----------------------------------------------------------------------------------------------


def bench_kernel_step(milsvm, X, ptr, table, args):
    N, d = X.shape
    n_xv = 100
    rng = np.random.default_rng(1)
    Z = np.ascontiguousarray(
        X[rng.choice(N, n_xv, replace=False)] + 0.1 * rng.normal(size=(n_xv, d))
    )
    A = np.ascontiguousarray(rng.normal(size=(N, 1)) * rng.normal(size=(1, n_xv)))  # a_p beta_k
    flops = 4.0 * N * d * n_xv  # X Z^T (2 N d n_xv) + X^T W (2 N d n_xv)
    reps = args.kernel_reps
    print(
        f"\n(c) kernel + gradient step at MUSK2 shapes: X {N}x{d}, Z {n_xv}x{d}, "
        f"{flops / 1e9:.3f} GFLOP counted, best of {reps}"
    )

    W = A.copy()
    t_mm, _ = time_calls(lambda: (X @ Z.T, X.T @ W), reps, warmup=3)
    gf_mm = flops / t_mm.min() / 1e9
    print(
        f"  numpy X @ Z.T + X.T @ W      : best {fmt_t(t_mm.min())}, median "
        f"{fmt_t(np.median(t_mm))}, {gf_mm:.2f} GFLOP/s"
    )

    def numpy_step():
        K = ref.rbf(X, Z, GAMMA)
        M = ref.bag_means(K, ptr)
        G = ref.basis_grad(X, Z, K, A, GAMMA)
        return K, M, G

    t_ref, (K_np, M_np, G_np) = time_calls(numpy_step, reps, warmup=3)
    gf_ref = flops / t_ref.min() / 1e9
    print(
        f"  numpy reference (rbf + bag_means + basis_grad): best {fmt_t(t_ref.min())}, "
        f"median {fmt_t(np.median(t_ref))}, {gf_ref:.2f} GFLOP/s"
    )

    gf_rs = t_rs = None
    if milsvm is not None:
        core = milsvm._core

        def rust_step():
            K, M = core.kernel_bag_means(X, ptr, Z, "rbf", GAMMA, args.threads)
            G = core.kernel_basis_grad(X, Z, K, A, "rbf", GAMMA, args.threads)
            return K, M, G

        t_r, (K_r, M_r, G_r) = time_calls(rust_step, reps, warmup=3)
        t_rs = t_r.min()
        gf_rs = flops / t_rs / 1e9
        errs = [ref._rel(np.asarray(a), b) for a, b in ((K_r, K_np), (M_r, M_np), (G_r, G_np))]
        print(
            f"  milsvm kernel_bag_means + kernel_basis_grad: best {fmt_t(t_rs)}, median "
            f"{fmt_t(np.median(t_r))}, {gf_rs:.2f} GFLOP/s; rel. diff to NumPy K {errs[0]:.1e}, "
            f"M {errs[1]:.1e}, G {errs[2]:.1e}"
        )
    table.add(
        "(c) kernel+grad GFLOP/s vs NumPy matmul",
        f"{gf_mm:.2f} GFLOP/s",
        "-" if gf_rs is None else f"{gf_rs:.2f} GFLOP/s",
        None if gf_rs is None else gf_rs / gf_mm,
        ">= 0.5",
        0.5,
    )
    table.add(
        "(c) kernel+grad step vs NumPy reference",
        fmt_t(t_ref.min()),
        fmt_t(t_rs),
        None if t_rs is None else t_ref.min() / t_rs,
        "(info)",
    )


# ----------------------------------------------------------------------------------------------


def background_load(seconds=1.0):
    """Busy cores (from /proc/stat) while this process sleeps: load that other processes put on
    the machine. Multi-threaded BLAS and rayon both slow down badly when a core is taken."""
    try:

        def read():
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
            return sum(v), v[3] + v[4]  # total, idle + iowait

        t0, i0 = read()
        time.sleep(seconds)
        t1, i1 = read()
        return (os.cpu_count() or 1) * (1.0 - (i1 - i0) / max(t1 - t0, 1))
    except (OSError, ValueError, IndexError):
        return None


def blas_summary():
    out = []
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            out.append(
                f"{info.get('internal_api')} {info.get('version')} "
                f"({info.get('architecture')}, {info.get('threading_layer')}): "
                f"{info.get('num_threads')} threads"
            )
    return "; ".join(out) or "no BLAS found by threadpoolctl"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count(),
        help="n_jobs for milsvm and BLAS threads for NumPy (default: all cores)",
    )
    parser.add_argument(
        "--numpy-threads",
        type=int,
        default=None,
        help="BLAS threads for NumPy if different from --threads (small problems "
        "such as MUSK1 often run faster on 1 BLAS thread)",
    )
    parser.add_argument("--numpy-only", action="store_true", help="time the NumPy side only")
    parser.add_argument("--reps", type=int, default=7, help="repetitions for (a) (>= 5)")
    parser.add_argument("--reps-musk2", type=int, default=3, help="repetitions for (b)")
    parser.add_argument("--musk2-iter", type=int, default=5, help="outer iterations for (b)")
    parser.add_argument("--kernel-reps", type=int, default=40, help="repetitions for (c)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    args = parser.parse_args()

    milsvm = None
    if not args.numpy_only:
        try:
            import milsvm  # noqa: F401
            import milsvm._core  # noqa: F401
        except ImportError as exc:
            sys.exit(f"cannot import milsvm ({exc}); build it first or use --numpy-only")

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, NumPy {np.__version__}"
    )
    print(f"NumPy BLAS before limits: {blas_summary()}")
    load = background_load()
    if load is not None:
        print(
            f"background load before the run: {load:.2f} busy cores of {os.cpu_count()}"
            + (
                "  ** WARNING: the machine is not idle; multi-threaded timings will be unreliable"
                " (try --threads 1) **"
                if load > 0.2
                else ""
            )
        )
    table = Table()
    numpy_threads = args.numpy_threads or args.threads
    with threadpool_limits(limits=numpy_threads, user_api="blas"):
        print(
            f"NumPy BLAS during the run: {blas_summary()}; milsvm n_jobs = {args.threads}"
            + (f", milsvm {getattr(milsvm, '__version__', '?')}" if milsvm else ", milsvm not used")
        )
        bench_musk1(milsvm, table, args)
        X2, ptr2, y2 = load_mill_dense(args.data / "musk2" / "musk2.data")
        X2 = standardise(X2)
        bench_musk2_fit(milsvm, X2, ptr2, y2, table, args)
        bench_kernel_step(milsvm, X2, ptr2, table, args)
    print("\nratios: numpy time / milsvm time, except (c) GFLOP/s: milsvm / numpy matmul\n")
    table.print()


if __name__ == "__main__":
    main()
