"""TEMPORARY: the helpers of the estimators not yet on the template fit of ``_base`` (removed
with them). What every milsvm estimator shared: label encoding, parameter coercion.

Hyperparameter *ranges* are checked in one place, the Rust core (``SparseMiParams::validate``
and its siblings), whose messages are raised here as ``ValueError``. This module only converts
Python values to the core's types, raising ``TypeError`` that names the parameter.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ._bags import as_bags

__all__ = [
    "MIClassifierMixin", "BaseEstimator", "as_float", "as_int", "as_choice", "as_gamma", "as_gamma_or_rule",
    "as_class_weight", "as_n_jobs", "seed_of", "FitProgress",
]


def as_float(name, value):
    """``value`` as a float, or ``TypeError`` naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def as_int(name, value):
    """``value`` as an int, or ``TypeError`` naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


def as_choice(name, value, choices):
    """``value`` if it is one of ``choices``, else ``ValueError`` listing them."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def as_gamma(value):
    """``None`` for ``"scale"``, else the float width (its range is checked by the core)."""
    if isinstance(value, str):
        if value != "scale":
            raise ValueError(f"gamma must be 'scale' or a float > 0, got {value!r}")
        return None
    return as_float("gamma", value)


def as_gamma_or_rule(value):
    """``"scale"``, ``"median"`` or a float for the core (its range is checked there), for the
    estimators whose core takes the width rule by name."""
    if isinstance(value, str):
        return as_choice("gamma", value, ("scale", "median"))
    return as_float("gamma", value)


def as_class_weight(class_weight, classes):
    """``None``, ``"balanced"`` or one weight per class index from a dict keyed by label."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return class_weight
    if isinstance(class_weight, str):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}")
    if not isinstance(class_weight, dict):
        raise TypeError(f"class_weight must be None, 'balanced' or a dict, got {type(class_weight).__name__}")
    unknown = [k for k in class_weight if k not in set(classes.tolist())]
    if unknown:
        raise ValueError(f"class_weight names labels that are not in y: {unknown!r} (classes: {classes.tolist()!r})")
    return [as_float(f"class_weight[{c!r}]", class_weight.get(c, 1.0)) for c in classes.tolist()]


def as_n_jobs(value):
    """``None`` (all cores) or an int; -1 also means all cores."""
    return None if value is None else as_int("n_jobs", value)


def seed_of(random_state):
    """A 64-bit seed for the core from an int, ``None`` or a ``RandomState``."""
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


class MIClassifierMixin:
    """Label handling and prediction for bag classifiers with a ``decision_function``.

    Binary problems accept any two labels; ``classes_[1]`` is the positive class (score > 0).
    Multi-class problems predict the class of the largest score.
    """

    def _encode_labels(self, y, n_bags, *, multiclass):
        y = np.asarray(y)
        if y.ndim != 1:
            y = np.ravel(y) if y.ndim == 2 and 1 in y.shape else y
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per bag), got shape {y.shape}")
        if len(y) != n_bags:
            raise ValueError(f"y has {len(y)} labels for {n_bags} bags")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y has a non-finite label (NaN or infinity)")
        kind = type_of_target(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"y must hold class labels (binary or multi-class), got target type {kind!r}")
        classes, encoded = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y holds a single class ({classes[0]!r}); at least two classes are needed")
        if len(classes) > 2 and not multiclass:
            raise ValueError(f"{type(self).__name__} is binary, but y holds {len(classes)} classes")
        self.classes_ = classes
        return encoded.astype(np.int64)

    def _check_bags(self, bags):
        if "n_features_in_" not in self.__dict__:
            check_is_fitted(self)
        # the core checks the values while it reads them (NaN / infinity: ValueError)
        return as_bags(bags, n_features=self.n_features_in_, check_finite=False)

    def predict(self, bags):
        """Predict the class of each bag.

        Parameters
        ----------
        bags : list of array-like or Bags
            The bags to classify.

        Returns
        -------
        ndarray of shape (n_bags,)
            Labels taken from ``classes_``.
        """
        scores = self.decision_function(bags)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags



from ._progress import FitProgress as _FitProgress
from ._base import ExpansionVectorsMixin, MILClassifier  # noqa: F401


class FitProgress(_FitProgress):
    """The old signature ``FitProgress(estimator, total, unit)``."""

    def __init__(self, estimator, total, unit):
        super().__init__(type(estimator).__name__, as_int("verbose", getattr(estimator, "verbose", 0) or 0), unit,
                         total)


class _ExpansionVectorClassifier(ExpansionVectorsMixin, MIClassifierMixin, MILClassifier):
    """The old base: its subclasses write their own fit."""

    _core_fit = "legacy"

    def _set_model(self, model):
        self.model_ = model
        self.n_features_in_ = model.n_features
