"""Command line: ``milsvm demo`` (the README's main job) and ``milsvm cv DATA --model NAME``."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main"]

MODELS = {"sparsemi": "SparseMI", "rsvm": "RSVM"}


def _load(path):
    from . import datasets

    p = str(path)
    if p.endswith(".mat"):
        return datasets.load_andrews_mat(p)
    with open(p) as fh:
        first = fh.readline()
    if first.rstrip().endswith(("1.", "0.")) and "clean" in p:
        return datasets.load_musk_uci(p)
    return datasets.load_mill(p)


def _cross_validate(bags, y, make, n_splits, seed):
    from sklearn.model_selection import StratifiedKFold

    from . import BagStandardScaler, as_bags

    bags = as_bags(bags)
    y = np.asarray(y)
    accs, times, n_xv = [], [], []
    for train, test in StratifiedKFold(n_splits, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
        scaler = BagStandardScaler().fit(bags[train])
        model = make()
        start = time.perf_counter()
        model.fit(scaler.transform(bags[train]), y[train])
        times.append(time.perf_counter() - start)
        accs.append(np.mean(model.predict(scaler.transform(bags[test])) == y[test]))
        n_xv.append(model.xv_.shape[0])
    return np.array(accs), np.array(times), n_xv


def _params(pairs):
    out = {}
    for item in pairs or []:
        key, _, value = item.partition("=")
        if not _:
            raise SystemExit(f"parameter {item!r} is not KEY=VALUE")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                continue
        out[key] = value
    return out


def main(argv=None):
    """Entry point of the ``milsvm`` command."""
    parser = argparse.ArgumentParser(prog="milsvm", description="Multiple-instance SVMs.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="SparseMI, 10-fold CV on the bundled MUSK1")
    demo.add_argument("--n-xv", type=int, default=10)
    demo.add_argument("--C", type=float, default=10.0)
    demo.add_argument("--seed", type=int, default=0)
    cv = sub.add_parser("cv", help="k-fold bag-level CV of a model on a data file")
    cv.add_argument("data", help="MILL .data file, UCI clean1/clean2.data, or Andrews .mat")
    cv.add_argument("--model", default="sparsemi", choices=sorted(MODELS))
    cv.add_argument("--folds", type=int, default=10)
    cv.add_argument("--seed", type=int, default=0)
    cv.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="estimator parameter")
    fit = sub.add_parser("fit", help="fit a model on a data file and save it as JSON")
    fit.add_argument("data")
    fit.add_argument("--model", default="sparsemi", choices=sorted(MODELS))
    fit.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="estimator parameter")
    fit.add_argument("-o", "--output", required=True, help="model file to write (JSON)")
    pred = sub.add_parser("predict", help="predict the bags of a data file with a saved model")
    pred.add_argument("model_file")
    pred.add_argument("data")
    args = parser.parse_args(argv)

    import milsvm

    if args.command == "fit":
        bags, y = _load(args.data)
        est = getattr(milsvm, MODELS[args.model])(**_params(args.param))
        start = time.perf_counter()
        est.fit(bags, y)
        est.save(args.output)
        print(f"fitted {type(est).__name__} on {len(y)} bags in {time.perf_counter() - start:.2f} s; "
              f"training accuracy {100 * est.score(bags, y):.2f} %; saved to {args.output}")
        return 0
    if args.command == "predict":
        est = milsvm.load(args.model_file)
        bags, y = _load(args.data)
        pred = est.predict(bags)
        for label in pred:
            print(label)
        print(f"accuracy against the file's labels: {100 * np.mean(pred == y):.2f} %", file=sys.stderr)
        return 0

    if args.command == "demo":
        from .datasets import load_musk1

        bags, y = load_musk1()
        name, params = "SparseMI", {"n_xv": args.n_xv, "C": args.C, "random_state": args.seed}
        data = "MUSK1 (bundled)"
        folds, seed = 10, args.seed
    else:
        bags, y = _load(args.data)
        name, params = MODELS[args.model], _params(args.param)
        params.setdefault("random_state", args.seed)
        data, folds, seed = args.data, args.folds, args.seed
    cls = getattr(milsvm, name)
    cls(**params)  # fail early on unknown parameter names
    print(f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())}) on {data}: "
          f"{len(y)} bags, {folds}-fold CV, features standardised per training fold")
    accs, times, n_xv = _cross_validate(bags, y, lambda: cls(**params), folds, seed)
    print(f"accuracy: {100 * accs.mean():.2f} % (std over folds {100 * accs.std():.2f})")
    print(f"expansion vectors: {n_xv[0]}")
    print(f"fit time: {times.mean() * 1000:.1f} ms per fold (total {times.sum():.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
