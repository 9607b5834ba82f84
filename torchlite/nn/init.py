"""Weight initialisation (torch.nn.init): fill a tensor in place from a distribution, outside
autograd (every function works under no_grad and returns its tensor)."""
from __future__ import annotations

import functools
import math
import numbers
import warnings
from typing import TYPE_CHECKING

from ..autograd.grad_mode import no_grad
from .._ops._kit import tensor_arg

if TYPE_CHECKING:
    from .._ops.random import Generator
    from .._tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: int | float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table): 1 for linear/conv/sigmoid,
    5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope = param,
    default 0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples of U(a, b)."""
    tensor_arg(tensor, "uniform_", "tensor")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    tensor_arg(tensor, "normal_", "tensor")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std^2) truncated to [a, b] (inverse-CDF sampling: uniform
    over the CDF's range on [a, b], mapped back through erfinv)."""
    tensor_arg(tensor, "trunc_normal_", "tensor")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        lo, hi = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with the value val."""
    tensor_arg(tensor, "constant_", "tensor")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    tensor_arg(tensor, "zeros_", "tensor")
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the main diagonal)."""
    tensor_arg(tensor, "eye_", "tensor")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.zero_()
        tensor.diagonal().fill_(1)
        return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D (convolution weight) tensor with the Dirac delta: each output
    channel (within each of `groups` groups) passes one input channel through unchanged."""
    tensor_arg(tensor, "dirac_", "tensor")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(out_per_group, sizes[1])):
                tensor[(g * out_per_group + d, d) + centre] = 1
        return tensor


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight: in = size(1) * receptive field, out = size(0) *
    receptive field, where the receptive field is the product of the dims after the second."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    tensor_arg(tensor, "xavier_uniform_", "tensor")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    tensor_arg(tensor, "xavier_normal_", "tensor")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
    a) and fan the fan_in or fan_out (mode)."""
    tensor_arg(tensor, "kaiming_uniform_", "tensor")
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    tensor_arg(tensor, "kaiming_normal_", "tensor")
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _householder_q(a):
    """The Q factor of the reduced QR of a (m, n) float64 tensor with m >= n, its columns
    signed so that R has a non-negative diagonal (then Q is unique for a of full rank).
    Householder reflections, written with Tensor ops (torchlite has no QR kernel)."""
    from .._ops.creation import eye
    m, n = a.shape
    a = a.clone()
    reflectors = []
    for k in range(n):
        x = a[k:, k]
        # v = x + sign(x0) |x| e0 avoids cancellation; H = I - 2 v v^T / (v^T v)
        x0 = x[0].item()
        norm = x.norm().item()
        v = x.clone()
        v[0] = x0 + (norm if x0 >= 0 else -norm)
        vnorm = v.norm().item()
        if vnorm == 0.0:            # an all-zero column: nothing to reflect
            reflectors.append(None)
            continue
        v = v / vnorm
        block = a[k:, k:]
        block.sub_(2.0 * v.unsqueeze(1) * (v.unsqueeze(0) @ block))
        reflectors.append(v)
    signs = a.diagonal()[:n].sign()
    signs = signs + (signs == 0).to(signs.dtype)          # a zero diagonal keeps its column
    q = eye(m, n, dtype=a.dtype)
    for k in range(n - 1, -1, -1):
        v = reflectors[k]
        if v is None:
            continue
        block = q[k:, :]
        block.sub_(2.0 * v.unsqueeze(1) * (v.unsqueeze(0) @ block))
    return q * signs


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix: the Q of the QR of a standard normal sample
    (dims after the first are flattened), scaled by gain."""
    tensor_arg(tensor, "orthogonal_", "tensor")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .. import _dtype as D
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        sample = tensor.new_empty((rows, cols), dtype=D.float64).normal_(0, 1, generator=generator)
        if rows < cols:
            q = _householder_q(sample.t()).t()
        else:
            q = _householder_q(sample)
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
        return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """Fill a 2-D tensor with N(0, std^2) samples, then zero ceil(sparsity * rows) randomly
    chosen entries of each column."""
    tensor_arg(tensor, "sparse_", "tensor")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._ops.random import randperm
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = randperm(rows, generator=generator)[:num_zeros]
            tensor[zero_rows, col] = 0
        return tensor


def _default_weight_and_bias_(weight, bias):
    """The default initialisation of PyTorch's Linear and convolution layers:
    kaiming_uniform_(a=sqrt(5)) for the weight, i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and
    the same bound for the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


# ---- meta tensors: nothing to fill ------------------------------------------------------------
def _leaves_meta_alone(fn):
    """fn, returning a tensor on the meta device as it is (no values to write; orthogonal_
    and sparse_ would otherwise run a QR or pick positions)."""
    @functools.wraps(fn)
    def initialiser(tensor, *args, **kwargs):
        if getattr(tensor, "is_meta", False):
            return tensor
        return fn(tensor, *args, **kwargs)
    return initialiser


for _name in ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
              "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
              "kaiming_normal_", "orthogonal_", "sparse_"):
    globals()[_name] = _leaves_meta_alone(globals()[_name])


# ---- the old names without the trailing underscore (deprecated in PyTorch, still accepted) -------
def _deprecated(fn):
    old = fn.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated spelling of {fn.__name__} (warns, then calls it)."
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
