"""Two-stage estimators built on sMIL, solved by the Rust SMO (``src/two_stage.rs``): a first sMIL
fit ranks the instances of the positive bags, a share ``eta`` of them is labelled positive, and an
instance SVM (bag score: the max over the bag's instances) is trained on the relabelled instances.
sbMIL (Bunescu & Mooney, Multiple Instance Learning for Sparse Positive Bags, ICML 2007) and sAwMIL
(Savcisens & Eliassi-Rad, The Trilemma of Truth in Large Language Models, 2025; the ``sawmil``
package)."""

from __future__ import annotations

import json

import numpy as np

from ._base import SingleSVMClassifier
from ._constructor import SMO_TAIL, SVM_HEAD
from ._docs import SMO_PARAMS, attr, field, param
from .set_kernel_svm import sMIL

__all__ = ["sbMIL", "sAwMIL"]


_STAGES = """    The two stages, on each binary problem (one-vs-rest beyond two classes, each
    problem relabelled on its own):

    1. sMIL (:class:`milsvm.sMIL`, the same ``C``, ``kernel``, ``gamma``, ``class_weight``,
       ``inner_tol``, ``inner_max_iter``, its default ``bag_score``) on the training bags
       (sAwMIL: by default the ``sawmil`` package's form of its problem, see
       ``first_stage_problem``); its score of an instance taken as a bag of one,
       ``s(x) = sum_t c_t k(x_t, x) + b``, ranks the ``L`` instances of the ``P`` positive
       bags, across all of them at once (one threshold, not one per bag). No per-bag term
       enters: an instance's rank does not depend on its bag's size (``b`` holds sMIL's one
       learnt threshold, a constant the rules below do not see).
    2. The instances of negative bags are labelled negative; of the positive bags' instances,
       those the rule below picks are positive and the others negative. One C-SVM over all
       training instances with these labels (:class:`milsvm.SIL`'s SVM: instance ``t`` of bag
       ``i`` costs ``C * class_weight[y_i]``, the problem ``sklearn.svm.SVC`` solves with those
       per-sample weights), ``f(x) = sum_t a_t y_t k(x_t, x) + b``; a bag scores the max of its
       instances' scores, ``F(X) = max_p f(x_p)``.

    Which bag score and which first-stage problem each estimator of the sMIL family uses, and
    why (with the benchmark's numbers): docs/guide/smil-bag-scores.md."""

_LABELS = field(
    "TwoStageFit",
    "instance_labels",
    "ndarray of shape (n_instances,) (list of them for multi-class)",
    more="In the order of the training bags (not kept in the model file).",
)

_ATTRS = f"""{attr("xv_", "coef_", "intercept_")}
    n_support_ : int or ndarray
        Support instances of the second stage.
    dual_coef_ : ndarray (list of them for multi-class)
        The second stage's dual variables, one per training instance (not multiplied by the
        labels).
    objective_ : float or ndarray
        The second stage's dual objective ``1/2 a^T Q a - 1^T a``.
    n_iter_ : int
        SMO iterations of the second stage (largest over the problems).
    converged_ : bool
        Whether every SMO solve of both stages met its tolerance.
    first_stage_ : sMIL
        The first stage, a fitted :class:`milsvm.sMIL` (not kept in the model file).
{_LABELS}
{field("TwoStageFit", "threshold", "float or ndarray")}
    n_positive_instances_ : int or ndarray
        The number of training instances labelled positive.
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}"""


class _TwoStage(SingleSVMClassifier):
    """What sbMIL and sAwMIL share: the core's one fit (Rust ``TwoStageParams``; subclasses fix
    the relabelling rule through ``_core_fixed``) and the fitted attributes of its
    ``TwoStageFit`` (the second stage's ``svm`` record, the first stage's, the relabelling)."""

    _core_fit = "fit_two_stage"
    _c_path = False  # two solves: no path of the core
    _poolings = ("max",)
    _progress_unit = "stage"
    _info_attrs = SingleSVMClassifier._info_attrs + ("threshold_", "n_positive_instances_")
    _default_grid = {
        "C": [0.1, 1.0, 10.0, 100.0],
        "gamma": ["0.1*scale", "scale", "10*scale"],
        "eta": [0.1, 0.3, 0.5],
    }
    _search_ranges = {"eta": "0.05 ... 1 (e.g. --grid eta=0.1,0.3,0.5,1); 1 gives SIL"}

    def _progress_total(self, params):
        return 2

    def _model_record(self, fit):
        return fit.svm

    def _inner_converged(self, fit):
        return bool(fit.svm.inner_converged and fit.first_stage.inner_converged)

    def _fitted(self, fit, bags, binary):
        # the core's TwoStageFit nests both stages' SvmFit: the second stage is the model's
        state = super()._fitted(fit.svm, bags, binary)
        state["converged_"] = self._inner_converged(fit)
        labels = [np.asarray(v) for v in fit.instance_labels]
        counts = [int((v > 0).sum()) for v in labels]
        state.update(
            {
                "first_stage_": self._first_stage(fit, binary),
                "instance_labels_": labels[0] if binary else labels,
                "threshold_": float(fit.threshold[0]) if binary else np.asarray(fit.threshold),
                "n_positive_instances_": counts[0] if binary else np.asarray(counts),
            }
        )
        return state

    def _first_stage(self, fit, binary):
        """The first stage as a fitted :class:`milsvm.sMIL` with this estimator's settings."""
        params = self.get_params(deep=False)
        smil = sMIL(**{k: params[k] for k in sMIL().get_params(deep=False) if k in params})
        # the first stage's bag score is mean_offset, whatever sMIL's default (the core pins it)
        smil.set_params(probability=False, verbose=0, bag_score="mean_offset")
        first = fit.first_stage
        smil.__dict__.update(
            {
                "model_": first.model,
                "gamma_": float(first.gamma),
                "n_features_in_": first.model.n_features,
                "fit_time_": 0.0,
                **smil._fitted(first, None, binary),
            }
        )
        return smil

    def _install(self, job, fit, seconds):
        super()._install(job, fit, seconds)
        # the first stage shares the classes (set after _fitted, like the estimator's own)
        self.first_stage_.classes_ = self.classes_

    def _fit_summary(self):
        return (
            f"{self.n_positive_instances_} instances relabelled positive; "
            f"{self.n_iter_} SMO iterations, dual objective {self.objective_}"
        )


class sbMIL(_TwoStage):
    __doc__ = f"""sbMIL: sparse balanced MIL (Bunescu & Mooney, Multiple Instance Learning
    for Sparse Positive Bags, ICML 2007, section 3.2).

    sMIL assumes sparse positive bags (at least one positive instance each), SIL dense ones
    (every instance positive); sbMIL sits between them through ``eta``, the expected fraction of
    positive instances in a positive bag.

{_STAGES}

    sbMIL's rule: the ``k = round(eta * L)`` instances of largest ``s`` (Python's rounding, half
    to even), with ``k`` at least ``P`` (as many positives as positive bags) and at most ``L``;
    every instance whose score ties the ``k``-th largest is positive too. This is the rule of
    Doran's ``misvm`` package (``misvm/sbmil.py``); ``eta=1`` labels every instance of a
    positive bag positive, and sbMIL is then :class:`milsvm.SIL`. With ``class_weight=None``
    every sMIL unit and every instance costs ``C``: the problems misvm solves with
    ``scale_C=False`` and its averaging kernel (``"rbf_av"``), which give the same instance
    labels (``benches/sbmil_vs_misvm.py``); misvm's default ``scale_C=True`` divides ``C`` by the
    numbers of negative instances and of positive bags in the first stage and by the number of
    instances in the second. The text of the paper was not available to us; the rule and the
    global threshold are misvm's (and sawmil's).

    ``instance_decision_function`` gives ``f(x)`` and ``explain`` the arg-max instance, as for
    the other max-pooling estimators. ``verbose`` reports the two stages.

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "rbf"})}
    eta : float, default=0.1
        Expected fraction of positive instances in a positive bag, in (0, 1].
{SMO_PARAMS}

    Attributes
    ----------
{_ATTRS}
    """

    _core_fixed = {"relabel": "sbmil"}

    _init_params = (*SVM_HEAD, "eta", *SMO_TAIL)


class sAwMIL(_TwoStage):
    __doc__ = f"""sAwMIL: sparse-aware MIL (Savcisens & Eliassi-Rad, The Trilemma of Truth in Large
    Language Models, arXiv:2506.23921, 2025; the ``sawmil`` package 0.2.1, ``sawmil/sawmil.py``).

    sMIL, then an instance SVM on the top-ranked share ``eta`` of the positive bags' instances.

{_STAGES}

    sAwMIL's rule (the package's ``sAwMIL.__rank_and_filter__``): the instances with
    ``s >= q``, ``q`` the ``1 - eta`` quantile of the ``L`` scores with linear interpolation
    (NumPy's default ``np.quantile``); if fewer than ``m = max(1, floor(0.05 L))`` are picked
    (the package's ``min_pos_ratio=0.05``), the ``min(L, max(m, round(eta L)))`` of largest
    score instead. The package also takes an intra-bag mask of the instances that may be
    positive at all; milsvm has none (the package's behaviour with a mask of ones). The kernel
    defaults to the linear one, as in the package.

    The first stage solves the package's problem by default (``first_stage_problem="sawmil"``,
    sawmil 0.2.1's sMIL with its default ``normalizer="none"``): the instance kernel summed over
    a positive bag (:class:`milsvm.sMIL` averages it) and the positive bags' dual linear term
    ``(n - 2) / n`` for ``n`` instances (the paper's is ``(2 - n) / n``). With it milsvm ranks
    as the package does (the same AUC on MUSK1 and Elephant), which is what sAwMIL names.
    ``first_stage_problem="paper"`` solves Bunescu & Mooney's sMIL instead (sbMIL's first
    stage), which ranks better on MUSK2 and the text sets. The numbers and the benchmark:
    docs/guide/smil-bag-scores.md, "sbMIL and sAwMIL".

    Where milsvm still differs from the package: the first stage's bias comes from the SMO's
    optimality conditions (which the rule does not see), costs are ``C`` times the class
    weights (sawmil's ``scale_C=True`` divides ``C`` by the numbers of negative instances and
    of positive bags, ratios ``class_weight`` can give), and both QPs are solved by milsvm's SMO
    to ``inner_tol`` (sawmil: Gurobi, OSQP or DAQP).

    Parameters
    ----------
{param("C", "kernel", "gamma", kernel={"default": "linear"})}
    eta : float, default=0.1
        The share of the positive bags' instances labelled positive, in (0, 1].
    first_stage_problem : {{"sawmil", "paper"}}, default="sawmil"
        The first stage's problem: the ``sawmil`` package's (summed kernel, the positive bags'
        linear term negated), or Bunescu & Mooney's sMIL. Model files written before the
        default changed load with ``"paper"``, the problem they were fitted with.
{SMO_PARAMS}

    Attributes
    ----------
{_ATTRS}
    """

    _core_fixed = {"relabel": "sawmil"}

    _init_params = (*SVM_HEAD, "eta", "first_stage_problem", *SMO_TAIL)
    #: the ``sawmil`` package's kernel and first-stage problem (Rust ``TwoStageParams::sawmil()``)
    _init_defaults = {"kernel": "linear", "first_stage_problem": "sawmil"}

    def _loaded(self):
        super()._loaded()
        # the first stage shapes the fit only, not the model: files written before the
        # parameter existed were fitted on the paper's problem, and say so
        if "first_stage_problem" not in json.loads(self.model_.params_json):
            self.first_stage_problem = "paper"
