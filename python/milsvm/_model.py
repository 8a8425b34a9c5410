"""The fitted model every estimator holds: one compiled core object (``milsvm._core.Model``).

Prediction, ``save`` and the Rust crate all go through it: ``est.model_`` is the Rust
``milsvm::Model``, validated once and compiled for prediction at its first use (basis norms
precomputed), and the estimator's public arrays (``xv_``, ``coef_``, ``intercept_``) are
read-only views of its buffers. The model file is written and read by the core alone
(versioned JSON, see the Rust docs of ``milsvm::model::file``); :func:`load` rebuilds the
estimator from it.

A ``Pipeline`` of a :class:`~milsvm.BagStandardScaler` and an estimator is one model file too
(:func:`save`): the scaler's mean and scale go into the file, the Rust predictor standardises
every instance before the kernel, and :func:`load` gives the pipeline back.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from . import _core, _registry
from ._convert import jsonable

__all__ = ["CompiledModelMixin", "load", "save", "Model", "write_atomically"]

Model = _core.Model
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def threads(n_jobs):
    """``n_jobs`` for the core's prediction: ``None`` or an int (the core checks its range)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(
            f"n_jobs must be None or an integer, got {n_jobs!r} ({type(n_jobs).__name__})"
        )
    return int(n_jobs)


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder renamed over it, so
    that an interrupted write leaves the old file (or none), never half a file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _restored(value):
    """A saved training attribute back as NumPy data: a list of numbers becomes an array, a
    ragged list a list of arrays."""
    if isinstance(value, list):
        try:
            arr = np.asarray(value)
        except ValueError:  # ragged
            return [_restored(v) for v in value]
        if arr.dtype.kind in "biuf":
            return arr
        return [_restored(v) for v in value]
    return value


class CompiledModelMixin:
    """Prediction and saving through ``self.model_`` (a ``milsvm._core.Model``).

    Subclasses set ``_poolings`` (the bag poolings their models use) and ``_info_attrs`` (the
    fitted attributes kept in the model file's training record).
    """

    _poolings = ("mean",)
    _info_attrs = ("n_iter_", "objective_history_", "gamma_")

    def _set_model(self, model):
        """Install a fitted core model."""
        self.model_ = model
        self.n_features_in_ = model.n_features

    def _loaded(self):
        """Hook run by :func:`load` after the model is installed (align parameters with it)."""
        if "kernel" in self.get_params(deep=False):
            self.kernel = self.model_.kernel

    def _model(self):
        try:
            return self.model_
        except AttributeError:
            check_is_fitted(self)  # raises NotFittedError with sklearn's message
            raise

    def decision_function(self, bags):
        """Bag scores ``F(X)`` pooled from the instance scores ``f(x) = sum_k coef_k k(z_k, x) + b``
        (mean, max or normalised mean, by estimator), or for MILES
        ``sum_k coef_k max_(x in X) k(z_k, x) + b``.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        ndarray of shape (n_bags,) for binary problems (positive means ``classes_[1]``),
        or (n_bags, n_classes) for multi-class problems.
        """
        bags = self._check_bags(bags)
        scores = self._model().decision_function(
            bags.core_instances(), bags.bag_ptr, threads(self.n_jobs)
        )
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def instance_decision_function(self, bags):
        """The score of every instance of every bag, as the estimator's pooling counts it: the
        mean over a bag (the max, for max pooling; the sum, for MILES) is the bag's
        :meth:`decision_function`.

        For most estimators this is the instance score ``f(x) = sum_k coef_k k(xv_k, x) + b``
        itself. NSK with ``norm="l2"`` divides the bias-free part by the bag's feature-space
        norm, ``(f(x) - b) / sqrt(k_set(X, X)) + b``; the ``"smil_mean"`` pooling (stMIL and sMIL
        with ``bag_score="smil_mean"``) adds the bag's threshold shift ``1 - 1/|X|``. MILES
        (``"xv_max"`` pooling) gives each instance its share of the bag score: the terms
        ``coef_k k(xv_k, x)`` of the concepts whose max over the bag it attains, plus
        ``b / |U|`` (``U`` the instances attaining some concept's max), 0 for the other
        instances (see :class:`~milsvm.MILES`). Through a ``Pipeline``, transform first:
        ``pipe[-1].instance_decision_function(pipe[:-1].transform(bags))``.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        list of ndarray
            One array per bag: shape (n_instances,) for binary problems, (n_instances,
            n_classes) for multi-class ones.
        """
        bags = self._check_bags(bags)
        scores = self._model().bag_instance_scores(
            bags.core_instances(), bags.bag_ptr, threads(self.n_jobs)
        )
        scores = scores[:, 0] if scores.shape[1] == 1 else scores
        return np.split(scores, bags.bag_ptr[1:-1])

    def predict_instances(self, bags):
        """Instance labels from ``classes_``: binary problems ``classes_[1]`` where the instance
        score of :meth:`instance_decision_function` is > 0, multi-class ones the class of the
        largest score. One array per bag."""
        out = []
        for s in self.instance_decision_function(bags):
            out.append(
                self.classes_[(s > 0).astype(int)]
                if s.ndim == 1
                else self.classes_[np.argmax(s, axis=1)]
            )
        return out

    def decision_function_bag(self, bag):
        """The score of one bag, with the least overhead (the serving path).

        Parameters
        ----------
        bag : array-like of shape (n_instances, n_features)
            One bag, one instance per row (a float64 or float32 array is read in place; a sparse
            matrix goes through :meth:`decision_function`).

        Returns
        -------
        float for binary problems (positive means ``classes_[1]``), else ndarray of shape
        (n_classes,).
        """
        model = self.__dict__.get("model_")
        if model is None:
            model = self._model()
        if type(bag) is np.ndarray and bag.dtype in (_F64, _F32) and bag.ndim == 2:
            x = bag  # read in place (the core copies a non-contiguous array)
        elif sp.issparse(bag):
            return self.decision_function([bag])[0]
        else:
            x = np.asarray(bag, dtype=np.float64)
            if x.ndim != 2:
                raise ValueError(
                    f"a bag must be a 2-D array (n_instances, n_features), got {x.ndim} "
                    "dimension(s)"
                )
        scores = model.decision_function_bag(x)
        return scores[0] if len(scores) == 1 else np.asarray(scores)

    def _saved_params(self):
        params = {}
        for key, value in self.get_params(deep=False).items():
            v = jsonable(value, strict=True)
            if v is not None or value is None:
                params[key] = v
        return params

    def _saved_info(self):
        info = {}
        for name in self._info_attrs:
            if hasattr(self, name):
                v = jsonable(getattr(self, name), strict=True)
                if v is not None:
                    info[name] = v
        return info

    def save(self, path):
        """Write the fitted model as versioned JSON: readable by :func:`milsvm.load` and by the
        Rust crate (``milsvm::Model::load``), with the class labels, the parameters, the
        training record and, with ``probability``, the sigmoid (or the calibrated ensemble).
        :func:`milsvm.save` also takes a pipeline with its scaler."""
        write_atomically(path, self._model_json())

    def _model_json(self, scaler=None):
        """The model file's text, with the ``(mean, scale, params)`` of a fitted scaler if any."""
        model = self._model()
        classes = jsonable(np.asarray(self.classes_), strict=True)
        if classes is None:
            classes = [str(c) for c in self.classes_]
        info = self._saved_info()
        if scaler is not None:
            mean, scale, scaler_params = scaler
            model = model.with_scaler(
                (
                    np.asarray(mean, dtype=np.float64).tolist(),
                    np.asarray(scale, dtype=np.float64).tolist(),
                )
            )
            info[_SCALER_INFO] = scaler_params
        return model.to_json(
            estimator=type(self).__name__,
            classes=json.dumps(classes),
            params=json.dumps(self._saved_params()),
            info=json.dumps(info),
        )


#: The key of the training record that keeps a saved scaler's parameters.
_SCALER_INFO = "scaler_params"


def save(model, path):
    """Write a fitted estimator, or a fitted ``Pipeline`` of a :class:`~milsvm.BagStandardScaler`
    and an estimator, as one model file; :func:`load` gives back what was saved.

    The file holds the scaler's mean and scale, so that the Rust predictor (``milsvm::Model``,
    ``milsvm predict``) scores raw bags exactly as the pipeline does.

    Parameters
    ----------
    model : milsvm estimator or sklearn.pipeline.Pipeline
        Fitted. A pipeline must be ``[BagStandardScaler, estimator]`` or ``[estimator]``.
    path : str or path-like
        The file to write (atomically: an interrupted write leaves the old file).

    Raises
    ------
    TypeError
        If ``model`` is not a milsvm estimator or such a pipeline.
    sklearn.exceptions.NotFittedError
        If it is not fitted.
    """
    from sklearn.pipeline import Pipeline

    from .preprocessing import BagStandardScaler

    steps = (
        [step for _, step in model.steps if step not in (None, "passthrough")]
        if isinstance(model, Pipeline)
        else [model]
    )
    scaler = None
    if len(steps) == 2 and isinstance(steps[0], BagStandardScaler):
        check_is_fitted(steps[0])
        scaler = (steps[0].mean_, steps[0].scale_, steps[0].get_params())
        steps = steps[1:]
    if len(steps) != 1 or not isinstance(steps[0], CompiledModelMixin):
        kinds = ", ".join(type(s).__name__ for s in steps)
        raise TypeError(
            "milsvm.save takes a milsvm estimator or a Pipeline of a BagStandardScaler and a "
            f"milsvm estimator, got {type(model).__name__} ({kinds})"
        )
    estimator = steps[0]
    if (
        scaler is not None
        and "n_features_in_" in estimator.__dict__
        and len(scaler[0]) != estimator.n_features_in_
    ):
        raise ValueError(
            f"the scaler was fitted on {len(scaler[0])} features, the estimator on "
            f"{estimator.n_features_in_}"
        )
    write_atomically(path, estimator._model_json(scaler))


def load(path):
    """Read a model written by :func:`save` (or an estimator's ``save``) and return what was
    saved: the fitted estimator, or a ``Pipeline`` of a fitted
    :class:`~milsvm.BagStandardScaler` and the estimator when the file holds a scaler.

    Loading parses JSON only (no code runs). Every inconsistency is one ``ValueError`` naming
    the field at fault: shapes, class count, non-finite numbers, unknown kernel, pooling,
    estimator or format version.

    Raises
    ------
    OSError
        If the file cannot be read.
    ValueError
        If the file is not a valid milsvm model.
    """
    text = Path(path).read_text(encoding="utf-8", errors="strict")
    try:
        model = _core.Model.from_json(text)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    registry = _registry.ESTIMATORS
    cls = registry.get(model.estimator)
    if cls is None:
        raise ValueError(
            f"{path}: field `estimator`: unknown estimator {model.estimator!r} "
            f"(expected one of {', '.join(sorted(registry))})"
        )
    if model.pooling not in cls._poolings:
        raise ValueError(
            f"{path}: field `pooling`: a {cls.__name__} model pools by "
            f"{' or '.join(cls._poolings)}, the file has {model.pooling!r}"
        )
    allowed = cls().get_params()
    params = {k: v for k, v in json.loads(model.params_json).items() if k in allowed}
    if "n_jobs" in params:  # the one stored parameter prediction uses
        n_jobs = params["n_jobs"]
        if not (
            n_jobs is None or (type(n_jobs) is int and (n_jobs == -1 or 1 <= n_jobs <= 1 << 16))
        ):
            raise ValueError(
                f"{path}: field `params.n_jobs`: expected null, -1 or a thread count, got "
                f"{n_jobs!r}"
            )
    est = cls(**params)
    if model.classes_json is None:
        est.classes_ = np.arange(model.n_classes)
    else:
        est.classes_ = np.asarray(json.loads(model.classes_json))
    est._set_model(model)
    for name, value in json.loads(model.info_json).items():
        if name in cls._info_attrs:
            setattr(est, name, _restored(value))
    if not hasattr(est, "gamma_"):
        est.gamma_ = model.gamma if model.gamma is not None else 1.0
    est._loaded()
    if model.scaler is None:
        return est
    return _pipeline(est, model, json.loads(model.info_json).get(_SCALER_INFO) or {})


def _pipeline(est, model, scaler_params):
    """The pipeline of a loaded model with a scaler: the scaler rebuilt, the estimator's model
    without it (the pipeline standardises first)."""
    from sklearn.pipeline import make_pipeline

    from .preprocessing import BagStandardScaler

    allowed = BagStandardScaler().get_params()
    scaler = BagStandardScaler(
        **{k: v for k, v in scaler_params.items() if k in allowed and isinstance(v, bool)}
    )
    scaler.mean_, scaler.scale_ = (np.array(a) for a in model.scaler)
    scaler.n_features_in_ = model.n_features
    est._set_model(model.with_scaler(None))
    return make_pipeline(scaler, est)
