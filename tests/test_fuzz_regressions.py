"""Regression tests from fuzzing the file readers (``benches/serving.py fuzz``), and a fast
property test that the readers answer garbage with ``ValueError`` only.

Every input here once made a reader crash the interpreter (segmentation fault), raise an
exception other than ``ValueError``, or return data other than what the file holds. The inputs
that crashed are loaded in a subprocess, so that a regression fails one test instead of
killing the test run. The binary inputs are in ``tests/data/fuzz/``.
"""

import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import milsvm
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import READER_TOKENS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from milsvm import datasets

FUZZ_DATA = Path(__file__).resolve().parent / "data" / "fuzz"


def write(tmp_path, content, name="input.data"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def load_in_subprocess(loader, path):
    """Run ``datasets.<loader>(path)`` in a fresh interpreter; return (exit code, output).

    The child prints ``ValueError: <message>`` or ``loaded <n> bags``. A segmentation fault
    shows as a negative exit code (the signal).
    """
    code = (
        "import sys\n"
        "from milsvm import datasets\n"
        "try:\n"
        f"    bags, y = datasets.{loader}(sys.argv[1])\n"
        "except ValueError as exc:\n"
        "    print('ValueError:', exc)\n"
        "else:\n"
        "    print('loaded', len(bags), 'bags')\n"
    )
    package_root = str(Path(milsvm.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc.returncode, proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------
# MILL / UCI text readers
# --------------------------------------------------------------------------------------------


def test_mill_label_beyond_int64_is_a_value_error(tmp_path):
    # Was: OverflowError from np.asarray(labels, dtype=int64).
    path = write(tmp_path, "i1,b1,99999999999999999999,1.0,2.0\ni2,b2,0,3.0,4.0\n")
    with pytest.raises(
        ValueError,
        match=r"line 1: the label '99999999999999999999' \(field 3\) "
        r"is out of range",
    ):
        datasets.load_mill(path)


def test_mil_csv_label_beyond_int64_is_a_value_error():
    # Was: OverflowError from np.asarray(labels, dtype=int64) (found by the csv target).
    with pytest.raises(
        ValueError,
        match=r"line 3: the label '-1000.*' \(field 1\) is out of "
        r"range",
    ):
        datasets.load_mil_csv(FUZZ_DATA / "csv_label_overflow.csv")


@pytest.mark.parametrize("label", ["9223372036854775807", "-9223372036854775808"])
def test_mill_label_at_int64_limits_is_read(tmp_path, label):
    path = write(tmp_path, f"i1,b1,{label},1.0\ni2,b2,0,2.0\n")
    bags, y = datasets.load_mill(path)
    assert y.tolist() == [int(label), 0]


@pytest.mark.parametrize("junk", ["\x1c", "\x1d", "\x1e", "\x1f", "\u2003", "\u00a0"])
def test_dense_value_with_control_or_unicode_space_is_rejected(tmp_path, junk):
    # Was: numpy's tokenizer skipped the separator / Unicode space and read "\x1c1" as 1.0,
    # while the strict parser (float()) rejects it: the file was accepted as if clean.
    # (At the start or end of a line the character is stripped with the line's whitespace.)
    mill = write(tmp_path, f"i1,b1,1,1,2\ni2,b1,1,1,{junk}2\n", "in.data")
    with pytest.raises(ValueError, match=r"line 2: feature 2 \(field 5\)"):
        datasets.load_mill(mill)
    uci = write(tmp_path, f"M1,c1,1,2,1.\nM1,c2,3,{junk}4,1.\n", "clean.data")
    with pytest.raises(ValueError, match=r"line 2: feature 2 \(field 4\)"):
        datasets.load_musk_uci(uci)


def test_dense_fast_path_still_reads_plain_numbers(tmp_path):
    path = write(tmp_path, "i1,b1,1, 1.5e3 ,\t-2,+.5\ni2,b2,0,0.,-0.0,1E-2\n")
    bags, y = datasets.load_mill(path)
    np.testing.assert_array_equal(np.vstack(bags), [[1500.0, -2.0, 0.5], [0.0, -0.0, 0.01]])


def test_lone_cr_is_a_line_end(tmp_path):
    # Universal newlines (LF, CRLF, CR): the fuzzer's reference parser had to learn this too.
    path = write(tmp_path, b"i1,b1,1,1:0.5,7:2\r\ni2,b1,1,\r\x08c,b2,0,3:1e-3\r\n")
    bags, y = datasets.load_mill(path)
    assert [b.shape for b in bags] == [(2, 7), (1, 7)] and y.tolist() == [1, 0]


# --------------------------------------------------------------------------------------------
# Andrews .mat reader
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, phrase",
    [
        # A garbled row index of the sparse 'features': scipy built the matrix unchecked and the
        # CSC -> CSR conversion read out of bounds (segmentation fault).
        ("mat_segv_sparse_indices.mat", "the sparse variable 'features' is corrupt"),
        # Decreasing column pointers with no stored value: check_format(full_check=True) does
        # not see it, toarray() crashed.
        ("mat_segv_sparse_indptr.mat", "the sparse variable 'labels' is corrupt"),
        # The complex flag set on a real matrix: scipy read the next variable's tag as the
        # imaginary part and indexed its type table with it (segmentation fault).
        ("mat_segv_complex_flag.mat", "needs 2"),
        # A (2, 0) 'features': the bags had no features.
        ("mat_no_columns.mat", "'features' has no columns"),
    ],
)
def test_mat_fuzz_inputs_are_value_errors(name, phrase):
    code, out = load_in_subprocess("load_andrews_mat", FUZZ_DATA / name)
    assert code == 0, f"the loader crashed (exit code {code}):\n{out}"
    assert out.startswith("ValueError:") and phrase in out, out


def test_mat_v4_sparse_is_read():
    # MATLAB v4 sparse variables come back as COO matrices: this used to raise AttributeError.
    bags, y = datasets.load_andrews_mat(FUZZ_DATA / "mat_v4_sparse_coo.mat")
    assert len(bags) == 1 and sp.issparse(bags[0]) and bags[0].shape == (5, 2)


def _sparse_mat_bytes(compress=False):
    buf = io.BytesIO()
    features = sp.csc_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]))
    scipy.io.savemat(
        buf,
        {
            "features": features,
            "labels": np.array([[1.0, 1.0, -1.0]]),
            "bag_ids": np.array([[1.0, 1.0, 2.0]]),
        },
        do_compression=compress,
    )
    return bytearray(buf.getvalue())


def _find_tag(content, mdtype, byte_count, start=128):
    """Offset of the first normal data-element tag (mdtype, byte_count), little-endian."""
    return bytes(content).index(struct.pack("<II", mdtype, byte_count), start)


def test_mat_corrupt_element_type_is_a_value_error(tmp_path):
    # The row indices (miINT32, 4 entries) of the sparse 'features' get an undefined type:
    # scipy's compiled reader indexes its type table with it (segmentation fault).
    content = _sparse_mat_bytes()
    at = _find_tag(content, 5, 16)
    struct.pack_into("<I", content, at, 0x6666)
    path = write(tmp_path, bytes(content), "corrupt.mat")
    code, out = load_in_subprocess("load_andrews_mat", path)
    assert code == 0, f"the loader crashed (exit code {code}):\n{out}"
    assert "data element of type 26214" in out, out


def test_mat_element_size_beyond_the_file_is_a_value_error(tmp_path):
    content = _sparse_mat_bytes()
    struct.pack_into("<I", content, _find_tag(content, 5, 16) + 4, 10**9)
    path = write(tmp_path, bytes(content), "corrupt.mat")
    with pytest.raises(ValueError, match="claims 1000000000 bytes"):
        datasets.load_andrews_mat(path)


def test_mat_corrupt_compressed_variable_is_a_value_error(tmp_path):
    content = _sparse_mat_bytes(compress=True)
    content[140:150] = b"\xff" * 10  # inside the first zlib stream
    path = write(tmp_path, bytes(content), "corrupt.mat")
    with pytest.raises(ValueError, match="cannot be read as a MATLAB .mat file"):
        datasets.load_andrews_mat(path)


def test_mat_structure_check_accepts_valid_files(tmp_path):
    # Compressed and plain, with cells, structs, strings and complex values beside the data.
    for compress in (False, True):
        path = tmp_path / f"ok{compress}.mat"
        scipy.io.savemat(
            path,
            {
                "features": sp.csc_matrix(np.eye(3)),
                "labels": np.array([[1.0, -1.0, -1.0]]),
                "bag_ids": np.array([[1, 2, 2]]),
                "note": "made by hand",
                "cell": np.array([np.ones(2), "x"], dtype=object),
                "s": {"a": 1.0, "b": [1, 2]},
                "z": np.array([1 + 2j]),
            },
            do_compression=compress,
        )
        bags, y = datasets.load_andrews_mat(path)
        assert [b.shape for b in bags] == [(1, 3), (2, 3)] and y.tolist() == [1, 0]


@pytest.mark.parametrize("key", ["features", "labels", "bag_ids"])
def test_mat_complex_variable_is_rejected(tmp_path, key):
    # Was: a ComplexWarning and the imaginary part silently dropped.
    content = {
        "features": np.ones((2, 2)),
        "labels": np.array([[1.0, -1.0]]),
        "bag_ids": np.array([[1.0, 2.0]]),
    }
    content[key] = content[key] * (1 + 1j)
    path = tmp_path / "complex.mat"
    scipy.io.savemat(path, content)
    with pytest.raises(ValueError, match=f"'{key}' must be real and numeric, got complex"):
        datasets.load_andrews_mat(path)


# --------------------------------------------------------------------------------------------
# Property: garbage in, ValueError out
# --------------------------------------------------------------------------------------------

_text_files = st.lists(
    st.lists(st.sampled_from(READER_TOKENS), min_size=0, max_size=7).map(",".join),
    min_size=0,
    max_size=6,
).flatmap(lambda lines: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda nl: nl.join(lines)))
_garbage = st.one_of(
    st.binary(max_size=300),
    _text_files.map(lambda text: text.encode("utf-8")),
)


def _only_value_errors(loader, data, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input" + suffix)
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            bags, y = loader(path)
        except ValueError:
            return
    # Accepted: the result must be well formed.
    assert len(bags) == len(y) >= 1
    for bag in bags:
        assert bag.ndim == 2 and bag.shape[0] >= 1 and bag.shape[1] >= 1
        values = bag.data if sp.issparse(bag) else bag
        assert values.dtype == np.float64 and np.all(np.isfinite(values))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_garbage)
def test_text_readers_raise_only_value_error(data):
    _only_value_errors(datasets.load_mill, data, ".data")
    _only_value_errors(datasets.load_musk_uci, data, ".data")
    _only_value_errors(datasets.load_mil_csv, data, ".csv")


@st.composite
def _mat_files(draw):
    """A .mat file of random variables (some of the right names), possibly cut or garbled."""
    n = draw(st.integers(0, 4))
    values = st.sampled_from(
        [
            np.ones((n, 2)),
            np.zeros((0, 2)),
            np.full((1, n), np.nan),
            np.array([[1.0, -1.0]]),
            sp.csc_matrix(np.eye(max(n, 1))),
            "text",
            np.array([1 + 1j] * max(n, 1)),
            np.ones((2, 2, 2)),
            np.arange(n, dtype=np.int8)[None, :],
        ]
    )
    names = st.sampled_from(["features", "labels", "bag_ids", "other"])
    content = draw(st.dictionaries(names, values, max_size=3))
    buf = io.BytesIO()
    scipy.io.savemat(buf, content, do_compression=draw(st.booleans()))
    data = bytearray(buf.getvalue())
    if draw(st.booleans()) and len(data) > 128:
        cut = draw(st.integers(0, len(data) - 1))
        if draw(st.booleans()):
            data = data[:cut]
        else:
            data[cut] ^= draw(st.integers(1, 255))
    return bytes(data)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), _mat_files()))
def test_mat_reader_raises_only_value_error(data):
    _only_value_errors(datasets.load_andrews_mat, data, ".mat")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "format",
                    "version",
                    "model",
                    "classes",
                    "estimator",
                    "params",
                    "kernel",
                    "xv",
                    "dim",
                    "data",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), _json_values.map(lambda v: json.dumps(v).encode())))
def test_model_loader_raises_only_value_error_on_garbage(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        with open(path, "wb") as fh:
            fh.write(data)
        # the loader's ValueError names the file; undecodable bytes are a UnicodeDecodeError
        with pytest.raises(
            (ValueError, TypeError), match=rf"^{re.escape(path)}: |codec can't decode"
        ):
            milsvm.load(path)


# --------------------------------------------------------------------------------------------
# Model files: fuzzing findings in the model loader. The version-2 inputs were found in the
# loader before version 3; the others in the version-3 loader, then fixed there: an invalid
# stored n_jobs is refused at load, a score that overflows is a ValueError at prediction (the
# values are finite, their product is not), and a CSR basis of 2**63 columns (a Rust panic,
# 'capacity overflow', before the basis was indexed by feature in O(nnz) memory) is refused:
# NumPy cannot index it. Huge widths below that score sparse bags (the Rust tests).
# --------------------------------------------------------------------------------------------

_MODEL_CASES = [
    "model_no_classes.json",  # was KeyError: 'classes' missing
    "model_params_not_object.json",  # was AttributeError: 'params' is a list
    "model_one_class.json",  # was accepted: 'classes' has 1 entry, every bag predicted as it
    "model_classes_scalar.json",  # was accepted: 'classes' a number, predict IndexError
    "model_n_jobs_string.json",  # was accepted: params n_jobs='x', TypeError at predict
    "model_n_jobs_huge.json",  # was accepted: params n_jobs=1e30, TypeError at predict
    "model_scores_overflow.json",  # coefficient 1e308: infinite scores
    "model_v3_csr_shape_overflow.json",  # CSR basis of 2**63 columns: Rust panic (now refused)
    "model_v3_scores_overflow.json",  # value 1e308: infinite scores
]


@pytest.mark.parametrize("name", _MODEL_CASES)
def test_model_file_is_rejected_or_usable(name):
    try:
        est = milsvm.load(FUZZ_DATA / name)
    except (ValueError, TypeError):
        return  # the clean outcome
    except BaseException as exc:  # a Rust panic is a BaseException: fail, don't abort
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        pytest.fail(f"the loader raised {type(exc).__name__}: {exc}")
    rng = np.random.default_rng(0)
    d = est.n_features_in_
    if d > 10**6:  # probe a huge-width model with sparse bags
        import scipy.sparse as sp

        probe = [
            sp.csr_matrix((rng.normal(size=2), ([0, 1], [0, d - 1])), shape=(2, d)),
            sp.csr_matrix(([1.0], ([0], [d // 2])), shape=(1, d)),
        ]
    else:
        probe = [rng.normal(size=(3, d)), rng.normal(size=(1, d))]
    try:
        scores = np.asarray(est.decision_function(probe))
    except ValueError as exc:  # finite values whose scores overflow: a clear refusal
        assert "not finite" in str(exc)
        return
    labels = est.predict(probe)
    classes = np.asarray(est.classes_)
    assert classes.ndim == 1 and len(np.unique(classes)) == len(classes) >= 2
    assert np.all(np.isfinite(scores)) and np.isin(labels, classes).all()
