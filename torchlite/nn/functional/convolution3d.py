"""3-d convolutions: conv3d and conv_transpose3d (torch.nn.functional), built on the 2-d ones.

The kernels of torchlite/_core/conv.pyx see 2-d planes only, so a 3-d convolution is one
2-d convolution whose channels carry the kernel's depth taps:

    conv3d             the input's depth is unfolded (im2col along depth, F.unfold with a
                       (KD, 1) kernel over (depth, H*W) planes): (N, C, D, H, W) ->
                       (N*OD, C*KD, H, W); the weight (O, C/g, KD, KH, KW) is the 2-d weight
                       (O, C/g*KD, KH, KW) as it lies in memory, so one conv2d (one GEMM per
                       group) does the whole product, groups included.
    conv_transpose3d   the adjoint: one conv_transpose2d of the depth slices (N*ID, C_in, H,
                       W) with the weight seen as (C_in, C_out/g*KD, KH, KW) gives every
                       depth tap's contribution, and F.fold along depth (col2im with a
                       (KD, 1) kernel) adds them into their output depths.

Both are compositions of differentiable ops (unfold/fold, views, conv2d/conv_transpose2d), so
their gradients, of every order, are the composition's.  The arguments are checked first with
conv.py's checks and PyTorch's messages (this module sits above conv.py and uses them)."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from .conv import (_check_input_rank, _check_geometry, _check_dtypes,
                   _same_padding, conv2d, conv_transpose2d)
from ._utils import ntuple
from ..._ops._kit import tensor_arg
from ..._ops.creation import zeros
from .vision import unfold, fold, pad

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["conv3d", "conv_transpose3d"]


def _groups_arg(groups, op):
    if isinstance(groups, builtins.bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    return int(groups)


def _depth_columns(x, kd, stride_d, pad_d, dil_d, od):
    """x (N, C, D, H, W) -> (N*OD, C*KD, H, W): entry [n*OD + o, c*KD + k] is the depth
    slice o*stride_d + k*dil_d - pad_d of channel c (zeros outside the input)."""
    n, c, d, h, w = x.shape
    if c == 0:                                  # nothing to unfold (no output channels either)
        return zeros((n * od, 0, h, w), dtype=x.dtype, device=x.device)
    if kd == 1 and pad_d == 0 and stride_d == 1:
        cols = x                                # every depth slice as it is
    else:
        cols = unfold(x.reshape(n, c, d, h * w), (kd, 1), dilation=(dil_d, 1),
                      padding=(pad_d, 0), stride=(stride_d, 1)).view(n, c * kd, od, h, w)
    # (N, C*KD, OD, H, W) -> (N, OD, C*KD, H, W); a copy unless N == 1 (the 2-d kernels take
    # any strides)
    return cols.transpose(1, 2).reshape(n * od, c * kd, h, w)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """3-d convolution (cross-correlation) of input (N, C, D, H, W) or (C, D, H, W) with
    weight (O, C/groups, KD, KH, KW); padding is an int, a triple, 'valid' or 'same'."""
    op = "conv3d"
    tensor_arg(input, op, "input", pos=1)
    tensor_arg(weight, op, "weight", pos=2)
    if bias is not None:
        tensor_arg(bias, op, "bias", pos=3)
    _check_input_rank(input, 3, op)
    groups = _groups_arg(groups, op)
    wdims = weight.dim() - 2 if weight.dim() >= 3 else 3
    stride = ntuple(stride, wdims, "stride", op)
    dilation = ntuple(dilation, wdims, "dilation", op)
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * wdims
        elif padding == "same":
            input, padding = _same_padding(input, weight.shape[2:], stride, dilation, op)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = ntuple(padding, wdims, "padding", op)
    _check_geometry(input, weight, bias, stride, padding, dilation, groups, False)
    _check_dtypes(input, weight, bias, op)
    n = input.shape[0]
    o, cg, kd, kh, kw = weight.shape
    od = (input.shape[2] + 2 * padding[0] - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    cols = _depth_columns(input, kd, stride[0], padding[0], dilation[0], od)
    y = conv2d(cols, weight.reshape(o, cg * kd, kh, kw), bias, stride[1:], padding[1:],
               dilation[1:], groups)
    o, oh, ow = y.shape[1:]     # no output channels for no input channels, as in PyTorch
    out = y.view(n, od, o, oh, ow).transpose(1, 2).contiguous()
    return out.squeeze(0) if unbatched else out


def _check_output_padding(output_padding, stride, dilation):
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")
        parts = [f"output_padding_{n}: {v}" for n, v in zip(names, output_padding)]
        parts += [f"stride_{n}: {v}" for n, v in zip(names, stride)]
        parts += [f"dilation_{n}: {v}" for n, v in zip(names, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(parts))


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """3-d transposed convolution of input (N, C_in, D, H, W) or (C_in, D, H, W) with weight
    (C_in, C_out/groups, KD, KH, KW): the gradient of conv3d with respect to its input."""
    op = "conv_transpose3d"
    tensor_arg(input, op, "input", pos=1)
    tensor_arg(weight, op, "weight", pos=2)
    if bias is not None:
        tensor_arg(bias, op, "bias", pos=3)
    _check_input_rank(input, 3, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    groups = _groups_arg(groups, op)
    wdims = weight.dim() - 2 if weight.dim() >= 3 else 3
    stride = ntuple(stride, wdims, "stride", op)
    padding = ntuple(padding, wdims, "padding", op)
    output_padding = ntuple(output_padding, wdims, "output_padding", op)
    dilation = ntuple(dilation, wdims, "dilation", op)
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    _check_geometry(input, weight, bias, stride, padding, dilation, groups, True, output_padding)
    _check_output_padding(output_padding, stride, dilation)
    ks = weight.shape[2:]
    out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1
           for i, s, p, d, k, o in zip(input.shape[2:], stride, padding, dilation, ks,
                                       output_padding)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
                           f"Output size is too small")
    _check_dtypes(input, weight, bias, op)
    n, c_in, i_d, i_h, i_w = input.shape
    cog, kd, kh, kw = weight.shape[1:]
    c_out = cog * groups
    # every depth tap at once: output channel c*KD + k of the 2-d result is tap k of channel c
    slices = input.transpose(1, 2).reshape(n * i_d, c_in, i_h, i_w)
    taps = conv_transpose2d(slices, weight.reshape(c_in, cog * kd, kh, kw), None, stride[1:],
                            padding[1:], output_padding[1:], groups, dilation[1:])
    oh, ow = taps.shape[2:]
    cols = taps.view(n, i_d, c_out * kd, oh * ow).transpose(1, 2).reshape(n, c_out * kd,
                                                                          i_d * oh * ow)
    # col2im along depth; an output_padding below the stride is room fold leaves as zeros,
    # one at or above it (allowed under the dilation) is padded on after
    d_out, extra = out[0], 0
    if output_padding[0] >= stride[0]:
        d_out, extra = out[0] - output_padding[0], output_padding[0]
    res = fold(cols, (d_out, oh * ow), (kd, 1), dilation=(dilation[0], 1),
               padding=(padding[0], 0), stride=(stride[0], 1)).view(n, c_out, d_out, oh, ow)
    if extra:
        res = pad(res, [0, 0, 0, 0, 0, extra])
    if bias is not None:
        res = res + bias.view(1, c_out, 1, 1, 1)
    return res.squeeze(0) if unbatched else res
