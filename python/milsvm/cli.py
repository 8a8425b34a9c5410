"""The ``milsvm`` command (also ``python -m milsvm``).

Commands
--------
``milsvm demo``
    SparseMI, 10-fold bag-level CV on the bundled MUSK1 (the README's main job).
``milsvm models [NAME]``
    The estimator names, or the parameters of one estimator.
``milsvm cv DATA [--model NAME] [-p KEY=VALUE ...] [--grid KEY=V1,V2 ... | auto] ...``
    Repeated stratified k-fold CV on the bags of a data file, with an optional inner grid
    search; prints mean and std of the accuracy and of the balanced accuracy, the majority-class
    rate (the accuracy of always predicting the largest class) and the ROC AUC for two classes;
    writes a JSON result (``--output``) and a markdown/PNG report (``--report``).
``milsvm fit DATA [--model NAME] [-p KEY=VALUE ...] [--no-scale] -o MODEL.json``
    Fit on a data file, standardised as ``cv`` does unless ``--no-scale``, and save the model
    with its scaler (versioned JSON, read by ``milsvm.load`` and the Rust crate).
``milsvm predict MODEL.json DATA [-o FILE] [--instances FILE]``
    One line per bag: ``bag_name<TAB>score<TAB>label``; with ``--instances``, one line per
    instance: ``bag_name<TAB>instance<TAB>score<TAB>label``, then ``<TAB>x<TAB>y`` when the
    patch coordinates are known (and ``<TAB>slide`` for a bag of several slides).
``milsvm heatmap MODEL.json DATA --out DIR``
    Per slide of a folder, ``DIR/<slide>.geojson`` (one QuPath detection per patch with its
    score and share) and ``DIR/<slide>.png`` (:mod:`milsvm._heatmap`).

Patients (slide folders)
------------------------
When the label CSV names each slide's patient (CLAM's ``case_id``, or ``--group-by COLUMN``)
and some patient has several slides, ``cv`` splits patients, not slides, outer and inner
(:mod:`milsvm.model_selection`), and reports patient-level results beside the bag-level ones;
``--no-group`` splits slides (with a warning); ``--bag-by COLUMN`` makes a patient one bag.
``cv`` reports the pooled out-of-fold ROC AUC and balanced accuracy of every repeat with 95 %
stratified bootstrap intervals (:mod:`milsvm._oof`), writes the out-of-fold predictions with
``--predictions FILE.csv``, and chooses the inner grid point by ``--scoring``.

Estimator names
---------------
Every estimator of the package, by name: an exact match wins, else a case-insensitive match if
it is unique. ``miSVM`` (instance-level mi-SVM) and ``MISVM`` (bag-level MI-SVM) differ only by
case, so ``misvm`` in any other casing is an error naming both.

Parameter values (``-p KEY=VALUE`` and each value of ``--grid KEY=V1,V2``)
--------------------------------------------------------------------------
Read as Python literals: ``10`` (int), ``0.5`` / ``1e-3`` (float), ``None``, ``True``/``False``
(also ``true``/``false``/``none``), ``'text'``, ``{0: 1, 1: 5}`` (dict, for ``class_weight``),
``nan``/``inf``; anything else is a string (``rbf``, ``scale``). Grid values are separated by
commas outside brackets and quotes. Every value, and every point of the grid, is checked by the
estimator before any data is read or any fit runs (the core's declared ranges; exit status 2).

``--grid auto`` searches the estimator's default grid (``milsvm models NAME`` shows it): ``C`` in
0.1, 1, 10, 100 (``nu`` in 0.1, 0.25, 0.5, 0.75 for OneClassMISVM) and, with the Gaussian kernel,
``gamma`` in ``0.1*scale``, ``scale``, ``10*scale``. A ``gamma`` grid value ``k*scale`` is ``k``
times the "scale" width ``1 / (n_features * X.var())`` of all instances of the data file
(standardised unless ``--no-scale``; no labels are used), rounded to three significant digits.
``auto`` can be combined with grid items for other parameters, not for the ones it searches.

Data files (``--format``, default ``auto``)
-------------------------------------------
``mill``: the MILL text format (``instance,bag,label,features``, dense or sparse ``i:v``);
``musk``: the UCI ``clean1.data``/``clean2.data`` files (``molecule,conformation,f1..f166,class``);
``mat``: S. Andrews' MATLAB files (``features``, ``labels``, ``bag_ids``); ``csv``: the CSV
layout of the ``mil`` package (``label,bag_id,features``, optional header; see
:func:`milsvm.datasets.load_mil_csv`). Embedding layouts, float32 kept float32: ``npy``, a
folder of per-bag ``.npy`` files; ``h5``, a folder of per-bag HDF5 files in CLAM's layout
(dataset ``features``); ``parquet``, a table with ``bag_id``, ``label`` and feature columns.
A folder needs ``--labels FILE.csv`` (``bag_id,label``, or CLAM's ``case_id,slide_id,label``)
for ``cv`` and ``fit``; ``--labels`` also replaces a Parquet table's label column. ``auto``
picks ``npy`` or ``h5`` for a folder by the files in it, ``parquet`` for ``.parquet``, ``mat``
for ``.mat``, ``csv`` for ``.csv``, ``musk`` when the first line ends with the UCI class field
``0.``/``1.``, else ``mill``.

Exit status
-----------
0 success; 1 the command failed (a file missing or unreadable, malformed data, a failed fit);
2 the command line is wrong (unknown option, unknown or ambiguous model name, malformed
``-p``/``--grid``, unknown parameter name, a ``-p``/``--grid`` value the estimator refuses, a
``--report`` directory that cannot be written, bad option value); 130 interrupted. Errors are
one line on stderr, ``milsvm: error: ...``; ``--debug`` shows the traceback instead.

JSON result of ``milsvm cv --output FILE``
------------------------------------------
One object (schema ``"milsvm-cv/1"``)::

    schema          "milsvm-cv/1"
    milsvm_version  version of the package
    command         the command line, a list of strings (["milsvm", "cv", ...])
    data            {"path", "format", "n_bags", "n_instances", "n_features", "classes"}
    estimator       estimator class name ("SparseMI")
    params          parameters given with -p (and random_state from --seed), {name: value}
    grid            {name: [values]} searched by --grid (k*scale resolved), or null
    inner_folds     folds of the inner grid search, or null without --grid
    scale           true if features were standardised per training fold (false: --no-scale)
    folds           outer folds K
    repeats         repeats R of the K-fold split (different shuffles)
    seed            the --seed
    n_jobs          workers used (the results do not depend on it)
    fold_results    R*K objects in order (repeat-major), each:
                      repeat, fold      0-based indices
                      n_train, n_test   bags in the training / test part
                      accuracy          test accuracy in [0, 1]
                      balanced_accuracy the mean recall of the classes in the test part
                                        (sklearn.metrics.balanced_accuracy_score)
                      auc               ROC AUC of the test scores (null: more than two classes,
                                        or one class in the test part)
                      fit_time          seconds to fit the final model on the training part
                      search_time       seconds of the inner grid-search fits (null without --grid)
                      params            grid values chosen on the training part ({} without --grid)
                      inner_score       their mean inner-CV --scoring value (null without --grid)
                      inner_accuracy    the same when --scoring is accuracy, else null
                      n_xv              expansion vectors of the model (null if it has no xv_)
                      warnings          distinct warnings of the fit, "Category: message"
    summary         accuracy_mean, accuracy_std, balanced_accuracy_mean, balanced_accuracy_std,
                    majority_rate (the fraction of the bags in the largest class of the whole
                    data: the accuracy of always predicting it), auc_mean, auc_std (null if no
                    AUC), fit_time_mean, fit_time_total, search_time_total (null without
                    --grid), repeat_accuracy_means (one per repeat);
                    std is the population standard deviation over all R*K folds
    scoring         the inner criterion (--scoring)
    grouping        {"column", "grouped", "n_groups"}: the label file's patient column (null
                    without one), whether the splits were grouped by it, the number of patients
    evaluation      the pooled out-of-fold results: method, confidence, n_resamples, resampled
                    ("bags" or "patients"), bags (per repeat: repeat, auc and
                    balanced_accuracy as {value, low, high, n_resamples}; auc null unless
                    binary), patients (null without a patient column, else case_score,
                    n_patients, mixed_label_patients, repeats as bags, table: one row per
                    patient {patient, n_bags, label, mixed, score, predicted})
    predictions     the rows of --predictions as objects: repeat, fold, bag, group, label,
                    score (or score_<class> per class), proba_<class> with probabilities

Non-finite numbers are written as null.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import itertools
import json
import math
import os
import re
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

from . import _registry
from ._bags import as_bags
from ._model import load, save, write_atomically

__all__ = ["main", "ESTIMATORS", "resolve_estimator", "parse_value", "parse_params", "parse_grid", "load_data",
           "check_values", "scale_multiple", "scale_width", "resolve_scale_multiples"]

#: The estimators by name (the package's registry, in registration order).
ESTIMATORS = _registry.ESTIMATORS

FORMATS = ("auto", "mill", "musk", "mat", "csv", "npy", "h5", "parquet")

EXIT_FAILURE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """The command line is wrong (exit status 2)."""


class CommandError(Exception):
    """The command could not be completed (exit status 1)."""


# --------------------------------------------------------------------------------------------
# Names and values
# --------------------------------------------------------------------------------------------


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
                f"{option}: {cls.__name__} has no parameter {key!r} (parameters: {', '.join(valid)}){hint}")


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
            raise UsageError(f"--grid: {item!r} is not KEY=V1,V2,... (one --grid item per parameter)")
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
        raise UsageError(f"--grid: {', '.join(both)} given both by 'auto' and explicitly; 'auto' searches "
                         f"{searched} for {cls.__name__} (drop {both[0]}=..., or list every key without 'auto')")
    return {**auto, **grid}


def _values_text(values):
    """``[0.1, 1.0, 'scale']``: a list of values as plain Python reprs."""
    from ._crossval import plain

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
    from . import _core
    from .preprocessing import BagStandardScaler

    data = BagStandardScaler().fit(bags).transform(bags) if standardise else as_bags(bags)
    return float(_core.kernel_width(data.core_instances(), "scale"))


def resolve_scale_multiples(grid, width):
    """``grid`` with every ``gamma`` value ``"k*scale"`` replaced by ``k * width`` rounded to
    three significant digits (``"scale"`` itself stays)."""
    out = {}
    for key, values in grid.items():
        if key == "gamma":
            values = [float(f"{k * width:.3g}") if (k := scale_multiple(v)) is not None else v for v in values]
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
            f"{text!r} is not KEY=V1,V2,... or auto (give DATA before --grid, or end the --grid list with --)")
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
    from ._crossval import params_text

    for value in grid.get("gamma", []):
        k = scale_multiple(value)
        if k is not None and not (math.isfinite(k) and k > 0):
            raise UsageError(f"--grid gamma={value}: the multiple of scale must be a finite number > 0")

    def refusal(values):
        try:
            cls(**values)._check_params(classes)
        except (TypeError, ValueError) as exc:
            return " ".join(str(exc).split()) or type(exc).__name__
        return None

    def stand_in(point):  # a grid's "k*scale" (k checked above) is checked as "scale"
        return {k: "scale" if k == "gamma" and scale_multiple(v) is not None else v for k, v in point.items()}

    keys = list(grid)
    points = [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())] if grid else [{}]
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
    from ._crossval import plain

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
        raise UsageError(f"--report: cannot create {str(path)!r}: {str(ancestor)!r} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"--report: cannot create {str(path)!r}: the directory {str(ancestor)!r} is not writable")


def _n_jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("must be a positive number of workers or negative (-1: all cores), not 0")
    return value


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def _first_line(path):
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return line.strip()
    return ""


def detect_format(path):
    """``npy``, ``h5``, ``parquet``, ``mat``, ``csv``, ``musk`` or ``mill`` for ``path`` (see the
    module docstring)."""
    if os.path.isdir(path):
        suffixes = {Path(name).suffix.lower() for name in os.listdir(path)}
        kinds = [kind for kind, ends in (("npy", {".npy"}), ("h5", {".h5", ".hdf5"})) if suffixes & ends]
        if len(kinds) != 1:
            found = "both .npy and HDF5 files" if kinds else "no .npy or .h5 files"
            raise CommandError(f"data folder {path!r} holds {found}: give --format npy or --format h5")
        return kinds[0]
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix == ".mat":
        return "mat"
    if suffix == ".csv":
        return "csv"
    first = _first_line(path)
    fields = first.split(",")
    if len(fields) >= 4 and ":" not in first and fields[-1].strip() in ("0.", "1."):
        return "musk"
    return "mill"


FOLDER_FORMATS = ("npy", "h5")


def load_data(path, fmt="auto", labels=None, need_labels=True, *, group_by=None, bag_by=None, details=False):
    """Read a data file or folder: ``(bags, y, bag_names, format)``, and with ``details`` a
    fifth item: the :class:`~milsvm.datasets.SlideData` of a folder (groups, coordinates,
    files; every bag checked for non-finite values, the error naming its file), the groups of
    a Parquet table's label CSV as a ``SlideData`` without coordinates, else None.

    ``labels`` (a CSV path) gives the labels of a folder's bags (and replaces a Parquet table's
    label column); ``need_labels=False`` (``predict``) accepts a folder without labels
    (``y`` is then ``None``). ``group_by`` names the label CSV's patient column (default:
    ``case_id`` when present); ``bag_by`` makes the slides of one value of a column one bag
    (folders only).

    Raises
    ------
    CommandError
        The file or folder does not exist, a folder is given for a file format (or the other way
        round), a folder has no labels where they are needed, ``--labels`` with a text format.
    ValueError
        The data are malformed (the message names the file and line).
    """
    from . import datasets

    path = str(path)
    if not os.path.exists(path):
        raise CommandError(f"data file {path!r} does not exist")
    if labels is not None and not os.path.isfile(labels):
        raise CommandError(f"--labels: label file {str(labels)!r} does not exist or is not a file")
    if fmt == "auto":
        fmt = detect_format(path)
    if os.path.isdir(path) != (fmt in FOLDER_FORMATS):
        if os.path.isdir(path):
            raise CommandError(f"data file {path!r} is a folder; --format {fmt} reads a file")
        raise CommandError(f"data file {path!r} is not a folder; --format {fmt} reads a folder of bag files")
    info = None
    if bag_by is not None and fmt not in FOLDER_FORMATS:
        raise CommandError(f"--bag-by is for folders of slides; {path!r} is read as {fmt}")
    if fmt in FOLDER_FORMATS:
        if labels is None and need_labels:
            raise CommandError(f"data folder {path!r}: give the bag labels with --labels FILE.csv")
        info = datasets.load_slide_folder(path, labels, format=fmt, group_by=group_by, bag_by=bag_by)
        bags, y, names = info.bags, info.y, info.names
    elif fmt == "parquet":
        bags, y, names = datasets.load_parquet(path, labels, return_bag_names=True)
        if y is None and need_labels:
            raise CommandError(f"{path}: the table has no 'label' column: give the bag labels with --labels FILE.csv")
        if labels is not None:
            _, groups = datasets.read_labels(labels, group_by=group_by, return_groups=True)
            if groups is not None:
                info = datasets.SlideData(bags=bags, y=y, names=names, groups=np.array([groups[n] for n in names],
                                                                                   dtype=object),
                                          group_column=group_by or "case_id", coords=[None] * len(bags),
                                          files=[path] * len(bags), format="parquet")
    else:
        if labels is not None:
            raise CommandError(f"--labels is for folders and Parquet tables; {path!r} ({fmt}) holds its labels")
        if group_by is not None:
            raise CommandError(f"--group-by needs a label CSV (--labels), for a folder or a Parquet table; {path!r} "
                               f"({fmt}) holds its labels")
        loader = {"mill": datasets.load_mill, "musk": datasets.load_musk_uci, "mat": datasets.load_andrews_mat,
                  "csv": datasets.load_mil_csv}[fmt]
        bags, y, names = loader(path, return_bag_names=True)
    return (bags, y, names, fmt, info) if details else (bags, y, names, fmt)


# --------------------------------------------------------------------------------------------
# Output helpers
# --------------------------------------------------------------------------------------------


def _check_writable(path, option):
    """Fail before any work if ``path`` cannot be created (its directory is missing)."""
    if path is None:
        return
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CommandError(f"{option}: cannot write {str(path)!r}: directory {str(parent)!r} does not exist")
    if Path(path).is_dir():
        raise CommandError(f"{option}: {str(path)!r} is a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (Path(path).exists() and not os.access(path, os.W_OK)):
        raise CommandError(f"{option}: cannot write {str(path)!r}: permission denied")


def _jsonable(value):
    """``value`` with numpy scalars/arrays, tuples and non-finite floats made JSON-safe."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, int, float, bool)) else k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _describe(name, params):
    from ._crossval import describe

    return describe(name, params)


class _Console:
    """Progress bar and notes on stderr (silent with ``--quiet``)."""

    def __init__(self, quiet):
        self.quiet = quiet

    def note(self, message):
        if not self.quiet:
            print(f"milsvm: {message}", file=sys.stderr)

    @contextlib.contextmanager
    def progress(self, total, desc):
        """A ``tqdm`` bar on stderr if it is a terminal (and not ``--quiet``); yields an
        ``update(n)`` callable."""
        show = not self.quiet and total > 1 and sys.stderr.isatty()
        bar = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                bar = None
            else:
                bar = tqdm(total=total, desc=desc, unit="fit", file=sys.stderr, leave=False, dynamic_ncols=True)
        try:
            yield (bar.update if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()


@contextlib.contextmanager
def _warnings_as_lines(console):
    """Show Python warnings raised in this process as ``milsvm: warning: ...`` lines."""

    def show(message, category, filename, lineno, file=None, line=None):
        console.note(f"warning: {category.__name__}: {' '.join(str(message).split())}")

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


def _scheduler(address, console):
    """``(client, backend context)`` for ``--scheduler``; dask is imported here only."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise CommandError(
            "--scheduler needs dask.distributed, which is not installed: pip install milsvm[dask]") from None
    try:
        client = Client(address)
    except (OSError, TimeoutError, ValueError) as exc:
        message = " ".join(str(exc).split())
        raise CommandError(f"cannot connect to the Dask scheduler at {address!r}: {message}") from None
    console.note(f"running on the Dask cluster at {address}")
    import joblib

    return client, joblib.parallel_backend("dask")


def _print_cv(name, params, data_label, n_bags, y, args, result, summary, grid, show_auc=True):
    folds, repeats = args.folds, args.repeats
    plan = f"{folds}-fold CV" if repeats == 1 else f"{folds}-fold CV repeated {repeats} times"
    n_classes = len(np.unique(y))
    classes = "" if n_classes == 2 else f", {n_classes} classes"
    scaling = "features standardised per training fold" if args.scale else "features used as they are"
    print(f"{_describe(name, params)} on {data_label}: {n_bags} bags{classes}, {plan}, {scaling}")
    if grid:
        spec = "; ".join(f"{k} in {_values_text(v)}" for k, v in grid.items())
        print(f"grid search: {spec} (inner {args.inner_folds}-fold CV on every training part)")
    print(f"accuracy: {100 * summary['accuracy_mean']:.2f} % (std over folds {100 * summary['accuracy_std']:.2f})")
    print(f"balanced accuracy: {100 * summary['balanced_accuracy_mean']:.2f} % "
          f"(std over folds {100 * summary['balanced_accuracy_std']:.2f})")
    largest = _plain_label(result.classes[np.argmax([np.sum(y == c) for c in result.classes])])
    print(f"majority class: {100 * summary['majority_rate']:.2f} % of the bags (the accuracy of always "
          f"predicting class {largest})")
    if show_auc and summary["auc_mean"] is not None:
        print(f"AUC: {summary['auc_mean']:.4f} (std over folds {summary['auc_std']:.4f})")
    if repeats > 1:
        print("accuracy of each repeat: " + ", ".join(f"{100 * m:.2f} %" for m in summary["repeat_accuracy_means"]))
    n_xv = [f["n_xv"] for f in result.folds if f["n_xv"] is not None]
    if n_xv:
        if min(n_xv) == max(n_xv):
            print(f"expansion vectors: {n_xv[0]}")
        else:
            print(f"expansion vectors: {np.mean(n_xv):.1f} on average (min {min(n_xv)}, max {max(n_xv)})")
    print(f"fit time: {summary['fit_time_mean'] * 1000:.1f} ms per fold (total {summary['fit_time_total']:.2f} s)")
    if grid:
        print(f"grid search time: {summary['search_time_total']:.2f} s in all")
        from ._crossval import params_text

        counts = {}
        for f in result.folds:
            key = params_text(f["params"])
            counts[key] = counts.get(key, 0) + 1
        print("chosen parameters: " + "; ".join(f"{k} ({n} of {len(result.folds)} folds)" for k, n in counts.items()))


def _plain_label(label):
    return label.item() if isinstance(label, np.generic) else label


def _report_warnings(console, result):
    seen = {}
    for f in result.folds:
        for w in f["warnings"]:
            seen[w] = seen.get(w, 0) + 1
    for w, n in seen.items():
        console.note(f"warning: {w} (in {n} of {len(result.folds)} folds)")


def _run_cv(args, argv, console, *, cls, params, bags, y, data_info, data_label, grid, show_auc=True, names=None,
            groups=None, grouping=None, pooled=False):
    """The CV shared by ``cv`` and ``demo``: run, print, write JSON and report. With ``pooled``
    (``cv``), also the pooled out-of-fold results with intervals, at the patient level when
    ``groups`` are known, and the out-of-fold predictions (``--predictions``)."""
    from . import __version__
    from ._crossval import cross_validate, n_fits

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
                cls, params, bags, y, folds=args.folds, repeats=args.repeats, seed=args.seed, grid=grid or None,
                inner_folds=args.inner_folds, scale=args.scale, n_jobs=n_jobs, task_params=task_params,
                keep_first_model=bool(getattr(args, "report", None)), progress=update,
                groups=groups if grouped else None, scoring=scoring,
            )
    summary = result.summary(args.repeats)
    _print_cv(cls.__name__, params, data_label, len(y), y, args, result, summary, grid, show_auc)
    evaluation = columns = rows = None
    if pooled:
        from ._cli_slides import print_pooled
        from ._oof import pooled_evaluation, prediction_table

        names = [str(k) for k in range(len(y))] if names is None else names
        from .model_selection import needs_grouping

        # patient-level results when some patient has several bags (else they repeat the bags')
        patients = groups if needs_grouping(groups) else None
        evaluation = pooled_evaluation(result, y, patients, grouped=grouped, repeats=args.repeats,
                                       case_score=args.case_score, n_resamples=args.bootstrap, seed=args.seed)
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
            from ._oof import write_predictions

            write_predictions(args.predictions, columns, rows)
            console.note(f"out-of-fold predictions written to {args.predictions}")
    if getattr(args, "output", None):
        doc = _jsonable({**info, "fold_results": result.folds, "summary": summary, **extra})
        write_atomically(args.output, json.dumps(doc, indent=2, allow_nan=False) + "\n")
        console.note(f"results written to {args.output}")
    if getattr(args, "report", None):
        from ._report import PLOT_HINT, write_report

        written, plots = write_report(args.report, _jsonable(info), result, summary, bags, y,
                                      evaluation=_jsonable(evaluation) if evaluation else None,
                                      predictions=(columns, rows) if evaluation else None)
        if plots:
            n_plots = sum(Path(p).suffix == ".png" for p in written)
            console.note(f"report written to {written[0]} and {written[1].name} with {n_plots} plot(s)")
        else:
            console.note(f"report written to {written[0]} without plots: matplotlib is not installed ({PLOT_HINT})")
    return 0


def _grid_candidates(grid):
    if not grid:
        return []
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid))


def cmd_demo(args, argv, console):
    """``milsvm demo``."""
    from .datasets import load_musk1

    bags, y = load_musk1()
    bags = as_bags(bags)
    params = {"n_xv": args.n_xv, "C": args.C, "random_state": args.seed}
    args.folds, args.repeats, args.inner_folds, args.scale = 10, 1, 3, True
    data_info = {"path": "MUSK1 (bundled)", "format": "musk", "n_bags": len(bags),
                 "n_instances": int(bags.n_instances), "n_features": int(bags.n_features),
                 "classes": np.unique(y).tolist()}
    return _run_cv(args, argv, console, cls=ESTIMATORS["SparseMI"], params=params, bags=bags, y=y, data_info=data_info,
                   data_label="MUSK1 (bundled)", grid={}, show_auc=False)


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

    from . import _core
    from ._docs import SEARCH_RANGES, VALID_VALUES

    docs = _registry.parameter_docs(cls)
    ranges = {name: rng for name, _, _, rng in getattr(_core, f"{cls._core_fit}_hyperparameters")()}
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
            print(textwrap.indent(textwrap.fill(f"suggested search: {search[param.name]}", 92), "      "))
    grid = cls._grid_for({})
    searched = " and ".join(f"{k} in {_values_text(v)}" for k, v in grid.items())
    print()
    print(textwrap.fill(f"--grid auto searches {searched}; k*scale is k times the 'scale' kernel width "
                        "1 / (n_features * X.var()) of the data's instances (standardised unless --no-scale). "
                        "gamma is left out with -p kernel=linear.", 96))
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
            raise UsageError(f"{', '.join(both)} given both by -p and by --grid auto, which searches {searched} "
                             f"for {cls.__name__} (drop -p {both[0]}=..., or list the grid without 'auto')")
        raise UsageError(f"{', '.join(both)} given both by -p and by --grid")
    if "random_state" in cls().get_params() and "random_state" not in params and "random_state" not in grid:
        params["random_state"] = args.seed
    check_values(cls, params, grid)
    return cls, params, grid


def _has_class_weight_dict(params, grid):
    return isinstance(params.get("class_weight"), dict) or any(isinstance(v, dict) for v in grid.get("class_weight", []))


def cmd_cv(args, argv, console):
    """``milsvm cv``."""
    from ._cli_slides import check_cv_options, resolve_groups

    cls, params, grid = _prepare(args)
    check_cv_options(args, params, grid, UsageError)
    _check_writable(args.output, "--output")
    _check_writable(args.predictions, "--predictions")
    _check_report_dir(args.report)
    raw, y, names, fmt, details = load_data(args.data, args.format, args.labels, group_by=args.group_by,
                                            bag_by=args.bag_by, details=True)
    if args.scoring == "roc_auc" and len(np.unique(y)) != 2:
        raise UsageError(f"--scoring roc_auc is for two classes; the data have {len(np.unique(y))}")
    groups, _, grouping = resolve_groups(args, details, y, console)
    bags = as_bags(raw)
    if _has_class_weight_dict(params, grid):  # the labels a class_weight dict names
        check_values(cls, params, grid, classes=np.unique(y))
    if any(scale_multiple(v) is not None for v in grid.get("gamma", [])):
        grid = resolve_scale_multiples(grid, scale_width(bags, args.scale))
    data_info = {"path": args.data, "format": fmt, "n_bags": len(bags), "n_instances": int(bags.n_instances),
                 "n_features": int(bags.n_features), "classes": np.unique(y).tolist()}
    return _run_cv(args, argv, console, cls=cls, params=params, bags=bags, y=y, data_info=data_info,
                   data_label=args.data, grid=grid, names=list(names), groups=groups, grouping=grouping, pooled=True)


def cmd_fit(args, argv, console):
    """``milsvm fit``: the model ``cv`` scores (standardised on the training instances unless
    ``--no-scale``), fitted on every bag and saved with its scaler."""
    from ._crossval import final_estimator, make_model

    from ._cli_slides import check_group_column

    cls, params, _ = _prepare(args)
    check_group_column(args, UsageError)
    _check_writable(args.output, "--output")
    bags, y, _, _ = load_data(args.data, args.format, args.labels, group_by=args.group_by, bag_by=args.bag_by)
    if _has_class_weight_dict(params, {}):  # the labels a class_weight dict names
        check_values(cls, params, {}, classes=np.unique(y))
    model = make_model(cls, params, args.scale)
    est = final_estimator(model)
    if "verbose" in est.get_params() and "verbose" not in params and not args.quiet and sys.stderr.isatty():
        est.set_params(verbose=1)  # the estimator's own progress bar (iterations / temperatures)
    start = time.perf_counter()
    try:
        model.fit(bags, y)
    except Exception as exc:
        raise CommandError(f"{_describe(cls.__name__, params)} failed: {' '.join(str(exc).split())}") from None
    seconds = time.perf_counter() - start
    save(model, args.output)
    scaled = "standardised features" if args.scale else "raw features (--no-scale)"
    print(f"fitted {_describe(cls.__name__, params)} on {len(y)} bags ({scaled}) in {seconds:.2f} s; "
          f"training accuracy {100 * model.score(bags, y):.2f} %; saved to {args.output}")
    return 0


def _instance_lines(model, bags, names, coords=None):
    """``bag_name<TAB>instance<TAB>score<TAB>label`` for every instance (multi-class: the score
    of the instance's predicted class), through the model's scaler if it is a pipeline; with
    the coordinates of every bag (``coords``), ``<TAB>x<TAB>y`` after the label (and, for a bag
    of several slides, ``<TAB>slide``)."""
    from ._crossval import final_estimator

    est = final_estimator(model)
    if est is not model:
        bags = model[:-1].transform(bags)
    lines = []
    coords = [None] * len(names) if coords is None else coords
    for name, scores, labels, where in zip(names, est.instance_decision_function(bags), est.predict_instances(bags),
                                           coords):
        if scores.ndim == 2:
            scores = scores[np.arange(len(scores)), np.searchsorted(est.classes_, labels)]
        if where is None:
            lines.extend(f"{name}\t{p}\t{float(s)!r}\t{label}\n" for p, (s, label) in enumerate(zip(scores, labels)))
            continue
        xy = where.xy
        tags = [""] * len(xy) if where.slide is None else [f"\t{t}" for t in where.slide]
        lines.extend(f"{name}\t{p}\t{float(s)!r}\t{label}\t{xy[p, 0]}\t{xy[p, 1]}{tags[p]}\n"
                     for p, (s, label) in enumerate(zip(scores, labels)))
    return "".join(lines)


def _load_model(path):
    """The model of a model file, or a :class:`CommandError` naming the file."""
    if not os.path.isfile(path):
        raise CommandError(f"model file {path!r} does not exist")
    try:
        return load(path)
    except (ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path}: not a milsvm model file ({' '.join(str(exc).split())})") from None


def cmd_predict(args, argv, console):
    """``milsvm predict``."""
    from ._cli_slides import check_group_column

    if not os.path.isfile(args.model_file):
        raise CommandError(f"model file {args.model_file!r} does not exist")
    check_group_column(args, UsageError)
    _check_writable(args.output, "--output")
    _check_writable(args.instances, "--instances")
    model = _load_model(args.model_file)
    if args.instances:
        from ._crossval import final_estimator

        try:
            final_estimator(model).instance_decision_function
        except AttributeError as exc:
            raise CommandError(f"--instances: {exc}") from None
    bags, y, names, _, details = load_data(args.data, args.format, args.labels, need_labels=False,
                                           group_by=args.group_by, bag_by=args.bag_by, details=True)
    scores = np.asarray(model.decision_function(bags))
    labels = model.predict(bags)
    if scores.ndim == 2:  # multi-class: the score of the predicted class
        scores = scores[np.arange(len(scores)), np.searchsorted(model.classes_, labels)]
    lines = "".join(f"{name}\t{float(s)!r}\t{label}\n" for name, s, label in zip(names, scores, labels))
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
    """``milsvm heatmap`` (:mod:`milsvm._cli_slides`)."""
    from ._cli_slides import cmd_heatmap as run

    def check_dir(path, option):
        try:
            _check_report_dir(path)
        except UsageError as exc:
            raise UsageError(str(exc).replace("--report", option, 1)) from None

    def load_folder(path, fmt, labels, need_labels, details):
        return load_data(path, fmt, labels, need_labels, group_by=args.group_by, bag_by=args.bag_by, details=details)

    return run(args, argv, console, load_data=load_folder, load_model=_load_model, check_dir=check_dir,
               command_error=CommandError, usage_error=UsageError)


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose usage errors are one line: ``milsvm: error: ... (see --help)``."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"milsvm: error: {message} (see '{self.prog} --help')\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with the epilog kept as written and the description wrapped to the terminal."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=30)

    def _fill_text(self, text, width, indent):
        if "\n" in text:  # epilogs: laid out by hand
            return super()._fill_text(text, width, indent)
        import textwrap

        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent)


_CV_EPILOG = """\
examples:
  milsvm cv musk1.data --model SparseMI -p n_xv=10 -p C=10
  milsvm cv data.csv --model misvm  # error: ambiguous (miSVM or MISVM)
  milsvm cv data.csv --model MISVM --grid C=0.1,1,10 --grid gamma=scale,0.01 --folds 5 --repeats 3
  milsvm cv data.csv --model MISVM --grid auto --folds 5     # C and gamma: see 'milsvm models MISVM'
  milsvm cv data.csv --model NSK --grid auto norm=l1,l2 gamma=0.1*scale,scale  # error: gamma twice
  milsvm cv tst1.mat --model NSK -p kernel=linear --n-jobs 2 --output result.json --report report/
  milsvm cv h5_files/ --labels labels.csv --model MISVM -p kernel=linear --folds 5 --predictions oof.csv

patients: with CLAM's case_id,slide_id,label (or --group-by COLUMN), the splits keep each
patient's slides on one side when a patient has several (outer and inner; --no-group: split by
slide), and the pooled results are also given per patient (score: --case-score max|mean of its
slides; label: the largest). Pooled out-of-fold AUC and balanced accuracy of every repeat come
with 95 % stratified bootstrap intervals (--bootstrap B resamples of the bags, or of the
patients when grouped; seeded by --seed).

--grid auto: the estimator's default grid (C in 0.1, 1, 10, 100 and, for the Gaussian kernel,
gamma in 0.1*scale, scale, 10*scale; 'milsvm models NAME' shows it), combinable with grid items
for other parameters. k*scale: k times the 'scale' width 1 / (n_features * X.var()) of all
instances (standardised unless --no-scale), rounded to 3 significant digits. Every -p value and
grid point is checked by the estimator before the data is read (exit status 2).

JSON written by --output (schema "milsvm-cv/1"):
  schema, milsvm_version, command (argument list), data {path, format, n_bags, n_instances,
  n_features, classes}, estimator, params (-p, and random_state from --seed), grid ({name:
  [values]} or null), inner_folds (or null), scale, folds, repeats, seed, n_jobs,
  fold_results: one object per outer fold, repeat-major: {repeat, fold (0-based), n_train,
    n_test, accuracy, balanced_accuracy (mean recall of the classes in the test part), auc
    (null: not binary or one class in the test part), fit_time (s, the final model),
    search_time (s, the inner grid-search fits, or null), params (grid values chosen, {} without
    --grid), inner_score (the --scoring value, or null), inner_accuracy (or null), n_xv (or
    null), warnings [str]},
  summary: {accuracy_mean, accuracy_std, balanced_accuracy_mean, balanced_accuracy_std,
    majority_rate (fraction of the bags in the largest class: the accuracy of always
    predicting it), auc_mean, auc_std, fit_time_mean, fit_time_total, search_time_total,
    repeat_accuracy_means} (std: population std over all folds; null where undefined),
  scoring, grouping {column, grouped, n_groups}, evaluation {method, confidence, n_resamples,
    resampled, bags: [{repeat, auc, balanced_accuracy}], patients}, predictions [rows]
  (each interval {value, low, high, n_resamples}; see 'pydoc milsvm.cli').

The results are the same for a given --seed whatever --n-jobs. The progress bar (tqdm) is
shown on stderr when it is a terminal, unless --quiet.
"""

_MAIN_EPILOG = """\
examples:
  milsvm demo
  milsvm models
  milsvm cv musk1.data --model sparsemi -p n_xv=10 -p C=10 --repeats 5
  milsvm fit musk1.data --model MISVM -p C=10 -o model.json
  milsvm predict model.json musk2.data -o predictions.tsv
  milsvm heatmap model.json slides/ --out heatmaps/    # per slide: QuPath GeoJSON and PNG

data formats (--format): mill (MILL .data), musk (UCI clean1/clean2.data), mat (Andrews
.mat), csv (the mil package's label,bag_id,features), npy (a folder of per-bag .npy files), h5
(a folder of per-bag HDF5 files, CLAM's 'features'), parquet (bag_id, label, feature columns);
auto by extension and content. A folder takes its labels from --labels FILE.csv:
  milsvm cv slides/ --labels labels.csv --model MISVM -p kernel=linear

-p KEY=VALUE values are Python literals (10, 0.5, None, True, 'text', {0: 1, 1: 5}),
true/false/none, or plain strings (rbf, scale).

exit status: 0 success; 1 the command failed (missing file, malformed data, a failed fit); 2
wrong command line (unknown option or model, bad -p/--grid, unknown parameter, a parameter
value the estimator refuses); 130 interrupted. Errors are one line; --debug shows the traceback.
"""


def build_parser():
    """The ``argparse`` parser of the ``milsvm`` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no notes or warnings on stderr (errors are still shown)")
    common.add_argument("--debug", action="store_true", help="on error, show the Python traceback")

    data_opts = argparse.ArgumentParser(add_help=False)
    data_opts.add_argument("--format", choices=FORMATS, default="auto",
                           help="data file format (default: auto, from the extension and the first line; "
                                "npy or h5 for a folder, by the files in it)")
    data_opts.add_argument("--labels", metavar="FILE.csv",
                           help="bag labels of a data folder (npy, h5) or a Parquet table: a CSV of bag_id,label "
                                "(or CLAM's case_id,slide_id,label with a header)")

    from ._cli_slides import add_cv_options, add_group_options, add_heatmap_parser

    add_group_options(data_opts)

    model_opts = argparse.ArgumentParser(add_help=False)
    model_opts.add_argument("-m", "--model", default="SparseMI", metavar="NAME",
                            help="estimator name, case-insensitive (default: SparseMI); 'milsvm models' lists them")
    model_opts.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                            help="estimator parameter, repeatable (e.g. -p C=10 -p gamma=scale)")
    model_opts.add_argument("--seed", type=int, default=0,
                            help="random seed: folds and the estimator's random_state unless given with -p "
                                 "(default: 0)")

    parser = _Parser(prog="milsvm", formatter_class=_Formatter, epilog=_MAIN_EPILOG,
                     description="Multiple-instance support vector machines: cross-validate, fit and predict "
                                 "on multiple-instance data files.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"milsvm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", parents=[common], formatter_class=_Formatter,
                          help="SparseMI, 10-fold CV on the bundled MUSK1 (the README's main job)",
                          description="SparseMI with 10-fold bag-level CV on the bundled MUSK1 (features "
                                      "standardised per training fold); prints accuracy, expansion vectors and "
                                      "fit time.")
    demo.add_argument("--n-xv", type=_positive_int(1), default=10, help="expansion vectors (default: 10)")
    demo.add_argument("--C", type=float, default=10.0, help="loss weight C (default: 10)")
    demo.add_argument("--seed", type=int, default=0, help="folds and random_state (default: 0)")
    demo.add_argument("--n-jobs", type=_n_jobs, default=None, help="folds run in parallel (default: 1)")
    demo.set_defaults(run=cmd_demo)

    models = sub.add_parser("models", parents=[common], formatter_class=_Formatter,
                            help="list the estimators, or the parameters of one",
                            description="Without NAME: every estimator name with a summary. With NAME: its "
                                        "parameters (for -p and --grid) with their defaults, meanings, valid "
                                        "values and suggested search ranges, and the grid of --grid auto.")
    models.add_argument("name", nargs="?", metavar="NAME", help="an estimator name (case-insensitive)")
    models.set_defaults(run=cmd_models)

    cv = sub.add_parser("cv", parents=[common, data_opts, model_opts], formatter_class=_Formatter,
                        epilog=_CV_EPILOG, help="repeated stratified k-fold CV, optional inner grid search",
                        description="Bag-level cross-validation of an estimator on a data file: stratified "
                                    "k-fold on the bags (repeated with different shuffles), features "
                                    "standardised with each training part (unless --no-scale), optional inner "
                                    "grid search on each training part. Prints mean and std of the test "
                                    "accuracy and balanced accuracy over the folds, the majority-class rate, "
                                    "and the ROC AUC for two classes.")
    cv.add_argument("data", metavar="DATA", help="data file (MILL .data, UCI clean*.data, Andrews .mat, mil .csv, .parquet) or folder of per-bag .npy / .h5 files (with --labels)")
    cv.add_argument("--grid", action="extend", nargs="+", metavar="KEY=V1,V2", type=_grid_item,
                    help="parameter values to search on each training part (inner stratified CV, best mean "
                         "accuracy, refit); repeatable, e.g. --grid C=0.1,1,10 gamma=0.1*scale,scale; 'auto': "
                         "the estimator's default grid (see below and 'milsvm models NAME')")
    cv.add_argument("--inner-folds", type=_positive_int(2), default=3, metavar="K",
                    help="folds of the inner grid-search CV (default: 3)")
    cv.add_argument("--folds", type=_positive_int(2), default=10, metavar="K", help="outer folds (default: 10)")
    cv.add_argument("--repeats", type=_positive_int(1), default=1, metavar="R",
                    help="repeats of the k-fold split with different shuffles (default: 1)")
    cv.add_argument("--no-scale", dest="scale", action="store_false",
                    help="do not standardise the features per training fold")
    cv.add_argument("--n-jobs", type=_n_jobs, default=None, metavar="N",
                    help="fits run in parallel through joblib; -1: all cores (default: 1, or every Dask worker "
                         "with --scheduler)")
    cv.add_argument("--scheduler", metavar="ADDRESS",
                    help="run the fits on a Dask cluster (dask.distributed.Client(ADDRESS), joblib's dask "
                         "backend); needs pip install milsvm[dask]")
    cv.add_argument("-o", "--output", metavar="FILE.json", help="write the results as JSON (schema below)")
    cv.add_argument("--report", metavar="DIR",
                    help="write DIR/report.md and PNG plots (accuracy per fold with the majority-class rate "
                         "and the chosen grid points, the objective of the first fold's fit, decision regions "
                         "of 2-D data); DIR is checked before the CV runs; plots need pip install milsvm[plot]")
    add_cv_options(cv)
    cv.set_defaults(run=cmd_cv)

    fit = sub.add_parser("fit", parents=[common, data_opts, model_opts], formatter_class=_Formatter,
                         help="fit an estimator on a data file and save the model (JSON)",
                         description="Fit an estimator on all bags of a data file and save the model as "
                                     "versioned JSON, read by 'milsvm predict', milsvm.load and the Rust crate. "
                                     "The features are standardised with the mean and standard deviation of the "
                                     "training instances, as 'milsvm cv' does on each training part, and the "
                                     "file holds that scaler, so that the file holds the model cv scored and "
                                     "predict standardises new bags the same way (--no-scale: raw features, "
                                     "as 'milsvm cv --no-scale').",
                         epilog="example:\n  milsvm fit train.data --model ALSVM -p C=10 -p gamma=median -o model.json")
    fit.add_argument("data", metavar="DATA", help="training data file or folder (with --labels)")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file to write")
    fit.add_argument("--no-scale", dest="scale", action="store_false",
                     help="do not standardise the features (the default standardises, as cv does)")
    fit.set_defaults(run=cmd_fit)

    pred = sub.add_parser("predict", parents=[common, data_opts], formatter_class=_Formatter,
                          help="predict the bags of a data file with a saved model",
                          description="Score and classify every bag of a data file with a model saved by "
                                      "'milsvm fit' (or milsvm.save), through its scaler if it has one. Writes one "
                                      "line per bag, in file order: bag_name<TAB>score<TAB>label. The score is "
                                      "the decision function (binary: > 0 means the larger class label; "
                                      "multi-class: the score of the predicted class). --instances FILE also "
                                      "writes one line per instance, bag_name<TAB>instance<TAB>score<TAB>label, then "
                                      "x<TAB>y when the folder has patch coordinates "
                                      "(instance: its 0-based position in the bag; score: as the model pools it, "
                                      "so that the bag's score is their mean, or their max for max pooling, or their sum for MILES). The "
                                      "labels of the data file are not used, except for the accuracy note on "
                                      "stderr.",
                          epilog="example:\n  milsvm predict model.json test.data -o predictions.tsv "
                                 "--instances instances.tsv")
    pred.add_argument("model_file", metavar="MODEL.json", help="model file written by 'milsvm fit'")
    pred.add_argument("data", metavar="DATA", help="data file or folder whose bags to predict")
    pred.add_argument("-o", "--output", metavar="FILE", help="write the lines to FILE (default: stdout)")
    pred.add_argument("--instances", metavar="FILE", help="also write one line per instance to FILE")
    pred.set_defaults(run=cmd_predict)

    add_heatmap_parser(sub, [common, data_opts], _Formatter, cmd_heatmap)
    return parser


def _one_line(exc):
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename!r}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split()) or type(exc).__name__


def main(argv=None):
    """Run the ``milsvm`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit
    status. Command-line errors exit with status 2 through ``SystemExit`` (argparse); the
    other errors print one line and return 1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    console = _Console(args.quiet)
    try:
        with _warnings_as_lines(console):
            return args.run(args, argv, console)
    except UsageError as exc:
        if args.debug:
            raise
        print(f"milsvm: error: {exc} (see 'milsvm {args.command} --help')", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("milsvm: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        from ._crossval import FitError

        known = (CommandError, FitError, ValueError, TypeError, OSError)
        hint = "" if isinstance(exc, known) else f" ({type(exc).__name__}; run with --debug for the traceback)"
        print(f"milsvm: error: {_one_line(exc)}{hint}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
