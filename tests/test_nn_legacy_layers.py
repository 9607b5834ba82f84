"""Legacy layers PyTorch still ships: CrossMapLRN2d (Lua Torch's cross-channel LRN, with
PyTorch's window: channel 0 never leaves it) against a NumPy loop and PyTorch's values, its
gradient by finite differences; NLLLoss2d, NLLLoss under its deprecated name."""
import warnings

import numpy as np
import pytest

import torchlite as tl
from torchlite import nn


def _np_cross_map_lrn(x, size, alpha, beta, k):
    """PyTorch's running-window loop, written out: channel c sums the squares of channels
    c - pre + 1 .. c + pre - 1 and always channel 0."""
    c_count = x.shape[1]
    pre = int((size - 1) / 2 + 1)
    sq = x * x
    scale = np.zeros_like(x)
    for c in range(c_count):
        lo = 0 if c <= pre else c - pre + 1
        members = set(range(lo, min(c_count - 1, c + pre - 1) + 1)) | {0}
        scale[:, c] = sum(sq[:, j] for j in members)
    return x * (k + alpha / size * scale) ** -beta


@pytest.mark.parametrize("channels", [1, 3, 8])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_cross_map_lrn_values(channels, size):
    x = np.random.default_rng(size).standard_normal((2, channels, 3, 2))
    y = nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(tl.tensor(x))
    np.testing.assert_allclose(y.numpy(), _np_cross_map_lrn(x, size, 0.5, 0.75, 1.5), rtol=1e-12)
    torch = pytest.importorskip("torch")
    ref = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-12)


def test_cross_map_lrn_gradient_and_errors():
    x = tl.randn(2, 5, 2, 2, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0), (x,))
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        nn.CrossMapLRN2d(3)(tl.randn(2, 3, 4))
    assert repr(nn.CrossMapLRN2d(3, 0.01, 0.75, 2.0)) == "CrossMapLRN2d(3, alpha=0.01, beta=0.75, k=2.0)"


def test_nll_loss_2d_is_nll_loss_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = nn.NLLLoss2d(ignore_index=1)
    assert caught and caught[0].category is FutureWarning and "NLLLoss2d" in str(caught[0].message)
    x = tl.randn(2, 3, 4, 4).log_softmax(1)
    t = tl.randint(0, 3, (2, 4, 4))
    np.testing.assert_allclose(loss(x, t).item(), nn.NLLLoss(ignore_index=1)(x, t).item(), rtol=1e-7)
