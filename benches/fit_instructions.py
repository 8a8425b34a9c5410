"""Instruction counts of fits, for A/B comparisons of two builds on a machine too noisy to time
fits of a few milliseconds (RESULTS.md, "Kernel rows from their transposes").

``fit`` runs fits of one estimator on the first training part of the peers' ten folds
(standardised, ``C = 10``, gamma the scale value, one thread); run it under cachegrind, with
``PYTHONPATH`` pointing at the build to measure::

    PYTHONPATH=/tmp/build_a valgrind --tool=cachegrind --cache-sim=yes \\
        --cachegrind-out-file=/tmp/cg.a python benches/fit_instructions.py fit SIL 3 musk1

``time`` times the same fits in one process instead (best and median of ``n`` fits per
estimator, comma-separated), for an A/B where instruction counts say little (a change that
moves work into a GEMM: faer's kernels are generated at run time and counted under ``???``)::

    PYTHONPATH=/tmp/build_a python benches/fit_instructions.py time SIL,sMIL 40 musk1

``sum`` then adds up the events of the core's functions (``milsvm``, ``rayon``, ``faer``, ``gemm``,
``ndarray``) in cachegrind's output files, the largest functions under each::

    python benches/fit_instructions.py sum /tmp/cg.a /tmp/cg.b
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

CORE = ("milsvm", "rayon", "faer", "gemm", "ndarray")


def first_part(name):
    """The first training part of the peers' ten folds of ``name`` (standardised), its labels
    and the scale value of gamma."""
    import numpy as np
    from _protocol import DEFAULT_DATA, standardise
    from milsvm.cli import load_data
    from sklearn.model_selection import StratifiedKFold

    path = DEFAULT_DATA / ("elephant/elephant.data" if name == "elephant" else "musk1/musk1.data")
    bags, y = load_data(str(path))[:2]
    y = np.asarray(y)
    train, test = next(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    tr, _ = standardise([bags[i] for i in train], [bags[i] for i in test])
    X = np.vstack(tr)
    return tr, y[train], 1.0 / (X.shape[1] * X.var())


def fit(method, n_fits, name):
    import milsvm

    bags, y, gamma = first_part(name)
    for _ in range(n_fits):
        getattr(milsvm, method)(C=10.0, gamma=gamma, n_jobs=1).fit(bags, y)


def time_fits(methods, n_fits, name):
    import time

    import milsvm
    import numpy as np

    bags, y, gamma = first_part(name)
    for method in methods.split(","):
        ts = []
        for _ in range(n_fits):
            t = time.perf_counter()
            getattr(milsvm, method)(C=10.0, gamma=gamma, n_jobs=1).fit(bags, y)
            ts.append(time.perf_counter() - t)
        print(
            f"{name} {method}: best {min(ts) * 1e3:.2f} ms, median {np.median(ts) * 1e3:.2f} ms "
            f"({n_fits} fits, {milsvm.__file__})",
            flush=True,
        )


def core_events(path):
    """(event names, totals over the core's functions, [(Ir, function, events)] largest first)."""
    names, fn, per = None, None, collections.defaultdict(lambda: None)
    for line in open(path):
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn is not None:
            vals = [int(v) for v in line.split()[1:]]
            acc = per[fn] or [0] * len(names)
            per[fn] = [a + v for a, v in zip(acc, vals + [0] * (len(names) - len(vals)))]
    core = [(v[0], f, v) for f, v in per.items() if any(c in f for c in CORE)]
    core.sort(reverse=True)
    totals = [sum(v[i] for _, _, v in core) for i in range(len(names))]
    return names, totals, core


def main():
    if len(sys.argv) >= 5 and sys.argv[1] in ("fit", "time"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        (fit if sys.argv[1] == "fit" else time_fits)(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "sum":
        for path in sys.argv[2:]:
            names, totals, core = core_events(path)
            t = dict(zip(names, totals))
            print(
                f"{path}: core Ir {t['Ir'] / 1e6:.1f} M, D1 read misses "
                f"{t.get('D1mr', 0) / 1e6:.2f} M"
            )
            for ir, f, _ in core[:6]:
                print(f"    {ir / 1e6:8.1f} M Ir  {f[:90]}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
