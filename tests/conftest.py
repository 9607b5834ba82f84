
import numpy as np
import pytest

import torchlite


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Run a test with the OpenMP thread count at 1 and at 2."""
    old = torchlite.get_num_threads()
    torchlite.set_num_threads(request.param)
    yield request.param
    torchlite.set_num_threads(old)


def torch_or_skip():
    return pytest.importorskip("torch")


# ---- CUDA: the host-memory stand-in driver, and a real GPU where there is one ------------------
_gpu_usable = []          # [bool] once asked, before any stand-in is installed


def gpu_usable():
    """Whether a real CUDA GPU is usable here (asked once, never with the stand-in in place)."""
    if not _gpu_usable:
        from fake_cuda_driver import installed
        assert not installed.active, "asked about the GPU with the stand-in driver installed"
        _gpu_usable.append(bool(torchlite.cuda.is_available()))
    return _gpu_usable[0]


@pytest.fixture
def fake_cuda():
    """The host-memory stand-in driver (tests/fake_cuda_driver.py) installed for one test, the
    backend's kernels off; yields the FakeDriver (its `calls`, `capacity`, `buffers`).
    Everything it changed is put back afterwards."""
    from fake_cuda_driver import FakeDriver, installed
    gpu_usable()
    with installed(FakeDriver()) as fake:
        yield fake


@pytest.fixture(params=["fake", "gpu"])
def cuda_device(request):
    """The device string ("cuda") to run a test on: once on the stand-in driver ("fake",
    always), once on a real GPU ("gpu", skipped where none is usable)."""
    if request.param == "gpu":
        if not gpu_usable():
            pytest.skip("no CUDA GPU")
        yield "cuda"
        return
    request.getfixturevalue("fake_cuda")
    yield "cuda"
