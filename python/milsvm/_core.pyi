"""Type stubs of the compiled core ``milsvm._core`` (Rust, PyO3)."""

from typing import Any, Optional, Tuple, Union

import numpy as np
from numpy.typing import NDArray

Instances = Union[NDArray[np.float64], Tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int]]

__version__: str

def fit_sparse_mi(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], *, n_xv: int, c: float, kernel: str,
    gamma: Optional[float], max_iter: int, max_line_search: int, tol: float, solver: str, seed: int,
    n_jobs: Optional[int], inner_tol: Optional[float] = None, init_xv: Optional[NDArray[np.float64]] = None,
) -> dict[str, Any]: ...
def decision_function(
    x: Instances, bag_ptr: NDArray[np.int64], xv: NDArray[np.float64], coef: NDArray[np.float64],
    intercept: NDArray[np.float64], kernel: str, gamma: float, n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
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
def squared_hinge_value_grad(
    k: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64], c: NDArray[np.float64], beta: NDArray[np.float64], b: float
) -> Tuple[float, NDArray[np.float64], float]: ...
def sparse_mi_objective(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], z: NDArray[np.float64], c: float, kernel: str,
    gamma: float, solver: str = "newton", inner_tol: float = 1e-12,
) -> Tuple[float, NDArray[np.float64]]: ...
def model_to_json(xv: NDArray[np.float64], coef: NDArray[np.float64], intercept: NDArray[np.float64], kernel: str, gamma: float, n_classes: int) -> str: ...
def model_from_json(text: str) -> dict[str, Any]: ...
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
