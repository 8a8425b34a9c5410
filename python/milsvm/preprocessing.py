"""Instance-level preprocessing of bags, usable in a scikit-learn ``Pipeline``."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._bags import Bags, as_bags

__all__ = ["BagStandardScaler"]

#: Instances per block of :func:`_moments` on float32 data.
_BLOCK_ROWS = 1 << 16


def _moments(X):
    """Per-feature mean and (population) variance of a dense matrix, in float64: directly for
    float64 data, for float32 data over blocks of rows (sums of the block, then of squared
    deviations from the mean), so that no float64 copy of ``X`` is made."""
    if X.dtype != np.float32:
        return X.mean(axis=0), X.var(axis=0)
    n = X.shape[0]
    total = np.zeros(X.shape[1])
    for i in range(0, n, _BLOCK_ROWS):
        total += X[i : i + _BLOCK_ROWS].sum(axis=0, dtype=np.float64)
    mean = total / n
    sq = np.zeros(X.shape[1])
    for i in range(0, n, _BLOCK_ROWS):
        dev = X[i : i + _BLOCK_ROWS].astype(np.float64) - mean
        sq += np.einsum("ij,ij->j", dev, dev)
    return mean, sq / n


class BagStandardScaler(TransformerMixin, BaseEstimator):
    """Standardise every feature with the mean and standard deviation of the training
    *instances* (the papers' protocol), applied to every bag.

    Fitted on sparse bags, it scales without centring (centring would densify them), and keeps
    sparse bags sparse. Fitted on dense bags, it centres every bag it transforms: sparse bags too,
    which then become dense.

    float32 bags stay float32: the mean and variance are accumulated in float64 over blocks of
    instances (no float64 copy of the data), and ``transform`` computes ``(x - mean) / scale``
    in float32 with ``mean_`` and ``scale_`` rounded to float32, as scikit-learn's
    ``StandardScaler`` does (the Rust predictor of a saved pipeline makes the same operations).
    ``transform`` makes one copy of the instances, in their own dtype.

    Parameters
    ----------
    with_mean : bool, default=True
        Centre dense features.
    with_std : bool, default=True
        Scale features to unit variance (constant features are left unscaled).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    scale_ : ndarray of shape (n_features,)
    n_features_in_ : int
    """

    def __init__(self, with_mean=True, with_std=True):
        self.with_mean = with_mean
        self.with_std = with_std

    def fit(self, bags, y=None):
        """Learn the instance mean and scale; returns self."""
        bags = as_bags(bags)
        X = bags.X
        if bags.is_sparse:
            mean = np.asarray(X.mean(axis=0)).ravel()
            var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
        else:
            mean, var = _moments(X)
        std = np.sqrt(np.maximum(var, 0.0))
        self.mean_ = mean if (self.with_mean and not bags.is_sparse) else np.zeros_like(mean)
        self.scale_ = np.where(std > 0, std, 1.0) if self.with_std else np.ones_like(std)
        self.n_features_in_ = bags.n_features
        return self

    def transform(self, bags):
        """Standardised bags, as a :class:`Bags`."""
        check_is_fitted(self)
        bags = as_bags(bags, n_features=self.n_features_in_)
        if bags.is_sparse and np.any(self.mean_ != 0):
            # fitted on dense bags: centring densifies (as the Rust predictor does)
            return Bags((bags.X.toarray() - self.mean_) / self.scale_, bags.bag_ptr)
        if bags.is_sparse:
            X = bags.X.tocsr(copy=True)
            X.data = X.data / self.scale_[X.indices]  # the division the Rust predictor makes
            return Bags(X, bags.bag_ptr)
        X = bags.X
        if X.dtype == np.float32:
            out = np.subtract(X, self.mean_.astype(np.float32))
            out /= self.scale_.astype(np.float32)
            return Bags(out, bags.bag_ptr)
        return Bags((X - self.mean_) / self.scale_, bags.bag_ptr)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags
