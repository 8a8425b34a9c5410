"""SIGINT latency: how long a long fit takes to stop after Ctrl-C.

A child process fits an estimator on MUSK2 (features standardised) and prints the wall-clock
time when ``KeyboardInterrupt`` reaches it; the parent sends SIGINT after a delay and records
the time it sent it. The latency is the difference (one machine clock, ``time.time()``), over
several delays, so that the signal lands in different phases of the fit (Gram rows, SMO
iterations, probability updates).

    python benches/serving.py sigint                       # ALPSVM(C=10, gamma="median"), 8 delays
    python benches/serving.py sigint --estimator "NSK(C=10)" --delays 0.3 0.6 1.0

Output: one line per delay and the largest latency.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import data_dir  # noqa: E402

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import milsvm
    from milsvm.datasets import load_mill
    bags, y = load_mill(sys.argv[1])
    bags = milsvm.BagStandardScaler().fit_transform(bags)
    est = eval("milsvm." + sys.argv[2])
    print("start", flush=True)
    t0 = time.time()
    try:
        est.fit(bags, y)
        print("finished", time.time() - t0, flush=True)
    except KeyboardInterrupt:
        print(
            "interrupted",
            time.time(),
            "fitted" if "model_" in est.__dict__ else "unfitted",
            flush=True,
        )
""")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=data_dir() / "musk2" / "musk2.data")
    ap.add_argument("--estimator", default='ALPSVM(C=10, gamma="median")')
    ap.add_argument(
        "--delays", type=float, nargs="+", default=[0.5, 0.9, 1.3, 1.7, 2.1, 2.5, 2.9, 3.3]
    )
    args = ap.parse_args(argv)
    worst = 0.0
    for delay in args.delays:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(args.data), args.estimator],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc.stdout.readline()  # "start"
        time.sleep(delay)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate()
        fields = out.split()
        if fields and fields[0] == "interrupted":
            latency = float(fields[1]) - sent
            worst = max(worst, latency)
            print(
                f"SIGINT after {delay:.1f} s: KeyboardInterrupt {1000 * latency:.1f} ms later, "
                f"estimator {fields[2]}"
            )
        else:
            print(f"SIGINT after {delay:.1f} s: no interrupt ({out.strip()} {err.strip()[-200:]})")
    print(f"largest latency: {1000 * worst:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
