"""milsvm: multiple-instance support vector machines, with a Rust core.

Estimators follow scikit-learn's conventions and take a list of bags (2-D arrays, one per
bag, or scipy sparse matrices) or a :class:`Bags` container as ``X``.
"""

from ._bags import Bags, as_bags
from ._core import __version__
from .preprocessing import BagStandardScaler
from ._model import Model, load
from .sparse_mi import RSVM, SparseMI
from .set_kernel import NSK, MIKernel, ReducedSet, sMIL
from .annealing import ALPSVM, ALSVM, AWSVM, MISVM, miSVM
from .convex_combination import SVMCC
from .one_class import OneClassMISVM

__all__ = ["Bags", "as_bags", "BagStandardScaler", "SparseMI", "RSVM", "MIKernel", "ReducedSet", "NSK", "sMIL", "ALSVM", "AWSVM", "ALPSVM", "miSVM", "MISVM", "SVMCC", "OneClassMISVM", "Model", "load", "__version__"]
