"""The ``milsvm cv --report DIR`` report: a markdown summary and PNG plots.

Files written to ``DIR`` (created if needed):

- ``report.md``: the command, data, estimator, protocol, results (accuracy, balanced accuracy,
  the majority-class rate, AUC), a per-fold table (folds named ``r1 f3``: repeat 1, fold 3; the
  grid point chosen on each), warnings;
- ``accuracy.png``: the test accuracy of every outer fold (``r1 f1``, ``r1 f2``, ...; coloured by
  the grid point chosen on the fold), its balanced accuracy, the mean, and the majority-class
  rate as a horizontal line;
- ``objective.png``: the objective history of the fit on the first training part (estimators
  with an ``objective_history_``), named as the estimator declares (``_objective_name``); the
  deterministic-annealing estimators' against the temperature (log scale, decreasing to the
  right: the annealed objective rises as the temperature falls, which is not divergence);
- ``decision_regions.png``: for two-feature dense data, the score of every point of the plane as
  a one-instance bag under the model of the first training part, with the instances on top;
- ``roc.png`` and ``pr.png`` (``milsvm cv``, two classes): the ROC and precision-recall curves
  of the pooled out-of-fold scores of every repeat, the legend giving the AUC with its 95 %
  bootstrap interval (and the average precision);
- ``calibration.png`` (with probabilities): the mean predicted probability of the positive
  class against the observed rate, in ten bins of the pooled out-of-fold probabilities;
- ``report.html``: the same report as one self-contained page, the figures embedded.

``report.md`` also holds the pooled out-of-fold results with their intervals and, when the
bags have patients, the patient-level results and the per-patient table.

The plots need matplotlib (the ``plot`` extra); without it only ``report.md`` is written and
:func:`write_report` says so.
"""

from __future__ import annotations

from pathlib import Path

from ._convert import plain
from ._crossval import final_estimator, fold_label
from ._report_html import markdown_html
from ._report_plots import _histories, _interval, _params_text, _write_plots

__all__ = ["write_report", "PLOT_HINT"]

PLOT_HINT = "pip install milsvm[plot]"


def _fmt(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def _pooled_lines(info, evaluation):
    """The markdown of the pooled results, and that of the patient table."""
    unit = "patients" if evaluation["resampled"] == "patients" else "bags"
    lines = [
        "",
        "## Pooled out-of-fold results",
        "",
        "The out-of-fold scores of all the folds of a repeat, pooled; 95 % intervals by "
        f"{evaluation['method']} over {unit}, stratified by label, B = "
        f"{evaluation['n_resamples']}, seeded by --seed.",
        "",
        "| level | repeat | ROC AUC | balanced accuracy |",
        "|---|---:|---|---|",
    ]
    for level, rows in (
        ("bags", evaluation["bags"]),
        ("patients", (evaluation["patients"] or {}).get("repeats", [])),
    ):
        for row in rows:
            lines.append(
                f"| {level} | {row['repeat'] + 1} | {_interval(row['auc'])} | "
                f"{_interval(row['balanced_accuracy'])} |"
            )
    grouping = info.get("grouping") or {}
    if grouping.get("grouped"):
        lines += [
            "",
            f"The splits are grouped by `{grouping['column']}` ({grouping['n_groups']} patients): "
            "no patient has bags on both sides of any outer or inner split.",
        ]
    patients = evaluation["patients"]
    table = []
    if patients:
        table += [
            "",
            "## Patients",
            "",
            f"A patient's score is the {patients['case_score']} of its bags' "
            "out-of-fold scores (here the mean over the repeats), its label the "
            "largest of its bags' labels, its prediction that of the first repeat. "
            f"{patients['mixed_label_patients']} of {patients['n_patients']} patients "
            "have bags of different labels.",
            "",
            "| patient | bags | label | mixed labels | score | predicted |",
            "|---|---:|---|---|---:|---|",
        ]
        for row in patients["table"]:
            score = row["score"]
            score = (
                f"{score:.4f}" if isinstance(score, float) else ", ".join(f"{v:.3f}" for v in score)
            )
            table.append(
                f"| {row['patient']} | {row['n_bags']} | {row['label']} | "
                f"{'yes' if row['mixed'] else ''} | {score} | {row['predicted']} |"
            )
    return lines, table


def write_report(directory, info, result, summary, bags, y, evaluation=None, predictions=None):
    """Write ``report.md``, ``report.html`` and, with matplotlib, the plots to ``directory``.

    Parameters
    ----------
    directory : path
    info : dict
        The JSON document of the run (see ``milsvm cv --help``) without ``fold_results`` and
        ``summary``: ``command``, ``data``, ``estimator``, ``params``, ``grid``, ...
    result : CVResult
        With ``first_model`` set.
    summary : dict
        ``result.summary(...)``.
    bags : Bags
    y : ndarray
    evaluation : dict or None
        The pooled results (:func:`milsvm._oof.pooled_evaluation`, JSON-safe).
    predictions : (columns, rows) or None
        The out-of-fold prediction table (:func:`milsvm._oof.prediction_table`).

    Returns
    -------
    written : list of Path
        The files written.
    plots : bool
        False if matplotlib is missing (only ``report.md`` was written).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        plots = False
    else:
        plots = True
    estimator = final_estimator(result.first_model) if result.first_model is not None else None
    histories = _histories(estimator) if estimator is not None else []
    first = result.folds[0]
    where = fold_label(first["repeat"], first["fold"])
    if first["params"]:
        where += f" (chosen: {_params_text(first['params'])})"
    images = {}
    if plots:
        images = _write_plots(
            directory,
            info,
            result,
            summary,
            bags,
            y,
            evaluation,
            predictions,
            estimator,
            histories,
            where,
        )
    written = list(images.values())
    lines = _header_lines(info) + _results_lines(info, summary)
    patient_part = []
    if evaluation is not None:
        pooled_part, patient_part = _pooled_lines(info, evaluation)
        lines += pooled_part
        for key, alt in (
            ("roc", "ROC curves"),
            ("pr", "Precision-recall curves"),
            ("calibration", "Calibration"),
        ):
            if key in images:
                lines += ["", f"![{alt}]({images[key].name})"]
    lines += _fold_lines(info, result)
    lines += _plot_lines(info, plots, images, estimator, histories, where)
    lines += patient_part
    lines += _warning_lines(result)
    path = directory / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    html = directory / "report.html"
    html.write_text(markdown_html(lines, directory), encoding="utf-8")
    written[:0] = [path, html]
    return written, plots


def _header_lines(info):
    """The report's title, command line and run table."""
    data = info["data"]
    lines = [
        "# milsvm cross-validation report",
        "",
        "```",
        " ".join(info["command"]),
        "```",
        "",
        "| | |",
        "|---|---|",
        f"| data | `{data['path']}` ({data['format']}): {data['n_bags']} bags, "
        f"{data['n_instances']} instances, {data['n_features']} features, classes "
        f"{', '.join(map(str, data['classes']))} |",
        f"| estimator | {info['estimator']}({_params_text(info['params'])}) |",
        f"| protocol | {info['folds']}-fold stratified CV, {info['repeats']} repeat(s), seed "
        f"{info['seed']}; features "
        + ("standardised per training fold" if info["scale"] else "used as they are")
        + " |",
    ]
    if info["grid"]:
        grid = "; ".join(f"{k} in {plain(list(v))!r}" for k, v in info["grid"].items())
        lines.append(
            f"| grid search | {grid}; inner {info['inner_folds']}-fold stratified CV on every "
            "training part |"
        )
    return lines


def _results_lines(info, summary):
    """The ``Results`` section: the means and spreads over the folds."""
    lines = [
        "",
        "## Results",
        "",
        f"- accuracy: **{summary['accuracy_mean'] * 100:.2f} %** (std over folds "
        f"{summary['accuracy_std'] * 100:.2f})",
        "- balanced accuracy (mean recall of the classes): "
        f"**{summary['balanced_accuracy_mean'] * 100:.2f} %** (std over folds "
        f"{summary['balanced_accuracy_std'] * 100:.2f})",
    ]
    if summary.get("majority_rate") is not None:
        lines.append(
            f"- majority class: {summary['majority_rate'] * 100:.2f} % of the bags (the accuracy "
            "of always predicting the largest class)"
        )
    if summary["auc_mean"] is not None:
        lines.append(
            f"- ROC AUC: **{summary['auc_mean']:.4f}** (std over folds {summary['auc_std']:.4f})"
        )
    if info["repeats"] > 1:
        means = ", ".join(f"{m * 100:.2f}" for m in summary["repeat_accuracy_means"])
        lines.append(f"- accuracy of each repeat (%): {means}")
    lines += [
        f"- fit time of the final models: {summary['fit_time_mean'] * 1000:.1f} ms per fold (total "
        f"{summary['fit_time_total']:.2f} s)",
    ]
    if summary["search_time_total"] is not None:
        lines.append(f"- grid search fits: {summary['search_time_total']:.2f} s in all")
    return lines


def _fold_lines(info, result):
    """The ``Folds`` section: one table row per outer fold."""
    lines = [
        "",
        "## Folds",
        "",
        "Folds are named by repeat and fold: r2 f3 is fold 3 of repeat 2."
        + (
            " The chosen parameters are the grid point of best mean inner-CV accuracy on the "
            "fold's training part (its inner accuracy beside it)."
            if info["grid"]
            else ""
        ),
        "",
        "| fold | train bags | test bags | accuracy | balanced accuracy | AUC | fit time (s) "
        "| chosen parameters | inner accuracy |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for f in result.folds:
        lines.append(
            f"| {fold_label(f['repeat'], f['fold'])} | {f['n_train']} | {f['n_test']} | "
            f"{f['accuracy']:.4f} | {_fmt(f.get('balanced_accuracy'))} | {_fmt(f['auc'])} | "
            f"{f['fit_time']:.3f} | {_params_text(f['params'])} | {_fmt(f['inner_accuracy'])} |"
        )
    return lines


def _plot_lines(info, plots, images, estimator, histories, where):
    """The ``Plots`` section: the figures, or why one is missing."""
    lines = ["", "## Plots", ""]
    if not plots:
        lines.append(f"No plots: matplotlib is not installed (`{PLOT_HINT}`).")
    else:
        lines.append(f"![Accuracy per fold]({images['accuracy'].name})")
        lines.append("")
        if "objective" in images:
            what = getattr(estimator, "_objective_name", None) or "objective"
            lines.append(f"![{what} of the fit of fold {where}]({images['objective'].name})")
            if getattr(estimator, "_objective_step", None) == "temperature":
                lines += [
                    "",
                    "The annealed objective is drawn against the temperature, which falls from "
                    "left to right. Its entropy term (T times a sum of p ln p, at most 0) "
                    "shrinks as T falls, so the objective rises as the annealing proceeds: that "
                    "is the schedule, not divergence.",
                ]
        elif histories:
            lines.append(
                f"{info['estimator']} records a single objective value on fold {where} "
                f"({histories[0][0]:.6g}): no history to plot."
            )
        else:
            lines.append(
                f"{info['estimator']} records no objective history (`objective_history_`)."
            )
        lines.append("")
        if "regions" in images:
            lines.append(
                f"![Decision regions of the model of fold {where}]({images['regions'].name})"
            )
        else:
            lines.append("Decision regions are drawn for two-feature dense data only.")
    return lines


def _warning_lines(result):
    """The ``Warnings`` section: each distinct warning of the fits with its number of folds."""
    lines = []
    warned = sorted({w for f in result.folds for w in f["warnings"]})
    if warned:
        lines += ["", "## Warnings", ""]
        for w in warned:
            n = sum(w in f["warnings"] for f in result.folds)
            lines.append(f"- {w} ({n} of {len(result.folds)} folds)")
    return lines
