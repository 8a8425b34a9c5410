"""Hinge-loss SVMs on set kernels, solved by the Rust SMO (``src/set_kernel_svm.rs``): NSK
(Gaertner, Flach, Kowalczyk & Smola, Multi-Instance Kernels, ICML 2002) and sMIL (Bunescu &
Mooney, Multiple Instance Learning for Sparse Positive Bags, ICML 2007)."""

from __future__ import annotations

from ._base import SingleSVMClassifier
from ._docs import SMO_PARAMS, attr, param

__all__ = ["NSK", "sMIL"]



_SMO_ATTRS = """    n_iter_ : int
        SMO iterations (largest over the problems).
    converged_ : bool
        Whether every SMO solve met its tolerance."""


class NSK(SingleSVMClassifier):
    __doc__ = f"""NSK: the hinge-loss SVM on the normalised set kernel (Gaertner, Flach, Kowalczyk &
    Smola, Multi-Instance Kernels, ICML 2002; Vijayanarasimhan's report, section 2).

    A bag is the sum of its instances' features ``sum_p phi(x_p)``, normalised by its 1-norm
    (``norm="l1"``: ``k(X, X') = mean_p mean_q k(x_p, x'_q)``) or its feature-space 2-norm
    (``norm="l2"``: ``sum sum k / sqrt(sum sum k(X, X) sum sum k(X', X'))``). The C-SVM dual on
    this ``m x m`` bag kernel (bag ``i`` bounded by ``C * class_weight[y_i]``) is solved by the
    crate's SMO; it is the problem ``sklearn.svm.SVC(kernel="precomputed")`` solves.

    ``norm="l1"`` gives the shared model form with mean pooling: ``F(X) = mean_p f(x_p) + b``
    with ``f(x) = sum_t coef_t k(xv_t, x)``, the expansion vectors being the instances of the
    support bags and ``coef_t = dual_i y_i / n_i``. ``norm="l2"`` divides the bias-free part by
    the test bag's own norm ``sqrt(mean_p mean_q k(x_p, x_q))`` (``coef_t`` then also carries
    ``1 / sqrt(k(X_i, X_i))``; the model file records this pooling).

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
    norm : {{"l1", "l2"}}, default="l1"
        Normalisation of the bag feature sums.
{SMO_PARAMS}

    Attributes
    ----------
{attr("xv_", "coef_", "intercept_")}
    dual_coef_ : ndarray of shape (n_bags,) (list of them for multi-class)
        Dual variables ``a_i`` (not multiplied by ``y_i``).
    objective_ : float or ndarray
        Dual objective ``1/2 a^T Q a - 1^T a``.
    n_support_ : int or ndarray
        Support bags.
{_SMO_ATTRS}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}
    """

    _core_fit = "fit_nsk"
    _c_path = True
    _poolings = ("mean", "normalized_mean")

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", norm="l1", class_weight=None, inner_tol=1e-3,
                 inner_max_iter=None, probability=False, n_jobs=None, verbose=0):
        self._store(locals())

    def _loaded(self):
        super()._loaded()
        self.norm = "l2" if self.model_.pooling == "normalized_mean" else "l1"


class sMIL(SingleSVMClassifier):
    __doc__ = f"""sMIL: the sparse-MIL SVM of Bunescu & Mooney (Multiple Instance Learning for Sparse
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
    (pooling ``"mean"``) still load and keep their rule. ``instance_decision_function`` gives
    ``f(x) + 1 - 1/|X|``, whose mean is the bag score.
    Multi-class problems are one-vs-rest, each with its own units.

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
    solver : {{"auto", "linear", "kernel"}}, default="auto"
        How the dual is solved. ``"kernel"``: the SMO over the units, whose kernel rows cost
        ``O(n_units * n_features)`` each (minutes beyond a few ten thousand instances).
        ``"linear"`` (``kernel="linear"`` only): ``w`` in the input space, by dual coordinate
        descent with the bias kept unpenalised by the method of multipliers; each pass costs
        ``O(nnz)`` of the instances, so it scales to millions (the same optimum as the SMO, to
        the tolerance). ``"auto"``: ``"linear"`` for the linear kernel. With the linear kernel
        ``xv_`` holds ``w`` (one row per output) and ``coef_`` the identity, whichever solver ran.
{SMO_PARAMS}

    Attributes
    ----------
{attr("xv_", "coef_", "intercept_")}
    dual_coef_ : ndarray
        Dual variables, one per unit (positive bag or negative instance, in instance order).
    objective_ : float or ndarray
        Dual objective.
    n_support_ : int or ndarray
        Support units.
{_SMO_ATTRS}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}
    """

    _core_fit = "fit_smil"
    _c_path = True
    _poolings = ("smil_mean", "mean")

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", solver="auto", class_weight=None, inner_tol=1e-3,
                 inner_max_iter=None, probability=False, n_jobs=None, verbose=0):
        self._store(locals())
