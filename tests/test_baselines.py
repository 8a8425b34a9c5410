"""SIL and STK against scikit-learn's ``SVC`` on the same problem (the instances with their bags'
labels, max-pooled; the bags' min/max statistic vectors), their model form and files (the
statistics formed by the compiled predictor from raw bags, dense or CSR, with a saved scaler),
multi-class one-vs-rest, and STK's refusal of instance scores.

LIBSVM (behind ``SVC``) keeps its kernel cache in single precision, so its solution is exact to
about 1e-7 relative of the kernel values; the comparisons allow 1e-6 relative to the size of
the decision values (Gaussian kernel: SVC at tol=1e-10), and check besides that our dual
objective is at least as low as the one of ``SVC``'s dual variables evaluated in double
precision. With the linear kernel these small problems are so degenerate that LIBSVM takes
minutes to reach a tight tolerance: there ``SVC`` at its default tolerance checks the
conventions (labels, weights, pooling) to 1e-2, and the exactness comes from a certificate
that needs no other solver: the duality gap of our solution (primal objective at our ``w``,
``b`` minus the dual objective at our ``a``, nonnegative by weak duality and 0 only at the
optimum; ``||w - w*||^2 <= 2 gap``) is below 1e-9 relative.
"""

import json
import warnings

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import assert_one_vs_rest, bag_sets, sparse_looking_bags, three_class_bags
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core
from sklearn.svm import SVC

TOL = 1e-10  # both solvers run to a tight tolerance


def split(X, bag_ptr):
    return [X[bag_ptr[i] : bag_ptr[i + 1]] for i in range(len(bag_ptr) - 1)]


def gram(A, B, kernel, gamma):
    if kernel == "linear":
        return A @ B.T
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def dual_objective(svc, X, y, kernel, gamma):
    """``1/2 a^T Q a - 1^T a`` of ``svc``'s dual variables, in double precision."""
    alpha = np.zeros(len(X))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    ys = np.where(y == 1, 1.0, -1.0)
    Q = np.outer(ys, ys) * gram(X, X, kernel, gamma)
    return 0.5 * alpha @ Q @ alpha - alpha.sum()


def statistics(bags):
    return np.array([np.concatenate([np.min(b, axis=0), np.max(b, axis=0)]) for b in bags])


def assert_close_to_svc(ours, ref, shift=0.0, gaps=(0.0, 0.0)):
    """Scores within 1e-6 (relative to the largest), or within what the two solutions' duality
    gaps allow where that is more: on a nearly singular Gaussian Gram matrix two solutions within
    the solvers' tolerances can differ by more. The primal is 1-strongly convex in ``w``, so each
    side's ``||w - w*||`` is at most ``sqrt(2 gap)``, and a score ``w.phi(x) + b`` moves by at most
    that times ``sqrt(K(x, x)) = 1``, once through ``w`` and once through the bias read at a free
    support vector."""
    scale = max(1.0, np.abs(ref).max())
    slack = 2 * sum(np.sqrt(2 * max(g, 0.0)) for g in gaps)
    atol = max(1e-6 * scale, slack)
    np.testing.assert_allclose(np.asarray(ours) - shift, ref, rtol=0, atol=atol)


def bias_shift(est, svc, y, bounds, g):
    """The difference of the two biases when it may differ: with no free support vector the
    bias is any point of an interval (each solver takes a point of it, LIBSVM its own
    midpoint); then our bias must lie in the interval that our dual variables allow
    (``g`` the training scores without the bias, ``bounds`` the ``C w`` of each point), and
    the rest of the decision function must agree. With a free support vector the bias is
    unique: no shift."""
    alpha = np.zeros(len(y))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    free = (alpha > 1e-6 * bounds) & (alpha < bounds * (1 - 1e-6))
    if free.any():
        return 0.0
    ys = np.where(y == 1, 1.0, -1.0)
    ours = np.asarray(est.dual_coef_)
    at_zero, at_bound = ours <= 1e-9 * bounds, ours >= bounds * (1 - 1e-9)
    # y (g + b) >= 1 where a = 0, <= 1 where a = C w
    lower = np.concatenate([(1 - g)[at_zero & (ys > 0)], (-1 - g)[at_bound & (ys < 0)], [-np.inf]])
    upper = np.concatenate([(1 - g)[at_bound & (ys > 0)], (-1 - g)[at_zero & (ys < 0)], [np.inf]])
    b = est.intercept_
    slack = 1e-6 * max(1.0, np.abs(g).max())
    assert lower.max() - slack <= b <= upper.min() + slack, (lower.max(), b, upper.min())
    return b - svc.intercept_[0]


def primal_and_dual(points, y, bounds, kernel, gamma, a, b):
    """The C-SVM's primal at ``(w(a), b)`` and its dual at ``a`` (``bounds`` the ``C w`` of each
    point): ``primal - dual >= 0`` by weak duality, with equality only at the optimum."""
    ys = np.where(y == 1, 1.0, -1.0)
    v = gram(points, points, kernel, gamma) @ (a * ys)
    aQa = (a * ys) @ v
    dual = -(0.5 * aQa - a.sum())
    primal = 0.5 * aQa + bounds @ np.maximum(0.0, 1.0 - ys * (v + b))
    return primal, dual


def svc_gap(svc, points, y, bounds, kernel):
    """``primal - dual`` of scikit-learn's solution."""
    alpha = np.zeros(len(points))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    primal, dual = primal_and_dual(points, y, bounds, kernel, svc._gamma, alpha, svc.intercept_[0])
    return primal - dual


def assert_duality_gap_closed(est, points, y, bounds, kernel):
    """Weak duality certifies the solution: ``0 <= primal - dual <= 2 tol sum(C w)``. The SMO
    stops when the maximal violating pair's gap ``m(a) - M(a)`` is below ``tol`` times 2 (the
    gap at ``a = 0`` of an SVM, ``SmoParams::tol``); each point's term of ``primal - dual``,
    ``a_i r_i + C_i max(0, -r_i)`` with ``r_i = y_i f(x_i) - 1``, is then at most ``C_i`` times
    that. Returns the gap."""
    a = np.asarray(est.dual_coef_)
    primal, dual = primal_and_dual(points, y, bounds, kernel, est.gamma_, a, est.intercept_)
    assert est.objective_ == pytest.approx(-dual, rel=1e-9, abs=1e-12)
    rounding = 1e-12 * max(1.0, abs(primal))
    bound = 2 * est.inner_tol * bounds.sum() + rounding
    assert -rounding <= primal - dual <= bound, (primal, dual, bound)
    return primal - dual


def point_bounds(C, weights, y):
    w = weights or {}
    return C * np.array([w.get(int(v), 1.0) for v in y])


settings_cases = dict(
    kernel=st.sampled_from(["rbf", "linear"]),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    gamma=st.sampled_from(["scale", 0.3]),
    weights=st.sampled_from([None, {0: 2.0, 1: 0.5}, {0: 1.0, 1: 3.0}]),
)


# --------------------------------------------------------------------------------------------
# SIL
# --------------------------------------------------------------------------------------------


@given(data=bag_sets(max_bags=10, max_d=4, max_size=5), **settings_cases)
def test_sil_equals_svc_on_the_instances_max_pooled(data, kernel, C, gamma, weights):
    X, bag_ptr, labels = data
    bags = split(X, bag_ptr)
    y_inst = np.repeat(labels, np.diff(bag_ptr))
    est = milsvm.SIL(C=C, kernel=kernel, gamma=gamma, class_weight=weights, inner_tol=TOL).fit(
        bags, labels
    )
    bounds = point_bounds(C, weights, y_inst)
    assert_duality_gap_closed(est, X, y_inst, bounds, kernel)
    ours = np.concatenate(est.instance_decision_function(bags))
    if kernel == "linear":
        svc = SVC(C=C, kernel=kernel, class_weight=weights).fit(X, y_inst)
        scale = max(1.0, np.abs(ours).max())
        np.testing.assert_allclose(ours, svc.decision_function(X), atol=1e-2 * scale)
        return
    svc = SVC(C=C, kernel=kernel, gamma=gamma, class_weight=weights, tol=TOL).fit(X, y_inst)
    assert est.gamma_ == pytest.approx(svc._gamma, rel=1e-12)
    inst = svc.decision_function(X)
    shift = bias_shift(est, svc, y_inst, bounds, ours - est.intercept_)
    assert_close_to_svc(ours, inst, shift)
    assert_close_to_svc(est.decision_function(bags), [s.max() for s in split(inst, bag_ptr)], shift)
    # at least as optimal as SVC's solution, evaluated in double precision (the weights scale
    # the bounds, not the objective)
    ref_obj = dual_objective(svc, X, y_inst, kernel, svc._gamma)
    assert est.objective_ <= ref_obj + 1e-9 * max(1.0, abs(ref_obj))
    # unseen bags: the max of the instance scores
    test = [b + 0.5 for b in bags[:3]]
    assert_close_to_svc(
        est.decision_function(test), [svc.decision_function(b).max() for b in test], shift
    )


def test_sil_sparse_equals_dense_and_the_predictor_is_the_batch_path():
    bags, y = sparse_looking_bags(0, n_bags=14, d=6, density=0.5, max_size=5)
    dense = milsvm.SIL(C=2.0, gamma=0.2, inner_tol=1e-9).fit(bags, y)
    sparse = milsvm.SIL(C=2.0, gamma=0.2, inner_tol=1e-9).fit([sp.csr_matrix(b) for b in bags], y)
    np.testing.assert_allclose(
        sparse.decision_function(bags), dense.decision_function(bags), atol=1e-9
    )
    for bag, want in zip(
        bags, dense.decision_function(bags)
    ):  # the batch path is a GEMM beyond 32 XVs
        assert dense.decision_function_bag(bag) == pytest.approx(want, rel=1e-12, abs=1e-13)
    assert dense.model_.pooling == "max" and dense.model_.bag_features == "instances"


def test_sil_multiclass_is_one_vs_rest():
    bags, y = three_class_bags(n_bags=24)
    assert_one_vs_rest(
        lambda: milsvm.SIL(C=10.0, inner_tol=1e-9), bags, y, per_problem=("n_support_",)
    )


def test_sil_explains_by_the_arg_max_instance():
    bags, y = three_class_bags(n_bags=24)
    y = (y == "a").astype(int)
    est = milsvm.SIL(C=10.0).fit(bags, y)
    for e, bag_scores in zip(est.explain(bags), est.instance_decision_function(bags)):
        assert e.pooling == "max" and e.top == int(np.argmax(bag_scores))
        assert e.score == bag_scores.max()


# --------------------------------------------------------------------------------------------
# STK
# --------------------------------------------------------------------------------------------


@given(data=bag_sets(max_bags=12, max_d=4, max_size=5), **settings_cases)
def test_stk_equals_svc_on_the_min_max_statistics(data, kernel, C, gamma, weights):
    X, bag_ptr, labels = data
    bags = split(X, bag_ptr)
    S = statistics(bags)
    est = milsvm.STK(C=C, kernel=kernel, gamma=gamma, class_weight=weights, inner_tol=TOL).fit(
        bags, labels
    )
    bounds = point_bounds(C, weights, labels)
    gap = assert_duality_gap_closed(est, S, labels, bounds, kernel)
    ours = est.decision_function(bags)
    linear = kernel == "linear"
    svc = SVC(
        C=C, kernel=kernel, gamma=gamma, class_weight=weights, tol=1e-3 if linear else TOL
    ).fit(S, labels)
    if linear:
        scale = max(1.0, np.abs(ours).max())
        np.testing.assert_allclose(ours, svc.decision_function(S), atol=1e-2 * scale)
        shift = None
    else:
        assert est.gamma_ == pytest.approx(svc._gamma, rel=1e-12)
        shift = bias_shift(est, svc, labels, bounds, ours - est.intercept_)
        gaps = (gap, svc_gap(svc, S, labels, bounds, kernel))
        assert_close_to_svc(ours, svc.decision_function(S), shift, gaps)
        ref_obj = dual_objective(svc, S, labels, kernel, svc._gamma)
        assert est.objective_ <= ref_obj + max(1e-9 * max(1.0, abs(ref_obj)), gap)
    # new bags: the compiled predictor forms their statistics, batch and one by one
    rng = np.random.default_rng(len(X))
    test = [rng.normal(size=(int(rng.integers(1, 6)), X.shape[1])) for _ in range(5)]
    if shift is not None:
        want = svc.decision_function(statistics(test))
        assert_close_to_svc(est.decision_function(test), want, shift, gaps)
        assert_close_to_svc([est.decision_function_bag(b) for b in test], want, shift, gaps)
    # the model form: the support bags' statistic vectors, evaluated here by NumPy
    xv = est.xv_
    assert xv.shape[1] == 2 * X.shape[1] and est.n_features_in_ == X.shape[1]
    by_hand = gram(statistics(test), xv, kernel, est.gamma_) @ est.coef_ + est.intercept_
    np.testing.assert_allclose(est.decision_function(test), by_hand, rtol=1e-10, atol=1e-10)


@given(
    data=bag_sets(max_bags=12, max_d=4, max_size=5, n_classes=3),
    dtype=st.sampled_from([np.float64, np.float32]),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    transposed=st.booleans(),
)
def test_stk_reads_a_list_of_bags_where_they_lie_and_fits_the_stacked_model(
    data, dtype, C, transposed
):
    # bags given one by one (separate arrays, not rows of one matrix) are summarised where they
    # lie (``Bags.parts``, ``_core.fit_stk_bags``); the model is the one of the same bags stacked,
    # bit for bit, for single fits and paths, binary and one-vs-rest, any strides
    X, bag_ptr, labels = data
    X = X.astype(dtype)
    bags = [np.array(b.T, order="C").T if transposed else np.array(b) for b in split(X, bag_ptr)]
    assert milsvm.as_bags(bags, check_finite=False).parts is not None
    stacked = milsvm.Bags.from_instances(X, np.diff(bag_ptr))
    for y in (labels % 2, labels):
        est = milsvm.STK(C=C).fit(bags, y)
        ref = milsvm.STK(C=C).fit(stacked, y)
        np.testing.assert_array_equal(
            est.decision_function(stacked), ref.decision_function(stacked)
        )
        np.testing.assert_array_equal(est.xv_, ref.xv_)
        assert est.model_.input_dtype == ref.model_.input_dtype == np.dtype(dtype).name
        for a, b in zip(
            milsvm.STK().fit_path(bags, y, [C, 1.0]), milsvm.STK().fit_path(stacked, y, [C, 1.0])
        ):
            np.testing.assert_array_equal(
                a.decision_function(stacked), b.decision_function(stacked)
            )


def test_stk_refuses_bad_bags_given_one_by_one():
    rng = np.random.default_rng(3)
    bags = [rng.normal(size=(3, 4)) for _ in range(8)]
    y = np.arange(8) % 2
    for bad in (np.nan, np.inf):
        broken = [b.copy() for b in bags]
        broken[5][2, 1] = bad
        with pytest.raises(
            ValueError, match=r"bag 5 has a non-finite value \(NaN or infinity\) in instance 2"
        ):
            milsvm.STK().fit(broken, y)
    params = {"C": 1.0}
    labels = y.astype(np.int64)
    with pytest.raises(TypeError, match="bag 1 must be a 2-D float64 or float32 NumPy array"):
        _core.fit_stk_bags([bags[0], [[1.0, 2.0]]] + bags[2:], labels, params)
    with pytest.raises(ValueError, match="bag 2 has 3 features, bag 0 has 4"):
        _core.fit_stk_bags(bags[:2] + [bags[2][:, :3]] + bags[3:], labels, params)
    with pytest.raises(ValueError, match="bag 3 is empty"):
        _core.fit_stk_bags(bags[:3] + [bags[3][:0]] + bags[4:], labels, params)
    with pytest.raises(ValueError, match="labels"):
        _core.fit_stk_bags(bags, labels[:5], params)


def test_stk_statistics_of_sparse_bags_count_unstored_values_as_zeros():
    bags, y = sparse_looking_bags(1, n_bags=16, d=5, density=0.4, max_size=5, shift=1.0)
    # a feature stored in no instance of a bag, and one stored in every instance but negative
    bags[0][:, 2] = 0.0
    bags[1][:, 3] = -np.abs(bags[1][:, 3]) - 1.0
    sparse_bags = [sp.csr_matrix(b) for b in bags]
    dense = milsvm.STK(C=5.0, gamma=0.3, inner_tol=1e-9).fit(bags, y)
    sparse = milsvm.STK(C=5.0, gamma=0.3, inner_tol=1e-9).fit(sparse_bags, y)
    np.testing.assert_allclose(sparse.xv_, dense.xv_, rtol=0, atol=0)
    np.testing.assert_array_equal(
        dense.decision_function(sparse_bags), dense.decision_function(bags)
    )
    np.testing.assert_allclose(
        sparse.decision_function(bags), dense.decision_function(bags), atol=1e-12
    )
    svc = SVC(C=5.0, gamma=0.3, tol=TOL).fit(statistics(bags), y)
    assert_close_to_svc(
        milsvm.STK(C=5.0, gamma=0.3, inner_tol=TOL).fit(sparse_bags, y).decision_function(bags),
        svc.decision_function(statistics(bags)),
    )


def test_stk_gamma_is_resolved_on_the_statistic_vectors():
    bags, y = three_class_bags(n_bags=24)
    S = statistics(bags)
    assert milsvm.STK().fit(bags, y).gamma_ == pytest.approx(
        1.0 / (S.shape[1] * S.var()), rel=1e-12
    )
    median = milsvm.STK(gamma="median").fit(bags, y).gamma_
    assert median == pytest.approx(_core.kernel_width(np.ascontiguousarray(S), "median"), rel=1e-12)


def test_stk_multiclass_is_one_vs_rest():
    bags, y = three_class_bags(n_bags=24)
    multi = assert_one_vs_rest(
        lambda: milsvm.STK(C=10.0, inner_tol=1e-9), bags, y, per_problem=("n_support_",)
    )
    assert multi.score(bags, y) == 1.0


def test_stk_has_no_instance_scores_and_says_why():
    bags, y = three_class_bags(n_bags=12)
    est = milsvm.STK().fit(bags, (y == "a").astype(int))
    for name in ("instance_decision_function", "predict_instances", "explain"):
        assert not hasattr(est, name)
        with pytest.raises(AttributeError, match="min.*max.*not a pooling of instance scores"):
            getattr(est, name)(bags)
    raw = milsvm.as_bags(bags)
    with pytest.raises(ValueError, match="instance scores are not defined"):
        est.model_.bag_instance_scores(raw.core_instances(), raw.bag_ptr)
    with pytest.raises(ValueError, match="instance scores are not defined"):
        est.model_.instance_decision_function(raw.core_instances())
    # the others still work: SIL has them
    assert hasattr(milsvm.SIL().fit(bags, (y == "a").astype(int)), "instance_decision_function")


def test_stk_refuses_bad_bags_at_prediction():
    bags, y = three_class_bags(n_bags=12)
    est = milsvm.STK().fit(bags, (y == "a").astype(int))
    bad = [b.copy() for b in bags[:3]]
    bad[1][0, 1] = np.nan  # min and max would hide it
    with pytest.raises(ValueError, match="bag 1 has a non-finite value"):
        est.decision_function(bad)
    with pytest.raises(ValueError, match="non-finite"):
        est.decision_function_bag(bad[1])
    with pytest.raises(ValueError, match="features"):
        est.decision_function([np.ones((2, 3))])


def test_stk_model_file_records_the_statistics_and_rejects_inconsistent_ones(tmp_path):
    bags, y = three_class_bags(n_bags=12)
    est = milsvm.STK(C=10.0).fit(bags, (y == "a").astype(int))
    path = tmp_path / "stk.json"
    est.save(path)
    doc = json.loads(path.read_text())
    assert doc["version"] == 7 and doc["bag_features"] == "min_max" and doc["pooling"] == "mean"
    assert doc["xv"]["shape"][1] == 2 * est.n_features_in_
    core = milsvm.Model.load(path)
    assert core.bag_features == "min_max" and core.n_features == est.n_features_in_
    raw = milsvm.as_bags(bags)
    np.testing.assert_array_equal(
        core.decision_function(raw.core_instances(), raw.bag_ptr)[:, 0], est.decision_function(bags)
    )

    def rejected(edit, match):
        d = json.loads(path.read_text())
        edit(d)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(d))
        with pytest.raises(ValueError, match=match):
            milsvm.load(bad)

    rejected(lambda d: d.update(bag_features="quantiles"), "bag_features")
    rejected(lambda d: d.update(pooling="max"), "pooling")  # one vector per bag: mean only
    rejected(lambda d: d.update(bag_features="instances"), "bag_features")  # an STK needs min_max

    def odd_width(d):
        n, w = d["xv"]["shape"]
        d["xv"]["shape"] = [n, w - 1]
        d["xv"]["data"] = [v for k, v in enumerate(d["xv"]["data"]) if k % w != w - 1]

    rejected(odd_width, "even width")
    # a version-4 file has no bag_features: the field is not read there (an old file's meaning)
    d = json.loads(path.read_text())
    d["version"] = 4
    old = tmp_path / "v4.json"
    old.write_text(json.dumps(d))
    assert milsvm.Model.load(old).bag_features == "instances"


def test_sil_and_stk_through_the_command_line_registry():
    from milsvm import _registry

    assert _registry.resolve("sil") is milsvm.SIL and _registry.resolve("stk") is milsvm.STK
    assert "Ray & Craven" in milsvm.SIL.__doc__ and "misvm" in milsvm.SIL.__doc__
    assert "Gaertner" in milsvm.STK.__doc__


def test_sil_and_stk_fit_musk1_well(musk1):
    """Not a benchmark: a sanity floor on real data (5-fold CV, standardised per fold)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline

    bags, y = musk1
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    for est, floor in ((milsvm.SIL(C=10.0), 0.7), (milsvm.STK(C=10.0), 0.7)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc = cross_val_score(
                make_pipeline(milsvm.BagStandardScaler(), est), bags, y, cv=cv
            ).mean()
        assert acc >= floor, (type(est).__name__, acc)
