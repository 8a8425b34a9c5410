"""MILES on MUSK2: milsvm against the ``mil`` package's pipeline (PyPI ``mil`` 1.0.5, its MILES
mapping plus scikit-learn's ``LinearSVC(penalty="l1")``), on the same folds: training time, peak
RSS and test AUC.

Each side runs in its own process under ``/usr/bin/time -v``
(``benches/suite/miles_mil_worker.py``): mil in its own virtual environment (--mil-python, default
$MILSVM_MIL_PYTHON, else ../venv-mil/bin/python beside the repository; mil is never a dependency
of milsvm), milsvm in this one, once on one thread and once on two. Folds:
StratifiedKFold(10, shuffle=True, random_state=0) over the 102 bags; per fold the training bags
standardised, gamma = 1 / (d Var[X_train]) on both sides (mil's sigma2 = 1 / gamma),
``class_weight="balanced"`` on both sides (mil's MILES sets it), one embedding of the training
bags and one fit per C of --Cs (mil: ``fit_transform`` then one ``LinearSVC`` per C; milsvm:
``MILES.fit_path``). The two sides solve different problems on the same embedding: mil the
squared hinge with an l1 penalty (liblinear, the intercept penalised), milsvm the paper's hinge
LP; AUC is compared per C and at each side's best C.

Timing: the machine is shared, so only ratios measured in the same run mean much. NumPy's and
OpenBLAS's thread settings are left to the environment; unset OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE for this command.

Run (from the repository root):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benches/peers.py miles-mil

Output: printed and written to benches/results/miles_vs_mil.txt (raw JSON of each side beside it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, benchmark_parser, sibling_python  # noqa: E402
from _protocol import DEFAULT_DATA, Report, load_mill_dense  # noqa: E402


def run_side(python, impl, args, n_jobs, outdir):
    out = outdir / f"miles_vs_mil_{impl}_{n_jobs}t.json"
    cmd = [
        "/usr/bin/time",
        "-v",
        python,
        str(HERE / "miles_mil_worker.py"),
        "--impl",
        impl,
        "--data",
        str(args.data),
        "--splits",
        str(outdir / "miles_vs_mil_splits.json"),
        "--gamma-scale",
        str(args.gamma_scale),
        "--Cs",
        *map(str, args.Cs),
        "--n-jobs",
        str(n_jobs),
        "--out",
        str(out),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{impl} failed:\n{run.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", run.stderr).group(1)
    return json.loads(out.read_text()), rss / 1024.0, wall


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "musk2" / "musk2.data")
    ap.add_argument("--mil-python", default=sibling_python("venv-mil", "MILSVM_MIL_PYTHON"))
    ap.add_argument("--gamma-scale", type=float, default=1.0)
    ap.add_argument("--Cs", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--out", type=Path, default=RESULTS / "miles_vs_mil.txt")
    args = ap.parse_args()
    outdir = args.out.parent
    _, ptr, y = load_mill_dense(args.data)
    splits = [
        [tr.tolist(), te.tolist()]
        for tr, te in StratifiedKFold(args.folds, shuffle=True, random_state=0).split(
            np.zeros(len(y)), y
        )
    ]
    (outdir / "miles_vs_mil_splits.json").write_text(json.dumps(splits))
    sides = [
        ("mil", args.mil_python, 1),
        ("milsvm", sys.executable, 1),
        ("milsvm", sys.executable, 2),
    ]
    results = {}
    for impl, python, n_jobs in sides:
        print(f"running {impl} ({n_jobs} thread(s)) ...", flush=True)
        results[(impl, n_jobs)] = run_side(python, impl, args, n_jobs, outdir)
    out = Report()
    out(
        f"MILES on MUSK2 ({len(y)} bags, {ptr[-1]} instances): milsvm vs the mil package "
        "(MILESMapping + LinearSVC l1),"
    )
    out(
        f"{args.folds}-fold StratifiedKFold(seed 0), standardised per fold, gamma = "
        f"{args.gamma_scale:g} x 1/(d Var), class_weight balanced, C in {args.Cs}"
    )
    out()
    hdr = (
        f"{'side':18s} {'train s (all folds)':>19s} {'score s':>8s} {'peak RSS MB':>11s} "
        f"{'wall':>8s}  "
        + "  ".join(f"{'AUC C=' + format(c, 'g'):>13s}" for c in args.Cs)
        + "  concepts per C"
    )
    out.header(hdr)
    base = None
    for (impl, n_jobs), (res, rss, wall) in results.items():
        folds = res["folds"]
        fit_s = sum(f["fit_seconds"] for f in folds)
        score_s = sum(f["score_seconds"] for f in folds)
        aucs = []
        for k in range(len(args.Cs)):
            per_fold = [roc_auc_score(y[f["test"]], f["scores"][k]) for f in folds]
            pooled = np.zeros(len(y))
            for f in folds:
                pooled[f["test"]] = f["scores"][k]
            aucs.append(f"{np.mean(per_fold):.3f}/{roc_auc_score(y, pooled):.3f}")
        nnz = [np.mean([f["nnz"][k] for f in folds]) for k in range(len(args.Cs))]
        name = f"{impl} {n_jobs}t"
        base = fit_s if impl == "mil" else base
        ratio = f" ({base / fit_s:.0f}x)" if impl != "mil" and base else ""
        out(
            f"{name:18s} {fit_s:12.2f}{ratio:>7s} {score_s:8.2f} {rss:11.0f} {wall:>8s}  "
            + "  ".join(f"{a:>13s}" for a in aucs)
            + "  "
            + " / ".join(f"{v:.1f}" for v in nnz)
        )
    out()
    out(
        f"AUC: mean over the {args.folds} folds of the test-fold AUC / AUC of the pooled "
        "out-of-fold scores. train s: embedding of the training bags plus one fit"
    )
    out(
        "per C, summed over folds; score s: the test bags (mil maps them against every training "
        "instance,"
    )
    out("milsvm against the selected concepts only). (Nx): mil's training time over this row's.")
    out.write(args.out)


if __name__ == "__main__":
    main()
