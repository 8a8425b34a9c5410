"""Hinge-loss SVMs on set kernels, solved by the Rust SMO (``src/set_kernel_svm.rs``): NSK
(Gaertner, Flach, Kowalczyk & Smola, Multi-Instance Kernels, ICML 2002) and sMIL (Bunescu &
Mooney, Multiple Instance Learning for Sparse Positive Bags, ICML 2007)."""

from __future__ import annotations

import json

from . import _core
from ._base import SingleSVMClassifier
from ._constructor import SEEDED_TAIL, SMO_TAIL, SVM_HEAD
from ._docs import SMO_ATTRS, SMO_MAX_ITER, SMO_PARAMS, attr, param

__all__ = ["NSK", "sMIL"]


def _smo_attrs(units):
    """The attributes after ``objective_``, ``units`` the support units."""
    return f"""    n_support_ : int or ndarray
        Support {units}.
{SMO_ATTRS}"""


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
{_smo_attrs("bags")}
    """

    _core_fit = "fit_nsk"
    _poolings = ("mean", "normalized_mean")

    _init_params = (*SVM_HEAD, "norm", *SMO_TAIL)

    def _loaded(self):
        super()._loaded()
        self.norm = "l2" if self.model_.pooling == "normalized_mean" else "l1"


class sMIL(SingleSVMClassifier):
    __doc__ = f"""sMIL: the sparse-MIL SVM of Bunescu & Mooney (Multiple Instance Learning
    for Sparse Positive Bags, ICML 2007, eq. 8-9).

    NSK with ``norm="l1"`` where every instance of a negative bag is a singleton bag and the
    margin target of a positive bag ``X`` is relaxed from 1 to ``(2 - |X|) / |X|`` (at least one
    of its instances positive): the dual is ``min 1/2 a^T Q a - p^T a``, ``y^T a = 0``,
    ``0 <= a <= C w`` with ``p = (2 - n_i) / n_i`` for positive bags and 1 for negative
    instances. Every unit costs ``C`` times its class weight (the paper's ``C / L_n`` and
    ``C / L_p`` are reached through ``class_weight``). The model is the shared form
    (``xv_``, ``coef_``, ``intercept_``, instance scores ``f``).

    Bag scores (``bag_score``). Training asks a positive bag's mean score to reach
    ``(2 - |X|) / |X|`` and every instance of a negative bag to stay at -1 or below, so the plain
    mean ``mean_p f(x_p)`` ranks the bags (it is the set-kernel SVM's own score, and what
    Doran's ``misvm`` returns) but calls almost every bag negative at threshold 0. Ranking and
    threshold are kept apart:

    * ``"mean_offset"``: ``F(X) = mean_p f(x_p) - t`` with one threshold for every
      bag, ``t`` the midpoint of the medians of the training bags' plain means in the two
      classes (per one-vs-rest problem). The ranking is the plain mean's; the threshold lies
      between the typical training bags of the two classes wherever the solution put them (at
      small ``C`` the scores stay near the bias, far from the margins). The model is the
      mean-pooled form with ``t`` taken off ``intercept_``.
    * ``"smil_mean"``: ``F(X) = mean_p f(x_p) + 1 - 1/|X|``, each bag against the midpoint
      ``1/|X| - 1`` of its own two margins (pooling ``"smil_mean"``; milsvm's only rule before
      ``bag_score`` existed). The shift grows with the bag's size, so it also reorders bags: at
      small ``C``, where ``|f|`` is far below 1, bags rank almost by size.
      ``instance_decision_function`` then gives ``f(x) + 1 - 1/|X|``, whose mean is the bag
      score.
    * ``"mean"``: the plain mean with the solver's bias, threshold 0.
    * ``"mean_platt"``: ``F(X) = mean_p f(x_p) - t`` with ``t`` the score where Platt's sigmoid
      fitted to the training bags' plain means crosses 1/2 (the class-median midpoint where the
      sigmoid has no such point). The same ranking as ``"mean_offset"``; its threshold follows how
      the two classes' training scores overlap.
    * ``"auto"`` (default): ``"smil_mean"`` or the plain mean with a Platt threshold, chosen
      per fit (and per ``C`` of a path) by an inner stratified 5-fold cross-validation on the
      training bags, seeded by ``random_state`` (None: a fixed seed, so a default fit is
      deterministic): the same problem is fitted on four folds with the plain mean and scores
      the fifth, so every training bag gets an out-of-fold plain mean ``o``. The size shift
      ``o + 1 - 1/|X|`` is kept unless the plain mean ``o`` ranks better out of fold by more
      than {_core.SMIL_AUTO_AUC_MARGIN} AUC and, at the threshold of Platt's sigmoid fitted to
      ``o``, classifies at least as many training bags right as the shift at 0 (summed over
      the one-vs-rest problems, one choice per model); where it is dropped, the plain mean less
      that threshold. Five more fits. Fewer folds where a class has fewer than 5 bags; with a
      class of one bag, ``"mean_platt"``. ``bag_score_`` says which was kept; with
      ``probability``, the calibration's internal folds refit with that rule.

    No threshold that keeps the plain mean's ranking classifies as well as the size shift on
    every benchmark set (Elephant, whose positive bags are larger), and the shift ranks badly
    where the size says nothing (TST1, TST2); ``"auto"`` chooses between them from the training
    bags: on all five benchmark sets it ranks within 0.01 AUC of the plain mean and classifies
    at threshold 0 as the shift does (one fold in 125 apart; better on TST1 and TST2), so it is
    the default. The
    measurements (AUC against ``misvm``, accuracy of each rule, five benchmark sets) are in
    ``docs/guide/smil-bag-scores.md``. A saved model keeps its
    rule: files written with pooling ``"smil_mean"`` load as ``bag_score="smil_mean"``, and
    older ones with the plain mean as ``bag_score="mean"``.
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
    bag_score : {{"mean_offset", "smil_mean", "mean", "mean_platt", "auto"}}, default="auto"
        How a bag's score is made from its instances' scores (above): the mean minus one
        threshold learnt from the training bags (the class medians' midpoint), the mean plus the
        bag's own size shift, the plain mean, the mean minus Platt's threshold on the training
        bags, or the choice of an inner cross-validation between the size shift and the mean
        (``"auto"``: the fit costs 6 fits instead of 1).
{
        param(
            "class_weight",
            "inner_tol",
            "inner_max_iter",
            *SEEDED_TAIL,
            inner_tol={"default": "1e-3"},
            inner_max_iter=SMO_MAX_ITER,
        )
    }

    Attributes
    ----------
{attr("xv_", "coef_", "intercept_")}
    bag_score_ : str
        The rule the model applies: ``bag_score``, or for ``"auto"`` the one kept,
        ``"smil_mean"`` or ``"mean_platt"`` (the plain mean less Platt's threshold of the
        out-of-fold scores).
    dual_coef_ : ndarray
        Dual variables, one per unit (positive bag or negative instance, in instance order).
    objective_ : float or ndarray
        Dual objective.
{_smo_attrs("units")}
    """

    _core_fit = "fit_smil"
    _poolings = ("mean", "smil_mean")

    _init_params = (
        *SVM_HEAD,
        "solver",
        "bag_score",
        "class_weight",
        "inner_tol",
        "inner_max_iter",
        *SEEDED_TAIL,
    )

    def _core_params(self, bags, classes, labels, check_only=False):
        params = super()._core_params(bags, classes, labels, check_only)
        if self.random_state is None:
            # the core's fixed seed, as for probability=True's folds: a default fit is
            # deterministic
            params.pop("seed", None)
        return params

    def _fitted(self, fit, bags, binary):
        out = super()._fitted(fit, bags, binary)
        out["bag_score_"] = self._applied_bag_score(fit.model.pooling)
        return out

    def _calibration_params(self, model):
        # the internal folds of probability=True / "ensemble" calibrate the rule this model
        # applies: "auto" refits with the candidate it kept, so that every member pools as the
        # model does
        return {"bag_score": self._applied_bag_score(model.pooling)}

    def _applied_bag_score(self, pooling):
        """The rule the model applies: ``bag_score``, or for ``"auto"`` the candidate its inner
        cross-validation kept (the pooling says which: ``"smil_mean"``, or the plain mean with
        Platt's threshold in the intercept)."""
        if self.bag_score != "auto":
            return self.bag_score
        return "smil_mean" if pooling == "smil_mean" else "mean_platt"

    def _loaded(self):
        super()._loaded()
        # the rule is in the model (pooling, bias); the parameter follows it for files written
        # before the parameter existed: "smil_mean" pooling, or the plain mean before that
        params = json.loads(self.model_.params_json)
        if "bag_score" not in params:
            self.bag_score = "smil_mean" if self.model_.pooling == "smil_mean" else "mean"
        elif self.model_.pooling == "smil_mean" and self.bag_score != "auto":
            self.bag_score = "smil_mean"
        self.bag_score_ = self._applied_bag_score(self.model_.pooling)
