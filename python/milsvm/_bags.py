"""Bags of instances: conversion and validation of user input.

A multiple-instance data set is a sequence of bags, each a 2-D ``(n_instances, n_features)``
array. :class:`Bags` stores them as one stacked instance matrix (dense ``ndarray`` or
``scipy.sparse.csr_matrix``) plus bag offsets, the layout the Rust core works on, so that large
sparse data needs no per-bag Python objects.

The dtype rule (the same as the data readers'): float32 and float64 arrays are kept as they
are; float16 becomes float32 (exact); integers and booleans become float64 (exact up to 2**53);
sparse matrices are stored as float64. Bags of mixed float32 and float64 arrays are stacked as
float64. float32 data stays float32 all the way through the core (a C-contiguous float32 matrix
is read in place, never copied): every score equals, bit for bit, the score of the same values
given as float64, with half the memory.
"""

from __future__ import annotations

import numbers
from itertools import accumulate

import numpy as np
import scipy.sparse as sp

__all__ = ["Bags", "as_bags"]


class Bags:
    """Stacked instances with bag offsets.

    Build it with :meth:`from_instances` (or :func:`as_bags` from a list of per-bag arrays).
    It behaves as a sequence of bags: ``len(bags)``, ``bags[i]`` (one bag's instances) and
    ``bags[index_array]`` (a new :class:`Bags`), so scikit-learn's cross-validation can split it.

    Bags that :func:`as_bags` takes from a list of dense arrays of one dtype, not stored one
    after the other, keep that list (``parts``) and are stacked into ``X`` when it is first
    read: an estimator that needs no stacked copy (STK reads each bag where it lies) and the
    subsets ``bags[index_array]`` make none.

    Attributes
    ----------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_instances, n_features)
        All instances, bag after bag.
    bag_ptr : ndarray of int64, shape (n_bags + 1,)
        Bag ``i`` holds rows ``bag_ptr[i]:bag_ptr[i + 1]`` of ``X``.
    parts : list of ndarray or None
        The bags as separate arrays, when they were given so (see above), else None.
    """

    __slots__ = ("_X", "bag_ptr", "parts")

    def __init__(self, X, bag_ptr):
        self._X = X
        self.bag_ptr = bag_ptr
        self.parts = None

    @classmethod
    def _of_parts(cls, parts, bag_ptr):
        """Bags kept as the list ``parts`` of dense arrays of one dtype (each 2-D, with the
        same number of columns, ``bag_ptr`` their offsets), stacked when ``X`` is first read."""
        out = cls.__new__(cls)
        out._X, out.bag_ptr, out.parts = None, bag_ptr, parts
        return out

    @property
    def X(self):
        """All instances, bag after bag (stacked from ``parts`` when first read)."""
        if self._X is None:
            self._X = np.concatenate(self.parts, axis=0)
        return self._X

    @classmethod
    def from_instances(cls, X, bag_sizes):
        """Bags from stacked instances and the number of instances of each bag.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_instances, n_features)
            Instances, bag after bag. Sparse input is kept sparse (CSR).
        bag_sizes : array-like of int, shape (n_bags,)
            Instances per bag (each >= 1), summing to ``n_instances``.
        """
        X = _as_matrix(X, "X")
        sizes = np.asarray(bag_sizes)
        if sizes.ndim != 1 or sizes.size == 0:
            raise ValueError("bag_sizes must be a non-empty 1-D sequence of integers")
        if not np.issubdtype(sizes.dtype, np.integer):
            if np.issubdtype(sizes.dtype, np.floating) and np.all(sizes == np.round(sizes)):
                sizes = sizes.astype(np.int64)
            else:
                raise TypeError(f"bag_sizes must hold integers, got dtype {sizes.dtype}")
        if np.any(sizes < 1):
            raise ValueError(
                f"bag {int(np.argmax(sizes < 1))} is empty: every bag needs at least one instance"
            )
        if sizes.sum() != X.shape[0]:
            raise ValueError(
                f"bag_sizes sum to {int(sizes.sum())}, but X has {X.shape[0]} instances"
            )
        bag_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return cls(X, bag_ptr)

    @property
    def n_features(self):
        """Number of features of an instance."""
        return self.parts[0].shape[1] if self._X is None else self._X.shape[1]

    @property
    def n_instances(self):
        """Total number of instances."""
        return int(self.bag_ptr[-1]) if self._X is None else self._X.shape[0]

    @property
    def bag_sizes(self):
        """Instances per bag."""
        return np.diff(self.bag_ptr)

    @property
    def is_sparse(self):
        """Whether the instances are stored as a sparse matrix."""
        return self._X is not None and sp.issparse(self._X)

    def __len__(self):
        return len(self.bag_ptr) - 1

    def __getitem__(self, key):
        if isinstance(key, numbers.Integral):
            i = int(key)
            if i < 0:
                i += len(self)
            if not 0 <= i < len(self):
                raise IndexError(f"bag index {key} out of range for {len(self)} bags")
            if self._X is None:
                return self.parts[i]
            return self.X[self.bag_ptr[i] : self.bag_ptr[i + 1]]
        idx = np.arange(len(self))[key]
        ptr = np.concatenate([[0], np.cumsum(self.bag_sizes[idx])]).astype(np.int64)
        if self._X is None and len(idx):
            return Bags._of_parts([self.parts[i] for i in idx], ptr)
        rows = (
            np.concatenate([np.arange(self.bag_ptr[i], self.bag_ptr[i + 1]) for i in idx])
            if len(idx)
            else np.zeros(0, int)
        )
        return Bags(self.X[rows], ptr)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        kind = "sparse" if self.is_sparse else "dense"
        return (
            f"Bags(n_bags={len(self)}, n_instances={self.n_instances}, "
            f"n_features={self.n_features}, {kind})"
        )

    @property
    def dtype(self):
        """The dtype of the stored instance values (float64 or float32)."""
        return self.parts[0].dtype if self._X is None else self._X.dtype

    def core_instances(self):
        """The instances in the form ``milsvm._core`` takes: a C-contiguous float64 or float32
        array (one that already is C-contiguous is passed as it is: the core reads it in place,
        without a copy), or ``(data, indices, indptr, n_cols)`` for CSR."""
        if self.is_sparse:
            X = self.X
            return (
                np.ascontiguousarray(X.data, dtype=np.float64),
                np.ascontiguousarray(X.indices, dtype=np.int64),
                np.ascontiguousarray(X.indptr, dtype=np.int64),
                int(X.shape[1]),
            )
        if self.X.dtype == _F32:
            return np.ascontiguousarray(self.X)
        return np.ascontiguousarray(self.X, dtype=np.float64)


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
#: Values per block of the finiteness check (bounds its temporary to a few MB).
_FINITE_BLOCK = 1 << 20


def _all_finite(arr):
    """Whether a dense array holds no NaN or infinity, checked in row blocks so that the
    temporary stays small whatever the size of ``arr``."""
    if arr.size <= _FINITE_BLOCK or arr.ndim != 2:
        return bool(np.isfinite(arr).all())
    step = max(1, _FINITE_BLOCK // max(arr.shape[1], 1))
    return all(np.isfinite(arr[i : i + step]).all() for i in range(0, arr.shape[0], step))


def _as_matrix(A, what, check_finite=True):
    """A 2-D dense array (float64 or float32, by the module's dtype rule) or a float64 CSR
    matrix, with clear errors (``check_finite=False`` leaves the finiteness check to the core,
    which makes it while it reads the values). A float32 or float64 ndarray is returned as it is
    (any layout; :meth:`Bags.core_instances` makes it C-contiguous)."""
    if isinstance(A, np.ndarray) and A.dtype in (_F64, _F32) and A.ndim == 2:
        A = np.asarray(A)  # a subclass (np.memmap, np.matrix) as a plain view, no copy
        if check_finite and not _all_finite(A):
            raise ValueError(f"{what} has a non-finite value (NaN or infinity)")
        return A
    if sp.issparse(A):
        if A.ndim != 2:
            raise ValueError(f"{what} must be 2-D")
        A = sp.csr_matrix(A)
        if not np.issubdtype(A.dtype, np.number) or np.issubdtype(A.dtype, np.complexfloating):
            raise TypeError(f"{what} must hold real numbers, got dtype {A.dtype}")
        A = A.astype(np.float64)
        A.sum_duplicates()
        if not np.all(np.isfinite(A.data)):
            raise ValueError(f"{what} has a non-finite value (NaN or infinity)")
        return A
    if isinstance(A, (str, bytes)) or A is None:
        raise TypeError(f"{what} must be a 2-D array of numbers, got {type(A).__name__}")
    try:
        arr = np.asarray(A)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"{what} is not a rectangular array: {e}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{what} must hold real numbers, got dtype {arr.dtype}") from None
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{what} must hold real numbers, got complex values")
    if arr.ndim != 2:
        hint = " (use x.reshape(1, -1) for a bag of one instance)" if arr.ndim == 1 else ""
        raise ValueError(f"{what} must be 2-D (instances x features), got {arr.ndim}-D{hint}")
    dtype = _F32 if arr.dtype in (_F32, np.dtype(np.float16)) else _F64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if check_finite and not _all_finite(arr):
        raise ValueError(f"{what} has a non-finite value (NaN or infinity)")
    return arr


def _plain_matrices(bags):
    """``bags`` as a list when every bag is already what :func:`_as_matrix` returns unchanged
    (a plain 2-D ndarray, all of one dtype, float64 or float32), else None: the common case,
    without a call per bag."""
    dtype = getattr(bags[0], "dtype", None)
    if dtype is not _F64 and dtype is not _F32:
        return None
    if all(type(b) is np.ndarray and b.dtype is dtype and b.ndim == 2 for b in bags):
        return list(bags)
    return None


def _consecutive_rows(mats):
    """The one matrix whose consecutive row blocks the dense arrays ``mats`` are, as a view
    without a copy (``np.split(X, offsets)`` of a C-contiguous ``X``, or the bags
    :func:`milsvm.datasets.make_embedding_bags` returns), else None."""
    first = mats[0]
    dtype, d = first.dtype, first.shape[1]
    # the first gap ends the search (bags made one by one have one after the first bag)
    address = [mats[0].__array_interface__["data"][0]]
    for prev, m in zip(mats, mats[1:]):
        address.append(m.__array_interface__["data"][0])
        if address[-2] + prev.nbytes != address[-1]:
            return None
    if not all(m.dtype == dtype and m.flags.c_contiguous and m.shape[1] == d for m in mats):
        return None
    root = first
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous:
        return None
    start = (address[0] - root.__array_interface__["data"][0]) // dtype.itemsize
    n = sum(m.shape[0] for m in mats)
    flat = root.reshape(-1)
    if start < 0 or start + n * d > flat.size or not np.shares_memory(flat[:1], root):
        return None
    view = flat[start : start + n * d].reshape(n, d)
    return view if view.__array_interface__["data"][0] == address[0] else None


def as_bags(bags, *, n_features=None, check_finite=True):
    """Validate bags and return them as :class:`Bags`.

    Parameters
    ----------
    bags : Bags or sequence of array-like / scipy sparse matrices
        One 2-D ``(n_instances, n_features)`` matrix per bag. If any bag is sparse, all are
        stored sparse.
    n_features : int, optional
        The number of features the bags must have (prediction after fit).
    check_finite : bool, default=True
        Check dense bags for NaN and infinite values here (sparse bags always are); ``fit`` and
        prediction leave it to the core, which makes the check while it reads the values.

    Raises
    ------
    TypeError
        If ``bags`` is not a sequence of matrices, or holds non-numeric values.
    ValueError
        If there are no bags, a bag is empty or not 2-D, the bags disagree in their number
        of features, or a value is NaN or infinite.
    """
    if isinstance(bags, Bags):
        out = bags
    else:
        # a list or tuple is never sparse (issparse's first call in a process is costly: scipy's
        # abstract base classes)
        one_sparse_matrix = not isinstance(bags, (list, tuple)) and sp.issparse(bags)
        if (
            isinstance(bags, (str, bytes, dict))
            or one_sparse_matrix
            or not hasattr(bags, "__len__")
        ):
            raise TypeError(
                "bags must be a list of 2-D arrays (one per bag) or a milsvm.Bags, "
                f"got {type(bags).__name__}"
            )
        if isinstance(bags, np.ndarray) and bags.dtype != object:
            raise TypeError(
                "bags must be a list of 2-D arrays (one per bag), got a single numeric array; "
                "use milsvm.Bags.from_instances(X, bag_sizes) for stacked instances"
            )
        if len(bags) == 0:
            raise ValueError("no bags were given (empty list)")
        # dense bags are checked for NaN and infinity once, on the stacked matrix below
        mats = plain = _plain_matrices(bags)
        if mats is None:
            mats = [_as_matrix(b, f"bag {i}", False) for i, b in enumerate(bags)]
        shapes = [m.shape for m in mats]
        d = shapes[0][1]
        sizes = [n for n, _ in shapes]
        if 0 in sizes or any(d_m != d for _, d_m in shapes):
            i = next(i for i, (n, d_m) in enumerate(shapes) if n == 0 or d_m != d)
            if sizes[i] == 0:
                raise ValueError(f"bag {i} is empty: every bag needs at least one instance")
            raise ValueError(f"bag {i} has {shapes[i][1]} features, bag 0 has {d}")
        ptr = np.fromiter(accumulate(sizes, initial=0), dtype=np.int64, count=len(sizes) + 1)
        # _as_matrix gives an ndarray or a CSR matrix (plain matrices are ndarrays)
        sparse = plain is None and any(type(m) is not np.ndarray for m in mats)
        if sparse:
            X = sp.vstack([sp.csr_matrix(m) for m in mats], format="csr")
        else:
            X = mats[0] if len(mats) == 1 else _consecutive_rows(mats)
            if X is None and plain is not None and not check_finite:
                # kept as given (the core checks the values while it reads them)
                return _checked(Bags._of_parts(mats, ptr), n_features)
            if X is None:
                X = np.concatenate(mats, axis=0)
        # stacked CSR values are few and their core check does not know the bags: always here
        if (check_finite or sparse) and not _all_finite(X.data if sparse else X):
            bad = next(
                i for i, m in enumerate(mats) if not _all_finite(m.data if sp.issparse(m) else m)
            )
            raise ValueError(f"bag {bad} has a non-finite value (NaN or infinity)")
        out = Bags(X, ptr)
    return _checked(out, n_features)


def _checked(out, n_features):
    """``out`` (:class:`Bags`) after the checks every kind of input shares: at least one bag,
    at least one feature, and ``n_features`` features when given."""
    if len(out) == 0:
        raise ValueError("no bags were given (empty Bags)")
    if out.n_features == 0:
        raise ValueError("bags have no features")
    if n_features is not None and out.n_features != n_features:
        raise ValueError(
            f"bags have {out.n_features} features, but the model was fitted on {n_features}"
        )
    return out
