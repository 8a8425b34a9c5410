"""What every milsvm estimator shares: one base class with the one ``fit``, and the mixin for
what several share (the expansion-vector attributes).

The base class is assembled from one mixin per concern: :class:`~milsvm._fit.FitMixin` (the
template ``fit``, ``fit_path``, the parameter check without data),
:class:`~milsvm._prediction.PredictionMixin` (``predict``, ``explain``) and
:class:`~milsvm._probability.ProbabilityMixin` (the calibration of ``probability=True``,
``predict_proba``); :mod:`milsvm._inputs` checks what a fit is given.

:class:`MILClassifier` is the base of every estimator. Its ``fit`` is a template: convert the
bags, encode the labels, build the core's parameters, run the core's fit (progress, Ctrl-C),
then install the compiled model and the fit record, and warn once if a loop stopped at its cap.
A family module declares per estimator only what differs:

* ``_init_params``: the constructor's parameter names, in order, and ``_init_defaults``: the
  defaults that are the class's own; ``__init__`` is built from them, every other default read
  from the core's declaration (:mod:`milsvm._constructor`);
* ``_core_fit``: the name of the binding in ``milsvm._core`` (its Rust builder parses and checks
  every parameter: names as the estimator spells them, ranges in one place);
* ``_core_fixed``: parameters the class fixes (``{"method": "al"}``);
* ``_fitted(fit, bags, binary)``: the family's fitted attributes from the core's typed result;
* optionally ``_core_params`` (parameters that need Python first, such as ``random_state``
  into a seed, done here, or SparseMI's ``init="kmeans"``; with ``check_only``, what can be
  built without data, for :meth:`MILClassifier._check_params`), ``_progress_unit``,
  ``_multiclass``, ``_poolings``, ``_info_attrs``, and ``_c_path = True`` when the core has a
  warm-started path over ``C`` (``<_core_fit>_path``, used by :meth:`MILClassifier.fit_path`);
* for the command line's reports and model selection: ``_objective_name``, ``_objective_step``
  and ``_objective_start`` (what ``objective_history_`` holds and follows), ``_default_grid``
  (what ``milsvm cv --grid auto`` searches) and ``_search_ranges`` (suggested ranges shown by
  ``milsvm models NAME``).

Subclasses register themselves (:mod:`milsvm._registry`) when they name a ``_core_fit`` and
their name does not start with ``_``.

The meaning of the shared parameter names is one: ``max_iter`` and ``tol`` are the cap and the
tolerance of an estimator's *outer* loop; the settings of an inner solver are ``inner_tol`` and
``inner_max_iter``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin

from . import _constructor, _registry
from ._fit import FitMixin
from ._inputs import _not_class_labels, class_weight_vector, encode_labels, seed_of  # noqa: F401 (tests)
from ._model import CompiledModelMixin
from ._prediction import PredictionMixin, predict_path
from ._probability import ProbabilityMixin, calibration_folds

__all__ = [
    "MILClassifier",
    "ExpansionVectorsMixin",
    "seed_of",
    "class_weight_vector",
    "encode_labels",
    "calibration_folds",
    "predict_path",
]


class MILClassifier(
    FitMixin, PredictionMixin, ProbabilityMixin, CompiledModelMixin, ClassifierMixin, BaseEstimator
):
    """Base of every milsvm estimator: the template ``fit``, prediction through the compiled
    model (``decision_function``, ``predict``, ``instance_decision_function``,
    ``predict_instances``, ``decision_function_bag``), ``score``, ``save`` (see the module
    docs).

    Binary problems accept any two labels; ``classes_[1]`` is the positive class (score > 0).
    Multi-class problems are one-vs-rest and predict the class of the largest score.
    """

    #: The fit binding in ``milsvm._core``.
    _core_fit = None
    #: Core parameters the class fixes.
    _core_fixed = {}
    #: The constructor's parameters, in order (``__init__`` is built from them).
    _init_params = None
    #: Defaults of this class's own (the others are the core's declared ones).
    _init_defaults = {}
    #: Constructor parameters the core does not take.
    _python_only = ("verbose", "probability")
    #: Whether more than two classes are fitted one-vs-rest (else refused).
    _multiclass = True
    #: What one reported step is ("iteration", "step", "round"); None: no progress reports.
    _progress_unit = None
    #: Whether the core fits a grid over ``C`` as one warm-started path (the binding
    #: ``<_core_fit>_path``); :meth:`fit_path` fits the other estimators one ``C`` at a time.
    _c_path = False
    #: What ``objective_history_`` holds, as reports and plots name it (None: no history).
    _objective_name = None
    #: What one entry of ``objective_history_`` follows: "iteration", "round" or
    #: "temperature" (reports plot those against ``temperatures_``, log scale, decreasing).
    _objective_step = "iteration"
    #: The number of the first entry of ``objective_history_`` (0: the value before the first
    #: step).
    _objective_start = 1
    #: The grid that ``milsvm cv --grid auto`` searches, ``{name: values}``: ``C`` over four
    #: decades and, for the Gaussian kernel, ``gamma`` at a tenth of, at, and ten times the
    #: "scale" width (``"k*scale"``: ``k`` times the "scale" width of the data, which the
    #: command line works out; see :meth:`_grid_for`).
    _default_grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": ["0.1*scale", "scale", "10*scale"]}
    #: Suggested search ranges of this estimator's parameters beyond ``_docs.SEARCH_RANGES``
    #: (shown by ``milsvm models NAME``).
    _search_ranges = {}

    def _store(self, arguments):
        """Store the constructor's arguments as attributes of the same names (scikit-learn's
        contract); ``arguments`` is ``locals()`` of ``__init__``."""
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    @classmethod
    def _get_param_names(cls):
        """The constructor's parameter names (scikit-learn's ``_get_param_names``), worked out
        once per class: ``clone`` and ``get_params`` ask for them at every call, and each
        answer costs an ``inspect.signature`` (a third of a cross-validated C path's time on
        MUSK1)."""
        names = cls.__dict__.get("_param_names")
        if names is None:
            names = tuple(super()._get_param_names())
            cls._param_names = names
        return list(names)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._init_params is not None and cls._core_fit and "__init__" not in cls.__dict__:
            cls.__init__ = _constructor.build_init(cls)
        if cls.__dict__.get("_core_fit", cls._core_fit) and not cls.__name__.startswith("_"):
            _registry.register(cls)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags


class ExpansionVectorsMixin:
    """The expansion-vector form ``f(x) = sum_k coef_k k(xv_k, x) + intercept`` as attributes:
    read-only views of the compiled model ``model_``."""

    @property
    def xv_(self):
        """The expansion vectors ``(n_xv, n_features)`` (a CSR matrix for a sparse basis)."""
        xv = self._model().xv
        if isinstance(xv, tuple):
            data, indices, indptr, shape = xv
            return sp.csr_matrix((data, indices, indptr), shape=shape)
        return xv

    @property
    def coef_(self):
        """Expansion coefficients: ``(n_xv,)`` for binary problems, else ``(n_classes, n_xv)``."""
        coef = self._model().coef
        return coef[0] if coef.shape[0] == 1 else coef

    @property
    def intercept_(self):
        """The bias: a float for binary problems, else ``(n_classes,)``."""
        b = self._model().intercept
        return float(b[0]) if b.shape[0] == 1 else b


class SingleSVMClassifier(ExpansionVectorsMixin, MILClassifier):
    """Estimators fitted by one SMO solve per binary problem (NSK, sMIL, SIL, STK): the record
    of the core's ``SvmFit``, and the core's warm-started path over ``C``."""

    _c_path = True
    _info_attrs = ("n_iter_", "converged_", "objective_", "n_support_", "gamma_")

    def _fitted(self, fit, bags, binary):
        return {
            "dual_coef_": fit.alpha[0] if binary else list(fit.alpha),
            "objective_": float(fit.objective[0]) if binary else np.asarray(fit.objective),
            "n_support_": int(fit.n_support[0]) if binary else np.asarray(fit.n_support),
            "n_iter_": int(fit.n_iter),
            "converged_": bool(fit.inner_converged),
        }

    def _fit_summary(self):
        return f"{self.n_iter_} SMO iterations, dual objective {self.objective_}"
