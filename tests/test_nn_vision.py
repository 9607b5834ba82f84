"""Padding, interpolation and patches (torchlite/nn/functional/vision.py, the resampling kernel
of torchlite/_core/pool.pyx, im2col/col2im of torchlite/_core/conv.pyx, and the Upsample, Fold,
Unfold and padding modules): values against NumPy references written here (np.pad, index maps
computed in float32 as PyTorch does, explicit loops for the sliding blocks), PyTorch as a second
oracle, gradcheck / gradgradcheck in float64 over non-contiguous layouts in one table, thread
counts 1 and 2, errors and module reprs."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from helpers import Case, case_table_tests, make_noncontig, torch_or_skip

_rng = np.random.default_rng(9)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- NumPy references ---------------------------------------------------------------------------
_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def np_pad(x, pad, mode="constant", value=0.0):
    """F.pad's semantics from np.pad: positive amounts pad, negative ones crop (circular crops
    first and wraps what is left, the other modes pad the original and crop after)."""
    k = len(pad) // 2
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(k)]      # last dim first
    dims = [x.ndim - 1 - i for i in range(k)]

    def crop(a):
        sl = [slice(None)] * a.ndim
        for d, (lo, hi) in zip(dims, pairs):
            sl[d] = slice(max(0, -lo), a.shape[d] - max(0, -hi))
        return a[tuple(sl)]

    widths = [(0, 0)] * x.ndim
    for d, (lo, hi) in zip(dims, pairs):
        widths[d] = (max(0, lo), max(0, hi))
    kw = dict(constant_values=value) if mode == "constant" else {}
    if mode == "circular":
        return np.pad(crop(x), widths, mode="wrap")
    full = np.pad(x, widths, mode=_NP_MODE[mode], **kw)
    sl = [slice(None)] * x.ndim
    for d, (lo, hi) in zip(dims, pairs):
        sl[d] = slice(max(0, -lo), full.shape[d] - max(0, -hi))
    return full[tuple(sl)]


def np_nearest_index(n_in, n_out, scale=None, exact=False):
    """PyTorch's nearest source indices, computed in float32."""
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    j = np.arange(n_out)
    if exact:
        src = np.floor(((j + 0.5) * np.float64(s)).astype(np.float32))
    elif n_out == n_in:
        src = j
    elif n_out == 2 * n_in:
        src = j // 2
    else:
        src = np.floor(j.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


def np_linear_weights(n_in, n_out, align_corners, scale=None):
    """(i0, i1, w1) of linear interpolation in float64 (PyTorch's source coordinate)."""
    j = np.arange(n_out, dtype=np.float64)
    if n_in == n_out:
        return j.astype(np.int64), j.astype(np.int64), np.zeros(n_out)
    if align_corners:
        src = j * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = 1.0 / scale if scale else n_in / n_out
        src = np.maximum(s * (j + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0, 0, 1)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    return i0, i1, lam


def np_interpolate(x, size, mode, align_corners=False, scales=None):
    """Separable resampling of the spatial dims, last dim first."""
    k = x.ndim - 2
    scales = scales or [None] * k
    out = x
    for i in reversed(range(k)):
        d = 2 + i
        n_in, n_out = out.shape[d], size[i]
        if mode.startswith("nearest"):
            out = np.take(out, np_nearest_index(n_in, n_out, scales[i], mode == "nearest-exact"), axis=d)
        else:
            i0, i1, lam = np_linear_weights(n_in, n_out, align_corners, scales[i])
            shape = [1] * out.ndim
            shape[d] = n_out
            lam = lam.reshape(shape)
            out = np.take(out, i0, axis=d) * (1 - lam) + np.take(out, i1, axis=d) * lam
    return out


def np_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow))
    for ki in range(k[0]):
        for kj in range(k[1]):
            out[:, :, ki, kj] = xp[:, :, ki * d[0]:ki * d[0] + s[0] * (oh - 1) + 1:s[0],
                                   kj * d[1]:kj * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def np_fold(cols, size, k, d, p, s):
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    h, w = size
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    blocks = cols.reshape(n, c, k[0], k[1], oh, ow)
    out = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]))
    for ki in range(k[0]):
        for kj in range(k[1]):
            out[:, :, ki * d[0]:ki * d[0] + s[0] * (oh - 1) + 1:s[0],
                kj * d[1]:kj * d[1] + s[1] * (ow - 1) + 1:s[1]] += blocks[:, :, ki, kj]
    return out[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


# ---- the table: every function and option, with its gradcheck case --------------------------------------
def _f(L):
    return L.nn.functional


CASES = [
    Case("pad_constant", lambda L, x: _f(L).pad(x, (1, 2, 0, 1), value=0.5), (2, 2, 3, 3)),
    Case("pad_constant_negative", lambda L, x: _f(L).pad(x, (-1, 2, 1, -2)), (2, 2, 4, 3)),
    Case("pad_constant_3dims", lambda L, x: _f(L).pad(x, (1, 0, 0, 1, 1, 1)), (2, 2, 2, 2)),
    Case("pad_reflect_1d", lambda L, x: _f(L).pad(x, (2, 1), mode="reflect"), (2, 2, 4)),
    Case("pad_reflect_2d", lambda L, x: _f(L).pad(x, (1, 2, 2, -1), mode="reflect"), (2, 1, 4, 3)),
    Case("pad_reflect_unbatched", lambda L, x: _f(L).pad(x, (1, 1, 1, 1), mode="reflect"), (2, 3, 3)),
    Case("pad_replicate_2d", lambda L, x: _f(L).pad(x, (2, 1, 0, 3), mode="replicate"), (2, 1, 3, 3)),
    Case("pad_replicate_3d", lambda L, x: _f(L).pad(x, (1, 1, 1, 0, 0, 2), mode="replicate"),
         (2, 1, 2, 2, 2)),
    Case("pad_circular_2d", lambda L, x: _f(L).pad(x, (1, 3, -1, 2), mode="circular"), (2, 1, 3, 3)),
    Case("interp_nearest_1d", lambda L, x: _f(L).interpolate(x, scale_factor=2.5), (2, 2, 3)),
    Case("interp_nearest_2d", lambda L, x: _f(L).interpolate(x, size=(5, 2)), (2, 1, 3, 4)),
    Case("interp_nearest_exact", lambda L, x: _f(L).interpolate(x, size=(4, 5), mode="nearest-exact"),
         (2, 1, 3, 3)),
    Case("interp_nearest_3d", lambda L, x: _f(L).interpolate(x, scale_factor=(2, 1, 1.5)), (2, 1, 2, 2, 2)),
    Case("interp_linear", lambda L, x: _f(L).interpolate(x, size=7, mode="linear"), (2, 2, 4)),
    Case("interp_linear_align", lambda L, x: _f(L).interpolate(x, size=3, mode="linear",
                                                                  align_corners=True), (2, 2, 5)),
    Case("interp_bilinear", lambda L, x: _f(L).interpolate(x, scale_factor=(1.7, 2.2), mode="bilinear"),
         (2, 1, 3, 3)),
    Case("interp_bilinear_align", lambda L, x: _f(L).interpolate(x, size=(2, 5), mode="bilinear",
                                                                    align_corners=True), (2, 1, 4, 3)),
    Case("interp_bilinear_recompute", lambda L, x: _f(L).interpolate(
        x, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True), (2, 1, 3, 3)),
    Case("interp_trilinear", lambda L, x: _f(L).interpolate(x, size=(3, 2, 3), mode="trilinear"),
         (2, 1, 2, 2, 2)),
    Case("interp_area", lambda L, x: _f(L).interpolate(x, size=(2, 3), mode="area"), (2, 1, 4, 5)),
    Case("upsample_bilinear", lambda L, x: _f(L).upsample_bilinear(x, scale_factor=2), (2, 1, 2, 3)),
    Case("unfold", lambda L, x: _f(L).unfold(x, (2, 3), (2, 1), 1, (1, 2)), (2, 2, 4, 4)),
    Case("unfold_unbatched", lambda L, x: _f(L).unfold(x, 2), (2, 3, 3)),
    Case("fold", lambda L, x: _f(L).fold(x, (4, 5), (2, 2), 1, 1, (2, 1)), (2, 8, 18)),
    Case("fold_unbatched", lambda L, x: _f(L).fold(x, (3, 3), 2), (4, 4)),
    Case("pixel_shuffle", lambda L, x: _f(L).pixel_shuffle(x, 2), (2, 4, 2, 3)),
    Case("pixel_unshuffle", lambda L, x: _f(L).pixel_unshuffle(x, 2), (2, 1, 4, 2)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_grad_fn_names_match_torch():
    torch = torch_or_skip()
    calls = [
        lambda L, x: L.nn.functional.pad(x, (1, 1)),
        lambda L, x: L.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"),
        lambda L, x: L.nn.functional.pad(x, (1, 1, 0, 1), mode="replicate"),
        lambda L, x: L.nn.functional.interpolate(x, scale_factor=2),
        lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="nearest-exact"),
        lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
        lambda L, x: L.nn.functional.interpolate(x[:, :, 0], scale_factor=2, mode="linear"),
        lambda L, x: L.nn.functional.interpolate(x[:, :, 0], scale_factor=2),
        lambda L, x: L.nn.functional.unfold(x, 2),
        lambda L, x: L.nn.functional.fold(x.reshape(1, 4, 4), (3, 3), 2),
    ]
    for call in calls:
        names = [type(call(L, L.ones(1, 1, 4, 4, dtype=L.float64, requires_grad=True) * 1).grad_fn).__name__
                 for L in (tl, torch)]
        assert names[0] == names[1]


# ---- values against NumPy --------------------------------------------------------------------------
PADS = [((1, 2), "constant", 0.5), ((1, 2, 3, 0), "constant", -1.0), ((-1, 2, 1, -2), "constant", 0.0),
        ((2, 1, 1, 3), "reflect", None), ((3, -1, -2, 2), "reflect", None),
        ((2, 4, 1, 1), "replicate", None), ((-1, 2, 2, -2), "replicate", None),
        ((2, 3, 1, 4), "circular", None), ((-2, 1, 3, -1), "circular", None)]


@pytest.mark.parametrize("pad,mode,value", PADS)
def test_pad_matches_numpy(pad, mode, value, threads):
    x = r(2, 3, 5, 4)
    expect = np_pad(x, pad, mode, value or 0.0)
    for label, xt in make_noncontig(x):
        got = F.pad(xt, pad, mode, value) if mode == "constant" else F.pad(xt, pad, mode)
        np.testing.assert_array_equal(got.numpy(), expect, err_msg=label)


def test_pad_integer_and_bool_constant():
    x = np.arange(12).reshape(3, 4)
    got = F.pad(tl.tensor(x), (1, 1, 2, 0), value=7)
    assert got.dtype is tl.int64
    np.testing.assert_array_equal(got.numpy(), np.pad(x, [(2, 0), (1, 1)], constant_values=7))
    b = F.pad(tl.tensor(x > 5), (1, 0))
    assert b.dtype is tl.bool
    np.testing.assert_array_equal(b.numpy(), np.pad(x > 5, [(0, 0), (1, 0)]))


def test_pad_to_empty_and_big_crop():
    x = tl.tensor(r(1, 2, 3, 8))
    assert tuple(F.pad(x, (-4, -4)).shape) == (1, 2, 3, 0)
    assert tuple(F.pad(x, (-8, 2)).shape) == (1, 2, 3, 2)
    np.testing.assert_array_equal(F.pad(x, (-8, 2)).numpy(), np.zeros((1, 2, 3, 2)))


INTERP = [((7, 9), None, "nearest", None), (None, (2.5, 1.5), "nearest", None),
          ((4, 3), None, "nearest", None), ((6, 10), None, "nearest-exact", None),
          (None, (0.6, 1.3), "nearest-exact", None), ((7, 9), None, "bilinear", False),
          ((7, 9), None, "bilinear", True), (None, (1.7, 0.55), "bilinear", False),
          ((3, 3), None, "bilinear", True), ((1, 1), None, "bilinear", True)]


@pytest.mark.parametrize("size,scale,mode,ac", INTERP)
def test_interpolate_matches_numpy(size, scale, mode, ac, threads):
    x = r(2, 3, 5, 6)
    out = size or [math.floor(n * s) for n, s in zip(x.shape[2:], scale)]
    expect = np_interpolate(x, out, mode, ac, list(scale) if scale else None)
    for label, xt in make_noncontig(x):
        got = F.interpolate(xt, size, scale, mode, ac)
        np.testing.assert_allclose(got.numpy(), expect, rtol=1e-12, atol=1e-12, err_msg=label)


def test_interpolate_float32_matches_torch_bits():
    """Index maps and weights are computed in float32 for float32 inputs, as PyTorch does."""
    torch = torch_or_skip()
    x = r(2, 3, 13, 11).astype(np.float32)
    for kw in [dict(scale_factor=1.37), dict(size=(29, 5)), dict(scale_factor=0.31),
               dict(scale_factor=2.1, mode="nearest-exact"), dict(size=(17, 23), mode="bilinear"),
               dict(scale_factor=1.9, mode="bilinear", align_corners=True),
               dict(scale_factor=0.77, mode="bilinear")]:
        got = F.interpolate(tl.tensor(x), **kw).numpy()
        exp = torch.nn.functional.interpolate(torch.tensor(x), **kw).numpy()
        assert got.shape == exp.shape
        if kw.get("mode", "nearest").startswith("nearest"):
            np.testing.assert_array_equal(got, exp)
        else:
            np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)


def test_interpolate_1d_3d_and_area():
    x1 = r(2, 3, 7)
    np.testing.assert_allclose(F.interpolate(tl.tensor(x1), size=12, mode="linear").numpy(),
                               np_interpolate(x1, [12], "linear"), rtol=1e-12)
    x3 = r(1, 2, 3, 4, 5)
    np.testing.assert_allclose(F.interpolate(tl.tensor(x3), size=(5, 3, 7), mode="trilinear").numpy(),
                               np_interpolate(x3, [5, 3, 7], "trilinear"), rtol=1e-12)
    np.testing.assert_array_equal(F.interpolate(tl.tensor(x3), scale_factor=2).numpy(),
                                  np_interpolate(x3, [6, 8, 10], "nearest"))
    x = r(2, 3, 8, 9)
    area = F.interpolate(tl.tensor(x), size=(4, 3), mode="area").numpy()
    np.testing.assert_allclose(area, x.reshape(2, 3, 4, 2, 3, 3).mean(axis=(3, 5)), rtol=1e-12)


@pytest.mark.parametrize("k,d,p,s", [((2, 2), (1, 1), (0, 0), (1, 1)), ((3, 2), (2, 1), (1, 2), (2, 1)),
                                     ((1, 3), (1, 2), (0, 1), (1, 3))])
def test_unfold_fold_match_numpy(k, d, p, s, threads):
    x = r(2, 3, 7, 8)
    expect = np_unfold(x, k, d, p, s)
    for label, xt in make_noncontig(x):
        np.testing.assert_array_equal(F.unfold(xt, k, d, p, s).numpy(), expect, err_msg=label)
    cols = r(*expect.shape)
    for label, ct in make_noncontig(cols):
        np.testing.assert_allclose(F.fold(ct, (7, 8), k, d, p, s).numpy(), np_fold(cols, (7, 8), k, d, p, s),
                                   rtol=1e-12, atol=1e-12, err_msg=label)
    x32 = tl.tensor(x, dtype=tl.float32)
    assert F.unfold(x32, k, d, p, s).dtype is tl.float32


def test_pixel_shuffle_round_trip():
    x = tl.tensor(r(2, 3, 8, 6))
    y = F.pixel_unshuffle(x, 2)
    assert tuple(y.shape) == (2, 12, 4, 3)
    np.testing.assert_array_equal(F.pixel_shuffle(y, 2).numpy(), x.numpy())
    a = r(2, 8, 3, 2)
    expect = a.reshape(2, 2, 2, 2, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 4)
    np.testing.assert_array_equal(F.pixel_shuffle(tl.tensor(a), 2).numpy(), expect)


@pytest.mark.parametrize("fn", [
    lambda x: F.pad(x, (3, 2, 1, 4), mode="reflect"),
    lambda x: F.interpolate(x, scale_factor=2.3, mode="bilinear"),
    lambda x: F.interpolate(x, size=(9, 50), mode="nearest"),
    lambda x: F.fold(F.unfold(x, 3, padding=1), x.shape[2:], 3, padding=1),
])
def test_results_independent_of_thread_count(fn):
    x = r(2, 3, 30, 40).astype(np.float32)
    results, g = [], None
    old = tl.get_num_threads()
    try:
        for nt in (1, 2):
            tl.set_num_threads(nt)
            xt = tl.tensor(x, requires_grad=True)
            y = fn(xt)
            if g is None:
                g = r(*y.shape).astype(np.float32)
            y.backward(tl.tensor(g))
            results.append((y.detach().numpy(), xt.grad.numpy()))
    finally:
        tl.set_num_threads(old)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_interpolate_sizes(data):
    h, w = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    oh, ow = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    mode = data.draw(st.sampled_from(["nearest", "bilinear", "nearest-exact"]))
    ac = data.draw(st.booleans()) if mode == "bilinear" else None
    x = r(1, 2, h, w)
    got = F.interpolate(tl.tensor(x), size=(oh, ow), mode=mode, align_corners=ac)
    np.testing.assert_allclose(got.numpy(), np_interpolate(x, [oh, ow], mode, bool(ac)), rtol=1e-12,
                               atol=1e-12)


# ---- errors: PyTorch's types and messages ------------------------------------------------------------
ERRORS = [
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (1, 2, 3)), RuntimeError,
     "Padding length must be divisible by 2"),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (1,) * 10), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding "
     "length 10 and input of dimension 4"),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (1, 1), mode="foo"), NotImplementedError,
     "Unrecognised padding mode foo"),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (1, 1, 1, 1), mode="reflect", value=1.0),
     RuntimeError, 'Padding mode "reflect" doesn\'t take in value argument'),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (9, 1, 1, 1), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (8, 1, 1, 1), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: "
     "padding (8, 1) at dimension 3 of input [1, 3, 8, 8]"),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 8, 8), (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 4D input tensor."),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 0, 8), (1, 1, 1, 1), mode="replicate"), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
     "for input, but got: [1, 3, 0, 8]"),
    (lambda L: L.nn.functional.pad(L.zeros(1, 3, 4, 8), (1.5, 1)), TypeError,
     "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type float at pos 0"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=4, scale_factor=2), ValueError,
     "only one of size or scale_factor should be defined"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8)), ValueError,
     "either size or scale_factor should be defined"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=(4,)), ValueError,
     "Input and output must have the same number of spatial dimensions"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=4, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
     "trilinear"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=4, mode="bilinear",
                                           recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful with an explicit size."),
    (lambda L: L.nn.functional.interpolate(L.zeros(3, 8, 8), size=4, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=4, mode="linear"),
     NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), size=4, mode="foo"),
     NotImplementedError, "(got foo)"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), scale_factor=(2, 3, 4)), ValueError,
     "Input and scale_factor must have the same number of spatial dimensions"),
    (lambda L: L.nn.functional.interpolate(L.zeros(1, 3, 8, 8), scale_factor=0.1, mode="bilinear"),
     RuntimeError, "Input and output sizes should be greater than 0, but got input (H: 8, W: 8) "
     "output (H: 0, W: 0)"),
    (lambda L: L.nn.functional.unfold(L.zeros(1, 3, 8, 8), 9), RuntimeError,
     "Given input with spatial size (8, 8), kernel_size=(9, 9), dilation=(1, 1), padding=(0, 0), "
     "calculated shape of the array of sliding blocks as (0, 0), but its components must be at least one."),
    (lambda L: L.nn.functional.fold(L.zeros(1, 12, 48), (8, 8), 2), RuntimeError,
     "Given output_size=(8, 8), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), "
     "expected size of input's dimension 2 to match the calculated number of sliding blocks 7 * 7 = 49, "
     "but got input.size(2)=48."),
    (lambda L: L.nn.functional.fold(L.zeros(1, 13, 49), (8, 8), 2), RuntimeError,
     "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
     "input.size(1)=13 and kernel_size=(2, 2)."),
    (lambda L: L.nn.functional.fold(L.zeros(1, 12, 49, 1), (8, 8), 2), RuntimeError,
     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
     "dimensions for input, but got: [1, 12, 49, 1]"),
    (lambda L: L.nn.functional.pixel_shuffle(L.zeros(1, 3, 8, 8), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
     "upscale_factor, but input.size(-3)=3 is not divisible by 4"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    fn, exc, msg = ERRORS[i]
    with pytest.raises(exc) as ours:
        fn(tl)
    assert msg in str(ours.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as theirs:
        fn(torch)
    assert msg in str(theirs.value)


# ---- modules ------------------------------------------------------------------------------------------
MODULES = [
    ("Upsample", (), dict(scale_factor=2), (2, 3, 4, 5)),
    ("Upsample", (), dict(size=(7, 3), mode="bilinear", align_corners=False), (2, 3, 4, 5)),
    ("Upsample", (), dict(scale_factor=(1.5, 2.0), mode="nearest-exact"), (2, 3, 4, 5)),
    ("Upsample", (), dict(size=9, mode="linear"), (2, 3, 4)),
    ("UpsamplingNearest2d", (), dict(scale_factor=3), (2, 3, 4, 5)),
    ("UpsamplingBilinear2d", (), dict(size=(6, 7)), (2, 3, 4, 5)),
    ("Fold", ((4, 5), 2), dict(padding=1), (2, 12, 30)),
    ("Unfold", ((2, 3),), dict(dilation=2, stride=(1, 2)), (2, 3, 7, 8)),
    ("ZeroPad1d", ((1, 2),), {}, (2, 3, 4)),
    ("ZeroPad2d", (2,), {}, (2, 3, 4, 5)),
    ("ZeroPad2d", ((1, 0, -1, 2),), {}, (2, 3, 4, 5)),
    ("ConstantPad1d", (2, 3.5), {}, (2, 3, 4)),
    ("ConstantPad2d", ((1, 2, 0, 1), -1.0), {}, (2, 3, 4, 5)),
    ("ConstantPad3d", (1, 2.0), {}, (2, 1, 3, 4, 5)),
    ("ReflectionPad1d", (2,), {}, (2, 3, 4)),
    ("ReflectionPad2d", ((1, 2, 3, 0),), {}, (2, 3, 4, 5)),
    ("ReflectionPad3d", (1,), {}, (1, 2, 3, 4, 5)),
    ("ReplicationPad1d", ((3, 1),), {}, (2, 3, 4)),
    ("ReplicationPad2d", (2,), {}, (2, 3, 4, 5)),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),), {}, (1, 2, 3, 4, 5)),
    ("CircularPad1d", (2,), {}, (2, 3, 4)),
    ("CircularPad2d", ((1, 2, 3, 0),), {}, (2, 3, 4, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_module_repr_and_forward_match_torch(name, args, kw, shape):
    torch = torch_or_skip()
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    x = r(*shape)
    np.testing.assert_allclose(ours(tl.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-12,
                               atol=1e-12)


def test_unfold_rank_error():
    # PyTorch's Python wrapper fails with an IndexError before its own check; ours is the check
    with pytest.raises(RuntimeError, match=r"Only 3D or 4D input Tensors are supported \(got 2D\)"):
        F.unfold(tl.zeros(8, 8), 2)


def test_circular_pad_module_checks_rank():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.CircularPad1d(1)(tl.zeros(1, 2, 3, 4))
