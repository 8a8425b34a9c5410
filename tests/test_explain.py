"""``explain``: the key instances of every bag, for every estimator of the registry: the shares
of mean pooling (and MILES's instance shares) sum to the bag score, the arg-max of max pooling is
the bag score with its margin over the runner-up, the label is ``predict``'s, and on bags with one
planted witness the witness is the top instance."""

import milsvm
import numpy as np
import pytest
from conftest import easy_bags, fit_quietly, make_fast, three_class_bags
from milsvm import _registry

ALL = list(_registry.ESTIMATORS.values())
#: STK scores a bag by its min/max statistics: no instance scores, nothing to explain.
EXPLAINED = [c for c in ALL if hasattr(make_fast(c), "explain")]


def fit(cls, bags, y, **params):
    return fit_quietly(make_fast(cls, **params), bags, y)


@pytest.mark.parametrize("cls", EXPLAINED, ids=lambda c: c.__name__)
def test_contributions_add_up_to_the_bag_score_and_the_witness_leads(cls):
    bags, y = easy_bags(5, n_bags=24)
    est = fit(cls, bags, y, C=10.0) if "C" in cls().get_params() else fit(cls, bags, y)
    explanations = est.explain(bags)
    scores = est.decision_function(bags)
    assert len(explanations) == len(bags)
    assert [e.label for e in explanations] == list(est.predict(bags))
    for bag, e, f in zip(bags, explanations, scores):
        assert e.score == f
        assert e.instance_scores.shape == e.contributions.shape == (len(bag),)
        assert sorted(e.ranking.tolist()) == list(range(len(bag))) and e.top == e.ranking[0]
        if e.pooling in ("mean", "sum"):
            assert e.contributions.sum() == pytest.approx(f, rel=1e-12, abs=1e-12)
            assert e.margin is None
            if e.pooling == "sum":  # MILES: the contributions are the instance scores
                np.testing.assert_array_equal(e.contributions, e.instance_scores)
        else:
            assert e.instance_scores[e.top] == pytest.approx(f, rel=1e-12, abs=1e-12)
            assert e.contributions[e.top] == e.instance_scores[e.top]
            assert np.count_nonzero(e.contributions) <= 1
            others = np.delete(e.instance_scores, e.top)
            want = e.instance_scores[e.top] - others.max() if len(others) else np.inf
            assert e.margin == pytest.approx(want) and e.margin >= 0
    # the planted witness (instance 0 of every positive bag) drives the positive bags it wins;
    # not for the one-class model, the support of *all* instances of the positive bags, which
    # here are mostly noise around (-1, -1)
    if cls is not milsvm.OneClassMISVM:
        won = [e for e, label in zip(explanations, y) if label == 1 and e.label == 1]
        assert won and np.mean([e.top == 0 for e in won]) >= 0.75


def test_a_negative_bag_is_explained_by_its_most_negative_instances():
    bags, y = easy_bags(6, n_bags=24)
    est = fit(milsvm.NSK, bags, y, C=10.0)
    for e in est.explain(bags):
        if e.score < 0:
            assert e.contributions[e.top] == e.contributions.min()
        else:
            assert e.contributions[e.top] == e.contributions.max()


@pytest.mark.parametrize("name", ["NSK", "MISVM"])
def test_multi_class_explains_the_predicted_class(name):
    bags, y = three_class_bags(n_bags=30)
    est = fit(_registry.ESTIMATORS[name], bags, y, C=10.0)
    scores = est.decision_function(bags)
    for e, f, bag_scores in zip(est.explain(bags), scores, est.instance_decision_function(bags)):
        c = int(np.argmax(f))
        assert e.label == est.classes_[c] and e.score == f[c]
        np.testing.assert_array_equal(e.instance_scores, bag_scores[:, c])
        assert e.top == 0  # the instance near the class centre


def test_explain_through_a_pipeline_and_before_fit():
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import make_pipeline

    bags, y = easy_bags(7)
    pipe = make_pipeline(milsvm.BagStandardScaler(), milsvm.MISVM(C=10.0)).fit(bags, y)
    explained = pipe[-1].explain(pipe[:-1].transform(bags))
    np.testing.assert_array_equal([e.score for e in explained], pipe.decision_function(bags))
    with pytest.raises(NotFittedError):
        milsvm.MISVM().explain(bags)
    with pytest.raises(ValueError, match="features"):
        pipe[-1].explain([np.ones((2, 5))])
