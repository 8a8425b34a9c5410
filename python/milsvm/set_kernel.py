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

__all__ = ["MIKernel", "ReducedSet", "NSK", "sMIL"]


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


def _warn_cap(estimator, what):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.warn(f"{type(estimator).__name__}: {what}", ConvergenceWarning, stacklevel=3)


class _SetKernelSVM(_ExpansionVectorClassifier):
    """Shared fit of NSK and sMIL (hinge-loss SVMs on set kernels, solved by the Rust SMO)."""

    _poolings = ("mean",)
    _info_attrs = ("n_iter_", "converged_", "objective_", "n_support_", "gamma_")
    _method = None

    def _norm(self):
        return "l1"

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
        norm = self._norm()
        start = time.perf_counter()
        out = _core.fit_set_kernel_svm(
            bags.core_instances(),
            bags.bag_ptr,
            labels,
            method=self._method,
            c=as_float("C", self.C),
            kernel=as_choice("kernel", self.kernel, ("rbf", "linear")),
            gamma=as_gamma_or_rule(self.gamma),
            norm=norm,
            class_weight=as_class_weight(self.class_weight, self.classes_),
            tol=as_float("tol", self.tol),
            max_iter=None if self.max_iter is None else as_int("max_iter", self.max_iter),
            n_jobs=as_n_jobs(self.n_jobs),
        )
        self.fit_time_ = time.perf_counter() - start
        binary = len(self.classes_) == 2
        self._set_model(out["model"])
        self.gamma_ = float(out["gamma"])
        self.dual_coef_ = out["alpha"][0] if binary else list(out["alpha"])
        self.objective_ = float(out["objective"][0]) if binary else np.asarray(out["objective"])
        self.n_support_ = int(out["n_support"][0]) if binary else np.asarray(out["n_support"])
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        if not self.converged_:
            _warn_cap(self, "the SMO solver stopped at max_iter before its tolerance was met")
        return self


class NSK(_SetKernelSVM):
    """NSK: the hinge-loss SVM on the normalised set kernel (Gaertner, Flach, Kowalczyk & Smola,
    Multi-Instance Kernels, ICML 2002; Vijayanarasimhan's report, section 2).

    A bag is the sum of its instances' features ``sum_p phi(x_p)``, normalised by its 1-norm
    (``norm="l1"``: ``k(X, X') = mean_p mean_q k(x_p, x'_q)``) or its feature-space 2-norm
    (``norm="l2"``: ``sum sum k / sqrt(sum sum k(X, X) sum sum k(X', X'))``). The C-SVM dual on
    this ``m x m`` bag kernel (bag ``i`` bounded by ``C * class_weight[y_i]``) is solved by the
    crate's SMO; it is the problem ``sklearn.svm.SVC(kernel="precomputed")`` solves.

    ``norm="l1"`` gives the shared model form with mean pooling: ``F(X) = mean_p f(x_p) + b``
    with ``f(x) = sum_t coef_t k(xv_t, x)``, the expansion vectors being the instances of the
    support bags and ``coef_t = dual_i y_i / n_i``. ``norm="l2"`` divides the bias-free part by
    the test bag's own norm ``sqrt(mean_p mean_q k(x_p, x_q))`` (``coef_t`` then also carries
    ``1 / sqrt(k(X_i, X_i))``); that model cannot be written to the JSON model file.

    Parameters
    ----------
    C : float, default=1.0
        Loss weight (> 0).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel.
    gamma : "scale", "median" or float, default="scale"
        Gaussian width ("scale": ``1 / (n_features * X.var())``).
    norm : {"l1", "l2"}, default="l1"
        Normalisation of the bag feature sums.
    class_weight : None, "balanced" or dict, default=None
        Bag ``i`` is bounded by ``C * weight[y_i]``.
    tol : float, default=1e-3
        Relative KKT tolerance of the SMO, in (0, 1).
    max_iter : int or None, default=None
        SMO iteration cap (a ``ConvergenceWarning`` when it is hit).
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).

    Attributes
    ----------
    xv_ : ndarray of shape (n_xv, n_features)
        Instances of the support bags.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Instance coefficients.
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    dual_coef_ : ndarray of shape (n_bags,) (list of them for multi-class)
        Dual variables ``a_i`` (not multiplied by ``y_i``).
    objective_ : float or ndarray
        Dual objective ``1/2 a^T Q a - 1^T a``.
    n_support_ : int or ndarray
        Support bags.
    n_iter_ : int
        SMO iterations (largest over the problems).
    converged_ : bool
        Whether the SMO met its tolerance.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    """

    _method = "nsk"

    _poolings = ("mean", "normalized_mean")

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", norm="l1", class_weight=None, tol=1e-3, max_iter=None,
                 n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.norm = norm
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs

    def _norm(self):
        return as_choice("norm", self.norm, ("l1", "l2"))

    def _loaded(self):
        super()._loaded()
        self.norm = "l2" if self.model_.pooling == "normalized_mean" else "l1"


class sMIL(_SetKernelSVM):
    """sMIL: the sparse-MIL SVM of Bunescu & Mooney (Multiple Instance Learning for Sparse
    Positive Bags, ICML 2007, eq. 8-9).

    NSK with ``norm="l1"`` where every instance of a negative bag is a singleton bag and the
    margin target of a positive bag ``X`` is relaxed from 1 to ``(2 - |X|) / |X|`` (at least one
    of its instances positive): the dual is ``min 1/2 a^T Q a - p^T a``, ``y^T a = 0``,
    ``0 <= a <= C w`` with ``p = (2 - n_i) / n_i`` for positive bags and 1 for negative
    instances. Every unit costs ``C`` times its class weight (the paper's ``C / L_n`` and
    ``C / L_p`` are reached through ``class_weight``). The model is the shared form
    (``xv_``, ``coef_``, ``intercept_``, instance scores ``f``).

    Bag scores (pooling ``"smil_mean"``): ``F(X) = mean_p f(x_p) + 1 - 1/|X|``. Training puts a
    negative bag's mean at most at -1 and a positive bag's at least at ``(2 - |X|) / |X|``; the
    bag is called positive above the midpoint ``1/|X| - 1`` of the two (0 for one instance).
    This classification rule is milsvm's (the paper's rule for new bags is not in our sources):
    with the plain mean and threshold 0, sMIL calls almost every bag negative (measured on
    MUSK1: 51 % accuracy against 85 % with this rule, 5-fold CV). Models saved before this rule
    (pooling ``"mean"``) still load and keep their rule.
    Multi-class problems are one-vs-rest, each with its own units.

    Parameters
    ----------
    C, kernel, gamma, class_weight, tol, max_iter, n_jobs :
        As in :class:`NSK`.

    Attributes
    ----------
    xv_, coef_, intercept_, objective_, n_support_, n_iter_, converged_, gamma_, classes_,
    n_features_in_ :
        As in :class:`NSK`.
    dual_coef_ : ndarray
        Dual variables, one per unit (positive bag or negative instance, in instance order).
    """

    _method = "smil"
    _poolings = ("smil_mean", "mean")

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", class_weight=None, tol=1e-3, max_iter=None, n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs
