"""The benchmark drivers of ``benches/`` (they run on demand, not here): every driver and every
benchmark answers ``--help``, the README names every benchmark, and the shared setup finds the
data folder from ``--data``, then ``$MILSVM_DATA``, then ``../shared/data`` beside the
repository."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
DRIVERS = ["papers", "peers", "speed", "scale", "studies", "serving"]


def _driver(name):
    spec = importlib.util.spec_from_file_location(f"_driver_{name}", BENCHES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def common(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHES))
    import _common

    return _common


@pytest.mark.parametrize("name", DRIVERS)
def test_driver_help_lists_its_benchmarks(name, common):
    proc = subprocess.run(
        [sys.executable, str(BENCHES / f"{name}.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    benchmarks = _driver(name).BENCHMARKS
    assert benchmarks
    for key, bench in benchmarks.items():
        assert f"  {key} " in proc.stdout, key
        # each benchmark's module exists where the driver looks for it
        folders = ("suite", "reproduce")
        assert any((BENCHES / sub / f"{bench.module}.py").is_file() for sub in folders)


@pytest.mark.parametrize("name", DRIVERS)
def test_every_benchmark_answers_help(name):
    """One process per driver asks each of its benchmarks for ``--help``: the module imports,
    parses its options and stops (none runs its benchmark)."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(BENCHES)!r})
        import {name} as driver
        from _common import run_driver
        for key in driver.BENCHMARKS:
            try:
                run_driver("doc", driver.BENCHMARKS, [key, "--help"])
            except SystemExit as stop:
                assert stop.code in (0, None), (key, stop.code)
            else:
                raise AssertionError(key + " --help did not stop")
            print("HELP-OK", key, flush=True)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCHES.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("HELP-OK")}
    assert done == set(_driver(name).BENCHMARKS)


def test_readme_names_every_benchmark(common):
    readme = (BENCHES / "README.md").read_text()
    for name in DRIVERS:
        assert f"`{name}.py`" in readme
        for key in _driver(name).BENCHMARKS:
            assert f"`{key}`" in readme, (name, key)


def test_data_folder_from_env_then_beside_the_repository(common, monkeypatch, tmp_path):
    monkeypatch.setenv(common.DATA_ENV, str(tmp_path))
    assert common.data_dir() == tmp_path.resolve()
    monkeypatch.delenv(common.DATA_ENV)
    assert common.data_dir() == BENCHES.parent.parent / "shared" / "data"


def test_driver_data_option_reaches_the_benchmark(common, monkeypatch, tmp_path, capsys):
    """``--data`` wins over ``$MILSVM_DATA``, and the benchmark (and its children, through the
    environment) sees it, ``_protocol.DEFAULT_DATA`` included."""
    given, other = tmp_path / "given", tmp_path / "other"
    given.mkdir()
    other.mkdir()
    probe = tmp_path / "probe_data_bench.py"
    probe.write_text(
        textwrap.dedent("""
        import os
        import sys

        def main():
            import _common
            sys.modules.pop("_protocol", None)
            import _protocol
            print("PROBE", _common.data_dir(), _protocol.DEFAULT_DATA, os.environ["MILSVM_DATA"],
                  sys.argv[1:])
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(common.DATA_ENV, str(other))
    benchmarks = {"probe": common.Benchmark("probe_data_bench", "a probe")}
    assert common.run_driver("doc", benchmarks, ["--data", str(given), "probe", "--x", "1"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("PROBE"))
    assert line.split()[1:4] == [str(given.resolve())] * 3
    assert line.endswith("['--x', '1']")
    # without --data, the environment's folder
    monkeypatch.setenv(common.DATA_ENV, str(other))
    assert common.run_driver("doc", benchmarks, ["probe"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("PROBE"))
    assert line.split()[1:4] == [str(other)] * 3
    sys.modules.pop("_protocol", None)


def test_report_table_writes_its_columns_once_for_header_and_rows(common):
    """A `Table`'s header and rows share each column's width, alignment and gap; a number takes
    its column's spec, text its alignment and width (the whole spec in a text column)."""
    import _protocol

    table = _protocol.Table("  ", ("name", "<6"), ("err %", ">+7.1f"), ("point", "<5.5", 2))
    assert table.header() == "  name     err %  point"
    assert table.row("AL", -1.25, "C=10,gamma=1") == "  AL        -1.2  C=10,"
    assert table.row("ALP", "-", "") == "  ALP          -       "
    assert table.row("a-longer-name", 1e4) == "  a-longer-name +10000.0"
    assert table.row("AL") == "  AL    "
    assert _protocol.Table("", _protocol.Column("n", ">3d")).row(7) == "  7"


def test_peer_python_from_env_else_beside_the_repository(common, monkeypatch):
    monkeypatch.delenv("MILSVM_PEER_PYTHON", raising=False)
    assert common.sibling_python("venv-peers", "MILSVM_PEER_PYTHON") == str(
        BENCHES.parent.parent / "venv-peers" / "bin" / "python"
    )
    monkeypatch.setenv("MILSVM_PEER_PYTHON", "/opt/peers/bin/python")
    assert common.sibling_python("venv-peers", "MILSVM_PEER_PYTHON") == "/opt/peers/bin/python"


def test_no_path_of_one_machine_in_the_suite():
    """Paths come from the shared setup, never from one machine's layout (the drivers, the
    shared modules, the benchmarks of suite/ and reproduce/)."""
    files = [BENCHES / f"{name}.py" for name in DRIVERS]
    files += [BENCHES / "_common.py", BENCHES / "_protocol.py", BENCHES / "README.md"]
    files += [p for sub in ("suite", "reproduce") for p in (BENCHES / sub).rglob("*")]
    bad = []
    for path in files:
        if path.suffix in (".py", ".md", ".rs", ".c"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if any(root in line for root in ("/work/", "/root/", "/home/")):
                    bad.append(f"{path.relative_to(BENCHES)}:{number}")
    assert not bad, bad
