"""Readers of a folder with one file per bag, the layout of embedding pipelines:

- :func:`load_npy_folder`: one ``.npy`` array per bag (``n_instances x n_features``),
  memory-mapped by default;
- :func:`load_h5_folder`: one HDF5 file per bag in CLAM's layout (the dataset ``features``,
  ``N x D``; CLAM's ``coords`` are ignored). Needs ``h5py`` (``pip install milsvm[hdf5]``).

A bag's id is its file name without the suffix (``slide_7.npy`` -> ``slide_7``); the labels come
from a CSV (:func:`milsvm.datasets.read_labels`) or a dict. Float32 features stay float32: the
dtype rule is in :mod:`milsvm.datasets.labels`.
"""

from __future__ import annotations

import os

import numpy as np

from .labels import _as_features, _as_labels, _check_widths, _pair

__all__ = ["load_npy_folder", "load_h5_folder"]


def _bag_files(folder, suffixes, what):
    """``{bag_id: path}`` of the files in ``folder`` ending in one of ``suffixes``."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder!r} is not a folder")
    files = {}
    for entry in sorted(os.listdir(folder)):
        stem, suffix = os.path.splitext(entry)
        if suffix.lower() in suffixes and os.path.isfile(os.path.join(folder, entry)):
            if stem in files:
                raise ValueError(f"{folder}: two files for bag {stem!r}: {os.path.basename(files[stem])!r} and {entry!r}")
            files[stem] = os.path.join(folder, entry)
    if not files:
        raise ValueError(f"{folder}: no {what} files ({' / '.join(suffixes)}) in the folder")
    return files


def _load_folder(folder, suffixes, what, labels, read, return_bag_names):
    """The bags of the files of ``folder`` ending in ``suffixes``, each read by ``read(path)``
    (an array, or a ``ValueError`` naming the file), paired with ``labels``."""
    files = _bag_files(folder, suffixes, what)
    ids, y = _pair(files, _as_labels(labels), os.fspath(folder))
    bags = []
    for bag_id in ids:
        path = files[bag_id]
        if os.path.getsize(path) == 0:
            raise ValueError(f"{path}: the file is empty")
        bags.append(_as_features(read(path), path))
    _check_widths(bags, [files[b] for b in ids])
    return (bags, y, list(ids)) if return_bag_names else (bags, y)


def load_npy_folder(folder, labels=None, *, mmap=True, return_bag_names=False):
    """Load a folder of ``.npy`` files, one bag per file.

    Parameters
    ----------
    folder : str or path-like
        The folder. Every ``*.npy`` file in it is a bag: a 2-D array ``n_instances x
        n_features`` (all files the same width); other files are ignored.
    labels : str, path-like, dict or None, default=None
        A CSV of ``bag_id,label`` (see :func:`read_labels`) or a dict ``{bag_id: label}``.
        Every file must have a label and every label a file. ``None``: no labels (to predict).
    mmap : bool, default=True
        Memory-map the files (``np.load(..., mmap_mode="r")``): a float32 or float64 bag is
        read from the page cache when used, never copied by the reader.
    return_bag_names : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags : list of ndarray
        In the order of the label file (sorted by bag id without labels); the files' dtype
        under the module's dtype rule (float16 -> float32; integers -> float64).
    y : ndarray or None
        The labels (int64 when every label is an integer, else the labels' text).
    bag_names : list of str
        Only if ``return_bag_names``.

    Raises
    ------
    ValueError
        Naming the file: an empty or unreadable file, a bag that is not 2-D or has no
        instances, a feature width that differs from the first file's, a file without a label
        or a label without a file.
    TypeError
        A file whose dtype is not real numbers.
    """
    def read(path):
        try:
            return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{path}: not a readable .npy array ({' '.join(str(exc).split())})") from None

    return _load_folder(folder, (".npy",), ".npy", labels, read, return_bag_names)


def load_h5_folder(folder, labels=None, *, dataset="features", return_bag_names=False):
    """Load a folder of HDF5 files in CLAM's layout, one bag per file.

    Parameters
    ----------
    folder : str or path-like
        The folder. Every ``*.h5`` / ``*.hdf5`` file in it is a bag whose instances are the
        rows of the dataset ``dataset`` (``N x D``); other datasets (CLAM's ``coords``) are
        ignored.
    labels : str, path-like, dict or None, default=None
        As in :func:`load_npy_folder`.
    dataset : str, default="features"
        The name of the features dataset in every file.
    return_bag_names : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, bag_names]
        As :func:`load_npy_folder` (each bag read into memory in the file's dtype).

    Raises
    ------
    ImportError
        ``h5py`` is not installed.
    ValueError
        Naming the file: not an HDF5 file, no dataset ``dataset`` (the message lists the
        datasets the file has), an empty dataset, a width that differs from the first file's,
        a file without a label or a label without a file.
    """
    try:
        import h5py
    except ImportError:
        raise ImportError("reading HDF5 bag files needs h5py: pip install h5py (or milsvm[hdf5])") from None

    def read(path):
        try:
            handle = h5py.File(path, "r")
        except OSError as exc:
            raise ValueError(f"{path}: not a readable HDF5 file ({' '.join(str(exc).split())})") from None
        with handle:
            if dataset not in handle or not isinstance(handle[dataset], h5py.Dataset):
                found = sorted(k for k in handle.keys())
                raise ValueError(f"{path}: no dataset {dataset!r} (the file has: "
                                 f"{', '.join(repr(k) for k in found) or 'nothing'})")
            return np.asarray(handle[dataset][()])

    return _load_folder(folder, (".h5", ".hdf5"), "HDF5", labels, read, return_bag_names)
