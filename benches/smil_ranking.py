"""How well the sMIL family ranks bags, against the reference implementations (issue 43).

sMIL, sbMIL (against Doran's ``misvm``) and sAwMIL (against ``sawmil`` 0.2.1 on OSQP) on the
same outer folds, over a grid of ``C`` scored per value (no inner selection: the table gives
each side's AUC at every ``C`` and at its best one, so that no side's best ``C`` may sit at a
grid edge unnoticed). For milsvm's sMIL it also records the test bags' plain means
``mean_p f(x_p)`` and the training bags' (scores and sizes), from which ``report`` works out
the AUC and the accuracy at threshold 0 of each candidate bag-score rule:

- ``smil_mean``: ``mean f + 1 - 1/|X|`` (the per-bag shift; milsvm's only rule before issue 43,
  now ``bag_score="smil_mean"``);
- ``mean``: the plain mean, threshold 0 (``misvm``'s rule);
- ``mean+class_medians``: the plain mean minus the midpoint of the medians of the training
  bags' plain means in the two classes (milsvm's default since issue 43,
  ``bag_score="mean_offset"``);
- ``mean+avg_shift``: the plain mean plus one offset for every bag, the training bags' mean
  shift ``1 - mean_i 1/|X_i|``;
- ``mean+median_shift``: the same with ``1 - 1/median |X_i|``;
- ``mean+learnt``: the plain mean minus the threshold of best training accuracy (the midpoint
  of the best gap between sorted training bag scores).
- ``mean+inner<k>_acc`` / ``_medians`` / ``_platt`` / ``_prior`` / ``_acc_bagged`` (records of
  ``run --inner k``): the threshold read off the training bags' out-of-fold plain means of an
  inner stratified ``k``-fold CV (each bag scored by the model fitted without it) rather than
  off the scores of the model that was fitted on them: best accuracy (ties to the middle of the
  best thresholds), the class medians' midpoint, Platt's sigmoid at 1/2, the quantile at the
  training class prior, and the best-accuracy threshold bagged over bootstrap resamples.
- ``auto<k>_auc`` / ``auto<k>_acc`` (the same records): ``smil_mean`` or ``mean+inner<k>_platt``
  by sMIL's ``bag_score="auto"`` rule (the library's, ``_core.smil_auto_rule``: the shift unless
  the plain mean's out-of-fold AUC is higher by more than ``_core.SMIL_AUTO_AUC_MARGIN`` with no
  fewer bags right) / by the better out-of-fold accuracy (``auto_choices``); ``rules`` says in
  how many folds the shift was kept.

Two bounds that are not rules: the threshold of best accuracy on the test bags' own labels
(``oracle (test labels)``), and each test bag classified by the best threshold on the other test
bags' labels (``oracle, leave one out``: one threshold learnt on fresh bags of the very model).

The three subcommands, each in its own venv (the peers are never milsvm's dependencies)::

    python benches/smil_ranking.py prepare --data DATA --work W            # milsvm's venv
    python benches/smil_ranking.py run --impl milsvm --work W --label before  # milsvm's venv
    PEERS/bin/python benches/smil_ranking.py run --impl misvm --work W   # the peers' venv
    PEERS/bin/python benches/smil_ranking.py run --impl sawmil --work W
    python benches/smil_ranking.py report --work W

Protocol (that of ``benches/bench_peers.py`` where it applies): ``StratifiedKFold(--folds,
shuffle=True, random_state=--seed)`` over the bags; dense sets (MUSK1, MUSK2, Elephant)
standardised on each training part's instances, Gaussian kernel with ``gamma = 1 / (d var)``
over them (scikit-learn's "scale", given to every side as a number); the sparse text sets
(TST1, TST2) raw, linear kernel. The peers need dense arrays, and 66,000 dense columns would
not fit their kernels: they get each instance's coordinates in an orthonormal basis of the
span of all instances (``Z`` with ``Z Z^T = X X^T``, from the eigendecomposition of the
instance Gram matrix), which leaves every linear kernel value unchanged up to rounding. The
averaged set kernel on every side (misvm ``"rbf_av"`` / ``"linear_av"``; sawmil has no such
setting, its ``normalizer="none"`` sums the kernel: its default, kept and reported). ``C`` is
the plain weight of each hinge term (``scale_C=False`` on both peers; their default divides it
by the number of examples). ``eta = 0.1``. One thread per side (milsvm ``n_jobs=1``; run with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` for the peers' NumPy).

Output: ``W/<impl>[-label].jsonl``, one line per (set, method, fold, C); ``report`` prints the
tables and takes any number of labels. ``run --repeats R`` repeats the CV with ``R - 1`` more
stratified splits (seeds ``seed + 1 ...``; a record's ``repeat``); ``rules`` then pairs the
rules over all ``R x K`` folds (standard error, t-test and Wilcoxon signed-rank p-values).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benches/ (_common)
from _common import add_seed  # noqa: E402

SETS = {
    "MUSK1": ("musk1/musk1.data", "rbf"),
    "MUSK2": ("musk2/musk2.data", "rbf"),
    "Elephant": ("elephant/elephant.data", "rbf"),
    "TST1": ("tst1/tst1.data", "linear"),
    "TST2": ("tst2/tst2.data", "linear"),
}
METHODS = ("sMIL", "sbMIL", "sAwMIL")
EXTRA = ("stMIL",)  # milsvm only: its bag score measured with the same rules
PEER_OF = {"sMIL": "misvm", "sbMIL": "misvm", "sAwMIL": "sawmil"}
ETA = 0.1
DEFAULT_C = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]


# --------------------------------------------------------------------------------- prepare
def gram_basis(X):
    """``Z`` (dense, ``n x r``) with ``Z Z^T = X X^T`` up to rounding: the instances'
    coordinates in an orthonormal basis of their span (eigenvectors of the Gram matrix)."""
    G = (X @ X.T).toarray() if hasattr(X, "toarray") else X @ X.T
    w, V = np.linalg.eigh(G)
    keep = w > w.max() * 1e-12
    return np.ascontiguousarray(V[:, keep] * np.sqrt(w[keep]))


def read_mill(path):
    """The bags (dense arrays, or CSR matrices for a sparse file) and 0/1 labels of a MILL file:
    milsvm's reader where milsvm is installed, else a plain parser of the same format (the
    peers' venv; ``prepare --check`` compares the two)."""
    try:
        from milsvm.datasets import load_mill
    except ImportError:
        return _parse_mill(path)
    return load_mill(path)


def _parse_mill(path):
    import scipy.sparse as sp

    rows, names, labels = [], [], []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        parts = line.strip().split(",")
        names.append(parts[1])
        labels.append(int(float(parts[2])))
        rows.append(parts[3:])
    sparse = any(":" in f for r in rows for f in r[:1])
    starts = [0] + [i for i in range(1, len(rows)) if names[i] != names[i - 1]] + [len(rows)]
    if sparse:
        d = max(int(f.split(":")[0]) for r in rows for f in r)
        data, ind, ptr = [], [], [0]
        for r in rows:
            pairs = sorted((int(f.split(":")[0]) - 1, float(f.split(":")[1])) for f in r if f)
            pairs = [(j, v) for j, v in pairs if v != 0.0]
            ind += [j for j, _ in pairs]
            data += [v for _, v in pairs]
            ptr.append(len(ind))
        X = sp.csr_matrix((np.array(data), np.array(ind), np.array(ptr)), shape=(len(rows), d))
    else:
        X = np.array([[float(v) for v in r] for r in rows])
    bags = [X[a:b] for a, b in zip(starts[:-1], starts[1:])]
    return bags, np.array([labels[a] for a in starts[:-1]])


def prepare(args):
    import scipy.sparse as sp
    from sklearn.model_selection import StratifiedKFold

    args.work.mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        rel, kernel = SETS[name]
        bags, y = read_mill(args.data / rel)
        if args.check:
            ref_bags, ref_y = _parse_mill(args.data / rel)
            assert np.array_equal(ref_y, y) and all(
                abs(a - b).max() == 0 for a, b in zip(bags, ref_bags)
            ), f"{name}: the readers differ"
            print(f"{name}: milsvm's reader and the plain parser agree")
            continue
        y = np.asarray(y, dtype=int)
        ptr = np.concatenate([[0], np.cumsum([b.shape[0] for b in bags])]).astype(np.int64)
        arrays = dict(bag_ptr=ptr, y=y)
        if sp.issparse(bags[0]):
            X = sp.vstack(bags).tocsr()
            arrays.update(
                data=X.data,
                indices=X.indices,
                indptr=X.indptr,
                shape=np.array(X.shape),
                Z=gram_basis(X),
            )
        else:
            arrays["X"] = np.vstack(bags).astype(np.float64)
        np.savez(args.work / f"{name}.npz", **arrays)
        folds = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
        splits = [
            dict(train=tr.tolist(), test=te.tolist()) for tr, te in folds.split(np.zeros(len(y)), y)
        ]
        (args.work / f"splits_{name}.json").write_text(
            json.dumps(dict(seed=args.seed, folds=splits))
        )
        print(f"{name}: {len(y)} bags, {ptr[-1]} instances, kernel {kernel}", flush=True)


# --------------------------------------------------------------------------------- run
def load_set(work, name, impl):
    """The bags (milsvm: CSR for the text sets; the peers: the dense ``Z``), labels, kernel."""
    d = np.load(work / f"{name}.npz")
    ptr, y = d["bag_ptr"], d["y"]
    kernel = SETS[name][1]
    if "X" in d:
        X = d["X"]
    elif impl == "milsvm":
        import scipy.sparse as sp

        X = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=tuple(d["shape"]))
    else:
        X = d["Z"]
    bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(ptr) - 1)]
    return bags, y, kernel


def standardise(train, test):
    Xtr = np.vstack(train)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return [(b - mu) / sd for b in train], [(b - mu) / sd for b in test]


def gamma_scale(bags):
    Z = np.vstack(bags)
    var = Z.var()
    return 1.0 / (Z.shape[1] * var) if var > 0 else 1.0


def milsvm_plain_means(est, bags):
    """Each bag's plain mean of the model's instance scores ``f(x)`` (``"smil_mean"`` pooling
    adds the bag's shift ``1 - 1/|X|`` to them: taken off again)."""
    out = []
    for b, s in zip(bags, est.instance_decision_function(bags)):
        shift = 1.0 - 1.0 / b.shape[0] if est.model_.pooling == "smil_mean" else 0.0
        out.append(float(np.mean(s)) - shift)
    return out


def inner_plain_means(method, Cs, common, tr, ytr, inner, seed):
    """Out-of-fold plain means of the training bags, one row per ``C``: ``inner``-fold
    stratified CV inside the training part, each held-out bag scored by the model fitted
    without it (the scores a threshold sees on bags the solution did not place)."""
    import milsvm
    from sklearn.model_selection import StratifiedKFold

    oof = np.zeros((len(Cs), len(tr)))
    for fit_idx, out_idx in StratifiedKFold(inner, shuffle=True, random_state=seed).split(
        np.zeros(len(ytr)), ytr
    ):
        sub, ysub = [tr[i] for i in fit_idx], ytr[fit_idx]
        held = [tr[i] for i in out_idx]
        if method == "sMIL":
            fitted = milsvm.sMIL(C=Cs[0], **common).fit_path(sub, ysub, Cs)
        else:
            fitted = [getattr(milsvm, method)(C=C, **common).fit(sub, ysub) for C in Cs]
        for j, est in enumerate(fitted):
            oof[j, out_idx] = milsvm_plain_means(est, held)
    return oof


def fit_milsvm(
    method,
    Cs,
    kernel,
    gamma,
    tr,
    ytr,
    te,
    bag_score=None,
    inner=(),
    seed=0,
    first_stage_problem=None,
):
    """One record per C: test scores, predictions, seconds (and for sMIL and stMIL the test and
    training bags' plain means; with ``inner`` (a list of fold counts) the training bags'
    out-of-fold plain means for each count, ``train_oof[str(k)]``)."""
    import milsvm

    common = dict(kernel=kernel, n_jobs=1)
    if kernel == "rbf":
        common["gamma"] = gamma
    out = []
    if method in ("sMIL", "stMIL"):
        if method == "sMIL" and bag_score:
            common["bag_score"] = bag_score
        t0 = time.perf_counter()
        if method == "sMIL":
            fitted = milsvm.sMIL(C=Cs[0], **common).fit_path(tr, ytr, Cs)
        else:
            fitted = [milsvm.stMIL(C=C, **common).fit(tr, ytr) for C in Cs]
        seconds = (time.perf_counter() - t0) / len(Cs)
        oof = {k: inner_plain_means(method, Cs, common, tr, ytr, k, seed) for k in inner or ()}
        for j, (C, est) in enumerate(zip(Cs, fitted)):
            rec = dict(
                C=C,
                seconds=seconds,
                scores=np.asarray(est.decision_function(te)).tolist(),
                pred=np.asarray(est.predict(te)).astype(int).tolist(),
                pooling=est.model_.pooling,
                test_mean=milsvm_plain_means(est, te),
                train_mean=milsvm_plain_means(est, tr),
            )
            if hasattr(est, "bag_score"):
                rec["bag_score"] = est.bag_score
            if oof:
                rec["train_oof"] = {str(k): v[j].tolist() for k, v in oof.items()}
            out.append(rec)
        return out
    cls = getattr(milsvm, method)
    if method == "sAwMIL" and first_stage_problem:
        common["first_stage_problem"] = first_stage_problem
    for C in Cs:
        t0 = time.perf_counter()
        est = cls(C=C, eta=ETA, **common).fit(tr, ytr)
        seconds = time.perf_counter() - t0
        out.append(
            dict(
                C=C,
                seconds=seconds,
                scores=np.asarray(est.decision_function(te)).tolist(),
                pred=np.asarray(est.predict(te)).astype(int).tolist(),
            )
        )
    return out


def _stage1_on_osqp():
    """sawmil 0.2.1's ``sAwMIL.fit`` builds its stage-1 ``sMIL`` without passing ``solver`` on
    (it would run on Gurobi): the name ``sMIL`` in ``sawmil.sawmil`` is rebound to a subclass
    whose default solver is OSQP, as ``benches/peers/runner.py`` does; no file is changed."""
    import sawmil.sawmil as module
    from sawmil.smil import sMIL

    class Stage1OnOSQP(sMIL):
        def __init__(self, *a, **kw):
            kw.setdefault("solver", "osqp")
            super().__init__(*a, **kw)

    module.sMIL = Stage1OnOSQP


def _paper_sign_stage1():
    """sawmil 0.2.1's first stage hands ``quadprog(H, f, ...)`` (``min 1/2 a^T H a + f^T a``)
    the entry ``2/n - 1`` for a positive bag of ``n`` instances; Bunescu & Mooney's target
    ``(2 - n)/n`` is the entry ``1 - 2/n``. The negative instances' entries (``-1``) are left
    alone, every other entry is negated. Only the name ``quadprog`` in ``sawmil.smil`` is
    rebound (as ``benches/sawmil_stage1_diagnosis.py --paper-sign`` does); no file changes."""
    import sawmil.smil as module

    if getattr(module.quadprog, "paper_sign", False):
        return
    solve = module.quadprog

    def with_paper_sign(H, f, *args, **kwargs):
        return solve(H, np.where(f == -1.0, f, -f), *args, **kwargs)

    with_paper_sign.paper_sign = True
    module.quadprog = with_paper_sign


def _mean_kernel_stage1():
    """sawmil 0.2.1 has no averaged set kernel: its ``normalizer="none"`` sums the instance
    kernel over the two bags, ``"average"`` divides that sum by ``(|X| |Y|)^2``. The name
    ``make_bag_kernel`` in ``sawmil.nsk`` (which its sMIL builds its bag kernel with) is rebound
    to return the summed kernel divided by ``|X| |Y|``: sMIL's averaged kernel (Bunescu & Mooney
    2007, eq. 5). No file changes."""
    import sawmil.nsk as module
    from sawmil.bag_kernels import BaseBagKernel

    if getattr(module.make_bag_kernel, "mean", False):
        return
    make = module.make_bag_kernel

    class MeanBagKernel(BaseBagKernel):
        def __init__(self, summed):
            self.summed = summed

        def fit(self, bags):
            self.summed.fit(bags)
            return self

        def __call__(self, bags_x, bags_y):
            nx = np.array([b.n for b in bags_x], dtype=float)
            ny = np.array([b.n for b in bags_y], dtype=float)
            return self.summed(bags_x, bags_y) / np.outer(nx, ny)

    def mean_bag_kernel(*args, **kwargs):
        kwargs["normalizer"] = "none"
        return MeanBagKernel(make(*args, **kwargs))

    mean_bag_kernel.mean = True
    module.make_bag_kernel = mean_bag_kernel


def fit_peer(impl, method, Cs, kernel, gamma, tr, ytr, te, normalizer="none", paper_sign=False):
    out = []
    for C in Cs:
        t0 = time.perf_counter()
        if impl == "misvm":
            import misvm

            k = ("rbf" if kernel == "rbf" else "linear") + "_av"
            est = getattr(misvm, method)(
                kernel=k,
                C=C,
                gamma=gamma,
                scale_C=False,
                verbose=False,
                **({"eta": ETA} if method == "sbMIL" else {}),
            )
            est.fit(tr, np.where(ytr > 0, 1.0, -1.0))
            seconds = time.perf_counter() - t0
            s = np.asarray(est.predict(te), dtype=float).ravel()
            pred = (s > 0).astype(int)
        else:
            import sawmil
            from sawmil import RBF, Bag, Linear

            _stage1_on_osqp()
            if paper_sign:
                _paper_sign_stage1()
            if normalizer == "mean":
                _mean_kernel_stage1()
                normalizer = "none"
            kern = RBF(gamma=gamma) if kernel == "rbf" else Linear()
            est = sawmil.sAwMIL(
                C=C, kernel=kern, solver="osqp", scale_C=False, normalizer=normalizer, eta=ETA
            )
            est.fit([Bag(X=b, y=float(t)) for b, t in zip(tr, ytr)])
            seconds = time.perf_counter() - t0
            tb = [Bag(X=b, y=0.0) for b in te]
            s = np.asarray(est.decision_function(tb), dtype=float).ravel()
            pred = np.asarray(est.predict(tb)).astype(int)
        out.append(dict(C=C, seconds=seconds, scores=s.tolist(), pred=pred.tolist()))
    return out


def repeated_folds(work, name, y, repeats, n_folds):
    """``(repeat, fold index, fold)`` of ``repeats`` repetitions of the stratified K-fold CV:
    repeat 0 is the prepared split (``splits_<set>.json``, seed ``s``), repeat ``r`` the same
    ``StratifiedKFold`` with seed ``s + r``. Only the first ``n_folds`` folds of each."""
    saved = json.loads((work / f"splits_{name}.json").read_text())
    out = [(0, k, f) for k, f in enumerate(saved["folds"][:n_folds])]
    if repeats > 1:
        from sklearn.model_selection import StratifiedKFold

        for r in range(1, repeats):
            cv = StratifiedKFold(len(saved["folds"]), shuffle=True, random_state=saved["seed"] + r)
            for k, (tr, te) in enumerate(cv.split(np.zeros(len(y)), y)):
                if k < n_folds:
                    out.append((r, k, dict(train=tr.tolist(), test=te.tolist())))
    return out


def run(args):
    name_out = args.impl + (f"-{args.label}" if args.label else "")
    path = args.work / f"{name_out}.jsonl"
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["set"], r["method"], r.get("repeat", 0), r["fold"], r["C"]))
    methods = args.methods or (
        METHODS if args.impl == "milsvm" else [m for m in METHODS if PEER_OF[m] == args.impl]
    )
    for name in args.sets:
        bags, y, kernel = load_set(args.work, name, args.impl)
        for method in methods:
            for rep, k, fold in repeated_folds(args.work, name, y, args.repeats, args.n_folds):
                Cs = [c for c in args.C if (name, method, rep, k, c) not in done]
                if not Cs:
                    continue
                tr = [bags[i] for i in fold["train"]]
                te = [bags[i] for i in fold["test"]]
                ytr, yte = y[fold["train"]], y[fold["test"]]
                if kernel == "rbf":
                    tr, te = standardise(tr, te)
                    gamma = gamma_scale(tr)
                else:
                    gamma = None
                fold_data = (Cs, kernel, gamma, tr, ytr, te)  # both sides' arguments
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if args.impl == "milsvm":
                        extra = (
                            args.bag_score,
                            args.inner,
                            args.seed + 100 * rep + k,
                            args.first_stage_problem,
                        )
                        recs = fit_milsvm(method, *fold_data, *extra)
                    else:
                        extra = (args.sawmil_normalizer, args.paper_sign)
                        recs = fit_peer(args.impl, method, *fold_data, *extra)
                with path.open("a") as f:
                    for r in recs:
                        r.update(
                            set=name,
                            method=method,
                            **({"repeat": rep} if rep else {}),
                            fold=k,
                            y=yte.tolist(),
                            gamma=gamma,
                            test_size=[int(b.shape[0]) for b in te],
                        )
                        if "train_mean" in r:
                            r.update(train_y=ytr.tolist(), train_size=[int(b.shape[0]) for b in tr])
                        f.write(json.dumps(r) + "\n")
                best = max(recs, key=lambda r: auc(yte, r["scores"]))
                print(
                    f"{name} {method} repeat {rep} fold {k}: {len(recs)} C in "
                    f"{sum(r['seconds'] for r in recs):.1f} s; best AUC "
                    f"{auc(yte, best['scores']):.3f} at C={best['C']:g}",
                    flush=True,
                )


# --------------------------------------------------------------------------------- report
def auc(y, s):
    """The ROC AUC (ties counted half), without scikit-learn."""
    y, s = np.asarray(y), np.asarray(s, dtype=float)
    pos, neg = s[y == 1], s[y != 1]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def learnt_threshold(scores, y):
    """The threshold of best training accuracy: the midpoint of the gap between sorted scores
    where ``s > t`` is most often right (ties to the gap nearest the median score)."""
    order = np.argsort(scores)
    s, yy = np.asarray(scores)[order], np.asarray(y)[order]
    # threshold below s[0], between s[i-1] and s[i], above s[-1]: predicted positive from i on
    neg_below = np.concatenate([[0], np.cumsum(yy == 0)])
    pos_above = np.concatenate([[0], np.cumsum((yy == 1)[::-1])])[::-1]
    correct = neg_below + pos_above
    cands = np.flatnonzero(correct == correct.max())
    i = cands[np.argmin(np.abs(cands - len(s) / 2))]
    if i == 0:
        return s[0] - 1.0
    if i == len(s):
        return s[-1] + 1.0
    return 0.5 * (s[i - 1] + s[i])


def tied_best_threshold(scores, y):
    """The threshold of best training accuracy, ties to the middle: among all the thresholds
    (midpoints of gaps between sorted scores) where ``s > t`` is most often right, the midpoint
    of the lowest and the highest."""
    order = np.argsort(scores)
    s, yy = np.asarray(scores, dtype=float)[order], np.asarray(y)[order]
    neg_below = np.concatenate([[0], np.cumsum(yy == 0)])
    pos_above = np.concatenate([[0], np.cumsum((yy == 1)[::-1])])[::-1]
    correct = neg_below + pos_above
    cands = np.flatnonzero(correct == correct.max())
    edges = np.concatenate([[s[0] - 1.0], 0.5 * (s[:-1] + s[1:]), [s[-1] + 1.0]])
    return 0.5 * (edges[cands.min()] + edges[cands.max()])


def prior_quantile_threshold(scores, y):
    """The threshold that calls as many bags positive as the training part holds: the midpoint
    between the ``n_pos``-th highest score and the next one below it (the score's quantile at
    the training part's class prior; no accuracy is optimised, only the class sizes used)."""
    s = np.sort(np.asarray(scores, dtype=float))[::-1]
    n_pos = int(np.sum(np.asarray(y) == 1))
    if n_pos == 0:
        return s[0] + 1.0
    if n_pos == len(s):
        return s[-1] - 1.0
    return 0.5 * (s[n_pos - 1] + s[n_pos])


def bagged_threshold(scores, y, n_boot=100, seed=0):
    """Breiman's bagging of the threshold of best accuracy (``tied_best_threshold``): its mean
    over ``n_boot`` stratified bootstrap resamples of the bags (an argmax over few bags is
    unstable; averaging resamples lowers its variance)."""
    s, yy = np.asarray(scores, dtype=float), np.asarray(y)
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(yy == 1), np.flatnonzero(yy != 1)
    ts = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        ts.append(tied_best_threshold(s[idx], yy[idx]))
    return float(np.mean(ts))


def platt_threshold(scores, y, iters=100):
    """Platt's sigmoid ``1 / (1 + exp(A s + B))`` fitted to the training bags' scores (his
    smoothed targets, Newton's method); the score where it crosses 1/2, ``-B/A``."""
    s, yy = np.asarray(scores, dtype=float), np.asarray(y)
    n_pos, n_neg = (yy == 1).sum(), (yy != 1).sum()
    t = np.where(yy == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(np.clip(A * s + B, -500, 500)))
        g = np.array([np.sum((t - p) * s), np.sum(t - p)])  # gradient of the log loss in (A, B)
        w = p * (1 - p) + 1e-12
        H = np.array(
            [[np.sum(w * s * s), np.sum(w * s)], [np.sum(w * s), np.sum(w)]]
        ) + 1e-12 * np.eye(2)
        step = np.linalg.solve(H, g)
        A, B = A - step[0], B - step[1]
        if np.abs(step).max() < 1e-10:
            break
    return -B / A if A != 0 else 0.0


def library_auto_rule(om, ntr, ty):
    """sMIL's ``bag_score="auto"`` rule as the library applies it (``milsvm._core.smil_auto_rule``)
    to out-of-fold plain means ``om`` of bags of sizes ``ntr`` and labels ``ty``: ``(keep_shift,
    t)``, ``t`` the library's Platt threshold of ``om`` (its class-median fallback included)."""
    import milsvm

    return milsvm._core.smil_auto_rule(
        np.asarray(om, dtype=float),
        np.asarray(ntr, dtype=float),
        np.where(np.asarray(ty) == 1, 1.0, -1.0),
    )


def auto_choices(r):
    """The ``auto<k>_acc`` / ``auto<k>_auc`` rules' choice on one record: ``True`` where the
    size-shifted ``smil_mean`` is kept, ``False`` where the plain mean with the inner-``k``
    Platt threshold is. Both candidates are judged on the training bags' out-of-fold plain
    means ``o`` of the inner ``k``-fold CV (training data only): ``smil_mean`` scores them
    ``o + 1 - 1/|X|`` at threshold 0, the plain mean ``o`` at the Platt threshold fitted to
    ``o``; ``_acc`` keeps the candidate of better out-of-fold accuracy, ``_auc`` applies the
    library's rule (:func:`library_auto_rule`, sMIL's ``bag_score="auto"``: the shift unless the
    plain mean ranks clearly better and is no less accurate)."""
    ntr = np.array(r["train_size"], dtype=float)
    ty = np.array(r["train_y"])
    oofs = dict(r.get("train_oof", {}))
    if "train_oof_mean" in r:  # records of a single --inner count, as in ``rules``
        oofs[""] = r["train_oof_mean"]
    out = {}
    for k, om in oofs.items():
        om = np.array(om)
        shifted = om + 1 - 1 / ntr
        t = platt_threshold(om, ty)
        acc_s = np.mean((shifted > 0).astype(int) == ty)
        acc_m = np.mean((om > t).astype(int) == ty)
        out[f"auto{k}_acc"] = bool(acc_s > acc_m)
        out[f"auto{k}_auc"] = bool(library_auto_rule(om, ntr, ty)[0])
    return out


def rules(r):
    """Each candidate rule's (scores, predictions) of one milsvm sMIL / stMIL record: every
    rule but ``smil_mean`` is the plain mean ``m`` less one constant per fit (so one ranking)."""
    m = np.array(r["test_mean"])
    n = np.array(r["test_size"], dtype=float)
    ntr = np.array(r["train_size"], dtype=float)
    tm, ty = np.array(r["train_mean"]), np.array(r["train_y"])
    out = {"smil_mean": m + 1 - 1 / n, "mean": m}
    thresholds = {
        "class_medians": 0.5 * (np.median(tm[ty == 1]) + np.median(tm[ty == 0])),
        "class_means": 0.5 * (np.mean(tm[ty == 1]) + np.mean(tm[ty == 0])),
        "avg_shift": -(1 - np.mean(1 / ntr)),
        "median_shift": -(1 - 1 / np.median(ntr)),
        "learnt": learnt_threshold(tm, ty),
        "train_acc_mid": tied_best_threshold(tm, ty),
        "platt": platt_threshold(tm, ty),
    }
    oofs = dict(r.get("train_oof", {}))
    if "train_oof_mean" in r:  # records of a single --inner count, before the counts were named
        oofs[""] = r["train_oof_mean"]
    for k, om in oofs.items():
        om = np.array(om)
        thresholds[f"inner{k}_medians"] = 0.5 * (np.median(om[ty == 1]) + np.median(om[ty == 0]))
        thresholds[f"inner{k}_acc"] = tied_best_threshold(om, ty)
        thresholds[f"inner{k}_platt"] = platt_threshold(om, ty)
        thresholds[f"inner{k}_prior"] = prior_quantile_threshold(om, ty)
        thresholds[f"inner{k}_acc_bagged"] = bagged_threshold(om, ty)
    out.update({f"mean+{k}": m - t for k, t in thresholds.items()})
    for rule, keep_shift in auto_choices(r).items():
        k = rule[len("auto") : rule.index("_")]
        if keep_shift:
            out[rule] = out["smil_mean"]
        elif rule.endswith("_auc"):  # the library's bag_score="auto", its threshold included
            out[rule] = m - library_auto_rule(oofs[k], ntr, ty)[1]
        else:
            out[rule] = out[f"mean+inner{k}_platt"]
    out = {k: (v, (v > 0).astype(int)) for k, v in out.items()}
    # not a rule: the best threshold on the test bags themselves (their labels), the bound on the
    # accuracy of every rule that keeps the plain mean's order
    yte = np.array(r["y"])
    out["oracle (test labels)"] = (m, (m > tied_best_threshold(m, yte)).astype(int))
    # not a rule either: each test bag classified by the threshold of best accuracy on the other
    # test bags (their labels): what one threshold learnt on fresh bags scored by the very model
    # reaches, without the oracle's optimism
    keep = ~np.eye(len(m), dtype=bool)
    loo = np.array([m[i] > tied_best_threshold(m[keep[i]], yte[keep[i]]) for i in range(len(m))])
    out["oracle, leave one out"] = (m, loo.astype(int))
    return out


def paired_tests(d):
    """Two-sided p-values of a zero mean paired difference over the folds ``d``: the t-test on
    the differences and Wilcoxon's signed-rank test (zero differences dropped, normal
    approximation with the ties' correction, as SciPy's ``wilcoxon(zero_method="wilcox",
    method="approx")``); NaN where every difference is zero."""
    from scipy import stats

    if len(d) < 2 or not np.any(d):
        return float("nan"), float("nan")
    t = stats.ttest_1samp(d, 0.0).pvalue if d.std() > 0 else 0.0
    w = stats.wilcoxon(d, zero_method="wilcox", method="approx").pvalue
    return float(t), float(w)


def rule_table(args):
    """Per set and method: each rule's AUC at its best C, accuracy there, best accuracy over C
    (each rule chooses its own C), and the paired accuracy difference against ``--base``
    (``smil_mean`` unless told) over the folds of every repeat (each at its C of best mean
    accuracy): mean, the folds' std, the mean's standard error and the paired tests' p-values
    (``paired_tests``)."""
    recs, chosen = {}, {}
    for path in args.files:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            if r.get("pooling") != "smil_mean" or r["C"] not in args.C or r["set"] not in args.sets:
                continue
            for rule, kept in auto_choices(r).items():
                chosen.setdefault((r["set"], r["method"], rule, r["C"]), []).append(kept)
            for rule, (s, p) in rules(r).items():
                a = auc(r["y"], s)
                acc = float(np.mean(np.asarray(p) == np.asarray(r["y"])))
                recs.setdefault((r["set"], r["method"]), {}).setdefault(rule, {}).setdefault(
                    r["C"], {}
                )[(r.get("repeat", 0), r["fold"])] = (a, acc)
    for (name, method), by_rule in sorted(
        recs.items(), key=lambda kv: (list(SETS).index(kv[0][0]), kv[0][1])
    ):
        print(
            f"\n{name} {method}: rule, AUC at its best C (C), accuracy % there, "
            f"best accuracy % over C (C), paired accuracy difference against {args.base} "
            "(each at its best-accuracy C; mean, std and standard error over the n folds, "
            "p of the t-test / Wilcoxon signed-rank test)"
        )
        best = {}
        for rule, per_c in by_rule.items():
            nf = max(len(v) for v in per_c.values())
            per_c = {c: v for c, v in per_c.items() if len(v) == nf}
            ma = {c: np.mean([x[0] for x in v.values()]) for c, v in per_c.items()}
            mc = {c: np.mean([x[1] for x in v.values()]) for c, v in per_c.items()}
            ca, cc = max(ma, key=ma.get), max(mc, key=mc.get)
            best[rule] = (per_c, nf, ma, mc, ca, cc, {k: x[1] for k, x in per_c[cc].items()})
        base = best[args.base][-1]
        for rule, (per_c, nf, ma, mc, ca, cc, folds) in best.items():
            if args.only and rule != args.base and not any(o in rule for o in args.only):
                continue
            d = np.array([folds[k] - base[k] for k in sorted(base)])
            edge = "*" if cc in (min(per_c), max(per_c)) or ca in (min(per_c), max(per_c)) else " "
            sd = d.std(ddof=1) if len(d) > 1 else 0.0
            p_t, p_w = paired_tests(d)
            print(
                f"  {rule:<20} {ma[ca]:.3f} ({ca:g}) {100 * mc[ca]:5.1f}   "
                f"{100 * mc[cc]:5.1f} ({cc:g}){edge} "
                f"  {100 * d.mean():+5.1f} "
                f"(std {100 * sd:.1f}, se {100 * sd / np.sqrt(len(d)):.1f}, n={nf}; "
                f"p {p_t:.3f} / {p_w:.3f})"
                + (
                    "   acc% per C: " + " ".join(f"{c:g}:{100 * mc[c]:.1f}" for c in sorted(mc))
                    if args.per_c
                    else ""
                )
            )
            if (name, method, rule, cc) in chosen:
                kept = [chosen[name, method, rule, c] for c in (cc, ca)]
                print(
                    f"  {'':<20} smil_mean kept in {sum(kept[0])} of {len(kept[0])} folds at the "
                    f"best-accuracy C, {sum(kept[1])} of {len(kept[1])} at the best-AUC C"
                )


def report(args):
    rows = {}  # (set, method, side) -> C -> list of (auc, acc)
    for path in sorted(args.work.glob("*.jsonl")):
        side0 = path.stem
        for line in path.read_text().splitlines():
            r = json.loads(line)
            sides = {side0: (r["scores"], r["pred"])}
            if r.get("pooling") == "smil_mean" and args.rules:
                sides.update({f"{side0} [{k}]": v for k, v in rules(r).items()})
            for side, (s, p) in sides.items():
                a = auc(r["y"], s)
                acc = float(np.mean(np.asarray(p) == np.asarray(r["y"])))
                rows.setdefault((r["set"], r["method"], side), {}).setdefault(r["C"], []).append(
                    (a, acc, (r.get("repeat", 0), r["fold"]))
                )
    sets = [s for s in args.sets if any(k[0] == s for k in rows)]
    hdr = (
        f"{'set':<9} {'method':<7} {'side':<36} "
        + " ".join(f"{c:>7g}" for c in args.C)
        + "   best C   AUC    acc%  folds  best acc% (C)"
    )
    print(
        "AUC (mean over the outer folds) per C; best C = the C of best mean AUC; acc% at "
        "threshold 0 there;"
    )
    print("best acc% = the best mean accuracy at threshold 0 over the C values, and its C")
    print(hdr)
    print("-" * len(hdr))
    for name in sets:
        for method in METHODS + EXTRA:
            for key in sorted(k for k in rows if k[0] == name and k[1] == method):
                per_c = rows[key]
                full = {
                    c: v for c, v in per_c.items() if len(v) == max(len(x) for x in per_c.values())
                }
                mean_auc = {c: np.mean([v[0] for v in vals]) for c, vals in full.items()}
                cells = " ".join(
                    f"{mean_auc[c]:7.3f}" if c in mean_auc else f"{'-':>7}" for c in args.C
                )
                cb = max(mean_auc, key=mean_auc.get)
                acc = np.mean([v[1] for v in full[cb]])
                edge = "*" if cb in (min(full), max(full)) else " "
                mean_acc = {c: np.mean([v[1] for v in vals]) for c, vals in full.items()}
                ca = max(mean_acc, key=mean_acc.get)
                print(
                    f"{name:<9} {method:<7} {key[2]:<36} {cells}   {cb:>6g}{edge} "
                    f"{mean_auc[cb]:.3f}  {100 * acc:5.1f}  {len(full[cb])}      "
                    f"{100 * mean_acc[ca]:5.1f} ({ca:g})"
                )
    print("* best C at an edge of the values run")
    pairs = [(a, b) for a, b in zip(args.pair[::2], args.pair[1::2])]
    if pairs:
        print(
            "\nAccuracy at threshold 0, paired over the folds (second side - first side), each "
            "side at its C of best mean accuracy and at its C of best mean AUC: mean difference "
            "(standard error)"
        )
    for first, second in pairs:
        for name in sets:
            for method in METHODS + EXTRA:
                a, b = rows.get((name, method, first)), rows.get((name, method, second))
                if not a or not b:
                    continue
                out = []
                for crit in (1, 0):
                    best = []
                    for side in (a, b):
                        cb = max(side, key=lambda c: np.mean([v[crit] for v in side[c]]))
                        best.append({v[2]: v[1] for v in side[cb]})
                    folds = sorted(set(best[0]) & set(best[1]))
                    d = np.array([best[1][k] - best[0][k] for k in folds])
                    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
                    out.append(f"{100 * d.mean():+5.1f} ({100 * se:.1f})")
                print(
                    f"{name:<9} {method:<7} {second} - {first}: at best-accuracy C {out[0]}, "
                    f"at best-AUC C {out[1]}"
                )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="the arrays and the folds (milsvm's venv)")
    p.add_argument("--data", type=Path, required=True, help="the data folder (shared/data)")
    p.add_argument("--folds", type=int, default=5)
    add_seed(p)
    p.add_argument(
        "--check", action="store_true", help="only compare milsvm's reader with the plain parser"
    )
    r = sub.add_parser("run", help="one side's fits")
    r.add_argument("--impl", required=True, choices=["milsvm", "misvm", "sawmil"])
    r.add_argument("--label", default="", help="appended to the output name (e.g. before / after)")
    r.add_argument("--methods", nargs="+", choices=METHODS + EXTRA)
    r.add_argument(
        "--bag-score",
        choices=["mean_offset", "smil_mean", "mean"],
        help="milsvm's sMIL bag_score (default: the estimator's)",
    )
    r.add_argument(
        "--inner",
        type=int,
        nargs="+",
        default=[],
        help="milsvm's sMIL / stMIL: also record the training bags' out-of-fold plain means "
        "from this many inner folds, for each count given (the inner-CV thresholds' input; "
        "rules mean+inner<k>_acc / _medians / _platt / _prior, auto<k>_auc / _acc)",
    )
    r.add_argument(
        "--first-stage-problem",
        choices=["paper", "sawmil"],
        help="milsvm's sAwMIL first_stage_problem (default: the estimator's)",
    )
    add_seed(r, "the inner folds' seed (plus the outer fold's index and 100 x the repeat)")
    r.add_argument("--n-folds", type=int, default=99, help="run only the first folds")
    r.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="repeated CV: the prepared folds (seed s) and repeats - 1 more stratified splits "
        "(seeds s + 1, s + 2, ...); the records name their repeat",
    )
    r.add_argument(
        "--sawmil-normalizer",
        default="none",
        choices=["none", "average", "featurespace", "mean"],
        help='sawmil\'s bag-kernel normaliser (its default "none" sums the kernel); '
        '"mean": sMIL\'s averaged kernel, by a rebound kernel builder',
    )
    r.add_argument(
        "--paper-sign",
        action="store_true",
        help="sawmil's first stage with Bunescu & Mooney's sign of the positive bags' linear term",
    )
    q = sub.add_parser("report", help="the tables")
    q.add_argument(
        "--no-rules",
        dest="rules",
        action="store_false",
        help="leave out the candidate rules of milsvm's sMIL",
    )
    q.add_argument(
        "--pair",
        nargs="+",
        default=["milsvm-before", "milsvm-after"],
        help="sides to compare in pairs (first second ...): paired accuracy differences",
    )
    t = sub.add_parser("rules", help="the bag-score rules' table from milsvm's smil_mean records")
    t.add_argument(
        "files", nargs="+", type=Path, help="milsvm jsonl files run with bag_score smil_mean"
    )
    t.add_argument("--per-c", action="store_true", help="also each rule's mean accuracy at every C")
    t.add_argument(
        "--only",
        nargs="+",
        help="print only the rules whose names contain one of these strings (the base always)",
    )
    t.add_argument(
        "--base",
        default="smil_mean",
        help="the rule the others are paired against (e.g. mean+class_medians, the default)",
    )
    for s in (p, r, q, t):
        s.add_argument(
            "--work", type=Path, required=True, help="folder of the arrays, folds and results"
        )
        s.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
        s.add_argument("--C", type=float, nargs="+", default=DEFAULT_C)
    args = ap.parse_args()
    {"prepare": prepare, "run": run, "report": report, "rules": rule_table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
