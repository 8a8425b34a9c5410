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
- ``<slide>.png``: the patches drawn as squares coloured by score, with a colour bar and a
  title giving the bag's score, predicted label and, when known, its label. No slide image is
  needed. The colour map is diverging at 0, the decision boundary: the slide's negative scores
  span its blue half and its positive scores its red half, so that the few positive patches of
  a slide stand out however far below 0 the rest lie.

- with ``h5=True``, ``<slide>.h5`` in the layout of CLAM's heatmap "block maps": the datasets
  ``attention_scores`` (``N x 1`` float32, here the instance scores) and ``coords`` (``N x 2``),
  so that CLAM's heatmap drawing over the slide image can read milsvm's scores (needs h5py).

The scores go through the model's scaler when it is a ``Pipeline``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ._convert import plain

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
        raise ValueError(
            f"{where}: the coords have no patch_size attribute: give the patch size in level-0 "
            "pixels (patch_size=..., --patch-size)"
        )
    raise ValueError(
        f"{where}: the coords are at patch_level {coords.patch_level} without a downsample "
        "attribute: give the patch size in level-0 pixels (patch_size=..., --patch-size)"
    )


_FEATURE = (
    '{{"type":"Feature","id":"patch-{i}","geometry":{{"type":"Polygon","coordinates":'
    '[[[{x},{y}],[{x1},{y}],[{x1},{y1}],[{x},{y1}],[{x},{y}]]]}},"properties":{{"objectType":"detection",'
    '"classification":{{"name":{name},"color":{color}}},"measurements":{{"score":{s},"share":{h}}},'
    '"score":{s},"share":{h},"instance":{i}}}}}'
)


def _number_text(values):
    """JSON numbers: integers where a value is whole (pixel positions), else ``repr``."""
    return [str(int(v)) if float(v).is_integer() else repr(float(v)) for v in values]


def geojson_text(xy, size, scores, shares, labels, positive):
    """The GeoJSON ``FeatureCollection`` of one slide's patches as text (see the module
    docstring); ``positive`` is the class coloured red. Written by a template rather than
    ``json.dumps`` of one dict per patch, which is several times slower on 10,000 patches."""
    scores = np.asarray(scores, dtype=np.float64)
    shares = np.asarray(shares, dtype=np.float64)
    if not (np.isfinite(scores).all() and np.isfinite(shares).all()):
        raise ValueError("a patch has a non-finite score")
    xy = np.asarray(xy)
    x, y = _number_text(xy[:, 0]), _number_text(xy[:, 1])
    x1, y1 = _number_text(xy[:, 0] + size), _number_text(xy[:, 1] + size)
    style = {}
    for label in dict.fromkeys(plain(v) for v in labels):
        colour = _POSITIVE_RGB if label == positive else _NEGATIVE_RGB
        style[label] = (json.dumps(str(label)), json.dumps(colour, separators=(",", ":")))
    features = [
        _FEATURE.format(
            i=i,
            x=x[i],
            y=y[i],
            x1=x1[i],
            y1=y1[i],
            name=style[lab][0],
            color=style[lab][1],
            s=repr(s),
            h=repr(h),
        )
        for i, (lab, s, h) in enumerate(
            zip((plain(v) for v in labels), scores.tolist(), shares.tolist())
        )
    ]
    return '{"type":"FeatureCollection","features":[' + ",".join(features) + "]}\n"


def _grid_image(xy, size):
    """``(rows, cols, shape)`` when every patch lies on a grid of step ``size`` from the
    top-left one (patchers write such coordinates), else None."""
    origin = xy.min(axis=0)
    steps = (xy - origin) / size
    cells = np.round(steps).astype(np.int64)
    if not np.allclose(steps, cells, atol=1e-6):
        return None
    shape = (int(cells[:, 1].max()) + 1, int(cells[:, 0].max()) + 1)
    if shape[0] * shape[1] > 50_000_000:
        return None
    return cells[:, 1], cells[:, 0], shape


def _draw_png(path, xy, size, scores, title):
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize, TwoSlopeNorm
    from matplotlib.figure import Figure

    xy = np.asarray(xy, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    x0, y0 = xy.min(axis=0)
    x1, y1 = xy.max(axis=0) + size
    width, height = float(x1 - x0), float(y1 - y0)
    aspect = height / width if width > 0 else 1.0
    fig_w = 7.0
    fig_h = min(max(5.6 * aspect + 1.2, 3.0), 12.0)
    fig = Figure(figsize=(fig_w, fig_h))
    # fixed margins (a layout engine costs more than the drawing on large slides)
    ax = fig.add_axes((0.12, 0.9 / fig_h, 0.68, 1.0 - 1.6 / fig_h))
    cax = fig.add_axes((0.86, 0.9 / fig_h, 0.03, 1.0 - 1.6 / fig_h))
    low, high = float(scores.min()), float(scores.max())
    if low < 0.0 < high:  # each side of the decision boundary uses its half of the colour map
        norm = TwoSlopeNorm(0.0, low, high)
    else:
        norm = Normalize(low, high if high > low else low + 1.0)
    cmap = colormaps["RdBu_r"]
    grid = _grid_image(xy, size)
    if grid is not None:
        rows, cols, shape = grid
        image = np.full(shape, np.nan)
        image[rows, cols] = scores
        ax.imshow(
            image,
            cmap=cmap,
            norm=norm,
            interpolation="nearest",
            extent=(x0, x0 + shape[1] * size, y0 + shape[0] * size, y0),
        )
    else:  # patches off a common grid: one square each
        corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], dtype=np.float64)
        ax.add_collection(
            PolyCollection(
                xy[:, None, :] + corners[None, :, :],
                array=scores,
                cmap=cmap,
                norm=norm,
                edgecolors="none",
            )
        )
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)  # image coordinates: y grows downwards
    ax.set_aspect("equal", adjustable="box", anchor="C")
    ax.set_facecolor("0.92")
    ax.set_xlabel("x (level-0 pixels)")
    ax.set_ylabel("y (level-0 pixels)")
    ax.set_title(title, fontsize="medium")
    fig.colorbar(
        ScalarMappable(norm=norm, cmap=cmap),
        cax=cax,
        label="instance score (> 0: positive evidence)",
    )
    fig.savefig(path, dpi=100)


def _slug(name):
    """A file name for a slide id: path separators replaced."""
    return str(name).replace(os.sep, "_").replace("/", "_")


def write_heatmaps(
    model,
    bags,
    coords,
    out_dir,
    *,
    names=None,
    labels=None,
    patch_size=None,
    png=True,
    files=None,
    h5=False,
):
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
    h5 : bool, default=False
        Also write ``<slide>.h5`` in CLAM's block-map layout (``attention_scores``, ``coords``).

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
            raise ValueError(
                f"{files[k]}: no patch coordinates (an HDF5 file needs a 'coords' dataset, a .npy "
                "bag a coords/<bag>.npy sidecar): a heatmap needs them"
            )
        if len(coords[k].xy) != bags.bag_sizes[k]:
            raise ValueError(
                f"{files[k]}: {len(coords[k].xy)} coords rows, but the bag has {bags.bag_sizes[k]} "
                "instances"
            )
        sizes.append(_level0_size(coords[k], patch_size, files[k]))
    if png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError(
                "drawing heatmaps needs matplotlib: pip install milsvm[plot] (or png=False)"
            ) from None
    if h5:
        try:
            import h5py
        except ImportError:
            raise ImportError(
                "writing CLAM block maps needs h5py: pip install milsvm[hdf5] (or h5=False)"
            ) from None
    explanations, instance_labels = slide_explanations(model, bags)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from ._crossval import final_estimator

    classes = final_estimator(model).classes_
    positive = plain(classes[-1])
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
            text = geojson_text(
                c.xy[rows],
                sizes[k],
                ex.instance_scores[rows],
                ex.contributions[rows],
                np.asarray(ilab)[rows],
                positive,
            )
            from ._model import write_atomically

            write_atomically(path, text)
            written.append(path)
            if h5:
                path = out / f"{stem}.h5"
                with h5py.File(path, "w") as f:
                    scores = f.create_dataset(
                        "attention_scores",
                        data=np.asarray(ex.instance_scores[rows], np.float32)[:, None],
                    )
                    scores.attrs["milsvm"] = (
                        "instance scores (instance_decision_function), not attention"
                    )
                    f.create_dataset("coords", data=np.asarray(c.xy[rows]))
                written.append(path)
            if png:
                title = f"{slide}: bag score {ex.score:.3f}, predicted {ex.label}"
                if c.slide is not None:
                    title = (
                        f"{slide} (bag {names[k]}): bag score {ex.score:.3f}, predicted {ex.label}"
                    )
                if labels is not None:
                    title += f", label {plain(np.asarray(labels)[k])}"
                path = out / f"{stem}.png"
                _draw_png(path, c.xy[rows], sizes[k], ex.instance_scores[rows], title)
                written.append(path)
    return written
