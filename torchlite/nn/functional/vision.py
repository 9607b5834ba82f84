"""Padding, resizing and patch extraction (torch.nn.functional): pad, interpolate, upsample,
upsample_nearest, upsample_bilinear, unfold, fold, pixel_shuffle, pixel_unshuffle,
channel_shuffle.

Non-constant padding and interpolation are separable: each is a sequence of one-axis passes
(a gather by an index map for nearest, reflect, replicate and circular; a two-tap linear blend
for linear, bilinear and trilinear; two two-tap blends added for bicubic's four taps) run by
the resampling kernel of torchlite/_core/pool.pyx.
One op records the whole sequence; its gradient is the adjoint sequence (scatter-adds, in
reverse order), itself an op whose gradient is the forward again.  Constant padding copies
into a filled array, and its gradient is constant padding by the negated amounts (a crop).
unfold and fold are the im2col and col2im of the convolution kernels."""
from __future__ import annotations

import builtins
import math
import numbers
from typing import TYPE_CHECKING

from ..._tensor import Tensor, _wrap
from ..._dispatch import array as _A
from ..._dispatch import elementwise as _ew
from ..._dispatch import pool as _P
from ..._dispatch import conv as _C
from ... import _dtype as D
from ...autograd.graph import Node, node_type, record, needs_grad
from ._utils import ntuple
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold",
           "fold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]

_ADD = _ew.BINARY["add"]


# ---- separable resampling ---------------------------------------------------------------------
class Pass:
    """One axis of a separable resampling: output index j along `dim` reads source i0[j]
    (nearest: i1 is None) or blends w0[j] * src[i0[j]] + w1[j] * src[i1[j]]; the source has
    n_in entries along dim.  `more`, when given, is a second such (i0, i1, w0, w1) blend
    added to the first (bicubic's last two taps)."""

    __slots__ = ("dim", "i0", "i1", "w0", "w1", "n_in", "n_out", "more")

    def __init__(self, dim, n_in, i0, i1=None, w0=None, w1=None, more=None):
        self.dim, self.n_in, self.n_out = dim, n_in, i0.shape[0]
        self.i0, self.i1, self.w0, self.w1 = i0, i1, w0, w1
        self.more = more

    def to(self, device):
        """This pass with its maps on `device` (a device string such as 'cuda:0')."""
        def move(a):
            return a if a is None or a.device == device else _wrap(a).to(device)._data
        more = None if self.more is None else tuple(move(a) for a in self.more)
        return Pass(self.dim, self.n_in, move(self.i0), move(self.i1), move(self.w0), move(self.w1),
                    more)

    def run(self, arr, adjoint):
        """This pass (or its adjoint) on an array."""
        n = self.n_in if adjoint else self.n_out
        out = _P.resample(arr, self.dim, self.i0, self.i1, self.w0, self.w1, n, adjoint)
        if self.more is not None:
            i0, i1, w0, w1 = self.more
            _ew.binary(_ADD, out, _P.resample(arr, self.dim, i0, i1, w0, w1, n, adjoint), out)
        return out


def _run_passes(arr, passes, adjoint):
    """The passes in order on an array (adjoint: their adjoints in reverse order)."""
    for p in (reversed(passes) if adjoint else passes):
        arr = p.run(arr, adjoint)
    return arr


class _ResampleNode(Node):
    """The node of a resampling or (adjoint True) of its adjoint; each kind of padding and
    interpolation gets a pair of subclasses, the first with PyTorch's name, each the other's
    `partner`: the gradient of one is the other."""

    passes = ()
    adjoint = False
    partner = None

    def backward(self, g):
        return (resample(g, self.passes, self.partner),)


def _node_class(name):
    """The node class of a resampling named `name` (e.g. 'UpsampleBilinear2DBackward0'),
    paired on first use with its adjoint's ('UpsampleBilinear2DBackwardBackward0')."""
    cls = node_type(name, _ResampleNode)
    if "partner" not in cls.__dict__:
        adj = node_type(name[:-len("Backward0")] + "BackwardBackward0", _ResampleNode)
        adj.adjoint = True
        cls.partner, adj.partner = adj, cls
    return cls


def resample(x, passes, node_cls):
    """The separable resampling `passes` of x (their adjoint when node_cls.adjoint),
    recorded as a node_cls node."""
    device = x._data.device
    if device != "cpu":       # the maps are made on the host
        passes = [p.to(device) for p in passes]
    out = _wrap(_run_passes(x._data, passes, node_cls.adjoint))
    if needs_grad(x):
        node = node_cls()
        node.passes = passes
        record(node, (x,), out)
    return out


def _index_array(values):
    return _A.from_flat(list(values), (len(values),), D.int64.code)


# ---- pad ----------------------------------------------------------------------------------------
def _pad_amounts(input, pad):
    if not isinstance(pad, (list, tuple)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    out = []
    for i, v in enumerate(pad):
        if isinstance(v, builtins.bool) or not isinstance(v, (numbers.Integral, Tensor)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found "
                            f"element of type {type(v).__name__} at pos {i}")
        out.append(v.__index__())
    if len(out) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(out) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(out)} and input of dimension "
                           f"{input.dim()}")
    return out


def _padded_shape(input, amounts):
    shape = list(input.shape)
    for i in range(len(amounts) // 2):
        d = input.dim() - 1 - i
        lo, hi = amounts[2 * i], amounts[2 * i + 1]
        n = shape[d] + lo + hi
        if n < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
        shape[d] = n
    return shape


def _constant_pad(input, amounts, value):
    shape = _padded_shape(input, amounts)
    arr = input._data
    out = _A.full(tuple(shape), value, arr.dtype, device=arr)
    src, dst = arr, out
    for i in range(len(amounts) // 2):
        d = input.dim() - 1 - i
        lo, hi = amounts[2 * i], amounts[2 * i + 1]
        n = arr.shape[d]
        s0, s1 = max(0, -lo), n - max(0, -hi)
        if s1 <= s0:
            src = None
            break
        src = src.slice(d, s0, s1, 1)
        dst = dst.slice(d, max(0, lo), max(0, lo) + (s1 - s0), 1)
    if src is not None and src.numel:
        _ew.copy_(dst, src)
    res = _wrap(out)
    if needs_grad(input):
        node = ConstantPadNdBackward0()
        node.amounts = [-a for a in amounts]
        record(node, (input,), res)
    return res


class ConstantPadNdBackward0(Node):
    amounts = ()

    def backward(self, g):
        return (_constant_pad(g, self.amounts, 0),)


_NONCONST = {"reflect": "Reflection", "replicate": "Replication", "circular": "Circular"}


def _source_index(j, lo, hi, n, mode):
    """The source of output index j of a dim of size n padded by (lo, hi).  Circular
    padding wraps within what is left after the negative amounts crop (as PyTorch)."""
    if mode == "circular":
        c0 = max(0, -lo)
        m = n - c0 - max(0, -hi)
        return c0 + (j - max(0, lo)) % m
    q = j - lo
    if mode == "reflect":
        if q < 0:
            q = -q
        if q >= n:
            q = 2 * (n - 1) - q
        return q
    return min(max(q, 0), n - 1)


def _nonconstant_pad(input, amounts, mode):
    k = len(amounts) // 2
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(amounts)} is not supported for {input.dim()}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = list(input.shape)
    first = 1 if input.dim() == k + 2 else 0
    if any(s == 0 for s in shape[first:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch "
                           f"size and other non-zero dimensions for input, but got: {shape}")
    passes = []
    for i in range(k):
        d = input.dim() - 1 - i
        lo, hi = amounts[2 * i], amounts[2 * i + 1]
        n = shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of "
                               f"input {shape}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        size = n + lo + hi
        if size < 0:
            raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted "
                               f"in a negative output size, which is invalid. Check dimension {d} "
                               f"of your input.")
        if lo == 0 and hi == 0:
            continue
        passes.append(Pass(d, n, _index_array([_source_index(j, lo, hi, n, mode)
                                                for j in range(size)])))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{mode}_pad\" not implemented for '{input.dtype.name}'")
    return resample(input, passes, _node_class(f"{_NONCONST[mode]}Pad{k}DBackward0"))


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims of input: pad = (left, right) of the last dim, then of
    the one before, ...  Modes: 'constant' (value, default 0; negative amounts crop),
    'reflect', 'replicate', 'circular'."""
    tensor_arg(input, "pad", "input", pos=1)
    amounts = _pad_amounts(input, pad)
    if mode == "constant":
        return _constant_pad(input, amounts, 0 if value is None else value)
    if mode not in _NONCONST:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    return _nonconstant_pad(input, amounts, mode)


# ---- interpolate ------------------------------------------------------------------------------------
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_NAME_OF_DIMS = {1: "1D", 2: "2D", 3: "3D"}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def _spatial_list(v, k, what, input):
    if isinstance(v, (list, tuple)):
        if len(v) != k:
            raise ValueError(f"Input and {what} must have the same number of spatial dimensions, but "
                             f"got input with spatial dimensions of {list(input.shape[2:])} and {what} "
                             f"of shape {tuple(v)}. Please provide input tensor in (N, C, d1, d2, "
                             f"...,dK) format and {what} in (s1, s2, ...,sK) format.")
        return list(v)
    return [v] * k


def _sizes_and_scales(input, size, scale_factor, recompute_scale_factor):
    k = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, (list, tuple)) and len(size) != k:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but "
                             f"got input with spatial dimensions of {list(input.shape[2:])} and output "
                             f"size of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                             f"format and output size in (o1, o2, ...,oK) format.")
        sizes = [int(s) for s in (size if isinstance(size, (list, tuple)) else [size] * k)]
        return sizes, [None] * k
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = [float(s) for s in _spatial_list(scale_factor, k, "scale_factor", input)]
    sizes = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
    if recompute_scale_factor:
        scales = [None] * k
    return sizes, scales


def _cubic(x, a):
    """Keys' cubic convolution kernel with parameter a (NumPy, on distances)."""
    import numpy as np
    x = np.abs(x)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, a * (((x - 5) * x + 8) * x - 4), 0.0))


def resample_matrix(n_in, n_out, mode, antialias, scale=None):
    """(n_out, n_in) NumPy matrix of one axis of a resize, so that a resize is two matmuls.
    Antialiased: the filter (triangle for 'bilinear', the a=-0.5 cubic for 'bicubic') widened
    by the downscale factor and normalised over the taps inside the input, centred at
    (i + 0.5) * scale, as PIL and PyTorch do; scale defaults to n_in / n_out.  Plain bicubic:
    PyTorch's a=-0.75 cubic with edge-clamped taps (torchlite.vision's resize).  Geometry only:
    the pixels never pass through NumPy."""
    import numpy as np
    scale = n_in / n_out if scale is None else scale
    mat = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if mode == "bicubic" and not antialias:
        src = (rows + 0.5) * scale - 0.5
        base = np.floor(src)
        for k in (-1, 0, 1, 2):
            np.add.at(mat, (rows, np.clip(base + k, 0, n_in - 1).astype(np.int64)), _cubic(src - base - k, -0.75))
        return mat
    radius = 1.0 if mode == "bilinear" else 2.0
    stretch = max(scale, 1.0) if antialias else 1.0
    support = radius * stretch
    centre = (rows + 0.5) * scale
    lo = np.maximum(np.trunc(centre - support + 0.5), 0).astype(np.int64)
    hi = np.minimum(np.trunc(centre + support + 0.5), n_in).astype(np.int64)
    taps = lo[:, None] + np.arange(int(math.ceil(support)) * 2 + 1)
    dist = (taps - centre[:, None] + 0.5) / stretch
    valid = taps < hi[:, None]
    wts = np.maximum(1 - np.abs(dist), 0) if mode == "bilinear" else _cubic(dist, -0.5)
    wts = np.where(valid, wts, 0.0)
    total = wts.sum(axis=1, keepdims=True)
    wts = np.divide(wts, total, out=np.zeros_like(wts), where=total != 0)
    np.add.at(mat, (np.broadcast_to(rows[:, None], taps.shape)[valid], taps[valid]), wts[valid])
    return mat


def _antialiased(input, sizes, scales, mode, align_corners):
    """interpolate(antialias=True) of a 4-d input: W_h @ input @ W_w^T with the matrices of
    resample_matrix at ATen's scales (differentiable as two matmuls)."""
    from ..._ops.creation import tensor as _tensor
    mats = []
    for d in range(2):
        n_in, n_out = input.shape[2 + d], sizes[d]
        if align_corners:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            scale = 1.0 / scales[d] if scales[d] is not None and scales[d] > 0 else n_in / n_out
        mats.append(_tensor(resample_matrix(n_in, n_out, mode, True, scale), dtype=input.dtype, device=input.device))
    return mats[0] @ input @ mats[1].mT


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of input (N, C, *spatial) to `size`, or by `scale_factor`
    (output size floor(in * scale)).  Modes: 'nearest', 'nearest-exact', 'linear' (3-d),
    'bilinear' and 'bicubic' (4-d), 'trilinear' (5-d), with or without align_corners, and
    'area' (adaptive average pooling)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(interpolate, locals())
    tensor_arg(input, "interpolate", "input")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    k = input.dim() - 2
    if k not in (1, 2, 3) or mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != k:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_MODE_DIMS[mode] + 2}D input")
    if antialias and not (mode in ("bilinear", "bicubic") and k == 2):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                         "tensor as input")
    sizes, scales = _sizes_and_scales(input, size, scale_factor, recompute_scale_factor)
    spatial = list(input.shape[2:])
    if any(s <= 0 for s in sizes) or any(s <= 0 for s in spatial):
        names = ["D", "H", "W"][3 - k:]
        i_s = ", ".join(f"{n}: {v}" for n, v in zip(names, spatial))
        o_s = ", ".join(f"{n}: {v}" for n, v in zip(names, sizes))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({i_s}) "
                           f"output ({o_s})")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"upsample_{mode}\" not implemented for '{input.dtype.name}'")
    if antialias:
        return _antialiased(input, sizes, scales, mode, align_corners)
    if mode == "area":
        from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
        from .pooling3d import adaptive_avg_pool3d
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[k - 1](input, sizes)
    passes = []
    f64 = input.dtype is D.float64
    for i in reversed(range(k)):            # the last dim first, as PyTorch's kernels nest
        d = 2 + i
        n_in, n_out, sc = spatial[i], sizes[i], scales[i]
        scale = -1.0 if sc is None else sc
        if mode.startswith("nearest"):
            passes.append(Pass(d, n_in, _P.nearest_map(n_in, n_out, scale, mode == "nearest-exact")))
        elif mode == "bicubic":
            passes.append(_cubic_pass(d, n_in, n_out, align_corners, sc, input.dtype))
        else:
            i0, i1, w0, w1 = _P.linear_map(n_in, n_out, align_corners, scale, f64)
            passes.append(Pass(d, n_in, i0, i1, w0, w1))
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear",
            "bilinear": "Bilinear", "bicubic": "Bicubic", "trilinear": "Trilinear"}[mode]
    return resample(input, passes, _node_class(f"Upsample{kind}{_NAME_OF_DIMS[k]}Backward0"))


def _cubic_pass(dim, n_in, n_out, align_corners, scale, dtype):
    """The four taps of bicubic interpolation from n_in to n_out points along dim, as
    PyTorch's HelperInterpCubic computes them: the source coordinate (not clamped), its floor
    and fraction t in the compute precision (float for float32 and narrower, double for
    float64), taps floor - 1 .. floor + 2 clamped into the input, weights the cubic
    convolution kernel (A = -0.75) at t + 1, t, 1 - t, 2 - t."""
    from ..._ops.creation import arange, tensor
    ct = D.float64 if dtype is D.float64 else D.float32
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    elif scale is not None and scale > 0:
        step = 1.0 / scale
    else:
        step = n_in / n_out
    step = tensor(step, dtype=ct)            # rounded once to the compute precision
    j = arange(n_out, dtype=ct)
    src = step * j if align_corners else step * (j + 0.5) - 0.5
    base = src.floor().clamp(max=n_in - 1)
    t = (src - base).clamp(0, 1)
    a = -0.75

    def near(x):            # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):             # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    u = 1 - t
    weights = [far(t + 1), near(t), near(u), far(u + 1)]
    first = base.to(D.int64)
    taps = [(first + (i - 1)).clamp(0, n_in - 1).contiguous()._data for i in range(4)]
    w = [x.to(dtype if dtype.is_floating_point else ct).contiguous()._data for x in weights]
    return Pass(dim, n_in, taps[0], taps[1], w[0], w[1], more=(taps[2], taps[3], w[2], w[3]))


def upsample(input: Tensor, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: int | Sequence[int] | None = None,
                     scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """interpolate(..., mode='nearest')."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | Sequence[int] | None = None,
                      scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """interpolate(..., mode='bilinear', align_corners=True)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- unfold / fold -------------------------------------------------------------------------------------
def _pair(v, name, op):
    return ntuple(v, 2, name, op)


def _blocks(spatial, k, d, p, s):
    return [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(spatial, k, d, p, s)]


def _check_fold_params(k, d, p, s):
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} "
                           f"kernel_width: {k[1]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} "
                           f"stride_width: {s[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} "
                           f"dilation_width: {d[1]}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")


def _im2col(x, k, d, p, s):
    out = _wrap(_C.im2col(x._data, k, d, p, s))
    if needs_grad(x):
        node = Im2ColBackward0()
        node.args, node.size = (k, d, p, s), tuple(x._data.shape[2:])
        record(node, (x,), out)
    return out


def _col2im(cols, size, k, d, p, s):
    out = _wrap(_C.col2im(cols._data, size, k, d, p, s))
    if needs_grad(cols):
        node = Col2ImBackward0()
        node.args = (k, d, p, s)
        record(node, (cols,), out)
    return out


class Im2ColBackward0(Node):
    args = ()
    size = ()

    def backward(self, g):
        return (_col2im(g, self.size, *self.args),)


class Col2ImBackward0(Node):
    args = ()

    def backward(self, g):
        return (_im2col(g, *self.args),)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP, through pooling_grad's table) --------
# Padding, resampling, im2col and col2im are linear: the tangent goes through the same op.
def _resample_jvp(node, inputs, t, meta):
    return [_wrap(_run_passes(t[0]._data, node.passes, node.adjoint))]


JVP = {
    ConstantPadNdBackward0: lambda node, inputs, t, meta: [_constant_pad(t[0], [-a for a in node.amounts], 0)],
    _ResampleNode: _resample_jvp,
    Im2ColBackward0: lambda node, inputs, t, meta: [_im2col(t[0], *node.args)],
    Col2ImBackward0: lambda node, inputs, t, meta: [_col2im(t[0], tuple(meta[0][0][2:]), *node.args)],
}


def unfold(input: Tensor, kernel_size: int | tuple[int, ...], dilation: int | tuple[int, ...] = 1,
           padding: int | tuple[int, ...] = 0, stride: int | tuple[int, ...] = 1) -> Tensor:
    """Extract sliding blocks: (N, C, H, W) -> (N, C*kh*kw, L), L = number of blocks
    (unbatched (C, H, W) -> (C*kh*kw, L))."""
    tensor_arg(input, "unfold", "input")
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    k, d = _pair(kernel_size, "kernel_size", "unfold"), _pair(dilation, "dilation", "unfold")
    p, s = _pair(padding, "padding", "unfold"), _pair(stride, "stride", "unfold")
    _check_fold_params(k, d, p, s)
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    if any(v == 0 for v in x.shape[1:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    blocks = _blocks(x.shape[2:], k, d, p, s)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of the "
                           f"array of sliding blocks as ({blocks[0]}, {blocks[1]}), but its "
                           f"components must be at least one.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"im2col\" not implemented for '{input.dtype.name}'")
    out = _im2col(x, k, d, p, s)
    return out if batched else out.squeeze(0)


def fold(input: Tensor, output_size: int | tuple[int, ...], kernel_size: int | tuple[int, ...],
         dilation: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
         stride: int | tuple[int, ...] = 1) -> Tensor:
    """Combine sliding blocks (N, C*kh*kw, L) into (N, C, H, W), summing overlaps (the
    adjoint of unfold); output_size is (H, W)."""
    tensor_arg(input, "fold", "input")
    size = _pair(output_size, "output_size", "fold")
    k, d = _pair(kernel_size, "kernel_size", "fold"), _pair(dilation, "dilation", "fold")
    p, s = _pair(padding, "padding", "fold"), _pair(stride, "stride", "fold")
    if any(v <= 0 for v in size):
        raise RuntimeError(f"Expected output spatial size to be positive, but got: "
                           f"output_size={size}")
    _check_fold_params(k, d, p, s)
    if input.dim() not in (2, 3) or any(v == 0 for v in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
                           f"size and non-zero dimensions for input, but got: {list(input.shape)}")
    batched = input.dim() == 3
    cols = input if batched else input.unsqueeze(0)
    if cols.shape[1] % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={cols.shape[1]} and "
                           f"kernel_size={k}.")
    blocks = _blocks(size, k, d, p, s)
    if blocks[0] < 1 or blocks[1] < 1 or blocks[0] * blocks[1] != cols.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={cols.shape[2]}.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"col2im\" not implemented for '{input.dtype.name}'")
    out = _col2im(cols, size, k, d, p, s)
    return out if batched else out.squeeze(0)


# ---- pixel shuffle ---------------------------------------------------------------------------------
def _check_factor(v, name, op):
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    if v <= 0:
        raise RuntimeError(f"{op} expects {name} to be positive, but got {v}")
    return int(v)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = _check_factor(upscale_factor, "upscale_factor", "pixel_shuffle")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    c, h, w = input.shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = _check_factor(downscale_factor, "downscale_factor", "pixel_unshuffle")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    c, h, w = input.shape[-3:]
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects {'height' if h % r else 'width'} to be "
                           f"divisible by downscale_factor, but input.size({-2 if h % r else -1})="
                           f"{h if h % r else w} is not divisible by {r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(lead + (c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) -> (N, C, *) with the channels, seen as (groups, C/groups), transposed to
    (C/groups, groups): channel g * (C/groups) + k moves to k * groups + g."""
    tensor_arg(input, "channel_shuffle", "input", pos=1)
    if isinstance(groups, builtins.bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not "
                        f"{type(groups).__name__}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape(tuple(input.shape))
