"""Readers of the embedding layouts (folders of ``.npy`` / CLAM HDF5 bags, Parquet tables, label
CSVs), the command line on a folder, and ``make_embedding_bags`` (issue 18, items 4 and 5).

Every file is written by the test itself, small; the readers must keep float32 float32 and name
the file in every refusal."""

import milsvm
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from milsvm import datasets
from milsvm.cli import main

h5py = pytest.importorskip("h5py")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def write_npy_folder(folder, bags, y=None, header=True, text_labels=False):
    folder.mkdir(parents=True, exist_ok=True)
    for k, b in enumerate(bags):
        np.save(folder / f"slide_{k}.npy", b)
    if y is None:
        return None
    path = folder.parent / "labels.csv"
    rows = [
        f"slide_{k},{('tumor' if v else 'normal') if text_labels else int(v)}"
        for k, v in enumerate(y)
    ]
    path.write_text(("bag_id,label\n" if header else "") + "\n".join(rows) + "\n")
    return path


def write_h5_folder(folder, bags, dataset="features"):
    folder.mkdir(parents=True, exist_ok=True)
    for k, b in enumerate(bags):
        with h5py.File(folder / f"slide_{k}.h5", "w") as f:
            f[dataset] = b
            f["coords"] = np.zeros((len(b), 2), dtype=np.int64)


@pytest.fixture
def small():
    return datasets.make_embedding_bags(12, mean_bag_size=20, n_features=8, random_state=0)


# --------------------------------------------------------------------------------------------
# .npy folders
# --------------------------------------------------------------------------------------------


def test_npy_folder_round_trip_keeps_float32_memory_mapped(tmp_path, small):
    bags, y = small
    labels = write_npy_folder(tmp_path / "npy", bags, y)
    got, gy, names = datasets.load_npy_folder(tmp_path / "npy", labels, return_bag_names=True)
    assert names == [f"slide_{k}" for k in range(len(bags))]  # the label file's order
    np.testing.assert_array_equal(gy, y)
    assert gy.dtype == np.int64
    for a, b in zip(got, bags):
        assert isinstance(a, np.memmap) and a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
    eager, _ = datasets.load_npy_folder(tmp_path / "npy", labels, mmap=False)
    assert not isinstance(eager[0], np.memmap) and eager[0].dtype == np.float32


def test_npy_folder_without_labels_is_sorted_by_bag_id(tmp_path, small):
    bags, _ = small
    write_npy_folder(tmp_path / "npy", bags)
    got, y, names = datasets.load_npy_folder(tmp_path / "npy", return_bag_names=True)
    assert y is None and names == sorted(names) and len(got) == len(bags)


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (np.float16, np.float32),
        (np.int32, np.float64),
        (np.bool_, np.float64),
        (np.float64, np.float64),
    ],
)
def test_the_dtype_rule(tmp_path, dtype, expected):
    folder = tmp_path / "npy"
    folder.mkdir()
    np.save(folder / "a.npy", np.ones((3, 2), dtype=dtype))
    np.save(folder / "b.npy", np.zeros((2, 2), dtype=dtype))
    bags, y = datasets.load_npy_folder(folder, {"a": 1, "b": 0})
    assert bags[0].dtype == expected and list(y) == [1, 0]
    np.testing.assert_array_equal(bags[0], 1.0)


def test_npy_refusals_name_the_file(tmp_path):
    folder = tmp_path / "npy"
    folder.mkdir()
    np.save(folder / "a.npy", np.ones((3, 4), dtype=np.float32))
    np.save(folder / "b.npy", np.ones((3, 5), dtype=np.float32))
    with pytest.raises(ValueError, match=r"b\.npy: 5 features, but .*a\.npy has 4"):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})
    np.save(folder / "b.npy", np.ones((0, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"b\.npy: the bag has no instances"):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})
    np.save(folder / "b.npy", np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"b\.npy: a bag must be a 2-D array"):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})
    np.save(folder / "b.npy", np.ones((2, 4), dtype=np.complex64))
    with pytest.raises(
        TypeError, match=r"b\.npy: features must be real numbers, got dtype complex64"
    ):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})
    (folder / "b.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"b\.npy: the file is empty"):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})
    (folder / "b.npy").write_bytes(b"not an array at all")
    with pytest.raises(ValueError, match=r"b\.npy: not a readable \.npy array"):
        datasets.load_npy_folder(folder, {"a": 0, "b": 1})


def test_labels_and_files_must_match_one_to_one(tmp_path, small):
    bags, y = small
    labels = write_npy_folder(tmp_path / "npy", bags[:3], y[:3])
    with open(labels, "a") as f:
        f.write("ghost,1\n")
    with pytest.raises(ValueError, match=r"1 labelled bag\(s\) have no file in .*: 'ghost'"):
        datasets.load_npy_folder(tmp_path / "npy", labels)
    np.save(tmp_path / "npy" / "stray.npy", bags[0])
    with pytest.raises(ValueError, match=r"'ghost'.*1 file\(s\) have no label: '.*stray\.npy'"):
        datasets.load_npy_folder(tmp_path / "npy", labels)
    with pytest.raises(ValueError, match=r"no \.npy files"):
        datasets.load_npy_folder(tmp_path, labels)


# --------------------------------------------------------------------------------------------
# label CSVs
# --------------------------------------------------------------------------------------------


def test_label_csv_layouts(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("a,1\nb,0\n\nc,1.0\n")
    assert datasets.read_labels(plain) == {"a": 1, "b": 0, "c": 1}
    clam = tmp_path / "clam.csv"
    clam.write_text(
        "case_id,slide_id,label\ncase1,slide_1.h5,tumor_tissue\ncase1,slide_2.h5,normal_tissue\n"
    )
    assert datasets.read_labels(clam) == {"slide_1": "tumor_tissue", "slide_2": "normal_tissue"}
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("Label,Bag\n1,x\n0,y\n")
    assert datasets.read_labels(swapped) == {"x": 1, "y": 0}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", r"the label file is empty"),
        ("bag_id,label\n", r"has a header and no labels"),
        ("a,1\nb\n", r"line 2: expected 2 comma-separated fields, got 1"),
        ("a,1\na,0\n", r"line 2: bag 'a' is labelled twice"),
        ("a,\n", r"line 1: empty label for bag 'a'"),
        ("foo,label\na,1\n", r"must name a bag id column"),
    ],
)
def test_label_csv_refusals_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "labels.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        datasets.read_labels(path)
    assert "labels.csv" in str(info.value)


def test_text_labels_train_an_estimator(tmp_path, small):
    bags, y = small
    labels = write_npy_folder(tmp_path / "npy", bags, y, text_labels=True)
    got, gy = datasets.load_npy_folder(tmp_path / "npy", labels)
    assert set(gy) == {"tumor", "normal"}
    est = milsvm.NSK(kernel="linear").fit(got, gy)
    assert set(est.predict(got)) <= {"tumor", "normal"}


# --------------------------------------------------------------------------------------------
# HDF5 (CLAM) folders
# --------------------------------------------------------------------------------------------


def test_h5_folder_round_trip(tmp_path, small):
    bags, y = small
    write_h5_folder(tmp_path / "h5", bags)
    got, gy = datasets.load_h5_folder(
        tmp_path / "h5", {f"slide_{k}": int(v) for k, v in enumerate(y)}
    )
    for a, b in zip(got, bags):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_h5_refusals_name_the_file(tmp_path, small):
    bags, y = small
    write_h5_folder(tmp_path / "h5", bags[:2])
    labels = {"slide_0": 0, "slide_1": 1}
    with pytest.raises(
        ValueError, match=r"slide_0\.h5: no dataset 'feats' \(the file has: 'coords', 'features'\)"
    ):
        datasets.load_h5_folder(tmp_path / "h5", labels, dataset="feats")
    (tmp_path / "h5" / "slide_1.h5").write_bytes(b"")
    with pytest.raises(ValueError, match=r"slide_1\.h5: the file is empty"):
        datasets.load_h5_folder(tmp_path / "h5", labels)
    (tmp_path / "h5" / "slide_1.h5").write_bytes(b"garbage bytes, not HDF5")
    with pytest.raises(ValueError, match=r"slide_1\.h5: not a readable HDF5 file"):
        datasets.load_h5_folder(tmp_path / "h5", labels)


# --------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------


def parquet_table(bags, y, layout):
    ids = np.concatenate([[f"slide_{k}"] * len(b) for k, b in enumerate(bags)])
    labels = np.repeat(y, [len(b) for b in bags])
    X = np.concatenate(bags)
    if layout == "list":
        features = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), X.shape[1])
        return pa.table({"bag_id": ids, "label": labels, "features": features})
    return pa.table(
        {"bag_id": ids, "label": labels, **{f"f{j}": X[:, j] for j in range(X.shape[1])}}
    )


@given(
    seed=st.integers(0, 10_000), layout=st.sampled_from(["list", "columns"]), shuffle=st.booleans()
)
def test_parquet_round_trip(tmp_path_factory, seed, layout, shuffle):
    bags, y = datasets.make_embedding_bags(6, mean_bag_size=5, n_features=3, random_state=seed)
    table = parquet_table(bags, y, layout)
    if shuffle:  # the rows of a bag need not be contiguous: bags in order of first row
        table = table.take(np.random.default_rng(seed).permutation(table.num_rows))
    path = tmp_path_factory.mktemp("pq") / "t.parquet"
    pq.write_table(table, path)
    got, gy, names = datasets.load_parquet(path, return_bag_names=True)
    order = [int(n.split("_")[1]) for n in names]
    assert sorted(order) == list(range(6))
    for k, a in zip(order, got):
        assert a.dtype == np.float32
        if shuffle:
            np.testing.assert_array_equal(np.sort(a, axis=0), np.sort(bags[k], axis=0))
        else:
            np.testing.assert_array_equal(a, bags[k])
    np.testing.assert_array_equal(gy, y[order])


def test_parquet_refusals_name_the_file(tmp_path, small):
    bags, y = small
    table = parquet_table(bags[:3], y[:3], "columns")
    path = tmp_path / "t.parquet"
    mixed = table.set_column(
        1, "label", pa.array(np.r_[1, np.zeros(table.num_rows - 1, dtype=np.int64)])
    )
    pq.write_table(mixed, path)
    with pytest.raises(ValueError, match=r"t\.parquet: the rows of bag 'slide_0' carry 2 labels"):
        datasets.load_parquet(path)
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"t\.parquet: no bag column 'slide'"):
        datasets.load_parquet(path, bag_column="slide")
    with pytest.raises(
        ValueError, match=r"1 labelled bag\(s\) have no file in .*t\.parquet: 'ghost'"
    ):
        datasets.load_parquet(path, {"slide_0": 1, "slide_1": 0, "slide_2": 1, "ghost": 0})
    with pytest.raises(ValueError, match=r"1 bag\(s\) of .*t\.parquet have no label: 'slide_2'"):
        datasets.load_parquet(path, {"slide_0": 1, "slide_1": 0})
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(ValueError, match=r"bad\.parquet: not a readable Parquet file"):
        datasets.load_parquet(tmp_path / "bad.parquet")
    texts = pa.table({"bag_id": ["a", "b"], "label": [0, 1], "f": ["x", "y"]})
    pq.write_table(texts, path)
    with pytest.raises(TypeError, match=r"t\.parquet: feature column 'f' has type string"):
        datasets.load_parquet(path)


# --------------------------------------------------------------------------------------------
# the command line on a folder
# --------------------------------------------------------------------------------------------


def test_cli_cv_fit_predict_on_a_folder(tmp_path, capsys, small):
    bags, y = small
    labels = write_npy_folder(tmp_path / "npy", bags, y)
    model = tmp_path / "m.json"
    common = [
        str(tmp_path / "npy"),
        "--labels",
        str(labels),
        "--model",
        "NSK",
        "-p",
        "kernel=linear",
    ]
    assert main(["cv", *common, "--folds", "3", "-q"]) == 0
    assert "accuracy" in capsys.readouterr().out
    assert main(["fit", *common, "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "npy"), "-q"]) == 0  # no labels needed
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(bags) and all(len(line.split("\t")) == 3 for line in lines)


def test_cli_folder_refusals(tmp_path, capsys, small):
    bags, y = small
    write_npy_folder(tmp_path / "npy", bags, y)
    assert main(["cv", str(tmp_path / "npy"), "--model", "NSK"]) == 1
    assert "give the bag labels with --labels" in capsys.readouterr().err
    assert main(["cv", str(tmp_path), "--labels", str(tmp_path / "labels.csv")]) == 1
    assert "holds no .npy or .h5 files" in capsys.readouterr().err
    assert main(["cv", str(tmp_path / "npy"), "--labels", str(tmp_path / "missing.csv")]) == 1
    assert "label file" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# make_embedding_bags
# --------------------------------------------------------------------------------------------


def labelled_embedding_bags(n_bags, **params):
    """``make_embedding_bags`` with the instance labels: (bags, y, instance labels)."""
    return datasets.make_embedding_bags(n_bags, return_instance_labels=True, **params)


def test_make_embedding_bags_shape_and_determinism():
    bags, y, inst = labelled_embedding_bags(
        200, mean_bag_size=50, n_features=4, witness_rate=0.1, random_state=3
    )
    sizes = np.array([len(b) for b in bags])
    assert abs(sizes.mean() / 50 - 1) < 0.1  # lognormal with the requested mean
    assert y.sum() == 100 and all(b.dtype == np.float32 and b.shape[1] == 4 for b in bags)
    rates = np.array([i.mean() for i, label in zip(inst, y) if label == 1])
    assert all(i.sum() >= 1 for i, label in zip(inst, y) if label == 1)
    assert all(i.sum() == 0 for i, label in zip(inst, y) if label == 0)
    assert abs(rates.mean() - 0.1) < 0.03
    again = datasets.make_embedding_bags(
        200, mean_bag_size=50, n_features=4, witness_rate=0.1, random_state=3
    )
    assert all(np.array_equal(a, b) for a, b in zip(bags, again[0]))
    fixed, _ = datasets.make_embedding_bags(
        5, mean_bag_size=7, n_features=2, bag_size_sigma=0, dtype=np.float64, random_state=0
    )
    assert [len(b) for b in fixed] == [7] * 5 and fixed[0].dtype == np.float64


def test_make_embedding_bags_witnesses_are_separable_along_one_direction():
    bags, y, inst = labelled_embedding_bags(
        40, mean_bag_size=100, n_features=16, separation=6.0, random_state=0
    )
    X, labels = np.concatenate(bags).astype(np.float64), np.concatenate(inst)
    direction = X[labels == 1].mean(0) - X[labels == 0].mean(0)
    assert 5.0 < np.linalg.norm(direction) < 7.0  # the shift, up to sampling noise


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_bags": 1}, "n_bags must be an integer >= 2"),
        ({"witness_rate": 0.0}, "witness_rate must be > 0.0"),
        ({"witness_rate": 1.5}, "witness_rate must be <= 1.0"),
        ({"separation": -1.0}, "separation must be > 0.0"),
        ({"dtype": np.int32}, "dtype must be float32 or float64"),
        ({"n_bags": 3, "positive_fraction": 0.1}, "leaves a class without bags"),
    ],
)
def test_make_embedding_bags_refusals(kwargs, message):
    with pytest.raises(ValueError, match=message):
        datasets.make_embedding_bags(**kwargs)
