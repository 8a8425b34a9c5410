"""stMIL and MissSVM (``src/semi_supervised.rs``): each CCCP step's QP against scipy (with the group
costs and class weights), the objective never increasing, the recorded objective equal to the
model's, restarts (the model is the run of least objective, reproducible by ``random_state``),
the MI constraint on separable data, bad input, model files, the compiled predictor against
NumPy, thread independence and scikit-learn's clone / GridSearchCV."""

import json

import milsvm
import numpy as np
import pytest
from conftest import assert_clone_and_pickle, easy_bags, fit_quietly, random_bags, three_class_bags
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

CLASSES = [milsvm.stMIL, milsvm.MissSVM]
ids = [c.__name__ for c in CLASSES]


def solver_bias(cls):
    """stMIL with the plain-mean bag score keeps the solver's bias (its default takes a
    threshold off it): the parameters under which the objective can be read off the model."""
    return {"bag_score": "mean"} if cls is milsvm.stMIL else {}


def costs(est, bags, y):
    """The three unit costs of ``est``'s objective (module docs of ``src/semi_supervised.rs``):
    a negative instance ``C w_-``, a positive bag ``C w_+ L_n / |X_p|``, an instance of a
    positive bag ``tau C w_+ L_n / N_p`` (``L_n`` negative instances, ``N_p`` instances of
    positive bags; ``w`` the class weights as given)."""
    cw = est.class_weight or {}
    w_neg, w_pos = cw.get(est.classes_[0], 1.0), cw.get(est.classes_[1], 1.0)
    pos = [i for i in range(len(bags)) if y[i] == est.classes_[1]]
    l_n = sum(len(bags[i]) for i in range(len(bags)) if y[i] != est.classes_[1])
    n_p = sum(len(bags[i]) for i in pos)
    C, tau = est.C, est.transductive_weight
    return C * w_neg, C * w_pos * l_n / len(pos), tau * C * w_pos * l_n / n_p


def surrogate_terms(est, bags, y):
    """The convex surrogate of the QP whose solution is ``est``'s model, as (rows, targets, signs,
    costs): a hinge ``cost * max(0, target - sign * (w . row + b))`` per term, from the fitted
    ``signs_`` and ``witnesses_`` (binary fits)."""
    c_neg, c_bag, ct = costs(est, bags, y)
    pos = [i for i in range(len(bags)) if y[i] == est.classes_[1]]
    X = np.vstack(bags)
    rows, targets, signs, cost = [], [], [], []
    for i, b in enumerate(bags):
        if y[i] != est.classes_[1]:
            for x in b:
                rows.append(x), targets.append(1.0), signs.append(-1.0), cost.append(c_neg)
    for k, i in enumerate(pos):
        w = est.witnesses_[k]
        n = len(bags[i])
        rows.append(bags[i].mean(0) if w < 0 else X[w])
        targets.append((2.0 - n) / n if isinstance(est, milsvm.stMIL) else 1.0)
        signs.append(1.0), cost.append(c_bag)
    s = iter(est.signs_)
    for i in pos:
        for x in bags[i]:
            si = next(s)
            if si != 0:
                rows.append(x), targets.append(1.0), signs.append(si), cost.append(ct)
            elif isinstance(est, milsvm.MissSVM):  # the start: both signs at half cost
                for sg in (1.0, -1.0):
                    rows.append(x), targets.append(1.0), signs.append(sg), cost.append(ct / 2)
    return np.array(rows), np.array(targets), np.array(signs), np.array(cost)


def surrogate_value(terms, w, b):
    rows, t, s, c = terms
    return 0.5 * w @ w + np.sum(c * np.maximum(0.0, t - s * (rows @ w + b)))


def reference_optimum(terms, d):
    """The surrogate's minimum by SLSQP on its epigraph form (w, b, xi)."""
    rows, t, s, c = terms
    m = len(t)

    def obj(z):
        return 0.5 * z[:d] @ z[:d] + c @ z[d + 1 :]

    def jac(z):
        g = np.zeros_like(z)
        g[:d] = z[:d]
        g[d + 1 :] = c
        return g

    cons = [
        {
            "type": "ineq",
            "fun": lambda z: s * (rows @ z[:d] + z[d]) - t + z[d + 1 :],
            "jac": lambda z: np.hstack([s[:, None] * rows, s[:, None], np.eye(m)]),
        },
        {
            "type": "ineq",
            "fun": lambda z: z[d + 1 :],
            "jac": lambda z: np.hstack([np.zeros((m, d + 1)), np.eye(m)]),
        },
    ]
    z0 = np.concatenate([np.zeros(d + 1), np.maximum(t, 0) + 1])
    res = minimize(
        obj, z0, jac=jac, constraints=cons, method="SLSQP", options={"maxiter": 1000, "ftol": 1e-12}
    )
    return res.fun


def objective(est, bags, y):
    """The method's objective J at the fitted model, from its instance scores (linear kernel)."""
    c_neg, c_bag, ct = costs(est, bags, y)
    f = est.instance_decision_function(bags)
    w = est.xv_[0]
    total = 0.5 * w @ w
    for i, fi in enumerate(f):
        if y[i] != est.classes_[1]:
            total += c_neg * np.sum(np.maximum(0, 1 + fi))
        else:
            n = len(fi)
            if isinstance(est, milsvm.stMIL):
                total += c_bag * max(0.0, (2 - n) / n - fi.mean())
            else:
                total += c_bag * max(0.0, 1 - fi.max())
            total += ct * np.sum(np.maximum(0, 1 - np.abs(fi)))
    return total


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
@pytest.mark.parametrize("steps", [1, 2, 3])
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    tau=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    cw=st.sampled_from([None, {0: 1.0, 1: 0.3}, {0: 2.5, 1: 1.0}]),
)
def test_each_step_solves_its_surrogate_qp(cls, steps, seed, tau, C, cw):
    bags, y = random_bags(seed, n_bags=8, d=2, max_size=4)
    est = fit_quietly(
        cls(
            C=C,
            kernel="linear",
            transductive_weight=tau,
            class_weight=cw,
            max_iter=steps,
            inner_tol=1e-9,
            **solver_bias(cls),
        ),
        bags,
        y,
    )
    terms = surrogate_terms(est, bags, y)
    ours = surrogate_value(terms, est.xv_[0], est.intercept_)
    ref = reference_optimum(terms, 2)
    assert ours == pytest.approx(ref, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    tau=st.sampled_from([0.3, 1.0, 3.0]),
    C=st.sampled_from([1.0, 10.0, 100.0]),
    restarts=st.sampled_from([0, 2]),
)
def test_the_objective_never_increases(cls, kernel, seed, tau, C, restarts):
    bags, y = random_bags(seed, n_bags=10, d=3, max_size=5)
    est = fit_quietly(
        cls(
            C=C,
            kernel=kernel,
            transductive_weight=tau,
            inner_tol=1e-10,
            tol=1e-12,
            restarts=restarts,
            random_state=seed,
        ),
        bags,
        y,
    )
    h = est.objective_history_
    if restarts == 0:
        assert len(h) == est.n_iter_ + 1
    else:  # a restart's history has no start value
        assert len(h) in (est.n_iter_, est.n_iter_ + 1)
    assert np.all(np.diff(h) <= 1e-7 * max(1.0, abs(h[0]))), h


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    tau=st.sampled_from([0.3, 1.0]),
    restarts=st.sampled_from([0, 3]),
)
def test_the_recorded_objective_is_the_models(cls, seed, tau, restarts):
    bags, y = random_bags(seed, n_bags=10, d=3, max_size=5)
    est = fit_quietly(
        cls(
            C=10.0,
            kernel="linear",
            transductive_weight=tau,
            inner_tol=1e-10,
            restarts=restarts,
            random_state=seed,
            **solver_bias(cls),
        ),
        bags,
        y,
    )
    j = objective(est, bags, y)
    runs = est.run_objectives_
    assert runs.shape == (restarts + 1,)
    # the model is the run of least objective, and that run's last accepted iterate: the least
    # value of its history (after the start, for MissSVM's w = 0)
    assert j == pytest.approx(runs.min(), rel=1e-8, abs=1e-9)
    h = est.objective_history_
    from_zero = isinstance(est, milsvm.MissSVM) and len(h) == est.n_iter_ + 1
    assert runs.min() == pytest.approx((h[1:] if from_zero else h).min(), rel=1e-12)


@pytest.mark.parametrize("bag_score", [None, "mean_offset", "smil_mean", "mean", "mean_platt"])
def test_stmil_without_the_transductive_term_is_smil(bag_score):
    """stMIL's positive bags weigh L_n / |X_p| each: sMIL's class weight does the same; each
    bag score is sMIL's rule on the same solution, and stMIL's default is ``"mean_offset"``
    (sMIL's ``"auto"`` rests on sMIL's own out-of-fold fits)."""
    bags, y = random_bags(3, n_bags=12, d=3)
    rule = {} if bag_score is None else {"bag_score": bag_score}
    st_ = milsvm.stMIL(C=10.0, transductive_weight=0.0, inner_tol=1e-8, **rule).fit(bags, y)
    l_n = sum(len(b) for b, t in zip(bags, y) if t == 0)
    sm_rule = {"bag_score": bag_score or "mean_offset"}
    sm = milsvm.sMIL(
        C=10.0, class_weight={0: 1.0, 1: l_n / np.sum(y == 1)}, inner_tol=1e-8, **sm_rule
    ).fit(bags, y)
    assert st_.n_iter_ == 1 and st_.converged_
    assert st_.bag_score == sm.bag_score and st_.model_.pooling == sm.model_.pooling
    np.testing.assert_allclose(st_.decision_function(bags), sm.decision_function(bags), atol=1e-5)
    np.testing.assert_allclose(st_.intercept_, sm.intercept_, atol=1e-5)


def test_stmil_files_without_the_bag_score_keep_the_size_shift(tmp_path):
    """stMIL's models were written with the ``"smil_mean"`` pooling and no ``bag_score`` before
    stMIL took sMIL's rule: such a file loads with that rule and its scores."""
    bags, y = random_bags(4, n_bags=12, d=3)
    old = milsvm.stMIL(C=10.0, bag_score="smil_mean").fit(bags, y)
    old.save(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["pooling"] == "smil_mean"
    del doc["params"]["bag_score"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    back = milsvm.load(tmp_path / "old.json")
    assert back.bag_score == "smil_mean" and back.model_.pooling == "smil_mean"
    np.testing.assert_array_equal(back.decision_function(bags), old.decision_function(bags))
    new = milsvm.load(tmp_path / "m.json")
    assert new.bag_score == "smil_mean"
    default = milsvm.stMIL(C=10.0).fit(bags, y)
    default.save(tmp_path / "d.json")
    assert milsvm.load(tmp_path / "d.json").bag_score == "mean_offset"


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_restarts_keep_the_least_objective_and_are_reproducible(cls):
    bags, y = random_bags(11, n_bags=30, d=3, max_size=6)
    plain = fit_quietly(cls(C=10.0), bags, y)
    a = fit_quietly(cls(C=10.0, restarts=5, random_state=3, n_jobs=1), bags, y)
    b = fit_quietly(cls(C=10.0, restarts=5, random_state=3, n_jobs=2), bags, y)
    # the method's own start is run first, as without restarts
    assert plain.run_objectives_.shape == (1,)
    assert a.run_objectives_[0] == plain.run_objectives_[0]
    assert a.run_objectives_.min() <= plain.run_objectives_[0]
    # the same seed: the same draws, whatever the thread count
    np.testing.assert_array_equal(a.run_objectives_, b.run_objectives_)
    np.testing.assert_array_equal(a.decision_function(bags), b.decision_function(bags))
    # the restarts differ from one another (random signs), and another seed draws others
    assert len(np.unique(a.run_objectives_)) > 1
    c = fit_quietly(cls(C=10.0, restarts=5, random_state=4), bags, y)
    assert not np.array_equal(a.run_objectives_[1:], c.run_objectives_[1:])
    # the model is the run of least objective; if a restart won, its model differs from the plain
    # one
    if np.argmin(a.run_objectives_) > 0:
        assert not np.allclose(a.decision_function(bags), plain.decision_function(bags))
    else:
        np.testing.assert_array_equal(a.decision_function(bags), plain.decision_function(bags))


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_a_restart_is_needed_on_a_data_set_where_the_start_is_not_best(cls):
    # the lowest objective over restarts is strictly below the method's own start on some data
    found = False
    for seed in range(30):
        bags, y = random_bags(seed, n_bags=20, d=3, max_size=6)
        est = fit_quietly(cls(C=10.0, restarts=4, random_state=0), bags, y)
        if est.run_objectives_.min() < est.run_objectives_[0] * (1 - 1e-6):
            found = True
            break
    assert found


def test_misssvm_puts_every_positive_bag_above_zero_on_separable_data():
    bags, y = easy_bags(1, n_bags=30)
    est = milsvm.MissSVM(C=1000.0, kernel="linear", inner_tol=1e-8).fit(bags, y)
    assert est.converged_
    f = est.instance_decision_function(bags)
    for fi, yi in zip(f, y):
        if yi == 1:
            assert fi.max() >= 1 - 1e-4  # the bag's constraint max f >= 1 holds
        else:
            assert np.all(fi <= -1 + 1e-4)
    # every witness is its bag's best instance
    starts = np.concatenate([[0], np.cumsum([len(b) for b in bags])])
    allf = np.concatenate(f)
    for k, i in enumerate(est.positive_bags_):
        w = est.witnesses_[k]
        assert starts[i] <= w < starts[i + 1]
    assert np.all(est.signs_ != 0)
    assert allf.shape[0] == starts[-1]


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_compiled_predictor_equals_numpy(cls, kernel):
    bags, y = random_bags(5, n_bags=12, d=3)
    est = fit_quietly(cls(C=10.0, kernel=kernel, gamma=0.5), bags, y)
    X = np.vstack(bags)
    if kernel == "linear":
        K = X @ est.xv_.T
    else:
        K = np.exp(-0.5 * ((X[:, None, :] - est.xv_[None]) ** 2).sum(-1))
    f = K @ est.coef_.ravel() + est.intercept_
    starts = np.concatenate([[0], np.cumsum([len(b) for b in bags])])
    parts = [f[a:b] for a, b in zip(starts[:-1], starts[1:])]
    if cls is milsvm.MissSVM:
        want = [p.max() for p in parts]
    else:
        want = [p.mean() for p in parts]  # the default bag score: its threshold is in intercept_
    np.testing.assert_allclose(est.decision_function(bags), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_model_file_round_trip(cls, tmp_path):
    bags, y = three_class_bags()
    est = fit_quietly(cls(C=10.0, max_iter=5), bags, y)
    est.save(tmp_path / "m.json")
    back = milsvm.load(tmp_path / "m.json")
    assert type(back) is cls and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.decision_function(bags), est.decision_function(bags))
    assert list(back.predict(bags)) == list(est.predict(bags))


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_results_do_not_depend_on_threads(cls):
    bags, y = random_bags(7, n_bags=40, d=4, max_size=6)
    a = fit_quietly(cls(C=10.0, n_jobs=1), bags, y)
    b = fit_quietly(cls(C=10.0, n_jobs=2), bags, y)
    np.testing.assert_array_equal(a.decision_function(bags), b.decision_function(bags))
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_clone_pickle_and_grid_search(cls):
    assert_clone_and_pickle(cls())
    bags, y = easy_bags()
    gs = GridSearchCV(cls(kernel="linear"), {"C": [0.1, 10.0]}, cv=3).fit(bags, y)
    assert gs.best_score_ >= 0.8
    assert clone(gs.best_estimator_).get_params()["C"] in (0.1, 10.0)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_multiclass_is_one_vs_rest(cls):
    bags, y = three_class_bags()
    est = fit_quietly(cls(C=10.0), bags, y)
    assert est.decision_function(bags).shape == (len(bags), 3)
    assert np.mean(est.predict(bags) == y) >= 0.9
    assert len(est.objective_history_) == 3
    est = fit_quietly(cls(C=10.0, restarts=2, random_state=0), bags, y)
    assert len(est.run_objectives_) == 3 and all(len(r) == 3 for r in est.run_objectives_)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
@pytest.mark.parametrize(
    "params, match",
    [
        ({"transductive_weight": -1.0}, "transductive_weight"),
        ({"transductive_weight": float("nan")}, "transductive_weight"),
        ({"max_iter": 0}, "max_iter"),
        ({"restarts": -1}, "restarts"),
        ({"tol": 0.0}, "tol"),
        ({"inner_tol": 1.5}, "inner_tol"),
        ({"C": -1.0}, "C"),
        ({"kernel": "poly"}, "kernel"),
    ],
)
def test_bad_parameters_are_refused(cls, params, match):
    bags, y = easy_bags()
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(bags, y)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_a_fractional_restart_count_is_a_type_error(cls):
    bags, y = easy_bags()
    with pytest.raises(TypeError, match="restarts"):
        cls(restarts=1.5).fit(bags, y)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_bad_data_is_refused(cls):
    bags, y = easy_bags()
    with pytest.raises(ValueError):
        cls().fit(bags, np.zeros(len(bags)))  # one class
    bad = [b.copy() for b in bags]
    bad[0][0, 0] = np.nan
    with pytest.raises(ValueError):
        cls().fit(bad, y)
    with pytest.raises(ValueError):
        cls().fit(bags[:-1], y)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_hitting_max_iter_warns(cls):
    from sklearn.exceptions import ConvergenceWarning

    # a data set on which the CCCP takes more than one step
    seed = next(
        s
        for s in range(100)
        if fit_quietly(
            cls(C=100.0, tol=1e-300), *random_bags(s, n_bags=20, d=3, max_size=6)
        ).n_iter_
        > 1
    )
    bags, y = random_bags(seed, n_bags=20, d=3, max_size=6)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        est = cls(C=100.0, max_iter=1, tol=1e-300).fit(bags, y)
    assert est.n_iter_ == 1 and not est.converged_


def test_sparse_input_stays_sparse_with_the_linear_kernel():
    bags, y = random_bags(2, n_bags=12, d=6, sparse=True)
    dense = [b.toarray() for b in bags]
    for cls in CLASSES:
        a = fit_quietly(cls(C=10.0, kernel="linear", inner_tol=1e-10), bags, y)
        b = fit_quietly(cls(C=10.0, kernel="linear", inner_tol=1e-10), dense, y)
        assert a.xv_.shape == (1, 6)
        np.testing.assert_allclose(a.decision_function(bags), b.decision_function(dense), atol=1e-6)
