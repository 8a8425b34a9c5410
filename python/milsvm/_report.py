"""The ``milsvm cv --report DIR`` report: a markdown summary and PNG plots.

Files written to ``DIR`` (created if needed):

- ``report.md``: the command, data, estimator, protocol, results, a per-fold table, warnings;
- ``accuracy.png``: the test accuracy of every outer fold, with the mean;
- ``objective.png``: the objective per iteration of the fit on the first training part
  (estimators with an ``objective_history_``);
- ``decision_regions.png``: for two-feature dense data, the score of every point of the plane as
  a one-instance bag under the model of the first training part, with the instances on top.

The plots need matplotlib (the ``plot`` extra); without it only ``report.md`` is written and
:func:`write_report` says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._crossval import final_estimator

__all__ = ["write_report", "PLOT_HINT"]

PLOT_HINT = "pip install milsvm[plot]"


def _fmt(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def _params_text(params):
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) or "-"


def _histories(estimator):
    """The objective histories of a fitted estimator: a list of 1-D arrays (one per binary
    problem), empty if it records none."""
    hist = getattr(estimator, "objective_history_", None)
    if hist is None:
        return []
    if isinstance(hist, np.ndarray) and hist.dtype != object:
        hist = [hist] if hist.ndim == 1 else list(hist)
    out = [np.asarray(h, dtype=np.float64).ravel() for h in hist]
    return [h for h in out if h.size]


def _figure(width=6.4, height=3.8):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _plot_accuracy(path, folds, summary):
    fig = _figure()
    ax = fig.subplots()
    acc = np.array([f["accuracy"] for f in folds]) * 100
    repeats = np.array([f["repeat"] for f in folds])
    colours = [f"C{r % 10}" for r in repeats]
    ax.bar(np.arange(1, len(acc) + 1), acc, color=colours)
    ax.axhline(summary["accuracy_mean"] * 100, color="k", linestyle="--",
               label=f"mean {summary['accuracy_mean'] * 100:.2f} % (std {summary['accuracy_std'] * 100:.2f})")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("outer fold" + (" (colour: repeat)" if repeats.max() > 0 else ""))
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Accuracy per fold")
    ax.legend(loc="lower right")
    fig.savefig(path, dpi=100)


def _plot_objective(path, histories, name, classes):
    from matplotlib.ticker import MaxNLocator

    fig = _figure()
    ax = fig.subplots()
    for k, h in enumerate(histories):
        label = f"class {classes[k]} vs rest" if len(histories) > 1 and len(histories) == len(classes) else None
        ax.plot(np.arange(1, h.size + 1), h, marker="o", markersize=3, label=label)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective")
    ax.set_title(f"{name}: objective per iteration (fold 1)")
    if len(histories) > 1 and len(histories) == len(classes):
        ax.legend()
    fig.savefig(path, dpi=100)


def _plot_regions(path, model, bags, y, name):
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
    ax.set_title(f"{name}: decision regions of the fold-1 model\n(every point scored as a one-instance bag)",
                 fontsize="medium")
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
    regions = info["data"]["n_features"] == 2 and not bags.is_sparse and result.first_model is not None
    written = []
    images = {}
    if plots:
        path = directory / "accuracy.png"
        _plot_accuracy(path, result.folds, summary)
        images["accuracy"] = path
        if histories:
            path = directory / "objective.png"
            _plot_objective(path, histories, info["estimator"], final_estimator(result.first_model).classes_)
            images["objective"] = path
        if regions:
            path = directory / "decision_regions.png"
            _plot_regions(path, result.first_model, bags, y, info["estimator"])
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
        grid = "; ".join(f"{k} in {v!r}" for k, v in info["grid"].items())
        lines.append(f"| grid search | {grid}; inner {info['inner_folds']}-fold stratified CV on every training part |")
    lines += [
        "",
        "## Results",
        "",
        f"- accuracy: **{summary['accuracy_mean'] * 100:.2f} %** (std over folds {summary['accuracy_std'] * 100:.2f})",
    ]
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
        "| repeat | fold | train bags | test bags | accuracy | AUC | fit time (s) | chosen parameters |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for f in result.folds:
        lines.append(f"| {f['repeat'] + 1} | {f['fold'] + 1} | {f['n_train']} | {f['n_test']} | {f['accuracy']:.4f} | "
                     f"{_fmt(f['auc'])} | {f['fit_time']:.3f} | {_params_text(f['params'])} |")
    lines += ["", "## Plots", ""]
    if not plots:
        lines.append(f"No plots: matplotlib is not installed (`{PLOT_HINT}`).")
    else:
        lines.append(f"![Accuracy per fold]({images['accuracy'].name})")
        lines.append("")
        if "objective" in images:
            lines.append(f"![Objective per iteration of the fold-1 fit]({images['objective'].name})")
        else:
            lines.append(f"{info['estimator']} records no objective history (`objective_history_`).")
        lines.append("")
        if "regions" in images:
            lines.append(f"![Decision regions of the fold-1 model]({images['regions'].name})")
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

