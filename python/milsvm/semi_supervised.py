"""Multiple-instance learning as transductive / semi-supervised SVMs, solved by the concave-convex
procedure (CCCP) in the Rust core (``src/semi_supervised.rs``): stMIL (Bunescu & Mooney, Multiple
Instance Learning for Sparse Positive Bags, ICML 2007) and MissSVM (Zhou & Xu, On the Relation
Between Multi-Instance Learning and Semi-Supervised Learning, ICML 2007).

Neither paper's text could be read for this implementation: the formulations follow Doran's
``misvm`` package (the implementation behind Doran & Ray, Machine Learning 2014) and, for MissSVM,
summaries of the paper; the Rust module's docs say which parts are verified there and which are
this package's reading."""

from __future__ import annotations

import json

import numpy as np

from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import INNER_TAIL, SVM_HEAD
from ._docs import SMO_MAX_ITER, attr, field, param

__all__ = ["stMIL", "MissSVM"]

_CCCP = """    The CCCP: the two non-convex terms are bounded above by their linearisation at the
    current iterate, tight there (``max(0, 1 - |f|) <= max(0, 1 - s f)`` with ``s = sign(f_k)``; for
    MissSVM also ``max(0, 1 - max_x f(x)) <= max(0, 1 - f(x*))`` with ``x*`` the bag's current
    maximiser, its *witness*), so each step minimises a convex surrogate, a hinge C-SVM solved by
    the crate's SMO (warm-started from the previous step, one kernel-row cache for the whole run),
    and the objective never increases. After each solve ``b`` is set to the exact minimiser of the
    surrogate with ``w`` fixed. The run stops when the linearisation repeats (a fixed point), when a
    step lowers the objective by less than ``tol * max(1, |J|)`` (a step that raises it, possible
    only through the SMO's tolerance, is undone), or after ``max_iter`` steps (then a
    ``ConvergenceWarning``)."""

_COSTS = """    The costs (as ``misvm`` weighs both methods' groups): a negative instance costs
    ``c_- = C * w_-``, a positive bag ``c_+ = C * w_+ * L_n / n_pos_bags``, an instance of a
    positive bag ``c_t = transductive_weight * C * w_+ * L_n / n_pos_instances`` (``L_n`` the
    instances of negative bags, ``w`` the class weights), so that with ``transductive_weight=1``
    and uniform class weights the three groups weigh the same in total. ``class_weight={positive:
    n_pos_bags / L_n}`` gives per-unit costs (``C`` per negative instance and per positive bag),
    which leave the positive bags outweighed on sets with many negative instances."""

_PARAMS = f"""{param("C", "kernel", "gamma", "class_weight", kernel={"default": "rbf"})}
    transductive_weight : float, default=1.0
        Weight ``tau`` (>= 0) of the symmetric hinges ``max(0, 1 - |f(x)|)`` of the instances of
        positive bags, all together, relative to the positive bags: each instance costs
        ``c_t = tau * c_+ * n_pos_bags / n_pos_instances`` (``c_+`` its bag's cost).
    max_iter : int, default=50
        Cap on the CCCP steps (>= 1).
    tol : float, default=1e-6
        Stop when a step lowers the objective by less than ``tol * max(1, |J|)`` (> 0).
    restarts : int, default=0
        Random restarts (>= 0) after the method's own start (as Doran's ``misvm``): each begins
        from random signs of the instances of positive bags (MissSVM: and a random witness per
        positive bag), drawn from ``random_state``; the run whose final objective is lowest gives
        the model. Each restart costs about one more fit; on the benchmarks (benches/RESULTS.md)
        5 restarts often found a lower objective and a better model.
{
    param(
        *INNER_TAIL,
        inner_tol={"default": "1e-3", "none": " (the KKT tolerance of the SMO solving each step)"},
        inner_max_iter=SMO_MAX_ITER,
    )
}"""

_ATTRS = f"""{attr("xv_", "coef_", "intercept_")}
{field("CccpFit", "objective_history", "ndarray or list of ndarray")}
{field("CccpFit", "n_iter", "int", more="The largest over the problems.")}
    converged_ : bool
        Whether that run met a stopping rule before ``max_iter`` (every problem).
{field("CccpFit", "run_objectives", "ndarray or list of ndarray")}
{field("CccpFit", "positive_bags", "ndarray of int")}
{field("CccpFit", "signs", "ndarray")}
    witnesses_ : ndarray of int
        Per positive bag, the training instance standing for it in that QP (-1: the bag mean).
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}"""


class _CCCPClassifier(ExpansionVectorsMixin, MILClassifier):
    """What stMIL and MissSVM share: the parameters, the core's one fit (Rust ``CccpParams``;
    subclasses fix the method through ``_core_fixed``) and the CCCP record."""

    _core_fit = "fit_cccp"
    _progress_unit = "step"
    _info_attrs = ("n_iter_", "converged_", "objective_history_", "gamma_")
    _objective_step = "iteration"
    _objective_start = 0

    _init_params = (
        *SVM_HEAD,
        "class_weight",
        "transductive_weight",
        "max_iter",
        "tol",
        "restarts",
        *INNER_TAIL,
    )

    def _progress_total(self, params):
        # every run counts up to max_iter steps
        return super()._progress_total(params) * (int(params.get("restarts", 0)) + 1)

    def _fitted(self, fit, bags, binary):
        pick = (lambda a: a[0]) if binary else (lambda a: a)
        hist = [np.asarray(h, dtype=np.float64) for h in fit.objective_history]
        return {
            "objective_history_": pick(hist),
            "n_iter_": int(max(fit.n_iter)),
            "converged_": bool(all(fit.converged)),
            "run_objectives_": pick([np.asarray(r, dtype=np.float64) for r in fit.run_objectives]),
            "positive_bags_": pick([np.asarray(p, dtype=np.intp) for p in fit.positive_bags]),
            "signs_": pick([np.asarray(s, dtype=np.float64) for s in fit.signs]),
            "witnesses_": pick([np.asarray(w, dtype=np.intp) for w in fit.witnesses]),
        }


class stMIL(_CCCPClassifier):
    __doc__ = f"""stMIL: the sparse transductive MIL SVM of Bunescu & Mooney (Multiple Instance
    Learning for Sparse Positive Bags, ICML 2007): sMIL plus the transductive SVM's constraint
    ``|f(x)| >= 1 - xi_x`` on every instance of a positive bag, solved by the CCCP (as Doran's
    ``misvm`` implements it; the transductive part as in Collobert et al., Large Scale
    Transductive SVMs, JMLR 2006).

    The objective::

        J = 1/2 ||w||^2 + sum_(x negative) c_- max(0, 1 + f(x))
            + sum_(X positive) c_+ max(0, (2 - |X|)/|X| - mean_(x in X) f(x))
            + sum_(x in a positive bag) c_t max(0, 1 - |f(x)|)

    (sMIL's relaxed bag margin: one positive instance at +1, the others at -1). There is no
    constraint on the fraction of positive instances (as in ``misvm``: Bunescu & Mooney's sbMIL,
    a separate method, has one). ``transductive_weight=0`` is sMIL with the positive bags
    weighing ``L_n / n_pos_bags`` each.

{_COSTS}

{_CCCP} It starts from the sMIL solution (as ``misvm`` does), the first entry of
    ``objective_history_``. From that start, most instances of positive bags have negative
    scores, and the transductive term can pin them there (on TST1 at ``C = 1`` every bag came out
    negative): ``restarts`` helps (benches/RESULTS.md).

    Bag scores follow sMIL's rule (``bag_score``, :class:`sMIL`'s parameter and default): the
    mean instance score less one threshold, the midpoint of the two classes' median training-bag
    means (``"mean_offset"``); ``"smil_mean"``, ``F(X) = mean_p f(x_p) + 1 - 1/|X|`` (pooling
    ``"smil_mean"``, stMIL's earlier rule); ``"mean"``; ``"mean_platt"``. On five benchmark sets
    the default ranked and classified better than ``"smil_mean"`` on MUSK1, TST1 and TST2 (AUC
    0.930 / 0.956 / 0.732 against 0.923 / 0.844 / 0.640) and classified better on Elephant; it
    is behind on MUSK2 (AUC 0.864 against 0.880, accuracy 76.4 % against 83.1 %)
    (docs/guide/smil-bag-scores.md). A saved model keeps its rule. With ``"smil_mean"``,
    ``instance_decision_function`` gives ``f(x) + 1 - 1/|X|``. With the linear kernel ``xv_`` is
    the weight vector ``w`` (sparse input is never densified beyond it). Multi-class problems are
    one-vs-rest.

    Parameters
    ----------
{_PARAMS}
    bag_score : {{"mean_offset", "smil_mean", "mean", "mean_platt"}}, default="mean_offset"
        How a bag's score is made from its instances' scores: :class:`sMIL`'s rules.

    Attributes
    ----------
{_ATTRS}
    """

    _core_fixed = {"method": "stmil"}
    _poolings = ("mean", "smil_mean")
    _objective_name = "stMIL objective J (sMIL start, then per CCCP step)"

    _init_params = (*_CCCPClassifier._init_params, "bag_score")

    def _loaded(self):
        super()._loaded()
        # files written before stMIL had the parameter were scored with the "smil_mean" pooling
        if "bag_score" not in json.loads(self.model_.params_json):
            self.bag_score = "smil_mean" if self.model_.pooling == "smil_mean" else "mean"


class MissSVM(_CCCPClassifier):
    __doc__ = f"""MissSVM: multi-instance learning by a semi-supervised SVM (Zhou & Xu, On the
    Relation Between Multi-Instance Learning and Semi-Supervised Learning, ICML 2007).

    The instances of negative bags are labelled negative examples; the instances of positive bags
    are unlabelled (the transductive SVM's symmetric hinge), with the constraint that each
    positive bag has a positive instance, its maximum::

        J = 1/2 ||w||^2 + sum_(x negative) c_- max(0, 1 + f(x))
            + sum_(X positive) c_+ max(0, 1 - max_(x in X) f(x))
            + sum_(x in a positive bag) c_t max(0, 1 - |f(x)|)

{_COSTS}

{_CCCP} It starts (as ``misvm``) at ``w = 0, b = 0`` (the first entry of
    ``objective_history_``), where every score is 0: the first step uses the mean subgradient
    there, each positive bag through its mean and both signs of every unlabelled instance at half
    cost.

    A bag is positive when one of its instances is (the paper's rule, as summarised): the bag
    score is the **max** of the instance scores ``f(x) = sum_t coef_t k(xv_t, x) + b``. With the
    linear kernel ``xv_`` is the weight vector ``w``. Multi-class problems are one-vs-rest.

    Parameters
    ----------
{_PARAMS}

    Attributes
    ----------
{_ATTRS}
    """

    _core_fixed = {"method": "misssvm"}
    _poolings = ("max",)
    _objective_name = "MissSVM objective J (w = 0 start, then per CCCP step)"
