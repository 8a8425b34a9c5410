"""One outer fold of the peer comparison, for one side: milsvm or a peer implementation.

Run by ``benches/bench_peers.py`` in a subprocess (under ``/usr/bin/time -v``, for the peak
RSS): milsvm's side with the milsvm venv's python, the peers' with ``/work/venv-peers``'s, so
that no peer is ever a dependency of milsvm. Both sides run this same file, so the protocol
(the splits, the standardisation, the gamma rule, the inner-CV selection, the timing and the
scoring) is one code path; only the estimator differs (``make_estimator``).

Input: the data set as ``.npz`` (``X`` instances, ``bag_ptr``, ``y`` 0/1), the splits file
(JSON, written by the driver: the outer folds and their inner folds, as bag indices) and the
settings on the command line. Output: one JSON file with the test scores and predictions, the
fit seconds (``fit`` alone, inner-CV selection apart), the chosen hyperparameters and, on
failure, the error.

Nothing here is a peer's code; the peers are imported from the venv that runs this file.
``--impl`` names the implementation: ``milsvm``, ``misvm``, ``sawmil`` or ``mil``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _protocol import standardise  # noqa: E402  (numpy only)

#: Methods whose kernel is a Gaussian on the per-bag min/max statistic vectors, not on the
#: instances (the gamma rule is then scikit-learn's "scale" over those vectors).
STATS_KERNEL = {"STK"}

#: The milsvm class of a method row, when it is not the row's name: "NSK-l2" is NSK with the
#: feature-space (2-norm) normalisation, given as MILSVM_PARAMS.
MILSVM_CLASS = {"NSK-l2": "NSK"}

#: milsvm parameters that make a row's method (given only to milsvm).
MILSVM_PARAMS = {"NSK-l2": {"norm": "l2"}}

#: misvm's kernel name per method: the set-kernel methods average the instance kernel over
#: the two bags (misvm's "_av" normaliser, milsvm's NSK norm="l1", Bunescu & Mooney's sMIL);
#: "NSK-l2" divides the summed kernel by the bags' feature-space norms (misvm's "_fs").
MISVM_KERNEL = {
    "NSK": "rbf_av",
    "sMIL": "rbf_av",
    "sbMIL": "rbf_av",
    "stMIL": "rbf_av",
    "NSK-l2": "rbf_fs",
}

#: sawmil 0.2.1's ``normalizer`` per method. Measured on its Gram matrices (RESULTS.md, "Peer
#: implementations"): "none" gives the SUMMED kernel (its docstring says the mean), "average"
#: the mean divided again by |X| |X'|, "featurespace" the summed kernel over the feature-space
#: norms (milsvm's norm="l2"). No setting gives the averaged kernel, so sawmil's NSK is
#: compared in the "NSK-l2" row; sMIL and sAwMIL keep "none", the setting sawmil's sMIL
#: docstring recommends as "mean aggregator".
SAWMIL_NORMALIZER = {"NSK": "none", "sMIL": "none", "sAwMIL": "none", "NSK-l2": "featurespace"}

#: Method parameters other than C and gamma, given alike to both sides (to milsvm only when its
#: estimator takes a parameter of that name; the driver reports which were given).
#: sbMIL's eta and sAwMIL's eta: the fraction of positive-bag instances taken as positive.
EXTRA = {"sbMIL": {"eta": 0.1}, "sAwMIL": {"eta": 0.1}}


def stats_vectors(bags):
    """The per-feature minima and maxima of each bag (Gaertner et al.'s STK statistic)."""
    return np.vstack([np.concatenate([b.min(0), b.max(0)]) for b in bags])


def gamma_scale(method, bags):
    """scikit-learn's gamma="scale", ``1 / (n_columns * var)``, over what the kernel sees: the
    training instances, or (STK) the training bags' statistic vectors."""
    Z = stats_vectors(bags) if method in STATS_KERNEL else np.vstack(bags)
    var = Z.var()
    return 1.0 / (Z.shape[1] * var) if var > 0 else 1.0


# --------------------------------------------------------------------------- the estimators
def _import_mil_miles():
    """mil 1.0.5's MILES class without running ``mil/models/__init__.py``.

    That ``__init__`` imports the package's deep-attention model, which imports
    ``tensorflow.keras.wrappers.scikit_learn`` (gone from TensorFlow since 2.12; no TensorFlow
    old enough exists for Python 3.11), so ``import mil.models`` fails. MILES itself needs only
    scikit-learn: the two packages above it are registered here as plain namespace modules over
    their real folders, then ``miles.py`` is imported as shipped (no peer code is changed).
    """
    import importlib
    import types

    import mil
    import sklearn.svm

    root = Path(mil.__file__).parent / "models"
    for name, path in (("mil.models", root), ("mil.models.bag_level", root / "bag_level")):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [str(path)]
            sys.modules[name] = mod
    sys.modules["mil.models"].LinearSVC = sklearn.svm.LinearSVC  # what miles.py imports from there
    return importlib.import_module("mil.models.bag_level.miles").MILES


def import_library(impl):
    """Imports the implementation ``impl`` (its first ``Adapter`` would otherwise import it
    inside the timed inner-CV selection)."""
    if impl == "milsvm":
        import milsvm._registry  # noqa: F401
    elif impl == "misvm":
        import misvm  # noqa: F401
    elif impl.startswith("sawmil"):
        import sawmil  # noqa: F401
    else:
        _import_mil_miles()


def _sawmil_bags(bags, y01=None):
    """sawmil's ``Bag`` objects (sAwMIL takes raw arrays only with an intra-bag mask; test bags
    get the label 0, which sawmil does not read when scoring)."""
    from sawmil import Bag

    labels = np.zeros(len(bags)) if y01 is None else y01
    return [Bag(X=b, y=float(t)) for b, t in zip(bags, labels)]


def _stage1_on_osqp():
    """sawmil 0.2.1's ``sAwMIL.fit`` builds its stage-1 ``sMIL`` without passing ``solver`` on,
    so that stage runs on sMIL's default, Gurobi, whatever ``solver`` the user chose (without
    ``gurobipy``: ``ImportError``). For the ``sawmil-s1osqp`` rows the harness rebinds the name
    ``sMIL`` in the module ``sawmil.sawmil`` to a subclass whose default solver is OSQP; the
    package's files are not changed."""
    import sawmil.sawmil as module
    from sawmil.smil import sMIL

    class Stage1OnOSQP(sMIL):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("solver", "osqp")
            super().__init__(*args, **kwargs)

    module.sMIL = Stage1OnOSQP


class Adapter:
    """A fitted estimator behind one interface: ``fit(bags, y01)``, ``scores(bags)`` (real bag
    scores, larger = more positive) and ``predict(bags)`` (0/1, by the implementation's own
    rule)."""

    def __init__(self, impl, method, C, gamma, threads):
        self.impl, self.method, self.C, self.gamma = impl, method, C, gamma
        self.given = {}
        # "sawmil-s1osqp": sawmil with sAwMIL's stage-1 sMIL put on OSQP (see _stage1_on_osqp).
        self.stage1_osqp = impl == "sawmil-s1osqp"
        getattr(self, "_make_" + impl.split("-")[0])(threads)

    # milsvm: the class of that name in the registry, with the parameters it takes.
    def _make_milsvm(self, threads):
        import inspect

        from milsvm._registry import ESTIMATORS

        cls = ESTIMATORS[MILSVM_CLASS.get(self.method, self.method)]
        accepted = inspect.signature(cls.__init__).parameters
        params = {"C": self.C, "kernel": "rbf", "gamma": self.gamma, "n_jobs": threads}
        params.update(EXTRA.get(self.method, {}))
        params.update(MILSVM_PARAMS.get(self.method, {}))
        self.given = {k: v for k, v in params.items() if k in accepted}
        self.est = cls(**self.given)

    def _make_misvm(self, threads):
        import misvm

        # scale_C=False: C is the plain weight of each hinge term, as in milsvm (and libsvm).
        self.given = dict(
            kernel=MISVM_KERNEL.get(self.method, "rbf"),
            C=self.C,
            gamma=self.gamma,
            scale_C=False,
            verbose=False,
        )
        self.given.update(EXTRA.get(self.method, {}))
        self.est = getattr(misvm, MILSVM_CLASS.get(self.method, self.method))(**self.given)

    def _make_sawmil(self, threads):
        import sawmil
        from sawmil import RBF

        common = dict(
            C=self.C,
            kernel=RBF(gamma=self.gamma),
            solver="osqp",
            scale_C=False,
            normalizer=SAWMIL_NORMALIZER.get(self.method, "none"),
        )
        if self.method in ("NSK", "sMIL", "NSK-l2"):
            self.est = getattr(sawmil, MILSVM_CLASS.get(self.method, self.method))(**common)
        elif self.method == "sAwMIL":
            self.est = sawmil.sAwMIL(**common, **EXTRA["sAwMIL"])
            if self.stage1_osqp:
                _stage1_on_osqp()
        else:
            raise ValueError(f"sawmil has no {self.method}")
        self.given = {**common, "kernel": f"RBF(gamma={float(self.gamma)!r})"}

    def _make_mil(self, threads):
        if self.method != "MILES":
            raise ValueError(f"mil has no {self.method}")
        MILES = _import_mil_miles()
        # mil's similarity is exp(-d^2 / sigma2): sigma2 = 1 / gamma.
        self.given = dict(sigma2=1.0 / self.gamma, C=self.C)
        self.est = MILES(**self.given)

    def fit(self, bags, y01):
        if self.impl == "milsvm":
            self.est.fit(bags, y01)
        elif self.impl == "misvm":
            self.est.fit(bags, np.where(y01 > 0, 1.0, -1.0))
        elif self.impl.startswith("sawmil"):
            self.est.fit(_sawmil_bags(bags, y01))
        else:
            self.est.fit(bags, y01)
        return self

    def scores(self, bags):
        if self.impl == "milsvm":
            return np.asarray(self.est.decision_function(bags), dtype=float)
        if self.impl == "misvm":
            return np.asarray(self.est.predict(bags), dtype=float).ravel()
        if self.impl.startswith("sawmil"):
            return np.asarray(self.est.decision_function(_sawmil_bags(bags)), dtype=float).ravel()
        return np.asarray(
            self.est.model.decision_function(self.est.mapping.transform(bags)), dtype=float
        )

    def predict(self, bags, scores=None):
        if self.impl == "milsvm":
            return np.asarray(self.est.predict(bags)).astype(int)
        if self.impl.startswith("sawmil"):
            return np.asarray(self.est.predict(_sawmil_bags(bags))).astype(int)
        if self.impl == "mil":
            return np.asarray(self.est.predict(bags)).astype(int)
        s = self.scores(bags) if scores is None else scores
        return (s > 0).astype(int)  # misvm: "threshold at zero"


# --------------------------------------------------------------------------- the protocol
def _has_path(method):
    """Whether milsvm's estimator of ``method`` fits a grid over C as one path."""
    from milsvm._registry import ESTIMATORS

    return bool(ESTIMATORS[MILSVM_CLASS.get(method, method)]._c_path)


def fit_score(impl, method, C, gscale, train_bags, y_train, test_bags, threads):
    """Standardise on the training part, gamma = gscale x scale over it, fit, score the test
    part. Returns (scores, predictions, fit seconds, gamma, adapter)."""
    tr, te = standardise(train_bags, test_bags)
    gamma = gscale * gamma_scale(method, tr)
    model = Adapter(impl, method, C, gamma, threads)
    t0 = time.perf_counter()
    model.fit(tr, y_train)
    seconds = time.perf_counter() - t0
    s = model.scores(te)
    return s, model.predict(te, s), seconds, gamma, model


def inner_path_scores(method, Cs, gs, itr_bags, y_itr, iva_bags, threads):
    """milsvm's own route for a grid over C (``--c-path``): the values ``Cs`` on one inner
    split as one ``fit_path`` (what ``milsvm cv`` does for an estimator with a path), standardised
    and with gamma worked out as ``fit_score`` does. Returns the 0/1 predictions of the
    validation bags per value of ``Cs`` and the seconds of the ``fit_path`` call."""
    tr, va = standardise(itr_bags, iva_bags)
    gamma = gs * gamma_scale(method, tr)
    model = Adapter("milsvm", method, Cs[0], gamma, threads)
    t0 = time.perf_counter()
    fitted = model.est.fit_path(tr, y_itr, Cs)
    seconds = time.perf_counter() - t0
    return [np.asarray(e.predict(va)).astype(int) for e in fitted], seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--impl", required=True, choices=["milsvm", "misvm", "sawmil", "sawmil-s1osqp", "mil"]
    )
    ap.add_argument("--method", required=True)
    ap.add_argument("--data", type=Path, required=True, help=".npz with X, bag_ptr, y")
    ap.add_argument("--splits", type=Path, required=True, help="the splits JSON of the driver")
    ap.add_argument("--fold", type=int, required=True)
    ap.add_argument("--C", type=float, nargs="+", required=True)
    ap.add_argument("--gamma-scales", type=float, nargs="+", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--c-path",
        action="store_true",
        help="milsvm only, with several C for an estimator with a path: fit the C values of "
        "each inner split and gamma as one fit_path (inner_path_scores)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="everything but the fits: read the data, standardise, import the library and build "
        "the estimator (the process's RSS floor)",
    )
    args = ap.parse_args()

    rec = dict(impl=args.impl, method=args.method, fold=args.fold, ok=False)
    try:
        data = np.load(args.data)
        X, ptr, y = data["X"], data["bag_ptr"], data["y"].astype(int)
        bags = [np.ascontiguousarray(X[ptr[i] : ptr[i + 1]]) for i in range(len(ptr) - 1)]
        fold = json.loads(args.splits.read_text())["folds"][args.fold]
        train, test = np.array(fold["train"]), np.array(fold["test"])
        take = lambda idx: [bags[i] for i in idx]  # noqa: E731
        grid = [(c, g) for c in args.C for g in args.gamma_scales]
        import_library(args.impl)
        if args.floor:
            tr, _ = standardise(take(train), take(test))
            Adapter(args.impl, args.method, grid[0][0], gamma_scale(args.method, tr), args.threads)
            args.out.write_text(json.dumps(dict(rec, ok=True, floor=True)))
            return 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_sel = time.perf_counter()
            if len(grid) > 1:
                # Inner CV on the training part (the driver's inner folds, the same for every
                # side): the grid point of best mean accuracy, ties to the first.
                acc, inner_fit = [], 0.0
                path = (
                    args.c_path
                    and args.impl == "milsvm"
                    and len(args.C) > 1
                    and _has_path(args.method)
                )
                if path:
                    per_point = {}
                    for g in args.gamma_scales:
                        for itr, iva in fold["inner"]:
                            preds, sec = inner_path_scores(
                                args.method, args.C, g, take(itr), y[itr], take(iva), args.threads
                            )
                            inner_fit += sec
                            for c, p in zip(args.C, preds):
                                per_point.setdefault((c, g), []).append(np.mean(p == y[iva]))
                    acc = [float(np.mean(per_point[point])) for point in grid]
                else:
                    for c, g in grid:
                        a = []
                        for itr, iva in fold["inner"]:
                            _, p, sec, _, _ = fit_score(
                                args.impl,
                                args.method,
                                c,
                                g,
                                take(itr),
                                y[itr],
                                take(iva),
                                args.threads,
                            )
                            a.append(np.mean(p == y[iva]))
                            inner_fit += sec
                        acc.append(float(np.mean(a)))
                rec["c_path"] = path
                C, gs = grid[int(np.argmax(acc))]
                rec["inner_accuracy"] = acc
                rec["inner_fit_seconds"] = inner_fit  # the inner fits' `fit` calls alone
            else:
                C, gs = grid[0]
            select_seconds = time.perf_counter() - t_sel
            s, p, seconds, gamma, model = fit_score(
                args.impl, args.method, C, gs, take(train), y[train], take(test), args.threads
            )
        rec.update(
            ok=True,
            scores=s.tolist(),
            pred=p.tolist(),
            y=y[test].tolist(),
            fit_seconds=seconds,
            select_seconds=select_seconds,
            C=C,
            gamma_scale=gs,
            gamma=gamma,
            given={
                k: (v if isinstance(v, (int, float, str, type(None))) else repr(v))
                for k, v in model.given.items()
            },
        )
        if args.impl == "milsvm":
            import milsvm

            rec["version"] = milsvm.__version__
            rec["gamma_used"] = float(getattr(model.est, "gamma_", float("nan")))
        else:
            from importlib.metadata import PackageNotFoundError, version

            try:
                rec["version"] = version(args.impl.split("-")[0])
            except PackageNotFoundError:
                rec["version"] = "?"
    except BaseException as exc:  # recorded, not lost: the driver reports it as the row's failure
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()[-3000:]
    args.out.write_text(json.dumps(rec))
    return 0 if rec["ok"] else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
