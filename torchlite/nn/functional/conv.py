"""Convolutions: conv1d, conv2d, conv_transpose1d, conv_transpose2d (torch.nn.functional).

Each is one op over the kernels of torchlite/_core/conv.pyx (im2col + GEMM per image) with a
`ConvolutionBackward0` node (conv_grad.py) whose gradients are convolutions again, so higher
derivatives work.  This module checks the arguments in PyTorch's order and with its messages;
an unbatched input (no batch dim) is convolved as a batch of one, as in PyTorch."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from . import conv_grad as _G
from ._utils import ntuple
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]

# dtype names as PyTorch's messages spell them
_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}
_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short",
            "int32": "int", "int64": "long", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double"}


def _size_str(t):
    return str(list(t.shape))


def _check_dtypes(input, weight, bias, op):
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAMES[input.dtype.name]} but found "
                           f"{_SCALAR_NAMES[weight.dtype.name]}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_C_NAMES[input.dtype.name]}) and bias type "
                           f"({_C_NAMES[bias.dtype.name]}) should be the same")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{op}\" not implemented for '{_SCALAR_NAMES[input.dtype.name]}'")


def _check_input_rank(input, nd, op):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                           f"but got input of size: {_size_str(input)}")


def _check_geometry(input, weight, bias, stride, padding, dilation, groups, transposed,
                    output_padding=None):
    """PyTorch's checks of a (batched) convolution's shapes and parameters."""
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.dim() != input.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional "
                           f"weight {_size_str(weight)}, but got {input.dim()}-dimensional input of "
                           f"size {_size_str(input)} instead")
    ws = list(weight.shape)
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size [{ws}] instead")
    prefix = "Given transposed=1, " if transposed else f"Given groups={groups}, "
    channels = ws[0] if transposed else ws[1] * groups
    if input.shape[1] != channels:
        raise RuntimeError(f"{prefix}weight of size {ws}, expected input{_size_str(input)} to have "
                           f"{channels} channels, but got {input.shape[1]} channels instead")
    out_channels = ws[1] * groups if transposed else ws[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        prefix = "Given transposed=1, " if transposed else "Given "
        raise RuntimeError(f"{prefix}weight of size {ws}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {_size_str(bias)} instead")
    spatial = input.shape[2:]
    ks = ws[2:]
    if not transposed:
        padded = [s + 2 * p for s, p in zip(spatial, padding)]
        eff = [d * (k - 1) + 1 for d, k in zip(dilation, ks)]
        if any(p < e for p, e in zip(padded, eff)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be "
                               f"greater than actual input size")


def _same_padding(input, ks, stride, dilation, op):
    """padding='same': the padding of each side, padding the input on the right first where
    the total is odd (as PyTorch does).  Returns (input, padding)."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads, extra = [], []
    for k, d in zip(ks, dilation):
        total = d * (k - 1)
        left = total // 2
        pads.append(left)
        extra.append(total - 2 * left)
    if any(extra):
        from .vision import pad
        spec = []
        for e in reversed(extra):       # F.pad lists the last dim first
            spec += [0, e]
        input = pad(input, spec)
    return input, tuple(pads)


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, op):
    tensor_arg(input, op, "input", pos=1)
    tensor_arg(weight, op, "weight", pos=2)
    if bias is not None:
        tensor_arg(bias, op, "bias", pos=3)
    _check_input_rank(input, nd, op)
    if isinstance(groups, builtins.bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    groups = int(groups)
    wdims = weight.dim() - 2 if weight.dim() >= 3 else nd
    stride = ntuple(stride, wdims, "stride", op)
    dilation = ntuple(dilation, wdims, "dilation", op)
    unbatched = input.dim() == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * wdims
        elif padding == "same":     # the geometry is checked below, on the padded input
            input, padding = _same_padding(input, weight.shape[2:], stride, dilation, op)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = ntuple(padding, wdims, "padding", op)
    _check_geometry(input, weight, bias, stride, padding, dilation, groups, False)
    _check_dtypes(input, weight, bias, op)
    if input.shape[1] == 0:         # PyTorch gives no output channels for no input channels
        weight = weight[:0]
        bias = None if bias is None else bias[:0]
    out = _G.conv(input, weight, bias, _G.ConvSpec(stride, padding, dilation, groups, nd))
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of input (N, C, L) or (C, L) with weight
    (O, C/groups, K); padding is an int, a 1-tuple, 'valid' or 'same'."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(conv1d, locals())
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """2-d convolution (cross-correlation) of input (N, C, H, W) or (C, H, W) with weight
    (O, C/groups, KH, KW); padding is an int, a pair, 'valid' or 'same'."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(conv2d, locals())
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation,
                      nd, op):
    tensor_arg(input, op, "input", pos=1)
    tensor_arg(weight, op, "weight", pos=2)
    if bias is not None:
        tensor_arg(bias, op, "bias", pos=3)
    _check_input_rank(input, nd, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    if isinstance(groups, builtins.bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    groups = int(groups)
    wdims = weight.dim() - 2 if weight.dim() >= 3 else nd
    stride = ntuple(stride, wdims, "stride", op)
    padding = ntuple(padding, wdims, "padding", op)
    output_padding = ntuple(output_padding, wdims, "output_padding", op)
    dilation = ntuple(dilation, wdims, "dilation", op)
    unbatched = input.dim() == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    _check_geometry(input, weight, bias, stride, padding, dilation, groups, True, output_padding)
    if any(op_ >= s and op_ >= d for op_, s, d in zip(output_padding, stride, dilation)):
        full = lambda t: (0,) * (2 - len(t)) + tuple(t)     # noqa: E731  (2-d names, as torch)
        (oph, opw), (sh, sw), (dh, dw) = full(output_padding), full(stride), full(dilation)
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding_height: {oph} output_padding_width: {opw} stride_height: "
                           f"{sh or 1} stride_width: {sw} dilation_height: {dh or 1} dilation_width: {dw}")
    ks = weight.shape[2:]
    out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1
           for i, s, p, d, k, o in zip(input.shape[2:], stride, padding, dilation, ks, output_padding)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
                           f"Output size is too small")
    _check_dtypes(input, weight, bias, op)
    spec = _G.ConvSpec(stride, padding, dilation, groups, nd)
    res = _G.conv_t(input, weight, bias, spec, (1, out[0]) if nd == 1 else tuple(out))
    return res.squeeze(0) if unbatched else res


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """1-d transposed convolution of input (N, C_in, L) with weight (C_in, C_out/groups, K)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(conv_transpose1d, locals())
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1, "conv_transpose1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """2-d transposed convolution of input (N, C_in, H, W) with weight
    (C_in, C_out/groups, KH, KW): the gradient of conv2d with respect to its input."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(conv_transpose2d, locals())
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2, "conv_transpose2d")
