"""MILES: multiple-instance learning via embedded instance selection (Chen, Bi & Wang, IEEE TPAMI
28(12), 2006), in the Rust core (``src/miles.rs``): bags embedded by their similarity to concepts
(training instances), a 1-norm SVM selecting the concepts, solved exactly as a linear program."""

from __future__ import annotations

import numpy as np

from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import INNER_TAIL, SEEDED_TAIL, SVM_HEAD
from ._docs import attr, field, param

__all__ = ["MILES"]


#: The type of ``dual_coef_``.
_DUAL_KIND = "ndarray of shape (n_bags,) (list of them for multi-class)"


class MILES(ExpansionVectorsMixin, MILClassifier):
    __doc__ = f"""MILES: multiple-instance learning via embedded instance selection (Chen, Bi &
    Wang, MILES: Multiple-Instance Learning via Embedded Instance Selection, IEEE TPAMI 28(12),
    2006).

    Every bag ``B`` is embedded by its similarity to each concept ``z_k``, the similarity of its
    most similar instance: ``s(z_k, B) = max_(x in B) exp(-gamma ||x - z_k||^2)`` (the paper's
    ``exp(-d^2 / sigma^2)``, so ``gamma = 1 / sigma^2``). The concepts are every training
    instance (the paper; ``n_concepts=None``) or ``n_concepts`` of them (random instances, or
    k-means centroids). A 1-norm SVM on the embeddings, the linear program

    ``min sum_k |w_k| + C sum_i class_weight[y_i] xi_i``,
    ``y_i (w . s(B_i) + b) + xi_i >= 1``, ``xi_i >= 0``,

    selects the concepts (``w_k != 0``, at most one per training bag) and classifies:
    ``F(B) = sum_(k selected) w_k max_(x in B) k(z_k, x) + b``. The paper's
    ``lambda sum |w_k| + mu sum_(+) xi + (1 - mu) sum_(-) xi`` is ``C = 1 / lambda`` with
    ``class_weight={{1: mu, 0: 1 - mu}}`` (its ``mu = 0.5`` is ``C = 0.5 / lambda`` and no class
    weights). The LP is solved exactly by the crate's revised simplex method (the vertex it
    returns is sparse by construction). The model keeps only the selected concepts: ``xv_``,
    ``coef_``, ``intercept_``, and its file records the ``"xv_max"`` pooling (the max per
    concept, then the linear combination).

    Instance scores follow the paper's instance classification: each selected concept credits
    ``w_k k(z_k, x)`` to the instance ``x`` of the bag that attains its max; ``U`` is the set of
    instances so credited. ``instance_decision_function`` gives each instance of ``U`` its
    credited sum plus ``b / |U|``, and 0 to the others (``b / n`` to every instance when no
    concept has a nonzero weight): the instance scores of a bag **sum** to its
    ``decision_function`` (not their mean or max, as for the estimators that pool instance
    scores). An instance is positive by the paper's rule (credited sum ``> theta = -b / |U|``)
    exactly when its score is ``> 0``, which is what ``predict_instances`` returns. ``explain``
    reports these shares as the contributions (they sum to the bag score).

    Multi-class problems are one-vs-rest on the one embedding; ``xv_`` holds the concepts any
    class selected (``coef_`` has zeros where a class did not).

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
        The kernel is the concept similarity: Gaussian ``exp(-gamma ||x - z||^2)`` (the
        paper), or linear ``<x, z>``.
    n_concepts : int or None, default=None
        None: every training instance is a candidate concept (the paper). An int: that many
        candidates, chosen by ``concept_init`` (at most the number of training instances).
    concept_init : {{"kmeans", "random"}}, default="kmeans"
        With ``n_concepts``: k-means centroids of the training instances (k-means++ seeding,
        Lloyd iterations), or distinct random training instances (CSR rows stay sparse).
{param("class_weight")}
    inner_tol : float, default=1e-9
        Optimality tolerance of the simplex method, in (0, 1): it stops when no reduced cost is
        below ``-inner_tol * (1 + |cost|)`` at a freshly refactored basis.
    inner_max_iter : int or None, default=None
        Pivot cap of the simplex method per binary problem (None: ``20 * (n_bags +
        n_concepts) + 1000``; a ``ConvergenceWarning`` when it is hit).
{param(*SEEDED_TAIL)}

    Attributes
    ----------
    xv_ : ndarray of shape (n_selected, n_features)
        The selected concepts (a CSR matrix for CSR training bags with ``n_concepts=None`` or
        ``concept_init="random"``).
{attr("coef_", "intercept_")}
{field("MilesFit", "selected", "ndarray of int")}
{field("MilesFit", "n_concepts", "int")}
{field("MilesFit", "n_selected", "int or ndarray")}
{field("MilesFit", "dual", _DUAL_KIND, "dual_coef_")}
{field("MilesFit", "objective", "float or ndarray")}
{field("MilesFit", "n_iter", "int", more="The largest over the problems.")}
{field("MilesFit", "inner_converged", "bool", "converged_")}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}
    """

    _core_fit = "fit_miles"
    _c_path = True
    _poolings = ("xv_max",)
    _progress_unit = "step"
    _info_attrs = (
        "n_iter_",
        "converged_",
        "objective_",
        "n_selected_",
        "n_concepts_",
        "selected_",
        "gamma_",
    )
    _search_ranges = {
        "n_concepts": "None (every instance, the paper); 100 ... 2000 for large data sets"
    }

    _init_params = (*SVM_HEAD, "n_concepts", "concept_init", "class_weight", *INNER_TAIL)

    def _progress_total(self, params):
        return 0  # reports every 100 simplex pivots; their number is not known in advance

    def _fitted(self, fit, bags, binary):
        duals = [np.asarray(d) for d in fit.dual]
        return {
            "selected_": np.asarray(fit.selected, dtype=np.int64),
            "n_concepts_": int(fit.n_concepts),
            "n_selected_": int(fit.n_selected[0]) if binary else np.asarray(fit.n_selected),
            "dual_coef_": duals[0] if binary else duals,
            "objective_": float(fit.objective[0]) if binary else np.asarray(fit.objective),
            "n_iter_": int(max(fit.n_iter)),
            "converged_": bool(fit.inner_converged),
        }

    def _fit_summary(self):
        return (
            f"{self.n_selected_} of {self.n_concepts_} concepts selected, {self.n_iter_} simplex "
            f"pivots, LP objective {self.objective_}"
        )
