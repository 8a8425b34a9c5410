"""``probability=True``: Platt's sigmoid on internally cross-validated bag scores, for every
estimator of the registry, checked against scikit-learn's ``CalibratedClassifierCV`` on the same
folds, the sigmoid fit against scipy, the Rust predictor against the Python one, and the
calibration's worth on held-out MUSK1 bags."""

import warnings

import milsvm
import numpy as np
import pytest
from conftest import make_fast, three_class_bags
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core, _registry
from milsvm._base import calibration_folds
from scipy.optimize import minimize
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import train_test_split

ALL = list(_registry.ESTIMATORS.values())
make = make_fast


def overlapping_bags(seed=0, n_bags=40):
    """Positive bags hold an instance near (1, 1), negative bags noise around (-0.5, -0.5): the
    classes overlap, so that the sigmoid is not a step."""
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        x = rng.normal(-0.5, 1.0, size=(int(rng.integers(2, 6)), 2))
        if i % 2:
            x[0] = rng.normal(1.0, 0.8, size=2)
        bags.append(x)
        y.append(i % 2)
    return bags, np.array(y)


def quietly(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return f(*args)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_the_same_probabilities_as_calibrated_classifier_cv_on_the_same_folds(cls):
    bags, y = overlapping_bags()
    est = quietly(make(cls, probability=True).fit, bags, y)
    seed = est.get_params().get("random_state")
    folds = list(calibration_folds(seed).split(np.zeros(len(y)), y))
    # sMIL's auto bag score calibrates the rule the model kept (its folds refit with it); the
    # sigmoid then maps the scores of the model fitted on all bags
    kept = {"bag_score": est.bag_score_} if cls is milsvm.sMIL else {}
    reference = CalibratedClassifierCV(
        make(cls, **kept), method="sigmoid", cv=folds, ensemble=False
    )
    quietly(reference.fit, bags, y)
    want = reference.predict_proba(bags)
    if kept:
        sigmoid = reference.calibrated_classifiers_[0].calibrators[0]
        p = sigmoid.predict(est.decision_function(bags))
        want = np.column_stack([1 - p, p])
    got = est.predict_proba(bags)
    # scikit-learn minimises the same objective with L-BFGS-B (gtol 1e-6), the core with Newton
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(est.predict_log_proba(bags), np.log(got))
    # the model without probabilities is the one fitted on all bags, as the reference's
    np.testing.assert_array_equal(
        est.decision_function(bags), quietly(make(cls).fit, bags, y).decision_function(bags)
    )


@pytest.mark.parametrize("name", ["NSK", "SparseMI", "MISVM"])
def test_one_vs_rest_probabilities_are_coupled_as_calibrated_classifier_cv(name):
    cls = _registry.ESTIMATORS[name]
    bags, y = three_class_bags(n_bags=45)
    rng = np.random.default_rng(1)
    bags = [b + rng.normal(0, 1.5, size=b.shape) for b in bags]  # overlap the classes
    est = quietly(make(cls, probability=True).fit, bags, y)
    folds = list(calibration_folds(est.get_params().get("random_state")).split(np.zeros(len(y)), y))
    reference = quietly(
        CalibratedClassifierCV(make(cls), method="sigmoid", cv=folds, ensemble=False).fit, bags, y
    )
    got = est.predict_proba(bags)
    np.testing.assert_allclose(got, reference.predict_proba(bags), atol=2e-5)
    assert got.shape == (len(y), 3) and list(est.classes_) == ["a", "b", "c"]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_the_ensemble_equals_calibrated_classifier_cv_with_ensemble_true(cls):
    bags, y = overlapping_bags()
    est = quietly(make(cls, probability="ensemble").fit, bags, y)
    folds = list(calibration_folds(est.get_params().get("random_state")).split(np.zeros(len(y)), y))
    # sMIL's auto bag score: the members are refitted with the rule the model kept
    kept = {"bag_score": est.bag_score_} if cls is milsvm.sMIL else {}
    reference = quietly(
        CalibratedClassifierCV(make(cls, **kept), method="sigmoid", cv=folds, ensemble=True).fit,
        bags,
        y,
    )
    got = est.predict_proba(bags)
    np.testing.assert_allclose(got, reference.predict_proba(bags), atol=2e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-15)
    # the members are the folds' models; the scores stay the model's fitted on all bags
    members = est.model_.ensemble
    assert len(members) == 5 and est.model_.calibration is None
    b = milsvm.as_bags(bags)
    for member, calibrated in zip(members, reference.calibrated_classifiers_):
        np.testing.assert_allclose(
            member.decision_function(b.core_instances(), b.bag_ptr)[:, 0],
            calibrated.estimator.decision_function(bags),
            rtol=1e-9,
            atol=1e-9,
        )
    np.testing.assert_array_equal(
        est.decision_function(bags), quietly(make(cls).fit, bags, y).decision_function(bags)
    )


@pytest.mark.parametrize("name", ["NSK", "MISVM"])
def test_the_one_vs_rest_ensemble_equals_calibrated_classifier_cv(name):
    bags, y = three_class_bags(n_bags=45)
    rng = np.random.default_rng(1)
    bags = [b + rng.normal(0, 1.5, size=b.shape) for b in bags]
    cls = _registry.ESTIMATORS[name]
    est = quietly(make(cls, probability="ensemble").fit, bags, y)
    folds = list(calibration_folds(est.get_params().get("random_state")).split(np.zeros(len(y)), y))
    reference = quietly(
        CalibratedClassifierCV(make(cls), method="sigmoid", cv=folds, ensemble=True).fit, bags, y
    )
    np.testing.assert_allclose(est.predict_proba(bags), reference.predict_proba(bags), atol=2e-5)


def test_the_ensemble_is_saved_with_its_pipeline_and_applied_by_the_rust_predictor(tmp_path):
    from sklearn.pipeline import make_pipeline

    bags, y = overlapping_bags(5)
    bags = [10.0 * b + 3.0 for b in bags]  # off scale: the scaler matters
    pipe = quietly(
        make_pipeline(milsvm.BagStandardScaler(), milsvm.MISVM(C=1.0, probability="ensemble")).fit,
        bags,
        y,
    )
    want = pipe.predict_proba(bags)
    milsvm.save(pipe, tmp_path / "p.json")
    back = milsvm.load(tmp_path / "p.json")
    assert back[-1].probability == "ensemble"
    np.testing.assert_array_equal(back.predict_proba(bags), want)
    core = milsvm.Model.load(tmp_path / "p.json")
    assert core.scaler is not None and all(m.scaler is not None for m in core.ensemble)
    b = milsvm.as_bags(bags)
    np.testing.assert_array_equal(core.predict_proba(b.core_instances(), b.bag_ptr), want)
    # the closed form: the mean of each member's sigmoid of its own score of the raw bags
    mean = np.mean(
        [
            1
            / (
                1
                + np.exp(
                    m.calibration[0][0] * m.decision_function(b.core_instances(), b.bag_ptr)[:, 0]
                    + m.calibration[1][0]
                )
            )
            for m in core.ensemble
        ],
        axis=0,
    )
    np.testing.assert_allclose(want[:, 1], mean, rtol=1e-13)
    # the file refuses a member whose sigmoid does not fit, naming it
    import json

    doc = json.loads((tmp_path / "p.json").read_text())
    doc["ensemble"][3]["calibration"]["b"] = [0.0, 1.0]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"ensemble\[3\]: calibration: 1 slopes and 2 offsets"):
        milsvm.load(tmp_path / "bad.json")


@pytest.mark.parametrize("name", ["NSK", "MIKernel"])
def test_a_path_calibrates_each_value_as_its_own_fit(name):
    bags, y = overlapping_bags(7)
    est = make(_registry.ESTIMATORS[name], probability="ensemble")
    path = quietly(est.fit_path, bags, y, [0.5, 4.0])
    for fitted in path:
        alone = quietly(
            make(_registry.ESTIMATORS[name], probability="ensemble", C=fitted.C).fit, bags, y
        )
        np.testing.assert_allclose(
            fitted.predict_proba(bags), alone.predict_proba(bags), rtol=1e-7, atol=1e-9
        )


def _platt_objective(ab, f, t):
    z = ab[0] * f + ab[1]
    return float(np.sum(t * z + np.logaddexp(0.0, -z)))


@given(st.integers(4, 60), st.integers(0, 2**31 - 1), st.floats(0.0, 3.0))
def test_the_sigmoid_fit_equals_scipy_on_platts_objective(n, seed, separation):
    rng = np.random.default_rng(seed)
    positive = np.arange(n) % 2 == 1
    rng.shuffle(positive)
    f = rng.normal(size=n) + separation * (positive - 0.5)
    a, b = _core.fit_sigmoid(f, positive.tolist())
    n_pos, n_neg = positive.sum(), (~positive).sum()
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    start = np.array([0.0, np.log((n_neg + 1) / (n_pos + 1))])
    ref = minimize(_platt_objective, start, args=(f, t), method="BFGS", options={"gtol": 1e-10})
    # the objective is strictly convex with the smoothed targets: one minimum
    assert _platt_objective((a, b), f, t) <= ref.fun + 1e-9
    np.testing.assert_allclose([a, b], ref.x, atol=1e-4)


def test_probability_refuses_too_few_bags_and_bad_values():
    bags, y = overlapping_bags(n_bags=40)
    few = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:4]]
    with pytest.raises(
        ValueError, match=r"needs at least 5 bags of every class; too few bags of class 1: 4"
    ):
        milsvm.NSK(probability=True).fit([bags[i] for i in few], y[few])
    with pytest.raises(ValueError, match="needs at least 5 bags of every class"):
        milsvm.NSK(probability="ensemble").fit([bags[i] for i in few], y[few])
    with pytest.raises(
        ValueError, match="probability must be True, False or \"ensemble\", got 'yes'"
    ):
        milsvm.NSK(probability="yes").fit(bags, y)
    with pytest.raises(
        TypeError, match='probability must be True, False or "ensemble", got 1 \\(int\\)'
    ):
        milsvm.NSK(probability=1).fit(bags, y)
    plain = milsvm.NSK().fit(bags, y)
    assert not hasattr(plain, "predict_proba") and not hasattr(plain, "predict_log_proba")
    with pytest.raises(AttributeError, match="predict_proba") as error:
        plain.predict_proba(bags)
    assert "not available when probability=False" in str(error.value.__cause__)
    # switched on after a fit without it: the model has no sigmoid, and says so
    plain.set_params(probability=True)
    with pytest.raises(ValueError, match="fit it with probability=True"):
        plain.predict_proba(bags)


def test_probabilities_are_deterministic_and_saved(tmp_path):
    bags, y = overlapping_bags(3)
    one = quietly(make(milsvm.SparseMI, probability=True, random_state=4, n_jobs=1).fit, bags, y)
    two = quietly(make(milsvm.SparseMI, probability=True, random_state=4, n_jobs=2).fit, bags, y)
    np.testing.assert_array_equal(one.predict_proba(bags), two.predict_proba(bags))
    one.save(tmp_path / "m.json")
    back = milsvm.load(tmp_path / "m.json")
    assert back.probability is True
    np.testing.assert_array_equal(back.predict_proba(bags), one.predict_proba(bags))
    # the Rust predictor applies the sigmoid: the compiled model read by the core alone
    core = milsvm.Model.load(tmp_path / "m.json")
    b = milsvm.as_bags(bags)
    np.testing.assert_array_equal(
        core.predict_proba(b.core_instances(), b.bag_ptr), one.predict_proba(bags)
    )
    a, c = core.calibration
    f = one.decision_function(bags)
    np.testing.assert_allclose(
        one.predict_proba(bags)[:, 1], 1 / (1 + np.exp(a[0] * f + c[0])), rtol=1e-14
    )


def test_held_out_log_loss_and_brier_beat_a_plain_sigmoid_on_musk1(musk1):
    """The calibrated probabilities of held-out MUSK1 bags against ``1 / (1 + exp(-F))``."""
    bags, y = musk1[:2]
    train, test = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=0)
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10, probability=True))
    pipe.fit([bags[i] for i in train], y[train])
    held = [bags[i] for i in test]
    calibrated = pipe.predict_proba(held)[:, 1]
    plain = 1 / (1 + np.exp(-pipe.decision_function(held)))
    positive = y[test] == pipe.classes_[1]
    assert log_loss(positive, calibrated) < log_loss(positive, plain)
    assert brier_score_loss(positive, calibrated) < brier_score_loss(positive, plain)
