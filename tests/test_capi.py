"""The C library (``capi/``, ``libmilsvm_c``): a C program (``tests/c/milsvm_check.c``), compiled
here with the system ``cc`` against ``capi/include/milsvm.h``, loads model files saved from Python
and scores bags through the C API; the raw doubles it writes equal Python's bit for bit, for every
estimator of the registry, float64 and float32 input, a scaler pipeline with probabilities, a
probability ensemble, a multi-class model and a CSR basis. Eight threads scoring one model at
once give the same bits; every bad input gives its code and message; a warm thread allocates
nothing per call; and a run under AddressSanitizer (with LeakSanitizer), and under valgrind when
it is installed, reports no leak and no invalid access.

The library is the one ``MILSVM_C_LIB`` names, else ``target/debug/libmilsvm_c.so``, built (or
found current) by ``cargo build -p milsvm-capi``.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SMALL_FITS, marked_bags, quiet_fit
from milsvm import _registry
from sklearn.pipeline import make_pipeline

REPO = Path(__file__).resolve().parents[1]
HEADER_DIR = REPO / "capi" / "include"
SOURCE = REPO / "tests" / "c" / "milsvm_check.c"
CC = shutil.which(os.environ.get("CC", "cc"))

pytestmark = pytest.mark.skipif(
    CC is None, reason="no C compiler (cc) on PATH: the C API tests need one"
)

#: Every registered estimator (NSK with its l2 norm here).
ESTIMATORS = {**SMALL_FITS, "NSK": dict(C=10.0, norm="l2")}


@pytest.fixture(scope="module")
def library():
    """The directory holding libmilsvm_c.so: ``MILSVM_C_LIB``'s, else the one
    ``cargo build -p milsvm-capi`` makes (a no-op when it is current; the arithmetic, and so every
    bit compared below, is the same in the debug and the release profile)."""
    if "MILSVM_C_LIB" in os.environ:
        path = Path(os.environ["MILSVM_C_LIB"])
    else:
        subprocess.run(["cargo", "build", "--locked", "-p", "milsvm-capi"], cwd=REPO, check=True)
        path = REPO / "target" / "debug" / "libmilsvm_c.so"
    assert path.exists(), f"{path} was not built"
    return path.parent


def compile_check(library, out, extra=()):
    """``tests/c/milsvm_check.c`` compiled and linked against ``libmilsvm_c``."""
    cmd = [
        CC,
        "-std=gnu11",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
        *extra,
        f"-I{HEADER_DIR}",
        str(SOURCE),
        f"-L{library}",
        "-lmilsvm_c",
        f"-Wl,-rpath,{library}",
        "-o",
        str(out),
    ]
    subprocess.run(cmd, check=True)
    return out


@pytest.fixture(scope="module")
def check_program(library, tmp_path_factory):
    return compile_check(
        library, tmp_path_factory.mktemp("c") / "milsvm_check", ["-DMILSVM_COUNT_ALLOCS"]
    )


def write_inputs(bags, folder):
    """The bags as the C program reads them: stacked float64 and float32 rows, uint64 offsets."""
    x = np.ascontiguousarray(np.vstack([np.asarray(b, dtype=np.float64) for b in bags]))
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in bags])]).astype("<u8")
    paths = {"x64": folder / "x.f64", "x32": folder / "x.f32", "ptr": folder / "ptr.u64"}
    x.astype("<f8").tofile(paths["x64"])
    x.astype("<f4").tofile(paths["x32"])
    ptr.tofile(paths["ptr"])
    return paths, x.shape[1]


def run_c(program, *args, env=None):
    done = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, (
        f"{program.name} {args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    return done


def c_scores(program, model_path, bags, folder):
    """What the C program computes for every bag: {name: raw doubles}."""
    paths, d = write_inputs(bags, folder)
    out = folder / "out"
    run_c(program, "score", model_path, paths["x64"], paths["x32"], paths["ptr"], d, out)
    return {p.suffix[1:]: np.fromfile(p, dtype="<f8") for p in folder.glob("out.*")}


def python_values(est, bags):
    """Python's values for the same bags: bag scores (float64 and float32 input), instance
    scores, probabilities."""

    def flat(a):
        return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).ravel()

    bags32 = [np.asarray(b, dtype=np.float32) for b in bags]
    want = {
        "scores64": flat(est.decision_function(bags)),
        "scores32": flat(est.decision_function(bags32)),
    }
    final = est[-1] if hasattr(est, "steps") else est
    if hasattr(est, "instance_decision_function"):  # not STK, nor a pipeline
        for key, these in (("inst64", bags), ("inst32", bags32)):
            want[key] = flat(np.concatenate(est.instance_decision_function(these)))
    if getattr(final, "probability", False):
        want["proba64"] = flat(est.predict_proba(bags))
        want["proba32"] = flat(est.predict_proba(bags32))
    return want


def assert_bits(got, want, what):
    """Equal doubles, bit for bit (the same bytes)."""
    assert got.shape == want.shape, f"{what}: {got.shape} values from C, {want.shape} from Python"
    same = got.view(np.uint64) == want.view(np.uint64)
    assert same.all(), (
        f"{what}: {np.count_nonzero(~same)} values differ, e.g. C {got[~same][:3]} vs Python "
        f"{want[~same][:3]}"
    )


def check_model(program, est, bags, folder, path=None):
    path = path or folder / "model.json"
    milsvm.save(est, path)
    got = c_scores(program, path, bags, folder)
    want = python_values(est, bags)
    name = type(est[-1] if hasattr(est, "steps") else est).__name__
    assert set(want) <= set(got), f"{name}: C wrote {sorted(got)}, Python has {sorted(want)}"
    for key, values in want.items():
        assert_bits(got[key], values, f"{name} {key}")
    return got


def test_every_estimator_is_covered():
    assert set(ESTIMATORS) == set(_registry.ESTIMATORS)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_c_scores_equal_python_bit_for_bit(check_program, name, tmp_path):
    # 40 bags: the dual methods keep more than 32 expansion vectors, which both paths score
    # through matrix products
    bags, y = marked_bags(0, n_bags=40)
    est = quiet_fit(_registry.ESTIMATORS[name](**ESTIMATORS[name]), bags, y)
    test_bags, _ = marked_bags(1, n_bags=12)
    check_model(check_program, est, test_bags, tmp_path)


def test_miles_with_a_large_basis(check_program, tmp_path):
    # more than 32 concepts: Python's batch path and the C API's one-bag path score MILES's
    # bag-wise maxima with the same matrix-product arithmetic
    bags, y = marked_bags(0, n_bags=60, d=20)
    est = quiet_fit(milsvm.MILES(C=10.0), bags, y)
    assert est.model_.n_xv > 32
    check_model(check_program, est, marked_bags(1, n_bags=12, d=20)[0], tmp_path)


def test_multiclass_model(check_program, tmp_path):
    bags, y = marked_bags(0, n_bags=18, n_classes=3)
    est = quiet_fit(milsvm.MIKernel(C=10.0), bags, y)
    got = check_model(check_program, est, marked_bags(2, n_bags=9)[0], tmp_path)
    assert got["scores64"].size == 9 * 3


def test_scaler_pipeline_with_probabilities(check_program, tmp_path):
    bags, y = marked_bags(0, n_bags=30)
    bags = [b * [1.0, 50.0, 0.01] + [0.0, 100.0, -3.0] for b in bags]
    pipe = quiet_fit(
        make_pipeline(
            milsvm.BagStandardScaler(),
            milsvm.SparseMI(n_xv=3, C=10.0, probability=True, random_state=0),
        ),
        bags,
        y,
    )
    got = check_model(check_program, pipe, bags[:12], tmp_path)
    assert {"proba64", "proba32"} <= set(got)
    assert json.loads((tmp_path / "model.json").read_text())["scaler"] is not None


def test_probability_ensemble(check_program, tmp_path):
    bags, y = marked_bags(0, n_bags=30)
    est = quiet_fit(milsvm.NSK(C=10.0, probability="ensemble"), bags, y)
    got = check_model(check_program, est, bags[:10], tmp_path)
    assert json.loads((tmp_path / "model.json").read_text())["ensemble"]
    assert got["proba64"].size == 20


def test_csr_basis(check_program, tmp_path):
    rng = np.random.default_rng(3)
    y = np.arange(20) % 2
    bags = []
    for label in y:
        bag = sp.random(3, 40, density=0.1, random_state=rng, format="csr")
        if label:
            bag = sp.vstack(
                [bag, sp.csr_matrix(([4.0, 4.0], ([0, 0], [0, 1])), shape=(1, 40))]
            ).tocsr()
        bags.append(bag)
    est = quiet_fit(milsvm.SparseMI(n_xv=3, n_basis=8, C=10.0, max_iter=3, random_state=0), bags, y)
    assert est.model_.is_sparse
    # the C API takes dense rows: Python scores the same dense rows
    check_model(check_program, est, [b.toarray() for b in bags], tmp_path)


def test_eight_threads_give_the_same_bits(check_program, tmp_path):
    bags, y = marked_bags(0, n_bags=30)
    est = quiet_fit(milsvm.MIKernel(C=10.0), bags, y)
    assert est.model_.n_xv > 32  # the matrix-product path, with its per-thread buffers
    est.save(tmp_path / "m.json")
    paths, d = write_inputs(bags, tmp_path)
    done = run_c(check_program, "threads", tmp_path / "m.json", paths["x64"], paths["ptr"], d, 200)
    assert "mismatches 0 failures 0" in done.stdout


def test_no_allocation_per_call_once_warm(check_program, tmp_path):
    bags, y = marked_bags(0, n_bags=30)
    for est in (
        quiet_fit(milsvm.MIKernel(C=10.0, probability=True), bags, y),
        quiet_fit(
            make_pipeline(
                milsvm.BagStandardScaler(), milsvm.NSK(C=10.0, norm="l2", probability="ensemble")
            ),
            bags,
            y,
        ),
        quiet_fit(milsvm.MILES(C=10.0), bags, y),
        quiet_fit(milsvm.STK(C=10.0), bags, y),
    ):
        milsvm.save(est, tmp_path / "m.json")
        paths, d = write_inputs(bags, tmp_path)
        done = run_c(
            check_program,
            "allocs",
            tmp_path / "m.json",
            paths["x64"],
            paths["x32"],
            paths["ptr"],
            d,
            50,
        )
        found = re.search(r"calls (\d+) allocations (\d+) load_allocations (\d+)", done.stdout)
        calls, allocs, at_load = map(int, found.groups())
        # loading allocates (so the counter sees the library's allocations); scoring does not
        assert calls > 1000 and allocs == 0 and at_load > 0, done.stdout


#: Each bad call of ``milsvm_check errors``: its code (the header's enum) and a word of its message.
BAD_CALLS = {
    "model_null": ("MILSVM_ERR_NULL_POINTER", "model is NULL"),
    "x_null": ("MILSVM_ERR_NULL_POINTER", "x is NULL"),
    "out_null": ("MILSVM_ERR_NULL_POINTER", "output buffer is NULL"),
    "zero_instances": ("MILSVM_ERR_EMPTY", "the bag is empty"),
    "zero_features": ("MILSVM_ERR_EMPTY", "n_features is 0"),
    "wrong_width": ("MILSVM_ERR_WIDTH", "the bag has 4 features, the model was fitted on 3"),
    "wrong_width_f32": ("MILSVM_ERR_WIDTH", "4 features"),
    "size_overflow": ("MILSVM_ERR_SIZE", "exceeds the address space"),
    "nan": ("MILSVM_ERR_NON_FINITE", "non-finite value (instance 0, feature 1)"),
    "inf": ("MILSVM_ERR_NON_FINITE", "non-finite value (instance 0, feature 1)"),
    "inf_f32": ("MILSVM_ERR_NON_FINITE", "non-finite value"),
    "overflow": ("MILSVM_ERR_OVERFLOW", "not finite"),
    "no_probabilities": ("MILSVM_ERR_NO_PROBABILITIES", "probability=True"),
    "no_instance_scores": ("MILSVM_ERR_NO_INSTANCE_SCORES", "min_max"),
    "proba_null": ("MILSVM_ERR_NULL_POINTER", "model is NULL"),
    "instances_null": ("MILSVM_ERR_NULL_POINTER", "output buffer is NULL"),
    "load_path_null": ("MILSVM_ERR_NULL_POINTER", "path is NULL"),
    "load_out_null": ("MILSVM_ERR_NULL_POINTER", "out is NULL"),
    "json_null": ("MILSVM_ERR_NULL_POINTER", "json is NULL"),
    "json_empty": ("MILSVM_ERR_EMPTY", "empty"),
    "json_not_utf8": ("MILSVM_ERR_PARSE", "UTF-8"),
    "json_not_a_model": ("MILSVM_ERR_INVALID_MODEL", "format"),
    "ok": ("MILSVM_OK", ""),
}


def header_codes():
    """{name: value} of the MilsvmStatus enum in the checked-in header."""
    text = (HEADER_DIR / "milsvm.h").read_text()
    return {m[0]: int(m[1]) for m in re.findall(r"\b(MILSVM_(?:OK|ERR_[A-Z_]+)) = (\d+)", text)}


def parse_report(stdout):
    rows = {}
    for line in stdout.splitlines():
        name, code, msg = line.split("\t", 2)
        rows[name] = (int(code), msg)
    return rows


def errors_run(program, folder):
    # a linear model whose score of a bag holding 1e300 overflows: f(x) = 1e10 <(1, 1, 1), x>
    plain = milsvm.Model(np.ones((1, 3)), np.array([[1e10]]), np.array([0.0]), "linear", 1.0, 2)
    (folder / "plain.json").write_text(plain.to_json())
    bags, y = marked_bags(0)
    quiet_fit(milsvm.STK(C=10.0), bags, y).save(folder / "stk.json")
    return parse_report(run_c(program, "errors", folder / "plain.json", folder / "stk.json").stdout)


def test_every_bad_input_gives_its_code_and_message(check_program, tmp_path):
    codes = header_codes()
    assert len(set(codes.values())) == len(codes) and codes["MILSVM_OK"] == 0
    rows = errors_run(check_program, tmp_path)
    for name, (code, words) in BAD_CALLS.items():
        assert rows[name][0] == codes[code], (
            f"{name}: code {rows[name][0]}, expected {code} ({rows[name][1]})"
        )
        assert words in rows[name][1], f"{name}: message {rows[name][1]!r} lacks {words!r}"
    assert rows["null_queries"] == (0, "0 0 0")
    assert re.fullmatch(r"\d+\.\d+\.\d+", rows["version"][1])


def bad_files(folder):
    """Model files the library must refuse: {name: (path, code, words of the message)}."""
    bags, y = marked_bags(0)
    est = quiet_fit(milsvm.SparseMI(n_xv=3, C=10.0, max_iter=3, random_state=0), bags, y)
    good = folder / "good.json"
    est.save(good)
    text = good.read_text()
    doc = json.loads(text)
    files = {}

    def write(name, content, code, words):
        path = folder / f"{name}.json"
        path.write_text(content) if isinstance(content, str) else path.write_bytes(content)
        files[name] = (path, code, words)

    write("truncated", text[: len(text) // 2], "MILSVM_ERR_PARSE", "not valid JSON")
    write(
        "newer_version",
        json.dumps({**doc, "version": doc["version"] + 1}),
        "MILSVM_ERR_VERSION",
        "unsupported model file version",
    )
    nan = json.loads(text)
    nan["coef"]["data"][0] = float("nan")  # json writes a bare NaN, as Python's json would
    write("nan_coefficient", json.dumps(nan), "MILSVM_ERR_PARSE", "coef.data")
    write(
        "huge_coefficient",
        text.replace(repr(doc["coef"]["data"][0]), "1e999", 1),
        "MILSVM_ERR_PARSE",
        "number out of range",
    )
    write(
        "bad_shape",
        json.dumps({**doc, "coef": {"shape": [1, 2], "data": [0.0, 1.0]}}),
        "MILSVM_ERR_INVALID_MODEL",
        "coef",
    )
    write("not_utf8", b"\xff" + text.encode(), "MILSVM_ERR_PARSE", "UTF-8")
    write("empty", "", "MILSVM_ERR_EMPTY", "empty")
    files["missing"] = (folder / "missing.json", "MILSVM_ERR_IO", "missing.json")
    return good, files


def test_bad_model_files_are_refused_with_their_code(check_program, tmp_path):
    codes = header_codes()
    good, files = bad_files(tmp_path)
    rows = parse_report(
        run_c(check_program, "load", good, *(p for p, _, _ in files.values())).stdout
    )
    assert rows[str(good)] == (0, "")
    for name, (path, code, words) in files.items():
        got = rows[str(path)]
        assert got[0] == codes[code], f"{name}: code {got[0]}, expected {code} ({got[1]})"
        assert words in got[1] and str(path) in got[1], f"{name}: message {got[1]!r}"


def sanitizer_inputs(folder):
    bags, y = marked_bags(0, n_bags=24)
    pipe = quiet_fit(
        make_pipeline(
            milsvm.BagStandardScaler(), milsvm.NSK(C=10.0, norm="l2", probability="ensemble")
        ),
        bags,
        y,
    )
    milsvm.save(pipe, folder / "pipe.json")
    paths, d = write_inputs(bags, folder)
    return bags, paths, d


def test_address_sanitizer_finds_no_leak_and_no_invalid_access(library, tmp_path):
    program = compile_check(
        library, tmp_path / "milsvm_check_asan", ["-fsanitize=address", "-fno-omit-frame-pointer"]
    )
    bags, paths, d = sanitizer_inputs(tmp_path)
    _, files = bad_files(tmp_path)
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:exitcode=23"}
    runs = [
        (
            "score",
            tmp_path / "pipe.json",
            paths["x64"],
            paths["x32"],
            paths["ptr"],
            d,
            tmp_path / "asan",
        ),
        ("threads", tmp_path / "pipe.json", paths["x64"], paths["ptr"], d, 5),
        ("load", *(p for p, _, _ in files.values())),
    ]
    errors_folder = tmp_path / "errors"
    errors_folder.mkdir()
    errors_run(program, errors_folder)  # under the sanitizer's defaults: it fails on any report
    for args in runs:
        done = subprocess.run(
            [str(program), *map(str, args)], capture_output=True, text=True, env=env
        )
        assert (
            done.returncode == 0
            and "ERROR: AddressSanitizer" not in done.stderr
            and "ERROR: LeakSanitizer" not in done.stderr
        ), f"{args[0]}: {done.returncode}\n{done.stderr[-4000:]}"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (optional)")
def test_valgrind_finds_no_leak_and_no_invalid_access(library, tmp_path):
    check_program = compile_check(library, tmp_path / "milsvm_check_plain")  # glibc's own malloc
    bags, paths, d = sanitizer_inputs(tmp_path)
    cmd = [
        "valgrind",
        "--quiet",
        "--error-exitcode=31",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect",
        str(check_program),
        "score",
        tmp_path / "pipe.json",
        paths["x64"],
        paths["x32"],
        paths["ptr"],
        d,
        tmp_path / "vg",
    ]
    done = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
