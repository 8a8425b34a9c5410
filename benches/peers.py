#!/usr/bin/env python3
"""milsvm against the peer implementations of the same methods (Doran's misvm, sawmil,
mil), each in its own virtual environment, on the same folds: fit time, peak RSS, AUC."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "grid": Benchmark(
        "peers_grid", "every method against its peers, fixed C or an inner grid over C"
    ),
    "sil-stk": Benchmark(
        "peers_sil_stk",
        "SIL and STK accuracy and AUC beside the published numbers",
        smoke=("--datasets", "MUSK1", "--grid", "10", "--out", "/tmp/milsvm-smoke-sil-stk.txt"),
    ),
    "sbmil-misvm": Benchmark(
        "sbmil_misvm", "sbMIL's second-stage labels and scores against misvm's"
    ),
    "miles-mil": Benchmark("miles_mil", "MILES on MUSK2 against the mil package's pipeline"),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
