"""Readers of the UCI MUSK files (``clean1.data`` / ``clean2.data``) and of the bundled MUSK1."""

from __future__ import annotations

from importlib import resources

from ._text import (
    _line_error,
    _parse_dense,
    _read_bag_lines,
    _result,
    _split_dense,
    _strict_float,
)

__all__ = ["load_musk_uci", "load_musk1"]


def _split_uci_line(name, lineno, line):
    """``(molecule_name, class, features)`` of one line of a UCI MUSK file."""
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
    return bag, int(value), features.strip()


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
    name, linenos, rests, starts, bag_labels, names = _read_bag_lines(path, _split_uci_line)
    X = _parse_dense(name, linenos, rests, None, first_field=3)
    return _result(_split_dense(X, starts), bag_labels, names, return_bag_names)


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
    # The data live in milsvm/data/musk1, beside this subpackage (milsvm/datasets).
    resource = resources.files("milsvm") / "data" / "musk1" / "clean1.data"
    with resources.as_file(resource) as file_path:
        return load_musk_uci(file_path, return_bag_names=return_bag_names)
