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
  a one-instance bag under the model of the first training part, with the instances on top.

The plots need matplotlib (the ``plot`` extra); without it only ``report.md`` is written and
:func:`write_report` says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._crossval import final_estimator, fold_label, params_text, plain

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
    ax.set_title(f"{name}: decision regions of the model of fold {where}\n(every point scored as a one-instance "
                 "bag)", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=100)


def write_report(directory, info, result, summary, bags, y):
    """Write ``report.md`` and, with matplotlib, the plots to ``directory``.

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
    regions = info["data"]["n_features"] == 2 and not bags.is_sparse and result.first_model is not None
    written = []
    images = {}
    if plots:
        path = directory / "accuracy.png"
        _plot_accuracy(path, result.folds, summary, info["grid"])
        images["accuracy"] = path
        if histories and max(h.size for h in histories) > 1:
            path = directory / "objective.png"
            _plot_objective(path, estimator, histories, info["estimator"], where)
            images["objective"] = path
        if regions:
            path = directory / "decision_regions.png"
            _plot_regions(path, result.first_model, bags, y, info["estimator"], where)
            images["regions"] = path
        written.extend(images.values())

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
        f"| data | `{data['path']}` ({data['format']}): {data['n_bags']} bags, {data['n_instances']} instances, "
        f"{data['n_features']} features, classes {', '.join(map(str, data['classes']))} |",
        f"| estimator | {info['estimator']}({_params_text(info['params'])}) |",
        f"| protocol | {info['folds']}-fold stratified CV, {info['repeats']} repeat(s), seed {info['seed']}; features "
        + ("standardised per training fold" if info["scale"] else "used as they are") + " |",
    ]
    if info["grid"]:
        grid = "; ".join(f"{k} in {plain(list(v))!r}" for k, v in info["grid"].items())
        lines.append(f"| grid search | {grid}; inner {info['inner_folds']}-fold stratified CV on every training part |")
    lines += [
        "",
        "## Results",
        "",
        f"- accuracy: **{summary['accuracy_mean'] * 100:.2f} %** (std over folds {summary['accuracy_std'] * 100:.2f})",
        f"- balanced accuracy (mean recall of the classes): **{summary['balanced_accuracy_mean'] * 100:.2f} %** "
        f"(std over folds {summary['balanced_accuracy_std'] * 100:.2f})",
    ]
    if summary.get("majority_rate") is not None:
        lines.append(f"- majority class: {summary['majority_rate'] * 100:.2f} % of the bags (the accuracy of always "
                     "predicting the largest class)")
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
    lines += [
        "",
        "## Folds",
        "",
        "Folds are named by repeat and fold: r2 f3 is fold 3 of repeat 2."
        + (" The chosen parameters are the grid point of best mean inner-CV accuracy on the fold's training "
           "part (its inner accuracy beside it)." if info["grid"] else ""),
        "",
        "| fold | train bags | test bags | accuracy | balanced accuracy | AUC | fit time (s) | chosen parameters "
        "| inner accuracy |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for f in result.folds:
        lines.append(f"| {fold_label(f['repeat'], f['fold'])} | {f['n_train']} | {f['n_test']} | {f['accuracy']:.4f} | "
                     f"{_fmt(f.get('balanced_accuracy'))} | {_fmt(f['auc'])} | {f['fit_time']:.3f} | "
                     f"{_params_text(f['params'])} | {_fmt(f['inner_accuracy'])} |")
    lines += ["", "## Plots", ""]
    if not plots:
        lines.append(f"No plots: matplotlib is not installed (`{PLOT_HINT}`).")
    else:
        lines.append(f"![Accuracy per fold]({images['accuracy'].name})")
        lines.append("")
        if "objective" in images:
            what = getattr(estimator, "_objective_name", None) or "objective"
            lines.append(f"![{what} of the fit of fold {where}]({images['objective'].name})")
            if getattr(estimator, "_objective_step", None) == "temperature":
                lines += ["", "The annealed objective is drawn against the temperature, which falls from left to "
                              "right. Its entropy term (T times a sum of p ln p, at most 0) shrinks as T falls, so "
                              "the objective rises as the annealing proceeds: that is the schedule, not "
                              "divergence."]
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
    warned = sorted({w for f in result.folds for w in f["warnings"]})
    if warned:
        lines += ["", "## Warnings", ""]
        for w in warned:
            n = sum(w in f["warnings"] for f in result.folds)
            lines.append(f"- {w} ({n} of {len(result.folds)} folds)")
    path = directory / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.insert(0, path)
    return written, plots

