"""Scale-out: parallel model selection through joblib, and the Dask routes.

- ``GridSearchCV(n_jobs=2)`` and ``cross_val_score(n_jobs=2)`` (joblib's process pool) give
  the results of ``n_jobs=1``;
- ``joblib.parallel_backend("dask")`` on a ``distributed.LocalCluster`` gives them too;
- :func:`milsvm.distributed.score_bags` over a ``dask.bag`` equals ``decision_function`` /
  ``predict`` on the whole collection.

The Dask tests need ``pip install milsvm[dask]`` (the ``test`` extra includes it); without dask
they are skipped. The cluster uses two worker *processes*, so estimators and fitted models go
through pickling exactly as on a real cluster.
"""

import sys

import milsvm
import numpy as np
import pytest
from milsvm.datasets import make_center_ring_bags, make_four_gaussians_bags
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline


@pytest.fixture(scope="module")
def ring_data():
    """40 small 2-D bags (centre/ring data): a fit takes milliseconds."""
    return make_center_ring_bags(n_bags=40, bag_size=(3, 6), random_state=0)


def _estimators():
    # n_jobs=1 inside the estimator: the parallelism is the search's (no nested oversubscription).
    return {
        "nsk": (milsvm.NSK(n_jobs=1), {"nsk__C": [0.1, 1.0, 10.0], "nsk__gamma": [0.1, 1.0]}),
        "sparsemi": (
            milsvm.SparseMI(n_xv=3, max_iter=5, random_state=0, n_jobs=1),
            {"sparsemi__C": [1.0, 10.0], "sparsemi__n_xv": [2, 4]},
        ),
    }


def _search(name):
    est, grid = _estimators()[name]
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    pipe = make_pipeline(milsvm.BagStandardScaler(), est)
    return GridSearchCV(pipe, grid, cv=cv, scoring="roc_auc")


def _assert_same_search(a, b, bags):
    assert a.best_params_ == b.best_params_
    assert a.best_score_ == b.best_score_
    for key in ("mean_test_score", "std_test_score", "rank_test_score"):
        np.testing.assert_array_equal(a.cv_results_[key], b.cv_results_[key])
    np.testing.assert_allclose(
        a.best_estimator_.decision_function(bags),
        b.best_estimator_.decision_function(bags),
        rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize("name", ["nsk", "sparsemi"])
def test_grid_search_n_jobs_matches_serial(ring_data, name):
    bags, y = ring_data
    serial = _search(name).set_params(n_jobs=1).fit(bags, y)
    parallel = _search(name).set_params(n_jobs=2).fit(bags, y)
    _assert_same_search(serial, parallel, bags)


def test_cross_val_score_n_jobs_matches_serial(ring_data):
    bags, y = ring_data
    model = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10.0, n_jobs=1))
    cv = StratifiedKFold(n_splits=4, shuffle=True, random_state=1)
    serial = cross_val_score(model, bags, y, cv=cv, scoring="roc_auc", n_jobs=1)
    parallel = cross_val_score(model, bags, y, cv=cv, scoring="roc_auc", n_jobs=2)
    np.testing.assert_array_equal(serial, parallel)
    assert serial.mean() > 0.8  # the data are easy: a sanity check that the folds were fitted


def test_cross_val_score_accepts_bags_container(ring_data):
    """The stacked :class:`milsvm.Bags` container splits across joblib workers too."""
    bags, y = ring_data
    stacked = milsvm.as_bags(bags)
    model = milsvm.NSK(C=10.0, n_jobs=1)
    np.testing.assert_array_equal(
        cross_val_score(model, stacked, y, cv=3, n_jobs=2),
        cross_val_score(model, bags, y, cv=3, n_jobs=1),
    )


def test_score_bags_without_dask_says_how_to_install(monkeypatch, ring_data):
    from milsvm.distributed import score_bags

    bags, y = ring_data
    clf = milsvm.NSK(n_jobs=1).fit(bags, y)
    monkeypatch.setitem(sys.modules, "dask", None)  # makes `import dask` raise ImportError
    monkeypatch.setitem(sys.modules, "dask.bag", None)
    with pytest.raises(ImportError, match=r"pip install milsvm\[dask\]"):
        score_bags(clf, bags)


# ------------------------------------------------------------------------------------------
# Dask
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nsk", "sparsemi"])
def test_grid_search_on_dask_backend_matches_local(dask_client, ring_data, name):
    import joblib

    bags, y = ring_data
    local = _search(name).set_params(n_jobs=1).fit(bags, y)
    with joblib.parallel_backend("dask"):
        remote = _search(name).set_params(n_jobs=-1).fit(bags, y)
    _assert_same_search(local, remote, bags)


def test_score_bags_on_cluster_matches_decision_function(dask_client, ring_data):
    import dask.bag as db
    from milsvm.distributed import score_bags

    bags, y = ring_data
    clf = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10.0, n_jobs=1)).fit(bags, y)
    test, _ = make_center_ring_bags(n_bags=300, bag_size=(1, 8), random_state=1)

    expected = clf.decision_function(test)
    # From an in-memory list, and from a dask.bag with uneven partitions.
    got = score_bags(clf, test, partition_size=32)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    got = score_bags(clf, db.from_sequence(test, npartitions=7))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(
        score_bags(clf, test, method="predict", npartitions=5), clf.predict(test)
    )

    lazy = score_bags(clf, db.from_sequence(test, npartitions=4), compute=False)
    assert isinstance(lazy, db.Bag)
    assert lazy.npartitions == 4
    np.testing.assert_allclose(np.asarray(lazy.compute()), expected, rtol=1e-12, atol=1e-12)


def test_score_bags_multiclass_and_bags_from_a_loader(dask_client):
    """Rows of a multi-class score matrix stay in order; bags can be built lazily on workers."""
    import dask.bag as db
    from milsvm.distributed import score_bags

    bags, y = make_four_gaussians_bags(n_bags=30, random_state=0)
    clf = milsvm.SparseMI(n_xv=3, max_iter=5, random_state=0, n_jobs=1).fit(bags, y)
    test, _ = make_four_gaussians_bags(n_bags=60, random_state=1)

    expected = clf.decision_function(test)
    assert expected.ndim == 2
    # Each task "loads" its bags (here: regenerates them from a seed) instead of receiving them.
    lazy_bags = db.from_sequence(range(60), npartitions=6).map(lambda i: test[i])
    got = score_bags(clf, lazy_bags)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(score_bags(clf, test, method="predict"), clf.predict(test))


def test_score_bags_local_scheduler_and_sparse_bags():
    """No cluster needed: Dask's local scheduler; CSR bags are passed through unchanged."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.bag")
    import scipy.sparse as sp
    from milsvm.distributed import score_bags

    rng = np.random.default_rng(0)
    bags = []
    for i in range(40):
        x = rng.normal(-1.0, 0.5, size=(int(rng.integers(1, 5)), 6))
        if i % 2:
            x[0, :3] += 3.0
        x[np.abs(x) < 0.4] = 0.0
        bags.append(sp.csr_matrix(x))
    y = np.arange(40) % 2
    clf = milsvm.NSK(kernel="linear", n_jobs=1).fit(bags, y)
    expected = clf.decision_function(bags)
    with dask.config.set(scheduler="synchronous"):
        got = score_bags(clf, bags, partition_size=9)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        # The stacked container is a sequence of bags too.
        got = score_bags(clf, milsvm.as_bags(bags), npartitions=3)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_score_bags_rejects_bad_arguments(ring_data):
    pytest.importorskip("dask.bag")
    from milsvm.distributed import score_bags
    from sklearn.exceptions import NotFittedError

    bags, y = ring_data
    with pytest.raises(NotFittedError):
        score_bags(milsvm.NSK(), bags)
    clf = milsvm.NSK(n_jobs=1).fit(bags, y)
    with pytest.raises(ValueError, match="no method 'transform'"):
        score_bags(clf, bags, method="transform")
    with pytest.raises(ValueError, match="method must be"):
        score_bags(clf, bags, method=len)
    with pytest.raises(ValueError, match="empty"):
        score_bags(clf, [])
    with pytest.raises(ValueError, match="partition_size"):
        score_bags(clf, bags, partition_size=0)
    with pytest.raises(ValueError, match="npartitions"):
        score_bags(clf, bags, npartitions=2.5)
