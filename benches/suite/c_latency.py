"""Latency of one MUSK1 bag (5 x 166) from C against the Rust ``Predictor``, in one run.

1. ``cargo bench --bench serve`` (criterion) times ``Predictor::score_bag`` on the bag for a
   10-XV SparseMI model and the MI-Kernel model, and writes both models and the bag to a folder
   (``MILSVM_SERVE_EXPORT``);
2. ``cargo build --release -p milsvm-capi`` builds ``libmilsvm_c``, and
   ``benches/suite/c_latency.c`` is compiled against it;
3. the C program times ``milsvm_score_bag_f64`` on the same bag and models (median of repeats of
   a timed loop, ``clock_gettime``) and counts the heap allocations per call.

Prints a Markdown table: ns per bag from C and from Rust, their ratio, allocations per call.

    python benches/serving.py c [--calls 20000] [--repeats 31]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = ["sparse_mi_10xv", "mi_kernel"]


def criterion_ns(name):
    """Criterion's mean estimate (ns) of the benchmark whose id starts with
    ``one bag 5x166, name``."""
    root = REPO / "target" / "criterion"
    for folder in root.iterdir():
        if folder.name.startswith("one bag 5x166") and f" {name} (" in folder.name:
            est = json.loads((folder / "new" / "estimates.json").read_text())
            return est["mean"]["point_estimate"], est["median"]["point_estimate"]
    raise SystemExit(f"no criterion result for {name} under {root}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20000, help="calls per timed repeat")
    ap.add_argument(
        "--repeats", type=int, default=31, help="timed repeats (the median is reported)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "MILSVM_SERVE_EXPORT": str(tmp)}
        subprocess.run(
            ["cargo", "bench", "--locked", "--bench", "serve", "--", "one bag"],
            cwd=REPO,
            env=env,
            check=True,
        )
        subprocess.run(
            ["cargo", "build", "--locked", "--release", "-p", "milsvm-capi"], cwd=REPO, check=True
        )
        lib = REPO / "target" / "release"
        exe = tmp / "c_latency"
        cc = shutil.which(os.environ.get("CC", "cc"))
        subprocess.run(
            [
                cc,
                "-O2",
                f"-I{REPO / 'capi' / 'include'}",
                f"-I{REPO / 'tests' / 'c'}",
                str(Path(__file__).with_suffix(".c")),
                f"-L{lib}",
                "-lmilsvm_c",
                f"-Wl,-rpath,{lib}",
                "-o",
                str(exe),
            ],
            check=True,
        )
        rows = []
        for name in MODELS:
            out = subprocess.run(
                [
                    str(exe),
                    str(tmp / f"{name}.json"),
                    str(tmp / "bag.f64"),
                    "166",
                    str(args.calls),
                    str(args.repeats),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            fields = out.stdout.split()
            c_ns, allocs = float(fields[1]), float(fields[5])
            rust_mean, rust_median = criterion_ns(name)
            rows.append((name, c_ns, rust_median, rust_mean, c_ns / rust_median, allocs))
    print(
        "| model | C ns/bag (median) | Rust ns/bag (criterion median) | Rust mean | C / Rust | "
        "allocations per call (C) |"
    )
    print("|---|---|---|---|---|---|")
    for name, c_ns, r_med, r_mean, ratio, allocs in rows:
        print(f"| {name} | {c_ns:.0f} | {r_med:.0f} | {r_mean:.0f} | {ratio:.3f} | {allocs:g} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
