"""Readers of a folder with one file per bag, the layout of embedding pipelines:

- :func:`load_npy_folder`: one ``.npy`` array per bag (``n_instances x n_features``),
  memory-mapped by default;
- :func:`load_h5_folder`: one HDF5 file per bag in CLAM's layout (the dataset ``features``,
  ``N x D``, and on request its ``coords``). Needs ``h5py`` (``pip install milsvm[hdf5]``).

A bag's id is its file name without the suffix (``slide_7.npy`` -> ``slide_7``); the labels come
from a CSV (:func:`milsvm.datasets.read_labels`) or a dict. Float32 features stay float32: the
dtype rule is in :mod:`milsvm.datasets.labels`.
"""

from __future__ import annotations

import os

import numpy as np

from .._docs import splice
from .coords import read_h5_coords, read_npy_coords
from .labels import _as_features, _as_labels, _check_widths, _pair, read_labels

__all__ = ["load_npy_folder", "load_h5_folder"]

#: The bag-file suffixes of each folder format, and the format's name in messages.
FOLDER_FORMATS = {"npy": ((".npy",), ".npy"), "h5": ((".h5", ".hdf5"), "HDF5")}

#: The parameters, results and errors the two readers share (numpydoc), spliced into their
#: docstrings where a line ``<name>`` stands.
_SHARED_DOCS = {
    "labels": """labels : str, path-like, dict or None, default=None
    A CSV of ``bag_id,label`` (see :func:`read_labels`) or a dict ``{bag_id: label}``.
    Every file must have a label and every label a file. ``None``: no labels (to predict).""",
    "return_options": """return_bag_names : bool, default=False
    Also return the bag ids.
group_by : str or None, default=None
    The label CSV's column holding each bag's group (patient); ``None``: CLAM's
    ``case_id`` when the CSV has it (see :func:`read_labels`).
return_groups : bool, default=False
    Also return the groups: an object array of one group (str) per bag, or ``None`` when
    the labels name none.""",
    "returns": """Returns
-------
bags : list of ndarray
    In the order of the label file (sorted by bag id without labels); the files' dtype
    under the module's dtype rule (float16 -> float32; integers -> float64).
y : ndarray or None
    The labels (int64 when every label is an integer, else the labels' text).
bag_names : list of str
    Only if ``return_bag_names``.
groups : ndarray of object or None
    Only if ``return_groups``.
coords : list of PatchCoords or None
    Only if ``return_coords``.""",
    "errors": """an empty file, a bag that is not 2-D or has no instances, a feature width that
differs from the first file's, a file without a label or a label without a file;
coordinates whose row count differs from the features', or that are not finite integers;
a ``group_by`` column the labels lack, an empty group.""",
    "type_error": """TypeError
    A file whose dtype is not real numbers.""",
}


def _bag_files(folder, fmt):
    """``{bag_id: path}`` of the files in ``folder`` of the format ``fmt`` (a key of
    :data:`FOLDER_FORMATS`)."""
    suffixes, what = FOLDER_FORMATS[fmt]
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder!r} is not a folder")
    files = {}
    for entry in sorted(os.listdir(folder)):
        stem, suffix = os.path.splitext(entry)
        if suffix.lower() in suffixes and os.path.isfile(os.path.join(folder, entry)):
            if stem in files:
                raise ValueError(
                    f"{folder}: two files for bag {stem!r}: {os.path.basename(files[stem])!r} and "
                    f"{entry!r}"
                )
            files[stem] = os.path.join(folder, entry)
    if not files:
        raise ValueError(f"{folder}: no {what} files ({' / '.join(suffixes)}) in the folder")
    return files


def _load_folder(
    folder,
    labels,
    fmt,
    read,
    *,
    return_bag_names,
    group_by,
    return_groups,
    return_coords,
):
    """The bags of the files of ``folder`` of the format ``fmt``, each read by ``read(path,
    return_coords)`` (``(array, PatchCoords or None)``, the coordinates read only when asked
    for; or a ``ValueError`` naming the file), paired with ``labels``; the tuple ``bags, y[,
    names][, groups][, coords]`` of the public readers, whose keywords these are."""
    files = _bag_files(folder, fmt)
    groups_of = None
    if isinstance(labels, (str, os.PathLike)) and (return_groups or group_by is not None):
        table, groups_of = read_labels(labels, group_by=group_by, return_groups=True)
    else:
        table = _as_labels(labels)
        if group_by is not None:
            raise ValueError(
                f"group_by={group_by!r} needs the labels as a CSV file with that column"
            )
    ids, y = _pair(files, table, os.fspath(folder))
    bags, coords = [], []
    for bag_id in ids:
        path = files[bag_id]
        if os.path.getsize(path) == 0:
            raise ValueError(f"{path}: the file is empty")
        array, bag_coords = read(path, return_coords)
        bags.append(_as_features(array, path))
        coords.append(bag_coords)
    _check_widths(bags, [files[b] for b in ids])
    out = [bags, y]
    if return_bag_names:
        out.append(list(ids))
    if return_groups:
        out.append(
            None if groups_of is None else np.array([groups_of[b] for b in ids], dtype=object)
        )
    if return_coords:
        out.append(coords)
    return tuple(out)


@splice(_SHARED_DOCS)
def load_npy_folder(
    folder,
    labels=None,
    *,
    mmap=True,
    return_bag_names=False,
    group_by=None,
    return_groups=False,
    return_coords=False,
):
    """Load a folder of ``.npy`` files, one bag per file.

    Parameters
    ----------
    folder : str or path-like
        The folder. Every ``*.npy`` file in it is a bag: a 2-D array ``n_instances x
        n_features`` (all files the same width); other files are ignored.
    <labels>
    mmap : bool, default=True
        Memory-map the files (``np.load(..., mmap_mode="r")``): a float32 or float64 bag is
        read from the page cache when used, never copied by the reader.
    <return_options>
    return_coords : bool, default=False
        Also return the patch coordinates, read from the sidecar folder ``coords/`` (the
        layout is in :mod:`milsvm.datasets.coords`): a list of one
        :class:`~milsvm.datasets.PatchCoords` per bag (``None`` for a bag without them).

    <returns>

    Raises
    ------
    ValueError
        Naming the file: not a readable ``.npy`` array;
        <errors>
    <type_error>
    """

    def read(path, want_coords):
        try:
            array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(
                f"{path}: not a readable .npy array ({' '.join(str(exc).split())})"
            ) from None
        coords = read_npy_coords(path, array.shape[0]) if want_coords and array.ndim == 2 else None
        return array, coords

    return _load_folder(
        folder,
        labels,
        "npy",
        read,
        return_bag_names=return_bag_names,
        group_by=group_by,
        return_groups=return_groups,
        return_coords=return_coords,
    )


@splice(_SHARED_DOCS)
def load_h5_folder(
    folder,
    labels=None,
    *,
    dataset="features",
    return_bag_names=False,
    group_by=None,
    return_groups=False,
    return_coords=False,
):
    """Load a folder of HDF5 files in CLAM's layout, one bag per file.

    Parameters
    ----------
    folder : str or path-like
        The folder. Every ``*.h5`` / ``*.hdf5`` file in it is a bag whose instances are the
        rows of the dataset ``dataset`` (``N x D``); CLAM's ``coords`` are read with
        ``return_coords``, other datasets are ignored.
    <labels>
    dataset : str, default="features"
        The name of the features dataset in every file.
    <return_options>
    return_coords : bool, default=False
        Also return each file's ``coords`` dataset with its ``patch_size``, ``patch_level`` and
        ``downsample`` attributes, as a list of :class:`~milsvm.datasets.PatchCoords` (``None``
        for a file without ``coords``).

    <returns>

    Raises
    ------
    ImportError
        ``h5py`` is not installed.
    ValueError
        Naming the file: not an HDF5 file, no dataset ``dataset`` (the message lists the
        datasets the file has);
        <errors>
    <type_error>
    """
    try:
        import h5py
    except ImportError:
        raise ImportError(
            "reading HDF5 bag files needs h5py: pip install h5py (or milsvm[hdf5])"
        ) from None

    def read(path, want_coords):
        try:
            handle = h5py.File(path, "r")
        except OSError as exc:
            raise ValueError(
                f"{path}: not a readable HDF5 file ({' '.join(str(exc).split())})"
            ) from None
        with handle:
            if dataset not in handle or not isinstance(handle[dataset], h5py.Dataset):
                found = sorted(k for k in handle.keys())
                raise ValueError(
                    f"{path}: no dataset {dataset!r} (the file has: "
                    f"{', '.join(repr(k) for k in found) or 'nothing'})"
                )
            array = np.asarray(handle[dataset][()])
            coords = (
                read_h5_coords(handle, path, array.shape[0])
                if want_coords and array.ndim == 2
                else None
            )
            return array, coords

    return _load_folder(
        folder,
        labels,
        "h5",
        read,
        return_bag_names=return_bag_names,
        group_by=group_by,
        return_groups=return_groups,
        return_coords=return_coords,
    )
