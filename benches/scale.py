#!/usr/bin/env python3
"""Scale and memory: fits on pathology-sized embedding bags, every estimator's defaults,
the peak RSS of float64 input, one fit on a Dask cluster, a folder of slides."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "deep": Benchmark(
        "deep_scale", "float32 embedding bags up to millions of instances (make, fit, run)"
    ),
    "defaults": Benchmark(
        "defaults",
        "every estimator at its defaults on 10,000 instances",
        smoke=("--only", "SparseMI", "--out", "/tmp/milsvm-smoke-defaults.txt"),
    ),
    "f64-rss": Benchmark(
        "f64_rss",
        "peak RSS of a linear fit on 781 MiB of float64 bags",
        smoke=("--bags", "20", "--bag-size", "100", "--features", "32"),
    ),
    "distributed": Benchmark(
        "distributed_fit",
        "one fit (linear MISVM, --estimator SparseMI) on a Dask LocalCluster: rounds, bytes, "
        "workers' peak memory",
        smoke=("--bags", "8", "--bag-size", "20", "--features", "16", "--compare"),
    ),
    "slides": Benchmark("slides", "a synthetic CLAM folder: patient-level CV, heatmaps, report"),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
