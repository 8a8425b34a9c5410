"""The linear routes of the hinge-loss families (issue 18, item 2): sMIL and SVM-CC with
``kernel="linear"`` fit ``w`` in the input space by dual coordinate descent (the bias kept
unpenalised by the method of multipliers), and reach the SMO's optimum to the tolerance; every
linear-kernel model collapses its expansion into one weight vector per output."""

import warnings

import milsvm
import numpy as np
import pytest
from conftest import easy_bags, random_bags, three_class_bags
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning


def dense_bags(seed, n_bags=16, d=4):
    rng = np.random.default_rng(seed)
    bags = [rng.normal(size=(int(rng.integers(1, 5)), d)) + 1.2 * (i % 2) for i in range(n_bags)]
    return bags, np.arange(n_bags) % 2


def smil_objective(est, bags, y):
    """sMIL's primal ``1/2 |w|^2 + sum_u C max(0, p_u - y_u (w . z_u + b))`` at the fitted
    ``(w, b)`` (units: positive bags' means, negative instances)."""
    w, b = est.xv_[0] @ np.eye(len(est.xv_[0])), est.intercept_
    loss = 0.0
    for bag, label in zip(bags, y):
        if label == 1:
            n = len(bag)
            loss += est.C * max(0.0, (2 - n) / n - (bag.mean(axis=0) @ w + b))
        else:
            loss += est.C * np.maximum(0.0, 1 + (bag @ w + b)).sum()
    return 0.5 * w @ w + loss


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.1, 1.0, 10.0]))
def test_smil_linear_route_reaches_the_smo_optimum(seed, C):
    bags, y = dense_bags(seed)
    # one bag score for both (auto's inner fits could choose differently on a near tie)
    rule = dict(bag_score="mean_offset")
    lin = milsvm.sMIL(
        kernel="linear", C=C, solver="linear", inner_tol=1e-9, inner_max_iter=100_000, **rule
    ).fit(bags, y)
    ker = milsvm.sMIL(kernel="linear", C=C, solver="kernel", inner_tol=1e-9, **rule).fit(bags, y)
    assert lin.xv_.shape == ker.xv_.shape == (1, 4)
    a, b = smil_objective(lin, bags, y), smil_objective(ker, bags, y)
    assert a == pytest.approx(b, rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(
        lin.decision_function(bags), ker.decision_function(bags), rtol=1e-4, atol=1e-5
    )


def test_svmcc_linear_route_matches_the_smo_route():
    bags, y = easy_bags(3, n_bags=24)
    kw = dict(kernel="linear", C=1.0, inner_tol=1e-9, max_iter=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lin = milsvm.SVMCC(solver="linear", **kw).fit(bags, y)
        ker = milsvm.SVMCC(solver="kernel", **kw).fit(bags, y)
    np.testing.assert_allclose(lin.objective_history_, ker.objective_history_, rtol=1e-5)
    np.testing.assert_allclose(
        lin.decision_function(bags), ker.decision_function(bags), rtol=1e-4, atol=1e-5
    )
    assert lin.n_iter_ == ker.n_iter_


def test_sparse_and_float32_instances_take_the_linear_routes():
    bags, y = random_bags(5, n_bags=14, d=6, sparse=True, density=0.4)
    dense = [b.toarray() for b in bags]
    for cls in (milsvm.sMIL, milsvm.SVMCC):
        a = cls(kernel="linear", inner_tol=1e-8).fit(bags, y).decision_function(bags)
        b = cls(kernel="linear", inner_tol=1e-8).fit(dense, y).decision_function(dense)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
        f32 = [d.astype(np.float32) for d in dense]
        c = cls(kernel="linear").fit(f32, y).decision_function(f32)
        d64 = [d.astype(np.float64) for d in f32]
        np.testing.assert_array_equal(c, cls(kernel="linear").fit(d64, y).decision_function(d64))


@pytest.mark.parametrize("cls", [milsvm.NSK, milsvm.sMIL, milsvm.SIL, milsvm.SVMCC])
def test_linear_models_hold_one_weight_vector_per_output(cls):
    bags, y = easy_bags(1)
    est = cls(kernel="linear").fit(bags, y)
    assert est.xv_.shape == (1, 2) and np.array_equal(np.atleast_2d(est.coef_), [[1.0]])
    # the same decision function as the expansion over the instances it came from
    f = est.instance_decision_function(bags)
    assert all(np.isfinite(s).all() for s in f)
    bags3, y3 = three_class_bags(n_bags=24)
    if cls is not milsvm.SVMCC:
        est3 = cls(kernel="linear").fit(bags3, y3)
        assert est3.xv_.shape == (3, 2)


def test_nsk_l2_linear_scores_match_the_set_kernel_formula():
    """NSK with norm="l2" and the linear kernel: the predictor's bag self-kernel in one pass,
    |sum x|^2 / n^2, gives the cosine of the bag means."""
    bags, y = dense_bags(8)
    est = milsvm.NSK(kernel="linear", norm="l2").fit(bags, y)
    w, b = est.xv_[0], est.intercept_
    want = [bag.mean(axis=0) @ w / np.linalg.norm(bag.mean(axis=0)) + b for bag in bags]
    np.testing.assert_allclose(est.decision_function(bags), want, rtol=1e-10)


def test_solver_linear_needs_the_linear_kernel():
    bags, y = easy_bags(0)
    for cls in (milsvm.sMIL, milsvm.SVMCC):
        with pytest.raises(ValueError, match="solver='linear' needs kernel='linear'"):
            cls(kernel="rbf", solver="linear").fit(bags, y)
        with pytest.raises(ValueError, match="solver must be one of"):
            cls(solver="fast").fit(bags, y)
