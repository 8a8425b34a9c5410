"""MI-Kernel and RS, the dense and the reduced-set baselines of Fu, Lu, Ting, Zhang (Learning
Sparse Kernel Classifiers for Multi-Instance Classification, IEEE TNNLS 2013, Tables I-II;
ECML PKDD 2011, Lemma 1 and eq. 14-15)."""

from __future__ import annotations

import time

import numpy as np

from . import _core
from ._model import CompiledModelMixin
from ._legacy import _ExpansionVectorClassifier
from ._bags import as_bags
from ._legacy import (
    MILClassifier, MIClassifierMixin, as_choice, as_class_weight, as_float, as_gamma, as_gamma_or_rule, as_int, as_n_jobs,
    seed_of,
)

__all__ = ["MIKernel", "ReducedSet"]


class MIKernel(MIClassifierMixin, MILClassifier):
    """Set-kernel SVM with the squared hinge (MI-Kernel, the dense baseline of Fu et al.).

    The SVM on the normalised set kernel
    ``k_set(X_i, X_j) = 1/(n_i n_j) sum_p sum_q k(x_ip, x_jq)`` (Gaertner et al. 2002). By Lemma 1
    of Fu et al. it is the label-mean SVM (bag score = mean of the instance scores) with every
    training instance as an expansion vector: ``F(X) = sum_i coef_i k_set(X_i, X) + b``. The
    coefficients are solved in the primal (squared hinge, exact Newton by default) and reported
    as the dual weights ``coef_i = 2 C y_i max(0, 1 - y_i F_i)``, zero for bags outside the
    margin. Multi-class problems are one-vs-rest, sharing the set-kernel matrix.

    The set kernel is built block by block, never as an ``N x N`` instance kernel; sparse
    instances stay sparse.

    Parameters
    ----------
    C : float, default=1.0
        Loss weight (> 0).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel ``k``.
    gamma : "scale" or float, default="scale"
        Gaussian width; "scale" is ``1 / (n_features * X.var())`` over the training instances.
    solver : {"newton", "lbfgs"}, default="newton"
        Solver of the squared-hinge problem; both reach the same optimum.
    n_jobs : int or None, default=None
        Threads (None or -1: all cores). Results do not depend on it.

    Attributes
    ----------
    coef_ : ndarray of shape (n_bags,) or (n_classes, n_bags)
        Coefficient of each training bag (``y_i`` times its dual weight).
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    support_ : ndarray of int
        Indices of the training bags with a nonzero coefficient (in any class).
    n_xv_ : int
        Number of expansion vectors: the training instances of the support bags (the paper's
        count for MI-Kernel, Fu et al. 2011 eq. 13).
    model_ : milsvm.Model
        The compiled predictor in the shared model form (Lemma 1): the instances of the support
        bags as expansion vectors with coefficients ``coef_i / n_i``, mean pooling. Prediction
        and ``save`` go through it; the training bags are not kept.
    objective_ : ndarray of shape (n_outputs,)
        ``1/2 coef^T K_set coef + C sum_i max(0, 1 - y_i F_i)^2`` at the fitted model, per
        one-vs-rest problem.
    n_iter_ : int
        Solver iterations (largest over the problems).
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    fit_time_ : float
        Seconds spent in ``fit``.
    """

    _info_attrs = ("coef_", "intercept_", "support_", "n_xv_", "objective_", "n_iter_", "gamma_")
    _core_fit = "legacy"

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", solver="newton", n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.solver = solver
        self.n_jobs = n_jobs

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
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        start = time.perf_counter()
        out = _core.fit_mi_kernel(
            bags.core_instances(),
            bags.bag_ptr,
            labels,
            c=as_float("C", self.C),
            kernel=as_choice("kernel", self.kernel, ("rbf", "linear")),
            gamma=as_gamma(self.gamma),
            solver=as_choice("solver", self.solver, ("newton", "lbfgs")),
            n_jobs=as_n_jobs(self.n_jobs),
        )
        binary = len(self.classes_) == 2
        self.coef_ = out["coef"][0] if binary else out["coef"]
        self.intercept_ = float(out["intercept"][0]) if binary else out["intercept"]
        self.support_ = np.asarray(out["support"], dtype=np.intp)
        self.n_xv_ = int(out["n_xv"])
        self.objective_ = np.asarray(out["objective"])
        self.n_iter_ = int(out["n_iter"])
        self.gamma_ = float(out["gamma"])
        self.n_features_in_ = bags.n_features
        self._set_model(out["model"])
        self.fit_time_ = time.perf_counter() - start
        return self


class ReducedSet(_ExpansionVectorClassifier):
    """Reduced-set approximation of MI-Kernel (RS, the post-processing baseline of Fu et al.).

    Fits :class:`MIKernel`, writes its weight vector as the instance expansion
    ``w = sum_t a_t phi(x_t)`` (``a_t = coef_i / n_i`` for instance ``t`` of bag ``i``) and
    approximates it by ``sum_k coef_k phi(xv_k)`` with ``n_xv`` vectors, chosen greedily by the
    fixed-point method of Schoelkopf and Smola (Learning with Kernels, section 18.4; Gaussian
    kernel): each new vector maximises the projection of the current residual. The iteration
    starts from ``n_restarts`` instances of the support bags: those with the largest projection
    among ``20 * n_restarts`` drawn at random (all of them when there are fewer); the best end
    point wins. After each vector all coefficients are re-projected (``K_zz coef = K_zx a``). The bias is then refitted with the
    coefficients fixed (exact minimiser of the squared-hinge label-mean loss). The result is the
    model form of :class:`SparseMI` (``xv_``, ``coef_``, ``intercept_``).

    Multi-class (the paper does not say how RS treats it): the one-vs-rest weight vectors share
    the reduced-set vectors, each new vector maximising ``sum_c`` of the squared residual
    projections, so ``n_xv`` counts the vectors of the whole model, as for SparseMI.

    Parameters
    ----------
    n_xv : int, default=10
        Number of reduced-set vectors (fewer if the residual vanishes first).
    C : float, default=1.0
        Loss weight (> 0) of the MI-Kernel being approximated.
    gamma : "scale" or float, default="scale"
        Gaussian width; "scale" is ``1 / (n_features * X.var())`` over the training instances.
    kernel : {"rbf"}, default="rbf"
        Only the Gaussian kernel: the fixed-point iteration is specific to it.
    max_fixed_point_iter : int, default=100
        Fixed-point iterations per restart (0 keeps the best starting instance).
    n_restarts : int, default=5
        Starting instances per new vector (the best-projecting of a random pool of
        ``20 * n_restarts``); the best result is kept.
    solver : {"newton", "lbfgs"}, default="newton"
        Solver of the MI-Kernel problem.
    random_state : int, RandomState or None, default=None
        Seed of the restarts. Results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).

    Attributes
    ----------
    xv_ : ndarray of shape (n_xv, n_features)
        The reduced-set vectors.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Their coefficients.
    intercept_ : float or ndarray of shape (n_classes,)
        Refitted bias.
    residual_history_ : ndarray
        ``sum_c ||w_c - sum_k coef_ck phi(xv_k)||^2`` before the first vector and after each one
        (non-increasing).
    dense_n_xv_ : int
        Expansion vectors of the approximated MI-Kernel.
    n_iter_ : int
        Fixed-point iterations in total.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    fit_time_ : float
        Seconds spent in ``fit`` (MI-Kernel included).
    """

    _info_attrs = ("n_iter_", "residual_history_", "dense_n_xv_", "gamma_")

    def __init__(self, n_xv=10, C=1.0, gamma="scale", kernel="rbf", max_fixed_point_iter=100, n_restarts=5,
                 solver="newton", random_state=None, n_jobs=None):
        self.n_xv = n_xv
        self.C = C
        self.gamma = gamma
        self.kernel = kernel
        self.max_fixed_point_iter = max_fixed_point_iter
        self.n_restarts = n_restarts
        self.solver = solver
        self.random_state = random_state
        self.n_jobs = n_jobs

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
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        start = time.perf_counter()
        out = _core.fit_reduced_set(
            bags.core_instances(),
            bags.bag_ptr,
            labels,
            n_xv=as_int("n_xv", self.n_xv),
            c=as_float("C", self.C),
            kernel=as_choice("kernel", self.kernel, ("rbf", "linear")),
            gamma=as_gamma(self.gamma),
            max_fixed_point_iter=as_int("max_fixed_point_iter", self.max_fixed_point_iter),
            n_restarts=as_int("n_restarts", self.n_restarts),
            solver=as_choice("solver", self.solver, ("newton", "lbfgs")),
            seed=seed_of(self.random_state),
            n_jobs=as_n_jobs(self.n_jobs),
        )
        binary = len(self.classes_) == 2
        self._set_model(out["model"])
        self.residual_history_ = np.asarray(out["residual_history"])
        self.dense_n_xv_ = int(out["mi_kernel_n_xv"])
        self.n_iter_ = int(out["fixed_point_iterations"])
        self.gamma_ = float(out["gamma"])
        self.fit_time_ = time.perf_counter() - start
        return self
