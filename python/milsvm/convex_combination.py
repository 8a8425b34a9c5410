"""SVM-CC: the convex-combination multi-instance SVM of Yang & Deng (A convex combination approach
for multi-instance learning; Algorithms 1-2, eq. 13-37). The work runs in the Rust core
(``src/convex_combination.rs``)."""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _core
from ._bags import as_bags
from ._legacy import FitProgress, as_choice, as_float, as_int, as_n_jobs
from ._legacy import as_class_weight, as_gamma_or_rule
from .annealing import _AnnealingClassifier
from ._legacy import _ExpansionVectorClassifier

__all__ = ["SVMCC"]


class SVMCC(_ExpansionVectorClassifier):
    """SVM-CC (Yang & Deng): each positive bag is the convex combination
    ``x̄_i = sum_j v_ij phi(x_ij)`` of its instances, every negative instance stands alone.

    The fit alternates (Algorithms 1-2)

    * a QP: the hinge C-SVM (the crate's SMO) on ``{x̄_i: +1, bound C1}`` and
      ``{negative instances: -1, bound C2}`` with ``C1 = C n_neg / (n_pos_bags + n_neg)``,
      ``C2 = C n_pos_bags / (n_pos_bags + n_neg)`` (section 3), times the class weights; the
      kernel between combinations is built from instance kernel rows;
    * the LP with ``w`` fixed, solved exactly: ``v_i`` goes to the instances of largest score
      ``g(x) = w . phi(x)`` of bag ``i`` (ties share it equally) and ``b`` minimises the weighted
      hinge sum (a weighted median),

    starting from uniform ``v``, until ``||v_new - v||_2 < tol`` or ``max_iter`` rounds (then a
    ``ConvergenceWarning``).

    Prediction (eq. 34-35): the instance score ``g(x) = sum_t coef_t k(xv_t, x) + b`` from the
    last QP's dual variables and ``v``; ``b`` is the LP's for ``kernel="linear"`` (Algorithm 1,
    eq. 20) and the QP's (eq. 36-37) for ``kernel="rbf"`` (Algorithm 2). A bag is scored by the
    **max** of its instance scores (positive when one instance is). With the linear kernel
    ``xv_`` is the weight vector ``w`` itself (one row; sparse input is never densified beyond
    it). Multi-class problems are one-vs-rest.

    Parameters
    ----------
    C : float, default=1.0
        Loss weight (> 0), split into ``C1`` and ``C2`` as above.
    kernel : {"linear", "rbf"}, default="linear"
        Instance kernel (linear: Algorithm 1; rbf: Algorithm 2).
    gamma : "scale", "median" or float, default="scale"
        Gaussian width.
    class_weight : None, "balanced" or dict, default=None
        Multiplies the bounds of the bags (positive combinations and negative instances).
    max_iter : int, default=80
        Cap on QP / LP rounds (the paper's 80).
    tol : float, default=1e-4
        Stop when the change of ``v`` (2-norm) falls below it (the paper's 1e-4).
    smo_tol : float, default=1e-3
        Relative KKT tolerance of the SMO solving each QP, in (0, 1).
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    verbose : int, default=0
        0: silent; 1: a progress bar over the rounds on stderr when it is a terminal; 2: also
        the objective of every round.

    Attributes
    ----------
    xv_ : ndarray
        Linear kernel: the weight vector(s) ``w`` (one row per output); rbf: the training
        instances with a nonzero coefficient.
    coef_ : ndarray
        Coefficients of ``xv_`` (linear: the identity).
    intercept_ : float or ndarray
        Bias ``b`` of the decision function.
    v_ : list of ndarray
        The final ``v`` of each positive training bag (multi-class: one such list per class).
    positive_bags_ : ndarray of int
        Indices of the positive training bags ``v_`` refers to.
    lp_intercept_, qp_intercept_ : float or ndarray
        The LP's and the QP's bias of the last round.
    objective_history_ : ndarray
        ``1/2 ||w||^2 + sum c xi`` after each round's LP.
    dv_history_ : ndarray
        ``||v_new - v||_2`` of each round.
    n_iter_ : int
        Rounds run (largest over the problems).
    converged_ : bool
        Whether the change of ``v`` fell below ``tol``.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    """

    _poolings = ("max",)
    _info_attrs = ("n_iter_", "converged_", "objective_history_", "dv_history_", "lp_intercept_", "qp_intercept_",
                   "gamma_")
    instance_decision_function = _AnnealingClassifier.instance_decision_function
    predict_instances = _AnnealingClassifier.predict_instances

    def __init__(self, C=1.0, kernel="linear", gamma="scale", class_weight=None, max_iter=80, tol=1e-4,
                 smo_tol=1e-3, n_jobs=None, verbose=0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.smo_tol = smo_tol
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, bags, y):
        """Fit on bags and one label per bag.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
        y : array-like of shape (n_bags,)
            Two labels (``classes_[1]`` is positive), or more for one-vs-rest.

        Returns
        -------
        self
        """
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        start = time.perf_counter()
        n_problems = 1 if len(self.classes_) == 2 else len(self.classes_)
        max_iter = as_int("max_iter", self.max_iter)
        with FitProgress(self, max(max_iter, 0) * n_problems, "round") as progress:
            out = _core.fit_svmcc(
                bags.core_instances(),
                bags.bag_ptr,
                labels,
                c=as_float("C", self.C),
                kernel=as_choice("kernel", self.kernel, ("linear", "rbf")),
                gamma=as_gamma_or_rule(self.gamma),
                class_weight=as_class_weight(self.class_weight, self.classes_),
                max_iter=max_iter,
                tol=as_float("tol", self.tol),
                smo_tol=as_float("smo_tol", self.smo_tol),
                n_jobs=as_n_jobs(self.n_jobs),
                progress=progress.callback(),
            )
        self.fit_time_ = time.perf_counter() - start
        binary = len(self.classes_) == 2
        self._set_model(out["model"])
        self.gamma_ = float(out["gamma"])
        v = [[np.asarray(b, dtype=np.float64) for b in problem] for problem in out["v"]]
        pb = [np.asarray(p, dtype=np.intp) for p in out["positive_bags"]]
        self.v_ = v[0] if binary else v
        self.positive_bags_ = pb[0] if binary else pb
        pick = (lambda a: float(a[0])) if binary else np.asarray
        self.lp_intercept_ = pick(out["lp_intercept"])
        self.qp_intercept_ = pick(out["qp_intercept"])
        hist = [np.asarray(h, dtype=np.float64) for h in out["objective_history"]]
        dv = [np.asarray(h, dtype=np.float64) for h in out["dv_history"]]
        self.objective_history_ = hist[0] if binary else hist
        self.dv_history_ = dv[0] if binary else dv
        self.n_iter_ = int(max(out["n_iter"]))
        self.converged_ = bool(all(out["converged"]))
        if not self.converged_:
            warnings.warn(
                f"SVMCC stopped at max_iter={self.max_iter} before the change of v fell below tol={self.tol}; "
                "the model of the last round is kept", ConvergenceWarning, stacklevel=2,
            )
        if not out["smo_converged"]:
            warnings.warn("SVMCC: an SMO solve stopped at its iteration cap", ConvergenceWarning, stacklevel=2)
        return self
