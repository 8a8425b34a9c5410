"""NSK, sMIL, SVMCC and OneClassMISVM: the methods solved by the dual SMO, against scikit-learn's
SVC / OneClassSVM on the same problem, scipy references of their sub-steps, bad input and the
estimator contract."""

import pickle
import warnings

import milsvm
import milsvm.datasets
import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from conftest import assert_one_vs_rest, easy_bags, random_bags
from hypothesis import example, given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.svm import SVC


def rbf(a, b, gamma):
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    return np.exp(-gamma * np.maximum(d, 0))


def assert_saved_and_pickled(est, bags, path):
    """``est`` saved to ``path`` loads back as its class; the loaded model and a pickled copy give
    its decision values. Returns the loaded model."""
    est.save(path)
    back = milsvm.load(path)
    assert isinstance(back, type(est))
    assert np.allclose(back.decision_function(bags), est.decision_function(bags))
    assert np.allclose(
        pickle.loads(pickle.dumps(est)).decision_function(bags), est.decision_function(bags)
    )
    return back


def inst_kernel(a, b, kernel, gamma):
    a = a.toarray() if sp.issparse(a) else np.asarray(a, float)
    b = b.toarray() if sp.issparse(b) else np.asarray(b, float)
    return a @ b.T if kernel == "linear" else rbf(a, b, gamma)


def set_gram(A, B, kernel, gamma, norm="l1"):
    """NumPy reference of the normalised set kernel between two lists of bags."""
    K = np.array([[inst_kernel(a, b, kernel, gamma).mean() for b in B] for a in A])
    if norm == "l2":
        da = np.array([inst_kernel(a, a, kernel, gamma).mean() for a in A])
        db = np.array([inst_kernel(b, b, kernel, gamma).mean() for b in B])
        K = K / np.sqrt(np.outer(da, db))
    return K


def dual_objective(alpha, y, K, p):
    Q = (y[:, None] * y[None, :]) * K
    return 0.5 * alpha @ Q @ alpha - p @ alpha


# ------------------------------------------------------------------------------------------------
# NSK
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nsk_equals_svc_on_the_set_kernel(norm, kernel, seed):
    bags, y = random_bags(seed, n_bags=14, d=3, max_size=5)
    test, _ = random_bags(seed + 100, n_bags=6, d=3, max_size=5)
    gamma, C = 0.4, 2.0
    est = milsvm.NSK(C=C, kernel=kernel, gamma=gamma, norm=norm, inner_tol=1e-8).fit(bags, y)
    K = set_gram(bags, bags, kernel, gamma, norm)
    svc = SVC(kernel="precomputed", C=C, tol=1e-10).fit(K, y)
    Kt = set_gram(test + bags, bags, kernel, gamma, norm)
    ref = svc.decision_function(Kt)
    ours = est.decision_function(test + bags)
    scale = max(1.0, np.abs(ref).max())
    assert np.allclose(ours, ref, atol=1e-6 * scale), np.abs(ours - ref).max()
    # the same dual optimum
    alpha = np.zeros(len(bags))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    ys = np.where(y == 1, 1.0, -1.0)
    ref_obj = dual_objective(alpha, ys, K, np.ones(len(bags)))
    assert abs(est.objective_ - ref_obj) <= 1e-6 * max(1.0, abs(ref_obj))
    assert np.array_equal(est.predict(test), np.where(svc.decision_function(Kt[:6]) > 0, 1, 0))


def test_nsk_sparse_equals_dense():
    bags, y = random_bags(3, n_bags=12, d=6, sparse=True)
    dense = [b.toarray() for b in bags]
    a = milsvm.NSK(gamma=0.3, inner_tol=1e-8).fit(bags, y).decision_function(bags)
    b = milsvm.NSK(gamma=0.3, inner_tol=1e-8).fit(dense, y).decision_function(dense)
    assert np.allclose(a, b, atol=1e-9)


def test_nsk_class_weight_scales_bounds():
    bags, y = random_bags(4, n_bags=14)
    gamma = 0.5
    est = milsvm.NSK(C=1.0, gamma=gamma, class_weight={0: 2.0, 1: 0.5}, inner_tol=1e-8).fit(bags, y)
    K = set_gram(bags, bags, "rbf", gamma)
    svc = SVC(kernel="precomputed", C=1.0, class_weight={0: 2.0, 1: 0.5}, tol=1e-10).fit(K, y)
    assert np.allclose(est.decision_function(bags), svc.decision_function(K), atol=1e-6)


def test_nsk_multiclass_one_vs_rest():
    bags, y = milsvm.datasets.make_four_gaussians_bags(n_bags=45, random_state=0)
    y = np.asarray(y)
    est = milsvm.NSK(C=10.0).fit(bags, y)
    scores = est.decision_function(bags)
    assert scores.shape == (len(bags), len(np.unique(y)))
    assert est.score(bags, y) > 0.7
    assert_one_vs_rest(
        lambda: milsvm.NSK(C=10.0), bags, y, per_problem=("dual_coef_", "objective_", "n_support_")
    )


def test_nsk_easy_bags_save_load_pickle(tmp_path):
    bags, y = easy_bags(0)
    est = milsvm.NSK(C=10.0).fit(bags, y)
    assert est.score(bags, y) == 1.0
    assert_saved_and_pickled(est, bags, tmp_path / "m.json")
    l2 = milsvm.NSK(C=10.0, norm="l2").fit(bags, y)
    assert l2.score(bags, y) == 1.0
    back2 = assert_saved_and_pickled(l2, bags, tmp_path / "l2.json")
    assert back2.norm == "l2" and back2.model_.pooling == "normalized_mean"
    np.testing.assert_array_equal(back2.decision_function(bags), l2.decision_function(bags))
    assert clone(est).get_params() == est.get_params()


def test_nsk_bad_data():
    bags, y = random_bags(0)
    with pytest.raises(ValueError, match="labels for"):
        milsvm.NSK().fit(bags, y[:-1])
    with pytest.raises(ValueError, match="single class"):
        milsvm.NSK().fit(bags, np.zeros(len(bags)))
    bad = [b.copy() for b in bags]
    bad[0][0, 0] = np.nan
    with pytest.raises(ValueError, match="bag 0 has a non-finite value"):
        milsvm.NSK().fit(bad, y)
    est = milsvm.NSK().fit(bags, y)
    with pytest.raises(ValueError, match="bags have 5 features, but the model was fitted on 3"):
        est.decision_function([np.ones((2, 5))])


def test_nsk_max_iter_warns():
    bags, y = random_bags(1, n_bags=20)
    with pytest.warns(Warning, match="max_iter"):
        milsvm.NSK(inner_max_iter=1, inner_tol=1e-9).fit(bags, y)


# ------------------------------------------------------------------------------------------------
# sMIL
# ------------------------------------------------------------------------------------------------


def smil_reference(bags, y, C, gamma):
    """sMIL's dual by SLSQP: units = positive bags + negative instances."""
    units, uy, p = [], [], []
    for b, lab in zip(bags, y):
        if lab == 1:
            units.append(b)
            uy.append(1.0)
            p.append((2.0 - len(b)) / len(b))
        else:
            for row in b:
                units.append(row[None, :])
                uy.append(-1.0)
                p.append(1.0)
    uy, p = np.array(uy), np.array(p)
    K = set_gram(units, units, "rbf", gamma)
    Q = uy[:, None] * uy[None, :] * K
    n = len(uy)
    r = so.minimize(
        lambda a: 0.5 * a @ Q @ a - p @ a,
        np.full(n, 0.0),
        jac=lambda a: Q @ a - p,
        method="SLSQP",
        bounds=[(0, C)] * n,
        constraints=[{"type": "eq", "fun": lambda a: uy @ a, "jac": lambda a: uy}],
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return r.fun, r.x, units, uy, K


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_smil_dual_matches_slsqp(seed):
    bags, y = random_bags(seed, n_bags=8, d=2, max_size=4)
    C, gamma = 1.5, 0.7
    est = milsvm.sMIL(C=C, gamma=gamma, inner_tol=1e-9, bag_score="mean_offset").fit(bags, y)
    ref_obj, ref_alpha, units, uy, K = smil_reference(bags, y, C, gamma)
    assert est.objective_ <= ref_obj + 1e-7 * max(1, abs(ref_obj))
    assert abs(est.objective_ - ref_obj) <= 1e-5 * max(1, abs(ref_obj))
    # the weight vector (hence the bag-mean scores without bias; the bag score "mean_offset"
    # has no per-bag shift, its threshold is in the bias) agrees
    f_ours = est.decision_function(units) - est.intercept_
    f_ref = K @ (ref_alpha * uy)
    assert np.allclose(f_ours, f_ref, atol=1e-4)


def test_smil_easy_and_contract(tmp_path):
    bags, y = easy_bags(1)
    est = milsvm.sMIL(C=10.0, bag_score="mean_platt").fit(bags, y)
    # the relaxed positive margin ranks the bags perfectly, and a learnt threshold on the plain
    # mean (tests/test_smil_bag_score.py has every rule) classifies them
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(y, est.decision_function(bags)) == 1.0
    assert est.score(bags, y) == 1.0
    assert est.model_.pooling == "mean"
    mean = est.decision_function(bags)
    np.testing.assert_allclose(
        mean, [np.mean(est.model_.instance_decision_function(b)) for b in bags], rtol=1e-10
    )
    assert_saved_and_pickled(est, bags, tmp_path / "s.json")
    with pytest.raises(ValueError, match="C must be"):
        milsvm.sMIL(C=-2).fit(bags, y)


# ------------------------------------------------------------------------------------------------
# SVMCC
# ------------------------------------------------------------------------------------------------


def lp_reference(pos_scores, cp, neg_scores, cn):
    """SVM-CC's LP with w fixed by scipy's linprog: variables v (per bag, simplex), b, xi."""
    sizes = [len(s) for s in pos_scores]
    nv, npb, nn = sum(sizes), len(sizes), len(neg_scores)
    n = nv + 1 + npb + nn  # v, b, xi_pos, xi_neg
    c = np.zeros(n)
    c[nv + 1 : nv + 1 + npb] = cp
    c[nv + 1 + npb :] = cn
    A, rhs = [], []
    off = 0
    for i, s in enumerate(pos_scores):  # -(sum_j v_ij g_ij) - b - xi_i <= -1
        row = np.zeros(n)
        row[off : off + len(s)] = -np.asarray(s)
        row[nv] = -1
        row[nv + 1 + i] = -1
        A.append(row)
        rhs.append(-1.0)
        off += len(s)
    for k, g in enumerate(neg_scores):  # g + b - xi <= -1
        row = np.zeros(n)
        row[nv] = 1
        row[nv + 1 + npb + k] = -1
        A.append(row)
        rhs.append(-1.0 - g)
    Aeq = np.zeros((npb, n))
    off = 0
    for i, m in enumerate(sizes):
        Aeq[i, off : off + m] = 1
        off += m
    bounds = [(0, None)] * nv + [(None, None)] + [(0, None)] * (npb + nn)
    r = so.linprog(
        c, A_ub=np.array(A), b_ub=rhs, A_eq=Aeq, b_eq=np.ones(npb), bounds=bounds, method="highs"
    )
    assert r.status == 0
    return r.fun


def lp_value(v, b, pos_scores, cp, neg_scores, cn):
    xp = [max(0.0, 1 - float(np.dot(vi, s)) - b) for vi, s in zip(v, pos_scores)]
    xn = [max(0.0, 1 + g + b) for g in neg_scores]
    return float(np.dot(cp, xp) + np.dot(cn, xn))


score = st.floats(-3, 3, allow_nan=False).map(lambda x: round(x, 2))


def random_simplex_points(rng, sizes):
    """A point of each bag's simplex, with some zero weights (uniform when all would be zero)."""
    out = []
    for m in sizes:
        w = np.where(rng.random(m) < 0.3, 0.0, rng.random(m))
        out.append((w / w.sum() if w.sum() > 0 else np.full(m, 1.0 / m)).tolist())
    return out


def simplex_projection(z):
    u = np.sort(z)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.nonzero(u - css / np.arange(1, len(z) + 1) > 0)[0][-1]
    return np.maximum(z - css[k] / (k + 1), 0.0)


def face_projection_reference(v, s, t):
    """argmin ||u - v|| over the simplex with u . s >= t (t <= max s, v . s < t): for t = max s the
    projection onto the simplex of the best instances; else the constraint is active and the
    nearest nonnegative point among the least-squares solutions of sum u = 1, u . s = t on every
    support (a brute force over the supports the KKT conditions allow)."""
    v, s = np.asarray(v, dtype=float), np.asarray(s, dtype=float)
    if t >= s.max():
        top = s == s.max()
        u = np.zeros_like(v)
        u[top] = simplex_projection(v[top])
        return u
    best, best_d = None, np.inf
    for mask in range(1, 2 ** len(v)):
        S = np.array([(mask >> j) & 1 == 1 for j in range(len(v))])
        ones, sS, vS = np.ones(S.sum()), s[S], v[S]
        A = np.array([[len(vS), sS.sum()], [sS.sum(), sS @ sS]])  # u_S = v_S + a + c s_S
        rhs = np.array([1 - vS.sum(), t - sS @ vS])
        if abs(np.linalg.det(A)) > 1e-12:
            a, c = np.linalg.solve(A, rhs)
        elif np.all(sS == t):  # s constant (= t) on S: the sum alone
            a, c = rhs[0] / len(vS), 0.0
        else:
            continue
        u = np.zeros_like(v)
        u[S] = vS + a * ones + c * sS
        if u.min() >= -1e-12 and np.linalg.norm(u - v) < best_d:
            best, best_d = u, np.linalg.norm(u - v)
    assert best is not None
    return best


@given(
    st.lists(st.lists(score, min_size=1, max_size=4), min_size=1, max_size=5),
    st.lists(score, min_size=0, max_size=6),
    st.integers(0, 10**6),
)
# A positive and a negative term breaking at the same point (1 - 2.61 = -1 - 0.61): their weights
# change the slope together (the closed form once stopped at the first of them).
@example([[1.68, -0.38], [-2.65, 2.51, 2.61]], [0.24, 0.64, -1.36, -1.98, -0.28, 0.61], 1014)
# Tied best scores: v . s rounds below max s although v is optimal; it must be kept as it is.
@example([[-1.34, -1.34, -1.34]], [0.0, 0.0], 955077)
def test_svmcc_lp_step_matches_linprog(pos_scores, neg_scores, seed):
    # both rules return an optimal solution of the LP (v, b, xi) with w fixed; "max" puts each v_i
    # on the bag's best instances, "project" keeps an optimal v_i and else moves it to the nearest
    # optimal one
    rng = np.random.default_rng(seed)
    cp = rng.choice([0.5, 1.0, 2.0], size=len(pos_scores))
    cn = rng.choice([0.3, 1.0, 1.7], size=len(neg_scores))
    v0 = random_simplex_points(rng, [len(s) for s in pos_scores])
    ref = lp_reference(pos_scores, cp, neg_scores, cn)
    vm, bm = milsvm._core.svmcc_lp_step(
        pos_scores, cp.tolist(), neg_scores, cn.tolist(), lp_rule="max"
    )
    v, b = milsvm._core.svmcc_lp_step(pos_scores, cp.tolist(), neg_scores, cn.tolist(), v=v0)
    assert b == bm
    for rule_v in (vm, v):
        for vi in rule_v:
            assert abs(sum(vi) - 1) < 1e-12 and min(vi) >= 0
        assert lp_value(rule_v, b, pos_scores, cp, neg_scores, cn) <= ref + 1e-7 * max(
            1.0, abs(ref)
        )
    for vi, s in zip(vm, pos_scores):
        assert np.dot(vi, s) >= max(s) - 1e-12
    for vi, old, s in zip(v, v0, pos_scores):
        t = min(max(s), 1 - b)  # the bag's optimal set: v . s >= t
        assert np.dot(vi, s) >= t - 1e-12
        if np.dot(old, s) >= t:
            assert vi == old
        else:
            np.testing.assert_allclose(vi, face_projection_reference(old, s, t), rtol=0, atol=1e-9)


def test_svmcc_lp_step_refuses_bad_input():
    with pytest.raises(ValueError, match="lp_rule must be"):
        milsvm._core.svmcc_lp_step([[1.0]], [1.0], [], [], lp_rule="centre")
    with pytest.raises(ValueError, match="v needs one weight"):
        milsvm._core.svmcc_lp_step([[1.0, 2.0]], [1.0], [], [], v=[[1.0]])


# 9: block products for the combinations. Bounds (section 3): paper = split for rbf (Algorithm 2),
# C1 = C2 = C for linear (Algorithm 1)
@pytest.mark.parametrize(
    "seed, max_size, kernel, bounds",
    [
        (5, 4, "rbf", "paper"),
        (6, 9, "rbf", "paper"),
        (5, 4, "rbf", "equal"),
        (5, 4, "linear", "paper"),
        (6, 4, "linear", "split"),
    ],
)
def test_svmcc_qp_step_equals_svc_on_the_combination_gram(seed, max_size, kernel, bounds):
    bags, y = random_bags(seed, n_bags=12, d=3, max_size=max_size)
    C, gamma = 3.0, 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = milsvm.SVMCC(
            C=C, kernel=kernel, gamma=gamma, max_iter=1, inner_tol=1e-9, bounds=bounds
        ).fit(bags, y)
    units = [b for b, t in zip(bags, y) if t == 1] + [
        r[None, :] for b, t in zip(bags, y) if t == 0 for r in b
    ]
    uy = np.array([1] * int(np.sum(y == 1)) + [0] * (len(units) - int(np.sum(y == 1))))
    n_pb, n_neg = int(np.sum(uy == 1)), int(np.sum(uy == 0))
    split = bounds == "split" or (bounds == "paper" and kernel == "rbf")
    C1, C2 = (C * n_neg / (n_pb + n_neg), C * n_pb / (n_pb + n_neg)) if split else (C, C)
    K = set_gram(units, units, kernel, gamma)
    svc = SVC(kernel="precomputed", C=C, class_weight={1: C1 / C, 0: C2 / C}, tol=1e-11).fit(K, uy)
    X = np.vstack(bags)
    Kx = set_gram([r[None, :] for r in X], units, kernel, gamma)
    # the decision function's bias is the QP's for rbf, the LP's for linear (Algorithm 1)
    ref = svc.decision_function(Kx) - svc.intercept_[0]
    ours = np.concatenate(est.instance_decision_function(bags)) - est.intercept_
    assert np.allclose(ours, ref, atol=1e-6), np.abs(ours - ref).max()
    assert abs(est.qp_intercept_ - svc.intercept_[0]) < 1e-6
    assert est.intercept_ == (est.qp_intercept_ if kernel == "rbf" else est.lp_intercept_)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_svmcc_easy_bags(kernel):
    bags, y = easy_bags(2)
    est = milsvm.SVMCC(C=10.0, kernel=kernel).fit(bags, y)
    assert est.converged_ and est.n_iter_ < 80
    assert est.score(bags, y) == 1.0
    # every positive bag's weight sits on its instance near (3, 3)
    for i, v in zip(est.positive_bags_, est.v_):
        assert np.isclose(v.sum(), 1.0)
        assert bags[i][np.argmax(v)][0] > 1.5
    scores = est.decision_function(bags)
    inst = est.instance_decision_function(bags)
    assert np.allclose(scores, [s.max() for s in inst])


def test_svmcc_sparse_linear_stays_sparse_and_matches_dense(tmp_path):
    bags, y = random_bags(6, n_bags=14, d=40, sparse=True, density=0.2)
    # tight SMO tolerance: the dense (GEMM) and sparse inner products round differently, which
    # moves a loosely converged SMO's stopping point
    a = milsvm.SVMCC(C=2.0, inner_tol=1e-10).fit(bags, y)
    b = milsvm.SVMCC(C=2.0, inner_tol=1e-10).fit([x.toarray() for x in bags], y)
    assert a.xv_.shape == (1, 40)
    assert np.allclose(a.decision_function(bags), b.decision_function(bags), atol=1e-9)
    assert_saved_and_pickled(a, bags, tmp_path / "cc.json")


def test_svmcc_multiclass_and_warning():
    bags, y = milsvm.datasets.make_four_gaussians_bags(n_bags=30, random_state=1)
    est = milsvm.SVMCC(C=10.0, kernel="rbf").fit(bags, y)
    assert est.decision_function(bags).shape == (30, 3)
    assert len(est.v_) == 3
    # every column (and every per-problem record) is the binary SVM-CC of its class against
    # the rest, with either kernel
    records = (
        "v_",
        "positive_bags_",
        "lp_intercept_",
        "qp_intercept_",
        "objective_history_",
        "dv_history_",
    )
    for kernel in ("rbf", "linear"):
        assert_one_vs_rest(
            lambda: milsvm.SVMCC(C=10.0, kernel=kernel), bags, y, per_problem=records
        )
    with pytest.warns(Warning, match="max_iter"):
        milsvm.SVMCC(C=10.0, kernel="rbf", max_iter=1).fit(*easy_bags(3))


# ------------------------------------------------------------------------------------------------
# OneClassMISVM
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nu", [0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_class_without_bag_constraints_equals_sklearn(nu, seed):
    from sklearn.svm import OneClassSVM

    bags, y = random_bags(seed, n_bags=16, d=3, max_size=5)
    gamma = 0.6
    est = milsvm.OneClassMISVM(nu=nu, gamma=gamma, bag_constraints=False, inner_tol=1e-9).fit(
        bags, y
    )
    X = np.vstack([b for b, t in zip(bags, y) if t == 1])
    ref = OneClassSVM(nu=nu, gamma=gamma, tol=1e-12).fit(X)
    test = np.vstack(bags)
    scale = nu * len(X)  # LIBSVM's dual is nu l times ours
    ours = np.concatenate(est.instance_decision_function(bags))
    assert np.allclose(ours * scale, ref.decision_function(test), atol=1e-5 * max(1.0, scale))
    assert est.n_iter_ == 1 and est.converged_
    assert np.isclose(est.dual_coef_.sum(), 1.0)


def test_one_class_bag_constraints_cover_every_positive_bag(tmp_path):
    bags, y = easy_bags(4, n_bags=30)
    est = milsvm.OneClassMISVM(nu=0.5, bag_constraints=True).fit(bags, y)
    plain = milsvm.OneClassMISVM(nu=0.5, bag_constraints=False).fit(bags, y)
    assert est.converged_ and est.n_iter_ >= 1
    pos = [b for b, t in zip(bags, y) if t == 1]
    # the max constraints pull every positive bag's best instance to (nearly) the support
    tol = 1e-3 * abs(est.rho_)
    assert np.sum(est.decision_function(pos) < -tol) <= np.sum(plain.decision_function(pos) < -tol)
    assert est.bag_dual_coef_.sum() + est.dual_coef_.sum() == pytest.approx(1.0)
    # Figure 2: every bag's pseudo-sample sits on its maximal instances at the end
    assert est.active_.all() and est.n_iter_ >= 2
    X = np.vstack(pos)
    K = rbf(X, est.xv_, est.gamma_)
    f = K @ est.coef_ + est.intercept_
    assert np.allclose(np.concatenate(est.instance_decision_function(pos)), f)
    # the dual satisfies the bounds: instances 1/(nu l), bags 1/(nu n)
    assert est.dual_coef_.max() <= 1 / (0.5 * len(X)) + 1e-12
    assert est.bag_dual_coef_.max() <= 1 / (0.5 * len(pos)) + 1e-12
    assert est.decision_function(bags).shape == (len(bags),)
    assert set(est.predict(bags)) <= set(est.classes_)
    assert_saved_and_pickled(est, bags, tmp_path / "oc.json")


def test_one_class_cap_warns_and_linear_kernel():
    bags, y = random_bags(7, n_bags=20, max_size=6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = milsvm.OneClassMISVM(nu=0.2, max_iter=1).fit(bags, y)
    assert est.n_iter_ == 1
    assert est.converged_ or any("max_iter" in str(w.message) for w in caught)
    lin = milsvm.OneClassMISVM(nu=0.5, kernel="linear", bag_constraints=False).fit(bags, y)
    assert np.isfinite(lin.decision_function(bags)).all()


# ------------------------------------------------------------------------------------------------
# the estimator contract, shared
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "est",
    [
        milsvm.NSK(C=10.0),
        milsvm.NSK(C=10.0, norm="l2"),
        milsvm.sMIL(C=10.0),
        milsvm.SVMCC(C=10.0),
        milsvm.SVMCC(C=10.0, kernel="rbf"),
        milsvm.OneClassMISVM(nu=0.3),
    ],
)
def test_contract_cross_validation_string_labels_and_bags_container(est):
    from sklearn.model_selection import cross_val_score

    bags, y = easy_bags(5, n_bags=20)
    labels = np.where(y == 1, "pos", "neg")
    scores = cross_val_score(clone(est), bags, labels, cv=2)
    assert np.all(np.isfinite(scores))
    fitted = clone(est).fit(bags, labels)
    assert list(fitted.classes_) == ["neg", "pos"]
    assert set(fitted.predict(bags)) <= {"neg", "pos"}
    container = milsvm.Bags.from_instances(np.vstack(bags), [len(b) for b in bags])
    again = clone(est).fit(container, labels)
    assert np.allclose(again.decision_function(container), fitted.decision_function(bags))
    assert fitted.n_features_in_ == 2 and fitted.gamma_ > 0


@pytest.mark.parametrize(
    "cls, params, match",
    [
        (milsvm.NSK, {"C": 0.0}, "C must be"),
        (milsvm.NSK, {"C": -1.0}, "C must be"),
        (milsvm.NSK, {"gamma": -1.0}, "gamma must be"),
        (milsvm.NSK, {"gamma": "auto"}, "gamma must be"),
        (milsvm.NSK, {"norm": "l3"}, "norm must be"),
        (milsvm.NSK, {"kernel": "poly"}, "kernel must be"),
        (milsvm.NSK, {"inner_tol": 0.0}, "inner_tol must"),
        (milsvm.NSK, {"inner_tol": 2.0}, "inner_tol must"),
        (milsvm.NSK, {"inner_max_iter": 0}, "inner_max_iter must"),
        (milsvm.NSK, {"class_weight": "weird"}, "class_weight must"),
        (milsvm.NSK, {"n_jobs": 0}, "n_jobs must"),
        (milsvm.SVMCC, {"C": 0.0}, "C must be"),
        (milsvm.SVMCC, {"gamma": 0.0, "kernel": "rbf"}, "gamma must be"),
        (milsvm.SVMCC, {"kernel": "poly"}, "kernel must be"),
        (milsvm.SVMCC, {"max_iter": 0}, "max_iter must"),
        (milsvm.SVMCC, {"tol": -1.0}, "tol must"),
        (milsvm.SVMCC, {"inner_tol": 1.0}, "inner_tol must"),
        (milsvm.SVMCC, {"n_jobs": 0}, "n_jobs must"),
        (milsvm.SVMCC, {"class_weight": {5: 1.0}}, "class_weight"),
        (milsvm.OneClassMISVM, {"nu": 0.0}, "nu must lie"),
        (milsvm.OneClassMISVM, {"nu": 1.5}, "nu must lie"),
        (milsvm.OneClassMISVM, {"gamma": -2.0}, "gamma must be"),
        (milsvm.OneClassMISVM, {"kernel": "poly"}, "kernel must be"),
        (milsvm.OneClassMISVM, {"max_iter": 0}, "max_iter must"),
        (milsvm.OneClassMISVM, {"inner_tol": 0.0}, "inner_tol must"),
        (milsvm.OneClassMISVM, {"n_jobs": 0}, "n_jobs must"),
    ],
)
def test_bad_parameters_are_refused(cls, params, match):
    bags, y = random_bags(0)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(bags, y)


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_smil_multiclass_one_vs_rest(class_weight):
    bags, y = milsvm.datasets.make_four_gaussians_bags(n_bags=30, random_state=2)
    est = milsvm.sMIL(C=10.0, class_weight=class_weight, bag_score="mean_offset").fit(bags, y)
    assert est.decision_function(bags).shape == (30, 3)
    # every column is the binary sMIL of its class against the rest (balanced weights are
    # computed per binary problem, so they agree too); "auto" makes one choice for all columns
    assert_one_vs_rest(
        lambda: milsvm.sMIL(C=10.0, class_weight=class_weight, bag_score="mean_offset"),
        bags,
        y,
        per_problem=("dual_coef_", "objective_", "n_support_"),
    )


@pytest.mark.parametrize("lp_rule", ["project", "max"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_svmcc_objective_is_non_increasing(kernel, seed, lp_rule):
    # QP (optimal in w, b for v) then LP (optimal in v, b for w): an alternating minimisation,
    # whichever optimal v the LP returns
    bags, y = random_bags(seed, n_bags=16, d=3, max_size=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = milsvm.SVMCC(C=5.0, kernel=kernel, gamma=0.5, inner_tol=1e-9, lp_rule=lp_rule).fit(
            bags, y
        )
    h = est.objective_history_
    assert len(h) == est.n_iter_ and len(est.dv_history_) == est.n_iter_
    assert np.all(np.diff(h) <= 1e-7 * max(1.0, abs(h[0])))
