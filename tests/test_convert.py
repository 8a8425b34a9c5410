"""The one conversion of NumPy values to plain Python and JSON values (``milsvm._convert``):
``plain`` for messages, ``jsonable`` for the command line's results (lenient) and for a model
file's parameters and training record (``strict``: all or nothing)."""

import json
import math

import numpy as np
import pytest
from milsvm._convert import jsonable, plain


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.int64(3), 3),
        (np.float32(0.5), 0.5),
        (np.bool_(True), True),
        (np.str_("a"), "a"),
        ({np.int64(1): (np.float64(2.0), [np.int8(3)])}, {1: (2.0, [3])}),
        (np.arange(3), [0, 1, 2]),
        ("s", "s"),
    ],
)
def test_plain_makes_numpy_values_python_values(value, expected):
    out = plain(value)
    assert out == expected and type(out) is type(expected)
    assert repr(out) == repr(expected)  # no np.int64(...) left in a message


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.int64(3), 3),
        (np.float32(0.5), 0.5),
        (np.bool_(False), False),
        (7, 7),
        ("rbf", "rbf"),
        (None, None),
        ((1, np.int64(2)), [1, 2]),
        (np.array([1.5, 2.5]), [1.5, 2.5]),
        ([[1, 2], [3]], [[1, 2], [3]]),
    ],
)
def test_jsonable_keeps_what_json_holds_in_both_modes(value, expected):
    for strict in (False, True):
        out = jsonable(value, strict=strict)
        assert out == expected and type(out) is type(expected), strict


def test_jsonable_lenient_converts_every_item_on_its_own():
    value = {
        np.int64(1): np.float64("nan"),
        (1, 2): [np.int64(3), math.inf],
        "a": np.array(["x", "y"]),
        "b": object,
        "c": {"d": np.float32(-math.inf)},
    }
    out = jsonable(value)
    assert out == {
        "1": None,
        "(1, 2)": [3, None],
        "a": ["x", "y"],
        "b": str(object),
        "c": {"d": None},
    }
    json.dumps(out, allow_nan=False)  # writable as strict JSON


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1},
        np.array(["x"]),
        [1, None],
        [1.0, math.nan],
        (1, object()),
        math.inf,
        np.float64("nan"),
        object(),
        [[1], [2, {"a": 1}]],
    ],
)
def test_jsonable_strict_is_all_or_nothing(value):
    assert jsonable(value, strict=True) is None


def test_jsonable_strict_keeps_arrays_as_saved():
    # a training attribute is written as the array holds it (NaN included), read back by the core
    out = jsonable(np.array([1.0, math.nan]), strict=True)
    assert out[0] == 1.0 and math.isnan(out[1])
    assert jsonable(np.array([[1, 2]], dtype=np.int32), strict=True) == [[1, 2]]
