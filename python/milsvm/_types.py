"""The type aliases of the values that cross into the compiled core (``milsvm._core``), named
once: its generated stub ``_core.pyi`` imports them."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import numpy as np
from numpy.typing import NDArray

__all__ = ["Progress", "Instances", "CsrParts", "Params", "Specs"]

#: ``progress(problem, step, max_steps, objective, temperature, expected_steps)``, called at
#: every step of a fit.
Progress = Callable[..., None]
#: Stacked instances: a 2-D float64 (or float32) array, or a CSR tuple
#: ``(data, indices, indptr, n_cols)``.
Instances = Union[
    NDArray[np.float64],
    NDArray[np.float32],
    tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int],
]
#: A CSR basis as a model returns it: ``(data, indices, indptr, (n_rows, n_cols))``.
CsrParts = tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], tuple[int, int]]
#: Hyperparameters by the name the Python estimators use (values as they take them).
Params = dict[str, Any]
#: ``(name, default, range)`` of each declared hyperparameter; ``range``: the allowed values of a
#: numeric parameter in words ("be a finite number > 0", "lie in (0, 1)"), or None.
Specs = list[tuple[str, Any, Optional[str]]]
