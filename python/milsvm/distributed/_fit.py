"""One fit on bags held by the workers of a Dask cluster (:func:`fit`)."""

from __future__ import annotations

import time

import numpy as np

from ._dask import import_dask
from ._partitions import PartitionLost, _build_partition, _fold_values, _partition_sizes
from ._rounds import _Rounds

#: The annealing estimators :func:`fit` supports (with ``kernel="linear"``).
SUPPORTED = ("miSVM", "MISVM", "ALSVM", "AWSVM", "ALPSVM")

#: The label-mean estimators :func:`fit` supports (direct or basis-vector mode; any kernel).
SUPPORTED_SPARSE_MI = ("SparseMI", "RSVM")

#: What :func:`fit` supports, as its ``NotImplementedError`` names it.
SUPPORTED_TEXT = (
    ", ".join(f"{s}(kernel='linear')" for s in SUPPORTED)
    + ", and SparseMI and RSVM in direct or basis-vector mode (n_basis; init 'random' or an "
    "array, dense or sparse; gamma a number or 'scale')"
)

#: Seconds a round may take before :func:`fit` gives up (``timeout=None`` in :func:`fit`).
DEFAULT_ROUND_TIMEOUT = 600.0


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
    or basis-vector mode (``n_basis``), ``init="random"`` or an array (dense, or sparse: a
    sparse basis is multiplied as the fit in one process multiplies it), any kernel, two or
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

    import_dask()
    import dask.bag as db
    from distributed import get_client

    from .. import _core
    from .._inputs import _check_verbose, encode_labels
    from .._progress import FitProgress

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
    sizes, width, dtype = _collection_shape(client, parts)
    n_bags = sum(len(ls) for ls, _, _ in sizes)
    bag_ptr = np.zeros(n_bags + 1, dtype=np.int64)
    np.cumsum([n for ls, _, _ in sizes for n in ls], out=bag_ptr[1:])
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
    targets, costs = _core.distributed_problems(kind, labels, params)
    args = _partition_args(kind, [len(ls) for ls, _, _ in sizes], bag_ptr, targets, costs, params)
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
        rounds.close()
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


def _collection_shape(client, parts):
    """Each partition's bag lengths (checked on its worker, :func:`_partition_sizes`), and the
    collection's width and dtype; ``ValueError`` / ``TypeError`` when it holds no bags, or when
    the partitions' widths or dtypes differ."""
    import dask

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
    return sizes, next(iter(widths.values())), np.dtype(dtypes.pop())


def _partition_args(kind, counts, bag_ptr, targets, costs, params):
    """The constructor arguments of each partition's kernel after its rows (``counts``: the
    partitions' numbers of bags): where its bags start, and their targets and costs (one
    problem for the annealing methods, one per problem for SparseMI)."""
    n_bags = len(bag_ptr) - 1
    offsets = np.cumsum([0, *counts])
    if kind == "annealing":
        return [
            (int(lo), n_bags, targets[0, lo:hi], costs[0, lo:hi], params)
            for lo, hi in zip(offsets[:-1], offsets[1:])
        ]
    return [
        ((int(lo), n_bags, int(bag_ptr[lo])), (targets[:, lo:hi], costs[:, lo:hi]), params)
        for lo, hi in zip(offsets[:-1], offsets[1:])
    ]


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
