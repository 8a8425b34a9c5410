"""Multiple-instance data sets: loaders for the benchmark file formats and synthetic generators.

A multiple-instance (MI) data set is a list of *bags*; a bag is a matrix with one row per
instance (``n_instances x n_features``) and one label per bag. Every function of this module
returns ``(bags, y)``: ``bags`` a list of 2-D ``float64`` numpy arrays (dense data) or of
``scipy.sparse.csr_matrix`` (sparse data), ``y`` a 1-D integer numpy array with one label per
bag (``0``/``1`` for binary sets, ``0..K-1`` for multi-class sets).

Loaders
-------
- :func:`load_mill`: the MILL text format (``instance_name,bag_name,label,features...``, dense or
  sparse ``index:value`` features) of MUSK1/2, Elephant, TST1/2 and COREL.
- :func:`load_musk_uci`: the original UCI ``clean1.data`` / ``clean2.data`` files.
- :func:`load_andrews_mat`: S. Andrews' MATLAB files (``features``, ``labels``, ``bag_ids``).
- :func:`load_mil_csv`: the CSV layout of the ``mil`` Python package (``label,bag_id,features...``).
- :func:`load_musk1`: the copy of MUSK1 bundled with the package.

Every loader takes ``return_bag_names=True`` to also return the bag names (or ids) as a list
of ``str``, in the order of the bags: ``bags, y, names = load_mill(path, return_bag_names=True)``.

Generators
----------
- :func:`make_center_ring_bags`: binary centre/ring data of Fu et al. (2013), Fig. 2(a).
- :func:`make_four_gaussians_bags`: 3-class data of Fu et al. (2013), Fig. 2(b).
- :func:`make_annealing_toy`: the 2-D toy of Gehler & Chapelle (2007), section 5.

The module depends on numpy and scipy only (scikit-learn is imported lazily by the generators,
for ``check_random_state``).
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import os
import re
import struct
import zlib
from importlib import resources

import numpy as np
import scipy.sparse as sp

__all__ = [
    "load_mill",
    "load_musk_uci",
    "load_andrews_mat",
    "load_mil_csv",
    "load_musk1",
    "make_center_ring_bags",
    "make_four_gaussians_bags",
    "make_annealing_toy",
]


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

    bad = np.flatnonzero(idx < 1)
    if bad.size:
        p = bad[0]
        raise _line_error(
            name, linenos[rows[p]], f"feature index {idx[p]} is < 1 (indices are 1-based)"
        )
    bad = np.flatnonzero(~np.isfinite(val))
    if bad.size:
        p = bad[0]
        raise _line_error(
            name,
            linenos[rows[p]],
            f"the value of feature {idx[p]} is not finite ({float(val[p])!r}); NaN and infinite "
            "values are not allowed",
        )
    if n_features is None:
        if idx.size == 0:
            raise ValueError(
                f"{name}: no instance has a feature value; give n_features to load an all-zero "
                "sparse file"
            )
        n_features = int(idx.max())
    else:
        bad = np.flatnonzero(idx > n_features)
        if bad.size:
            p = bad[0]
            raise _line_error(
                name,
                linenos[rows[p]],
                f"feature index {idx[p]} exceeds n_features={n_features}",
            )

    cols = idx - 1
    if cols.size > 1:
        order = np.lexsort((cols, rows))
        r_sorted = rows[order]
        c_sorted = cols[order]
        dup = np.flatnonzero((r_sorted[1:] == r_sorted[:-1]) & (c_sorted[1:] == c_sorted[:-1]))
        if dup.size:
            p = dup[0]
            raise _line_error(
                name,
                linenos[r_sorted[p]],
                f"feature index {c_sorted[p] + 1} appears more than once",
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


def _check_n_features(n_features):
    """Validate the ``n_features`` argument of :func:`load_mill`."""
    if n_features is None:
        return None
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral):
        raise ValueError(f"n_features must be None or a positive integer, got {n_features!r}")
    if n_features < 1:
        raise ValueError(f"n_features must be None or a positive integer, got {n_features!r}")
    return int(n_features)


# --------------------------------------------------------------------------------------------
# Loaders
# --------------------------------------------------------------------------------------------


def load_mill(path, n_features=None, *, return_bag_names=False):
    """Load a multiple-instance data set in the MILL text format.

    Every non-blank line describes one instance::

        instance_name,bag_name,label,features...

    The features are either dense (``v1,v2,...,vd``) or sparse (``index:value,...`` with
    1-based indices; absent features are 0). The kind is detected from the first line that has
    features, and the whole file must be of that kind. The lines of a bag are contiguous and
    repeat the bag's label (``0``/``1`` for binary sets, the class ``0..K-1`` for multi-class
    sets such as COREL).

    Parameters
    ----------
    path : str or os.PathLike
        The file to read (UTF-8 or ASCII text; LF or CRLF line ends; blank lines are ignored).
    n_features : int, optional
        Number of features. For sparse files it defaults to the largest index seen; an index
        larger than a given ``n_features`` is an error. For dense files it is only checked
        against the number of values on each line.
    return_bag_names : bool, default=False
        Also return the bag names (field 2).

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, n_features), or list of csr_matrix
        One float64 matrix per bag, in file order: dense arrays for a dense file, CSR matrices
        (sorted indices, no explicit zeros) for a sparse file. All-zero sparse instances may be
        written with no feature field at all (``name,bag,label``).
    y : ndarray of shape (n_bags,), dtype int64
        The label of every bag.
    bag_names : list of str
        Only if ``return_bag_names``: the name of every bag, in the order of ``bags``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is malformed. The message names the file and the 1-based line number and
        says what is wrong: too few fields, a label that is not an integer (or is beyond the
        64-bit range), a non-numeric or
        non-finite (NaN/inf) value, a bad ``index:value`` entry, an index < 1, above
        ``n_features`` or repeated, a line with a different number of dense features than the
        first, a bag whose lines are not contiguous, an instance whose label differs from its
        bag's, or an empty file.

    See Also
    --------
    load_musk_uci : the original UCI MUSK files.
    load_andrews_mat : S. Andrews' MATLAB files.

    Examples
    --------
    >>> bags, y = load_mill("shared/data/musk2/musk2.data")  # doctest: +SKIP
    >>> len(bags), bags[0].shape                             # doctest: +SKIP
    (102, (4, 166))
    """
    n_features = _check_n_features(n_features)
    name, linenos, lines = _read_data_lines(path)

    bag_names = []
    labels = []
    rests = []
    for lineno, line in zip(linenos, lines):
        parts = line.split(",", 3)
        if len(parts) < 3:
            raise _line_error(
                name,
                lineno,
                f"too few fields ({len(parts)}); expected instance_name,bag_name,label,"
                "features...",
            )
        bag = parts[1].strip()
        if not bag:
            raise _line_error(name, lineno, "the bag name (field 2) is empty")
        label = _parse_int_label(parts[2])
        if label is None:
            raise _line_error(
                name, lineno, f"the label {parts[2].strip()!r} (field 3) is not an integer"
            )
        _check_label_range(name, lineno, label, parts[2], 3)
        bag_names.append(bag)
        labels.append(label)
        rests.append(parts[3].strip() if len(parts) == 4 else "")

    starts, bag_labels = _group_bags(name, linenos, bag_names, labels)

    first = next((k for k, rest in enumerate(rests) if rest), None)
    if first is None:
        if n_features is None:
            raise ValueError(
                f"{name}: no line has feature values, so the feature format cannot be "
                "determined (expected instance_name,bag_name,label,features...)"
            )
        sparse = True
    else:
        sparse = ":" in rests[first]

    if sparse:
        X = _parse_sparse(name, linenos, rests, n_features)
        bags = _split_sparse(X, starts)
    else:
        for k, rest in enumerate(rests):
            if not rest:
                raise _line_error(
                    name,
                    linenos[k],
                    "too few fields: no feature values (expected instance_name,bag_name,label,"
                    "features...)",
                )
        X = _parse_dense(name, linenos, rests, n_features, first_field=4)
        bags = _split_dense(X, starts)
    return _result(bags, bag_labels, [bag_names[k] for k in starts], return_bag_names)


def load_musk_uci(path, *, return_bag_names=False):
    """Load the UCI MUSK files ``clean1.data`` (MUSK1) or ``clean2.data`` (MUSK2).

    Every line describes one conformation of a molecule::

        molecule_name,conformation_name,f1,...,f166,class

    with ``class`` written ``1.`` (musk) or ``0.`` (non-musk). A bag is a molecule; its lines
    are contiguous.

    Parameters
    ----------
    path : str or os.PathLike
        The ``clean1.data`` / ``clean2.data`` file.
    return_bag_names : bool, default=False
        Also return the molecule names (field 1).

    Returns
    -------
    bags : list of ndarray of shape (n_conformations_i, 166)
        One float64 array per molecule, in file order.
    y : ndarray of shape (n_bags,), dtype int64
        1 for musks, 0 for non-musks.
    bag_names : list of str
        Only if ``return_bag_names``: the molecule names, in the order of ``bags``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is malformed (too few fields, non-numeric or non-finite feature, class not
        0 or 1, differing number of features, a molecule's lines not contiguous, conformations
        of one molecule with different classes, empty file); the message names the file and
        the 1-based line number.

    Notes
    -----
    ``clean1.data`` holds the same data as the MILL file ``musk1.data`` (same molecules,
    conformations and order); ``load_musk_uci("clean1.data")`` and ``load_mill("musk1.data")``
    return equal bags and labels.
    """
    name, linenos, lines = _read_data_lines(path)
    bag_names = []
    labels = []
    rests = []
    for lineno, line in zip(linenos, lines):
        parts = line.split(",", 2)
        features, sep, cls = parts[2].rpartition(",") if len(parts) == 3 else ("", "", "")
        if not sep or not features.strip():
            raise _line_error(
                name,
                lineno,
                "too few fields; expected molecule_name,conformation_name,f1,...,f166,class",
            )
        bag = parts[0].strip()
        if not bag:
            raise _line_error(name, lineno, "the molecule name (field 1) is empty")
        try:
            value = _strict_float(cls.strip())
        except ValueError:
            value = None
        if value not in (0.0, 1.0):
            raise _line_error(
                name,
                lineno,
                f"the class {cls.strip()!r} (last field) is not 0 or 1 (written 0. or 1.)",
            )
        bag_names.append(bag)
        labels.append(int(value))
        rests.append(features.strip())

    starts, bag_labels = _group_bags(name, linenos, bag_names, labels)
    X = _parse_dense(name, linenos, rests, None, first_field=3)
    return _result(_split_dense(X, starts), bag_labels, [bag_names[k] for k in starts], return_bag_names)


def _check_real_dtype(name, key, dtype):
    """Reject MATLAB variables that are not real numbers (complex, text, cells, structs)."""
    if dtype.kind not in "biuf":
        kind = "complex" if dtype.kind == "c" else f"dtype {dtype}"
        raise ValueError(f"{name}: {key!r} must be real and numeric, got {kind}")


def _check_sparse_structure(name, key, value):
    """Check the index arrays of a sparse MATLAB variable before any conversion.

    scipy builds sparse variables without checking their indices, and converting a corrupt
    one (row index out of range, decreasing column pointers) reads out of bounds in compiled
    code. ``check_format(full_check=True)`` is not enough: it skips the pointer order when the
    last pointer is 0. Only the compressed formats need the check: a COO matrix (MATLAB v4
    files) checks its indices when it is built.
    """
    if value.format not in ("csc", "csr"):
        return
    major, minor = value.shape if value.format == "csr" else value.shape[::-1]
    indptr = np.asarray(value.indptr)
    indices = np.asarray(value.indices)
    problem = None
    if indptr.ndim != 1 or indptr.size != major + 1:
        problem = f"{indptr.size} index pointers for {major} columns/rows"
    elif indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        problem = "the index pointers do not increase from 0"
    elif indptr[-1] > indices.size or indices.size != np.asarray(value.data).size:
        problem = "the index pointers, indices and values do not match in number"
    elif indices.size and (indices.min() < 0 or indices.max() >= minor):
        problem = f"an index is out of range 0..{minor - 1}"
    if problem is not None:
        raise ValueError(f"{name}: the sparse variable {key!r} is corrupt: {problem}")


def _mat_vector(name, mat, key, n_instances):
    """Return the MATLAB variable ``key`` as a 1-D float array of length ``n_instances``."""
    value = mat[key]
    if sp.issparse(value):
        _check_sparse_structure(name, key, value)
        value = value.toarray()
    value = np.asarray(value)
    if value.ndim > 2 or (value.ndim == 2 and min(value.shape) > 1):
        raise ValueError(f"{name}: {key!r} must be a vector, got shape {value.shape}")
    _check_real_dtype(name, key, value.dtype)
    try:
        value = value.astype(np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {key!r} must be numeric, got dtype {value.dtype}") from None
    if value.size != n_instances:
        raise ValueError(
            f"{name}: {key!r} has {value.size} entries but 'features' has {n_instances} rows "
            "(instances)"
        )
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name}: {key!r} contains NaN or infinite values")
    return value


# MAT-file v5 data types (the ``mdtype`` of a data element's tag). scipy's compiled reader
# indexes a table with the tag of a numeric element without checking it, so a corrupt tag
# crashes the interpreter (segmentation fault, scipy 1.17): the tags are checked before.
_MI_NUMERIC = frozenset({1, 2, 3, 4, 5, 6, 7, 9, 12, 13})  # miINT8 .. miUINT64, no 8/10/11
_MI_UTF = frozenset({16, 17, 18})  # miUTF8, miUTF16, miUTF32 (character data only)
_MI_MATRIX = 14
_MI_COMPRESSED = 15
_MX_CONTAINERS = frozenset({1, 2, 3})  # cell, struct, object: their data are nested matrices
_MX_CHAR = 4
_MX_NUMERIC = frozenset(range(5, 16))  # sparse (5) and the numeric classes (6 .. 15)
_MAT5_MAX_DEPTH = 32


class _CorruptMat(ValueError):
    """A MAT-file v5 data element whose tag or size is invalid."""


def _mat5_subelements(body, order):
    """Split the content of a miMATRIX element into its tagged sub-elements.

    Returns a list of ``(mdtype, data)``. Handles the small-element format (size and type in
    one 32-bit word, up to 4 bytes of data) and the 8-byte padding of normal elements.
    """
    out = []
    pos = 0
    n = len(body)
    while pos < n:
        if n - pos < 8:
            if any(body[pos:]):
                raise _CorruptMat("a data element is truncated")
            break  # trailing zero padding
        word, byte_count = struct.unpack_from(order + "II", body, pos)
        if word >> 16:  # small data element
            mdtype, size = word & 0xFFFF, word >> 16
            if size > 4:
                raise _CorruptMat(f"small data element of {size} bytes (at most 4)")
            out.append((mdtype, body[pos + 4 : pos + 4 + size]))
            pos += 8
            continue
        mdtype = word
        if byte_count > n - pos - 8:
            raise _CorruptMat(
                f"a data element of type {mdtype} claims {byte_count} bytes, "
                f"{n - pos - 8} remain"
            )
        out.append((mdtype, body[pos + 8 : pos + 8 + byte_count]))
        pos += 8 + byte_count + (-byte_count) % 8
    return out


def _mat5_int32s(data, order):
    """The 32-bit integers of a dimensions / field-name-length element."""
    return list(struct.unpack_from(f"{order}{len(data) // 4}i", data)) if len(data) >= 4 else []


def _check_mat5_matrix(body, order, depth=0):
    """Check one miMATRIX element before scipy reads it (recursing into cells and structs).

    Every data element's type must be one scipy reads for its place, and the matrix must hold
    all the elements scipy will read for its class (a missing one makes scipy read the next
    variable's tag as data).
    """
    if depth > _MAT5_MAX_DEPTH:
        raise _CorruptMat("matrices nested too deeply")
    elements = _mat5_subelements(body, order)
    if not elements:
        return  # an empty matrix
    if len(elements) < 3:
        raise _CorruptMat("a matrix without dimensions or name")
    mdtype, flags = elements[0]
    if mdtype not in (5, 6) or len(flags) < 4:  # array flags: miUINT32 (or miINT32)
        raise _CorruptMat(f"array flags of type {mdtype} ({len(flags)} bytes)")
    word = struct.unpack_from(order + "I", flags)[0]
    mclass, is_complex = word & 0xFF, bool(word & 0x800)
    for mdtype, _ in elements[1:3]:  # dimensions (miINT32) and name (miINT8 / miUTF8)
        if mdtype not in _MI_NUMERIC and mdtype not in _MI_UTF:
            raise _CorruptMat(f"header element of type {mdtype}")
    dims = _mat5_int32s(elements[1][1], order)
    if any(d < 0 for d in dims):
        raise _CorruptMat(f"negative dimensions {dims}")
    data = elements[3:]
    if mclass in _MX_NUMERIC or mclass == _MX_CHAR:
        allowed = _MI_NUMERIC | _MI_UTF if mclass == _MX_CHAR else _MI_NUMERIC
        bad = [t for t, _ in data if t not in allowed]
        if bad:
            raise _CorruptMat(f"data element of type {bad[0]} in a matrix of class {mclass}")
        needed = (3 if mclass == 5 else 1) + is_complex
        if len(data) < needed:
            raise _CorruptMat(
                f"a matrix of class {mclass} has {len(data)} data elements, needs {needed}"
            )
    elif mclass in _MX_CONTAINERS:
        n_cells = math.prod(dims) if dims else 0
        n_fields = 1
        if mclass == 3:  # object: class name first, then as a struct
            data = data[1:]
        if mclass in (2, 3):
            lengths = _mat5_int32s(data[0][1], order) if len(data) >= 2 else []
            if not lengths or lengths[0] <= 0:
                raise _CorruptMat("a struct without a valid field-name length")
            n_fields = len(data[1][1]) // lengths[0]
            data = data[2:]
        matrices = [payload for t, payload in data if t == _MI_MATRIX]
        if len(matrices) != len(data):
            raise _CorruptMat("a cell or struct element that is not a matrix")
        if len(matrices) < n_cells * n_fields:
            raise _CorruptMat(
                f"a cell or struct of {n_cells * n_fields} values holds {len(matrices)}"
            )
        for payload in matrices:
            _check_mat5_matrix(payload, order, depth + 1)


def _check_mat5_elements(content):
    """Reject a MAT-file v5 whose data-element tags are corrupt, before scipy reads it.

    Files of other versions (v4: first bytes zero; v7.3: HDF5) are left to scipy, whose
    readers for them are in Python. Raises ``_CorruptMat`` (a ``ValueError``).
    """
    if len(content) < 128 or 0 in content[:4]:
        return  # MATLAB v4 (or too short to be v5: scipy reports it)
    version = content[124:128]
    major = version[int(version[2] == ord("I"))]
    if major != 1:
        return  # v7.3 (HDF5) or not a MAT-file: scipy reports it
    order = "<" if content[126:128] == b"IM" else ">"
    pos = 128
    n = len(content)
    while pos < n:
        if n - pos < 8:
            raise _CorruptMat("the last data element is truncated")
        mdtype, byte_count = struct.unpack_from(order + "II", content, pos)
        if byte_count > n - pos - 8:
            raise _CorruptMat(
                f"a variable claims {byte_count} bytes, {n - pos - 8} remain (truncated file?)"
            )
        body = content[pos + 8 : pos + 8 + byte_count]
        pos += 8 + byte_count
        if mdtype == _MI_COMPRESSED:
            try:
                body = zlib.decompress(body)
            except zlib.error as exc:
                raise _CorruptMat(f"compressed variable: {exc}") from None
            if len(body) < 8:
                raise _CorruptMat("compressed variable too short")
            mdtype, byte_count = struct.unpack_from(order + "II", body, 0)
            if byte_count > len(body) - 8:
                raise _CorruptMat("compressed variable truncated")
            body = body[8 : 8 + byte_count]
        if mdtype != _MI_MATRIX:
            raise _CorruptMat(f"expected a matrix (type 14), found a data element of type {mdtype}")
        _check_mat5_matrix(body, order)


def load_andrews_mat(path, *, return_bag_names=False):
    """Load an MI data set from S. Andrews' MATLAB files (e.g. ``trec_1_200x200_matlab.mat``).

    The file holds three variables, read with :func:`scipy.io.loadmat`:

    - ``features``: instances x dims (sparse in the released files, even for Elephant);
    - ``labels``: 1 x instances, ``+1``/``-1`` (stored sparse in the released files);
    - ``bag_ids``: 1 x instances, the bag of every instance (integers ``1..n_bags``).

    Instances are grouped by bag id; bags are returned in order of first appearance of their
    id, and the instances of a bag keep their file order.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.mat`` file (MATLAB v4-v7.2; v7.3/HDF5 files are not supported by scipy).
    return_bag_names : bool, default=False
        Also return the bag ids as names (``"1"``, ``"2"``, ...: integral ids without a decimal
        point).

    Returns
    -------
    bags : list of csr_matrix or list of ndarray
        One float64 matrix per bag: CSR (sorted indices, no explicit zeros) if ``features`` is
        sparse in the file, dense arrays otherwise.
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones (as :func:`load_mill` returns them).
    bag_names : list of str
        Only if ``return_bag_names``: the bag id of every bag, in the order of ``bags``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file cannot be read as a MATLAB file (this includes corrupt files: data
        elements of an undefined type or a size beyond the file, missing elements, corrupt
        sparse indices; scipy's compiled reader would crash on some of them, so they are
        checked first), a variable is missing, not real and numeric (complex, text, cell) or
        has a length that does not match the number of rows of ``features``, ``features`` has
        no rows or no columns, a label is not one of -1, 0, +1, or a value is NaN or infinite.

    Notes
    -----
    In the released files (TST1 ``trec_1_200x200_matlab.mat``, Elephant
    ``elephant_100x100_matlab.mat``) ``labels`` is the bag label copied onto every instance:
    all instances of a bag carry the same label, the bag ids are ``1..n_bags`` in
    non-decreasing order, positive bags first. The bag label is taken as positive if *any*
    of its instances is labelled ``+1`` (the MI assumption), which for these files is the same
    as the common label. A label of ``0`` is read as negative. The bags, their order and their
    labels coincide with the MILL text files of the same sets (``tst1.data``,
    ``elephant.data``).
    """
    from scipy.io import loadmat

    name = _display_name(path)
    with open(os.fspath(path), "rb") as fh:
        content = fh.read()
    try:
        _check_mat5_elements(content)
        mat = loadmat(io.BytesIO(content))
    except Exception as exc:  # scipy raises ValueError, MatReadError, NotImplementedError..
        raise ValueError(f"{name}: cannot be read as a MATLAB .mat file: {exc}") from exc

    missing = [key for key in ("features", "labels", "bag_ids") if key not in mat]
    if missing:
        found = sorted(key for key in mat if not key.startswith("__"))
        raise ValueError(
            f"{name}: missing MATLAB variable(s) {missing}; expected 'features', 'labels' and "
            f"'bag_ids' (found {found})"
        )

    features = mat["features"]
    if sp.issparse(features):
        if features.ndim != 2:
            raise ValueError(f"{name}: 'features' must be a 2-D matrix")
        _check_real_dtype(name, "features", features.dtype)
        _check_sparse_structure(name, "features", features)
        try:
            X = sp.csr_matrix(features, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: 'features' must be numeric, got dtype {features.dtype}"
            ) from None
        X.sum_duplicates()
        X.sort_indices()
        values = X.data
    else:
        features = np.asarray(features)
        if features.ndim != 2:
            raise ValueError(
                f"{name}: 'features' must be a 2-D matrix, got shape {features.shape}"
            )
        _check_real_dtype(name, "features", features.dtype)
        try:
            X = np.asarray(features, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: 'features' must be numeric, got dtype {features.dtype}"
            ) from None
        values = X
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: 'features' contains NaN or infinite values")
    n_instances = X.shape[0]
    if n_instances == 0:
        raise ValueError(f"{name}: 'features' has no rows (instances)")
    if X.shape[1] == 0:
        raise ValueError(f"{name}: 'features' has no columns (feature dimensions)")

    labels = _mat_vector(name, mat, "labels", n_instances)
    bag_ids = _mat_vector(name, mat, "bag_ids", n_instances)
    if not np.all(np.isin(labels, (-1.0, 0.0, 1.0))):
        bad = labels[~np.isin(labels, (-1.0, 0.0, 1.0))][0]
        raise ValueError(f"{name}: 'labels' must be +1/-1 (or 1/0), found {float(bad):g}")

    _, first, inverse = np.unique(bag_ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    bag_of = rank[inverse.ravel()]
    perm = np.argsort(bag_of, kind="stable")
    counts = np.bincount(bag_of, minlength=order.size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    y = (np.maximum.reduceat(labels[perm], starts) > 0).astype(np.int64)

    if sp.issparse(X):
        X = X[perm]
        X.eliminate_zeros()
        bags = _split_sparse(X, list(starts))
    else:
        bags = _split_dense(X[perm], list(starts))
    if not return_bag_names:
        return bags, y
    ids = bag_ids[perm][starts]
    return bags, y, [str(int(v)) if v.is_integer() else repr(float(v)) for v in ids]


_CSV_BAG_COLUMNS = frozenset({"bag", "bags", "bag_id", "bagid", "bag id", "bag-id", "bag_name", "bag name"})
_CSV_LABEL_COLUMNS = frozenset({"label", "labels", "bag_label", "bag label", "y", "class", "target"})


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
    if len(fields) < 3 or any(_is_number(f) for f in fields[2:]) or _parse_int_label(fields[0]) is not None:
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
        Only if ``return_bag_names``: the bag ids, in the order of ``bags``.

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
                name, lineno, f"the label {fields[label_col]!r} (field {label_col + 1}) is not an integer"
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
                raise _line_error(name, lineno, f"feature {j + 1} (field {j + 3}): {value!r} is not a number")
        rests.append(",".join(features))

    X = _parse_dense(name, linenos, rests, None, first_field=3)
    perm = np.argsort(bag_of, kind="stable")
    counts = np.bincount(bag_of, minlength=len(bag_labels))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist()
    return _result(_split_dense(X[perm], starts), bag_labels, list(bag_index), return_bag_names)


def load_musk1(*, return_bag_names=False):
    """Load the copy of MUSK1 bundled with milsvm.

    The package ships the UCI file ``clean1.data`` (with ``clean1.names`` and a README giving
    its origin) in ``milsvm/data/musk1``; this reads it with :func:`load_musk_uci`.

    Parameters
    ----------
    return_bag_names : bool, default=False
        Also return the molecule names (``"MUSK-188"``, ...).

    Returns
    -------
    bags : list of ndarray of shape (n_conformations_i, 166)
        92 bags (molecules), 476 instances (conformations) in all, float64.
    y : ndarray of shape (92,), dtype int64
        1 for the 47 musks, 0 for the 45 non-musks.
    bag_names : list of str
        Only if ``return_bag_names``: the molecule names, in the order of ``bags``.

    Notes
    -----
    MUSK data set of the UCI Machine Learning Repository, created by Arris Pharmaceutical and
    donated by T. Dietterich. Cite T. G. Dietterich, R. H. Lathrop, T. Lozano-Perez, *Solving
    the multiple instance problem with axis-parallel rectangles*, Artificial Intelligence 89,
    1997.
    """
    resource = resources.files(__package__ or "milsvm") / "data" / "musk1" / "clean1.data"
    with resources.as_file(resource) as file_path:
        return load_musk_uci(file_path, return_bag_names=return_bag_names)


# --------------------------------------------------------------------------------------------
# Generator helpers
# --------------------------------------------------------------------------------------------


def _check_random_state(random_state):
    """Return a RandomState or Generator for ``random_state`` (None, int or either object)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    from sklearn.utils import check_random_state

    return check_random_state(random_state)


def _integers(rng, low, high, size=None):
    """Random integers in ``[low, high)`` from a RandomState or a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng.integers(low, high, size=size)
    return rng.randint(low, high, size=size)


def _check_int(name, value, minimum):
    """Check that ``value`` is an integer >= ``minimum`` and return it as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_real(name, value, low=None, high=None, low_open=True, high_open=False):
    """Check that ``value`` is a finite real number in the given interval; return a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    if high is not None and (value > high or (high_open and value == high)):
        bound = f"< {high}" if high_open else f"<= {high}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return value


def _check_bag_size(bag_size):
    """Validate ``bag_size`` (an int or an inclusive ``(min, max)`` pair) -> ``(lo, hi)``."""
    if isinstance(bag_size, numbers.Integral) and not isinstance(bag_size, bool):
        lo = hi = bag_size
    else:
        try:
            lo, hi = bag_size
        except (TypeError, ValueError):
            raise ValueError(
                f"bag_size must be an integer or a (min, max) pair of integers, got {bag_size!r}"
            ) from None
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(
                    f"bag_size must be an integer or a (min, max) pair of integers, got "
                    f"{bag_size!r}"
                )
    lo, hi = int(lo), int(hi)
    if lo < 1:
        raise ValueError(f"bag_size: bags need at least 1 instance, got {bag_size!r}")
    if hi < lo:
        raise ValueError(f"bag_size: (min, max) needs min <= max, got {bag_size!r}")
    return lo, hi


def _balanced_labels(n_bags, n_classes, rng):
    """Labels ``0..n_classes-1`` in random order, class counts differing by at most one.

    When ``n_bags`` is not a multiple of ``n_classes`` the lower classes get the extra bags
    (for binary data: ``n_bags // 2`` positive bags).
    """
    counts = [n_bags // n_classes + (c < n_bags % n_classes) for c in range(n_classes)]
    y = np.repeat(np.arange(n_classes, dtype=np.int64), counts)
    return y[rng.permutation(n_bags)]


def _n_witnesses(rng, n):
    """Number of 'positive' instances of a bag of ``n``: uniform on ``1..max(1, n // 2)``."""
    return int(_integers(rng, 1, max(1, n // 2) + 1))


def _finish(bags, y, instance_labels, return_instance_labels):
    if return_instance_labels:
        return bags, y, instance_labels
    return bags, y


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------


def make_center_ring_bags(
    n_bags=100,
    bag_size=(5, 10),
    radius=2.0,
    noise=0.15,
    random_state=None,
    return_instance_labels=False,
):
    """Generate the binary 2-D "centre and ring" MI data of Fu et al. (2013).

    Fu, Lu, Ting and Zhang (IEEE TNNLS 24(9), 2013, section V-A, Fig. 2(a); Fig. 1(a) of the
    ECML 2011 version) describe it as: "each positive bag contains at least one instance in
    the center, whereas each negative bag contains only instances on the surrounding circle".
    The paper gives no sizes or spreads; this generator fills them in as follows:

    - half the bags are positive (``n_bags // 2``; the extra bag of an odd ``n_bags`` is
      negative), in random order;
    - the size of each bag is uniform on ``bag_size[0]..bag_size[1]``;
    - a ring instance is ``radius * (cos t, sin t) + e`` with ``t`` uniform on ``[0, 2 pi)``
      and ``e ~ N(0, noise^2 I)``;
    - a centre instance is ``e ~ N(0, noise^2 I)``;
    - a negative bag has ring instances only; a positive bag of ``n`` instances has ``k``
      centre instances, ``k`` uniform on ``1..max(1, n // 2)`` ("at least one", and at most
      half the bag so that positive bags are still mostly ring), the rest on the ring; the
      rows of a bag are shuffled.

    A single expansion vector at the origin separates the classes, as in the paper.

    Parameters
    ----------
    n_bags : int, default=100
        Number of bags, >= 2.
    bag_size : int or (int, int), default=(5, 10)
        Bag size, or the inclusive range it is drawn from uniformly; sizes >= 1.
    radius : float, default=2.0
        Radius of the ring, > 0.
    noise : float, default=0.15
        Standard deviation of the Gaussian noise of every coordinate, >= 0. The classes are
        separated as long as ``noise`` is well below ``radius / 2``.
    random_state : int, RandomState, Generator or None, default=None
        Seed or random generator (see :func:`sklearn.utils.check_random_state`; a
        ``numpy.random.Generator`` is used as given).
    return_instance_labels : bool, default=False
        Also return the instance labels.

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, 2)
        The bags, float64.
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 1 for centre instances, 0 for ring instances.

    Raises
    ------
    ValueError
        If an argument is invalid (``n_bags < 2``, a bad ``bag_size``, ``radius <= 0``,
        ``noise < 0``, non-finite values).

    Examples
    --------
    >>> bags, y = make_center_ring_bags(n_bags=10, random_state=0)
    >>> len(bags), int(y.sum()), bags[0].shape[1]
    (10, 5, 2)
    """
    n_bags = _check_int("n_bags", n_bags, 2)
    lo, hi = _check_bag_size(bag_size)
    radius = _check_real("radius", radius, low=0.0)
    noise = _check_real("noise", noise, low=0.0, low_open=False)
    rng = _check_random_state(random_state)

    y = _balanced_labels(n_bags, 2, rng)
    bags = []
    instance_labels = []
    for label in y:
        n = int(_integers(rng, lo, hi + 1))
        k = _n_witnesses(rng, n) if label == 1 else 0
        centre = rng.normal(0.0, noise, size=(k, 2))
        theta = rng.uniform(0.0, 2.0 * np.pi, size=n - k)
        ring = radius * np.column_stack((np.cos(theta), np.sin(theta)))
        ring += rng.normal(0.0, noise, size=(n - k, 2))
        X = np.vstack((centre, ring))
        z = np.concatenate((np.ones(k, dtype=np.int64), np.zeros(n - k, dtype=np.int64)))
        p = rng.permutation(n)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)


# Means of the four Gaussians of make_four_gaussians_bags (mu_1 .. mu_4 of the paper).
_FOUR_GAUSSIANS_MEANS = np.array([[-2.0, 2.0], [2.0, 2.0], [2.0, -2.0], [-2.0, -2.0]])
_FOUR_GAUSSIANS_MEANS.setflags(write=False)
_FOUR_GAUSSIANS_SIGMA = 0.25


def make_four_gaussians_bags(
    n_bags=150, bag_size=(5, 10), random_state=None, return_instance_labels=False
):
    """Generate the 3-class 2-D MI data of Fu et al. (2013), Fig. 2(b).

    Instances come from four Gaussians ``N(mu_i, sigma^2 I)`` with ``mu_1 = (-2, 2)``,
    ``mu_2 = (2, 2)``, ``mu_3 = (2, -2)``, ``mu_4 = (-2, -2)`` and ``sigma = 0.25``. The paper
    (TNNLS 2013, section V-A) says: "Bags from class 3 contain only instances randomly drawn
    from N(mu_2, sigma^2) and N(mu_4, sigma^2), whereas each bag from class 1 contains at least
    one instance drawn from N(mu_1, sigma^2) and each bag from class 2 contains at least one
    instance drawn from N(mu_3, sigma^2)", and that two expansion vectors at ``mu_1`` and
    ``mu_3`` suffice to discriminate. So the two Gaussians ``mu_2`` and ``mu_4`` (the
    anti-diagonal) are the shared *background*, and ``mu_1`` / ``mu_3`` are the concepts of
    classes 1 and 2. Choices made where the paper is silent:

    - paper classes 1, 2, 3 are labels ``0, 1, 2``; the classes are balanced (counts differ
      by at most one) and in random order;
    - the size of each bag is uniform on ``bag_size[0]..bag_size[1]``;
    - a bag of class 0 (resp. 1) of ``n`` instances has ``k`` instances from ``mu_1`` (resp.
      ``mu_3``), ``k`` uniform on ``1..max(1, n // 2)``; the other instances, and all the
      instances of class-2 bags, are background: each drawn from ``mu_2`` or ``mu_4`` with
      probability 1/2. A bag never mixes the two concepts (the paper's class 3 would otherwise
      not be defined by the *absence* of both), and the rows of a bag are shuffled.

    Parameters
    ----------
    n_bags : int, default=150
        Number of bags, >= 3.
    bag_size : int or (int, int), default=(5, 10)
        Bag size, or the inclusive range it is drawn from uniformly; sizes >= 1.
    random_state : int, RandomState, Generator or None, default=None
        Seed or random generator (see :func:`sklearn.utils.check_random_state`; a
        ``numpy.random.Generator`` is used as given).
    return_instance_labels : bool, default=False
        Also return the instance labels.

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, 2)
        The bags, float64.
    y : ndarray of shape (n_bags,), dtype int64
        The class of every bag, in {0, 1, 2}.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 0 for instances from ``mu_1``, 1 for instances
        from ``mu_3``, 2 for background instances (``mu_2`` or ``mu_4``). A bag's label is the
        non-background instance label it contains, or 2 if it has none.

    Raises
    ------
    ValueError
        If an argument is invalid (``n_bags < 3``, a bad ``bag_size``).

    Examples
    --------
    >>> bags, y = make_four_gaussians_bags(n_bags=9, random_state=0)
    >>> sorted(np.bincount(y).tolist())
    [3, 3, 3]
    """
    n_bags = _check_int("n_bags", n_bags, 3)
    lo, hi = _check_bag_size(bag_size)
    rng = _check_random_state(random_state)

    concept = {0: 0, 1: 2}  # class -> index of its Gaussian in _FOUR_GAUSSIANS_MEANS
    y = _balanced_labels(n_bags, 3, rng)
    bags = []
    instance_labels = []
    for label in y:
        n = int(_integers(rng, lo, hi + 1))
        k = _n_witnesses(rng, n) if label != 2 else 0
        component = np.empty(n, dtype=np.int64)
        z = np.full(n, 2, dtype=np.int64)
        if k:
            component[:k] = concept[int(label)]
            z[:k] = label
        component[k:] = 1 + 2 * _integers(rng, 0, 2, size=n - k)  # mu_2 or mu_4
        X = _FOUR_GAUSSIANS_MEANS[component] + rng.normal(
            0.0, _FOUR_GAUSSIANS_SIGMA, size=(n, 2)
        )
        p = rng.permutation(n)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)


# Half-width of the square [-a, a]^2 of make_annealing_toy.
_ANNEALING_TOY_HALF_WIDTH = 3.0
# Radius of the positive disc (centred at the origin) of make_annealing_toy.
_ANNEALING_TOY_RADIUS = 1.5


def _sample_disc(rng, n, radius):
    """``n`` points uniform in the disc of the given radius around the origin."""
    r = radius * np.sqrt(rng.uniform(0.0, 1.0, size=n))
    t = rng.uniform(0.0, 2.0 * np.pi, size=n)
    return np.column_stack((r * np.cos(t), r * np.sin(t)))


def _sample_square_minus_disc(rng, n, half_width, radius):
    """``n`` points uniform in the square ``[-a, a]^2`` outside the disc (rejection)."""
    out = np.empty((0, 2))
    while out.shape[0] < n:
        m = 2 * (n - out.shape[0]) + 4
        cand = rng.uniform(-half_width, half_width, size=(m, 2))
        cand = cand[np.einsum("ij,ij->i", cand, cand) > radius * radius]
        out = np.vstack((out, cand))
    return out[:n]


def make_annealing_toy(
    fraction_positive=0.5, n_bags=100, random_state=None, return_instance_labels=False
):
    """Generate the 2-D toy MI data of Gehler & Chapelle (AISTATS 2007), section 5.

    The paper: "The label Y_i and the size m_i are uniformly sampled from {-1, 1} and
    {1, 2, ..., 10}. For a negative labeled bag we sample m_i patterns uniformly from the black
    region (negative class) [...]. A positive labeled bag consists of [f m_i] points sampled
    uniformly from the white region (positive class) and the remaining |(1 - f) m_i| points
    from the negative class." They vary ``f = 0.1, ..., 1`` and use an RBF kernel of width 1.

    The two regions are only shown in the paper's Figure 1, which the text does not describe;
    this generator uses, in the square ``[-3, 3]^2``, the disc of radius 1.5 around the origin
    as the positive (white) region and the rest of the square as the negative (black) region
    (about 20% / 80% of the area): a non-linear boundary on the scale of the RBF width 1.
    Other choices:

    - the bag size ``m_i`` is uniform on ``1..10``, as in the paper;
    - a positive bag has ``ceil(f m_i)`` positive instances (at least 1; the product is
      rounded down first when it is within 1e-9 of an integer, so ``f = 0.3, m = 10`` gives 3)
      and ``m_i - ceil(f m_i)`` negative ones, which sum to ``m_i`` as the paper's brackets
      must; the rows of a bag are shuffled;
    - instead of a fair coin per bag, exactly ``n_bags // 2`` bags are positive, in random
      order (the expected proportion of the paper, without its sampling variance).

    Parameters
    ----------
    fraction_positive : float, default=0.5
        Fraction ``f`` of positive instances in a positive bag, in (0, 1].
    n_bags : int, default=100
        Number of bags, >= 2 (the paper uses 30 training and 100 test bags).
    random_state : int, RandomState, Generator or None, default=None
        Seed or random generator (see :func:`sklearn.utils.check_random_state`; a
        ``numpy.random.Generator`` is used as given).
    return_instance_labels : bool, default=False
        Also return the instance labels.

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, 2)
        The bags, float64, 1 to 10 instances each.
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 1 for instances of the positive region (inside the
        disc), 0 for the others.

    Raises
    ------
    ValueError
        If ``fraction_positive`` is not in (0, 1] or ``n_bags < 2``.

    Examples
    --------
    >>> bags, y = make_annealing_toy(0.2, n_bags=30, random_state=0)
    >>> len(bags), int(y.sum())
    (30, 15)
    """
    fraction_positive = _check_real(
        "fraction_positive", fraction_positive, low=0.0, high=1.0, low_open=True
    )
    n_bags = _check_int("n_bags", n_bags, 2)
    rng = _check_random_state(random_state)

    a, r = _ANNEALING_TOY_HALF_WIDTH, _ANNEALING_TOY_RADIUS
    y = _balanced_labels(n_bags, 2, rng)
    bags = []
    instance_labels = []
    for label in y:
        m = int(_integers(rng, 1, 11))
        if label == 1:
            k = max(1, min(m, math.ceil(fraction_positive * m - 1e-9)))
        else:
            k = 0
        X = np.vstack((_sample_disc(rng, k, r), _sample_square_minus_disc(rng, m - k, a, r)))
        z = np.concatenate((np.ones(k, dtype=np.int64), np.zeros(m - k, dtype=np.int64)))
        p = rng.permutation(m)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)
