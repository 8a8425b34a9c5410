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

from ._convert import plain

__all__ = [
    "FitError",
    "CVResult",
    "cross_validate",
    "make_model",
    "describe",
    "params_text",
    "plain",
    "fold_label",
]


class FitError(Exception):
    """A fit or an evaluation failed; the message names the estimator, its parameters and the
    fold."""


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


SCORINGS = ("accuracy", "balanced_accuracy", "roc_auc", "neg_log_loss")


def inner_score(scoring, model, bags, y):
    """The inner grid-search criterion ``scoring`` (one of :data:`SCORINGS`) of a fitted
    ``model`` on ``bags`` with labels ``y``: the accuracy, the balanced accuracy, the ROC AUC of
    the decision values (NaN when ``y`` holds one class) or minus the log loss of
    ``predict_proba`` (with the model's classes)."""
    if scoring == "accuracy":
        return float(np.mean(model.predict(bags) == y))
    if scoring == "balanced_accuracy":
        from sklearn.metrics import balanced_accuracy_score

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(balanced_accuracy_score(y, model.predict(bags)))
    classes = final_estimator(model).classes_
    if scoring == "roc_auc":
        if len(np.unique(y)) < 2:
            return float("nan")
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(y == classes[1], model.decision_function(bags)))
    if scoring == "neg_log_loss":
        from sklearn.metrics import log_loss

        return -float(log_loss(y, model.predict_proba(bags), labels=classes))
    raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")


def _fit_task(
    cls,
    params,
    scale,
    bags,
    y,
    train,
    test,
    where,
    evaluate,
    keep_model,
    Cs=None,
    scoring="accuracy",
):
    """Fit ``cls(**params)`` on ``bags[train]`` and score it on ``bags[test]``.

    Returns ``{"accuracy", "fit_time"}`` for an inner grid-search fit, and with ``evaluate`` also
    the balanced accuracy, the AUC (binary problems whose test part holds both classes), the
    number of expansion vectors, the warnings raised and, with ``keep_model``, the fitted model.
    With ``Cs`` (an inner grid-search task of several values of ``C``), one ``C`` path instead
    (:func:`_path_task`). Inner grid-search fits (``evaluate=False``) run with
    ``probability=False``: the calibration does not change ``predict``, so the choices are the
    same.
    """
    if not evaluate and params.get("probability") and scoring != "neg_log_loss":
        # an inner grid-search fit is scored by ``predict``, which the calibration does not
        # change: its five internal refits would only cost time (the outer refit calibrates)
        params = {**params, "probability": False}
    if Cs is not None:
        return _path_task(cls, params, scale, bags, y, train, test, where, Cs, scoring)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = make_model(cls, params, scale)
            start = time.perf_counter()
            model.fit(bags[train], y[train])
            fit_time = time.perf_counter() - start
            test_bags = bags[test]
            if not evaluate:
                return {
                    "accuracy": inner_score(scoring, model, test_bags, y[test]),
                    "fit_time": fit_time,
                }
            scores = model.decision_function(test_bags)
            predicted = model.predict(test_bags)
            proba = model.predict_proba(test_bags) if hasattr(model, "predict_proba") else None
            accuracy = float(np.mean(predicted == y[test]))
        except Exception as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise FitError(
                f"{describe(cls.__name__, params)} failed on {where}: {message}"
            ) from None
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
        "warnings": sorted(
            {f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught}
        ),
        "scores": np.asarray(scores, dtype=np.float64),
        "predicted": np.asarray(predicted),
        "proba": None if proba is None else np.asarray(proba, dtype=np.float64),
    }
    if keep_model:
        out["model"] = model
    return out


def _path_task(cls, params, scale, bags, y, train, test, where, Cs, scoring="accuracy"):
    """The inner grid-search fits of ``cls(**params, C=c)`` for every ``c`` of ``Cs`` as one path
    (:meth:`~milsvm._base.MILClassifier.fit_path`): the scaler fitted once on ``bags[train]``,
    then every model scored on ``bags[test]`` with the kernel values computed once
    (:func:`~milsvm._base.predict_path`). Returns ``{"accuracy": [one per C], "fit_time"}``
    (the whole path's time); the accuracies equal those of independent fits up to the inner
    solver's tolerance."""
    from ._base import predict_path

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            model = make_model(cls, params, scale)
            start = time.perf_counter()
            train_bags, test_bags = bags[train], bags[test]
            if hasattr(model, "steps"):
                head = model[:-1]
                train_bags = head.fit_transform(train_bags, y[train])
                test_bags = head.transform(test_bags)
            fitted = final_estimator(model).fit_path(train_bags, y[train], Cs)
            fit_time = time.perf_counter() - start
            if scoring == "balanced_accuracy":
                from sklearn.metrics import balanced_accuracy_score

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    accuracy = [
                        float(balanced_accuracy_score(y[test], labels))
                        for labels in predict_path(fitted, test_bags)
                    ]
            else:
                accuracy = [
                    float(np.mean(labels == y[test])) for labels in predict_path(fitted, test_bags)
                ]
        except Exception as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise FitError(
                f"{describe(cls.__name__, {**params, 'C': list(Cs)})} failed on {where}: {message}"
            ) from None
    return {"accuracy": accuracy, "fit_time": fit_time}


def _task_fits(kwargs):
    """The number of fits of a task: one, or one per ``C`` of a path task."""
    Cs = kwargs.get("Cs")
    return 1 if Cs is None else len(Cs)


def _c_groups(cls, candidates, fixed, scoring="accuracy"):
    """The inner grid's candidates (indices) grouped into tasks: those that differ only in ``C``
    form one ``C`` path when ``cls`` fits paths (``_c_path``), ``C`` is a plain number in each and
    not fixed by ``fixed`` (the task parameters); every other candidate is a group of one. Groups
    are in order of their first candidate, each in ``ParameterGrid`` order."""

    def numeric_c(c):
        return isinstance(c.get("C"), (int, float, np.integer, np.floating)) and not isinstance(
            c.get("C"), bool
        )

    if (
        not getattr(cls, "_c_path", False)
        or "C" in fixed
        or scoring not in ("accuracy", "balanced_accuracy")
    ):
        return [[c] for c in range(len(candidates))]
    groups = {}
    for c, cand in enumerate(candidates):
        key = (
            tuple(sorted((k, repr(v)) for k, v in cand.items() if k != "C"))
            if numeric_c(cand)
            else ("single", c)
        )
        groups.setdefault(key, []).append(c)
    return list(groups.values())


def _indexed(k, kwargs):
    return k, _fit_task(**kwargs)


def run_tasks(tasks, n_jobs, progress=None):
    """Run ``_fit_task(**kwargs)`` for every ``kwargs`` of ``tasks``; results in task order.

    ``n_jobs == 1`` runs in this process, anything else through ``joblib.Parallel`` (whose
    active backend may be Dask). ``progress(n)`` is called after every finished task with its
    number of fits (one per ``C`` of a path task).
    """
    results = [None] * len(tasks)
    if n_jobs == 1:
        for k, kwargs in enumerate(tasks):
            results[k] = _fit_task(**kwargs)
            if progress is not None:
                progress(_task_fits(kwargs))
        return results
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    for k, result in parallel(delayed(_indexed)(k, kwargs) for k, kwargs in enumerate(tasks)):
        results[k] = result
        if progress is not None:
            progress(_task_fits(tasks[k]))
    return results


@dataclass
class CVResult:
    """What :func:`cross_validate` measured.

    ``folds`` holds one dict per outer fold, in order (repeat-major): ``repeat``, ``fold``
    (0-based), ``n_train``, ``n_test``, ``accuracy``, ``balanced_accuracy`` (scikit-learn's
    ``balanced_accuracy_score``: the mean recall of the classes in the test part), ``auc`` (None
    unless binary with both classes in the test part), ``fit_time`` (seconds to fit the final model
    on the training part), ``search_time`` (seconds of the inner grid-search fits, or None),
    ``params`` (the grid values chosen, ``{}`` without a grid), ``inner_accuracy`` (their mean inner
    CV accuracy, or None), ``n_xv`` (expansion vectors, or None) and ``warnings``.
    ``inner_score`` is the mean inner criterion of the chosen grid point (``inner_accuracy``
    repeats it when the criterion is the accuracy).
    ``first_model`` is the model fitted on the first training part if it was asked for.
    ``predictions`` holds one dict per outer fold: ``repeat``, ``fold``, ``test`` (the test
    bags' indices), ``scores`` (``decision_function``), ``predicted`` (``predict``) and
    ``proba`` (``predict_proba``, or None). ``splits`` are the outer ``(train, test)``
    splits, ``inner`` the inner grid-search splits of each (indices into the whole data).
    ``majority_rate`` is the fraction of the bags in the largest class of the whole data set:
    the accuracy of always predicting that class, the floor an accuracy is read against.
    """

    folds: list
    first_model: object = None
    classes: np.ndarray = field(default_factory=lambda: np.array([]))
    majority_rate: float = None
    predictions: list = field(default_factory=list)
    splits: list = field(default_factory=list)
    inner: list = field(default_factory=list)

    def _values(self, key):
        return np.array([f[key] for f in self.folds if f[key] is not None], dtype=np.float64)

    def summary(self, repeats):
        """Mean and population std over all folds, the mean accuracy of each repeat and the
        majority-class rate (keys as in the ``summary`` of ``milsvm cv --output``)."""
        acc, auc, times = self._values("accuracy"), self._values("auc"), self._values("fit_time")
        balanced, search = self._values("balanced_accuracy"), self._values("search_time")
        per_repeat = [
            float(np.mean([f["accuracy"] for f in self.folds if f["repeat"] == r]))
            for r in range(repeats)
        ]
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


def cross_validate(
    cls,
    params,
    bags,
    y,
    *,
    folds=10,
    repeats=1,
    seed=0,
    grid=None,
    inner_folds=3,
    scale=True,
    n_jobs=1,
    task_params=None,
    keep_first_model=False,
    progress=None,
    groups=None,
    scoring="accuracy",
):
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
        random_state=seed)``. With ``groups``, the grouped splits of
        :func:`milsvm.model_selection.outer_splits`.
    grid : dict of lists or None
        Parameter grid searched on every training part by an inner
        ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)`` (grouped with
        ``groups``: :func:`milsvm.model_selection.inner_splits`): the candidate with the best
        mean inner ``scoring`` wins (the first in ``ParameterGrid`` order on ties, as in
        ``GridSearchCV``; inner folds where the criterion is undefined are left out of the
        mean) and is refitted on the whole training part. For an estimator with a ``C`` path
        (``cls._c_path``) and a criterion computed from labels, the candidates that differ only
        in ``C`` are fitted on each inner training part as one warm-started path (one task),
        with the same choices.
    inner_folds : int
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
    groups : array-like of shape (n_bags,) or None
        The group (patient) of every bag: no group has bags on both sides of any split, outer
        or inner.
    scoring : str, default="accuracy"
        The inner criterion, one of :data:`SCORINGS`.

    Returns
    -------
    CVResult
    """
    from .model_selection import outer_splits

    y = np.asarray(y)
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
    groups = None if groups is None else np.asarray(groups, dtype=object)
    extra = dict(task_params or {})
    labels, counts = np.unique(y, return_counts=True)
    splits = outer_splits(y, groups, folds=folds, repeats=repeats, seed=seed)
    inner = _inner_parts(y, groups, splits, inner_folds, seed) if grid else []
    where = [
        f"fold {k % folds + 1} of repeat {k // folds + 1}" if repeats > 1 else f"fold {k + 1}"
        for k in range(len(splits))
    ]
    common = dict(cls=cls, scale=scale, bags=bags, y=y)
    chosen, inner_value, search_time = _search(
        common, params, extra, grid, inner, inner_folds, where, scoring, n_jobs, progress
    )
    tasks = [
        dict(
            common,
            params={**params, **chosen[s], **extra},
            train=train,
            test=test,
            where=where[s],
            evaluate=True,
            keep_model=keep_first_model and s == 0,
        )
        for s, (train, test) in enumerate(splits)
    ]
    first_model = None
    results, predictions = [], []
    for s, ((train, test), out) in enumerate(zip(splits, run_tasks(tasks, n_jobs, progress))):
        if s == 0:
            first_model = out.pop("model", None)
        predictions.append(
            {
                "repeat": s // folds,
                "fold": s % folds,
                "test": np.asarray(test),
                "scores": out.pop("scores"),
                "predicted": out.pop("predicted"),
                "proba": out.pop("proba"),
            }
        )
        results.append(
            {
                "repeat": s // folds,
                "fold": s % folds,
                "n_train": int(len(train)),
                "n_test": int(len(test)),
                "accuracy": out["accuracy"],
                "balanced_accuracy": out["balanced_accuracy"],
                "auc": out["auc"],
                "fit_time": out["fit_time"],
                "search_time": search_time[s],
                "params": dict(chosen[s]),
                "inner_accuracy": inner_value[s] if scoring == "accuracy" else None,
                "inner_score": inner_value[s],
                "n_xv": out["n_xv"],
                "warnings": out["warnings"],
            }
        )
    return CVResult(
        folds=results,
        first_model=first_model,
        classes=labels,
        majority_rate=float(counts.max() / len(y)),
        predictions=predictions,
        splits=splits,
        inner=inner,
    )


def _inner_parts(y, groups, splits, inner_folds, seed):
    """The inner ``(train, test)`` bag indices of every outer training part (indices into the
    whole data set); ``ValueError`` when an ungrouped training part holds fewer bags of a class
    than ``inner_folds``."""
    from .model_selection import inner_splits

    if groups is None:
        smallest = min(np.unique(y[train], return_counts=True)[1].min() for train, _ in splits)
        if inner_folds > smallest:
            raise ValueError(
                f"{inner_folds} inner folds, but a training part holds only {smallest} bags "
                f"of a class (use at most {smallest} inner folds)"
            )
    inner = []
    for train, _ in splits:
        parts = inner_splits(
            y[train],
            None if groups is None else groups[train],
            inner_folds=inner_folds,
            seed=seed,
        )
        inner.append([(train[a], train[b]) for a, b in parts])
    return inner


def _search(common, params, extra, grid, inner, inner_folds, where, scoring, n_jobs, progress):
    """The grid search on every outer training part (see :func:`cross_validate`): per part, the
    chosen candidate, its mean inner score and the search's fit seconds (empty choices and
    ``None`` without a grid)."""
    from sklearn.model_selection import ParameterGrid

    n_parts = len(where)
    chosen = [{} for _ in range(n_parts)]
    inner_value = [None] * n_parts
    search_time = [None] * n_parts
    candidates = list(ParameterGrid(grid)) if grid else []
    if not candidates:
        return chosen, inner_value, search_time
    # candidates that differ only in C: one task fitting a warm-started C path (same choices)
    c_groups = _c_groups(common["cls"], candidates, extra, scoring)
    tasks, keys = [], []
    for s in range(n_parts):
        for i, (itrain, itest) in enumerate(inner[s]):
            for group in c_groups:
                task = dict(
                    common,
                    params={**params, **candidates[group[0]], **extra},
                    train=itrain,
                    test=itest,
                    where=f"inner fold {i + 1} of {where[s]}",
                    evaluate=False,
                    keep_model=False,
                    scoring=scoring,
                )
                if len(group) > 1:
                    del task["params"]["C"]
                    task["Cs"] = [candidates[c]["C"] for c in group]
                tasks.append(task)
                keys.append((s, i, group))
    scores = np.zeros((n_parts, inner_folds, len(candidates)))
    seconds = np.zeros(n_parts)
    for (s, i, group), result in zip(keys, run_tasks(tasks, n_jobs, progress)):
        scores[s, i, group] = result["accuracy"]
        seconds[s] += result["fit_time"]
    with warnings.catch_warnings():
        # a criterion undefined on every inner fold
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(scores, axis=1)
    means = np.where(np.isnan(means), -np.inf, means)
    for s in range(n_parts):
        best = int(np.argmax(means[s]))
        chosen[s] = candidates[best]
        inner_value[s] = float(means[s, best])
        search_time[s] = float(seconds[s])
    return chosen, inner_value, search_time
