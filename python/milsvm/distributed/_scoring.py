"""Scoring a large collection of bags, partition by partition (:func:`score_bags`)."""

from __future__ import annotations

import numpy as np

from ._dask import import_dask


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

    dask, db = import_dask()

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
