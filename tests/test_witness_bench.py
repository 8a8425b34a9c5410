"""Smoke test of ``benches/witness_detection.py --quick`` on two estimators (about a second):
the script runs against the installed milsvm, and its tables hold a finite AUROC per setting."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benches" / "witness_detection.py"


def test_witness_detection_quick_runs():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--estimators", "MISVM", "NSK"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "== toy, f = 0.3" in out and "== digits, 50 training bags" in out
    for name in ("MISVM", "NSK"):
        rows = [line for line in out.splitlines() if line.startswith(f"{name} ") and "±" in line]
        assert len(rows) == 2, out  # one row per setting
        for row in rows:
            aurocs = [float(x) for x in re.findall(r"(\d\.\d{3}) ±", row)[:3]]
            assert len(aurocs) == 3 and all(0.5 < a <= 1.0 for a in aurocs), row
    assert "FAILED" not in out
