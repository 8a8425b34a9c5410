"""float32 data end to end: every estimator of the registry fits and predicts float32 bags
with the same bits as the float64 twins of the same values; a C-contiguous float32 matrix
(a read-only memory map included) reaches the core without a copy, and so does a float64 one;
the dtype rule; the model file records the training dtype; the scaler keeps float32."""

import json

import milsvm
import numpy as np
import pytest
from conftest import easy_bags, fit_quietly, make_fast
from hypothesis import given, settings
from hypothesis import strategies as st
from milsvm import _registry
from milsvm._bags import as_bags

ALL = list(_registry.ESTIMATORS.values())


def twins(seed=0, n_bags=24, d=5):
    """float32 bags and their float64 twins (the same values)."""
    bags, y = easy_bags(seed, n_bags)
    rng = np.random.default_rng(seed)
    b32 = [np.hstack([b, rng.normal(size=(len(b), d - 2))]).astype(np.float32) for b in bags]
    return b32, [b.astype(np.float64) for b in b32], y


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_estimator_fits_float32_as_its_float64_twin(cls):
    b32, b64, y = twins(1)
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    e32 = fit_quietly(make_fast(cls, **params), b32, y)
    e64 = fit_quietly(make_fast(cls, **params), b64, y)
    np.testing.assert_array_equal(e32.decision_function(b32), e64.decision_function(b64))
    np.testing.assert_array_equal(e32.decision_function(b64), e64.decision_function(b64))
    assert e32.model_.input_dtype == "float32" and e64.model_.input_dtype == "float64"
    if hasattr(e32, "instance_decision_function"):
        for a, b in zip(e32.instance_decision_function(b32), e64.instance_decision_function(b64)):
            np.testing.assert_array_equal(a, b)
    assert e32.decision_function_bag(b32[1]) == e64.decision_function_bag(b64[1])


def test_a_contiguous_float32_matrix_reaches_the_core_in_place(tmp_path):
    b32, _, y = twins(2)
    X = np.concatenate(b32)
    sizes = [len(b) for b in b32]
    bags = milsvm.Bags.from_instances(X, sizes)
    assert bags.dtype == np.float32
    assert np.shares_memory(bags.core_instances(), X)
    # a read-only memory-mapped .npy file, as np.load gives it
    np.save(tmp_path / "x.npy", X)
    mm = np.load(tmp_path / "x.npy", mmap_mode="r")
    mapped = milsvm.Bags.from_instances(mm, sizes)
    assert np.shares_memory(mapped.core_instances(), mm)
    a = milsvm.MISVM(kernel="linear").fit(mapped, y).decision_function(mapped)
    b = milsvm.MISVM(kernel="linear").fit(bags, y).decision_function(bags)
    np.testing.assert_array_equal(a, b)


_NO_COPY_FIT = """
import resource, sys, numpy as np, milsvm
n_bags, per, d = 50, 10_000, 100
X = np.random.default_rng(0).standard_normal((n_bags * per, d), dtype=np.{dtype})
bags = milsvm.Bags.from_instances(X, [per] * n_bags)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
milsvm.STK(kernel="linear", n_jobs=1).fit(bags, np.arange(n_bags) % 2)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024 / X.nbytes)
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_fit_holds_no_second_copy_of_a_contiguous_matrix(dtype):
    """The core reads a C-contiguous float32 or float64 matrix in place: a fit on 200-400 MB of
    bags raises the peak RSS by a few percent of their size, where a copy would add all of it
    (float64 bags were copied into the core before). Run in a fresh process, so that the peak
    is the fit's."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _NO_COPY_FIT.format(dtype=dtype)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) < 0.2, proc.stdout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bags_split_from_one_matrix_are_read_in_place_and_others_are_stacked(dtype):
    X = np.arange(60, dtype=dtype).reshape(12, 5)
    parts = np.split(X, [2, 5, 6, 11])
    assert np.shares_memory(milsvm.as_bags(parts).core_instances(), X)
    # a gap after the first bag, or after a later one: stacked, with the same values
    for gapped in ([X[0:2], X[3:5], X[5:9]], [X[0:2], X[2:5], X[6:9]]):
        got = milsvm.as_bags(gapped).core_instances()
        assert not np.shares_memory(got, X)
        np.testing.assert_array_equal(got, np.concatenate(gapped))


def test_every_kind_of_bag_list_gives_the_same_bags():
    """The lists of plain float64 (or float32) arrays take a path of their own in as_bags (no
    call per bag); any other list (a subclass, mixed dtypes, nested lists, a big-endian array)
    the general one. Both give the same stacked values, dtype and offsets."""
    rng = np.random.default_rng(0)
    plain = [rng.normal(size=(n, 4)) for n in (3, 1, 2)]
    want = np.concatenate(plain)
    variants = [
        plain,
        tuple(plain),
        [plain[0].view(type("Sub", (np.ndarray,), {}))] + plain[1:],
        [plain[0].astype(">f8")] + plain[1:],
        [plain[0].tolist()] + plain[1:],
        [plain[0].astype(np.float32)] + plain[1:],  # mixed: stacked as float64
    ]
    for bags in variants:
        got = milsvm.as_bags(bags)
        assert got.core_instances().dtype == np.float64
        np.testing.assert_array_equal(got.bag_ptr, [0, 3, 4, 6])
        tol = 1e-6 if any(getattr(b, "dtype", None) == np.float32 for b in bags) else 0
        np.testing.assert_allclose(got.core_instances(), want, rtol=tol, atol=tol)
    f32 = milsvm.as_bags([b.astype(np.float32) for b in plain]).core_instances()
    assert f32.dtype == np.float32
    np.testing.assert_array_equal(f32, want.astype(np.float32))


@pytest.mark.parametrize("layout", ["fortran", "strided", "offset"])
def test_float32_arrays_of_any_layout_give_the_same_fit(layout):
    b32, _, y = twins(3)
    X = np.concatenate(b32)
    sizes = [len(b) for b in b32]
    if layout == "fortran":
        Y = np.asfortranarray(X)
    elif layout == "strided":
        Y = np.repeat(X, 2, axis=1)[:, ::2]
    else:  # a view that starts 1 byte past an aligned buffer: unaligned float32 values
        raw = np.zeros(X.nbytes + 1, dtype=np.uint8)
        Y = np.ndarray(X.shape, dtype=np.float32, buffer=raw[1:].data)
        Y[:] = X
    assert np.array_equal(X, Y)
    ref = milsvm.SparseMI(n_xv=3, max_iter=2, random_state=0).fit(
        milsvm.Bags.from_instances(X, sizes), y
    )
    est = milsvm.SparseMI(n_xv=3, max_iter=2, random_state=0).fit(
        milsvm.Bags.from_instances(Y, sizes), y
    )
    np.testing.assert_array_equal(est.decision_function(b32), ref.decision_function(b32))
    np.testing.assert_array_equal(
        est.decision_function(milsvm.Bags.from_instances(Y, sizes)), ref.decision_function(b32)
    )


def test_the_dtype_rule():
    bags = [np.ones((2, 3), dtype=np.float16), np.zeros((1, 3), dtype=np.float16)]
    assert as_bags(bags).dtype == np.float32
    assert as_bags([np.ones((2, 3), dtype=np.int64)]).dtype == np.float64
    assert as_bags([np.ones((2, 3), dtype=bool)]).dtype == np.float64
    mixed = [np.ones((2, 3), dtype=np.float32), np.ones((1, 3))]
    assert as_bags(mixed).dtype == np.float64
    assert as_bags([np.ones((2, 3), dtype=np.float32)] * 2).dtype == np.float32
    with pytest.raises(TypeError, match="real numbers"):
        as_bags([np.ones((2, 3), dtype=np.complex64)])


def test_non_finite_float32_values_are_refused():
    b32, _, y = twins(4)
    b32[5][1, 2] = np.nan
    with pytest.raises(ValueError, match="bag 5 has a non-finite value"):
        milsvm.SparseMI(n_xv=2).fit(b32, y)
    b32[5][1, 2] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        milsvm.MISVM(kernel="linear").fit(
            milsvm.Bags.from_instances(np.concatenate(b32), [len(b) for b in b32]), y
        )


def test_the_model_file_records_the_training_dtype(tmp_path):
    b32, b64, y = twins(5)
    est = milsvm.NSK(C=1.0).fit(b32, y)
    est.save(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["input_dtype"] == "float32"
    back = milsvm.load(tmp_path / "m.json")
    assert back.model_.input_dtype == "float32"
    np.testing.assert_array_equal(back.decision_function(b32), est.decision_function(b32))
    milsvm.NSK(C=1.0).fit(b64, y).save(tmp_path / "m64.json")
    assert json.loads((tmp_path / "m64.json").read_text())["input_dtype"] == "float64"


def test_the_scaler_keeps_float32_and_the_saved_pipeline_scores_as_python(tmp_path):
    from sklearn.pipeline import make_pipeline

    b32, b64, y = twins(6)
    sc32 = milsvm.BagStandardScaler().fit(b32)
    sc64 = milsvm.BagStandardScaler().fit(b64)
    np.testing.assert_allclose(sc32.mean_, sc64.mean_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sc32.scale_, sc64.scale_, rtol=1e-12)
    out = sc32.transform(b32)
    assert out.X.dtype == np.float32
    X = np.concatenate(b32)
    want = (X - sc32.mean_.astype(np.float32)) / sc32.scale_.astype(np.float32)
    np.testing.assert_array_equal(out.X, want)
    pipe = make_pipeline(
        milsvm.BagStandardScaler(), milsvm.SparseMI(n_xv=3, max_iter=2, random_state=0)
    )
    pipe.fit(b32, y)
    milsvm.save(pipe, tmp_path / "p.json")
    # the Rust predictor standardises the raw float32 bags itself
    model = milsvm.Model.load(tmp_path / "p.json")
    loaded = milsvm.load(tmp_path / "p.json")
    np.testing.assert_array_equal(loaded.decision_function(b32), pipe.decision_function(b32))
    bags = as_bags(b32)
    np.testing.assert_array_equal(
        model.decision_function(bags.core_instances(), bags.bag_ptr)[:, 0],
        pipe.decision_function(b32),
    )
    assert model.decision_function_bag(b32[3])[0] == pipe.decision_function([b32[3]])[0]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 9))
def test_scaler_moments_match_a_float64_reference(seed, d):
    from milsvm.preprocessing import _moments

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(rng.integers(1, 300)), d)) * rng.uniform(0.1, 50, d) + rng.normal(
        0, 100, d
    )
    X = X.astype(np.float32)
    mean, var = _moments(X)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(mean, X64.mean(axis=0), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(var, X64.var(axis=0), rtol=1e-9, atol=1e-9)
