"""The slide-folder parts of the ``milsvm`` command: patients (groups), pooled out-of-fold
results with intervals, and ``milsvm heatmap``.

- Options: ``--group-by COLUMN`` and ``--bag-by COLUMN`` (``cv``, ``fit``, ``predict``,
  ``heatmap``), ``--no-group``, ``--case-score``, ``--predictions``, ``--scoring`` and
  ``--bootstrap`` (``cv``); checked before any data is read.
- :func:`resolve_groups`: whether ``cv`` splits by patient (when the labels name a patient for
  every slide and some patient holds more than one), and the line saying so.
- :func:`print_pooled`: the pooled out-of-fold AUC and balanced accuracy of every repeat with
  their intervals, at the bag and the patient level.
- :func:`cmd_heatmap`: ``milsvm heatmap MODEL DATA --out DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = [
    "add_group_options",
    "add_cv_options",
    "HEATMAP_TEXTS",
    "add_heatmap_arguments",
    "check_cv_options",
    "resolve_groups",
    "print_pooled",
    "cmd_heatmap",
]


def add_model_and_data(parser, data_help):
    """The positionals of the commands that apply a saved model: ``MODEL.json``, then ``DATA``."""
    parser.add_argument(
        "model_file", metavar="MODEL.json", help="model file written by 'milsvm fit'"
    )
    parser.add_argument("data", metavar="DATA", help=data_help)


def add_group_options(parser):
    """``--group-by`` and ``--bag-by`` (for every command that reads data)."""
    parser.add_argument(
        "--group-by",
        metavar="COLUMN",
        help="the label file's column of each slide's patient (default: CLAM's case_id when the "
        "file has it); cv splits by patient when a patient has several slides",
    )
    parser.add_argument(
        "--bag-by",
        metavar="COLUMN",
        help="make all slides with one value of COLUMN (e.g. case_id) one bag: instances "
        "concatenated, label the largest of the slides' labels (labels given per patient)",
    )


def add_cv_options(cv):
    """The ``cv`` options of patient-level CV, predictions and intervals."""
    from .._crossval import SCORINGS

    cv.add_argument(
        "--no-group",
        action="store_true",
        help="split slides, not patients, even when a patient has several slides (a warning says "
        "that the slides of one patient then fall on both sides of a split)",
    )
    cv.add_argument(
        "--case-score",
        choices=("max", "mean"),
        default="max",
        help="a patient's score from its slides' out-of-fold scores (default: max)",
    )
    cv.add_argument(
        "--predictions",
        metavar="FILE.csv",
        help="write the out-of-fold predictions: repeat, fold, bag, group, label, score (one "
        "score_<class> column per class for more than two classes) and proba_<class> with "
        "probability=True",
    )
    cv.add_argument(
        "--scoring",
        choices=SCORINGS,
        default="accuracy",
        help="the inner grid search's criterion (default: accuracy; roc_auc: two classes only; "
        "neg_log_loss: needs -p probability=True)",
    )
    cv.add_argument(
        "--bootstrap",
        type=_resamples,
        default=2000,
        metavar="B",
        help="bootstrap resamples of the intervals of the pooled results (default: 2000; seeded by "
        "--seed)",
    )


def _resamples(text):
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 100:
        raise argparse.ArgumentTypeError(f"must be at least 100, got {value}")
    return value


def check_group_column(args, usage_error):
    """``--group-by`` / ``--bag-by`` naming a column the label file lacks: ``usage_error``
    naming the column and listing the file's columns (before any work)."""
    wanted = [
        (opt, getattr(args, attr, None))
        for opt, attr in (("--group-by", "group_by"), ("--bag-by", "bag_by"))
    ]
    wanted = [(opt, col) for opt, col in wanted if col]
    if not wanted:
        return
    if not getattr(args, "labels", None):
        raise usage_error(f"{wanted[0][0]} {wanted[0][1]} needs --labels FILE.csv with that column")
    from ..datasets import label_columns

    try:
        header = label_columns(args.labels)
    except ValueError:
        return  # the label file itself is refused by the reader, with its own message
    if header is None:
        raise usage_error(
            f"{wanted[0][0]} {wanted[0][1]}: the label file {args.labels} has no header, so no "
            "columns to name (write one, e.g. case_id,slide_id,label)"
        )
    lowered = [h.lower() for h in header]
    for opt, col in wanted:
        if col.strip().lower() not in lowered:
            raise usage_error(
                f"{opt}: the label file {args.labels} has no column {col!r} (its columns: "
                f"{', '.join(header)})"
            )


def check_cv_options(args, params, grid, usage_error):
    """The ``cv`` options that can be refused before any data is read."""
    check_group_column(args, usage_error)
    if args.scoring == "neg_log_loss":
        values = (
            [params.get("probability")]
            if "probability" in params
            else list(grid.get("probability", []))
        )
        if not values or not all(values):
            raise usage_error(
                "--scoring neg_log_loss needs probabilities: give -p probability=True"
            )
    if args.bag_by and args.no_group:
        raise usage_error(
            "--no-group with --bag-by: every bag is then its own patient, there is nothing to group"
        )


def resolve_groups(args, details, y, console):
    """``(groups, grouped, info)``: the patient of every bag (or None), whether ``cv`` splits by
    patient, and the JSON record of it. Prints the line saying the splits are grouped, or warns
    with ``--no-group``."""
    from ..model_selection import needs_grouping

    groups = None if details is None else details.groups
    column = None if details is None else details.group_column
    if groups is None:
        return None, False, {"column": None, "grouped": False, "n_groups": None}
    several = needs_grouping(groups)
    n_groups = int(len(np.unique(np.asarray(groups, dtype=str))))
    grouped = several and not args.no_group
    if grouped:
        print(
            f"splits grouped by {column}: {len(y)} bags of {n_groups} patients, no patient on "
            "both sides of any outer or inner split (--no-group: split by slide)"
        )
    elif several:
        console.note(
            f"warning: --no-group: the slides of one {column} fall on both sides of the splits, "
            "so the results are optimistic for new patients"
        )
    return groups, grouped, {"column": column, "grouped": grouped, "n_groups": n_groups}


def print_pooled(evaluation, grouped, repeats):
    """The pooled out-of-fold results with their intervals (stdout)."""
    from .._oof import interval_text

    unit = "patients" if evaluation["resampled"] == "patients" else "bags"
    print(
        f"pooled out-of-fold results, 95 % intervals by {evaluation['method']} over {unit} "
        f"(B = {evaluation['n_resamples']}, stratified by label):"
    )
    for row in evaluation["bags"]:
        where = f" (repeat {row['repeat'] + 1})" if repeats > 1 else ""
        if row["auc"] is not None:
            print(
                f"  bags{where}: AUC {interval_text(row['auc'])}, balanced accuracy "
                f"{interval_text(row['balanced_accuracy'], percent=True)}"
            )
        else:
            print(
                f"  bags{where}: balanced accuracy "
                f"{interval_text(row['balanced_accuracy'], percent=True)}"
            )
    patients = evaluation["patients"]
    if patients is None:
        return
    for row in patients["repeats"]:
        where = f" (repeat {row['repeat'] + 1})" if repeats > 1 else ""
        auc = f"AUC {interval_text(row['auc'])}, " if row["auc"] is not None else ""
        print(
            f"  patients{where}: {auc}balanced accuracy "
            f"{interval_text(row['balanced_accuracy'], percent=True)}"
        )
    mixed = patients["mixed_label_patients"]
    print(
        f"  ({patients['n_patients']} patients; a patient's score is the {patients['case_score']} "
        f"of its bags' scores, its label the largest of theirs; {mixed} patient(s) have bags of "
        "different labels)"
    )


# --------------------------------------------------------------------------------------------
# milsvm heatmap
# --------------------------------------------------------------------------------------------


#: The help texts of ``milsvm heatmap`` (whose parser the parser module makes as every command's).
HEATMAP_TEXTS = {
    "help": "GeoJSON (QuPath) and PNG heatmaps of the instance scores of every slide",
    "description": "Score every patch of every slide of a folder with a saved model and "
    "write, per slide, DIR/<slide>.geojson (one detection per patch, its square in "
    "level-0 pixels, with the properties score, share and QuPath's objectType, "
    "classification and measurements) and DIR/<slide>.png (the patches coloured by "
    "score, a colour bar, and the bag's score and label in the title). The slides need "
    "patch coordinates: CLAM's 'coords' dataset (with patch_size) or, for .npy bags, "
    "coords/<slide>.npy.",
    "epilog": "example:\n  milsvm heatmap model.json features/h5_files --labels labels.csv "
    "--out heatmaps/",
}


def add_heatmap_arguments(heat):
    """The arguments of the ``heatmap`` subcommand."""
    add_model_and_data(heat, "folder of per-slide .h5 or .npy files")
    heat.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write (created if needed)"
    )
    heat.add_argument(
        "--patch-size",
        type=float,
        metavar="PIXELS",
        help="the side of a patch in level-0 pixels (default: from the coords' patch_size and "
        "downsample attributes)",
    )
    heat.add_argument("--no-png", dest="png", action="store_false", help="draw no PNG images")
    heat.add_argument(
        "--h5",
        action="store_true",
        help="also write DIR/<slide>.h5 in CLAM's heatmap block-map layout (attention_scores: the "
        "instance scores, N x 1; coords)",
    )


def cmd_heatmap(
    args, argv, console, *, load_data, load_model, check_dir, command_error, usage_error
):
    """``milsvm heatmap``."""
    from .._heatmap import write_heatmaps

    if args.patch_size is not None and not (np.isfinite(args.patch_size) and args.patch_size > 0):
        raise usage_error(
            f"--patch-size must be a positive number of pixels, got {args.patch_size}"
        )
    check_group_column(args, usage_error)
    check_dir(args.out, "--out")
    model = load_model(args.model_file)
    if not os.path.isdir(args.data):
        raise command_error(f"heatmap reads a folder of slides; {args.data!r} is not a folder")
    bags, y, names, _, details = load_data(
        args.data, args.format, args.labels, need_labels=False, details=True
    )
    try:
        written = write_heatmaps(
            model,
            bags,
            details.coords,
            args.out,
            names=names,
            labels=y,
            patch_size=args.patch_size,
            png=args.png,
            files=details.files,
            h5=args.h5,
        )
    except AttributeError as exc:
        raise command_error(f"heatmap: {exc}") from None
    n_slides = sum(1 for p in written if Path(p).suffix == ".geojson")
    kinds = ", ".join(
        k for k, on in (("GeoJSON", True), ("PNG", args.png), ("CLAM .h5", args.h5)) if on
    )
    print(f"heatmaps of {n_slides} slide(s) written to {args.out} ({kinds})")
    return 0
