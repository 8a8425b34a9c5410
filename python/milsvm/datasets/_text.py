"""Shared helpers of the text loaders: reading data lines, strict number parsing, grouping
instance lines into bags and parsing dense or sparse (``index:value``) feature strings.

Every defect is a ``ValueError`` whose message names the file and the 1-based line number
(:func:`_line_error`).

The Rust crate reads MILL and ``mil`` CSV files by the same rules, with the same messages
(``src/data/``); ``tests/test_rust_readers.py`` compares the two. Change both together.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import scipy.sparse as sp

# --------------------------------------------------------------------------------------------
# Text parsing helpers
# --------------------------------------------------------------------------------------------


def _display_name(path):
    """Return ``path`` as a ``str`` for messages, accepting ``str``, ``bytes`` or PathLike."""
    return os.fsdecode(os.fspath(path))


def _line_error(name, lineno, message):
    """Build the ``ValueError`` raised for a defect on line ``lineno`` (1-based) of ``name``."""
    return ValueError(f"{name}, line {lineno}: {message}")


def _read_data_lines(path):
    """Read a text file and return its non-blank lines with their 1-based line numbers.

    Lines are stripped of surrounding whitespace (this removes ``\\r`` of CRLF files); blank
    lines are skipped but still counted, so the numbers match what an editor shows.
    """
    fspath = os.fspath(path)
    name = os.fsdecode(fspath)
    # utf-8-sig drops a byte-order mark; undecodable bytes become U+FFFD and are then reported
    # as non-numeric values (or kept inside names) instead of failing without a line number.
    with open(fspath, encoding="utf-8-sig", errors="replace") as fh:
        text = fh.read()
    linenos = []
    lines = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if line:
            linenos.append(lineno)
            lines.append(line)
    if not lines:
        raise ValueError(f"{name}: the file is empty (it contains no data lines)")
    return name, linenos, lines


def _strict_float(token):
    """``float(token)``, but rejecting what numpy's parser rejects: ``_`` and non-ASCII digits."""
    if "_" in token or not token.isascii():
        raise ValueError(f"could not convert {token!r} to float")
    return float(token)


def _strict_int(token):
    """``int(token)``, but rejecting ``_`` digit separators and non-ASCII digits."""
    if "_" in token or not token.isascii():
        raise ValueError(f"could not convert {token!r} to int")
    return int(token)


_INT64_MIN = int(np.iinfo(np.int64).min)
_INT64_MAX = int(np.iinfo(np.int64).max)


def _check_label_range(name, lineno, label, text, field):
    """Raise the line's ``ValueError`` if an integer label does not fit in int64."""
    if not _INT64_MIN <= label <= _INT64_MAX:
        raise _line_error(
            name,
            lineno,
            f"the label {text.strip()!r} (field {field}) is out of range (labels are 0/1 or "
            "class numbers 0..K-1)",
        )


def _parse_int_label(text):
    """Parse an integer label written as ``1``, ``+1``, ``-1`` or ``1.0``; None if invalid."""
    text = text.strip()
    if "_" in text or not text.isascii():
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _group_bags(name, linenos, bag_names, labels):
    """Find the bags of contiguous instance lines.

    Returns ``(starts, bag_labels)``: the index of the first instance of every bag, in file
    order, and the bag labels. Raises ``ValueError`` if a bag name reappears after another bag
    or if an instance line carries a label that differs from its bag's.
    """
    starts = []
    bag_labels = []
    first_line = {}
    previous = None
    for k, bag in enumerate(bag_names):
        if bag != previous:
            if bag in first_line:
                raise _line_error(
                    name,
                    linenos[k],
                    f"bag {bag!r} reappears after other bags (it was first seen on line "
                    f"{first_line[bag]}); the lines of a bag must be contiguous",
                )
            first_line[bag] = linenos[k]
            starts.append(k)
            bag_labels.append(labels[k])
            previous = bag
        elif labels[k] != bag_labels[-1]:
            raise _line_error(
                name,
                linenos[k],
                f"label {labels[k]} differs from the label {bag_labels[-1]} of bag {bag!r} "
                f"(line {first_line[bag]}); every instance line repeats its bag's label",
            )
    return starts, bag_labels


def _read_bag_lines(path, split_line):
    """Read a file whose instance lines are grouped in contiguous bags.

    ``split_line(name, lineno, line)`` returns the ``(bag_name, label, features)`` of one
    line (raising its ``ValueError`` if the line is malformed). Returns ``(name, linenos,
    rests, starts, bag_labels, bag_names)``: the file name, the line number and feature
    string of every instance, the index of the first instance of every bag (see
    :func:`_group_bags`), and the label and name of every bag.
    """
    name, linenos, lines = _read_data_lines(path)
    bag_names = []
    labels = []
    rests = []
    for lineno, line in zip(linenos, lines):
        bag, label, rest = split_line(name, lineno, line)
        bag_names.append(bag)
        labels.append(label)
        rests.append(rest)
    starts, bag_labels = _group_bags(name, linenos, bag_names, labels)
    return name, linenos, rests, starts, bag_labels, [bag_names[k] for k in starts]


def _split_dense(X, starts):
    """Split the instance matrix ``X`` into per-bag arrays at the row indices ``starts``."""
    return np.split(X, starts[1:], axis=0)


def _split_sparse(X, starts):
    """Split a CSR instance matrix into per-bag CSR matrices at the row indices ``starts``."""
    ends = list(starts[1:]) + [X.shape[0]]
    return [X[s:e] for s, e in zip(starts, ends)]


# A character that cannot appear in a dense row of plain decimal numbers (or that numpy's
# parser would treat differently from float()): such rows take the strict line-by-line path.
_DENSE_OTHER_CHAR = re.compile(r"[^0-9eE+\-., \t\n]")


def _parse_dense(name, linenos, rests, n_features=None, first_field=4):
    """Parse dense comma-separated feature strings (one per instance) into a float64 matrix.

    ``first_field`` is the 1-based field number of the first feature on a line; it is used in
    the messages only.
    """
    n_values = rests[0].count(",") + 1
    if n_features is not None and n_values != n_features:
        raise _line_error(
            name,
            linenos[0],
            f"{n_values} feature values, but n_features={n_features} was requested",
        )
    for k, rest in enumerate(rests):
        if rest.count(",") + 1 != n_values:
            raise _line_error(
                name,
                linenos[k],
                f"{rest.count(',') + 1} feature values, but line {linenos[0]} has {n_values} "
                "(all instances of a dense file must have the same number of features)",
            )

    X = None
    # numpy's C tokenizer is ~10x faster than converting the values one by one in Python, but
    # more lenient: it skips any Unicode whitespace (e.g. the control character \x1c) around
    # a number. It is used only when every character is one a plain number or separator has.
    if _DENSE_OTHER_CHAR.search("\n".join(rests)) is None:
        try:
            X = np.loadtxt(rests, delimiter=",", dtype=np.float64, comments=None, ndmin=2)
        except ValueError:
            X = None
    if X is None or X.shape != (len(rests), n_values):
        # Something loadtxt rejected (or read differently): parse line by line, which either
        # succeeds or reports the exact line and field.
        X = np.empty((len(rests), n_values), dtype=np.float64)
        for k, rest in enumerate(rests):
            tokens = rest.split(",")
            try:
                X[k] = [_strict_float(token) for token in tokens]
            except ValueError:
                for j, token in enumerate(tokens):
                    try:
                        _strict_float(token)
                    except ValueError:
                        raise _line_error(
                            name,
                            linenos[k],
                            f"feature {j + 1} (field {j + first_field}): "
                            f"{token.strip(' ')!r} is not a number",
                        ) from None
                raise  # pragma: no cover - float() failed on the list but not on one item

    bad = ~np.isfinite(X)
    if bad.any():
        k, j = (int(v) for v in np.argwhere(bad)[0])
        raise _line_error(
            name,
            linenos[k],
            f"feature {j + 1} (field {j + first_field}) is not finite ({float(X[k, j])!r}); "
            "NaN and infinite values are not allowed",
        )
    return X


def _sparse_token_error(name, lineno, tokens):
    """Raise the ``ValueError`` describing the first bad ``index:value`` token of a line."""
    for j, token in enumerate(tokens, start=1):
        parts = token.split(":")
        if len(parts) != 2:
            raise _line_error(
                name,
                lineno,
                f"feature entry {j}: {token.strip()!r} is not of the form index:value "
                "(sparse files need index:value on every entry)",
            )
        try:
            _strict_int(parts[0])
        except ValueError:
            raise _line_error(
                name,
                lineno,
                f"feature entry {j}: {token.strip()!r}: the index {parts[0].strip()!r} is not "
                "an integer",
            ) from None
        try:
            _strict_float(parts[1])
        except ValueError:
            raise _line_error(
                name,
                lineno,
                f"feature entry {j}: {token.strip()!r}: the value {parts[1].strip()!r} is not "
                "a number",
            ) from None
    raise _line_error(name, lineno, "malformed index:value entries")  # pragma: no cover


def _check_entries(name, entry_lines, bad, message):
    """Raise the line's ``ValueError`` for the first entry ``p`` where ``bad`` is true.

    ``entry_lines[p]`` is the line number of entry ``p`` and ``message(p)`` the text.
    """
    hits = np.flatnonzero(bad)
    if hits.size:
        p = hits[0]
        raise _line_error(name, int(entry_lines[p]), message(p))


def _parse_sparse(name, linenos, rests, n_features=None):
    """Parse sparse ``index:value`` feature strings (1-based indices) into a CSR matrix.

    An empty feature string is an all-zero instance.
    """
    all_idx = []
    all_val = []
    row_nnz = []
    for k, rest in enumerate(rests):
        if not rest:
            row_nnz.append(0)
            continue
        tokens = rest.split(",")
        if "_" in rest or not rest.isascii():
            _sparse_token_error(name, linenos[k], tokens)
        try:
            pairs = [token.split(":") for token in tokens]
            idx = [int(a) for a, _ in pairs]
            val = [float(b) for _, b in pairs]
        except ValueError:
            _sparse_token_error(name, linenos[k], tokens)
        all_idx.extend(idx)
        all_val.extend(val)
        row_nnz.append(len(idx))

    n_rows = len(rests)
    rows = np.repeat(np.arange(n_rows), row_nnz)
    try:
        idx = np.array(all_idx, dtype=np.int64)
    except OverflowError:
        limit = np.iinfo(np.int64).max
        p = next(i for i, v in enumerate(all_idx) if abs(v) > limit)
        raise _line_error(
            name, linenos[rows[p]], f"feature index {all_idx[p]} is too large"
        ) from None
    val = np.array(all_val, dtype=np.float64)

    entry_lines = np.asarray(linenos, dtype=np.int64)[rows]
    _check_entries(
        name, entry_lines, idx < 1, lambda p: f"feature index {idx[p]} is < 1 (indices are 1-based)"
    )
    _check_entries(
        name,
        entry_lines,
        ~np.isfinite(val),
        lambda p: (
            f"the value of feature {idx[p]} is not finite ({float(val[p])!r}); NaN and "
            "infinite values are not allowed"
        ),
    )
    if n_features is None:
        if idx.size == 0:
            raise ValueError(
                f"{name}: no instance has a feature value; give n_features to load an all-zero "
                "sparse file"
            )
        n_features = int(idx.max())
    else:
        _check_entries(
            name,
            entry_lines,
            idx > n_features,
            lambda p: f"feature index {idx[p]} exceeds n_features={n_features}",
        )

    cols = idx - 1
    if cols.size > 1:
        order = np.lexsort((cols, rows))
        r_sorted = rows[order]
        c_sorted = cols[order]
        dup = (r_sorted[1:] == r_sorted[:-1]) & (c_sorted[1:] == c_sorted[:-1])
        _check_entries(
            name,
            entry_lines[order],
            dup,
            lambda p: f"feature index {c_sorted[p] + 1} appears more than once",
        )

    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    X = sp.csr_matrix((val, cols, indptr), shape=(n_rows, n_features), dtype=np.float64)
    X.sort_indices()
    X.eliminate_zeros()
    return X


def _result(bags, bag_labels, bag_names, return_bag_names):
    """The ``(bags, y)`` or ``(bags, y, bag_names)`` returned by the text loaders."""
    y = np.asarray(bag_labels, dtype=np.int64)
    return (bags, y, list(bag_names)) if return_bag_names else (bags, y)
