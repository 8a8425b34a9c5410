"""The template ``fit`` of every estimator, its C path (``fit_path``), and the checks of the
parameters without data (part of :class:`~milsvm._base.MILClassifier`; see :mod:`milsvm._base`)."""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _core
from ._bags import as_bags
from ._inputs import _check_verbose, class_weight_vector, encode_labels, seed_of
from ._probability import _check_probability
from ._progress import FitProgress

__all__ = ["FitMixin"]


class FitMixin:
    """The template ``fit``: convert the bags, encode the labels, build the core's parameters,
    run the core's fit, install the compiled model and the fit record."""

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
        with FitProgress(
            job["name"], job["verbose"], self._progress_unit, job["total"]
        ) as progress:
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
            raise ValueError(
                f"every C of a path must be a finite number > 0 (at least one), got {Cs!r}"
            )
        Cs = [float(c) for c in Cs]
        estimators = [clone(self).set_params(C=c) for c in Cs]
        if not self._c_path:
            return [e.fit(bags, y) for e in estimators]
        job = self._fit_job(bags, y)
        job["params"]["C"] = Cs[0]  # ignored by the path; a valid value for the builder's check
        with FitProgress(
            job["name"], job["verbose"], self._progress_unit, job["total"] * len(Cs)
        ) as progress:
            name, data = self._core_input(job["bags"])
            fits = getattr(_core, name + "_path")(
                *data, job["labels"], job["params"], Cs, progress.callback()
            )
        calibrations = [None] * len(Cs)
        if job["probability"]:
            # the internal folds' refits as paths too: the same models as each value's own
            # calibration (one fit_path per fold instead of one fit per fold and value)
            calibrations = self._calibrations(
                job["bags"],
                job["classes"],
                job["labels"],
                job["probability"],
                [self._model_record(f).model for f in fits],
                Cs,
            )
            job["probability"] = False
        share = (time.perf_counter() - job["start"]) / len(Cs)
        for estimator, fit, calibrate in zip(estimators, fits, calibrations):
            estimator._install(job, fit, share)
            if calibrate is not None:
                estimator.model_ = calibrate(estimator.model_)
            estimator._warn_unconverged(fit)
            if job["verbose"]:
                print(
                    f"[{job['name']}] C={estimator.C:g}: {estimator._fit_summary()}, "
                    f"{estimator.fit_time_:.3f} s"
                )
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
        return {
            "name": name,
            "verbose": int(verbose),
            "bags": bags,
            "classes": classes,
            "labels": labels,
            "probability": probability,
            "params": params,
            "total": self._progress_total(params) * n_problems,
            "start": time.perf_counter(),
        }

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
        solved = self._model_record(fit)
        state = {"classes_": classes, "model_": solved.model, "gamma_": float(solved.gamma)}
        state.update(self._fitted(fit, bags, len(classes) == 2))
        if bags.dtype == np.float32 and state["model_"].input_dtype != "float32":
            state["model_"] = state["model_"].with_input_dtype(
                "float32"
            )  # recorded in the model file
        if job["probability"]:
            (calibrate,) = self._calibrations(
                bags, classes, job["labels"], job["probability"], [state["model_"]]
            )
            state["model_"] = calibrate(state["model_"])
        state["fit_time_"] = seconds + (time.perf_counter() - start)
        state["n_features_in_"] = state["model_"].n_features
        self.__dict__.update(state)

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
        getattr(_core, "check_" + self._core_fit[len("fit_") :])(params)

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

    def _model_record(self, fit):
        """The record of the core's result ``fit`` that holds the compiled model and its
        ``gamma``: ``fit`` itself, or one of its nested records (a two-stage fit's second
        stage)."""
        return fit

    def _inner_converged(self, fit):
        """Whether every inner solve of the core's result ``fit`` met its tolerance: its
        ``inner_converged`` (True for a result without inner solves)."""
        return bool(getattr(fit, "inner_converged", True))

    def _warn_unconverged(self, fit):
        """One ``ConvergenceWarning`` per loop that stopped at its cap: the outer loop
        (``converged_``, for estimators with a ``max_iter``) and an inner solver
        (``_inner_converged``)."""
        name = type(self).__name__
        cap = self.get_params(deep=False).get("max_iter")
        if cap is not None and not getattr(self, "converged_", True):
            warnings.warn(
                f"{name} stopped at max_iter={cap} before its stopping rule was met; the model of "
                "the last iteration is kept",
                ConvergenceWarning,
                stacklevel=3,
            )
        if not self._inner_converged(fit):
            warnings.warn(
                f"{name}: an inner solve stopped at its iteration cap (inner_max_iter) before its "
                "tolerance was met",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _fit_summary(self):
        """The line ``verbose`` prints after a fit."""
        history = getattr(self, "objective_history_", None)
        if isinstance(history, np.ndarray) and history.ndim == 1 and len(history):
            return f"{self.n_iter_} iterations, objective {history[0]:.6g} -> {history[-1]:.6g}"
        return f"{getattr(self, 'n_iter_', 0)} iterations"
