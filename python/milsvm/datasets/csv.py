"""Reader of the CSV layout of the ``mil`` Python package (``label,bag_id,features...``)."""

from __future__ import annotations

import csv

import numpy as np

from ._text import (
    _check_label_range,
    _line_error,
    _parse_dense,
    _parse_int_label,
    _read_data_lines,
    _result,
    _split_dense,
    _strict_float,
)

__all__ = ["load_mil_csv"]


_CSV_BAG_COLUMNS = frozenset(
    {"bag", "bags", "bag_id", "bagid", "bag id", "bag-id", "bag_name", "bag name"}
)
_CSV_LABEL_COLUMNS = frozenset(
    {"label", "labels", "bag_label", "bag label", "y", "class", "target"}
)


def _csv_fields(line):
    """Split one CSV line (comma-delimited, optional double quotes) into stripped fields."""
    return [field.strip() for field in next(csv.reader([line], skipinitialspace=True))]


def _is_number(text):
    try:
        _strict_float(text)
    except ValueError:
        return False
    return True


def _csv_header(fields):
    """``None`` if ``fields`` (the first line) is data, else ``True`` if the header puts the
    bag id first (``bag_id,label,...``) and ``False`` if it puts the label first."""
    if (
        len(fields) < 3
        or any(_is_number(f) for f in fields[2:])
        or _parse_int_label(fields[0]) is not None
    ):
        return None
    first, second = fields[0].lower(), fields[1].lower()
    if first in _CSV_BAG_COLUMNS and second in _CSV_LABEL_COLUMNS:
        return True
    if first in _CSV_LABEL_COLUMNS and second in _CSV_BAG_COLUMNS:
        return False
    return ValueError(
        f"the header names its first two columns {fields[0]!r} and {fields[1]!r}; they must be the "
        "label and the bag id, named label and bag_id (in either order)"
    )


def load_mil_csv(path, *, return_bag_names=False):
    """Load a multiple-instance data set in the CSV layout of the ``mil`` Python package.

    Every non-blank line describes one instance::

        label,bag_id,feature_1,...,feature_d

    the layout of the ``mil`` package's data sets (``mil/data/datasets/csv/musk1.csv``: no header,
    an integer label, then the bag id). The rules:

    - **Header.** Optional. The first line is a header when its first field is not an integer
      and none of its feature fields (third on) is a number (so pandas' default numeric column
      names ``0,1,2,...`` are read as data: write such files with ``header=False``). A header
      may name the first two columns ``bag_id,label`` (bag id first) instead of
      ``label,bag_id``; recognised names are ``label``/``y``/``class``/``target`` and
      ``bag``/``bag_id``/``bag_name`` (any case). Other names for these two columns are an
      error.
    - **Bags.** Bag ids are compared as text (``1`` and ``1.0`` are different bags). The lines of
      a bag need *not* be contiguous (the ``mil`` package groups by id): bags are returned in
      order of first appearance, their instances in file order. Every line of a bag carries
      the bag's label.
    - **Values.** Labels are integers (``1``, ``-1``, ``1.0``); features are dense, finite
      numbers, the same number on every line. Fields are comma-separated and may be quoted;
      a quoted field cannot span lines.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.csv`` file (UTF-8 or ASCII; LF or CRLF line ends; blank lines are ignored).
    return_bag_names : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, n_features)
        One float64 array per bag, in order of first appearance.
    y : ndarray of shape (n_bags,), dtype int64
        The label of every bag, as written in the file.
    bag_names : list of str
        Only if ``return_bag_names``: the bag ids (unquoted, surrounding spaces removed), in
        the order of ``bags``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is malformed; the message names the file and the 1-based line number: too
        few fields, an unrecognised header, a label that is not an integer, an empty bag id, a
        non-numeric or non-finite (NaN, inf, empty) feature, a line with a different number of
        features than the first, an instance whose label differs from its bag's, or a file
        without data lines.

    See Also
    --------
    load_mill : the MILL text format (``instance,bag,label,features``).

    Examples
    --------
    >>> bags, y = load_mil_csv("musk1.csv")                        # doctest: +SKIP
    >>> bags, y, ids = load_mil_csv("musk1.csv", return_bag_names=True)  # doctest: +SKIP
    """
    name, linenos, lines = _read_data_lines(path)
    rows = []
    for lineno, line in zip(linenos, lines):
        try:
            rows.append(_csv_fields(line))
        except csv.Error as exc:
            raise _line_error(name, lineno, f"not a CSV line ({exc})") from None
    bag_first = _csv_header(rows[0])
    if isinstance(bag_first, ValueError):
        raise _line_error(name, linenos[0], str(bag_first))
    if bag_first is not None:
        linenos, rows = linenos[1:], rows[1:]
        if not rows:
            raise ValueError(f"{name}: the file has a header but no data lines")
    bag_col, label_col = (0, 1) if bag_first else (1, 0)
    layout = "bag_id,label,features..." if bag_first else "label,bag_id,features..."

    bag_index = {}
    first_line = []
    bag_labels = []
    bag_of = np.empty(len(rows), dtype=np.int64)
    rests = []
    n_values = None
    for k, (lineno, fields) in enumerate(zip(linenos, rows)):
        if len(fields) < 3:
            raise _line_error(name, lineno, f"too few fields ({len(fields)}); expected {layout}")
        label = _parse_int_label(fields[label_col])
        if label is None:
            raise _line_error(
                name,
                lineno,
                f"the label {fields[label_col]!r} (field {label_col + 1}) is not an integer",
            )
        _check_label_range(name, lineno, label, fields[label_col], label_col + 1)
        bag = fields[bag_col]
        if not bag:
            raise _line_error(name, lineno, f"the bag id (field {bag_col + 1}) is empty")
        b = bag_index.setdefault(bag, len(bag_index))
        if b == len(bag_labels):
            bag_labels.append(label)
            first_line.append(lineno)
        elif label != bag_labels[b]:
            raise _line_error(
                name,
                lineno,
                f"label {label} differs from the label {bag_labels[b]} of bag {bag!r} (line "
                f"{first_line[b]}); every line of a bag carries the bag's label",
            )
        bag_of[k] = b
        features = fields[2:]
        if n_values is None:
            n_values = len(features)
        elif len(features) != n_values:
            raise _line_error(
                name,
                lineno,
                f"{len(features)} feature values, but line {linenos[0]} has {n_values} (every "
                "line must have the same number of features)",
            )
        for j, value in enumerate(features):
            if "," in value or not value:
                raise _line_error(
                    name, lineno, f"feature {j + 1} (field {j + 3}): {value!r} is not a number"
                )
        rests.append(",".join(features))

    X = _parse_dense(name, linenos, rests, None, first_field=3)
    perm = np.argsort(bag_of, kind="stable")
    counts = np.bincount(bag_of, minlength=len(bag_labels))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist()
    return _result(_split_dense(X[perm], starts), bag_labels, list(bag_index), return_bag_names)
