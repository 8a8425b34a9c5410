"""The names and values of the ``milsvm`` command line: the estimator by name, ``-p`` and
``--grid`` values, their checks by the estimator, ``k*scale`` grid values, and the errors and
exit statuses of the command."""

from __future__ import annotations

import argparse
import ast
import difflib
import itertools
import math
import os
import re
from pathlib import Path

from .. import _registry
from .._bags import as_bags
from .._convert import plain

#: The estimators by name (the package's registry, in registration order).
ESTIMATORS = _registry.ESTIMATORS

EXIT_FAILURE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """The command line is wrong (exit status 2)."""


class CommandError(Exception):
    """The command could not be completed (exit status 1)."""


def resolve_estimator(name):
    """The estimator class called ``name``: exact match, else a unique case-insensitive match.

    Raises
    ------
    UsageError
        Unknown name (the message suggests the closest names and lists every name) or a name
        that matches several estimators case-insensitively (``misvm``: ``miSVM`` or ``MISVM``).
    """
    try:
        return _registry.resolve(name)
    except _registry.UnknownEstimator as exc:
        raise UsageError(str(exc)) from None


_WORDS = {"true": True, "false": False, "none": None, "null": None}


def parse_value(text):
    """A command-line parameter value: a Python literal, ``true``/``false``/``none``, a float
    such as ``nan`` or ``inf``, else the text itself (see the module docstring)."""
    stripped = text.strip()
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if stripped.lower() in _WORDS:
        return _WORDS[stripped.lower()]
    try:
        return float(stripped)
    except ValueError:
        return stripped


def _check_names(cls, names, option):
    valid = sorted(cls().get_params())
    for key in names:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"{option}: {cls.__name__} has no parameter {key!r} (parameters: "
                f"{', '.join(valid)}){hint}"
            )


def parse_params(cls, items):
    """``{key: value}`` from ``KEY=VALUE`` strings (the last wins for a repeated key); unknown
    parameter names of ``cls`` are a :class:`UsageError`."""
    params = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"-p/--param: {item!r} is not KEY=VALUE")
        params[key] = parse_value(value)
    _check_names(cls, params, "-p/--param")
    return params


def _split_values(text):
    """Split ``text`` at the commas that are outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_grid(cls, items, params=None):
    """``{key: [values]}`` from ``KEY=V1,V2,...`` strings, and ``auto``: the estimator's default
    grid (:meth:`~milsvm._base.MILClassifier._grid_for` beside the fixed ``params``). Malformed
    specs, empty or repeated keys, empty values, unknown parameter names and a key given both
    by ``auto`` and explicitly are a :class:`UsageError`. ``gamma`` values ``k*scale`` stay
    strings here (see :func:`resolve_scale_multiples`)."""
    grid = {}
    items = list(items or [])
    auto = {}
    if any(item.strip() == "auto" for item in items):
        if sum(item.strip() == "auto" for item in items) > 1:
            raise UsageError("--grid: 'auto' is given twice")
        auto = cls._grid_for(params or {})
        items = [item for item in items if item.strip() != "auto"]
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise UsageError(
                f"--grid: {item!r} is not KEY=V1,V2,... (one --grid item per parameter)"
            )
        if key in grid:
            raise UsageError(f"--grid: parameter {key!r} is given twice")
        parts = _split_values(values)
        if any(not p.strip() for p in parts):
            raise UsageError(f"--grid: {item!r} has an empty value")
        grid[key] = [parse_value(p) for p in parts]
    _check_names(cls, grid, "--grid")
    both = [key for key in grid if key in auto]
    if both:
        searched = " and ".join(f"{k} in {_values_text(v)}" for k, v in auto.items())
        raise UsageError(
            f"--grid: {', '.join(both)} given both by 'auto' and explicitly; 'auto' searches "
            f"{searched} for {cls.__name__} (drop {both[0]}=..., or list every key without 'auto')"
        )
    return {**auto, **grid}


def _values_text(values):
    """``[0.1, 1.0, 'scale']``: a list of values as plain Python reprs."""
    return repr(plain(list(values)))


_SCALE_MULTIPLE = re.compile(r"^\s*([-+0-9.eE]+|nan|inf)\s*\*\s*scale\s*$", re.IGNORECASE)


def scale_multiple(value):
    """``k`` for a grid value ``"k*scale"`` (``k`` times the "scale" kernel width), else None."""
    if not isinstance(value, str):
        return None
    match = _SCALE_MULTIPLE.match(value)
    if not match:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def scale_width(bags, standardise):
    """The "scale" kernel width ``1 / (n_features * X.var())`` of all instances of ``bags``,
    standardised first if ``standardise`` (as every training part is by ``cv``): what
    ``gamma="scale"`` gives, computed once on the whole data (no labels) to place the grid
    values ``k*scale``."""
    from .. import _core
    from ..preprocessing import BagStandardScaler

    data = BagStandardScaler().fit(bags).transform(bags) if standardise else as_bags(bags)
    return float(_core.kernel_width(data.core_instances(), "scale"))


def resolve_scale_multiples(grid, width):
    """``grid`` with every ``gamma`` value ``"k*scale"`` replaced by ``k * width`` rounded to
    three significant digits (``"scale"`` itself stays)."""
    out = {}
    for key, values in grid.items():
        if key == "gamma":
            values = [
                float(f"{k * width:.3g}") if (k := scale_multiple(v)) is not None else v
                for v in values
            ]
        out[key] = values
    return out


def _positive_int(minimum):
    def convert(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return convert


def _grid_item(text):
    """An argparse ``type`` for ``--grid`` items: catches ``--grid C=1,10 DATA`` early."""
    if "=" not in text and text.strip() != "auto":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=V1,V2,... or auto (give DATA before --grid, or end the "
            "--grid list with --)"
        )
    return text


def _mentioned(message, values):
    """The keys of ``values`` that ``message`` names (as whole words), in order."""
    return [k for k in values if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", message)]


def check_values(cls, params, grid, classes=None):
    """Check the ``-p`` values and every point of the grid before any fit, with the estimator's
    own check (:meth:`~milsvm._base.MILClassifier._check_params`: the core's declared ranges
    and cross-field rules, without data).

    Raises
    ------
    UsageError
        A value the estimator refuses: the message names the option and the value (``-p
        C='abc'`` or ``--grid C=-1``) and gives the estimator's reason. ``gamma`` grid values
        ``k*scale`` need a finite ``k > 0``.
    """
    from .._crossval import params_text

    for value in grid.get("gamma", []):
        k = scale_multiple(value)
        if k is not None and not (math.isfinite(k) and k > 0):
            raise UsageError(
                f"--grid gamma={value}: the multiple of scale must be a finite number > 0"
            )

    def refusal(values):
        try:
            cls(**values)._check_params(classes)
        except (TypeError, ValueError) as exc:
            return " ".join(str(exc).split()) or type(exc).__name__
        return None

    def stand_in(point):  # a grid's "k*scale" (k checked above) is checked as "scale"
        return {
            k: "scale" if k == "gamma" and scale_multiple(v) is not None else v
            for k, v in point.items()
        }

    keys = list(grid)
    points = (
        [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())] if grid else [{}]
    )
    for point in points:
        problem = refusal({**params, **stand_in(point)})
        if problem is None:
            continue
        for key in _mentioned(problem, point):  # a grid value refused beside the -p values alone
            if refusal({**params, **stand_in({key: point[key]})}) is not None:
                raise UsageError(f"--grid {key}={_value_text(point[key])}: {problem}")
        named = _mentioned(problem, params) or list(params)
        where = " ".join(f"-p {params_text({k: params[k]})}" for k in named)
        if point and refusal(params) is None:
            where = f"--grid point {params_text(point)}" + (f" with {where}" if where else "")
        raise UsageError(f"{where}: {problem}" if where else problem)


def _value_text(value):
    """A value as written on the command line: strings bare, other values as Python reprs."""
    return value if isinstance(value, str) else repr(plain(value))


def _check_report_dir(path):
    """Fail before any work unless ``--report DIR`` is a writable directory or can be created
    (its nearest existing ancestor is a writable directory)."""
    if path is None:
        return
    target = Path(path)
    if target.exists():
        if not target.is_dir():
            raise UsageError(f"--report: {str(path)!r} exists and is not a directory")
        if not os.access(target, os.W_OK | os.X_OK):
            raise UsageError(f"--report: the directory {str(path)!r} is not writable")
        return
    ancestor = target.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(
            f"--report: cannot create {str(path)!r}: {str(ancestor)!r} is not a directory"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(
            f"--report: cannot create {str(path)!r}: the directory {str(ancestor)!r} is not "
            "writable"
        )


def _n_jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError(
            "must be a positive number of workers or negative (-1: all cores), not 0"
        )
    return value
