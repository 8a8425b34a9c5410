"""MI-Kernel and RS (Fu et al.'s dense and reduced-set baselines).

The numbers are checked against independent computations written here: the set kernel against
a NumPy double loop over bag pairs, MI-Kernel's optimum against SciPy on the same squared-hinge
problem, Lemma 1 against SparseMI's inner problem with every training instance as an expansion
vector, and the reduced-set residual against kernel values. Then the scikit-learn contract and
input validation.
"""

import json

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import (
    assert_clone_and_pickle,
    assert_refuses_bad_bags,
    bag_sets,
    core_sparse_mi_fit,
    easy_bags,
    random_bags,
    three_class_bags,
)
from hypothesis import given
from hypothesis import strategies as st
from milsvm import Bags, BagStandardScaler, MIKernel, ReducedSet, _core
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline

# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------


def rbf(A, B, gamma):
    """Gaussian kernel matrix between the rows of A and B."""
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def set_kernel_loop(bags_a, bags_b, k):
    """K[i, j] = (1 / (n_i n_j)) sum_p sum_q k(x_ip, x_jq), one bag pair at a time."""
    K = np.zeros((len(bags_a), len(bags_b)))
    for i, A in enumerate(bags_a):
        for j, B in enumerate(bags_b):
            total = 0.0
            for p in range(A.shape[0]):
                for q in range(B.shape[0]):
                    total += k(A[p], B[q])
            K[i, j] = total / (A.shape[0] * B.shape[0])
    return K


def split(X, bag_ptr):
    return [X[bag_ptr[i] : bag_ptr[i + 1]] for i in range(len(bag_ptr) - 1)]


def core(X, bag_ptr):
    """Instances in the form the core takes (dense array or CSR tuple)."""
    return Bags(X, np.asarray(bag_ptr, dtype=np.int64)).core_instances()


def squared_hinge(K, t, C, ridge=0.0):
    """``(alpha, b) -> (value, gradient)`` of 1/2 a^T (K + ridge I) a + C sum max(0, 1 - t (K a +
    b))^2."""
    Kr = K + ridge * np.eye(len(K))

    def f(v):
        a, b = v[:-1], v[-1]
        xi = np.maximum(0.0, 1.0 - t * (K @ a + b))
        dl = -2.0 * C * t * xi  # C l'(t, F)
        return 0.5 * a @ Kr @ a + C * xi @ xi, np.concatenate([Kr @ a + K @ dl, [dl.sum()]])

    return f


def scipy_minimum(K, t, C, ridge=0.0):
    f = squared_hinge(K, t, C, ridge)
    best = None
    for method in ("BFGS", "L-BFGS-B"):
        res = minimize(
            f,
            np.zeros(len(K) + 1),
            jac=True,
            method=method,
            options={"gtol": 1e-13, "maxiter": 20000}
            if method == "BFGS"
            else {"ftol": 1e-16, "gtol": 1e-13, "maxiter": 20000},
        )
        if best is None or res.fun < best.fun:
            best = res
    return best


def separated_bags(seed=1):
    """Instances on a grid of spacing 2 (nearly orthogonal in feature space for gamma = 2)."""
    rng = np.random.default_rng(seed)
    grid = np.array([(i, j) for i in range(6) for j in range(6)], float) * 2.0
    rng.shuffle(grid)
    bags, y, k = [], [], 0
    for i in range(10):
        n = int(rng.integers(1, 4))
        bags.append(grid[k : k + n] + rng.normal(0, 0.1, size=(n, 2)))
        k += n
        y.append(i % 2)
    return bags, np.array(y)


# ---------------------------------------------------------------------------------------------
# The set kernel
# ---------------------------------------------------------------------------------------------


@given(st.data())
def test_set_kernel_matches_double_loop_dense_and_csr(data):
    Xa, pa, _ = data.draw(bag_sets(max_bags=6, max_d=4, max_size=4))
    d = Xa.shape[1]
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    Xb = rng.normal(size=(sum(sizes), d))
    Xa[np.abs(Xa) < 0.4] = 0.0  # some structural zeros for the CSR form
    Xb[np.abs(Xb) < 0.4] = 0.0
    pb = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gamma = data.draw(st.floats(0.05, 3.0))
    ref = set_kernel_loop(
        split(Xa, pa), split(Xb, pb), lambda x, z: np.exp(-gamma * np.sum((x - z) ** 2))
    )
    K = _core.set_kernel_matrix(core(Xa, pa), pa, core(Xb, pb), pb, "rbf", gamma)
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-14)
    Ks = _core.set_kernel_matrix(
        core(sp.csr_matrix(Xa), pa), pa, core(sp.csr_matrix(Xb), pb), pb, "rbf", gamma
    )
    np.testing.assert_allclose(Ks, ref, rtol=1e-12, atol=1e-14)
    Kl = _core.set_kernel_matrix(core(Xa, pa), pa, core(Xb, pb), pb, "linear", 1.0)
    np.testing.assert_allclose(
        Kl, set_kernel_loop(split(Xa, pa), split(Xb, pb), np.dot), rtol=1e-12, atol=1e-12
    )


def test_set_kernel_is_identical_for_any_thread_count():
    bags, _ = random_bags(3, n_bags=220, d=5, max_size=6)  # several parallel row chunks
    B = milsvm.as_bags(bags)
    out = [
        _core.set_kernel_matrix(
            B.core_instances(), B.bag_ptr, B.core_instances(), B.bag_ptr, "rbf", 0.3, n_jobs=j
        )
        for j in (1, 2, 4)
    ]
    for K in out[1:]:
        np.testing.assert_array_equal(K, out[0])
    np.testing.assert_allclose(
        out[0][:5, :7],
        set_kernel_loop(bags[:5], bags[:7], lambda x, z: np.exp(-0.3 * np.sum((x - z) ** 2))),
        rtol=1e-12,
    )
    # a CSR copy of the same bags gives the same kernel up to rounding
    S = Bags(sp.csr_matrix(B.X), B.bag_ptr)
    Ks = _core.set_kernel_matrix(
        S.core_instances(), S.bag_ptr, B.core_instances(), B.bag_ptr, "rbf", 0.3, n_jobs=2
    )
    np.testing.assert_allclose(Ks, out[0], rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# MI-Kernel: the optimum, the dual weights, Lemma 1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed, C", [(0, 1.0), (1, 10.0), (2, 0.3), (3, 100.0)])
def test_mi_kernel_reaches_scipys_optimum(seed, C):
    bags, y = random_bags(seed, n_bags=14, d=3, max_size=4)
    gamma = 0.4
    K = set_kernel_loop(bags, bags, lambda x, z: np.exp(-gamma * np.sum((x - z) ** 2)))
    t = np.where(y == 1, 1.0, -1.0)
    clf = MIKernel(C=C, gamma=gamma).fit(bags, y)
    # the problem of Lemma 1 (no ridge): the reported objective is its minimum
    ref = scipy_minimum(K, t, C)
    assert clf.objective_[0] == pytest.approx(ref.fun, rel=1e-8)
    assert clf.objective_[0] == pytest.approx(
        squared_hinge(K, t, C)(np.append(clf.coef_, clf.intercept_))[0], rel=1e-12
    )
    # the ridged problem the solver minimised
    B = milsvm.as_bags(bags)
    out = _core.fit_mi_kernel(
        B.core_instances(),
        B.bag_ptr,
        y.astype(np.int64),
        {"C": C, "kernel": "rbf", "gamma": gamma, "solver": "newton"},
    )
    ref_ridge = scipy_minimum(K, t, C, ridge=1e-8)
    assert out.ridged_objective[0] == pytest.approx(ref_ridge.fun, rel=1e-8)
    # same bag scores as SciPy's minimiser (w is unique even where alpha is not)
    F_ref = K @ ref.x[:-1] + ref.x[-1]
    np.testing.assert_allclose(
        clf.decision_function(bags), F_ref, atol=1e-5 * max(1.0, np.abs(F_ref).max())
    )
    # the L-BFGS solver reaches the same optimum
    lb = MIKernel(C=C, gamma=gamma, solver="lbfgs").fit(bags, y)
    assert lb.objective_[0] == pytest.approx(ref.fun, rel=1e-6)


@given(bag_sets(max_bags=10, max_d=3, max_size=4), st.sampled_from([0.1, 1.0, 30.0]))
def test_mi_kernel_coefficients_are_the_dual_weights(bag_set, C):
    X, bag_ptr, labels = bag_set
    bags = split(X, bag_ptr)
    clf = MIKernel(C=C, gamma=0.5).fit(bags, labels)
    t = np.where(labels == 1, 1.0, -1.0)
    F = clf.decision_function(bags)
    # KKT of the squared-hinge SVM: coef_i = y_i alpha_i^dual = 2 C y_i max(0, 1 - y_i F_i)
    np.testing.assert_allclose(
        clf.coef_, 2 * C * t * np.maximum(0.0, 1.0 - t * F), atol=1e-6 * C * (1 + np.abs(F).max())
    )
    assert abs(clf.coef_.sum()) <= 1e-6 * C * len(t)  # dJ/db = 0
    # support = bags inside the margin; XVs = their instances (Fu et al. 2011, eq. 13)
    np.testing.assert_array_equal(clf.support_, np.flatnonzero(clf.coef_ != 0.0))
    assert np.all(t[clf.support_] * F[clf.support_] < 1.0 + 1e-9)
    assert clf.n_xv_ == int(np.diff(bag_ptr)[clf.support_].sum())


def test_mi_kernel_support_is_sparse_on_separable_data():
    bags, y = easy_bags(n_bags=30)
    clf = MIKernel(C=100.0, gamma=0.5).fit(bags, y)
    n_inst = sum(len(b) for b in bags)
    assert 0 < len(clf.support_) < len(bags) and clf.n_xv_ < n_inst
    # the compiled model keeps only the support bags' instances (Lemma 1: coef_i / n_i each), and
    # scores like the set-kernel SVM over all the training bags, F = K_set coef + b
    assert clf.model_.n_xv == clf.n_xv_
    B = milsvm.as_bags(bags)
    K = _core.set_kernel_matrix(
        B.core_instances(), B.bag_ptr, B.core_instances(), B.bag_ptr, "rbf", clf.gamma_
    )
    np.testing.assert_allclose(
        clf.decision_function(bags), K @ clf.coef_ + clf.intercept_, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lemma1_mi_kernel_is_the_label_mean_svm_over_all_instances(seed):
    """Lemma 1 (Fu et al. 2011): the label-mean SVM with every training instance as an expansion
    vector is the set-kernel SVM. SparseMI's inner problem (``max_iter=0``, ``init_xv`` = all
    instances) parametrises w by one coefficient per instance (N of them), MI-Kernel by one per
    bag; both minimise the same function of (w, b), but each adds its own 1e-8 ridge to its
    own coefficients and the ridges differ, so w agrees only up to that O(1e-8) perturbation:
    decision values are compared to 1e-6 on a small, well-conditioned case (the objectives to
    1e-6 relative)."""
    bags, y = random_bags(seed, n_bags=12, d=2, max_size=3)
    gamma, C = 0.5, 1.0
    B = milsvm.as_bags(bags)
    X = B.X
    out = core_sparse_mi_fit(
        bags, y, n_xv=len(X), C=C, gamma=gamma, max_iter=0, max_line_search=1, init_xv=X
    )
    dense = out.model.decision_function(X, B.bag_ptr)[:, 0]
    clf = MIKernel(C=C, gamma=gamma).fit(bags, y)
    np.testing.assert_allclose(clf.decision_function(bags), dense, atol=1e-6)
    assert clf.intercept_ == pytest.approx(float(out.model.intercept[0]), abs=1e-6)
    assert clf.objective_[0] == pytest.approx(out.objective_history[0], rel=1e-6)
    # and on new bags
    new, _ = random_bags(seed + 10, n_bags=5, d=2)
    N = milsvm.as_bags(new)
    dn = out.model.decision_function(N.X, N.bag_ptr)[:, 0]
    np.testing.assert_allclose(clf.decision_function(new), dn, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# RS
# ---------------------------------------------------------------------------------------------


def instance_coefficients(mik, bags):
    """a_t = coef_i / n_i for every training instance (MI-Kernel's w as an instance expansion)."""
    return np.concatenate([np.full(len(b), c / len(b)) for b, c in zip(bags, mik.coef_)])


def residual(mik, rs, bags):
    X = np.concatenate(bags)
    a = instance_coefficients(mik, bags)
    g, Z, gam = mik.gamma_, rs.xv_, rs.coef_
    return a @ rbf(X, X, g) @ a - 2 * gam @ rbf(Z, X, g) @ a + gam @ rbf(Z, Z, g) @ gam


def test_rs_residual_decreases_with_n_xv():
    bags, y = random_bags(4, n_bags=16, d=3, max_size=4)
    C, gamma = 3.0, 0.3
    mik = MIKernel(C=C, gamma=gamma).fit(bags, y)
    X = np.concatenate(bags)
    a = instance_coefficients(mik, bags)
    w2 = a @ rbf(X, X, gamma) @ a
    res, fits = [], []
    for n in (1, 2, 4, 8, 16):
        rs = ReducedSet(n_xv=n, C=C, gamma=gamma, random_state=0).fit(bags, y)
        r = residual(mik, rs, bags)
        # the residual computed from kernel values is the one the construction records
        assert rs.residual_history_[0] == pytest.approx(w2, rel=1e-10)
        assert r == pytest.approx(rs.residual_history_[-1], rel=1e-6, abs=1e-10 * w2)
        assert np.all(np.diff(rs.residual_history_) <= 1e-12 * w2)
        res.append(r)
        fits.append(rs)
    assert np.all(np.diff(res) < 0), res
    assert res[-1] < 0.1 * w2 and res[-1] < res[0] / 5, res
    # greedy: a larger fit extends a smaller one with the same seed
    np.testing.assert_array_equal(fits[-1].xv_[:8], fits[-2].xv_)
    # the coefficients are the optimal projection K_zz gamma = K_zx a
    Z = fits[-1].xv_
    np.testing.assert_allclose(
        rbf(Z, Z, gamma) @ fits[-1].coef_, rbf(Z, X, gamma) @ a, rtol=1e-6, atol=1e-8
    )


def test_rs_with_the_support_instances_reproduces_mi_kernel():
    # well-separated instances: the residual's maxima sit on the instances, and n_xv = the
    # number of MI-Kernel's XVs represents w (and hence the model) almost exactly
    bags, y = separated_bags()
    mik = MIKernel(C=1.0, gamma=2.0).fit(bags, y)
    rs = ReducedSet(n_xv=mik.n_xv_, C=1.0, gamma=2.0, random_state=0).fit(bags, y)
    d = mik.decision_function(bags)
    assert rs.residual_history_[-1] < 1e-5 * rs.residual_history_[0]
    np.testing.assert_allclose(rs.decision_function(bags), d, atol=1e-4 * np.abs(d).max())
    assert rs.intercept_ == pytest.approx(mik.intercept_, abs=1e-4)
    # on any bag, |F_MIK - F_RS| <= ||w - w_RS|| ||mean_p phi(x_p)|| + |db| <= sqrt(residual) + |db|
    # (Cauchy-Schwarz; k(x, x) = 1)
    bound = np.sqrt(rs.residual_history_[-1]) + abs(rs.intercept_ - mik.intercept_) + 1e-9
    new, _ = random_bags(0, n_bags=6, d=2)
    new = [5.0 + 2.0 * b for b in new]
    assert np.all(np.abs(rs.decision_function(new) - mik.decision_function(new)) <= bound)
    # overlapping instances: close, and closer with more vectors
    bags, y = random_bags(1, n_bags=12, d=2, max_size=3)
    mik = MIKernel(C=1.0, gamma=0.5).fit(bags, y)
    d = mik.decision_function(bags)
    err = [
        np.abs(
            ReducedSet(n_xv=n, C=1.0, gamma=0.5, random_state=0)
            .fit(bags, y)
            .decision_function(bags)
            - d
        ).max()
        for n in (1, mik.n_xv_)
    ]
    assert err[1] < 0.05 * np.abs(d).max() and err[1] < err[0] / 5, err


def test_rs_intercept_minimises_the_loss_with_the_coefficients_fixed():
    bags, y = random_bags(5, n_bags=20, d=3, max_size=4)
    t = np.where(y == 1, 1.0, -1.0)
    for n in (1, 3, 10):
        rs = ReducedSet(n_xv=n, C=2.0, gamma=0.5, random_state=1).fit(bags, y)
        s = rs.decision_function(bags) - rs.intercept_

        def loss(b):
            return np.sum(np.maximum(0.0, 1.0 - t * (s + b)) ** 2)

        for db in (1e-4, -1e-4, 1e-2, -1e-2):
            assert loss(rs.intercept_) <= loss(rs.intercept_ + db) + 1e-12


def test_rs_multiclass_approximates_the_binary_mi_kernels():
    """Multi-class RS shares its vectors between the outputs, so its columns are not binary RS
    fits. What holds instead: the MI-Kernel it approximates is the binary MI-Kernels of each
    class against the rest (``dense_n_xv_`` counts the instances of their support bags and
    ``residual_history_[0]`` is ``sum_c ||w_c||^2`` of theirs); entry k of the history is
    ``sum_c ||w_c - P_k w_c||^2`` for the projection onto the first k vectors (coefficients
    re-projected, ``K_zz g_c = K_zx a_c``), so it is non-increasing; ``coef_`` is the projection
    onto all of them; and each intercept minimises its class-vs-rest squared-hinge loss with
    the coefficients fixed, the scores being ``mean_p k(x_p, Z) coef_c + b_c``."""
    from scipy.optimize import minimize_scalar

    bags, y = three_class_bags()
    C = 10.0
    rs = ReducedSet(n_xv=6, C=C, random_state=0).fit(bags, y)
    g = rs.gamma_
    X = np.concatenate(bags)
    A, support = [], set()
    for label in rs.classes_:
        mik = MIKernel(C=C, gamma=g).fit(bags, (y == label).astype(np.int64))
        A.append(instance_coefficients(mik, bags))
        support |= set(mik.support_.tolist())
    A = np.array(A).T  # instances x outputs
    assert rs.dense_n_xv_ == sum(len(bags[i]) for i in support)  # the instances of the support bags
    w2 = np.einsum("tc,ts,sc->", A, rbf(X, X, g), A)
    hist = rs.residual_history_
    assert len(hist) == len(rs.xv_) + 1 and rs.coef_.shape == (3, len(rs.xv_))
    assert hist[0] == pytest.approx(w2, rel=1e-10)
    for k in range(1, len(hist)):
        Z = rs.xv_[:k]
        P = rbf(Z, X, g) @ A  # <w_c, phi(z_j)>
        G = np.linalg.solve(rbf(Z, Z, g), P)
        assert hist[k] == pytest.approx(max(w2 - np.sum(P * G), 0.0), rel=1e-8, abs=1e-10 * w2), k
    assert np.all(np.diff(hist) <= 1e-12 * w2) and hist[-1] < 0.5 * hist[0]
    np.testing.assert_allclose(rs.coef_, G.T, rtol=1e-6, atol=1e-8)
    M = np.array([rbf(b, rs.xv_, g).mean(0) for b in bags])
    np.testing.assert_allclose(
        rs.decision_function(bags), M @ rs.coef_.T + rs.intercept_, rtol=1e-12, atol=1e-12
    )
    for c, label in enumerate(rs.classes_):
        t = np.where(y == label, 1.0, -1.0)
        s = M @ rs.coef_[c]

        def loss(b):
            return np.sum(np.maximum(0.0, 1.0 - t * (s + b)) ** 2)

        best = minimize_scalar(loss, bracket=(-5.0, 5.0), options={"xtol": 1e-14})
        assert loss(rs.intercept_[c]) <= best.fun + 1e-12
        for db in (1e-4, -1e-4, 1e-2, -1e-2):
            assert loss(rs.intercept_[c]) <= loss(rs.intercept_[c] + db) + 1e-12


def test_rs_predicts_through_the_shared_model_path(tmp_path):
    bags, y = easy_bags()
    rs = ReducedSet(n_xv=3, C=10.0, random_state=0).fit(bags, y)
    B = milsvm.as_bags(bags)
    raw = _core.Model(
        rs.xv_, rs.coef_[None, :], np.array([rs.intercept_]), "rbf", rs.gamma_, 2
    ).decision_function(B.X, B.bag_ptr)
    np.testing.assert_array_equal(rs.decision_function(bags), raw[:, 0])
    # f(x) = sum_k coef_k k(xv_k, x) + b, bag score = mean
    f = [np.mean(rbf(b, rs.xv_, rs.gamma_) @ rs.coef_) + rs.intercept_ for b in bags]
    np.testing.assert_allclose(rs.decision_function(bags), f, rtol=1e-12, atol=1e-12)
    # the saved file is the versioned model JSON
    path = tmp_path / "rs.json"
    rs.save(path)
    back = _core.Model.from_json(path.read_text())
    np.testing.assert_array_equal(back.xv, rs.xv_)
    assert json.loads(path.read_text())["estimator"] == "ReducedSet"
    assert accuracy(rs, bags, y) == 1.0


def accuracy(clf, bags, y):
    return float(np.mean(clf.predict(bags) == y))


# ---------------------------------------------------------------------------------------------
# scikit-learn contract
# ---------------------------------------------------------------------------------------------

ESTIMATORS = [MIKernel(C=1.0), ReducedSet(n_xv=4, random_state=0)]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_clone_params_and_pickle(est):
    bags = assert_clone_and_pickle(est)
    with pytest.raises(NotFittedError):
        clone(est).predict(bags)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("labels", [(-1, 1), (0, 1), ("cat", "dog")])
def test_any_two_labels(est, labels):
    bags, y01 = easy_bags()
    y = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[y01]
    clf = clone(est).set_params(C=10.0).fit(bags, y)
    assert list(clf.classes_) == sorted(labels)
    scores = clf.decision_function(bags)
    assert scores.shape == (len(bags),)
    pred = clf.predict(bags)
    np.testing.assert_array_equal(pred, clf.classes_[(scores > 0).astype(int)])
    assert np.mean(pred == y) == 1.0


def test_fitted_attributes():
    bags, y = easy_bags()
    mik = MIKernel(C=10.0).fit(bags, y)
    X = np.concatenate(bags)
    assert mik.coef_.shape == (len(bags),) and isinstance(mik.intercept_, float)
    assert mik.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert (
        mik.n_features_in_ == 2
        and isinstance(mik.model_, milsvm.Model)
        and not hasattr(mik, "X_fit_")
    )
    assert mik.support_.dtype.kind == "i" and mik.n_xv_ <= len(X)
    rs = ReducedSet(n_xv=5, C=10.0, gamma=0.7, random_state=0).fit(bags, y)
    assert rs.xv_.shape == (5, 2) and rs.coef_.shape == (5,) and isinstance(rs.intercept_, float)
    assert rs.gamma_ == 0.7 and rs.dense_n_xv_ == MIKernel(C=10.0, gamma=0.7).fit(bags, y).n_xv_
    assert len(rs.residual_history_) == 6 and rs.n_iter_ >= 0


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_grid_search_and_cross_val_score_over_bags(est):
    bags, y = easy_bags(n_bags=30)
    pipe = make_pipeline(BagStandardScaler(), clone(est))
    scores = cross_val_score(pipe, bags, y, cv=StratifiedKFold(3, shuffle=True, random_state=0))
    assert scores.mean() > 0.9
    gs = GridSearchCV(clone(est), {"C": [0.1, 10.0], "gamma": ["scale", 0.5]}, cv=3).fit(bags, y)
    assert gs.best_params_["C"] in (0.1, 10.0)
    assert gs.score(bags, y) > 0.9
    stacked = Bags.from_instances(np.concatenate(bags), [len(b) for b in bags])
    assert cross_val_score(clone(est), stacked, y, cv=3).mean() > 0.8


def test_multiclass_and_one_vs_rest_cross_check():
    bags, y = three_class_bags()
    mik = MIKernel(C=10.0).fit(bags, y)
    assert mik.coef_.shape == (3, len(bags)) and mik.intercept_.shape == (3,)
    assert mik.decision_function(bags).shape == (len(bags), 3)
    assert accuracy(mik, bags, y) == 1.0
    # the one-vs-rest problems are independent and share only K_set: sklearn's OvR over binary
    # MI-Kernels gives the same scores
    ovr = OneVsRestClassifier(MIKernel(C=10.0, gamma=mik.gamma_)).fit(bags, y)
    np.testing.assert_allclose(
        ovr.decision_function(bags), mik.decision_function(bags), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_array_equal(ovr.predict(bags), mik.predict(bags))
    # a bag is a support bag if any class uses it
    assert set(mik.support_) == set(np.flatnonzero(np.any(mik.coef_ != 0, axis=0)))
    # RS shares its vectors between the classes
    rs = ReducedSet(n_xv=6, C=10.0, random_state=0).fit(bags, y)
    assert rs.xv_.shape == (6, 2) and rs.coef_.shape == (3, 6) and rs.intercept_.shape == (3,)
    assert rs.decision_function(bags).shape == (len(bags), 3)
    assert accuracy(rs, bags, y) == 1.0
    # with as many vectors as MI-Kernel has, RS agrees with it on every bag
    big = ReducedSet(n_xv=mik.n_xv_, C=10.0, random_state=0).fit(bags, y)
    np.testing.assert_array_equal(big.predict(bags), mik.predict(bags))
    ovr_rs = OneVsRestClassifier(ReducedSet(n_xv=6, C=10.0, random_state=0)).fit(bags, y)
    assert accuracy(ovr_rs, bags, y) == 1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda j: MIKernel(C=5.0, n_jobs=j),
        lambda j: ReducedSet(n_xv=5, C=5.0, random_state=2, n_jobs=j),
    ],
)
def test_reproducible_for_any_thread_count(make):
    bags, y = random_bags(9, n_bags=120, d=4, max_size=8)
    fits = [make(j).fit(bags, y) for j in (1, 2, 4)]
    attrs = ("coef_", "intercept_") + (("xv_",) if hasattr(fits[0], "xv_") else ("support_",))
    for f in fits[1:]:
        for a in attrs:
            np.testing.assert_array_equal(getattr(f, a), getattr(fits[0], a))
        np.testing.assert_array_equal(f.decision_function(bags), fits[0].decision_function(bags))


def test_dense_sparse_and_bags_container_give_the_same_model():
    bags, y = random_bags(7, n_bags=20, d=5)
    for b in bags:
        b[np.abs(b) < 0.6] = 0.0
    sparse_bags = [sp.csr_matrix(b) for b in bags]
    stacked_sparse = Bags.from_instances(
        sp.csr_matrix(np.concatenate(bags)), [len(b) for b in bags]
    )
    ref = MIKernel(C=3.0).fit(bags, y)
    for data in (sparse_bags, stacked_sparse):
        m = MIKernel(C=3.0).fit(data, y)
        np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(
            m.decision_function(sparse_bags), ref.decision_function(bags), rtol=1e-8, atol=1e-10
        )
    rs = ReducedSet(n_xv=4, C=3.0, random_state=0)
    a, b = clone(rs).fit(bags, y), clone(rs).fit(sparse_bags, y)
    np.testing.assert_allclose(b.xv_, a.xv_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        b.decision_function(sparse_bags), a.decision_function(bags), rtol=1e-6, atol=1e-8
    )


def test_musk1_accuracy(musk1):
    bags, y = musk1
    cv = StratifiedKFold(10, shuffle=True, random_state=0)
    pipe = make_pipeline(BagStandardScaler(), MIKernel(C=10.0, gamma=1 / 166))
    assert cross_val_score(pipe, bags, y, cv=cv).mean() > 0.8
    pipe = make_pipeline(
        BagStandardScaler(), ReducedSet(n_xv=10, C=10.0, gamma=1 / 166, random_state=0)
    )
    assert (
        cross_val_score(pipe, bags, y, cv=StratifiedKFold(3, shuffle=True, random_state=0)).mean()
        > 0.75
    )


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "est, exc, match",
    [
        (MIKernel(C=0.0), ValueError, "C must be"),
        (MIKernel(C=-1.0), ValueError, "C must be"),
        (MIKernel(C=float("nan")), ValueError, "C must be"),
        (MIKernel(C="1"), TypeError, "C must be a real number"),
        (MIKernel(gamma=-2.0), ValueError, "gamma"),
        (MIKernel(gamma="auto"), ValueError, "gamma"),
        (MIKernel(kernel="poly"), ValueError, "kernel must be"),
        (MIKernel(solver="cg"), ValueError, "solver must be"),
        (MIKernel(n_jobs=0), ValueError, "n_jobs"),
        (MIKernel(n_jobs=1.5), TypeError, "n_jobs"),
        (ReducedSet(kernel="linear"), ValueError, "rbf"),
        (ReducedSet(n_xv=0), ValueError, "n_xv must be"),
        (ReducedSet(n_xv=-3), ValueError, "n_xv"),
        (ReducedSet(n_xv=2.5), TypeError, "n_xv must be an integer"),
        (ReducedSet(n_restarts=0), ValueError, "n_restarts must be"),
        (ReducedSet(inner_max_iter=-1), ValueError, "inner_max_iter"),
        (ReducedSet(inner_max_iter=None), TypeError, "inner_max_iter"),
        (ReducedSet(C=np.inf), ValueError, "C must be"),
        (ReducedSet(gamma=0.0), ValueError, "gamma"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_params_name_the_problem(est, exc, match):
    bags, y = easy_bags()
    with pytest.raises(exc, match=match):
        est.fit(bags, y)


@pytest.mark.parametrize("cls", [MIKernel, ReducedSet])
def test_bad_input_names_the_problem(cls):
    bags, y = easy_bags()
    clf = assert_refuses_bad_bags(lambda: cls(C=10.0), bags, y)
    with pytest.raises(ValueError, match="labels for"):
        cls().fit(bags, y[:-1])
    with pytest.raises(TypeError, match="list of 2-D arrays"):
        cls().fit(np.ones((4, 2)), y[:4])
    with pytest.raises(ValueError, match="non-finite"):
        clf.predict([np.full((2, 2), np.inf)])


def test_core_rejects_a_bad_set_kernel_width():
    bags, _ = easy_bags()
    T = milsvm.as_bags(bags)
    with pytest.raises(ValueError, match="gamma"):
        _core.set_kernel_matrix(
            T.core_instances(), T.bag_ptr, T.core_instances(), T.bag_ptr, "rbf", -1.0
        )
