"""The sums over bags in one fixed tree (src/tree_sum.rs) seen from Python: linear fits give the
same bits for any thread count, whatever the bag sizes; and mi-SVM's relabelling stops by its
rule on data where a few labels keep flipping.

That a split of the bags into groups gives the bits of the whole is tested in Rust
(`tree_sum` and `solver::linear` tests), where the groups' partial sums can be formed.
"""

import warnings

import milsvm
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from milsvm.datasets import make_embedding_bags


def _bags(sizes, seed):
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i, m in enumerate(sizes):
        x = rng.normal(size=(m, 6)) + 2.0
        if i % 2:
            x[rng.integers(m), :2] += 1.5
        bags.append(x)
        y.append(i % 2)
    return bags, np.array(y)


@settings(max_examples=8, deadline=None)
@given(
    st.lists(st.integers(1, 12), min_size=4, max_size=900),
    st.integers(0, 2**16),
    st.sampled_from(["miSVM", "MISVM", "ALSVM", "AWSVM", "ALPSVM"]),
)
def test_linear_fits_are_the_same_bits_on_one_and_two_threads(sizes, seed, name):
    bags, y = _bags(sizes, seed)
    fits = [getattr(milsvm, name)(C=1.0, kernel="linear", n_jobs=n).fit(bags, y) for n in (1, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)
    np.testing.assert_array_equal(fits[0].decision_function(bags), fits[1].decision_function(bags))


def test_wide_linear_fits_are_the_same_bits_on_one_two_and_three_threads():
    # 160 features: the sketched Hessian's product runs in panels of rows on the threads, and
    # gamma_ (which the linear kernel only reports) is summed beside the fit: every bit as on
    # one thread, and gamma_ as the width the instances resolve to.
    bags, y = make_embedding_bags(40, 60, 160, separation=3.0, random_state=1)
    X = np.concatenate(bags)
    width = milsvm._core.kernel_width(X.astype(np.float64), "scale")
    for name in ("MISVM", "miSVM"):
        fits = [
            getattr(milsvm, name)(C=1.0, kernel="linear", n_jobs=n).fit(bags, y) for n in (1, 2, 3)
        ]
        scores = fits[0].decision_function(bags)
        assert fits[0].gamma_ == width
        for f in fits[1:]:
            np.testing.assert_array_equal(fits[0].coef_, f.coef_)
            np.testing.assert_array_equal(fits[0].intercept_, f.intercept_)
            np.testing.assert_array_equal(scores, f.decision_function(bags))
            assert f.gamma_ == width


def test_mi_svm_stops_by_its_rule_where_no_round_leaves_every_label_unchanged():
    # On this set the rule "no label changed" needs 19 rounds; at most 1e-4 of the instances
    # of positive bags changing (here: none or one) ends the rounds earlier, without a warning
    # at a cap of 18.
    bags, y = make_embedding_bags(120, 250, 32, separation=3.0, random_state=0)
    est = milsvm.miSVM(kernel="linear", C=1.0, max_iter=18, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(bags, y)
    assert est.n_iter_ < 18
    assert est.score(bags, y) > 0.9
