"""The README's demo runs and learns (examples/quickstart.py)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quickstart_trains_to_high_accuracy():
    pytest.importorskip("sklearn")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    acc = float(proc.stdout.strip().splitlines()[-1].split("test accuracy")[1].split()[0])
    assert acc > 0.9, proc.stdout
