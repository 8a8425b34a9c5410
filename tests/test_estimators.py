"""The scikit-learn contract and the behaviour of SparseMI / RSVM."""

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import assert_clone_and_pickle, easy_bags, random_bags, three_class_bags
from milsvm import RSVM, Bags, BagStandardScaler, SparseMI
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline

ESTIMATORS = [SparseMI(n_xv=4, max_iter=10, random_state=0), RSVM(n_xv=4, random_state=0)]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_clone_params_and_pickle(est):
    assert_clone_and_pickle(est)


def test_parameter_names_are_each_classs_own_whatever_asks_first():
    """The parameter names are worked out once per class: a subclass with another constructor
    gets its own, whether the base class or the subclass was asked first, and they are
    scikit-learn's (the constructor's, sorted)."""
    import inspect

    from sklearn.base import BaseEstimator

    def make():
        # a leading underscore keeps it out of the estimator registry
        class _Wider(RSVM):
            def __init__(self, n_xv=4, extra=3):
                self.n_xv = n_xv
                self.extra = extra

        return _Wider

    Wider = make()
    assert Wider._get_param_names() == ["extra", "n_xv"]
    assert RSVM._get_param_names() == BaseEstimator._get_param_names.__func__(RSVM)
    Wider = make()
    assert RSVM._get_param_names() == sorted(
        p for p in inspect.signature(RSVM.__init__).parameters if p != "self"
    )
    assert Wider._get_param_names() == ["extra", "n_xv"]
    # a returned list may be changed without changing the next answer
    names = RSVM._get_param_names()
    names.append("nonsense")
    assert "nonsense" not in RSVM._get_param_names()
    assert clone(Wider(extra=5)).extra == 5


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_not_fitted_error(est):
    with pytest.raises(NotFittedError):
        clone(est).predict(easy_bags()[0])


@pytest.mark.parametrize("labels", [(-1, 1), (0, 1), ("cat", "dog"), (2.0, 7.0)])
def test_any_two_labels(labels):
    bags, y01 = easy_bags()
    y = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[y01]
    clf = SparseMI(n_xv=3, C=10, random_state=0).fit(bags, y)
    assert list(clf.classes_) == sorted(labels)
    pred = clf.predict(bags)
    assert set(pred) <= set(labels)
    assert np.mean(pred == y) == 1.0
    # a positive score means classes_[1]
    scores = clf.decision_function(bags)
    assert scores.shape == (len(bags),)
    np.testing.assert_array_equal(pred, clf.classes_[(scores > 0).astype(int)])


def test_fitted_attributes_and_history():
    bags, y = easy_bags()
    clf = SparseMI(n_xv=5, C=1.0, random_state=1).fit(bags, y)
    assert clf.xv_.shape == (5, 2) and clf.coef_.shape == (5,) and isinstance(clf.intercept_, float)
    assert clf.n_features_in_ == 2 and clf.gamma_ > 0
    h = clf.objective_history_
    assert len(h) == clf.n_iter_ + 1
    assert np.all(np.diff(h) <= 0), h
    assert h[-1] < h[0]
    # the history starts at g(initial XVs) = the RSVM objective with the same random start
    rsvm = RSVM(n_xv=5, C=1.0, random_state=1).fit(bags, y)
    np.testing.assert_array_equal(rsvm.xv_, clf.initial_xv_)
    assert rsvm.objective_history_[0] == pytest.approx(h[0], rel=1e-10)


def test_gamma_scale_is_sklearn_definition():
    bags, y = easy_bags()
    X = np.concatenate(bags)
    clf = SparseMI(n_xv=2, max_iter=0).fit(bags, y)
    assert clf.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert SparseMI(n_xv=2, max_iter=0, gamma=0.7).fit(bags, y).gamma_ == 0.7


def test_reproducible_for_any_thread_count():
    bags, y = random_bags(5, n_bags=40, d=6, max_size=30)
    fits = [SparseMI(n_xv=6, max_iter=8, random_state=3, n_jobs=j).fit(bags, y) for j in (1, 2, 4)]
    for f in fits[1:]:
        np.testing.assert_array_equal(f.xv_, fits[0].xv_)
        np.testing.assert_array_equal(f.coef_, fits[0].coef_)
        np.testing.assert_array_equal(f.objective_history_, fits[0].objective_history_)
    other = SparseMI(n_xv=6, max_iter=8, random_state=4).fit(bags, y)
    assert not np.array_equal(other.initial_xv_, fits[0].initial_xv_)


def rsvm_inner_optimum(bags, y, xv, gamma, C, ridge=1e-8):
    """The optimal value of RSVM's inner problem written out (Fu et al. eq. 9), by scipy's BFGS:
    per one-vs-rest output ``min 1/2 beta^T (K_Z + ridge I) beta + C sum_i max(0, 1 - y_i
    (M_i beta + b))^2`` with ``M_ik`` the bag mean of ``exp(-gamma |x - z_k|^2)``, summed."""
    import scipy.optimize as so

    def rbf(X, Z):
        return np.exp(-gamma * ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1))

    M = np.array([rbf(np.asarray(b), xv).mean(0) for b in bags])
    H = rbf(xv, xv) + ridge * np.eye(len(xv))
    classes = np.unique(y)
    total = 0.0
    for c in classes[1:] if len(classes) == 2 else classes:
        s = np.where(y == c, 1.0, -1.0)

        def f(w):
            m = np.maximum(0.0, 1.0 - s * (M @ w[:-1] + w[-1]))
            return 0.5 * w[:-1] @ H @ w[:-1] + C * (m**2).sum()

        def grad(w):
            d = -2.0 * C * np.maximum(0.0, 1.0 - s * (M @ w[:-1] + w[-1])) * s
            return np.concatenate([H @ w[:-1] + M.T @ d, [d.sum()]])

        r = so.minimize(
            f,
            np.zeros(len(xv) + 1),
            jac=grad,
            method="BFGS",
            options={"gtol": 1e-12, "maxiter": 10_000},
        )
        total += r.fun
    return total


@pytest.mark.parametrize("n_classes", [2, 3])
def test_solvers_give_the_same_model(n_classes):
    """The L-BFGS inner solver reaches the Newton solver's optimum (the default solver): the same
    optimal value g(Z), coefficients, decision values and predictions; and that value is the
    optimum of the inner problem solved independently by scipy."""
    bags, y = random_bags(6, n_bags=30, d=4)
    y = np.arange(len(bags)) % n_classes
    newton = RSVM(n_xv=5, C=2.0, random_state=0).fit(bags, y)
    lbfgs = RSVM(n_xv=5, C=2.0, random_state=0, solver="lbfgs").fit(bags, y)
    assert newton.solver == "newton"
    np.testing.assert_array_equal(lbfgs.xv_, newton.xv_)  # the same random expansion vectors
    assert lbfgs.objective_history_[0] == pytest.approx(newton.objective_history_[0], rel=1e-8)
    np.testing.assert_array_equal(lbfgs.predict(bags), newton.predict(bags))
    np.testing.assert_allclose(lbfgs.coef_, newton.coef_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(lbfgs.intercept_, newton.intercept_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        lbfgs.decision_function(bags), newton.decision_function(bags), rtol=1e-6, atol=1e-6
    )
    independent = rsvm_inner_optimum(bags, y, newton.xv_, newton.gamma_, 2.0)
    assert newton.objective_history_[0] == pytest.approx(independent, rel=1e-8)
    assert lbfgs.objective_history_[0] == pytest.approx(independent, rel=1e-8)


def test_dense_sparse_and_bags_container_give_the_same_model():
    bags, y = random_bags(7, n_bags=20, d=5, sparse=False)
    for b in bags:
        b[np.abs(b) < 0.6] = 0.0
    sparse_bags = [sp.csr_matrix(b) for b in bags]
    stacked = Bags.from_instances(np.concatenate(bags), [len(b) for b in bags])
    stacked_sparse = Bags.from_instances(
        sp.csr_matrix(np.concatenate(bags)), [len(b) for b in bags]
    )
    models = [
        SparseMI(n_xv=4, max_iter=10, random_state=0).fit(b, y)
        for b in (bags, sparse_bags, stacked, stacked_sparse)
    ]
    for m in models[1:]:
        np.testing.assert_allclose(m.xv_, models[0].xv_, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(m.coef_, models[0].coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        models[1].decision_function(sparse_bags),
        models[0].decision_function(bags),
        rtol=1e-8,
        atol=1e-10,
    )


def test_grid_search_and_cross_val_score_over_bags():
    bags, y = easy_bags(n_bags=30)
    pipe = make_pipeline(BagStandardScaler(), SparseMI(n_xv=3, max_iter=5, random_state=0))
    scores = cross_val_score(pipe, bags, y, cv=StratifiedKFold(3, shuffle=True, random_state=0))
    assert scores.mean() > 0.9
    gs = GridSearchCV(
        SparseMI(n_xv=3, max_iter=5, random_state=0),
        {"C": [0.1, 10.0], "gamma": ["scale", 0.5]},
        cv=3,
    )
    gs.fit(bags, y)
    assert gs.best_params_["C"] in (0.1, 10.0)
    assert gs.score(bags, y) > 0.9
    # a Bags container splits too
    stacked = Bags.from_instances(np.concatenate(bags), [len(b) for b in bags])
    assert cross_val_score(RSVM(n_xv=3, random_state=0), stacked, y, cv=3).mean() > 0.8


def test_multiclass_shares_expansion_vectors():
    bags, y = three_class_bags()
    for seed in range(3):
        clf = SparseMI(n_xv=3, C=10, random_state=seed).fit(bags, y)
        start = RSVM(n_xv=3, C=10, random_state=seed).fit(bags, y)
        assert clf.coef_.shape == (3, 3) and clf.intercept_.shape == (3,)
        assert clf.decision_function(bags).shape == (45, 3)
        assert np.all(np.diff(clf.objective_history_) <= 0)
        # learning the shared XVs turns a poor random start into a perfect fit
        assert np.mean(start.predict(bags) == y) < 0.8
        assert np.mean(clf.predict(bags) == y) == 1.0
    # cross-check of the shared-XV path: with the same seed, one-vs-rest over independent
    # binary RSVMs draws the same XVs, so its scores equal the multi-class RSVM's columns
    ovr = OneVsRestClassifier(RSVM(n_xv=4, C=10, random_state=0)).fit(bags, y)
    multi = RSVM(n_xv=4, C=10, random_state=0).fit(bags, y)
    np.testing.assert_allclose(
        ovr.decision_function(bags), multi.decision_function(bags), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_array_equal(ovr.predict(bags), multi.predict(bags))


def test_rsvm_is_sparse_mi_without_iterations():
    bags, y = easy_bags()
    a = RSVM(n_xv=4, C=2.0, random_state=5).fit(bags, y)
    b = SparseMI(n_xv=4, C=2.0, random_state=5, max_iter=0).fit(bags, y)
    np.testing.assert_array_equal(a.xv_, b.xv_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == 0 and len(a.objective_history_) == 1


def test_musk1_accuracy_is_in_the_papers_range(musk1):
    bags, y = musk1
    pipe = make_pipeline(BagStandardScaler(), SparseMI(n_xv=10, C=10.0, random_state=0))
    acc = cross_val_score(
        pipe, bags, y, cv=StratifiedKFold(10, shuffle=True, random_state=0)
    ).mean()
    assert acc > 0.8, acc


def test_bag_standard_scaler():
    bags, y = random_bags(8, n_bags=10, d=3)
    scaled = BagStandardScaler().fit_transform(bags)
    X = scaled.X
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1, atol=1e-12)
    assert len(scaled) == len(bags) and np.array_equal(scaled.bag_sizes, [len(b) for b in bags])


def test_version():
    assert isinstance(milsvm.__version__, str)


@pytest.mark.parametrize("multiclass", [False, True])
def test_save_and_load_round_trip(tmp_path, multiclass):
    bags, y = easy_bags()
    if multiclass:
        y = np.array(["x", "y", "z"])[np.arange(len(y)) % 3]
    clf = SparseMI(n_xv=3, C=5.0, max_iter=5, random_state=0).fit(bags, y)
    path = tmp_path / "model.json"
    clf.save(path)
    back = milsvm.load(path)
    assert type(back) is SparseMI and back.C == 5.0
    np.testing.assert_array_equal(back.decision_function(bags), clf.decision_function(bags))
    np.testing.assert_array_equal(back.predict(bags), clf.predict(bags))


def test_load_rejects_foreign_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "other", "version": 1, "model": {}}')
    with pytest.raises(ValueError, match="model file"):
        milsvm.load(path)
