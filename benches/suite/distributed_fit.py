"""One fit on a Dask ``LocalCluster`` (:func:`milsvm.distributed.fit`; linear MISVM, or
``--estimator SparseMI``, RBF, 10 expansion vectors): its rounds, the bytes of its messages,
the rounds by kind (the solver's call each answers), each worker's peak memory against the
data it holds, and (``--compare``) the in-process fit on the same bags, for the overhead and
the equality of the models::

    python benches/scale.py distributed --bags 200 --bag-size 1000 --features 512 --workers 2
    python benches/scale.py distributed --estimator SparseMI --compare
    python benches/scale.py distributed --estimator SparseMI --n-basis 64 --compare
    python benches/scale.py distributed --bags 100 --kill-at-round 200

``--n-basis Q`` fits SparseMI in basis-vector mode over ``Q`` random basis vectors.
``--kill-at-round N`` then fits again on the same cluster and kills (SIGKILL) a worker process
holding partitions while round ``N`` runs: the recovered fit's time, rounds and restores
against the undisturbed fit's, and whether the models are bit for bit equal.

The bags are generated on the workers (bag ``i`` from the seed ``(0, i)``: standard normal
float32 rows, the first instance of every positive bag moved along 8 features), so the driver
never holds them; ``--compare`` generates the same bags here too.
"""

import argparse
import collections
import logging
import os
import resource
import signal
import time

import numpy as np


def _partition(k, per_part, bag_size, d):
    """The bags of partition ``k`` (rows float32): bag ``i`` from the seed ``(0, i)``, so the
    bags do not depend on the partitioning."""
    out = []
    for i in range(k * per_part, (k + 1) * per_part):
        x = np.random.default_rng((0, i)).standard_normal((bag_size, d), dtype=np.float32)
        if i % 2:
            x[0, :8] += 3.0
        out.append(x)
    return out


#: The estimators of ``--estimator``, as the fit takes them.
ESTIMATORS = {
    "MISVM": lambda milsvm: milsvm.MISVM(kernel="linear", C=1.0),
    "SparseMI": lambda milsvm: milsvm.SparseMI(C=1.0, random_state=0),
}


def _peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _import_milsvm():
    import milsvm  # noqa: F401


def _rss_mib():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bags", type=int, default=200, help="bags (default 200)")
    ap.add_argument("--bag-size", type=int, default=1000, help="instances a bag (default 1000)")
    ap.add_argument("--features", type=int, default=512, help="features (default 512)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument(
        "--partitions", type=int, default=None, help="partitions (default: 2 per worker)"
    )
    ap.add_argument("--threads", type=int, default=1, help="threads a worker (default 1)")
    ap.add_argument("--compare", action="store_true", help="also fit in this process, and compare")
    ap.add_argument(
        "--estimator", choices=sorted(ESTIMATORS), default="MISVM", help="the fit (default MISVM)"
    )
    ap.add_argument(
        "--kill-at-round",
        type=int,
        default=None,
        help="fit again, killing a worker while this round runs (default: no)",
    )
    ap.add_argument(
        "--n-basis",
        type=int,
        default=None,
        help="SparseMI's basis vectors (basis-vector mode; default: direct mode)",
    )
    args = ap.parse_args()
    if args.n_basis is not None and args.estimator != "SparseMI":
        raise SystemExit("--n-basis applies to --estimator SparseMI")

    import dask
    import dask.bag as db
    import distributed
    import milsvm
    from milsvm.distributed import fit

    def make():
        est = ESTIMATORS[args.estimator](milsvm)
        return est if args.n_basis is None else est.set_params(n_basis=args.n_basis)

    parts = args.partitions or 2 * args.workers
    if args.bags % parts:
        raise SystemExit(f"--bags ({args.bags}) must be a multiple of the partitions ({parts})")
    per_part, size, d = args.bags // parts, args.bag_size, args.features
    y = np.arange(args.bags) % 2
    data_mib = args.bags * size * d * 4 / 2**20
    with (
        distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        bags = db.from_delayed(
            [dask.delayed(_partition)(k, per_part, size, d) for k in range(parts)]
        )
        client.run(_import_milsvm)  # the baseline: a worker with milsvm loaded
        before = client.run(_rss_mib)
        kinds = collections.Counter()  # the rounds by the solver's call they answer
        start = time.perf_counter()
        est = fit(make(), bags, y, client=client, _round_hook=lambda n, op: kinds.update([op]))
        seconds = time.perf_counter() - start
        peaks = client.run(_peak_rss_mib)
        if args.kill_at_round is not None:
            recovered, recovered_s = _killed_fit(fit, make(), bags, y, client, args.kill_at_round)
    print(
        f"{args.estimator}"
        + ("" if args.n_basis is None else f"(n_basis={args.n_basis})")
        + f": {args.bags} bags x {size} x {d} float32 ({data_mib:.0f} MiB), "
        f"{parts} partitions on "
        f"{args.workers} workers x {args.threads} threads"
    )
    print(
        f"distributed fit {seconds:.2f} s: {est.distributed_rounds_} rounds "
        f"({seconds / est.distributed_rounds_ * 1e3:.1f} ms a round), "
        f"{est.distributed_bytes_ / 2**20:.1f} MiB of messages "
        f"({est.distributed_bytes_ / est.distributed_rounds_ / 1024:.1f} KiB a round), "
        f"{est.n_iter_} iterations"
        + (f", {est.n_solves_} solves" if hasattr(est, "n_solves_") else "")
    )
    print("  rounds by kind: " + ", ".join(f"{op} {n}" for op, n in kinds.most_common()))
    held = data_mib / args.workers
    for w in sorted(peaks):
        print(
            f"  worker {w}: RSS before {before[w]:.0f} MiB, peak {peaks[w]:.0f} MiB; peak - "
            f"before {peaks[w] - before[w]:.0f} MiB against about {held:.0f} MiB of data held "
            f"({(peaks[w] - before[w]) / held:.2f}x)"
        )
    if args.kill_at_round is not None:
        some = _partition(0, per_part, size, d)
        same = np.array_equal(
            recovered.objective_history_, est.objective_history_
        ) and np.array_equal(recovered.decision_function(some), est.decision_function(some))
        print(
            f"a worker killed in round {args.kill_at_round}: {recovered_s:.2f} s "
            f"({recovered_s / seconds:.2f}x the undisturbed fit), "
            f"{recovered.distributed_rounds_} rounds ({recovered.distributed_restores_} "
            f"restore), {recovered.distributed_bytes_ / 2**20:.1f} MiB of messages; models bit "
            f"for bit equal: {same}"
        )
    if args.compare:
        from milsvm import _core

        local_bags = [b for k in range(parts) for b in _partition(k, per_part, size, d)]
        rows_before = _core.linear_rows_read()
        start = time.perf_counter()
        local = make().fit(local_bags, y)
        local_s = time.perf_counter() - start
        # the linear solver's passes over the data (none for SparseMI)
        passes = (_core.linear_rows_read() - rows_before) / (args.bags * size)
        same = np.array_equal(
            local.decision_function(local_bags), est.decision_function(local_bags)
        ) and np.array_equal(local.objective_history_, est.objective_history_)
        print(
            f"in-process fit {local_s:.2f} s"
            + (f" ({passes:.1f} passes over the data)" if passes else "")
            + f": the distributed fit takes {seconds / local_s:.2f}x; models bit for bit equal:"
            f" {same}"
        )


def _killed_fit(fit, estimator, bags, y, client, at):
    """The fit with a worker process that holds partitions killed while round ``at`` runs;
    its seconds."""
    killed = []

    def kill(n, op):
        if n == at and not killed:
            holders = [
                w
                for w, keys in client.has_what().items()
                if any("_build_partition" in str(k) for k in keys)
            ]
            pid = client.run(os.getpid, workers=holders[:1])[holders[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(holders[0])

    client.wait_for_workers(len(client.scheduler_info()["workers"]), timeout=60)
    start = time.perf_counter()
    est = fit(estimator, bags, y, client=client, _round_hook=kill)
    seconds = time.perf_counter() - start
    if not killed:
        raise SystemExit(f"the fit ended before round {at}: no worker was killed")
    return est, seconds


if __name__ == "__main__":
    main()
