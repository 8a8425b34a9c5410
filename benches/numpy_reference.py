"""Plain NumPy/SciPy reference implementation of SparseMI (Fu et al. 2011/2013).

Binary labels, dense instances, Gaussian kernel k(x, z) = exp(-gamma ||x - z||^2).
It is the speed baseline of ``bench_speed.py`` and the accuracy cross-check of
``reproduce_fu_table1.py`` (``--backend numpy``); the formulas follow
``spec/ALGORITHMS.md`` section 2:

    Q(beta, b; Z) = 1/2 beta^T (K_Z + 1e-8 I) beta + C sum_i max(0, 1 - y_i F_i)^2,
    F_i = (M beta)_i + b,   M_ik = mean_p k(x_ip, z_k),
    g(Z) = min_{beta, b} Q,  dg/dZ by Danskin's theorem.

Instances are stacked: X (N x d) holds the instances of all bags, bag i being the rows
``bag_ptr[i]:bag_ptr[i + 1]`` (``bag_ptr`` has m + 1 offsets).

Run the self-test (finite-difference gradient checks, Newton vs L-BFGS, monotone history):

    python benches/numpy_reference.py --selftest

Use from other scripts:

    from numpy_reference import fit_sparse_mi, decision_function, stack_bags
    X, ptr = stack_bags(bags)
    model = fit_sparse_mi(X, ptr, y, n_xv=10, C=1.0, gamma=1 / X.shape[1])
    scores = decision_function(X_test, ptr_test, model["Z"], model["beta"], model["b"],
                               model["gamma"])
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from scipy.optimize import minimize

RIDGE = 1e-8  # added to the diagonal of K_Z in Q (paper footnote); it does not enter dg/dZ


# ----------------------------------------------------------------------------------------------
# Data helpers
# ----------------------------------------------------------------------------------------------


def stack_bags(bags):
    """List of (n_i x d) arrays -> (X (N x d) float64 C-contiguous, bag_ptr int64 (m + 1))."""
    sizes = np.array([len(B) for B in bags], dtype=np.int64)
    if np.any(sizes == 0):
        raise ValueError("empty bag")
    bag_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = np.ascontiguousarray(np.vstack([np.asarray(B, dtype=np.float64) for B in bags]))
    return X, bag_ptr


def _as_stacked(bags_or_X, bag_ptr):
    if bag_ptr is None:
        return stack_bags(bags_or_X)
    X = np.ascontiguousarray(bags_or_X, dtype=np.float64)
    bag_ptr = np.asarray(bag_ptr, dtype=np.int64)
    if bag_ptr[0] != 0 or bag_ptr[-1] != X.shape[0] or np.any(np.diff(bag_ptr) <= 0):
        raise ValueError("bag_ptr must be increasing offsets from 0 to N with no empty bag")
    return X, bag_ptr


def _as_pm1(y):
    """Labels {0,1} or {-1,+1} (or any two values, the larger is positive) -> float {-1,+1}."""
    y = np.asarray(y)
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(f"binary labels expected, got classes {classes}")
    return np.where(y == classes[1], 1.0, -1.0)


# ----------------------------------------------------------------------------------------------
# Kernel and bag means
# ----------------------------------------------------------------------------------------------


def rbf(X, Z, gamma):
    """Gaussian kernel matrix K_pk = exp(-gamma ||x_p - z_k||^2) via matrix products."""
    xx = np.einsum("ij,ij->i", X, X)
    zz = np.einsum("ij,ij->i", Z, Z)
    D = X @ Z.T
    D *= -2.0
    D += xx[:, None]
    D += zz[None, :]
    np.maximum(D, 0.0, out=D)
    D *= -gamma
    np.exp(D, out=D)
    return D


def bag_means(K, bag_ptr):
    """M (m x n_xv): M_ik = mean over the instances p of bag i of K_pk."""
    sizes = np.diff(bag_ptr)
    return np.add.reduceat(K, bag_ptr[:-1], axis=0) / sizes[:, None]


def basis_grad(X, Z, K, A, gamma):
    """G (n_xv x d), G_k = sum_p A_pk dk(x_p, z_k)/dz_k = 2 gamma sum_p A_pk K_pk (x_p - z_k).

    The NumPy twin of ``milsvm._core.kernel_basis_grad`` (one matrix product X^T W).
    """
    W = A * K
    return 2.0 * gamma * (W.T @ X - W.sum(axis=0)[:, None] * Z)


# ----------------------------------------------------------------------------------------------
# Inner problem: min_{beta, b} Q  (Z fixed)
# ----------------------------------------------------------------------------------------------


def objective(KZr, M, y, C, beta, b):
    """Q and its gradient (dQ/dbeta, dQ/db). KZr = K_Z + ridge I."""
    F = M @ beta + b
    r = 1.0 - y * F  # margin violation; bag i is active when r_i > 0
    viol = np.maximum(r, 0.0)
    Kb = KZr @ beta
    Q = 0.5 * beta @ Kb + C * viol @ viol
    lp = -2.0 * y * viol  # l'(y_i, F_i) = 2 (F_i - y_i) on active bags, 0 elsewhere
    g_beta = Kb + C * (M.T @ lp)
    g_b = C * lp.sum()  # no 1/n_i (erratum in the papers)
    return Q, g_beta, g_b


def _exact_line_search(KZr, beta, dbeta, F, dF, y, C):
    """argmin_{t >= 0} phi(t) = Q(beta + t dbeta, b + t db), phi piecewise quadratic.

    phi'(t) = a1 t + a0 + 2C sum_{i : r_i - t s_i > 0} (s_i^2 t - s_i r_i),
    with r_i = 1 - y_i F_i, s_i = y_i dF_i. phi' is piecewise linear and nondecreasing;
    bag i switches activity at t_i = r_i / s_i (only t_i > 0 matters). Walk the sorted
    breakpoints, keeping phi'(t) = A t + B on each segment, and stop at the first segment
    whose right end has phi' >= 0.
    """
    Kd = KZr @ dbeta
    a1 = dbeta @ Kd
    a0 = beta @ Kd
    r = 1.0 - y * F
    s = y * dF
    act0 = (r > 0) | ((r == 0) & (s < 0))  # active just after t = 0
    A0 = a1 + 2 * C * np.sum(s[act0] ** 2)
    B0 = a0 - 2 * C * np.sum(s[act0] * r[act0])

    with np.errstate(divide="ignore", invalid="ignore"):
        tb = r / s
    ev = np.flatnonzero((s != 0) & (tb > 0) & np.isfinite(tb))
    ev = ev[np.argsort(tb[ev], kind="stable")]
    # crossing breakpoint i: s_i > 0 -> bag leaves the active set, s_i < 0 -> it enters
    sign = np.where(s[ev] > 0, -1.0, 1.0)
    A = A0 + np.concatenate([[0.0], np.cumsum(sign * 2 * C * s[ev] ** 2)])
    B = B0 + np.concatenate([[0.0], np.cumsum(-sign * 2 * C * s[ev] * r[ev])])
    t_right = np.concatenate([tb[ev], [np.inf]])
    # segment k = [t_right[k-1], t_right[k]] has phi' = A[k] t + B[k]
    with np.errstate(invalid="ignore"):
        slope_at_right = np.where(np.isinf(t_right), np.inf, A * t_right + B)
    k = int(np.argmax(slope_at_right >= 0))
    if A[k] <= 0:  # phi' constant on this segment: its root is its right end
        return float(t_right[k]) if np.isfinite(t_right[k]) else 0.0
    t_left = 0.0 if k == 0 else t_right[k - 1]
    return float(max(-B[k] / A[k], t_left))


def _solve_newton(KZr, M, y, C, beta, b, tol, max_iter=100):
    """Primal Newton with exact line search (Chapelle 2007; LIBLINEAR's L2-loss SVM)."""
    n = KZr.shape[0]
    m = M.shape[0]
    A = np.hstack([M, np.ones((m, 1))])  # F = A [beta; b]
    # gradient norm at (0, 0): the scale of the relative stopping rule (as in LIBLINEAR)
    g_scale = np.linalg.norm(2 * C * (A.T @ y))
    prev_act = None
    t = 0.0
    for _ in range(max_iter):
        Q, g_beta, g_b = objective(KZr, M, y, C, beta, b)
        grad = np.append(g_beta, g_b)
        act = (1.0 - y * (M @ beta + b)) > 0
        if np.linalg.norm(grad) <= tol * g_scale:
            break
        # same active set after a full Newton step = exact minimiser of that quadratic piece
        if prev_act is not None and t == 1.0 and np.array_equal(act, prev_act):
            break
        Aa = A[act]
        H = 2 * C * (Aa.T @ Aa)
        H[:n, :n] += KZr
        if not act.any():
            H[n, n] = 1.0  # dQ/db = 0 here; keep b fixed
        d = np.linalg.solve(H, -grad)
        F = A @ np.append(beta, b)
        dF = A @ d
        t = _exact_line_search(KZr, beta, d[:n], F, dF, y, C)
        if t == 0.0:
            break
        beta = beta + t * d[:n]
        b = b + t * d[n]
        prev_act = act
    Q, _, _ = objective(KZr, M, y, C, beta, b)
    return beta, float(b), float(Q)


def _solve_lbfgs(KZr, M, y, C, beta, b, tol):
    n = KZr.shape[0]
    A_y = np.hstack([M, np.ones((M.shape[0], 1))]).T @ y
    g_scale = np.linalg.norm(2 * C * A_y)

    def fun(w):
        Q, g_beta, g_b = objective(KZr, M, y, C, w[:n], w[n])
        return Q, np.append(g_beta, g_b)

    res = minimize(
        fun,
        np.append(beta, b),
        jac=True,
        method="L-BFGS-B",
        options=dict(
            maxiter=20000, maxfun=40000, maxcor=20, ftol=1e-16, gtol=tol * g_scale / np.sqrt(n + 1)
        ),
    )
    return res.x[:n].copy(), float(res.x[n]), float(res.fun)


def solve_inner(KZ, M, y, C, solver="newton", warm=None, tol=1e-10):
    """Minimise Q(beta, b) at fixed Z. KZ is the plain kernel matrix of Z (ridge added here).

    y in {-1, +1}; warm = (beta, b) or None (start at 0). Returns (beta, b, value).
    """
    n = KZ.shape[0]
    KZr = KZ + RIDGE * np.eye(n)
    y = np.asarray(y, dtype=np.float64)
    if warm is None:
        beta, b = np.zeros(n), 0.0
    else:
        beta, b = np.array(warm[0], dtype=np.float64), float(warm[1])
    if solver == "newton":
        return _solve_newton(KZr, M, y, C, beta, b, tol)
    if solver == "lbfgs":
        return _solve_lbfgs(KZr, M, y, C, beta, b, tol)
    raise ValueError(f"unknown solver {solver!r}")


# ----------------------------------------------------------------------------------------------
# Outer problem: gradient of g(Z) and Algorithm 1
# ----------------------------------------------------------------------------------------------


def gradient_Z(X, bag_ptr, Z, beta, b, y, C, gamma, K, KZ):
    """dg/dZ (n_xv x d) by Danskin's theorem, at the inner optimum (beta, b).

    dg/dz_k = beta_k [ sum_j beta_j dk(z_j, z_k)/dz_k + sum_i sum_p a_ip dk(x_ip, z_k)/dz_k ],
    a_ip = C l'(y_i, F_i) / n_i. K = rbf(X, Z), KZ = rbf(Z, Z) (no ridge).
    """
    sizes = np.diff(bag_ptr)
    F = bag_means(K, bag_ptr) @ beta + b
    lp = -2.0 * y * np.maximum(1.0 - y * F, 0.0)
    a = np.repeat(C * lp / sizes, sizes)  # a_p for every stacked instance
    G = basis_grad(X, Z, K, a[:, None] * beta[None, :], gamma)
    G += basis_grad(Z, Z, KZ, np.outer(beta, beta), gamma)
    return G


def _inner_at(X, bag_ptr, Z, y, C, gamma, solver, warm, inner_tol):
    K = rbf(X, Z, gamma)
    KZ = rbf(Z, Z, gamma)
    M = bag_means(K, bag_ptr)
    beta, b, g = solve_inner(KZ, M, y, C, solver=solver, warm=warm, tol=inner_tol)
    return beta, b, g, K, KZ


def fit_sparse_mi(
    bags_or_X,
    bag_ptr,
    y,
    n_xv=10,
    C=1.0,
    gamma="scale",
    max_iter=50,
    max_line_search=10,
    tol=1e-6,
    solver="newton",
    random_state=0,
    init_Z=None,
    inner_tol=1e-10,
    step_init="distance",
):
    """SparseMI, Algorithm 1 of Fu et al. (as in ALGORITHMS.md). max_iter=0 gives RSVM.

    bags_or_X: a list of bags (bag_ptr=None) or stacked instances with bag_ptr.
    y: bag labels, {0,1} or {-1,+1}. gamma: float or "scale" (1 / (d * var(X))).
    step_init: "distance" (Algorithm 1 / ALGORITHMS.md: lambda = mean pairwise distance D of the
    initial XVs) or "distance_over_grad" (lambda = D / max_k ||dg/dz_k|| at the first
    iteration, so that the first trial moves the farthest-moving XV by D).
    Returns a dict: Z, beta, b, gamma, history (g at the initial Z, then after each accepted
    outer iteration), n_iter, n_inner_solves.
    """
    X, bag_ptr = _as_stacked(bags_or_X, bag_ptr)
    y = _as_pm1(y)
    if gamma == "scale":
        gamma = 1.0 / (X.shape[1] * X.var())
    gamma = float(gamma)

    if init_Z is None:
        rng = np.random.default_rng(random_state)
        Z = X[rng.choice(X.shape[0], size=n_xv, replace=False)].copy()
    else:
        Z = np.array(init_Z, dtype=np.float64)
    n_xv = Z.shape[0]

    # initial step: mean pairwise distance of the initial XVs
    if n_xv > 1:
        D = np.sqrt(np.maximum(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1), 0.0))
        lam = D[np.triu_indices(n_xv, 1)].mean()
    else:
        lam = 1.0
    if not lam > 0:
        lam = 1.0
    if step_init not in ("distance", "distance_over_grad"):
        raise ValueError(f"unknown step_init {step_init!r}")

    beta, b, g, K, KZ = _inner_at(X, bag_ptr, Z, y, C, gamma, solver, None, inner_tol)
    history = [g]
    n_inner = 1
    n_iter = 0
    for _ in range(max_iter):
        G = gradient_Z(X, bag_ptr, Z, beta, b, y, C, gamma, K, KZ)
        if n_iter == 0 and step_init == "distance_over_grad":
            lam = lam / max(np.sqrt((G**2).sum(axis=1)).max(), 1e-300)
        accepted = False
        for s in range(1, max_line_search + 1):
            Z_new = Z - lam * G
            beta_n, b_n, g_n, K_n, KZ_n = _inner_at(
                X, bag_ptr, Z_new, y, C, gamma, solver, (beta, b), inner_tol
            )
            n_inner += 1
            if g_n < g:
                accepted = True
                if s == 1:
                    lam *= 2.0
                break
            lam /= 2.0
        if not accepted:  # no step decreased g
            break
        decrease = g - g_n
        Z, beta, b, K, KZ = Z_new, beta_n, b_n, K_n, KZ_n
        g = g_n
        history.append(g)
        n_iter += 1
        if decrease < tol * abs(history[-2]):
            break
    return dict(
        Z=Z,
        beta=beta,
        b=b,
        gamma=gamma,
        history=history,
        n_iter=n_iter,
        n_inner_solves=n_inner,
        step=lam,
    )


def decision_function(bags_X, bag_ptr, Z, beta, b, gamma):
    """Bag scores F_i = (M beta)_i + b for bags given as a list (bag_ptr=None) or stacked."""
    X, bag_ptr = _as_stacked(bags_X, bag_ptr)
    return bag_means(rbf(X, Z, gamma), bag_ptr) @ beta + b


# ----------------------------------------------------------------------------------------------
# Self-test
# ----------------------------------------------------------------------------------------------


def _random_problem(seed, m=14, d=4, n_xv=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=m)
    y = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    bags = [
        rng.normal(size=(n, d)) + 0.8 * y[i] * (rng.random((n, 1)) < 0.5)
        for i, n in enumerate(sizes)
    ]
    X, ptr = stack_bags(bags)
    Z = X[rng.choice(X.shape[0], n_xv, replace=False)] + 0.1 * rng.normal(size=(n_xv, d))
    return X, ptr, y, Z


def _rel(a, b):
    return float(
        np.linalg.norm(np.ravel(a) - np.ravel(b)) / max(np.linalg.norm(np.ravel(b)), 1e-300)
    )


def selftest():
    ok = True

    def report(name, passed, detail):
        nonlocal ok
        ok &= bool(passed)
        print(f"{'PASS' if passed else 'FAIL'}  {name:<52s} {detail}")

    gamma, C = 0.3, 2.0
    X, ptr, y, Z = _random_problem(0)

    # kernel and bag means against direct loops
    K = rbf(X, Z, gamma)
    K_loop = np.array([[np.exp(-gamma * np.sum((x - z) ** 2)) for z in Z] for x in X])
    M = bag_means(K, ptr)
    M_loop = np.array([K_loop[ptr[i] : ptr[i + 1]].mean(0) for i in range(len(ptr) - 1)])
    report(
        "rbf / bag_means vs loops",
        _rel(K, K_loop) < 1e-12 and _rel(M, M_loop) < 1e-12,
        f"rel err {max(_rel(K, K_loop), _rel(M, M_loop)):.1e}",
    )

    # dQ/dbeta and dQ/db by central differences, at a point with active and inactive bags
    KZ = rbf(Z, Z, gamma)
    KZr = KZ + RIDGE * np.eye(len(Z))
    rng = np.random.default_rng(1)
    rng.normal(size=len(Z))
    beta = 3.0 * rng.normal(size=len(Z))  # a point with both active and inactive bags
    b = 0.1
    F = M @ beta + b
    n_act = int(np.sum(y * F < 1))
    _, g_beta, g_b = objective(KZr, M, y, C, beta, b)
    h = 1e-6
    fd_beta = np.array(
        [
            (
                objective(KZr, M, y, C, beta + h * e, b)[0]
                - objective(KZr, M, y, C, beta - h * e, b)[0]
            )
            / (2 * h)
            for e in np.eye(len(beta))
        ]
    )
    fd_b = (objective(KZr, M, y, C, beta, b + h)[0] - objective(KZr, M, y, C, beta, b - h)[0]) / (
        2 * h
    )
    e1, e2 = _rel(g_beta, fd_beta), _rel(g_b, fd_b)
    report("dQ/dbeta finite differences", e1 < 1e-5, f"rel err {e1:.1e} ({n_act}/{len(y)} active)")
    report("dQ/db finite differences", e2 < 1e-5, f"rel err {e2:.1e}")

    # exact line search vs a brute-force scan of phi(t) along a random direction
    d = rng.normal(size=len(Z) + 1)

    def phi(t):
        return objective(KZr, M, y, C, beta + t * d[:-1], b + t * d[-1])[0]

    if phi(1e-6) > phi(0.0):
        d = -d
    t_star = _exact_line_search(KZr, beta, d[:-1], M @ beta + b, M @ d[:-1] + d[-1], y, C)
    grid = np.linspace(0.0, 4.0 * max(t_star, 1e-3), 40001)
    t_grid = grid[np.argmin([phi(t) for t in grid])]
    ls_ok = (
        abs(t_star - t_grid) <= 2 * (grid[1] - grid[0])
        and phi(t_star) <= min(phi(t_grid), phi(0.0)) + 1e-12
    )
    report("exact line search vs brute-force scan", ls_ok, f"t* {t_star:.6f}, scan {t_grid:.6f}")

    # Newton vs L-BFGS on the inner problem
    worst = 0.0
    for seed in range(5):
        Xs, ps, ys, Zs = _random_problem(10 + seed, m=30, d=5, n_xv=8)
        for Cs, gs in [(0.1, 0.2), (1.0, 0.5), (100.0, 1.0)]:
            Ks = rbf(Xs, Zs, gs)
            Ms, KZs = bag_means(Ks, ps), rbf(Zs, Zs, gs)
            _, _, qn = solve_inner(KZs, Ms, ys, Cs, "newton")
            _, _, ql = solve_inner(KZs, Ms, ys, Cs, "lbfgs")
            worst = max(worst, abs(qn - ql) / abs(qn))
    report("newton vs lbfgs objective (15 problems)", worst < 1e-8, f"max rel diff {worst:.1e}")

    beta_o, b_o, g0 = solve_inner(KZ, M, y, C, "newton")
    _, _, g_l = solve_inner(KZ, M, y, C, "lbfgs")
    _, go, gb = objective(KZr, M, y, C, beta_o, b_o)
    gn = np.linalg.norm(np.append(go, gb))
    report(
        "newton optimality (gradient norm)",
        gn < 1e-8,
        f"|grad| {gn:.1e}, g {g0:.6g} vs lbfgs {g_l:.6g}",
    )

    # dg/dZ by re-solving the inner problem at Z +- h e_kj (C = 2: all bags active at the
    # optimum; C = 100: about half of them active)
    for Cg in (C, 100.0):
        KZ = rbf(Z, Z, gamma)
        beta_o, b_o, _ = solve_inner(KZ, M, y, Cg, "newton")
        G = gradient_Z(X, ptr, Z, beta_o, b_o, y, Cg, gamma, rbf(X, Z, gamma), KZ)
        fd = np.zeros_like(Z)
        h = 1e-5
        for k in range(Z.shape[0]):
            for j in range(Z.shape[1]):
                vals = []
                for sgn in (1, -1):
                    Zp = Z.copy()
                    Zp[k, j] += sgn * h
                    vals.append(_inner_at(X, ptr, Zp, y, Cg, gamma, "newton", None, 1e-14)[2])
                fd[k, j] = (vals[0] - vals[1]) / (2 * h)
        e3 = _rel(G, fd)
        n_act = int(np.sum(y * (M @ beta_o + b_o) < 1))
        report(
            f"dg/dZ finite differences, C={Cg:g} (re-solved inner)",
            e3 < 1e-5,
            f"rel err {e3:.1e} ({n_act}/{len(y)} active)",
        )

    # Algorithm 1: history non-increasing, both solvers; RSVM = max_iter 0
    for solver in ("newton", "lbfgs"):
        Xs, ps, ys, _ = _random_problem(3, m=40, d=5)
        res = fit_sparse_mi(Xs, ps, ys, n_xv=6, C=1.0, gamma=0.3, max_iter=30, solver=solver)
        hist = np.array(res["history"])
        mono = np.all(np.diff(hist) <= 0) and len(hist) == res["n_iter"] + 1
        report(
            f"history non-increasing ({solver})",
            mono and res["n_iter"] > 0,
            f"g {hist[0]:.4f} -> {hist[-1]:.4f} in {res['n_iter']} iterations",
        )
    rs = fit_sparse_mi(Xs, ps, ys, n_xv=6, C=1.0, gamma=0.3, max_iter=0)
    report(
        "max_iter=0 (RSVM) does not move Z",
        rs["n_iter"] == 0 and len(rs["history"]) == 1,
        f"g {rs['history'][0]:.4f}",
    )

    # decision_function agrees with F from the fit
    f1 = decision_function(Xs, ps, res["Z"], res["beta"], res["b"], res["gamma"])
    bags = [Xs[ps[i] : ps[i + 1]] for i in range(len(ps) - 1)]
    f2 = decision_function(bags, None, res["Z"], res["beta"], res["b"], res["gamma"])
    report(
        "decision_function (stacked == list)", _rel(f1, f2) < 1e-14, f"rel diff {_rel(f1, f2):.1e}"
    )

    print("ALL PASS" if ok else "SOME CHECKS FAILED")
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--selftest", action="store_true", help="run the self-test")
    args = parser.parse_args()
    if args.selftest:
        sys.exit(0 if selftest() else 1)
    parser.print_help()
