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

from ._fit import DEFAULT_ROUND_TIMEOUT as DEFAULT_ROUND_TIMEOUT
from ._fit import SUPPORTED as SUPPORTED
from ._fit import SUPPORTED_SPARSE_MI as SUPPORTED_SPARSE_MI
from ._fit import SUPPORTED_TEXT as SUPPORTED_TEXT
from ._fit import fit
from ._partitions import PartitionLost
from ._scoring import score_bags

__all__ = ["PartitionLost", "fit", "score_bags"]

# the public objects are documented, pickled and shown under the package's name
for _public in (PartitionLost, fit, score_bags):
    _public.__module__ = __name__
del _public
