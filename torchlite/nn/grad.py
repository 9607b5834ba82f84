"""torchlite.nn.grad: the gradients of a convolution with respect to its input and its weight
as functions (PyTorch's torch.nn.grad: conv1d_input, conv1d_weight, conv2d_input, ...).

Each runs the convolution's own backward (torchlite/nn/functional/conv_grad.py) on a stand-in
for the other operand -- the input gradient does not depend on the input's values, nor the
weight gradient on the weight's -- so they are the very gradients autograd gives, and
differentiable with respect to grad_output and the operand given."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import functional as F
from .._ops.creation import zeros
from ..autograd import grad as _grad
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import needs_grad

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _check_output(y, grad_output, op):
    if tuple(y.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"{op}: grad_output has shape {list(grad_output.shape)}, but the "
                           f"convolution with these sizes and arguments gives "
                           f"{list(y.shape)}")


def _grad_of(conv, op, wrt_input, size, other, grad_output, stride, padding, dilation, groups):
    """The gradient of `conv` with respect to its input (wrt_input) or its weight, of shape
    `size`, the other operand given: a zero stand-in of `size` runs the convolution and its
    backward.  Kept differentiable when grad mode is on and other or grad_output require grad,
    or (under no_grad) when one of them carries a forward AD tangent, which travels on it."""
    stand_in = zeros(tuple(size), dtype=grad_output.dtype, device=grad_output.device,
                     requires_grad=True)
    keep = needs_grad(other, grad_output)
    with enable_grad():
        y = (conv(stand_in, other, None, stride, padding, dilation, groups) if wrt_input else
             conv(other, stand_in, None, stride, padding, dilation, groups))
        _check_output(y, grad_output, op)
        return _grad(y, stand_in, grad_output, create_graph=keep)[0]


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to an input of shape input_size."""
    return _grad_of(F.conv1d, "conv1d_input", True, input_size, weight, grad_output, stride,
                    padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                  dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to a weight of shape weight_size."""
    return _grad_of(F.conv1d, "conv1d_weight", False, weight_size, input, grad_output, stride,
                    padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to an input of shape input_size."""
    return _grad_of(F.conv2d, "conv2d_input", True, input_size, weight, grad_output, stride,
                    padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                  dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to a weight of shape weight_size."""
    return _grad_of(F.conv2d, "conv2d_weight", False, weight_size, input, grad_output, stride,
                    padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to an input of shape input_size."""
    return _grad_of(F.conv3d, "conv3d_input", True, input_size, weight, grad_output, stride,
                    padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                  dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to a weight of shape weight_size."""
    return _grad_of(F.conv3d, "conv3d_weight", False, weight_size, input, grad_output, stride,
                    padding, dilation, groups)
