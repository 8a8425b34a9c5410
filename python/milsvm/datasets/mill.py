"""Reader of the MILL text format (``instance_name,bag_name,label,features...``)."""

from __future__ import annotations

import numbers

from ._text import (
    _check_label_range,
    _line_error,
    _parse_dense,
    _parse_int_label,
    _parse_sparse,
    _read_bag_lines,
    _result,
    _split_dense,
    _split_sparse,
)

__all__ = ["load_mill"]


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


def _split_mill_line(name, lineno, line):
    """``(bag_name, label, features)`` of one MILL line; ``features`` is ``""`` if absent."""
    parts = line.split(",", 3)
    if len(parts) < 3:
        raise _line_error(
            name,
            lineno,
            f"too few fields ({len(parts)}); expected instance_name,bag_name,label,features...",
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
    return bag, label, parts[3].strip() if len(parts) == 4 else ""


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
    name, linenos, rests, starts, bag_labels, names = _read_bag_lines(path, _split_mill_line)

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
    return _result(bags, bag_labels, names, return_bag_names)
