"""The one-class MI-SVM (Vijayanarasimhan's report on multiple-instance learning, Figures 1-2):
a one-class SVM (Schoelkopf et al.) on the instances of the positive bags, with a max
constraint per positive bag. The work runs in the Rust core (``src/one_class.rs``)."""

from __future__ import annotations

import numpy as np

from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import RUN_TAIL
from ._docs import field, param

__all__ = ["OneClassMISVM"]


class OneClassMISVM(ExpansionVectorsMixin, MILClassifier):
    __doc__ = f"""One-class MI-SVM: the support of the positive bags' instances, with bag
    max constraints.

    The one-class SVM ``min 1/2 ||w||^2 + 1/(nu l) sum xi - rho``, ``w . phi(x) >= rho - xi``
    over the ``l`` instances of the positive training bags (dual: ``0 <= a <= 1/(nu l)``,
    ``sum a = 1``, solved by the crate's SMO). With ``bag_constraints=True`` every positive bag
    ``X`` adds ``max_{{x in X}} w . phi(x) >= rho - Xi_X`` with penalty ``1/(nu n_bags)``: a
    pseudo-sample spreading weight 1 over the bag's currently maximal instances (Figure 2):
    starting with no pseudo-sample (``a = 0``, the plain one-class SVM), every bag's
    pseudo-sample is put on its currently maximal instances and the problem re-solved
    (warm-started) until no bag's maximal instances change, i.e. no max constraint is violated
    (the report: 2-3 rounds), or ``max_iter`` rounds (then a ``ConvergenceWarning``).
    ``bag_constraints=False`` is the plain one-class SVM: the same decision values as
    ``sklearn.svm.OneClassSVM(nu=nu, gamma=gamma)`` divided by ``nu l`` (LIBSVM scales the dual by
    ``nu l``).

    Scores: ``f(x) = sum_t coef_t k(xv_t, x) + intercept`` (``intercept = -rho``); a bag's score
    is the max over its instances; ``predict`` gives ``classes_[1]`` where it is > 0.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1]: an upper bound on the fraction of outlier instances (and bags).
{param("kernel", "gamma", kernel={"default": "rbf"})}
        (The width "scale" and "median" are taken over the positive bags' instances.)
    bag_constraints : bool, default=True
        Add the per-bag max constraints (Figure 2).
    max_iter : int, default=20
        Cap on the activation rounds.
{
        param(
            "inner_tol",
            *RUN_TAIL,
            inner_tol={"default": "1e-3", "none": " (the KKT tolerance of the SMO)"},
        )
    }

    Attributes
    ----------
    xv_, coef_, intercept_ :
        The model form (support instances, their weights, ``-rho``).
{field("OneClassFit", "rho", "float")}
{field("OneClassFit", "alpha", "ndarray", "dual_coef_")}
{field("OneClassFit", "bag_alpha", "ndarray", "bag_dual_coef_")}
{field("OneClassFit", "active", "ndarray of bool")}
{field("OneClassFit", "objective_history", "ndarray")}
{field("OneClassFit", "n_iter", "int")}
    converged_ : bool
        Whether no max constraint was violated at the end.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        The two labels of ``y`` (``classes_[1]`` is the class modelled).
    n_features_in_ : int
        Number of features of an instance.
    """

    _core_fit = "fit_one_class"
    _poolings = ("max",)
    _info_attrs = ("n_iter_", "converged_", "objective_history_", "rho_", "gamma_")
    _multiclass = False
    _progress_unit = "round"
    _objective_name = "one-class SVM dual objective after the round"
    _objective_step = "round"
    _default_grid = {"nu": [0.1, 0.25, 0.5, 0.75], "gamma": ["0.1*scale", "scale", "10*scale"]}

    _init_params = ("nu", "kernel", "gamma", "bag_constraints", "max_iter", "inner_tol", *RUN_TAIL)

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
        return super().fit(bags, y)

    def _fitted(self, fit, bags, binary):
        return {
            "rho_": float(fit.rho),
            "dual_coef_": fit.alpha,
            "bag_dual_coef_": fit.bag_alpha,
            "active_": np.asarray(fit.active, dtype=bool),
            "objective_history_": np.asarray(fit.objective_history, dtype=np.float64),
            "n_iter_": int(fit.n_iter),
            "converged_": bool(fit.converged),
        }
