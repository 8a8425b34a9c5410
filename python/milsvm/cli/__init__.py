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

import os  # noqa: F401  (tests patch ``milsvm.cli.os.access``)
import sys

from ._data import detect_format, load_data
from ._output import _Console, _warnings_as_lines
from ._parser import build_parser
from ._values import (
    ESTIMATORS,
    EXIT_FAILURE,
    EXIT_USAGE,
    CommandError,
    UsageError,
    check_values,
    parse_grid,
    parse_params,
    parse_value,
    resolve_estimator,
    resolve_scale_multiples,
    scale_multiple,
    scale_width,
)

__all__ = [
    "main",
    "ESTIMATORS",
    "resolve_estimator",
    "parse_value",
    "parse_params",
    "parse_grid",
    "load_data",
    "detect_format",
    "check_values",
    "scale_multiple",
    "scale_width",
    "resolve_scale_multiples",
]


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
        from .._crossval import FitError

        known = (CommandError, FitError, ValueError, TypeError, OSError)
        hint = (
            ""
            if isinstance(exc, known)
            else f" ({type(exc).__name__}; run with --debug for the traceback)"
        )
        print(f"milsvm: error: {_one_line(exc)}{hint}", file=sys.stderr)
        return EXIT_FAILURE
