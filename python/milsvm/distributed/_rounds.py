"""The driver's side of a round: one task per partition, pinned to the worker holding it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid

import numpy as np

from ._partitions import PartitionLost, _restore, _round


class _Rounds:
    """The dispatcher the Rust driver calls once per round: the round sent to every
    partition's kernel as one task each, pinned to the worker that holds it (the kernel never
    moves); the replies in partition order. Counts the rounds (restore rounds included), the
    restore rounds and the bytes of the messages (round arguments sent to each partition, and
    the replies). Partitions whose pinned worker left the cluster, or that were rebuilt
    without their state, end the round with :class:`PartitionLost` naming them; the driver
    then calls :meth:`restore`, which pins the rounds to the rebuilt kernels. A
    ``KeyboardInterrupt`` while a round runs cancels its tasks and is raised."""

    def __init__(self, client, kernels, timeout, hook):
        self.client = client
        self.kernels = kernels
        self.timeout = timeout
        self.hook = hook
        self.rounds = 0
        self.restores = 0
        self.nbytes = 0
        self.where = []
        # the thread that gathers a round's replies, so that the gather has a timeout too
        self._gathering = concurrent.futures.ThreadPoolExecutor(1, "milsvm-gather")
        # the rounds' task keys are this fit's own: a key that a finished fit's round still
        # holds would otherwise hand back that round's replies
        self.token = uuid.uuid4().hex

    def place(self):
        """Waits for every kernel (rebuilt ones included) and pins the rounds to their
        workers."""
        self._wait(self.kernels, self.timeout)
        for f in self.kernels:
            if f.status == "error":
                f.result()  # raises the partition's error (bad bags)
        who = self.client.who_has(self.kernels)
        self.where = [who[k.key][0] for k in self.kernels]

    def _wait(self, futures, timeout):
        """Waits for ``futures`` on this fit's client, which need not be the default one."""
        from distributed import wait

        with self.client.as_current():
            wait(futures, timeout=timeout)

    def close(self):
        """Ends the gathering thread (after the fit)."""
        self._gathering.shutdown(wait=False)

    def _submit(self, fn, parts, name, *args):
        """One task ``fn(kernel, k, *args)`` per partition ``k`` in ``parts``, pinned to its
        worker, in partition order; the tasks of one worker are sent in one message, since a
        message per task made a round's latency grow three times as fast with the partitions
        (``benches/scale.py distributed --partitions P`` measures it)."""
        tag = f"milsvm-round-{self.token}-{self.rounds}-{name}"
        by_worker = {}
        for k in parts:
            by_worker.setdefault(self.where[k], []).append(k)
        futures = {}
        for worker, ks in by_worker.items():
            sent = self.client.map(
                fn,
                [self.kernels[k] for k in ks],
                ks,
                *([a] * len(ks) for a in args),
                key=[f"{tag}-{k}" for k in ks],
                workers=[worker],
                allow_other_workers=False,
                pure=False,
            )
            futures.update(zip(ks, sent))
        return [futures[k] for k in parts]

    def _collect(self, futures, parts, what, op):
        """The results of ``futures`` (of the partitions ``parts``), waited for in one-second
        slices, after the test hook (called with the round's number and ``op`` while its tasks
        run). Raises :class:`PartitionLost` naming the partitions whose worker left the
        cluster or that were rebuilt without their state, ``TimeoutError`` past the timeout;
        on any of these, and on ``KeyboardInterrupt``, the tasks are cancelled first."""
        deadline = time.monotonic() + self.timeout
        gathered = None
        try:
            if self.hook is not None:
                self.hook(self.rounds + 1, op)
            while True:
                slice_s = min(1.0, max(deadline - time.monotonic(), 0.01))
                try:
                    self._wait(futures, slice_s)
                    self._raise_lost_or_failed(futures, what)
                    # the replies in one gather, within the slice too: a finished task whose
                    # worker dies before its reply is read goes back to pending, pinned to the
                    # dead worker, and the gather would wait for it for ever
                    if gathered is None:
                        gathered = self._gathering.submit(self.client.gather, futures)
                    return gathered.result(timeout=slice_s)
                except (
                    TimeoutError,  # the three are distinct before Python 3.11
                    asyncio.TimeoutError,
                    concurrent.futures.TimeoutError,
                ) as exc:
                    alive = set(self.client.scheduler_info()["workers"])
                    lost = [k for k in parts if self.where[k] not in alive]
                    if lost:
                        raise PartitionLost(
                            f"the worker holding partition {lost[0]} left the cluster mid-fit "
                            f"({what})",
                            lost,
                        ) from exc
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"milsvm.distributed.fit: {what} took more than {self.timeout} s"
                        ) from exc
        except BaseException:
            self.client.cancel(futures)
            raise

    @staticmethod
    def _raise_lost_or_failed(futures, what):
        """Raises the first failed task's error, or :class:`PartitionLost` naming the
        partitions whose tasks found them rebuilt without their state."""
        lost, error = [], None
        for f in futures:
            if f.status == "error":
                exc = f.exception()
                if isinstance(exc, PartitionLost):
                    lost.extend(exc.partitions)
                elif error is None:
                    error = exc
        if error is not None:
            raise error
        if lost:
            raise PartitionLost(
                f"partitions {lost} lost their state mid-fit ({what}): their worker died and "
                "Dask rebuilt them",
                lost,
            )

    def __call__(self, seq, op, v, s):
        s = list(s)
        parts = range(len(self.kernels))
        futures = self._submit(_round, parts, f"{seq}", seq, op, v, s)
        replies = self._collect(futures, parts, f"round {seq}, {op!r}", op)
        # fresh copies: arrays unpickled from Dask's frames can be misaligned
        replies = [np.array(r, dtype=np.float64) for r in replies]
        self.rounds += 1
        self.nbytes += len(futures) * (np.asarray(v).nbytes + 8 * len(s)) + sum(
            r.nbytes for r in replies
        )
        return replies

    def restore(self, parts, seq, log):
        """The restore round: once Dask has rebuilt the lost kernels, the partitions ``parts``
        replay ``log`` (the rounds before ``seq`` that changed their state, ``(op, v, s)``)."""
        self.place()
        parts = list(parts)
        log = [(op, np.asarray(v), list(s)) for op, v, s in log]
        futures = self._submit(_restore, parts, f"restore-{seq}", seq, log)
        self._collect(futures, parts, f"the restore before round {seq}", "restore")
        self.rounds += 1
        self.restores += 1
        self.nbytes += len(parts) * sum(v.nbytes + 8 * len(s) for _, v, s in log)
