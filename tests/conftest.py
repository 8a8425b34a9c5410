"""Shared fixtures and hypothesis strategies for the pytest suite.

The tests import the *installed* milsvm (``scripts/test.sh`` builds the wheel into a fresh
virtual environment and runs pytest from the repository root).
"""

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import settings
from hypothesis import strategies as st

settings.register_profile("milsvm", deadline=None, max_examples=25, derandomize=True)
settings.load_profile("milsvm")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def cli_ok(*args):
    """Runs ``milsvm ARGS`` (each argument through ``str``), which must exit with status 0."""
    from milsvm.cli import main

    assert main([str(a) for a in args]) == 0


def cli_cv_json(data, out, *args):
    """``milsvm cv DATA ARGS -q -o OUT``, which must succeed, and the JSON result it wrote."""
    cli_ok("cv", data, *args, "-q", "-o", out)
    return json.loads(Path(out).read_text())


def require_cargo():
    """Skips the test without cargo or the source tree (the Rust side of a cross-language test)."""
    if (
        shutil.which("cargo") is None
        or not (REPO / "Cargo.toml").is_file()
        or not (REPO / "examples").is_dir()
    ):
        pytest.skip(
            "needs cargo and the milsvm source tree (the Rust side of the cross-language test)"
        )


def cargo_example(name, *args):
    """``cargo run --example name -- args`` in the source tree: its completed process, text
    output (skips the test as :func:`require_cargo` does)."""
    require_cargo()
    return subprocess.run(
        ["cargo", "run", "--quiet", "--example", name, "--", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CARGO_TERM_COLOR": "never"},
    )


#: Field tokens the reader fuzz tests build garbage text files from: numbers, words, sparse
#: ``index:value`` pairs, separators and characters a reader may stumble on. One list for the
#: Python and the Rust fuzz tests (``tests/data_readers.rs`` reads it too).
READER_TOKENS = json.loads((REPO / "tests" / "data" / "reader_tokens.json").read_text("utf-8"))

#: Every refusal of the MILL and CSV readers: ``[file name, content, line (0 for the whole
#: file), message]``, the message after ``"<path>, line <line>: "`` (``"<path>: "`` for line 0).
#: One list for the Python and the Rust readers' tests (``tests/data_readers.rs`` reads it too).
READER_REFUSALS = json.loads((REPO / "tests" / "data" / "reader_refusals.json").read_text("utf-8"))


#: Small settings per estimator so that every fit on the toy sets takes milliseconds.
FAST = {
    "SparseMI": {"n_xv": 3, "max_iter": 5, "random_state": 0},
    "RSVM": {"n_xv": 3, "random_state": 0},
    "ReducedSet": {"n_xv": 3, "random_state": 0},
    "ALSVM": {"max_iter": 20},
    "AWSVM": {"max_iter": 20},
    "ALPSVM": {"max_iter": 20},
}


def make_fast(cls, **params):
    """``cls`` with the :data:`FAST` settings, then ``params``."""
    return cls(**{**FAST.get(cls.__name__, {}), **params})


def fit_quietly(est, bags, y):
    """``est.fit(bags, y)`` without ``ConvergenceWarning`` (the fast settings cap the loops)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(bags, y)


#: Settings of every registered estimator that fit fast on :func:`marked_bags` (the model-file,
#: schema and C API tests check the registry against this list, so a new estimator cannot be
#: left out).
SMALL_FITS = {
    "SparseMI": dict(n_xv=3, C=10.0, max_iter=3, random_state=0),
    "RSVM": dict(n_xv=3, C=10.0, random_state=0),
    "MIKernel": dict(C=10.0),
    "ReducedSet": dict(n_xv=3, C=10.0, random_state=0),
    "NSK": dict(C=10.0),
    "sMIL": dict(C=10.0),
    "ALSVM": dict(C=10.0, max_iter=5),
    "AWSVM": dict(C=10.0, max_iter=5),
    "ALPSVM": dict(C=10.0, max_iter=5),
    "miSVM": dict(C=10.0, max_iter=5),
    "MISVM": dict(C=10.0, max_iter=5),
    "SVMCC": dict(C=10.0, max_iter=5),
    "OneClassMISVM": dict(max_iter=3),
    "stMIL": dict(C=10.0, max_iter=5),
    "MissSVM": dict(C=10.0, max_iter=5),
    "SIL": dict(C=10.0),
    "STK": dict(C=10.0),
    "MILES": dict(C=10.0),
    "sbMIL": dict(C=10.0, eta=0.5),
    "sAwMIL": dict(C=1.0, eta=0.5),
}


def marked_bags(seed, n_bags=16, d=3, n_classes=2):
    """Bags whose class is marked by one instance near a class centre, with codes
    ``0..n_classes-1`` as labels."""
    rng = np.random.default_rng(seed)
    y = np.arange(n_bags) % n_classes
    bags = []
    for label in y:
        bag = rng.normal(size=(int(rng.integers(1, 5)), d))
        bag[0, label % d] += 3.0 * (1 + label // d)
        bags.append(bag)
    return bags, y


def quiet_fit(est, bags, y):
    """``est.fit(bags, y)`` without ``ConvergenceWarning`` or floating-point warnings."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(bags, y)


def random_bags(seed, n_bags=8, d=3, max_size=5, sparse=False, density=0.5):
    """Small random bags (list of arrays) with balanced binary labels {0, 1}."""
    rng = np.random.default_rng(seed)
    bags = []
    for _ in range(n_bags):
        n = int(rng.integers(1, max_size + 1))
        x = rng.normal(size=(n, d))
        if sparse:
            x[rng.random((n, d)) > density] = 0.0
            x = sp.csr_matrix(x)
        bags.append(x)
    y = np.arange(n_bags) % 2
    return bags, y


def stacked_bags(rng, n_bags, max_size, d):
    """``n_bags`` bags of 1..max_size-1 normal instances in ``d`` features, stacked: X, bag_ptr."""
    sizes = rng.integers(1, max_size, size=n_bags)
    X = rng.normal(size=(sizes.sum(), d))
    return X, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def sparse_looking_bags(seed, n_bags, d, density, max_size, shift=0.0):
    """Dense bags of 1 to ``max_size - 1`` rows whose entries are ``N(shift, 1)`` with probability
    ``density`` and zero otherwise (for the sparse-equals-dense tests), with alternating binary
    labels {0, 1}."""
    rng = np.random.default_rng(seed)
    bags = [
        np.where(rng.random((n, d)) < density, rng.normal(size=(n, d)) + shift, 0.0)
        for n in rng.integers(1, max_size, n_bags)
    ]
    return bags, np.arange(n_bags) % 2


def core_sparse_mi_fit(bags, y, **params):
    """``_core.fit_sparse_mi`` on ``bags`` (dense or CSR) with small settings, which ``params``
    override or extend (``n_basis``, ``init_xv``...)."""
    from milsvm import Bags, _core

    b = Bags.from_instances(
        sp.vstack(bags).tocsr() if sp.issparse(bags[0]) else np.concatenate(bags),
        [x.shape[0] for x in bags],
    )
    params = {
        "n_xv": 3,
        "C": 5.0,
        "kernel": "rbf",
        "gamma": 0.5,
        "max_iter": 10,
        "max_line_search": 10,
        "tol": 0.0,
        "solver": "newton",
        "seed": 0,
        "n_jobs": None,
        **params,
    }
    return _core.fit_sparse_mi(b.core_instances(), b.bag_ptr, np.asarray(y, dtype=np.int64), params)


def csr_tuple(A):
    """``A`` as the ``(data, indices, indptr, n_cols)`` tuple that ``_core`` takes for CSR rows."""
    A = sp.csr_matrix(A)
    return (
        A.data.astype(np.float64),
        A.indices.astype(np.int64),
        A.indptr.astype(np.int64),
        A.shape[1],
    )


def easy_bags(seed=0, n_bags=24):
    """Positive bags hold an instance near (3, 3); negative bags only noise around (-1, -1)."""
    rng = np.random.default_rng(seed)
    bags, y = [], []
    for i in range(n_bags):
        n = int(rng.integers(2, 6))
        x = rng.normal(-1.0, 0.7, size=(n, 2))
        if i % 2:
            x[0] = rng.normal(3.0, 0.3, size=2)
        bags.append(x)
        y.append(i % 2)
    return bags, np.array(y)


def three_class_bags(n_bags=45, seed=0):
    """Class c bags hold one instance near centre c; the others are noise around the origin."""
    rng = np.random.default_rng(seed)
    centres = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0]])
    bags, y = [], []
    for i in range(n_bags):
        c = i % 3
        x = rng.normal(0, 0.4, size=(4, 2))
        x[0] += centres[c]
        bags.append(x)
        y.append(["a", "b", "c"][c])
    return bags, np.array(y)


@st.composite
def bag_sets(draw, max_bags=8, max_d=4, max_size=5, n_classes=2):
    """A hypothesis strategy: (instances X, bag_ptr, labels) of a small random bag set."""
    n_bags = draw(st.integers(n_classes * 2, max_bags))
    d = draw(st.integers(1, max_d))
    sizes = draw(st.lists(st.integers(1, max_size), min_size=n_bags, max_size=n_bags))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(sum(sizes), d))
    bag_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = (np.arange(n_bags) % n_classes).astype(np.int64)
    rng.shuffle(labels)
    return X, bag_ptr, labels


@pytest.fixture(scope="module")
def dask_client():
    """A two-process LocalCluster and a Client on it (the default scheduler while active)."""
    pytest.importorskip("dask.bag")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def musk1():
    from milsvm.datasets import load_musk1

    return load_musk1()


def assert_clone_and_pickle(est):
    """``clone(est)`` has the parameters of ``est`` and is independent of it (``set_params(C=3.0)``
    leaves ``est.C`` at 1.0); fitted on ``easy_bags()``, it pickles to the same scores and
    predictions. Returns the bags."""
    import pickle

    from sklearn.base import clone

    bags, y = easy_bags()
    params = est.get_params()
    c = clone(est)
    assert c.get_params() == params
    c.set_params(C=3.0)
    assert c.C == 3.0 and est.C == 1.0
    c.fit(bags, y)
    restored = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(restored.decision_function(bags), c.decision_function(bags))
    np.testing.assert_array_equal(restored.predict(bags), c.predict(bags))
    return bags


def assert_refuses_bad_bags(make, bags, y):
    """``make().fit`` refuses bags with a NaN, an empty bag and labels of a single class, and the
    model it fits on ``bags`` refuses bags of another width. Returns that model."""
    d = bags[0].shape[1]
    nan = [b.copy() for b in bags]
    nan[2][0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        make().fit(nan, y)
    with pytest.raises(ValueError, match="empty"):
        make().fit(bags[:-1] + [np.zeros((0, d))], y)
    with pytest.raises(ValueError, match="single class"):
        make().fit(bags, np.full(len(bags), y[0]))
    model = make().fit(bags, y)
    with pytest.raises(ValueError, match="features"):
        model.predict([np.ones((2, d + 1))])
    return model


def _assert_same(a, b, rtol, atol, what):
    """``a`` equals ``b`` to ``rtol``/``atol``: arrays, numbers, or (nested) lists of them."""
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), what
        for k, (u, v) in enumerate(zip(a, b)):
            _assert_same(u, v, rtol, atol, f"{what}[{k}]")
    else:
        np.testing.assert_allclose(
            np.asarray(a, dtype=float),
            np.asarray(b, dtype=float),
            rtol=rtol,
            atol=atol,
            err_msg=what,
        )


def assert_one_vs_rest(make, bags, y, per_problem=(), rtol=1e-10, atol=1e-10):
    """A multi-class fit of ``make()`` is one binary fit per class, with the same parameters.

    Column ``c`` of ``decision_function`` (and of every bag's ``instance_decision_function``,
    where the estimator has one) equals the binary fit of class ``classes_[c]`` against the rest
    (labels 1 for that class, 0 for the others, so the class is the binary fit's positive class); so
    does entry ``c`` of every attribute named in ``per_problem`` (a list over the classes in a
    multi-class fit, the one problem's value in a binary fit). Returns the multi-class fit.
    """
    import warnings

    y = np.asarray(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # iteration caps warn alike in both fits
        multi = make().fit(bags, y)
        scores = multi.decision_function(bags)
        has_instances = hasattr(multi, "instance_decision_function")
        inst = multi.instance_decision_function(bags) if has_instances else None
        assert len(multi.classes_) >= 3 and scores.shape == (len(bags), len(multi.classes_))
        for c, label in enumerate(multi.classes_):
            binary = make().fit(bags, (y == label).astype(np.int64))
            assert binary.classes_.tolist() == [0, 1]
            _assert_same(
                scores[:, c],
                binary.decision_function(bags),
                rtol,
                atol,
                f"decision_function[:, {c}]",
            )
            if has_instances:
                _assert_same(
                    [s[:, c] for s in inst],
                    binary.instance_decision_function(bags),
                    rtol,
                    atol,
                    f"instance_decision_function[:, {c}]",
                )
            for name in per_problem:
                _assert_same(
                    getattr(multi, name)[c], getattr(binary, name), rtol, atol, f"{name}[{c}]"
                )
    return multi


def slsqp_minimum(fun, jac, starts, bounds, constraints, feasible, ftol, maxiter, restarts):
    """The best value of SLSQP over ``starts``, for a reference optimum that cannot pass by default.

    Each run is restarted from where it stopped until that no longer improves (at most
    ``restarts`` runs; SLSQP can declare success early where a gradient is steep, and a restart
    resets its Hessian estimate). Only runs that end at a point with ``feasible(x)`` count, and
    it fails if none does: the result is never ``inf`` or an infeasible point's value.
    """
    import scipy.optimize as so

    values, messages = [], []
    for x in starts:
        best = np.inf
        for _ in range(restarts):
            r = so.minimize(
                fun,
                x,
                jac=jac,
                method="SLSQP",
                bounds=bounds,
                constraints=constraints,
                options={"ftol": ftol, "maxiter": maxiter},
            )
            messages.append(r.message)
            if not feasible(r.x) or fun(r.x) >= best - 1e-15 * (1 + abs(best)):
                break
            x, best = r.x, fun(r.x)
        if np.isfinite(best):
            values.append(best)
    assert values, f"no SLSQP run ended feasible: {messages}"
    return min(values)
