"""Folders of whole-slide bags with their patients: reading them whole, and a synthetic one.

- :func:`load_slide_folder`: a folder of per-slide ``.npy`` or HDF5 bags with its label CSV,
  as a :class:`SlideData`: the bags, labels, bag names, the group (patient, or case) of every
  bag, the patch coordinates and the file of every bag; optionally a case as one bag
  (``bag_by``). Every bag is checked for non-finite values, the error naming its file.
- :func:`make_slide_folder`: a synthetic folder in CLAM's layout, with several slides per case,
  tumour patches clustered in space and a per-case offset (a site or scanner effect), for
  tests, documentation and benchmarks.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .coords import PatchCoords
from .folder import FOLDER_FORMATS, _bag_files, load_h5_folder, load_npy_folder
from .generators import _check_int, _check_random_state, _check_real
from .labels import read_labels

__all__ = ["SlideData", "SlideFolder", "load_slide_folder", "make_slide_folder"]


@dataclass
class SlideData:
    """A folder of slide bags read by :func:`load_slide_folder`.

    Attributes
    ----------
    bags : list of ndarray
        One ``n_instances x n_features`` array per bag, in the order of the label file.
    y : ndarray or None
        One label per bag (``None`` without labels).
    names : list of str
        The bag names: the slide ids, or the case ids with ``bag_by``.
    groups : ndarray of object or None
        The group (patient, or case) of every bag, from the label file's group column; ``None``
        when it has none.
    group_column : str or None
        The label file's column the groups come from.
    coords : list of PatchCoords or None
        The patch coordinates of every bag (``None`` for a bag without them).
    files : list of str
        The file(s) of every bag, for messages (several, comma-separated, with ``bag_by``).
    format : str
        ``"npy"`` or ``"h5"``.
    slides : list of list of str
        The slides of every bag (one each, several with ``bag_by``).
    """

    bags: list
    y: np.ndarray | None
    names: list
    groups: np.ndarray | None = None
    group_column: str | None = None
    coords: list = field(default_factory=list)
    files: list = field(default_factory=list)
    format: str = "h5"
    slides: list = field(default_factory=list)

    def has_coords(self):
        """True when every bag has coordinates."""
        return bool(self.coords) and all(c is not None for c in self.coords)


def detect_folder_format(folder, advice="give the format (npy or h5)"):
    """``"npy"`` or ``"h5"`` by the bag files in ``folder``; a ValueError, ending in ``advice``,
    when it holds both kinds or neither."""
    suffixes = {
        os.path.splitext(name)[1].lower()
        for name in os.listdir(folder)
        if os.path.isfile(os.path.join(folder, name))
    }
    kinds = [kind for kind, (ends, _) in FOLDER_FORMATS.items() if suffixes & set(ends)]
    if len(kinds) != 1:
        found = "both .npy and HDF5 files" if kinds else "no .npy or .h5 files"
        raise ValueError(f"data folder {os.fspath(folder)!r} holds {found}: {advice}")
    return kinds[0]


def load_slide_folder(
    folder, labels=None, *, format="auto", group_by=None, bag_by=None, check_finite=True
):
    """Read a folder of per-slide bags with their groups and coordinates.

    Parameters
    ----------
    folder : str or path-like
        A folder of ``.npy`` or HDF5 bags (CLAM's layout; see :func:`load_h5_folder` and, for
        the coordinates of ``.npy`` bags, :mod:`milsvm.datasets.coords`).
    labels : str, path-like or None, default=None
        The label CSV (see :func:`read_labels`); ``None``: no labels and no groups.
    format : {"auto", "npy", "h5"}, default="auto"
    group_by : str or None, default=None
        The label CSV's column of the groups (patients); ``None``: CLAM's ``case_id`` when the
        CSV has it.
    bag_by : str or None, default=None
        A label CSV column (``case_id``): all slides with one value become one bag, their
        instances concatenated in label-file order, the coordinates tagged with their slide
        (:attr:`PatchCoords.slide`). The bag's label is the largest of its slides' labels (in
        sorted label order), its name the column's value, and it is its own group.
    check_finite : bool, default=True
        Refuse a bag with a NaN or infinite feature, naming its file.

    Returns
    -------
    SlideData

    Raises
    ------
    ValueError
        As the folder readers; a non-finite feature (naming the file and row); ``bag_by``
        without a label CSV or naming a column it lacks.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder!r} is not a folder")
    fmt = detect_folder_format(folder) if format == "auto" else format
    if fmt not in FOLDER_FORMATS:
        raise ValueError(f"format must be 'auto', 'npy' or 'h5', got {format!r}")
    loader = load_npy_folder if fmt == "npy" else load_h5_folder
    csv_labels = labels if isinstance(labels, (str, os.PathLike)) else None
    if bag_by is not None and csv_labels is None:
        raise ValueError(f"bag_by={bag_by!r} needs the labels as a CSV file with that column")
    bags, y, names, groups, coords = loader(
        folder,
        labels,
        return_bag_names=True,
        return_groups=True,
        return_coords=True,
        group_by=group_by,
    )
    paths = _bag_files(folder, fmt)
    files = [paths[n] for n in names]
    if check_finite:
        for bag, path in zip(bags, files):
            check_finite_bag(bag, path)
    column = None
    if groups is not None:
        column = group_by or _header_name(csv_labels, "case_id")
    data = SlideData(
        bags=bags,
        y=y,
        names=list(names),
        groups=groups,
        group_column=column,
        coords=coords,
        files=files,
        format=fmt,
        slides=[[n] for n in names],
    )
    if bag_by is not None:
        _, cases = read_labels(csv_labels, group_by=bag_by, return_groups=True)
        data = _merge_cases(data, cases, _header_name(csv_labels, bag_by))
    return data


def check_finite_bag(bag, where):
    """A ValueError naming ``where`` and the first row if ``bag`` holds a NaN or infinity."""
    finite = np.isfinite(bag)
    if not finite.all():
        row = int(np.argmax(~finite.all(axis=1)))
        raise ValueError(
            f"{where}: the features have a non-finite value (NaN or infinity) in row {row}"
        )


def _header_name(path, name):
    """The label CSV's own spelling of the column ``name`` (matched case-insensitively)."""
    from .labels import label_columns

    header = label_columns(path) or []
    return next((h for h in header if h.lower() == name.strip().lower()), name)


def _merge_cases(data, cases, column):
    """``data`` with every case (``{slide: case}``) as one bag."""
    order = list(dict.fromkeys(cases[n] for n in data.names))
    members = {c: [] for c in order}
    for k, name in enumerate(data.names):
        members[cases[name]].append(k)
    classes = np.unique(data.y)
    rank = {c: i for i, c in enumerate(classes.tolist())}
    bags, y, coords, files, slides = [], [], [], [], []
    for case in order:
        ks = members[case]
        bags.append(np.concatenate([np.asarray(data.bags[k]) for k in ks], axis=0))
        y.append(
            max((data.y[k] for k in ks), key=lambda v: rank[v.item() if hasattr(v, "item") else v])
        )
        files.append(", ".join(data.files[k] for k in ks))
        slides.append([data.names[k] for k in ks])
        parts = [data.coords[k] for k in ks]
        if all(p is not None for p in parts):
            sizes = {(p.patch_size, p.patch_level, p.downsample) for p in parts}
            size, level, down = sizes.pop() if len(sizes) == 1 else (None, None, None)
            tags = np.concatenate(
                [np.full(len(p.xy), data.names[k], dtype=object) for p, k in zip(parts, ks)]
            )
            coords.append(
                PatchCoords(np.concatenate([p.xy for p in parts]), size, level, down, tags)
            )
        else:
            coords.append(None)
    y = np.asarray(y, dtype=data.y.dtype)
    return SlideData(
        bags=bags,
        y=y,
        names=order,
        groups=np.array(order, dtype=object),
        group_column=column,
        coords=coords,
        files=files,
        format=data.format,
        slides=slides,
    )


# --------------------------------------------------------------------------------------------
# Synthetic folder
# --------------------------------------------------------------------------------------------


@dataclass
class SlideFolder:
    """What :func:`make_slide_folder` wrote.

    Attributes
    ----------
    features_dir : str
        The folder of bag files (``PATH/h5_files`` or ``PATH/npy_files``).
    labels : str
        The label CSV (``PATH/labels.csv``: ``case_id,slide_id,label``).
    slides : list of str
        The slide ids, in label-file order.
    cases : list of str
        The case of every slide.
    y : ndarray of int64
        The label of every slide (1: the slide holds tumour patches).
    tumour : dict
        ``{slide_id: bool array}``: which patches of the slide are tumour (the planted
        witnesses), in row order.
    """

    features_dir: str
    labels: str
    slides: list
    cases: list
    y: np.ndarray
    tumour: dict


def _grid_cells(rng, n_target):
    """The cells ``(col, row)`` of a random elliptical tissue region of about ``n_target``
    cells, in raster order (row-major, as patchers write them)."""
    aspect = math.exp(rng.uniform(-0.4, 0.4))
    a = math.sqrt(n_target / math.pi * aspect)
    b = n_target / (math.pi * a)
    cols, rows = int(math.ceil(2 * a)) + 2, int(math.ceil(2 * b)) + 2
    cx, cy = (cols - 1) / 2, (rows - 1) / 2
    r, c = np.mgrid[0:rows, 0:cols]
    inside = ((c - cx) / a) ** 2 + ((r - cy) / b) ** 2 <= 1.0
    return np.column_stack([c[inside], r[inside]])


def make_slide_folder(
    path,
    *,
    n_cases=60,
    slides_per_case=(1, 3),
    n_features=32,
    n_patches=(200, 600),
    tumour_fraction=(0.05, 0.15),
    slide_tumour_rate=0.8,
    signal=3.0,
    case_offset=3.0,
    n_tissues=4,
    positive_rate=0.5,
    patch_size=256,
    format="h5",
    random_state=None,
):
    """Write a synthetic folder of whole-slide bags in CLAM's layout.

    Every case (patient) is positive with probability ``positive_rate`` and has
    ``slides_per_case`` slides. A slide is an elliptical region of patches on a square grid;
    a patch's features are its tissue type's centre (one of ``n_tissues``, drawn from
    ``N(0, 0.25 I)``) plus unit Gaussian noise plus its case's offset (a Gaussian vector of
    norm about ``case_offset``, shared by all the case's slides: a site or scanner effect that
    lets a model recognise the patient). In a
    positive case every slide holds tumour with probability ``slide_tumour_rate`` (at least
    one slide does): a disc of ``tumour_fraction`` of its patches, around a random patch,
    shifted by ``signal`` along one fixed direction. A slide's label is 1 when it holds tumour,
    so a positive case may hold negative slides; a case's label is the largest of its slides'.

    Files written:

    - ``PATH/h5_files/<slide>.h5`` (``format="h5"``): ``features`` (float32, N x D), ``coords``
      (int64, N x 2: the top-left corner of each patch in level-0 pixels, attributes
      ``patch_size``, ``patch_level`` = 0, ``downsample`` = 1) and ``tumour`` (uint8, N: the
      planted witnesses, which readers ignore);
    - or ``PATH/npy_files/<slide>.npy`` with ``coords/<slide>.npy``, ``coords/patch.json`` and
      ``tumour/<slide>.npy`` (``format="npy"``; the sidecar layout of
      :mod:`milsvm.datasets.coords`);
    - ``PATH/labels.csv``: ``case_id,slide_id,label``.

    Parameters
    ----------
    path : str or path-like
        The folder to write (created; existing files of the same names are replaced).
    n_cases : int, default=60
    slides_per_case : int or (int, int), default=(1, 3)
        Slides per case, or an inclusive range drawn uniformly.
    n_features : int, default=32
    n_patches : int or (int, int), default=(200, 600)
        Patches per slide (about; the tissue region is drawn on a grid), or a range.
    tumour_fraction : float or (float, float), default=(0.05, 0.15)
        The share of a tumour slide's patches that are tumour, or a range.
    slide_tumour_rate : float in (0, 1], default=0.8
    signal : float > 0, default=3.0
        The shift of a tumour patch along the tumour direction (in noise standard deviations).
    case_offset : float >= 0, default=3.0
        The expected norm of a case's offset.
    n_tissues : int, default=4
    positive_rate : float in (0, 1), default=0.5
    patch_size : int, default=256
    format : {"h5", "npy"}, default="h5"
    random_state : int, RandomState, Generator or None
        The same value writes the same files.

    Returns
    -------
    SlideFolder
    """
    n_cases = _check_int("n_cases", n_cases, 2)
    n_features = _check_int("n_features", n_features, 1)
    n_tissues = _check_int("n_tissues", n_tissues, 1)
    patch_size = _check_int("patch_size", patch_size, 1)
    spc = _int_range("slides_per_case", slides_per_case, 1)
    npatch = _int_range("n_patches", n_patches, 4)
    frac = _real_range("tumour_fraction", tumour_fraction, 0.0, 1.0)
    slide_tumour_rate = _check_real("slide_tumour_rate", slide_tumour_rate, 0.0, 1.0)
    signal = _check_real("signal", signal, 0.0)
    case_offset = _check_real("case_offset", case_offset, 0.0, low_open=False)
    positive_rate = _check_real("positive_rate", positive_rate, 0.0, 1.0, high_open=True)
    if format not in ("h5", "npy"):
        raise ValueError(f"format must be 'h5' or 'npy', got {format!r}")
    if format == "h5":
        import importlib.util

        if importlib.util.find_spec("h5py") is None:
            raise ImportError(
                "writing HDF5 slide files needs h5py: pip install h5py (or milsvm[hdf5])"
            )
    rng = _check_random_state(random_state)
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng.randint(0, 2**31 - 1))

    centres = rng.normal(0.0, 0.5, size=(n_tissues, n_features))
    direction = rng.normal(size=n_features)
    direction /= np.linalg.norm(direction)
    labels = rng.random(n_cases) < positive_rate
    labels[0], labels[1] = True, False  # both classes, whatever the draw
    root = os.fspath(path)
    features_dir = os.path.join(root, f"{format}_files")
    os.makedirs(features_dir, exist_ok=True)
    if format == "npy":
        for sub in ("coords", "tumour"):
            os.makedirs(os.path.join(features_dir, sub), exist_ok=True)
        with open(os.path.join(features_dir, "coords", "patch.json"), "w", encoding="utf-8") as f:
            f.write(f'{{"patch_size": {patch_size}, "patch_level": 0, "downsample": 1}}\n')
    width = len(str(n_cases))
    slides, cases, ys, tumour = [], [], [], {}
    for c in range(n_cases):
        case = f"case_{c:0{width}d}"
        offset = rng.normal(0.0, case_offset / math.sqrt(n_features), size=n_features)
        count = int(rng.integers(spc[0], spc[1] + 1))
        has_tumour = np.zeros(count, dtype=bool)
        if labels[c]:
            has_tumour = rng.random(count) < slide_tumour_rate
            has_tumour[int(rng.integers(count))] = True
        for s in range(count):
            slide = f"{case}_s{s}"
            cells = _grid_cells(rng, int(rng.integers(npatch[0], npatch[1] + 1)))
            n = len(cells)
            tissue = rng.integers(n_tissues, size=n)
            X = centres[tissue] + rng.normal(size=(n, n_features)) + offset
            mask = np.zeros(n, dtype=bool)
            if has_tumour[s]:
                k = max(1, int(round(rng.uniform(frac[0], frac[1]) * n)))
                centre = cells[int(rng.integers(n))]
                near = np.argsort(((cells - centre) ** 2).sum(axis=1), kind="stable")[:k]
                mask[near] = True
                X[mask] += signal * direction
            X = X.astype(np.float32)
            xy = (cells * patch_size + patch_size).astype(np.int64)
            _write_slide(features_dir, slide, X, xy, mask, patch_size, format)
            slides.append(slide)
            cases.append(case)
            ys.append(int(has_tumour[s]))
            tumour[slide] = mask
    labels_path = os.path.join(root, "labels.csv")
    with open(labels_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["case_id", "slide_id", "label"])
        writer.writerows(zip(cases, slides, ys))
    return SlideFolder(
        features_dir=features_dir,
        labels=labels_path,
        slides=slides,
        cases=cases,
        y=np.asarray(ys, dtype=np.int64),
        tumour=tumour,
    )


def _write_slide(folder, slide, X, xy, mask, patch_size, format):
    if format == "h5":
        import h5py

        with h5py.File(os.path.join(folder, f"{slide}.h5"), "w") as f:
            f.create_dataset("features", data=X)
            coords = f.create_dataset("coords", data=xy)
            coords.attrs["patch_size"] = patch_size
            coords.attrs["patch_level"] = 0
            coords.attrs["downsample"] = np.array([1.0, 1.0])
            f.create_dataset("tumour", data=mask.astype(np.uint8))
    else:
        np.save(os.path.join(folder, f"{slide}.npy"), X)
        np.save(os.path.join(folder, "coords", f"{slide}.npy"), xy)
        np.save(os.path.join(folder, "tumour", f"{slide}.npy"), mask)


def _int_range(name, value, minimum):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer or a (min, max) pair, got {value!r}") from None
    lo, hi = _check_int(name, lo, minimum), _check_int(name, hi, minimum)
    if lo > hi:
        raise ValueError(f"{name} must have min <= max, got {value!r}")
    return lo, hi


def _real_range(name, value, low, high):
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        value = (value, value)
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a (min, max) pair, got {value!r}") from None
    lo, hi = _check_real(name, lo, low, high), _check_real(name, hi, low, high)
    if lo > hi:
        raise ValueError(f"{name} must have min <= max, got {value!r}")
    return lo, hi
