"""The data files and folders the ``milsvm`` command reads (see ``--format`` in the docstring
of :mod:`milsvm.cli`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._values import CommandError

FORMATS = ("auto", "mill", "musk", "mat", "csv", "npy", "h5", "parquet")


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
        from ..datasets.slides import detect_folder_format

        try:
            return detect_folder_format(path, advice="give --format npy or --format h5")
        except ValueError as exc:
            raise CommandError(str(exc)) from None
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


def load_data(
    path, fmt="auto", labels=None, need_labels=True, *, group_by=None, bag_by=None, details=False
):
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
    from .. import datasets

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
        raise CommandError(
            f"data file {path!r} is not a folder; --format {fmt} reads a folder of bag files"
        )
    info = None
    if bag_by is not None and fmt not in FOLDER_FORMATS:
        raise CommandError(f"--bag-by is for folders of slides; {path!r} is read as {fmt}")
    if fmt in FOLDER_FORMATS:
        if labels is None and need_labels:
            raise CommandError(f"data folder {path!r}: give the bag labels with --labels FILE.csv")
        info = datasets.load_slide_folder(
            path, labels, format=fmt, group_by=group_by, bag_by=bag_by
        )
        bags, y, names = info.bags, info.y, info.names
    elif fmt == "parquet":
        bags, y, names = datasets.load_parquet(path, labels, return_bag_names=True)
        if y is None and need_labels:
            raise CommandError(
                f"{path}: the table has no 'label' column: give the bag labels with --labels "
                "FILE.csv"
            )
        if labels is not None:
            _, groups = datasets.read_labels(labels, group_by=group_by, return_groups=True)
            if groups is not None:
                info = datasets.SlideData(
                    bags=bags,
                    y=y,
                    names=names,
                    groups=np.array([groups[n] for n in names], dtype=object),
                    group_column=group_by or "case_id",
                    coords=[None] * len(bags),
                    files=[path] * len(bags),
                    format="parquet",
                )
    else:
        if labels is not None:
            raise CommandError(
                f"--labels is for folders and Parquet tables; {path!r} ({fmt}) holds its labels"
            )
        if group_by is not None:
            raise CommandError(
                "--group-by needs a label CSV (--labels), for a folder or a Parquet table; "
                f"{path!r} ({fmt}) holds its labels"
            )
        loader = {
            "mill": datasets.load_mill,
            "musk": datasets.load_musk_uci,
            "mat": datasets.load_andrews_mat,
            "csv": datasets.load_mil_csv,
        }[fmt]
        bags, y, names = loader(path, return_bag_names=True)
    return (bags, y, names, fmt, info) if details else (bags, y, names, fmt)
