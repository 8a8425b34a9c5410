"""Two standard baselines, each one plain SVM solved by the Rust SMO (``src/baselines.rs``): SIL
(single-instance learning, Ray & Craven 2005) and STK (the statistic kernel of Gaertner, Flach,
Kowalczyk & Smola 2002)."""

from __future__ import annotations

from ._base import SingleSVMClassifier
from ._constructor import SMO_TAIL, SVM_HEAD
from ._docs import SMO_ATTRS, SMO_PARAMS, attr, param

__all__ = ["SIL", "STK"]


def _smo_attrs(units):
    """The attributes after ``intercept_``: the SMO's record, ``units`` the support units."""
    return f"""    n_support_ : int or ndarray
        Support {units}.
    dual_coef_ : ndarray (list of them for multi-class)
        Dual variables ``a`` (not multiplied by the labels).
    objective_ : float or ndarray
        Dual objective ``1/2 a^T Q a - 1^T a``.
{SMO_ATTRS}"""


class SIL(SingleSVMClassifier):
    __doc__ = f"""SIL: single-instance learning, every instance labelled by its bag (Ray & Craven,
    Supervised versus Multiple Instance Learning: an Empirical Comparison, ICML 2005).

    Every instance takes its bag's label and costs ``C * class_weight[y_bag]``; one C-SVM over
    all training instances, ``f(x) = sum_t a_t y_t k(x_t, x) + b`` (the problem
    ``sklearn.svm.SVC`` solves on the instances with the bag labels), solved by the crate's
    SMO. A bag scores the max of its instances' scores, ``F(X) = max_p f(x_p)``: a bag is
    positive when one of its instances is. Doran's ``misvm`` package classifies bags with its
    ``SIL`` by the same rule. ``instance_decision_function`` gives ``f(x)`` and ``explain``
    the arg-max instance, as for the other max-pooling estimators. ``gamma="scale"`` and
    ``"median"`` are worked out over the training instances. Multi-class problems are
    one-vs-rest.

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
{SMO_PARAMS}

    Attributes
    ----------
{attr("xv_", "coef_", "intercept_")}
{_smo_attrs("instances")}
    """

    _core_fit = "fit_sil"
    _poolings = ("max",)

    _init_params = (*SVM_HEAD, *SMO_TAIL)


def _no_instance_scores(estimator):
    raise AttributeError(
        f"{type(estimator).__name__} has no instance scores: it scores a bag by the "
        "per-feature minima and maxima of its instances (one vector per bag), so a bag score "
        "is not a pooling of instance scores; instance_decision_function, predict_instances "
        "and explain are not defined"
    )


class STK(SingleSVMClassifier):
    __doc__ = f"""STK: the SVM on the statistic kernel of Gaertner, Flach, Kowalczyk & Smola
    (Multi-Instance Kernels, ICML 2002, section 4.2).

    A bag ``X`` of ``d`` features is the vector of its per-feature minima and maxima,
    ``s(X) = (min_p x_p1, ..., min_p x_pd, max_p x_p1, ..., max_p x_pd)`` (``2d`` values; a
    sparse bag counts its unstored values as zeros); one C-SVM over these vectors (bag ``i``
    costs ``C * class_weight[y_i]``), ``F(X) = sum_i a_i y_i k(s(X_i), s(X)) + b``: the
    problem ``sklearn.svm.SVC`` solves on the statistic vectors. The paper's kernel is a
    polynomial kernel on ``s``; this crate offers the Gaussian and the linear kernel on it. The
    model (and its file, ``bag_features="min_max"``) keeps the support bags' statistic vectors
    as ``xv_`` (``2 * n_features`` columns) and scores raw bags: the compiled predictor forms
    ``s(X)`` of a new bag, then the kernel expansion.

    Instance scores are not defined: the bag score depends on the instances only through the
    per-feature extremes, and is no pooling of per-instance scores.
    ``instance_decision_function``, ``predict_instances`` and ``explain`` raise
    ``AttributeError`` saying so (``hasattr`` is False, as for ``predict_proba`` without
    ``probability=True``). Multi-class problems are one-vs-rest.

    Parameters
    ----------
{param("C", "kernel", kernel={"default": "rbf"})}
    gamma : "scale", "median" or float, default="scale"
        Gaussian width on the statistic vectors: "scale" is ``1 / (2 n_features * S.var())``
        over the training bags' statistic vectors ``S`` (scikit-learn's rule on the ``2d``
        columns the kernel sees); "median" is ``1 / (2 sigma^2)`` with ``sigma`` the median
        pairwise distance between them; a float is used as given.
{SMO_PARAMS}

    Attributes
    ----------
    xv_ : ndarray of shape (n_support_vectors, 2 * n_features)
        The statistic vectors (minima, then maxima) of the support bags.
{attr("coef_", "intercept_")}
{_smo_attrs("bags")}
    """

    _core_fit = "fit_stk"
    _poolings = ("mean",)

    _init_params = (*SVM_HEAD, *SMO_TAIL)

    def _core_input(self, bags):
        # bags given as a list are summarised where they lie, without a stacked copy
        parts = bags.parts
        if parts is None:
            return super()._core_input(bags)
        return "fit_stk_bags", (parts,)

    def _loaded(self):
        super()._loaded()
        if self.model_.bag_features != "min_max":
            raise ValueError(
                f"field `bag_features`: an STK model scores bags by their min/max statistics "
                f'("min_max"), the file has {self.model_.bag_features!r}'
            )

    # Properties that raise: ``hasattr`` is False and the message says why.
    @property
    def instance_decision_function(self):
        """Not defined for STK (``AttributeError``); see the class docstring."""
        _no_instance_scores(self)

    @property
    def predict_instances(self):
        """Not defined for STK (``AttributeError``); see the class docstring."""
        _no_instance_scores(self)

    @property
    def explain(self):
        """Not defined for STK (``AttributeError``); see the class docstring."""
        _no_instance_scores(self)
