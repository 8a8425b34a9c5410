#!/usr/bin/env python3
"""Studies of milsvm's own estimators on the benchmark sets: probabilities, witness
detection, the one-class MI-SVM, float32 against float64."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "probability": Benchmark("probability", "held-out log-loss and Brier of probability=True"),
    "witness": Benchmark(
        "witness",
        "instance-level AUROC of the witness detection",
        smoke=("--quick", "--estimators", "MISVM", "SIL"),
    ),
    "one-class": Benchmark(
        "one_class", "one-class MI-SVM on synthetic bags with known instance labels"
    ),
    "float32": Benchmark("float32_cv", "10-fold CV accuracy with float32 bags against float64"),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
