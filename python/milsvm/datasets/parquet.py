"""Reader of a Parquet table with one row per instance: a bag-id column, an optional label
column, and the features as numeric columns or as one list column. Needs ``pyarrow``
(``pip install milsvm[parquet]``)."""

from __future__ import annotations

import os

import numpy as np

from .labels import _as_features, _as_labels, _listed, _pair

__all__ = ["load_parquet"]


def _feature_matrix(table, names, path):
    """The ``n_rows x d`` features of ``table`` from the columns ``names``: one list column
    (fixed-size or not, every row the same length) or numeric columns (one per feature)."""
    import pyarrow as pa

    if len(names) == 1 and (
        pa.types.is_list(table.schema.field(names[0]).type)
        or pa.types.is_fixed_size_list(table.schema.field(names[0]).type)
        or pa.types.is_large_list(table.schema.field(names[0]).type)
    ):
        column = table.column(names[0]).combine_chunks()
        if column.null_count:
            raise ValueError(f"{path}: column {names[0]!r} has {column.null_count} missing row(s)")
        lengths = np.asarray(column.value_lengths())
        if len(lengths) and np.any(lengths != lengths[0]):
            row = int(np.argmax(lengths != lengths[0]))
            raise ValueError(
                f"{path}: column {names[0]!r} holds {lengths[0]} features in row 0 but "
                f"{lengths[row]} in row {row}"
            )
        flat = column.flatten()
        if flat.null_count:
            raise ValueError(f"{path}: column {names[0]!r} has missing feature values")
        values = flat.to_numpy(zero_copy_only=False)
        return values.reshape(len(column), -1 if len(column) else 0)
    columns = []
    for name in names:
        field = table.schema.field(name)
        if not (
            pa.types.is_floating(field.type)
            or pa.types.is_integer(field.type)
            or pa.types.is_boolean(field.type)
        ):
            raise TypeError(
                f"{path}: feature column {name!r} has type {field.type}, not numbers "
                "(name the feature columns with feature_columns=)"
            )
        column = table.column(name)
        if column.null_count:
            raise ValueError(
                f"{path}: feature column {name!r} has {column.null_count} missing value(s)"
            )
        columns.append(column.to_numpy())
    dtype = np.result_type(*[c.dtype for c in columns])
    out = np.empty((table.num_rows, len(columns)), dtype=dtype)
    for j, c in enumerate(columns):
        out[:, j] = c
    return out


def load_parquet(
    path,
    labels=None,
    *,
    bag_column="bag_id",
    label_column="label",
    feature_columns=None,
    return_bag_names=False,
):
    """Load a Parquet file with one row per instance.

    Parameters
    ----------
    path : str or path-like
        The Parquet file.
    labels : str, path-like, dict or None, default=None
        Bag labels from a CSV (see :func:`read_labels`) or a dict; they replace the label
        column, and every bag must have one (and every label a bag). ``None``: the labels of
        the ``label_column`` when the table has it, else no labels.
    bag_column : str, default="bag_id"
        The column of bag ids (read as text).
    label_column : str, default="label"
        The column of labels; every row of a bag must carry the bag's label.
    feature_columns : list of str or None, default=None
        The feature columns. ``None``: every other column, in table order. A single list column
        (``list<float>`` or ``fixed_size_list<float, d>``) holds one instance's features per row.
    return_bag_names : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags : list of ndarray
        In order of the labels (a CSV or dict) or of the bags' first row; instances in row
        order. The columns' dtype under the dtype rule of :mod:`milsvm.datasets.labels`
        (float32 columns give float32 bags).
    y : ndarray or None
    bag_names : list of str
        Only if ``return_bag_names``.

    Raises
    ------
    ImportError
        ``pyarrow`` is not installed.
    ValueError
        Naming the file: not a Parquet file, no rows, a missing column, a bag whose rows carry
        two labels, missing values, list rows of different lengths, a bag without a label.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "reading Parquet needs pyarrow: pip install pyarrow (or milsvm[parquet])"
        ) from None
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"data file {path!r} does not exist or is not a file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"{path}: the file is empty")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a damaged file
        raise ValueError(
            f"{path}: not a readable Parquet file ({' '.join(str(exc).split())})"
        ) from None
    names = table.column_names
    if bag_column not in names:
        raise ValueError(
            f"{path}: no bag column {bag_column!r} (the columns are {_listed(names, 10)}); "
            "name it with bag_column="
        )
    has_labels = label_column in names
    if feature_columns is None:
        feature_columns = [n for n in names if n not in (bag_column, label_column)]
    else:
        feature_columns = list(feature_columns)
        missing = [n for n in feature_columns if n not in names]
        if missing:
            raise ValueError(f"{path}: no column(s) {_listed(missing)}")
    if not feature_columns:
        raise ValueError(f"{path}: no feature columns")
    if table.num_rows == 0:
        raise ValueError(f"{path}: the table has no rows")
    bag_ids = np.asarray(
        table.column(bag_column).cast("string").to_numpy(zero_copy_only=False), dtype=object
    )
    if any(b is None for b in bag_ids):
        raise ValueError(f"{path}: the bag column {bag_column!r} has missing values")
    X = _as_features(_feature_matrix(table, feature_columns, path), path)
    # bags in order of first row, instances in row order
    unique, first, inverse = np.unique(bag_ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    ids = [str(u) for u in unique[order]]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    rows = np.argsort(rank[inverse], kind="stable")
    counts = np.bincount(rank[inverse], minlength=len(ids))
    starts = np.concatenate([[0], np.cumsum(counts)])
    grouped = X[rows] if np.any(rows != np.arange(len(rows))) else X
    bags_by_id = {b: grouped[starts[k] : starts[k + 1]] for k, b in enumerate(ids)}
    given = _as_labels(labels)
    if given is None and has_labels:
        column = table.column(label_column).to_pylist()
        ordered = [column[r] for r in rows]
        given = {}
        for k, b in enumerate(ids):
            values = set(ordered[starts[k] : starts[k + 1]])
            if len(values) != 1 or None in values:
                raise ValueError(
                    f"{path}: the rows of bag {b!r} carry {len(values)} labels "
                    f"({_listed(sorted(map(str, values)))}); a bag has one label"
                )
            value = values.pop()
            given[b] = (
                int(value)
                if isinstance(value, (bool, int, np.integer))
                or (isinstance(value, float) and value == int(value))
                else value
            )
    pairs, y = _pair(bags_by_id, given, path)
    if given is None:  # no labels: bags in order of first row, not sorted
        pairs = ids
    bags = [bags_by_id[b] for b in pairs]
    return (bags, y, list(pairs)) if return_bag_names else (bags, y)
