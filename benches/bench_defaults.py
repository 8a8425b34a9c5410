"""Defaults that finish (issue 18, item 3): every estimator of the registry fitted with its
default parameters on a 10,000-instance set, each fit in its own process with a timeout, the
fit time and what the fit chose (``basis_`` for the annealing family, ``n_iter_``).

The set stands in for the bird-song set of the issue (548 bags, about 10,200 instances, 38
features): ``make_embedding_bags(548, mean_bag_size=19, n_features=38, dtype=float64)``
(seed 0), standardised as ``milsvm cv`` does. ``--data musk2`` uses MUSK2 instead (102 bags,
6,598 instances, 166 features).

    python benches/bench_defaults.py [--data synthetic|musk2] [--timeout 300] \
        [--out benches/results/defaults.txt]

The aim: no default fit takes more than about 30 s here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path


def data(name):
    import milsvm
    import numpy as np
    from milsvm.datasets import make_embedding_bags

    if name == "musk2":
        from _protocol import load

        bags, y = load("musk2")
    else:
        bags, y = make_embedding_bags(
            548, mean_bag_size=19, n_features=38, dtype=np.float64, random_state=0
        )
    return milsvm.BagStandardScaler().fit_transform(bags), y


def one(name, dataset):
    import milsvm
    from sklearn.exceptions import ConvergenceWarning

    bags, y = data(dataset)
    cls = milsvm._registry.ESTIMATORS[name]
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    est = cls(**params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(bags, y)
    seconds = time.perf_counter() - start
    chose = {k: getattr(est, k) for k in ("basis_", "solver_", "n_iter_") if hasattr(est, k)}
    chose = {k: (v if isinstance(v, (str, int, float)) else str(v)) for k, v in chose.items()}
    print(
        json.dumps(
            {"estimator": name, "seconds": seconds, "n_instances": int(bags.n_instances), **chose}
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", choices=["synthetic", "musk2"], default="synthetic")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.one:
        return one(args.one, args.data)
    import milsvm

    names = args.only or list(milsvm._registry.ESTIMATORS)
    lines = [
        f"# default fits on {args.data}, {time.strftime('%Y-%m-%d %H:%M')}, timeout "
        f"{args.timeout:.0f} s"
    ]
    print(lines[0], flush=True)
    for name in names:
        cmd = [sys.executable, __file__, "--data", args.data, "--one", name]
        try:
            p = subprocess.run(
                cmd, capture_output=True, text=True, timeout=args.timeout, cwd=Path(__file__).parent
            )
            r = json.loads(p.stdout.strip().splitlines()[-1])
            extra = " ".join(
                f"{k}={v}" for k, v in r.items() if k not in ("estimator", "seconds", "n_instances")
            )
            line = f"{name:<14} {r['seconds']:8.1f} s  ({r['n_instances']} instances)  {extra}"
        except subprocess.TimeoutExpired:
            line = f"{name:<14} timed out after {args.timeout:.0f} s"
        except (IndexError, json.JSONDecodeError):
            line = f"{name:<14} failed: {p.stderr.strip().splitlines()[-1:]}"
        print(line, flush=True)
        lines.append(line)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
