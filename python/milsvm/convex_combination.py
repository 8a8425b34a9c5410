"""SVM-CC: the convex-combination multi-instance SVM of Yang & Deng (Multi-instance support vector
machine based on convex combination; Algorithms 1-2, eq. 13-37). The work runs in the Rust core
(``src/convex_combination.rs``)."""

from __future__ import annotations

import numpy as np

from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import RUN_TAIL, SVM_HEAD
from ._docs import attr, field, param

__all__ = ["SVMCC"]


class SVMCC(ExpansionVectorsMixin, MILClassifier):
    __doc__ = f"""SVM-CC (Yang & Deng): each positive bag is the convex combination
    ``x̄_i = sum_j v_ij phi(x_ij)`` of its instances, every negative instance stands alone.

    The fit alternates (Algorithms 1-2)

    * a QP: the hinge C-SVM (the crate's SMO) on ``{{x̄_i: +1, bound C1}}`` and
      ``{{negative instances: -1, bound C2}}``, the bounds as ``bounds`` says, times the class
      weights; the kernel between combinations is built from instance kernel rows;
    * the LP (problem 23-28) with ``w`` fixed, solved exactly: with ``s_ij = w . phi(x_ij)`` and
      ``G_i = max_j s_ij``, ``b`` minimises ``sum_i c_i max(0, 1 - G_i - b) + sum_n c_n max(0, 1 +
      s_n + b)`` (a weighted median), and ``v_i`` is optimal exactly when
      ``v_i . s_i >= min(G_i, 1 - b)``: a whole face of the simplex when the bag clears the
      margin. ``lp_rule`` picks the point of that face,

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
        Loss weight (> 0), giving ``C1`` and ``C2`` as ``bounds`` says.
{param("kernel", "gamma", "class_weight", kernel={"default": "linear"})}
    max_iter : int, default=80
        Cap on QP / LP rounds (the paper's 80).
    tol : float, default=1e-4
        Stop when the change of ``v`` (2-norm) falls below it (the paper's 1e-4).
{
        param(
            "inner_tol",
            inner_tol={
                "default": "1e-3",
                "none": " (the KKT tolerance of the SMO solving each QP)",
            },
        )
    }
    lp_rule : {{"project", "max"}}, default="project"
        Which optimal ``v`` the LP step returns. ``"project"``: ``v_i`` unchanged while it is
        optimal, else its Euclidean projection onto the bag's optimal set
        ``{{v in simplex: v . s_i >= min(G_i, 1 - b)}}``, a point inside the optimal face as the
        paper's interior-point ``linprog`` returned.
        ``"max"``: ``v_i`` on the bag's best instance(s) (ties share equally), a vertex of the
        face, which makes the method MI-SVM started from the bag means (milsvm's rule before this
        parameter). ``b`` is the LP's exact minimiser with either rule.
    bounds : {{"paper", "split", "equal"}}, default="paper"
        The QP's bounds. ``"paper"`` (section 3): ``C1 = C2 = C`` for ``kernel="linear"``
        (Algorithm 1); ``C1 = C n_neg / (n_pos_bags + n_neg)``, ``C2 = C n_pos_bags / (n_pos_bags
        + n_neg)`` (``n_neg`` the negative instances) for ``kernel="rbf"`` (Algorithm 2).
        ``"split"``: the latter with either kernel (milsvm's bounds before this parameter);
        ``"equal"``: ``C1 = C2 = C`` with either kernel.
    solver : {{"auto", "linear", "kernel"}}, default="auto"
        How each QP is solved. ``"kernel"``: the SMO over the combinations and the negative
        instances, whose kernel rows cost ``O(n_instances * n_features)`` each. ``"linear"``
        (``kernel="linear"`` only): ``w`` in the input space, by dual coordinate descent with
        the bias kept unpenalised by the method of multipliers, warm-started across rounds; each
        pass costs ``O(nnz)`` of the instances (the same optimum as the SMO, to the tolerance).
        ``"auto"``: ``"linear"`` for the linear kernel.
{param(*RUN_TAIL)}

    Attributes
    ----------
    xv_ : ndarray
        Linear kernel: the weight vector(s) ``w`` (one row per output); rbf: the training
        instances with a nonzero coefficient.
    coef_ : ndarray
        Coefficients of ``xv_`` (linear: the identity).
    intercept_ : float or ndarray
        Bias ``b`` of the decision function.
{field("SvmCcFit", "v", "list of ndarray", more="Multi-class: one such list per class.")}
{field("SvmCcFit", "positive_bags", "ndarray of int")}
{field("SvmCcFit", "lp_intercept", "float or ndarray")}
{field("SvmCcFit", "qp_intercept", "float or ndarray")}
{field("SvmCcFit", "objective_history", "ndarray")}
{field("SvmCcFit", "dv_history", "ndarray")}
{field("SvmCcFit", "n_iter", "int", more="The largest over the problems.")}
    converged_ : bool
        Whether the change of ``v`` fell below ``tol``.
{attr("gamma_", "classes_", "n_features_in_")}
    """

    _core_fit = "fit_svmcc"
    _poolings = ("max",)
    _info_attrs = (
        "n_iter_",
        "converged_",
        "objective_history_",
        "dv_history_",
        "lp_intercept_",
        "qp_intercept_",
        "gamma_",
    )
    _progress_unit = "round"
    _objective_name = "primal objective 1/2 ||w||^2 + sum c xi after the round's LP"
    _objective_step = "round"

    _init_params = (
        *SVM_HEAD,
        "class_weight",
        "max_iter",
        "tol",
        "inner_tol",
        "lp_rule",
        "bounds",
        "solver",
        *RUN_TAIL,
    )

    def _fitted(self, fit, bags, binary):
        pick = (lambda a: a[0]) if binary else (lambda a: a)
        v = [[np.asarray(b, dtype=np.float64) for b in problem] for problem in fit.v]
        pb = [np.asarray(p, dtype=np.intp) for p in fit.positive_bags]
        hist = [np.asarray(h, dtype=np.float64) for h in fit.objective_history]
        dv = [np.asarray(h, dtype=np.float64) for h in fit.dv_history]
        return {
            "v_": pick(v),
            "positive_bags_": pick(pb),
            "lp_intercept_": float(fit.lp_intercept[0]) if binary else np.asarray(fit.lp_intercept),
            "qp_intercept_": float(fit.qp_intercept[0]) if binary else np.asarray(fit.qp_intercept),
            "objective_history_": pick(hist),
            "dv_history_": pick(dv),
            "n_iter_": int(max(fit.n_iter)),
            "converged_": bool(all(fit.converged)),
        }
