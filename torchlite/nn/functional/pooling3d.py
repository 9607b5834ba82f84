"""3-d pooling (torch.nn.functional): max_pool3d, avg_pool3d, adaptive_avg_pool3d,
adaptive_max_pool3d, max_unpool3d, over (N, C, D, H, W) or (C, D, H, W) inputs.

The kernels of torchlite/_core/pool.pyx pool 2-d planes; a box window is separable, so each
3-d pooling is two 2-d poolings: one over every depth slice's (H, W) plane, then one over
(depth, 1) windows of the (D, OH*OW) planes of its result.

- Average: the divisor of a 3-d window (count_include_pad, ceil_mode) is the product of its
  per-dim factors, so averaging the plane averages over depth is PyTorch's average (up to
  rounding); a divisor_override divides once, at the end.
- Max: the plane pass gives each slice's first maximum in row-major order (a NaN wins, the
  last NaN of a window), the depth pass the first such slice by the same rule, which is the
  first maximum of the whole window in (d, h, w) order: PyTorch's choice, ties and NaN
  included.  The index is d * H * W + the plane index of that slice's maximum.  The values'
  gradient is a scatter by the indices (pooling_grad's ops), and its gradient a gather.

The arguments are checked first, in PyTorch's order and with its messages (this module sits
above pooling.py and uses its argument helpers)."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from ... import _dtype as D
from ...autograd.grad_mode import no_grad
from ...autograd.graph import Node, record, needs_grad
from . import pooling_grad as _G
from .pooling import _ints, _out_size, _unpool_size, integer_average
from ..._ops._kit import tensor_arg

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "max_unpool3d", "lp_pool3d"]

_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}


# ---- arguments -----------------------------------------------------------------------------
def _triple(v, name, op, message, allow_empty=False):
    """An int or a sequence of 1 or 3 ints as a triple (None when allow_empty and v is None
    or empty: the stride's default)."""
    if allow_empty and (v is None or (isinstance(v, (list, tuple)) and len(v) == 0)):
        return None
    t = _ints(v, name, op)
    if len(t) == 1:
        return t * 3
    if len(t) != 3:
        raise RuntimeError(f"{op}: {name} {message}")
    return t


def _batched(x):
    """(x as (N, C, D, H, W), whether x had no batch dim)."""
    return (x.unsqueeze(0), True) if x.dim() == 4 else (x, False)


def _check_window(x, k, s, p, d, ceil_mode, fn_name, check_input_size=False):
    """PyTorch's pooling_output_shape per dim and pool3d_shape_check: the output size."""
    for kk, ss, pp, dd in zip(k, s, p, d):
        if ss == 0:
            raise RuntimeError("stride should not be zero")
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
    out = [_out_size(n, kk, ss, pp, dd, ceil_mode)
           for n, kk, ss, pp, dd in zip(x.shape[-3:], k, s, p, d)]
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} "
                           f"kH: {k[1]} kW: {k[2]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} "
                           f"dW: {s[2]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} "
                           f"dilationH: {d[1]} dilationW: {d[2]}")
    shape = list(x.shape)
    for i in range(1 if x.dim() == 5 else 0, x.dim()):
        if shape[i] == 0:
            raise RuntimeError(f"{fn_name}: Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of {shape} and "
                               f"non-batch dimension 0 has length zero!")
    t, h, w = shape[-3:]
    if check_input_size and (t < k[0] or h < k[1] or w < k[2]):
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(v < 1 for v in out):
        c = shape[-4]
        raise RuntimeError(f"Given input size: ({c}x{t}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return out


def _check_rank(x):
    if x.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")


# ---- max pooling -------------------------------------------------------------------------------
class MaxPool3DWithIndicesBackward0(Node):
    """The gradient of a 3-d max pooling: g scattered to the saved indices of each
    (D, H, W) volume (seen by the kernels as a (D, H*W) plane)."""

    in_shape = ()

    def backward(self, g):
        n, c, d, h, w = self.in_shape
        flat = _G.scatter(g, self.saved("indices"), (n, c, d, h * w), 2)
        return (flat.view(n, c, d, h, w),)


class AdaptiveMaxPool3DBackward0(MaxPool3DWithIndicesBackward0):
    pass


def _max_pool_volumes(x, out, window):
    """(values, indices) of max pooling x (N, C, D, H, W) to `out` (OD, OH, OW) over the
    windows (kernel, stride, padding, dilation), or adaptively when window is None; the
    values record the gradient."""
    n, c, d, h, w = x.shape
    od, oh, ow = out
    with no_grad():
        planes = x.reshape(n, c * d, h, w)
        if window is None:
            v2, i2 = _G.max_pool(planes, (oh, ow), None, None, None, None, 2, adaptive=True)
            v2 = v2.view(n, c, d, oh * ow)
            v3, i3 = _G.max_pool(v2, (od, oh * ow), None, None, None, None, 2, adaptive=True)
        else:
            k, s, p, dil = window
            v2, i2 = _G.max_pool(planes, (oh, ow), k[1:], s[1:], p[1:], dil[1:], 2)
            v2 = v2.view(n, c, d, oh * ow)
            v3, i3 = _G.max_pool(v2, (od, oh * ow), (k[0], 1), (s[0], 1), (p[0], 0),
                                 (dil[0], 1), 2)
        # the depth pass's windows are one column wide: its index is depth * OH*OW + column
        depth = i3 // max(oh * ow, 1)
        in_plane = i2.view(n, c, d, oh * ow).gather(2, depth)
        idx = (depth * (h * w) + in_plane).view(n, c, od, oh, ow)
        y = v3.view(n, c, od, oh, ow)
    if needs_grad(x):
        node = (AdaptiveMaxPool3DBackward0 if window is None else MaxPool3DWithIndicesBackward0)()
        node.in_shape = tuple(x.shape)
        node.save_output(indices=idx)
        record(node, (x,), y)
    return y, idx


def max_pool3d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
                            dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """(values, indices) of 3-d max pooling over (N, C, D, H, W) or (C, D, H, W); each
    index counts positions within its (D, H, W) volume."""
    op = "max_pool3d"
    tensor_arg(input, op, "input", pos=1)
    k = _triple(kernel_size, "kernel_size", op, "must either be a single int, or a tuple of "
                "three ints")
    s = _triple(stride, "stride", op, "must either be omitted, a single int, or a tuple of "
                "three ints", allow_empty=True) or k
    p = _triple(padding, "padding", op, "must either be a single int, or a tuple of three ints")
    d = _triple(dilation, "dilation", op, "must be either a single int, or a tuple of three ints")
    _check_rank(input)
    out = _check_window(input, k, s, p, d, ceil_mode, "max_pool3d_with_indices_out_cpu_template()")
    x, unbatched = _batched(input)
    y, idx = _max_pool_volumes(x, out, (k, s, p, d))
    return (y.squeeze(0), idx.squeeze(0)) if unbatched else (y, idx)


def max_pool3d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """3-d max pooling (stride defaults to kernel_size); with return_indices, also the
    position of each maximum within its input volume (d * H * W + h * W + w)."""
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


# ---- average pooling ---------------------------------------------------------------------------
def avg_pool3d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """3-d average pooling over (N, C, D, H, W) or (C, D, H, W).  Each window's sum is divided
    by divisor_override if given, else by its size counting padding (count_include_pad) or
    not."""
    op = "avg_pool3d"
    tensor_arg(input, op, "input", pos=1)
    k = _triple(kernel_size, "kernel_size", op, "must be a single int, or a tuple of three ints")
    s = _triple(stride, "stride", op, "must be omitted, a single int, or a tuple of three ints",
                allow_empty=True) or k
    p = _triple(padding, "padding", op, "must be a single int, or a tuple of three ints")
    _check_rank(input)
    if divisor_override is not None:
        if isinstance(divisor_override, builtins.bool) or \
                not isinstance(divisor_override, numbers.Integral):
            raise TypeError(f"{op}(): argument 'divisor_override' must be int, not "
                            f"{type(divisor_override).__name__}")
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    od, oh, ow = _check_window(input, k, s, p, (1, 1, 1), ceil_mode, "avg_pool3d()",
                               check_input_size=True)
    if input.dtype is D.int64:
        return integer_average(lambda x, div: avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, div),
                               input, divisor_override)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"avg_pool3d_out_frame\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")
    x, unbatched = _batched(input)
    n, c, d, h, w = x.shape
    cip = builtins.bool(count_include_pad)
    # with a divisor_override the plane pass sums (divisor 1) and the depth pass divides
    plane_div = 1 if divisor_override else 0
    planes = _G.avg_pool(x.reshape(n, c * d, h, w), (oh, ow),
                         _G.AvgParams(k[1:], s[1:], p[1:], cip, plane_div), 2)
    cols = planes.view(n, c, d, oh * ow)
    y = _G.avg_pool(cols, (od, oh * ow),
                    _G.AvgParams((k[0], 1), (s[0], 1), (p[0], 0), cip, int(divisor_override or 0)),
                    2).view(n, c, od, oh, ow)
    return y.squeeze(0) if unbatched else y


# ---- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_output(input, output_size, op, negative_message):
    """PyTorch's _list_with_default (None keeps the input's size) and the size checks."""
    if isinstance(output_size, (list, tuple)):
        if input.dim() <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        size = [input.shape[-len(output_size) + i] if v is None else v
                for i, v in enumerate(output_size)]
    else:
        size = [output_size] * 3
    size = list(_ints(size, "output_size", op)) if size else []
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got"
                           f"{': ' if op == 'adaptive_max_pool3d' else ' '}{list(input.shape)}")
    if len(size) != 3:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be 3"
                           if op == "adaptive_max_pool3d" else f"{op}: output_size must be 3")
    shape = list(input.shape)
    for i in range(1 if input.dim() == 5 else 0, input.dim()):
        if shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shape} with dimension {i} "
                               f"being empty")
    if any(v < 0 for v in size):
        raise RuntimeError(negative_message(shape, size))
    return size


def adaptive_avg_pool3d(input: Tensor, output_size: int | tuple[int | None, ...] | None) -> Tensor:
    """Average over an output_size grid of windows covering each (D, H, W) volume (window i
    spans [floor(i*L/n), ceil((i+1)*L/n)) per dim); None keeps that input dim."""
    op = "adaptive_avg_pool3d"
    tensor_arg(input, op, "input", pos=1)
    od, oh, ow = _adaptive_output(
        input, output_size, op,
        lambda shape, s: (f"{op}: elements of output_size must be greater than or equal to 0 "
                          f"but received {{{s[0]}, {s[1]},{s[2]}}}"))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")
    x, unbatched = _batched(input)
    n, c, d, h, w = x.shape
    planes = _G.adaptive_avg_pool(x.reshape(n, c * d, h, w), (oh, ow), 2)
    y = _G.adaptive_avg_pool(planes.view(n, c, d, oh * ow), (od, oh * ow), 2)
    y = y.view(n, c, od, oh, ow)
    return y.squeeze(0) if unbatched else y


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: int | tuple[int | None, ...] | None,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """(values, indices) of adaptive 3-d max pooling; indices count positions within each
    (D, H, W) volume."""
    op = "adaptive_max_pool3d"
    tensor_arg(input, op, "input", pos=1)
    size = _adaptive_output(
        input, output_size, op,
        lambda shape, s: (f"Trying to create tensor with negative dimension "
                          f"{min(s)}: {shape[:-3] + list(s)}"))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_max_pool3d_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")
    x, unbatched = _batched(input)
    y, idx = _max_pool_volumes(x, size, None)
    return (y.squeeze(0), idx.squeeze(0)) if unbatched else (y, idx)


def adaptive_max_pool3d(input: Tensor, output_size: int | tuple[int | None, ...] | None,
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over an output_size grid of windows covering each volume (with indices)."""
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


# ---- max_unpool ------------------------------------------------------------------------------------
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The partial inverse of max_pool3d: zeros, with input written at the indices (each
    counting positions within an output volume)."""
    op = "max_unpool3d"
    tensor_arg(input, op, "input", pos=1)
    msg = "must either be a single int, or a tuple of three ints"
    k = _triple(kernel_size, "kernel_size", op, msg)
    s = _triple(stride, "stride", op, msg, allow_empty=True) or k
    p = _triple(padding, "padding", op, msg)
    size = _unpool_size(input, k, s, p, output_size, 3)
    if not isinstance(indices, Tensor) or indices.dtype is not D.int64:
        got = _SCALAR_NAMES[indices.dtype.name] if isinstance(indices, Tensor) else "None"
        raise RuntimeError(f"elements in indices should be type int64 but got: {got}")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"max_unpooling3d_forward_out_cpu(): Expected input to have "
                               f"non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {i} being empty.")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(s)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"max_unpool3d\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")
    volume = size[0] * size[1] * size[2]
    if input.is_meta or indices.is_meta:      # the shape only (the indices' values are not there)
        from ..._ops.creation import empty
        return empty(tuple(input.shape[:-3]) + tuple(size), dtype=input.dtype, device="meta")
    bad = ((indices < 0) | (indices >= volume)).flatten().nonzero()
    if bad.numel():
        raise RuntimeError(f"Found an invalid max index: {indices.flatten()[bad[0, 0]].item()} "
                           f"(output volumes are of size {size[0]}x{size[1]}x{size[2]})")
    x, unbatched = _batched(input)
    idx = indices.unsqueeze(0) if unbatched else indices
    n, c = x.shape[:2]
    y = _G.max_unpool(x, idx, (n, c, size[0], size[1] * size[2]), 2).view(n, c, *size)
    return y.squeeze(0) if unbatched else y


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over volumes: (sum over each window of x^p)^(1/p), PyTorch's
    formula step for step (so a window whose sum of powers is negative or NaN gives what
    PyTorch gives, gradients included)."""
    kd, kh, kw = _triple(kernel_size, "kernel_size", "lp_pool3d",
                         "must either be a single int, or a tuple of three ints")
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kd * kh * kw).pow(1.0 / norm_type)



# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Each output is one input element (the saved flat index in its (D, H, W) volume): the tangent
# there.  AdaptiveMaxPool3DBackward0 takes its base's rule.
JVP = {MaxPool3DWithIndicesBackward0: lambda node, inputs, t, meta: [_G.gather_flat(t[0], node.saved("indices"))]}
