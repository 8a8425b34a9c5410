"""One side of ``benches/peers.py miles-mil``, run in its own process (and virtual environment)
under ``/usr/bin/time -v``: MILES on MUSK2 over given folds, either by milsvm or by the ``mil``
package's pipeline (PyPI ``mil`` 1.0.5: ``mil.bag_representation.MILESMapping`` plus scikit-learn's
``LinearSVC(penalty="l1", dual=False, class_weight="balanced", max_iter=10000)``, the classifier
that ``mil.models.MILES`` builds; ``mil.models`` itself cannot be imported without TensorFlow, which
its other models need, so the two pieces are called directly, with the same arguments).

For each fold: the training bags standardised with their instances' mean / std and the test bags
with the same; the Gaussian width gamma = --gamma-scale / (d Var[X_train]) (mil's sigma2 =
1 / gamma); one embedding of the training bags (mil: ``fit_transform``; milsvm: inside
``fit_path``) and one fit per C of --Cs; then the test bags scored. Writes JSON: per fold the
training seconds (mapping + fits), the scoring seconds, and the test scores per C.

This file imports milsvm only with --impl milsvm (the mil environment has no milsvm).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _protocol import load_mill_dense, standardise  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["mil", "milsvm"], required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--splits", type=Path, required=True)
    ap.add_argument("--gamma-scale", type=float, default=1.0)
    ap.add_argument("--Cs", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    ap.add_argument("--n-jobs", type=int, default=1, help="milsvm threads")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    X, ptr, y = load_mill_dense(args.data)
    bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(ptr) - 1)]
    splits = json.loads(args.splits.read_text())
    folds = []
    for train, test in splits:
        tr, te = standardise([bags[i] for i in train], [bags[i] for i in test])
        Xtr = np.vstack(tr)
        gamma = args.gamma_scale / (Xtr.shape[1] * Xtr.var())
        ytr = y[train]
        if args.impl == "mil":
            from mil.bag_representation.mapping import MILESMapping
            from sklearn.svm import LinearSVC

            t0 = time.perf_counter()
            mapping = MILESMapping(sigma2=1.0 / gamma)
            E = mapping.fit_transform(tr)
            models = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for C in args.Cs:
                    models.append(
                        LinearSVC(
                            penalty="l1", C=C, dual=False, class_weight="balanced", max_iter=10000
                        ).fit(E, ytr)
                    )
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            Et = mapping.transform(te)
            scores = [m.decision_function(Et).tolist() for m in models]
            nnz = [int(np.count_nonzero(m.coef_)) for m in models]
            score_s = time.perf_counter() - t0
        else:
            import milsvm

            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                models = milsvm.MILES(
                    gamma=gamma, class_weight="balanced", n_jobs=args.n_jobs
                ).fit_path(tr, ytr, args.Cs)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            scores = [m.decision_function(te).tolist() for m in models]
            nnz = [int(m.n_selected_) for m in models]
            score_s = time.perf_counter() - t0
        folds.append(
            {
                "fit_seconds": fit_s,
                "score_seconds": score_s,
                "scores": scores,
                "nnz": nnz,
                "test": [int(i) for i in test],
            }
        )
        print(f"{args.impl}: fold {len(folds)} fit {fit_s:.2f} s", file=sys.stderr, flush=True)
    args.out.write_text(json.dumps({"impl": args.impl, "Cs": args.Cs, "folds": folds}))


if __name__ == "__main__":
    main()
