"""The ``argparse`` parser of the ``milsvm`` command: one builder per command."""

from __future__ import annotations

import argparse

from .. import __version__
from ._commands import cmd_cv, cmd_demo, cmd_fit, cmd_heatmap, cmd_models, cmd_predict
from ._data import FORMATS
from ._slides import (
    HEATMAP_TEXTS,
    add_cv_options,
    add_group_options,
    add_heatmap_arguments,
    add_model_and_data,
)
from ._values import EXIT_USAGE, _grid_item, _n_jobs, _positive_int


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
  milsvm cv data.csv --model MISVM --grid auto --folds 5  # C and gamma: 'milsvm models MISVM'
  milsvm cv data.csv --model NSK --grid auto norm=l1,l2 gamma=0.1*scale,scale  # error: gamma twice
  milsvm cv tst1.mat --model NSK -p kernel=linear --n-jobs 2 --output result.json --report report/
  milsvm cv h5_files/ --labels labels.csv --model MISVM -p kernel=linear --predictions oof.csv

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
    common, data_opts, model_opts = _common_options(), _data_options(), _model_options()
    parser = _Parser(
        prog="milsvm",
        formatter_class=_Formatter,
        epilog=_MAIN_EPILOG,
        description="Multiple-instance support vector machines: cross-validate, fit and predict "
        "on multiple-instance data files.",
    )
    parser.add_argument("--version", action="version", version=f"milsvm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _add_demo(sub, [common])
    _add_models(sub, [common])
    _add_cv(sub, [common, data_opts, model_opts])
    _add_fit(sub, [common, data_opts, model_opts])
    _add_predict(sub, [common, data_opts])
    heatmap = _command(sub, "heatmap", [common, data_opts], cmd_heatmap, **HEATMAP_TEXTS)
    add_heatmap_arguments(heatmap)
    return parser


def _command(sub, name, parents, run, **texts):
    """The subcommand ``name`` of ``sub``: the options of ``parents``, the help layout of every
    command, ``run`` the function that runs it (``args.run``); ``texts``: its ``help``,
    ``description`` and ``epilog``."""
    command = sub.add_parser(name, parents=parents, formatter_class=_Formatter, **texts)
    command.set_defaults(run=run)
    return command


def _common_options():
    """``--quiet`` and ``--debug``, for every command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar and no notes or warnings on stderr (errors are still shown)",
    )
    common.add_argument("--debug", action="store_true", help="on error, show the Python traceback")
    return common


def _data_options():
    """``--format``, ``--labels``, ``--group-by`` and ``--bag-by`` (the commands that read data)."""
    data_opts = argparse.ArgumentParser(add_help=False)
    data_opts.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="data file format (default: auto, from the extension and the first line; "
        "npy or h5 for a folder, by the files in it)",
    )
    data_opts.add_argument(
        "--labels",
        metavar="FILE.csv",
        help="bag labels of a data folder (npy, h5) or a Parquet table: a CSV of bag_id,label "
        "(or CLAM's case_id,slide_id,label with a header)",
    )
    add_group_options(data_opts)
    return data_opts


def _model_options():
    """``--model``, ``-p`` and ``--seed``, for the commands that fit."""
    model_opts = argparse.ArgumentParser(add_help=False)
    model_opts.add_argument(
        "-m",
        "--model",
        default="SparseMI",
        metavar="NAME",
        help="estimator name, case-insensitive (default: SparseMI); 'milsvm models' lists them",
    )
    model_opts.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="estimator parameter, repeatable (e.g. -p C=10 -p gamma=scale)",
    )
    model_opts.add_argument(
        "--seed",
        type=int,
        default=0,
        help="random seed: folds and the estimator's random_state unless given with -p "
        "(default: 0)",
    )
    return model_opts


def _add_demo(sub, parents):
    demo = _command(
        sub,
        "demo",
        parents,
        cmd_demo,
        help="SparseMI, 10-fold CV on the bundled MUSK1 (the README's main job)",
        description="SparseMI with 10-fold bag-level CV on the bundled MUSK1 (features "
        "standardised per training fold); prints accuracy, expansion vectors and "
        "fit time.",
    )
    demo.add_argument(
        "--n-xv", type=_positive_int(1), default=10, help="expansion vectors (default: 10)"
    )
    demo.add_argument("--C", type=float, default=10.0, help="loss weight C (default: 10)")
    demo.add_argument("--seed", type=int, default=0, help="folds and random_state (default: 0)")
    demo.add_argument(
        "--n-jobs", type=_n_jobs, default=None, help="folds run in parallel (default: 1)"
    )


def _add_models(sub, parents):
    models = _command(
        sub,
        "models",
        parents,
        cmd_models,
        help="list the estimators, or the parameters of one",
        description="Without NAME: every estimator name with a summary. With NAME: its "
        "parameters (for -p and --grid) with their defaults, meanings, valid "
        "values and suggested search ranges, and the grid of --grid auto.",
    )
    models.add_argument(
        "name", nargs="?", metavar="NAME", help="an estimator name (case-insensitive)"
    )


def _add_cv(sub, parents):
    cv = _command(
        sub,
        "cv",
        parents,
        cmd_cv,
        epilog=_CV_EPILOG,
        help="repeated stratified k-fold CV, optional inner grid search",
        description="Bag-level cross-validation of an estimator on a data file: stratified "
        "k-fold on the bags (repeated with different shuffles), features "
        "standardised with each training part (unless --no-scale), optional inner "
        "grid search on each training part. Prints mean and std of the test "
        "accuracy and balanced accuracy over the folds, the majority-class rate, "
        "and the ROC AUC for two classes.",
    )
    cv.add_argument(
        "data",
        metavar="DATA",
        help="data file (MILL .data, UCI clean*.data, Andrews .mat, mil .csv, .parquet) or "
        "folder of per-bag .npy / .h5 files (with --labels)",
    )
    cv.add_argument(
        "--grid",
        action="extend",
        nargs="+",
        metavar="KEY=V1,V2",
        type=_grid_item,
        help="parameter values to search on each training part (inner stratified CV, best mean "
        "accuracy, refit); repeatable, e.g. --grid C=0.1,1,10 gamma=0.1*scale,scale; 'auto': "
        "the estimator's default grid (see below and 'milsvm models NAME')",
    )
    cv.add_argument(
        "--inner-folds",
        type=_positive_int(2),
        default=3,
        metavar="K",
        help="folds of the inner grid-search CV (default: 3)",
    )
    cv.add_argument(
        "--folds", type=_positive_int(2), default=10, metavar="K", help="outer folds (default: 10)"
    )
    cv.add_argument(
        "--repeats",
        type=_positive_int(1),
        default=1,
        metavar="R",
        help="repeats of the k-fold split with different shuffles (default: 1)",
    )
    cv.add_argument(
        "--no-scale",
        dest="scale",
        action="store_false",
        help="do not standardise the features per training fold",
    )
    cv.add_argument(
        "--n-jobs",
        type=_n_jobs,
        default=None,
        metavar="N",
        help="fits run in parallel through joblib; -1: all cores (default: 1, or every Dask worker "
        "with --scheduler)",
    )
    cv.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the fits on a Dask cluster (dask.distributed.Client(ADDRESS), joblib's dask "
        "backend); needs pip install milsvm[dask]",
    )
    cv.add_argument(
        "-o", "--output", metavar="FILE.json", help="write the results as JSON (schema below)"
    )
    cv.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.md and PNG plots (accuracy per fold with the majority-class rate "
        "and the chosen grid points, the objective of the first fold's fit, decision regions "
        "of 2-D data); DIR is checked before the CV runs; plots need pip install milsvm[plot]",
    )
    add_cv_options(cv)


def _add_fit(sub, parents):
    fit = _command(
        sub,
        "fit",
        parents,
        cmd_fit,
        help="fit an estimator on a data file and save the model (JSON)",
        description="Fit an estimator on all bags of a data file and save the model as "
        "versioned JSON, read by 'milsvm predict', milsvm.load and the Rust crate. "
        "The features are standardised with the mean and standard deviation of the "
        "training instances, as 'milsvm cv' does on each training part, and the "
        "file holds that scaler, so that the file holds the model cv scored and "
        "predict standardises new bags the same way (--no-scale: raw features, "
        "as 'milsvm cv --no-scale').",
        epilog="example:\n  milsvm fit train.data --model ALSVM -p C=10 -p "
        "gamma=median -o model.json",
    )
    fit.add_argument("data", metavar="DATA", help="training data file or folder (with --labels)")
    fit.add_argument(
        "-o", "--output", required=True, metavar="MODEL.json", help="model file to write"
    )
    fit.add_argument(
        "--no-scale",
        dest="scale",
        action="store_false",
        help="do not standardise the features (the default standardises, as cv does)",
    )


def _add_predict(sub, parents):
    pred = _command(
        sub,
        "predict",
        parents,
        cmd_predict,
        help="predict the bags of a data file with a saved model",
        description="Score and classify every bag of a data file with a "
        "model saved by 'milsvm fit' (or milsvm.save), through its scaler "
        "if it has one. Writes one line per bag, in file order: "
        "bag_name<TAB>score<TAB>label. The score is the decision function "
        "(binary: > 0 means the larger class label; multi-class: the score "
        "of the predicted class). --instances FILE also writes one line "
        "per instance, bag_name<TAB>instance<TAB>score<TAB>label, then "
        "x<TAB>y when the folder has patch coordinates (instance: its "
        "0-based position in the bag; score: as the model pools it, so "
        "that the bag's score is their mean, or their max for max pooling, "
        "or their sum for MILES). The labels of the data file are not "
        "used, except for the accuracy note on stderr.",
        epilog="example:\n  milsvm predict model.json test.data -o predictions.tsv "
        "--instances instances.tsv",
    )
    add_model_and_data(pred, "data file or folder whose bags to predict")
    pred.add_argument(
        "-o", "--output", metavar="FILE", help="write the lines to FILE (default: stdout)"
    )
    pred.add_argument(
        "--instances", metavar="FILE", help="also write one line per instance to FILE"
    )
