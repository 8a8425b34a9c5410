"""Type stubs of the compiled core ``milsvm._core`` (Rust, PyO3)."""

from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union

import numpy as np
from numpy.typing import NDArray

#: ``progress(problem, step, max_steps, objective, temperature)``, called at every step of a fit.
Progress = Callable[[int, int, int, float, Optional[float]], None]
Instances = Union[NDArray[np.float64], Tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int]]
#: Hyperparameters by the name the Python estimators use (values as they take them).
Params = Dict[str, Any]
#: ``(name, default, doc, range)`` of each declared hyperparameter; ``range``: the allowed values
#: of a numeric parameter in words ("be a finite number > 0", "lie in (0, 1)"), or None.
Specs = List[Tuple[str, Any, str, Optional[str]]]

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
    def decision_function_bag(self, x: Union[NDArray[np.float64], NDArray[np.float32]]) -> list[float]: ...
    def instance_decision_function(self, x: Instances, n_jobs: Optional[int] = None) -> NDArray[np.float64]: ...
    def bag_instance_scores(
        self, x: Instances, bag_ptr: NDArray[np.int64], n_jobs: Optional[int] = None
    ) -> NDArray[np.float64]: ...
    def predict_proba(
        self, x: Instances, bag_ptr: NDArray[np.int64], n_jobs: Optional[int] = None
    ) -> NDArray[np.float64]: ...
    def with_scaler(self, scaler: Optional[Tuple[Sequence[float], Sequence[float]]]) -> "Model": ...
    def with_input_dtype(self, dtype: str) -> "Model": ...
    @property
    def input_dtype(self) -> str: ...
    def with_calibration(self, calibration: Optional[Tuple[Sequence[float], Sequence[float]]]) -> "Model": ...
    @property
    def scaler(self) -> Optional[Tuple[NDArray[np.float64], NDArray[np.float64]]]: ...
    @property
    def calibration(self) -> Optional[Tuple[NDArray[np.float64], NDArray[np.float64]]]: ...
    def with_ensemble(self, members: Sequence["Model"]) -> "Model": ...
    @property
    def ensemble(self) -> List["Model"]: ...
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
    def bag_features(self) -> str: ...
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

def decision_functions(models: Sequence[Model], x: Instances, bag_ptr: NDArray[np.int64],
                       n_jobs: Optional[int] = None) -> List[NDArray[np.float64]]: ...
def fit_sigmoid(scores: NDArray[np.float64], positive: Sequence[bool]) -> Tuple[float, float]: ...

# ---------------------------------------------------------------------------------------------
# Fits: ``fit_X(x, bag_ptr, labels, params, progress=None) -> XFit``, ``check_X(params) -> None``
# (the fit's parsing and checks of ``params`` without data: the same TypeError / ValueError) and
# ``fit_X_hyperparameters() -> Specs`` (the core's declaration of every parameter). Ctrl-C
# raises KeyboardInterrupt; an exception in ``progress`` stops the fit and is raised.
# ---------------------------------------------------------------------------------------------

class SparseMiFit:
    model: Model
    initial_xv: NDArray[np.float64]
    objective_history: List[float]
    n_iter: int
    gamma: float
    inner_converged: bool

class MiKernelFit:
    model: Model
    gamma: float
    support: List[int]
    n_xv: int
    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    objective: List[float]
    ridged_objective: List[float]
    n_iter: int
    inner_converged: bool

class ReducedSetFit:
    model: Model
    gamma: float
    residual_history: List[float]
    fixed_point_iterations: int
    mi_kernel_n_xv: int
    mi_kernel_coef: NDArray[np.float64]
    mi_kernel_intercept: NDArray[np.float64]
    inner_converged: bool

class SvmFit:
    model: Model
    gamma: float
    objective: List[float]
    alpha: List[NDArray[np.float64]]
    n_support: List[int]
    n_iter: int
    inner_converged: bool

AUTO_FULL_BASIS_MAX: int
AUTO_N_XV: int
class TwoStageFit:
    model: Model
    gamma: float
    objective: List[float]
    alpha: List[NDArray[np.float64]]
    n_support: List[int]
    n_iter: int
    inner_converged: bool
    first_stage: SvmFit
    instance_labels: List[NDArray[np.float64]]
    threshold: List[float]

class AnnealingFit:
    model: Model
    gamma: float
    p: List[NDArray[np.float64]]
    p_hat: List[float]
    objective_history: List[List[float]]
    temperatures: List[List[float]]
    n_iter: List[int]
    n_solves: List[int]
    converged: List[bool]
    solver: str
    n_xv: Optional[int]

class SvmCcFit:
    model: Model
    gamma: float
    positive_bags: List[List[int]]
    v: List[List[List[float]]]
    lp_intercept: List[float]
    qp_intercept: List[float]
    objective_history: List[List[float]]
    dv_history: List[List[float]]
    n_iter: List[int]
    converged: List[bool]
    inner_converged: bool

class CccpFit:
    model: Model
    gamma: float
    objective_history: List[List[float]]
    n_iter: List[int]
    converged: List[bool]
    run_objectives: List[List[float]]
    positive_bags: List[List[int]]
    signs: List[List[float]]
    witnesses: List[List[int]]
    inner_converged: bool

class OneClassFit:
    model: Model
    gamma: float
    rho: float
    alpha: NDArray[np.float64]
    bag_alpha: NDArray[np.float64]
    active: List[bool]
    objective_history: List[float]
    n_iter: int
    converged: bool
    inner_converged: bool

class MilesFit:
    model: Model
    gamma: float
    n_concepts: int
    selected: List[int]
    objective: List[float]
    n_selected: List[int]
    n_iter: List[int]
    inner_converged: bool
    dual: List[NDArray[np.float64]]

_Fit = TypeVar("_Fit")

class FitFunction(Protocol[_Fit]):
    """``fit(x, bag_ptr, labels, params, progress=None)``: a builder filled from ``params`` (names as
    the Python estimators spell them), the fit, its typed result."""

    def __call__(
        self, x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], params: Params,
        progress: Optional[Progress] = None,
    ) -> _Fit: ...

class PathFunction(Protocol[_Fit]):
    """``fit_path(x, bag_ptr, labels, params, cs, progress=None)``: the fit at every value of ``C`` in
    ``cs`` (one warm-started path; the ``C`` of ``params`` is ignored), results in the order of ``cs``."""

    def __call__(
        self, x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], params: Params,
        cs: Sequence[float], progress: Optional[Progress] = None,
    ) -> List[_Fit]: ...

def _specs() -> Specs: ...
def _check(params: Params) -> None: ...

fit_sparse_mi: FitFunction[SparseMiFit]
fit_mi_kernel: FitFunction[MiKernelFit]
fit_reduced_set: FitFunction[ReducedSetFit]
fit_nsk: FitFunction[SvmFit]
fit_smil: FitFunction[SvmFit]
fit_annealing: FitFunction[AnnealingFit]
fit_svmcc: FitFunction[SvmCcFit]
fit_one_class: FitFunction[OneClassFit]
fit_sparse_mi_path: PathFunction[SparseMiFit]
fit_mi_kernel_path: PathFunction[MiKernelFit]
fit_reduced_set_path: PathFunction[ReducedSetFit]
fit_nsk_path: PathFunction[SvmFit]
fit_smil_path: PathFunction[SvmFit]
fit_sil: FitFunction[SvmFit]
fit_sil_path: PathFunction[SvmFit]
fit_stk: FitFunction[SvmFit]
fit_stk_path: PathFunction[SvmFit]

def fit_stk_bags(bags: List[NDArray[Any]], labels: NDArray[np.int64], params: Params,
                 progress: Optional[Progress] = None) -> SvmFit:
    """STK on a list of 2-D float64 or float32 bags, each read where it lies (no stacked copy):
    the model of ``fit_stk`` on the same bags stacked, bit for bit."""
    ...

def fit_stk_bags_path(bags: List[NDArray[Any]], labels: NDArray[np.int64], params: Params, cs: Sequence[float],
                      progress: Optional[Progress] = None) -> List[SvmFit]:
    """The ``C`` path of ``fit_stk_bags``: one result per value of ``cs``, in their order."""
    ...
fit_miles: FitFunction[MilesFit]
fit_miles_path: PathFunction[MilesFit]
fit_two_stage: FitFunction[TwoStageFit]
fit_cccp: FitFunction[CccpFit]
check_sparse_mi = check_mi_kernel = check_reduced_set = check_nsk = check_smil = check_annealing = check_svmcc = check_one_class = check_sil = check_stk = check_stk_bags = check_miles = check_two_stage = check_cccp = _check
fit_sparse_mi_hyperparameters = fit_mi_kernel_hyperparameters = fit_reduced_set_hyperparameters = fit_nsk_hyperparameters = fit_smil_hyperparameters = fit_annealing_hyperparameters = fit_svmcc_hyperparameters = fit_one_class_hyperparameters = fit_sil_hyperparameters = fit_stk_hyperparameters = fit_miles_hyperparameters = fit_two_stage_hyperparameters = fit_cccp_hyperparameters = _specs

# ---------------------------------------------------------------------------------------------
# The ground floor, for tests and reference benchmarks
# ---------------------------------------------------------------------------------------------

def kernel_width(x: Instances, gamma: Union[str, float]) -> float: ...
def kernel_bag_means(
    x: Instances, bag_ptr: NDArray[np.int64], z: NDArray[np.float64], kernel: str, gamma: float, n_jobs: Optional[int] = None
) -> Tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def kernel_bag_means_py(
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
def solve_dual(
    x: Union[NDArray[np.float64], Instances], y: NDArray[np.float64], u: NDArray[np.float64], *,
    kernel: str = "precomputed", gamma: float = 1.0, p: Optional[NDArray[np.float64]] = None,
    d: Optional[NDArray[np.float64]] = None, point: Optional[NDArray[np.int64]] = None, delta: float = 0.0,
    tol: float = 1e-3, shrinking: bool = True, cache_mb: float = 200.0, store_mb: float = 128.0,
    max_iter: Optional[int] = None, n_jobs: Optional[int] = None,
) -> Dict[str, Any]: ...
def sparse_mi_objective(
    x: Instances, bag_ptr: NDArray[np.int64], labels: NDArray[np.int64], z: NDArray[np.float64], c: float, kernel: str,
    gamma: float, solver: str = "newton", inner_tol: float = 1e-12,
) -> Tuple[float, NDArray[np.float64]]: ...
def mi_kernel_decision_function(
    x: Instances, bag_ptr: NDArray[np.int64], train_x: Instances, train_bag_ptr: NDArray[np.int64],
    coef: NDArray[np.float64], intercept: NDArray[np.float64], kernel: str, gamma: float, n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
def set_kernel_matrix(
    x: Instances, bag_ptr: NDArray[np.int64], x2: Instances, bag_ptr2: NDArray[np.int64], kernel: str, gamma: float,
    n_jobs: Optional[int] = None,
) -> NDArray[np.float64]: ...
def miles_embedding(
    x: Instances, bag_ptr: NDArray[np.int64], z: Instances, kernel: str, gamma: float, n_jobs: Optional[int] = None
) -> NDArray[np.float64]: ...
def solve_l1_svm(
    x: NDArray[np.float64], y: NDArray[np.float64], cost: NDArray[np.float64], tol: float = 1e-9,
    max_iter: Optional[int] = None,
) -> Tuple[NDArray[np.float64], float, float, NDArray[np.float64], int, bool]: ...
def probability_update(
    kind: str, t: NDArray[np.float64], temp: float, c2: float = 0.0, p_star: float = 0.0
) -> NDArray[np.float64]: ...
def svmcc_lp_step(
    pos_scores: List[List[float]], pos_weights: List[float], neg_scores: List[float], neg_weights: List[float],
    v: Optional[List[List[float]]] = None, lp_rule: str = "project",
) -> Tuple[List[List[float]], float]: ...
