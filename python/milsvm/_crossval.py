"""Bag-level cross-validation for the command line (``milsvm cv`` and ``milsvm demo``).

Outer stratified k-fold on the bags, repeated with different shuffles; features standardised
per training part (:class:`~milsvm.BagStandardScaler` in a ``Pipeline``) unless turned off; an
optional inner stratified grid search on every training part. Every fit is one joblib task:
first all inner grid-search fits of all outer folds, then one refit-and-evaluate task per outer
fold, so the work spreads over ``n_jobs`` workers (or a Dask cluster, through joblib's backend)
and a progress callback can count fits.

The splits and the seeds are drawn in the calling process before any task runs, and every task
is a pure function of its inputs, so the results are the same for every ``n_jobs`` (the Rust core
gives the same results for every thread count).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FitError", "CVResult", "cross_validate", "make_model", "describe", "params_text", "plain", "fold_label"]


class FitError(Exception):
    """A fit or an evaluation failed; the message names the estimator, its parameters and the
    fold."""


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


def params_text(params):
    """``key=value, ...`` (plain Python reprs) for messages, summaries and reports."""
    return ", ".join(f"{k}={plain(v)!r}" for k, v in params.items())


def describe(name, params):
    """``Name(key=value, ...)`` for messages and summaries."""
    return f"{name}({params_text(params)})"


def fold_label(repeat, fold):
    """``"r1 f3"``: the 1-based repeat and fold of an outer fold (0-based arguments)."""
    return f"r{repeat + 1} f{fold + 1}"


def make_model(cls, params, scale):
    """The estimator ``cls(**params)``, behind a :class:`~milsvm.BagStandardScaler` if ``scale``."""
    estimator = cls(**params)
    if not scale:
        return estimator
    from sklearn.pipeline import Pipeline

    from .preprocessing import BagStandardScaler

    return Pipeline([("scale", BagStandardScaler()), ("model", estimator)])


def final_estimator(model):
    """The estimator of ``model`` (itself, or the last step of a pipeline)."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _fit_task(cls, params, scale, bags, y, train, test, where, evaluate, keep_model):
    """Fit ``cls(**params)`` on ``bags[train]`` and score it on ``bags[test]``.

    Returns ``{"accuracy", "fit_time"}`` for an inner grid-search fit, and with ``evaluate`` also
    the balanced accuracy, the AUC (binary problems whose test part holds both classes), the
    number of expansion vectors, the warnings raised and, with ``keep_model``, the fitted model.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = make_model(cls, params, scale)
            start = time.perf_counter()
            model.fit(bags[train], y[train])
            fit_time = time.perf_counter() - start
            test_bags = bags[test]
            if not evaluate:
                return {"accuracy": float(np.mean(model.predict(test_bags) == y[test])), "fit_time": fit_time}
            scores = model.decision_function(test_bags)
            predicted = model.predict(test_bags)
            accuracy = float(np.mean(predicted == y[test]))
        except Exception as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise FitError(f"{describe(cls.__name__, params)} failed on {where}: {message}") from None
    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a test part with one class: the recall of that class
        balanced = float(balanced_accuracy_score(y[test], predicted))
    classes = final_estimator(model).classes_
    auc = None
    if len(classes) == 2 and np.ndim(scores) == 1 and len(np.unique(y[test])) == 2:
        from sklearn.metrics import roc_auc_score

        auc = float(roc_auc_score(y[test] == classes[1], scores))
    xv = getattr(final_estimator(model), "xv_", None)
    out = {
        "accuracy": accuracy,
        "balanced_accuracy": balanced,
        "auc": auc,
        "fit_time": fit_time,
        "n_xv": None if xv is None else int(xv.shape[0]),
        "warnings": sorted({f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught}),
    }
    if keep_model:
        out["model"] = model
    return out


def _indexed(k, kwargs):
    return k, _fit_task(**kwargs)


def run_tasks(tasks, n_jobs, progress=None):
    """Run ``_fit_task(**kwargs)`` for every ``kwargs`` of ``tasks``; results in task order.

    ``n_jobs == 1`` runs in this process, anything else through ``joblib.Parallel`` (whose
    active backend may be Dask). ``progress(n)`` is called after every finished task.
    """
    results = [None] * len(tasks)
    if n_jobs == 1:
        for k, kwargs in enumerate(tasks):
            results[k] = _fit_task(**kwargs)
            if progress is not None:
                progress(1)
        return results
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    for k, result in parallel(delayed(_indexed)(k, kwargs) for k, kwargs in enumerate(tasks)):
        results[k] = result
        if progress is not None:
            progress(1)
    return results


@dataclass
class CVResult:
    """What :func:`cross_validate` measured.

    ``folds`` holds one dict per outer fold, in order (repeat-major): ``repeat``, ``fold``
    (0-based), ``n_train``, ``n_test``, ``accuracy``, ``balanced_accuracy`` (scikit-learn's
    ``balanced_accuracy_score``: the mean recall of the classes in the test part), ``auc`` (None
    unless binary with both classes in the test part), ``fit_time`` (seconds to fit the final model on the training
    part), ``search_time`` (seconds of the inner grid-search fits, or None), ``params`` (the grid
    values chosen, ``{}`` without a grid), ``inner_accuracy`` (their mean inner CV accuracy, or
    None), ``n_xv`` (expansion vectors, or None) and ``warnings``.
    ``first_model`` is the model fitted on the first training part if it was asked for.
    ``majority_rate`` is the fraction of the bags in the largest class of the whole data set:
    the accuracy of always predicting that class, the floor an accuracy is read against.
    """

    folds: list
    first_model: object = None
    classes: np.ndarray = field(default_factory=lambda: np.array([]))
    majority_rate: float = None

    def _values(self, key):
        return np.array([f[key] for f in self.folds if f[key] is not None], dtype=np.float64)

    def summary(self, repeats):
        """Mean and population std over all folds, the mean accuracy of each repeat and the
        majority-class rate (keys as in the ``summary`` of ``milsvm cv --output``)."""
        acc, auc, times = self._values("accuracy"), self._values("auc"), self._values("fit_time")
        balanced, search = self._values("balanced_accuracy"), self._values("search_time")
        per_repeat = [float(np.mean([f["accuracy"] for f in self.folds if f["repeat"] == r])) for r in range(repeats)]
        return {
            "accuracy_mean": float(acc.mean()),
            "accuracy_std": float(acc.std()),
            "balanced_accuracy_mean": float(balanced.mean()),
            "balanced_accuracy_std": float(balanced.std()),
            "majority_rate": self.majority_rate,
            "auc_mean": float(auc.mean()) if auc.size else None,
            "auc_std": float(auc.std()) if auc.size else None,
            "fit_time_mean": float(times.mean()),
            "fit_time_total": float(times.sum()),
            "search_time_total": float(search.sum()) if search.size else None,
            "repeat_accuracy_means": per_repeat,
        }


def n_fits(n_folds, grid_size, inner_folds):
    """Number of fits of a run: the inner grid-search fits plus one per outer fold."""
    return n_folds * (1 + (grid_size * inner_folds if grid_size else 0))


def cross_validate(cls, params, bags, y, *, folds=10, repeats=1, seed=0, grid=None, inner_folds=3, scale=True,
                   n_jobs=1, task_params=None, keep_first_model=False, progress=None):
    """Repeated stratified k-fold CV of ``cls(**params)`` on bags, with an optional inner grid.

    Parameters
    ----------
    cls : estimator class
    params : dict
        Estimator parameters (recorded in messages).
    bags : Bags
        The data (indexable by integer arrays).
    y : ndarray of shape (n_bags,)
    folds, repeats, seed : int
        Outer ``RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)``;
        with ``repeats=1`` the folds are those of ``StratifiedKFold(folds, shuffle=True,
        random_state=seed)``.
    grid : dict of lists or None
        Parameter grid searched on every training part by an inner
        ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)``: the candidate with
        the best mean inner accuracy wins (the first in ``ParameterGrid`` order on ties, as in
        ``GridSearchCV``) and is refitted on the whole training part.
    scale : bool
        Standardise the features with the training part's instances.
    n_jobs : int
        Workers (1: in this process).
    task_params : dict or None
        Parameters added to every fit without being reported (e.g. ``n_jobs=1`` for the core's
        threads when the folds run in parallel).
    keep_first_model : bool
        Keep the model fitted on the first training part in ``CVResult.first_model``.
    progress : callable or None
        Called with the number of fits finished (see :func:`n_fits` for the total).

    Returns
    -------
    CVResult
    """
    from sklearn.model_selection import ParameterGrid, RepeatedStratifiedKFold, StratifiedKFold

    y = np.asarray(y)
    extra = dict(task_params or {})
    labels, counts = np.unique(y, return_counts=True)
    if folds > counts.min():
        raise ValueError(f"{folds} folds, but class {labels[counts.argmin()].item()!r} has only {counts.min()} bags "
                         f"(use at most {counts.min()} folds)")
    outer = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    splits = list(outer.split(np.zeros(len(y)), y))
    if grid:
        smallest = min(np.unique(y[train], return_counts=True)[1].min() for train, _ in splits)
        if inner_folds > smallest:
            raise ValueError(f"{inner_folds} inner folds, but a training part holds only {smallest} bags of a "
                             f"class (use at most {smallest} inner folds)")
    where = [f"fold {k % folds + 1} of repeat {k // folds + 1}" if repeats > 1 else f"fold {k + 1}"
             for k in range(len(splits))]

    chosen = [{} for _ in splits]
    inner_accuracy = [None] * len(splits)
    search_time = [None] * len(splits)
    candidates = list(ParameterGrid(grid)) if grid else []
    if candidates:
        tasks, keys = [], []
        for s, (train, _) in enumerate(splits):
            inner = StratifiedKFold(inner_folds, shuffle=True, random_state=seed)
            for i, (itrain, itest) in enumerate(inner.split(np.zeros(len(train)), y[train])):
                for c, cand in enumerate(candidates):
                    tasks.append(dict(cls=cls, params={**params, **cand, **extra}, scale=scale, bags=bags, y=y,
                                      train=train[itrain], test=train[itest],
                                      where=f"inner fold {i + 1} of {where[s]}", evaluate=False, keep_model=False))
                    keys.append((s, i, c))
        scores = np.zeros((len(splits), inner_folds, len(candidates)))
        seconds = np.zeros(len(splits))
        for (s, i, c), result in zip(keys, run_tasks(tasks, n_jobs, progress)):
            scores[s, i, c] = result["accuracy"]
            seconds[s] += result["fit_time"]
        means = scores.mean(axis=1)
        for s in range(len(splits)):
            best = int(np.argmax(means[s]))
            chosen[s] = candidates[best]
            inner_accuracy[s] = float(means[s, best])
            search_time[s] = float(seconds[s])

    tasks = [dict(cls=cls, params={**params, **chosen[s], **extra}, scale=scale, bags=bags, y=y, train=train,
                  test=test, where=where[s], evaluate=True, keep_model=keep_first_model and s == 0)
             for s, (train, test) in enumerate(splits)]
    first_model = None
    results = []
    for s, ((train, test), out) in enumerate(zip(splits, run_tasks(tasks, n_jobs, progress))):
        if s == 0:
            first_model = out.pop("model", None)
        results.append({
            "repeat": s // folds, "fold": s % folds, "n_train": int(len(train)), "n_test": int(len(test)),
            "accuracy": out["accuracy"], "balanced_accuracy": out["balanced_accuracy"], "auc": out["auc"],
            "fit_time": out["fit_time"],
            "search_time": search_time[s],
            "params": dict(chosen[s]), "inner_accuracy": inner_accuracy[s], "n_xv": out["n_xv"],
            "warnings": out["warnings"],
        })
    return CVResult(folds=results, first_model=first_model, classes=labels,
                    majority_rate=float(counts.max() / len(y)))
