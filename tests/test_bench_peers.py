"""The peer-comparison harness (``benches/peers.py grid`` and ``benches/suite/peers/runner.py``)
without the peers, which live in their own venv and are never milsvm's dependencies: the gamma
the harness hands both sides is milsvm's own ``gamma="scale"``; a peer that cannot run (here:
a python that does not exist) and a fold that outlives ``--timeout`` are rows with their
message, not missing rows; milsvm's side of a smoke run gives finite AUCs."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from milsvm._registry import ESTIMATORS

BENCHES = Path(__file__).resolve().parents[1] / "benches"
DRIVER = [str(BENCHES / "peers.py"), "grid"]
# the data folder as the drivers find it: $MILSVM_DATA, else shared/data beside the repository
DATA = (
    Path(os.environ.get("MILSVM_DATA") or BENCHES.parent.parent / "shared" / "data")
    / "musk1"
    / "musk1.data"
)

needs_time = pytest.mark.skipif(
    not Path("/usr/bin/time").exists(), reason="needs /usr/bin/time (GNU time)"
)
needs_data = pytest.mark.skipif(not DATA.exists(), reason="needs shared/data/musk1")


def _runner():
    sys.path.insert(0, str(BENCHES / "suite" / "peers"))
    sys.path.insert(0, str(BENCHES))
    try:
        import runner
    finally:
        sys.path.pop(0)
        sys.path.pop(0)
    return runner


@pytest.mark.parametrize("method", ["SIL", "STK", "NSK"])
def test_harness_gamma_is_milsvm_scale(method):
    """The number both sides get is what milsvm itself computes for gamma="scale" (the
    instances; STK: the bags' min/max statistic vectors)."""
    runner = _runner()
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(1, 6)), 4)) * (1 + i % 3) for i in range(20)]
    y = np.array([i % 2 for i in range(20)])
    est = ESTIMATORS[method](C=1.0, gamma="scale", n_jobs=1).fit(bags, y)
    assert est.gamma_ == pytest.approx(runner.gamma_scale(method, bags), rel=1e-12)


def _run(tmp_path, *extra, quick=True, timeout=300):
    """The driver on MUSK1 with STK (``--quick`` unless told): its result rows and stdout."""
    out = tmp_path / "peers"
    proc = subprocess.run(
        [
            sys.executable,
            *DRIVER,
            *(["--quick"] if quick else []),
            "--sets",
            "MUSK1",
            "--methods",
            "STK",
            "--work",
            str(tmp_path / "work"),
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.with_suffix(".json").read_text())["results"], proc.stdout


@needs_time
@needs_data
def test_missing_peer_is_a_crash_row_and_milsvm_side_runs(tmp_path):
    results, stdout = _run(tmp_path, "--peer-python", str(tmp_path / "no-such-python"))
    (row,) = results
    ours, theirs = row["milsvm"], row["peers"]["misvm"]
    assert ours["n_ok"] == 2 and 0.5 < ours["auc_mean"] <= 1.0 and ours["fit_seconds"] > 0
    assert ours["peak_rss_mb"] > 0 and ours["floor_rss_mb"] > 0
    assert theirs["status"] == "crash" and theirs["failed_fold"] == 0 and theirs["error"]
    assert "CRASH at fold 0" in stdout


@needs_time
@needs_data
def test_timeout_is_a_row(tmp_path):
    results, stdout = _run(
        tmp_path,
        "--peers",
        "misvm",
        "--peer-python",
        shutil.which("false") or "/bin/false",
        "--timeout",
        "0.05",
    )
    (row,) = results
    assert row["milsvm"]["status"] == "timeout" and "killed" in row["milsvm"]["error"]
    assert "TIMEOUT" in stdout


@needs_time
@needs_data
@pytest.mark.parametrize("route", [[], ["--milsvm-c-path"]])
def test_grid_times_the_inner_fits_and_records_the_choices(tmp_path, route):
    """With several values of C, each fold chooses by inner CV (one fit per value, or with
    ``--milsvm-c-path`` one ``fit_path`` per inner split): the inner fits' seconds are recorded
    apart (and within the selection's), and the choice is a point of the grid."""
    results, _ = _run(
        tmp_path,
        "--folds",
        "2",
        "--C",
        "1",
        "10",
        "--peer-python",
        str(tmp_path / "no-such-python"),
        *route,
        quick=False,
    )
    (row,) = results
    ours = row["milsvm"]
    assert ours["n_ok"] == 2
    assert all(0 < f < s for f, s in zip(ours["inner_fit_list"], ours["select_list"]))
    assert all(tuple(c) in {(1.0, 1.0), (10.0, 1.0)} for c in ours["chosen"])


def test_ratios_and_choices_compare_the_folds_both_finished():
    """A peer that finished fewer folds (--budget) is compared on those folds only."""
    sys.path[:0] = [str(BENCHES / "suite"), str(BENCHES)]
    try:
        import peers_grid as bench_peers
    finally:
        sys.path.pop(0)
    ours = dict(
        fit_list=[1.0, 2.0, 4.0],
        inner_fit_list=[1.0, 1.0, 1.0],
        select_list=[2.0, 2.0, 2.0],
        chosen=[(1, 1), (10, 1), (10, 1)],
    )
    theirs = dict(
        fit_list=[10.0, 10.0],
        inner_fit_list=[5.0, 7.0],
        select_list=[3.0, 5.0],
        chosen=[(1, 1), (100, 1)],
    )
    assert bench_peers.ratio(ours, theirs) == pytest.approx(20.0 / 3.0)
    assert bench_peers.ratio(ours, theirs, "inner_fit_list") == pytest.approx(6.0)
    assert bench_peers.ratio(ours, theirs, "select_list") == pytest.approx(2.0)
    assert bench_peers.same_choice(ours, theirs) == (1, 2)
    assert bench_peers.selected(ours, theirs)
    assert not bench_peers.selected(dict(ours, inner_fit_list=[0.0, 0.0, 0.0]), theirs)
