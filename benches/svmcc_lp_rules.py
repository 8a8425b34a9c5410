"""A small Python reference of SVM-CC (Yang & Deng, Algorithm 2 / 1) whose only purpose is to try
which *optimal solution of the LP step* is taken (bench variant, not library code).

With ``w`` fixed, the LP over ``(v, b, xi)`` (problem 23-28) has in general a whole face of
optimal solutions: a positive bag whose best instance clears the margin (``G_i + b >= 1``) is
served by any ``v_i`` on the simplex with ``v_i . s_i >= 1 - b`` (``s_i`` the instance scores),
not only by the vertex on its best instance. milsvm takes that vertex (``v_i`` on the argmax),
which makes the alternation MI-SVM started from bag means. A general LP solver (the paper used
MATLAB's ``linprog``, whose default of the time was an interior-point method) returns some other
point of the face. Rules:

* ``max``: ``v_i`` on the best instance(s), as milsvm (a check of this reference);
* ``keep``: ``v_i`` unchanged when it is still optimal (``v_i . s_i >= min(G_i, 1 - b)``), else
  on the best instance;
* ``project``: ``v_i`` unchanged when still optimal, else its Euclidean projection onto
  ``{v in simplex: v . s_i >= min(G_i, 1 - b)}`` (the smallest change that makes it optimal).

``b`` is the LP's exact minimiser for the best-instance scores (``milsvm._core.svmcc_lp_step``),
which stays optimal with every rule (each keeps the bag's slack at its optimum). The QP is
libsvm (``sklearn.svm.SVC(kernel="precomputed")``) on the Gram matrix of the combinations
``A K A^T``; bounds as section 3 (``bounds="paper"``: ``C1 = C2 = C`` for the linear kernel,
``C1 = C n_ni / (n_pb + n_ni)``, ``C2 = C n_pb / (n_pb + n_ni)`` for rbf), or ``"split"`` /
``"equal"`` with either kernel; stop when ``||v_new - v||_2 < tol`` or after ``max_iter``
rounds; decision function eq. 35 with the last QP's ``alpha`` and ``v`` and its bias (``bias="qp"``,
eq. 36-37) or the LP's; a bag scores the max of its instance scores.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.svm import SVC


def _gram(A, B, kernel, gamma):
    if sp.issparse(A):
        d = np.asarray((A @ B.T).todense())
    else:
        d = A @ B.T
    if kernel == "linear":
        return d
    na = np.asarray(A.multiply(A).sum(1)).ravel() if sp.issparse(A) else np.einsum("ij,ij->i", A, A)
    nb = np.asarray(B.multiply(B).sum(1)).ravel() if sp.issparse(B) else np.einsum("ij,ij->i", B, B)
    return np.exp(-gamma * np.maximum(na[:, None] + nb[None, :] - 2 * d, 0.0))


def _proj_simplex_rows(Z):
    """Euclidean projection of every row of Z onto the simplex (sort-based)."""
    U = -np.sort(-Z, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    k = np.arange(1, Z.shape[1] + 1)
    rho = (U - css / k > 0).sum(axis=1) - 1
    theta = css[np.arange(len(Z)), rho] / (rho + 1)
    return np.maximum(Z - theta[:, None], 0.0)


def _project_onto_face(v, s, t):
    """argmin ||u - v|| over the simplex with u . s >= t (t <= max s): u = P(v + lam s) with the
    smallest lam >= 0 meeting the constraint (u . s is nondecreasing in lam), found on a log grid
    then refined on linear grids (a batch of lam values per step)."""
    if v @ s >= t:
        return v
    lams = np.r_[0.0, np.logspace(-8, 12, 81)]
    ok = _proj_simplex_rows(v[None, :] + lams[:, None] * s[None, :]) @ s >= t
    hi_i = int(np.argmax(ok)) if ok.any() else len(lams) - 1
    lo, hi = lams[max(hi_i - 1, 0)], lams[hi_i]
    for _ in range(4):
        grid = np.linspace(lo, hi, 33)
        ok = _proj_simplex_rows(v[None, :] + grid[:, None] * s[None, :]) @ s >= t
        k = int(np.argmax(ok)) if ok.any() else len(grid) - 1
        lo, hi = grid[max(k - 1, 0)], grid[k]
    u = _proj_simplex_rows((v + hi * s)[None, :])[0]
    return u


class RefSVMCC:
    def __init__(
        self,
        C=1.0,
        kernel="rbf",
        gamma=1.0,
        lp_rule="max",
        bounds="paper",
        bias="qp",
        max_iter=80,
        tol=1e-4,
        svc_tol=1e-5,
    ):
        self.C, self.kernel, self.gamma, self.lp_rule = C, kernel, gamma, lp_rule
        self.bounds, self.bias, self.max_iter, self.tol, self.svc_tol = (
            bounds,
            bias,
            max_iter,
            tol,
            svc_tol,
        )

    def fit(self, bags, y):
        import milsvm

        y = np.asarray(y)
        self.classes_ = np.unique(y)
        pos = [i for i in range(len(bags)) if y[i] == self.classes_[1]]
        neg = [i for i in range(len(bags)) if y[i] != self.classes_[1]]
        X = sp.vstack(bags).tocsr() if sp.issparse(bags[0]) else np.vstack(bags)
        ptr = np.concatenate([[0], np.cumsum([b.shape[0] for b in bags])])
        K = _gram(X, X, self.kernel, self.gamma)
        neg_inst = np.concatenate([np.arange(ptr[i], ptr[i + 1]) for i in neg])
        n_pb, n_ni = len(pos), len(neg_inst)
        if self.bounds == "equal" or (self.bounds == "paper" and self.kernel == "linear"):
            c1 = c2 = self.C
        else:
            c1, c2 = self.C * n_ni / (n_pb + n_ni), self.C * n_pb / (n_pb + n_ni)
        m = n_pb + n_ni
        labels = np.r_[np.ones(n_pb), np.zeros(n_ni)]
        v = [np.full(ptr[i + 1] - ptr[i], 1.0 / (ptr[i + 1] - ptr[i])) for i in pos]
        A = sp.lil_matrix((m, X.shape[0]))
        for k, t in enumerate(neg_inst):
            A[n_pb + k, t] = 1.0
        self.n_iter_, self.converged_ = 0, False
        for _ in range(self.max_iter):
            self.n_iter_ += 1
            for k, i in enumerate(pos):
                A[k, ptr[i] : ptr[i + 1]] = v[k]
            Ac = A.tocsr()
            Kc = np.asarray(Ac @ (Ac @ K).T)
            svc = SVC(
                kernel="precomputed", C=1.0, class_weight={1: c1, 0: c2}, tol=self.svc_tol
            ).fit(Kc, labels)
            ya = np.zeros(m)
            ya[svc.support_] = svc.dual_coef_[0]
            beta = np.asarray(Ac.T @ ya).ravel()
            g = K @ beta
            ps = [g[ptr[i] : ptr[i + 1]] for i in pos]
            gn = g[neg_inst]
            vmax, b_lp = milsvm._core.svmcc_lp_step(
                [s.tolist() for s in ps], [c1] * n_pb, gn.tolist(), [c2] * n_ni, lp_rule="max"
            )
            new_v = []
            for vk, s, vm in zip(v, ps, vmax):
                vm = np.asarray(vm)
                if self.lp_rule == "max":
                    new_v.append(vm)
                    continue
                t = min(s.max(), 1.0 - b_lp)
                if vk @ s >= t - 1e-12 * max(1.0, abs(t)):
                    new_v.append(vk)
                elif self.lp_rule == "keep":
                    new_v.append(vm)
                else:
                    new_v.append(_project_onto_face(vk, s, t))
            dv = np.sqrt(sum(((a - c) ** 2).sum() for a, c in zip(v, new_v)))
            self.beta_, self.qp_b_, self.lp_b_ = beta, float(svc.intercept_[0]), float(b_lp)
            v = new_v
            if dv < self.tol:
                self.converged_ = True
                break
        self.v_ = v
        keep = np.nonzero(self.beta_)[0]
        self.X_, self.beta_ = X[keep], self.beta_[keep]
        self.b_ = self.qp_b_ if self.bias == "qp" else self.lp_b_
        return self

    def decision_function(self, bags):
        X = sp.vstack(bags).tocsr() if sp.issparse(bags[0]) else np.vstack(bags)
        ptr = np.concatenate([[0], np.cumsum([b.shape[0] for b in bags])])
        g = _gram(X, self.X_, self.kernel, self.gamma) @ self.beta_ + self.b_
        return np.array([g[ptr[i] : ptr[i + 1]].max() for i in range(len(bags))])

    def predict(self, bags):
        return np.where(self.decision_function(bags) > 0, self.classes_[1], self.classes_[0])
