"""channel_shuffle and the shuffle layers (ChannelShuffle, PixelShuffle, PixelUnshuffle), and
interpolate's bicubic (4-d) and area (5-d) modes (torchlite/nn/functional/vision.py): values
against NumPy references written here (bicubic: PyTorch's source coordinates and cubic
convolution weights, A = -0.75, taps clamped into the input), gradients by gradcheck /
gradgradcheck in float64, and PyTorch as a second oracle."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(23)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- channel_shuffle and the shuffle layers -----------------------------------------------------
def test_channel_shuffle_values():
    x = np.arange(2 * 6 * 2 * 3, dtype=np.float64).reshape(2, 6, 2, 3)
    got = F.channel_shuffle(tl.tensor(x), 3).numpy()
    want = x.reshape(2, 3, 2, 2, 3).transpose(0, 2, 1, 3, 4).reshape(x.shape)
    np.testing.assert_array_equal(got, want)
    assert got[0, 1, 0, 0] == x[0, 2, 0, 0]        # channel g * (C/g) + k -> k * g + g
    ints = tl.arange(24).view(1, 4, 3, 2)
    assert F.channel_shuffle(ints, 2).dtype is tl.int64
    assert tl.equal(nn.ChannelShuffle(2)(ints), F.channel_shuffle(ints, 2))
    assert F.channel_shuffle(tl.zeros(0, 4, 2), 2).shape == (0, 4, 2)
    xt = tl.tensor(r(2, 4, 3)).requires_grad_()
    assert gradcheck(lambda a: F.channel_shuffle(a, 2), (xt,))


def test_channel_shuffle_errors():
    x = tl.randn(1, 4, 3, 2)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 4 "
                                           "channels and 3 groups."):
        F.channel_shuffle(x, 3)
    with pytest.raises(RuntimeError, match="Number of groups to divide channels in must be "
                                           "positive. Value of groups:0"):
        F.channel_shuffle(x, 0)
    with pytest.raises(RuntimeError, match=r"channel_shuffle expects input with > 2 dims, but got "
                                           r"input with sizes \[3, 2\]"):
        F.channel_shuffle(x[0, 0], 2)
    with pytest.raises(TypeError, match="argument 'groups' \\(position 2\\) must be int, not float"):
        F.channel_shuffle(x, 2.0)


def test_pixel_shuffle_layers():
    x = tl.tensor(r(2, 8, 3, 4))
    up = nn.PixelShuffle(2)
    assert repr(up) == "PixelShuffle(upscale_factor=2)"
    y = up(x)
    assert y.shape == (2, 2, 6, 8) and tl.equal(y, F.pixel_shuffle(x, 2))
    down = nn.PixelUnshuffle(2)
    assert repr(down) == "PixelUnshuffle(downscale_factor=2)"
    assert tl.equal(down(y), x)
    assert repr(nn.ChannelShuffle(4)) == "ChannelShuffle(groups=4)"


def test_fold_unfold_unflatten_layers_exist():
    x = tl.tensor(r(2, 3, 4, 5))
    cols = nn.Unfold(2, padding=1)(x)
    assert tl.equal(cols, F.unfold(x, 2, padding=1))
    assert tl.equal(nn.Fold((4, 5), 2, padding=1)(cols), F.fold(cols, (4, 5), 2, padding=1))
    assert nn.Unflatten(1, (3, 1))(x).shape == (2, 3, 1, 4, 5)


# ---- bicubic ---------------------------------------------------------------------------------------
def np_cubic_weights(n_in, n_out, align_corners, scale=None):
    """(taps (n_out, 4), weights (n_out, 4)) in float64: PyTorch's HelperInterpCubic."""
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        step = 1.0 / scale if scale else n_in / n_out
    a = -0.75
    taps, weights = np.zeros((n_out, 4), np.int64), np.zeros((n_out, 4))
    for j in range(n_out):
        src = step * j if align_corners else step * (j + 0.5) - 0.5
        base = min(math.floor(src), n_in - 1)
        t = min(max(src - base, 0.0), 1.0)
        near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1            # noqa: E731
        far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a       # noqa: E731
        weights[j] = [far(t + 1), near(t), near(1 - t), far(2 - t)]
        taps[j] = [min(max(base - 1 + i, 0), n_in - 1) for i in range(4)]
    return taps, weights


def np_bicubic(x, size, align_corners, scales=(None, None)):
    th, wh = np_cubic_weights(x.shape[2], size[0], align_corners, scales[0])
    tw, ww = np_cubic_weights(x.shape[3], size[1], align_corners, scales[1])
    rows = np.einsum("nchwk,wk->nchw", x[:, :, :, tw], ww)              # along W first
    return np.einsum("nchkw,hk->nchw", rows[:, :, th, :], wh)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size,scale", [((3, 3), None), ((7, 9), None), (None, 1.7), (None, 0.6)])
def test_bicubic_matches_numpy(align, size, scale):
    x = r(2, 3, 4, 5)
    got = F.interpolate(tl.tensor(x), size=size, scale_factor=scale, mode="bicubic",
                        align_corners=align)
    out = size or (math.floor(4 * scale), math.floor(5 * scale))
    want = np_bicubic(x, out, align, (scale, scale) if scale else (None, None))
    assert got.shape == (2, 3) + tuple(out)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    got32 = F.interpolate(tl.tensor(x, dtype=tl.float32), size=size, scale_factor=scale,
                          mode="bicubic", align_corners=align)
    np.testing.assert_allclose(got32.numpy(), want, rtol=1e-5, atol=1e-5)


def test_bicubic_gradients_and_layer():
    x = tl.tensor(r(1, 2, 4, 3)).requires_grad_()
    fn = lambda a: F.interpolate(a, size=(6, 5), mode="bicubic", align_corners=False)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    y = fn(x)
    assert type(y.grad_fn).__name__ == "UpsampleBicubic2DBackward0"
    up = nn.Upsample(scale_factor=2, mode="bicubic", align_corners=True)
    assert tl.equal(up(x), F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True))
    with pytest.raises(NotImplementedError, match="Got 3D input, but bicubic mode needs 4D input"):
        F.interpolate(tl.randn(1, 2, 4), size=3, mode="bicubic")
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(tl.randn(1, 2, 4), size=3, mode="linear", antialias=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_downsampling_matches_pillow_and_torch(mode):
    """interpolate(antialias=True) is the resampling PIL does (PyTorch's follows it): Pillow's
    float-image resize is the independent oracle, PyTorch the second where installed."""
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(5)
    img = rng.random((17, 23)).astype(np.float32)
    got = F.interpolate(tl.tensor(img)[None, None], size=(6, 9), mode=mode, antialias=True)[0, 0].numpy()
    pil_mode = Image.Resampling.BILINEAR if mode == "bilinear" else Image.Resampling.BICUBIC
    want = np.asarray(Image.fromarray(img, mode="F").resize((9, 6), pil_mode))
    np.testing.assert_allclose(got, want, atol=2e-6)
    x = tl.randn(1, 2, 9, 9, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a: F.interpolate(a, size=(4, 3), mode=mode, antialias=True), (x,))
    torch = pytest.importorskip("torch")
    for kw in (dict(size=(4, 5)), dict(scale_factor=0.37), dict(size=(34, 11), align_corners=True)):
        a = rng.standard_normal((2, 3, 17, 23))
        np.testing.assert_allclose(F.interpolate(tl.tensor(a), mode=mode, antialias=True, **kw).numpy(),
                                   torch.nn.functional.interpolate(torch.tensor(a), mode=mode, antialias=True,
                                                                   **kw).numpy(), atol=1e-12)


# ---- area on 5-d inputs ------------------------------------------------------------------------------
def test_area_5d_is_adaptive_average_pooling():
    x = r(2, 3, 5, 6, 7)
    got = F.interpolate(tl.tensor(x), size=(3, 4, 2), mode="area")
    want = np.empty((2, 3, 3, 4, 2))
    for i, j, k in np.ndindex(3, 4, 2):
        d0, d1 = i * 5 // 3, -(-(i + 1) * 5 // 3)
        h0, h1 = j * 6 // 4, -(-(j + 1) * 6 // 4)
        w0, w1 = k * 7 // 2, -(-(k + 1) * 7 // 2)
        want[:, :, i, j, k] = x[:, :, d0:d1, h0:h1, w0:w1].mean(axis=(2, 3, 4))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    up = F.interpolate(tl.tensor(x), scale_factor=2, mode="area")
    np.testing.assert_array_equal(up.numpy(), x.repeat(2, 2).repeat(2, 3).repeat(2, 4))
    xt = tl.tensor(r(1, 2, 3, 4, 3)).requires_grad_()
    assert gradcheck(lambda a: F.interpolate(a, size=(2, 3, 2), mode="area"), (xt,))


# ---- PyTorch as the oracle --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(size=(7, 3), mode="bicubic", align_corners=False),
                                dict(scale_factor=1.7, mode="bicubic", align_corners=True),
                                dict(scale_factor=0.6, mode="bicubic", align_corners=False,
                                     recompute_scale_factor=True),
                                dict(size=(3, 5, 9), mode="area"),
                                dict(scale_factor=(1.5, 0.5, 2), mode="area")],
                         ids=["bicubic_size", "bicubic_align", "bicubic_recompute", "area_size",
                              "area_scale"])
def test_interpolate_matches_torch(dtype, kw):
    torch = pytest.importorskip("torch")
    shape = (2, 3, 4, 6, 5) if kw["mode"] == "area" else (2, 3, 5, 6)
    x = r(*shape).astype(dtype)
    res = {}
    for L, mod in ((tl, F), (torch, torch.nn.functional)):
        xt = L.tensor(x, requires_grad=True)
        y = mod.interpolate(xt, **kw)
        y.backward(L.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype)))
        res[L] = (y.detach().numpy(), xt.grad.numpy())
    tol = 2e-5 if dtype == "float32" else 1e-12
    for a, b in zip(res[tl], res[torch]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_channel_shuffle_and_pixel_layers_match_torch():
    torch = pytest.importorskip("torch")
    x = r(2, 6, 3, 4)
    np.testing.assert_array_equal(F.channel_shuffle(tl.tensor(x), 3).numpy(),
                                  torch.nn.functional.channel_shuffle(torch.tensor(x), 3).numpy())
    for name, arg in (("ChannelShuffle", 3), ("PixelShuffle", 2), ("PixelUnshuffle", 2)):
        assert repr(getattr(nn, name)(arg)) == repr(getattr(torch.nn, name)(arg))
