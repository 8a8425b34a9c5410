"""milsvm against the peer implementations of the same methods (issue 20, "Reproduce and
compare"): Doran's ``misvm`` (SIL, STK, NSK, sMIL, sbMIL, stMIL, MissSVM, miSVM, MISVM),
``sawmil`` 0.2.1 (NSK, sMIL, sAwMIL, OSQP backend) and ``mil`` 1.0.5 (MILES).

Each (data set, method) pair is fitted by milsvm's estimator of that name (looked up in
``milsvm._registry.ESTIMATORS``; a method this build lacks is reported "not in this build") and
by each peer's, on the SAME outer folds: ``StratifiedKFold(--folds, shuffle=True,
random_state=--seed)`` over the bags, written with the inner folds to
``<work>/splits_<set>.json``, which every fold process reads. The data go to the peers as the
very arrays milsvm's reader (``milsvm.datasets.load_mill``) returned, in ``<work>/<set>.npz``.

One protocol for both sides (``benches/suite/peers/runner.py``, the one file each side runs):
- the bags of each training part standardised with its instances' mean / std, the test part
  with the same (``_protocol.standardise``);
- Gaussian kernel ``exp(-gamma ||x - x'||^2)`` on the instances (STK: on the bags' min/max
  statistic vectors), ``gamma = s x scale`` with ``scale = 1 / (n_columns * var)`` over the
  standardised training instances (STK: statistic vectors), worked out by the runner as a
  number and given as that number to both sides. The peers' parameterisations were read in
  their sources: misvm's ``rbf`` is ``exp(-gamma * sqeuclidean)``, sawmil's ``RBF(gamma)``
  the same, mil's MILES similarity ``exp(-d^2 / sigma2)``, so ``sigma2 = 1 / gamma``;
- ``C`` the plain weight of each hinge term: misvm and sawmil get ``scale_C=False`` (their
  default divides C by the number of training examples); mil's MILES passes C to
  ``LinearSVC(penalty="l1")``;
- set kernels averaged over the two bags (milsvm ``NSK(norm="l1")``/``sMIL``, misvm ``rbf_av``);
  the row "NSK-l2" is NSK on the summed kernel over the bags' feature-space norms (milsvm
  ``NSK(norm="l2")``, misvm ``rbf_fs``, sawmil ``normalizer="featurespace"``): sawmil 0.2.1
  has no setting that averages (its "none" sums, its "average" divides twice; measured on its
  Gram matrices), so its NSK is compared there and its sMIL / sAwMIL run with "none", the
  setting its docstring recommends;
- ``--C`` and ``--gamma-scales``: one point each = that fixed value (the default, C=10,
  s=1); several = the point of best mean accuracy over ``--inner-folds`` inner stratified folds
  of the training part (the same inner folds for every side), then refitted on the training
  part;
- with ``--milsvm-c-path`` and a grid, milsvm's inner grid is fitted the way ``milsvm cv`` fits
  it: for the estimators with a path (``_c_path``), the values of C of each inner split (and
  gamma) as one ``fit_path``, whose models equal independent fits bit for bit (SIL, STK, NSK,
  sMIL, MILES; the same choices); its "inner" seconds are those ``fit_path`` calls. The peers
  have no path and fit each value; the final fit (one C) is a plain ``fit`` on both sides;
- milsvm ``n_jobs=1``; every process with ``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=
  MKL_NUM_THREADS=1`` and without the machine's ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE``
  (which slow NumPy), so both sides are single-threaded.

Measured per pair: AUC of each fold's test bag scores (each implementation's real-valued
bag score), mean +- std (ddof=1) over the folds; accuracy by each implementation's own
decision rule; total fit seconds (the final fits' ``fit`` calls, summed over the folds; the
inner-CV selection is reported apart); the ratio peer / milsvm of those totals; with a grid,
also the ratios of the inner fits' seconds (column "inner": their ``fit`` calls alone, the
process's first fit among them) and of the whole selection (every inner fit with its scoring
and the protocol's standardisation, the same code on both sides), and on how many folds the
two sides chose the same grid point. With one fixed point, the timed fit
is its process's first, so it includes what a library pays once per process (thread pools,
first calls into NumPy, fresh memory); with a grid, the final fit comes after the inner fits of
the same process, as a fit in a cross-validation loop does; the peak RSS
(``/usr/bin/time -v``, largest over the fold processes) of each side, beside its floor in
parentheses: the peak RSS of the same process without the fit (data read, standardised,
library imported, estimator built; the runner's ``--floor``). The paired per-fold AUC difference
milsvm - peer is reported with its standard error and a verdict: "tie" under 0.005 (solver
tolerances move the third decimal of one problem's AUC), else "higher", "within noise" (above
-2 standard errors) or "BELOW".

One process per (implementation, method, set, fold), killed with its process group after
``--timeout`` seconds (that fold's selection and fit). A timeout or a crash is a row with its
message; the later folds of that implementation on that pair are then not run (they would fail
alike) and the row says so. ``--budget`` (seconds per implementation and pair, none by
default): once an implementation's fold processes have taken more, its later folds are not run
and the pair is compared on the folds both sides finished (the rows say "[k/10 folds]").

The peers live in their own venv (``--peer-python``, default ``$MILSVM_PEER_PYTHON``, else
``../venv-peers/bin/python`` beside the repository);
how to build it: ``benches/suite/peers/README.md``. Run from the repository root with milsvm's venv:

    python benches/peers.py grid --quick                       # smoke run: 2 folds, one C
    python benches/peers.py grid --sets MUSK1 Elephant --methods SIL STK NSK sMIL miSVM MISVM

Output: printed, and ``--out`` (default ``benches/results/peers``) + ``.txt`` / ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, add_list, add_seed, picked, run_measured, sibling_python  # noqa: E402
from _protocol import DEFAULT_DATA, Report  # noqa: E402

RUNNER = HERE / "peers" / "runner.py"
sys.path.insert(0, str(RUNNER.parent))
from runner import MILSVM_CLASS  # noqa: E402  (numpy only)

SETS = {
    "MUSK1": "musk1/musk1.data",
    "MUSK2": "musk2/musk2.data",
    "Elephant": "elephant/elephant.data",
}

#: The peer implementations of each method, in report order.
PEERS = {
    "SIL": ["misvm"],
    "STK": ["misvm"],
    # NSK: the averaged set kernel (milsvm norm="l1", misvm "rbf_av"); sawmil 0.2.1 has no
    # setting that gives it (runner.SAWMIL_NORMALIZER), so sawmil is compared in "NSK-l2".
    "NSK": ["misvm"],
    # NSK-l2: the summed kernel over the bags' feature-space norms (milsvm NSK(norm="l2"),
    # misvm "rbf_fs", sawmil normalizer="featurespace").
    "NSK-l2": ["misvm", "sawmil"],
    "sMIL": ["misvm", "sawmil"],
    "sbMIL": ["misvm"],
    "stMIL": ["misvm"],
    "MissSVM": ["misvm"],
    "miSVM": ["misvm"],
    "MISVM": ["misvm"],
    # sawmil as shipped, and with its stage-1 sMIL put on OSQP by the harness (runner.py,
    # _stage1_on_osqp: sAwMIL.fit does not pass its solver on to that stage).
    "sAwMIL": ["sawmil", "sawmil-s1osqp"],
    "MILES": ["mil"],
}

CLEAN_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def child_env():
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    env.update(
        OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore"
    )
    return env


def write_inputs(name, work, folds, inner_folds, seed):
    """The set's arrays (.npz) and splits (JSON) for the fold processes; returns their paths
    and the labels."""
    from milsvm.datasets import load_mill
    from sklearn.model_selection import StratifiedKFold

    bags, y = load_mill(DEFAULT_DATA / SETS[name])
    y = np.asarray(y, dtype=int)
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in bags])]).astype(np.int64)
    data = work / f"{name}.npz"
    np.savez(data, X=np.vstack(bags).astype(np.float64), bag_ptr=ptr, y=y)
    outer = StratifiedKFold(folds, shuffle=True, random_state=seed)
    split_list = []
    for tr, te in outer.split(np.zeros(len(y)), y):
        inner = StratifiedKFold(inner_folds, shuffle=True, random_state=seed)
        split_list.append(
            dict(
                train=tr.tolist(),
                test=te.tolist(),
                inner=[[tr[a].tolist(), tr[b].tolist()] for a, b in inner.split(tr, y[tr])],
            )
        )
    splits = work / f"splits_{name}.json"
    splits.write_text(
        json.dumps(
            dict(set=name, seed=seed, n_folds=folds, inner_folds=inner_folds, folds=split_list)
        )
    )
    return data, splits, ptr, y


def run_fold(python, impl, method, data, splits, fold, args, work, floor=False):
    """One fold process under /usr/bin/time -v, killed (with its group) after args.timeout.
    Returns the runner's record, with peak_rss_kb and wall_seconds, or a failure record.
    floor: the runner's --floor (all but the fit), for the RSS floor of that side."""
    out = work / f"{impl}_{method}_{data.stem}_{fold}{'_floor' if floor else ''}.json"
    out.unlink(missing_ok=True)
    cmd = [
        python,
        str(RUNNER),
        "--impl",
        impl,
        "--method",
        method,
        "--data",
        str(data),
        "--splits",
        str(splits),
        "--fold",
        str(fold),
        "--C",
        *map(str, args.C),
        "--gamma-scales",
        *map(str, args.gamma_scales),
        "--out",
        str(out),
    ] + (["--floor"] if floor else [])
    if args.milsvm_c_path and impl == "milsvm":
        cmd.append("--c-path")
    run = run_measured(cmd, args.timeout, env=child_env())
    wall, rss = run.wall, run.peak_rss_kb
    if run.timed_out:
        return dict(
            ok=False,
            status="timeout",
            error=f"no result after {args.timeout:g} s (killed)",
            wall_seconds=wall,
            peak_rss_kb=rss,
        )
    if out.exists():
        rec = json.loads(out.read_text())
    else:
        tail = "\n".join(line for line in run.stderr.splitlines() if not line.startswith("\t"))
        rec = dict(
            ok=False,
            error=f"process exited with {run.returncode} and no result: {tail[-1500:].strip()}",
        )
    rec.setdefault("status", "ok" if rec.get("ok") else "crash")
    rec.update(wall_seconds=wall, peak_rss_kb=rss)
    return rec


def run_side(python, impl, method, data, splits, n_folds, args, work, say):
    """Every fold of one implementation on one pair; stops at the first failure. The first
    record is the RSS floor (the runner's --floor on fold 0), then the folds'."""
    floor = run_fold(python, impl, method, data, splits, 0, args, work, floor=True)
    folds = [floor]
    spent = 0.0
    for k in range(n_folds):
        rec = run_fold(python, impl, method, data, splits, k, args, work)
        folds.append(rec)
        spent += rec["wall_seconds"]
        if rec["ok"]:
            say(
                f"    {impl:<7} fold {k}: AUC {auc(rec):.3f}, fit {rec['fit_seconds']:.2f} s, "
                f"C={rec['C']:g}, gamma={rec['gamma']:.4g}, RSS {rss_mb(rec['peak_rss_kb'])} MB"
            )
        else:
            say(f"    {impl:<7} fold {k}: {rec['status'].upper()}: {rec['error'][:400]}")
            if k + 1 < n_folds:
                say(f"    {impl:<7} folds {k + 1}..{n_folds - 1} not run (they would fail alike)")
            break
        if args.budget and spent > args.budget and k + 1 < n_folds:
            say(
                f"    {impl:<7} folds {k + 1}..{n_folds - 1} not run: --budget {args.budget:g} s "
                f"spent ({spent:.0f} s); the pair is compared on folds 0..{k}"
            )
            break
    return folds


def auc(rec):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(rec["y"], rec["scores"]))


def rss_mb(kb):
    return "?" if kb is None else f"{kb / 1024:.0f}"


def summarise(records, n_folds):
    """Per-implementation summary over its folds (None fields when it did not finish)."""
    floor, folds = records[0], records[1:]
    ok = [r for r in folds if r["ok"]]
    s = dict(
        n_ok=len(ok),
        n_folds=n_folds,
        peak_rss_mb=max((r["peak_rss_kb"] or 0) for r in folds) / 1024 if folds else None,
        floor_rss_mb=(floor["peak_rss_kb"] or 0) / 1024 if floor.get("ok") else None,
    )
    if ok:  # all folds, or the folds before --budget stopped it or a fold failed
        a = np.array([auc(r) for r in ok])
        acc = np.array([np.mean(np.array(r["pred"]) == np.array(r["y"])) for r in ok])
        s.update(
            auc=a.tolist(),
            auc_mean=float(a.mean()),
            auc_std=float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            acc_mean=float(acc.mean()),
            acc_std=float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
            fit_seconds=float(sum(r["fit_seconds"] for r in ok)),
            fit_list=[r["fit_seconds"] for r in ok],
            select_seconds=float(sum(r["select_seconds"] for r in ok)),
            select_list=[r["select_seconds"] for r in ok],
            inner_fit_list=[r.get("inner_fit_seconds", 0.0) for r in ok],
            chosen=[(r["C"], r["gamma_scale"]) for r in ok],
            version=ok[0].get("version"),
            given=ok[0].get("given"),
        )
    bad = next((r for r in folds if not r["ok"]), None)
    if bad is not None:
        s.update(status=bad["status"], error=bad["error"], failed_fold=len(ok))
    return s


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", nargs="+", default=["MUSK1", "Elephant", "MUSK2"], choices=list(SETS))
    ap.add_argument("--methods", nargs="+", default=list(PEERS), choices=list(PEERS))
    ap.add_argument(
        "--peers",
        nargs="+",
        default=["misvm", "sawmil", "mil"],
        choices=["misvm", "sawmil", "mil"],
        help="which peer packages to run",
    )
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--inner-folds", type=int, default=3)
    add_seed(ap)
    add_list(
        ap, "--C", float, [10.0], "C: one value = fixed; several = chosen by inner CV (default 10)"
    )
    gammas = "gamma in units of scale: one value = fixed; several = inner CV (default 1)"
    add_list(ap, "--gamma-scales", float, [1.0], gammas)
    ap.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per fold process (default 600)"
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds per implementation and pair: once its fold processes have taken more, "
        "its later folds are not run and the pair is compared on the folds both finished",
    )
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: 2 folds, the first C and gamma only"
    )
    ap.add_argument("--peer-python", default=sibling_python("venv-peers", "MILSVM_PEER_PYTHON"))
    ap.add_argument("--milsvm-python", default=sys.executable)
    ap.add_argument(
        "--milsvm-c-path",
        action="store_true",
        help="milsvm's inner grid the way milsvm cv runs it: the C values of each inner split as "
        "one fit_path, for the estimators with a path (the peers have none: one fit per C)",
    )
    ap.add_argument(
        "--peers-without-milsvm",
        action="store_true",
        help="also run the peers of a method this milsvm build lacks (to check them)",
    )
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for the .npz / splits (default: a temp dir)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "peers")
    args = ap.parse_args()
    if args.quick:
        args.folds, args.C, args.gamma_scales = 2, args.C[:1], args.gamma_scales[:1]

    import milsvm
    from milsvm._registry import ESTIMATORS

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_peers_"))
    work.mkdir(parents=True, exist_ok=True)
    out = Report()
    say = out
    selection = (
        "fixed"
        if len(args.C) * len(args.gamma_scales) == 1
        else f"chosen by {args.inner_folds}-fold inner CV (accuracy)"
    )
    say(
        f"milsvm {milsvm.__version__} against misvm / sawmil / mil: {args.folds}-fold stratified "
        f"CV (seed {args.seed}), standardised per training part, rbf, C in {args.C}, gamma in "
        f"{args.gamma_scales} x scale, {selection}; one single-threaded process per fold, timeout "
        f"{args.timeout:g} s"
    )
    say(f"command: {' '.join([Path(sys.argv[0]).name] + sys.argv[1:])}")
    if args.milsvm_c_path:
        say(
            "milsvm's inner grid: the C values of each inner split as one fit_path where the "
            "estimator has one"
        )
    say(f"splits and arrays: {work}")
    results = []
    for name in args.sets:
        data, splits, ptr, y = write_inputs(name, work, args.folds, args.inner_folds, args.seed)
        say(f"\n{name}: {len(y)} bags ({int(y.sum())} positive), {ptr[-1]} instances")
        for method in args.methods:
            peers = [p for p in PEERS[method] if p.split("-")[0] in args.peers]
            row = dict(set=name, method=method, peers={})
            have = MILSVM_CLASS.get(method, method) in ESTIMATORS
            if not have:
                row["milsvm"] = dict(status="not in this build")
                say(f"  {method}: not in this build")
                if not args.peers_without_milsvm:
                    results.append(row)
                    continue
            say(f"  {method}:")
            if have:
                row["milsvm"] = summarise(
                    run_side(
                        args.milsvm_python,
                        "milsvm",
                        method,
                        data,
                        splits,
                        args.folds,
                        args,
                        work,
                        say,
                    ),
                    args.folds,
                )
            for peer in peers:
                row["peers"][peer] = summarise(
                    run_side(
                        args.peer_python, peer, method, data, splits, args.folds, args, work, say
                    ),
                    args.folds,
                )
            results.append(row)
            print_pair(row, say)
            save(args, results, partial=True)  # a long run interrupted keeps its finished pairs

    say("\n" + "=" * 20 + " summary " + "=" * 20)
    table(results, say)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.write(args.out.with_suffix(".txt"))
    save(args, results, partial=False)
    print(f"wrote {args.out.with_suffix('.json')}")


def save(args, results, partial):
    """The raw results as JSON (``partial``: the run is not over; written after every pair)."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            dict(
                settings=picked(args, "sets methods folds inner_folds seed C gamma_scales timeout")
                | {"argv": sys.argv[1:]},
                partial=partial,
                results=results,
            ),
            indent=1,
        )
    )


def ratio(ours, theirs, key="fit_list"):
    """Peer / milsvm seconds over the folds both finished: of the final fits (``key``
    ``"fit_list"``), of the inner fits (``"inner_fit_list"``) or of the whole inner-CV
    selection (``"select_list"``)."""
    k = min(len(ours[key]), len(theirs[key]))
    return sum(theirs[key][:k]) / max(sum(ours[key][:k]), 1e-9)


def selected(ours, theirs):
    """Whether both sides chose by inner CV (a grid), so that the selection seconds compare."""
    return (
        bool(ours.get("inner_fit_list"))
        and min(ours["inner_fit_list"] + theirs.get("inner_fit_list", [0])) > 0
    )


def same_choice(ours, theirs):
    """On how many of the folds both finished the two sides chose the same grid point."""
    k = min(len(ours["chosen"]), len(theirs["chosen"]))
    return sum(tuple(a) == tuple(b) for a, b in zip(ours["chosen"][:k], theirs["chosen"][:k])), k


def folds_note(s):
    note = "" if s["n_ok"] == s["n_folds"] else f" [{s['n_ok']}/{s['n_folds']} folds]"
    if s.get("failed_fold") is not None and "auc_mean" in s:
        note += f" [{s['status'].upper()} at fold {s['failed_fold']}]"
    return note


def fmt_side(s):
    if s is None:
        return "-"
    if s.get("status") == "not in this build":
        return "not in this build"
    if "auc_mean" not in s:
        return f"{s['status'].upper()} at fold {s['failed_fold']}"
    return (
        f"AUC {s['auc_mean']:.3f} +- {s['auc_std']:.3f}, acc {100 * s['acc_mean']:.1f} %, fit "
        f"{s['fit_seconds']:.1f} s, RSS {s['peak_rss_mb']:.0f} MB{folds_note(s)}"
    )


#: AUC differences smaller than this are called ties (different solver tolerances move the
#: third decimal of the same problem's AUC).
AUC_TIE = 0.005


def paired(ours, theirs):
    """milsvm - peer AUC per fold: mean, standard error, verdict ("higher", "tie" within
    AUC_TIE, "within noise" within 2 standard errors of the paired differences, "BELOW")."""
    k = min(len(ours["auc"]), len(theirs["auc"]))  # the folds both finished (--budget)
    d = np.array(ours["auc"][:k]) - np.array(theirs["auc"][:k])
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    m = d.mean()
    verdict = (
        "tie"
        if abs(m) < AUC_TIE
        else "higher"
        if m > 0
        else "within noise"
        if m >= -2 * se
        else "BELOW"
    )
    return float(m), float(se), verdict


def print_pair(row, say):
    ours = row.get("milsvm")
    say(
        f"  -> milsvm: {fmt_side(ours)}"
        + (
            f"; RSS floor {ours['floor_rss_mb']:.0f} MB"
            if ours and ours.get("floor_rss_mb")
            else ""
        )
    )
    for peer, s in row["peers"].items():
        line = f"  -> {peer}: {fmt_side(s)}"
        if ours and "auc_mean" in ours and "auc_mean" in s:
            dm, se, verdict = paired(ours, s)
            line += (
                f"; AUC diff {dm:+.3f} (se {se:.3f}, {verdict}), fit time ratio "
                f"{ratio(ours, s):.1f}x"
            )
            if selected(ours, s):
                same, k = same_choice(ours, s)
                line += (
                    f"; inner CV: fit time ratio {ratio(ours, s, 'inner_fit_list'):.1f}x, "
                    "selection (fits, scoring, the protocol's standardisation) "
                    f"{ratio(ours, s, 'select_list'):.1f}x, same grid point on {same}/{k} folds"
                )
        if s.get("floor_rss_mb"):
            line += f"; RSS floor {s['floor_rss_mb']:.0f} MB"
        if "error" in s and s.get("error"):
            line += f"; {s['error'][:300]}"
        say(line)


def table(results, say):
    hdr = (
        f"{'set':<9} {'method':<8} {'impl':<13} {'AUC':>15} {'acc %':>12} {'fit s':>8} "
        f"{'peer/ours':>9} {'inner':>8} {'RSS MB':>11}  AUC diff (se)"
    )
    say(hdr)
    say("-" * (len(hdr) + 16))
    for row in results:
        ours = row.get("milsvm", {})
        for impl, s in [("milsvm", ours)] + list(row["peers"].items()):
            head = f"{row['set']:<9} {row['method']:<8} {impl:<13}"
            if s.get("status") == "not in this build":
                say(f"{head} not in this build")
                continue
            if "auc_mean" not in s:
                say(
                    f"{head} {s.get('status', '?').upper()} at fold {s.get('failed_fold')}: "
                    f"{(s.get('error') or '')[:200]}"
                )
                continue
            rat = diff = sel = ""
            floor = f"{s['floor_rss_mb']:.0f}" if s.get("floor_rss_mb") else "?"
            if impl != "milsvm" and "auc_mean" in ours:
                rat = f"{ratio(ours, s):8.1f}x"
                sel = f"{ratio(ours, s, 'inner_fit_list'):7.1f}x" if selected(ours, s) else ""
                dm, se, verdict = paired(ours, s)
                diff = f"{dm:+.3f} ({se:.3f}) {verdict}"
            say(
                f"{head} {s['auc_mean']:.3f} +- {s['auc_std']:.3f} {100 * s['acc_mean']:5.1f} +- "
                f"{100 * s['acc_std']:4.1f} {s['fit_seconds']:8.2f} {rat:>9} {sel:>8} "
                f"{s['peak_rss_mb']:5.0f} ({floor:>3})  {diff}{folds_note(s)}"
            )


if __name__ == "__main__":
    main()
