"""The cross-validation splits of ``milsvm cv``, for use from Python.

``milsvm cv`` splits bags by patient when the label file says which patient (``case_id``) each
slide belongs to and some patient has more than one slide: the slides of one patient then never
fall on both the training and the test side of a split, outer or inner. These functions give
the same folds, so that a Python run reproduces a command-line one:

>>> from milsvm.model_selection import outer_splits
>>> folds = outer_splits(y, groups, folds=5, repeats=2, seed=0)   # doctest: +SKIP

- :class:`RepeatedStratifiedGroupKFold`: scikit-learn's ``StratifiedGroupKFold`` repeated with
  different shuffles (the grouped counterpart of ``RepeatedStratifiedKFold``), usable wherever
  scikit-learn takes a splitter with ``groups=``.
- :func:`outer_splits` and :func:`inner_splits`: the outer splits and the inner grid-search
  splits of a training part, grouped when ``groups`` is given, else those of
  ``RepeatedStratifiedKFold`` / ``StratifiedKFold``.
- :func:`needs_grouping`: whether some group holds more than one bag (``cv`` groups then).
"""

from __future__ import annotations

import numpy as np

__all__ = ["RepeatedStratifiedGroupKFold", "outer_splits", "inner_splits", "needs_grouping"]


class RepeatedStratifiedGroupKFold:
    """``StratifiedGroupKFold(n_splits, shuffle=True)`` repeated ``n_repeats`` times, each
    repeat shuffled by the next draw of one random state (as scikit-learn's
    ``RepeatedStratifiedKFold`` repeats ``StratifiedKFold``).

    Parameters
    ----------
    n_splits : int, default=5
    n_repeats : int, default=10
    random_state : int, RandomState or None, default=None
    """

    def __init__(self, n_splits=5, n_repeats=10, random_state=None):
        self.n_splits = n_splits
        self.n_repeats = n_repeats
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of splits: ``n_splits * n_repeats``.

        Returns
        -------
        int
        """
        return self.n_splits * self.n_repeats

    def split(self, X, y, groups):
        """The ``(train, test)`` index arrays of every fold of every repeat, repeat-major.

        Parameters
        ----------
        X : sequence of length n_bags (only its length is used)
        y : array-like of shape (n_bags,)
        groups : array-like of shape (n_bags,)
            No group has bags on both sides of any split.

        Returns
        -------
        generator of (ndarray, ndarray)
        """
        from sklearn.model_selection import StratifiedGroupKFold
        from sklearn.utils import check_random_state

        rng = check_random_state(self.random_state)
        for _ in range(self.n_repeats):
            cv = StratifiedGroupKFold(n_splits=self.n_splits, shuffle=True, random_state=rng)
            yield from cv.split(np.zeros(len(y)), y, groups)


def needs_grouping(groups):
    """True when ``groups`` is given and some group holds more than one bag.

    Returns
    -------
    bool
    """
    if groups is None:
        return False
    _, counts = np.unique(np.asarray(groups, dtype=str), return_counts=True)
    return bool(counts.max() > 1)


def _group_codes(groups):
    return np.unique(np.asarray(groups, dtype=str), return_inverse=True)[1]


def outer_splits(y, groups=None, *, folds=10, repeats=1, seed=0):
    """The outer ``(train, test)`` splits of ``milsvm cv``.

    Parameters
    ----------
    y : array-like of shape (n_bags,)
    groups : array-like of shape (n_bags,) or None
        With groups: :class:`RepeatedStratifiedGroupKFold` ``(folds, repeats, seed)``; without:
        scikit-learn's ``RepeatedStratifiedKFold(folds, repeats, random_state=seed)``.
    folds, repeats, seed : int

    Returns
    -------
    list of (ndarray, ndarray)
        Repeat-major: split ``k`` is fold ``k % folds`` of repeat ``k // folds``.

    Raises
    ------
    ValueError
        More folds than the bags of a class (or, grouped, than the groups of a class, a group
        counted in the class of its largest label).
    """
    from sklearn.model_selection import RepeatedStratifiedKFold

    y = np.asarray(y)
    if groups is None:
        labels, counts = np.unique(y, return_counts=True)
        if folds > counts.min():
            raise ValueError(
                f"{folds} folds, but class {labels[counts.argmin()].item()!r} has only "
                f"{counts.min()} bags (use at most {counts.min()} folds)"
            )
        cv = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
        return list(cv.split(np.zeros(len(y)), y))
    codes = _group_codes(groups)
    _check_group_folds(y, codes, folds, "folds", "")
    cv = RepeatedStratifiedGroupKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    return [(np.asarray(a), np.asarray(b)) for a, b in cv.split(np.zeros(len(y)), y, codes)]


def _check_group_folds(y, codes, folds, what, where):
    """More ``folds`` than the groups of a class (a group in the class of its largest label):
    a ValueError saying how many groups there are."""
    classes = np.unique(y)
    rank = np.searchsorted(classes, y)
    top = np.full(codes.max() + 1, -1)
    np.maximum.at(top, codes, rank)
    counts = np.bincount(top, minlength=len(classes))
    if folds > counts.min():
        c = int(np.argmin(counts))
        raise ValueError(
            f"{folds} {what}, but {where}class {classes[c].item()!r} has only {counts[c]} patients "
            f"(groups) (use at most {counts[c]} {what}, or split by slide)"
        )


def inner_splits(y_train, groups_train=None, *, inner_folds=3, seed=0):
    """The inner grid-search splits of one training part (indices into that part).

    Parameters
    ----------
    y_train : array-like
        The labels of the training part.
    groups_train : array-like or None
        Its groups: ``StratifiedGroupKFold(inner_folds, shuffle=True, random_state=seed)``;
        without: ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)``.
    inner_folds, seed : int

    Returns
    -------
    list of (ndarray, ndarray)
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    y_train = np.asarray(y_train)
    if groups_train is None:
        cv = StratifiedKFold(inner_folds, shuffle=True, random_state=seed)
        return list(cv.split(np.zeros(len(y_train)), y_train))
    codes = _group_codes(groups_train)
    _check_group_folds(y_train, codes, inner_folds, "inner folds", "a training part's ")
    cv = StratifiedGroupKFold(inner_folds, shuffle=True, random_state=seed)
    return list(cv.split(np.zeros(len(y_train)), y_train, codes))
