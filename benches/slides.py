"""From a folder of slides to reportable numbers, on ``milsvm.datasets.make_slide_folder`` data.

Measures, on one synthetic CLAM folder (settings printed, all from the command line):

1. **Leaky vs patient-level splits.** ``milsvm cv`` with linear MISVM, 5-fold, once with the
   splits grouped by ``case_id`` (the default when a patient has several slides) and once with
   ``--no-group`` (slide-level splits, the slides of one patient on both sides): the pooled
   out-of-fold ROC AUC of each with its 95 % stratified bootstrap interval (B = 2000, resampling
   patients for the grouped run, slides for the other), at the slide and the patient level.
2. **Witness detection.** A linear MISVM fitted on all slides (standardised, as ``milsvm fit``),
   then the instance scores that ``milsvm heatmap`` draws, against the planted tumour patches of
   the positive slides: the AUROC pooled over those slides, and the mean of the per-slide
   AUROCs.
3. **Heatmap time.** ``milsvm.write_heatmaps`` (what ``milsvm heatmap`` runs per slide: scores,
   shares, the GeoJSON and the PNG) on slides of ``--heatmap-patches`` patches (default 10,000):
   the median seconds per slide over ``--heatmap-slides`` slides, with and without the PNG.
4. **Bootstrap time.** ``bootstrap_interval`` of the AUC with 2,000 resamples of 1,000 bags:
   the median of five runs.

Usage::

    python benches/slides.py                       # the defaults below
    python benches/slides.py --cases 60 --seed 0 --out /tmp/slides-bench

The CV runs go through ``milsvm.cli.main`` (the command a user runs) with ``-o`` JSON output.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def _interval(metric):
    return f"{metric['value']:.3f} [{metric['low']:.3f}, {metric['high']:.3f}]"


def cv_side_by_side(made, args, workdir):
    from milsvm.cli import main

    rows = {}
    for name, extra in (
        ("slide-level splits (--no-group)", ["--no-group"]),
        ("patient-level splits", []),
    ):
        out = Path(workdir) / f"cv{len(rows)}.json"
        cmd = [
            "cv",
            made.features_dir,
            "--labels",
            made.labels,
            "--model",
            "MISVM",
            "-p",
            "kernel='linear'",
            "-p",
            f"C={args.C}",
            "--folds",
            str(args.folds),
            "--seed",
            str(args.seed),
            "--bootstrap",
            str(args.bootstrap),
            "-q",
            "-o",
            str(out),
            *extra,
        ]
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(cmd) == 0
        seconds = time.perf_counter() - start
        doc = json.loads(out.read_text())
        ev = doc["evaluation"]
        rows[name] = (
            ev["bags"][0]["auc"],
            ev["patients"]["repeats"][0]["auc"],
            ev["resampled"],
            seconds,
        )
        print(f"  milsvm {' '.join(cmd)}")
    print()
    print(
        "| splits | pooled OOF AUC, slides [95 % CI] | pooled OOF AUC, patients (max of slides) "
        "[95 % CI] | bootstrap resamples | CV time (s) |"
    )
    print("|---|---|---|---|---:|")
    for name, (slides, patients, unit, seconds) in rows.items():
        print(f"| {name} | {_interval(slides)} | {_interval(patients)} | {unit} | {seconds:.1f} |")


def witness_auroc(made, args):
    import milsvm
    import milsvm.datasets
    from milsvm._crossval import make_model
    from milsvm._heatmap import slide_explanations
    from sklearn.metrics import roc_auc_score

    data = milsvm.datasets.load_slide_folder(made.features_dir, made.labels)
    model = make_model(milsvm.MISVM, {"kernel": "linear", "C": args.C}, True).fit(data.bags, data.y)
    positive = [k for k, y in enumerate(data.y) if y == 1]
    explanations, _ = slide_explanations(model, [data.bags[k] for k in positive])
    scores = [e.instance_scores for e in explanations]
    truth = [made.tumour[data.names[k]] for k in positive]
    pooled = roc_auc_score(np.concatenate(truth), np.concatenate(scores))
    per_slide = [roc_auc_score(t, s) for t, s in zip(truth, scores) if 0 < t.sum() < len(t)]
    print(
        f"  instance AUROC of the heatmap scores vs the planted tumour patches, {len(positive)} "
        f"positive slides ({int(sum(t.sum() for t in truth))} tumour of "
        f"{sum(len(t) for t in truth)} patches): pooled {pooled:.3f}, mean per slide "
        f"{np.mean(per_slide):.3f} (min {np.min(per_slide):.3f})"
    )
    return model


def heatmap_time(model, args, workdir):
    import milsvm
    import milsvm.datasets
    from milsvm._heatmap import write_heatmaps

    big = milsvm.datasets.make_slide_folder(
        Path(workdir) / "big",
        n_cases=args.heatmap_slides,
        slides_per_case=1,
        n_features=args.features,
        n_patches=args.heatmap_patches,
        random_state=args.seed + 1,
    )
    data = milsvm.datasets.load_slide_folder(big.features_dir, big.labels)
    sizes = [len(b) for b in data.bags]
    # one untimed slide first: matplotlib's first figure loads its fonts
    write_heatmaps(
        model, data.bags[:1], data.coords[:1], Path(workdir) / "warm", names=data.names[:1]
    )
    for png in (True, False):
        times = []
        for k in range(len(data.bags)):
            start = time.perf_counter()
            write_heatmaps(
                model,
                data.bags[k : k + 1],
                data.coords[k : k + 1],
                Path(workdir) / "heat",
                names=data.names[k : k + 1],
                labels=data.y[k : k + 1],
                png=png,
            )
            times.append(time.perf_counter() - start)
        what = "GeoJSON + PNG" if png else "GeoJSON only"
        print(
            f"  heatmap of one slide ({what}), {min(sizes)}-{max(sizes)} patches: median "
            f"{np.median(times):.3f} s (min {np.min(times):.3f}, max {np.max(times):.3f}) over "
            f"{len(times)} slides"
        )


def bootstrap_time():
    from milsvm._bootstrap import bootstrap_interval, weighted_auc

    rng = np.random.default_rng(0)
    scores, y = rng.normal(size=1000), rng.random(1000) < 0.4
    times = []
    for k in range(5):
        start = time.perf_counter()
        bootstrap_interval(
            lambda w: weighted_auc(scores, y, w), y, n_resamples=2000, rng=np.random.default_rng(k)
        )
        times.append(time.perf_counter() - start)
    print(
        "  bootstrap interval of the AUC, 2,000 resamples of 1,000 bags: median "
        f"{np.median(times):.3f} s (min {np.min(times):.3f}) over 5 runs"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=60, help="patients (default: 60)")
    parser.add_argument("--features", type=int, default=32, help="feature width (default: 32)")
    parser.add_argument(
        "--case-offset", type=float, default=3.0, help="norm of the per-case offset (default: 3)"
    )
    parser.add_argument("--signal", type=float, default=3.0, help="tumour shift (default: 3)")
    parser.add_argument(
        "--seed", type=int, default=0, help="data, folds and bootstrap seed (default: 0)"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--C", type=float, default=1.0, help="MISVM's C (default: 1)")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--heatmap-patches", type=int, default=10000)
    parser.add_argument("--heatmap-slides", type=int, default=5)
    parser.add_argument("--out", help="work folder (default: a temporary one)")
    args = parser.parse_args(argv)

    import milsvm
    import milsvm.datasets

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.out or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        settings = dict(
            n_cases=args.cases,
            slides_per_case=(1, 3),
            n_features=args.features,
            n_patches=(200, 600),
            tumour_fraction=(0.05, 0.15),
            slide_tumour_rate=0.8,
            signal=args.signal,
            case_offset=args.case_offset,
            random_state=args.seed,
        )
        made = milsvm.datasets.make_slide_folder(workdir / "clam", **settings)
        n_pos = int(made.y.sum())
        print(
            f"make_slide_folder({', '.join(f'{k}={v!r}' for k, v in settings.items())}): "
            f"{len(made.slides)} slides ({n_pos} positive) of {args.cases} patients"
        )
        print(
            f"milsvm {milsvm.__version__}; linear MISVM, C={args.C}, features standardised per "
            "training part"
        )
        print("\n1. pooled out-of-fold AUC, slide-level vs patient-level splits")
        cv_side_by_side(made, args, workdir)
        print("\n2. witness detection")
        model = witness_auroc(made, args)
        print("\n3. heatmap time")
        heatmap_time(model, args, workdir)
        print("\n4. bootstrap time")
        bootstrap_time()


if __name__ == "__main__":
    main()
