"""The linear route of the annealing family (``solver="linear"``: ``w`` in the input space,
Newton-CG): the same classifier as the kernel route (dual SMO over every instance) on
hypothesis-generated bags, dense and sparse, for every method; the model file; the refusals."""

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import fit_quietly, random_bags
from hypothesis import given
from hypothesis import strategies as st

METHODS = [milsvm.miSVM, milsvm.MISVM, milsvm.ALSVM, milsvm.AWSVM, milsvm.ALPSVM]


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.__name__)
@given(seed=st.integers(0, 10_000), sparse=st.booleans(), C=st.sampled_from([0.1, 1.0, 10.0]))
def test_linear_route_equals_kernel_route(cls, seed, sparse, C):
    bags, y = random_bags(seed, n_bags=10, d=4, max_size=6, sparse=sparse)
    common = dict(kernel="linear", C=C, max_iter=30)
    linear = fit_quietly(cls(solver="linear", inner_tol=1e-11, **common), bags, y)
    kernel = fit_quietly(cls(solver="kernel", inner_tol=1e-9, **common), bags, y)
    assert linear.solver_ == "linear" and kernel.solver_ == "kernel"
    a, b = linear.decision_function(bags), kernel.decision_function(bags)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * max(1.0, np.abs(b).max()))
    # the linear model is w itself: one basis vector with coefficient 1; the kernel route's
    # support instances are collapsed into w too (never a dense copy of sparse instances)
    assert linear.xv_.shape == (1, 4) and np.allclose(linear.coef_, 1.0)
    assert kernel.xv_.shape == (1, 4) and np.allclose(kernel.coef_, 1.0)
    flat = [bag.toarray() if sp.issparse(bag) else bag for bag in bags]
    w, b0 = linear.xv_[0], linear.intercept_
    np.testing.assert_allclose(a, [np.max(bag @ w) + b0 for bag in flat], rtol=1e-10, atol=1e-10)


def test_auto_picks_linear_only_for_the_linear_kernel_without_a_basis():
    bags, y = random_bags(0, n_bags=10, d=3)
    assert fit_quietly(milsvm.MISVM(kernel="linear"), bags, y).solver_ == "linear"
    assert fit_quietly(milsvm.MISVM(kernel="rbf"), bags, y).solver_ == "kernel"
    assert fit_quietly(milsvm.MISVM(kernel="linear", n_xv=3), bags, y).solver_ == "kernel"


def test_the_kernel_route_keeps_sparse_support_instances_sparse():
    bags, y = random_bags(3, n_bags=12, d=5, max_size=4, sparse=True)
    est = fit_quietly(milsvm.MISVM(kernel="rbf", C=1.0, solver="kernel"), bags, y)
    assert est.model_.is_sparse
    dense = fit_quietly(
        milsvm.MISVM(kernel="rbf", C=1.0, solver="kernel"), [b.toarray() for b in bags], y
    )
    np.testing.assert_allclose(
        est.decision_function(bags), dense.decision_function(bags), rtol=1e-12, atol=1e-12
    )


def test_multiclass_linear_route_and_model_file(tmp_path):
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(1, 5)), 3)) + k % 3 for k in range(18)]
    y = np.arange(18) % 3
    est = fit_quietly(milsvm.miSVM(kernel="linear", C=1.0), bags, y)
    assert est.solver_ == "linear" and est.xv_.shape == (3, 3)
    path = tmp_path / "m.json"
    milsvm.save(est, path)
    np.testing.assert_allclose(
        milsvm.load(path).decision_function(bags), est.decision_function(bags), rtol=1e-12
    )


@pytest.mark.parametrize(
    "params, message",
    [
        ({"solver": "linear"}, "solver='linear' needs kernel='linear'"),
        ({"solver": "linear", "kernel": "linear", "n_xv": 2}, "takes no reduced basis"),
        ({"solver": "primal"}, "solver"),
    ],
)
def test_linear_route_refusals(params, message):
    bags, y = random_bags(0, n_bags=6, d=3)
    with pytest.raises(ValueError, match=message):
        milsvm.MISVM(**params).fit(bags, y)
