"""SIL and STK (the baselines users know from Doran's ``misvm`` package) on MUSK1, MUSK2 and
Elephant: 10-fold bag-level cross-validation, accuracy and AUC, beside the numbers reported in
the literature that our sources hold.

Protocol: StratifiedKFold(10, shuffle=True, random_state=0) over the bags; the bags of each
training part standardised with the mean / std of its instances (``_protocol.standardise``), the
test part with the same; Gaussian kernel, gamma="scale" (over the training instances for SIL,
over the training bags' min/max statistic vectors for STK); C chosen on each training part by a
3-fold inner StratifiedKFold (seed 0) from --grid (default 0.1, 1, 10, 100) by accuracy (ties:
the first); then fitted on the whole training part and scored on the test part. AUC from the
bag scores (decision_function) of each test part; reported as the mean and standard deviation
over the ten folds, with the pooled out-of-fold AUC beside it. n_jobs=1 (two cores shared with
other benchmarks), so times are single-thread.

Literature (only what ../shared/papers holds): Gehler & Chapelle 2007 (004, section 5) report
85.6 % on MUSK1 for "a SVM decision function obtained by ignoring the ambiguity of the pattern
labels", i.e. SIL, as Ray & Craven 2005 found; no STK numbers and no SIL numbers for MUSK2 or
Elephant are in our sources (Gaertner et al. 2002, where STK's are, is not among them).

Run (from the repository root):

    ../venv-peers/bin/python benches/peers.py sil-stk

Output: printed and written to benches/results/peers_basic.txt (--out).
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import _protocol as protocol  # noqa: E402
import milsvm  # noqa: E402
from _common import RESULTS, benchmark_parser  # noqa: E402

DATASETS = ("MUSK1", "MUSK2", "Elephant")

#: Accuracies (%) reported in the papers of ../shared/papers, by (method, data set).
LITERATURE = {("SIL", "MUSK1"): "85.6 (Gehler & Chapelle 2007, sec. 5)"}


def make(method, C):
    cls = {"SIL": milsvm.SIL, "STK": milsvm.STK}[method]
    return cls(C=C, kernel="rbf", gamma="scale", n_jobs=1)


def fit_score(method, C, train_bags, y_train, test_bags):
    tr, te = protocol.standardise(train_bags, test_bags)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make(method, C).fit(tr, y_train)
    return est.decision_function(te)


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument(
        "--grid", default="0.1,1,10,100", help="C values for the inner CV (one value: fixed C)"
    )
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--methods", default="SIL,STK")
    ap.add_argument("--out", default=str(RESULTS / "peers_basic.txt"))
    args = ap.parse_args()
    grid = [float(v) for v in args.grid.split(",")]
    out = protocol.Report()
    out(
        "SIL and STK: 10-fold stratified CV (seed 0), standardised per training part, rbf, "
        "gamma='scale',"
    )
    out(f"C by 3-fold inner CV from {grid}; milsvm {milsvm.__version__}, n_jobs=1")
    out()
    hdr = protocol.cv_header()
    out.header(f"{'data':9s} {'method':6s} {hdr}  C chosen per fold; literature accuracy %")
    for name in args.datasets.split(","):
        bags, y = protocol.load_mill_bags(protocol.mill_file(name))
        for method in args.methods.split(","):
            r = protocol.outer_cv(bags, y, grid, functools.partial(fit_score, method))
            lit = LITERATURE.get((method, name), "n/a in ../shared/papers")
            Cs = ",".join(f"{c:g}" for c in r["chosen"])
            out(f"{name:9s} {method:6s} {protocol.cv_cells(r)}  C=[{Cs}]; {lit}")
    out.write(Path(args.out))


if __name__ == "__main__":
    main()
