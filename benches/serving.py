#!/usr/bin/env python3
"""Serving and robustness: scoring from Python and from C, Ctrl-C latency, fuzzing the
file readers."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "python": Benchmark("serving_python", "scoring a bag from Python against NumPy"),
    "c": Benchmark("c_latency", "one MUSK1 bag from C against the Rust Predictor"),
    "sigint": Benchmark("sigint", "how long a fit takes to stop after Ctrl-C"),
    "fuzz": Benchmark(
        "fuzz_readers",
        "fuzzing the MILL, MUSK, .mat, model and CSV readers",
        smoke=("--targets", "mill", "--seconds", "3", "--findings-dir", "/tmp/milsvm-smoke-fuzz"),
    ),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
