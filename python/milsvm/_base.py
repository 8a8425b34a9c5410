"""What every milsvm estimator shares: one base class with the one ``fit``, and the mixin for
what several share (the expansion-vector attributes).

:class:`MILClassifier` is the base of every estimator. Its ``fit`` is a template: convert the
bags, encode the labels, build the core's parameters, run the core's fit (progress, Ctrl-C),
then install the compiled model and the fit record, and warn once if a loop stopped at its cap.
A family module declares per estimator only what differs:

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

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from . import _core, _registry
from ._bags import as_bags
from ._model import CompiledModelMixin, threads
from ._progress import FitProgress

#: Folds of the internal cross-validation behind ``probability=True``.
CALIBRATION_FOLDS = 5

__all__ = ["MILClassifier", "ExpansionVectorsMixin", "seed_of", "class_weight_vector", "encode_labels",
           "calibration_folds", "predict_path"]


def seed_of(random_state):
    """A 64-bit seed for the core from an int, ``None`` or a ``RandomState``."""
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def class_weight_vector(class_weight, classes):
    """``None``, ``"balanced"`` or one weight per class index from a dict keyed by label (labels
    left out weigh 1); other values pass through for the core to refuse. With ``classes=None``
    (a check without data) a dict gives its weights in its own order, for the core to check."""
    if not isinstance(class_weight, dict):
        return class_weight
    if classes is None:
        keys = list(class_weight)
    else:
        known = set(np.asarray(classes).tolist())
        unknown = [_plain(k) for k in class_weight if _plain(k) not in known]
        if unknown:
            raise ValueError(f"class_weight names labels that are not in y: {unknown!r} "
                             f"(classes: {np.asarray(classes).tolist()!r})")
        keys = np.asarray(classes).tolist()
    out = []
    for c in keys:
        w = class_weight.get(c, 1.0)
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"class_weight[{_plain(c)!r}] must be a real number, got {_plain(w)!r} "
                            f"({type(w).__name__})")
        out.append(float(w))
    return out


def _plain(value):
    """A NumPy scalar as the Python value it holds (for messages: ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_verbose(verbose):
    if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral):
        raise TypeError(f"verbose must be an integer, got {_plain(verbose)!r} ({type(verbose).__name__})")


def calibration_folds(random_state):
    """The splitter of the internal cross-validation behind ``probability=True``:
    ``StratifiedKFold(5, shuffle=True)`` seeded by ``random_state`` when it is an int, by a draw
    from it when it is a ``RandomState``, and by 0 when it is ``None`` or the estimator has none
    (so that ``probability=True`` is deterministic for every estimator)."""
    if random_state is None:
        seed = 0
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seed = int(random_state)
    else:
        seed = seed_of(random_state)
    return StratifiedKFold(n_splits=CALIBRATION_FOLDS, shuffle=True, random_state=seed)


def _check_probability(probability, labels, classes):
    """``probability`` as ``False``, ``True`` or ``"ensemble"``; when set, at least
    ``CALIBRATION_FOLDS`` bags of every class (``labels=None``: the value only)."""
    if isinstance(probability, str):
        if probability != "ensemble":
            raise ValueError(f'probability must be True, False or "ensemble", got {probability!r}')
    elif isinstance(probability, (bool, np.bool_)):
        probability = bool(probability)
    else:
        raise TypeError(f'probability must be True, False or "ensemble", got {_plain(probability)!r} '
                        f"({type(probability).__name__})")
    if probability and labels is not None:
        counts = np.bincount(labels, minlength=len(classes))
        few = [(_plain(classes[c]), int(n)) for c, n in enumerate(counts) if n < CALIBRATION_FOLDS]
        if few:
            listed = ", ".join(f"{c!r}: {n}" for c, n in few)
            raise ValueError(
                f"probability={probability!r} calibrates on a {CALIBRATION_FOLDS}-fold internal cross-validation "
                f"and needs at least {CALIBRATION_FOLDS} bags of every class; too few bags of class {listed}")
    return probability


def _sigmoids(scores, labels):
    """Platt's ``(a, b)`` per output of ``scores`` (``n_bags x n_outputs``) against the encoded
    ``labels`` (one output: class 1 is positive; else one-vs-rest)."""
    n_outputs = scores.shape[1]
    a, b = [], []
    for c in range(n_outputs):
        positive = labels == 1 if n_outputs == 1 else labels == c
        ac, bc = _core.fit_sigmoid(np.ascontiguousarray(scores[:, c]), positive.tolist())
        a.append(ac)
        b.append(bc)
    return a, b


def _has_probability(estimator):
    """``predict_proba`` exists only with ``probability=True`` (scikit-learn's ``SVC`` rule)."""
    if not getattr(estimator, "probability", False):
        raise AttributeError(f"predict_proba is not available when probability=False "
                             f"(fit {type(estimator).__name__} with probability=True)")
    return True


def _not_class_labels(y):
    """``None`` when the 1-D array of finite labels ``y`` holds class labels (integers,
    booleans, strings, floats that are whole numbers within int64), else the target type scikit-learn's
    ``type_of_target`` names it: ``"continuous"`` (other floats) or ``"unknown"`` (objects that
    are not strings, complex numbers, other types). Written here because scikit-learn's function
    discovers dataframe plugins on its first call, a cost paid by the first fit of every process
    (the peers' first fits in ``benches/bench_peers.py`` measure it)."""
    kind = y.dtype.kind
    if kind == "O":
        return None if all(isinstance(v, str) for v in y) else "unknown"
    if kind == "f":
        with np.errstate(invalid="ignore"):  # values beyond int64 are "continuous"
            return "continuous" if np.any(y != y.astype(np.int64)) else None
    return None if kind in "biuUS" else "unknown"


def encode_labels(y, n_bags, *, multiclass, name):
    """``(classes, class index per bag)`` of the labels ``y``, with the refusals of every fit:
    not 1-D, not one per bag, non-finite, not class labels, one class only, or more than two for
    a binary-only estimator (``name`` in the message)."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = np.ravel(y) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per bag), got shape {y.shape}")
    if len(y) != n_bags:
        raise ValueError(f"y has {len(y)} labels for {n_bags} bags")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y has a non-finite label (NaN or infinity)")
    kind = _not_class_labels(y)
    if kind is not None:
        raise ValueError(f"y must hold class labels (binary or multi-class), got target type {kind!r}")
    # the sorted distinct labels and their codes, as np.unique(y, return_inverse=True) gives
    # them; its first call in a process costs several times this whole function's
    classes = np.array(sorted(set(y.tolist())), dtype=y.dtype)
    encoded = np.searchsorted(classes, y)
    if len(classes) < 2:
        raise ValueError(f"y holds a single class ({_plain(classes[0])!r}); at least two classes are needed")
    if len(classes) > 2 and not multiclass:
        raise ValueError(f"{name} is binary, but y holds {len(classes)} classes")
    return classes, encoded.astype(np.int64)


class MILClassifier(CompiledModelMixin, ClassifierMixin, BaseEstimator):
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

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_core_fit", cls._core_fit) and not cls.__name__.startswith("_"):
            _registry.register(cls)

    # ----------------------------------------------------------------------------------------
    # The template fit
    # ----------------------------------------------------------------------------------------

    def fit(self, bags, y):
        """Fit on bags and one label per bag.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
            One ``(n_instances, n_features)`` matrix per bag.
        y : array-like of shape (n_bags,)
            Two labels (any values; ``classes_[1]`` is positive), or more for one-vs-rest where
            the estimator supports it.

        Returns
        -------
        self
            Fitted. An interrupted fit (``KeyboardInterrupt``, raised within about a second of
            Ctrl-C) leaves the estimator as it was. With ``probability=True``, five more fits on
            the internal folds give the calibration (see :meth:`predict_proba`).
        """
        job = self._fit_job(bags, y)
        with FitProgress(job["name"], job["verbose"], self._progress_unit, job["total"]) as progress:
            name, data = self._core_input(job["bags"])
            fit = getattr(_core, name)(*data, job["labels"], job["params"], progress.callback())
        self._install(job, fit, time.perf_counter() - job["start"])
        self._warn_unconverged(fit)
        if job["verbose"]:
            print(f"[{job['name']}] {self._fit_summary()}, {self.fit_time_:.3f} s")
        return self

    def fit_path(self, bags, y, Cs):
        """Fit one copy of this estimator per value of ``C`` in ``Cs``, as one path.

        Where the core has a path (``_c_path``: MIKernel, ReducedSet, NSK, sMIL, RSVM, MILES,
        SIL, STK), what does not depend on ``C`` is computed once (the set-kernel matrix, the
        kernel-row cache, the expansion vectors and their kernel values, MILES's embedding,
        SIL's instance kernel, STK's statistic vectors and their kernel). MIKernel and RSVM
        start each solve from the solution at the next smaller ``C`` (their Newton solver ends
        at the exact minimiser from any start: the models equal independent fits to about 1e-9
        of the scores); ReducedSet, NSK, sMIL, MILES, SIL and STK start every solve as an
        independent fit does, and their models equal independent fits bit for bit. The other
        estimators (SparseMI, the annealing family, SVMCC) are fitted once per value: their outer
        loops are not convex, and a start from another ``C`` could change the result. With
        ``random_state=None`` a path draws one seed for all values, independent fits one each.

        Parameters
        ----------
        bags, y
            As for :meth:`fit`.
        Cs : sequence of float
            The values of ``C`` (each finite and > 0; any order, repeats allowed).

        Returns
        -------
        list of estimators
            Fitted clones of this estimator with ``C`` set to each value, in the order of ``Cs``
            (this estimator is left as it is). Each ``fit_time_`` is its share of the path's time
            (the path's time divided by the number of values). With ``probability=True`` and a
            core path, the calibration's refits on the internal folds are paths too (one per
            fold), inside that time; the sigmoids equal each value's own calibration up to the
            models' differences above.
        """
        from sklearn.base import clone

        if "C" not in self.get_params(deep=False):
            raise TypeError(f"{type(self).__name__} has no parameter C: fit_path needs one")
        if isinstance(Cs, (str, bytes)) or not hasattr(Cs, "__iter__"):
            raise TypeError(f"Cs must be a sequence of numbers, got {Cs!r}")
        Cs = list(Cs)
        for c in Cs:
            if isinstance(c, bool) or not isinstance(c, numbers.Real):
                raise TypeError(f"Cs must hold real numbers, got {c!r} ({type(c).__name__})")
        if not Cs or not all(np.isfinite(c) and c > 0 for c in Cs):
            raise ValueError(f"every C of a path must be a finite number > 0 (at least one), got {Cs!r}")
        Cs = [float(c) for c in Cs]
        estimators = [clone(self).set_params(C=c) for c in Cs]
        if not self._c_path:
            return [e.fit(bags, y) for e in estimators]
        job = self._fit_job(bags, y)
        job["params"]["C"] = Cs[0]  # ignored by the path; a valid value for the builder's check
        with FitProgress(job["name"], job["verbose"], self._progress_unit, job["total"] * len(Cs)) as progress:
            name, data = self._core_input(job["bags"])
            fits = getattr(_core, name + "_path")(*data, job["labels"], job["params"], Cs, progress.callback())
        calibrations = [None] * len(Cs)
        if job["probability"]:
            # the internal folds' refits as paths too: the same models as each value's own
            # calibration (one fit_path per fold instead of one fit per fold and value)
            calibrations = self._calibrations(job["bags"], job["classes"], job["labels"], job["probability"], Cs)
            job["probability"] = False
        share = (time.perf_counter() - job["start"]) / len(Cs)
        for estimator, fit, calibrate in zip(estimators, fits, calibrations):
            estimator._install(job, fit, share)
            if calibrate is not None:
                estimator.model_ = calibrate(estimator.model_)
            estimator._warn_unconverged(fit)
            if job["verbose"]:
                print(f"[{job['name']}] C={estimator.C:g}: {estimator._fit_summary()}, {estimator.fit_time_:.3f} s")
        return estimators

    def _fit_job(self, bags, y):
        """What a fit (or a path) needs before the core runs: checked ``verbose``, the bags, the
        encoded labels, ``probability`` checked against them, the core's parameters, the
        progress total of one fit and the start time."""
        verbose = getattr(self, "verbose", 0)
        _check_verbose(verbose)
        # NaN and infinity are refused by the core while it reads the bags (naming the bag and
        # the instance), so they are not looked for here: no second pass over the values
        bags = as_bags(bags, check_finite=False)
        name = type(self).__name__
        classes, labels = encode_labels(y, len(bags), multiclass=self._multiclass, name=name)
        probability = _check_probability(getattr(self, "probability", False), labels, classes)
        params = self._core_params(bags, classes, labels)
        n_problems = 1 if len(classes) == 2 else len(classes)
        return {"name": name, "verbose": int(verbose), "bags": bags, "classes": classes, "labels": labels,
                "probability": probability, "params": params,
                "total": self._progress_total(params) * n_problems, "start": time.perf_counter()}

    def _core_input(self, bags):
        """The core's fit binding for ``bags`` (its path: the name with ``_path``) and the
        arguments that give it the bags: ``_core_fit`` on the stacked instances and offsets."""
        return self._core_fit, (bags.core_instances(), bags.bag_ptr)

    def _install(self, job, fit, seconds):
        """Install the core's result ``fit`` of ``job`` (:meth:`_fit_job`): the compiled model,
        the fitted attributes, the calibration with ``probability=True``; ``fit_time_`` is
        ``seconds`` plus the calibration's time."""
        start = time.perf_counter()
        bags, classes = job["bags"], job["classes"]
        state = {"classes_": classes, "model_": fit.model, "gamma_": float(fit.gamma)}
        state.update(self._fitted(fit, bags, len(classes) == 2))
        if bags.dtype == np.float32 and state["model_"].input_dtype != "float32":
            state["model_"] = state["model_"].with_input_dtype("float32")  # recorded in the model file
        if job["probability"]:
            calibrate, = self._calibrations(bags, classes, job["labels"], job["probability"])
            state["model_"] = calibrate(state["model_"])
        state["fit_time_"] = seconds + (time.perf_counter() - start)
        state["n_features_in_"] = state["model_"].n_features
        self.__dict__.update(state)

    def _calibrations(self, bags, classes, labels, mode, Cs=None):
        """What ``probability=mode`` adds to the model of each value of ``Cs`` (``None``: the
        estimator as it is), as one function per value from the fitted model to the calibrated
        one. The estimator is refitted (``probability=False``) on each training part of
        :func:`calibration_folds` (with ``Cs``, as one :meth:`fit_path` per part, its held-out
        scores from one kernel evaluation, ``_core.decision_functions``) and scores its held-out
        part. ``True``: Platt's sigmoid per output fitted on all held-out scores, the protocol
        of ``CalibratedClassifierCV(method="sigmoid", ensemble=False)`` and libsvm. ``"ensemble"``:
        each part's model with the sigmoid fitted on its own held-out scores, the members of
        ``Model.with_ensemble``, the protocol of ``CalibratedClassifierCV(method="sigmoid",
        ensemble=True)``."""
        from sklearn.base import clone

        splitter = calibration_folds(self.get_params(deep=False).get("random_state"))
        n_values = 1 if Cs is None else len(Cs)
        n_outputs = 1 if len(classes) == 2 else len(classes)
        scores = np.empty((n_values, len(bags), n_outputs))
        members = [[] for _ in range(n_values)]
        for train, test in splitter.split(np.zeros(len(labels)), labels):
            part = clone(self).set_params(probability=False, verbose=0)
            held_out = bags[test]
            if Cs is None:
                parts = [part.fit(bags[train], classes[labels[train]])]
                scored = [parts[0]._model().decision_function(held_out.core_instances(), held_out.bag_ptr,
                                                              threads(self.n_jobs))]
            else:
                parts = part.fit_path(bags[train], classes[labels[train]], Cs)
                scored = _core.decision_functions([e._model() for e in parts], held_out.core_instances(),
                                                  held_out.bag_ptr, threads(self.n_jobs))
            for k, (fitted, s) in enumerate(zip(parts, scored)):
                scores[k][test] = s
                if mode == "ensemble":
                    members[k].append(fitted._model().with_calibration(_sigmoids(s, labels[test])))
        if mode == "ensemble":
            return [lambda model, m=m: model.with_ensemble(m) for m in members]
        return [lambda model, ab=_sigmoids(scores[k], labels): model.with_calibration(ab)
                for k in range(n_values)]

    @classmethod
    def _grid_for(cls, params):
        """The grid of ``--grid auto`` beside the fixed ``params``: ``_default_grid`` without
        ``gamma`` when the kernel (given in ``params``, else the default) is linear."""
        grid = {k: list(v) for k, v in cls._default_grid.items()}
        kernel = params.get("kernel", cls().get_params().get("kernel"))
        if kernel == "linear":
            grid.pop("gamma", None)
        return grid

    def _check_params(self, classes=None):
        """Check the parameters as :meth:`fit` does, without data or fitting.

        Builds the core's parameters the way ``fit`` does and runs the core's own check of the
        declared ranges and cross-field rules (``milsvm._core.check_X``), so that a refused
        value raises the same ``TypeError`` or ``ValueError`` (with the same message) as ``fit``
        would. Checks that need the data stay in ``fit``: ``n_xv`` against the number of
        training instances, given starting points against the number of features, the labels
        named by a ``class_weight`` dict (checked here too when ``classes`` is given) and the
        bags per class that ``probability=True`` needs.

        Parameters
        ----------
        classes : array-like or None
            The class labels, if known.

        Raises
        ------
        TypeError, ValueError
            A parameter value that ``fit`` would refuse (the message names it).
        """
        _check_verbose(getattr(self, "verbose", 0))
        _check_probability(getattr(self, "probability", False), None, classes)
        params = self._core_params(None, classes, None, check_only=True)
        getattr(_core, "check_" + self._core_fit[len("fit_"):])(params)

    def _core_params(self, bags, classes, labels, check_only=False):
        """The core's parameters: every constructor parameter under its own name (the core's
        builder parses and checks it), ``random_state`` as ``seed``, ``class_weight`` by class
        index, plus ``_core_fixed``. ``check_only``: for :meth:`_check_params`, without data
        (``bags`` and ``labels`` are None, ``classes`` may be): what needs the data is left
        out."""
        params = dict(self._core_fixed)
        for key, value in self.get_params(deep=False).items():
            if key in self._python_only:
                continue
            if key == "random_state":
                params["seed"] = seed_of(value)
            elif key == "class_weight":
                params[key] = class_weight_vector(value, classes)
            else:
                params[key] = value
        return params

    def _progress_total(self, params):
        """The cap on reported steps of one binary problem (a progress bar's length)."""
        cap = params.get("max_iter", 0)
        return cap if isinstance(cap, numbers.Integral) and cap > 0 else 0

    def _fitted(self, fit, bags, binary):
        """The family's fitted attributes from the core's result ``fit`` (model, gamma,
        classes, fit time and width are set by ``fit``)."""
        return {}

    def _warn_unconverged(self, fit):
        """One ``ConvergenceWarning`` per loop that stopped at its cap: the outer loop
        (``converged_``, for estimators with a ``max_iter``) and an inner solver (the result's
        ``inner_converged``)."""
        name = type(self).__name__
        cap = self.get_params(deep=False).get("max_iter")
        if cap is not None and not getattr(self, "converged_", True):
            warnings.warn(f"{name} stopped at max_iter={cap} before its stopping rule was met; the model of the "
                          "last iteration is kept", ConvergenceWarning, stacklevel=3)
        if not getattr(fit, "inner_converged", True):
            warnings.warn(f"{name}: an inner solve stopped at its iteration cap (inner_max_iter) before its "
                          "tolerance was met", ConvergenceWarning, stacklevel=3)

    def _fit_summary(self):
        """The line ``verbose`` prints after a fit."""
        history = getattr(self, "objective_history_", None)
        if isinstance(history, np.ndarray) and history.ndim == 1 and len(history):
            return f"{self.n_iter_} iterations, objective {history[0]:.6g} -> {history[-1]:.6g}"
        return f"{getattr(self, 'n_iter_', 0)} iterations"

    # ----------------------------------------------------------------------------------------
    # Prediction
    # ----------------------------------------------------------------------------------------

    def _check_bags(self, bags):
        if "n_features_in_" not in self.__dict__:
            check_is_fitted(self)
        # the core checks the values while it reads them (NaN / infinity: ValueError)
        return as_bags(bags, n_features=self.n_features_in_, check_finite=False)

    def predict(self, bags):
        """Predict the class of each bag.

        Parameters
        ----------
        bags : list of array-like or Bags
            The bags to classify.

        Returns
        -------
        ndarray of shape (n_bags,)
            Labels taken from ``classes_``.
        """
        return self._labels(self.decision_function(bags))

    def _labels(self, scores):
        """The predicted labels of bag scores (``(n_bags,)`` or ``(n_bags, n_classes)``)."""
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def explain(self, bags):
        """The instances behind each bag's prediction and their contributions.

        Mean pooling: each instance's share ``s_p / n`` of the bag score (the shares sum to
        it). Max pooling: the arg-max instance, whose score is the bag's, and its margin over
        the runner-up. Through a ``Pipeline``: ``pipe[-1].explain(pipe[:-1].transform(bags))``.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        list of BagExplanation
            One per bag: the predicted ``label``, its ``score``, the ``pooling``, the
            ``instance_scores``, the ``contributions``, the ``ranking`` of the instances (most
            decisive first), the ``top`` instance and, for max pooling, the ``margin``.
        """
        from ._explain import explain_bags

        bags = self._check_bags(bags)
        return explain_bags(self.instance_decision_function(bags), self.decision_function(bags), self.classes_,
                            self._model().pooling)

    @available_if(_has_probability)
    def predict_proba(self, bags):
        """Class probabilities of each bag (only with ``probability=True`` or ``"ensemble"``).

        Each output's score ``F`` goes through Platt's sigmoid ``1 / (1 + exp(a F + b))``,
        fitted at ``fit`` on out-of-fold scores of a 5-fold internal cross-validation (Platt
        2000; Lin, Lin & Weng 2007). Binary problems give ``[1 - p, p]``; one-vs-rest problems
        give each class its own output's ``p``, normalised to sum to 1 (uniform where every
        ``p`` is 0), as scikit-learn's ``CalibratedClassifierCV`` couples them. With
        ``probability="ensemble"`` these are the mean of the five fold models' probabilities,
        each model scoring the bag itself with its own sigmoid (``ensemble=True`` in
        scikit-learn's terms).

        ``predict`` and ``predict_proba`` can disagree. ``predict`` thresholds the score at 0,
        while ``p = 0.5`` lies at ``F = -b / a`` (with ``"ensemble"``, the probabilities do not
        come from this model's score at all): the bags whose score falls between the two
        get one label from ``predict`` and the other as the likelier class. With more than two
        classes, each class has its own sigmoid, so the largest score need not be the largest
        probability. Use ``predict_proba(bags).argmax(axis=1)`` for the class the
        probabilities favour.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            Columns in the order of ``classes_``.
        """
        bags = self._check_bags(bags)
        return self._model().predict_proba(bags.core_instances(), bags.bag_ptr, threads(self.n_jobs))

    @available_if(_has_probability)
    def predict_log_proba(self, bags):
        """The logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(bags))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags


def predict_path(estimators, bags):
    """``[e.predict(bags) for e in estimators]`` for the estimators of one
    :meth:`MILClassifier.fit_path`, with the kernel values of the bags' instances computed once
    over the union of the models' expansion vectors (``milsvm._core.decision_functions``) rather
    than once per model. The scores equal each model's own up to rounding."""
    if not estimators:
        return []
    first = estimators[0]
    bags = first._check_bags(bags)
    scores = _core.decision_functions([e._model() for e in estimators], bags.core_instances(), bags.bag_ptr,
                                      threads(first.n_jobs))
    return [e._labels(s[:, 0] if s.shape[1] == 1 else s) for e, s in zip(estimators, scores)]


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
    of the core's ``SvmFit``."""

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
