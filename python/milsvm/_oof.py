"""Out-of-fold predictions of ``milsvm cv`` and the results a paper reports from them.

- :func:`prediction_table`: one row per bag and repeat (``repeat, fold, bag, group, label,
  score`` and, with probabilities, ``proba_<class>``), for ``--predictions`` and the JSON.
- :func:`pooled_evaluation`: per repeat, the ROC AUC of the pooled out-of-fold scores (binary
  problems) and the balanced accuracy of the pooled predictions, each with a stratified
  bootstrap interval (:mod:`milsvm._bootstrap`); resampling bags, or patients when the splits
  were grouped. With groups, the same at the patient level: a patient's score is the max (or
  mean) of its bags' out-of-fold scores, its label the largest of its bags' labels.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from ._bootstrap import METHOD, bootstrap_interval, weighted_auc, weighted_balanced_accuracy
from ._convert import plain

__all__ = ["prediction_table", "pooled_evaluation", "write_predictions"]


def _score_columns(classes, scores):
    if np.ndim(scores) == 1:
        return ["score"]
    return [f"score_{plain(c)}" for c in classes]


def prediction_table(result, y, names, groups, classes):
    """``(columns, rows)`` of the out-of-fold predictions: one row per test bag of every outer
    fold, repeat-major, fold by fold, bags in data order within a fold. ``label`` is the bag's
    label as the data give it; ``score`` the decision value (binary: of ``classes[1]``), or one
    ``score_<class>`` column per class; ``proba_<class>`` columns when the model gives
    probabilities; ``group`` is empty without groups."""
    first = result.predictions[0]
    columns = ["repeat", "fold", "bag", "group", "label", *_score_columns(classes, first["scores"])]
    if first["proba"] is not None:
        columns += [f"proba_{plain(c)}" for c in classes]
    rows = []
    for p in result.predictions:
        scores = np.asarray(p["scores"])
        proba = p["proba"]
        for k, bag in enumerate(p["test"]):
            row = [
                p["repeat"],
                p["fold"],
                names[bag],
                "" if groups is None else str(groups[bag]),
                plain(y[bag]),
            ]
            row += [float(scores[k])] if scores.ndim == 1 else [float(v) for v in scores[k]]
            if proba is not None:
                row += [float(v) for v in proba[k]]
            rows.append(row)
    return columns, rows


def write_predictions(path, columns, rows):
    """The prediction table as CSV text written to ``path`` (atomically)."""
    from ._model import write_atomically

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
    write_atomically(path, out.getvalue())


def _pooled(result, repeat, n_bags):
    """The out-of-fold scores and predictions of one repeat, in bag order."""
    scores = predicted = None
    for p in result.predictions:
        if p["repeat"] != repeat:
            continue
        s = np.asarray(p["scores"])
        if scores is None:
            scores = np.zeros((n_bags,) + s.shape[1:])
            predicted = np.empty(n_bags, dtype=object)
        scores[p["test"]] = s
        predicted[p["test"]] = p["predicted"]
    return scores, predicted


def _case_table(y, groups, classes):
    """``(case ids, code of every bag, case label, mixed-label mask)``: a case's label is the
    largest of its bags' labels in class order."""
    cases, codes = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    rank = np.searchsorted(classes, y)
    top = np.full(len(cases), -1)
    low = np.full(len(cases), len(classes))
    np.maximum.at(top, codes, rank)
    np.minimum.at(low, codes, rank)
    return cases, codes, classes[top], top != low


def _case_scores(scores, codes, n_cases, how):
    """The case scores: max (or mean) over each case's bags, per column."""
    scores = np.asarray(scores, dtype=np.float64)
    shape = (n_cases,) + scores.shape[1:]
    if how == "max":
        out = np.full(shape, -np.inf)
        np.maximum.at(out, codes, scores)
        return out
    out = np.zeros(shape)
    np.add.at(out, codes, scores)
    counts = np.bincount(codes, minlength=n_cases).astype(np.float64)
    return out / (counts if scores.ndim == 1 else counts[:, None])


def _labels_of(scores, classes):
    if scores.ndim == 1:
        return classes[(scores > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


def _metrics(scores, predicted, y, classes, strata, unit_of_bag, n_resamples, rng):
    def interval(metric):
        return bootstrap_interval(metric, strata, unit_of_bag, n_resamples=n_resamples, rng=rng)

    out = {}
    if len(classes) == 2 and np.ndim(scores) == 1:
        positive = y == classes[1]
        out["auc"] = interval(lambda w: weighted_auc(scores, positive, w))
    else:
        out["auc"] = None
    out["balanced_accuracy"] = interval(lambda w: weighted_balanced_accuracy(y, predicted, w))
    return out


def pooled_evaluation(
    result,
    y,
    groups,
    *,
    grouped,
    repeats,
    case_score="max",
    n_resamples=2000,
    seed=0,
    confidence=0.95,
):
    """The pooled out-of-fold results of every repeat, with bootstrap intervals.

    Parameters
    ----------
    result : CVResult
    y : ndarray
    groups : ndarray or None
        The patient of every bag.
    grouped : bool
        Whether the splits were grouped: the bag-level bootstrap then resamples patients.
    repeats : int
    case_score : {"max", "mean"}
    n_resamples : int
    seed : int
        Resample ``r`` draws from ``numpy.random.default_rng([seed, r])``.
    confidence : float

    Returns
    -------
    dict
        ``method``, ``confidence``, ``n_resamples``, ``resampled`` ("bags" or "patients"),
        ``bags``: one ``{"repeat", "auc", "balanced_accuracy"}`` per repeat (each metric
        ``{"value", "low", "high", "n_resamples"}``, ``auc`` None unless binary); with groups,
        ``patients``: ``{"case_score", "n_patients", "mixed_label_patients", "repeats": [...],
        "table": [{"patient", "n_bags", "label", "mixed", "score", "predicted"}]}`` (the table's
        score is the mean over the repeats of the patient's score, its prediction that of the
        first repeat), else None.
    """
    if confidence != 0.95:
        raise ValueError("only 95 % intervals are computed")
    classes = np.asarray(result.classes)
    y = np.asarray(y)
    n = len(y)
    case = None
    if groups is not None:
        cases, codes, case_y, mixed = _case_table(y, groups, classes)
        case = {"ids": cases, "codes": codes, "y": case_y, "mixed": mixed}
    if grouped and case is not None:
        strata, unit_of_bag, resampled = case["y"], case["codes"], "patients"
    else:
        strata, unit_of_bag, resampled = y, None, "bags"
    out = {
        "method": METHOD,
        "confidence": confidence,
        "n_resamples": n_resamples,
        "resampled": resampled,
        "bags": [],
        "patients": None,
    }
    per_case_scores, first_case_pred = [], None
    patient_rows = []
    for r in range(repeats):
        scores, predicted = _pooled(result, r, n)
        rng = np.random.default_rng([seed, r])
        out["bags"].append(
            {
                "repeat": r,
                **_metrics(scores, predicted, y, classes, strata, unit_of_bag, n_resamples, rng),
            }
        )
        if case is not None:
            cs = _case_scores(scores, case["codes"], len(case["ids"]), case_score)
            cp = _labels_of(cs, classes)
            per_case_scores.append(cs)
            if first_case_pred is None:
                first_case_pred = cp
            rng = np.random.default_rng([seed, r, 1])
            patient_rows.append(
                {
                    "repeat": r,
                    **_metrics(cs, cp, case["y"], classes, case["y"], None, n_resamples, rng),
                }
            )
    if case is not None:
        mean_scores = np.mean(per_case_scores, axis=0)
        counts = np.bincount(case["codes"], minlength=len(case["ids"]))
        table = []
        for k, cid in enumerate(case["ids"]):
            score = mean_scores[k]
            table.append(
                {
                    "patient": str(cid),
                    "n_bags": int(counts[k]),
                    "label": plain(case["y"][k]),
                    "mixed": bool(case["mixed"][k]),
                    "score": float(score) if np.ndim(score) == 0 else [float(v) for v in score],
                    "predicted": plain(first_case_pred[k]),
                }
            )
        out["patients"] = {
            "case_score": case_score,
            "n_patients": int(len(case["ids"])),
            "mixed_label_patients": int(case["mixed"].sum()),
            "repeats": patient_rows,
            "table": table,
        }
    return out


def interval_text(metric, digits=4, percent=False):
    """``0.8123 (95 % CI 0.7512 to 0.8690)`` for one metric dict (``-`` when undefined)."""
    if metric is None or metric["value"] is None:
        return "-"
    scale, unit = (100.0, " %") if percent else (1.0, "")
    d = 2 if percent else digits
    return (
        f"{scale * metric['value']:.{d}f}{unit} (95 % CI {scale * metric['low']:.{d}f} to "
        f"{scale * metric['high']:.{d}f})"
    )
