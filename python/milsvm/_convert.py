"""Plain Python values from NumPy ones: for messages (:func:`plain`) and for JSON
(:func:`jsonable`). A leaf module: it imports nothing from the package."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["plain", "jsonable"]


def plain(value):
    """``value`` with NumPy scalars and arrays made plain Python values (recursively through
    dicts, lists and tuples), so that messages show ``3`` rather than ``np.int64(3)``."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return value


class _NotJSON(Exception):
    """A value that a strict :func:`jsonable` cannot write."""


def jsonable(value, *, strict=False):
    """``value`` as JSON data: NumPy scalars and arrays made plain, tuples made lists,
    non-finite floats made ``None`` (JSON's ``null``).

    What JSON cannot hold as it is: with ``strict`` (a model file's parameters and training
    record, which must load back as they were saved) the whole value is ``None``: a dict, a
    non-numeric array, a list with an item that is ``None`` or not JSON, any other object. Else
    (the command line's results) dict keys that are not strings or numbers and other objects
    become their ``str``, and every item is converted on its own.
    """
    try:
        return _json(value, strict)
    except _NotJSON:
        return None


def _json(value, strict):
    if isinstance(value, dict):
        if strict:
            raise _NotJSON
        return {
            k if isinstance(k, (str, int, float, bool)) else str(k): _json(v, strict)
            for k, v in value.items()
        }
    if isinstance(value, np.ndarray) and strict:
        if value.dtype.kind not in "biuf":
            raise _NotJSON
        return value.tolist()
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [_json(v, strict) for v in value]
        if strict and any(item is None for item in items):
            raise _NotJSON
        return items
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if strict:
            raise _NotJSON
        return None
    if value is None or isinstance(value, (bool, str)):
        return value
    if not strict:
        return value if isinstance(value, (int, float)) else str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return float(value)
    raise _NotJSON
