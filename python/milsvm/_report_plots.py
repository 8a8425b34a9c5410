"""The figures of the ``milsvm cv --report`` report (:mod:`milsvm._report`): accuracy per fold,
the objective history, decision regions, ROC and precision-recall curves, calibration."""

from __future__ import annotations

import numpy as np

from ._convert import plain
from ._crossval import final_estimator, fold_label, params_text


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
        fig.legend(
            handles=handles, loc="outside lower center", ncol=ncol, fontsize="small", frameon=False
        )
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
        handles.append(
            ax.plot(
                x,
                np.array(balanced) * 100,
                linestyle="none",
                marker="D",
                markersize=4,
                color="k",
                label="balanced accuracy of the fold",
            )[0]
        )
    # the horizontal lines: (rate, colour, line style, line width, legend label)
    mean, std = summary["accuracy_mean"] * 100, summary["accuracy_std"] * 100
    rules = [(mean, "k", "--", 1.2, f"mean accuracy {mean:.2f} % (std {std:.2f})")]
    if summary.get("majority_rate") is not None:
        majority = summary["majority_rate"] * 100
        rules.append((majority, "tab:red", ":", 1.8, f"majority class {majority:.2f} %"))
    for rate, colour, style, width, label in rules:
        handles.append(
            ax.axhline(rate, color=colour, linestyle=style, linewidth=width, label=label)
        )
    repeats = [f["repeat"] for f in folds]
    for k in range(1, n):
        if repeats[k] != repeats[k - 1]:
            ax.axvline(k - 0.5, color="0.6", linewidth=0.8)
    step = max(1, int(np.ceil(n / 40)))
    labels = [
        fold_label(f["repeat"], f["fold"]) if k % step == 0 else "" for k, f in enumerate(folds)
    ]
    ax.set_xticks(x, labels, rotation=90 if n > 10 else 0, fontsize="small")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel("outer fold (r: repeat, f: fold)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(
        "Accuracy per fold" + (" (colour: the grid point chosen on the fold)" if searched else "")
    )
    if searched:
        handles += [
            Patch(color=cmap(k % cmap.N), label=f"{p} ({points.count(p)} of {n} folds)")
            for k, p in enumerate(distinct)
        ]
    _legend_below(fig, ax, handles, 2)
    fig.savefig(path, dpi=100)


def _objective_axis(estimator, histories):
    """``(x values per history, x label, temperature axis?)`` of an estimator's histories:
    its temperatures where it declares ``_objective_step = "temperature"`` and recorded them,
    else the step numbers from ``_objective_start``."""
    step = getattr(estimator, "_objective_step", "iteration")
    if step == "temperature":
        temps = _per_problem(getattr(estimator, "temperatures_", None))
        if len(temps) == len(histories) and all(
            t.size == h.size and np.all(t > 0) for t, h in zip(temps, histories)
        ):
            return (
                temps,
                "temperature T (log scale, decreasing: the annealing runs left to right)",
                True,
            )
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
    g0, g1 = np.meshgrid(
        np.linspace(lo[0] - pad[0], hi[0] + pad[0], 150),
        np.linspace(lo[1] - pad[1], hi[1] + pad[1], 150),
    )
    grid = np.column_stack([g0.ravel(), g1.ravel()])
    scores = model.decision_function(Bags.from_instances(grid, np.ones(len(grid), dtype=np.int64)))
    classes = final_estimator(model).classes_
    fig = _figure(6.4, 5.2)
    ax = fig.subplots()
    if scores.ndim == 1:
        limit = float(np.max(np.abs(scores))) or 1.0
        filled = ax.contourf(
            g0, g1, scores.reshape(g0.shape), levels=20, cmap="RdBu_r", vmin=-limit, vmax=limit
        )
        ax.contour(g0, g1, scores.reshape(g0.shape), levels=[0.0], colors="k", linewidths=1.5)
        fig.colorbar(filled, ax=ax, label=f"score (> 0: class {classes[1]})")
    else:
        winner = np.argmax(scores, axis=1).reshape(g0.shape)
        ax.contourf(
            g0,
            g1,
            winner,
            levels=np.arange(len(classes) + 1) - 0.5,
            cmap="tab10",
            alpha=0.3,
            vmin=0,
            vmax=9,
        )
    label_of = np.repeat(np.searchsorted(classes, y), bags.bag_sizes)
    for k, c in enumerate(classes):
        pts = X[label_of == k]
        ax.scatter(
            pts[:, 0],
            pts[:, 1],
            s=12,
            color=f"C{k}" if scores.ndim > 1 else ("tab:blue", "tab:red")[k],
            edgecolor="k",
            linewidth=0.3,
            marker="o^sDv<>p"[k % 7],
            label=f"instances of class-{c} bags",
        )
    ax.set_xlabel("feature 1")
    ax.set_ylabel("feature 2")
    ax.set_title(
        f"{name}: decision regions of the model of fold {where}\n(every point scored as a "
        "one-instance bag)",
        fontsize="medium",
    )
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
        out.append(
            (
                np.array([row[sc] for row in mine], dtype=np.float64),
                np.array([row[lab] for row in mine]),
                np.array([row[last_proba[-1]] for row in mine], dtype=np.float64)
                if last_proba
                else None,
            )
        )
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
        roc_ax.plot(
            fpr,
            tpr,
            linewidth=1.6 if r == 0 else 0.8,
            alpha=1.0 if r == 0 else 0.6,
            label=f"{name}AUC {_interval(auc)}",
        )
        precision, recall, _ = precision_recall_curve(truth, scores)
        ap = average_precision_score(truth, scores)
        pr_ax.step(
            recall,
            precision,
            where="post",
            linewidth=1.6 if r == 0 else 0.8,
            alpha=1.0 if r == 0 else 0.6,
            label=f"{name}AP {ap:.3f}; ROC AUC {_interval(auc)}",
        )
    roc_ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="chance")
    roc_ax.set_xlabel("false positive rate")
    roc_ax.set_ylabel("true positive rate")
    roc_ax.set_title(
        f"ROC of the pooled out-of-fold scores (positive: {positive})", fontsize="medium"
    )
    roc_ax.legend(loc="lower right", fontsize="small")
    roc_ax.set_aspect("equal")
    base = float(np.mean(pooled[0][1] == positive))
    pr_ax.axhline(base, color="0.6", linestyle=":", linewidth=1, label=f"prevalence {base:.3f}")
    pr_ax.set_xlabel("recall")
    pr_ax.set_ylabel("precision")
    pr_ax.set_ylim(0, 1.02)
    pr_ax.set_title(
        f"Precision-recall of the pooled out-of-fold scores (positive: {positive})",
        fontsize="medium",
    )
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
        observed, predicted = calibration_curve(
            labels == positive, proba, n_bins=10, strategy="uniform"
        )
        ax.plot(
            predicted,
            observed,
            marker="o",
            markersize=3,
            linewidth=1.4 if r == 0 else 0.8,
            alpha=1.0 if r == 0 else 0.6,
            label=f"repeat {r + 1}" if len(pooled) > 1 else "out-of-fold",
        )
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="perfect calibration")
    ax.set_xlabel(f"mean predicted probability of class {positive} (10 bins)")
    ax.set_ylabel("observed rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_title("Calibration of the pooled out-of-fold probabilities", fontsize="medium")
    ax.legend(loc="upper left", fontsize="small")
    fig.savefig(path, dpi=100)


def _write_plots(
    directory, info, result, summary, bags, y, evaluation, predictions, estimator, histories, where
):
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
    if (
        evaluation is not None
        and predictions is not None
        and "score" in predictions[0]
        and evaluation["bags"][0]["auc"] is not None
    ):
        pooled = _pooled_scores(evaluation["bags"], predictions)
        positive = plain(result.classes[-1])
        images["roc"], images["pr"] = _plot_roc_pr(directory, evaluation, pooled, positive)
        if pooled[0][2] is not None:
            images["calibration"] = directory / "calibration.png"
            _plot_calibration(images["calibration"], pooled, positive)
    return images
