"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
torch.nn.utils.fusion), so inference runs one layer instead of two.

In eval, BatchNorm computes (x - running_mean) / sqrt(running_var + eps) * gamma + beta, an
affine map per channel; after conv (or linear) it can be folded into the weight (scaled per
output channel by s = gamma / sqrt(running_var + eps)) and the bias ((b - running_mean) * s +
beta).  The fused layer gives the same output to float rounding."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..._ops.creation import ones_like, zeros_like
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

if TYPE_CHECKING:
    from ..._tensor import Tensor
    from ..modules.module import Module

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of `conv` with `bn` folded in (both must be in eval mode); transpose: conv is a
    transposed convolution (its output channels are the weight's dim 1)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """(fused weight, fused bias) as Parameters, in the dtypes of conv_w and conv_b; conv_b,
    bn_w and bn_b may be None (zeros, ones, zeros)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    b_requires_grad = conv_b.requires_grad if conv_b is not None else False
    with no_grad():
        conv_b = conv_b if conv_b is not None else zeros_like(bn_rm)
        bn_w = bn_w if bn_w is not None else ones_like(bn_rm)
        bn_b = bn_b if bn_b is not None else zeros_like(bn_rm)
        inv_std = (bn_rv + bn_eps).rsqrt()
        # the per-channel scale broadcast over the weight's output-channel dim
        out_dim = 1 if transpose else 0
        shape = [1] * conv_w.ndim
        shape[out_dim] = -1
        fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype=w_dtype)
        fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, b_requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of `linear` with `bn` (after it, over the linear's output features) folded in;
    both must be in eval mode, and bn.num_features must be linear.out_features or 1."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w: Tensor | None,
                           bn_b: Tensor | None) -> tuple[Parameter, Parameter]:
    """(fused weight, fused bias) as Parameters, in the dtypes of linear_w and linear_b;
    linear_b, bn_w and bn_b may be None (zeros, ones, zeros)."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    b_requires_grad = linear_b.requires_grad if linear_b is not None else False
    with no_grad():
        linear_b = linear_b if linear_b is not None else zeros_like(bn_rm)
        bn_w = bn_w if bn_w is not None else ones_like(bn_rm)
        bn_b = bn_b if bn_b is not None else zeros_like(bn_rm)
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
        fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, b_requires_grad)
