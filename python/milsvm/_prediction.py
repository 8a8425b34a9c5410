"""Prediction through the compiled model: labels from scores, and the scores of a C path's models
at once (part of :class:`~milsvm._base.MILClassifier`)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._bags import as_bags
from ._model import threads

__all__ = ["PredictionMixin", "predict_path"]


class PredictionMixin:
    """``predict`` and ``explain`` on checked bags."""

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
        return self._labels(self.decision_function(bags))

    def _labels(self, scores):
        """The predicted labels of bag scores (``(n_bags,)`` or ``(n_bags, n_classes)``)."""
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def explain(self, bags):
        """The instances behind each bag's prediction and their contributions.

        Mean pooling: each instance's share ``s_p / n`` of the bag score (the shares sum to
        it). Max pooling: the arg-max instance, whose score is the bag's, and its margin over
        the runner-up. Through a ``Pipeline``: ``pipe[-1].explain(pipe[:-1].transform(bags))``.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        list of BagExplanation
            One per bag: the predicted ``label``, its ``score``, the ``pooling``, the
            ``instance_scores``, the ``contributions``, the ``ranking`` of the instances (most
            decisive first), the ``top`` instance and, for max pooling, the ``margin``.
        """
        from ._explain import explain_bags

        bags = self._check_bags(bags)
        return explain_bags(
            self.instance_decision_function(bags),
            self.decision_function(bags),
            self.classes_,
            self._model().pooling,
        )


def predict_path(estimators, bags):
    """``[e.predict(bags) for e in estimators]`` for the estimators of one
    :meth:`MILClassifier.fit_path`, with the kernel values of the bags' instances computed once
    over the union of the models' expansion vectors (``milsvm._core.decision_functions``) rather
    than once per model. The scores equal each model's own up to rounding."""
    if not estimators:
        return []
    first = estimators[0]
    bags = first._check_bags(bags)
    scores = _core.decision_functions(
        [e._model() for e in estimators], bags.core_instances(), bags.bag_ptr, threads(first.n_jobs)
    )
    return [e._labels(s[:, 0] if s.shape[1] == 1 else s) for e, s in zip(estimators, scores)]
