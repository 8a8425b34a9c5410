"""Bag labels kept beside the instances: a CSV of ``bag id, label`` (the per-slide label files
of whole-slide-image pipelines), and the pairing of labelled bag ids with the bags of a folder.

- :func:`read_labels`: the CSV, as an ordered ``{bag_id: label}``.
- ``_pair``: bag files and labels matched one to one, with an error naming every bag that has a
  file but no label, or a label but no file.
- ``_as_features``: one bag's array under the dtype rule below, shared by every folder and
  Parquet reader.

dtype rule
----------
float32 and float64 arrays are kept as they are (no copy for a memory-mapped ``.npy``);
float16 is widened to float32 (exact); integers and booleans become float64 (exact up to
2**53). Any other dtype (complex, strings, objects) is refused with a ``TypeError`` naming the
file.
"""

from __future__ import annotations

import csv
import os

import numpy as np

__all__ = ["read_labels", "label_columns"]

_BAG_COLUMNS = ("bag", "bag_id", "bagid", "bag_name", "slide", "slide_id", "case_id", "id", "name")
_LABEL_COLUMNS = ("label", "labels", "y", "class", "target")


def _parse_label(text):
    """An integer label when the text is one (``1``, ``-1``, ``1.0``), else the text."""
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value == int(value) else text


def _columns(header, path):
    """The positions of the bag id and label columns named by ``header``."""
    lowered = [h.strip().lower() for h in header]
    label = next((i for i, h in enumerate(lowered) if h in _LABEL_COLUMNS), None)
    # CLAM's files have case_id and slide_id: the slide is the bag.
    named = [c for c in ("slide_id", *_BAG_COLUMNS) if c in lowered]
    if label is None or not named:
        raise ValueError(
            f"{path}: the header {', '.join(repr(h) for h in header)} must name a bag id column "
            f"({' / '.join(_BAG_COLUMNS)}) and a label column ({' / '.join(_LABEL_COLUMNS)})"
        )
    return lowered.index(named[0]), label


def read_labels(path, *, group_by=None, return_groups=False):
    """Read a CSV of bag labels: ``{bag_id: label}`` in file order.

    Two layouts are read:

    - **No header**, two columns per line: ``bag_id,label``.
    - **A header** that names the columns (any order, extra columns ignored): the bag id column
      is one of ``bag``, ``bag_id``, ``slide_id`` (preferred when present, as in CLAM's
      ``case_id,slide_id,label`` files), ``case_id``, ``id``, ``name``; the label column one of
      ``label``, ``y``, ``class``, ``target``. A first line is a header when it has a field
      named ``label`` (or another label name) in any case.

    Bag ids are compared as text, stripped of white space; a bag id may carry a file suffix
    (``slide_1.h5``), which is dropped when matching files. Labels that are integers
    (``1``, ``-1``, ``1.0``) become ``int``; any other label is kept as text (``tumor``).

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    group_by : str or None, default=None
        The column naming each bag's group (the patient, or case, of a slide), compared
        case-insensitively with the header. ``None``: CLAM's ``case_id`` when the header has it
        beside another bag id column (``slide_id``), else no groups.
    return_groups : bool, default=False
        Also return ``{bag_id: group}`` (``None`` when there is no group column).

    Returns
    -------
    labels : dict
        Bag id (str) to label (int or str), in the order of the file.
    groups : dict or None
        Only with ``return_groups``: bag id to group (str).

    Raises
    ------
    ValueError
        The file is missing or empty, a line has the wrong number of fields, a bag id is empty
        or given twice, a group value is empty (the message names the file and line); a
        ``group_by`` column that the header lacks, or ``group_by`` for a file without a header
        (the message lists the columns).
    """
    path = os.fspath(path)
    header, rows = _read_rows(path)
    if header is not None:
        bag_col, label_col = _columns(header, path)
        width = len(header)
        if not rows:
            raise ValueError(f"{path}: the label file has a header and no labels")
    else:
        bag_col, label_col, width = 0, 1, 2
    group_col = _group_column(header, bag_col, group_by, path)
    labels, groups = {}, ({} if group_col is not None else None)
    for n, row in rows:
        if len(row) != width:
            raise ValueError(
                f"{path}, line {n}: expected {width} comma-separated fields, got {len(row)}"
            )
        bag = _strip_suffix(row[bag_col])
        if not bag:
            raise ValueError(f"{path}, line {n}: empty bag id")
        if not row[label_col]:
            raise ValueError(f"{path}, line {n}: empty label for bag {bag!r}")
        if bag in labels:
            raise ValueError(f"{path}, line {n}: bag {bag!r} is labelled twice")
        labels[bag] = _parse_label(row[label_col])
        if group_col is not None:
            if not row[group_col]:
                raise ValueError(
                    f"{path}, line {n}: empty {header[group_col]!r} value for bag {bag!r}"
                )
            groups[bag] = row[group_col]
    return (labels, groups) if return_groups else labels


#: The column read as the group of a bag when none is named: CLAM's patient column.
_GROUP_COLUMNS = ("case_id",)


def _read_rows(path):
    """``(header or None, [(line number, fields)])`` of a label CSV (blank lines dropped)."""
    if not os.path.isfile(path):
        raise ValueError(f"label file {path!r} does not exist or is not a file")
    with open(path, newline="", encoding="utf-8") as f:
        rows = [
            (n, [field.strip() for field in row])
            for n, row in enumerate(csv.reader(f), 1)
            if row and any(field.strip() for field in row)
        ]
    if not rows:
        raise ValueError(f"{path}: the label file is empty")
    first = [h.lower() for h in rows[0][1]]
    if any(h in _LABEL_COLUMNS for h in first):
        return rows[0][1], rows[1:]
    return None, rows


def label_columns(path):
    """The column names of a label CSV's header.

    Parameters
    ----------
    path : str or path-like
        The CSV file (see :func:`read_labels`).

    Returns
    -------
    list of str or None
        The header's fields as written, or ``None`` for a file without a header.
    """
    return _read_rows(os.fspath(path))[0]


def _group_column(header, bag_col, group_by, path):
    """The position of the group column (``None``: no groups); see :func:`read_labels`."""
    if group_by is None:
        if header is None:
            return None
        lowered = [h.lower() for h in header]
        found = [lowered.index(c) for c in _GROUP_COLUMNS if c in lowered]
        return found[0] if found and found[0] != bag_col else None
    if header is None:
        raise ValueError(
            f"{path}: the label file has no header, so it has no column {group_by!r} to group by "
            "(write a header such as case_id,slide_id,label)"
        )
    lowered = [h.lower() for h in header]
    if group_by.strip().lower() not in lowered:
        raise ValueError(
            f"{path}: no column {group_by!r} to group by (the columns are "
            f"{', '.join(repr(h) for h in header)})"
        )
    return lowered.index(group_by.strip().lower())


_SUFFIXES = (".npy", ".h5", ".hdf5", ".pt")


def _strip_suffix(name):
    """A bag id without a bag-file suffix (``slide_1.h5`` -> ``slide_1``)."""
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _as_labels(labels):
    """``labels`` (a CSV path or a mapping) as ``{bag_id: label}``."""
    if labels is None:
        return None
    if isinstance(labels, dict):
        return {_strip_suffix(str(k)): v for k, v in labels.items()}
    if isinstance(labels, (str, os.PathLike)):
        return read_labels(labels)
    raise TypeError(
        f"labels must be a CSV path or a dict {{bag_id: label}}, got {type(labels).__name__}"
    )


def _pair(files, labels, where):
    """The bag ids of ``files`` (a ``{bag_id: path or array}``) in the order of ``labels``
    (or sorted by bag id without labels) and their labels (``None`` without labels).

    Every file must have a label and every label a file: otherwise one ``ValueError`` names
    every unmatched bag."""
    if labels is None:
        ids = sorted(files)
        return ids, None
    no_label = sorted(set(files) - set(labels))
    no_file = [b for b in labels if b not in files]
    problems = []
    if no_file:
        problems.append(
            f"{len(no_file)} labelled bag(s) have no file in {where}: {_listed(no_file)}"
        )
    if no_label:
        if all(isinstance(files[b], (str, os.PathLike)) for b in no_label):
            problems.append(
                f"{len(no_label)} file(s) have no label: {_listed([files[b] for b in no_label])}"
            )
        else:
            problems.append(f"{len(no_label)} bag(s) of {where} have no label: {_listed(no_label)}")
    if problems:
        raise ValueError("; ".join(problems))
    ids = list(labels)
    y = [labels[b] for b in ids]
    y = (
        np.asarray(y, dtype=np.int64)
        if all(isinstance(v, (int, np.integer)) for v in y)
        else np.asarray(y)
    )
    return ids, y


def _listed(items, limit=5):
    shown = ", ".join(repr(str(i)) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _as_features(array, path):
    """One bag's 2-D feature array under the module's dtype rule (no copy for float32/float64)."""
    dtype = array.dtype
    if dtype == np.float16:
        array = np.asarray(array, dtype=np.float32)
    elif np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        array = np.asarray(array, dtype=np.float64)
    elif dtype not in (np.float32, np.float64):
        raise TypeError(f"{path}: features must be real numbers, got dtype {dtype}")
    if array.ndim != 2:
        raise ValueError(
            f"{path}: a bag must be a 2-D array (instances x features), got shape {array.shape}"
        )
    if array.shape[0] == 0:
        raise ValueError(f"{path}: the bag has no instances (shape {array.shape})")
    if array.shape[1] == 0:
        raise ValueError(f"{path}: the bag has no features (shape {array.shape})")
    return array


def _check_widths(bags, paths):
    """Every bag has the first bag's number of features; else a ``ValueError`` naming both files."""
    d = bags[0].shape[1]
    for bag, path in zip(bags, paths):
        if bag.shape[1] != d:
            raise ValueError(
                f"{path}: {bag.shape[1]} features, but {paths[0]} has {d}: every bag must have "
                f"the same feature width"
            )
