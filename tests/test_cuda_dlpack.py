"""DLPack for CUDA tensors: export (with the stream protocol) and import, on the stand-in
driver and, where there is one, on a GPU (and against PyTorch's CUDA tensors there)."""
import pytest

import torchlite as tl


def test_cuda_tensor_round_trip_shares_memory(cuda_device):
    x = tl.arange(6.0, device=cuda_device)
    assert x.__dlpack_device__() == (2, 0)
    y = tl.from_dlpack(x)
    assert y.device == x.device and y.tolist() == x.tolist()
    y[0] = 5.0
    assert x[0].item() == 5.0                       # one memory
    z = tl.from_dlpack(tl.to_dlpack(x[1::2]))       # a legacy capsule of a strided view
    assert z.tolist() == [1.0, 3.0, 5.0] and z.stride() == (2,)
    c = tl.from_dlpack(x, copy=True)
    c[1] = -1.0
    assert x[1].item() == 1.0                       # a copy


def test_versioned_capsule_and_arguments(cuda_device):
    x = tl.ones(2, 3, device=cuda_device)
    cap = x.__dlpack__(max_version=(1, 0))
    assert tl.from_dlpack(cap).shape == (2, 3)
    with pytest.raises(ValueError, match="stream 0"):
        x.__dlpack__(stream=0)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="gradient"):
        x.requires_grad_().__dlpack__()


def test_export_orders_the_consumer_stream_after_our_work(fake_cuda):
    x = tl.ones(4, device="cuda")
    s = tl.cuda.Stream()
    fake_cuda.calls.clear()
    x.__dlpack__(stream=s.cuda_stream)
    assert "cuStreamWaitEvent" in fake_cuda.calls
    fake_cuda.calls.clear()
    x.__dlpack__(stream=-1)                          # the consumer asked for no ordering
    assert "cuStreamWaitEvent" not in fake_cuda.calls


def test_pytorch_cuda_interop():
    torch = pytest.importorskip("torch")
    if not (tl.cuda.is_available() and torch.cuda.is_available()):
        pytest.skip("needs a GPU usable by torchlite and PyTorch")
    a = torch.arange(6.0, device="cuda")
    t = tl.from_dlpack(a)
    assert t.is_cuda and t.tolist() == a.tolist()
    t.mul_(2)
    torch.cuda.synchronize()
    assert a.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    back = torch.from_dlpack(t)
    assert back.device.type == "cuda" and back.tolist() == t.tolist()
