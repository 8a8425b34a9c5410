"""One fit, and the scoring of large bag collections, on a Dask cluster.

A single milsvm fit or prediction already uses every local core (``n_jobs``). This module is
for the case where the *collection* is the problem: more bags than fit in one process's memory,
bags that live in many files, or a cluster that should share the work.

* :func:`fit` fits one estimator on bags held by the workers: each partition of a
  :class:`dask.bag.Bag` of bags stays on the worker that loaded it, and the driver runs the
  solver's outer logic, one round of per-partition partial sums per pass over the data. The
  model is bit for bit the model of ``estimator.fit(list_of_bags, y)``.
* :func:`score_bags` maps a fitted estimator over the partitions of a :class:`dask.bag.Bag`
  whose elements are bags, so each task makes one vectorised call (``decision_function``,
  ``predict``, ...) on a whole partition.

Cross-validation and grid searches need nothing from this module: scikit-learn's
``GridSearchCV(n_jobs=...)`` and ``cross_val_score(n_jobs=...)`` run milsvm estimators in
parallel through joblib, and ``with joblib.parallel_backend("dask"):`` sends the same fits to a
Dask cluster (see the README, "Scale-out").

Dask is an optional dependency: ``pip install milsvm[dask]`` (``dask[bag]`` and
``distributed``). It is imported when a function of this module is called, not when the module
is imported.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import numpy as np
import scipy.sparse as sp

__all__ = ["PartitionLost", "fit", "score_bags"]

_INSTALL_HINT = (
    "milsvm.distributed needs dask (dask[bag]) and distributed; install them with "
    "`pip install milsvm[dask]`"
)


def _import_dask():
    """Import dask and dask.bag, or raise an ImportError saying how to install them."""
    try:
        import dask
        import dask.bag as db
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return dask, db


def _score_partition(partition, model, method):
    """Apply ``model.<method>`` to the bags of one partition; one result per bag, in order.

    Runs on the workers. An empty partition gives an empty list without calling the model
    (estimators reject empty inputs).
    """
    bags = list(partition)
    if not bags:
        return []
    out = np.asarray(getattr(model, method)(bags))
    if out.ndim == 0 or out.shape[0] != len(bags):
        raise ValueError(
            f"{type(model).__name__}.{method} returned shape {out.shape} for a partition of "
            f"{len(bags)} bags; score_bags needs one result per bag"
        )
    # A list of rows: a Bag's partitions are sequences, and this keeps per-bag elements.
    return list(out)


def score_bags(
    model,
    bags,
    *,
    method="decision_function",
    partition_size=None,
    npartitions=None,
    compute=True,
):
    """Score a (large) collection of bags with a fitted estimator, partition by partition.

    The model is sent to the workers once (wrapped in :func:`dask.delayed`) and applied to every
    partition in one call, so the per-call cost of the Rust core is paid per partition, not per
    bag. The work runs on the active Dask scheduler: a :class:`distributed.Client` if one is
    active (e.g. on a :class:`distributed.LocalCluster`), otherwise Dask's local scheduler.

    Parameters
    ----------
    model : fitted estimator
        A fitted milsvm estimator, or a fitted scikit-learn pipeline ending in one. It must be
        picklable when the scheduler uses processes or remote workers (milsvm estimators are).
    bags : dask.bag.Bag or sequence of bags
        The bags to score: a :class:`dask.bag.Bag` whose elements are bags (2-D arrays or scipy
        sparse matrices, ``n_instances x n_features``), e.g. built lazily from files with
        ``dask.bag.from_sequence(paths).map(load_one_bag)``; or an in-memory sequence of bags
        (a list, or :class:`milsvm.Bags`), which is split with
        :func:`dask.bag.from_sequence`.
    method : str, default="decision_function"
        The estimator method to apply, one that takes a list of bags and returns one result per
        bag: ``"decision_function"``, ``"predict"``, ``"predict_proba"``, ...
    partition_size : int, optional
        Bags per partition when ``bags`` is a sequence (see :func:`dask.bag.from_sequence`).
        Ignored, like ``npartitions``, when ``bags`` is already a :class:`dask.bag.Bag`.
    npartitions : int, optional
        Number of partitions when ``bags`` is a sequence. With neither option given, Dask's
        default applies (about 100 partitions).
    compute : bool, default=True
        If True, compute and return a numpy array. If False, return the lazy
        :class:`dask.bag.Bag` of per-bag results (e.g. to write it out with ``to_textfiles`` or
        to combine it with other Dask work before computing).

    Returns
    -------
    scores : ndarray of shape (n_bags,) or (n_bags, n_outputs), or dask.bag.Bag
        With ``compute=True``, the results in the order of ``bags``: exactly what
        ``getattr(model, method)(list_of_all_bags)`` returns. With ``compute=False``, a Bag with
        one element per input bag (a scalar or a 1-D row), partitioned like the input.

    Raises
    ------
    ImportError
        If dask is not installed (``pip install milsvm[dask]``).
    ValueError
        If ``method`` is not a method of ``model``, or if the partition options are invalid.
    sklearn.exceptions.NotFittedError
        If ``model`` is not fitted.

    Examples
    --------
    >>> import dask.bag as db                                    # doctest: +SKIP
    >>> from distributed import Client, LocalCluster             # doctest: +SKIP
    >>> from milsvm.distributed import score_bags                # doctest: +SKIP
    >>> clf = milsvm.NSK().fit(train_bags, y_train)              # doctest: +SKIP
    >>> with LocalCluster(n_workers=4) as cluster, Client(cluster):   # doctest: +SKIP
    ...     scores = score_bags(clf, db.from_sequence(paths).map(np.load))
    """
    from sklearn.utils.validation import check_is_fitted

    dask, db = _import_dask()

    if not isinstance(method, str):
        raise ValueError(f"method must be the name of an estimator method, got {method!r}")
    if not callable(getattr(model, method, None)):
        raise ValueError(f"{type(model).__name__} has no method {method!r}")
    check_is_fitted(model)

    if isinstance(bags, db.Bag):
        collection = bags
    else:
        for opt_name, opt in (("partition_size", partition_size), ("npartitions", npartitions)):
            if opt is not None and (
                isinstance(opt, bool) or not isinstance(opt, (int, np.integer)) or opt < 1
            ):
                raise ValueError(f"{opt_name} must be None or a positive integer, got {opt!r}")
        bag_list = list(bags)
        if not bag_list:
            raise ValueError("bags is empty: there is nothing to score")
        collection = db.from_sequence(
            bag_list, partition_size=partition_size, npartitions=npartitions
        )

    # One copy of the model in the graph, shared by every partition's task.
    shared_model = dask.delayed(model, pure=True, traverse=False)
    scored = collection.map_partitions(_score_partition, shared_model, method)
    if not compute:
        return scored
    (results,) = dask.compute(scored)
    if not results:
        raise ValueError("the bag collection is empty: there is nothing to score")
    return np.asarray(results)


#: The annealing estimators :func:`fit` supports (with ``kernel="linear"``).
SUPPORTED = ("miSVM", "MISVM", "ALSVM", "AWSVM", "ALPSVM")

#: The label-mean estimators :func:`fit` supports (direct or basis-vector mode; any kernel).
SUPPORTED_SPARSE_MI = ("SparseMI", "RSVM")

#: What :func:`fit` supports, as its ``NotImplementedError`` names it.
SUPPORTED_TEXT = (
    ", ".join(f"{s}(kernel='linear')" for s in SUPPORTED)
    + ", and SparseMI and RSVM in direct or basis-vector mode (n_basis; init 'random' or a "
    "dense array, gamma a number or 'scale')"
)

#: Seconds a round may take before :func:`fit` gives up (``timeout=None`` in :func:`fit`).
DEFAULT_ROUND_TIMEOUT = 600.0


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
    its rows', so that the scheduler never plans to move it."""

    def __init__(self, kernel, nbytes):
        self.kernel = kernel
        self.nbytes = nbytes

    def __sizeof__(self):
        return self.nbytes

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
    from . import _core

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
    return _Held(kernel, x.nbytes)


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
        # the rounds' task keys are this fit's own: a key that a finished fit's round still
        # holds would otherwise hand back that round's replies
        self.token = uuid.uuid4().hex

    def place(self):
        """Waits for every kernel (rebuilt ones included) and pins the rounds to their
        workers."""
        from distributed import wait

        wait(self.kernels, timeout=self.timeout)
        for f in self.kernels:
            if f.status == "error":
                f.result()  # raises the partition's error (bad bags)
        who = self.client.who_has(self.kernels)
        self.where = [who[k.key][0] for k in self.kernels]

    def _submit(self, fn, parts, name, *args):
        """One task ``fn(kernel, k, *args)`` per partition ``k`` in ``parts``, pinned to its
        worker."""
        tag = f"milsvm-round-{self.token}-{self.rounds}-{name}"
        return [
            self.client.submit(
                fn,
                self.kernels[k],
                k,
                *args,
                key=f"{tag}-{k}",
                workers=[self.where[k]],
                allow_other_workers=False,
                pure=False,
            )
            for k in parts
        ]

    def _collect(self, futures, parts, what, op):
        """The results of ``futures`` (of the partitions ``parts``), waited for in one-second
        slices, after the test hook (called with the round's number and ``op`` while its tasks
        run). Raises :class:`PartitionLost` naming the partitions whose worker left the
        cluster or that were rebuilt without their state, ``TimeoutError`` past the timeout;
        on any of these, and on ``KeyboardInterrupt``, the tasks are cancelled first."""
        from distributed import wait

        deadline = time.monotonic() + self.timeout
        try:
            if self.hook is not None:
                self.hook(self.rounds + 1, op)
            while True:
                slice_s = min(1.0, max(deadline - time.monotonic(), 0.01))
                try:
                    wait(futures, timeout=slice_s)
                    self._raise_lost_or_failed(futures, what)
                    # each result within the slice too: a finished task whose worker dies
                    # before its result is read goes back to pending, pinned to the dead worker
                    return [f.result(timeout=slice_s) for f in futures]
                except (TimeoutError, asyncio.TimeoutError) as exc:  # distinct before 3.11
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


def _check_supported(estimator):
    """NotImplementedError unless ``estimator`` takes the distributed route; its kind
    (``"annealing"`` or ``"sparse_mi"``)."""
    name = type(estimator).__name__
    supported = SUPPORTED_TEXT
    params = estimator.get_params(deep=False) if hasattr(estimator, "get_params") else {}
    module = type(estimator).__module__
    if name in SUPPORTED and module == "milsvm.annealing":
        kind = "annealing"
    elif name in SUPPORTED_SPARSE_MI and module == "milsvm.sparse_mi":
        kind = "sparse_mi"
    else:
        raise NotImplementedError(f"milsvm.distributed.fit supports {supported}; got {name}")
    unsupported = []
    if kind == "annealing":
        if params.get("kernel") != "linear":
            unsupported.append(f"kernel={params.get('kernel')!r}")
        if params.get("solver") == "kernel":
            unsupported.append("solver='kernel'")
        if params.get("n_xv") not in ("auto", None) or not isinstance(params.get("xv_init"), str):
            unsupported.append("a reduced basis (n_xv / xv_init)")
    else:
        init = params.get("init", "random")
        if isinstance(init, str) and init != "random":
            unsupported.append(f"init={init!r}")
        elif sp.issparse(init) and params.get("n_basis") is not None:
            unsupported.append("n_basis with init as a sparse matrix")
    if params.get("probability"):
        unsupported.append("probability=True")
    gamma = params.get("gamma")
    if isinstance(gamma, str) and gamma != "scale":
        unsupported.append(f"gamma={gamma!r}")
    if unsupported:
        raise NotImplementedError(
            f"milsvm.distributed.fit supports {supported}; "
            f"{name} with {', '.join(unsupported)} is not supported"
        )
    return kind


def fit(estimator, bags, y, *, client=None, timeout=None, max_restores=3, _round_hook=None):
    """Fit ``estimator`` on bags held by the workers of a Dask cluster: one fit, data in place.

    The partitions of ``bags`` are loaded on the workers and stay there, each in a partition
    kernel (its rows in float32 or float64, as given, and the per-row state of the fit). The
    driver (this process) runs the solver's outer logic on ``d``-vectors and scalars: each pass
    over the data is one round of one task per partition, run by the worker that holds it, whose
    reply is that partition's part of every sum (nodes of the fixed summation tree over the
    bags). The fitted model is bit for bit the model of ``estimator.fit(list_of_bags, y)``, for
    any number of partitions and workers.

    Supported: :class:`milsvm.miSVM`, :class:`milsvm.MISVM`, :class:`milsvm.ALSVM`,
    :class:`milsvm.AWSVM` and :class:`milsvm.ALPSVM` with ``kernel="linear"`` (the linear
    solver), two classes; :class:`milsvm.SparseMI` and :class:`milsvm.RSVM` in direct mode
    or basis-vector mode (``n_basis``), ``init="random"`` or a dense array, any kernel, two or
    more classes (each round replies the partition's rows of the bag-mean kernel matrix, or its
    nodes of the gradient's data term; in basis-vector mode one first round turns every
    partition's rows into their ``n_basis`` products with the basis vectors, and the rounds
    after it carry ``n_basis``-vectors). ``gamma`` a number or ``"scale"`` (recorded in
    ``gamma_``; the linear kernel does not use it). The others raise ``NotImplementedError``.

    Parameters
    ----------
    estimator : miSVM, MISVM, ALSVM, AWSVM, ALPSVM, SparseMI or RSVM
        The estimator to fit (its parameters as set); it is fitted in place and returned.
    bags : dask.bag.Bag
        One element per bag, in the order of ``y``: a 2-D NumPy array (``n_instances x
        n_features``, float32 or float64; every bag of one dtype and width). A bag never crosses
        a partition. Empty partitions are allowed. The collection is computed twice: once for
        the bags' sizes, once to load the partitions into their kernels (persist it, or build it
        from cheap loaders, e.g. ``dask.bag.from_sequence(paths).map(np.load)``).
    y : array-like of shape (n_bags,)
        Two labels (``classes_[1]`` is positive); SparseMI and RSVM take more (one-vs-rest
        problems that share the expansion vectors).
    client : distributed.Client, optional
        The client of the cluster (default: the current one, ``distributed.get_client()``).
    timeout : float, optional
        Seconds a round may take (default ``DEFAULT_ROUND_TIMEOUT``, 600); beyond it the fit
        raises ``TimeoutError`` instead of waiting for lost or busy workers.
    max_restores : int, default=3
        How many restore rounds the fit may send when workers holding partitions are lost
        mid-fit. Dask rebuilds a lost partition from its graph on another worker, with its
        rows but without the fit's per-row state; that state is a cache that the driver
        rebuilds: it keeps the rounds that changed the state, and one restore round replays
        them on the rebuilt partitions only (on their workers, no other partition is touched),
        then the interrupted round is sent again (a partition that had answered it replies
        from its copy). The fit goes on and ends at the same bits as an undisturbed fit. A
        loss costs one restore round and the interrupted round, and the rebuilt partitions'
        replay of the state-changing rounds since the start of the fit (computation on their
        workers; the message is ``d``-vectors and scalars per replayed round). With ``0`` a
        lost partition raises :class:`PartitionLost`.

    Returns
    -------
    estimator
        The estimator, fitted: an ordinary fitted estimator (``predict``, ``decision_function``,
        ``save``, ``explain``, ...). Besides the fitted attributes of the estimator, it records:

        - ``distributed_rounds_`` (int): the rounds of per-partition tasks, restore rounds
          included;
        - ``distributed_bytes_`` (int): the bytes of the rounds' messages, driver to every
          partition and back (round arguments and replies; the labels ``p_`` gathered once at
          the end included; Dask's own protocol not included);
        - ``distributed_partitions_`` (int): the partitions;
        - ``distributed_restores_`` (int): the restore rounds after lost partitions (also
          counted in ``distributed_rounds_`` and, with the replayed rounds they carry, in
          ``distributed_bytes_``).

        The estimator's ``verbose`` reports the fit's progress as its in-process fit does (a
        bar on a terminal, one line per outer step with ``verbose=2``). A ``KeyboardInterrupt``
        (Ctrl-C) cancels the round's tasks, releases the partitions and is raised; the
        estimator is left as it was (nothing of the interrupted fit is installed).

    Raises
    ------
    NotImplementedError
        An unsupported estimator or configuration (the message names the supported ones).
    TypeError
        ``bags`` is not a :class:`dask.bag.Bag`, or a bag is not a float32 / float64 NumPy
        array, or the bags' dtypes differ.
    ValueError
        A bag that is not 2-D or is empty, widths that differ, a label count other than the
        number of bags, a non-finite value, or a collection without bags (the message names
        the partition and the bag).
    PartitionLost
        Partitions lost mid-fit once ``max_restores`` restore rounds are spent.
    TimeoutError
        A round took longer than ``timeout``.

    Examples
    --------
    >>> from distributed import Client, LocalCluster                  # doctest: +SKIP
    >>> import dask.bag as db                                         # doctest: +SKIP
    >>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
    ...     clf = milsvm.distributed.fit(
    ...         milsvm.MISVM(kernel="linear"), db.from_sequence(bags, npartitions=8), y
    ...     )                                                         # doctest: +SKIP
    """
    import types

    import dask

    _import_dask()
    import dask.bag as db
    from distributed import get_client

    from . import _core
    from ._inputs import _check_verbose, encode_labels
    from ._progress import FitProgress

    start = time.perf_counter()
    kind = _check_supported(estimator)
    if not isinstance(bags, db.Bag):
        raise TypeError(
            f"bags must be a dask.bag.Bag of 2-D arrays (one element per bag), got "
            f"{type(bags).__name__}"
        )
    if (
        isinstance(max_restores, bool)
        or not isinstance(max_restores, (int, np.integer))
        or max_restores < 0
    ):
        raise ValueError(f"max_restores must be an integer >= 0, got {max_restores!r}")
    verbose = getattr(estimator, "verbose", 0)
    _check_verbose(verbose)
    timeout = DEFAULT_ROUND_TIMEOUT if timeout is None else float(timeout)
    if not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    client = get_client() if client is None else client
    name = type(estimator).__name__

    parts = bags.to_delayed()
    sizes = client.gather(
        client.compute([dask.delayed(_partition_sizes)(p, k) for k, p in enumerate(parts)])
    )
    widths = {k: w for k, (_, w, _) in enumerate(sizes) if w is not None}
    if not widths:
        raise ValueError("the bag collection holds no bags")
    if len(set(widths.values())) > 1:
        first = next(iter(widths))
        other = next(k for k, w in widths.items() if w != widths[first])
        raise ValueError(
            f"the bags' widths differ across partitions: partition {first} has "
            f"{widths[first]} features, partition {other} {widths[other]}"
        )
    dtypes = {dt for _, w, dt in sizes if w is not None}
    if len(dtypes) > 1:
        raise TypeError(
            f"the bags' dtypes differ across partitions ({', '.join(sorted(dtypes))}); give "
            "every bag as float32, or every bag as float64"
        )
    width, dtype = next(iter(widths.values())), np.dtype(dtypes.pop())
    lengths = [n for ls, _, _ in sizes for n in ls]
    n_bags = len(lengths)
    bag_ptr = np.zeros(n_bags + 1, dtype=np.int64)
    np.cumsum(lengths, out=bag_ptr[1:])
    classes, labels = encode_labels(y, n_bags, multiclass=True, name=name)
    if len(classes) != 2 and kind == "annealing":
        raise NotImplementedError(
            f"milsvm.distributed.fit fits {name} on two classes; y holds {len(classes)}"
        )
    job_bags = types.SimpleNamespace(
        bag_ptr=bag_ptr, dtype=dtype, n_features=width, is_sparse=False
    )
    # the bags' shape only: SparseMI checks a given init against the width
    params = estimator._core_params(job_bags if kind == "sparse_mi" else None, classes, labels)
    offsets = np.cumsum([0] + [len(ls) for ls, _, _ in sizes])
    targets, costs = _core.distributed_problems(kind, labels, params)
    if kind == "annealing":
        args = [
            (int(lo), n_bags, targets[0, lo:hi], costs[0, lo:hi], params)
            for lo, hi in zip(offsets[:-1], offsets[1:])
        ]
    else:
        args = [
            ((int(lo), n_bags, int(bag_ptr[lo])), (targets[:, lo:hi], costs[:, lo:hi]), params)
            for lo, hi in zip(offsets[:-1], offsets[1:])
        ]
    kernels = client.compute(
        [
            dask.delayed(_build_partition, pure=False)(p, k, width, dtype.str, kind, a)
            for k, (p, a) in enumerate(zip(parts, args))
        ]
    )
    rounds = _Rounds(client, kernels, timeout, _round_hook)
    n_problems = 1 if len(classes) == 2 else len(classes)
    total = estimator._progress_total(params) * n_problems
    try:
        rounds.place()
        gamma = _gamma(estimator.gamma, client, kernels, rounds.where, bag_ptr[-1], width, timeout)
        with FitProgress(name, int(verbose), estimator._progress_unit, total) as progress:
            try:
                fit = _core.distributed_fit(
                    kind,
                    rounds,
                    bag_ptr,
                    labels,
                    params,
                    width,
                    gamma,
                    int(max_restores),
                    progress.callback(),
                )
            except PartitionLost as exc:
                raise PartitionLost(
                    f"{exc}; no restore round is left (max_restores={max_restores}, "
                    f"{rounds.restores} sent)",
                    exc.partitions,
                ) from exc
    finally:
        for f in kernels:
            f.release()
    job = {
        "name": name,
        "verbose": int(verbose),
        "bags": job_bags,
        "classes": classes,
        "labels": labels,
        "probability": False,
        "params": params,
    }
    estimator._install(job, fit, time.perf_counter() - start)
    estimator._warn_unconverged(fit)
    estimator.distributed_rounds_ = rounds.rounds
    estimator.distributed_bytes_ = int(rounds.nbytes)
    estimator.distributed_partitions_ = len(kernels)
    estimator.distributed_restores_ = rounds.restores
    if verbose:
        print(f"[{name}] {estimator._fit_summary()}, {estimator.fit_time_:.3f} s")
    return estimator


def _gamma(gamma, client, kernels, workers, n_rows, width, timeout):
    """The width the in-process fit records: a number as given, or ``"scale"``'s
    ``1 / (d var)`` over every value, summed in row order (partition after partition)."""
    if not isinstance(gamma, str):
        return float(gamma)
    state = (0.0, 0.0)
    for k, where in zip(kernels, workers):
        state = tuple(
            client.submit(_fold_values, k, state, workers=[where], pure=False).result(
                timeout=timeout
            )
        )
    n = float(n_rows * width)
    mean = state[0] / n
    var = max(state[1] / n - mean * mean, 0.0)
    return 1.0 / (width * var) if var > 0.0 else 1.0
