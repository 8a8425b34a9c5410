"""The dual SMO solver (src/smo) through its low-level binding `_core.solve_dual`: against a
general QP solver (scipy's SLSQP) on hypothesis-generated small problems, against libsvm on a
plain C-SVM, kernel rows from instances against a precomputed matrix, thread-count
independence, and refusals of bad input."""

import numpy as np
import pytest
from conftest import slsqp_minimum
from hypothesis import given, settings
from hypothesis import strategies as st
from milsvm import _core
from sklearn.svm import SVC


def rbf(X, Z, gamma):
    d2 = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2 * X @ Z.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def dual_objective(a, K, y, p, d):
    ya = y * a
    return 0.5 * ya @ K @ ya + 0.5 * (d * a) @ a - p @ a


def reference(K, y, u, p, d, delta):
    """The same QP by SLSQP: the best value over two starts (zero and the middle of the box,
    each run restarted from where it stopped until that no longer improves) among the runs that
    end feasible (box and ``y @ a = delta`` to 1e-9). Fails if no run ends feasible, so the
    reference is never an infeasible point's (possibly too low) value or a default."""
    n = len(y)
    Q = np.outer(y, y) * K + np.diag(d)

    def fun(a):
        return 0.5 * a @ Q @ a - p @ a

    def jac(a):
        return Q @ a - p

    bounds = [(0.0, None if np.isinf(b) else b) for b in u]
    cons = [{"type": "eq", "fun": lambda a: y @ a - delta, "jac": lambda a: y}]
    upper = np.where(np.isinf(u), np.inf, u)

    def feasible(a):
        return (
            np.all(a >= -1e-12)
            and np.all(a <= upper + 1e-12)
            and abs(y @ a - delta) <= 1e-9 * max(1.0, a.sum())
        )

    starts = [np.zeros(n), np.where(np.isinf(u), 1.0, u / 2)]
    return slsqp_minimum(
        fun, jac, starts, bounds, cons, feasible, ftol=1e-14, maxiter=2000, restarts=10
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 12),
    squared=st.booleans(),
    shared_points=st.booleans(),
)
def test_matches_a_general_qp_solver(seed, n, squared, shared_points):
    rng = np.random.default_rng(seed)
    n_points = max(1, n // 2) if shared_points else n
    X = rng.normal(size=(n_points, 3))
    K = rbf(X, X, 0.7)
    point = rng.integers(0, n_points, n) if shared_points else np.arange(n)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[-1] = 1.0, -1.0
    p = rng.uniform(0.5, 1.5, n)
    if squared:  # squared hinge: unbounded, extra diagonal
        d = rng.uniform(0.05, 1.0, n)
        u = np.full(n, np.inf)
    else:  # hinge: box constraints, some samples dead
        d = np.zeros(n)
        u = rng.uniform(0.1, 5.0, n)
        u[rng.random(n) < 0.15] = 0.0
    r = _core.solve_dual(K, y, u, p=p, d=d, point=point.astype(np.int64), tol=1e-9)
    a = r["alpha"]
    Kp = K[np.ix_(point, point)]
    assert r["converged"]
    assert np.all(a >= 0) and np.all(a <= u + 1e-12)
    assert abs(y @ a) < 1e-9 * max(1.0, a.sum())
    obj = dual_objective(a, Kp, y, p, d)
    assert r["objective"] == pytest.approx(obj, rel=1e-9, abs=1e-9)
    ref = reference(Kp, y, u, p, d, 0.0)
    assert obj <= ref + 1e-6 * max(1.0, abs(ref))
    # both are feasible values of a convex QP: the reference found its minimum too
    assert ref <= obj + 1e-6 * max(1.0, abs(ref)), (
        f"the reference ({ref!r}) missed the minimum ({obj!r})"
    )
    # q_alpha is (Q a) without the diagonal term, in sample order.
    np.testing.assert_allclose(r["q_alpha"], y * (Kp @ (y * a)), atol=1e-9)


def two_gaussians(n, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([-1.0, 1.0], [n // 2, n - n // 2])
    X = rng.standard_normal((n, 5)) + 0.4 * y[:, None]
    return X, y


@pytest.mark.parametrize("C", [0.5, 10.0])
def test_plain_svm_matches_libsvm(C):
    X, y = two_gaussians(300)
    K = rbf(X, X, 0.2)
    r = _core.solve_dual(K, y, np.full(len(y), C), tol=1e-5)
    svc = SVC(kernel="precomputed", C=C, tol=1e-5).fit(K, y)
    a = np.zeros(len(y))
    a[svc.support_] = np.abs(svc.dual_coef_[0])
    ones, zeros = np.ones(len(y)), np.zeros(len(y))
    ours, theirs = (
        dual_objective(r["alpha"], K, y, ones, zeros),
        dual_objective(a, K, y, ones, zeros),
    )
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert r["b"] == pytest.approx(svc.intercept_[0], abs=1e-3)


@pytest.mark.parametrize("store_mb", [128.0, 0.0])
def test_rows_from_instances_equal_the_precomputed_matrix(store_mb):
    # the instance kernel stored whole (no row computed on demand), and row by row
    X, y = two_gaussians(200, seed=1)
    u = np.full(len(y), 3.0)
    a = _core.solve_dual(rbf(X, X, 0.3), y, u, tol=1e-6)
    b = _core.solve_dual(X, y, u, kernel="rbf", gamma=0.3, tol=1e-6, store_mb=store_mb)
    np.testing.assert_allclose(a["alpha"], b["alpha"], atol=1e-6)
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-9)
    assert a["kernel_rows"] == 0
    assert (b["kernel_rows"] > 0) == (store_mb == 0.0)


def test_same_result_for_any_thread_count():
    # Large enough for the parallel scans and row blocks (more than 4096 active samples).
    X, y = two_gaussians(5000, seed=2)
    u = np.full(len(y), 1.0)
    runs = [_core.solve_dual(X, y, u, kernel="rbf", gamma=0.2, n_jobs=j) for j in (1, 2)]
    assert runs[0]["iterations"] == runs[1]["iterations"]
    np.testing.assert_array_equal(runs[0]["alpha"], runs[1]["alpha"])
    np.testing.assert_array_equal(runs[0]["q_alpha"], runs[1]["q_alpha"])
    assert runs[0]["b"] == runs[1]["b"]


def test_iteration_cap_is_reported():
    X, y = two_gaussians(200)
    r = _core.solve_dual(rbf(X, X, 0.2), y, np.full(200, 10.0), max_iter=5)
    assert not r["converged"] and r["iterations"] == 5
    assert abs(y @ r["alpha"]) < 1e-9


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda K, y, u: (K[:, :-1], y, u), "square"),
        (lambda K, y, u: (np.where(np.eye(len(y)) > 0, np.nan, K), y, u), "NaN"),
        (lambda K, y, u: (K + np.triu(np.ones_like(K), 1), y, u), "symmetric"),
        (lambda K, y, u: (K, np.where(y > 0, 2.0, -1.0), u), "-1 or \\+1"),
        (lambda K, y, u: (K, y, -u), "u\\[0\\]"),
        (lambda K, y, u: (K, y[:-1], u), "entries"),
    ],
)
def test_bad_input_is_a_value_error(change, message):
    X, y = two_gaussians(10)
    K, y2, u = change(rbf(X, X, 0.5), y, np.ones(10))
    with pytest.raises(ValueError, match=message):
        _core.solve_dual(K, y2, u)
