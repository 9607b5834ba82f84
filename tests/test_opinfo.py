"""PyTorch's own sample inputs (op_db) through torchlite, compared with PyTorch: values
through each op's function and Tensor method in float32 and float64, float64 gradients, and
the error inputs' exception types (tests/opinfo_harness.py does the work).  Runs where
PyTorch is installed; skips without.

What does not pass yet is listed by group in tests/opinfo_known_failures.txt; any other
failing sample fails this test (a wrong value, a wrong gradient, an exception PyTorch does
not raise), and so does a listed group that now passes in full, so the list only shrinks.
Ops torchlite lacks altogether count as missing (the README's table).  op_db entries that call
no PyTorch function (its own test wrappers around torch.ops.aten kernels, the CUDA jiterator)
are skipped as out of scope: opinfo_harness.not_a_pytorch_function says which."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _known():
    groups = {}
    with open(os.path.join(HERE, "opinfo_known_failures.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                group, _, why = line.partition("  ")
                groups[group] = why.strip()
    return groups


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every sample's outcome, from the harness run in a process of its own: a crash or a
    hang in one op cannot take the test run with it (it has a time limit), and op_db's
    sample functions, which inspect the call stack, run at a shallow one."""
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    try:
        from torch.testing._internal.common_methods_invocations import op_db  # noqa: F401
    except ImportError as e:        # a PyTorch without its test metadata
        pytest.skip(f"PyTorch's op_db is not importable: {e}")
    out = tmp_path_factory.mktemp("opinfo") / "results.json"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "opinfo_harness.py"), "--json",
                           str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        return [tuple(r) for r in json.load(f)]


def _group(key):
    name, _, kind, _ = key.split("|")
    return f"{name}|{kind}"


def test_every_sample_passes_or_is_a_known_failure(results):
    known = _known()
    bad = [(k, o) for k, o in results
           if o != "pass" and o != "missing" and not o.startswith("skipped")
           and _group(k) not in known]
    assert not bad, f"{len(bad)} samples fail:\n" + "\n".join(f"  {k}: {o}" for k, o in bad[:60])


def test_known_failures_still_fail(results):
    failing = {_group(k) for k, o in results
               if o != "pass" and o != "missing" and not o.startswith("skipped")}
    fixed = sorted(set(_known()) - failing)
    assert not fixed, f"these groups pass now: remove them from opinfo_known_failures.txt: {fixed}"


def test_pass_rate(results):
    """The numbers the README reports (printed with -s); and a floor well below them, so a
    harness that silently stopped comparing anything fails."""
    counted = [o for k, o in results if not o.startswith("skipped") and "|error|" not in k]
    passed = sum(o == "pass" for o in counted)
    missing = sum(o == "missing" for o in counted)
    errors = [o for k, o in results if not o.startswith("skipped") and "|error|" in k]
    errors_passed = sum(o == "pass" for o in errors)
    print(f"\nop_db samples: {passed} of {len(counted)} pass ({100 * passed / len(counted):.1f}%); "
          f"{missing} belong to ops torchlite lacks; of the rest "
          f"{100 * passed / (len(counted) - missing):.2f}% pass.  Error inputs of the ops "
          f"torchlite has: {errors_passed} of {len(errors)} raise PyTorch's exception type")
    assert passed > 30000 and passed / (len(counted) - missing) > 0.97
    assert errors_passed > 300 and errors_passed / len(errors) > 0.9
