"""Pooling (torch.nn.functional): max, average, adaptive average / max, max_unpool, lp_pool,
over 1-d (N, C, L) and 2-d (N, C, H, W) inputs, batched or not.

Each function checks its arguments with PyTorch's messages, computes the output size
(ceil_mode, padding, dilation) and calls one op of pooling_grad.py (a kernel of
torchlite/_core/pool.pyx plus its backward node).  Max pooling picks the first maximum of each
window in row-major order, and a NaN wins over any number (the last NaN of a window), as in
PyTorch; the indices count positions within each input plane (H * W)."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from ... import _dtype as D
from . import pooling_grad as _G
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d", "lp_pool1d",
           "lp_pool2d"]

_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}


# ---- arguments -----------------------------------------------------------------------------
def _ints(v, name, op):
    """v as a tuple of Python ints (an int gives a 1-tuple); TypeError for non-integers."""
    seq = v if isinstance(v, (list, tuple)) else (v,)
    out = []
    for a in seq:
        if isinstance(a, builtins.bool) or not isinstance(a, (numbers.Integral, Tensor)):
            raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                            f"{type(a).__name__}")
        out.append(a.__index__())
    return tuple(out)


def _pair_arg(v, name, op, what, allow_empty=False):
    """A 2-d pooling argument: an int or a tuple of 1 or 2 ints (PyTorch's message for
    another length); None or () (stride only) gives None."""
    if allow_empty and (v is None or (isinstance(v, (list, tuple)) and len(v) == 0)):
        return None
    t = _ints(v, name, op)
    if len(t) == 1:
        return t * 2
    if len(t) != 2:
        raise RuntimeError(f"{op}: {name} {what}")
    return t


def _single_arg(v, name, op, allow_empty=False):
    """A 1-d pooling argument: an int or a sequence of one int."""
    if allow_empty and (v is None or (isinstance(v, (list, tuple)) and len(v) == 0)):
        return None
    t = _ints(v, name, op)
    if len(t) != 1:
        raise RuntimeError(f"{op}() {name} must be an int, list of ints or tuple of ints of size 1 "
                           f"but got size {len(t)}")
    return t


def _check_rank(x, nd, op, style):
    """Batched or unbatched input with non-empty non-batch dims."""
    lo, hi = nd + 1, nd + 2
    shape = list(x.shape)
    if x.dim() not in (lo, hi):
        if style == "range":
            raise RuntimeError(f"Expected {lo} to {hi} dimensions, but got {x.dim()}-dimensional "
                               f"tensor for argument #1 'self' (while checking arguments for {op})")
        if style == "adaptive":
            raise RuntimeError(f"{op}(): Expected {lo}D or {hi}D tensor, but got {shape}")
        raise RuntimeError(f"{op}: Expected {lo}D or {hi}D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{shape}")
    start = 1 if x.dim() == hi else 0
    for d in range(start, x.dim()):
        if shape[d] == 0:
            if style == "adaptive":
                raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                                   f"dimensions, but input has sizes {shape} with dimension {d} "
                                   f"being empty")
            raise RuntimeError(f"{op}: Expected {lo}D or {hi}D (batch mode) tensor with optional 0 "
                               f"dim batch size for input, but got:{shape}")


def _float_only(x, op):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_SCALAR_NAMES[x.dtype.name]}'")


def integer_average(run, input, divisor_override):
    """Average pooling of an int64 input as PyTorch computes it: each window's integer sum
    divided by its divisor, truncated toward zero.  run(x, divisor_override) pools a float64
    tensor with the caller's window arguments: the sums come from it with a divisor of 1
    (exact while they stay below 2**53 in magnitude), and each window's divisor is the ratio
    of two poolings of ones -- the elements counted, over the average the caller's arguments
    give them (1 / divisor of them per counted element)."""
    ones = input.new_ones(tuple(input.shape), dtype=D.float64)
    counted = run(ones, 1)
    divisor = (counted / run(ones, divisor_override)).round().nan_to_num(1.0).to(D.int64)
    sums = run(input.to(D.float64), 1).to(D.int64)
    # a window with no element of the input (divisor 0/0 above) sums to 0: any divisor will do
    return sums.div(divisor.masked_fill(divisor == 0, 1), rounding_mode="trunc")


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape (the pad <= kernel/2 check is the caller's)."""
    n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= size + p:
        n -= 1
    return n


def _window_check(x, k, s, p, d, ceil_mode, nd):
    """PyTorch's pool2d_shape_check (2-d form sizes): returns the output size (OH, OW)."""
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {d[0]} "
                           f"dilationW: {d[1]}")
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
    h, w = _G.spatial2(x.shape, nd)
    oh = _out_size(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = _out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        c = x.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{oh}x{ow}). Output size is too small")
    return oh, ow


# ---- max pooling -------------------------------------------------------------------------------
_KSIZE_MSG = "must either be a single int, or a tuple of two ints"
_STRIDE_MSG = "must either be omitted, a single int, or a tuple of two ints"
_DIL_MSG = "must be either a single int, or a tuple of two ints"


def _max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, op="max_pool2d"):
    tensor_arg(input, op, "input", pos=1)
    k = _pair_arg(kernel_size, "kernel_size", op, _KSIZE_MSG)
    s = _pair_arg(stride, "stride", op, _STRIDE_MSG, allow_empty=True) or k
    p = _pair_arg(padding, "padding", op, _KSIZE_MSG)
    d = _pair_arg(dilation, "dilation", op, _DIL_MSG)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    _check_rank(input, 2, op, "batch")
    oh, ow = _window_check(input, k, s, p, d, ceil_mode, 2)
    return _G.max_pool(input, (oh, ow), k, s, p, d, 2)


def _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, op="max_pool1d"):
    tensor_arg(input, op, "input", pos=1)
    k = _single_arg(kernel_size, "kernel_size", op)
    s = _single_arg(stride, "stride", op, allow_empty=True) or k
    p = _single_arg(padding, "padding", op)
    d = _single_arg(dilation, "dilation", op)
    _check_rank(input, 1, op, "batch")
    if k[0] <= 0:
        raise RuntimeError(f"{op}() kernel_size must be greater than zero, but got {k[0]}")
    if s[0] <= 0:
        raise RuntimeError(f"{op}() stride must be greater than zero, but got {s[0]}")
    if p[0] < 0:
        raise RuntimeError(f"{op}() padding must be non-negative, but got {p[0]}")
    if p[0] > k[0] // 2:
        raise RuntimeError(f"{op}() padding should be at most half of kernel size, but got "
                           f"padding={p[0]} and kernel_size={k[0]}")
    if d[0] <= 0:
        raise RuntimeError(f"{op}() dilation must be greater than zero, but got {d[0]}")
    n = _out_size(input.shape[-1], k[0], s[0], p[0], d[0], ceil_mode)
    if n <= 0:
        raise RuntimeError(f"{op}() Invalid computed output size: {n}")
    return _G.max_pool(input, (1, n), (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]), 1)


def max_pool1d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None,
                            padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """(values, indices) of 1-d max pooling over (N, C, L) or (C, L)."""
    return _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None,
                            padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """(values, indices) of 2-d max pooling over (N, C, H, W) or (C, H, W)."""
    return _max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
               dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling (stride defaults to kernel_size); with return_indices, also the
    position of each maximum within its input row."""
    out, idx = _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
               dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling (stride defaults to kernel_size); with return_indices, also the
    position of each maximum within its input plane (h * W + w)."""
    out, idx = _max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


# ---- average pooling ---------------------------------------------------------------------------
def _avg_pool(input, k, s, p, ceil_mode, count_include_pad, divisor, nd, op):
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if divisor is not None:
        if isinstance(divisor, builtins.bool) or not isinstance(divisor, numbers.Integral):
            raise TypeError(f"{op}(): argument 'divisor_override' must be int, not "
                            f"{type(divisor).__name__}")
        if divisor == 0:
            raise RuntimeError("divisor must be not zero")
    oh, ow = _window_check(input, k, s, p, (1, 1), ceil_mode, nd)

    def run(x, div):
        params = _G.AvgParams(k, s, p, builtins.bool(count_include_pad), int(div or 0))
        return _G.avg_pool(x, (oh, ow), params, nd)
    if input.dtype is D.int64:
        return integer_average(run, input, divisor)
    _float_only(input, op)
    return run(input, divisor)


def avg_pool1d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-d average pooling over (N, C, L) or (C, L)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(avg_pool1d, locals())
    op = "avg_pool1d"
    tensor_arg(input, op, "input", pos=1)
    k = _single_arg(kernel_size, "kernel_size", op)
    s = _single_arg(stride, "stride", op, allow_empty=True) or k
    p = _single_arg(padding, "padding", op)
    _check_rank(input, 1, op, "range")
    return _avg_pool(input, (1,) + k, (1,) + s, (0,) + p, ceil_mode, count_include_pad, None,
                     1, op)


def avg_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-d average pooling over (N, C, H, W) or (C, H, W).  Each window's sum is divided by
    divisor_override if given, else by its size counting padding (count_include_pad) or not."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(avg_pool2d, locals())
    op = "avg_pool2d"
    tensor_arg(input, op, "input", pos=1)
    k = _pair_arg(kernel_size, "kernel_size", op, _KSIZE_MSG)
    s = _pair_arg(stride, "stride", op, _STRIDE_MSG, allow_empty=True) or k
    p = _pair_arg(padding, "padding", op, _KSIZE_MSG)
    _check_rank(input, 2, op, "batch")
    return _avg_pool(input, k, s, p, ceil_mode, count_include_pad, divisor_override, 2, op)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x^p)^(1/p)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(lp_pool1d, locals())
    k = _single_arg(kernel_size, "kernel_size", "lp_pool1d")
    out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(k[0]).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x^p)^(1/p)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(lp_pool2d, locals())
    kh, kw = _pair_arg(kernel_size, "kernel_size", "lp_pool2d", _KSIZE_MSG)
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kh * kw).pow(1.0 / norm_type)


# ---- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_size(input, output_size, nd, op):
    """The output size (2-d form); None entries keep the input's size."""
    if nd == 1:
        seq = output_size if isinstance(output_size, (list, tuple)) else (output_size,)
        if len(seq) != 1:
            raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got "
                               f"{len(seq)})")
        size = _ints(seq, "output_size", op)
        if size[0] < 0:
            raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                               f"but received {{{size[0]}}}")
        return (1, size[0])
    seq = output_size if isinstance(output_size, (list, tuple)) else (output_size, output_size)
    if len(seq) != 2:
        raise RuntimeError(f"{op}: output_size must be 2")
    size = tuple(input.shape[-2 + i] if v is None else _ints(v, "output_size", op)[0]
                 for i, v in enumerate(seq))
    if any(v < 0 for v in size):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{size[0]}, {size[1]}}}")
    return size


def _adaptive_input(input, nd, op, output_size=None):
    tensor_arg(input, op, "input", pos=1)
    if nd > 1 and isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        # PyTorch's Python wrapper checks this first, with its own error
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    _check_rank(input, nd, op, "range" if nd == 1 else "adaptive")
    if nd == 1:
        _check_rank(input, nd, op.replace("1d", "2d"), "adaptive")


def adaptive_avg_pool1d(input: Tensor, output_size: int | tuple[int, ...]) -> Tensor:
    """Average over output_size windows that cover each row (window i spans
    [floor(i*L/n), ceil((i+1)*L/n)))."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(adaptive_avg_pool1d, locals())
    op = "adaptive_avg_pool1d"
    _adaptive_input(input, 1, op)
    size = _adaptive_size(input, output_size, 1, op)
    _float_only(input, "adaptive_avg_pool2d")
    return _G.adaptive_avg_pool(input, size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int | None, ...] | None) -> Tensor:
    """Average over an output_size grid of windows covering each plane."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(adaptive_avg_pool2d, locals())
    op = "adaptive_avg_pool2d"
    _adaptive_input(input, 2, op, output_size)
    size = _adaptive_size(input, output_size, 2, op)
    _float_only(input, op)
    return _G.adaptive_avg_pool(input, size, 2)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: int | tuple[int, ...],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    op = "adaptive_max_pool1d"
    _adaptive_input(input, 1, op)
    size = _adaptive_size(input, output_size, 1, op)
    return _G.max_pool(input, size, None, None, None, None, 1, adaptive=True)


def adaptive_max_pool2d_with_indices(input: Tensor,
                                     output_size: int | tuple[int | None, ...] | None,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    op = "adaptive_max_pool2d"
    _adaptive_input(input, 2, op, output_size)
    size = _adaptive_size(input, output_size, 2, op)
    return _G.max_pool(input, size, None, None, None, None, 2, adaptive=True)


def adaptive_max_pool1d(input: Tensor, output_size: int | tuple[int, ...],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over output_size windows covering each row (with their indices if asked)."""
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size: int | tuple[int | None, ...] | None,
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over an output_size grid of windows covering each plane (with indices)."""
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


# ---- max_unpool ------------------------------------------------------------------------------------
def _unpool_size(input, k, s, p, output_size, nd):
    """The default size (in-1)*s - 2p + k per spatial dim, or output_size checked against the
    range PyTorch allows (default - s, default + s), exclusive."""
    spatial = list(input.shape[-nd:])
    default = [(i - 1) * ss - 2 * pp + kk for i, kk, ss, pp in zip(spatial, k, s, p)]
    if output_size is None:
        return default
    size = list(_ints(output_size, "output_size", "max_unpool"))
    if len(size) == nd + 2 or len(size) == nd + 1:
        size = size[-nd:]
    if len(size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, "
                         f"but it has a length of '{len(size)}'")
    for d in range(nd):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(size)}" (dim {d} must be between {lo} '
                             f'and {hi})')
    return size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, op):
    tensor_arg(input, op, "input", pos=1)
    if not isinstance(indices, Tensor) or indices.dtype is not D.int64:
        raise RuntimeError(f"{op}(): expected indices to be an int64 tensor")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.dim()} dimensions.")
    if nd == 1:
        k = _single_arg(kernel_size, "kernel_size", op)
        s = _single_arg(stride, "stride", op, allow_empty=True) or k
        p = _single_arg(padding, "padding", op)
    else:
        k = _pair_arg(kernel_size, "kernel_size", op, _KSIZE_MSG)
        s = _pair_arg(stride, "stride", op, _STRIDE_MSG, allow_empty=True) or k
        p = _pair_arg(padding, "padding", op, _KSIZE_MSG)
    size = _unpool_size(input, k, s, p, output_size, nd)
    if any(v <= 0 for v in size):
        raise RuntimeError(f"{op}: invalid output size {size}")
    _float_only(input, op)
    out_shape = tuple(input.shape[:-nd]) + tuple(size)
    try:
        return _G.max_unpool(input, indices, out_shape, nd)
    except IndexError as e:
        plane = " x ".join(map(str, size))
        raise RuntimeError(f"Found an invalid max index ({e}; output volumes are of size "
                           f"{plane})") from None


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The partial inverse of max_pool1d: zeros, with input written at the indices."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None, padding: int | tuple[int, ...] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The partial inverse of max_pool2d: zeros, with input written at the indices."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")
