"""milsvm: multiple-instance support vector machines, with a Rust core.

Estimators follow scikit-learn's conventions and take a list of bags (2-D arrays, one per
bag, or scipy sparse matrices) or a :class:`Bags` container as ``X``. Every estimator class
registers itself when its family module is imported below; ``__all__`` lists them from the
registry (:mod:`milsvm._registry`).
"""

from ._bags import Bags, as_bags
from ._core import __version__
from ._heatmap import write_heatmaps
from ._model import Model, load, save
from .preprocessing import BagStandardScaler

# The estimator families: importing a module registers its estimators, in this order (the order
# of __all__ and of `milsvm models`).
# isort: off
from .sparse_mi import *  # noqa: F401,F403
from .set_kernel import *  # noqa: F401,F403
from .set_kernel_svm import *  # noqa: F401,F403
from .annealing import *  # noqa: F401,F403
from .convex_combination import *  # noqa: F401,F403
from .semi_supervised import *  # noqa: F401,F403
from .one_class import *  # noqa: F401,F403
from .baselines import *  # noqa: F401,F403
from .miles import *  # noqa: F401,F403
from .two_stage import *  # noqa: F401,F403
from ._registry import ESTIMATORS as _ESTIMATORS
# isort: on

__all__ = [
    "Bags",
    "as_bags",
    "BagStandardScaler",
    *_ESTIMATORS,
    "Model",
    "load",
    "save",
    "write_heatmaps",
    "__version__",
]
