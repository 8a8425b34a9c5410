"""The last step of the CLAM tutorial (``docs/tutorials/clam-folder.md``): a model saved by
``milsvm fit`` from a CLAM folder scores slides saved as ``.npy`` from Rust
(``examples/score_npy.rs``) and from C (``examples/c/score_npy.c`` against
``capi/include/milsvm.h``), and both print Python's ``decision_function`` of each slide bit for
bit, for float32 and float64 arrays.

The C library is the one ``MILSVM_C_LIB`` names, else ``target/debug/libmilsvm_c.so`` built by
``cargo build -p milsvm-capi``; the Rust example is built by ``cargo build --example score_npy``
(both no-ops after ``cargo test``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import milsvm
import numpy as np
import pytest
from milsvm.datasets import load_slide_folder, make_slide_folder

REPO = Path(__file__).resolve().parents[1]
CC = shutil.which(os.environ.get("CC", "cc"))
CARGO = shutil.which("cargo")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small CLAM folder, the model ``milsvm fit`` saves from it, and three slides written as
    ``.npy`` (two as float32, as the folder holds them; one as float64) with Python's scores."""
    root = tmp_path_factory.mktemp("clam")
    made = make_slide_folder(root / "clam", n_cases=8, n_patches=(40, 80), random_state=0)
    model = root / "model.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "milsvm",
            "fit",
            str(made.features_dir),
            "--labels",
            str(made.labels),
            "--model",
            "MISVM",
            "-p",
            "kernel=linear",
            "-o",
            str(model),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    data = load_slide_folder(made.features_dir, made.labels)
    fitted = milsvm.load(model)
    files, expected = [], {}
    for i, dtype in [(0, np.float32), (1, np.float32), (2, np.float64)]:
        bag = np.asarray(data.bags[i], dtype=dtype)
        path = root / f"{data.names[i]}.npy"
        np.save(path, bag)
        files.append(path)
        expected[data.names[i]] = np.atleast_1d(fitted.decision_function([bag])[0])
    assert files[0].read_bytes()[6] == 1  # what numpy.save writes: format version 1
    return model, files, expected


def check_output(stdout, expected):
    rows = [line.split("\t") for line in stdout.splitlines()]
    assert [row[0] for row in rows] == list(expected)
    for name, *scores in rows:
        got = np.array([float(s) for s in scores])
        # the printed forms read back to the same doubles: equal bit for bit
        assert got.tobytes() == expected[name].astype(np.float64).tobytes(), (name, got)


@pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")
def test_c_program_scores_equal_python(served, tmp_path):
    model, files, expected = served
    if "MILSVM_C_LIB" in os.environ:
        library = Path(os.environ["MILSVM_C_LIB"]).parent
    else:
        if CARGO is None:
            pytest.skip("no MILSVM_C_LIB and no cargo to build libmilsvm_c")
        subprocess.run([CARGO, "build", "--locked", "-p", "milsvm-capi"], cwd=REPO, check=True)
        library = REPO / "target" / "debug"
    program = tmp_path / "score_npy"
    subprocess.run(
        [
            CC,
            "-std=c11",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{REPO / 'capi' / 'include'}",
            str(REPO / "examples" / "c" / "score_npy.c"),
            f"-L{library}",
            "-lmilsvm_c",
            f"-Wl,-rpath,{library}",
            "-o",
            str(program),
        ],
        check=True,
    )
    proc = subprocess.run(
        [str(program), str(model), *map(str, files)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    check_output(proc.stdout, expected)
    # a file that is not a 2-D float .npy array is refused with a message
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros(3, dtype=np.int32))
    proc = subprocess.run([str(program), str(model), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1 and "not a 2-D float32 or float64" in proc.stderr


@pytest.mark.skipif(CARGO is None, reason="no cargo on PATH to build the Rust example")
def test_rust_example_scores_equal_python(served, tmp_path):
    model, files, expected = served
    subprocess.run([CARGO, "build", "--locked", "--example", "score_npy"], cwd=REPO, check=True)
    program = REPO / "target" / "debug" / "examples" / "score_npy"
    proc = subprocess.run(
        [str(program), str(model), *map(str, files)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    check_output(proc.stdout, expected)
    bad = tmp_path / "bad.npy"
    np.save(bad, np.asfortranarray(np.zeros((2, 3))))  # written in Fortran order
    proc = subprocess.run([str(program), str(model), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1 and "Fortran order" in proc.stderr
