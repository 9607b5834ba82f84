"""Whole-script cases (issue 5's target): examples/quickstart.py's default training run, start
to finish (interpreter start-up, imports, data, training, checkpoint), with each library as
the backend (the script's TORCHLITE_EXAMPLE_BACKEND switch), time per run."""
import os
import subprocess
import sys

from _cases_core import Case, NotImplementedOp, Target

T_SCRIPT = Target(1 / 1.3, "wall time <= 1.3x torch")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _quickstart_build(lib, xs):
    if lib.name not in ("torchlite", "torch"):
        raise NotImplementedOp("a deep learning library")
    try:
        import sklearn  # noqa: F401  (the script's data)
    except ImportError:
        raise NotImplementedOp("scikit-learn (the digits data)") from None
    env = dict(os.environ, TORCHLITE_EXAMPLE_BACKEND=lib.name)
    out = os.path.join("/tmp", f"quickstart_bench_{lib.name}_{os.getpid()}")
    cmd = [sys.executable, os.path.join(ROOT, "examples", "quickstart.py"),
           "--checkpoint", out + ".pt", "--plot", out + ".png"]

    def run():
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr[-500:])
        return 0
    return run


CASES = [
    Case("quickstart_script", "us/op", 1, lambda rng: [], _quickstart_build,
         "examples/quickstart.py's default run (15 epochs on the 8x8 digits), whole process",
         T_SCRIPT, check=False, tags=("examples",)),
]
