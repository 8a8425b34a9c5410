"""Heatmaps of instance scores on whole slides: GeoJSON for QuPath and PNG images.

For every slide (a bag whose instances are patches with coordinates), :func:`write_heatmaps`
writes

- ``<slide>.geojson``: a GeoJSON ``FeatureCollection`` with one ``Feature`` per patch, its
  geometry the patch's square (a ``Polygon`` from the top-left corner and the patch size, in
  level-0 pixels). The properties hold ``score`` (the instance score, as the model pools it),
  ``share`` (the patch's share of the bag score, as :meth:`~milsvm._base.MILClassifier.explain`
  gives it), ``instance`` (the row) and what QuPath reads when it imports a GeoJSON file
  (File > Import objects, or drag and drop): ``"objectType": "detection"``, a
  ``classification`` (``name``: the class the instance score points to, ``color``: RGB) and
  ``measurements`` (``score`` and ``share``, shown in QuPath's measurement tables and usable
  in its measurement maps);
- ``<slide>.png``: the patches drawn as squares coloured by score (a diverging colour map
  centred on 0: red for evidence of the positive class), with a colour bar and a title giving
  the bag's score, predicted label and, when known, its label. No slide image is needed.

The scores go through the model's scaler when it is a ``Pipeline``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

__all__ = ["write_heatmaps", "slide_explanations"]

_POSITIVE_RGB = [200, 30, 30]
_NEGATIVE_RGB = [40, 80, 200]


def slide_explanations(model, bags):
    """``(explanations, instance labels)`` of ``bags`` under a fitted estimator or pipeline:
    the :class:`~milsvm._explain.BagExplanation` of every bag and the label each instance score
    points to (``predict_instances``)."""
    from ._bags import as_bags
    from ._crossval import final_estimator

    est = final_estimator(model)
    data = as_bags(bags)
    if est is not model:
        data = model[:-1].transform(data)
    return est.explain(data), est.predict_instances(data)


def _level0_size(coords, patch_size, where):
    if patch_size is not None:
        return float(patch_size)
    size = coords.level0_size()
    if size is not None:
        return size
    if coords.patch_size is None:
        raise ValueError(f"{where}: the coords have no patch_size attribute: give the patch size in level-0 pixels "
                         "(patch_size=..., --patch-size)")
    raise ValueError(f"{where}: the coords are at patch_level {coords.patch_level} without a downsample attribute: "
                     "give the patch size in level-0 pixels (patch_size=..., --patch-size)")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def geojson_text(xy, size, scores, shares, labels, positive):
    """The GeoJSON ``FeatureCollection`` of one slide's patches as text (see the module
    docstring); ``positive`` is the class coloured red."""
    features = []
    for i in range(len(xy)):
        x, y = int(xy[i, 0]), int(xy[i, 1])
        x1, y1 = x + size, y + size
        x1 = int(x1) if float(x1).is_integer() else x1
        y1 = int(y1) if float(y1).is_integer() else y1
        label = _plain(labels[i])
        s, share = float(scores[i]), float(shares[i])
        features.append({
            "type": "Feature",
            "id": f"patch-{i}",
            "geometry": {"type": "Polygon", "coordinates": [[[x, y], [x1, y], [x1, y1], [x, y1], [x, y]]]},
            "properties": {
                "objectType": "detection",
                "classification": {"name": str(label),
                                   "color": _POSITIVE_RGB if label == positive else _NEGATIVE_RGB},
                "measurements": {"score": s, "share": share},
                "score": s,
                "share": share,
                "instance": i,
            },
        })
    return json.dumps({"type": "FeatureCollection", "features": features}, separators=(",", ":"),
                      allow_nan=False) + "\n"


def _draw_png(path, xy, size, scores, title):
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    x0, y0 = xy.min(axis=0)
    x1, y1 = xy.max(axis=0) + size
    width, height = float(x1 - x0), float(y1 - y0)
    aspect = height / width if width > 0 else 1.0
    fig_w = 7.0
    fig_h = min(max(fig_w * aspect * 0.9 + 1.0, 3.0), 12.0)
    fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
    ax = fig.subplots()
    corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], dtype=np.float64)
    verts = xy[:, None, :].astype(np.float64) + corners[None, :, :]
    limit = float(np.max(np.abs(scores))) or 1.0
    norm = Normalize(-limit, limit)
    patches = PolyCollection(verts, array=np.asarray(scores, dtype=np.float64), cmap="RdBu_r", norm=norm,
                             edgecolors="none", antialiaseds=False)
    ax.add_collection(patches)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)  # image coordinates: y grows downwards
    ax.set_aspect("equal")
    ax.set_xlabel("x (level-0 pixels)")
    ax.set_ylabel("y (level-0 pixels)")
    ax.set_facecolor("0.92")
    ax.set_title(title, fontsize="medium")
    fig.colorbar(patches, ax=ax, label="instance score (> 0: positive evidence)", shrink=0.8)
    fig.savefig(path, dpi=100)


def _slug(name):
    """A file name for a slide id: path separators replaced."""
    return str(name).replace(os.sep, "_").replace("/", "_")


def write_heatmaps(model, bags, coords, out_dir, *, names=None, labels=None, patch_size=None, png=True,
                   files=None):
    """Write a GeoJSON file and a PNG image of the instance scores of every slide.

    Parameters
    ----------
    model : fitted estimator or Pipeline
        A multiple-instance estimator (or a pipeline ending in one) with
        ``instance_decision_function``.
    bags : list of array-like or Bags
        The slides' features.
    coords : list of PatchCoords
        The patch coordinates of every bag (:func:`milsvm.datasets.load_h5_folder` with
        ``return_coords=True``). A bag made of several slides (``bag_by``) is written slide by
        slide.
    out_dir : str or path-like
        Created if needed.
    names : list of str or None
        The slide names (the file names); default ``slide_0``, ``slide_1``, ...
    labels : array-like or None
        The bags' labels, for the PNG titles.
    patch_size : float or None
        The side of a patch in level-0 pixels; default from the coordinates' ``patch_size``
        and ``downsample`` (or ``patch_level`` 0).
    png : bool, default=True
        Also draw the PNG images (needs matplotlib).
    files : list of str or None
        The file of every bag, for error messages.

    Returns
    -------
    list of Path
        The files written, slide by slide.

    Raises
    ------
    ValueError
        A bag without coordinates, or whose patch size is unknown (naming its file); coordinates
        whose row count differs from the bag's.
    """
    from ._bags import as_bags

    bags = as_bags(bags)
    n = len(bags)
    names = [f"slide_{k}" for k in range(n)] if names is None else list(names)
    files = names if files is None else list(files)
    if len(coords) != n or len(names) != n:
        raise ValueError(f"{n} bags, but {len(coords)} coords and {len(names)} names")
    sizes = []
    for k in range(n):
        if coords[k] is None:
            raise ValueError(f"{files[k]}: no patch coordinates (an HDF5 file needs a 'coords' dataset, a .npy bag "
                             "a coords/<bag>.npy sidecar): a heatmap needs them")
        if len(coords[k].xy) != bags.bag_sizes[k]:
            raise ValueError(f"{files[k]}: {len(coords[k].xy)} coords rows, but the bag has {bags.bag_sizes[k]} "
                             "instances")
        sizes.append(_level0_size(coords[k], patch_size, files[k]))
    if png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError("drawing heatmaps needs matplotlib: pip install milsvm[plot] (or png=False)") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    explanations, instance_labels = slide_explanations(model, bags)
    from ._crossval import final_estimator

    classes = final_estimator(model).classes_
    positive = _plain(classes[-1])
    written = []
    for k, (ex, ilab) in enumerate(zip(explanations, instance_labels)):
        c = coords[k]
        parts = [(names[k], np.arange(len(c.xy)))]
        if c.slide is not None:
            tags = np.asarray(c.slide, dtype=str)
            parts = [(s, np.flatnonzero(tags == s)) for s in dict.fromkeys(tags.tolist())]
        for slide, rows in parts:
            stem = _slug(slide)
            path = out / f"{stem}.geojson"
            text = geojson_text(c.xy[rows], sizes[k], ex.instance_scores[rows], ex.contributions[rows],
                                np.asarray(ilab)[rows], positive)
            from ._model import write_atomically

            write_atomically(path, text)
            written.append(path)
            if png:
                title = f"{slide}: bag score {ex.score:.3f}, predicted {ex.label}"
                if c.slide is not None:
                    title = f"{slide} (bag {names[k]}): bag score {ex.score:.3f}, predicted {ex.label}"
                if labels is not None:
                    title += f", label {_plain(np.asarray(labels)[k])}"
                path = out / f"{stem}.png"
                _draw_png(path, c.xy[rows], sizes[k], ex.instance_scores[rows], title)
                written.append(path)
    return written
