"""affine_grid and grid_sample (torchlite/nn/functional/spatial_transform.py): values against a
NumPy reference written here (PyTorch's coordinate rules point by point: unnormalising,
border clipping, reflection, bilinear / nearest / bicubic weights, zeros outside), gradients
with respect to input and grid by gradcheck in float64, and PyTorch as a second oracle for
every mode, padding mode and align_corners, in 4-d and 5-d."""
import itertools
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(5)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- NumPy reference --------------------------------------------------------------------------------
def _unnormalize(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = abs(c - low)
    extra = math.fmod(c, span)
    flips = math.floor(c / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def _pad_coord(c, size, padding, align):
    if padding == "border":
        return min(size - 1, max(c, 0))
    if padding == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
        return min(size - 1, max(c, 0))
    return c


def _cubic(t):
    a = -0.75
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1            # noqa: E731
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a       # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def np_grid_sample(x, grid, mode, padding, align):
    n, c, *size = x.shape
    nd = len(size)
    out_shape = grid.shape[1:-1]
    y = np.zeros((n, c) + out_shape)

    def value(b, pos):
        if all(0 <= p < s for p, s in zip(pos, size)):
            return x[(b, slice(None)) + tuple(int(p) for p in pos)]
        return np.zeros(c)

    for b in range(n):
        for o in np.ndindex(*out_shape):
            g = grid[(b,) + o]
            raw = [_unnormalize(g[nd - 1 - d], size[d], align) for d in range(nd)]  # (z,) y, x
            if mode == "bicubic":
                base = [math.floor(v) for v in raw]
                coef = [_cubic(v - f) for v, f in zip(raw, base)]
                acc = np.zeros(c)
                for j, i in itertools.product(range(4), range(4)):
                    pos = [_pad_coord(base[0] - 1 + j, size[0], padding, align),
                           _pad_coord(base[1] - 1 + i, size[1], padding, align)]
                    acc += coef[0][j] * coef[1][i] * value(b, pos)
                y[(b, slice(None)) + o] = acc
                continue
            coords = [_pad_coord(v, s, padding, align) for v, s in zip(raw, size)]
            if mode == "nearest":
                y[(b, slice(None)) + o] = value(b, [np.round(v) for v in coords])
                continue
            lows = [math.floor(v) for v in coords]
            acc = np.zeros(c)
            for corner in itertools.product((0, 1), repeat=nd):
                w = 1.0
                for v, lo, up in zip(coords, lows, corner):
                    w *= (v - lo) if up else (lo + 1 - v)
                acc += w * value(b, [lo + up for lo, up in zip(lows, corner)])
            y[(b, slice(None)) + o] = acc
    return y


CASES = [(nd, mode, padding, align)
         for nd in (2, 3)
         for mode in (("bilinear", "nearest", "bicubic") if nd == 2 else ("bilinear", "nearest"))
         for padding in ("zeros", "border", "reflection")
         for align in (False, True)]


def _inputs(nd, seed=0):
    rng = np.random.default_rng(seed)
    if nd == 2:
        return rng.standard_normal((2, 3, 4, 5)), rng.uniform(-1.7, 1.7, (2, 3, 4, 2))
    return rng.standard_normal((2, 2, 3, 4, 5)), rng.uniform(-1.7, 1.7, (2, 2, 3, 2, 3))


@pytest.mark.parametrize("nd,mode,padding,align", CASES)
def test_grid_sample_matches_numpy(nd, mode, padding, align):
    x, g = _inputs(nd)
    got = F.grid_sample(tl.tensor(x), tl.tensor(g), mode, padding, align)
    np.testing.assert_allclose(got.numpy(), np_grid_sample(x, g, mode, padding, align),
                               rtol=1e-12, atol=1e-12)
    got32 = F.grid_sample(tl.tensor(x, dtype=tl.float32), tl.tensor(g, dtype=tl.float32), mode,
                          padding, align)
    assert got32.dtype is tl.float32
    np.testing.assert_allclose(got32.numpy(), np_grid_sample(x, g, mode, padding, align),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("bilinear", "reflection"),
                                          ("bicubic", "border"), ("bilinear", "border")])
def test_grid_sample_gradcheck(mode, padding):
    x, g = _inputs(2, seed=1)
    xt, gt = tl.tensor(x).requires_grad_(), tl.tensor(g).requires_grad_()
    fn = lambda a, b: F.grid_sample(a, b, mode, padding, align_corners=False)  # noqa: E731
    assert gradcheck(fn, (xt, gt))
    if padding == "zeros":
        assert gradgradcheck(fn, (xt, gt))


def test_grid_sample_gradcheck_5d_and_nearest():
    x, g = _inputs(3, seed=2)
    xt, gt = tl.tensor(x).requires_grad_(), tl.tensor(g).requires_grad_()
    assert gradcheck(lambda a, b: F.grid_sample(a, b, "bilinear", "reflection", True), (xt, gt))
    y = F.grid_sample(xt, gt, "nearest", "zeros", False)
    y.sum().backward()
    # nearest: the grid gets a gradient, all zeros (PyTorch's), the input a scatter of ones
    assert gt.grad is not None and not gt.grad.numpy().any()
    reads = np_grid_sample(np.ones_like(x), g, "nearest", "zeros", False).sum()
    assert xt.grad.sum().item() == pytest.approx(reads)


def test_affine_grid_matches_numpy_and_identity_resamples_the_input():
    theta = r(2, 2, 3)
    for align in (False, True):
        got = F.affine_grid(tl.tensor(theta), (2, 3, 4, 5), align_corners=align).numpy()
        xs = np.linspace(-1, 1, 5) * (1 if align else 4 / 5)
        ys = np.linspace(-1, 1, 4) * (1 if align else 3 / 4)
        base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], np.ones((4, 5))), -1)
        want = np.einsum("hwk,njk->nhwj", base, theta)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    theta3 = r(2, 3, 4)
    got = F.affine_grid(tl.tensor(theta3), (2, 1, 3, 4, 5), align_corners=True)
    assert got.shape == (2, 3, 4, 5, 3)
    # the identity map samples every pixel centre with align_corners=True
    x = r(2, 3, 4, 5)
    ident = tl.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=tl.float64)
    for align in (True, False):
        grid = F.affine_grid(ident, (2, 3, 4, 5), align_corners=align)
        out = F.grid_sample(tl.tensor(x), grid, align_corners=align)
        np.testing.assert_allclose(out.numpy(), x, rtol=1e-12, atol=1e-12)


def test_affine_grid_gradcheck():
    theta = tl.tensor(r(2, 2, 3)).requires_grad_()
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), (theta,))
    x = tl.tensor(r(2, 1, 4, 4))
    theta3 = tl.tensor(r(1, 3, 4) * 0.5).requires_grad_()
    assert gradcheck(lambda t: F.grid_sample(x[:1].unsqueeze(2).expand(1, 1, 3, 4, 4),
                                             F.affine_grid(t, (1, 1, 2, 3, 3), align_corners=True),
                                             align_corners=True), (theta3,))


def test_errors_and_warnings():
    x, g = tl.randn(2, 3, 5, 6), tl.rand(2, 4, 7, 2)
    cases = [
        (lambda: F.grid_sample(x, g, mode="foo", align_corners=False), ValueError,
         "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"),
        (lambda: F.grid_sample(x, g, padding_mode="foo", align_corners=False), ValueError,
         "expected padding_mode to be 'zeros', 'border', or 'reflection'"),
        (lambda: F.grid_sample(x, g[:1], align_corners=False), RuntimeError,
         "expected grid and input to have same batch size"),
        (lambda: F.grid_sample(x, tl.rand(2, 4, 7, 3), align_corners=False), RuntimeError,
         "expected grid to have size 2 in last dimension"),
        (lambda: F.grid_sample(x, g.double(), align_corners=False), RuntimeError,
         "expected scalar type Float but found Double"),
        (lambda: F.grid_sample(x, g[..., None, :], align_corners=False), RuntimeError,
         "expected 4D input and grid with same number of dimensions"),
        (lambda: F.grid_sample(tl.randn(2, 3, 0, 6), g, align_corners=False), RuntimeError,
         "expected input to have non-empty spatial dimensions"),
        (lambda: F.grid_sample(tl.randn(2, 3, 4, 5, 6), tl.rand(2, 3, 4, 5, 3), mode="bicubic",
                               align_corners=False), RuntimeError,
         "bicubic interpolation only supports 4D input"),
        (lambda: F.affine_grid(tl.randn(2, 2, 3), (2, 3, 4, 5, 6), align_corners=False), ValueError,
         "Expected a batch of 3D affine matrices of shape Nx3x4"),
        (lambda: F.affine_grid(tl.randn(2, 2, 3), (2, 3, 4), align_corners=False),
         NotImplementedError, "affine_grid only supports 4D and 5D sizes"),
        (lambda: F.affine_grid(tl.ones(2, 2, 3, dtype=tl.int64), (2, 3, 4, 5), align_corners=False),
         ValueError, "Expected theta to have floating point type"),
        (lambda: F.affine_grid(tl.randn(2, 2, 3), (2, 3, 0, 5), align_corners=False), ValueError,
         "Expected non-zero, positive output size"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.grid_sample(x, g, align_corners=True).shape == (2, 3, 4, 7)
        assert F.grid_sample(tl.randn(0, 3, 5, 6), tl.rand(0, 4, 7, 2), align_corners=True).shape \
            == (0, 3, 4, 7)


# ---- PyTorch as the oracle --------------------------------------------------------------------------
@pytest.mark.parametrize("nd,mode,padding,align", CASES)
def test_matches_torch(nd, mode, padding, align):
    torch = pytest.importorskip("torch")
    x, g = _inputs(nd, seed=3)
    g = g * 1.6             # well outside the input too
    res = {}
    for L, mod in ((tl, F), (torch, torch.nn.functional)):
        xt, gt = L.tensor(x, requires_grad=True), L.tensor(g, requires_grad=True)
        y = mod.grid_sample(xt, gt, mode, padding, align)
        go = np.cos(np.arange(y.numel())).reshape(tuple(y.shape))
        y.backward(L.tensor(go))
        res[L] = [y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()]
    for a, b in zip(res[tl], res[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_affine_grid_matches_torch():
    torch = pytest.importorskip("torch")
    for shape, theta in [((2, 3, 4, 5), r(2, 2, 3)), ((2, 3, 4, 1, 6), r(2, 3, 4))]:
        for align in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a = torch.nn.functional.affine_grid(torch.tensor(theta), shape, align_corners=align)
                b = F.affine_grid(tl.tensor(theta), shape, align_corners=align)
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_nan_and_infinite_grid_coordinates(mode, padding_mode, align_corners):
    """A NaN grid coordinate clips to the low border (pixel 0) under border and reflection
    padding, an infinite one reflects to NaN and so to 0 too, as PyTorch's CPU kernel reads
    them; with zeros padding a NaN stays NaN."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    nan, inf = np.nan, np.inf
    grid = np.array([[[[nan, 0.2], [0.3, nan], [nan, nan], [inf, 0.1], [-inf, 0.5]]]])
    got = F.grid_sample(tl.tensor(x), tl.tensor(grid), mode, padding_mode, align_corners).numpy()
    if padding_mode == "border" and mode != "bicubic":
        low = np.array([[[[-5.0, 0.2], [0.3, -5.0], [-5.0, -5.0]]]])      # clipped to pixel 0
        want = F.grid_sample(tl.tensor(x), tl.tensor(low), mode, padding_mode, align_corners).numpy()
        np.testing.assert_allclose(got[..., :3], want, rtol=1e-12)
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode, padding_mode,
                                          align_corners).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_nan_grid_point_sends_no_gradient_to_the_input(mode):
    """Under zeros padding a NaN grid point makes its output NaN (0 for nearest, which reads
    no pixel), but PyTorch's backward skips its taps: the input's gradient stays finite (the
    other points' contributions)."""
    x = tl.tensor(np.arange(32.0).reshape(1, 2, 4, 4), requires_grad=True)
    grid = tl.tensor(np.array([[[[np.nan, 0.2], [0.1, 0.3]]]]))
    y = F.grid_sample(x, grid, mode, "zeros", False)
    first = y[..., 0].detach().numpy()
    assert (first == 0).all() if mode == "nearest" else np.isnan(first).all()
    assert np.isfinite(y[..., 1].detach().numpy()).all()
    y[..., 1].sum().backward()
    only_finite = x.grad.numpy().copy()
    x.grad = None
    y = F.grid_sample(x, grid, mode, "zeros", False)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), only_finite)     # the NaN point adds nothing
    torch = pytest.importorskip("torch")
    tx = torch.tensor(np.arange(32.0).reshape(1, 2, 4, 4), requires_grad=True)
    torch.nn.functional.grid_sample(tx, torch.tensor(grid.numpy()), mode, "zeros", False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
