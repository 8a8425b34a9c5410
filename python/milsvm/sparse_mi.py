"""SparseMI and RSVM (Fu, Lu, Ting, Zhang: Learning Sparse Kernel Classifiers for
Multi-Instance Classification, IEEE TNNLS 2013; ECML PKDD 2011)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from . import _core
from ._base import BaseEstimator, FitProgress, MIClassifierMixin, as_choice, as_float, as_gamma, as_int, as_n_jobs, seed_of
from ._bags import Bags, as_bags
from ._model import CompiledModelMixin, load

__all__ = ["SparseMI", "RSVM", "load"]


class _ExpansionVectorClassifier(CompiledModelMixin, MIClassifierMixin, BaseEstimator):
    """Estimators whose fitted model is the expansion-vector form
    ``f(x) = sum_k beta_k k(z_k, x) + b`` with the bag score pooled from the instance scores
    (label mean here; label max for the annealing family). ``xv_``, ``coef_`` and
    ``intercept_`` are read-only views of the compiled model ``model_``."""

    @property
    def xv_(self):
        """The expansion vectors ``(n_xv, n_features)`` (a CSR matrix for a sparse basis)."""
        xv = self._model().xv
        if isinstance(xv, tuple):
            data, indices, indptr, shape = xv
            return sp.csr_matrix((data, indices, indptr), shape=shape)
        return xv

    @property
    def coef_(self):
        """Expansion coefficients: ``(n_xv,)`` for binary problems, else ``(n_classes, n_xv)``."""
        coef = self._model().coef
        return coef[0] if coef.shape[0] == 1 else coef

    @property
    def intercept_(self):
        """The bias: a float for binary problems, else ``(n_classes,)``."""
        b = self._model().intercept
        return float(b[0]) if b.shape[0] == 1 else b

    def _fit_xv(self, bags, y, *, max_iter, max_line_search, tol, solver, init="random", n_basis=None):
        bags = as_bags(bags)
        labels = self._encode_labels(y, len(bags), multiclass=True)
        kernel = as_choice("kernel", self.kernel, ("rbf", "linear"))
        n_basis = None if n_basis is None else as_int("n_basis", n_basis)
        n_xv = as_int("n_xv", self.n_xv)
        seed = seed_of(self.random_state)
        extra = {}
        if not isinstance(init, str):
            points = init if sp.issparse(init) else np.asarray(init, dtype=np.float64)
            count = n_xv if n_basis is None else n_basis
            if points.ndim != 2 or points.shape != (count, bags.n_features):
                raise ValueError(
                    f"init as an array must have shape ({count}, {bags.n_features}) "
                    f"(n_xv or n_basis rows, n_features columns), got {points.shape}"
                )
            init = "given"
        else:
            init = as_choice("init", init, ("random", "kmeans", "svm"))
        if init in ("kmeans", "svm"):
            count = n_xv if n_basis is None else n_basis
            points = _initial_points(init, bags, labels, count, kernel, self.gamma, seed)
        if init != "random":
            if n_basis is None:
                extra["init_xv"] = points.toarray() if sp.issparse(points) else np.ascontiguousarray(points)
            else:
                if not sp.issparse(points) and not np.all(np.isfinite(points)):
                    raise ValueError("init has a non-finite value")
                extra["init_basis"] = Bags(points, np.array([0, points.shape[0]], dtype=np.int64)).core_instances()
        start = time.perf_counter()
        with FitProgress(self, max_iter, "iteration") as progress:
            out = _core.fit_sparse_mi(
                bags.core_instances(),
                bags.bag_ptr,
                labels,
                n_xv=n_xv,
                c=as_float("C", self.C),
                kernel=kernel,
                gamma=as_gamma(self.gamma),
                max_iter=max_iter,
                max_line_search=max_line_search,
                tol=tol,
                solver=as_choice("solver", self.solver, ("newton", "lbfgs")),
                seed=seed,
                n_jobs=as_n_jobs(self.n_jobs),
                n_basis=n_basis,
                progress=progress.callback(),
                **extra,
            )
        # basis-vector mode on sparse data: the XVs are sparse combinations of basis vectors
        sparse_xv = n_basis is not None and bags.is_sparse and init in ("random", "svm")
        model = out["model"]
        if sparse_xv:
            model = _sparse_basis_model(model)
        self._set_model(model)
        self.initial_xv_ = sp.csr_matrix(out["initial_xv"]) if sparse_xv else out["initial_xv"]
        self.objective_history_ = np.asarray(out["objective_history"])
        self.n_iter_ = int(out["n_iter"])
        self.gamma_ = float(out["gamma"])
        self.fit_time_ = time.perf_counter() - start
        if getattr(self, "verbose", 0):
            print(
                f"[{type(self).__name__}] {self.n_iter_} iterations, g: "
                f"{self.objective_history_[0]:.6g} -> {self.objective_history_[-1]:.6g}, "
                f"{self.fit_time_:.3f} s"
            )
        return self


def _sparse_basis_model(model):
    """The same model with its basis stored as CSR (basis-vector mode on sparse data)."""
    csr = sp.csr_matrix(np.asarray(model.xv))
    parts = (csr.data.astype(np.float64), csr.indices.astype(np.int64), csr.indptr.astype(np.int64), csr.shape[1])
    return _core.Model(parts, np.asarray(model.coef), np.asarray(model.intercept), model.kernel,
                       model.gamma if model.gamma is not None else 1.0, model.n_classes, model.pooling)


def _initial_points(init, bags, labels, count, kernel, gamma, seed):
    """Initial XVs / BVs of section V-D: k-means centroids or SVM-selected instances."""
    X = bags.X
    if count > bags.n_instances:
        raise ValueError(f"init={init!r} needs {count} points, but there are {bags.n_instances} training instances")
    if init == "kmeans":
        from sklearn.cluster import KMeans

        return KMeans(n_clusters=count, n_init=1, random_state=seed).fit(X).cluster_centers_
    from sklearn.svm import LinearSVC

    # label-mean bag features against every training instance, in column blocks
    g = as_gamma(gamma)
    if g is None:
        n = X.shape[0] * X.shape[1]
        mean = X.sum() / n
        var = (X.multiply(X).sum() if sp.issparse(X) else np.square(X).sum()) / n - mean**2
        g = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    norms = np.asarray(X.multiply(X).sum(1)).ravel() if sp.issparse(X) else np.einsum("ij,ij->i", X, X)
    feats = np.empty((len(bags), X.shape[0]))
    for lo in range(0, X.shape[0], 1024):
        cols = slice(lo, min(lo + 1024, X.shape[0]))
        dot = X @ X[cols].T
        dot = dot.toarray() if sp.issparse(dot) else dot
        K = dot if kernel == "linear" else np.exp(-g * np.maximum(norms[:, None] + norms[None, cols] - 2 * dot, 0))
        feats[:, cols] = np.add.reduceat(K, bags.bag_ptr[:-1], axis=0) / bags.bag_sizes[:, None]
    svm = LinearSVC(C=1.0, max_iter=10000, random_state=seed).fit(feats, labels)
    weight = np.abs(np.atleast_2d(svm.coef_)).max(axis=0)
    top = np.argsort(-weight, kind="stable")[:count]
    return X[np.sort(top)]


class SparseMI(_ExpansionVectorClassifier):
    """Sparse multi-instance kernel classifier with learned expansion vectors (SparseMI).

    The label-mean SVM (bag score = mean of the instance scores) with the kernel expansion
    restricted to ``n_xv`` expansion vectors ``Z``, found by gradient descent on the optimal value
    ``g(Z)`` of the squared-hinge SVM over ``Z`` (Fu et al. 2013, Algorithm 1). Multi-class
    problems are one-vs-rest with shared expansion vectors (eq. 19-20).

    Parameters
    ----------
    n_xv : int, default=10
        Number of expansion vectors (the model's size).
    C : float, default=1.0
        Loss weight (> 0).
    kernel : {"rbf", "linear"}, default="rbf"
        Instance kernel; the papers use the Gaussian kernel.
    gamma : "scale" or float, default="scale"
        Gaussian width; "scale" is ``1 / (n_features * X.var())`` over the training instances.
    init : {"random", "kmeans", "svm"} or array of shape (n_xv, n_features), default="random"
        Initial expansion vectors (or basis vectors with ``n_basis``), section V-D of the paper:
        distinct random training instances; k-means centroids of the training instances; or the
        training instances whose weights are largest in absolute value in a linear SVM trained on
        the label-mean bag features ``s(X_i) = [mean_p k(x_ip, x_t)]_t``. An array gives the
        starting points directly (``(n_basis, n_features)`` in basis-vector mode).
    n_basis : int or None, default=None
        Basis-vector mode (section IV-E) for sparse, high-dimensional instances: each XV is a
        combination ``z = B v`` of ``n_basis`` basis vectors (chosen by ``init``; random
        coefficients to start), and all kernel work runs in ``n_basis`` dimensions after one
        sparse product ``X B^T``. The instances are never densified; ``xv_`` is sparse.
    max_iter : int, default=50
        Outer gradient iterations ``t_max`` (0 gives RSVM).
    max_line_search : int, default=10
        Step-halving trials per iteration ``s_max``.
    tol : float, default=1e-6
        Stop when an iteration decreases ``g`` by less than this fraction.
    solver : {"newton", "lbfgs"}, default="newton"
        Inner solver: exact primal Newton (fast) or argmin's L-BFGS; both reach the same optimum.
    random_state : int, RandomState or None, default=None
        Seed of the initialisation. Results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    verbose : int, default=0
        Print a summary of the fit.

    Attributes
    ----------
    xv_ : ndarray of shape (n_xv, n_features)
        The learned expansion vectors.
    initial_xv_ : ndarray of shape (n_xv, n_features)
        The expansion vectors the descent started from.
    coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
        Expansion coefficients ``beta``.
    intercept_ : float or ndarray of shape (n_classes,)
        Bias ``b``.
    objective_history_ : ndarray
        ``g(Z)`` at the start and after each outer iteration (non-increasing).
    n_iter_ : int
        Outer iterations done.
    gamma_ : float
        The kernel width used.
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of features of an instance.
    """

    def __init__(self, n_xv=10, C=1.0, kernel="rbf", gamma="scale", init="random", n_basis=None, max_iter=50,
                 max_line_search=10, tol=1e-6, solver="newton", random_state=None, n_jobs=None, verbose=0):
        self.n_xv = n_xv
        self.n_basis = n_basis
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.init = init
        self.max_iter = max_iter
        self.max_line_search = max_line_search
        self.tol = tol
        self.solver = solver
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, bags, y):
        """Fit on bags and one label per bag.

        Parameters
        ----------
        bags : list of array-like / scipy sparse matrices, or Bags
        y : array-like of shape (n_bags,)

        Returns
        -------
        self
        """
        return self._fit_xv(
            bags, y,
            init=self.init,
            n_basis=self.n_basis,
            max_iter=as_int("max_iter", self.max_iter),
            max_line_search=as_int("max_line_search", self.max_line_search),
            tol=as_float("tol", self.tol),
            solver=self.solver,
        )


class RSVM(_ExpansionVectorClassifier):
    """Label-mean SVM on ``n_xv`` random training instances as expansion vectors (Fu et al.'s
    RSVM baseline): SparseMI's inner problem without expansion-vector updates.

    Parameters and attributes are those of :class:`SparseMI` without the outer-loop ones.
    """

    def __init__(self, n_xv=10, C=1.0, kernel="rbf", gamma="scale", solver="newton", random_state=None, n_jobs=None):
        self.n_xv = n_xv
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.solver = solver
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, bags, y):
        """Fit on bags and one label per bag; returns self."""
        return self._fit_xv(bags, y, max_iter=0, max_line_search=1, tol=0.0, solver=self.solver)
