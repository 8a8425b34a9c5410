"""Peak memory of a fit on float64 bags (RESULTS.md, "Kernel rows from their transposes, and
float64 bags read in place"): linear MISVM on 200 bags of 1,000 x 512 float64 instances
(781 MiB, generated in place, without temporaries), one positive witness per positive bag.
Run it under ``/usr/bin/time -v`` for the peak RSS::

    /usr/bin/time -v python benches/bench_f64_rss.py

A fit that copies the bags into the core peaks near twice the data; one that reads them in
place near the data alone.
"""

import time

import milsvm
import numpy as np


def main():
    n_bags, per, d = 200, 1000, 512
    X = np.random.default_rng(0).standard_normal((n_bags * per, d))
    y = np.arange(n_bags) % 2
    for i in np.flatnonzero(y):
        X[i * per, :8] += 3.0
    bags = milsvm.Bags.from_instances(X, [per] * n_bags)
    start = time.perf_counter()
    est = milsvm.MISVM(kernel="linear", C=1.0).fit(bags, y)
    print(
        f"data {X.nbytes / 2**20:.0f} MiB, fit {time.perf_counter() - start:.1f} s, "
        f"training accuracy {np.mean(est.predict(bags) == y):.3f}"
    )


if __name__ == "__main__":
    main()
