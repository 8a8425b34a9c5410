"""Type stubs of the compiled core ``milsvm._core`` (Rust, PyO3)."""

from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np
from numpy.typing import NDArray

#: ``progress(problem, step, max_steps, objective, temperature)``, called at every step of a fit.
Progress = Callable[[int, int, int, float, Optional[float]], None]
Instances = Union[NDArray[np.float64], Tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int]]

__version__: str

class Model:
    """A fitted model compiled for prediction (Rust ``milsvm::Model`` + ``Predictor``)."""

    def __init__(
        self, xv: Instances, coef: NDArray[np.float64], intercept: NDArray[np.float64], kernel: str, gamma: float,
        n_classes: int, pooling: str = "mean",
    ) -> None: ...
    @staticmethod
    def from_json(text: str) -> "Model": ...
    @staticmethod
    def load(path: Any) -> "Model": ...
    def to_json(
        self, estimator: Optional[str] = None, classes: Optional[str] = None, params: Optional[str] = None,
        info: Optional[str] = None,
    ) -> str: ...
    def decision_function(
        self, x: Instances, bag_ptr: NDArray[np.int64], n_jobs: Optional[int] = None
    ) -> NDArray[np.float64]: ...
    def decision_function_bag(self, x: NDArray[np.float64]) -> list[float]: ...
    def instance_decision_function(self, x: Instances, n_jobs: Optional[int] = None) -> NDArray[np.float64]: ...
    @property
    def xv(self) -> Union[NDArray[np.float64], Tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], Tuple[int, int]]]: ...
    @property
    def is_sparse(self) -> bool: ...
    @property
    def coef(self) -> NDArray[np.float64]: ...
    @property
    def intercept(self) -> NDArray[np.float64]: ...
    @property
    def kernel(self) -> str: ...
    @property
    def gamma(self) -> Optional[float]: ...
    @property
    def pooling(self) -> str: ...
    @property
    def n_classes(self) -> int: ...
    @property
    def n_features(self) -> int: ...
    @property
    def n_xv(self) -> int: ...
    @property
    def n_outputs(self) -> int: ...
    @property
    def estimator(self) -> Optional[str]: ...
    @property
    def classes_json(self) -> Optional[str]: ...
    @property
    def params_json(self) -> str: ...
    @property
    def info_json(self) -> str: ...

def fit_sparse_mi(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, n_xv: int, c: float, kernel: str,
    gamma: Optional[float], max_iter: int, max_line_search: int, tol: float, solver: str, seed: int,
    n_jobs: Optional[int], inner_tol: Optional[float] = None, init_xv: Optional[NDArray[np.float64]] = None,
    n_basis: Optional[int] = None, init_basis: Optional[Instances] = None, progress: Optional[Progress] = None,
) -> dict[str, Any]: ...
def kernel_bag_means(
    x: Instances, bag_ptr: NDArray[np.int64], z: NDArray[np.float64], kernel: str, gamma: float, n_jobs: Optional[int] = None
) -> Tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def kernel_basis_grad(
    x: Instances, z: NDArray[np.float64], k: NDArray[np.float64], a: NDArray[np.float64], kernel: str, gamma: float,
    n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
def solve_squared_hinge(
    k: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64], c: NDArray[np.float64], solver: str = "newton",
    tol: float = 1e-10, max_iter: int = 1000, warm_beta: Optional[NDArray[np.float64]] = None, warm_b: float = 0.0,
) -> Tuple[NDArray[np.float64], float, float, int, bool]: ...
def solve_dual(
    x: Union[NDArray[np.float64], Instances], y: NDArray[np.float64], u: NDArray[np.float64], *,
    kernel: str = "precomputed", gamma: float = 1.0, p: Optional[NDArray[np.float64]] = None,
    d: Optional[NDArray[np.float64]] = None, point: Optional[NDArray[np.int64]] = None, delta: float = 0.0,
    tol: float = 1e-3, shrinking: bool = True, cache_mb: float = 200.0, max_iter: Optional[int] = None,
    n_jobs: Optional[int] = None,
) -> Dict[str, Any]: ...
def squared_hinge_value_grad(
    k: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64], c: NDArray[np.float64], beta: NDArray[np.float64], b: float
) -> Tuple[float, NDArray[np.float64], float]: ...
def sparse_mi_objective(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], z: NDArray[np.float64], c: float, kernel: str,
    gamma: float, solver: str = "newton", inner_tol: float = 1e-12,
) -> Tuple[float, NDArray[np.float64]]: ...
def fit_mi_kernel(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, c: float, kernel: str,
    gamma: Optional[float], solver: str, n_jobs: Optional[int],
) -> dict[str, Any]: ...
def mi_kernel_decision_function(
    x: Instances, bag_ptr: NDArray[np.int64], train_x: Instances, train_bag_ptr: NDArray[np.int64],
    coef: NDArray[np.float64], intercept: NDArray[np.float64], kernel: str, gamma: float, n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
def set_kernel_matrix(
    x: Instances, bag_ptr: NDArray[np.int64], x2: Instances, bag_ptr2: NDArray[np.int64], kernel: str, gamma: float,
    n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
def fit_reduced_set(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, n_xv: int, c: float, kernel: str,
    gamma: Optional[float], max_fixed_point_iter: int, n_restarts: int, solver: str, seed: int, n_jobs: Optional[int],
    tol: float = 1e-6,
) -> dict[str, Any]: ...
def fit_annealing(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, method: str, c: float, kernel: str,
    gamma: Union[str, float], c2: float = 1.0, p_star: float = 0.5, t0: Optional[float] = None, decay: float = 1.5,
    eps: float = 1e-4, max_temperatures: int = 200, max_iter: int = 50, init: str = "uniform",
    n_xv: Optional[int] = None, xv_init: str = "kmeans", init_xv: Optional[NDArray[np.float64]] = None,
    class_weight: Union[None, str, list[float]] = None, seed: int = 0, n_jobs: Optional[int] = None,
    progress: Optional[Progress] = None,
) -> dict[str, Any]: ...
def probability_update(
    kind: str, t: NDArray[np.float64], temp: float, c2: float = 0.0, p_star: float = 0.0
) -> NDArray[np.float64]: ...
def fit_set_kernel_svm(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, method: str, c: float, kernel: str,
    gamma: Union[str, float], norm: str = "l1", class_weight: Union[None, str, list[float]] = None, tol: float = 1e-3,
    max_iter: Optional[int] = None, n_jobs: Optional[int] = None,
) -> dict[str, Any]: ...
def fit_svmcc(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, c: float, kernel: str,
    gamma: Union[str, float], class_weight: Union[None, str, list[float]] = None, max_iter: int = 80,
    tol: float = 1e-4, smo_tol: float = 1e-3, n_jobs: Optional[int] = None, progress: Optional[Progress] = None,
) -> dict[str, Any]: ...
def svmcc_lp_step(*args: Any, **kwargs: Any) -> Any: ...
def fit_one_class(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, nu: float, kernel: str,
    gamma: Union[str, float], bag_constraints: bool = True, max_iter: int = 20, tol: float = 1e-3,
    n_jobs: Optional[int] = None, progress: Optional[Progress] = None,
) -> dict[str, Any]: ...
