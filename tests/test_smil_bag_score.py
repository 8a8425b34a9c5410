"""sMIL's bag score (``bag_score``, issue 43): the default ``"mean_offset"`` (the plain mean of
the instance scores minus one threshold ``t``, the midpoint of the medians of the training bags'
plain means in the two classes), the
option ``"smil_mean"`` (the mean plus the bag's own shift ``1 - 1/|X|``) and ``"mean"``, against
a NumPy computation of the model's expansion; bags of very different sizes, which the
size-dependent shift ranks by size; saved files of every rule, and of the code before the
parameter existed, keep their rule."""

import json
import warnings
from pathlib import Path

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import easy_bags
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

DATA = Path(__file__).resolve().parent / "data"


def rbf(a, b, gamma):
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    return np.exp(-gamma * np.maximum(d, 0))


def numpy_plain_means(est, bags):
    """Each bag's mean of ``f(x) = sum_t coef_t k(xv_t, x) + intercept_``, computed by NumPy from
    the fitted attributes (not by the crate's predictor)."""
    xv = est.xv_.toarray() if sp.issparse(est.xv_) else np.asarray(est.xv_)
    out = []
    for b in bags:
        b = b.toarray() if sp.issparse(b) else np.asarray(b, float)
        k = b @ xv.T if est.model_.kernel == "linear" else rbf(b, xv, est.gamma_)
        out.append(np.mean(k @ np.asarray(est.coef_).ravel() + est.intercept_))
    return np.array(out)


def fit(bags, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return milsvm.sMIL(**params).fit(bags, y)


def threshold(plain, bags, y):
    """The default rule's threshold: the midpoint of the two classes' median plain means of the
    training bags (``plain`` the fitted ``bag_score="mean"`` model)."""
    s = plain.decision_function(bags)
    return 0.5 * (np.median(s[y == 1]) + np.median(s[y == 0]))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_each_rule_against_numpy(kernel):
    bags, y = easy_bags(3, n_bags=30)
    test, _ = easy_bags(4, n_bags=20)
    fits = {
        rule: fit(bags, y, C=10.0, kernel=kernel, bag_score=rule, inner_tol=1e-8)
        for rule in ("mean_offset", "smil_mean", "mean")
    }
    plain = fits["mean"]
    # one solve: the rules differ in the bag score only
    for est in fits.values():
        np.testing.assert_array_equal(est.dual_coef_, plain.dual_coef_)
    assert milsvm.sMIL().bag_score == "auto"
    # mean_offset: mean pooling, the threshold inside the bias
    est = fits["mean_offset"]
    assert est.model_.pooling == "mean"
    t = threshold(plain, bags, y)
    assert est.intercept_ == pytest.approx(plain.intercept_ - t, rel=0, abs=1e-14)
    n = np.array([len(b) for b in test])
    np.testing.assert_allclose(
        est.decision_function(test), numpy_plain_means(est, test), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        est.decision_function(test), plain.decision_function(test) - t, rtol=1e-12, atol=1e-12
    )
    # smil_mean: the same instance scores, each bag shifted by its own size
    old = fits["smil_mean"]
    assert old.model_.pooling == "smil_mean" and old.intercept_ == plain.intercept_
    np.testing.assert_allclose(
        old.decision_function(test),
        numpy_plain_means(plain, test) + 1 - 1 / n,
        rtol=1e-10,
        atol=1e-12,
    )
    # mean: the plain mean with the solver's bias
    assert plain.model_.pooling == "mean"
    np.testing.assert_allclose(
        plain.decision_function(test), numpy_plain_means(plain, test), rtol=1e-10, atol=1e-12
    )
    # instance scores: their mean over a bag is the bag score, for every rule
    for est in fits.values():
        inst = est.instance_decision_function(test)
        np.testing.assert_allclose(
            [np.mean(s) for s in inst], est.decision_function(test), rtol=1e-10, atol=1e-12
        )
    # at threshold 0 the default classifies the training bags as well as the size shift, and
    # the plain mean calls too many negative
    acc = {rule: est.score(bags, y) for rule, est in fits.items()}
    assert acc["mean_offset"] >= acc["smil_mean"] > acc["mean"]


def sized_bags(seed, n_bags=40):
    """Small positive bags (1 or 2 instances, one near (2, 2)) and large negative bags (30 to
    60 instances around the origin), plus a few of each kind of the other size."""
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        pos = i % 2 == 1
        big = (i % 8 in (0, 2, 4)) if not pos else (i % 8 == 7)
        n = int(rng.integers(30, 61)) if big else int(rng.integers(1, 3))
        x = rng.normal(0.0, 0.5, size=(n, 2))
        if pos:
            x[0] = rng.normal(2.0, 0.2, size=2)
        bags.append(x)
        y.append(int(pos))
    return bags, np.array(y)


def test_bags_of_very_different_sizes_rank_by_content_not_size():
    """At small C the instance scores are far below 1 in size, so the shift ``1 - 1/|X|`` of
    ``"smil_mean"`` decides the order: large bags first, whatever they hold. The default's one
    threshold leaves the plain mean's order, which follows the content."""
    bags, y = sized_bags(0)
    test, yt = sized_bags(1)
    sizes = np.array([len(b) for b in test])
    assert len(set(sizes)) > 10 and sizes.max() >= 30 and sizes.min() == 1
    default = fit(bags, y, C=0.01, gamma=0.5, bag_score="mean_offset")
    shifted = fit(bags, y, C=0.01, gamma=0.5, bag_score="smil_mean")
    s_default, s_shifted = default.decision_function(test), shifted.decision_function(test)
    assert np.abs(s_default - s_default.mean()).max() < 0.2  # |f| far below 1
    # the default ranks by content
    assert roc_auc_score(yt, s_default) > 0.95
    # the size shift ranks by size: the order of s_shifted is nearly that of the sizes
    assert roc_auc_score(yt, s_shifted) < 0.6
    big = sizes >= 30
    assert s_shifted[big].min() > s_shifted[~big].max()
    # and the same bag scored alone or among others gets the same score under the default
    one = np.array([default.decision_function([b])[0] for b in test])
    np.testing.assert_allclose(one, s_default, rtol=1e-12, atol=1e-14)


def test_the_threshold_is_learnt_from_the_training_bags():
    """The threshold sits between the two classes' median training scores, wherever the
    solution put them: at small C the plain mean of every bag is far below 0 (the scores stay
    near the bias), and threshold 0 calls every bag negative."""
    bags, y = sized_bags(2)
    test, yt = sized_bags(3)
    for C in (0.01, 1.0, 100.0):
        est = fit(bags, y, C=C, gamma=0.5, bag_score="mean_offset")
        plain = fit(bags, y, C=C, gamma=0.5, bag_score="mean")
        t = threshold(plain, bags, y)
        assert est.intercept_ == pytest.approx(plain.intercept_ - t, rel=0, abs=1e-14)
        s = est.decision_function(bags)
        assert np.median(s[y == 1]) == pytest.approx(-np.median(s[y == 0]), abs=1e-12)
        assert est.score(test, yt) >= 0.8
        if C == 0.01:
            # far from the margins both threshold-0 rules call every bag negative
            shifted = fit(bags, y, C=C, gamma=0.5, bag_score="smil_mean")
            assert plain.score(test, yt) == shifted.score(test, yt) == 0.5


def test_multiclass_outputs_have_their_own_thresholds():
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(1, 7)), 2)) + 3 * (i % 3) for i in range(30)]
    y = np.arange(30) % 3
    est = fit(bags, y, C=10.0, bag_score="mean_offset")
    plain = fit(bags, y, C=10.0, bag_score="mean")
    s = plain.decision_function(bags)
    t = [0.5 * (np.median(s[y == k, k]) + np.median(s[y != k, k])) for k in range(3)]
    np.testing.assert_allclose(est.intercept_, plain.intercept_ - np.array(t), rtol=0, atol=1e-14)
    np.testing.assert_allclose(est.decision_function(bags), s - np.array(t), rtol=1e-12, atol=1e-12)
    assert len(set(np.round(t, 6))) == 3


def test_bad_rule_is_refused():
    bags, y = easy_bags(0)
    with pytest.raises(ValueError, match="bag_score"):
        milsvm.sMIL(bag_score="median").fit(bags, y)


def platt_threshold(scores, y):
    """Where Platt's sigmoid ``1 / (1 + exp(a s + b))`` fitted to ``scores`` (his smoothed
    targets, plain Newton steps to convergence) is 1/2: ``-b / a``."""
    n_pos, n_neg = (y == 1).sum(), (y != 1).sum()
    t = np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(a * scores + b))
        g = np.array([np.sum((t - p) * scores), np.sum(t - p)])
        w = p * (1.0 - p)
        H = np.array(
            [[np.sum(w * scores * scores), np.sum(w * scores)], [np.sum(w * scores), np.sum(w)]]
        )
        step = np.linalg.solve(H, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-13:
            break
    return -b / a


@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_platt_threshold_against_numpy(C):
    """``"mean_platt"``: the plain mean less the score where Platt's sigmoid fitted to the
    training bags' plain means is 1/2; the same ranking as the default, another threshold."""
    bags, y = sized_bags(4)
    test, yt = sized_bags(5)
    est = fit(bags, y, C=C, gamma=0.5, bag_score="mean_platt")
    plain = fit(bags, y, C=C, gamma=0.5, bag_score="mean")
    default = fit(bags, y, C=C, gamma=0.5, bag_score="mean_offset")
    t = platt_threshold(plain.decision_function(bags), y)
    assert est.model_.pooling == "mean"
    # the crate's Newton stops at LIBSVM's gradient tolerance (1e-5): t to about 1e-7
    assert est.intercept_ == pytest.approx(plain.intercept_ - t, rel=1e-6, abs=1e-7)
    np.testing.assert_allclose(
        est.decision_function(test), plain.decision_function(test) - t, rtol=1e-6, atol=1e-7
    )
    # one ranking for the three mean rules; the thresholds differ
    order = np.argsort(plain.decision_function(test), kind="stable")
    for other in (est, default):
        assert np.all(np.diff(other.decision_function(test)[order]) >= -1e-12)
    assert abs(t - threshold(plain, bags, y)) > 1e-6
    assert est.score(test, yt) >= 0.8


@pytest.mark.parametrize("rule", ["mean_offset", "smil_mean", "mean", "mean_platt"])
def test_saved_models_keep_their_rule(tmp_path, rule):
    bags, y = easy_bags(5)
    est = fit(bags, y, C=10.0, bag_score=rule)
    est.save(tmp_path / "m.json")
    back = milsvm.load(tmp_path / "m.json")
    assert back.bag_score == rule
    assert back.model_.pooling == est.model_.pooling
    np.testing.assert_array_equal(back.decision_function(bags), est.decision_function(bags))


def test_files_written_before_the_parameter_keep_their_rule(tmp_path):
    """``smil_v7_smil_mean.json`` was saved by the code before ``bag_score`` existed (format
    version 7, pooling ``"smil_mean"``, no ``bag_score`` in its parameters): it loads with that
    rule. The same file with pooling ``"mean"`` (how sMIL models were saved before the
    ``"smil_mean"`` pooling) loads as the plain mean."""
    path = DATA / "models_v7" / "sMIL_smil_mean.json"
    doc = json.loads(path.read_text())
    assert (
        doc["version"] == 7 and doc["pooling"] == "smil_mean" and "bag_score" not in doc["params"]
    )
    bags, _ = easy_bags(6)
    n = np.array([len(b) for b in bags])
    old = milsvm.load(path)
    assert old.bag_score == "smil_mean" and old.model_.pooling == "smil_mean"
    means = numpy_plain_means(old, bags)
    np.testing.assert_allclose(
        old.decision_function(bags), means + 1 - 1 / n, rtol=1e-10, atol=1e-12
    )
    # refitting the loaded estimator keeps the rule
    yb = np.array([i % 2 for i in range(len(bags))])
    assert fit(bags, yb, **old.get_params()).model_.pooling == "smil_mean"
    doc["pooling"] = "mean"
    (tmp_path / "plain.json").write_text(json.dumps(doc))
    plain = milsvm.load(tmp_path / "plain.json")
    assert plain.bag_score == "mean"
    np.testing.assert_allclose(plain.decision_function(bags), means, rtol=1e-10, atol=1e-12)


# --- bag_score="auto": the size shift unless the plain mean is clearly better out of fold ---


def size_class_bags(seed, n_bags=40):
    """Every instance drawn from one distribution; positive bags large (20 to 40 instances),
    negative bags small (1 to 3): only the size tells the classes apart."""
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        pos = i % 2 == 1
        n = int(rng.integers(20, 41)) if pos else int(rng.integers(1, 4))
        bags.append(rng.normal(0.0, 1.0, size=(n, 2)))
        y.append(int(pos))
    return bags, np.array(y)


def test_auto_keeps_the_shift_where_the_size_carries_the_class():
    bags, y = size_class_bags(0)
    test, yt = size_class_bags(1)
    est = fit(bags, y, C=1.0, gamma=0.5, bag_score="auto", random_state=0)
    assert est.bag_score_ == "smil_mean" and est.model_.pooling == "smil_mean"
    shifted = fit(bags, y, C=1.0, gamma=0.5, bag_score="smil_mean")
    np.testing.assert_array_equal(est.decision_function(test), shifted.decision_function(test))
    assert roc_auc_score(yt, est.decision_function(test)) > 0.95


def test_auto_keeps_the_plain_mean_where_the_size_does_not_carry_the_class():
    """The bags of ``sized_bags`` at small ``C``: the size shift ranks them by size (large
    negative bags first; test AUC below 1/2), the plain mean by content. Auto keeps the plain
    mean, with Platt's threshold of the out-of-fold scores in the intercept: the plain mean's
    order, another constant. (At ``C = 1`` the scores outgrow the shift, which then ranks as
    well as the plain mean and is kept: see the next test.)"""
    bags, y = sized_bags(0)
    test, yt = sized_bags(1)
    shifted = fit(bags, y, C=0.01, gamma=0.5, bag_score="smil_mean")
    assert roc_auc_score(yt, shifted.decision_function(test)) < 0.5
    for C in (0.003, 0.01):
        est = fit(bags, y, C=C, gamma=0.5, bag_score="auto", random_state=0)
        plain = fit(bags, y, C=C, gamma=0.5, bag_score="mean")
        assert est.bag_score_ == "mean_platt" and est.model_.pooling == "mean"
        np.testing.assert_array_equal(est.dual_coef_, plain.dual_coef_)
        shift = est.decision_function(test) - plain.decision_function(test)
        np.testing.assert_allclose(shift, shift[0], rtol=0, atol=1e-12)
        assert shift[0] == pytest.approx(est.intercept_ - plain.intercept_, abs=1e-12)
        assert est.intercept_ != plain.intercept_
        assert roc_auc_score(yt, est.decision_function(test)) > 0.95
        assert est.score(test, yt) >= 0.8


def test_auto_keeps_the_shift_where_it_ranks_as_well():
    """``sized_bags`` at ``C = 1``: the instance scores dwarf the shift, which then ranks the
    test bags as well as the plain mean does; with no clear lead of the plain mean out of fold,
    auto keeps the shift, today's rule at threshold 0."""
    bags, y = sized_bags(0)
    test, yt = sized_bags(1)
    est = fit(bags, y, C=1.0, gamma=0.5, bag_score="auto", random_state=0)
    shifted = fit(bags, y, C=1.0, gamma=0.5, bag_score="smil_mean")
    assert est.bag_score_ == "smil_mean"
    np.testing.assert_array_equal(est.decision_function(test), shifted.decision_function(test))
    assert roc_auc_score(yt, est.decision_function(test)) > 0.95


def test_auto_is_deterministic_and_a_path_gives_each_C_its_own_choice():
    bags, y = sized_bags(6)
    Cs = [0.01, 1.0, 100.0]
    a = fit(bags, y, C=0.1, bag_score="auto", random_state=3, n_jobs=1)
    b = fit(bags, y, C=0.1, bag_score="auto", random_state=3, n_jobs=2)
    np.testing.assert_array_equal(a.decision_function(bags), b.decision_function(bags))
    assert a.intercept_ == b.intercept_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = milsvm.sMIL(bag_score="auto", random_state=3).fit_path(bags, y, Cs)
    for C, p in zip(Cs, path):
        one = fit(bags, y, C=C, bag_score="auto", random_state=3)
        assert p.bag_score_ == one.bag_score_
        np.testing.assert_array_equal(p.intercept_, one.intercept_)
        np.testing.assert_array_equal(p.decision_function(bags), one.decision_function(bags))
    # another seed, other folds: another out-of-fold threshold
    c = fit(bags, y, C=0.1, bag_score="auto", random_state=4)
    assert c.bag_score_ != a.bag_score_ or c.intercept_ != a.intercept_


def test_auto_multiclass_makes_one_choice_for_every_problem():
    """A model has one pooling: the problems' summed out-of-fold AUCs and counts decide for
    all. With the plain mean kept (at small ``C``, where the shift ranks these bags by size),
    each output has its own threshold off the plain fit's bias."""
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(1, 7)), 2)) + 3 * (i % 3) for i in range(30)]
    y = np.arange(30) % 3
    est = fit(bags, y, C=0.1, bag_score="auto", random_state=0)
    plain = fit(bags, y, C=0.1, bag_score="mean")
    assert est.bag_score_ == "mean_platt"
    d = est.decision_function(bags) - plain.decision_function(bags)
    np.testing.assert_allclose(d, np.broadcast_to(d[0], d.shape), rtol=0, atol=1e-12)
    assert len(set(np.round(d[0], 6))) == 3
    # whichever candidate is kept, it is kept for every output: the model is that candidate's
    for seed in range(4):
        bags = [rng.normal(size=(int(rng.integers(1, 30)), 2)) for i in range(45)]
        y = np.arange(45) % 3
        est = fit(bags, y, C=1.0, bag_score="auto", random_state=seed)
        if est.bag_score_ == "smil_mean":
            shifted = fit(bags, y, C=1.0, bag_score="smil_mean")
            np.testing.assert_array_equal(
                est.decision_function(bags), shifted.decision_function(bags)
            )
        else:
            plain = fit(bags, y, C=1.0, bag_score="mean")
            d = est.decision_function(bags) - plain.decision_function(bags)
            np.testing.assert_allclose(d, np.broadcast_to(d[0], d.shape), rtol=0, atol=1e-12)


def numpy_platt_threshold(o, y):
    """Platt's threshold of the scores ``o`` (labels ``y`` in {0, 1}): his smoothed targets,
    Newton's method on the log loss of ``1 / (1 + exp(a s + b))``, the score ``-b / a`` where
    it is 1/2; the class medians' midpoint where that point is not among the scores."""
    n_pos, n_neg = (y == 1).sum(), (y != 1).sum()
    t = np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    ab = np.array([0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))])
    X = np.column_stack([o, np.ones_like(o)])
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(np.clip(X @ ab, -500, 500)))
        g = X.T @ (t - p)
        H = (X * (p * (1 - p) + 1e-12)[:, None]).T @ X + 1e-12 * np.eye(2)
        step = np.linalg.solve(H, g)
        ab -= step
        if np.abs(step).max() < 1e-12:
            break
    a, b = ab
    thr = -b / a if a != 0 else np.inf
    if a < 0 and o.min() <= thr <= o.max():
        return thr
    return 0.5 * (np.median(o[y == 1]) + np.median(o[y == 0]))


def reference_auto_rule(o, sizes, y, thr):
    """The auto rule in NumPy: the size shift stays unless the plain mean ranks better by more
    than the margin and, at its threshold ``thr``, classifies at least as many bags right."""
    shifted = o + 1 - 1 / sizes
    lead = roc_auc_score(y, o) - roc_auc_score(y, shifted)
    right_plain = np.sum((o - thr > 0) == (y == 1))
    right_shift = np.sum((shifted > 0) == (y == 1))
    return not (lead > milsvm._core.SMIL_AUTO_AUC_MARGIN and right_plain >= right_shift)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(4, 60),
    seed=st.integers(0, 2**32 - 1),
    signal=st.floats(0.0, 3.0),
    size_signal=st.floats(-1.0, 1.0),
)
def test_the_auto_rule_against_numpy(n, seed, signal, size_signal):
    """The library's out-of-fold AUC (ties 1/2) against ``roc_auc_score``, its Platt threshold
    against a NumPy fit, and its choice against the rule in NumPy, on scores with ties and bags
    of many sizes whose size carries the class or not."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    o = np.round(rng.normal(size=n) + signal * y, 1)  # ties
    sizes = np.maximum(1, rng.integers(1, 30, n) + np.round(10 * size_signal * y)).astype(float)
    t = np.where(y == 1, 1.0, -1.0)
    assert milsvm._core.bag_auc(o, t) == pytest.approx(roc_auc_score(y, o), abs=1e-12)
    keep, thr = milsvm._core.smil_auto_rule(o, sizes, t)
    assert o.min() <= thr <= o.max()
    expect_thr = numpy_platt_threshold(o, y)
    # the library's sigmoid fit stops at its own tolerance (Lin, Lin & Weng's), not at machine
    # precision
    assert thr == pytest.approx(expect_thr, abs=1e-4 * max(1.0, np.ptp(o)))
    # the choice, except where the threshold's last bits could move a bag across it
    if not np.any(np.abs(o - thr) < 1e-9):
        assert keep == reference_auto_rule(o, sizes, y, thr)


def test_the_auto_rule_needs_a_clear_lead_and_no_loss_of_accuracy():
    """The three cases of the rule on hand-made out-of-fold scores: the plain mean ranks better
    by more than the margin and is as accurate (dropped shift); by less (kept); by more but
    less accurate at its threshold (kept)."""
    margin = milsvm._core.SMIL_AUTO_AUC_MARGIN
    assert margin == 0.02
    y = np.array([0] * 10 + [1] * 10)
    t = np.where(y == 1, 1.0, -1.0)
    # the plain mean ranks perfectly; large negative bags lift them above the positives
    o = np.r_[np.linspace(-1.0, -0.1, 10), np.linspace(0.1, 1.0, 10)]
    sizes = np.r_[np.full(10, 40.0), np.full(10, 1.0)]
    assert milsvm._core.smil_auto_rule(o, sizes, t)[0] is False
    # the shift does not reorder anything where every bag has one size: no lead, kept
    assert milsvm._core.smil_auto_rule(o, np.full(20, 5.0), t)[0] is True
    # one negative bag of two instances moves past one positive bag: the plain mean leads by
    # 0.01 < margin and is more accurate (the shift calls that bag positive): kept
    o3 = np.r_[np.linspace(-1.0, -0.1, 10), np.linspace(0.35, 1.0, 10)]
    sizes3 = np.ones(20)
    sizes3[9] = 2.0
    shifted = o3 + 1 - 1 / sizes3
    assert roc_auc_score(y, o3) - roc_auc_score(y, shifted) == pytest.approx(0.01)
    assert milsvm._core.smil_auto_rule(o3, sizes3, t)[0] is True
    # a clear lead but fewer bags right at the plain mean's threshold: kept (found by a seeded
    # search over random scores)
    rng = np.random.default_rng(0)
    for _ in range(10_000):
        o4 = rng.normal(size=20) + y
        sizes4 = rng.integers(1, 20, 20).astype(float)
        shifted = o4 + 1 - 1 / sizes4
        keep, thr = milsvm._core.smil_auto_rule(o4, sizes4, t)
        lead = roc_auc_score(y, o4) - roc_auc_score(y, shifted)
        if lead > margin and np.sum((o4 > thr) == (y == 1)) < np.sum((shifted > 0) == (y == 1)):
            assert keep is True
            break
    else:
        pytest.fail("no case with a clear lead and fewer bags right in the search")
    with pytest.raises(ValueError, match="sizes"):
        milsvm._core.smil_auto_rule(np.zeros(3), np.zeros(3), np.ones(3))


def test_auto_model_file_scores_the_same(tmp_path):
    for bags, y in (sized_bags(0), size_class_bags(0)):
        est = fit(bags, y, C=1.0, gamma=0.5, bag_score="auto", random_state=0)
        est.save(tmp_path / "m.json")
        back = milsvm.load(tmp_path / "m.json")
        assert back.bag_score == "auto" and back.bag_score_ == est.bag_score_
        np.testing.assert_array_equal(back.decision_function(bags), est.decision_function(bags))


def test_auto_with_a_class_of_one_bag_falls_back_to_the_training_platt_threshold():
    bags, y = sized_bags(0)
    y = np.zeros_like(y)
    y[1] = 1
    est = fit(bags, y, C=1.0, gamma=0.5, bag_score="auto", random_state=0)
    platt = fit(bags, y, C=1.0, gamma=0.5, bag_score="mean_platt")
    assert est.bag_score_ == "mean_platt"
    np.testing.assert_array_equal(est.decision_function(bags), platt.decision_function(bags))


def test_stmil_refuses_auto():
    bags, y = easy_bags(0)
    with pytest.raises(ValueError, match="bag_score"):
        milsvm.stMIL(bag_score="auto").fit(bags, y)


@pytest.mark.parametrize("probability", [True, "ensemble"])
def test_auto_with_probability_calibrates_the_kept_rule(probability):
    """The calibration's internal folds refit with the rule the model kept, so an ensemble's
    members pool as the model does; a path whose values keep different rules is calibrated
    value by value and scored together."""
    bags, y = sized_bags(0)
    Cs = [0.01, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = milsvm.sMIL(gamma=0.5, random_state=0, probability=probability).fit_path(bags, y, Cs)
    assert [e.bag_score_ for e in path] == ["mean_platt", "smil_mean"]
    for C, est in zip(Cs, path):
        one = fit(bags, y, C=C, gamma=0.5, random_state=0, probability=probability)
        assert one.bag_score_ == est.bag_score_
        np.testing.assert_allclose(
            est.predict_proba(bags), one.predict_proba(bags), rtol=1e-9, atol=1e-12
        )
    # the path's models pool differently and are still scored together
    from milsvm._base import predict_path

    for est, labels in zip(path, predict_path(path, bags)):
        np.testing.assert_array_equal(labels, est.predict(bags))
