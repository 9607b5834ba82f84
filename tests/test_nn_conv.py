"""Convolutions (torchlite/nn/functional/conv.py, conv_grad.py, torchlite/_core/conv.pyx and the
Conv modules): values against NumPy references written here (sums over kernel offsets of strided
window slices), PyTorch as a second oracle (values, gradients, error messages, module reprs and
initialisation), gradcheck / gradgradcheck in float64 over non-contiguous layouts for every
function and option in one table, every SIMD level of the kernels, thread counts 1 and 2 (and
bit-identical results across them), half precision, empty and degenerate shapes."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite._core import conv as _conv_kernels
from helpers import Case, case_table_tests, make_noncontig, torch_or_skip

_rng = np.random.default_rng(5)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- NumPy references --------------------------------------------------------------------------
def _pair(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """N-d (1 or 2 spatial dims) cross-correlation: a sum over kernel offsets of strided slices
    of the zero-padded input, contracted per group with np.einsum."""
    nd = x.ndim - 2
    s, p, d = _pair(stride, nd), _pair(padding, nd), _pair(dilation, nd)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    ks = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - d[i] * (ks[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    n, c = x.shape[:2]
    o = w.shape[0]
    cg, og = c // groups, o // groups
    out = np.zeros((n, o) + tuple(out_sp))
    for off in np.ndindex(*ks):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out_sp[i] - 1) + 1, s[i])
                   for i in range(nd))
        win = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", win[:, g * cg:(g + 1) * cg], wk)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed convolution: each input element scatters w-weighted copies into a
    full-size output, which is then cropped by the padding."""
    nd = x.ndim - 2
    s, p, d, op = _pair(stride, nd), _pair(padding, nd), _pair(dilation, nd), _pair(output_padding, nd)
    n, cin = x.shape[:2]
    cout_g = w.shape[1]
    ks = w.shape[2:]
    cg_in = cin // groups
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (ks[i] - 1) + 1 + op[i] for i in range(nd)]
    out = np.zeros((n, cout_g * groups) + tuple(full))
    for off in np.ndindex(*ks):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (x.shape[2 + i] - 1) + 1, s[i])
                   for i in range(nd))
        for g in range(groups):
            wk = w[(slice(g * cg_in, (g + 1) * cg_in), slice(None)) + off]
            out[(slice(None), slice(g * cout_g, (g + 1) * cout_g)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cg_in:(g + 1) * cg_in], wk)
    crop = tuple(slice(p[i], full[i] - p[i]) for i in range(nd))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


# ---- the table: every function and option, with its gradcheck case ---------------------------------
def _f(L):
    return L.nn.functional


CASES = [
    Case("conv1d", lambda L, x, w, b: _f(L).conv1d(x, w, b), (2, 2, 5), (3, 2, 2), (3,)),
    Case("conv1d_stride_pad_dil", lambda L, x, w: _f(L).conv1d(x, w, None, 2, 1, 2),
         (2, 2, 7), (2, 2, 3)),
    Case("conv1d_groups", lambda L, x, w, b: _f(L).conv1d(x, w, b, groups=2), (2, 4, 5),
         (4, 2, 2), (4,)),
    Case("conv1d_same", lambda L, x, w: _f(L).conv1d(x, w, padding="same"), (2, 2, 5), (2, 2, 2)),
    # the dilated kernel (7) is longer than the input (4): valid once padded
    Case("conv1d_same_dilated_groups", lambda L, x, w, b: _f(L).conv1d(
        x, w, b, padding="same", groups=2, dilation=2), (2, 2, 4), (2, 1, 4), (2,)),
    Case("conv1d_unbatched", lambda L, x, w: _f(L).conv1d(x, w), (2, 5), (2, 2, 2)),
    Case("conv2d", lambda L, x, w, b: _f(L).conv2d(x, w, b), (2, 2, 4, 4), (2, 2, 2, 2), (2,)),
    Case("conv2d_stride_pad", lambda L, x, w: _f(L).conv2d(x, w, None, (2, 1), (1, 2)),
         (2, 1, 5, 4), (2, 1, 3, 2)),
    Case("conv2d_dilation", lambda L, x, w: _f(L).conv2d(x, w, None, 1, 1, (2, 1)),
         (2, 1, 5, 4), (2, 1, 2, 2)),
    Case("conv2d_groups", lambda L, x, w, b: _f(L).conv2d(x, w, b, 1, 0, 1, 2),
         (2, 4, 3, 3), (4, 2, 2, 2), (4,)),
    Case("conv2d_depthwise", lambda L, x, w: _f(L).conv2d(x, w, None, 1, 1, 1, 2),
         (2, 2, 3, 3), (2, 1, 2, 2)),
    Case("conv2d_pointwise", lambda L, x, w, b: _f(L).conv2d(x, w, b), (2, 3, 3, 2), (2, 3, 1, 1),
         (2,)),
    Case("conv2d_same_even", lambda L, x, w: _f(L).conv2d(x, w, padding="same"), (2, 1, 4, 3),
         (2, 1, 2, 3)),
    Case("conv2d_same_dilated", lambda L, x, w: _f(L).conv2d(x, w, padding="same",
                                                             dilation=(1, 2)),
         (1, 1, 5, 5), (2, 1, 4, 4)),
    Case("conv2d_valid", lambda L, x, w: _f(L).conv2d(x, w, padding="valid"), (2, 1, 4, 3),
         (2, 1, 2, 2)),
    Case("conv2d_unbatched", lambda L, x, w: _f(L).conv2d(x, w, None, 1, 1), (2, 3, 3),
         (2, 2, 2, 2)),
    Case("conv_transpose1d", lambda L, x, w, b: _f(L).conv_transpose1d(x, w, b, 2, 1, 1),
         (2, 2, 3), (2, 3, 3), (3,)),
    Case("conv_transpose1d_groups_dil", lambda L, x, w: _f(L).conv_transpose1d(
        x, w, None, 1, 0, 1, 2, 2), (2, 4, 3), (4, 1, 2)),
    Case("conv_transpose2d", lambda L, x, w, b: _f(L).conv_transpose2d(x, w, b), (2, 2, 3, 2),
         (2, 2, 2, 2), (2,)),
    Case("conv_transpose2d_stride_outpad", lambda L, x, w: _f(L).conv_transpose2d(
        x, w, None, (2, 1), (1, 0), (1, 0)), (2, 2, 2, 3), (2, 1, 3, 2)),
    Case("conv_transpose2d_groups", lambda L, x, w, b: _f(L).conv_transpose2d(
        x, w, b, 1, 0, 0, 2), (2, 4, 2, 2), (4, 1, 2, 2), (2,)),
    Case("conv_transpose2d_outpad_below_dilation", lambda L, x, w: _f(L).conv_transpose2d(
        x, w, None, 1, 0, 1, 1, 2), (2, 1, 2, 2), (1, 2, 2, 2)),
    Case("conv_transpose2d_unbatched", lambda L, x, w: _f(L).conv_transpose2d(x, w, None, 2),
         (2, 2, 2), (2, 1, 2, 2)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_grad_fn_names():
    x = tl.randn(1, 2, 4, 4, requires_grad=True)
    w = tl.randn(3, 2, 2, 2, requires_grad=True)
    y = F.conv2d(x, w)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    assert type(F.conv1d(x[:, :, 0], w[:, :, 0]).grad_fn).__name__ == "ConvolutionBackward0"
    assert type(F.conv_transpose2d(x, w.transpose(0, 1)).grad_fn).__name__ == "ConvolutionBackward0"
    assert type(F.conv2d(x[0], w).grad_fn).__name__ == "SqueezeBackward1"
    assert F.conv2d(x.detach(), w.detach()).grad_fn is None


def test_bias_only_gradient():
    x = tl.randn(2, 2, 4, 4)
    w = tl.randn(3, 2, 2, 2)
    b = tl.zeros(3, requires_grad=True)
    F.conv2d(x, w, b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 2 * 9.0))


# ---- forward values against NumPy ------------------------------------------------------------------
FORWARD = [
    # (fn, numpy reference, x shape, w shape, with bias, kwargs)
    (F.conv1d, np_conv, (2, 4, 9), (6, 2, 3), True, dict(stride=2, padding=2, dilation=2, groups=2)),
    (F.conv2d, np_conv, (2, 3, 9, 8), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 2))),
    (F.conv2d, np_conv, (3, 4, 7, 7), (8, 2, 3, 3), False, dict(dilation=(2, 1), groups=2)),
    (F.conv2d, np_conv, (2, 6, 5, 6), (6, 1, 3, 3), True, dict(padding=1, groups=6)),
    (F.conv2d, np_conv, (2, 5, 6, 3), (4, 5, 1, 1), True, {}),
    (F.conv2d, np_conv, (1, 2, 33, 40), (3, 2, 5, 5), True, dict(stride=3, padding=2)),
    (F.conv_transpose1d, np_conv_transpose, (2, 4, 5), (4, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1, groups=2)),
    (F.conv_transpose2d, np_conv_transpose, (2, 3, 4, 5), (3, 2, 3, 2), True,
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    (F.conv_transpose2d, np_conv_transpose, (2, 4, 3, 3), (4, 1, 2, 3), False,
     dict(dilation=(2, 1), groups=2, output_padding=(1, 0))),
]


@pytest.mark.parametrize("fn,ref,xs,ws,bias,kw", FORWARD, ids=lambda v: getattr(v, "__name__", None))
def test_forward_matches_numpy(fn, ref, xs, ws, bias, kw, threads):
    x, w = r(*xs), r(*ws)
    b = r(ws[1] * kw.get("groups", 1) if fn.__name__.startswith("conv_t") else ws[0]) if bias else None
    expect = ref(x, w, b, **kw)
    for label, xt in make_noncontig(x):
        for wlabel, wt in make_noncontig(w):
            got = fn(xt, wt, None if b is None else tl.tensor(b), **kw)
            np.testing.assert_allclose(got.numpy(), expect, rtol=1e-10, atol=1e-10,
                                       err_msg=f"{label}/{wlabel}")
    got32 = fn(tl.tensor(x, dtype=tl.float32), tl.tensor(w, dtype=tl.float32),
               None if b is None else tl.tensor(b, dtype=tl.float32), **kw)
    assert got32.dtype is tl.float32
    np.testing.assert_allclose(got32.numpy(), expect, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype,tol", [(tl.float16, 2e-2), (tl.bfloat16, 1e-1)])
def test_half_precision(dtype, tol):
    x, w, b = r(2, 3, 6, 6), r(4, 3, 3, 3) * 0.3, r(4)
    xt, wt, bt = (tl.tensor(a).to(dtype) for a in (x, w, b))
    expect = np_conv(xt.double().numpy(), wt.double().numpy(), bt.double().numpy(), padding=1)
    got = F.conv2d(xt, wt, bt, padding=1)
    assert got.dtype is dtype
    np.testing.assert_allclose(got.double().numpy(), expect, rtol=tol, atol=tol)
    xt.requires_grad_()
    F.conv2d(xt, wt, bt, padding=1).sum().backward()
    assert xt.grad.dtype is dtype


@pytest.mark.parametrize("level", [0, 3, 4])
def test_every_simd_level(level):
    """Each ISA copy of the im2col/col2im and GEMM kernels gives the reference results."""
    old = _conv_kernels.isa_level()
    got_level = _conv_kernels.set_isa_level(level)
    try:
        for dt in (tl.float32, tl.float64):
            # output widths around the vector lengths (8, 16) exercise the masked row paths
            for (h, wd, k, s, p) in [(7, 9, 3, 1, 1), (6, 17, 3, 1, 1), (5, 33, 2, 1, 0),
                                     (6, 20, 3, 2, 1), (4, 5, 1, 1, 0)]:
                x, w, b = r(2, 3, h, wd), r(4, 3, k, k), r(4)
                xt = tl.tensor(x, dtype=dt, requires_grad=True)
                wt = tl.tensor(w, dtype=dt, requires_grad=True)
                y = F.conv2d(xt, wt, tl.tensor(b, dtype=dt), s, p)
                tol = 1e-4 if dt is tl.float32 else 1e-10
                np.testing.assert_allclose(y.detach().numpy(), np_conv(x, w, b, s, p), rtol=tol, atol=tol)
                g = r(*y.shape)
                y.backward(tl.tensor(g, dtype=dt))
                gx, gw = _np_grads(x, w, g, s, p)
                np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=tol, atol=tol)
                np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=tol, atol=tol)
    finally:
        _conv_kernels.set_isa_level(old)
    assert got_level <= level


# Geometries for the forward GEMM that packs its im2col operand straight from the images
# (conv_im2col_body.h tl_im2col_pack): output rows narrower and wider than a vector, panels of
# the GEMM that straddle output rows and images (small planes take several images per GEMM),
# stride and dilation (strided runs), taps that only meet padding, more rows than one
# k-block of the GEMM (CKK = 360 > 256), groups, and a channels_last input (strided rows).
_PACKED_GEOMETRIES = [
    # (N, C, O, H, W, k, stride, padding, dilation, groups, channels_last)
    (3, 5, 6, 7, 9, 3, 1, 1, 1, 1, False),
    (2, 3, 4, 6, 17, 3, 1, 1, 1, 1, False),
    (2, 3, 5, 12, 12, 3, 2, 2, 2, 1, False),
    (4, 8, 16, 16, 16, 3, 1, 1, 1, 1, False),
    (5, 4, 8, 8, 8, 3, 1, 1, 1, 1, False),
    (2, 40, 8, 8, 10, 3, 1, 1, 1, 1, False),
    (2, 3, 4, 5, 5, 5, 1, 2, 1, 1, False),
    (3, 6, 8, 9, 11, 3, 1, 1, 1, 2, False),
    (2, 4, 6, 10, 10, 3, 1, 1, 1, 1, True),
]


@pytest.mark.parametrize("level", [0, 3, 4])
def test_forward_packs_im2col_inside_the_gemm(level):
    """The forward's GEMM packs the im2col matrix block by block straight from the images:
    values against NumPy at every ISA level, and at the installed level bit for bit the
    product of the weight with the materialised im2col matrix (the GEMM sums in the same
    order whichever way B reaches it)."""
    old = _conv_kernels.isa_level()
    _conv_kernels.set_isa_level(level)
    try:
        for (n, c, o, h, wd, k, s, p, d, grp, cl) in _PACKED_GEOMETRIES:
            x, w = r(n, c, h, wd), r(o, c // grp, k, k) * 0.2
            for dt, tol in ((tl.float32, 1e-4), (tl.float64, 1e-10)):
                xt = tl.tensor(x, dtype=dt)
                if cl:
                    xt = xt.contiguous(memory_format=tl.channels_last)
                got = F.conv2d(xt, tl.tensor(w, dtype=dt), None, s, p, d, grp)
                np.testing.assert_allclose(got.numpy(), np_conv(x, w, None, s, p, d, grp),
                                           rtol=tol, atol=tol, err_msg=str((n, c, o, h, wd)))
    finally:
        _conv_kernels.set_isa_level(old)
    for (n, c, o, h, wd, k, s, p, d, grp, cl) in _PACKED_GEOMETRIES:
        if grp != 1:
            continue
        xt = tl.tensor(r(n, c, h, wd), dtype=tl.float32)
        wt = tl.tensor(r(o, c, k, k), dtype=tl.float32)
        col = tl.nn.functional.unfold(xt, k, d, p, s)              # (N, C*k*k, L)
        ref = tl.matmul(wt.reshape(o, -1), col)
        got = F.conv2d(xt, wt, None, s, p, d)
        assert np.array_equal(got.reshape(n, o, -1).numpy(), ref.numpy()), (n, c, o, h, wd)


# Stride-1 geometries whose input gradient runs as the forward convolution of the output
# gradient with the flipped, transposed weight (conv.pyx _input_grad_as_forward: channels not
# widening or at least 64 of them, rows up to 16): padding from none to the whole dilated kernel, dilation, groups,
# unequal padding and kernel sizes per dimension.
_AS_FORWARD_GEOMETRIES = [
    # (N, C, O, H, W, (kh, kw), padding, dilation, groups)
    (3, 8, 8, 8, 8, (3, 3), 1, 1, 1),
    (2, 6, 4, 9, 7, (3, 3), 0, 1, 1),
    (2, 6, 4, 9, 11, (3, 3), 2, 1, 1),
    (2, 4, 4, 10, 10, (3, 3), (2, 1), 2, 1),
    (2, 8, 4, 7, 12, (3, 5), (1, 2), 1, 2),
    (1, 5, 3, 6, 16, (2, 3), (1, 0), 1, 1),
    (1, 64, 96, 5, 6, (3, 3), 1, 1, 1),          # widening, with 64 input channels
]


@pytest.mark.parametrize("geom", _AS_FORWARD_GEOMETRIES)
def test_input_grad_as_forward_convolution(geom):
    n, c, o, h, wd, k, p, d, grp = geom
    x, w = r(n, c, h, wd), r(o, c // grp, *k) * 0.3
    for dt, tol in ((tl.float32, 1e-4), (tl.float64, 1e-10)):
        xt = tl.tensor(x, dtype=dt, requires_grad=True)
        y = F.conv2d(xt, tl.tensor(w, dtype=dt), None, 1, p, d, grp)
        g = r(*y.shape)
        y.backward(tl.tensor(g, dtype=dt))
        expect = np_conv_transpose(g, w, None, 1, p, 0, grp, d)
        assert expect.shape == x.shape
        np.testing.assert_allclose(xt.grad.numpy(), expect, rtol=tol, atol=tol, err_msg=str(geom))


def _np_grads(x, w, g, s, p):
    """Gradients of sum(conv2d(x, w) * g) by the adjoint relations: x through the transposed
    convolution (output_padding recovers x's size), w by correlating x with g."""
    oh = (x.shape[2] + 2 * p - w.shape[2]) // s + 1
    ow = (x.shape[3] + 2 * p - w.shape[3]) // s + 1
    op = (x.shape[2] + 2 * p - w.shape[2] - (oh - 1) * s, x.shape[3] + 2 * p - w.shape[3] - (ow - 1) * s)
    gx = np_conv_transpose(g, w, None, s, p, op)
    xp = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)])
    gw = np.zeros_like(w)
    for ki in range(w.shape[2]):
        for kj in range(w.shape[3]):
            win = xp[:, :, ki:ki + s * (oh - 1) + 1:s, kj:kj + s * (ow - 1) + 1:s]
            gw[:, :, ki, kj] = np.einsum("nchw,nohw->oc", win, g)
    return gx, gw


# ---- Winograd F(2x2, 3x3) (kernels/conv_winograd.h): 3x3 stride-1 layers with 16+ channels ---------
# Geometries: odd and even output sizes (a last tile half outside), padding 0/1/2, one-pixel
# outputs, channel counts that leave partial GEMM panels, several bands per image (a wide
# plane with many tile rows: bands hold about 512 KiB of transformed data), a channels_last
# and a sliced input (strided reads), bias and no bias.
_WINO_GEOMETRIES = [
    # (N, C, O, H, W, padding, bias, layout)
    (2, 16, 16, 8, 8, 1, True, "plain"),
    (3, 17, 23, 9, 5, 1, False, "plain"),
    (2, 16, 33, 7, 10, 0, True, "plain"),
    (1, 20, 16, 3, 4, 2, True, "plain"),
    (2, 16, 16, 1, 1, 1, True, "plain"),
    (1, 48, 40, 62, 35, 1, True, "plain"),
    (2, 24, 16, 6, 11, 1, False, "channels_last"),
    (2, 16, 20, 12, 9, 1, True, "sliced"),
]


def _wino_input(x, dt, layout):
    xt = tl.tensor(x, dtype=dt)
    if layout == "channels_last":
        return xt.contiguous(memory_format=tl.channels_last)
    if layout == "sliced":          # every other column of a plane twice as wide
        wide = np.repeat(x, 2, axis=3)
        return tl.tensor(wide, dtype=dt)[..., ::2]
    return xt


@pytest.mark.parametrize("level", [0, 3, 4])
def test_winograd_forward_and_gradients(level):
    """Forward, input gradient (a Winograd forward of the output gradient with the flipped
    weight) and weight gradient (its own Winograd pass, summed over tiles of several images
    or over bands of one) against NumPy at every ISA level, float32 and float64; the
    transforms add before they multiply, so float32 agrees to a few ulp of the terms."""
    old = _conv_kernels.isa_level()
    _conv_kernels.set_isa_level(level)
    try:
        for (n, c, o, h, wd, p, with_bias, layout) in _WINO_GEOMETRIES:
            x, w, b = r(n, c, h, wd), r(o, c, 3, 3) * 0.2, r(o)
            for dt, tol in ((tl.float32, 2e-5), (tl.float64, 1e-12)):
                xt = _wino_input(x, dt, layout).requires_grad_()
                wt = tl.tensor(w, dtype=dt, requires_grad=True)
                y = F.conv2d(xt, wt, tl.tensor(b, dtype=dt) if with_bias else None, 1, p)
                ref = np_conv(x, w, b if with_bias else None, 1, p)
                scale = np.abs(ref).max()
                np.testing.assert_allclose(y.detach().numpy() / scale, ref / scale, rtol=0, atol=tol,
                                           err_msg=str((n, c, o, h, wd, p, layout)))
                g = r(*y.shape)
                y.backward(tl.tensor(g, dtype=dt))
                gx, gw = _np_grads(x, w, g, 1, p)
                np.testing.assert_allclose(xt.grad.numpy() / np.abs(gx).max(), gx / np.abs(gx).max(),
                                           rtol=0, atol=tol, err_msg=str((n, c, o, h, wd, p, layout)))
                np.testing.assert_allclose(wt.grad.numpy() / np.abs(gw).max(), gw / np.abs(gw).max(),
                                           rtol=0, atol=tol)
    finally:
        _conv_kernels.set_isa_level(old)


def test_winograd_gradients_of_a_broadcast_output_gradient():
    """y.sum().backward() hands the kernels an output gradient of stride 0 (an expanded
    scalar): the Winograd input and weight gradients read it through its strides."""
    x, w = r(3, 16, 9, 10), r(24, 16, 3, 3) * 0.2
    xt, wt = tl.tensor(x, requires_grad=True), tl.tensor(w, requires_grad=True)
    F.conv2d(xt, wt, None, 1, 1).sum().backward()
    gx, gw = _np_grads(x, w, np.ones((3, 24, 9, 10)), 1, 1)
    np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("c, o", [(16, 24), (3, 8)], ids=["winograd", "im2col"])
def test_channels_last_layout_follows_pytorch(c, o):
    """A 2-d convolution's result is channels_last when its input or weight is (PyTorch's
    suggest_memory_format rule), the transposed convolution's likewise; one-channel inputs
    are both layouts at once and count as contiguous.  Values as the contiguous layout's
    (the Winograd kernel writes the NHWC rows itself, bit for bit the same numbers)."""
    x, w = r(2, c, 7, 9), r(o, c, 3, 3) * 0.3
    ref = np_conv(x, w, None, 1, 1)
    for x_cl in (False, True):
        for w_cl in (False, True):
            xt, wt = tl.tensor(x, dtype=tl.float32), tl.tensor(w, dtype=tl.float32)
            plain = F.conv2d(xt, wt, None, 1, 1)
            if x_cl:
                xt = xt.contiguous(memory_format=tl.channels_last)
            if w_cl:
                wt = wt.contiguous(memory_format=tl.channels_last)
            y = F.conv2d(xt, wt, None, 1, 1)
            want_cl = x_cl or w_cl
            assert y.is_contiguous(memory_format=tl.channels_last) == want_cl
            assert y.is_contiguous() != want_cl
            np.testing.assert_array_equal(y.numpy(), plain.numpy())
            np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)
            z = F.conv_transpose2d(y, wt)       # (O, C, 3, 3) is its (in, out) weight
            assert z.is_contiguous(memory_format=tl.channels_last) == want_cl
            np.testing.assert_allclose(z.numpy(), F.conv_transpose2d(plain, tl.tensor(w, dtype=tl.float32)).numpy(),
                                       rtol=1e-5, atol=1e-5)
    one = tl.tensor(r(2, 1, 6, 6), dtype=tl.float32).contiguous(memory_format=tl.channels_last)
    assert F.conv2d(one, tl.tensor(r(4, 1, 3, 3), dtype=tl.float32)).is_contiguous()


def test_channels_last_layout_agrees_with_torch():
    torch = torch_or_skip()
    for c in (16, 3):
        x, w = r(2, c, 8, 8).astype(np.float32), r(20, c, 3, 3).astype(np.float32)
        for x_cl in (False, True):
            for w_cl in (False, True):
                xt, wt, tx, tw = tl.tensor(x), tl.tensor(w), torch.tensor(x), torch.tensor(w)
                tcl = torch.channels_last
                if x_cl:
                    xt, tx = xt.contiguous(memory_format=tl.channels_last), tx.contiguous(memory_format=tcl)
                if w_cl:
                    wt, tw = wt.contiguous(memory_format=tl.channels_last), tw.contiguous(memory_format=tcl)
                y, ty = F.conv2d(xt, wt, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1)
                assert tuple(y.stride()) == tuple(ty.stride()), (c, x_cl, w_cl)
                np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_half_precision_channels_last_weight(dtype):
    """A channels_last half-precision weight (Module.to(memory_format=channels_last) makes
    one) is cast and made contiguous before the kernels read it."""
    x, w = tl.tensor(r(2, 8, 7, 7), dtype=dtype), tl.tensor(r(8, 8, 3, 3), dtype=dtype)
    want = F.conv2d(x, w, padding=1).float().numpy()
    got = F.conv2d(x, w.contiguous(memory_format=tl.channels_last), padding=1)
    np.testing.assert_array_equal(got.float().numpy(), want)


def test_winograd_taken_only_where_it_applies():
    """The Winograd path runs for 3x3 stride-1 undilated ungrouped layers with 16+ channels on
    both sides and transformed weights of at most 4 MiB, and the im2col path everywhere else:
    with the switch off the results of the others are bit for bit the same, those of the
    Winograd layers differ in the last bits (different rounding) but not beyond."""
    def run(xs, ws, **kw):
        x, w = tl.tensor(r(*xs), dtype=tl.float32), tl.tensor(r(*ws) * 0.1, dtype=tl.float32)
        return F.conv2d(x, w, None, **kw).numpy()
    cases = [  # (input, weight, kwargs, Winograd?)
        ((2, 16, 8, 8), (16, 16, 3, 3), dict(padding=1), True),
        ((2, 15, 8, 8), (16, 15, 3, 3), dict(padding=1), False),        # too few input channels
        ((2, 16, 8, 8), (15, 16, 3, 3), dict(padding=1), False),        # too few output channels
        ((2, 16, 9, 9), (16, 16, 3, 3), dict(padding=1, stride=2), False),
        ((2, 16, 9, 9), (16, 16, 3, 3), dict(padding=2, dilation=2), False),
        ((2, 32, 8, 8), (32, 16, 3, 3), dict(padding=1, groups=2), False),
        ((1, 513, 4, 4), (513, 513, 3, 3), dict(padding=1), False),     # 16 MiB of weights
        ((2, 16, 8, 8), (16, 16, 5, 5), dict(padding=2), False),
    ]
    for xs, ws, kw, wino in cases:
        _rng_state = _rng.bit_generator.state
        on = run(xs, ws, **kw)
        _rng.bit_generator.state = _rng_state
        _conv_kernels.use_winograd = False
        try:
            off = run(xs, ws, **kw)
        finally:
            _conv_kernels.use_winograd = True
        if wino:
            assert not np.array_equal(on, off), (xs, ws, kw)
            np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(on, off, err_msg=str((xs, ws, kw)))


# ---- threads: the same bits at 1 and 2 threads ------------------------------------------------------
@pytest.mark.parametrize("shape", [(8, 16, 12, 12, 32, 3, 1), (2, 32, 20, 20, 16, 3, 2), (16, 8, 6, 6, 8, 1, 1),
                                   (8, 32, 8, 8, 16, 3, 1), (3, 16, 40, 40, 16, 3, 1)])
def test_results_independent_of_thread_count(shape):
    n, c, h, wd, o, k, s = shape
    x, w, b = r(n, c, h, wd).astype(np.float32), r(o, c, k, k).astype(np.float32), r(o).astype(np.float32)
    g = None
    results = []
    old = tl.get_num_threads()
    try:
        for nt in (1, 2):
            tl.set_num_threads(nt)
            xt, wt, bt = (tl.tensor(a, requires_grad=True) for a in (x, w, b))
            y = F.conv2d(xt, wt, bt, s, k // 2)
            if g is None:
                g = r(*y.shape).astype(np.float32)
            y.backward(tl.tensor(g))
            results.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
    finally:
        tl.set_num_threads(old)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    np.testing.assert_allclose(results[0][0], np_conv(x, w, b, s, k // 2), rtol=1e-4, atol=1e-4)


def test_matches_torch_training_sizes(threads):
    torch = torch_or_skip()
    for (n, c, o, h) in [(4, 3, 8, 12), (4, 8, 16, 8)]:
        x, w, b = r(n, c, h, h), r(o, c, 3, 3), r(o)
        outs = {}
        for L in (tl, torch):
            xt, wt, bt = (L.tensor(a, dtype=L.float32, requires_grad=True) for a in (x, w, b))
            y = L.nn.functional.conv2d(xt, wt, bt, padding=1)
            (y * y).sum().backward()
            outs[L] = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]
        for a, e in zip(outs[tl], outs[torch]):
            np.testing.assert_allclose(a, e, rtol=2e-4, atol=2e-3)


# ---- edge shapes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("xs,ws,kw", [
    ((0, 3, 8, 8), (4, 3, 3, 3), {}),              # empty batch
    ((2, 0, 5, 5), (4, 0, 3, 3), {}),              # no input channels: none out (as torch)
    ((1, 3, 1, 1), (2, 3, 1, 1), {}),              # 1x1 everything
    ((2, 2, 3, 3), (2, 2, 3, 3), {}),              # kernel as large as the input
    ((2, 2, 1, 7), (3, 2, 1, 3), dict(padding=(0, 1))),
])
def test_edge_shapes_match_torch(xs, ws, kw):
    torch = torch_or_skip()
    x, w, b = r(*xs), r(*ws), r(ws[0])
    got = F.conv2d(tl.tensor(x), tl.tensor(w), tl.tensor(b), **kw)
    exp = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    assert tuple(got.shape) == tuple(exp.shape)
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_transpose_empty_batch_and_zero_grad_paths():
    x = tl.zeros(0, 2, 3, 3, dtype=tl.float64, requires_grad=True)
    w = tl.tensor(r(2, 3, 2, 2), requires_grad=True)
    y = F.conv_transpose2d(x, w)
    assert tuple(y.shape) == (0, 3, 4, 4)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 2, 3, 3)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((2, 3, 2, 2)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_random_geometry(data):
    n = data.draw(st.integers(1, 3))
    groups = data.draw(st.integers(1, 3))
    cg, og = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    s = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    d = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    p = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    h = data.draw(st.integers(max(1, d[0] * (kh - 1) + 1 - 2 * p[0]), 12))
    wd = data.draw(st.integers(max(1, d[1] * (kw - 1) + 1 - 2 * p[1]), 12))
    x, w = r(n, cg * groups, h, wd), r(og * groups, cg, kh, kw)
    layout = data.draw(st.sampled_from(["contiguous", "transposed", "stepped", "offset"]))
    xt = dict(make_noncontig(x))[layout]
    got = F.conv2d(xt, tl.tensor(w), None, s, p, d, groups)
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, None, s, p, d, groups), rtol=1e-10, atol=1e-10)


# ---- errors: PyTorch's types and messages ---------------------------------------------------------------
ERRORS = [
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 4, 8, 8), L.zeros(32, 3, 3, 3)), RuntimeError,
     "Given groups=1, weight of size [32, 3, 3, 3], expected input[1, 4, 8, 8] to have 3 channels, "
     "but got 4 channels instead"),
    (lambda L: L.nn.functional.conv2d(L.zeros(4, 8, 8), L.zeros(32, 3, 3, 3)), RuntimeError,
     "expected input[1, 4, 8, 8] to have 3 channels"),
    (lambda L: L.nn.functional.conv2d(L.zeros(8, 8), L.zeros(3, 3, 3, 3)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]"),
    (lambda L: L.nn.functional.conv1d(L.zeros(8), L.zeros(3, 3, 3)), RuntimeError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [8]"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 2, 2), L.zeros(4, 3, 3, 3)), RuntimeError,
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be "
     "greater than actual input size"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), stride=0),
     RuntimeError, "non-positive stride is not supported"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), dilation=0),
     RuntimeError, "dilation should be greater than zero, but got [0, 0]"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), groups=0),
     RuntimeError, "non-positive groups is not supported"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 1, 3, 3), groups=3),
     RuntimeError, "Given groups=3, expected weight to be divisible by 3 at dimension 0"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(0, 3, 3, 3)), RuntimeError,
     "Given groups=1, expected weight to be at least 1 at dimension 0"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), stride=(1, 2, 3)),
     RuntimeError, "expected stride to be a single integer value or a list of 2 values to match the "
     "convolution dimensions, but got stride=[1, 2, 3]"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), stride=2,
                                      padding="same"),
     RuntimeError, "padding='same' is not supported for strided convolutions"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), L.zeros(3)),
     RuntimeError, "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 "
     "elements, but got bias of size [3] instead"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8, dtype=L.float64), L.zeros(4, 3, 3, 3)),
     RuntimeError, "expected scalar type Double but found Float"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3),
                                      L.zeros(4, dtype=L.float64)),
     RuntimeError, "Input type (float) and bias type (double) should be the same"),
    (lambda L: L.nn.functional.conv1d(L.zeros(1, 3, 8), L.zeros(4, 3, 3, 3)), RuntimeError,
     "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional "
     "input of size [1, 3, 8] instead"),
    (lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 4, 8, 8), L.zeros(3, 4, 3, 3)),
     RuntimeError, "Given transposed=1, weight of size [3, 4, 3, 3], expected input[1, 4, 8, 8] to "
     "have 3 channels, but got 4 channels instead"),
    (lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 3, 8, 8), L.zeros(3, 4, 3, 3), stride=2,
                                                output_padding=2),
     RuntimeError, "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 2 output_padding_width: 2 stride_height: 2 stride_width: 2 "
     "dilation_height: 1 dilation_width: 1"),
    (lambda L: L.nn.functional.conv_transpose1d(L.zeros(1, 3, 8), L.zeros(3, 4, 3), stride=2,
                                                output_padding=2),
     RuntimeError, "output_padding_height: 0 output_padding_width: 2 stride_height: 1 stride_width: 2"),
    (lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 3, 8, 8), L.zeros(3, 4, 3, 3), padding=5),
     RuntimeError, "Given input size per channel: (8 x 8). Calculated output size per channel: "
     "(0 x 0). Output size is too small"),
    (lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 3, 8, 8), L.zeros(3, 4, 3, 3),
                                                output_padding=-1),
     RuntimeError, "negative output_padding is not supported"),
    (lambda L: L.nn.functional.conv_transpose1d(L.zeros(1, 3, 8), L.zeros(3, 4, 3), L.zeros(3)),
     RuntimeError, "Given transposed=1, weight of size [3, 4, 3], expected bias to be 1-dimensional "
     "with 4 elements, but got bias of size [3] instead"),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), L.zeros(4, 3, 3, 3), stride=1.5),
     TypeError, ""),
    (lambda L: L.nn.functional.conv2d(L.zeros(1, 3, 8, 8), [1.0]), TypeError, ""),
    (lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 3, 8, 8), L.zeros(3, 4, 3, 3),
                                                padding="same"),
     TypeError, "argument 'padding' must be tuple of ints, not str"),
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


def test_integer_inputs_refused():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.conv2d(tl.zeros(1, 1, 3, 3, dtype=tl.int64), tl.zeros(1, 1, 2, 2, dtype=tl.int64))


def test_saved_input_modified_in_place_is_detected():
    x = tl.randn(1, 2, 4, 4, requires_grad=True)
    w = tl.randn(2, 2, 2, 2, requires_grad=True)
    a = x * 1
    y = F.conv2d(a, w)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- modules --------------------------------------------------------------------------------------------
MODULES = [
    ("Conv1d", (4, 8, 3), dict(stride=2, dilation=2, groups=2, bias=False, padding_mode="reflect")),
    ("Conv1d", (3, 5, 2), dict(padding="same")),
    ("Conv2d", (3, 8, 3), dict(padding=1)),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 0), groups=2, padding_mode="circular")),
    ("Conv2d", (2, 4, 3), dict(padding="valid", padding_mode="replicate")),
    ("Conv2d", (2, 4, 2), dict(padding="same", dilation=2)),
    ("Conv2d", (2, 4, 3), dict(padding=2, padding_mode="zeros", bias=False)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, output_padding=1, groups=2)),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=2, output_padding=1, groups=2, dilation=(1, 2))),
    ("ConvTranspose2d", (3, 2, 3), dict(padding=1, bias=False)),
]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_module_repr_and_forward_match_torch(name, args, kw):
    torch = torch_or_skip()
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
    with torch.no_grad():
        ours.weight.data = tl.tensor(theirs.weight.detach().numpy())
        if theirs.bias is not None:
            ours.bias.data = tl.tensor(theirs.bias.detach().numpy())
    spatial = (9,) if name.endswith("1d") else (7, 8)
    x = r(2, args[0], *spatial).astype(np.float32)
    got = ours(tl.tensor(x))
    exp = theirs(torch.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert sorted(n for n, _ in ours.named_parameters()) == sorted(n for n, _ in theirs.named_parameters())


def test_module_default_init_distribution():
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias the same."""
    m = nn.Conv2d(16, 64, 3)
    bound = 1 / math.sqrt(16 * 9)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound
    t = nn.ConvTranspose2d(8, 4, 3, groups=2)      # fan_in from weight.size(1) * k * k
    tb = 1 / math.sqrt(2 * 9)
    assert np.abs(t.weight.detach().numpy()).max() <= tb
    assert np.abs(t.bias.detach().numpy()).max() <= tb


def test_module_wrong_channels_message():
    m = nn.Conv2d(3, 32, 3)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[32, 3, 3, 3\], "
                                           r"expected input\[1, 4, 8, 8\] to have 3 channels"):
        m(tl.zeros(1, 4, 8, 8))


@pytest.mark.parametrize("kw,msg", [
    (dict(groups=0), "groups must be a positive integer"),
    (dict(groups=2), "in_channels must be divisible by groups"),
    (dict(padding="foo"), "Invalid padding string 'foo'"),
    (dict(padding="same", stride=2), "padding='same' is not supported for strided convolutions"),
    (dict(padding_mode="bad"), "padding_mode must be one of"),
])
def test_module_constructor_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        nn.Conv2d(3, 4, 3, **kw)


def test_conv_transpose_output_size():
    torch = torch_or_skip()
    ours, theirs = nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    ours.weight.data = tl.tensor(theirs.weight.detach().numpy())
    ours.bias.data = tl.tensor(theirs.bias.detach().numpy())
    x = r(1, 2, 4, 4).astype(np.float32)
    got = ours(tl.tensor(x), output_size=[10, 9])
    exp = theirs(torch.tensor(x), output_size=[10, 9])
    assert tuple(got.shape) == (1, 3, 10, 9)
    np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(tl.tensor(x), output_size=[20, 9])
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect")


def test_module_trains_and_state_dict_round_trip():
    m = nn.Conv2d(2, 3, 3, padding=1)
    x = tl.randn(4, 2, 5, 5)
    loss = (m(x) ** 2).mean()
    loss.backward()
    assert m.weight.grad is not None and tuple(m.weight.grad.shape) == (3, 2, 3, 3)
    assert m.bias.grad is not None
    m2 = nn.Conv2d(2, 3, 3, padding=1)
    m2.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())


def test_small_cnn_gradients_match_torch(threads):
    """A conv / relu / max-pool / conv / avg-pool / linear stack: loss and every parameter's
    gradient equal PyTorch's for the same weights."""
    torch = torch_or_skip()

    def build(L):
        m = L.nn.Sequential(L.nn.Conv2d(1, 4, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
                            L.nn.Conv2d(4, 6, 3, stride=2, padding=1), L.nn.ReLU(),
                            L.nn.AvgPool2d(2), L.nn.Flatten(), L.nn.Linear(6 * 2 * 2, 3))
        rng = np.random.default_rng(0)
        with L.no_grad():
            for p in m.parameters():
                p.copy_(L.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=L.float32))
        return m

    x = r(5, 1, 16, 16).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0])
    grads = {}
    for L in (tl, torch):
        m = build(L)
        loss = L.nn.functional.cross_entropy(m(L.tensor(x)), L.tensor(y))
        loss.backward()
        grads[L] = [loss.item()] + [p.grad.numpy() for p in m.parameters()]
    np.testing.assert_allclose(grads[tl][0], grads[torch][0], rtol=1e-5)
    for a, b in zip(grads[tl][1:], grads[torch][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_output_gradient_layouts():
    """The backward kernels read the output gradient through its strides when its spatial
    dims are contiguous (a channel slice, a batch slice) and copy it otherwise (transposed,
    expanded)."""
    x, w = r(3, 2, 6, 5), r(4, 2, 3, 3)
    base = r(3, 8, 6, 5)
    layouts = {
        "contiguous": tl.tensor(base[:, :4]),
        "channel_slice": tl.tensor(base)[:, 2:6],
        "batch_step": tl.tensor(np.concatenate([base[:, :4], base[:, :4]]))[::2],
        "transposed": tl.tensor(np.ascontiguousarray(base[:, :4].transpose(0, 1, 3, 2))).transpose(2, 3),
        "expanded": tl.tensor(base[:1, :1, :1, :1]).expand(3, 4, 6, 5),
    }
    for name, g in layouts.items():
        xt, wt = tl.tensor(x, requires_grad=True), tl.tensor(w, requires_grad=True)
        F.conv2d(xt, wt, None, 1, 1).backward(g)
        gx, gw = _np_grads(x, w, g.numpy(), 1, 1)
        np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-10, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-10, atol=1e-10, err_msg=name)


def _np_conv_and_grads(x, w, g, s, p, d):
    """conv2d and the gradients of sum(conv2d * g) by direct loops over output positions and
    taps (float64; stride s, padding p, dilation d as (h, w) pairs, groups 1)."""
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    oh = (hh + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (ww + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    y = np.zeros((n, o, oh, ow))
    gx, gw = np.zeros_like(x), np.zeros_like(w)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    hi, wi = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= hi < hh and 0 <= wi < ww:
                        y[:, :, i, j] += x[:, :, hi, wi] @ w[:, :, a, b].T
                        gx[:, :, hi, wi] += g[:, :, i, j] @ w[:, :, a, b]
                        gw[:, :, a, b] += g[:, :, i, j].T @ x[:, :, hi, wi]
    return y, gx, gw


@pytest.mark.parametrize("hw,k,s,p,d", [
    ((1, 1), (3, 3), (1, 1), (1, 1), (1, 1)),     # ResNet's last stage: only the centre tap
    ((2, 2), (3, 3), (2, 2), (1, 1), (1, 1)),     # 2x2 -> 1x1, stride 2: taps 1..2
    ((1, 6), (3, 3), (1, 1), (1, 1), (1, 1)),     # one dim cut, the other not
    ((3, 3), (5, 5), (1, 1), (2, 2), (1, 1)),     # nothing to cut
    ((2, 2), (3, 3), (1, 1), (2, 2), (2, 2)),     # dilated: taps 1..2 of 3
    ((1, 1), (5, 3), (1, 1), (3, 1), (1, 1)),     # padding past the used taps: cut moves it
    ((2, 3), (3, 3), (3, 1), (2, 1), (1, 1)),
])
def test_taps_that_never_touch_the_input_are_cut_exactly(hw, k, s, p, d):
    """conv2d on images so small that some kernel taps only ever meet padding (the kernels
    then run a cut-down kernel, conv.pyx _used_taps): forward and both gradients against
    direct loops in NumPy float64."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4) + hw)
    w = rng.standard_normal((5, 4) + k)
    xt, wt = tl.tensor(x).requires_grad_(), tl.tensor(w).requires_grad_()
    y = F.conv2d(xt, wt, stride=s, padding=p, dilation=d)
    g = rng.standard_normal(tuple(y.shape))
    y.backward(tl.tensor(g))
    ry, rgx, rgw = _np_conv_and_grads(x, w, g, s, p, d)
    np.testing.assert_allclose(y.detach().numpy(), ry, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), rgx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), rgw, rtol=1e-12, atol=1e-12)
