"""Peak memory of a fit on float64 bags (RESULTS.md, "Kernel rows from their transposes, and
float64 bags read in place"): linear MISVM on 200 bags of 1,000 x 512 float64 instances
(781 MiB, generated in place, without temporaries), one positive witness per positive bag.
The driver prints the peak RSS at the end (or run it under ``/usr/bin/time -v``)::

    python benches/scale.py f64-rss

A fit that copies the bags into the core peaks near twice the data; one that reads them in
place near the data alone.
"""

import argparse
import time

import milsvm
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bags", type=int, default=200, help="number of bags (default 200)")
    ap.add_argument("--bag-size", type=int, default=1000, help="instances a bag (default 1000)")
    ap.add_argument("--features", type=int, default=512, help="features (default 512)")
    args = ap.parse_args()
    n_bags, per, d = args.bags, args.bag_size, args.features
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
