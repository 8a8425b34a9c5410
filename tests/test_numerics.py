"""Numerical proofs: gradients against finite differences, solvers against scipy, kernels
against NumPy formulas, dense against CSR, and thread-count independence."""

import numpy as np
import pytest
import scipy.optimize
from conftest import bag_sets, csr_tuple, stacked_bags
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core
from sklearn.base import clone


def rbf(X, Z, gamma):
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * d2)


def squared_hinge_problem(seed, n=6, rows=12):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 3))
    K = rbf(P, P, 0.5) + 1e-8 * np.eye(n)
    X = rng.random((rows, n))
    y = np.where(rng.random(rows) < 0.5, 1.0, -1.0)
    c = rng.uniform(0.1, 10.0, rows)
    return K, X, y, c


def scipy_objective(K, X, y, c):
    n = K.shape[0]

    def f(theta):
        beta, b = theta[:n], theta[n]
        m = np.maximum(0.0, 1.0 - y * (X @ beta + b))
        dl = -2.0 * c * y * m
        return 0.5 * beta @ K @ beta + np.sum(c * m**2), np.concatenate(
            [K @ beta + X.T @ dl, [dl.sum()]]
        )

    return f


@given(st.integers(0, 10**6))
def test_squared_hinge_gradient_matches_finite_differences(seed):
    K, X, y, c = squared_hinge_problem(seed)
    rng = np.random.default_rng(seed + 1)
    beta, b = rng.normal(size=K.shape[0]), float(rng.normal())
    v, gbeta, gb = _core.squared_hinge_value_grad(K, X, y, c, beta, b)
    h = 1e-6
    fd = np.array(
        [
            (
                _core.squared_hinge_value_grad(K, X, y, c, beta + h * e, b)[0]
                - _core.squared_hinge_value_grad(K, X, y, c, beta - h * e, b)[0]
            )
            / (2 * h)
            for e in np.eye(len(beta))
        ]
    )
    fdb = (
        _core.squared_hinge_value_grad(K, X, y, c, beta, b + h)[0]
        - _core.squared_hinge_value_grad(K, X, y, c, beta, b - h)[0]
    ) / (2 * h)
    g, gfd = np.append(gbeta, gb), np.append(fd, fdb)
    assert np.linalg.norm(g - gfd) <= 1e-5 * max(np.linalg.norm(g), 1e-3)
    # the value itself agrees with an independent NumPy evaluation
    assert v == pytest.approx(scipy_objective(K, X, y, c)(np.append(beta, b))[0], rel=1e-12)


@given(st.integers(0, 10**6), st.sampled_from(["newton", "lbfgs"]))
def test_inner_solvers_match_scipy(seed, solver):
    K, X, y, c = squared_hinge_problem(seed)
    f = scipy_objective(K, X, y, c)
    ref = scipy.optimize.minimize(
        f,
        np.zeros(K.shape[0] + 1),
        jac=True,
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000},
    )
    beta, b, value, _, _ = _core.solve_squared_hinge(K, X, y, c, solver=solver)
    assert value == pytest.approx(f(np.append(beta, b))[0], rel=1e-12)
    # ours is at least as low as scipy's, and not lower than 1e-8 relative below it
    assert value <= ref.fun * (1 + 1e-8)
    assert value >= ref.fun * (1 - 1e-8)


def test_newton_warm_start_returns_at_once():
    K, X, y, c = squared_hinge_problem(3)
    beta, b, value, _, ok = _core.solve_squared_hinge(K, X, y, c, solver="newton")
    assert ok
    beta2, b2, value2, iters, _ = _core.solve_squared_hinge(K, X, y, c, warm_beta=beta, warm_b=b)
    assert iters <= 1 and value2 == pytest.approx(value, rel=1e-14)


@given(bag_sets(n_classes=2), st.sampled_from(["rbf", "linear"]))
def test_sparse_mi_gradient_matches_finite_differences(data, kernel):
    X, bag_ptr, labels = data
    _check_outer_gradient(X, bag_ptr, labels, kernel)


@given(bag_sets(n_classes=3, max_bags=9))
def test_multiclass_sparse_mi_gradient_matches_finite_differences(data):
    X, bag_ptr, labels = data
    _check_outer_gradient(X, bag_ptr, labels, "rbf")


def _check_outer_gradient(X, bag_ptr, labels, kernel):
    rng = np.random.default_rng(len(X))
    n_xv = min(3, len(X))
    Z = X[rng.choice(len(X), n_xv, replace=False)] + 0.1 * rng.normal(size=(n_xv, X.shape[1]))
    gamma, C = 0.4, 2.0
    args = dict(c=C, kernel=kernel, gamma=gamma, inner_tol=1e-13)
    g, grad = _core.sparse_mi_objective(X, bag_ptr, labels, Z, **args)
    h = 1e-5
    fd = np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        E = np.zeros_like(Z)
        E[idx] = h
        fd[idx] = (
            _core.sparse_mi_objective(X, bag_ptr, labels, Z + E, **args)[0]
            - _core.sparse_mi_objective(X, bag_ptr, labels, Z - E, **args)[0]
        ) / (2 * h)
    scale = max(np.linalg.norm(grad), 1e-6 * max(abs(g), 1.0))
    assert np.linalg.norm(fd - grad) <= 1e-5 * scale + 1e-9, (fd, grad)


@given(bag_sets(max_bags=10, max_d=5), st.sampled_from(["rbf", "linear"]))
def test_kernel_bag_means_match_numpy(data, kernel):
    X, bag_ptr, _ = data
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(4, X.shape[1]))
    K, M = _core.kernel_bag_means(X, bag_ptr, Z, kernel, 0.3)
    Kref = rbf(X, Z, 0.3) if kernel == "rbf" else X @ Z.T
    Mref = np.array([Kref[a:b].mean(0) for a, b in zip(bag_ptr[:-1], bag_ptr[1:])])
    np.testing.assert_allclose(K, Kref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(M, Mref, rtol=1e-12, atol=1e-13)


def test_kernel_gradient_matches_numpy():
    rng = np.random.default_rng(1)
    X, Z, A = rng.normal(size=(40, 5)), rng.normal(size=(3, 5)), rng.normal(size=(40, 3))
    K = rbf(X, Z, 0.2)
    G = _core.kernel_basis_grad(X, Z, K, A, "rbf", 0.2)
    ref = np.stack([2 * 0.2 * ((A[:, k] * K[:, k])[:, None] * (X - Z[k])).sum(0) for k in range(3)])
    np.testing.assert_allclose(G, ref, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(
        _core.kernel_basis_grad(X, Z, X @ Z.T, A, "linear", 1.0), A.T @ X, rtol=1e-12
    )


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_dense_and_csr_kernels_agree(kernel):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 20))
    X[rng.random(X.shape) < 0.8] = 0.0
    bag_ptr = np.array([0, 5, 6, 120, 200, 300], dtype=np.int64)
    Z = rng.normal(size=(7, 20))
    Kd, Md = _core.kernel_bag_means(X, bag_ptr, Z, kernel, 0.1)
    Ks, Ms = _core.kernel_bag_means(csr_tuple(X), bag_ptr, Z, kernel, 0.1)
    np.testing.assert_allclose(Ks, Kd, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Ms, Md, rtol=1e-12, atol=1e-14)
    A = rng.normal(size=Kd.shape)
    Gd = _core.kernel_basis_grad(X, Z, Kd, A, kernel, 0.1)
    Gs = _core.kernel_basis_grad(csr_tuple(X), Z, Ks, A, kernel, 0.1)
    np.testing.assert_allclose(Gs, Gd, rtol=1e-11, atol=1e-12)


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(3)
    X, bag_ptr = stacked_bags(rng, 30, 400, 12)
    Z = rng.normal(size=(9, 12))
    A = rng.normal(size=(len(X), 9))
    ref = None
    for threads in (1, 2, 4):
        K, M = _core.kernel_bag_means(X, bag_ptr, Z, "rbf", 0.05, threads)
        G = _core.kernel_basis_grad(X, Z, K, A, "rbf", 0.05, threads)
        Ks, Ms = _core.kernel_bag_means(csr_tuple(X), bag_ptr, Z, "rbf", 0.05, threads)
        Gs = _core.kernel_basis_grad(csr_tuple(X), Z, K, A, "rbf", 0.05, threads)
        out = [K, M, G, Ks, Ms, Gs]
        if ref is None:
            ref = out
        for a, b in zip(out, ref):
            assert np.array_equal(a, b)


@given(
    bag_sets(max_bags=10, max_d=4, max_size=5),
    st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.0]), min_size=1, max_size=3),
    st.sampled_from(["NSK", "sMIL", "MIKernel", "SIL"]),
    st.booleans(),
)
def test_features_constant_over_the_training_instances_change_no_bit_of_the_fit(
    bag_set, constants, name, f32
):
    """The Gaussian kernel matrix of the training instances leaves out features constant over
    them (the set-kernel Gram of NSK, sMIL and MI-Kernel; SIL's stored instance kernel): the fit
    on the data with constant features put among the others has the dual coefficients of the
    fit without them, bit for bit, and the same scores to rounding (scoring uses every
    feature); float32 data the same."""
    import milsvm

    X, ptr, y = bag_set
    wide = X.copy()
    for k, c in enumerate(constants):
        wide = np.insert(wide, (k * 2) % (wide.shape[1] + 1), c, axis=1)
    dtype = np.float32 if f32 else np.float64

    def as_list(A):
        return [A[ptr[i] : ptr[i + 1]].astype(dtype) for i in range(len(ptr) - 1)]

    est = getattr(milsvm, name)(C=10.0, gamma=0.4)
    narrow_fit, wide_fit = clone(est).fit(as_list(X), y), clone(est).fit(as_list(wide), y)
    attr = "coef_" if name == "MIKernel" else "dual_coef_"
    np.testing.assert_array_equal(getattr(wide_fit, attr), getattr(narrow_fit, attr))
    np.testing.assert_allclose(
        wide_fit.decision_function(as_list(wide)),
        narrow_fit.decision_function(as_list(X)),
        rtol=1e-9,
        atol=1e-9,
    )
