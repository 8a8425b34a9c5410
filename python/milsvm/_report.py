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

import numpy as np

from ._convert import plain
from ._crossval import final_estimator, fold_label, params_text

__all__ = ["write_report", "PLOT_HINT"]

PLOT_HINT = "pip install milsvm[plot]"


def _fmt(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def _params_text(params):
    return params_text(params) or "-"


def _per_problem(values):
    """A fit record that is one 1-D array (binary) or one per problem, as a list of arrays."""
    if values is None:
        return []
    if isinstance(values, np.ndarray) and values.dtype != object:
        values = [values] if values.ndim == 1 else list(values)
    return [np.asarray(v, dtype=np.float64).ravel() for v in values]


def _histories(estimator):
    """The objective histories of a fitted estimator: a list of 1-D arrays (one per binary
    problem), empty if it records none."""
    return [h for h in _per_problem(getattr(estimator, "objective_history_", None)) if h.size]


def _figure(width=6.4, height=3.8):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _legend_below(fig, ax, handles, ncol):
    """The legend of ``handles`` under the axes (outside the data), where matplotlib can place
    it."""
    try:
        fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize="small", frameon=False)
    except ValueError:  # matplotlib < 3.7
        ax.legend(handles=handles, loc="lower right", fontsize="small")


def _plot_accuracy(path, folds, summary, grid):
    """Bars: the accuracy of every outer fold (``r1 f1``, ...), coloured by the grid point
    chosen on it (legend in grid order); diamonds: its balanced accuracy; lines: the mean
    accuracy and the majority-class rate."""
    from matplotlib.patches import Patch

    n = len(folds)
    fig = _figure(min(max(6.4, 2.0 + 0.3 * n), 16.0), 4.6)
    ax = fig.subplots()
    x = np.arange(n)
    acc = np.array([f["accuracy"] for f in folds]) * 100
    points = [_params_text(f["params"]) for f in folds]
    distinct = list(dict.fromkeys(points))
    if grid:
        from sklearn.model_selection import ParameterGrid

        order = [_params_text(p) for p in ParameterGrid(grid)]
        distinct.sort(key=lambda p: order.index(p) if p in order else len(order))
    searched = any(f["params"] for f in folds)
    palette = "tab10" if len(distinct) <= 10 else "tab20"
    from matplotlib import colormaps

    cmap = colormaps[palette]
    colours = [cmap(distinct.index(p) % cmap.N) if searched else "tab:blue" for p in points]
    ax.bar(x, acc, width=0.75, color=colours)
    balanced = [f.get("balanced_accuracy") for f in folds]
    handles = []
    if all(b is not None for b in balanced):
        handles.append(ax.plot(x, np.array(balanced) * 100, linestyle="none", marker="D", markersize=4,
                               color="k", label="balanced accuracy of the fold")[0])
    handles.append(ax.axhline(summary["accuracy_mean"] * 100, color="k", linestyle="--", linewidth=1.2,
                              label=f"mean accuracy {summary['accuracy_mean'] * 100:.2f} % "
                                    f"(std {summary['accuracy_std'] * 100:.2f})"))
    if summary.get("majority_rate") is not None:
        handles.append(ax.axhline(summary["majority_rate"] * 100, color="tab:red", linestyle=":", linewidth=1.8,
                                  label=f"majority class {summary['majority_rate'] * 100:.2f} %"))
    repeats = [f["repeat"] for f in folds]
    for k in range(1, n):
        if repeats[k] != repeats[k - 1]:
            ax.axvline(k - 0.5, color="0.6", linewidth=0.8)
    step = max(1, int(np.ceil(n / 40)))
    labels = [fold_label(f["repeat"], f["fold"]) if k % step == 0 else "" for k, f in enumerate(folds)]
    ax.set_xticks(x, labels, rotation=90 if n > 10 else 0, fontsize="small")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel("outer fold (r: repeat, f: fold)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Accuracy per fold" + (" (colour: the grid point chosen on the fold)" if searched else ""))
    if searched:
        handles += [Patch(color=cmap(k % cmap.N), label=f"{p} ({points.count(p)} of {n} folds)")
                    for k, p in enumerate(distinct)]
    _legend_below(fig, ax, handles, 2)
    fig.savefig(path, dpi=100)


def _objective_axis(estimator, histories):
    """``(x values per history, x label, temperature axis?)`` of an estimator's histories:
    its temperatures where it declares ``_objective_step = "temperature"`` and recorded them,
    else the step numbers from ``_objective_start``."""
    step = getattr(estimator, "_objective_step", "iteration")
    if step == "temperature":
        temps = _per_problem(getattr(estimator, "temperatures_", None))
        if len(temps) == len(histories) and all(t.size == h.size and np.all(t > 0) for t, h in zip(temps, histories)):
            return temps, "temperature T (log scale, decreasing: the annealing runs left to right)", True
        step = "temperature step (temperatures not recorded)"
    start = getattr(estimator, "_objective_start", 1)
    xs = [np.arange(start, start + h.size) for h in histories]
    return xs, step + (" (0: the start)" if start == 0 else ""), False


def _plot_objective(path, estimator, histories, name, where):
    import textwrap

    from matplotlib.ticker import MaxNLocator

    classes = estimator.classes_
    xs, xlabel, temperature = _objective_axis(estimator, histories)
    fig = _figure(6.4, 4.2)
    ax = fig.subplots()
    several = len(histories) > 1 and len(histories) == len(classes)
    for k, (x, h) in enumerate(zip(xs, histories)):
        label = f"class {classes[k]} vs rest" if several else None
        ax.plot(x, h, marker="o", markersize=3, label=label)
    if temperature:
        ax.set_xscale("log")
        ax.invert_xaxis()
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("objective")
    what = getattr(estimator, "_objective_name", None) or "objective_history_"
    ax.set_title(textwrap.fill(what, 74) + f"\n{name}, the fit of fold {where}", fontsize="medium")
    if several:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=100)


def _plot_regions(path, model, bags, y, name, where):
    from ._bags import Bags

    X = bags.X
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.1 * np.where(hi > lo, hi - lo, 1.0)
    g0, g1 = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], 150),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], 150))
    grid = np.column_stack([g0.ravel(), g1.ravel()])
    scores = model.decision_function(Bags.from_instances(grid, np.ones(len(grid), dtype=np.int64)))
    classes = final_estimator(model).classes_
    fig = _figure(6.4, 5.2)
    ax = fig.subplots()
    if scores.ndim == 1:
        limit = float(np.max(np.abs(scores))) or 1.0
        filled = ax.contourf(g0, g1, scores.reshape(g0.shape), levels=20, cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.contour(g0, g1, scores.reshape(g0.shape), levels=[0.0], colors="k", linewidths=1.5)
        fig.colorbar(filled, ax=ax, label=f"score (> 0: class {classes[1]})")
    else:
        winner = np.argmax(scores, axis=1).reshape(g0.shape)
        ax.contourf(g0, g1, winner, levels=np.arange(len(classes) + 1) - 0.5, cmap="tab10", alpha=0.3,
                    vmin=0, vmax=9)
    label_of = np.repeat(np.searchsorted(classes, y), bags.bag_sizes)
    for k, c in enumerate(classes):
        pts = X[label_of == k]
        ax.scatter(pts[:, 0], pts[:, 1], s=12, color=f"C{k}" if scores.ndim > 1 else ("tab:blue", "tab:red")[k],
                   edgecolor="k", linewidth=0.3, marker="o^sDv<>p"[k % 7], label=f"instances of class-{c} bags")
    ax.set_xlabel("feature 1")
    ax.set_ylabel("feature 2")
    ax.set_title(f"{name}: decision regions of the model of fold {where}\n(every point scored as a "
        "one-instance bag)", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=100)


def _pooled_scores(evaluation_rows, predictions):
    """Per repeat: ``(scores, labels, proba of the last class or None)`` from the prediction
    table ``(columns, rows)``."""
    columns, rows = predictions
    rep, lab, sc = columns.index("repeat"), columns.index("label"), columns.index("score")
    last_proba = [i for i, c in enumerate(columns) if c.startswith("proba_")]
    out = []
    for r in sorted({row[rep] for row in rows}):
        mine = [row for row in rows if row[rep] == r]
        out.append((np.array([row[sc] for row in mine], dtype=np.float64), np.array([row[lab] for row in mine]),
                    np.array([row[last_proba[-1]] for row in mine], dtype=np.float64) if last_proba else None))
    return out


def _interval(metric):
    if metric is None or metric.get("value") is None:
        return "-"
    return f"{metric['value']:.3f} (95 % CI {metric['low']:.3f} to {metric['high']:.3f})"


def _plot_roc_pr(directory, evaluation, pooled, positive):
    """``roc.png`` and ``pr.png`` of the pooled out-of-fold scores of every repeat."""
    from sklearn.metrics import average_precision_score, precision_recall_curve, roc_curve

    roc_fig, pr_fig = _figure(5.6, 5.0), _figure(5.6, 5.6)
    roc_ax, pr_ax = roc_fig.subplots(), pr_fig.subplots()
    several = len(pooled) > 1
    for r, (scores, labels, _) in enumerate(pooled):
        truth = labels == positive
        fpr, tpr, _ = roc_curve(truth, scores)
        auc = evaluation["bags"][r]["auc"]
        name = f"repeat {r + 1}: " if several else ""
        roc_ax.plot(fpr, tpr, linewidth=1.6 if r == 0 else 0.8, alpha=1.0 if r == 0 else 0.6,
                    label=f"{name}AUC {_interval(auc)}")
        precision, recall, _ = precision_recall_curve(truth, scores)
        ap = average_precision_score(truth, scores)
        pr_ax.step(recall, precision, where="post", linewidth=1.6 if r == 0 else 0.8, alpha=1.0 if r == 0 else 0.6,
                   label=f"{name}AP {ap:.3f}; ROC AUC {_interval(auc)}")
    roc_ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="chance")
    roc_ax.set_xlabel("false positive rate")
    roc_ax.set_ylabel("true positive rate")
    roc_ax.set_title(f"ROC of the pooled out-of-fold scores (positive: {positive})", fontsize="medium")
    roc_ax.legend(loc="lower right", fontsize="small")
    roc_ax.set_aspect("equal")
    base = float(np.mean(pooled[0][1] == positive))
    pr_ax.axhline(base, color="0.6", linestyle=":", linewidth=1, label=f"prevalence {base:.3f}")
    pr_ax.set_xlabel("recall")
    pr_ax.set_ylabel("precision")
    pr_ax.set_ylim(0, 1.02)
    pr_ax.set_title(f"Precision-recall of the pooled out-of-fold scores (positive: {positive})", fontsize="medium")
    _legend_below(pr_fig, pr_ax, pr_ax.get_legend_handles_labels()[0], 1)
    roc_fig.savefig(directory / "roc.png", dpi=100)
    pr_fig.savefig(directory / "pr.png", dpi=100)
    return directory / "roc.png", directory / "pr.png"


def _plot_calibration(path, pooled, positive):
    """The reliability diagram of the pooled out-of-fold probabilities of the positive class."""
    from sklearn.calibration import calibration_curve

    fig = _figure(5.6, 5.0)
    ax = fig.subplots()
    for r, (_, labels, proba) in enumerate(pooled):
        observed, predicted = calibration_curve(labels == positive, proba, n_bins=10, strategy="uniform")
        ax.plot(predicted, observed, marker="o", markersize=3, linewidth=1.4 if r == 0 else 0.8,
                alpha=1.0 if r == 0 else 0.6, label=f"repeat {r + 1}" if len(pooled) > 1 else "out-of-fold")
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="perfect calibration")
    ax.set_xlabel(f"mean predicted probability of class {positive} (10 bins)")
    ax.set_ylabel("observed rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_title("Calibration of the pooled out-of-fold probabilities", fontsize="medium")
    ax.legend(loc="upper left", fontsize="small")
    fig.savefig(path, dpi=100)


def _pooled_lines(info, evaluation):
    """The markdown of the pooled results, and that of the patient table."""
    unit = "patients" if evaluation["resampled"] == "patients" else "bags"
    lines = ["", "## Pooled out-of-fold results", "",
             "The out-of-fold scores of all the folds of a repeat, pooled; 95 % intervals by "
                 f"{evaluation['method']} over {unit}, stratified by label, B = "
                 f"{evaluation['n_resamples']}, seeded by --seed.", "",
             "| level | repeat | ROC AUC | balanced accuracy |", "|---|---:|---|---|"]
    for level, rows in (("bags", evaluation["bags"]),
                        ("patients", (evaluation["patients"] or {}).get("repeats", []))):
        for row in rows:
            lines.append(f"| {level} | {row['repeat'] + 1} | {_interval(row['auc'])} | "
                         f"{_interval(row['balanced_accuracy'])} |")
    grouping = info.get("grouping") or {}
    if grouping.get("grouped"):
        lines += ["", f"The splits are grouped by `{grouping['column']}` ({grouping['n_groups']} patients): "
            "no patient has bags on both sides of any outer or inner split."]
    patients = evaluation["patients"]
    table = []
    if patients:
        table += ["", "## Patients", "",
                  f"A patient's score is the {patients['case_score']} of its bags' "
                      "out-of-fold scores (here the mean over the repeats), its label the "
                      "largest of its bags' labels, its prediction that of the first repeat. "
                      f"{patients['mixed_label_patients']} of {patients['n_patients']} patients "
                      "have bags of different labels.", "",
                  "| patient | bags | label | mixed labels | score | predicted |", "|---|---:|---|---|---:|---|"]
        for row in patients["table"]:
            score = row["score"]
            score = f"{score:.4f}" if isinstance(score, float) else ", ".join(f"{v:.3f}" for v in score)
            table.append(f"| {row['patient']} | {row['n_bags']} | {row['label']} | "
                f"{'yes' if row['mixed'] else ''} | {score} | {row['predicted']} |")
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
        images = _write_plots(directory, info, result, summary, bags, y, evaluation, predictions, estimator,
                              histories, where)
    written = list(images.values())
    lines = _header_lines(info) + _results_lines(info, summary)
    patient_part = []
    if evaluation is not None:
        pooled_part, patient_part = _pooled_lines(info, evaluation)
        lines += pooled_part
        for key, alt in (("roc", "ROC curves"), ("pr", "Precision-recall curves"), ("calibration", "Calibration")):
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


def _write_plots(directory, info, result, summary, bags, y, evaluation, predictions, estimator, histories,
                 where):
    """The report's figures, written to ``directory``: ``{name: path}``."""
    images = {}
    path = directory / "accuracy.png"
    _plot_accuracy(path, result.folds, summary, info["grid"])
    images["accuracy"] = path
    if histories and max(h.size for h in histories) > 1:
        path = directory / "objective.png"
        _plot_objective(path, estimator, histories, info["estimator"], where)
        images["objective"] = path
    if info["data"]["n_features"] == 2 and not bags.is_sparse and result.first_model is not None:
        path = directory / "decision_regions.png"
        _plot_regions(path, result.first_model, bags, y, info["estimator"], where)
        images["regions"] = path
    if evaluation is not None and predictions is not None and "score" in predictions[0] \
            and evaluation["bags"][0]["auc"] is not None:
        pooled = _pooled_scores(evaluation["bags"], predictions)
        positive = plain(result.classes[-1])
        images["roc"], images["pr"] = _plot_roc_pr(directory, evaluation, pooled, positive)
        if pooled[0][2] is not None:
            images["calibration"] = directory / "calibration.png"
            _plot_calibration(images["calibration"], pooled, positive)
    return images


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
        f"| protocol | {info['folds']}-fold stratified CV, {info['repeats']} repeat(s), seed " f"{info['seed']}; features "
        + ("standardised per training fold" if info["scale"] else "used as they are") + " |",
    ]
    if info["grid"]:
        grid = "; ".join(f"{k} in {plain(list(v))!r}" for k, v in info["grid"].items())
        lines.append(f"| grid search | {grid}; inner {info['inner_folds']}-fold stratified CV on every "
            "training part |")
    return lines


def _results_lines(info, summary):
    """The ``Results`` section: the means and spreads over the folds."""
    lines = [
        "",
        "## Results",
        "",
        f"- accuracy: **{summary['accuracy_mean'] * 100:.2f} %** (std over folds " f"{summary['accuracy_std'] * 100:.2f})",
        "- balanced accuracy (mean recall of the classes): "
            f"**{summary['balanced_accuracy_mean'] * 100:.2f} %** (std over folds "
            f"{summary['balanced_accuracy_std'] * 100:.2f})",
    ]
    if summary.get("majority_rate") is not None:
        lines.append(f"- majority class: {summary['majority_rate'] * 100:.2f} % of the bags (the accuracy "
            "of always predicting the largest class)")
    if summary["auc_mean"] is not None:
        lines.append(f"- ROC AUC: **{summary['auc_mean']:.4f}** (std over folds {summary['auc_std']:.4f})")
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
        + (" The chosen parameters are the grid point of best mean inner-CV accuracy on the "
                "fold's training part (its inner accuracy beside it)." if info["grid"] else ""),
        "",
        "| fold | train bags | test bags | accuracy | balanced accuracy | AUC | fit time (s) "
            "| chosen parameters | inner accuracy |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for f in result.folds:
        lines.append(f"| {fold_label(f['repeat'], f['fold'])} | {f['n_train']} | {f['n_test']} | "
            f"{f['accuracy']:.4f} | {_fmt(f.get('balanced_accuracy'))} | {_fmt(f['auc'])} | "
            f"{f['fit_time']:.3f} | {_params_text(f['params'])} | {_fmt(f['inner_accuracy'])} |")
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
                lines += ["", "The annealed objective is drawn against the temperature, which falls from "
                    "left to right. Its entropy term (T times a sum of p ln p, at most 0) "
                    "shrinks as T falls, so the objective rises as the annealing proceeds: that "
                    "is the schedule, not divergence."]
        elif histories:
            lines.append(f"{info['estimator']} records a single objective value on fold {where} "
                         f"({histories[0][0]:.6g}): no history to plot.")
        else:
            lines.append(f"{info['estimator']} records no objective history (`objective_history_`).")
        lines.append("")
        if "regions" in images:
            lines.append(f"![Decision regions of the model of fold {where}]({images['regions'].name})")
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


def _inline(text):
    """Inline markdown of the report (``code``, **bold**) as HTML, the rest escaped."""
    import html
    import re

    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


_STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;"
    "margin:2em auto;\n"
    "padding:0 1em;color:#222;line-height:1.45}table{border-collapse:collapse;margin:1em 0;"
    "font-size:0.9em}\n"
    "td,th{border:1px solid #ccc;padding:0.25em 0.6em}th{background:#f2f2f2}"
    "td.num{text-align:right}\n"
    "pre{background:#f6f6f6;padding:0.6em;white-space:pre-wrap;word-break:break-all}"
    "img{max-width:100%;margin:0.5em 0}\n"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}"
)


def markdown_html(lines, directory):
    """The report's markdown (the subset it writes: headings, fenced code, tables, lists, images,
    paragraphs) as one self-contained HTML page, the PNG figures embedded as base64."""
    import base64
    import html
    import re

    body, k = [], 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("```"):
            end = k + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            body.append("<pre>" + html.escape("\n".join(lines[k + 1:end])) + "</pre>")
            k = end + 1
            continue
        if line.startswith("|"):
            end = k
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            rows = [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[k:end]]
            align = [c.endswith(":") for c in rows[1]] if len(rows) > 1 else []
            out = ["<table>"]
            if any(rows[0]):  # the report's key-value table has an empty header row
                out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in rows[0]) + "</tr>")
            for row in rows[2:]:
                cells = "".join(f"<td class=\"num\">{_inline(c)}</td>" if j < len(align) and align[j]
                                else f"<td>{_inline(c)}</td>" for j, c in enumerate(row))
                out.append(f"<tr>{cells}</tr>")
            body.append("\n".join(out + ["</table>"]))
            k = end
            continue
        if line.startswith("- "):
            end = k
            while end < len(lines) and lines[end].startswith("- "):
                end += 1
            body.append("<ul>" + "".join(f"<li>{_inline(item[2:])}</li>" for item in lines[k:end]) + "</ul>")
            k = end
            continue
        image = re.fullmatch(r"!\[(.*)\]\((.+)\)", line)
        if image:
            data = base64.b64encode((Path(directory) / image.group(2)).read_bytes()).decode("ascii")
            body.append(f'<img alt="{html.escape(image.group(1))}" src="data:image/png;base64,{data}">')
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
        k += 1
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>milsvm cross-validation report</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")

