"""Basis-vector mode (Fu et al. 2013, section IV-E) and the initialisations of section V-D."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import core_sparse_mi_fit, random_bags
from milsvm import SparseMI


def sparse_problem(seed=0, n_bags=30, d=200):
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        n = int(rng.integers(2, 6))
        x = sp.random(n, d, density=0.03, random_state=rng, format="lil")
        if i % 2:  # positive bags hold a "topic" instance
            x[0, :5] = 1.0
        bags.append(sp.csr_matrix(x))
        y.append(i % 2)
    return bags, np.array(y)


def test_identity_basis_reproduces_direct_mode():
    """With B = I (one basis vector per feature), Z = V and the two modes run the same descent."""
    bags, y = random_bags(1, n_bags=12, d=4)
    eye = np.eye(4)
    bv = core_sparse_mi_fit(bags, y, n_basis=4, init_basis=eye)
    direct = core_sparse_mi_fit(bags, y, init_xv=bv.initial_xv)
    np.testing.assert_allclose(bv.objective_history, direct.objective_history, rtol=1e-9)
    np.testing.assert_allclose(bv.model.xv, direct.model.xv, rtol=1e-7, atol=1e-9)


def test_all_instances_as_basis_gives_the_direct_objective_at_the_same_start():
    """Q = all training instances: g(V0) in BV mode equals g(Z0 = V0 B) in direct mode."""
    bags, y = random_bags(2, n_bags=10, d=3)
    X = np.concatenate(bags)
    bv = core_sparse_mi_fit(bags, y, n_basis=len(X), init_basis=X, max_iter=0)
    direct = core_sparse_mi_fit(bags, y, init_xv=bv.initial_xv, max_iter=0)
    assert bv.objective_history[0] == pytest.approx(direct.objective_history[0], rel=1e-9)
    # and with iterations the BV descent decreases g as well
    bv_fit = core_sparse_mi_fit(bags, y, n_basis=len(X), init_basis=X, max_iter=10)
    assert np.all(np.diff(bv_fit.objective_history) <= 0)
    assert bv_fit.objective_history[-1] < bv_fit.objective_history[0]


def test_sparse_bv_mode_fits_predicts_and_keeps_xv_sparse():
    bags, y = sparse_problem()
    clf = SparseMI(n_xv=3, n_basis=20, C=10.0, random_state=0).fit(bags, y)
    assert sp.issparse(clf.xv_) and clf.xv_.shape == (3, 200)
    # XVs live in the span of the 20 basis vectors: far fewer nonzeros than dense
    assert clf.xv_.nnz < 3 * 200
    assert np.all(np.diff(clf.objective_history_) <= 0)
    assert clf.score(bags, y) >= 0.9
    # prediction on new CSR bags equals prediction on their dense copies
    dense = [b.toarray() for b in bags]
    np.testing.assert_allclose(
        clf.decision_function(bags), clf.decision_function(dense), rtol=1e-10, atol=1e-12
    )


def test_dense_and_csr_input_give_the_same_bv_model():
    bags, y = sparse_problem(1)
    a = SparseMI(n_xv=2, n_basis=10, random_state=3, max_iter=10).fit(bags, y)
    b = SparseMI(n_xv=2, n_basis=10, random_state=3, max_iter=10).fit(
        [x.toarray() for x in bags], y
    )
    np.testing.assert_allclose(a.xv_.toarray(), b.xv_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-10)


@pytest.mark.parametrize("init", ["kmeans", "svm"])
@pytest.mark.parametrize("bv", [False, True])
def test_initialisations_are_deterministic(init, bv):
    bags, y = sparse_problem(2) if bv else random_bags(3, n_bags=20, d=3)
    params = dict(n_xv=3, init=init, max_iter=3, random_state=7, n_basis=8 if bv else None)
    a = SparseMI(**params).fit(bags, y)
    b = SparseMI(**params).fit(bags, y)
    xa, xb = (
        m.initial_xv_.toarray() if sp.issparse(m.initial_xv_) else m.initial_xv_ for m in (a, b)
    )
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)


def test_svm_init_picks_training_instances():
    bags, y = random_bags(4, n_bags=20, d=3)
    X = np.concatenate(bags)
    clf = SparseMI(n_xv=4, init="svm", max_iter=0, random_state=0).fit(bags, y)
    for z in clf.initial_xv_:
        assert np.min(np.abs(X - z).sum(1)) == 0.0


def test_bv_parameter_errors():
    bags, y = sparse_problem()
    with pytest.raises(ValueError, match="n_basis must be"):
        SparseMI(n_basis=0).fit(bags, y)
    with pytest.raises(ValueError, match="n_basis .* exceeds the number of training instances"):
        SparseMI(n_basis=10**6).fit(bags, y)
    with pytest.raises(TypeError, match="n_basis"):
        SparseMI(n_basis=2.5).fit(bags, y)
