"""Patch coordinates of whole-slide bags: where each instance (a patch) lies on its slide.

CLAM's HDF5 files hold them beside the features: a dataset ``coords`` (``N x 2``, the ``x, y``
of each patch's top-left corner in level-0 pixels) with the attributes ``patch_size`` (the
patch's side in pixels at ``patch_level``), ``patch_level`` and, when the patcher wrote it,
``downsample`` (the level's downsample factor, one value or one per axis).

A folder of ``.npy`` bags keeps them in a sidecar folder ``coords/`` beside the bag files:

- ``coords/<bag>.npy``: the ``N x 2`` integer array of the bag ``<bag>.npy`` (the same rows, in
  the same order);
- ``coords/<bag>.json`` (optional): ``{"patch_size": 256, "patch_level": 0, "downsample": 1}``
  for that bag; without it ``coords/patch.json`` (optional) gives them for every bag.

The bag readers ignore the sidecar folder (it holds no bag files of the folder itself).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

__all__ = ["PatchCoords"]


@dataclass(frozen=True)
class PatchCoords:
    """The patch positions of one bag.

    Attributes
    ----------
    xy : ndarray of int64, shape (n_instances, 2)
        The ``x, y`` of each patch's top-left corner in level-0 pixels.
    patch_size : int or None
        The side of a patch in pixels at ``patch_level`` (``None``: not recorded).
    patch_level : int or None
        The pyramid level the patches were cut at (``None``: not recorded).
    downsample : float or None
        That level's downsample factor relative to level 0 (``None``: not recorded).
    slide : ndarray of str or None
        The slide of each row, for a bag made of several slides (a case, ``bag_by``); ``None``
        for a bag of one slide.
    """

    xy: np.ndarray
    patch_size: int | None = None
    patch_level: int | None = None
    downsample: float | None = None
    slide: np.ndarray | None = None

    def level0_size(self):
        """The side of a patch in level-0 pixels: ``patch_size`` times the downsample of its
        level (1 at level 0), or ``None`` when that is not known."""
        if self.patch_size is None:
            return None
        if self.downsample is not None:
            return float(self.patch_size * self.downsample)
        if self.patch_level in (None, 0):
            return float(self.patch_size)
        return None


def check_xy(array, n_rows, where):
    """``array`` as an ``(n_rows, 2)`` int64 array, or a ``ValueError`` naming ``where``:
    another shape, a row count other than the features', non-finite or non-integer values."""
    array = np.asarray(array)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"{where}: coords must be an N x 2 array (x, y), got shape {array.shape}")
    if array.shape[0] != n_rows:
        raise ValueError(
            f"{where}: {array.shape[0]} coords rows, but the features have {n_rows} rows"
        )
    if array.dtype.kind in "iu":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind != "f":
        raise ValueError(f"{where}: coords must be numbers, got dtype {array.dtype}")
    if not np.isfinite(array).all():
        row = int(np.argmax(~np.isfinite(array).all(axis=1)))
        raise ValueError(f"{where}: coords row {row} has a non-finite value (NaN or infinity)")
    if not np.array_equal(array, np.round(array)):
        row = int(np.argmax((array != np.round(array)).any(axis=1)))
        raise ValueError(
            f"{where}: coords row {row} is not integer ({array[row].tolist()}): coords are pixel "
            "positions"
        )
    return array.astype(np.int64)


def _number(value, name, where, integer):
    """An attribute value (a scalar or a one-element array) as an int/float, or a ValueError."""
    value = np.asarray(value)
    if value.size == 0:
        raise ValueError(f"{where}: the attribute {name!r} is empty")
    flat = value.ravel().astype(np.float64) if value.dtype.kind in "iuf" else None
    if (
        flat is None
        or not np.isfinite(flat).all()
        or flat.min() <= (-1 if name == "patch_level" else 0)
    ):
        raise ValueError(
            f"{where}: the attribute {name!r} must be a positive number, got {value.tolist()!r}"
        )
    if integer:
        if flat[0] != math.floor(flat[0]):
            raise ValueError(
                f"{where}: the attribute {name!r} must be an integer, got {value.tolist()!r}"
            )
        return int(flat[0])
    if not np.all(flat == flat[0]):
        raise ValueError(
            f"{where}: the attribute {name!r} differs between the axes ({flat.tolist()}): "
            "square patches need one downsample"
        )
    return float(flat[0])


def _attrs(attrs, where):
    """``(patch_size, patch_level, downsample)`` from a mapping of attributes (each or None)."""
    size = (
        _number(attrs["patch_size"], "patch_size", where, True) if "patch_size" in attrs else None
    )
    level = (
        _number(attrs["patch_level"], "patch_level", where, True)
        if "patch_level" in attrs
        else None
    )
    down = (
        _number(attrs["downsample"], "downsample", where, False) if "downsample" in attrs else None
    )
    return size, level, down


def read_h5_coords(handle, path, n_rows):
    """The :class:`PatchCoords` of an open HDF5 file (``None`` without a ``coords`` dataset)."""
    if "coords" not in handle:
        return None
    data = handle["coords"]
    where = f"{path} (dataset 'coords')"
    size, level, down = _attrs(dict(data.attrs), where)
    return PatchCoords(check_xy(data[()], n_rows, where), size, level, down)


def read_npy_coords(bag_path, n_rows):
    """The :class:`PatchCoords` of the ``.npy`` bag ``bag_path`` from the sidecar folder
    ``coords/`` (``None`` when it has no ``coords/<bag>.npy``)."""
    folder, name = os.path.split(os.fspath(bag_path))
    stem = os.path.splitext(name)[0]
    side = os.path.join(folder, "coords")
    path = os.path.join(side, stem + ".npy")
    if not os.path.isfile(path):
        return None
    try:
        xy = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(
            f"{path}: not a readable .npy array ({' '.join(str(exc).split())})"
        ) from None
    xy = check_xy(xy, n_rows, path)
    attrs = {}
    for candidate in (os.path.join(side, stem + ".json"), os.path.join(side, "patch.json")):
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as f:
                    attrs = json.load(f)
            except (OSError, ValueError) as exc:
                raise ValueError(
                    f"{candidate}: not a readable JSON object ({' '.join(str(exc).split())})"
                ) from None
            if not isinstance(attrs, dict):
                raise ValueError(
                    f'{candidate}: expected a JSON object such as {{"patch_size": 256}}'
                )
            size, level, down = _attrs(attrs, candidate)
            return PatchCoords(xy, size, level, down)
    return PatchCoords(xy)
