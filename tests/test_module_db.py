"""PyTorch's own module test metadata (module_db) through torchlite.nn, compared with
PyTorch: every module's constructor inputs, state_dict keys and values, forward outputs, the
buffers after the call, and the gradients of the inputs and parameters, in float32 and
float64, in training and (where they differ) eval mode (tests/module_db_harness.py does the
work).  Runs where PyTorch is installed; skips without.  Every sample must pass; a module
torchlite lacks counts as a failure too."""
import collections
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every sample's outcome, from the harness in a process of its own (a crash or a hang in
    one module cannot take the test run with it: it has a time limit)."""
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    try:
        from torch.testing._internal.common_modules import module_db  # noqa: F401
    except ImportError as e:        # a PyTorch without its test metadata
        pytest.skip(f"PyTorch's module_db is not importable: {e}")
    out = tmp_path_factory.mktemp("module_db") / "results.json"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "module_db_harness.py"), "--json",
                           str(out)], capture_output=True, text=True, timeout=900, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        return [tuple(r) for r in json.load(f)]


def test_every_module_sample_passes(results):
    bad = [(k, o) for k, o in results if o != "pass" and not o.startswith("skipped")]
    assert not bad, f"{len(bad)} module_db samples fail:\n" + "\n".join(
        f"  {k}: {o}" for k, o in bad[:60])


def test_every_module_runs(results):
    """Printed with -s: the numbers the README reports.  No sample is skipped: the harness
    rebuilds every constructor argument (TransformerEncoder's layer, F.gelu passed as an
    activation) in torchlite's terms."""
    modules = {k.split("|")[0] for k, _ in results}
    passed = collections.Counter(k.split("|")[0] for k, o in results if o == "pass")
    skipped = [(k, o) for k, o in results if o.startswith("skipped")]
    print(f"\nmodule_db: {sum(passed.values())} of {len(results)} samples pass, over "
          f"{len(passed)} of {len(modules)} modules")
    assert len(modules) > 100 and set(passed) == modules
    assert not skipped, skipped[:10]
