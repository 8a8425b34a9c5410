"""Where milsvm's sAwMIL and the ``sawmil`` package part ways: the first stage's choice of
positive instances, or the rest? (issue 20; ``benches/RESULTS.md``, "The other estimators'
peers on this machine").

On the peer harness's folds, each side's first stage picks the positive-bag instances that
the second stage labels positive. This script takes both picks and trains ONE second stage on
each: scikit-learn's ``SVC`` (RBF, the harness's gamma and ``C``) on all training instances,
negative-bag instances and unpicked positive-bag instances labelled -1, picked ones +1; a bag
scores the max over its instances. If the AUCs of the two picks differ as the two packages' do,
the first stage is the cause.

Two steps, one per venv (sawmil lives in the peers' venv only, never next to milsvm):

    /work/venv-peers/bin/python benches/sawmil_stage1_diagnosis.py --side sawmil --work W
    python benches/sawmil_stage1_diagnosis.py --side milsvm --work W

``W`` is the harness's ``--work`` folder of a run that wrote ``<set>.npz`` and
``splits_<set>.json`` (``bench_peers.py --work W``). The first step writes sawmil's picks to
``W/sawmil_picks_<set>.npz``; the second computes milsvm's picks, trains both second stages and
prints the AUCs per fold and their means. ``--paper-sign`` on the first step runs sawmil's
first stage with the paper's sign of the positive bags' linear term instead (its picks in
``W/sawmil_paper_sign_picks_<set>.npz``, trained and scored as a third column).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))
from _protocol import standardise  # noqa: E402
from runner import gamma_scale  # noqa: E402


def folds(work, name):
    """The harness's outer folds of ``name``: training bags standardised on their instances,
    labels, test bags, test labels and the harness's gamma (scale over the training part)."""
    data = np.load(work / f"{name}.npz")
    X, ptr, y = data["X"], data["bag_ptr"], data["y"].astype(int)
    bags = [np.ascontiguousarray(X[ptr[i] : ptr[i + 1]]) for i in range(len(ptr) - 1)]
    for fold in json.loads((work / f"splits_{name}.json").read_text())["folds"]:
        train, test = np.array(fold["train"]), np.array(fold["test"])
        tr, te = standardise([bags[i] for i in train], [bags[i] for i in test])
        yield tr, y[train], te, y[test], gamma_scale("sAwMIL", tr)


def paper_sign_stage1():
    """Makes sawmil's sMIL solve its QP with Bunescu & Mooney's linear term for the positive
    bags. sawmil 0.2.1 hands ``quadprog(H, f, ...)`` (``min 1/2 a^T H a + f^T a``) the entry
    ``2/n - 1`` for a positive bag of ``n`` instances; the paper's target ``(2 - n)/n`` is the
    entry ``1 - 2/n``. The negative instances' entries are ``-1`` and are left alone; every other
    entry is negated. Only the name ``quadprog`` in the module ``sawmil.smil`` is rebound, by
    a wrapper: the package's files and code are unchanged."""
    import sawmil.smil as module

    solve = module.quadprog

    def with_paper_sign(H, f, *args, **kwargs):
        f = np.where(f == -1.0, f, -f)
        return solve(H, f, *args, **kwargs)

    module.quadprog = with_paper_sign


def sawmil_picks(tr, ytr, gamma, C, eta):
    """Which positive-bag instances (in bag order) sawmil's first stage picks: the harness's
    ``sawmil-s1osqp`` estimator (stage 1 on OSQP) fitted as the harness fits it, then its own
    ``__rank_and_filter__`` on the training bags."""
    import runner

    adapter = runner.Adapter("sawmil-s1osqp", "sAwMIL", C, gamma, 1)
    adapter.est.eta = eta
    adapter.fit(tr, ytr)
    _, y_sil = adapter.est.__rank_and_filter__(runner._sawmil_bags(tr, ytr))
    n_neg = sum(len(b) for b, v in zip(tr, ytr) if v <= 0)
    return y_sil[n_neg:] > 0  # the positive bags' instances, in bag order


def milsvm_picks(tr, ytr, gamma, C, eta):
    """Which positive-bag instances (in bag order) milsvm's first stage picks, and the fitted
    sAwMIL."""
    import milsvm

    est = milsvm.sAwMIL(C=C, kernel="rbf", gamma=gamma, eta=eta, n_jobs=1).fit(tr, ytr)
    labels = np.asarray(est.instance_labels_)
    sizes = np.array([len(b) for b in tr])
    pos = np.repeat(ytr > 0, sizes)
    return labels[pos] > 0, est


def second_stage_auc(tr, ytr, te, yte, picks, gamma, C):
    """Test AUC of one second stage trained on ``picks``: scikit-learn's ``SVC`` on every
    training instance (picked ones +1, all others -1), a bag scored by its max."""
    from sklearn.metrics import roc_auc_score
    from sklearn.svm import SVC

    X = np.vstack(tr)
    sizes = np.array([len(b) for b in tr])
    pos = np.repeat(ytr > 0, sizes)
    t = -np.ones(len(X))
    t[np.flatnonzero(pos)[picks]] = 1.0
    svc = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-6).fit(X, t)
    scores = [svc.decision_function(b).max() for b in te]
    return roc_auc_score(yte, scores)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=["sawmil", "milsvm"], required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--sets", nargs="+", default=["MUSK1", "Elephant"])
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument(
        "--paper-sign",
        action="store_true",
        help="sawmil side: its sMIL with the paper's linear term (paper_sign_stage1); picks "
        "written to sawmil_paper_sign_picks_<set>.npz, which the milsvm side also reads",
    )
    args = ap.parse_args()
    if args.paper_sign:
        paper_sign_stage1()
    for name in args.sets:
        path = args.work / f"sawmil_{'paper_sign_' if args.paper_sign else ''}picks_{name}.npz"
        if args.side == "sawmil":
            picks = [
                sawmil_picks(tr, ytr, g, args.C, args.eta)
                for tr, ytr, _, _, g in folds(args.work, name)
            ]
            np.savez(path, *picks)
            print(f"{name}: sawmil's picks of {len(picks)} folds written to {path}")
            continue
        theirs = np.load(path)
        signed = args.work / f"sawmil_paper_sign_picks_{name}.npz"
        signed = np.load(signed) if signed.exists() else None
        rows = []
        for k, (tr, ytr, te, yte, g) in enumerate(folds(args.work, name)):
            ours, est = milsvm_picks(tr, ytr, g, args.C, args.eta)
            other = theirs[f"arr_{k}"]
            from sklearn.metrics import roc_auc_score

            own = roc_auc_score(yte, est.decision_function(te))
            a_ours = second_stage_auc(tr, ytr, te, yte, ours, g, args.C)
            a_theirs = second_stage_auc(tr, ytr, te, yte, other, g, args.C)
            agree = float(np.mean(ours == other))
            a_signed = np.nan
            if signed is not None:
                a_signed = second_stage_auc(tr, ytr, te, yte, signed[f"arr_{k}"], g, args.C)
            rows.append((own, a_ours, a_theirs, agree, a_signed))
            print(
                f"{name} fold {k}: milsvm sAwMIL AUC {own:.3f}; SVC on milsvm's picks "
                f"{a_ours:.3f}, on sawmil's picks {a_theirs:.3f}, on sawmil's with the paper's "
                f"sign {a_signed:.3f}; picks agree on {100 * agree:.1f} % of the positive bags' "
                f"instances ({int(ours.sum())} vs {int(other.sum())} picked)"
            )
        m = np.mean(rows, axis=0)
        print(
            f"{name} mean: milsvm sAwMIL {m[0]:.3f}; SVC on milsvm's picks {m[1]:.3f}, on "
            f"sawmil's picks {m[2]:.3f}, on sawmil's with the paper's sign {m[4]:.3f}; agreement "
            f"{100 * m[3]:.1f} %"
        )


if __name__ == "__main__":
    main()
