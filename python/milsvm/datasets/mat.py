"""Reader of S. Andrews' MATLAB files (``features``, ``labels``, ``bag_ids``).

A MAT-file v5 is checked element by element before scipy reads it (scipy's compiled reader
crashes on some corrupt tags), and sparse variables are checked before any conversion.
"""

from __future__ import annotations

import io
import math
import os
import struct
import zlib

import numpy as np
import scipy.sparse as sp

from ._text import _display_name, _split_dense, _split_sparse

__all__ = ["load_andrews_mat"]


def _check_real_dtype(name, key, dtype):
    """Reject MATLAB variables that are not real numbers (complex, text, cells, structs)."""
    if dtype.kind not in "biuf":
        kind = "complex" if dtype.kind == "c" else f"dtype {dtype}"
        raise ValueError(f"{name}: {key!r} must be real and numeric, got {kind}")


def _as_float64(name, key, value, convert):
    """``convert(value)``, or the ``ValueError`` saying that the variable ``key`` is not numeric."""
    try:
        return convert(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {key!r} must be numeric, got dtype {value.dtype}") from None


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
    value = _as_float64(name, key, value, lambda v: v.astype(np.float64)).ravel()
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
                f"a data element of type {mdtype} claims {byte_count} bytes, {n - pos - 8} remain"
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
        X = _as_float64(name, "features", features, lambda v: sp.csr_matrix(v, dtype=np.float64))
        X.sum_duplicates()
        X.sort_indices()
        values = X.data
    else:
        features = np.asarray(features)
        if features.ndim != 2:
            raise ValueError(f"{name}: 'features' must be a 2-D matrix, got shape {features.shape}")
        _check_real_dtype(name, "features", features.dtype)
        X = _as_float64(name, "features", features, lambda v: np.asarray(v, dtype=np.float64))
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
