"""Bad input gets a clear ValueError / TypeError naming the problem; nothing panics."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_bags
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from milsvm import RSVM, Bags, SparseMI, _core

BAGS, Y = random_bags(0, n_bags=6, d=3)


def fit(bags=BAGS, y=Y, **params):
    return SparseMI(**{"n_xv": 2, "max_iter": 2, **params}).fit(bags, y)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_features(value):
    bags = [b.copy() for b in BAGS]
    bags[2][0, 1] = value
    with pytest.raises(ValueError, match="bag 2 has a non-finite value"):
        fit(bags)
    with pytest.raises(ValueError, match="bag 2 has a non-finite value"):
        fit([sp.csr_matrix(b) for b in bags])
    # a dense bag among sparse ones, and a float32 one among float64 ones (a copy is stacked)
    mixed = [sp.csr_matrix(b) if i != 2 else b for i, b in enumerate(bags)]
    with pytest.raises(ValueError, match="bag 2 has a non-finite value"):
        fit(mixed)
    with pytest.raises(ValueError, match="bag 2 has a non-finite value"):
        fit([b.astype(np.float32) if i == 2 else b for i, b in enumerate(bags)])


def test_empty_bag_and_empty_list():
    with pytest.raises(ValueError, match="bag 1 is empty"):
        fit([BAGS[0], np.zeros((0, 3))] + BAGS[2:])
    with pytest.raises(ValueError, match="no bags"):
        fit([], [])
    with pytest.raises(ValueError, match="bag 0 is empty"):
        Bags.from_instances(np.zeros((3, 2)), [0, 3])


def test_ragged_dimensions():
    with pytest.raises(ValueError, match="bag 3 has 4 features, bag 0 has 3"):
        fit(BAGS[:3] + [np.ones((2, 4))] + BAGS[4:])
    with pytest.raises(ValueError, match="not a rectangular array"):
        fit([[[1.0, 2.0], [3.0]]] + BAGS[1:])


def test_one_dimensional_bag_is_explained():
    with pytest.raises(ValueError, match="reshape"):
        fit([np.ones(3)] + BAGS[1:])


def test_prediction_with_wrong_number_of_features():
    clf = fit()
    with pytest.raises(ValueError, match="3"):
        clf.predict([np.ones((2, 5))])


def test_labels():
    with pytest.raises(ValueError, match="single class"):
        fit(y=np.zeros(len(BAGS)))
    with pytest.raises(ValueError, match="5 labels for 6 bags"):
        fit(y=Y[:5])
    with pytest.raises(ValueError, match="target type"):
        fit(y=np.linspace(0, 1, len(BAGS)))


@given(
    st.one_of(
        arrays(np.int64, 6, elements=st.integers(-3, 3)),
        arrays(np.float64, 6, elements=st.sampled_from([-1.0, 0.0, 1.0, 2.0, 0.5, 1e300, -2.5])),
        arrays(np.float32, 6, elements=st.sampled_from([0.0, 1.0, 3.0, 0.25])),
        arrays(np.bool_, 6),
        arrays("U2", 6, elements=st.sampled_from(["a", "b", "c"])),
        st.lists(
            st.one_of(st.sampled_from(["x", "y"]), st.integers(0, 2)), min_size=6, max_size=6
        ).map(lambda v: np.array(v, dtype=object)),
        arrays(np.complex128, 6, elements=st.sampled_from([1.0, 1j])),
    )
)
@settings(max_examples=150, deadline=None)
def test_label_types_are_scikit_learns(y):
    """Which label arrays are class labels: the same answer as scikit-learn's
    ``type_of_target`` ("binary" or "multiclass"; object arrays of anything but strings are
    refused here, where scikit-learn looks at the first element only)."""
    from milsvm._base import _not_class_labels
    from sklearn.utils.multiclass import type_of_target

    mine = _not_class_labels(y) is None
    if y.dtype == object and not all(isinstance(v, str) for v in y):
        assert not mine
        return
    try:
        theirs = type_of_target(y) in ("binary", "multiclass")
    except (ValueError, TypeError):
        theirs = False
    assert mine == theirs, (y, type_of_target(y) if theirs else None)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": 0.0}, "C must be a finite number > 0"),
        ({"C": -1.0}, "C must be a finite number > 0"),
        ({"C": float("nan")}, "C must be a finite number > 0"),
        ({"n_xv": 0}, "n_xv must be an integer >= 1"),
        ({"n_xv": -3}, "n_xv must be a non-negative integer"),
        ({"n_xv": 1000}, "n_xv .* exceeds the number of training instances"),
        ({"gamma": -0.5}, "gamma must be 'scale', 'median' or a finite number > 0"),
        ({"gamma": "auto"}, "gamma must be 'scale'"),
        ({"max_line_search": 0}, "max_line_search must be an integer >= 1"),
        ({"tol": -1.0}, "tol must be a finite number >= 0"),
        ({"solver": "sgd"}, "solver must be one of 'newton', 'lbfgs'"),
        ({"kernel": "poly"}, "kernel must be one of 'rbf', 'linear'"),
        ({"init": "magic"}, "init must be one of"),
        ({"n_jobs": 0}, "n_jobs must be None, -1 or an integer >= 1"),
    ],
)
def test_invalid_hyperparameters(params, match):
    with pytest.raises(ValueError, match=match):
        fit(**params)


@pytest.mark.parametrize(
    "params", [{"C": "big"}, {"n_xv": 2.5}, {"n_xv": True}, {"gamma": [1.0]}, {"max_iter": None}]
)
def test_wrong_parameter_types(params):
    name = next(iter(params))
    with pytest.raises(TypeError, match=name):
        fit(**params)


@pytest.mark.parametrize(
    "bags", ["abc", 3, None, np.ones((4, 3)), {"a": 1}, sp.csr_matrix(np.ones((4, 3)))]
)
def test_wrong_bag_container_types(bags):
    with pytest.raises(TypeError, match="bags must be"):
        fit(bags)


def test_non_numeric_bag():
    with pytest.raises(TypeError, match="bag 0 must hold real numbers"):
        fit([np.array([["a", "b", "c"]])] + BAGS[1:])
    with pytest.raises(TypeError, match="real numbers"):
        fit([np.ones((2, 3)) * 1j] + BAGS[1:])


def test_rsvm_validates_too():
    with pytest.raises(ValueError, match="C must be"):
        RSVM(C=-1).fit(BAGS, Y)


def test_core_functions_reject_bad_shapes_without_panicking():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match="bag offsets"):
        _core.kernel_bag_means(X, np.array([0, 2], dtype=np.int64), np.ones((2, 3)), "rbf", 1.0)
    with pytest.raises(ValueError, match="basis has 2 features"):
        _core.kernel_bag_means(X, np.array([0, 4], dtype=np.int64), np.ones((2, 2)), "rbf", 1.0)
    with pytest.raises(ValueError, match="shape"):
        _core.kernel_basis_grad(X, np.ones((2, 3)), np.ones((3, 2)), np.ones((4, 2)), "rbf", 1.0)
    with pytest.raises(ValueError, match="negative"):
        _core.kernel_bag_means(X, np.array([0, -1, 4], dtype=np.int64), np.ones((2, 3)), "rbf", 1.0)
    with pytest.raises(ValueError, match="column index"):
        _core.kernel_bag_means(
            (np.ones(2), np.array([0, 7]), np.array([0, 1, 2]), 3),
            np.array([0, 2], dtype=np.int64),
            np.ones((1, 3)),
            "rbf",
            1.0,
        )
    with pytest.raises(ValueError, match="kernel must be"):
        _core.kernel_bag_means(X, np.array([0, 4], dtype=np.int64), np.ones((2, 3)), "poly", 1.0)
    with pytest.raises(ValueError, match="shapes"):
        _core.solve_squared_hinge(np.eye(2), np.ones((3, 3)), np.ones(3), np.ones(3))


_LABEL_ARRAYS = st.one_of(
    arrays(np.int64, st.integers(2, 40), elements=st.integers(-3, 3)),
    arrays(np.int8, st.integers(2, 40), elements=st.integers(-3, 3)),
    arrays(np.float64, st.integers(2, 40), elements=st.sampled_from([-2.0, -0.0, 0.0, 1.0, 1e15])),
    arrays(np.bool_, st.integers(2, 40)),
    st.lists(st.sampled_from(["b", "a", "ab", "", "Z"]), min_size=2, max_size=40).map(np.array),
    st.lists(st.sampled_from(["b", "a", "ab", "Z"]), min_size=2, max_size=40).map(
        lambda v: np.array(v, dtype=object)
    ),
)


@settings(max_examples=200, deadline=None)
@given(_LABEL_ARRAYS)
def test_encode_labels_equals_numpy_unique(y):
    """The classes and codes are np.unique's (sorted distinct labels, the inverse), dtype kept."""
    from milsvm._base import encode_labels

    classes, inverse = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        with pytest.raises(ValueError, match="single class"):
            encode_labels(y, len(y), multiclass=True, name="X")
        return
    got_classes, got = encode_labels(y, len(y), multiclass=True, name="X")
    assert got_classes.dtype == classes.dtype
    np.testing.assert_array_equal(got_classes, classes)
    np.testing.assert_array_equal(got, inverse)
    assert got.dtype == np.int64
