"""Key instances: which instances of a bag drive its score, and by how much.

Every estimator scores a bag by pooling instance scores (``instance_decision_function``):

* mean pooling (SparseMI, RSVM, MI-Kernel, ReducedSet, NSK, sMIL, and the normalised and
  shifted means of NSK ``norm="l2"`` and of stMIL / sMIL with ``bag_score="smil_mean"``): the bag
  score is the mean of the instance scores, so instance ``p`` of an ``n``-instance bag
  contributes its share ``s_p / n``, and the shares sum to the bag score;
* max pooling (the annealing family, SVM-CC, the one-class MI-SVM): the bag score is the score
  of one instance, the arg-max; how firmly it holds that role is its margin over the runner-up
  (``inf`` for a one-instance bag);
* sum (MILES, the ``"xv_max"`` pooling): the bag score is no pooling of per-instance scores but
  a linear function of per-concept maxima; each instance's score is its share (the terms of the
  concepts whose max it attains, plus its part of the bias, Chen, Bi & Wang 2006's instance
  classification), and the shares sum to the bag score: they are the contributions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._convert import plain

__all__ = ["BagExplanation", "explain_bags"]


@dataclass(frozen=True)
class BagExplanation:
    """Why one bag got its score (see :meth:`MILClassifier.explain`).

    Attributes
    ----------
    label : object
        The class explained: the predicted class of the bag (a Python scalar).
    score : float
        The bag's score for that class (binary problems: the decision value, positive for
        ``classes_[1]``; for ``classes_[0]`` the explanation is of the same score, whose negative
        values are the evidence).
    pooling : str
        ``"mean"`` (every pooling that averages: mean, normalised mean, sMIL's mean),
        ``"max"``, or ``"sum"`` (MILES: the instance scores are shares that sum to the bag
        score).
    instance_scores : ndarray of shape (n_instances,)
        The instance scores as the pooling counts them.
    contributions : ndarray of shape (n_instances,)
        Mean pooling: each instance's share ``s_p / n`` (they sum to ``score``). Max pooling:
        ``score`` at the arg-max, 0 elsewhere. Sum: the instance scores themselves (they sum to
        ``score``).
    ranking : ndarray of int
        The instances in order of how much they push the score towards its sign: largest
        contribution first for a positive score, smallest first for a negative one (binary);
        largest first for the predicted class (multi-class).
    top : int
        The instance that drives the score most: ``ranking[0]`` (the arg-max for max pooling).
    margin : float or None
        Max pooling: ``s_top - s_runner_up`` (``inf`` for one instance); None for mean pooling
        and sums.
    """

    label: object
    score: float
    pooling: str
    instance_scores: np.ndarray
    contributions: np.ndarray
    ranking: np.ndarray
    top: int
    margin: float | None


def explain_bags(instance_scores, bag_scores, classes, pooling):
    """One :class:`BagExplanation` per bag from the per-bag instance scores of
    ``instance_decision_function`` (1-D arrays for binary problems, ``(n, n_classes)`` for
    multi-class ones), the bags' ``decision_function``, the class labels and the model's
    pooling name. The label is the one ``predict`` gives."""
    kind = {"max": "max", "xv_max": "sum"}.get(pooling, "mean")
    out = []
    for scores, bag in zip(instance_scores, bag_scores):
        if scores.ndim == 1:
            s = np.asarray(scores, dtype=np.float64)
            pooled = float(bag)
            label = classes[int(pooled > 0)]
            # a negative bag is explained by its most negative evidence
            direction = 1.0 if (pooled > 0 or kind == "max") else -1.0
        else:
            c = int(np.argmax(bag))
            s = np.asarray(scores[:, c], dtype=np.float64)
            pooled, label, direction = float(bag[c]), classes[c], 1.0
        n = len(s)
        if kind == "max":
            top = int(np.argmax(s))
            contributions = np.zeros(n)
            contributions[top] = s[top]
            rest = np.delete(s, top)
            margin = float(s[top] - rest.max()) if n > 1 else float("inf")
            ranking = np.argsort(-s, kind="stable")
        else:
            contributions = s if kind == "sum" else s / n
            ranking = np.argsort(-direction * contributions, kind="stable")
            top = int(ranking[0])
            margin = None
        label = plain(label)
        out.append(
            BagExplanation(
                label=label,
                score=pooled,
                pooling=kind,
                instance_scores=s,
                contributions=contributions,
                ranking=ranking,
                top=top,
                margin=margin,
            )
        )
    return out
