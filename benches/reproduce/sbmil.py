"""sbMIL and sAwMIL (issue 20, items 4 and 6) on MUSK1, MUSK2, Elephant, TST1 and TST2: 10-fold
bag-level cross-validation, accuracy and AUC, with sMIL (their first stage) beside them, and the
published numbers our sources hold.

Protocol: StratifiedKFold(10, shuffle=True, random_state=--seed) over the bags. MUSK1, MUSK2,
Elephant: the bags of each training part standardised with the mean / std of its instances
(``_protocol.standardise``), the test part with the same; Gaussian kernel, gamma="scale" (over
the training instances). TST1, TST2 (sparse TF-IDF text, 66,000 dimensions): raw CSR bags, linear
kernel. On each training part (C, eta) is chosen by a 3-fold inner StratifiedKFold (seed 0) from
--C-grid x --eta-grid by accuracy (ties: the first in grid order; sMIL: C only), then the model is
fitted on the whole training part and scored on the test part. AUC from the bag scores
(decision_function) of each test part: the mean and standard deviation over the folds, and the
pooled out-of-fold AUC. n_jobs=1 (two cores shared with other jobs), so times are
single-thread and indicative only.

Published numbers: the text of Bunescu & Mooney (ICML 2007) was not available to us (not in
../shared/papers; not found by the search tool), so none of its numbers is printed. The
``sawmil`` package's documentation (0.2.1: README, docs/, example.ipynb) reports no sAwMIL number
on any of these sets: its MUSK example (OpenML "musk", i.e. MUSK2, one 70/30 split) reports the
Matthews correlation of NSK (0.556) and sMIL (0.504) with a linear + RBF sum kernel that milsvm
does not have, and no sAwMIL run. SIL on MUSK1, MUSK2 and Elephant (the eta = 1 end of both
methods) is in RESULTS.md ("SIL and STK", the same outer folds).

Run (from the repository root), one data set at a time:

    python benches/papers.py sbmil --datasets MUSK1 --out benches/results/sbmil_musk1.txt

Output: printed and written to --out.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
import milsvm  # noqa: E402
from _common import RESULTS, add_seed, benchmark_parser  # noqa: E402
from _protocol import (  # noqa: E402
    Report,
    cv_cells,
    cv_header,
    load_mill_bags,
    mill_file,
    outer_cv,
    standardise,
)

#: The sets of sparse text (read as CSR bags; the others dense).
TEXT = ("TST1", "TST2")

#: The default C grids of the inner CV.
DENSE_C, TEXT_C = "0.1,1,10,100", "1,10,100,1000"

CLASSES = {"sbMIL": milsvm.sbMIL, "sAwMIL": milsvm.sAwMIL, "sMIL": milsvm.sMIL}

#: Published accuracy / AUC on our sets that our sources hold: none (see the module docs).
PUBLISHED = {}


def load(name):
    if name in TEXT:
        from milsvm.datasets import load_mill

        bags, y = load_mill(mill_file(name))
        return list(bags), np.asarray(y).astype(int), True
    return (*load_mill_bags(mill_file(name)), False)


def make(method, point, sparse):
    kernel = "linear" if sparse else "rbf"
    params = dict(C=point[0], kernel=kernel, gamma="scale", n_jobs=1)
    if method != "sMIL":
        params["eta"] = point[1]
    return CLASSES[method](**params)


def fit_score(method, sparse, point, train_bags, y_train, test_bags):
    if not sparse:
        train_bags, test_bags = standardise(train_bags, test_bags)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make(method, point, sparse).fit(train_bags, y_train)
    return est.decision_function(test_bags)


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument("--datasets", default="MUSK1,MUSK2,Elephant,TST1,TST2")
    ap.add_argument("--methods", default="sbMIL,sAwMIL,sMIL")
    ap.add_argument(
        "--C-grid",
        default=None,
        dest="C_grid",
        help="C values of the inner CV (default 0.1,1,10,100; 1,10,100,1000 for the text sets)",
    )
    ap.add_argument("--eta-grid", default="0.1,0.3,0.5,0.7,0.9", dest="eta_grid")
    add_seed(ap, "seed of the outer folds")
    ap.add_argument("--out", default=str(RESULTS / "sbmil.txt"))
    args = ap.parse_args()
    etas = [float(v) for v in args.eta_grid.split(",")]
    out = Report()
    out(
        f"sbMIL / sAwMIL / sMIL: 10-fold stratified CV (seed {args.seed}); dense sets standardised "
        "per training part, rbf, gamma='scale'; text sets raw CSR, linear kernel;"
    )
    c_text = args.C_grid or f"{DENSE_C} (text sets: {TEXT_C})"
    out(
        f"(C, eta) by 3-fold inner CV (accuracy) from C = {c_text} x eta = {args.eta_grid} (sMIL: "
        f"C); milsvm {milsvm.__version__}, n_jobs=1"
    )
    out()
    out.header(f"{'data':9s} {'method':7s} {cv_header(7)}  (C, eta) chosen x folds; published")
    for name in args.datasets.split(","):
        bags, y, sparse = load(name)
        default = TEXT_C if sparse else DENSE_C
        cs = [float(v) for v in (args.C_grid or default).split(",")]
        for method in args.methods.split(","):
            grid = (
                [(c, None) for c in cs] if method == "sMIL" else [(c, e) for c in cs for e in etas]
            )
            r = outer_cv(bags, y, grid, functools.partial(fit_score, method, sparse), args.seed)
            pub = PUBLISHED.get((method, name), "none in our sources")
            chosen = ", ".join(
                f"({c:g}{'' if e is None else f', {e:g}'}) x{k}"
                for (c, e), k in Counter(r["chosen"]).most_common()
            )
            out(f"{name:9s} {method:7s} {cv_cells(r, 7)}  {chosen}; {pub}")
    out.write(Path(args.out))


if __name__ == "__main__":
    main()
