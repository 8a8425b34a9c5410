"""The annealing family (ALSVM, AWSVM, ALPSVM) and the mi-SVM / MI-SVM heuristics: probability
updates against their closed forms and a general optimiser, limits, the heuristics as
zero-temperature annealing and against an independent implementation of Andrews et al.'s
loops, multi-class outputs as the binary one-vs-rest fits, thread independence, bad input, and
the estimator contract."""

import json
import pickle

import milsvm
import numpy as np
import pytest
import scipy.optimize as so
from conftest import (
    assert_one_vs_rest,
    assert_refuses_bad_bags,
    easy_bags,
    random_bags,
    slsqp_minimum,
)
from hypothesis import given
from hypothesis import strategies as st
from milsvm import _core
from sklearn.base import clone

ESTIMATORS = [milsvm.ALSVM, milsvm.AWSVM, milsvm.ALPSVM, milsvm.miSVM, milsvm.MISVM]


def h(p):
    """Binary negative entropy p ln p + (1 - p) ln(1 - p), with 0 ln 0 = 0."""
    p = np.clip(p, 0.0, 1.0)
    return np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0) + np.where(
        p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1)), 0.0
    )


def al_objective(p, t, T):
    return float(np.sum(p * t) + T * np.sum(h(p)))


def al_gradient(p, t, T):
    return t + T * (np.log(p) - np.log1p(-p))


def alp_objective(p, t, T, c2, p_star):
    return al_objective(p, t, T) + c2 * (np.sum(p) - len(t) * p_star) ** 2


def alp_gradient(p, t, T, c2, p_star):
    return al_gradient(p, t, T) + 2 * c2 * (np.sum(p) - len(t) * p_star)


def aw_objective(p, t, T):
    return float(
        np.sum(p * t) + T * np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0))
    )


def aw_gradient(p, t, T):
    return t + T * (np.log(p) + 1)


def scipy_min(objective, gradient, m, simplex):
    """The minimum of a per-bag objective over [0, 1]^m with sum p >= 1 (or = 1 if ``simplex``).

    The best value of SLSQP (analytic gradients, bounds [1e-12, 1 - 1e-12] where the entropy
    is smooth) from three starts, each run restarted from where it stopped until that no longer
    improves (SLSQP can declare success early when the entropy's gradient is steep near a
    bound; a restart resets its Hessian estimate); a one-instance bag has the single feasible
    point p = 1. Only runs that end at a feasible point count, and it fails if none does, so
    the reference is never a default ``inf``; the callers also require it to agree with ours,
    so a reference stuck above the optimum fails loudly instead of making ``ours <= ref`` easy.
    """
    if m == 1:
        return objective(np.ones(1))
    lo, hi = 1e-12, 1 - 1e-12
    cons = {
        "type": "eq" if simplex else "ineq",
        "fun": lambda p: np.sum(p) - 1.0,
        "jac": lambda p: np.ones(m),
    }

    def feasible(x):
        s = np.sum(x)
        in_box = np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
        return in_box and (abs(s - 1.0) <= 1e-9 if simplex else s >= 1.0 - 1e-9)

    starts = [
        np.full(m, max(1.0 / m, 0.5 if not simplex else 1.0 / m)),
        np.full(m, 1.0 / m),
        np.full(m, 0.9),
    ]
    starts = [x / x.sum() if simplex else x for x in starts]
    return slsqp_minimum(
        objective,
        gradient,
        starts,
        [(lo, hi)] * m,
        [cons],
        feasible,
        ftol=1e-13,
        maxiter=500,
        restarts=20,
    )


def assert_minimal(ours, ref, t):
    """``ours`` (the objective at our update) is the minimum: not above the reference (to 1e-7
    relative), and the reference (a feasible value, so not below the minimum) not above ours by
    more than 1e-6 of the problem's scale (``1 + |ours| + sum |t|``: SLSQP resolves differences
    of t only to about that), so the first comparison is against a real optimum."""
    assert ours <= ref + 1e-7 * (1 + abs(ours))
    scale = 1 + abs(ours) + np.abs(t).sum()
    assert ref <= ours + 1e-6 * scale, f"the reference ({ref!r}) missed the minimum ({ours!r})"


bag_t = st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=7)
temps = st.sampled_from([0.05, 0.3, 1.0, 3.0, 20.0])


@given(bag_t, temps)
def test_al_update_minimises_its_bag_objective(t, T):
    t = np.array(t)
    p = _core.probability_update("al", t, T)
    assert np.all((p >= 0) & (p <= 1)) and p.sum() >= 1 - 1e-12
    ours = al_objective(p, t, T)
    assert_minimal(
        ours,
        scipy_min(lambda q: al_objective(q, t, T), lambda q: al_gradient(q, t, T), len(t), False),
        t,
    )
    # the closed form: p = sigmoid((lambda - t) / T), lambda = 0 or the root of sum p = 1
    inner = (p > 1e-9) & (p < 1 - 1e-9)  # entries where the logit is well conditioned
    if len(t) > 1 and inner.any():
        lam = T * np.log(p[inner] / (1 - p[inner])) + t[inner]
        assert np.ptp(lam) < 1e-6 * (1 + np.abs(lam).max())
        assert lam[0] >= -1e-6 * (1 + abs(t).max())
        if lam[0] > 1e-6 * (1 + abs(t).max()):
            assert p.sum() == pytest.approx(1.0, abs=1e-12)


@given(bag_t, temps)
def test_aw_update_is_the_softmax_and_minimises(t, T):
    t = np.abs(np.array(t))
    p = _core.probability_update("aw", t, T)
    expected = np.exp(-(t - t.min()) / T)
    np.testing.assert_allclose(p, expected / expected.sum(), rtol=1e-12, atol=1e-300)
    ours = aw_objective(p, t, T)
    assert_minimal(
        ours,
        scipy_min(lambda q: aw_objective(q, t, T), lambda q: aw_gradient(q, t, T), len(t), True),
        t,
    )


@given(bag_t, temps, st.sampled_from([0.0, 1.0, 10.0]), st.sampled_from([0.1, 0.5, 1.0]))
def test_alp_update_minimises_its_bag_objective(t, T, c2, p_star):
    t = np.array(t)
    p = _core.probability_update("alp", t, T, c2, p_star)
    assert np.all((p >= 0) & (p <= 1)) and p.sum() >= 1 - 1e-12
    ours = alp_objective(p, t, T, c2, p_star)
    ref = scipy_min(
        lambda q: alp_objective(q, t, T, c2, p_star),
        lambda q: alp_gradient(q, t, T, c2, p_star),
        len(t),
        False,
    )
    assert_minimal(ours, ref, t)


def test_alp_update_minimises_a_steep_penalty_case():
    """Found by hypothesis (test_alp_update_minimises_its_bag_objective with more examples):
    at T = 1, C2 = 10, p* = 1 the safeguarded Newton on ``nu`` alternated between the ends of its
    bracket for all its steps, and the update missed the bag objective's minimum by a factor 5;
    the root finder now finishes with bisection when Newton has not converged."""
    t = np.array([9.0, 9.0, 10.0, 10.0, 19.0, 19.0, 1.19140625])
    T, c2, p_star = 1.0, 10.0, 1.0
    p = _core.probability_update("alp", t, T, c2, p_star)
    ref = scipy_min(
        lambda q: alp_objective(q, t, T, c2, p_star),
        lambda q: alp_gradient(q, t, T, c2, p_star),
        len(t),
        False,
    )
    assert ref == pytest.approx(
        66.78207714918, rel=1e-9
    )  # the KKT point: sum p = 6.05, no active constraint
    assert_minimal(alp_objective(p, t, T, c2, p_star), ref, t)


@given(
    st.lists(st.floats(-20, 20, allow_nan=False), min_size=2, max_size=7),
    st.sampled_from([0.3, 1.0, 10.0]),
    st.sampled_from([0.1, 0.4, 0.5, 1.0]),
    st.booleans(),
)
def test_alp_cold_update_is_the_zero_temperature_minimiser(t, c2, p_star, tie):
    """Below the cold threshold ALP's update is the exact minimiser of p.t + C2 (sum p - m p*)^2
    over the box with sum p >= 1 (the T = 0 limit; SLSQP as the reference), and the tempered
    update at a small T is close to it (the limit is continuous)."""
    t = np.array(t)
    if tie:
        t[1] = t[0]  # a tie at the boundary shares its mass
    m = len(t)
    cold = _core.probability_update("alp", t, 1e-300, c2, p_star)
    assert np.all((cold >= 0) & (cold <= 1)) and cold.sum() >= 1 - 1e-12

    def f(q):
        return float(q @ t + c2 * (q.sum() - m * p_star) ** 2)

    ours = f(cold)
    assert_minimal(ours, scipy_min(f, lambda q: t + 2 * c2 * (q.sum() - m * p_star), m, False), t)
    # equal t, equal p
    for a in range(m):
        for b in range(m):
            if t[a] == t[b]:
                assert cold[a] == cold[b]
    # the tempered update approaches it (T = 1e-7 of the scale): in objective, and in p where
    # the t are apart by much more than T (a near-tie is split by the tempered update)
    scale = np.abs(t).max() + 2 * c2 * m
    warm = _core.probability_update("alp", t, 1e-7 * scale, c2, p_star)
    assert abs(f(warm) - ours) <= 1e-5 * (1 + abs(ours))
    gaps = np.diff(np.unique(t))
    if len(gaps) == 0 or gaps.min() > 1e-3 * scale:
        np.testing.assert_allclose(warm, cold, atol=1e-4)


@pytest.mark.parametrize("kind", ["al", "aw", "alp"])
@pytest.mark.parametrize("T", [0.0, 1e-300, 1e-8, 1.0, 1e300])
@pytest.mark.parametrize(
    "t",
    [
        [1e300, -1e300, 3.0],
        [np.inf, 1.0, 2.0],
        [np.inf, np.inf],
        [-np.inf, 0.0],
        [2.0, 2.0, 2.0],
        [5.0],
    ],
)
def test_updates_stay_finite_and_feasible_at_the_extremes(kind, T, t):
    t = np.array(t, dtype=float)
    if kind == "aw":
        t = np.abs(t)
    p = _core.probability_update(kind, t, T, 10.0, 0.5)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    if kind == "aw":
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
    else:
        assert p.sum() >= 1 - 1e-12


def test_temperature_limits():
    t = np.array([-3.0, -0.5, 0.4, 2.0])
    # T -> inf: maximal entropy (AL: 1/2 each, the sum 2 >= 1; AW: uniform)
    np.testing.assert_allclose(_core.probability_update("al", t, 1e12), 0.5, atol=1e-10)
    np.testing.assert_allclose(_core.probability_update("aw", np.abs(t), 1e12), 0.25, atol=1e-10)
    # T -> 0: mi-SVM's labels (sign of -t) and MI-SVM's witness (smallest loss)
    np.testing.assert_array_equal(_core.probability_update("al", t, 1e-12), [1, 1, 0, 0])
    np.testing.assert_array_equal(_core.probability_update("aw", np.abs(t), 1e-12), [0, 0, 1, 0])
    # no positive at T -> 0: the smallest t takes the whole mass
    np.testing.assert_allclose(
        _core.probability_update("al", np.array([1.0, 0.2, 3.0]), 1e-12), [0, 1, 0], atol=1e-12
    )
    # one-instance bag: p = 1 whatever T
    assert _core.probability_update("al", np.array([50.0]), 1.0)[0] == 1.0
    # ALP with C2 = 0 is AL
    np.testing.assert_allclose(
        _core.probability_update("alp", t, 0.7, 0.0, 0.3), _core.probability_update("al", t, 0.7)
    )


def scaled(bags):
    return bags


def test_misvm_heuristics_equal_zero_temperature_annealing():
    bags, y = easy_bags(seed=1, n_bags=20)
    mi = milsvm.miSVM(C=10, gamma=0.5).fit(bags, y)
    al = milsvm.ALSVM(C=10, gamma=0.5, T0=1e-8, init="labels").fit(bags, y)
    np.testing.assert_allclose(
        mi.decision_function(bags), al.decision_function(bags), rtol=1e-6, atol=1e-8
    )
    for a, b in zip(mi.p_, al.p_):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # MI-SVM against AW-SVM at T0 = 1e-8, with C small enough that no instance reaches the margin
    # (no two instances of a bag tie at zero loss)
    big = milsvm.MISVM(C=0.05, gamma=0.5).fit(bags, y)
    aw = milsvm.AWSVM(C=0.05, gamma=0.5, T0=1e-8).fit(bags, y)
    assert np.max(np.concatenate(big.instance_decision_function(bags))) < 1
    np.testing.assert_allclose(
        big.decision_function(bags), aw.decision_function(bags), rtol=1e-6, atol=1e-8
    )


# --------------------------------------------------------------------------------------------
# mi-SVM and MI-SVM against an independent implementation of Andrews et al.'s loops
# --------------------------------------------------------------------------------------------


def rbf(A, B, gamma):
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def primal_svm(k_reg, k_xz, c_pos, c_neg, start):
    """The SVM step over a fixed basis, by scipy's trust-exact with the generalised Hessian:
    ``min 1/2 beta^T k_reg beta + sum_j [c+_j max(0, 1 - f_j)^2 + c-_j max(0, 1 + f_j)^2]``,
    ``f = k_xz beta + b``. Returns ``(beta, b)``, the value and the scores ``f``."""
    n, k = k_xz.shape
    A = np.hstack([k_xz, np.ones((n, 1))])
    R = np.zeros((k + 1, k + 1))
    R[:k, :k] = k_reg

    def margins(w):
        f = A @ w
        return np.maximum(0.0, 1.0 - f), np.maximum(0.0, 1.0 + f)

    def fun(w):
        mp, mn = margins(w)
        return 0.5 * w @ R @ w + c_pos @ mp**2 + c_neg @ mn**2

    def jac(w):
        mp, mn = margins(w)
        return R @ w + A.T @ (2 * c_neg * mn - 2 * c_pos * mp)

    def hess(w):
        mp, mn = margins(w)
        d = 2 * c_pos * (mp > 0) + 2 * c_neg * (mn > 0)
        return R + A.T @ (d[:, None] * A)

    r = so.minimize(
        fun,
        start,
        jac=jac,
        hess=hess,
        method="trust-exact",
        options={"gtol": 1e-13, "maxiter": 1000},
    )
    # trust-exact may stop at the rounding level of a kink ("bad approximation"); the optimum
    # is then certified by the gradient, small against the loss gradient's scale
    scale = 1.0 + np.abs(A).sum(0).max() * (c_pos + c_neg).max()
    assert r.success or np.abs(jac(r.x)).max() <= 1e-9 * scale, (r.message, np.abs(jac(r.x)).max())
    return r.x, r.fun, A @ r.x


def andrews_reference(bags, y, Z, gamma, C, method, max_iter, class_weight=None, ridge=1e-8):
    """Andrews et al.'s heuristics over the fixed basis ``Z``, written from the paper with
    Gehler & Chapelle's SVM step (the weighted squared hinge above, ridge 1e-8 on K_zz).

    mi-SVM (``method="mi"``): every instance of a positive bag starts positive (cost C as a
    positive, 0 as a negative); train; relabel each instance of a positive bag of two or more
    instances by the sign of f, and if a bag is left without a positive, its instance of
    largest f becomes positive; stop when no label changes. MI-SVM (``"MI"``): each positive
    bag's instances start with weight 1/m_i as positives (never as negatives); train; the
    witness of a positive bag is its instance of largest f (the first of ties), weight 1;
    stop when no witness changes. Instances of negative bags are negatives of cost C. A round
    is one training; after ``max_iter`` rounds without convergence the last labels are trained
    on once more. ``margin`` is the smallest gap the decisions rested on (|f| of a relabelled
    instance, the lead of a bag's top score), to skip cases too close to a tie to compare.
    """
    X = np.vstack(bags)
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in bags])])
    k_xz, k_reg = rbf(X, Z, gamma), rbf(Z, Z, gamma) + ridge * np.eye(len(Z))
    pos = np.asarray(y) == 1
    weight = {0: 1.0, 1: 1.0}
    if class_weight == "balanced":
        weight = {1: len(y) / (2 * pos.sum()), 0: len(y) / (2 * (~pos).sum())}
    cost = C * np.repeat([weight[int(v)] for v in pos], np.diff(ptr))
    neg = np.repeat(~pos, np.diff(ptr))
    p = (
        np.zeros(len(X)) if method == "mi" else neg.astype(float)
    )  # MI: a negative instance weighs 1
    for i in np.flatnonzero(pos):
        p[ptr[i] : ptr[i + 1]] = 1.0 if method == "mi" else 1.0 / (ptr[i + 1] - ptr[i])
    w = np.zeros(len(Z) + 1)

    def train(p, w):
        c_pos = np.where(neg, 0.0, cost * p)
        c_neg = np.where(neg, cost, cost * (1.0 - p) if method == "mi" else 0.0)
        return primal_svm(k_reg, k_xz, c_pos, c_neg, w)

    history, margin, converged = [], np.inf, False
    while len(history) < max_iter:
        w, value, f = train(p, w)
        history.append(value)
        q = p.copy()
        for i in np.flatnonzero(pos):
            lo, hi = ptr[i], ptr[i + 1]
            fb = f[lo:hi]
            top = np.sort(fb)[::-1]
            lead = top[0] - top[1] if len(fb) > 1 else np.inf
            if method == "MI":
                q[lo:hi] = 0.0
                q[lo + np.argmax(fb)] = 1.0
                margin = min(margin, lead)
            elif hi - lo > 1:
                q[lo:hi] = (fb > 0).astype(float)
                margin = min(margin, np.abs(fb).min())
                if not q[lo:hi].any():
                    q[lo + np.argmax(fb)] = 1.0
                    margin = min(margin, lead)
        if np.array_equal(q, p):
            converged = True
            break
        p = q
    if not converged:
        w, _, f = train(p, w)
    return {
        "p": np.split(p, ptr[1:-1]),
        "f": np.split(f, ptr[1:-1]),
        "history": np.array(history),
        "rounds": len(history),
        "converged": converged,
        "margin": margin,
    }


@given(
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(["mi", "MI"]),
    C=st.sampled_from([0.5, 1.0, 10.0]),
    gamma=st.sampled_from([0.3, 1.0]),
    max_iter=st.sampled_from([1, 2, 50]),
    class_weight=st.sampled_from([None, "balanced"]),
)
def test_heuristics_follow_andrews_loops_over_a_fixed_basis(
    seed, method, C, gamma, max_iter, class_weight
):
    """miSVM / MISVM over a given basis Z (``n_xv=k, xv_init=Z``) against the plain NumPy/SciPy
    loops of :func:`andrews_reference`: the same final instance labels (mi-SVM) or witnesses
    (MI-SVM), instance and bag scores to 1e-6, objective after every round to 1e-8 relative,
    the same number of rounds and convergence flag. Cases whose decisions rest on a gap below
    1e-6 (a score at 0, two top scores tied) are skipped."""
    import warnings

    from hypothesis import assume

    rng = np.random.default_rng(seed)
    n_bags, k = int(rng.integers(6, 13)), int(rng.integers(3, 7))
    y = np.arange(n_bags) % 2
    bags = []
    for label in y:
        m = int(rng.integers(1, 6))
        x = rng.normal(size=(m, 2))
        if label:
            x[rng.integers(m)] += 2.0
        bags.append(x)
    Z = 1.5 * rng.normal(size=(k, 2))
    ref = andrews_reference(bags, y, Z, gamma, C, method, max_iter, class_weight)
    assume(ref["margin"] > 1e-6)
    cls = milsvm.miSVM if method == "mi" else milsvm.MISVM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ConvergenceWarning of a capped run
        est = cls(
            C=C, gamma=gamma, n_xv=k, xv_init=Z, max_iter=max_iter, class_weight=class_weight
        ).fit(bags, y)
    np.testing.assert_array_equal(est.xv_, Z)
    assert est.n_iter_ == ref["rounds"] and est.converged_ == ref["converged"]
    np.testing.assert_allclose(est.objective_history_, ref["history"], rtol=1e-8, atol=1e-10)
    for ours, theirs in zip(est.p_, ref["p"]):
        np.testing.assert_array_equal(ours, theirs)
    scores = est.instance_decision_function(bags)
    for ours, theirs in zip(scores, ref["f"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        est.decision_function(bags), [f.max() for f in ref["f"]], rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_fit_predict_and_results_do_not_depend_on_threads(cls):
    bags, y = easy_bags(seed=2, n_bags=24)
    a = cls(C=10, gamma=0.5, n_jobs=1).fit(bags, y)
    b = cls(C=10, gamma=0.5, n_jobs=2).fit(bags, y)
    np.testing.assert_array_equal(a.decision_function(bags), b.decision_function(bags))
    assert a.score(bags, y) >= 0.9
    assert len(a.p_) == len(bags) and all(len(p) == len(x) for p, x in zip(a.p_, bags))
    assert 0 < a.p_hat_ <= 1
    scores = a.instance_decision_function(bags)
    np.testing.assert_allclose([s.max() for s in scores], a.decision_function(bags), rtol=1e-12)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_reduced_basis(cls):
    bags, y = easy_bags(seed=3, n_bags=30)
    for init in ("kmeans", "random"):
        m = cls(C=10, gamma=0.5, n_xv=8, xv_init=init, random_state=0).fit(bags, y)
        assert m.xv_.shape == (8, 2)
        assert m.score(bags, y) >= 0.85
    a = cls(C=10, gamma=0.5, n_xv=8, random_state=0, n_jobs=1).fit(bags, y)
    b = cls(C=10, gamma=0.5, n_xv=8, random_state=0, n_jobs=1).fit(bags, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # the k-means basis and the Newton solves do not depend on the thread count
    c = cls(C=10, gamma=0.5, n_xv=8, random_state=0, n_jobs=2).fit(bags, y)
    np.testing.assert_array_equal(a.xv_, c.xv_)
    np.testing.assert_array_equal(a.coef_, c.coef_)


def test_annealing_objective_and_temperatures():
    bags, y = easy_bags(seed=4, n_bags=20)
    m = milsvm.ALSVM(C=1, gamma=0.5).fit(bags, y)
    assert m.temperatures_[0] == pytest.approx(10.0)
    np.testing.assert_allclose(m.temperatures_[1:] * 1.5, m.temperatures_[:-1])
    assert len(m.objective_history_) == len(m.temperatures_) == m.n_iter_
    assert m.converged_
    # at the end the labels are hard: p close to 0 or 1
    p = np.concatenate([p for p, t in zip(m.p_, y) if t == 1])
    assert np.mean(np.minimum(p, 1 - p)) < 1e-3


def test_edge_bags_one_instance_positive_bags_sizes_and_duplicates():
    rng = np.random.default_rng(0)
    bags = [
        np.array([[2.0, 2.0]]),
        rng.normal(size=(40, 2)),
        np.array([[2.1, 1.9]] * 3 + [[-1.0, 0.0]]),
        rng.normal(size=(1, 2)) - 1,
        rng.normal(size=(7, 2)) - 1,
        np.array([[-1.0, -1.0], [-1.0, -1.0]]),
    ]
    bags[1][0] = [2.0, 2.1]
    y = np.array([1, 1, 1, 0, 0, 0])
    for cls in ESTIMATORS:
        m = cls(C=10, gamma=0.5).fit(bags, y)
        assert np.all(np.isfinite(m.decision_function(bags)))
        if cls in (milsvm.ALSVM, milsvm.ALPSVM, milsvm.miSVM):
            assert m.p_[0][0] == 1.0  # a positive bag of one instance is positive
        assert m.predict(bags)[[0, 2]].tolist() == [1, 1]
        assert all(len(p) == len(b) for p, b in zip(m.p_, bags))


def multiclass_bags():
    """30 bags of three classes 'a', 'b', 'c': one instance near the class centre, three
    background instances around (6, 6)."""
    rng = np.random.default_rng(5)
    centers = np.array([[0, 3], [3, 0], [-3, -3]])
    bags, y = [], []
    for i in range(30):
        c = i % 3
        x = rng.normal(size=(4, 2)) * 0.5 + np.array([6.0, 6.0])
        x[0] = centers[c] + rng.normal(size=2) * 0.3
        bags.append(x)
        y.append(["a", "b", "c"][c])
    return bags, y


def test_multiclass_one_vs_rest():
    bags, y = multiclass_bags()
    m = milsvm.ALSVM(C=10, gamma=0.5).fit(bags, y)
    assert m.decision_function(bags).shape == (30, 3)
    assert m.score(bags, y) >= 0.9
    assert len(m.p_) == 3 and len(m.p_[0]) == 30
    assert m.coef_.shape[0] == 3


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize(
    "params",
    [{}, {"class_weight": "balanced"}, {"n_xv": 6, "random_state": 0}],
    ids=["all-instances", "balanced", "reduced-basis"],
)
def test_multiclass_columns_are_the_binary_fits(cls, params):
    """Every output of a multi-class fit is the binary fit of its class against the rest (same
    parameters; balanced weights are computed per problem, the k-means basis from all the
    instances): decision values, instance scores, p_, p_hat_, the objective and temperature
    histories. Bags fewer than the default test's, with more mixing, so that the problems do not
    stop at their first round."""
    bags, y = multiclass_bags()
    rng = np.random.default_rng(11)
    bags = [b + rng.normal(scale=0.8, size=b.shape) for b in bags]
    assert_one_vs_rest(
        lambda: cls(C=10, gamma=0.5, **params),
        bags,
        y,
        per_problem=("p_", "p_hat_", "objective_history_", "temperatures_"),
    )


def test_class_weight():
    bags, y = easy_bags(seed=6, n_bags=24)
    keep = [i for i in range(24) if y[i] == 0 or i % 4 == 1]  # few positive bags
    bags = [bags[i] for i in keep]
    y = y[keep]
    plain = milsvm.miSVM(C=1, gamma=0.5).fit(bags, y)
    bal = milsvm.miSVM(C=1, gamma=0.5, class_weight="balanced").fit(bags, y)
    assert not np.allclose(plain.decision_function(bags), bal.decision_function(bags))
    n, npos = len(y), int(y.sum())
    given = milsvm.miSVM(
        C=1, gamma=0.5, class_weight={0: n / (2 * (n - npos)), 1: n / (2 * npos)}
    ).fit(bags, y)
    np.testing.assert_allclose(
        given.decision_function(bags), bal.decision_function(bags), rtol=1e-10
    )
    with pytest.raises(ValueError, match="class_weight"):
        milsvm.miSVM(class_weight={7: 1.0}).fit(bags, y)
    with pytest.raises(ValueError, match="class_weight"):
        milsvm.miSVM(class_weight="heavy").fit(bags, y)
    with pytest.raises(ValueError, match="class weights"):
        milsvm.miSVM(class_weight={0: -1.0}).fit(bags, y)


@pytest.mark.parametrize(
    "cls, params, match",
    [
        (milsvm.ALSVM, {"C": -1}, "C must"),
        (milsvm.ALSVM, {"decay": 1.0}, "decay"),
        (milsvm.ALSVM, {"eps": 0.0}, "eps"),
        (milsvm.ALSVM, {"T0": -1.0}, "T0"),
        (milsvm.ALSVM, {"init": "ones"}, "init"),
        (milsvm.ALPSVM, {"p_star": 1.5}, "p_star"),
        (milsvm.ALPSVM, {"C2": -1.0}, "C2"),
        (milsvm.miSVM, {"max_iter": 0}, "max_iter"),
        (milsvm.miSVM, {"n_xv": 0}, "n_xv"),
        (milsvm.miSVM, {"n_xv": 10_000}, "n_xv"),
        (milsvm.AWSVM, {"gamma": "auto"}, "gamma"),
        (milsvm.AWSVM, {"gamma": -2.0}, "gamma"),
        (milsvm.AWSVM, {"kernel": "poly"}, "kernel"),
        (milsvm.AWSVM, {"xv_init": "grid", "n_xv": 3}, "xv_init"),
    ],
)
def test_bad_parameters_are_refused(cls, params, match):
    bags, y = easy_bags(seed=7, n_bags=10)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(bags, y)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_data_is_refused(cls):
    bags, y = random_bags(0, n_bags=6)
    assert_refuses_bad_bags(cls, bags, y)
    with pytest.raises(TypeError, match="C must be a real number, got 'big'"):
        cls(C="big").fit(bags, y)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clone_pickle_save_load(cls, tmp_path):
    bags, y = easy_bags(seed=8, n_bags=16)
    m = cls(C=10, gamma=0.5).fit(bags, y)
    c = clone(m)
    assert c.get_params() == m.get_params()
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(again.decision_function(bags), m.decision_function(bags))
    path = tmp_path / "model.json"
    m.save(path)
    loaded = milsvm.load(path)
    assert type(loaded) is cls
    np.testing.assert_allclose(
        loaded.decision_function(bags), m.decision_function(bags), rtol=1e-12
    )
    np.testing.assert_array_equal(loaded.predict(bags), m.predict(bags))


def test_iteration_cap_warns_and_keeps_a_usable_model():
    from sklearn.exceptions import ConvergenceWarning

    bags, y = random_bags(3, n_bags=16, d=2, max_size=6)
    with pytest.warns(ConvergenceWarning):
        m = milsvm.ALSVM(C=100, gamma=2.0, max_iter=1).fit(bags, y)
    assert not m.converged_
    assert np.all(np.isfinite(m.decision_function(bags)))


def test_gamma_median_is_the_papers_sigma():
    bags, y = easy_bags(seed=9, n_bags=12)
    X = np.vstack(bags)
    d = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    sigma = np.median(d[np.triu_indices(len(X), 1)])
    m = milsvm.miSVM(gamma="median").fit(bags, y)
    assert m.gamma_ == pytest.approx(1 / (2 * sigma**2), rel=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_n_xv_auto_takes_the_full_basis_on_small_sets_and_a_reduced_one_above():
    """``n_xv="auto"`` (the default): every instance up to AUTO_FULL_BASIS_MAX instances, else
    AUTO_N_XV k-means centroids; the choice is ``n_xv_``, recorded in the model file, and said
    in verbose mode."""
    from milsvm import _core

    assert (_core.AUTO_FULL_BASIS_MAX, _core.AUTO_N_XV) == (5000, 500)
    rng = np.random.default_rng(0)
    small = [rng.normal(size=(3, 2)) + 2.0 * (i % 2) for i in range(20)]
    y = np.arange(20) % 2
    est = milsvm.miSVM().fit(small, y)
    assert est.n_xv == "auto" and est.n_xv_ is None and est.solver_ == "kernel"
    n_bags = 5001 // 3 + 1
    big = [rng.normal(size=(3, 2)) + 2.0 * (i % 2) for i in range(n_bags)]
    yb = np.arange(n_bags) % 2
    auto = milsvm.miSVM(max_iter=2, random_state=0).fit(big, yb)
    assert auto.n_xv_ == 500 and auto.xv_.shape == (500, 2)
    same = milsvm.miSVM(n_xv=500, max_iter=2, random_state=0).fit(big, yb)
    np.testing.assert_array_equal(auto.decision_function(big), same.decision_function(big))
    assert (
        json.loads(auto.model_.to_json(info=json.dumps(auto._saved_info())))["info"]["n_xv_"] == 500
    )
    # the linear kernel fits w directly under "auto"
    assert milsvm.MISVM(kernel="linear").fit(big, yb).solver_ == "linear"
    # a given basis under "auto" is used with its own size
    given = milsvm.miSVM(xv_init=np.zeros((3, 2)) + np.arange(3)[:, None], max_iter=1).fit(small, y)
    assert given.n_xv_ == 3
    with pytest.raises(ValueError, match="n_xv must be 'auto', None or an integer >= 1"):
        milsvm.miSVM(n_xv="many").fit(small, y)
    with pytest.raises(ValueError, match="n_xv must be 'auto', None or an integer >= 1, got 0"):
        milsvm.miSVM(n_xv=0).fit(small, y)


def test_n_xv_auto_is_said_in_verbose_mode(capsys):
    rng = np.random.default_rng(1)
    bags = [rng.normal(size=(3, 2)) + 2.0 * (i % 2) for i in range(12)]
    milsvm.MISVM(verbose=1).fit(bags, np.arange(12) % 2)
    out = capsys.readouterr().out
    assert (
        "basis: every training instance (n_xv='auto': the full basis up to 5000 training instances"
        in out
    )
