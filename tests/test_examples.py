"""The examples run and learn: each in a subprocess, its printed output checked (the README's
demo is examples/quickstart.py)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


EXAMPLES = ["quickstart.py", "cnn_digits.py", "char_lstm.py", "transformer_lm.py", "rope_attention.py",
            "linear_regression.py", "reinforce_cartpole.py", "vae_digits.py"]


def _run_process(script, *args, timeout=300):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _run(script, *args, timeout=300):
    return _run_process(script, *args, timeout=timeout).stdout


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def test_quickstart_trains_saves_and_reloads(tmp_path):
    pytest.importorskip("sklearn")
    proc = _run_process("quickstart.py", "--checkpoint", str(tmp_path / "model.pt"),
                        "--plot", str(tmp_path / "plot.png"))
    out = proc.stdout
    losses = [float(x) for x in re.findall(r"train loss ([0-9.]+)", out)]
    assert len(losses) >= 5 and losses[-1] < losses[0] / 2, out          # the loss falls
    final = float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1))
    reloaded = float(re.search(r"reloaded model: test accuracy ([0-9.]+)%", out).group(1))
    assert final >= 95.0 and reloaded == final, out                     # the bar
    assert (tmp_path / "model.pt").exists()
    if _importable("matplotlib"):
        assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "skipping the plot" in out
    if _importable("tqdm"):
        assert "15/15" in proc.stderr and "epoch/s" in proc.stderr, proc.stderr   # the bar
    else:
        assert "tqdm is not installed" in out


def test_quickstart_without_tqdm_and_matplotlib_degrades_gracefully(tmp_path):
    """With tqdm and matplotlib unimportable (even where installed) it still trains and says
    what it skipped."""
    pytest.importorskip("sklearn")
    script = os.path.join(ROOT, "examples", "quickstart.py")
    argv = [script, "--epochs", "2", "--checkpoint", str(tmp_path / "m.pt"),
            "--plot", str(tmp_path / "plot.png")]
    runner = ("import runpy, sys\n"
              "sys.modules['tqdm'] = sys.modules['matplotlib'] = None  # import raises\n"
              f"sys.argv = {argv!r}\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tqdm is not installed" in proc.stdout and "epoch   2" in proc.stdout
    assert "matplotlib is not installed: skipping the plot" in proc.stdout
    assert not (tmp_path / "plot.png").exists()
    assert "reloaded model: test accuracy" in proc.stdout


@pytest.mark.parametrize("script", EXAMPLES)
def test_examples_on_cuda_without_a_gpu_say_why(script):
    import torchlite
    if torchlite.cuda.is_available():
        pytest.skip("a GPU is available here")
    if script in ("quickstart.py", "cnn_digits.py", "vae_digits.py"):
        pytest.importorskip("sklearn")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script),
                           "--device", "cuda"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "CUDA is not available" in proc.stderr, proc.stderr


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


def test_builtin_cartpole_matches_gymnasium_step_for_step():
    """The example's own simulation is the same environment as gymnasium's CartPole-v1."""
    gymnasium = pytest.importorskip("gymnasium")
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import reinforce_cartpole
    finally:
        sys.path.pop(0)
    ours, theirs = reinforce_cartpole.CartPole(seed=3), gymnasium.make("CartPole-v1")
    np.testing.assert_allclose(ours.reset(), theirs.reset(seed=3)[0], atol=1e-7)
    actions = np.random.default_rng(1)
    for episode in range(10):
        if episode:
            np.testing.assert_allclose(ours.reset(), theirs.reset()[0], atol=1e-7)
        done = False
        while not done:
            action = int(actions.integers(2))
            obs, reward, terminated, truncated = ours.step(action)
            obs_g, reward_g, terminated_g, truncated_g, _ = theirs.step(action)
            np.testing.assert_allclose(obs, obs_g, atol=1e-5)
            assert (reward, terminated, truncated) == (reward_g, terminated_g, truncated_g)
            done = terminated or truncated


def test_cnn_digits_reaches_97_percent():
    pytest.importorskip("sklearn")
    out = _run("cnn_digits.py", "--epochs", "12")
    losses = [float(x) for x in re.findall(r"train loss ([0-9.]+)", out)]
    assert losses[-1] < losses[0] / 2, out
    assert float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1)) >= 97.0, out


def test_vae_digits_loss_falls_and_writes_samples(tmp_path):
    """The negative ELBO falls on the training and the test images; the decoded prior samples
    are a PNG (or the script says matplotlib is missing)."""
    pytest.importorskip("sklearn")
    out = _run("vae_digits.py", "--epochs", "8", "--samples", str(tmp_path / "vae.png"))
    train = [float(x) for x in re.findall(r"train loss +(-?[0-9.]+)", out)]
    test = [float(x) for x in re.findall(r"test loss +(-?[0-9.]+)", out)]
    assert len(train) == 8 and train[-1] < train[0] - 10, out
    assert test[-1] < test[0] - 5, out
    if _importable("matplotlib"):
        assert (tmp_path / "vae.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "matplotlib is not installed: skipping the sample image" in out


def test_vae_digits_without_matplotlib_says_so(tmp_path):
    pytest.importorskip("sklearn")
    script = os.path.join(ROOT, "examples", "vae_digits.py")
    argv = [script, "--epochs", "1", "--samples", str(tmp_path / "vae.png")]
    runner = ("import runpy, sys\n"
              "sys.modules['matplotlib'] = None  # import raises\n"
              f"sys.argv = {argv!r}\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matplotlib is not installed: skipping the sample image" in proc.stdout
    assert "final test loss" in proc.stdout and not (tmp_path / "vae.png").exists()


def _losses(out):
    return [float(x) for x in re.findall(r"loss ([0-9.]+)", out)]


@pytest.mark.parametrize("script,args", [
    ("char_lstm.py", ["--steps", "40", "--hidden", "64", "--seq-len", "32", "--batch-size", "16",
                      "--sample-length", "50"]),
    ("transformer_lm.py", ["--steps", "40", "--d-model", "64", "--layers", "1", "--context", "32",
                           "--batch-size", "16", "--sample-length", "50"]),
    ("rope_attention.py", ["--steps", "40", "--d-model", "64", "--layers", "1", "--context", "32",
                           "--batch-size", "16", "--sample-length", "50"]),
])
def test_language_models_learn_and_write_a_sample(script, args):
    out = _run(script, *args)
    if script == "rope_attention.py":          # rotary embeddings see relative positions only
        assert float(re.search(r"largest deviation ([0-9.e+-]+)", out).group(1)) < 1e-4, out
    losses = _losses(out)
    assert losses[-1] < losses[0] - 0.5, out            # from ~ln(vocab) = 4.1 downwards
    tail = out.split("--- sample ---", 1)[1]
    assert tail.strip().startswith("Shall I") and len(tail.strip()) >= 50, out


def test_export_onnx_example_agrees_with_onnxruntime(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    out = _run("export_onnx.py", "--epochs", "1", "--out", str(tmp_path / "m.onnx"))
    assert (tmp_path / "m.onnx").stat().st_size > 100_000
    rows = [line.split() for line in out.splitlines() if re.fullmatch(r"\s*\d+\s+\d+\s+\d+", line)]
    assert len(rows) == 8 and all(t == o for _, t, o in rows)
    assert "largest logit difference" in out


def test_deploy_jit_example_loads_in_a_fresh_process(tmp_path):
    out = _run("deploy_jit.py", "--epochs", "1", "--out", str(tmp_path / "m.pt"))
    rows = [line.split() for line in out.splitlines() if re.fullmatch(r"\s*\d+\s+\d+\s+\d+", line)]
    assert len(rows) == 10 and all(h == s for _, h, s in rows)
    assert (tmp_path / "m.pt").exists()


def _run_in(cwd, script, *args, timeout=300):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_mnist_example_on_synthesized_idx_files(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("PIL")
    out = _run_in(tmp_path, "mnist.py", "--epochs", "2", "--no-download", "--data",
                  str(tmp_path / "data"), "--save-model").stdout
    assert "using scikit-learn's digits" in out
    assert (tmp_path / "data" / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
    final = float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1))
    assert final >= 85.0, out
    assert (tmp_path / "mnist_cnn.pt").exists()


def test_cifar_resnet_example_learns_and_logs(tmp_path):
    pytest.importorskip("PIL")
    proc = _run_in(tmp_path, "cifar_resnet.py", "--epochs", "4", "--no-download", "--data",
                   str(tmp_path / "data"), "--synthetic-size", "1000", "--batch-size", "64", "--lr",
                   "0.05", "--logdir", str(tmp_path / "runs"), "--checkpoint", str(tmp_path / "r18.pt"))
    out = proc.stdout
    assert "writing a synthetic dataset in CIFAR's format" in out
    losses = [float(x) for x in re.findall(r"train loss ([0-9.]+)", out)]
    assert len(losses) == 4 and losses[-1] < losses[0], out
    assert float(re.search(r"final test accuracy ([0-9.]+)%", out).group(1)) >= 50.0, out
    state = __import__("torchlite").load(str(tmp_path / "r18.pt"))
    assert "layer4.1.bn2.running_var" in state
    if _importable("tensorboard"):
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        logs = os.path.join(tmp_path, "runs")
        acc = EventAccumulator(logs)
        acc.Reload()
        assert len(acc.Scalars("test/accuracy")) == 4 and acc.Scalars("train/loss")
