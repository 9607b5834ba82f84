"""3-d and fractional pooling (torchlite/nn/functional/pooling3d.py, fractional_pooling.py and
their layers): values and indices against NumPy references written here (explicit loops over
each window, with PyTorch's rules for ceil_mode, padding, divisors, ties and NaN, and its
generate_intervals for fractional windows), gradients by gradcheck / gradgradcheck in
float64, and PyTorch as a second oracle (values, indices, gradients, messages, reprs)."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(11)


def r(*shape):
    return _rng.standard_normal(shape)


def ties(*shape):
    """Small integers: many equal values in each window."""
    return np.round(_rng.standard_normal(shape) * 1.5)


# ---- NumPy references ------------------------------------------------------------------------------
def _out(size, k, s, p, d, ceil):
    n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (n - 1) * s >= size + p:
        n -= 1
    return n


def _max_of(vals_positions):
    """PyTorch's running maximum: take v when v > max or v is NaN; (value, position)."""
    best, pos = -np.inf, vals_positions[0][1]
    for v, q in vals_positions:
        if v > best or v != v:
            best, pos = v, q
    return best, pos


def np_max_pool3d(x, k, s, p, d, ceil=False):
    n, c, *size = x.shape
    out = [_out(size[i], k[i], s[i], p[i], d[i], ceil) for i in range(3)]
    vals, idx = np.empty((n, c, *out)), np.empty((n, c, *out), np.int64)
    for b, ch, i, j, l in np.ndindex(n, c, *out):
        cells = []
        for a in range(k[0]):
            for bb in range(k[1]):
                for cc in range(k[2]):
                    t = (i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + bb * d[1],
                         l * s[2] - p[2] + cc * d[2])
                    if all(0 <= t[m] < size[m] for m in range(3)):
                        cells.append((x[b, ch, t[0], t[1], t[2]],
                                      (t[0] * size[1] + t[1]) * size[2] + t[2]))
        vals[b, ch, i, j, l], idx[b, ch, i, j, l] = _max_of(cells)
    return vals, idx


def np_avg_pool3d(x, k, s, p, ceil=False, count_include_pad=True, divisor=None):
    n, c, *size = x.shape
    out = [_out(size[i], k[i], s[i], p[i], 1, ceil) for i in range(3)]
    y = np.empty((n, c, *out))
    for pos in np.ndindex(*out):
        lo = [pos[m] * s[m] - p[m] for m in range(3)]
        hi = [min(lo[m] + k[m], size[m] + p[m]) for m in range(3)]
        pool = np.prod([hi[m] - lo[m] for m in range(3)])
        lo = [max(v, 0) for v in lo]
        hi = [min(hi[m], size[m]) for m in range(3)]
        total = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].sum(axis=(2, 3, 4))
        div = divisor or (pool if count_include_pad else np.prod([hi[m] - lo[m] for m in range(3)]))
        y[(slice(None), slice(None)) + pos] = total / div
    return y


def _adaptive_windows(n_in, n_out):
    return [(i * n_in // n_out, -(-(i + 1) * n_in // n_out)) for i in range(n_out)]


def np_adaptive_pool3d(x, out, kind):
    n, c, *size = x.shape
    wins = [_adaptive_windows(size[m], out[m]) for m in range(3)]
    y, idx = np.empty((n, c, *out)), np.empty((n, c, *out), np.int64)
    for b, ch, i, j, l in np.ndindex(n, c, *out):
        (a0, a1), (b0, b1), (c0, c1) = wins[0][i], wins[1][j], wins[2][l]
        block = x[b, ch, a0:a1, b0:b1, c0:c1]
        if kind == "avg":
            y[b, ch, i, j, l] = block.mean()
        else:
            cells = [(x[b, ch, t, u, v], (t * size[1] + u) * size[2] + v)
                     for t in range(a0, a1) for u in range(b0, b1) for v in range(c0, c1)]
            y[b, ch, i, j, l], idx[b, ch, i, j, l] = _max_of(cells)
    return y, idx


def np_intervals(u, n_in, n_out, k, dtype):
    """PyTorch's generate_intervals, in the samples' precision."""
    u = dtype(u)
    seq = np.empty(n_out, np.int64)
    if n_out > 1:
        alpha = dtype(n_in - k) / dtype(n_out - 1)
        for i in range(n_out - 1):
            seq[i] = int((dtype(i) + u) * alpha) - int(u * alpha)
    seq[n_out - 1] = n_in - k
    return seq


def np_fractional(x, k, out, samples):
    nd = len(k)
    n, c, *size = x.shape
    order = (1, 0) if nd == 2 else (0, 1, 2)     # which sample places each dim
    y, idx = np.empty((n, c, *out)), np.empty((n, c, *out), np.int64)
    for b, ch in np.ndindex(n, c):
        starts = [np_intervals(samples[b, ch, order[m]], size[m], out[m], k[m], x.dtype.type)
                  for m in range(nd)]
        for pos in np.ndindex(*out):
            cells = []
            for off in np.ndindex(*k):
                t = [starts[m][pos[m]] + off[m] for m in range(nd)]
                flat = 0
                for m in range(nd):
                    flat = flat * size[m] + t[m]
                cells.append((x[(b, ch) + tuple(t)], flat))
            y[(b, ch) + pos], idx[(b, ch) + pos] = _max_of(cells)
    return y, idx


# ---- values ------------------------------------------------------------------------------------------
MAX_CASES = [
    ((2, 2, 5, 6, 7), dict(kernel_size=2)),
    ((1, 2, 5, 6, 7), dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0),
                           dilation=(1, 2, 1), ceil_mode=True)),
    ((2, 5, 4, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
]


def _triple(v):
    return tuple(v) if isinstance(v, tuple) else (v,) * 3


@pytest.mark.parametrize("shape,kw", MAX_CASES)
def test_max_pool3d_matches_numpy(shape, kw):
    x = ties(*shape)
    x.flat[3] = np.nan
    x.flat[7] = -np.inf
    k = _triple(kw["kernel_size"])
    s = _triple(kw.get("stride", kw["kernel_size"]))
    p, d = _triple(kw.get("padding", 0)), _triple(kw.get("dilation", 1))
    batched = x if x.ndim == 5 else x[None]
    want, want_i = np_max_pool3d(batched, k, s, p, d, kw.get("ceil_mode", False))
    if x.ndim == 4:
        want, want_i = want[0], want_i[0]
    for dt in (tl.float64, tl.float32):
        y, i = F.max_pool3d(tl.tensor(x, dtype=dt), return_indices=True, **kw)
        np.testing.assert_array_equal(i.numpy(), want_i)
        np.testing.assert_array_equal(y.numpy(), want.astype(y.numpy().dtype))
    xi = np.nan_to_num(x, nan=9, neginf=-9).astype(np.int64)      # integer planes too
    want, want_i = np_max_pool3d(xi if xi.ndim == 5 else xi[None], k, s, p, d,
                                 kw.get("ceil_mode", False))
    y, i = F.max_pool3d(tl.tensor(xi), return_indices=True, **kw)
    assert y.dtype is tl.int64
    np.testing.assert_array_equal(y.numpy(), want.reshape(y.shape))
    np.testing.assert_array_equal(i.numpy(), want_i.reshape(i.shape))


@pytest.mark.parametrize("cip", [True, False])
@pytest.mark.parametrize("ceil", [False, True])
def test_avg_pool3d_matches_numpy(cip, ceil):
    x = r(2, 3, 5, 6, 7)
    kw = dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0))
    got = F.avg_pool3d(tl.tensor(x), ceil_mode=ceil, count_include_pad=cip, **kw)
    want = np_avg_pool3d(x, (3, 2, 3), (2, 1, 2), (1, 1, 0), ceil, cip)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    got = F.avg_pool3d(tl.tensor(x[0]), ceil_mode=ceil, count_include_pad=cip, divisor_override=5,
                       **kw)
    want = np_avg_pool3d(x[:1], (3, 2, 3), (2, 1, 2), (1, 1, 0), ceil, cip, divisor=5)[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_adaptive_pool3d_matches_numpy():
    x = ties(2, 2, 5, 6, 7)
    for out in [(3, 4, 2), (5, 1, 7), (2, 6, 3)]:
        want, _ = np_adaptive_pool3d(x, out, "avg")
        np.testing.assert_allclose(F.adaptive_avg_pool3d(tl.tensor(x), out).numpy(), want,
                                   rtol=1e-12, atol=1e-12)
        want, want_i = np_adaptive_pool3d(x, out, "max")
        y, i = F.adaptive_max_pool3d(tl.tensor(x), out, return_indices=True)
        np.testing.assert_array_equal(y.numpy(), want)
        np.testing.assert_array_equal(i.numpy(), want_i)
    # None keeps the input's size; an int is a cube; unbatched inputs
    assert F.adaptive_avg_pool3d(tl.tensor(x), (None, 2, None)).shape == (2, 2, 5, 2, 7)
    assert F.adaptive_max_pool3d(tl.tensor(x[0]), 3).shape == (2, 3, 3, 3)


def test_max_unpool3d_inverts_max_pool3d():
    x = r(2, 3, 6, 6, 7)
    y, i = F.max_pool3d(tl.tensor(x), 2, return_indices=True)
    u = F.max_unpool3d(y, i, 2, output_size=(6, 6, 7))
    want = np.zeros_like(x).reshape(2, 3, -1)
    np.put_along_axis(want, i.numpy().reshape(2, 3, -1), y.numpy().reshape(2, 3, -1), axis=2)
    np.testing.assert_array_equal(u.numpy(), want.reshape(x.shape))
    y6, i6 = F.max_pool3d(tl.tensor(x[..., :6]), 2, return_indices=True)
    assert F.max_unpool3d(y6, i6, 2).shape == (2, 3, 6, 6, 6)
    assert F.max_unpool3d(y[0], i[0], 2, stride=2, output_size=(1, 2, 6, 6, 7)).shape == (3, 6, 6, 7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fractional_max_pool_matches_numpy(dtype):
    for shape, k, out in [((2, 3, 9, 10), (3, 2), (5, 7)), ((3, 8, 7), 2, (4, 6)),
                          ((1, 2, 6, 7, 8), (2, 1, 3), (4, 6, 5))]:
        nd = 2 if isinstance(out, tuple) and len(out) == 2 else 3
        x = ties(*shape).astype(dtype)
        x.flat[5] = np.nan
        batch = shape[0] if len(shape) == nd + 2 else 1
        u = _rng.random((batch, shape[-nd - 1], nd)).astype(dtype)
        kk = k if isinstance(k, tuple) else (k,) * nd
        fn = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
        y, i = fn(tl.tensor(x), k, output_size=out, return_indices=True,
                  _random_samples=tl.tensor(u))
        xb = x if len(shape) == nd + 2 else x[None]
        want, want_i = np_fractional(xb, kk, out, u)
        if len(shape) == nd + 1:
            want, want_i = want[0], want_i[0]
        np.testing.assert_array_equal(i.numpy(), want_i)
        np.testing.assert_array_equal(y.numpy(), want.astype(dtype))


def test_fractional_max_pool_draws_from_torchlites_generator():
    x = tl.randn(2, 3, 12, 12)
    tl.manual_seed(5)
    a = F.fractional_max_pool2d(x, 2, output_ratio=0.5)
    tl.manual_seed(5)
    b = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5))
    assert a.shape == (2, 3, 6, 6) and tl.equal(a, b)
    tl.manual_seed(5)
    samples = tl.rand(2, 3, 2)
    c = F.fractional_max_pool2d(x, 2, output_size=6, _random_samples=samples)
    assert tl.equal(a, c)


# ---- gradients -----------------------------------------------------------------------------------------
def _leaf(*shape):
    return tl.tensor(r(*shape)).requires_grad_()


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool3d(x, 2, 1, 1),
    lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 1), dilation=(2, 1, 1), ceil_mode=True),
    lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True),
    lambda x: F.avg_pool3d(x, (2, 3, 2), 1, (1, 1, 0), count_include_pad=False, divisor_override=3),
    lambda x: F.adaptive_avg_pool3d(x, (3, 2, 3)),
    lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)),
    lambda x: F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2, output_size=(4, 5, 4)),
    lambda x: F.fractional_max_pool3d(x, 2, output_size=(2, 3, 2),
                                      _random_samples=tl.tensor([[[0.3, 0.6, 0.9]] * 2],
                                                                dtype=tl.float64)),
    lambda x: F.fractional_max_pool2d(x[:, :, 0], 2, output_size=(3, 2),
                                      _random_samples=tl.tensor([[[0.3, 0.6]] * 2],
                                                                dtype=tl.float64)),
], ids=["max", "max_dilated", "avg", "avg_divisor", "adaptive_avg", "adaptive_max", "unpool",
        "fractional3d", "fractional2d"])
def test_gradcheck_and_gradgradcheck(fn):
    x = _leaf(1, 2, 4, 5, 4)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_max_pool3d_grad_goes_to_the_first_maximum():
    x = tl.ones(1, 1, 2, 2, 2, requires_grad=True)
    F.max_pool3d(x, 2).sum().backward()
    assert x.grad.flatten().tolist() == [1.0] + [0.0] * 7


# ---- errors ---------------------------------------------------------------------------------------
def test_errors():
    x = tl.randn(2, 4, 5, 6, 7)
    cases = [
        (lambda: F.max_pool3d(x, 2, padding=2), RuntimeError, "pad should be at most half"),
        (lambda: F.max_pool3d(x, 2, padding=-1), RuntimeError, "pad must be non-negative"),
        (lambda: F.max_pool3d(x, 8), RuntimeError, r"Given input size: \(4x5x6x7\). Calculated "
                                                   r"output size: \(4x0x0x0\). Output size is too"),
        (lambda: F.max_pool3d(x, (2, 2)), RuntimeError, "max_pool3d: kernel_size must either be a "
                                                        "single int, or a tuple of three ints"),
        (lambda: F.max_pool3d(x, 2, stride=0), RuntimeError, "stride should not be zero"),
        (lambda: F.max_pool3d(x, 2, dilation=0), RuntimeError, "dilation should be greater than "
                                                               "zero"),
        (lambda: F.max_pool3d(tl.randn(2, 3), 2), RuntimeError, "non-empty 4D or 5D"),
        (lambda: F.max_pool3d(tl.randn(2, 0, 4, 4, 4), 2), RuntimeError,
         "Expected input's non-batch dimensions to have positive length"),
        (lambda: F.max_pool3d(x, 2.0), TypeError, "must be tuple of ints, not float"),
        (lambda: F.avg_pool3d(x, 8), RuntimeError, r"input image \(T: 5 H: 6 W: 7\) smaller than "
                                                   r"kernel size \(kT: 8 kH: 8 kW: 8\)"),
        (lambda: F.avg_pool3d(x, 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
        (lambda: F.avg_pool3d(x, (2, 2)), RuntimeError, "avg_pool3d: kernel_size must be a single "
                                                        "int, or a tuple of three ints"),
        (lambda: F.adaptive_avg_pool3d(x, (2, 2)), RuntimeError, "output_size must be 3"),
        (lambda: F.adaptive_avg_pool3d(tl.randn(2, 2, 2), (2, 2, 2)), ValueError,
         "Input dimension should be at least 4"),
        (lambda: F.adaptive_avg_pool3d(tl.randn(1, 2, 3, 4), ()), RuntimeError,
         "output_size must be 3"),
        (lambda: F.adaptive_avg_pool3d(tl.randn(2, 3), 2), RuntimeError,
         r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[2, 3\]"),
        (lambda: F.adaptive_avg_pool3d(x, (2, -1, 2)), RuntimeError,
         "elements of output_size must be greater than or equal to 0"),
        (lambda: F.adaptive_max_pool3d(tl.randn(2, 3, 0, 3, 3), 2), RuntimeError,
         "Expected input to have non-zero size for non-batch dimensions"),
        (lambda: F.adaptive_avg_pool3d(x.long(), 2), NotImplementedError, "not implemented for "
                                                                          "'Long'"),
        (lambda: F.max_unpool3d(tl.randn(1, 1, 2, 2, 2), tl.zeros(1, 1, 2, 2, 1, dtype=tl.int64), 2),
         RuntimeError, "Expected shape of indices to be same as that of the input tensor"),
        (lambda: F.max_unpool3d(tl.randn(1, 1, 2, 2, 2), tl.full((1, 1, 2, 2, 2), 64), 2),
         RuntimeError, r"Found an invalid max index: 64 \(output volumes are of size 4x4x4\)"),
        (lambda: F.max_unpool3d(tl.randn(1, 1, 2, 2, 2), tl.zeros(1, 1, 2, 2, 2), 2),
         RuntimeError, "elements in indices should be type int64"),
        (lambda: F.max_unpool3d(tl.randn(1, 1, 2, 2, 2), tl.zeros(1, 1, 2, 2, 2, dtype=tl.int64), 2,
                                output_size=(3, 3)), ValueError,
         "output_size should be a sequence containing 3 or 5 elements"),
        (lambda: F.fractional_max_pool2d(tl.randn(2, 3, 9, 10), 3), ValueError,
         "requires specifying either an output_size or an output_ratio"),
        (lambda: F.fractional_max_pool2d(tl.randn(2, 3, 9, 10), 3, output_size=(8, 5)),
         RuntimeError, "pool height 3 too large relative to input height 9"),
        (lambda: F.fractional_max_pool3d(tl.randn(2, 3, 6, 7, 8), 2, output_size=(5, 5, 5)),
         RuntimeError, "pool time 2 too large relative to input time 6"),
        (lambda: F.fractional_max_pool2d(tl.randn(2, 3, 9, 10), 3, output_size=4,
                                         _random_samples=tl.rand(1, 3, 2)), RuntimeError,
         r"Expect _random_samples.size\(0\) no less then input batch size"),
        (lambda: F.fractional_max_pool2d(tl.randn(2, 3, 9, 10), 3, output_size=4,
                                         _random_samples=tl.rand(2, 3, 2, dtype=tl.float64)),
         RuntimeError, "Expect _random_samples to have the same dtype as input"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


# ---- layers ------------------------------------------------------------------------------------------
def test_layers():
    x = tl.tensor(r(2, 3, 6, 6, 7))
    y, i = nn.MaxPool3d(2, return_indices=True)(x)
    assert tl.equal(y, F.max_pool3d(x, 2))
    assert nn.MaxUnpool3d(2)(y, i, output_size=x.shape).shape == x.shape
    assert tl.equal(nn.AvgPool3d(3, 2, 1, ceil_mode=True)(x), F.avg_pool3d(x, 3, 2, 1, ceil_mode=True))
    assert tl.equal(nn.AdaptiveAvgPool3d((2, None, 3))(x), F.adaptive_avg_pool3d(x, (2, None, 3)))
    out, idx = nn.AdaptiveMaxPool3d(3, return_indices=True)(x)
    assert out.shape == idx.shape == (2, 3, 3, 3, 3)
    samples = tl.rand(2, 3, 3, dtype=tl.float64)
    m = nn.FractionalMaxPool3d(2, output_size=(3, 3, 4), _random_samples=samples)
    assert list(m.state_dict()) == ["_random_samples"]
    assert tl.equal(m(x), F.fractional_max_pool3d(x, 2, (3, 3, 4), _random_samples=samples))
    assert nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))(x[:, :, 0]).shape == (2, 3, 3, 3)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(3, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool3d(3, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0"):
        nn.FractionalMaxPool3d(0, output_size=2)


# ---- PyTorch as the oracle --------------------------------------------------------------------------
TORCH_CASES = [
    ("max_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1,
                                          dilation=(1, 2, 1), ceil_mode=True, return_indices=True)),
    ("avg_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                          count_include_pad=False)),
    ("avg_pool3d", (3, 5, 6, 7), dict(kernel_size=(2, 3, 2), divisor_override=4)),
    ("adaptive_avg_pool3d", (2, 3, 5, 6, 7), dict(output_size=(3, 4, 2))),
    ("adaptive_max_pool3d", (3, 5, 6, 7), dict(output_size=(4, None, 3), return_indices=True)),
    ("fractional_max_pool3d", (2, 3, 6, 7, 8), dict(kernel_size=2, output_size=(4, 5, 5),
                                                    return_indices=True)),
    ("fractional_max_pool2d", (3, 9, 10), dict(kernel_size=(3, 2), output_ratio=(0.6, 0.7),
                                               return_indices=True)),
]


@pytest.mark.parametrize("name,shape,kw", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_matches_torch(name, shape, kw):
    torch = pytest.importorskip("torch")
    x = ties(*shape)
    kw = dict(kw)
    extra = {}
    if name.startswith("fractional"):
        nd = int(name[-2])
        batch = shape[0] if len(shape) == nd + 2 else 1
        extra = {"_random_samples": _rng.random((batch, shape[-nd - 1], nd))}
    res = {}
    for L, mod in ((tl, F), (torch, torch.nn.functional)):
        xt = L.tensor(x, requires_grad=True)
        args = {k: L.tensor(v) for k, v in extra.items()}
        out = getattr(mod, name)(xt, **kw, **args)
        y, i = out if isinstance(out, tuple) else (out, None)
        g = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))
        y.backward(L.tensor(g))
        res[L] = (y.detach().numpy(), None if i is None else i.numpy(), xt.grad.numpy())
    (y, i, gx), (ty, ti, tgx) = res[tl], res[torch]
    np.testing.assert_allclose(y, ty, rtol=1e-12, atol=1e-12)
    if i is not None:
        np.testing.assert_array_equal(i, ti)
    np.testing.assert_allclose(gx, tgx, rtol=1e-12, atol=1e-12)


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for name, a, k in [("MaxPool3d", (3,), dict(stride=2, padding=1, ceil_mode=True)),
                       ("AvgPool3d", (3,), dict(stride=2)), ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
                       ("AdaptiveMaxPool3d", (2,), {}), ("MaxUnpool3d", (2,), {}),
                       ("FractionalMaxPool2d", (3,), dict(output_ratio=0.5)),
                       ("FractionalMaxPool3d", (2,), dict(output_size=3))]:
        assert repr(getattr(torch.nn, name)(*a, **k)) == repr(getattr(nn, name)(*a, **k))
