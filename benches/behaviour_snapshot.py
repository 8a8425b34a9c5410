"""Decision values of fixed fits of every estimator, to check that a refactor keeps behaviour.

``--write FILE.npz`` fits a fixed list of configurations (every estimator; binary, three-class,
sparse input, linear kernel, class weights, reduced bases, ``gamma="median"``) on the bundled
MUSK1 and on small synthetic sets, and stores the bag scores and instance scores of each;
``--compare FILE.npz`` fits the same list with the installed milsvm and prints, per
configuration, whether the scores are bitwise equal and else the largest relative difference.
``--models DIR`` also saves each fitted model (the files a later version must still load).

Run it before and after a change with the same machine and thread count::

    python benches/behaviour_snapshot.py --write before.npz --models tests/data/models_v3
    python benches/behaviour_snapshot.py --compare before.npz

``--params NAME=JSON`` sets parameters on every configuration of the estimator ``NAME`` (for a
change of defaults: the old behaviour through the new parameters), e.g.
``--params 'SVMCC={"lp_rule": "max", "bounds": "split"}'``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import milsvm
import numpy as np
import scipy.sparse as sp
from milsvm.datasets import load_musk1

# the toy sets of the test suite
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import easy_bags as _easy  # noqa: E402
from conftest import three_class_bags  # noqa: E402


def _three(seed=0, n_bags=30):
    return three_class_bags(n_bags=n_bags, seed=seed)


def _sparse(seed=0, n_bags=20, d=30):
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        n = int(rng.integers(2, 5))
        x = np.where(rng.random((n, d)) < 0.2, rng.normal(size=(n, d)), 0.0)
        if i % 2:
            x[0, :3] += 2.0
        bags.append(sp.csr_matrix(x))
        y.append(i % 2)
    return bags, np.array(y)


def _musk1_part():
    bags, y = load_musk1()
    X = np.concatenate(bags)
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    bags = [(b - mean) / std for b in bags]
    idx = np.arange(0, len(bags), 2)
    return [bags[i] for i in idx], y[idx]


def _embedding():
    # enough active rows for the linear solver's sampled preconditioner
    from milsvm.datasets import make_embedding_bags

    return make_embedding_bags(40, 100, 32, random_state=0)


def configurations():
    """``(name, estimator, data)`` for every fixed fit."""
    easy, three, sparse, musk = _easy(), _three(), _sparse(), _musk1_part()
    emb = _embedding()
    M = milsvm
    return [
        ("sparsemi_musk", M.SparseMI(n_xv=6, C=10, max_iter=8, random_state=0, n_jobs=1), musk),
        ("sparsemi_three", M.SparseMI(n_xv=4, C=10, max_iter=5, random_state=1, n_jobs=1), three),
        (
            "sparsemi_kmeans",
            M.SparseMI(n_xv=4, init="kmeans", max_iter=3, random_state=0, n_jobs=1),
            easy,
        ),
        (
            "sparsemi_svm",
            M.SparseMI(n_xv=4, init="svm", max_iter=3, random_state=0, n_jobs=1),
            easy,
        ),
        (
            "sparsemi_bv",
            M.SparseMI(n_xv=3, n_basis=8, max_iter=4, random_state=0, n_jobs=1),
            sparse,
        ),
        (
            "sparsemi_linear_lbfgs",
            M.SparseMI(
                n_xv=3, kernel="linear", solver="lbfgs", max_iter=3, random_state=0, n_jobs=1
            ),
            easy,
        ),
        ("rsvm_musk", M.RSVM(n_xv=8, C=10, random_state=2, n_jobs=1), musk),
        ("mikernel_musk", M.MIKernel(C=10, n_jobs=1), musk),
        ("mikernel_three_linear", M.MIKernel(C=1, kernel="linear", n_jobs=1), three),
        ("reducedset_musk", M.ReducedSet(n_xv=5, C=10, random_state=0, n_jobs=1), musk),
        ("reducedset_three", M.ReducedSet(n_xv=4, random_state=0, n_jobs=1), three),
        ("nsk_musk", M.NSK(C=10, n_jobs=1), musk),
        ("nsk_l2_median", M.NSK(C=10, norm="l2", gamma="median", n_jobs=1), easy),
        ("nsk_three_balanced", M.NSK(C=1, class_weight="balanced", n_jobs=1), three),
        ("nsk_sparse_linear", M.NSK(kernel="linear", n_jobs=1), sparse),
        ("smil_musk", M.sMIL(C=10, n_jobs=1), musk),
        ("smil_three", M.sMIL(C=1, class_weight={"a": 2.0}, n_jobs=1), three),
        ("alsvm_musk", M.ALSVM(C=10, gamma="median", n_jobs=1), musk),
        ("alsvm_nxv", M.ALSVM(C=10, n_xv=20, random_state=0, n_jobs=1), musk),
        ("awsvm_musk", M.AWSVM(C=10, gamma="median", n_jobs=1), musk),
        ("alpsvm_easy", M.ALPSVM(C=10, C2=2.0, p_star=0.4, n_jobs=1), easy),
        (
            "alpsvm_nxv_random",
            M.ALPSVM(C=10, n_xv=10, xv_init="random", random_state=3, n_jobs=1),
            easy,
        ),
        ("misvm_musk", M.miSVM(C=10, gamma="median", n_jobs=1), musk),
        ("misvm_three_weighted", M.miSVM(C=10, class_weight="balanced", n_jobs=1), three),
        ("bigmisvm_musk", M.MISVM(C=10, gamma="median", n_jobs=1), musk),
        ("bigmisvm_nxv", M.MISVM(C=10, n_xv=15, random_state=0, n_jobs=1), musk),
        ("svmcc_linear_musk", M.SVMCC(C=10, n_jobs=1), musk),
        ("svmcc_rbf_musk", M.SVMCC(C=10, kernel="rbf", gamma="median", n_jobs=1), musk),
        ("svmcc_three", M.SVMCC(C=1, kernel="rbf", n_jobs=1), three),
        ("svmcc_sparse", M.SVMCC(C=1, n_jobs=1), sparse),
        ("oneclass_musk", M.OneClassMISVM(nu=0.3, n_jobs=1), musk),
        (
            "oneclass_plain",
            M.OneClassMISVM(nu=0.5, bag_constraints=False, gamma="median", n_jobs=1),
            easy,
        ),
        ("sil_musk", M.SIL(C=10, n_jobs=1), musk),
        ("sil_sparse_linear", M.SIL(kernel="linear", n_jobs=1), sparse),
        ("stk_musk", M.STK(C=10, n_jobs=1), musk),
        ("stk_three", M.STK(C=1, kernel="linear", n_jobs=1), three),
        ("miles_musk", M.MILES(C=1, n_jobs=1), musk),
        ("miles_three_linear", M.MILES(C=1, kernel="linear", n_jobs=1), three),
        ("sbmil_musk", M.sbMIL(C=10, eta=0.2, n_jobs=1), musk),
        ("sbmil_sparse_linear", M.sbMIL(kernel="linear", n_jobs=1), sparse),
        ("sawmil_musk", M.sAwMIL(C=10, n_jobs=1), musk),
        ("sawmil_three_rbf", M.sAwMIL(C=1, kernel="rbf", n_jobs=1), three),
        ("stmil_musk", M.stMIL(C=10, n_jobs=1), musk),
        ("stmil_easy_restarts", M.stMIL(C=1, restarts=2, random_state=0, n_jobs=1), easy),
        ("stmil_sparse_linear", M.stMIL(kernel="linear", n_jobs=1), sparse),
        ("misssvm_musk", M.MissSVM(C=10, n_jobs=1), musk),
        ("misssvm_three", M.MissSVM(C=1, class_weight="balanced", n_jobs=1), three),
        ("misssvm_easy_restarts", M.MissSVM(C=1, restarts=2, random_state=1, n_jobs=1), easy),
        ("misvm_linear_musk", M.miSVM(C=10, kernel="linear", n_jobs=1), musk),
        ("bigmisvm_linear_musk", M.MISVM(C=10, kernel="linear", n_jobs=1), musk),
        ("alsvm_linear_sparse", M.ALSVM(C=1, kernel="linear", n_jobs=1), sparse),
        ("misvm_linear_emb", M.miSVM(C=1, kernel="linear", n_jobs=1), emb),
        ("bigmisvm_linear_emb", M.MISVM(C=1, kernel="linear", n_jobs=1), emb),
        ("alsvm_linear_emb", M.ALSVM(C=1, kernel="linear", n_jobs=1), emb),
        ("awsvm_linear_emb", M.AWSVM(C=1, kernel="linear", n_jobs=1), emb),
        ("alpsvm_linear_emb", M.ALPSVM(C=1, kernel="linear", n_jobs=1), emb),
        ("sparsemi_emb", M.SparseMI(n_xv=4, C=1, max_iter=4, random_state=0, n_jobs=1), emb),
    ]


def fit_all(models_dir=None, params=None):
    out = {}
    for name, est, (bags, y) in configurations():
        est.set_params(**(params or {}).get(type(est).__name__, {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(bags, y)
        out[f"{name}/decision"] = np.asarray(est.decision_function(bags), dtype=np.float64)
        if hasattr(est, "instance_decision_function"):
            inst = est.instance_decision_function(bags)
            out[f"{name}/instances"] = np.concatenate(
                [np.atleast_1d(s).reshape(len(s), -1) for s in inst]
            )
        if models_dir is not None and hasattr(est, "save"):
            path = Path(models_dir) / f"{name}.json"
            try:
                est.save(path)
            except ValueError as exc:  # models the file format cannot hold
                print(f"{name}: not saved ({exc})", file=sys.stderr)
        print(f"{name}: fitted", file=sys.stderr)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", type=Path, help="fit and store the scores")
    ap.add_argument("--compare", type=Path, help="fit and compare with stored scores")
    ap.add_argument("--models", type=Path, help="also save every fitted model into this folder")
    ap.add_argument(
        "--params",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="parameters set on every configuration of estimator NAME",
    )
    args = ap.parse_args(argv)
    if args.models:
        args.models.mkdir(parents=True, exist_ok=True)
    params = {}
    for item in args.params:
        name, _, text = item.partition("=")
        params[name] = json.loads(text)
    scores = fit_all(args.models, params)
    if args.write:
        np.savez(args.write, **scores)
        print(f"{len(scores)} arrays written to {args.write}")
    if args.compare:
        ref = np.load(args.compare)
        worst = 0.0
        for key in sorted(set(ref.files) | set(scores)):
            if key not in scores or key not in ref.files:
                print(f"{key}: only in {'the reference' if key in ref.files else 'this run'}")
                continue
            a, b = ref[key], scores[key]
            if a.shape != b.shape:
                print(f"{key}: shape {a.shape} -> {b.shape}")
                worst = np.inf
                continue
            if np.array_equal(a, b):
                print(f"{key}: bitwise equal")
                continue
            rel = float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-300))
            worst = max(worst, rel)
            print(f"{key}: max relative difference {rel:.3e}")
        print(f"largest relative difference: {worst:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
