"""Memory formats: contiguous_format, channels_last(_3d), preserve_format on contiguous,
clone, to, empty, *_like, is_contiguous and Module.to (strides against PyTorch's rules)."""
import pickle

import numpy as np
import pytest

import torchlite as tl

CL_STRIDES = (60, 1, 15, 3)          # a (2, 3, 4, 5) tensor in NHWC order


def test_format_objects():
    assert repr(tl.channels_last) == "torchlite.channels_last"
    assert isinstance(tl.contiguous_format, tl.memory_format)
    assert pickle.loads(pickle.dumps(tl.channels_last)) is tl.channels_last


def test_contiguous_and_is_contiguous():
    x = tl.randn(2, 3, 4, 5)
    c = x.contiguous(memory_format=tl.channels_last)
    assert c.stride() == CL_STRIDES
    assert c.is_contiguous(memory_format=tl.channels_last) and not c.is_contiguous()
    assert x.is_contiguous() and not x.is_contiguous(memory_format=tl.channels_last)
    np.testing.assert_array_equal(c.numpy(), x.numpy())
    assert c.contiguous(memory_format=tl.channels_last) is c          # already laid out
    assert c.contiguous().stride() == (60, 20, 5, 1)
    assert tl.randn(3).is_contiguous(memory_format=tl.channels_last) is False
    v = tl.randn(2, 3, 4, 5, 6).contiguous(memory_format=tl.channels_last_3d)
    assert v.stride() == (360, 1, 90, 18, 3)
    with pytest.raises(RuntimeError, match="rank 4"):
        tl.randn(2, 3).contiguous(memory_format=tl.channels_last)
    with pytest.raises(RuntimeError, match="preserve"):
        x.contiguous(memory_format=tl.preserve_format)
    with pytest.raises(TypeError):
        x.contiguous(memory_format="channels_last")


def test_clone_to_empty_and_like():
    x = tl.randn(2, 3, 4, 5)
    c = x.clone(memory_format=tl.channels_last)
    assert c.stride() == CL_STRIDES and c.data_ptr() != x.data_ptr()
    assert c.clone().stride() == CL_STRIDES                          # preserve_format
    assert c.clone(memory_format=tl.contiguous_format).stride() == (60, 20, 5, 1)
    assert x.to(memory_format=tl.channels_last).stride() == CL_STRIDES
    assert x.to(tl.float64, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.empty(2, 3, 4, 5, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.empty_like(c).stride() == CL_STRIDES
    assert tl.zeros_like(c, memory_format=tl.contiguous_format).stride() == (60, 20, 5, 1)
    assert tl.ones_like(x, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.full_like(x, 2.0, memory_format=tl.channels_last).stride() == CL_STRIDES


def test_gradients_flow_through_layout_changes():
    x = tl.randn(2, 3, 4, 5, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: t.contiguous(memory_format=tl.channels_last) * 2, (x,))
    assert tl.autograd.gradcheck(lambda t: t.to(memory_format=tl.channels_last).sin(), (x,))


def test_module_to_channels_last_and_conv():
    conv = tl.nn.Conv2d(3, 8, 3)
    conv.to(memory_format=tl.channels_last)
    assert conv.weight.is_contiguous(memory_format=tl.channels_last)
    assert conv.bias.is_contiguous()                                   # 1-d: unchanged
    x = tl.randn(2, 3, 8, 8)
    y1 = conv(x.contiguous(memory_format=tl.channels_last))
    y2 = conv(x)
    np.testing.assert_allclose(y1.detach().numpy(), y2.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_strides_match_torch():
    torch = pytest.importorskip("torch")
    x = tl.randn(2, 3, 4, 5)
    xt = torch.tensor(x.numpy())
    for fmt in ("channels_last", "contiguous_format"):
        assert x.contiguous(memory_format=getattr(tl, fmt)).stride() == \
            xt.contiguous(memory_format=getattr(torch, fmt)).stride()
    one = tl.randn(1, 3, 1, 5).contiguous(memory_format=tl.channels_last)
    onet = torch.randn(1, 3, 1, 5).contiguous(memory_format=torch.channels_last)
    assert one.stride() == onet.stride()
    assert one.is_contiguous(memory_format=tl.channels_last) == \
        onet.is_contiguous(memory_format=torch.channels_last)
