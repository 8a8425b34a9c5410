"""NSK on MUSK2 against the do-it-yourself set-kernel route, and SVM-CC's fit time / memory on the
same data.

Data: MUSK2 (102 bags, 6598 instances, 166 features), the training part of the first fold of
StratifiedKFold(10, shuffle=True, random_state=0) (about 90% of the bags, ~5900 instances),
standardised with the mean / std of its training instances; the fold's test bags are the test set.

Routes, same gamma (default 1/d = 1/166 on the standardised features) and C (default 1):
  * milsvm: milsvm.NSK(C, kernel="rbf", gamma, norm="l1", n_jobs=1).fit(bags).predict(test bags);
  * DIY: the instance kernel K = sklearn.metrics.pairwise.rbf_kernel(X_train, X_train, gamma),
    averaged into the set kernel A K A^T with the sparse (bags x instances) averaging matrix A
    (A_ip = 1/n_i for instance p of bag i), then SVC(kernel="precomputed", C, tol=1e-3); the test
    set kernel is A_test rbf_kernel(X_test, X_train) A^T.
Both timed end to end (fit + prediction of the test bags from the standardised bags), median of
--repeats (default 3), once per --threads count (milsvm's n_jobs and NumPy's BLAS threads set
to it with threadpoolctl; libsvm is single-threaded); reported: times, ratio, test accuracies,
the max |diff| of the test decision values, and the floor: NumPy's product X X^T of the training
instances in the same run (NSK needs the upper half of it). The NSK objective is the libsvm one,
so the decision values should agree to the solvers' tolerance.

Also SVMCC(kernel="rbf", C, gamma) on the same part, n_jobs 1 and 2: fit time and peak RSS. Each of
the three fits also runs once in a subprocess of this script under /usr/bin/time -v (the
"Maximum resident set size" line is parsed), beside a subprocess that only loads and
standardises the data (the baseline). SVMCC's subprocess is stopped after --svmcc-timeout
seconds (default 300).

Run (from the repository root):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benches/speed.py nsk

Output: printed and written to benches/results/nsk_musk2.txt (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, child_command, data_dir  # noqa: E402
from _protocol import Report  # noqa: E402

DATA = data_dir() / "musk2" / "musk2.data"


def data():
    from milsvm.datasets import load_mill
    from sklearn.model_selection import StratifiedKFold

    bags, y = load_mill(DATA)
    y = np.asarray(y)
    tr, te = next(
        iter(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    )
    trb, teb = [bags[i] for i in tr], [bags[i] for i in te]
    X = np.vstack(trb)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    f = lambda bs: [np.ascontiguousarray((b - mu) / sd) for b in bs]  # noqa: E731
    return f(trb), y[tr], f(teb), y[te]


def averaging(bags, n_cols=None):
    import scipy.sparse as sp

    sizes = np.array([len(b) for b in bags])
    rows = np.repeat(np.arange(len(bags)), sizes)
    return sp.csr_matrix(
        (np.repeat(1.0 / sizes, sizes), (rows, np.arange(sizes.sum()))),
        shape=(len(bags), sizes.sum()),
    )


def run_nsk(trb, ytr, teb, C, gamma, n_jobs=1):
    import milsvm

    m = milsvm.NSK(C=C, kernel="rbf", gamma=gamma, norm="l1", inner_tol=1e-3, n_jobs=n_jobs).fit(
        trb, ytr
    )
    return m.decision_function(teb), m.predict(teb), m


def run_diy(trb, ytr, teb, C, gamma):
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    Xtr, Xte = np.vstack(trb), np.vstack(teb)
    A, Ate = averaging(trb), averaging(teb)
    K = rbf_kernel(Xtr, Xtr, gamma=gamma)
    Kset = np.asarray((A @ (A @ K).T).T)  # A K A^T
    del K
    svc = SVC(kernel="precomputed", C=C, tol=1e-3).fit(Kset, ytr)
    Kte = np.asarray((A @ (Ate @ rbf_kernel(Xte, Xtr, gamma=gamma)).T).T)
    return svc.decision_function(Kte), svc.predict(Kte), svc


def child(what, C, gamma, n_jobs=1):
    """One fit in this process (run under /usr/bin/time -v by the parent); prints a JSON line."""
    trb, ytr, teb, yte = data()
    t = time.perf_counter()
    res = {}
    if what == "nsk":
        _, pred, _ = run_nsk(trb, ytr, teb, C, gamma)
    elif what == "diy":
        _, pred, _ = run_diy(trb, ytr, teb, C, gamma)
    elif what == "svmcc":
        import warnings

        import milsvm

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = milsvm.SVMCC(C=C, kernel="rbf", gamma=gamma, n_jobs=n_jobs)
            t0 = time.perf_counter()
            m.fit(trb, ytr)
            res["fit_s"] = time.perf_counter() - t0
            pred = m.predict(teb)
        res.update(
            n_iter=m.n_iter_,
            converged=m.converged_,
            n_xv=int(len(m.xv_)),
            warnings=[str(x.message)[:120] for x in w],
        )
    else:
        pred = None
    res["seconds"] = time.perf_counter() - t
    if pred is not None:
        res["acc"] = float(np.mean(pred == yte))
    print("RESULT " + json.dumps(res), flush=True)


def measured(what, C, gamma, timeout, n_jobs=1):
    cmd = [
        "/usr/bin/time",
        "-v",
        *child_command(__file__, "--child", what, "--C", C, "--gamma", gamma, "--n-jobs", n_jobs),
    ]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(timeout=timeout, wall=time.perf_counter() - t)
    wall = time.perf_counter() - t
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    res = next(
        (json.loads(line[7:]) for line in p.stdout.splitlines() if line.startswith("RESULT ")), None
    )
    if res is None:
        return dict(error=p.stderr[-500:], wall=wall)
    res.update(rss_mb=int(rss.group(1)) / 1024 if rss else float("nan"), wall=wall)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=1.0 / 166)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--svmcc-timeout", type=float, default=300.0)
    ap.add_argument("--child", choices=["none", "nsk", "diy", "svmcc"])
    ap.add_argument("--n-jobs", type=int, default=1, help="(child) milsvm's n_jobs")
    ap.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="thread counts of the end-to-end comparison (milsvm n_jobs = NumPy's BLAS threads)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "nsk_musk2.txt")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.C, args.gamma, args.n_jobs)
        return
    import milsvm
    import sklearn
    from threadpoolctl import threadpool_info, threadpool_limits

    t_start = time.perf_counter()
    out = Report()

    trb, ytr, teb, yte = data()
    ntr = sum(len(b) for b in trb)
    out(
        f"MUSK2 fold 0 of StratifiedKFold(10, shuffle, rs 0): train {len(trb)} bags / {ntr} "
        f"instances, test {len(teb)} bags; standardised; rbf gamma={args.gamma:g}, C={args.C:g}"
    )
    blas = [
        (p["internal_api"], p.get("architecture"))
        for p in threadpool_info()
        if p["user_api"] == "blas"
    ]
    out(
        f"milsvm {milsvm.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
        f"BLAS {blas}"
    )
    Xtr = np.vstack(trb)
    for nt in args.threads:
        with threadpool_limits(limits=nt):
            out()
            times = {"nsk": [], "diy": [], "gemm": []}
            res = {}
            for _ in range(args.repeats):
                for name, fn in (
                    ("nsk", lambda: run_nsk(trb, ytr, teb, args.C, args.gamma, n_jobs=nt)),
                    ("diy", lambda: run_diy(trb, ytr, teb, args.C, args.gamma)),
                    ("gemm", lambda: Xtr @ Xtr.T),
                ):
                    t = time.perf_counter()
                    res[name] = fn()
                    times[name].append(time.perf_counter() - t)
            (fn_, pn, nsk), (fd, pd, svc) = res["nsk"], res["diy"]
            tn, td, tg = (np.median(times[k]) for k in ("nsk", "diy", "gemm"))
            out(
                f"{nt} thread(s) (milsvm n_jobs = {nt}, BLAS limited to {nt}): NSK end to end (fit "
                f"+ predict test bags), median of {args.repeats}:"
            )
            out(f"  {'route':<34} {'time s':>7} {'runs':<22} {'test acc':>8} {'n SV':>5}")
            out(
                f"  {'milsvm NSK(norm=l1)':<34} {tn:7.3f} "
                f"{' '.join(f'{x:.3f}' for x in times['nsk']):<22} {np.mean(pn == yte):8.3f} "
                f"{nsk.n_support_:5d}"
            )
            out(
                f"  {'rbf_kernel + A K A^T + SVC(precomp)':<34} {td:7.3f} "
                f"{' '.join(f'{x:.3f}' for x in times['diy']):<22} {np.mean(pd == yte):8.3f} "
                f"{len(svc.support_):5d}"
            )
            out(
                f"  DIY / milsvm {td / tn:.2f}x; max |diff| of test decision values "
                f"{np.max(np.abs(fn_ - fd)):.2e}; predictions agree on {np.mean(pn == pd):.3f} of "
                "the test bags"
            )
            out(
                f"  floor: NumPy's Gram product X X^T ({ntr} x {Xtr.shape[1]}) {tg:.3f} s, half of "
                f"it {tg / 2:.3f} s; milsvm NSK = {tn / (tg / 2):.2f} x the half product"
            )
    out()
    out(
        "one fit in a subprocess under /usr/bin/time -v (peak RSS includes Python + data; "
        "baseline = load only):"
    )
    out(
        f"  {'what':<9} {'peak RSS MB':>11} {'fit s':>7} {'run s':>7} {'wall s':>7} "
        f"{'test acc':>8}  notes"
    )
    for what, nj in (("none", 1), ("nsk", 1), ("diy", 1), ("svmcc", 1), ("svmcc", 2)):
        r = measured(what, args.C, args.gamma, args.svmcc_timeout if what == "svmcc" else 600, nj)
        is_svmcc = what == "svmcc"
        what = f"{what} {nj}t" if is_svmcc else what
        if "timeout" in r:
            out(f"  {what:<9} stopped after {r['timeout']:g} s (timeout)")
            continue
        if "error" in r:
            out(f"  {what:<9} ERROR: {r['error']!r}")
            continue
        notes = ""
        if is_svmcc:
            notes = (
                f"n_iter {r['n_iter']}, converged {r['converged']}, {r['n_xv']} expansion vectors"
                + (f"; warnings: {' | '.join(r['warnings'])}" if r["warnings"] else "")
            )
        fit = f"{r['fit_s']:7.2f}" if "fit_s" in r else f"{'-':>7}"
        acc = f"{r['acc']:8.3f}" if "acc" in r else f"{'-':>8}"
        out(
            f"  {what:<9} {r['rss_mb']:11.0f} {fit} {r['seconds']:7.2f} {r['wall']:7.2f} {acc}  "
            f"{notes}"
        )
    out("  (run s: fit + predict inside the child; fit s: SVMCC.fit alone)")
    out()
    out(f"wall time {time.perf_counter() - t_start:.1f} s")
    out.write(args.out)


if __name__ == "__main__":
    main()
