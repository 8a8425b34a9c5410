"""Bags handed to the core as the list of their own arrays.

``fit`` and prediction validate a list of per-bag arrays in Python and, when the arrays are
not one matrix's consecutive rows, hand the list itself to the core, which stacks it on the
fit's own thread (``Bags._of_bags``, ``PendingInstances`` in ``src/python/convert.rs``). These
tests check that this route gives the bits of the stacked route, that such bags behave as any
:class:`milsvm.Bags`, and that the core refuses a malformed list with a clear error.
"""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import milsvm
from milsvm import _core
from milsvm._bags import Bags, as_bags


def separate_bags(seed, n_bags, d, dtype):
    """``n_bags`` bags of 1-6 instances, each its own array (never consecutive rows of one
    matrix), and alternating labels."""
    rng = np.random.default_rng(seed)
    bags = [np.array(rng.normal(size=(int(rng.integers(1, 7)), d)), dtype=dtype) for _ in range(n_bags)]
    y = np.arange(n_bags) % 2
    return bags, y


def stacked(bags):
    return Bags.from_instances(np.concatenate(bags), [len(b) for b in bags])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_bags=st.integers(4, 12), d=st.integers(1, 5),
       dtype=st.sampled_from([np.float64, np.float32]),
       name=st.sampled_from(["STK", "SIL", "NSK", "sMIL", "MISVM"]))
def test_a_list_of_bags_fits_and_scores_as_its_stack(seed, n_bags, d, dtype, name):
    bags, y = separate_bags(seed, n_bags, d, dtype)
    assert as_bags(bags, check_finite=False)._X is None  # the list route is taken
    cls = getattr(milsvm, name)
    a = cls(C=10.0, gamma=0.5).fit(bags, y)
    b = cls(C=10.0, gamma=0.5).fit(stacked(bags), y)
    for got, want in ((a.decision_function(bags), b.decision_function(stacked(bags))),
                      (a.decision_function(stacked(bags)), b.decision_function(bags))):
        np.testing.assert_array_equal(got, want)
    if hasattr(b, "dual_coef_"):
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_unstacked_bags_behave_as_a_sequence():
    bags, _ = separate_bags(3, 6, 4, np.float32)
    out = as_bags(bags, check_finite=False)
    assert out._X is None
    assert (len(out), out.n_instances, out.n_features) == (6, sum(len(b) for b in bags), 4)
    assert out.dtype == np.float32 and not out.is_sparse
    assert out[1] is bags[1] and out[-1] is bags[-1]
    part = out[[4, 0]]
    assert part._X is None and part.bag_sizes.tolist() == [len(bags[4]), len(bags[0])]
    np.testing.assert_array_equal(part.X, np.concatenate([bags[4], bags[0]]))
    assert [c is b for c, b in zip(out.core_instances(), bags)] == [True] * 6
    again = pickle.loads(pickle.dumps(out))
    np.testing.assert_array_equal(again.X, np.concatenate(bags))
    # reading X stacks once, and the bags keep working on the stack
    np.testing.assert_array_equal(out.X, np.concatenate(bags))
    assert out._X is not None and out._pieces is None
    np.testing.assert_array_equal(out[2], bags[2])
    assert isinstance(out.core_instances(), np.ndarray)


def test_bags_that_share_no_layout_are_stacked_in_python():
    bags, _ = separate_bags(5, 4, 3, np.float64)
    mixed = bags[:2] + [b.astype(np.float32) for b in bags[2:]]
    assert as_bags(mixed, check_finite=False)._X.dtype == np.float64
    fortran = [np.asfortranarray(np.repeat(b, 2, axis=0)) for b in bags]
    assert as_bags(fortran, check_finite=False)._X is not None
    # the checked route (the scaler, the command line) keeps stacking, and checking, in Python
    assert as_bags(bags)._X is not None


def test_non_finite_values_in_a_list_are_refused_naming_the_bag():
    bags, y = separate_bags(11, 6, 3, np.float64)
    bags[4][0, 1] = np.nan
    with pytest.raises(ValueError, match="bag 4 has a non-finite value"):
        milsvm.STK().fit(bags, y)
    good, _ = separate_bags(12, 6, 3, np.float64)
    est = milsvm.STK().fit(good, y)
    with pytest.raises(ValueError, match="bag 4 has a non-finite value"):
        est.decision_function(bags)


def test_the_core_refuses_a_malformed_list():
    bags, y = separate_bags(13, 4, 3, np.float64)
    job = milsvm.STK()._fit_job(bags, y)
    ptr, labels, params = job["bags"].bag_ptr, job["labels"], job["params"]
    narrow = bags[:2] + [bags[2][:, :2]] + bags[3:]
    with pytest.raises(ValueError, match="bag 2 has 2 features, bag 0 has 3"):
        _core.fit_stk(narrow, ptr, labels, params)
    with pytest.raises(TypeError, match="bag 1 is not a 2-D float64 array like bag 0"):
        _core.fit_stk([bags[0], bags[1].astype(np.float32)] + bags[2:], ptr, labels, params)
    with pytest.raises(TypeError, match="bag 3 is not a 2-D float64 array like bag 0"):
        _core.fit_stk(bags[:3] + [bags[3].ravel()], ptr, labels, params)
    with pytest.raises(ValueError, match="no bags were given"):
        _core.fit_stk([], ptr, labels, params)
    # offsets that do not match the stacked rows are the core's usual refusal
    with pytest.raises(ValueError):
        _core.fit_stk(bags[:3], ptr, labels, params)
