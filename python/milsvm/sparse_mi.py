"""SparseMI and RSVM (Fu, Lu, Ting, Zhang: Learning Sparse Kernel Classifiers for
Multi-Instance Classification, IEEE TNNLS 2013; ECML PKDD 2011)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from ._bags import Bags
from ._base import ExpansionVectorsMixin, MILClassifier
from ._constructor import INNER_TAIL, SVM_HEAD
from ._docs import NEWTON_INNER, attr, field, param

__all__ = ["SparseMI", "RSVM"]


#: SparseMI's outer loop (gradient steps on the expansion vectors), which RSVM does not run.
_OUTER = ("max_iter", "max_line_search", "tol")


class _LabelMeanClassifier(ExpansionVectorsMixin, MILClassifier):
    """The shared fit of SparseMI and RSVM: the label-mean SVM over ``n_xv`` expansion vectors
    (Rust ``SparseMiParams``), the initial points of ``init`` computed here."""

    _core_fit = None
    _python_only = MILClassifier._python_only + ("init",)
    _info_attrs = ("n_iter_", "objective_history_", "gamma_")
    _progress_unit = "iteration"
    _objective_name = "g(Z): the label-mean squared-hinge SVM objective at the XVs"
    _objective_step = "outer iteration"
    _objective_start = 0
    _search_ranges = {"n_xv": "5 ... 100 (the model's size: larger fits and predicts more slowly)"}

    def _core_params(self, bags, classes, labels, check_only=False):
        params = super()._core_params(bags, classes, labels, check_only=check_only)
        init = getattr(self, "init", "random")
        n_basis = params.get("n_basis")
        if isinstance(init, str):
            if init not in ("random", "kmeans", "svm"):
                raise ValueError(f"init must be one of 'random', 'kmeans', 'svm', got {init!r}")
            if init == "random" or check_only:
                return params
            count = params["n_xv"] if n_basis is None else n_basis
            points = _initial_points(
                init,
                bags,
                labels,
                count,
                params.get("kernel"),
                params.get("gamma"),
                params.get("seed", 0),
            )
        else:
            points = init if sp.issparse(init) else np.asarray(init, dtype=np.float64)
            count = params["n_xv"] if n_basis is None else n_basis
            if check_only:  # the number of features is not known yet
                if points.ndim != 2 or points.shape[0] != count:
                    raise ValueError(
                        f"init as an array must have n_xv or n_basis rows ({count}), got shape "
                        f"{points.shape}"
                    )
                return params
            if points.ndim != 2 or points.shape != (count, bags.n_features):
                raise ValueError(
                    f"init as an array must have shape ({count}, {bags.n_features}) "
                    f"(n_xv or n_basis rows, n_features columns), got {points.shape}"
                )
        if n_basis is None:
            params["init_xv"] = (
                points.toarray() if sp.issparse(points) else np.ascontiguousarray(points)
            )
        else:
            if not sp.issparse(points) and not np.all(np.isfinite(points)):
                raise ValueError("init has a non-finite value")
            params["init_basis"] = Bags(
                points, np.array([0, points.shape[0]], dtype=np.int64)
            ).core_instances()
        return params

    def _fitted(self, fit, bags, binary):
        # basis-vector mode on sparse data: the XVs are sparse combinations of basis vectors
        init = getattr(self, "init", "random")
        sparse_xv = (
            getattr(self, "n_basis", None) is not None
            and bags.is_sparse
            and isinstance(init, str)
            and init in ("random", "svm")
        )
        model = _sparse_basis_model(fit.model) if sparse_xv else fit.model
        initial = fit.initial_xv
        return {
            "model_": model,
            "initial_xv_": sp.csr_matrix(initial) if sparse_xv else initial,
            "objective_history_": np.asarray(fit.objective_history),
            "n_iter_": int(fit.n_iter),
            "converged_": True,
        }

    def _fit_summary(self):
        h = self.objective_history_
        return f"{self.n_iter_} iterations, g: {h[0]:.6g} -> {h[-1]:.6g}"


def _sparse_basis_model(model):
    """The same model with its basis stored as CSR (basis-vector mode on sparse data)."""
    csr = sp.csr_matrix(np.asarray(model.xv))
    parts = (
        csr.data.astype(np.float64),
        csr.indices.astype(np.int64),
        csr.indptr.astype(np.int64),
        csr.shape[1],
    )
    return _core.Model(
        parts,
        np.asarray(model.coef),
        np.asarray(model.intercept),
        model.kernel,
        model.gamma if model.gamma is not None else 1.0,
        model.n_classes,
        model.pooling,
    )


def _initial_points(init, bags, labels, count, kernel, gamma, seed):
    """Initial XVs / BVs of section V-D: k-means centroids or SVM-selected instances."""
    X = bags.X
    if count > bags.n_instances:
        raise ValueError(
            f"init={init!r} needs {count} points, but there are {bags.n_instances} training "
            "instances"
        )
    if init == "kmeans":
        from sklearn.cluster import KMeans

        return KMeans(n_clusters=count, n_init=1, random_state=seed).fit(X).cluster_centers_
    from sklearn.svm import LinearSVC

    # label-mean bag features against every training instance, in column blocks
    g = _core.kernel_width(bags.core_instances(), gamma)
    norms = (
        np.asarray(X.multiply(X).sum(1)).ravel() if sp.issparse(X) else np.einsum("ij,ij->i", X, X)
    )
    feats = np.empty((len(bags), X.shape[0]))
    for lo in range(0, X.shape[0], 1024):
        cols = slice(lo, min(lo + 1024, X.shape[0]))
        dot = X @ X[cols].T
        dot = dot.toarray() if sp.issparse(dot) else dot
        K = (
            dot
            if kernel == "linear"
            else np.exp(-g * np.maximum(norms[:, None] + norms[None, cols] - 2 * dot, 0))
        )
        feats[:, cols] = np.add.reduceat(K, bags.bag_ptr[:-1], axis=0) / bags.bag_sizes[:, None]
    svm = LinearSVC(C=1.0, max_iter=10000, random_state=seed).fit(feats, labels)
    weight = np.abs(np.atleast_2d(svm.coef_)).max(axis=0)
    top = np.argsort(-weight, kind="stable")[:count]
    return X[np.sort(top)]


class SparseMI(_LabelMeanClassifier):
    __doc__ = f"""Sparse multi-instance kernel classifier with learned expansion vectors (SparseMI).

    The label-mean SVM (bag score = mean of the instance scores) with the kernel expansion
    restricted to ``n_xv`` expansion vectors ``Z``, found by gradient descent on the optimal value
    ``g(Z)`` of the squared-hinge SVM over ``Z`` (Fu et al. 2013, Algorithm 1). Multi-class
    problems are one-vs-rest with shared expansion vectors (eq. 19-20).

    Parameters
    ----------
    n_xv : int, default=10
        Number of expansion vectors (the model's size).
{param("C", "kernel", "gamma", "class_weight", kernel={"default": "rbf"})}
    init : {{"random", "kmeans", "svm"}} or array of shape (n_xv, n_features), default="random"
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
        Stop when an outer iteration decreases ``g`` by less than this fraction.
    solver : {{"newton", "lbfgs"}}, default="newton"
        Inner solver: exact primal Newton (fast) or argmin's L-BFGS; both reach the same optimum.
{param(*INNER_TAIL, **NEWTON_INNER)}

    Attributes
    ----------
{attr("xv_")}
{field("SparseMiFit", "initial_xv", "ndarray of shape (n_xv, n_features)")}
{attr("coef_", "intercept_")}
{field("SparseMiFit", "objective_history", "ndarray")}
{field("SparseMiFit", "n_iter", "int")}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}
    """

    _core_fit = "fit_sparse_mi"

    _init_params = (
        "n_xv",
        *SVM_HEAD,
        "class_weight",
        "init",
        "n_basis",
        *_OUTER,
        "solver",
        *INNER_TAIL,
    )


class RSVM(_LabelMeanClassifier):
    """Label-mean SVM on ``n_xv`` random training instances as expansion vectors (Fu et al.'s
    RSVM baseline): SparseMI's inner problem without expansion-vector updates.

    Parameters and attributes are those of :class:`SparseMI` without the outer-loop ones
    (``init``, ``n_basis``, ``max_iter``, ``max_line_search``, ``tol``).
    """

    _core_fit = "fit_sparse_mi"
    _core_fixed = {"max_iter": 0, "max_line_search": 1, "tol": 0.0}
    _c_path = True

    _init_params = ("n_xv", *SVM_HEAD, "class_weight", "solver", *INNER_TAIL)
