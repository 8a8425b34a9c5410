"""``fit_path``: a grid over ``C`` as one path, against independent fits, and the command line's
inner grid search with and without paths.

Tolerances. ReducedSet, NSK, sMIL, SIL and STK paths reuse only what does not depend on ``C``
(the set-kernel matrix, the instance or statistic kernel, the kernel-row cache) and start every
solve where an independent fit does: their models equal independent fits bit for bit, as do MILES
paths (the embedding computed once, every LP solved from the slack basis). MIKernel and RSVM start
each Newton solve from the previous ``C``'s solution; Newton stops at a relative gradient of 1e-10
from either start and both reach the exact minimiser, so the decision values agree to 1e-7 of the
largest score.
"""

import milsvm
import numpy as np
import pytest
from conftest import easy_bags, three_class_bags
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core
from milsvm._registry import ESTIMATORS

CS = [10.0, 0.1, 1.0, 100.0, 1.0]

PATHS = {
    "MIKernel": ({}, 1e-7),
    "ReducedSet": ({"n_xv": 4, "random_state": 0}, 0.0),  # K_set reused, no warm start: bit for bit
    "NSK": ({}, 0.0),
    "sMIL": ({}, 0.0),
    "RSVM": ({"n_xv": 5, "random_state": 0}, 1e-7),
    "MILES": ({}, 0.0),  # the embedding reused, each LP from the slack basis: bit for bit
    "SIL": ({}, 0.0),  # the instance kernel reused, every SMO solve from zero: bit for bit
    "STK": ({}, 0.0),  # the statistic vectors and their kernel reused: bit for bit
}


def noisy_bags(seed=0, n_bags=30):
    """Overlapping classes, so that the margin moves with C."""
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        x = rng.uniform(-1.5, 1.5, size=(int(rng.integers(1, 6)), 3))
        if i % 2:
            x[0] += 1.5
        bags.append(x)
        y.append(i % 2)
    return bags, np.array(y)


def assert_scores_close(a, b, tol, what):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= tol * scale, (
        f"{what}: path and independent fit differ by {err:g} (scale {scale:g})"
    )


@pytest.mark.parametrize("name", sorted(PATHS))
def test_path_equals_independent_fits(name):
    params, tol = PATHS[name]
    cls = ESTIMATORS[name]
    assert cls._c_path
    for bags, y in (noisy_bags(1), three_class_bags(30, seed=2)):
        est = cls(**params)
        fitted = est.fit_path(bags, y, CS)
        assert [e.C for e in fitted] == CS
        assert "model_" not in est.__dict__  # the estimator itself is left as it was
        for e, c in zip(fitted, CS):
            alone = cls(**params, C=c).fit(bags, y)
            assert_scores_close(
                e.decision_function(bags), alone.decision_function(bags), tol, f"{name} C={c}"
            )
            assert e.get_params() == alone.get_params()
            assert e.fit_time_ > 0


@given(cs=st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_paths_equal_independent_fits_on_any_values(cs, seed):
    bags, y = noisy_bags(seed, n_bags=12)
    for cls, tol in ((milsvm.NSK, 0.0), (milsvm.STK, 0.0), (milsvm.MIKernel, 1e-7)):
        fitted = cls().fit_path(bags, y, cs)
        for e, c in zip(fitted, cs):
            alone = cls(C=c).fit(bags, y)
            assert_scores_close(
                e.decision_function(bags),
                alone.decision_function(bags),
                tol,
                f"{cls.__name__} C={c}",
            )


@pytest.mark.parametrize("name", sorted(PATHS))
def test_predict_path_equals_predict(name):
    from milsvm._base import predict_path

    params, _ = PATHS[name]
    cls = ESTIMATORS[name]
    for bags, y in (noisy_bags(6), three_class_bags(30, seed=7)):
        fitted = cls(**params).fit_path(bags[:20], y[:20], CS)
        for e, labels in zip(fitted, predict_path(fitted, bags[20:])):
            np.testing.assert_array_equal(labels, e.predict(bags[20:]))
        scores = _core.decision_functions([e.model_ for e in fitted], *_stacked(bags[20:]))
        for e, s in zip(fitted, scores):
            own = e.decision_function(bags[20:])
            np.testing.assert_allclose(s[:, 0] if own.ndim == 1 else s, own, rtol=1e-12, atol=1e-12)


def _stacked(bags):
    b = milsvm.as_bags(bags)
    return b.core_instances(), b.bag_ptr


def test_estimators_without_a_path_fit_each_value():
    bags, y = easy_bags(3, n_bags=12)
    fitted = milsvm.SparseMI(n_xv=2, max_iter=3, random_state=0).fit_path(bags, y, [1.0, 10.0])
    for e, c in zip(fitted, [1.0, 10.0]):
        alone = milsvm.SparseMI(n_xv=2, max_iter=3, random_state=0, C=c).fit(bags, y)
        np.testing.assert_array_equal(e.decision_function(bags), alone.decision_function(bags))
    with pytest.raises(TypeError, match="no parameter C"):
        milsvm.OneClassMISVM().fit_path(bags, y, [1.0])


def test_path_flag_matches_the_core():
    """``_c_path`` is set exactly where the core has a path binding worth taking."""
    with_path = {name for name, cls in ESTIMATORS.items() if cls._c_path}
    assert with_path == set(PATHS)
    for name in with_path:
        assert hasattr(_core, ESTIMATORS[name]._core_fit + "_path"), name


@pytest.mark.parametrize(
    "cs, error",
    [
        ([], ValueError),
        ([1.0, 0.0], ValueError),
        ([float("nan")], ValueError),
        (["1"], TypeError),
        ([True], TypeError),
        (1.0, TypeError),
    ],
)
def test_bad_values_are_refused(cs, error):
    bags, y = easy_bags(0, n_bags=8)
    with pytest.raises(error):
        milsvm.NSK().fit_path(bags, y, cs)


def test_path_with_probability_and_bad_other_parameters():
    bags, y = easy_bags(1, n_bags=20)
    fitted = milsvm.MIKernel(probability=True).fit_path(bags, y, [0.5, 5.0])
    for e in fitted:
        assert e.predict_proba(bags).shape == (20, 2)
    with pytest.raises(ValueError, match="inner_tol"):
        milsvm.NSK(inner_tol=2.0).fit_path(bags, y, [1.0])
    # the estimator's own C is not used by the path
    fitted = milsvm.NSK(C=-1.0).fit_path(bags, y, [1.0])
    assert fitted[0].C == 1.0


@pytest.mark.parametrize("name", ["NSK", "MIKernel", "RSVM", "STK"])
def test_cv_choices_are_the_same_with_and_without_paths(name, monkeypatch):
    from milsvm._crossval import cross_validate, n_fits

    cls = ESTIMATORS[name]
    bags, y = noisy_bags(5, n_bags=36)
    bags = milsvm.as_bags(bags)
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.1, 1.0]}
    params = {"random_state": 0} if name == "RSVM" else {}
    runs, counts = [], []
    for path in (True, False):
        monkeypatch.setattr(cls, "_c_path", path)
        seen = []
        runs.append(
            cross_validate(
                cls,
                params,
                bags,
                y,
                folds=3,
                seed=4,
                grid=grid,
                inner_folds=3,
                progress=seen.append,
            )
        )
        counts.append(sum(seen))
    with_path, without = runs
    for a, b in zip(with_path.folds, without.folds):
        assert a["params"] == b["params"]
        assert a["inner_accuracy"] == b["inner_accuracy"]
        assert a["accuracy"] == b["accuracy"]
    assert counts[0] == counts[1] == n_fits(3, 8, 3)


@pytest.mark.parametrize("name", ["NSK", "MIKernel", "SIL", "STK"])
def test_path_calibration_equals_each_values_own(name):
    """With ``probability=True`` the calibration's internal refits run as paths; the sigmoids
    and probabilities are those of independent fits with ``probability=True``."""
    cls = ESTIMATORS[name]
    bags, y = noisy_bags(3, n_bags=30)
    cs = [0.5, 5.0, 50.0]
    fitted = cls(probability=True).fit_path(bags, y, cs)
    for e, c in zip(fitted, cs):
        alone = cls(**{**e.get_params(), "C": c}).fit(bags, y)
        np.testing.assert_allclose(
            e.predict_proba(bags), alone.predict_proba(bags), rtol=0, atol=1e-6
        )


def test_cv_inner_fits_skip_the_calibration(monkeypatch):
    """``probability=True``: the inner grid search (paths or not) scores ``predict`` without
    calibrating; only the outer refits calibrate, and the choices do not depend on paths."""
    from milsvm._base import MILClassifier
    from milsvm._crossval import cross_validate

    bags, y = noisy_bags(5, n_bags=36)
    bags = milsvm.as_bags(bags)
    calls = []
    original = MILClassifier._calibrations
    monkeypatch.setattr(
        MILClassifier, "_calibrations", lambda self, *a: calls.append(1) or original(self, *a)
    )
    runs = []
    for path in (True, False):
        monkeypatch.setattr(milsvm.NSK, "_c_path", path)
        calls.clear()
        runs.append(
            cross_validate(
                milsvm.NSK,
                {"probability": True},
                bags,
                y,
                folds=3,
                seed=4,
                grid={"C": [0.1, 1.0, 10.0]},
                inner_folds=3,
            )
        )
        assert len(calls) == 3  # the outer refits only
    for a, b in zip(*(r.folds for r in runs)):
        assert a["params"] == b["params"] and a["inner_accuracy"] == b["inner_accuracy"]
