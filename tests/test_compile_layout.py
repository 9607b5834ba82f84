"""The memory layout of a fused kernel's results: an eager elementwise op's result takes its
inputs' memory order (channels_last in, channels_last out, as PyTorch's), and so does a fused
program's.  Checked against eager torchlite's strides (and PyTorch's where installed)."""
import numpy as np
import pytest

import torchlite as tl
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401


def _cases():
    g = tl.Generator().manual_seed(0)
    x = tl.randn(2, 3, 4, 5, generator=g)
    cl = x.to(memory_format=tl.channels_last)
    b = tl.randn(3, 1, 1, generator=g)
    return {
        "channels_last": (cl, cl * 0.5),
        "channels_last and a broadcast bias": (cl, b),
        "contiguous and channels_last": (x, cl),       # the first operand decides
        "channels_last and contiguous": (cl, x),
        "transposed": (x.transpose(1, 3), x.transpose(1, 3) + 1),
    }


def fn(a, b):
    return (a * b + 1.0).sigmoid() * a - b


@pytest.mark.parametrize("case", list(_cases()))
def test_fused_results_take_the_inputs_memory_order(case):
    a, b = _cases()[case]
    c = tl.compile(fn)
    got = c(a, b)
    assert kernels_of(c), "the case must fuse"
    want = fn(a, b)
    assert got.stride() == want.stride(), (got.stride(), want.stride())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    try:
        import torch
    except ImportError:
        return
    ta = torch.tensor(a.numpy())
    tb = torch.tensor(b.numpy())
    if a.is_contiguous(memory_format=tl.channels_last) and not a.is_contiguous():
        ta = ta.to(memory_format=torch.channels_last)
    if b.dim() == 4 and b.is_contiguous(memory_format=tl.channels_last) and not b.is_contiguous():
        tb = tb.to(memory_format=torch.channels_last)
    if case != "transposed":
        assert tuple(fn(ta, tb).stride()) == got.stride()


def test_gradients_of_channels_last_inputs():
    a, b = _cases()["channels_last and a broadcast bias"]
    c = tl.compile(fn)
    ac, ae = a.detach().requires_grad_(), a.detach().requires_grad_()
    c(ac, b).sum().backward()
    fn(ae, b).sum().backward()
    np.testing.assert_allclose(ac.grad.numpy(), ae.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert ac.grad.is_contiguous(memory_format=tl.channels_last)


def test_programs_with_random_draws_stay_contiguous():
    import torchlite.nn.functional as F
    a, _ = _cases()["channels_last"]
    c = tl.compile(lambda t: F.dropout(t * 2.0, 0.5, True) + 1.0)
    tl.manual_seed(3)
    got = c(a)
    tl.manual_seed(3)
    want = F.dropout(a * 2.0, 0.5, True) + 1.0
    np.testing.assert_array_equal(got.numpy(), want.numpy())
