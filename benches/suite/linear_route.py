"""The linear route of the annealing family (``solver="linear"``, issue 18 item 2) against the
kernel route (the dual SMO over every instance) and, on embedding bags, against the "DIY"
mi-SVM loop around scikit-learn's ``LinearSVC`` (liblinear; float64).

For each data set and method: fit time of each route in the same run (their ratio), the largest
difference of the bag scores between the routes (relative to the largest score), and, on the
synthetic embedding bags, the test AUC on 100 held-out bags of the same draw
(``make_embedding_bags``, seed 0, default separation).
The kernel route is skipped above ``--kernel-max`` instances (its cost grows as n^2).

    python benches/speed.py linear-route [--sizes 20000 100000] [--kernel-max 20000]
        [--out benches/results/linear_route.txt]

Run it alone (it holds the data in float64: 100k x 512 is 0.4 GB) and under
``/usr/bin/time -v`` for the peak RSS.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import milsvm
import milsvm.datasets as D
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, benchmark_parser  # noqa: E402
from _protocol import DEFAULT_DATA, Report, diy_mi_svm  # noqa: E402


def diy_scorer(bags, y):
    """The DIY mi-SVM loop (`_protocol.diy_mi_svm`) on the bags; returns the bag scorer."""
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in bags])])
    svc = diy_mi_svm(np.concatenate(bags).astype(np.float64), ptr, y)
    return lambda test: np.array([svc.decision_function(b).max() for b in test])


def run_set(name, bags, y, test, yt, kernel_max, out, methods=("miSVM", "MISVM")):
    n = sum(b.shape[0] for b in bags)
    for m in methods:
        cls = getattr(milsvm, m)
        row = {}
        for route in ("linear", "kernel"):
            if route == "kernel" and n > kernel_max:
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est = cls(kernel="linear", C=1.0, solver=route).fit(bags, y)
            row[route] = (time.perf_counter() - start, est)
        lin_t, lin = row["linear"]
        auc = roc_auc_score(yt, lin.decision_function(test)) if test is not None else float("nan")
        if "kernel" in row:
            ker_t, ker = row["kernel"]
            a, b = lin.decision_function(bags), ker.decision_function(bags)
            diff = f"{np.abs(a - b).max() / max(1.0, np.abs(b).max()):.1e}"
            ker_s, ratio = f"{ker_t:8.2f}", f"{ker_t / lin_t:6.1f}x"
        else:
            diff, ker_s, ratio = "-", "       -", "      -"
        out(
            f"{name:<16} {n:>8} {m:<6} {lin_t:8.2f} {ker_s}  {ratio}  {diff:>8}  {auc:6.3f}  "
            f"rounds {lin.n_iter_}"
        )
    return n


def main():
    parser = benchmark_parser(__doc__)
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[20000, 100000],
        help="instances of the embedding sets (bags of 1000 on average, 512-d float32)",
    )
    parser.add_argument("--kernel-max", type=int, default=20000)
    parser.add_argument(
        "--diy", action="store_true", help="also run the DIY LinearSVC loop on the embedding sets"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "linear_route.txt")
    args = parser.parse_args()
    out = Report()
    out(
        "Linear route (w in R^d, Newton-CG) vs kernel route (dual SMO over the instances), "
        "kernel='linear', C=1"
    )
    out.header(
        f"{'set':<16} {'inst.':>8} {'method':<6} {'linear s':>8} {'kernel s':>8}  {'ratio':>7}  "
        f"{'max diff':>8}  {'AUC':>6}"
    )
    for name, path in (("musk2", "musk2/musk2.data"), ("tst1 (sparse)", "tst1/tst1.data")):
        bags, y = D.load_mill(DEFAULT_DATA / path)
        if name == "musk2":
            bags = milsvm.BagStandardScaler().fit(bags).transform(bags)
        run_set(name, bags, y, None, None, args.kernel_max, out)
    for size in args.sizes:
        # one draw (one witness direction), split into training bags and 100 test bags
        every, labels = D.make_embedding_bags(
            size // 1000 + 100, mean_bag_size=1000, n_features=512, random_state=0
        )
        k = size // 1000
        bags, y, test, yt = every[:k], labels[:k], every[k:], labels[k:]
        name = f"embed {size // 1000}k x512"
        run_set(name, bags, y, test, yt, args.kernel_max, out)
        if args.diy:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                score = diy_scorer(bags, y)
            t = time.perf_counter() - start
            n = sum(b.shape[0] for b in bags)
            out(
                f"{name:<16} {n:>8} DIY    {t:8.2f} (LinearSVC mi-SVM loop)            "
                f"{roc_auc_score(yt, score(test)):6.3f}"
            )
    out.write(args.out)


if __name__ == "__main__":
    main()
