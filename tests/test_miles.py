"""MILES (Chen, Bi & Wang, TPAMI 2006): the embedding against NumPy (dense and CSR), the 1-norm
SVM's simplex against scipy's HiGHS (``linprog``) on hypothesis-generated problems, the fitted
model against the embedding and the LP it is made of, the paper's instance classification, the
Rust predictor against Python, bad input, thread-count independence and scikit-learn's tools."""

import milsvm
import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from conftest import (
    assert_clone_and_pickle,
    assert_one_vs_rest,
    assert_refuses_bad_bags,
    bag_sets,
    csr_tuple,
    easy_bags,
    random_bags,
    stacked_bags,
    three_class_bags,
)
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold


def stacked(bags):
    b = milsvm.as_bags(bags)
    return b.core_instances(), b.bag_ptr


def embedding_reference(X, bag_ptr, Z, kernel, gamma):
    """``E[i, k] = max_(p in bag i) k(x_p, z_k)`` by brute force."""
    X = X.toarray() if sp.issparse(X) else X
    Z = Z.toarray() if sp.issparse(Z) else Z
    if kernel == "rbf":
        K = np.exp(-gamma * ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    else:
        K = X @ Z.T
    return np.array([K[a:b].max(axis=0) for a, b in zip(bag_ptr[:-1], bag_ptr[1:])])


# --------------------------------------------------------------------------------------------
# The embedding
# --------------------------------------------------------------------------------------------


@given(
    bag_sets(max_bags=10, max_d=5, max_size=6),
    st.integers(1, 12),
    st.sampled_from(["rbf", "linear"]),
    st.floats(0.05, 3.0),
    st.booleans(),
    st.booleans(),
)
def test_embedding_equals_numpy(data, n_z, kernel, gamma, sparse_x, sparse_z):
    X, bag_ptr, _ = data
    rng = np.random.default_rng(n_z)
    Z = rng.normal(size=(n_z, X.shape[1]))
    X = np.where(np.abs(X) > 0.6, X, 0.0)  # zeros, so that CSR stores fewer entries
    Z = np.where(np.abs(Z) > 0.6, Z, 0.0)
    want = embedding_reference(X, bag_ptr, Z, kernel, gamma)
    x = csr_tuple(X) if sparse_x else X
    z = csr_tuple(Z) if sparse_z else Z
    got = _core.miles_embedding(x, bag_ptr, z, kernel, gamma)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_embedding_spans_several_blocks_and_is_thread_count_independent():
    rng = np.random.default_rng(0)
    X, ptr = stacked_bags(rng, 60, 40, 7)
    Z = rng.normal(size=(300, 7))  # three blocks of 128 vectors; several chunks of bags
    want = embedding_reference(X, ptr, Z, "rbf", 0.2)
    one = _core.miles_embedding(X, ptr, Z, "rbf", 0.2, n_jobs=1)
    two = _core.miles_embedding(X, ptr, Z, "rbf", 0.2, n_jobs=2)
    np.testing.assert_allclose(one, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(one, two)
    sparse = _core.miles_embedding(csr_tuple(X), ptr, csr_tuple(Z), "rbf", 0.2, n_jobs=2)
    np.testing.assert_allclose(sparse, want, rtol=1e-12, atol=1e-13)


def test_embedding_refuses_a_width_mismatch():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="the concepts have 3 features, the bags have 2"):
        _core.miles_embedding(X, np.array([0, 3], dtype=np.int64), np.ones((2, 3)), "rbf", 1.0)


# --------------------------------------------------------------------------------------------
# The 1-norm SVM (an LP) against scipy's HiGHS
# --------------------------------------------------------------------------------------------


def highs_l1_svm(E, y, cost):
    """The same LP for scipy: variables u, v (n each), b+, b-, xi (m)."""
    m, n = E.shape
    A = np.hstack([-y[:, None] * E, y[:, None] * E, -y[:, None], y[:, None], -np.eye(m)])
    c = np.concatenate([np.ones(2 * n), [0.0, 0.0], cost])
    r = so.linprog(c, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method="highs")
    assert r.status == 0, r.message
    return r.fun


def l1_objective(E, y, cost, w, b):
    return np.abs(w).sum() + (cost * np.maximum(0.0, 1.0 - y * (E @ w + b))).sum()


@st.composite
def l1_problems(draw):
    m = draw(st.integers(2, 14))
    n = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    E = rng.uniform(0.0, 1.0, size=(m, n))
    if draw(st.booleans()):  # embeddings often repeat columns and hold exact 0/1 values
        E[:, rng.integers(0, n)] = E[:, 0]
        E[rng.random((m, n)) < 0.2] = 1.0
    y = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    rng.shuffle(y)
    scale = draw(st.sampled_from([0.05, 1.0, 30.0]))
    cost = scale * rng.uniform(0.5, 2.0, size=m)
    return E, y, cost


@given(l1_problems())
def test_simplex_reaches_the_highs_optimum_with_a_duality_certificate(problem):
    E, y, cost = problem
    w, b, obj, dual, iters, converged = _core.solve_l1_svm(E, y, cost)
    assert converged
    ref = highs_l1_svm(E, y, cost)
    assert obj == pytest.approx(ref, rel=1e-8, abs=1e-9)
    assert obj == pytest.approx(l1_objective(E, y, cost, w, b), rel=1e-12, abs=1e-12)
    # the multipliers are dual feasible and their objective is the primal one: optimality
    assert np.all(dual >= -1e-10) and np.all(dual <= cost + 1e-10)
    assert abs(dual @ y) <= 1e-8 * (1 + cost.sum())
    assert np.all(np.abs(E.T @ (dual * y)) <= 1 + 1e-8)
    assert dual.sum() == pytest.approx(obj, rel=1e-8, abs=1e-9)
    assert np.count_nonzero(w) <= len(y)  # a vertex: at most one weight per constraint


def test_simplex_on_a_real_embedding_and_its_iteration_cap(musk1):
    bags, y = musk1
    x, ptr = stacked(bags)
    E = _core.miles_embedding(x, ptr, x, "rbf", 1e-6)
    yy = np.where(y == 1, 1.0, -1.0)
    for C in (0.1, 1.0, 10.0):
        cost = np.full(len(yy), C)
        w, b, obj, dual, iters, converged = _core.solve_l1_svm(E, yy, cost)
        assert converged and obj == pytest.approx(highs_l1_svm(E, yy, cost), rel=1e-9)
    w, b, obj, dual, iters, converged = _core.solve_l1_svm(E, yy, cost, max_iter=5)
    assert iters == 5 and not converged
    with pytest.raises(ValueError, match="finite and > 0"):
        _core.solve_l1_svm(E, yy, np.zeros(len(yy)))


# --------------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("class_weight", [None, {1: 0.7, 0: 0.3}])
def test_the_model_is_the_embedding_and_the_lp(kernel, class_weight):
    bags, y = easy_bags(1, n_bags=30)
    C = 5.0 if kernel == "rbf" else 0.5
    est = milsvm.MILES(C=C, kernel=kernel, gamma=0.4, class_weight=class_weight).fit(bags, y)
    x, ptr = stacked(bags)
    E = _core.miles_embedding(x, ptr, x, kernel, 0.4)
    yy = np.where(y == 1, 1.0, -1.0)
    weight = np.ones(len(y)) if class_weight is None else np.where(y == 1, 0.7, 0.3)
    w, b, obj, dual, _, converged = _core.solve_l1_svm(E, yy, C * weight)
    assert est.converged_ and converged
    assert est.objective_ == obj and est.objective_ == pytest.approx(
        highs_l1_svm(E, yy, C * weight), rel=1e-9
    )
    assert est.n_concepts_ == len(x) and est.n_selected_ == np.count_nonzero(w)
    np.testing.assert_array_equal(est.selected_, np.flatnonzero(w))
    np.testing.assert_array_equal(est.xv_, x[est.selected_])
    np.testing.assert_array_equal(est.coef_, w[est.selected_])
    assert est.intercept_ == b
    np.testing.assert_array_equal(est.dual_coef_, dual)
    np.testing.assert_allclose(est.decision_function(bags), E @ w + b, rtol=1e-12, atol=1e-12)
    # new bags: the embedding against the selected concepts
    test, _ = easy_bags(2, n_bags=10)
    xt, pt = stacked(test)
    Et = embedding_reference(xt, pt, est.xv_, kernel, 0.4)
    np.testing.assert_allclose(
        est.decision_function(test), Et @ est.coef_ + b, rtol=1e-12, atol=1e-12
    )
    assert est.score(bags, y) >= 0.9


def instance_rule_reference(bag, xv, coef, b, gamma):
    """The paper's instance classification: per selected concept, the instance attaining its max
    (the first on a tie) is credited ``w_k k(z_k, x)``; U the credited instances;
    ``theta = -b / |U|``. Returns the credited sums, the set U and theta."""
    K = np.exp(-gamma * ((bag[:, None, :] - xv[None, :, :]) ** 2).sum(-1))
    g = np.zeros(len(bag))
    U = set()
    for k in np.flatnonzero(coef):
        p = int(np.argmax(K[:, k]))
        g[p] += coef[k] * K[p, k]
        U.add(p)
    return g, U, (-b / len(U) if U else None)


def test_instance_scores_follow_the_papers_rule_and_sum_to_the_bag_score():
    bags, y = easy_bags(3, n_bags=30)
    est = milsvm.MILES(C=10.0, gamma=0.5).fit(bags, y)
    b = est.intercept_
    scores = est.instance_decision_function(bags)
    labels = est.predict_instances(bags)
    for bag, s, lab, f in zip(bags, scores, labels, est.decision_function(bags)):
        g, U, theta = instance_rule_reference(bag, est.xv_, est.coef_, b, 0.5)
        assert s.sum() == pytest.approx(f, rel=1e-12, abs=1e-12)
        for p in range(len(bag)):
            if p in U:
                assert s[p] == pytest.approx(g[p] + b / len(U), rel=1e-12, abs=1e-12)
                assert (lab[p] == 1) == (g[p] > theta)  # the paper's rule
            else:
                assert s[p] == 0.0 and lab[p] == 0
    # the planted witness of a positive bag is the instance the rule calls positive
    pos = [lab for lab, label in zip(labels, y) if label == 1]
    assert np.mean([lab[0] == 1 for lab in pos]) >= 0.8
    e = est.explain(bags[:4])
    assert all(x.pooling == "sum" and x.contributions.sum() == pytest.approx(x.score) for x in e)


def test_instance_scores_without_a_selected_concept_spread_the_bias():
    bags, y = easy_bags(4)
    est = milsvm.MILES(C=1e-4).fit(bags, y)  # the penalty wins: w = 0, F = b
    assert est.n_selected_ == 0 and np.all(est.coef_ == 0.0)
    for bag, s in zip(bags, est.instance_decision_function(bags)):
        np.testing.assert_allclose(s, est.intercept_ / len(bag), rtol=1e-15)
    np.testing.assert_array_equal(est.decision_function(bags), np.full(len(bags), est.intercept_))


def test_rust_predictor_equals_python_and_the_one_bag_path():
    bags, y = easy_bags(5, n_bags=40)
    est = milsvm.MILES(C=10.0).fit(bags, y)
    core = milsvm.Model.from_json(est.model_.to_json())
    x, ptr = stacked(bags)
    np.testing.assert_array_equal(core.decision_function(x, ptr)[:, 0], est.decision_function(bags))
    for bag, f in zip(bags, est.decision_function(bags)):
        assert est.decision_function_bag(bag) == f  # a small basis: the same kernel both ways
    # a basis above the one-bag threshold (32): the batch path's blocked product, to rounding
    rng = np.random.default_rng(0)
    many = milsvm.Model(
        rng.normal(size=(80, 2)),
        rng.normal(size=(1, 80)),
        np.array([0.3]),
        "rbf",
        0.7,
        2,
        pooling="xv_max",
    )
    want = [many.decision_function_bag(np.ascontiguousarray(b))[0] for b in bags]
    np.testing.assert_allclose(many.decision_function(x, ptr)[:, 0], want, rtol=1e-12, atol=1e-12)
    Z = np.asarray(many.xv)
    ref = embedding_reference(x, ptr, Z, "rbf", 0.7) @ many.coef[0] + 0.3
    np.testing.assert_allclose(want, ref, rtol=1e-12, atol=1e-12)


def test_model_file_round_trip_and_versions(tmp_path):
    import json

    bags, y = easy_bags(6)
    est = milsvm.MILES(C=10.0, random_state=0).fit(bags, y)
    path = tmp_path / "miles.json"
    est.save(path)
    doc = json.loads(path.read_text())
    assert doc["version"] == 7 and doc["pooling"] == "xv_max" and doc["estimator"] == "MILES"
    back = milsvm.load(path)
    assert isinstance(back, milsvm.MILES) and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.decision_function(bags), est.decision_function(bags))
    np.testing.assert_array_equal(back.selected_, est.selected_)
    for s, t in zip(back.instance_decision_function(bags), est.instance_decision_function(bags)):
        np.testing.assert_array_equal(s, t)
    doc["version"] = 5  # no writer of version 5 had this pooling
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match='pooling.*"xv_max" needs model file version 6'):
        milsvm.load(path)


def test_sparse_bags_give_the_dense_fit():
    bags, y = random_bags(7, n_bags=24, d=6, sparse=True, density=0.6)
    dense = [b.toarray() for b in bags]
    for b, label in zip(dense, y):
        if label:
            b[0, 0] = 3.0
    bags = [sp.csr_matrix(b) for b in dense]
    s = milsvm.MILES(C=10.0, gamma=0.3).fit(bags, y)
    d = milsvm.MILES(C=10.0, gamma=0.3).fit(dense, y)
    assert sp.issparse(s.xv_)
    assert s.objective_ == pytest.approx(d.objective_, rel=1e-10)
    np.testing.assert_allclose(
        s.decision_function(dense), s.decision_function(bags), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_array_equal(s.predict(bags), d.predict(bags))
    r = milsvm.MILES(C=10.0, gamma=0.3, n_concepts=10, concept_init="random", random_state=1).fit(
        bags, y
    )
    assert sp.issparse(r.xv_) and r.n_concepts_ == 10


def test_reduced_concepts_by_kmeans_or_random_and_the_seed():
    bags, y = easy_bags(8, n_bags=30)
    n = sum(len(b) for b in bags)
    km = milsvm.MILES(C=10.0, n_concepts=8, random_state=3).fit(bags, y)
    assert km.n_concepts_ == 8 and km.xv_.shape[0] == km.n_selected_ <= 8
    again = milsvm.MILES(C=10.0, n_concepts=8, random_state=3).fit(bags, y)
    np.testing.assert_array_equal(again.xv_, km.xv_)
    rnd = milsvm.MILES(C=10.0, n_concepts=8, concept_init="random", random_state=3).fit(bags, y)
    X = np.vstack(bags)
    assert all(any(np.array_equal(z, x) for x in X) for z in rnd.xv_)  # training instances
    full = milsvm.MILES(C=10.0, n_concepts=n, concept_init="random").fit(bags, y)
    assert full.n_concepts_ == n and full.score(bags, y) >= 0.9


def test_thread_count_independence():
    bags, y = three_class_bags(n_bags=36)
    one = milsvm.MILES(C=10.0, n_jobs=1).fit(bags, y)
    two = milsvm.MILES(C=10.0, n_jobs=2).fit(bags, y)
    np.testing.assert_array_equal(one.xv_, two.xv_)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.decision_function(bags), two.decision_function(bags))
    np.testing.assert_array_equal(one.n_iter_, two.n_iter_)


def test_multi_class_is_one_vs_rest_on_one_embedding():
    bags, y = three_class_bags(n_bags=30)
    multi = assert_one_vs_rest(
        lambda: milsvm.MILES(C=10.0),
        bags,
        y,
        per_problem=("objective_", "n_selected_"),
        rtol=1e-12,
        atol=1e-12,
    )
    assert multi.coef_.shape == (3, multi.xv_.shape[0]) and multi.score(bags, y) == 1.0


def test_bad_input_is_refused_with_a_clear_message():
    bags, y = easy_bags(9)
    assert_refuses_bad_bags(lambda: milsvm.MILES(C=10.0), bags, y)
    n = sum(len(b) for b in bags)
    with pytest.raises(
        ValueError,
        match=rf"n_concepts \({n + 1}\) exceeds the number of training instances \({n}\)",
    ):
        milsvm.MILES(n_concepts=n + 1).fit(bags, y)
    with pytest.raises(ValueError, match="n_concepts must be"):
        milsvm.MILES(n_concepts=0).fit(bags, y)
    with pytest.raises(TypeError, match="n_concepts"):
        milsvm.MILES(n_concepts="many").fit(bags, y)
    with pytest.raises(ValueError, match="concept_init must be one of 'kmeans', 'random'"):
        milsvm.MILES(concept_init="svm").fit(bags, y)
    for C in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="C must be"):
            milsvm.MILES(C=C).fit(bags, y)
    with pytest.raises(TypeError, match="C must be"):
        milsvm.MILES(C="big").fit(bags, y)
    with pytest.raises(ValueError, match="inner_tol must"):
        milsvm.MILES(inner_tol=2.0).fit(bags, y)
    with pytest.raises(ValueError, match="gamma"):
        milsvm.MILES(gamma=-1.0).fit(bags, y)


def test_iteration_cap_warns():
    from sklearn.exceptions import ConvergenceWarning

    bags, y = easy_bags(10)
    with pytest.warns(ConvergenceWarning, match="inner_max_iter"):
        est = milsvm.MILES(C=10.0, inner_max_iter=2).fit(bags, y)
    assert not est.converged_ and est.n_iter_ == 2


def test_sklearn_clone_pickle_and_grid_search():
    assert_clone_and_pickle(milsvm.MILES(gamma=0.5))
    bags, y = easy_bags(11, n_bags=30)
    search = GridSearchCV(
        milsvm.MILES(),
        {"C": [0.01, 10.0], "gamma": [0.5, "scale"]},
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    ).fit(bags, y)
    assert search.best_params_["C"] == 10.0 and search.best_score_ >= 0.9
    assert clone(search.best_estimator_).get_params() == search.best_estimator_.get_params()


def test_probability_and_progress(capsys):
    bags, y = easy_bags(12, n_bags=30)
    est = milsvm.MILES(C=10.0, probability=True, random_state=0).fit(bags, y)
    p = est.predict_proba(bags)
    assert p.shape == (30, 2) and np.allclose(p.sum(axis=1), 1.0)
    assert np.mean((p[:, 1] > 0.5) == (y == 1)) >= 0.9
    rng = np.random.default_rng(1)
    big = [rng.normal(size=(4, 3)) + (i % 2) for i in range(80)]
    labels = np.arange(80) % 2
    est = milsvm.MILES(C=100.0, gamma=2.0, verbose=2).fit(big, labels)
    out = capsys.readouterr().out
    steps = [ln for ln in out.splitlines() if ln.startswith("[MILES]") and " step " in ln]
    assert steps and steps[-1].startswith(f"[MILES] step {est.n_iter_}/")
    assert "concepts selected" in out


def test_the_paper_parameters_map_to_C_and_class_weight():
    """lambda sum |w| + mu sum_+ xi + (1 - mu) sum_- xi == lambda * (sum |w| + C sum w_i xi) with
    C = 1 / lambda and class weights (mu, 1 - mu)."""
    bags, y = easy_bags(13, n_bags=30)
    lam, mu = 0.2, 0.6
    est = milsvm.MILES(C=1 / lam, class_weight={1: mu, 0: 1 - mu}, gamma=0.5).fit(bags, y)
    x, ptr = stacked(bags)
    E = _core.miles_embedding(x, ptr, x, "rbf", 0.5)
    yy = np.where(y == 1, 1.0, -1.0)
    m, n = E.shape
    A = np.hstack([-yy[:, None] * E, yy[:, None] * E, -yy[:, None], yy[:, None], -np.eye(m)])
    c = np.concatenate([np.full(2 * n, lam), [0.0, 0.0], np.where(y == 1, mu, 1 - mu)])
    paper = so.linprog(c, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method="highs").fun
    assert lam * est.objective_ == pytest.approx(paper, rel=1e-9)


def test_a_linear_model_keeps_its_concepts():
    """With the linear kernel the score sum_k w_k max_p <z_k, x_p> is not linear in the bag: the
    selected concepts are the basis (never collapsed into one weight vector) and new bags score
    by their embedding."""
    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    bags = [
        rng.normal(size=(rng.integers(2, 6), 5)) + 1.5 * y[i] * np.eye(5)[i % 5] for i in range(40)
    ]
    est = milsvm.MILES(C=10.0, kernel="linear").fit(bags, y)
    assert est.n_selected_ >= 2
    x, _ = stacked(bags)
    np.testing.assert_array_equal(est.xv_, x[est.selected_])
    test = [rng.normal(size=(rng.integers(2, 6), 5)) for _ in range(10)]
    xt, pt = stacked(test)
    Et = embedding_reference(xt, pt, est.xv_, "linear", 1.0)
    np.testing.assert_allclose(
        est.decision_function(test), Et @ est.coef_ + est.intercept_, rtol=1e-10, atol=1e-10
    )
