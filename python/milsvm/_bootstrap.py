"""Stratified bootstrap intervals of the ROC AUC and the balanced accuracy, vectorised.

A resample draws, within every stratum (the units of one label), as many units as the stratum
holds, with replacement: the units are the bags, or the patients (groups) when the splits were
grouped, a patient bringing all its bags. A resample is held as a weight per bag (how many times
it was drawn), so that the statistic of all ``B`` resamples is a few array operations on a
``B x n_bags`` weight matrix rather than ``B`` calls of a metric:

- the ROC AUC of weights ``w``: the weighted share of (positive, negative) pairs ordered
  correctly, ties counted one half, computed on the scores' distinct values (cumulated
  negative weight below each value);
- the balanced accuracy: the mean over the classes of the weighted recall.

The interval is the percentile interval (the ``alpha / 2`` and ``1 - alpha / 2`` quantiles of
the ``B`` resampled statistics, NumPy's linear interpolation), the ``percentile`` method of
``scipy.stats.bootstrap``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "METHOD",
    "resample_weights",
    "weighted_auc",
    "weighted_balanced_accuracy",
    "bootstrap_interval",
]

#: How the interval is computed, as printed and written.
METHOD = "stratified bootstrap, percentile interval"


def resample_weights(strata, n_resamples, rng):
    """``(n_resamples, n_units)`` counts: how many times each unit is drawn in each resample,
    each stratum resampled to its own size (with replacement)."""
    strata = np.asarray(strata)
    n = len(strata)
    counts = np.zeros((n_resamples, n), dtype=np.float64)
    rows = np.arange(n_resamples)[:, None]
    for value in np.unique(strata):
        members = np.flatnonzero(strata == value)
        m = len(members)
        draws = rng.integers(0, m, size=(n_resamples, m))
        flat = np.bincount((draws + rows * m).ravel(), minlength=n_resamples * m).reshape(
            n_resamples, m
        )
        counts[:, members] = flat
    return counts


def weighted_auc(scores, positive, weights):
    """The ROC AUC of ``scores`` for the labels ``positive`` (bool) under each row of
    ``weights`` (``(B, n)``; a 1-D ``weights`` is one row): a ``(B,)`` array, NaN for a row
    with no positive or no negative weight."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    values, inverse = np.unique(scores, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0])
    w = weights[:, order]
    pos = positive[order]
    p = np.add.reduceat(np.where(pos, w, 0.0), starts, axis=1)
    q = np.add.reduceat(np.where(pos, 0.0, w), starts, axis=1)
    below = np.cumsum(q, axis=1) - q
    total = p.sum(axis=1) * q.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (p * (below + 0.5 * q)).sum(axis=1) / total, np.nan)


def weighted_balanced_accuracy(y, predicted, weights):
    """The balanced accuracy (mean recall over the classes present) of ``predicted`` against
    ``y`` under each row of ``weights``: a ``(B,)`` array."""
    y = np.asarray(y)
    predicted = np.asarray(predicted)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    recalls = []
    for c in np.unique(y):
        member = y == c
        total = weights[:, member].sum(axis=1)
        hit = weights[:, member & (predicted == c)].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            recalls.append(np.where(total > 0, hit / total, np.nan))
    recalls = np.array(recalls)
    present = ~np.isnan(recalls)
    return np.where(
        present.any(axis=0), np.nansum(recalls, axis=0) / np.maximum(present.sum(axis=0), 1), np.nan
    )


def bootstrap_interval(
    statistic, strata, unit_of_bag=None, *, n_resamples=2000, confidence=0.95, rng=None
):
    """The point estimate and percentile interval of ``statistic(weights)``.

    Parameters
    ----------
    statistic : callable
        ``statistic(weights)``: a ``(B,)`` array from a ``(B, n_bags)`` weight matrix.
    strata : array-like of shape (n_units,)
        The stratum (label) of every resampled unit.
    unit_of_bag : array-like of int of shape (n_bags,) or None
        The unit of every bag (its patient); ``None``: the units are the bags.
    n_resamples : int
    confidence : float
    rng : numpy.random.Generator

    Returns
    -------
    dict
        ``value`` (the statistic of the data), ``low``, ``high`` (the interval; None when the
        statistic is undefined on the data) and ``n_resamples``.
    """
    strata = np.asarray(strata)
    n_units = len(strata)
    n_bags = n_units if unit_of_bag is None else len(unit_of_bag)
    value = float(statistic(np.ones((1, n_bags)))[0])
    if not np.isfinite(value):
        return {"value": None, "low": None, "high": None, "n_resamples": n_resamples}
    counts = resample_weights(strata, n_resamples, rng)
    weights = counts if unit_of_bag is None else counts[:, np.asarray(unit_of_bag)]
    stats = statistic(weights)
    stats = stats[np.isfinite(stats)]
    alpha = 1.0 - confidence
    low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return {"value": value, "low": float(low), "high": float(high), "n_resamples": n_resamples}
