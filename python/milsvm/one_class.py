"""The one-class MI-SVM (Vijayanarasimhan's report on multiple-instance learning, Figures 1-2):
a one-class SVM (Schoelkopf et al.) on the instances of the positive bags, with a max
constraint per positive bag. The work runs in the Rust core (``src/one_class.rs``)."""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _core
from ._bags import as_bags
from ._legacy import FitProgress, as_choice, as_float, as_int, as_n_jobs
from ._legacy import as_gamma_or_rule
from .annealing import _AnnealingClassifier
from ._legacy import _ExpansionVectorClassifier

__all__ = ["OneClassMISVM"]


class OneClassMISVM(_ExpansionVectorClassifier):
    """One-class MI-SVM: the support of the positive bags' instances, with bag max constraints.

    The one-class SVM ``min 1/2 ||w||^2 + 1/(nu l) sum xi - rho``, ``w . phi(x) >= rho - xi``
    over the ``l`` instances of the positive training bags (dual: ``0 <= a <= 1/(nu l)``,
    ``sum a = 1``, solved by the crate's SMO). With ``bag_constraints=True`` every positive bag
    ``X`` adds ``max_{x in X} w . phi(x) >= rho - Xi_X`` with penalty ``1/(nu n_bags)``: a
    pseudo-sample spreading weight 1 over the bag's currently maximal instances (Figure 2):
    starting with no pseudo-sample (``a = 0``, the plain one-class SVM), every bag's
    pseudo-sample is put on its currently maximal instances and the problem re-solved
    (warm-started) until no bag's maximal instances change, i.e. no max constraint is violated
    (the report: 2-3 rounds), or ``max_iter`` rounds (then a ``ConvergenceWarning``). ``bag_constraints=False`` is the plain one-class SVM: the same
    decision values as ``sklearn.svm.OneClassSVM(nu=nu, gamma=gamma)`` divided by ``nu l``
    (LIBSVM scales the dual by ``nu l``).

    Scores: ``f(x) = sum_t coef_t k(xv_t, x) + intercept`` (``intercept = -rho``); a bag's score
    is the max over its instances; ``predict`` gives ``classes_[1]`` where it is > 0.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1]: an upper bound on the fraction of outlier instances (and bags).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel.
    gamma : "scale", "median" or float, default="scale"
        Gaussian width (over the positive bags' instances).
    bag_constraints : bool, default=True
        Add the per-bag max constraints (Figure 2).
    max_iter : int, default=20
        Cap on the activation rounds.
    tol : float, default=1e-3
        Relative KKT tolerance of the SMO, in (0, 1).
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    verbose : int, default=0
        0: silent; 1: a progress bar over the rounds on stderr when it is a terminal; 2: also
        the objective of every round.

    Attributes
    ----------
    xv_, coef_, intercept_ :
        The model form (support instances, their weights, ``-rho``).
    rho_ : float
        The offset ``rho``.
    dual_coef_ : ndarray
        Dual variables of the positive bags' instances (in order).
    bag_dual_coef_ : ndarray
        Dual variables of the bag pseudo-samples.
    active_ : ndarray of bool
        Positive bags whose max constraint (pseudo-sample) was in the last solve (all of them
        after the first round).
    objective_history_ : ndarray
        Dual objective after each round.
    n_iter_ : int
        Rounds run.
    converged_ : bool
        Whether no max constraint was violated at the end.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        The two labels of ``y`` (``classes_[1]`` is the class modelled).
    n_features_in_ : int
        Number of features of an instance.
    """

    _poolings = ("max",)
    _info_attrs = ("n_iter_", "converged_", "objective_history_", "rho_", "gamma_")
    instance_decision_function = _AnnealingClassifier.instance_decision_function
    predict_instances = _AnnealingClassifier.predict_instances

    def __init__(self, nu=0.5, kernel="rbf", gamma="scale", bag_constraints=True, max_iter=20, tol=1e-3,
                 n_jobs=None, verbose=0):
        self.nu = nu
        self.kernel = kernel
        self.gamma = gamma
        self.bag_constraints = bag_constraints
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, bags, y):
        """Fit on the positive bags (``y == classes_[1]``); the others are ignored.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
        y : array-like of shape (n_bags,)
            Two labels; ``classes_[1]`` (the larger) marks the bags to model.

        Returns
        -------
        self
        """
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=False)
        if not isinstance(self.bag_constraints, (bool, np.bool_)):
            raise TypeError(f"bag_constraints must be a bool, got {self.bag_constraints!r}")
        start = time.perf_counter()
        max_iter = as_int("max_iter", self.max_iter)
        with FitProgress(self, max(max_iter, 0), "round") as progress:
            out = _core.fit_one_class(
                bags.core_instances(),
                bags.bag_ptr,
                labels,
                nu=as_float("nu", self.nu),
                kernel=as_choice("kernel", self.kernel, ("rbf", "linear")),
                gamma=as_gamma_or_rule(self.gamma),
                bag_constraints=bool(self.bag_constraints),
                max_iter=max_iter,
                tol=as_float("tol", self.tol),
                n_jobs=as_n_jobs(self.n_jobs),
                progress=progress.callback(),
            )
        self.fit_time_ = time.perf_counter() - start
        self._set_model(out["model"])
        self.rho_ = -self.intercept_
        self.gamma_ = float(out["gamma"])
        self.dual_coef_ = out["alpha"]
        self.bag_dual_coef_ = out["bag_alpha"]
        self.active_ = np.asarray(out["active"], dtype=bool)
        self.objective_history_ = np.asarray(out["objective_history"], dtype=np.float64)
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        if not self.converged_:
            warnings.warn(
                f"OneClassMISVM stopped at max_iter={self.max_iter} with a violated bag constraint; "
                "the model of the last round is kept", ConvergenceWarning, stacklevel=2,
            )
        if not out["smo_converged"]:
            warnings.warn("OneClassMISVM: an SMO solve stopped at its iteration cap", ConvergenceWarning,
                          stacklevel=2)
        return self
