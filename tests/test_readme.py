"""The README's tour is code a user copies first: run it as written."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_tour_runs(tmp_path):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    tour = text.split("## A tour", 1)[1]
    code = re.search(r"```python\n(.*?)```", tour, re.S).group(1)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "accuracy" in r.stdout and (tmp_path / "model.pt").exists()
    acc = float(re.search(r"accuracy ([0-9.]+)", r.stdout).group(1))
    assert acc > 0.9
