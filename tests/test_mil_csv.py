"""Tests of ``milsvm.datasets.load_mil_csv`` (the CSV layout of the ``mil`` package) and of the
loaders' ``return_bag_names`` option. Its refusals of malformed files are in the readers' shared
list, ``tests/data/reader_refusals.json`` (``tests/test_datasets.py``)."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from milsvm import datasets


def write(tmp_path, text, name="d.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def musk1_as_mil_csv(tmp_path, header=None, bag_first=False):
    """The bundled MUSK1 written in the mil package's layout (label, integer bag id, features)."""
    bags, y = datasets.load_musk1()
    lines = [header] if header else []
    for b, (bag, label) in enumerate(zip(bags, y), start=1):
        for row in bag:
            first = f"{b},{label}" if bag_first else f"{label},{b}"
            lines.append(first + "," + ",".join(f"{v:g}" for v in row))
    return write(tmp_path, "\n".join(lines) + "\n"), bags, y


def assert_same(bags_a, bags_b):
    assert len(bags_a) == len(bags_b)
    for a, b in zip(bags_a, bags_b):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("header", [None, "label,bag_id," + ",".join(f"f{i}" for i in range(166))])
def test_mil_layout_equals_the_bundled_musk1(tmp_path, header):
    path, bags, y = musk1_as_mil_csv(tmp_path, header)
    got, got_y, names = datasets.load_mil_csv(path, return_bag_names=True)
    assert_same(got, bags)
    np.testing.assert_array_equal(got_y, y)
    assert got_y.dtype == np.int64
    assert names == [str(b) for b in range(1, 93)]


def test_header_may_put_the_bag_id_first(tmp_path):
    path, bags, y = musk1_as_mil_csv(
        tmp_path, "Bag_ID,Label," + ",".join(f"x{i}" for i in range(166)), True
    )
    got, got_y = datasets.load_mil_csv(path)
    assert_same(got, bags)
    np.testing.assert_array_equal(got_y, y)


def test_rows_of_a_bag_need_not_be_contiguous(tmp_path):
    path = write(tmp_path, "1,a,1,2\n0,b,3,4\n1,a,5,6\n\n0,c,7,8\r\n0,b,9,10\n")
    bags, y, names = datasets.load_mil_csv(path, return_bag_names=True)
    assert names == ["a", "b", "c"]
    np.testing.assert_array_equal(y, [1, 0, 0])
    assert_same(
        bags, [np.array([[1.0, 2], [5, 6]]), np.array([[3.0, 4], [9, 10]]), np.array([[7.0, 8]])]
    )


def test_quoted_fields_and_integer_labels_written_as_floats(tmp_path):
    path = write(tmp_path, '1.0,"bag 1",1,2\n-1,"bag, 2",3,4\n')
    bags, y, names = datasets.load_mil_csv(path, return_bag_names=True)
    assert names == ["bag 1", "bag, 2"]
    np.testing.assert_array_equal(y, [1, -1])


def test_empty_file_and_header_only(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        datasets.load_mil_csv(write(tmp_path, "\n\n"))
    with pytest.raises(ValueError, match="header but no data lines"):
        datasets.load_mil_csv(write(tmp_path, "label,bag,f1\n"))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        datasets.load_mil_csv(tmp_path / "absent.csv")


def test_return_bag_names_of_the_other_loaders(tmp_path):
    mill = write(tmp_path, "i1,b1,1,1,2\ni2,b1,1,3,4\ni3,b0,0,5,6\n", "d.data")
    bags, y, names = datasets.load_mill(mill, return_bag_names=True)
    assert names == ["b1", "b0"] and len(bags) == 2
    assert len(datasets.load_mill(mill)) == 2

    uci = write(tmp_path, "M1,c1,1,2,1.\nM1,c2,3,4,1.\nM2,c1,5,6,0.\n", "clean.data")
    assert datasets.load_musk_uci(uci, return_bag_names=True)[2] == ["M1", "M2"]

    mat = tmp_path / "d.mat"
    scipy.io.savemat(
        mat,
        {
            "features": sp.csr_matrix(np.arange(8.0).reshape(4, 2)),
            "labels": np.array([[1, 1, -1, -1]]),
            "bag_ids": np.array([[2, 2, 7, 7]]),
        },
    )
    bags, y, names = datasets.load_andrews_mat(mat, return_bag_names=True)
    assert names == ["2", "7"] and y.tolist() == [1, 0]

    bags, y, names = datasets.load_musk1(return_bag_names=True)
    assert len(names) == 92 and names[0] == "MUSK-188" and len(set(names)) == 92
