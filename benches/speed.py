#!/usr/bin/env python3
"""Speed against reference computations: NumPy, libsvm, the loops users write around
scikit-learn, and milsvm's own routes against each other."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "numpy": Benchmark("speed_numpy", "SparseMI fit and scoring against the NumPy reference"),
    "smo": Benchmark(
        "smo_libsvm",
        "the SMO against libsvm on the same kernel matrix",
        smoke=("--n", "500", "--C", "1", "--repeats", "1", "--out", "/tmp/milsvm-smoke-smo.txt"),
    ),
    "nsk": Benchmark("nsk_diy", "NSK on MUSK2 against the set kernel by hand + SVC(precomputed)"),
    "annealing": Benchmark(
        "annealing_speed", "the annealing family against the mi-SVM loop around SVC"
    ),
    "diy-misvm": Benchmark(
        "diy_misvm", "the mi-SVM loop around SVC alone (the baseline of 'annealing')"
    ),
    "linear-route": Benchmark(
        "linear_route", "linear route against the kernel route and LinearSVC loops"
    ),
    "linear-standardised": Benchmark(
        "linear_route_standardised", "both linear routes on the standardised benchmark sets"
    ),
    "sparse": Benchmark("sparse_tst1", "SparseMI on sparse TST1 against densified input"),
    "c-path": Benchmark(
        "c_path",
        "a warm-started C path against independent fits",
        smoke=("--datasets", "musk1", "--estimators", "SIL", "--parts", "fits"),
    ),
    "miles-solver": Benchmark("miles_solver", "MILES's 1-norm solver against HiGHS and LIBLINEAR"),
    "threads": Benchmark(
        "threads",
        "linear MISVM / miSVM on 1 and 2 threads against the machine's plain read",
        smoke=("--smoke",),
    ),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
