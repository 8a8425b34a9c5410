"""MI-Kernel and RS, the dense and the reduced-set baselines of Fu, Lu, Ting, Zhang (Learning
Sparse Kernel Classifiers for Multi-Instance Classification, IEEE TNNLS 2013, Tables I-II;
ECML PKDD 2011, Lemma 1 and eq. 14-15). The work runs in the Rust core (``src/set_kernel/``)."""

from __future__ import annotations

import numpy as np

from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import RUN_TAIL, SEEDED_TAIL, SVM_HEAD
from ._docs import NEWTON_INNER, attr, param

__all__ = ["MIKernel", "ReducedSet"]


#: The settings of ReducedSet's fixed-point iteration.
_FIXED_POINT = ("inner_max_iter", "n_restarts", "inner_tol")


class MIKernel(MILClassifier):
    __doc__ = f"""Set-kernel SVM with the squared hinge (MI-Kernel, the dense
    baseline of Fu et al.).

    The SVM on the normalised set kernel
    ``k_set(X_i, X_j) = 1/(n_i n_j) sum_p sum_q k(x_ip, x_jq)`` (Gaertner et al. 2002). By Lemma 1
    of Fu et al. it is the label-mean SVM (bag score = mean of the instance scores) with every
    training instance as an expansion vector: ``F(X) = sum_i coef_i k_set(X_i, X) + b``. The
    coefficients are solved in the primal (squared hinge, exact Newton by default) and reported
    as the dual weights ``coef_i = 2 c_i y_i max(0, 1 - y_i F_i)`` (``c_i = C`` times the class
    weight of bag ``i``), zero for bags outside the
    margin. Multi-class problems are one-vs-rest, sharing the set-kernel matrix.

    The set kernel is built block by block, never as an ``N x N`` instance kernel; sparse
    instances stay sparse.

    Parameters
    ----------
{param("C", "kernel", "gamma", "class_weight", kernel={"default": "rbf"})}
    solver : {{"newton", "lbfgs"}}, default="newton"
        Solver of the squared-hinge problem; both reach the same optimum.
{param("inner_tol", "inner_max_iter", *RUN_TAIL, **NEWTON_INNER)}

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
        ``1/2 coef^T K_set coef + sum_i c_i max(0, 1 - y_i F_i)^2`` (``c_i = C w_i``) at the fitted
        model, per one-vs-rest problem.
    n_iter_ : int
        Solver iterations (largest over the problems).
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}
    """

    _core_fit = "fit_mi_kernel"
    _c_path = True
    _info_attrs = ("coef_", "intercept_", "support_", "n_xv_", "objective_", "n_iter_", "gamma_")

    _init_params = (*SVM_HEAD, "class_weight", "solver", "inner_tol", "inner_max_iter", *RUN_TAIL)

    def _fitted(self, fit, bags, binary):
        return {
            "coef_": fit.coef[0] if binary else fit.coef,
            "intercept_": float(fit.intercept[0]) if binary else fit.intercept,
            "support_": np.asarray(fit.support, dtype=np.intp),
            "n_xv_": int(fit.n_xv),
            "objective_": np.asarray(fit.objective),
            "n_iter_": int(fit.n_iter),
            "converged_": bool(fit.inner_converged),
        }


class ReducedSet(ExpansionVectorsMixin, MILClassifier):
    __doc__ = f"""Reduced-set approximation of MI-Kernel (RS, the
    post-processing baseline of Fu et al.).

    Fits :class:`MIKernel`, writes its weight vector as the instance expansion
    ``w = sum_t a_t phi(x_t)`` (``a_t = coef_i / n_i`` for instance ``t`` of bag ``i``) and
    approximates it by ``sum_k coef_k phi(xv_k)`` with ``n_xv`` vectors, chosen greedily by the
    fixed-point method of Schoelkopf and Smola (Learning with Kernels, section 18.4; Gaussian
    kernel): each new vector maximises the projection of the current residual. The iteration
    starts from ``n_restarts`` instances of the support bags: those with the largest projection
    among ``20 * n_restarts`` drawn at random (all of them when there are fewer); the best end
    point wins. After each vector all coefficients are re-projected (``K_zz coef = K_zx a``). The
    bias is then refitted with the coefficients fixed (exact minimiser of the squared-hinge
    label-mean loss). The result is the model form of :class:`SparseMI` (``xv_``, ``coef_``,
    ``intercept_``).

    Multi-class (the paper does not say how RS treats it): the one-vs-rest weight vectors share
    the reduced-set vectors, each new vector maximising ``sum_c`` of the squared residual
    projections, so ``n_xv`` counts the vectors of the whole model, as for SparseMI.

    Parameters
    ----------
    n_xv : int, default=10
        Number of reduced-set vectors (fewer if the residual vanishes first).
{param("C", "kernel", "gamma", "class_weight", kernel={"default": "rbf"})}
        (RS needs the Gaussian kernel: the fixed-point iteration is specific to it.)
    inner_max_iter : int, default=100
        Fixed-point iterations per restart, the inner solver of each new vector (0 keeps the best
        starting instance).
    n_restarts : int, default=5
        Starting instances per new vector (the best-projecting of a random pool of
        ``20 * n_restarts``); the best result is kept.
    inner_tol : float, default=1e-6
        A restart stops when its step satisfies ``sqrt(gamma) ||dz|| <= inner_tol``.
    solver : {{"newton", "lbfgs"}}, default="newton"
        Solver of the MI-Kernel problem.
{param("random_state", "probability", "n_jobs", "verbose")}

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
{attr("gamma_", "classes_", "n_features_in_")}
    fit_time_ : float
        Seconds spent in ``fit`` (MI-Kernel included).
    """

    _core_fit = "fit_reduced_set"
    _c_path = True
    _search_ranges = {"n_xv": "5 ... 100 (the model's size: larger predicts more slowly)"}
    _info_attrs = ("n_iter_", "residual_history_", "dense_n_xv_", "gamma_")

    _init_params = (
        "n_xv",
        "C",
        "gamma",
        "kernel",
        "class_weight",
        *_FIXED_POINT,
        "solver",
        *SEEDED_TAIL,
    )

    def _fitted(self, fit, bags, binary):
        return {
            "residual_history_": np.asarray(fit.residual_history),
            "dense_n_xv_": int(fit.mi_kernel_n_xv),
            "n_iter_": int(fit.fixed_point_iterations),
        }

    def _fit_summary(self):
        r = self.residual_history_
        return f"{len(r) - 1} vectors, residual {r[0]:.6g} -> {r[-1]:.6g}"
