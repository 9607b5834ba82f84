"""`import torchlite` imports only the core (dtypes, Tensor, ops, autograd): NumPy and every
package a program may never use (nn, optim, utils.data, the CUDA backend, serialization, ...)
come on first use.  The test looks at what a fresh interpreter has loaded, not at the clock:
an eager import that creeps back fails it, whatever the machine's speed.  The time itself is
measured in benchmarks/RESULTS.md (python -X importtime -c "import torchlite")."""
import json
import subprocess
import sys

import pytest

import torchlite

# loaded on first use only (torchlite/__init__.py's _LAZY_MODULES, and what they pull in)
LAZY = ["numpy", "torchlite.nn", "torchlite.optim", "torchlite.utils.data", "torchlite.cuda",
        "torchlite.distributed", "mpi4py", "torchlite.vision", "torchlite.compiler",
        "torchlite.multiprocessing",
        "torchlite.backends", "torchlite.amp", "torchlite.cpu", "torchlite.testing",
        "torchlite.serialization", "torchlite._switches", "zipfile", "multiprocessing",
        "cuda", "cuda.bindings"]


def _loaded_after(code):
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_torchlite_loads_no_optional_package():
    loaded = _loaded_after("import torchlite")
    eager = [m for m in LAZY if m in loaded]
    assert not eager, f"`import torchlite` imported {eager}: import them on first use"


def test_core_ops_and_autograd_work_without_them():
    loaded = _loaded_after("import torchlite as t\n"
                           "x = t.arange(6.0).view(2, 3).requires_grad_()\n"
                           "(x.exp() @ x.T).sum().backward()\n"
                           "assert x.grad.shape == (2, 3)\n"
                           "print(repr(x))")
    assert "numpy" not in loaded and "torchlite.nn" not in loaded


@pytest.mark.parametrize("name, kind", [
    ("nn", "module"), ("optim", "module"), ("utils", "module"), ("cuda", "module"),
    ("backends", "module"), ("amp", "module"), ("cpu", "module"), ("testing", "module"),
    ("save", "function"), ("load", "function"), ("autocast", "class"), ("compile", "function"),
    ("use_deterministic_algorithms", "function"), ("is_autocast_enabled", "function"),
])
def test_lazy_names_resolve_as_before(name, kind):
    value = getattr(torchlite, name)
    assert name in dir(torchlite) and name in torchlite.__all__
    assert {"module": type(torchlite), "function": type(test_lazy_names_resolve_as_before),
            "class": type}[kind] is type(value) or (kind == "function" and callable(value))


def test_the_spellings_scripts_use_all_work():
    loaded = _loaded_after(
        "import torchlite as torch\n"
        "from torchlite import nn\n"
        "import torchlite.nn.functional as F\n"
        "from torchlite.utils.data import DataLoader, TensorDataset\n"
        "assert torch.utils.data.DataLoader is DataLoader\n"
        "assert torch.cuda.amp.autocast is not None and torch.cpu.amp.autocast is not None\n"
        "assert torch.optim.SGD and torch.backends.cudnn and F.relu and nn.Linear\n"
        "from torchlite import *\n"
        "assert save is torch.save and Tensor is torch.Tensor\n")
    assert {"torchlite.nn", "torchlite.utils.data", "numpy"} <= loaded


def test_an_unknown_attribute_still_raises():
    with pytest.raises(AttributeError, match="module 'torchlite' has no attribute 'no_such'"):
        torchlite.no_such  # noqa: B018
    with pytest.raises(AttributeError, match="torchlite.utils"):
        torchlite.utils.no_such  # noqa: B018


def test_a_seed_set_before_cuda_is_imported_reaches_its_generators():
    # torchlite.cuda is imported on first use: the seed set before must still seed the device
    # generators, or a script's CUDA random numbers would change with the import order
    loaded = _loaded_after("import torchlite as t, sys\n"
                           "t.manual_seed(1234)\n"
                           "assert 'torchlite.cuda' not in sys.modules\n"
                           "from torchlite import cuda\n"
                           "assert cuda._generator(0).initial_seed() == 1234\n"
                           "t.manual_seed(99)\n"
                           "assert cuda._generator(0).initial_seed() == 99\n"
                           "assert cuda._generator(1).initial_seed() == 99\n")
    assert "torchlite.cuda" in loaded
