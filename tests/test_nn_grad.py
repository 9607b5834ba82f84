"""torchlite.nn.grad (conv{1,2,3}d_input / _weight): the adjoint identity
<conv(x, w), g> = <x, conv_input(g)> = <w, conv_weight(g)> in float64 for strided, padded,
dilated and grouped convolutions, and PyTorch's torch.nn.grad where installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F

CASES = [  # (dims, input shape, weight shape, stride, padding, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), 2, 1, 1, 2),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), (2, 1), 1, 1, 1),
    (2, (1, 4, 8, 8), (4, 1, 3, 3), 1, 2, 2, 4),
    (3, (1, 2, 5, 4, 6), (3, 2, 2, 3, 2), 1, (1, 0, 1), 1, 1),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}d-{i}" for i, c in enumerate(CASES)])
def test_adjoint_identity_and_pytorch(case):
    nd, xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(nd)
    x, w = tl.tensor(rng.standard_normal(xs)), tl.tensor(rng.standard_normal(ws))
    conv = getattr(F, f"conv{nd}d")
    y = conv(x, w, None, stride, padding, dilation, groups)
    g = tl.tensor(rng.standard_normal(tuple(y.shape)))
    gi = getattr(tl.nn.grad, f"conv{nd}d_input")(xs, w, g, stride, padding, dilation, groups)
    gw = getattr(tl.nn.grad, f"conv{nd}d_weight")(x, ws, g, stride, padding, dilation, groups)
    assert gi.shape == xs and gw.shape == ws and not gi.requires_grad
    inner = (y * g).sum().item()
    np.testing.assert_allclose((x * gi).sum().item(), inner, rtol=1e-10)
    np.testing.assert_allclose((w * gw).sum().item(), inner, rtol=1e-10)
    torch = pytest.importorskip("torch")
    tx, tw, tg = (torch.from_numpy(t.numpy()) for t in (x, w, g))
    ti = getattr(torch.nn.grad, f"conv{nd}d_input")(xs, tw, tg, stride, padding, dilation, groups)
    tww = getattr(torch.nn.grad, f"conv{nd}d_weight")(tx, ws, tg, stride, padding, dilation, groups)
    np.testing.assert_allclose(gi.numpy(), ti.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), tww.numpy(), rtol=1e-10, atol=1e-12)


def test_differentiable_in_grad_output_and_shape_errors():
    w = tl.randn(2, 3, 3, dtype=tl.float64)
    g = tl.randn(1, 2, 6, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda gg: tl.nn.grad.conv1d_input((1, 3, 8), w, gg), (g,))
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        tl.nn.grad.conv1d_input((1, 3, 9), w, g)
