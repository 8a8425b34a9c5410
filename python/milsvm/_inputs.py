"""What every fit checks and converts before the core runs: the labels (classes and their codes),
the seed from ``random_state``, the ``class_weight`` vector and ``verbose``."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ._convert import plain

__all__ = ["seed_of", "class_weight_vector", "encode_labels"]


def seed_of(random_state):
    """A 64-bit seed for the core from an int, ``None`` or a ``RandomState``."""
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def class_weight_vector(class_weight, classes):
    """``None``, ``"balanced"`` or one weight per class index from a dict keyed by label (labels
    left out weigh 1); other values pass through for the core to refuse. With ``classes=None``
    (a check without data) a dict gives its weights in its own order, for the core to check."""
    if not isinstance(class_weight, dict):
        return class_weight
    if classes is None:
        keys = list(class_weight)
    else:
        known = set(np.asarray(classes).tolist())
        unknown = [plain(k) for k in class_weight if plain(k) not in known]
        if unknown:
            raise ValueError(
                f"class_weight names labels that are not in y: {unknown!r} "
                f"(classes: {np.asarray(classes).tolist()!r})"
            )
        keys = np.asarray(classes).tolist()
    out = []
    for c in keys:
        w = class_weight.get(c, 1.0)
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(
                f"class_weight[{plain(c)!r}] must be a real number, got {plain(w)!r} "
                f"({type(w).__name__})"
            )
        out.append(float(w))
    return out


def _check_verbose(verbose):
    if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral):
        raise TypeError(
            f"verbose must be an integer, got {plain(verbose)!r} ({type(verbose).__name__})"
        )


def _not_class_labels(y):
    """``None`` when the 1-D array of finite labels ``y`` holds class labels (integers,
    booleans, strings, floats that are whole numbers within int64), else the target type
    scikit-learn's ``type_of_target`` names it: ``"continuous"`` (other floats) or ``"unknown"``
    (objects that are not strings, complex numbers, other types). Written here because
    scikit-learn's function discovers dataframe plugins on its first call, a cost paid by the first
    fit of every process (the peers' first fits in ``benches/bench_peers.py`` measure it)."""
    kind = y.dtype.kind
    if kind == "O":
        return None if all(isinstance(v, str) for v in y) else "unknown"
    if kind == "f":
        with np.errstate(invalid="ignore"):  # values beyond int64 are "continuous"
            return "continuous" if np.any(y != y.astype(np.int64)) else None
    return None if kind in "biuUS" else "unknown"


def encode_labels(y, n_bags, *, multiclass, name):
    """``(classes, class index per bag)`` of the labels ``y``, with the refusals of every fit:
    not 1-D, not one per bag, non-finite, not class labels, one class only, or more than two for
    a binary-only estimator (``name`` in the message)."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = np.ravel(y) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per bag), got shape {y.shape}")
    if len(y) != n_bags:
        raise ValueError(f"y has {len(y)} labels for {n_bags} bags")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y has a non-finite label (NaN or infinity)")
    kind = _not_class_labels(y)
    if kind is not None:
        raise ValueError(
            f"y must hold class labels (binary or multi-class), got target type {kind!r}"
        )
    classes, encoded = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"y holds a single class ({plain(classes[0])!r}); at least two classes are needed"
        )
    if len(classes) > 2 and not multiclass:
        raise ValueError(f"{name} is binary, but y holds {len(classes)} classes")
    return classes, encoded.astype(np.int64)
