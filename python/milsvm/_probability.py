"""``probability=True`` (and ``"ensemble"``): the internal cross-validation that calibrates the
scores with Platt's sigmoid, and ``predict_proba``."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.metaestimators import available_if

from . import _core
from ._convert import plain
from ._inputs import seed_of
from ._model import threads

#: Folds of the internal cross-validation behind ``probability=True``.
CALIBRATION_FOLDS = 5

__all__ = ["CALIBRATION_FOLDS", "calibration_folds", "ProbabilityMixin"]


def calibration_folds(random_state):
    """The splitter of the internal cross-validation behind ``probability=True``:
    ``StratifiedKFold(5, shuffle=True)`` seeded by ``random_state`` when it is an int, by a draw
    from it when it is a ``RandomState``, and by 0 when it is ``None`` or the estimator has none
    (so that ``probability=True`` is deterministic for every estimator)."""
    if random_state is None:
        seed = 0
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seed = int(random_state)
    else:
        seed = seed_of(random_state)
    return StratifiedKFold(n_splits=CALIBRATION_FOLDS, shuffle=True, random_state=seed)


def _check_probability(probability, labels, classes):
    """``probability`` as ``False``, ``True`` or ``"ensemble"``; when set, at least
    ``CALIBRATION_FOLDS`` bags of every class (``labels=None``: the value only)."""
    if isinstance(probability, str):
        if probability != "ensemble":
            raise ValueError(f'probability must be True, False or "ensemble", got {probability!r}')
    elif isinstance(probability, (bool, np.bool_)):
        probability = bool(probability)
    else:
        raise TypeError(
            f'probability must be True, False or "ensemble", got {plain(probability)!r} '
            f"({type(probability).__name__})"
        )
    if probability and labels is not None:
        counts = np.bincount(labels, minlength=len(classes))
        few = [(plain(classes[c]), int(n)) for c, n in enumerate(counts) if n < CALIBRATION_FOLDS]
        if few:
            listed = ", ".join(f"{c!r}: {n}" for c, n in few)
            raise ValueError(
                f"probability={probability!r} calibrates on a {CALIBRATION_FOLDS}-fold "
                f"internal cross-validation and needs at least {CALIBRATION_FOLDS} bags of "
                f"every class; too few bags of class {listed}"
            )
    return probability


def _sigmoids(scores, labels):
    """Platt's ``(a, b)`` per output of ``scores`` (``n_bags x n_outputs``) against the encoded
    ``labels`` (one output: class 1 is positive; else one-vs-rest)."""
    n_outputs = scores.shape[1]
    a, b = [], []
    for c in range(n_outputs):
        positive = labels == 1 if n_outputs == 1 else labels == c
        ac, bc = _core.fit_sigmoid(np.ascontiguousarray(scores[:, c]), positive.tolist())
        a.append(ac)
        b.append(bc)
    return a, b


def _has_probability(estimator):
    """``predict_proba`` exists only with ``probability=True`` (scikit-learn's ``SVC`` rule)."""
    if not getattr(estimator, "probability", False):
        raise AttributeError(
            f"predict_proba is not available when probability=False "
            f"(fit {type(estimator).__name__} with probability=True)"
        )
    return True


class ProbabilityMixin:
    """The calibration a fit adds with ``probability=True`` or ``"ensemble"``, and the
    probabilities (part of :class:`~milsvm._base.MILClassifier`)."""

    def _calibration_params(self, model):
        """The parameters the internal folds' refits take beside ``probability=False``, given the
        fitted ``model`` they calibrate (none here: the estimator as it is; sMIL's ``"auto"`` bag
        score refits with the rule the model kept)."""
        return {}

    def _calibrations(self, bags, classes, labels, mode, models, Cs=None):
        """What ``probability=mode`` adds to the model of each value of ``Cs`` (``None``: the
        estimator as it is), as one function per value from the fitted model to the calibrated
        one. The estimator is refitted (``probability=False``) on each training part of
        :func:`calibration_folds` (with ``Cs``, as one :meth:`fit_path` per part, its held-out
        scores from one kernel evaluation, ``_core.decision_functions``) and scores its held-out
        part. ``True``: Platt's sigmoid per output fitted on all held-out scores, the protocol
        of ``CalibratedClassifierCV(method="sigmoid", ensemble=False)`` and libsvm. ``"ensemble"``:
        each part's model with the sigmoid fitted on its own held-out scores, the members of
        ``Model.with_ensemble``, the protocol of ``CalibratedClassifierCV(method="sigmoid",
        ensemble=True)``. ``models``: the fitted models (one per value), whose
        :meth:`_calibration_params` the refits take; values whose refits differ in more than
        ``C`` are refitted one by one instead of as one path."""
        from sklearn.base import clone

        splitter = calibration_folds(self.get_params(deep=False).get("random_state"))
        n_values = 1 if Cs is None else len(Cs)
        n_outputs = 1 if len(classes) == 2 else len(classes)
        scores = np.empty((n_values, len(bags), n_outputs))
        members = [[] for _ in range(n_values)]
        overrides = [self._calibration_params(m) for m in models]
        for train, test in splitter.split(np.zeros(len(labels)), labels):
            part = clone(self).set_params(probability=False, verbose=0)
            held_out = bags[test]
            if Cs is None:
                parts = [part.set_params(**overrides[0]).fit(bags[train], classes[labels[train]])]
                scored = [
                    parts[0]
                    ._model()
                    .decision_function(
                        held_out.core_instances(), held_out.bag_ptr, threads(self.n_jobs)
                    )
                ]
            else:
                if all(o == overrides[0] for o in overrides):
                    parts = part.set_params(**overrides[0]).fit_path(
                        bags[train], classes[labels[train]], Cs
                    )
                else:
                    parts = [
                        clone(part).set_params(C=c, **o).fit(bags[train], classes[labels[train]])
                        for c, o in zip(Cs, overrides)
                    ]
                scored = _core.decision_functions(
                    [e._model() for e in parts],
                    held_out.core_instances(),
                    held_out.bag_ptr,
                    threads(self.n_jobs),
                )
            for k, (fitted, s) in enumerate(zip(parts, scored)):
                scores[k][test] = s
                if mode == "ensemble":
                    members[k].append(fitted._model().with_calibration(_sigmoids(s, labels[test])))
        if mode == "ensemble":
            return [lambda model, m=m: model.with_ensemble(m) for m in members]
        # each function binds its own sigmoids (a default argument, evaluated once per value)
        return [
            lambda model, ab=_sigmoids(scores[k], labels): model.with_calibration(ab)  # noqa: B008
            for k in range(n_values)
        ]

    @available_if(_has_probability)
    def predict_proba(self, bags):
        """Class probabilities of each bag (only with ``probability=True`` or ``"ensemble"``).

        Each output's score ``F`` goes through Platt's sigmoid ``1 / (1 + exp(a F + b))``,
        fitted at ``fit`` on out-of-fold scores of a 5-fold internal cross-validation (Platt
        2000; Lin, Lin & Weng 2007). Binary problems give ``[1 - p, p]``; one-vs-rest problems
        give each class its own output's ``p``, normalised to sum to 1 (uniform where every
        ``p`` is 0), as scikit-learn's ``CalibratedClassifierCV`` couples them. With
        ``probability="ensemble"`` these are the mean of the five fold models' probabilities,
        each model scoring the bag itself with its own sigmoid (``ensemble=True`` in
        scikit-learn's terms).

        ``predict`` and ``predict_proba`` can disagree. ``predict`` thresholds the score at 0,
        while ``p = 0.5`` lies at ``F = -b / a`` (with ``"ensemble"``, the probabilities do not
        come from this model's score at all): the bags whose score falls between the two
        get one label from ``predict`` and the other as the likelier class. With more than two
        classes, each class has its own sigmoid, so the largest score need not be the largest
        probability. Use ``predict_proba(bags).argmax(axis=1)`` for the class the
        probabilities favour.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            Columns in the order of ``classes_``.
        """
        bags = self._check_bags(bags)
        return self._model().predict_proba(
            bags.core_instances(), bags.bag_ptr, threads(self.n_jobs)
        )

    @available_if(_has_probability)
    def predict_log_proba(self, bags):
        """The logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(bags))
