"""What runs on the workers during a distributed fit: the partitions' checks, their kernels
(built once, held where they were built), and each round's call into a kernel."""

from __future__ import annotations

import numpy as np


class PartitionLost(RuntimeError):
    """Partitions lost their per-row state mid-fit: their worker died, and Dask rebuilds them
    elsewhere from their graph. :func:`fit` restores them from the fit's rounds and goes on, up
    to ``max_restores`` times; past that it raises this.

    Attributes
    ----------
    partitions : tuple of int
        The lost partitions (their indices in the collection).
    """

    def __init__(self, message, partitions=()):
        super().__init__(message)
        self.partitions = tuple(int(k) for k in partitions)

    def __reduce__(self):
        return (type(self), (str(self), self.partitions))


class _Held:
    """A partition kernel on its worker. Never pickled (it stays on its worker); its size is
    what the kernel holds (its rows, or what replaced them, and the fit's state), so that the
    worker counts its memory and the scheduler never plans to move it."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __sizeof__(self):
        return self.kernel.__sizeof__()

    def __reduce__(self):
        raise TypeError(
            "a milsvm partition stays on the worker that built it and cannot be pickled"
        )


def _partition_sizes(partition, index):
    """Runs on a worker: each bag's rows, the width and the dtype of partition ``index``,
    with the refusals of bad bags (naming the partition and the bag within it)."""
    lengths, width, dtype = [], None, None
    for j, bag in enumerate(partition):
        where = f"partition {index}, bag {j} (its index within the partition)"
        if not isinstance(bag, np.ndarray):
            raise TypeError(
                f"{where} is a {type(bag).__name__}: milsvm.distributed.fit needs NumPy arrays "
                "(dense float32 or float64, one 2-D array per bag)"
            )
        if bag.ndim != 2:
            raise ValueError(f"{where} has {bag.ndim} dimensions; a bag is a 2-D array")
        if bag.dtype not in (np.float32, np.float64):
            raise TypeError(
                f"{where} has dtype {bag.dtype}; milsvm.distributed.fit takes float32 or float64"
            )
        if bag.shape[0] == 0 or bag.shape[1] == 0:
            raise ValueError(f"{where} is empty (shape {bag.shape})")
        if width is None:
            width, dtype = bag.shape[1], bag.dtype.str
        elif bag.shape[1] != width:
            raise ValueError(f"{where} has {bag.shape[1]} features, the partition's first {width}")
        elif bag.dtype.str != dtype:
            raise TypeError(f"{where} has dtype {bag.dtype}, the partition's first bag {dtype}")
        lengths.append(bag.shape[0])
    return lengths, width, dtype


def _build_partition(partition, index, width, dtype, kind, args):
    """Runs on a worker: the kernel of partition ``index`` (``kind``: ``"annealing"`` or
    ``"sparse_mi"``; ``args``: the constructor's arguments after the rows and offsets)."""
    from .. import _core

    build = _core.Partition if kind == "annealing" else _core.Partition.sparse_mi

    bags = list(partition)
    bag_ptr = np.zeros(len(bags) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in bags], out=bag_ptr[1:])
    if bags:
        x = np.ascontiguousarray(np.concatenate(bags), dtype=dtype)
    else:
        x = np.zeros((0, width), dtype=dtype)
    del bags, partition
    try:
        # fresh copies: arrays unpickled from Dask's frames can be misaligned
        kernel = build(x, bag_ptr, *_fresh(args))
    except ValueError as exc:
        raise ValueError(f"partition {index}: {exc}") from exc
    return _Held(kernel)


def _fresh(args):
    """``args`` with every array copied (and tuples of them), afresh."""
    if isinstance(args, np.ndarray):
        return np.array(args)
    if isinstance(args, tuple):
        return tuple(_fresh(a) for a in args)
    return args


def _round(held, index, seq, op, v, s):
    """Runs on the worker holding ``held`` (partition ``index``): round ``seq`` of the fit.
    A kernel that Dask rebuilt after its worker died holds no state of the fit: it raises
    :class:`PartitionLost` naming the partition, for the driver to restore it."""
    reply = held.kernel.round(op, np.array(v, dtype=np.float64), s, seq)  # aligned (as above)
    if reply is None:
        raise PartitionLost(
            f"partition {index} lost its state before round {seq} ({op!r}): its worker died "
            "and Dask rebuilt it",
            [index],
        )
    return reply


def _restore(held, index, seq, log):
    """Runs on the worker holding ``held`` (partition ``index``): replays ``log`` (the rounds
    before ``seq`` that changed the partitions' state) on a rebuilt kernel; a kernel with its
    state is left as it is."""
    held.kernel.restore(seq, [(op, np.array(v, dtype=np.float64), s) for op, v, s in log])


def _fold_values(held, state):
    """Runs on the worker holding ``held``: the running (sum, sum of squares) of the values,
    continued from ``state`` (the width rule ``gamma="scale"`` in row order)."""
    return held.kernel.round("fold_values", np.zeros(0), list(state))
