"""torchlite.accelerator (PyTorch's torch.accelerator): without a GPU the answers PyTorch's
CPU build gives (not available, no current accelerator, no devices, PyTorch's error where a
device is needed); on the host-memory stand-in driver (and on a real GPU where there is one)
each function answers as torchlite.cuda's counterpart."""
import warnings

import pytest

import torchlite as tl
from torchlite import accelerator as A


@pytest.mark.skipif(tl.cuda.is_available(), reason="a usable GPU is present")
def test_without_an_accelerator():
    assert A.is_available() is False and A.current_accelerator() is None and A.device_count() == 0
    assert A.current_accelerator(check_available=True) is None
    device = A.current_accelerator().type if A.is_available() else "cpu"     # the tutorials' idiom
    assert tl.ones(2, device=device).device.type == "cpu"
    for call in (A.current_device_index, A.synchronize, A.memory_allocated, A.current_stream,
                 A.get_memory_info, A.get_device_capability, lambda: A.set_device_index(0),
                 A.empty_cache):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            call()
    A.empty_host_cache()                            # (nothing started: nothing to release)
    with A.device_index(None):
        pass
    torch = pytest.importorskip("torch")
    assert torch.accelerator.is_available() is False and torch.accelerator.current_accelerator() is None


def test_on_a_cuda_device(cuda_device):
    assert A.is_available() and A.current_accelerator() == tl.device("cuda")
    assert A.device_count() == tl.cuda.device_count() >= 1
    assert A.current_device_index() == tl.cuda.current_device()
    with A.device_index(0):
        assert A.current_device_index() == 0
    x = tl.ones(1024, device=cuda_device)
    A.synchronize()
    assert A.memory_allocated() == tl.cuda.memory_allocated() >= x.numel() * 4
    assert A.max_memory_allocated() >= A.memory_allocated()
    assert A.memory_reserved() >= A.memory_allocated()
    stream = A.current_stream()
    A.set_stream(stream)
    assert A.current_stream() == stream
    with pytest.raises(TypeError, match="must be a Stream"):
        A.set_stream(None)
    tl.ones(4).pin_memory()
    A.empty_host_cache()
    free, total = A.get_memory_info()
    assert 0 <= free <= total
    assert tl.float32 in A.get_device_capability()["supported_dtypes"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert A.current_device_idx() == A.current_device_index()
    assert caught and caught[0].category is FutureWarning
    A.reset_peak_memory_stats()
    A.empty_cache()


@pytest.mark.skipif(tl.cuda.is_available(), reason="a usable GPU is present")
def test_generic_stream_and_event_on_the_cpu():
    """torchlite.Stream/Event without a GPU: PyTorch's CPU stream (always finished, waits
    return at once) and its CPU event, which cannot be recorded."""
    s = tl.Stream()
    assert s.device == tl.device("cpu") and s.device_index == -1 and s.query()
    s.synchronize()
    s.wait_stream(tl.Stream(device="cpu"))
    assert s == tl.Stream("cpu") and "device_type=cpu" in repr(s)
    e = tl.Event()
    with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
        e.record()
    with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
        s.record_event()
    torch = pytest.importorskip("torch")
    assert torch.Stream().query() and torch.Stream().device_type == s.device_type


def test_generic_stream_and_event_on_a_cuda_device(cuda_device):
    s = tl.Stream(cuda_device)
    assert isinstance(s, tl.cuda.Stream)
    e = s.record_event()
    assert isinstance(e, tl.cuda.Event) and isinstance(tl.Event(cuda_device), tl.cuda.Event)
    s.synchronize()
    assert s.query()
