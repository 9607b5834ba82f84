"""The examples run and learn: each in a subprocess, its printed output checked (the README's
demo is examples/quickstart.py)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args, timeout=300):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_quickstart_trains_saves_and_reloads(tmp_path):
    pytest.importorskip("sklearn")
    out = _run("quickstart.py", "--checkpoint", str(tmp_path / "model.pt"),
               "--plot", str(tmp_path / "plot.png"))
    losses = [float(x) for x in re.findall(r"train loss ([0-9.]+)", out)]
    assert len(losses) >= 5 and losses[-1] < losses[0] / 2, out          # the loss falls
    final = float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1))
    reloaded = float(re.search(r"reloaded model: test accuracy ([0-9.]+)%", out).group(1))
    assert final >= 95.0 and reloaded == final, out                     # the bar
    assert (tmp_path / "model.pt").exists()
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "plot.png").exists()
    except ImportError:
        assert "skipping the plot" in out


def test_quickstart_on_cuda_without_a_gpu_says_why():
    pytest.importorskip("sklearn")
    import torchlite
    if torchlite.cuda.is_available():
        pytest.skip("a GPU is available here")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py"),
                           "--device", "cuda", "--epochs", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "CUDA is not available" in proc.stderr


def test_linear_regression_reaches_least_squares():
    out = _run("linear_regression.py", "--steps", "300")
    losses = [float(x) for x in re.findall(r"loss ([0-9.]+)", out)]
    assert losses[-1] < losses[0] / 10, out
    gap = float(re.search(r"largest difference from least squares: ([0-9.e+-]+)", out).group(1))
    assert gap < 1e-3, out


def test_reinforce_cartpole_return_rises():
    out = _run("reinforce_cartpole.py", "--episodes", "60")
    m = re.search(r"first \d+ episodes ([0-9.]+), last \d+ episodes ([0-9.]+)", out)
    first, last = float(m.group(1)), float(m.group(2))
    assert last > 1.5 * first, out


def test_cnn_digits_reaches_97_percent():
    pytest.importorskip("sklearn")
    out = _run("cnn_digits.py", "--epochs", "12")
    losses = [float(x) for x in re.findall(r"train loss ([0-9.]+)", out)]
    assert losses[-1] < losses[0] / 2, out
    assert float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1)) >= 97.0, out


def _losses(out):
    return [float(x) for x in re.findall(r"loss ([0-9.]+)", out)]


@pytest.mark.parametrize("script,args", [
    ("char_lstm.py", ["--steps", "40", "--hidden", "64", "--seq-len", "32", "--batch-size", "16",
                      "--sample-length", "50"]),
    ("transformer_lm.py", ["--steps", "40", "--d-model", "64", "--layers", "1", "--context", "32",
                           "--batch-size", "16", "--sample-length", "50"]),
])
def test_language_models_learn_and_write_a_sample(script, args):
    out = _run(script, *args)
    losses = _losses(out)
    assert losses[-1] < losses[0] - 0.5, out            # from ~ln(vocab) = 4.1 downwards
    tail = out.split("--- sample ---", 1)[1]
    assert tail.strip().startswith("Shall I") and len(tail.strip()) >= 50, out
