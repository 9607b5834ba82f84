"""Pooling (torchlite/nn/functional/pooling.py, pooling_grad.py, torchlite/_core/pool.pyx and the
pooling modules): values and indices against NumPy references written here (explicit loops over
each window, with PyTorch's rules for ceil_mode, padding, divisors, ties and NaN), PyTorch as a
second oracle (values, gradients, messages, reprs), gradcheck / gradgradcheck in float64 over
non-contiguous layouts in one table, thread counts 1 and 2, integer and half inputs."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from helpers import Case, case_table_tests, make_noncontig, torch_or_skip

_rng = np.random.default_rng(7)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- NumPy references (2-d form: a 1-d input is a plane of height 1) ---------------------------------
def _out(size, k, s, p, d, ceil):
    n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (n - 1) * s >= size + p:
        n -= 1
    return n


def np_max_pool2d(x, k, s, p, d, ceil=False):
    """(values, indices): the first maximum of each window in row-major order; a NaN wins and
    a later NaN replaces an earlier one (PyTorch's rule)."""
    n, c, h, w = x.shape
    oh, ow = _out(h, k[0], s[0], p[0], d[0], ceil), _out(w, k[1], s[1], p[1], d[1], ceil)
    vals, idx = np.empty((n, c, oh, ow), x.dtype), np.empty((n, c, oh, ow), np.int64)
    for b, ch, i, j in np.ndindex(n, c, oh, ow):
        best, pos = None, None
        for ki in range(k[0]):
            for kj in range(k[1]):
                ih, iw = i * s[0] - p[0] + ki * d[0], j * s[1] - p[1] + kj * d[1]
                if 0 <= ih < h and 0 <= iw < w:
                    v = x[b, ch, ih, iw]
                    if best is None or v > best or v != v:
                        best, pos = v, ih * w + iw
        vals[b, ch, i, j], idx[b, ch, i, j] = best, pos
    return vals, idx


def np_avg_pool2d(x, k, s, p, ceil=False, count_include_pad=True, divisor=None):
    n, c, h, w = x.shape
    oh, ow = _out(h, k[0], s[0], p[0], 1, ceil), _out(w, k[1], s[1], p[1], 1, ceil)
    out = np.empty((n, c, oh, ow))
    for i, j in np.ndindex(oh, ow):
        h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
        h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
        pool = (h1 - h0) * (w1 - w0)
        h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
        total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
        div = divisor or (pool if count_include_pad else (h1 - h0) * (w1 - w0))
        out[:, :, i, j] = total / div
    return out


def _adaptive_windows(size, n):
    return [(i * size // n, -(-(i + 1) * size // n)) for i in range(n)]


def np_adaptive_avg(x, oh, ow):
    out = np.empty(x.shape[:2] + (oh, ow))
    for i, (a, b) in enumerate(_adaptive_windows(x.shape[2], oh)):
        for j, (c, d) in enumerate(_adaptive_windows(x.shape[3], ow)):
            out[:, :, i, j] = x[:, :, a:b, c:d].mean(axis=(2, 3))
    return out


def np_adaptive_max(x, oh, ow):
    vals, idx = np.empty(x.shape[:2] + (oh, ow), x.dtype), np.empty(x.shape[:2] + (oh, ow), np.int64)
    w = x.shape[3]
    for i, (a, b) in enumerate(_adaptive_windows(x.shape[2], oh)):
        for j, (c, d) in enumerate(_adaptive_windows(x.shape[3], ow)):
            for bb, ch in np.ndindex(*x.shape[:2]):
                best, pos = None, None
                for ih in range(a, b):
                    for iw in range(c, d):
                        v = x[bb, ch, ih, iw]
                        if best is None or v > best or v != v:
                            best, pos = v, ih * w + iw
                vals[bb, ch, i, j], idx[bb, ch, i, j] = best, pos
    return vals, idx


def _as2d(x):
    return x[:, :, None, :]


# ---- the table: every function and option, with its gradcheck case -------------------------------------
def _f(L):
    return L.nn.functional


CASES = [
    Case("max_pool1d", lambda L, x: _f(L).max_pool1d(x, 2), (2, 2, 6)),
    Case("max_pool1d_pad_dil_ceil", lambda L, x: _f(L).max_pool1d(x, 3, 2, 1, 2, True), (2, 2, 7)),
    Case("max_pool1d_unbatched", lambda L, x: _f(L).max_pool1d(x, 2, 1), (2, 5)),
    Case("max_pool1d_with_indices", lambda L, x: _f(L).max_pool1d(x, 3, 2, return_indices=True),
         (2, 2, 7)),
    Case("max_pool2d", lambda L, x: _f(L).max_pool2d(x, 2), (2, 2, 4, 4)),
    Case("max_pool2d_stride_pad", lambda L, x: _f(L).max_pool2d(x, (3, 2), (2, 1), (1, 1)),
         (2, 1, 5, 4)),
    Case("max_pool2d_dilation_ceil", lambda L, x: _f(L).max_pool2d(x, 2, 2, 1, 2, True),
         (2, 1, 5, 5)),
    Case("max_pool2d_unbatched", lambda L, x: _f(L).max_pool2d(x, 2, 1), (2, 3, 3)),
    Case("max_pool2d_with_indices", lambda L, x: _f(L).max_pool2d_with_indices(x, 2, 1), (2, 1, 3, 4)),
    Case("avg_pool1d", lambda L, x: _f(L).avg_pool1d(x, 3, 2, 1), (2, 2, 7)),
    Case("avg_pool1d_ceil_nopad_count", lambda L, x: _f(L).avg_pool1d(x, 3, 2, 1, True, False),
         (2, 2, 6)),
    Case("avg_pool2d", lambda L, x: _f(L).avg_pool2d(x, 2), (2, 2, 4, 4)),
    Case("avg_pool2d_pad_ceil", lambda L, x: _f(L).avg_pool2d(x, 3, 2, 1, True), (2, 1, 6, 5)),
    Case("avg_pool2d_exclude_pad", lambda L, x: _f(L).avg_pool2d(x, (3, 2), (2, 1), (1, 1),
                                                                   count_include_pad=False),
         (2, 1, 5, 4)),
    Case("avg_pool2d_divisor", lambda L, x: _f(L).avg_pool2d(x, 2, 1, 1, divisor_override=3),
         (2, 1, 3, 3)),
    Case("avg_pool2d_unbatched", lambda L, x: _f(L).avg_pool2d(x, 2), (2, 4, 4)),
    Case("adaptive_avg_pool1d", lambda L, x: _f(L).adaptive_avg_pool1d(x, 3), (2, 2, 7)),
    Case("adaptive_avg_pool2d", lambda L, x: _f(L).adaptive_avg_pool2d(x, (2, 3)), (2, 1, 5, 4)),
    Case("adaptive_avg_pool2d_upsizing", lambda L, x: _f(L).adaptive_avg_pool2d(x, (4, 3)),
         (2, 1, 3, 2)),
    Case("adaptive_avg_pool2d_none", lambda L, x: _f(L).adaptive_avg_pool2d(x, (2, None)),
         (2, 4, 3)),
    Case("adaptive_max_pool1d", lambda L, x: _f(L).adaptive_max_pool1d(x, 3), (2, 2, 7)),
    Case("adaptive_max_pool2d", lambda L, x: _f(L).adaptive_max_pool2d(x, (2, 3)), (2, 1, 5, 4)),
    Case("adaptive_max_pool2d_indices", lambda L, x: _f(L).adaptive_max_pool2d(
        x, 2, return_indices=True), (2, 1, 4, 4)),
    Case("max_unpool1d", lambda L, x: _f(L).max_unpool1d(
        *_f(L).max_pool1d(x, 2, return_indices=True), 2), (2, 2, 6)),
    Case("max_unpool2d", lambda L, x: _f(L).max_unpool2d(
        *_f(L).max_pool2d(x, 2, return_indices=True), 2, output_size=(5, 5)), (2, 1, 5, 5)),
    Case("lp_pool1d", lambda L, x: _f(L).lp_pool1d(x.abs() + 0.5, 2, 2), (2, 2, 6)),
    Case("lp_pool2d", lambda L, x: _f(L).lp_pool2d(x.abs() + 0.5, 3, 2, ceil_mode=True), (2, 1, 5, 5)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_grad_fn_names():
    x = tl.randn(1, 2, 6, 6, requires_grad=True)
    names = {
        "MaxPool2DWithIndicesBackward0": F.max_pool2d(x, 2),
        "AvgPool2DBackward0": F.avg_pool2d(x, 2),
        "AdaptiveAvgPool2DBackward0": F.adaptive_avg_pool2d(x, 3),
        "AdaptiveMaxPool2DBackward0": F.adaptive_max_pool2d(x, 3),
    }
    for name, y in names.items():
        assert type(y.grad_fn).__name__ == name
    g = tl.ones(1, 2, 3, 3, requires_grad=True)
    (gx,) = tl.autograd.grad(F.max_pool2d(x, 2), x, g, create_graph=True)
    assert type(gx.grad_fn).__name__ == "MaxPool2DWithIndicesBackwardBackward0"
    (gx,) = tl.autograd.grad(F.avg_pool2d(x, 2), x, g, create_graph=True)
    assert type(gx.grad_fn).__name__ == "AvgPool2DBackwardBackward0"


# ---- values against NumPy ----------------------------------------------------------------------------
MAX_CASES = [((3, 3), (2, 2), (1, 1), (1, 1), False), ((2, 3), (1, 2), (0, 1), (2, 1), True),
             ((3, 2), (3, 1), (1, 0), (1, 2), True), ((4, 4), (4, 4), (2, 2), (1, 1), False)]


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_CASES)
def test_max_pool2d_matches_numpy(k, s, p, d, ceil, threads):
    x = r(2, 3, 9, 10)
    vals, idx = np_max_pool2d(x, k, s, p, d, ceil)
    for label, xt in make_noncontig(x):
        got, gi = F.max_pool2d(xt, k, s, p, d, ceil, return_indices=True)
        np.testing.assert_array_equal(got.numpy(), vals, err_msg=label)
        np.testing.assert_array_equal(gi.numpy(), idx, err_msg=label)
        assert gi.dtype is tl.int64


def test_max_pool1d_matches_numpy():
    x = r(2, 3, 11)
    vals, idx = np_max_pool2d(_as2d(x), (1, 3), (1, 2), (0, 1), (1, 2), True)
    got, gi = F.max_pool1d(tl.tensor(x), 3, 2, 1, 2, True, True)
    np.testing.assert_array_equal(got.numpy(), vals[:, :, 0])
    np.testing.assert_array_equal(gi.numpy(), idx[:, :, 0])


def test_max_pool_ties_nan_and_inf():
    """Ties: the first maximum in row-major window order; NaN wins; all -inf windows keep
    their first position (PyTorch's rules)."""
    x = np.array([[[[1., 3., 3., 0.], [3., np.nan, np.nan, 2.], [0., 0., 0., 0.],
                    [-np.inf, -np.inf, 5., 5.]]]])
    for k, s in [(2, 1), (2, 2), (3, 1)]:
        vals, idx = np_max_pool2d(x, (k, k), (s, s), (0, 0), (1, 1))
        got, gi = F.max_pool2d(tl.tensor(x), k, s, return_indices=True)
        np.testing.assert_array_equal(got.numpy(), vals)
        np.testing.assert_array_equal(gi.numpy(), idx)
        torch = pytest.importorskip("torch")
        tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, return_indices=True)
        np.testing.assert_array_equal(gi.numpy(), ti.numpy())
    y = F.max_pool2d(tl.full((1, 1, 2, 2), -math.inf), 2, return_indices=True)
    assert y[0].item() == -math.inf and y[1].item() == 0


@pytest.mark.parametrize("dtype", [tl.int64, tl.int32, tl.int16, tl.int8, tl.uint8])
def test_max_pool_integer_inputs(dtype):
    x = _rng.integers(0, 100, (2, 3, 7, 6))
    vals, idx = np_max_pool2d(x, (3, 2), (2, 2), (1, 0), (1, 1), True)
    got, gi = F.max_pool2d(tl.tensor(x).to(dtype), (3, 2), 2, (1, 0), ceil_mode=True,
                           return_indices=True)
    assert got.dtype is dtype
    np.testing.assert_array_equal(got.numpy(), vals)
    np.testing.assert_array_equal(gi.numpy(), idx)
    a, ai = F.adaptive_max_pool2d(tl.tensor(x).to(dtype), (2, 4), return_indices=True)
    av, aidx = np_adaptive_max(x, 2, 4)
    np.testing.assert_array_equal(a.numpy(), av)
    np.testing.assert_array_equal(ai.numpy(), aidx)


AVG_CASES = [((3, 3), (2, 2), (1, 1), False, True, None), ((3, 2), (2, 1), (1, 1), True, False, None),
             ((2, 2), (1, 1), (1, 0), True, True, 3), ((4, 3), (3, 3), (2, 1), True, False, None),
             ((2, 2), (2, 2), (0, 0), False, True, None)]


@pytest.mark.parametrize("k,s,p,ceil,cip,div", AVG_CASES)
def test_avg_pool2d_matches_numpy(k, s, p, ceil, cip, div, threads):
    x = r(2, 3, 9, 10)
    expect = np_avg_pool2d(x, k, s, p, ceil, cip, div)
    for label, xt in make_noncontig(x):
        got = F.avg_pool2d(xt, k, s, p, ceil, cip, div)
        np.testing.assert_allclose(got.numpy(), expect, rtol=1e-12, atol=1e-12, err_msg=label)
    got32 = F.avg_pool2d(tl.tensor(x, dtype=tl.float32), k, s, p, ceil, cip, div)
    np.testing.assert_allclose(got32.numpy(), expect, rtol=1e-5, atol=1e-5)


def test_avg_pool1d_matches_numpy():
    x = r(2, 3, 11)
    expect = np_avg_pool2d(_as2d(x), (1, 4), (1, 3), (0, 2), True, False)[:, :, 0]
    np.testing.assert_allclose(F.avg_pool1d(tl.tensor(x), 4, 3, 2, True, False).numpy(), expect,
                               rtol=1e-12)


@pytest.mark.parametrize("size,out", [((9, 10), (4, 3)), ((5, 5), (5, 5)), ((3, 4), (7, 9)),
                                      ((8, 8), (1, 1))])
def test_adaptive_pools_match_numpy(size, out, threads):
    x = r(2, 3, *size)
    for label, xt in make_noncontig(x):
        np.testing.assert_allclose(F.adaptive_avg_pool2d(xt, out).numpy(), np_adaptive_avg(x, *out),
                                   rtol=1e-12, atol=1e-12, err_msg=label)
        vals, idx = np_adaptive_max(x, *out)
        got, gi = F.adaptive_max_pool2d(xt, out, return_indices=True)
        np.testing.assert_array_equal(got.numpy(), vals)
        np.testing.assert_array_equal(gi.numpy(), idx)
    x1 = r(2, 3, size[1])
    np.testing.assert_allclose(F.adaptive_avg_pool1d(tl.tensor(x1), out[1]).numpy(),
                               np_adaptive_avg(_as2d(x1), 1, out[1])[:, :, 0], rtol=1e-12)


def test_max_unpool_inverts_max_pool():
    x = r(2, 3, 8, 6)
    y, i = F.max_pool2d(tl.tensor(x), 2, return_indices=True)
    up = F.max_unpool2d(y, i, 2).numpy()
    expect = np.zeros_like(x)
    flat = expect.reshape(2, 3, -1)
    flat[np.arange(2)[:, None, None], np.arange(3)[None, :, None], i.numpy().reshape(2, 3, -1)] = \
        y.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(up, expect)
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(y, i + 1000, 2)
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(y, i - 1000, 2)


@pytest.mark.parametrize("dtype,tol", [(tl.float16, 1e-3), (tl.bfloat16, 1e-2)])
def test_half_precision(dtype, tol):
    x = tl.tensor(r(2, 3, 8, 8)).to(dtype)
    xd = x.double().numpy()
    got, gi = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert got.dtype is dtype
    vals, idx = np_max_pool2d(xd, (3, 3), (2, 2), (1, 1), (1, 1))
    np.testing.assert_array_equal(got.double().numpy(), vals)
    np.testing.assert_array_equal(gi.numpy(), idx)
    a = F.avg_pool2d(x, 2)
    assert a.dtype is dtype
    np.testing.assert_allclose(a.double().numpy(), np_avg_pool2d(xd, (2, 2), (2, 2), (0, 0)),
                               rtol=tol, atol=tol)
    assert F.adaptive_avg_pool2d(x, 3).dtype is dtype


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, 2, 1),
    lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    lambda x: F.adaptive_avg_pool2d(x, (5, 7)),
    lambda x: F.adaptive_max_pool2d(x, (5, 7)),
])
def test_results_independent_of_thread_count(fn):
    x = r(8, 16, 20, 21).astype(np.float32)
    g = None
    results = []
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


def test_matches_torch_float32(threads):
    torch = torch_or_skip()
    x = r(4, 8, 14, 15)
    for name, kw in [("max_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                     ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                     ("adaptive_avg_pool2d", dict(output_size=(4, 6))),
                     ("adaptive_max_pool2d", dict(output_size=(4, 6)))]:
        outs = {}
        for L in (tl, torch):
            xt = L.tensor(x, dtype=L.float32, requires_grad=True)
            y = getattr(L.nn.functional, name)(xt, **kw)
            (y * y).sum().backward()
            outs[L] = (y.detach().numpy(), xt.grad.numpy())
        for a, e in zip(outs[tl], outs[torch]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5, err_msg=name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_random_windows(data):
    k = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    s = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    p = (data.draw(st.integers(0, k[0] // 2)), data.draw(st.integers(0, k[1] // 2)))
    ceil = data.draw(st.booleans())
    h, w = data.draw(st.integers(k[0], 10)), data.draw(st.integers(k[1], 10))
    x = r(2, 2, h, w)
    layout = data.draw(st.sampled_from(["contiguous", "transposed", "stepped", "offset"]))
    xt = dict(make_noncontig(x))[layout]
    vals, idx = np_max_pool2d(x, k, s, p, (1, 1), ceil)
    got, gi = F.max_pool2d(xt, k, s, p, 1, ceil, True)
    np.testing.assert_array_equal(got.numpy(), vals)
    np.testing.assert_array_equal(gi.numpy(), idx)
    cip = data.draw(st.booleans())
    np.testing.assert_allclose(F.avg_pool2d(xt, k, s, p, ceil, cip).numpy(),
                               np_avg_pool2d(x, k, s, p, ceil, cip), rtol=1e-12, atol=1e-12)


def test_empty_batch_and_zero_output():
    assert tuple(F.max_pool2d(tl.zeros(0, 3, 8, 8), 2).shape) == (0, 3, 4, 4)
    assert tuple(F.avg_pool2d(tl.zeros(0, 3, 8, 8), 2).shape) == (0, 3, 4, 4)
    assert tuple(F.adaptive_avg_pool2d(tl.zeros(1, 3, 8, 8), 0).shape) == (1, 3, 0, 0)
    x = tl.zeros(0, 2, 4, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert tuple(x.grad.shape) == (0, 2, 4, 4)


# ---- errors: PyTorch's types and messages ---------------------------------------------------------------
ERRORS = [
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 3, stride=0), RuntimeError,
     "stride should not be zero"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 3, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 2, 2), 3), RuntimeError,
     "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 0, 8, 8), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 8, 8]"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 2, (2, 2, 2)), RuntimeError,
     "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 2, 2, 0, (1, 1, 1)), RuntimeError,
     "max_pool2d: dilation must be either a single int, or a tuple of two ints"),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 3, 8, 8), 2.0), TypeError,
     "must be tuple of ints, not float"),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(1, 3, 8), (2, 2)), RuntimeError,
     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2"),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(1, 3, 8), 0), RuntimeError,
     "max_pool1d() kernel_size must be greater than zero, but got 0"),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(1, 3, 8), 3, padding=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3"),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(1, 3, 2), 3), RuntimeError,
     "max_pool1d() Invalid computed output size: 0"),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(8), 3), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[8]"),
    (lambda L: L.nn.functional.avg_pool2d(L.zeros(1, 3, 8, 8), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size"),
    (lambda L: L.nn.functional.avg_pool2d(L.zeros(1, 3, 8, 8), 3, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    (lambda L: L.nn.functional.avg_pool2d(L.zeros(1, 3, 1, 1), 2), RuntimeError,
     "Given input size: (3x1x1). Calculated output size: (3x0x0). Output size is too small"),
    (lambda L: L.nn.functional.avg_pool1d(L.zeros(8), 3), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking "
     "arguments for avg_pool1d)"),
    (lambda L: L.nn.functional.avg_pool1d(L.zeros(1, 3, 8), 2, 0), RuntimeError,
     "stride should not be zero"),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(1, 3, 8, 8), (2, 2, 2)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(8, 8), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [8, 8]"),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(1, 3, 8, 8), -1), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, -1}"),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(1, 3, 0, 4), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input "
     "has sizes [1, 3, 0, 4] with dimension 2 being empty"),
    (lambda L: L.nn.functional.adaptive_avg_pool1d(L.zeros(1, 3, 8), (2, 2)), RuntimeError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
    (lambda L: L.nn.functional.adaptive_max_pool2d(L.zeros(1, 3, 0, 8), 2), RuntimeError,
     "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions"),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(1, 3, 8, 8, dtype=L.int64), 2),
     (RuntimeError, NotImplementedError), "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 3, 4, 4), L.zeros(1, 3, 4, 4, dtype=L.int64), 2,
                                            output_size=(20, 20)),
     ValueError, 'invalid output_size "(20, 20)" (dim 0 must be between 6 and 10)'),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 3, 4, 4),
                                            L.zeros(1, 3, 4, 4, dtype=L.int64) + 100, 2),
     RuntimeError, "invalid max index"),
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
    ("MaxPool1d", (3,), dict(stride=2, padding=1, dilation=2, ceil_mode=True)),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", ((3, 2),), dict(stride=(2, 1), padding=1, return_indices=True)),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, count_include_pad=False)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True, divisor_override=4)),
    ("AdaptiveAvgPool1d", (4,), {}),
    ("AdaptiveAvgPool2d", ((3, None),), {}),
    ("AdaptiveMaxPool1d", (4,), {}),
    ("AdaptiveMaxPool2d", (3,), dict(return_indices=True)),
    ("LPPool1d", (2, 3), dict(stride=2)),
    ("LPPool2d", (1.5, 2), dict(ceil_mode=True)),
]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_module_repr_and_forward_match_torch(name, args, kw):
    torch = torch_or_skip()
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    shape = (2, 3, 11) if name.endswith("1d") else (2, 3, 9, 8)
    x = np.abs(r(*shape)) + 0.1
    got, exp = ours(tl.tensor(x)), theirs(torch.tensor(x))
    if isinstance(exp, tuple):
        np.testing.assert_array_equal(got[1].numpy(), exp[1].numpy())
        got, exp = got[0], exp[0]
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-12, atol=1e-12)


def test_max_unpool_modules_match_torch():
    torch = torch_or_skip()
    for nd, name in [(1, "MaxUnpool1d"), (2, "MaxUnpool2d")]:
        assert repr(getattr(nn, name)(2)) == repr(getattr(torch.nn, name)(2))
        x = r(2, 3, *(8,) * nd)
        pool = "max_pool1d" if nd == 1 else "max_pool2d"
        y, i = getattr(F, pool)(tl.tensor(x), 2, return_indices=True)
        ty, ti = getattr(torch.nn.functional, pool)(torch.tensor(x), 2, return_indices=True)
        np.testing.assert_array_equal(getattr(nn, name)(2)(y, i).numpy(),
                                      getattr(torch.nn, name)(2)(ty, ti).numpy())


def _np_int_avg_pool2d(x, k, s, p, count_include_pad, divisor):
    """NumPy oracle: each window's integer sum over the zero-padded input, divided by the
    divisor (divisor_override, else the window's size with or without the padding), truncated
    toward zero."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    real = np.pad(np.ones((h, w), dtype=np.int64), p)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            d = divisor or (k * k if count_include_pad else real[i * s:i * s + k, j * s:j * s + k].sum())
            out[:, :, i, j] = np.trunc(win.sum((2, 3)) / d).astype(np.int64)
    return out


@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 3, -2])
def test_int64_average_pooling_truncates_like_pytorch(k, s, p, count_include_pad, divisor):
    """avg_pool1d/2d/3d on int64 (the one integer dtype PyTorch pools): integer sums divided
    and truncated toward zero, against a NumPy loop, and against PyTorch where installed;
    other integer dtypes raise NotImplementedError as in PyTorch."""
    x = np.random.default_rng(k + s + p).integers(-40, 40, (2, 3, 6, 7))
    got = F.avg_pool2d(tl.tensor(x), k, s, p, False, count_include_pad, divisor)
    assert got.dtype is tl.int64
    np.testing.assert_array_equal(got.numpy(), _np_int_avg_pool2d(x, k, s, p, count_include_pad, divisor))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        F.avg_pool2d(tl.tensor(x).int(), k, s, p)
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    for ours, theirs, xs in (
            (F.avg_pool1d, tf.avg_pool1d, x[:, :, 0]),
            (F.avg_pool3d, tf.avg_pool3d, x[:, :, None, :, :].repeat(3, 2))):
        kw = dict(count_include_pad=count_include_pad)
        if ours is F.avg_pool3d:
            kw["divisor_override"] = divisor
        for ceil_mode in (False, True):
            np.testing.assert_array_equal(ours(tl.tensor(xs), k, s, p, ceil_mode, **kw).numpy(),
                                          theirs(torch.tensor(xs), k, s, p, ceil_mode, **kw).numpy())


def test_with_indices_forms_return_both_whatever_the_flag():
    # PyTorch's *_with_indices functions default return_indices to False and return
    # (values, indices) either way; torchlite's signatures and results agree
    import inspect
    x = tl.randn(1, 2, 4, 6)
    for fn, args in ((F.max_pool1d_with_indices, (x[0], 2)), (F.max_pool2d_with_indices, (x, 2)),
                     (F.adaptive_max_pool1d_with_indices, (x[0], 3)),
                     (F.adaptive_max_pool2d_with_indices, (x, (2, 3))),
                     (F.max_pool3d_with_indices, (x.unsqueeze(0), 2)),
                     (F.adaptive_max_pool3d_with_indices, (x.unsqueeze(0), 1))):
        assert inspect.signature(fn).parameters["return_indices"].default is False, fn.__name__
        for flag in (False, True):
            values, indices = fn(*args, return_indices=flag)
            assert indices.dtype is tl.int64 and values.shape == indices.shape


# ---- channels_last inputs (pool.pyx's NHWC kernels): read in place, channels_last results ------
def _is_cl(t):
    return t.is_contiguous(memory_format=tl.channels_last) and not t.is_contiguous()


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.int32, tl.uint8])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, padding=1, dilation=2),
                                dict(kernel_size=(2, 3), stride=(1, 2), ceil_mode=True)])
def test_max_pool_channels_last(dtype, kw):
    """The NHWC kernel gives the plane kernel's values and indices bit for bit, laid out
    channels_last as PyTorch's; its backward too (NaN handling: test below)."""
    x = r(3, 300, 9, 11) * 10          # more channels than one run of the kernel (256)
    xt = tl.tensor(x.astype(np.int64) if not dtype.is_floating_point else x, dtype=dtype)
    xc = xt.contiguous(memory_format=tl.channels_last)
    a, ia = F.max_pool2d(xt, return_indices=True, **kw)
    b, ib = F.max_pool2d(xc, return_indices=True, **kw)
    assert _is_cl(b) and _is_cl(ib)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    if dtype.is_floating_point:
        vals, idx = np_max_pool2d(xt.numpy(), *_win(kw))
        np.testing.assert_array_equal(b.numpy(), vals)
        np.testing.assert_array_equal(ib.numpy(), idx)
        _same_gradients(lambda t: F.max_pool2d(t, **kw), xt, xc, a.shape, dtype)


def _same_gradients(fn, xt, xc, out_shape, dtype):
    """The channels_last input's gradient is channels_last and equals the contiguous one's,
    for an output gradient in either layout (after a Flatten it comes back contiguous)."""
    g = tl.tensor(r(*out_shape), dtype=dtype)
    x1 = xt.clone().requires_grad_()
    fn(x1).backward(g)
    for g2 in (g, g.contiguous(memory_format=tl.channels_last)):
        x2 = xc.clone().requires_grad_()
        fn(x2).backward(g2)
        assert _is_cl(x2.grad)
        np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())


def _win(kw):
    k = kw["kernel_size"]
    k = k if isinstance(k, tuple) else (k, k)
    s = kw.get("stride", k)
    s = s if isinstance(s, tuple) else (s, s)
    return (k, s, _pair2(kw.get("padding", 0)), _pair2(kw.get("dilation", 1)), kw.get("ceil_mode", False))


def _pair2(v):
    return v if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
                                dict(kernel_size=(2, 3), ceil_mode=True, divisor_override=5)])
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_avg_pool_channels_last(kw, dtype):
    x = r(2, 40, 10, 7)
    xt = tl.tensor(x, dtype=dtype)
    xc = xt.contiguous(memory_format=tl.channels_last)
    a, b = F.avg_pool2d(xt, **kw), F.avg_pool2d(xc, **kw)
    assert _is_cl(b)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    _same_gradients(lambda t: F.avg_pool2d(t, **kw), xt, xc, a.shape, dtype)


def test_channels_last_pooling_nan_and_layouts_match_torch():
    torch = torch_or_skip()
    x = r(2, 6, 6, 6).astype(np.float32)
    x[0, 1, 1, 1] = x[1, 2, 0, 0] = x[1, 2, 1, 1] = np.nan
    xc = tl.tensor(x).contiguous(memory_format=tl.channels_last)
    tx = torch.tensor(x).contiguous(memory_format=torch.channels_last)
    v, i = F.max_pool2d(xc, 2, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(tx, 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(v.numpy(), tv.numpy(), equal_nan=True)
    assert tuple(v.stride()) == tuple(tv.stride()) and tuple(i.stride()) == tuple(ti.stride())
    a, ta = F.avg_pool2d(xc, 3, 1, 1), torch.nn.functional.avg_pool2d(tx, 3, 1, 1)
    assert tuple(a.stride()) == tuple(ta.stride())


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_half_precision_channels_last_and_transposed_inputs(dtype):
    """Half precision is computed in float32: a channels_last or transposed input is cast and
    then made contiguous (a cast keeps the memory order), never read as if it were NCHW."""
    x = tl.tensor(r(2, 5, 6, 6), dtype=dtype)
    for variant in (x.contiguous(memory_format=tl.channels_last), x.transpose(2, 3).contiguous().transpose(2, 3)):
        for fn in (lambda t: F.max_pool2d(t, 2), lambda t: F.avg_pool2d(t, 3, 1, 1),
                   lambda t: F.adaptive_avg_pool2d(t, (2, 3))):
            np.testing.assert_array_equal(fn(variant).float().numpy(), fn(x).float().numpy())
