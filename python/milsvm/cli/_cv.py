"""The cross-validation that ``milsvm cv`` and ``milsvm demo`` share: run it (locally or on a
Dask cluster), print it, write its JSON result and report."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np

from .._convert import jsonable, plain
from .._model import write_atomically
from ._output import _describe
from ._values import CommandError, _values_text


def _scheduler(address, console):
    """``(client, backend context)`` for ``--scheduler``; dask is imported here only."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise CommandError(
            "--scheduler needs dask.distributed, which is not installed: pip install milsvm[dask]"
        ) from None
    try:
        client = Client(address)
    except (OSError, TimeoutError, ValueError) as exc:
        message = " ".join(str(exc).split())
        raise CommandError(
            f"cannot connect to the Dask scheduler at {address!r}: {message}"
        ) from None
    console.note(f"running on the Dask cluster at {address}")
    import joblib

    return client, joblib.parallel_backend("dask")


def _print_cv(name, params, data_label, n_bags, y, args, result, summary, grid, show_auc=True):
    folds, repeats = args.folds, args.repeats
    plan = f"{folds}-fold CV" if repeats == 1 else f"{folds}-fold CV repeated {repeats} times"
    n_classes = len(np.unique(y))
    classes = "" if n_classes == 2 else f", {n_classes} classes"
    scaling = (
        "features standardised per training fold" if args.scale else "features used as they are"
    )
    print(f"{_describe(name, params)} on {data_label}: {n_bags} bags{classes}, {plan}, {scaling}")
    if grid:
        spec = "; ".join(f"{k} in {_values_text(v)}" for k, v in grid.items())
        print(f"grid search: {spec} (inner {args.inner_folds}-fold CV on every training part)")
    print(
        f"accuracy: {100 * summary['accuracy_mean']:.2f} % (std over folds "
        f"{100 * summary['accuracy_std']:.2f})"
    )
    print(
        f"balanced accuracy: {100 * summary['balanced_accuracy_mean']:.2f} % "
        f"(std over folds {100 * summary['balanced_accuracy_std']:.2f})"
    )
    largest = plain(result.classes[np.argmax([np.sum(y == c) for c in result.classes])])
    print(
        f"majority class: {100 * summary['majority_rate']:.2f} % of the bags (the accuracy of "
        f"always predicting class {largest})"
    )
    if show_auc and summary["auc_mean"] is not None:
        print(f"AUC: {summary['auc_mean']:.4f} (std over folds {summary['auc_std']:.4f})")
    if repeats > 1:
        print(
            "accuracy of each repeat: "
            + ", ".join(f"{100 * m:.2f} %" for m in summary["repeat_accuracy_means"])
        )
    n_xv = [f["n_xv"] for f in result.folds if f["n_xv"] is not None]
    if n_xv:
        if min(n_xv) == max(n_xv):
            print(f"expansion vectors: {n_xv[0]}")
        else:
            print(
                f"expansion vectors: {np.mean(n_xv):.1f} on average (min {min(n_xv)}, max "
                f"{max(n_xv)})"
            )
    print(
        f"fit time: {summary['fit_time_mean'] * 1000:.1f} ms per fold (total "
        f"{summary['fit_time_total']:.2f} s)"
    )
    if grid:
        print(f"grid search time: {summary['search_time_total']:.2f} s in all")
        from .._crossval import params_text

        counts = {}
        for f in result.folds:
            key = params_text(f["params"])
            counts[key] = counts.get(key, 0) + 1
        print(
            "chosen parameters: "
            + "; ".join(f"{k} ({n} of {len(result.folds)} folds)" for k, n in counts.items())
        )


def _report_warnings(console, result):
    seen = {}
    for f in result.folds:
        for w in f["warnings"]:
            seen[w] = seen.get(w, 0) + 1
    for w, n in seen.items():
        console.note(f"warning: {w} (in {n} of {len(result.folds)} folds)")


def _run_cv(
    args,
    argv,
    console,
    *,
    cls,
    params,
    bags,
    y,
    data_info,
    data_label,
    grid,
    show_auc=True,
    names=None,
    groups=None,
    grouping=None,
    pooled=False,
):
    """The CV shared by ``cv`` and ``demo``: run, print, write JSON and report. With ``pooled``
    (``cv``), also the pooled out-of-fold results with intervals, at the patient level when
    ``groups`` are known, and the out-of-fold predictions (``--predictions``)."""
    from .. import __version__
    from .._crossval import cross_validate, n_fits

    n_jobs = args.n_jobs
    contexts = contextlib.ExitStack()
    with contexts:
        if getattr(args, "scheduler", None):
            client, backend = _scheduler(args.scheduler, console)
            contexts.callback(client.close)
            contexts.enter_context(backend)
            n_jobs = -1 if n_jobs is None else n_jobs
        n_jobs = 1 if n_jobs is None else n_jobs
        task_params = {}
        if n_jobs != 1 and "n_jobs" in cls().get_params() and "n_jobs" not in {**params, **grid}:
            task_params["n_jobs"] = 1  # one core thread per fit when the fits run in parallel
        total = n_fits(args.folds * args.repeats, len(_grid_candidates(grid)), args.inner_folds)
        grouped = bool(grouping and grouping["grouped"])
        scoring = getattr(args, "scoring", "accuracy")
        with console.progress(total, f"cv {cls.__name__}") as update:
            result = cross_validate(
                cls,
                params,
                bags,
                y,
                folds=args.folds,
                repeats=args.repeats,
                seed=args.seed,
                grid=grid or None,
                inner_folds=args.inner_folds,
                scale=args.scale,
                n_jobs=n_jobs,
                task_params=task_params,
                keep_first_model=bool(getattr(args, "report", None)),
                progress=update,
                groups=groups if grouped else None,
                scoring=scoring,
            )
    summary = result.summary(args.repeats)
    _print_cv(cls.__name__, params, data_label, len(y), y, args, result, summary, grid, show_auc)
    evaluation = columns = rows = None
    if pooled:
        from .._oof import pooled_evaluation, prediction_table
        from ._slides import print_pooled

        names = [str(k) for k in range(len(y))] if names is None else names
        from ..model_selection import needs_grouping

        # patient-level results when some patient has several bags (else they repeat the bags')
        patients = groups if needs_grouping(groups) else None
        evaluation = pooled_evaluation(
            result,
            y,
            patients,
            grouped=grouped,
            repeats=args.repeats,
            case_score=args.case_score,
            n_resamples=args.bootstrap,
            seed=args.seed,
        )
        print_pooled(evaluation, grouped, args.repeats)
        columns, rows = prediction_table(result, y, names, groups, result.classes)
    _report_warnings(console, result)

    info = {
        "schema": "milsvm-cv/1",
        "milsvm_version": __version__,
        "command": ["milsvm", *argv],
        "data": data_info,
        "estimator": cls.__name__,
        "params": params,
        "grid": grid or None,
        "inner_folds": args.inner_folds if grid else None,
        "scale": bool(args.scale),
        "folds": args.folds,
        "repeats": args.repeats,
        "seed": args.seed,
        "n_jobs": n_jobs,
    }
    if pooled:
        info["scoring"] = scoring
        info["grouping"] = grouping or {"column": None, "grouped": False, "n_groups": None}
    extra = {}
    if evaluation is not None:
        extra = {"evaluation": evaluation, "predictions": [dict(zip(columns, row)) for row in rows]}
        if getattr(args, "predictions", None):
            from .._oof import write_predictions

            write_predictions(args.predictions, columns, rows)
            console.note(f"out-of-fold predictions written to {args.predictions}")
    if getattr(args, "output", None):
        doc = jsonable({**info, "fold_results": result.folds, "summary": summary, **extra})
        write_atomically(args.output, json.dumps(doc, indent=2, allow_nan=False) + "\n")
        console.note(f"results written to {args.output}")
    if getattr(args, "report", None):
        from .._report import PLOT_HINT, write_report

        written, plots = write_report(
            args.report,
            jsonable(info),
            result,
            summary,
            bags,
            y,
            evaluation=jsonable(evaluation) if evaluation else None,
            predictions=(columns, rows) if evaluation else None,
        )
        if plots:
            n_plots = sum(Path(p).suffix == ".png" for p in written)
            console.note(
                f"report written to {written[0]} and {written[1].name} with {n_plots} plot(s)"
            )
        else:
            console.note(
                f"report written to {written[0]} without plots: matplotlib is not installed "
                f"({PLOT_HINT})"
            )
    return 0


def _grid_candidates(grid):
    if not grid:
        return []
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid))
