"""The commands of ``milsvm``: ``demo``, ``models``, ``cv``, ``fit``, ``predict`` and
``heatmap`` (its work in :mod:`milsvm.cli._slides`)."""

from __future__ import annotations

import os
import sys
import textwrap
import time

import numpy as np

from .. import _registry
from .._bags import as_bags
from .._model import load, save, write_atomically
from ._cv import _run_cv
from ._data import load_data
from ._output import _check_writable, _describe
from ._values import (
    ESTIMATORS,
    CommandError,
    UsageError,
    _check_report_dir,
    _values_text,
    check_values,
    parse_grid,
    parse_params,
    resolve_estimator,
    resolve_scale_multiples,
    scale_multiple,
    scale_width,
)


def _data_info(path, fmt, bags, y):
    """The ``data`` object of ``milsvm cv``'s JSON result."""
    return {
        "path": path,
        "format": fmt,
        "n_bags": len(bags),
        "n_instances": int(bags.n_instances),
        "n_features": int(bags.n_features),
        "classes": np.unique(y).tolist(),
    }


def cmd_demo(args, argv, console):
    """``milsvm demo``."""
    from ..datasets import load_musk1

    bags, y = load_musk1()
    bags = as_bags(bags)
    params = {"n_xv": args.n_xv, "C": args.C, "random_state": args.seed}
    args.folds, args.repeats, args.inner_folds, args.scale = 10, 1, 3, True
    data_info = _data_info("MUSK1 (bundled)", "musk", bags, y)
    return _run_cv(
        args,
        argv,
        console,
        cls=ESTIMATORS["SparseMI"],
        params=params,
        bags=bags,
        y=y,
        data_info=data_info,
        data_label="MUSK1 (bundled)",
        grid={},
        show_auc=False,
    )


def cmd_models(args, argv, console):
    """``milsvm models [NAME]``."""
    if not args.name:
        width = max(map(len, ESTIMATORS))
        for name, cls in ESTIMATORS.items():
            print(f"{name:<{width}}  {_registry.summary(cls)}")
        return 0
    cls = resolve_estimator(args.name)
    print(f"{cls.__name__}: {_registry.summary(cls)}")
    import inspect

    from .. import _core
    from .._docs import SEARCH_RANGES, VALID_VALUES

    docs = _registry.parameter_docs(cls)
    ranges = {name: rng for name, _, rng in getattr(_core, f"{cls._core_fit}_hyperparameters")()}
    search = {**SEARCH_RANGES, **cls._search_ranges}
    print("\nparameters (-p KEY=VALUE, --grid KEY=V1,V2,...), with their defaults:")
    for param in inspect.signature(cls).parameters.values():
        print(f"  {param.name}={param.default!r}")
        if docs.get(param.name):
            print(textwrap.indent(textwrap.fill(docs[param.name], 92), "      "))
        valid = VALID_VALUES.get(param.name) or _range_text(ranges.get(param.name), param.default)
        if valid:
            print(textwrap.indent(textwrap.fill(f"valid: {valid}", 92), "      "))
        if param.name in search:
            print(
                textwrap.indent(
                    textwrap.fill(f"suggested search: {search[param.name]}", 92), "      "
                )
            )
    grid = cls._grid_for({})
    searched = " and ".join(f"{k} in {_values_text(v)}" for k, v in grid.items())
    print()
    print(
        textwrap.fill(
            f"--grid auto searches {searched}; k*scale is k times the 'scale' kernel width "
            "1 / (n_features * X.var()) of the data's instances (standardised unless --no-scale). "
            "gamma is left out with -p kernel=linear.",
            96,
        )
    )
    return 0


def _range_text(described, default):
    """The core's range in words (``Range::describe``, "be a finite number > 0") as a value
    list: "a finite number > 0", "None or in (0, 1)"."""
    if not described:
        return None
    text = described.removeprefix("be ").replace("lie in ", "in ", 1)
    return f"None or {text}" if default is None else text


def _prepare(args):
    """Estimator class, -p parameters (random_state from --seed) and --grid of ``args``, every
    value checked by the estimator before any data is read (:func:`check_values`)."""
    cls = resolve_estimator(args.model)
    params = parse_params(cls, args.param)
    items = getattr(args, "grid", None)
    grid = parse_grid(cls, items, params)
    both = sorted(set(params) & set(grid))
    if both:
        if any(item.strip() == "auto" for item in items or []):
            searched = " and ".join(f"{k} in {_values_text(v)}" for k, v in grid.items())
            raise UsageError(
                f"{', '.join(both)} given both by -p and by --grid auto, which searches {searched} "
                f"for {cls.__name__} (drop -p {both[0]}=..., or list the grid without 'auto')"
            )
        raise UsageError(f"{', '.join(both)} given both by -p and by --grid")
    if (
        "random_state" in cls().get_params()
        and "random_state" not in params
        and "random_state" not in grid
    ):
        params["random_state"] = args.seed
    check_values(cls, params, grid)
    return cls, params, grid


def _has_class_weight_dict(params, grid):
    return isinstance(params.get("class_weight"), dict) or any(
        isinstance(v, dict) for v in grid.get("class_weight", [])
    )


def cmd_cv(args, argv, console):
    """``milsvm cv``."""
    from ._slides import check_cv_options, resolve_groups

    cls, params, grid = _prepare(args)
    check_cv_options(args, params, grid, UsageError)
    _check_writable(args.output, "--output")
    _check_writable(args.predictions, "--predictions")
    _check_report_dir(args.report)
    raw, y, names, fmt, details = load_data(
        args.data,
        args.format,
        args.labels,
        group_by=args.group_by,
        bag_by=args.bag_by,
        details=True,
    )
    if args.scoring == "roc_auc" and len(np.unique(y)) != 2:
        raise UsageError(f"--scoring roc_auc is for two classes; the data have {len(np.unique(y))}")
    groups, _, grouping = resolve_groups(args, details, y, console)
    bags = as_bags(raw)
    if _has_class_weight_dict(params, grid):  # the labels a class_weight dict names
        check_values(cls, params, grid, classes=np.unique(y))
    if any(scale_multiple(v) is not None for v in grid.get("gamma", [])):
        grid = resolve_scale_multiples(grid, scale_width(bags, args.scale))
    data_info = _data_info(args.data, fmt, bags, y)
    return _run_cv(
        args,
        argv,
        console,
        cls=cls,
        params=params,
        bags=bags,
        y=y,
        data_info=data_info,
        data_label=args.data,
        grid=grid,
        names=list(names),
        groups=groups,
        grouping=grouping,
        pooled=True,
    )


def cmd_fit(args, argv, console):
    """``milsvm fit``: the model ``cv`` scores (standardised on the training instances unless
    ``--no-scale``), fitted on every bag and saved with its scaler."""
    from .._crossval import final_estimator, make_model
    from ._slides import check_group_column

    cls, params, _ = _prepare(args)
    check_group_column(args, UsageError)
    _check_writable(args.output, "--output")
    bags, y, _, _ = load_data(
        args.data, args.format, args.labels, group_by=args.group_by, bag_by=args.bag_by
    )
    if _has_class_weight_dict(params, {}):  # the labels a class_weight dict names
        check_values(cls, params, {}, classes=np.unique(y))
    model = make_model(cls, params, args.scale)
    est = final_estimator(model)
    if (
        "verbose" in est.get_params()
        and "verbose" not in params
        and not args.quiet
        and sys.stderr.isatty()
    ):
        est.set_params(verbose=1)  # the estimator's own progress bar (iterations / temperatures)
    start = time.perf_counter()
    try:
        model.fit(bags, y)
    except Exception as exc:
        raise CommandError(
            f"{_describe(cls.__name__, params)} failed: {' '.join(str(exc).split())}"
        ) from None
    seconds = time.perf_counter() - start
    save(model, args.output)
    scaled = "standardised features" if args.scale else "raw features (--no-scale)"
    print(
        f"fitted {_describe(cls.__name__, params)} on {len(y)} bags ({scaled}) in {seconds:.2f} s; "
        f"training accuracy {100 * model.score(bags, y):.2f} %; saved to {args.output}"
    )
    return 0


def _instance_lines(model, bags, names, coords=None):
    """``bag_name<TAB>instance<TAB>score<TAB>label`` for every instance (multi-class: the score
    of the instance's predicted class), through the model's scaler if it is a pipeline; with
    the coordinates of every bag (``coords``), ``<TAB>x<TAB>y`` after the label (and, for a bag
    of several slides, ``<TAB>slide``)."""
    from .._crossval import final_estimator

    est = final_estimator(model)
    if est is not model:
        bags = model[:-1].transform(bags)
    lines = []
    coords = [None] * len(names) if coords is None else coords
    for name, scores, labels, where in zip(
        names, est.instance_decision_function(bags), est.predict_instances(bags), coords
    ):
        if scores.ndim == 2:
            scores = scores[np.arange(len(scores)), np.searchsorted(est.classes_, labels)]
        if where is None:
            lines.extend(
                f"{name}\t{p}\t{float(s)!r}\t{label}\n"
                for p, (s, label) in enumerate(zip(scores, labels))
            )
            continue
        xy = where.xy
        tags = [""] * len(xy) if where.slide is None else [f"\t{t}" for t in where.slide]
        lines.extend(
            f"{name}\t{p}\t{float(s)!r}\t{label}\t{xy[p, 0]}\t{xy[p, 1]}{tags[p]}\n"
            for p, (s, label) in enumerate(zip(scores, labels))
        )
    return "".join(lines)


def _load_model(path):
    """The model of a model file, or a :class:`CommandError` naming the file."""
    if not os.path.isfile(path):
        raise CommandError(f"model file {path!r} does not exist")
    try:
        return load(path)
    except (ValueError, KeyError, TypeError) as exc:
        raise CommandError(
            f"{path}: not a milsvm model file ({' '.join(str(exc).split())})"
        ) from None


def cmd_predict(args, argv, console):
    """``milsvm predict``."""
    from ._slides import check_group_column

    if not os.path.isfile(args.model_file):
        raise CommandError(f"model file {args.model_file!r} does not exist")
    check_group_column(args, UsageError)
    _check_writable(args.output, "--output")
    _check_writable(args.instances, "--instances")
    model = _load_model(args.model_file)
    if args.instances:
        from .._crossval import final_estimator

        try:
            final_estimator(model).instance_decision_function  # noqa: B018 (its AttributeError says why)
        except AttributeError as exc:
            raise CommandError(f"--instances: {exc}") from None
    bags, y, names, _, details = load_data(
        args.data,
        args.format,
        args.labels,
        need_labels=False,
        group_by=args.group_by,
        bag_by=args.bag_by,
        details=True,
    )
    scores = np.asarray(model.decision_function(bags))
    labels = model.predict(bags)
    if scores.ndim == 2:  # multi-class: the score of the predicted class
        scores = scores[np.arange(len(scores)), np.searchsorted(model.classes_, labels)]
    lines = "".join(
        f"{name}\t{float(s)!r}\t{label}\n" for name, s, label in zip(names, scores, labels)
    )
    if args.instances:
        coords = details.coords if details is not None and details.has_coords() else None
        write_atomically(args.instances, _instance_lines(model, as_bags(bags), names, coords))
    if args.output:
        write_atomically(args.output, lines)
    else:
        sys.stdout.write(lines)
    if y is not None and np.isin(y, model.classes_).all():
        console.note(f"accuracy against the file's labels: {100 * np.mean(labels == y):.2f} %")
    return 0


def cmd_heatmap(args, argv, console):
    """``milsvm heatmap`` (:mod:`milsvm.cli._slides`)."""
    from ._slides import cmd_heatmap as run

    def check_dir(path, option):
        try:
            _check_report_dir(path)
        except UsageError as exc:
            raise UsageError(str(exc).replace("--report", option, 1)) from None

    def load_folder(path, fmt, labels, need_labels, details):
        return load_data(
            path,
            fmt,
            labels,
            need_labels,
            group_by=args.group_by,
            bag_by=args.bag_by,
            details=details,
        )

    return run(
        args,
        argv,
        console,
        load_data=load_folder,
        load_model=_load_model,
        check_dir=check_dir,
        command_error=CommandError,
        usage_error=UsageError,
    )
