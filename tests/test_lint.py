"""The repository is lint clean under pyproject.toml's [tool.ruff] (pyflakes and pycodestyle:
unused or undefined names, redefinitions, lines over 120 columns).  ruff comes with the [test]
extra, so CI runs this; without ruff the test skips."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format",
                        "concise", ROOT], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, f"ruff check found problems:\n{r.stdout}{r.stderr}"


def test_ruff_would_catch_a_problem(tmp_path):
    pytest.importorskip("ruff")
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")                      # an unused import
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                        os.path.join(ROOT, "pyproject.toml"), str(bad)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "F401" in r.stdout
