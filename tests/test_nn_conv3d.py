"""3-d convolutions (torchlite/nn/functional/convolution3d.py, nn.Conv3d / nn.ConvTranspose3d):
values against a NumPy reference written here (a sum over the kernel taps of shifted input
windows), gradients by gradcheck / gradgradcheck in float64, and PyTorch as a second oracle
(values, gradients, messages, layers' parameters and state dicts) where it is installed."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(3)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- NumPy references ----------------------------------------------------------------------------
def np_conv3d(x, w, b=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1):
    n, c, *size = x.shape
    o, cg, *k = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out = [(s + 2 * p - d * (kk - 1) - 1) // st + 1
           for s, p, d, kk, st in zip(size, padding, dilation, k, stride)]
    y = np.zeros((n, o, *out))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for a in range(k[0]):
            for bb in range(k[1]):
                for cc in range(k[2]):
                    lo = [a * dilation[0], bb * dilation[1], cc * dilation[2]]
                    win = xs[:, :, lo[0]:lo[0] + (out[0] - 1) * stride[0] + 1:stride[0],
                             lo[1]:lo[1] + (out[1] - 1) * stride[1] + 1:stride[1],
                             lo[2]:lo[2] + (out[2] - 1) * stride[2] + 1:stride[2]]
                    y[:, g * og:(g + 1) * og] += np.einsum("ncdhw,oc->nodhw", win, ws[:, :, a, bb, cc])
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y


def np_conv_transpose3d(x, w, b=None, stride=(1, 1, 1), padding=(0, 0, 0), output_padding=(0, 0, 0),
                        groups=1, dilation=(1, 1, 1)):
    """Scatter of every input voxel times its kernel into the (uncropped) output."""
    n, c, *size = x.shape
    _, og, *k = w.shape
    full = [(s - 1) * st + d * (kk - 1) + 1 + op
            for s, st, d, kk, op in zip(size, stride, dilation, k, output_padding)]
    y = np.zeros((n, og * groups, *[f + p for f, p in zip(full, padding)]))
    cg = c // groups
    for g in range(groups):
        for a in range(k[0]):
            for bb in range(k[1]):
                for cc in range(k[2]):
                    lo = [a * dilation[0], bb * dilation[1], cc * dilation[2]]
                    contrib = np.einsum("ncdhw,co->nodhw", x[:, g * cg:(g + 1) * cg],
                                        w[g * cg:(g + 1) * cg, :, a, bb, cc])
                    y[:, g * og:(g + 1) * og, lo[0]:lo[0] + (size[0] - 1) * stride[0] + 1:stride[0],
                      lo[1]:lo[1] + (size[1] - 1) * stride[1] + 1:stride[1],
                      lo[2]:lo[2] + (size[2] - 1) * stride[2] + 1:stride[2]] += contrib
    out = [(s - 1) * st - 2 * p + d * (kk - 1) + op + 1
           for s, st, p, d, kk, op in zip(size, stride, padding, dilation, k, output_padding)]
    y = y[:, :, padding[0]:padding[0] + out[0], padding[1]:padding[1] + out[1],
          padding[2]:padding[2] + out[2]]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1)
    return y


CONV_CASES = [
    # (x shape, w shape, kwargs)
    ((2, 4, 5, 6, 7), (6, 2, 3, 3, 3), dict(groups=2)),
    ((2, 3, 7, 6, 8), (4, 3, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 1))),
    ((1, 2, 4, 5, 6), (3, 2, 1, 1, 1), {}),
    ((3, 2, 4, 5, 6), (3, 2, 2, 3, 1), dict(stride=3, padding=1)),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv3d_matches_numpy(xs, ws, kw):
    x, w, b = r(*xs), r(*ws), r(ws[0])
    got = F.conv3d(tl.tensor(x), tl.tensor(w), tl.tensor(b), **kw).numpy()
    full = {k: (v,) * 3 if isinstance(v, int) and k != "groups" else v for k, v in kw.items()}
    np.testing.assert_allclose(got, np_conv3d(x, w, b, **full), rtol=1e-10, atol=1e-10)
    got32 = F.conv3d(tl.tensor(x, dtype=tl.float32), tl.tensor(w, dtype=tl.float32), **kw)
    assert got32.dtype is tl.float32 and got32.is_contiguous()
    np.testing.assert_allclose(got32.numpy(), np_conv3d(x, w, None, **full), rtol=1e-4, atol=1e-4)


def test_conv3d_padding_strings_and_unbatched():
    x, w = r(2, 3, 5, 6, 7), r(4, 3, 2, 3, 4)
    y = F.conv3d(tl.tensor(x), tl.tensor(w), padding="same", dilation=(1, 2, 1))
    assert y.shape == (2, 4, 5, 6, 7)
    # 'same' pads d*(k-1) in total per dim, the odd extra on the far side
    ref = np_conv3d(np.pad(x, [(0, 0), (0, 0), (0, 1), (2, 2), (1, 2)]), w, dilation=(1, 2, 1))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10)
    y = F.conv3d(tl.tensor(x), tl.tensor(w), padding="valid")
    np.testing.assert_allclose(y.numpy(), np_conv3d(x, w), rtol=1e-10, atol=1e-10)
    one = F.conv3d(tl.tensor(x[0]), tl.tensor(w), stride=2)
    np.testing.assert_allclose(one.numpy(), np_conv3d(x[:1], w, stride=(2, 2, 2))[0], rtol=1e-10)


TRANSPOSED_CASES = [
    ((2, 4, 3, 4, 5), (4, 3, 3, 3, 3), {}),
    ((2, 4, 3, 4, 5), (4, 3, 3, 2, 3), dict(groups=2, stride=(2, 2, 1), padding=(1, 0, 1),
                                            output_padding=(1, 1, 0))),
    # output_padding at the stride, allowed under the dilation
    ((1, 2, 3, 3, 4), (2, 2, 3, 2, 2), dict(stride=(1, 2, 1), dilation=(3, 1, 2),
                                            output_padding=(2, 1, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", TRANSPOSED_CASES)
def test_conv_transpose3d_matches_numpy(xs, ws, kw):
    groups = kw.get("groups", 1)
    x, w, b = r(*xs), r(*ws), r(ws[1] * groups)
    got = F.conv_transpose3d(tl.tensor(x), tl.tensor(w), tl.tensor(b), **kw).numpy()
    full = {k: (v,) * 3 if isinstance(v, int) and k != "groups" else v for k, v in kw.items()}
    np.testing.assert_allclose(got, np_conv_transpose3d(x, w, b, **full), rtol=1e-10, atol=1e-10)


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    """<conv3d(x, w), y> == <x, conv_transpose3d(y, w)>."""
    x, w = r(2, 3, 6, 5, 7), r(4, 3, 3, 2, 3)
    kw = dict(stride=(2, 1, 2), padding=(1, 1, 0), dilation=(1, 2, 1))
    y = F.conv3d(tl.tensor(x), tl.tensor(w), **kw)
    g = r(*y.shape)
    back = F.conv_transpose3d(tl.tensor(g), tl.tensor(w), output_padding=(1, 0, 0), **kw)
    assert back.shape == x.shape
    assert math.isclose(float((y.numpy() * g).sum()), float((back.numpy() * x).sum()), rel_tol=1e-10)


def _leaf(a):
    return tl.tensor(a).requires_grad_()


def test_conv3d_gradcheck_and_gradgradcheck():
    x, w, b = _leaf(r(1, 2, 4, 3, 4)), _leaf(r(4, 1, 2, 2, 3)), _leaf(r(4))
    fn = lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), groups=2)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv_transpose3d_gradcheck_and_gradgradcheck():
    x, w, b = _leaf(r(1, 2, 3, 2, 3)), _leaf(r(2, 2, 2, 3, 2)), _leaf(r(2))
    fn = lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(0, 1, 0),  # noqa: E731
                                            output_padding=(1, 0, 1))
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_errors():
    x, w = tl.randn(2, 4, 5, 6, 7), tl.randn(6, 2, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) input to "
                                           r"conv3d, but got input of size: \[2, 4, 5\]"):
        F.conv3d(tl.randn(2, 4, 5), w)
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 5, 6, 7\] to have 2 channels, "
                                           r"but got 4 channels instead"):
        F.conv3d(x, w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv3d(x, tl.randn(6, 4, 6, 3, 3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv3d(x, w, groups=2, padding="same", stride=2)
    with pytest.raises(RuntimeError, match="expected stride to be a single integer value or a list "
                                           "of 3 values"):
        F.conv3d(x, w, groups=2, stride=(1, 2))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or "
                                           "dilation, but got output_padding_depth: 2"):
        F.conv_transpose3d(x, tl.randn(4, 3, 3, 3, 3), stride=2, output_padding=2)
    with pytest.raises(TypeError, match="argument 'padding' must be tuple of ints, not str"):
        F.conv_transpose3d(x, tl.randn(4, 3, 3, 3, 3), padding="same")
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose3d(x, tl.randn(4, 3, 3, 3, 3), padding=5)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.conv3d(tl.ones(1, 1, 3, 3, 3, dtype=tl.int64), tl.ones(1, 1, 2, 2, 2, dtype=tl.int64))


# ---- layers ------------------------------------------------------------------------------------------
def test_conv3d_layer_parameters_and_init():
    m = nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1), groups=2)
    assert m.weight.shape == (6, 2, 3, 2, 3) and m.bias.shape == (6,)
    assert list(m.state_dict()) == ["weight", "bias"]
    bound = 1 / math.sqrt(2 * 3 * 2 * 3)        # kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), ...)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.abs().max()) > 0.5 * bound
    assert repr(m) == ("Conv3d(4, 6, kernel_size=(3, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1), "
                       "groups=2)")
    x = r(2, 4, 5, 6, 7)
    y = m(tl.tensor(x, dtype=tl.float32))
    ref = np_conv3d(x, m.weight.detach().double().numpy(), m.bias.detach().double().numpy(),
                    stride=(1, 2, 1), padding=(1, 0, 1), groups=2)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    t = nn.ConvTranspose3d(4, 6, 3, stride=2, groups=2, bias=False)
    assert t.weight.shape == (4, 3, 3, 3, 3) and t.bias is None
    assert list(t.state_dict()) == ["weight"]
    assert t(tl.randn(1, 4, 2, 3, 4), output_size=(6, 8, 10)).shape == (1, 6, 6, 8, 10)
    with pytest.raises(ValueError, match="requested an output size of"):
        t(tl.randn(1, 4, 2, 3, 4), output_size=(9, 8, 10))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose3d(4, 6, 3, padding_mode="reflect")


def test_conv3d_layer_padding_modes():
    m = nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular", dtype=tl.float64)
    x = r(1, 2, 4, 5, 6)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)], mode="wrap")
    ref = np_conv3d(xp, m.weight.detach().numpy(), m.bias.detach().numpy())
    np.testing.assert_allclose(m(tl.tensor(x)).detach().numpy(), ref, rtol=1e-10, atol=1e-10)


# ---- PyTorch as the oracle --------------------------------------------------------------------------
def _grads_both(torch, fn_name, arrays, kw):
    out = {}
    g = None
    for L, mod in ((tl, F), (torch, torch.nn.functional)):
        xs = [L.tensor(a, requires_grad=True) for a in arrays]
        y = getattr(mod, fn_name)(*xs, **kw)
        if g is None:
            g = r(*y.shape)
        y.backward(L.tensor(g))
        out[L] = (y.detach().numpy(), [x.grad.numpy() for x in xs])
    return out[tl], out[torch]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("xs,ws,kw", CONV_CASES + [((2, 3, 5, 6, 7), (4, 3, 2, 2, 3),
                                                     dict(padding="same", dilation=(2, 1, 1)))])
def test_conv3d_matches_torch(xs, ws, kw):
    torch = pytest.importorskip("torch")
    (y, gs), (ty, tgs) = _grads_both(torch, "conv3d", [r(*xs), r(*ws), r(ws[0])], kw)
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    for a, b in zip(gs, tgs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("xs,ws,kw", TRANSPOSED_CASES)
def test_conv_transpose3d_matches_torch(xs, ws, kw):
    torch = pytest.importorskip("torch")
    b = r(ws[1] * kw.get("groups", 1))
    (y, gs), (ty, tgs) = _grads_both(torch, "conv_transpose3d", [r(*xs), r(*ws), b], kw)
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    for a, b in zip(gs, tgs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_layers_load_torch_state_dicts():
    torch = pytest.importorskip("torch")
    for make in (lambda L: L.nn.Conv3d(4, 6, (3, 2, 3), padding=(1, 0, 1), groups=2,
                                       padding_mode="replicate"),
                 lambda L: L.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2)):
        tm, m = make(torch), make(tl)
        assert repr(tm) == repr(m)
        assert [(k, tuple(v.shape)) for k, v in tm.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in m.state_dict().items()]
        m.load_state_dict({k: tl.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        x = r(2, 4, 4, 5, 6).astype(np.float32)
        np.testing.assert_allclose(m(tl.tensor(x)).detach().numpy(),
                                   tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
