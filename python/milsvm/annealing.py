"""Deterministic annealing MI-SVMs (Gehler & Chapelle, Deterministic Annealing for
Multiple-Instance Learning, AISTATS 2007) and the mi-SVM / MI-SVM heuristics (Andrews,
Tsochantaridis & Hofmann, Support Vector Machines for Multiple-Instance Learning, NIPS 2002).

Every estimator here learns an instance classifier ``f(x) = sum_k coef_k k(xv_k, x) + b`` with the
squared hinge and an l2 penalty (the paper's choice), and scores a bag by the maximum of its
instances' scores. The work runs in the Rust core (``src/annealing/``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import INNER_TAIL, SVM_HEAD
from ._docs import attr, field, number, param

__all__ = ["ALSVM", "AWSVM", "ALPSVM", "miSVM", "MISVM"]


#: The temperature schedule of the annealing methods.
_SCHEDULE = ("T0", "decay", "eps")
#: The basis of the SVM step and how it is solved, then the class weights.
_BASIS = ("n_xv", "xv_init", "solver", "class_weight")


class _AnnealingClassifier(ExpansionVectorsMixin, MILClassifier):
    """The shared fit record of the annealing family (Rust ``AnnealingParams``); subclasses
    fix the method (``_core_fixed``) and declare their parameters."""

    _poolings = ("max",)
    _info_attrs = (
        "n_iter_",
        "n_solves_",
        "converged_",
        "p_hat_",
        "objective_history_",
        "temperatures_",
        "gamma_",
        "solver_",
        "n_xv_",
    )
    _progress_unit = "step"
    _search_ranges = {
        "n_xv": "'auto'; None (exact); 100 ... 1000 to make large data sets tractable"
    }

    def _core_params(self, bags, classes, labels, check_only=False):
        params = super()._core_params(bags, classes, labels, check_only=check_only)
        init = params.get("xv_init")
        if not isinstance(init, str) and params.get("n_xv") is not None:
            params.pop("xv_init")
            params["init_xv"] = self._given_basis(init, bags, params["n_xv"])
        return params

    @staticmethod
    def _given_basis(init, bags, n_xv):
        """``xv_init`` given as an array of ``n_xv`` points (its shape checked here; without
        ``bags``, its number of features is left to the fit; with ``n_xv="auto"``, its number
        of rows is the basis size)."""
        points = np.asarray(init.toarray() if sp.issparse(init) else init, dtype=np.float64)
        if bags is None:
            return np.ascontiguousarray(points) if points.ndim == 2 else points
        if isinstance(n_xv, str) and points.ndim == 2:
            n_xv = points.shape[0]
        if points.shape != (n_xv, bags.n_features):
            raise ValueError(
                f"xv_init as an array must have shape ({n_xv}, {bags.n_features}), got "
                f"{points.shape}"
            )
        return np.ascontiguousarray(points)

    def _fitted(self, fit, bags, binary):
        split = bags.bag_ptr[1:-1]
        p = [np.split(np.asarray(v), split) for v in fit.p]
        hist = [np.asarray(h, dtype=np.float64) for h in fit.objective_history]
        temps = [np.asarray(t, dtype=np.float64) for t in fit.temperatures]
        return {
            "p_": p[0] if binary else p,
            "p_hat_": float(fit.p_hat[0]) if binary else np.asarray(fit.p_hat),
            "objective_history_": hist[0] if binary else hist,
            "temperatures_": temps[0] if binary else temps,
            "n_iter_": int(max(fit.n_iter)),
            "n_solves_": int(sum(fit.n_solves)),
            "converged_": bool(all(fit.converged)),
            "solver_": fit.solver,
            "n_xv_": fit.n_xv,
        }

    def _fit_summary(self):
        histories = (
            self.objective_history_
            if isinstance(self.objective_history_, list)
            else [self.objective_history_]
        )
        last = ", ".join(f"{h[-1]:.6g}" if len(h) else "nan" for h in histories)
        if self.solver_ == "linear":
            basis = "w in the input space"
        elif self.n_xv_ is None:
            basis = "every training instance"
        else:
            basis = f"{self.n_xv_} basis vectors"
        if self.n_xv == "auto" and self.solver_ != "linear":
            basis += (
                f" (n_xv='auto': the full basis up to {_core.AUTO_FULL_BASIS_MAX} training "
                f"instances, {_core.AUTO_N_XV} k-means centroids above)"
            )
        return (
            f"basis: {basis}; {self.n_iter_} rounds, {self.n_solves_} SVM solves ({self.solver_} "
            f"solver), final objective {last}, p_hat {np.round(self.p_hat_, 4)}"
        )


_COMMON_PARAMS = f"""
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
    n_xv : "auto", int or None, default="auto"
        None: every training instance is a basis vector (the exact model; the SVM step is the
        dual, solved by the SMO, whose cost grows as ``n_instances^2``: seconds for a few
        thousand instances, minutes or more for tens of thousands). An int: a reduced basis of
        that many vectors chosen by ``xv_init`` (for large data: the SVM step is the primal,
        exact Newton, and costs ``O(n_instances * n_xv^2)``). ``"auto"``: every training
        instance up to {_core.AUTO_FULL_BASIS_MAX} of them, else a reduced basis of
        {_core.AUTO_N_XV} k-means centroids; the choice made is ``n_xv_`` and is said by
        ``verbose``. With ``kernel="linear"`` the basis does not apply (``w`` is fitted
        directly; see ``solver``) unless ``n_xv`` is an int.
    xv_init : {{"kmeans", "random"}} or array of shape (n_xv, n_features), default="kmeans"
        The reduced basis: k-means centroids of the training instances (k-means++ seeding and
        up to 20 Lloyd iterations, in the core), distinct random training instances, or the
        given points.
    solver : {{"auto", "linear", "kernel"}}, default="auto"
        How the SVM step is solved. ``"linear"`` (``kernel="linear"``, ``n_xv`` not an int)
        fits ``w`` in the input space directly, in the primal, by Newton-CG with
        Hessian-vector products: each pass costs ``O(nnz)`` of the instances, so it scales to
        millions of instances, warm-started across steps, the same result for any thread
        count. ``"kernel"`` solves over the kernel expansion (the dual SMO over every instance,
        or exact Newton over a reduced basis). ``"auto"``: ``"linear"`` for the linear kernel
        without a reduced basis, else ``"kernel"``. The choice made is ``solver_``. On sparse
        text standardised feature by feature (``BagStandardScaler``, as ``milsvm cv`` does),
        with more features than instances, the linear route is badly conditioned and several
        times slower than ``"kernel"`` (TST1, 2,942 x 66,552; measured by
        ``benches/linear_route_standardised.py``); there pass ``solver="kernel"`` (for ALSVM /
        AWSVM / ALPSVM with a tighter
        ``inner_tol``, such as 1e-5, which the annealing needs on kernel values this large).
{
    param(
        "class_weight",
        *INNER_TAIL,
        inner_tol={
            "default": "None",
            "none": f"; None: 1e-3 for the dual (full basis), {number(_core.NEWTON_TOL)} for the "
            f"primal (reduced basis), {number(_core.LINEAR_TOL)} (relative gradient) for the "
            "linear primal",
        },
        inner_max_iter={"default": "1000", "none": " (Newton steps of the primal solvers)"},
    )
}"""

#: What ``solver_`` means for the fitted basis, after the core's doc of the field.
_SOLVER_MORE = (
    '``"linear"``: ``xv_`` is ``w`` and ``coef_`` 1, per class. ``"kernel"``: ``xv_`` holds the '
    'instances with a nonzero coefficient, or, with the full basis and ``kernel="linear"``, their '
    'sum ``w`` per class as for ``"linear"``; sparse instances stay sparse.'
)

_COMMON_ATTRIBUTES = f"""
    xv_ : ndarray of shape (n_xv, n_features)
        Basis vectors with a nonzero coefficient (the support instances), or the reduced basis.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Coefficients ``beta``.
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    p_ : list of ndarray
        The final ``p`` of each training instance, one array per training bag (multi-class: one
        such list per class).
{field("AnnealingFit", "p_hat", "float or ndarray")}
{field("AnnealingFit", "objective_history", "ndarray")}
{field("AnnealingFit", "n_iter", "int")}
{field("AnnealingFit", "n_solves", "int")}
    converged_ : bool
        Whether the stopping rule was met before ``max_iter``.
{field("AnnealingFit", "solver", "str", more=_SOLVER_MORE)}
{field("AnnealingFit", "n_xv", "int or None")}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}"""


_TEMPERATURE_CAP = f"""    max_iter : int, default=200
        Cap on the number of temperatures (the outer loop; a ``ConvergenceWarning`` when it is
        reached).

    Attributes
    ----------{_COMMON_ATTRIBUTES}
{field("AnnealingFit", "temperatures", "ndarray")}"""


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
{_TEMPERATURE_CAP}
    """

    _core_fit = "fit_annealing"
    _core_fixed = {"method": "al"}
    _objective_name = "annealed objective: squared-hinge SVM + T sum [p ln p + (1-p) ln(1-p)]"
    _objective_step = "temperature"

    _init_params = (*SVM_HEAD, *_SCHEDULE, "init", *_BASIS, "max_iter", *INNER_TAIL)
    #: the core declares None, "the method's own cap", which the classes write out
    _init_defaults = {"max_iter": 200}


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
{_TEMPERATURE_CAP}
    """

    _core_fit = "fit_annealing"
    _core_fixed = {"method": "aw"}
    _objective_name = "annealed objective: squared-hinge SVM + T sum p ln p"
    _objective_step = "temperature"

    _init_params = (*SVM_HEAD, *_SCHEDULE, *_BASIS, "max_iter", *INNER_TAIL)
    #: the core declares None, "the method's own cap", which the classes write out
    _init_defaults = {"max_iter": 200}


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
    T0, decay, eps, init, max_iter :
        As in :class:`ALSVM`.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
{field("AnnealingFit", "temperatures", "ndarray")}
    """

    _core_fit = "fit_annealing"
    _core_fixed = {"method": "alp"}
    _objective_name = (
        "annealed objective: squared-hinge SVM + T sum [p ln p + (1-p) ln(1-p)] "
        "+ C2 sum (sum p - m p*)^2"
    )
    _objective_step = "temperature"

    _init_params = ("C", "C2", "p_star", *ALSVM._init_params[1:])


class _Heuristic(_AnnealingClassifier):
    _core_fit = None

    _init_params = (*SVM_HEAD, "max_iter", *_BASIS, *INNER_TAIL)
    #: the heuristics' cap (the core's None, written out)
    _init_defaults = {"max_iter": 50}


class miSVM(_Heuristic):
    __doc__ = f"""mi-SVM (Andrews, Tsochantaridis & Hofmann 2002): the instance-label heuristic.

    Every instance of a positive bag starts positive; then train the SVM (squared hinge, l2
    penalty, as in Gehler & Chapelle), relabel each instance of a positive bag by the sign of
    ``f``, force the instance of largest score positive in a bag left without one, and repeat
    until no label changes (or ``max_iter`` rounds, with a ``ConvergenceWarning``). On large data
    a few labels near the boundary can keep flipping: the rounds also stop, after training on
    the last labels, when at most a fraction 1e-4 of the instances of positive bags changed (with
    fewer than 10,000 such instances: none), or when a labelling repeats an earlier round's (a
    cycle). It equals ``ALSVM(T0=1e-8, init="labels")`` when the labels settle.

    Parameters
    ----------{_COMMON_PARAMS}
    max_iter : int, default=50
        Cap on the train / relabel rounds.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    """

    _core_fit = "fit_annealing"
    _core_fixed = {"method": "mi"}
    _objective_name = "squared-hinge SVM objective on the instance labels of the round"
    _objective_step = "round"


class MISVM(_Heuristic):
    __doc__ = f"""MI-SVM (Andrews, Tsochantaridis & Hofmann 2002): the witness heuristic.

    Each positive bag starts represented by all its instances with weight ``1 / m_i`` (the
    kernel-space counterpart of the bag centroid, and AW-SVM's start); then train the SVM,
    choose each positive bag's witness, its instance of largest score, train on the witnesses
    and the negative instances, and repeat until no witness changes (or ``max_iter`` rounds; as
    for :class:`miSVM`, also when at most a fraction 1e-4 of the witnesses changed, or the
    witnesses repeat an earlier round's).
    It equals ``AWSVM(T0=1e-8)`` when no bag has two instances of zero loss.

    Parameters
    ----------{_COMMON_PARAMS}
    max_iter : int, default=50
        Cap on the train / select rounds.

    Attributes
    ----------{_COMMON_ATTRIBUTES}
    """

    _core_fit = "fit_annealing"
    _core_fixed = {"method": "MI"}
    _objective_name = "squared-hinge SVM objective on the witnesses of the round"
    _objective_step = "round"
