"""Deterministic annealing MI-SVMs (Gehler & Chapelle, Deterministic Annealing for
Multiple-Instance Learning, AISTATS 2007) and the mi-SVM / MI-SVM heuristics (Andrews,
Tsochantaridis & Hofmann, Support Vector Machines for Multiple-Instance Learning, NIPS 2002).

Every estimator here learns an instance classifier ``f(x) = sum_k coef_k k(xv_k, x) + b`` with the
squared hinge and an l2 penalty (the paper's choice), and scores a bag by the maximum of its
instances' scores. The work runs in the Rust core (``src/annealing/``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._bags import as_bags
from ._legacy import FitProgress, as_choice, as_class_weight, as_float, as_gamma_or_rule, as_int, as_n_jobs, seed_of
from ._legacy import _ExpansionVectorClassifier

__all__ = ["ALSVM", "AWSVM", "ALPSVM", "miSVM", "MISVM"]


class _AnnealingClassifier(_ExpansionVectorClassifier):
    """The shared fit of the annealing family: the core call, the reduced basis and the fitted
    attributes. Subclasses set ``_method`` and the parameters."""

    _poolings = ("max",)
    _info_attrs = ("n_iter_", "n_solves_", "converged_", "p_hat_", "objective_history_", "temperatures_", "gamma_")
    _method = None

    def _core_params(self):
        """Method-specific keyword arguments of ``_core.fit_annealing``."""
        return {}

    def fit(self, bags, y):
        """Fit on bags and one label per bag.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
        y : array-like of shape (n_bags,)
            Two labels (any values; ``classes_[1]`` is positive), or more for one-vs-rest.

        Returns
        -------
        self
        """
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        kernel = as_choice("kernel", self.kernel, ("rbf", "linear"))
        gamma = as_gamma_or_rule(self.gamma)
        seed = seed_of(self.random_state)
        n_xv = None if self.n_xv is None else as_int("n_xv", self.n_xv)
        extra = {}
        if n_xv is not None:
            if isinstance(self.xv_init, str):
                extra["xv_init"] = as_choice("xv_init", self.xv_init, ("kmeans", "random"))
            else:
                extra["init_xv"] = self._given_basis(bags, n_xv)
        start = time.perf_counter()
        steps = as_int("max_iter", self.max_iter) if self._method in ("mi", "MI") else as_int(
            "max_temperatures", self.max_temperatures)
        n_problems = 1 if len(self.classes_) == 2 else len(self.classes_)
        with FitProgress(self, max(steps, 0) * n_problems, "step") as progress:
            out = _core.fit_annealing(
                bags.core_instances(),
                bags.bag_ptr,
                labels,
                method=self._method,
                c=as_float("C", self.C),
                kernel=kernel,
                gamma=gamma,
                n_xv=n_xv,
                class_weight=as_class_weight(self.class_weight, self.classes_),
                seed=seed,
                n_jobs=as_n_jobs(self.n_jobs),
                **self._core_params(),
                progress=progress.callback(),
                **extra,
            )
        self.fit_time_ = time.perf_counter() - start
        binary = len(self.classes_) == 2
        self._set_model(out["model"])
        self.gamma_ = float(out["gamma"])
        sizes = bags.bag_sizes
        split = np.cumsum(sizes)[:-1]
        per_problem = [np.split(p, split) for p in out["p"]]
        self.p_ = per_problem[0] if binary else per_problem
        self.p_hat_ = float(out["p_hat"][0]) if binary else np.asarray(out["p_hat"])
        histories = [np.asarray(h, dtype=np.float64) for h in out["objective_history"]]
        self.objective_history_ = histories[0] if binary else histories
        temps = [np.asarray(t, dtype=np.float64) for t in out["temperatures"]]
        self.temperatures_ = temps[0] if binary else temps
        self.n_iter_ = int(max(out["n_iter"]))
        self.n_solves_ = int(sum(out["n_solves"]))
        self.converged_ = bool(all(out["converged"]))
        if not self.converged_:
            cap = "max_iter" if self._method in ("mi", "MI") else "max_temperatures"
            warnings.warn(
                f"{type(self).__name__} stopped at {cap} before its stopping rule was met; "
                f"the model of the last round is kept", ConvergenceWarning, stacklevel=2,
            )
        if getattr(self, "verbose", 0):
            last = [h[-1] if len(h) else float("nan") for h in histories]
            print(f"[{type(self).__name__}] {self.n_iter_} rounds, {self.n_solves_} SVM solves, "
                  f"final objective {last}, p_hat {self.p_hat_}, {self.fit_time_:.3f} s")
        return self

    def _given_basis(self, bags, n_xv):
        """``xv_init`` given as an array of ``n_xv`` points (checked here)."""
        init = self.xv_init
        points = np.asarray(init.toarray() if sp.issparse(init) else init, dtype=np.float64)
        if points.shape != (n_xv, bags.n_features):
            raise ValueError(
                f"xv_init as an array must have shape ({n_xv}, {bags.n_features}), got {points.shape}"
            )
        if not np.all(np.isfinite(points)):
            raise ValueError("xv_init has a non-finite value")
        return np.ascontiguousarray(points)

    def instance_decision_function(self, bags):
        """Instance scores ``f(x)`` of every instance of every bag.

        Parameters
        ----------
        bags : list of array-like or Bags

        Returns
        -------
        list of ndarray
            One array per bag: shape (n_instances,) for binary problems, (n_instances,
            n_classes) for multi-class ones.
        """
        bags = self._check_bags(bags)
        scores = self.model_.instance_decision_function(bags.core_instances(), as_n_jobs(self.n_jobs))
        scores = scores[:, 0] if scores.shape[1] == 1 else scores
        return np.split(scores, np.cumsum(bags.bag_sizes)[:-1])

    def predict_instances(self, bags):
        """Instance labels from ``classes_`` (binary: ``classes_[1]`` where ``f(x) > 0``)."""
        check_is_fitted(self)
        out = []
        for s in self.instance_decision_function(bags):
            out.append(self.classes_[(s > 0).astype(int)] if s.ndim == 1 else self.classes_[np.argmax(s, axis=1)])
        return out


_COMMON_PARAMS = """
    C : float, default=1.0
        Loss weight (> 0).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel.
    gamma : "scale", "median" or float, default="scale"
        Gaussian width: "scale" is ``1 / (n_features * X.var())``; "median" is ``1 / (2 sigma^2)``
        with ``sigma`` the median pairwise distance between training instances (the paper's
        ``sigma_emp``).
    n_xv : int or None, default=None
        None: every training instance is a basis vector (the exact model). An int: a reduced
        basis of that many vectors chosen by ``xv_init`` (for large data: the SVM step then costs
        ``O(n_instances * n_xv^2)``).
    xv_init : {"kmeans", "random"} or array of shape (n_xv, n_features), default="kmeans"
        The reduced basis: k-means centroids of the training instances (k-means++ seeding and
        up to 20 Lloyd iterations, in the core), distinct random training instances, or the
        given points.
    class_weight : None, "balanced" or dict, default=None
        Loss weight per class: bag ``i`` costs ``C * weight[y_i]``. "balanced" weighs the
        positive and the negative bags of each binary problem by ``n_bags / (2 n_side)``.
    random_state : int, RandomState or None, default=None
        Seed of the reduced basis. Results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    verbose : int, default=0
        Print a summary of the fit."""

_COMMON_ATTRIBUTES = """
    xv_ : ndarray of shape (n_xv, n_features)
        Basis vectors with a nonzero coefficient (the support instances), or the reduced basis.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Coefficients ``beta``.
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    p_ : list of ndarray
        The final ``p`` of each training instance, one array per training bag (multi-class: one
        such list per class).
    p_hat_ : float or ndarray
        Mean fraction of positive instances per positive bag.
    objective_history_ : ndarray
        The objective after each temperature (heuristics: after each round).
    n_iter_ : int
        Temperatures (heuristics: rounds) run.
    n_solves_ : int
        SVM solves in all.
    converged_ : bool
        Whether the stopping rule was met before the cap.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    fit_time_ : float
        Seconds spent in the core."""


class ALSVM(_AnnealingClassifier):
    __doc__ = f"""AL-SVM: deterministic annealing over the instance labels (Gehler & Chapelle 2007,
    Algorithm 1), the annealed mi-SVM.

    Each instance of a positive bag has a probability ``p`` of a positive label; the SVM step
    minimises ``1/2 ||w||^2 + C sum [p l(+1, f) + (1 - p) l(-1, f)]`` (squared hinge ``l``), the
    ``p`` step ``p_j = sigmoid((lambda - C d_j) / T)``, ``d_j = l(+1, f_j) - l(-1, f_j)``, with
    the exact ``lambda >= 0`` that keeps ``sum_j p_j >= 1`` in every positive bag. The temperature
    starts at ``T0`` and is divided by ``decay`` until the mean entropy of ``p`` is below ``eps``,
    or, once ``T <= eps C``, until ``p`` moves by less than ``eps`` (mean KL) over a temperature.
    ``T0=1e-8`` with ``init="labels"`` is mi-SVM (see :class:`miSVM`).

    Parameters
    ----------{_COMMON_PARAMS}
    T0 : float or None, default=None
        Initial temperature (None: ``10 C``, the paper's choice).
    decay : float, default=1.5
        Temperature divisor per step (> 1).
    eps : float, default=1e-4
        Tolerance of the stopping rules: mean KL between rounds, mean entropy.
    init : {{"uniform", "labels"}}, default="uniform"
        Starting ``p`` in positive bags: 1/2 (Algorithm 1) or 1 (the bag label).
    max_temperatures : int, default=200
        Cap on the number of temperatures.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    temperatures_ : ndarray
        The temperatures visited.
    """

    _method = "al"

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", T0=None, decay=1.5, eps=1e-4, init="uniform",
                 n_xv=None, xv_init="kmeans", class_weight=None, max_temperatures=200, random_state=None,
                 n_jobs=None, verbose=0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.T0 = T0
        self.decay = decay
        self.eps = eps
        self.init = init
        self.n_xv = n_xv
        self.xv_init = xv_init
        self.class_weight = class_weight
        self.max_temperatures = max_temperatures
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _core_params(self):
        return {
            "t0": None if self.T0 is None else as_float("T0", self.T0),
            "decay": as_float("decay", self.decay),
            "eps": as_float("eps", self.eps),
            "init": as_choice("init", self.init, ("uniform", "labels")),
            "max_temperatures": as_int("max_temperatures", self.max_temperatures),
        }


class ALPSVM(ALSVM):
    __doc__ = f"""ALP-SVM: AL-SVM with a penalty on the fraction of positives per positive bag
    (Gehler & Chapelle 2007, section 6, eq. 12-13).

    The annealed objective of :class:`ALSVM` plus ``C2 sum_i (sum_j p_ij - m_i p_star)^2`` over
    the positive bags. The ``p`` step is a monotone 1-D fixed point per bag (exact); where it
    violates ``sum_j p_j >= 1`` the AL-SVM step on ``sum_j p_j = 1`` is used.

    Parameters
    ----------{_COMMON_PARAMS}
    C2 : float, default=1.0
        Penalty weight (>= 0; 0 gives AL-SVM).
    p_star : float, default=0.5
        Expected fraction of positive instances in a positive bag, in [0, 1].
    T0, decay, eps, init, max_temperatures :
        As in :class:`ALSVM`.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    temperatures_ : ndarray
        The temperatures visited.
    """

    _method = "alp"

    def __init__(self, C=1.0, C2=1.0, p_star=0.5, kernel="rbf", gamma="scale", T0=None, decay=1.5, eps=1e-4,
                 init="uniform", n_xv=None, xv_init="kmeans", class_weight=None, max_temperatures=200,
                 random_state=None, n_jobs=None, verbose=0):
        super().__init__(C=C, kernel=kernel, gamma=gamma, T0=T0, decay=decay, eps=eps, init=init, n_xv=n_xv,
                         xv_init=xv_init, class_weight=class_weight, max_temperatures=max_temperatures,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.C2 = C2
        self.p_star = p_star

    def _core_params(self):
        out = super()._core_params()
        out["c2"] = as_float("C2", self.C2)
        out["p_star"] = as_float("p_star", self.p_star)
        return out


class AWSVM(_AnnealingClassifier):
    __doc__ = f"""AW-SVM: deterministic annealing over the witness of each positive bag (Gehler &
    Chapelle 2007, Algorithm 2), the annealed MI-SVM / MICA.

    Each positive bag carries a distribution ``p`` over its instances; the SVM step minimises
    ``1/2 ||w||^2 + C sum p l(+1, f)`` over positive bags plus the negative instances' losses,
    the ``p`` step is ``p = softmax(-C l / T)`` per bag. When ``p`` stops changing within a
    temperature, the instances with ``p > eps`` are labelled positive, the others of positive
    bags dropped, and the SVM is retrained. ``T0=1e-8`` is MI-SVM (see :class:`MISVM`).

    Parameters
    ----------{_COMMON_PARAMS}
    T0 : float or None, default=None
        Initial temperature (None: ``10 C``).
    decay : float, default=1.5
        Temperature divisor per step (> 1).
    eps : float, default=1e-4
        Tolerance: mean KL between rounds, change of ``p`` in a temperature, witness threshold.
    max_temperatures : int, default=200
        Cap on the number of temperatures.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    temperatures_ : ndarray
        The temperatures visited.
    """

    _method = "aw"

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", T0=None, decay=1.5, eps=1e-4, n_xv=None,
                 xv_init="kmeans", class_weight=None, max_temperatures=200, random_state=None, n_jobs=None,
                 verbose=0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.T0 = T0
        self.decay = decay
        self.eps = eps
        self.n_xv = n_xv
        self.xv_init = xv_init
        self.class_weight = class_weight
        self.max_temperatures = max_temperatures
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _core_params(self):
        return {
            "t0": None if self.T0 is None else as_float("T0", self.T0),
            "decay": as_float("decay", self.decay),
            "eps": as_float("eps", self.eps),
            "max_temperatures": as_int("max_temperatures", self.max_temperatures),
        }


class _Heuristic(_AnnealingClassifier):
    def __init__(self, C=1.0, kernel="rbf", gamma="scale", max_iter=50, n_xv=None, xv_init="kmeans",
                 class_weight=None, random_state=None, n_jobs=None, verbose=0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.max_iter = max_iter
        self.n_xv = n_xv
        self.xv_init = xv_init
        self.class_weight = class_weight
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _core_params(self):
        return {"max_iter": as_int("max_iter", self.max_iter)}


class miSVM(_Heuristic):
    __doc__ = f"""mi-SVM (Andrews, Tsochantaridis & Hofmann 2002): the instance-label heuristic.

    Every instance of a positive bag starts positive; then train the SVM (squared hinge, l2
    penalty, as in Gehler & Chapelle), relabel each instance of a positive bag by the sign of
    ``f``, force the instance of largest score positive in a bag left without one, and repeat
    until no label changes (or ``max_iter`` rounds, with a ``ConvergenceWarning``). It equals
    ``ALSVM(T0=1e-8, init="labels")``.

    Parameters
    ----------{_COMMON_PARAMS}
    max_iter : int, default=50
        Cap on the train / relabel rounds.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    """

    _method = "mi"


class MISVM(_Heuristic):
    __doc__ = f"""MI-SVM (Andrews, Tsochantaridis & Hofmann 2002): the witness heuristic.

    Each positive bag starts represented by all its instances with weight ``1 / m_i`` (the
    kernel-space counterpart of the bag centroid, and AW-SVM's start); then train the SVM,
    choose each positive bag's witness, its instance of largest score, train on the witnesses
    and the negative instances, and repeat until no witness changes (or ``max_iter`` rounds).
    It equals ``AWSVM(T0=1e-8)`` when no bag has two instances of zero loss.

    Parameters
    ----------{_COMMON_PARAMS}
    max_iter : int, default=50
        Cap on the train / select rounds.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    """

    _method = "MI"
