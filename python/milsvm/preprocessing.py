"""Instance-level preprocessing of bags, usable in a scikit-learn ``Pipeline``."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._bags import Bags, as_bags

__all__ = ["BagStandardScaler"]


class BagStandardScaler(TransformerMixin, BaseEstimator):
    """Standardise every feature with the mean and standard deviation of the training
    *instances* (the papers' protocol), applied to every bag.

    Fitted on sparse bags, it scales without centring (centring would densify them), and keeps
    sparse bags sparse. Fitted on dense bags, it centres every bag it transforms: sparse bags too,
    which then become dense.

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
            mean = X.mean(axis=0)
            var = X.var(axis=0)
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
        return Bags((bags.X - self.mean_) / self.scale_, bags.bag_ptr)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags
