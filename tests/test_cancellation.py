"""Cancellation: Ctrl-C (SIGINT) stops a fit with ``KeyboardInterrupt`` and leaves the estimator as
it was; an exception raised by the progress callback stops the fit and propagates; every CLI
command exits with status 130 and one line on SIGINT.

The SIGINT tests run the fit in a child process and send the signal once the child says it has
started; they check the outcome (the exception, the exit status, what was written), never how
long anything took.
"""

import signal
import subprocess
import sys
import textwrap

import milsvm
import numpy as np
import pytest
from conftest import easy_bags
from milsvm import _core

LONG_FIT = textwrap.dedent("""
    import sys, numpy as np, milsvm
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(20, 30)) for _ in range(400)]
    y = np.arange(400) % 2
    est = milsvm.{cls}({params})
    try:
        print("start", flush=True)
        est.fit(bags, y)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", "model_" in est.__dict__, "classes_" in est.__dict__, flush=True)
""")


def run_and_interrupt(args, wait_for="start"):
    """Start ``args``, wait for a line starting with ``wait_for``, send SIGINT, return
    ``(returncode, stdout after the signal, stderr)``."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith(wait_for):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out, err


@pytest.mark.parametrize(
    "cls, params",
    [
        ("SparseMI", "n_xv=100, max_iter=100000, tol=0, random_state=0"),
        ("ALSVM", "C=10, max_iter=100000, eps=1e-12, decay=1.0001"),
        ("NSK", "C=10"),
        ("SVMCC", "C=10, kernel='rbf', max_iter=100000, tol=1e-300"),
        # n_jobs=1 runs on the calling thread, whose own checks look for the signal
        ("SparseMI", "n_xv=100, max_iter=100000, tol=0, random_state=0, n_jobs=1"),
        ("ALSVM", "C=10, max_iter=100000, eps=1e-12, decay=1.0001, n_jobs=1"),
        ("NSK", "C=10, n_jobs=1"),
    ],
)
def test_sigint_stops_a_fit_with_keyboard_interrupt_and_leaves_nothing_fitted(cls, params):
    code = LONG_FIT.format(cls=cls, params=params)
    if cls == "NSK":  # one long SMO solve: a large bag set and a tight tolerance
        code = code.replace("range(400)", "range(3000)").replace(
            "np.arange(400)", "np.arange(3000)"
        )
        code = code.replace("C=10", "C=1e6, inner_tol=1e-12")
    rc, out, err = run_and_interrupt([sys.executable, "-c", code])
    assert out.split() == ["interrupted", "False", "False"], (out, err)
    assert rc == 0 and "Traceback" not in err, err


def test_an_exception_in_the_progress_callback_stops_the_fit_and_propagates():
    bags, y = easy_bags()
    b = milsvm.as_bags(bags)
    calls = []

    def callback(*args):
        calls.append(args)
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        _core.fit_sparse_mi(
            b.core_instances(),
            b.bag_ptr,
            np.asarray(y, dtype=np.int64),
            {"n_xv": 3, "max_iter": 50, "tol": 0.0},
            callback,
        )
    assert len(calls) == 1


def test_an_interrupted_refit_keeps_the_previous_fit(monkeypatch):
    bags, y = easy_bags()
    est = milsvm.SparseMI(n_xv=3, random_state=0).fit(bags, y)
    before = est.decision_function(bags)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_core, "fit_sparse_mi", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.set_params(C=100.0).fit(bags, y)
    np.testing.assert_array_equal(est.decision_function(bags), before)


@pytest.mark.parametrize("command", ["cv", "fit"])
def test_every_cli_command_exits_130_with_one_line(command, tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for b in range(300):
        for i in range(10):
            x = rng.normal(size=20) + (2.0 if b % 2 and i == 0 else 0.0)
            lines.append(f"i{b}_{i},b{b},{b % 2}," + ",".join(f"{v:.6f}" for v in x))
    data = tmp_path / "big.data"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "model.json"
    args = [
        sys.executable,
        "-m",
        "milsvm",
        command,
        str(data),
        "--model",
        "ALSVM",
        "-p",
        "C=10",
        "-p",
        "max_iter=100000",
        "-p",
        "eps=1e-12",
        "-p",
        "decay=1.0001",
    ]
    args += ["--folds", "2"] if command == "cv" else ["-o", str(model)]
    # the CLI prints nothing before the fit; wait until the data is read by watching stderr is not
    # possible without output, so a child wrapper prints "start" when the fit begins
    wrapper = textwrap.dedent(f"""
        import sys, milsvm._base as base
        fit = base.MILClassifier.fit
        def announced(self, *a, **k):
            print("start", flush=True)
            return fit(self, *a, **k)
        base.MILClassifier.fit = announced
        from milsvm.cli import main
        sys.exit(main({args[3:]!r}))
    """)
    rc, out, err = run_and_interrupt([sys.executable, "-c", wrapper])
    assert rc == 130, (rc, out, err)
    assert err.strip().splitlines() == ["milsvm: interrupted"], err
    assert not model.exists()
