"""SparseMI and RSVM (Fu, Lu, Ting, Zhang: Learning Sparse Kernel Classifiers for
Multi-Instance Classification, IEEE TNNLS 2013; ECML PKDD 2011)."""

from __future__ import annotations

import time

import numpy as np

from . import _core
from ._base import BaseEstimator, MIClassifierMixin, as_choice, as_float, as_gamma, as_int, as_n_jobs, seed_of
from ._bags import as_bags

__all__ = ["SparseMI", "RSVM"]


class _ExpansionVectorClassifier(MIClassifierMixin, BaseEstimator):
    """Shared fit/predict of the label-mean model ``f(x) = sum_k beta_k k(z_k, x) + b``."""

    def _fit_xv(self, bags, y, *, max_iter, max_line_search, tol, solver):
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        kernel = as_choice("kernel", self.kernel, ("rbf", "linear"))
        start = time.perf_counter()
        out = _core.fit_sparse_mi(
            bags.core_instances(),
            bags.bag_ptr,
            labels,
            n_xv=as_int("n_xv", self.n_xv),
            c=as_float("C", self.C),
            kernel=kernel,
            gamma=as_gamma(self.gamma),
            max_iter=max_iter,
            max_line_search=max_line_search,
            tol=tol,
            solver=as_choice("solver", self.solver, ("newton", "lbfgs")),
            seed=seed_of(self.random_state),
            n_jobs=as_n_jobs(self.n_jobs),
        )
        binary = len(self.classes_) == 2
        self.xv_ = out["xv"]
        self.initial_xv_ = out["initial_xv"]
        self.coef_ = out["coef"][0] if binary else out["coef"]
        self.intercept_ = float(out["intercept"][0]) if binary else out["intercept"]
        self.objective_history_ = np.asarray(out["objective_history"])
        self.n_iter_ = int(out["n_iter"])
        self.gamma_ = float(out["gamma"])
        self.n_features_in_ = bags.n_features
        self.fit_time_ = time.perf_counter() - start
        if getattr(self, "verbose", 0):
            print(
                f"[{type(self).__name__}] {self.n_iter_} iterations, g: "
                f"{self.objective_history_[0]:.6g} -> {self.objective_history_[-1]:.6g}, "
                f"{self.fit_time_:.3f} s"
            )
        return self

    def decision_function(self, bags):
        """Bag scores ``F(X) = mean_p f(x_p)`` (label mean).

        Parameters
        ----------
        bags : list of array-like or Bags

        Returns
        -------
        ndarray of shape (n_bags,) for binary problems (positive means ``classes_[1]``),
        or (n_bags, n_classes) for multi-class problems.
        """
        bags = self._check_bags(bags)
        coef = np.atleast_2d(self.coef_)
        intercept = np.atleast_1d(np.asarray(self.intercept_, dtype=np.float64))
        scores = _core.decision_function(
            bags.core_instances(), bags.bag_ptr, self.xv_, coef, intercept, self.kernel, self.gamma_,
            as_n_jobs(self.n_jobs),
        )
        return scores[:, 0] if scores.shape[1] == 1 else scores


class SparseMI(_ExpansionVectorClassifier):
    """Sparse multi-instance kernel classifier with learned expansion vectors (SparseMI).

    The label-mean SVM (bag score = mean of the instance scores) with the kernel expansion
    restricted to ``n_xv`` expansion vectors ``Z``, found by gradient descent on the optimal value
    ``g(Z)`` of the squared-hinge SVM over ``Z`` (Fu et al. 2013, Algorithm 1). Multi-class
    problems are one-vs-rest with shared expansion vectors (eq. 19-20).

    Parameters
    ----------
    n_xv : int, default=10
        Number of expansion vectors (the model's size).
    C : float, default=1.0
        Loss weight (> 0).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel; the papers use the Gaussian kernel.
    gamma : "scale" or float, default="scale"
        Gaussian width; "scale" is ``1 / (n_features * X.var())`` over the training instances.
    init : {"random"}, default="random"
        Initial expansion vectors: ``n_xv`` distinct random training instances.
    max_iter : int, default=50
        Outer gradient iterations ``t_max`` (0 gives RSVM).
    max_line_search : int, default=10
        Step-halving trials per iteration ``s_max``.
    tol : float, default=1e-6
        Stop when an iteration decreases ``g`` by less than this fraction.
    solver : {"newton", "lbfgs"}, default="newton"
        Inner solver: exact primal Newton (fast) or argmin's L-BFGS; both reach the same optimum.
    random_state : int, RandomState or None, default=None
        Seed of the initialisation. Results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    verbose : int, default=0
        Print a summary of the fit.

    Attributes
    ----------
    xv_ : ndarray of shape (n_xv, n_features)
        The learned expansion vectors.
    initial_xv_ : ndarray of shape (n_xv, n_features)
        The expansion vectors the descent started from.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Expansion coefficients ``beta``.
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    objective_history_ : ndarray
        ``g(Z)`` at the start and after each outer iteration (non-increasing).
    n_iter_ : int
        Outer iterations done.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    """

    def __init__(self, n_xv=10, C=1.0, kernel="rbf", gamma="scale", init="random", max_iter=50,
                 max_line_search=10, tol=1e-6, solver="newton", random_state=None, n_jobs=None, verbose=0):
        self.n_xv = n_xv
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.init = init
        self.max_iter = max_iter
        self.max_line_search = max_line_search
        self.tol = tol
        self.solver = solver
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, bags, y):
        """Fit on bags and one label per bag.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
        y : array-like of shape (n_bags,)

        Returns
        -------
        self
        """
        as_choice("init", self.init, ("random",))
        return self._fit_xv(
            bags, y,
            max_iter=as_int("max_iter", self.max_iter),
            max_line_search=as_int("max_line_search", self.max_line_search),
            tol=as_float("tol", self.tol),
            solver=self.solver,
        )


class RSVM(_ExpansionVectorClassifier):
    """Label-mean SVM on ``n_xv`` random training instances as expansion vectors (Fu et al.'s
    RSVM baseline): SparseMI's inner problem without expansion-vector updates.

    Parameters and attributes are those of :class:`SparseMI` without the outer-loop ones.
    """

    def __init__(self, n_xv=10, C=1.0, kernel="rbf", gamma="scale", solver="newton", random_state=None, n_jobs=None):
        self.n_xv = n_xv
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.solver = solver
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, bags, y):
        """Fit on bags and one label per bag; returns self."""
        return self._fit_xv(bags, y, max_iter=0, max_line_search=1, tol=0.0, solver=self.solver)
