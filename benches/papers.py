#!/usr/bin/env python3
"""Reproductions of the papers' tables and figures (the modules in reproduce/), each with
the paper's protocol in its docstring."""

from _common import Benchmark, run_driver

BENCHMARKS = {
    "fu-table1": Benchmark("fu_table1", "Fu et al. 2013, Table I: SparseMI, RSVM, RS, MI-Kernel"),
    "fu-table2": Benchmark("fu_table2", "Fu et al. 2013, Table II: TST1 / TST2, sparse text"),
    "fu-figure2": Benchmark("fu_figure2", "Fu et al. 2013, Fig. 2: SparseMI on 2-D synthetic sets"),
    "fu-figure4": Benchmark("fu_figure4", "Fu et al. 2013, Fig. 4: convergence curves"),
    "gc-table2": Benchmark("gc_table2", "Gehler & Chapelle 2007, Table 2: the annealing family"),
    "gc-figure1": Benchmark(
        "gc_figure1",
        "Gehler & Chapelle 2007, Figure 1: the 2-D toy",
        smoke=("--runs", "1", "--out-prefix", "/tmp/milsvm-smoke-gc-figure1"),
    ),
    "yd-table1": Benchmark("yd_table1", "Yang & Deng, Table 1: SVM-CC with NSK and sMIL"),
    "miles": Benchmark("miles", "MILES (Chen, Bi & Wang 2006) beside the published numbers"),
    "sbmil": Benchmark("sbmil", "sbMIL and sAwMIL with sMIL, 10-fold CV"),
    "cccp": Benchmark("cccp", "stMIL and MissSVM (the CCCP estimators) with their baselines"),
}

if __name__ == "__main__":
    raise SystemExit(run_driver(__doc__, BENCHMARKS))
