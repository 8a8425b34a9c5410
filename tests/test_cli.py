"""The command line: ``milsvm demo`` is the README's main job."""

import re
import subprocess
import sys

import pytest

from milsvm.cli import main


def test_demo_prints_accuracy_xvs_and_time(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    acc = float(re.search(r"accuracy: ([\d.]+) %", out).group(1))
    assert 80.0 <= acc <= 100.0
    assert "expansion vectors: 10" in out
    assert re.search(r"fit time: [\d.]+ ms per fold", out)


@pytest.fixture
def toy_mill_file(tmp_path):
    """Eight bags in MILL format; odd bags hold an instance near (3, -3)."""
    lines = []
    for b in range(8):
        for i in range(3):
            v = (3.0 if (b % 2 and i == 0) else -1.0) + 0.1 * i
            lines.append(f"i{b}_{i},bag{b},{b % 2},{v},{-v}")
    path = tmp_path / "toy.data"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cv_on_a_mill_file(toy_mill_file, capsys):
    path = toy_mill_file
    assert main(["cv", str(path), "--model", "rsvm", "--folds", "2", "-p", "n_xv=2", "-p", "C=10"]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "milsvm.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "demo" in out.stdout


def test_fit_then_predict(toy_mill_file, tmp_path, capsys):
    data = toy_mill_file
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "-p", "n_xv=2", "-p", "C=10", "-p", "random_state=0", "-o", str(model)]) == 0
    assert model.exists()
    assert main(["predict", str(model), str(data)]) == 0
    out = capsys.readouterr()
    assert out.out.split()[-8:] == [str(b % 2) for b in range(8)]
    assert "accuracy against the file's labels: 100.00 %" in out.err
