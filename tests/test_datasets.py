"""Tests of ``milsvm.datasets``: loaders, malformed files, MILL round trip, generators.

The benchmark files are read from ``../shared/data`` relative to the repository (the layout of
the project's workspace); the tests that need them are skipped when it is absent.

Run before the package is built with::

    cd /work/main && PYTHONPATH=python python -m pytest tests/test_datasets.py -q
"""

import functools
import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import READER_REFUSALS
from hypothesis import given, settings
from hypothesis import strategies as st
from milsvm import datasets

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_file(relative):
    """Path of a benchmark file; skip the test if it is not there."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f"benchmark file {path} not found (the shared data directory is absent)")
    return path


@functools.cache
def _cached(loader_name, relative):
    return getattr(datasets, loader_name)(DATA / relative)


def load(loader_name, relative):
    """Load a benchmark file once per test session (the loaders are deterministic)."""
    data_file(relative)
    return _cached(loader_name, relative)


def n_instances(bags):
    return sum(b.shape[0] for b in bags)


def assert_bags_equal(bags_a, bags_b):
    assert len(bags_a) == len(bags_b)
    for a, b in zip(bags_a, bags_b):
        assert a.shape == b.shape
        a = a.toarray() if sp.issparse(a) else np.asarray(a)
        b = b.toarray() if sp.issparse(b) else np.asarray(b)
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------------------------
# Module surface
# --------------------------------------------------------------------------------------------


def test_public_names_have_numpydoc_docstrings():
    public = """
    load_mill load_musk_uci load_andrews_mat load_mil_csv load_musk1 make_center_ring_bags
    make_four_gaussians_bags make_annealing_toy make_embedding_bags load_npy_folder
    load_h5_folder load_parquet read_labels label_columns load_slide_folder
    make_slide_folder
    """
    assert set(datasets.__all__) == set(public.split())
    for name in datasets.__all__:
        doc = getattr(datasets, name).__doc__
        assert doc and "Returns\n    -------" in doc, name


# --------------------------------------------------------------------------------------------
# Loaders on the benchmark files
# --------------------------------------------------------------------------------------------


def check_dense(bags, y, n_bags, counts, n_inst, n_dims):
    assert len(bags) == n_bags == len(y)
    assert y.ndim == 1 and np.issubdtype(y.dtype, np.integer)
    assert np.bincount(y).tolist() == counts
    assert n_instances(bags) == n_inst
    for bag in bags:
        assert isinstance(bag, np.ndarray) and bag.dtype == np.float64
        assert bag.ndim == 2 and bag.shape[1] == n_dims and bag.shape[0] >= 1
        assert np.all(np.isfinite(bag))


def test_load_mill_musk1():
    bags, y = load("load_mill", "musk1/musk1.data")  # CRLF line ends
    check_dense(bags, y, 92, [45, 47], 476, 166)
    # integer-valued features (distances in hundredths of Angstroms)
    assert all(np.array_equal(b, np.round(b)) for b in bags)


def test_load_mill_musk2():
    bags, y = load("load_mill", "musk2/musk2.data")
    check_dense(bags, y, 102, [63, 39], 6598, 166)
    sizes = [b.shape[0] for b in bags]
    assert min(sizes) == 1 and max(sizes) == 1044


def test_load_mill_elephant():
    bags, y = load("load_mill", "elephant/elephant.data")
    check_dense(bags, y, 200, [100, 100], 1391, 230)


def check_sparse(bags, y, n_inst, n_dims):
    assert len(bags) == 400 == len(y)
    assert np.bincount(y).tolist() == [200, 200]
    assert n_instances(bags) == n_inst
    for bag in bags:
        assert isinstance(bag, sp.csr_matrix)
        assert bag.dtype == np.float64 and bag.shape[1] == n_dims
        assert bag.has_sorted_indices
        assert np.all(np.isfinite(bag.data)) and np.all(bag.data != 0)
    nnz = sum(b.nnz for b in bags)
    # about 17 non-zeros per instance (README); make sure the parse kept all of them
    assert 10 * n_inst < nnz < 30 * n_inst
    # every column index is used at most by the declared dimension; the last one is used
    assert max(int(b.indices.max()) for b in bags if b.nnz) == n_dims - 1


def test_load_mill_tst1():
    bags, y = load("load_mill", "tst1/tst1.data")
    check_sparse(bags, y, 3224, 66552)
    assert sum(b.nnz for b in bags) == 55977  # index:value entries in the file (all non-zero)


def test_load_mill_tst2():
    bags, y = load("load_mill", "tst2/tst2.data")
    check_sparse(bags, y, 3344, 66153)


def test_load_mill_corel():
    bags, y = load("load_mill", "corel/corel2000.data")
    assert len(bags) == 2000
    assert np.bincount(y).tolist() == [100] * 20
    assert n_instances(bags) == 7947
    assert all(b.shape[1] == 9 for b in bags)


def test_load_mill_n_features_for_sparse_file():
    path = data_file("tst1/tst1.data")
    bags, _ = datasets.load_mill(path, n_features=70000)
    assert all(b.shape[1] == 70000 for b in bags)
    with pytest.raises(ValueError, match=r"line \d+: .*exceeds n_features=1000"):
        datasets.load_mill(path, n_features=1000)


def test_load_musk_uci_equals_mill():
    bags_uci, y_uci = load("load_musk_uci", "musk1/clean1.data")
    bags_mill, y_mill = load("load_mill", "musk1/musk1.data")
    check_dense(bags_uci, y_uci, 92, [45, 47], 476, 166)
    np.testing.assert_array_equal(y_uci, y_mill)
    assert_bags_equal(bags_uci, bags_mill)


def test_load_andrews_mat_tst1_equals_mill():
    """The .mat and the MILL file hold the same bags, in the same order, bit for bit.

    The .mat stores bag_ids 1..400 in non-decreasing order (positive bags 1..200 first),
    exactly the order of the bags in tst1.data, so no permutation is needed.
    """
    bags_mat, y_mat = load("load_andrews_mat", "tst1/trec_1_200x200_matlab.mat")
    bags_mill, y_mill = load("load_mill", "tst1/tst1.data")
    assert len(bags_mat) == len(bags_mill) == 400
    assert all(isinstance(b, sp.csr_matrix) for b in bags_mat)
    assert [b.shape for b in bags_mat] == [b.shape for b in bags_mill]
    np.testing.assert_array_equal(y_mat, y_mill)
    assert np.bincount(y_mat).tolist() == [200, 200]
    assert sum(b.nnz for b in bags_mat) == sum(b.nnz for b in bags_mill)
    for a, b in zip(bags_mat, bags_mill):
        assert (a != b).nnz == 0


def test_load_andrews_mat_elephant_equals_mill():
    bags_mat, y_mat = load("load_andrews_mat", "elephant/elephant_100x100_matlab.mat")
    bags_mill, y_mill = load("load_mill", "elephant/elephant.data")
    # 'features' is stored sparse in this file, so the bags are CSR
    assert all(isinstance(b, sp.csr_matrix) for b in bags_mat)
    np.testing.assert_array_equal(y_mat, y_mill)
    assert_bags_equal(bags_mat, bags_mill)


def test_load_musk1_bundled():
    bags, y = datasets.load_musk1()
    check_dense(bags, y, 92, [45, 47], 476, 166)
    assert bags[0].shape == (4, 166)


def test_load_musk1_equals_file_loaders():
    bags, y = datasets.load_musk1()
    for loader, relative in (
        ("load_musk_uci", "musk1/clean1.data"),
        ("load_mill", "musk1/musk1.data"),
    ):
        other_bags, other_y = load(loader, relative)
        np.testing.assert_array_equal(y, other_y)
        assert_bags_equal(bags, other_bags)


def test_loaders_accept_str_and_pathlike():
    path = data_file("musk1/musk1.data")
    bags_s, y_s = datasets.load_mill(str(path))
    bags_p, y_p = datasets.load_mill(path)
    np.testing.assert_array_equal(y_s, y_p)
    assert_bags_equal(bags_s, bags_p)


@pytest.mark.parametrize(
    "loader", [datasets.load_mill, datasets.load_musk_uci, datasets.load_andrews_mat]
)
def test_missing_file(loader, tmp_path):
    with pytest.raises(FileNotFoundError):
        loader(tmp_path / "no_such_file.data")


# --------------------------------------------------------------------------------------------
# Small well-formed files
# --------------------------------------------------------------------------------------------


def write(tmp_path, text, name="bad.data"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_mill_dense_small(tmp_path):
    path = write(
        tmp_path,
        "i1,b1,1,1.5,-2\r\n\r\ni2,b1,1,0,3e2\r\ni3,b2,0,7,8\r\n",
        "ok.data",
    )
    bags, y = datasets.load_mill(path)
    assert y.tolist() == [1, 0]
    np.testing.assert_array_equal(bags[0], [[1.5, -2.0], [0.0, 300.0]])
    np.testing.assert_array_equal(bags[1], [[7.0, 8.0]])


def test_mill_sparse_small(tmp_path):
    path = write(tmp_path, "i1,b1,1,3:0.5,1:2\ni2,b1,1\ni3,b2,0,2:-1,4:0\n", "ok.data")
    bags, y = datasets.load_mill(path)
    assert y.tolist() == [1, 0]
    assert bags[0].shape == (2, 4) and bags[1].shape == (1, 4)
    np.testing.assert_array_equal(bags[0].toarray(), [[2, 0, 0.5, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(bags[1].toarray(), [[0, -1, 0, 0]])
    assert bags[1].nnz == 1  # the explicit 4:0 is dropped


def test_mill_labels_written_as_floats_are_accepted(tmp_path):
    path = write(tmp_path, "i1,b1,1.0,1\ni2,b2,+0,2\n", "ok.data")
    assert datasets.load_mill(path)[1].tolist() == [1, 0]


# --------------------------------------------------------------------------------------------
# Malformed files: one test per kind of defect, each checking the line number
# --------------------------------------------------------------------------------------------


def assert_error(loader, path, line, phrase, **kwargs):
    with pytest.raises(ValueError, match=rf"line {line}: .*{phrase}") as info:
        loader(path, **kwargs)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "name, text, line, message", READER_REFUSALS, ids=[case[0] for case in READER_REFUSALS]
)
def test_every_refusal_names_the_file_and_the_line(tmp_path, name, text, line, message):
    """The shared refusals of the MILL and CSV readers (``tests/data/reader_refusals.json``):
    each message to the letter, after the file and the line (blank lines count)."""
    path = write(tmp_path, text, name)
    loader = datasets.load_mil_csv if name.endswith(".csv") else datasets.load_mill
    with pytest.raises(ValueError) as info:
        loader(path)
    assert str(info.value) == (f"{path}, line {line}: " if line else f"{path}: ") + message


def test_error_against_n_features(tmp_path):
    # a sparse index above the given n_features; dense lines of another width
    path = write(tmp_path, "i1,b1,1,3:0.5\ni2,b1,1,9:1\n")
    assert_error(datasets.load_mill, path, 2, "exceeds n_features=5", n_features=5)
    path = write(tmp_path, "i1,b1,1,1,2\n")
    assert_error(datasets.load_mill, path, 1, "n_features=3", n_features=3)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_error_empty_file(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match="empty") as info:
        datasets.load_mill(path)
    assert str(path) in str(info.value)


def test_error_no_features_at_all(tmp_path):
    path = write(tmp_path, "i1,b1,1\ni2,b2,0\n")
    with pytest.raises(ValueError, match="no line has feature values"):
        datasets.load_mill(path)
    bags, y = datasets.load_mill(path, n_features=3)  # all-zero sparse instances
    assert [b.shape for b in bags] == [(1, 3), (1, 3)] and y.tolist() == [1, 0]


def test_error_bad_n_features_argument(tmp_path):
    path = write(tmp_path, "i1,b1,1,1:1\n", "ok.data")
    for bad in (0, -3, 2.5, "10", True):
        with pytest.raises(ValueError, match="n_features"):
            datasets.load_mill(path, n_features=bad)


def uci_line(molecule, conformation, features, cls):
    return ",".join([molecule, conformation, *map(str, features), cls])


def test_musk_uci_small_and_errors(tmp_path):
    lines = [
        uci_line("MUSK-1", "1_1+1", [1, 2, 3], "1."),
        uci_line("MUSK-1", "1_1+2", [4, 5, 6], "1."),
        uci_line("NON-MUSK-2", "2_1+1", [7, 8, 9], "0."),
    ]
    bags, y = datasets.load_musk_uci(write(tmp_path, "\n".join(lines) + "\n", "ok.data"))
    assert y.tolist() == [1, 0]
    np.testing.assert_array_equal(bags[0], [[1, 2, 3], [4, 5, 6]])

    bad = lines[:2] + [uci_line("NON-MUSK-2", "2_1+1", [7, 8, 9], "2.")]
    assert_error(datasets.load_musk_uci, write(tmp_path, "\n".join(bad)), 3, "not 0 or 1")
    bad = lines[:1] + ["MUSK-1,1_1+2,1."]
    assert_error(datasets.load_musk_uci, write(tmp_path, "\n".join(bad)), 2, "too few fields")
    bad = lines[:1] + [uci_line("MUSK-1", "1_1+2", [4, "x", 6], "1.")]
    assert_error(datasets.load_musk_uci, write(tmp_path, "\n".join(bad)), 2, "not a number")
    bad = lines + [uci_line("MUSK-1", "1_1+3", [1, 2, 3], "1.")]
    assert_error(datasets.load_musk_uci, write(tmp_path, "\n".join(bad)), 4, "reappears")


# --------------------------------------------------------------------------------------------
# Andrews .mat files built here
# --------------------------------------------------------------------------------------------


def test_andrews_mat_groups_by_first_appearance(tmp_path):
    path = tmp_path / "small.mat"
    features = np.arange(10.0).reshape(5, 2)
    scipy.io.savemat(
        path,
        {
            "features": features,  # dense here: the bags come back dense
            "labels": np.array([-1, -1, 1, -1, -1]),
            "bag_ids": np.array([2, 1, 2, 3, 1]),
        },
    )
    bags, y = datasets.load_andrews_mat(path)
    assert all(isinstance(b, np.ndarray) for b in bags)
    np.testing.assert_array_equal(bags[0], features[[0, 2]])  # bag id 2 appears first
    np.testing.assert_array_equal(bags[1], features[[1, 4]])
    np.testing.assert_array_equal(bags[2], features[[3]])
    assert y.tolist() == [1, 0, 0]  # a bag with a +1 instance is positive


def test_andrews_mat_sparse_features(tmp_path):
    path = tmp_path / "small.mat"
    features = sp.csc_matrix(np.array([[0, 1.5, 0], [2, 0, 0], [0, 0, 3]]))
    scipy.io.savemat(
        path,
        {
            "features": features,
            "labels": sp.csc_matrix([[1.0, 1.0, -1.0]]),
            "bag_ids": [[1, 1, 2]],
        },
    )
    bags, y = datasets.load_andrews_mat(path)
    assert all(isinstance(b, sp.csr_matrix) for b in bags)
    np.testing.assert_array_equal(bags[0].toarray(), features.toarray()[:2])
    assert y.tolist() == [1, 0]


def _mat(features=None, labels=None, bag_ids=None):
    content = {
        "features": np.ones((3, 2)) if features is None else features,
        "labels": np.ones(3) if labels is None else labels,
        "bag_ids": np.ones(3) if bag_ids is None else bag_ids,
    }
    return content


@pytest.mark.parametrize(
    "content, phrase",
    [
        ({"features": np.ones((3, 2)), "labels": np.ones(3)}, "missing MATLAB variable.*bag_ids"),
        (_mat(labels=np.ones(2)), "'labels' has 2 entries"),
        (_mat(bag_ids=np.ones(4)), "'bag_ids' has 4 entries"),
        (_mat(labels=np.array([1, 2, 1])), "found 2"),
        (_mat(features=np.full((3, 2), np.nan)), "NaN"),
        (_mat(bag_ids=np.array([1.0, np.inf, 1.0])), "'bag_ids' contains NaN"),
    ],
    ids=[
        "missing-field",
        "labels-length",
        "bag-ids-length",
        "label-value",
        "nan-feature",
        "inf-bag-id",
    ],
)
def test_andrews_mat_errors(tmp_path, content, phrase):
    path = tmp_path / "bad.mat"
    scipy.io.savemat(path, content)
    with pytest.raises(ValueError, match=phrase) as info:
        datasets.load_andrews_mat(path)
    assert str(path) in str(info.value)


def test_andrews_mat_not_a_mat_file(tmp_path):
    path = write(tmp_path, "this is not a MATLAB file\n", "bad.mat")
    with pytest.raises(ValueError, match="cannot be read as a MATLAB"):
        datasets.load_andrews_mat(path)


# --------------------------------------------------------------------------------------------
# Round trip through the MILL format
# --------------------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def mi_data(draw, sparse):
    n_features = draw(st.integers(1, 6))
    n_bags = draw(st.integers(1, 5))
    values = st.one_of(st.just(0.0), finite) if sparse else finite
    bags = []
    for _ in range(n_bags):
        n = draw(st.integers(1, 4))
        bags.append(
            np.array(
                draw(
                    st.lists(
                        st.lists(values, min_size=n_features, max_size=n_features),
                        min_size=n,
                        max_size=n,
                    )
                ),
                dtype=np.float64,
            )
        )
    labels = draw(st.lists(st.integers(0, 19), min_size=n_bags, max_size=n_bags))
    return bags, labels


def write_mill(path, bags, labels, sparse):
    lines = []
    for i, (bag, label) in enumerate(zip(bags, labels)):
        for j, row in enumerate(bag):
            if sparse:
                feats = [f"{k + 1}:{v!r}" for k, v in enumerate(row.tolist()) if v != 0]
            else:
                feats = [repr(v) for v in row.tolist()]
            lines.append(",".join([f"inst{i}_{j}", f"bag{i}", str(label), *feats]))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


@settings(max_examples=60, deadline=None)
@given(mi_data(sparse=False))
def test_roundtrip_dense(data):
    bags, labels = data
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rt.data")
        write_mill(path, bags, labels, sparse=False)
        got_bags, got_y = datasets.load_mill(path)
    assert got_y.tolist() == labels
    assert len(got_bags) == len(bags)
    for got, want in zip(got_bags, bags):
        assert got.dtype == np.float64 and got.shape == want.shape
        assert got.tobytes() == want.tobytes()  # bit-exact, including -0.0 and subnormals


@settings(max_examples=60, deadline=None)
@given(mi_data(sparse=True))
def test_roundtrip_sparse(data):
    bags, labels = data
    n_features = bags[0].shape[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rt.data")
        write_mill(path, bags, labels, sparse=True)
        got_bags, got_y = datasets.load_mill(path, n_features=n_features)
    assert got_y.tolist() == labels
    assert len(got_bags) == len(bags)
    for got, want in zip(got_bags, bags):
        assert isinstance(got, sp.csr_matrix) and got.shape == want.shape
        want = want + 0.0  # -0.0 is written as absent, i.e. +0.0
        assert got.toarray().tobytes() == want.tobytes()
        assert got.nnz == np.count_nonzero(want)


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------

GENERATORS = {
    "center_ring": datasets.make_center_ring_bags,
    "four_gaussians": datasets.make_four_gaussians_bags,
    "annealing": datasets.make_annealing_toy,
}


def check_bags_2d(bags, y, n_bags, sizes=None):
    assert len(bags) == len(y) == n_bags
    assert y.ndim == 1 and np.issubdtype(y.dtype, np.integer)
    for bag in bags:
        assert isinstance(bag, np.ndarray) and bag.dtype == np.float64
        assert bag.ndim == 2 and bag.shape[1] == 2 and np.all(np.isfinite(bag))
        if sizes is not None:
            assert sizes[0] <= bag.shape[0] <= sizes[1]


def check_instance_labels(bags, y, z):
    assert len(z) == len(bags)
    for bag, zi in zip(bags, z):
        assert zi.shape == (bag.shape[0],) and np.issubdtype(zi.dtype, np.integer)


def test_center_ring_shapes_balance_and_witnesses():
    bags, y, z = datasets.make_center_ring_bags(
        n_bags=100, bag_size=(5, 10), random_state=0, return_instance_labels=True
    )
    check_bags_2d(bags, y, 100, (5, 10))
    check_instance_labels(bags, y, z)
    assert np.bincount(y).tolist() == [50, 50]
    assert set(np.unique(y)) == {0, 1}
    for bag, label, zi in zip(bags, y, z):
        norms = np.linalg.norm(bag, axis=1)
        assert zi.max() == label  # a positive bag has a centre instance, a negative none
        assert np.all(norms[zi == 1] < 1.0) and np.all(norms[zi == 0] > 1.0)
        if label == 1:
            assert 1 <= zi.sum() <= max(1, len(zi) // 2)
    ring = np.concatenate([np.linalg.norm(b, axis=1)[zi == 0] for b, zi in zip(bags, z)])
    assert abs(ring.mean() - 2.0) < 0.05


def test_center_ring_options():
    bags, y = datasets.make_center_ring_bags(
        n_bags=7, bag_size=3, radius=5.0, noise=0.0, random_state=1
    )
    check_bags_2d(bags, y, 7, (3, 3))
    assert np.bincount(y).tolist() == [4, 3]
    for bag, label in zip(bags, y):
        norms = np.linalg.norm(bag, axis=1)
        assert np.allclose(np.sort(norms)[-1], 5.0)
        assert (np.min(norms) < 1e-12) == bool(label)


def nearest_mean(bag):
    means = np.array([[-2.0, 2.0], [2.0, 2.0], [2.0, -2.0], [-2.0, -2.0]])
    dist = np.linalg.norm(bag[:, None, :] - means[None, :, :], axis=2)
    assert np.all(dist.min(axis=1) < 1.5)  # sigma = 0.25: within 6 sigma
    return dist.argmin(axis=1)


def test_four_gaussians_shapes_balance_and_concepts():
    bags, y, z = datasets.make_four_gaussians_bags(
        n_bags=150, random_state=0, return_instance_labels=True
    )
    check_bags_2d(bags, y, 150, (5, 10))
    check_instance_labels(bags, y, z)
    assert np.bincount(y).tolist() == [50, 50, 50]
    for bag, label, zi in zip(bags, y, z):
        comp = nearest_mean(bag)  # 0: mu_1, 1: mu_2, 2: mu_3, 3: mu_4
        expected_z = np.select([comp == 0, comp == 2], [0, 1], default=2)
        np.testing.assert_array_equal(zi, expected_z)
        present = set(comp.tolist())
        if label == 0:
            assert 0 in present and 2 not in present
        elif label == 1:
            assert 2 in present and 0 not in present
        else:
            assert present <= {1, 3}
        assert label == (zi.min() if zi.min() < 2 else 2)
    # the background uses both mu_2 and mu_4
    all_comp = np.concatenate([nearest_mean(b) for b in bags])
    assert {1, 3} <= set(all_comp.tolist())


def test_four_gaussians_unbalanced_count():
    _, y = datasets.make_four_gaussians_bags(n_bags=10, bag_size=(1, 3), random_state=3)
    assert np.bincount(y).tolist() == [4, 3, 3]


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 1.0])
def test_annealing_toy(fraction):
    bags, y, z = datasets.make_annealing_toy(
        fraction, n_bags=60, random_state=0, return_instance_labels=True
    )
    check_bags_2d(bags, y, 60, (1, 10))
    check_instance_labels(bags, y, z)
    assert np.bincount(y).tolist() == [30, 30]
    for bag, label, zi in zip(bags, y, z):
        m = bag.shape[0]
        norms = np.linalg.norm(bag, axis=1)
        assert np.all(np.abs(bag) <= 3.0)
        np.testing.assert_array_equal(zi, (norms < 1.5).astype(int))  # positive region: disc
        expected = max(1, math.ceil(round(fraction * m, 9))) if label else 0
        assert zi.sum() == expected


def test_annealing_toy_bag_sizes_cover_1_to_10():
    bags, _ = datasets.make_annealing_toy(0.5, n_bags=300, random_state=0)
    assert sorted({b.shape[0] for b in bags}) == list(range(1, 11))


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_deterministic(name):
    make = GENERATORS[name]
    bags1, y1 = make(random_state=42)
    bags2, y2 = make(random_state=42)
    bags3, y3 = make(random_state=43)
    np.testing.assert_array_equal(y1, y2)
    assert_bags_equal(bags1, bags2)
    assert not (
        np.array_equal(y1, y3)
        and len(bags1) == len(bags3)
        and all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(bags1, bags3))
    )
    # RandomState and Generator objects are accepted, and consumed reproducibly
    for factory in (np.random.RandomState, np.random.default_rng):
        b1, t1 = make(random_state=factory(7))
        b2, t2 = make(random_state=factory(7))
        np.testing.assert_array_equal(t1, t2)
        assert_bags_equal(b1, b2)
    make(random_state=None)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_instance_labels_flag(name):
    out = GENERATORS[name](random_state=0)
    assert len(out) == 2
    out = GENERATORS[name](random_state=0, return_instance_labels=True)
    assert len(out) == 3
    plain = GENERATORS[name](random_state=0)
    assert_bags_equal(out[0], plain[0])


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("center_ring", {"n_bags": 1}, "n_bags"),
        ("center_ring", {"n_bags": 0}, "n_bags"),
        ("center_ring", {"n_bags": 2.5}, "n_bags"),
        ("center_ring", {"n_bags": "10"}, "n_bags"),
        ("center_ring", {"bag_size": (0, 3)}, "bag_size"),
        ("center_ring", {"bag_size": (5, 2)}, "bag_size"),
        ("center_ring", {"bag_size": (1, 2, 3)}, "bag_size"),
        ("center_ring", {"bag_size": 0}, "bag_size"),
        ("center_ring", {"bag_size": "abc"}, "bag_size"),
        ("center_ring", {"bag_size": (1.5, 3)}, "bag_size"),
        ("center_ring", {"radius": 0.0}, "radius"),
        ("center_ring", {"radius": float("nan")}, "radius"),
        ("center_ring", {"noise": -0.1}, "noise"),
        ("four_gaussians", {"n_bags": 2}, "n_bags"),
        ("four_gaussians", {"bag_size": (3, 1)}, "bag_size"),
        ("annealing", {"fraction_positive": 0.0}, "fraction_positive"),
        ("annealing", {"fraction_positive": 1.5}, "fraction_positive"),
        ("annealing", {"fraction_positive": -0.2}, "fraction_positive"),
        ("annealing", {"fraction_positive": float("nan")}, "fraction_positive"),
        ("annealing", {"n_bags": 1}, "n_bags"),
    ],
)
def test_generator_argument_validation(name, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        GENERATORS[name](**kwargs)


@settings(max_examples=30, deadline=None)
@given(
    n_bags=st.integers(3, 30),
    lo=st.integers(1, 6),
    extra=st.integers(0, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_generators_property(n_bags, lo, extra, seed):
    for make, n_classes in (
        (datasets.make_center_ring_bags, 2),
        (datasets.make_four_gaussians_bags, 3),
    ):
        bags, y, z = make(
            n_bags=n_bags, bag_size=(lo, lo + extra), random_state=seed, return_instance_labels=True
        )
        check_bags_2d(bags, y, n_bags, (lo, lo + extra))
        counts = np.bincount(y, minlength=n_classes)
        assert counts.sum() == n_bags and counts.max() - counts.min() <= 1
        for label, zi in zip(y, z):
            # the bag label is determined by its instances
            if n_classes == 2:
                assert zi.max() == label
            else:
                assert (zi.min() if zi.min() < 2 else 2) == label
