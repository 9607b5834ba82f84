"""Activation layers: thin Modules over nn.functional's activations, with PyTorch's constructor
arguments, attributes and reprs.  (MultiheadAttention lives elsewhere.)"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._ops.creation import empty as _empty
from .. import functional as F
from .. import init as _init
from ..parameter import Parameter
from .module import Module

if TYPE_CHECKING:
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU",
           "Mish", "Softplus", "Softsign", "Hardtanh", "Hardsigmoid", "Hardswish", "Sigmoid",
           "Tanh", "Softmax", "Softmax2d", "LogSoftmax", "Softmin", "GLU", "LogSigmoid",
           "Threshold", "Tanhshrink", "Softshrink", "Hardshrink"]


def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation whose only setting is `inplace` (repr: 'inplace=True' when set)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class _Stateless(Module):
    """An activation without settings: `_fn` names its function in nn.functional, looked up
    at each call (so that a wrapper put on F, such as torchlite.func.vmap's, is seen)."""

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input)


class ReLU(_Inplace):
    """max(x, 0)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)


class ReLU6(_Inplace):
    """min(max(x, 0), 6)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, inplace=self.inplace)


class SELU(_Inplace):
    """scale * elu(x, alpha) with the self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6 (PyTorch's repr does not show inplace)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6 (PyTorch's repr does not show inplace)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)

    def extra_repr(self) -> str:
        return ""


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace}"


class PReLU(Module):
    """x if x > 0 else a * x, with a learnt slope a per channel (num_parameters) or shared,
    initialised to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky relu with a random slope from [lower, upper] in training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """x * Phi(x); approximate='tanh' for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val] (min_value/max_value: PyTorch's deprecated names)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            import warnings
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            import warnings
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace}"


class Threshold(Module):
    """x if x > threshold else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace}"


class Sigmoid(_Stateless):
    """1 / (1 + exp(-x))."""
    _fn = "sigmoid"


class Tanh(_Stateless):
    """Hyperbolic tangent."""
    _fn = "tanh"


class Softsign(_Stateless):
    """x / (1 + |x|)."""
    _fn = "softsign"


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""
    _fn = "logsigmoid"


class Tanhshrink(_Stateless):
    """x - tanh(x)."""
    _fn = "tanhshrink"


class _SoftmaxLike(Module):
    """softmax-type layers: one setting, dim (None: PyTorch's implicit-dim rule, with its
    warning)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxLike):
    """exp(x) / sum(exp(x)) along dim."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxLike):
    """log(softmax(x)) along dim."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxLike):
    """softmax(-x) along dim."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class GLU(Module):
    """a * sigmoid(b), a and b the halves of the input along dim."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softshrink(Module):
    """x - lambd if x > lambd, x + lambd if x < -lambd, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x if |x| > lambd else 0."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


def __getattr__(name):
    # PyTorch keeps MultiheadAttention in torch.nn.modules.activation; its home here is
    # attention.py (imported on this first use: attention.py builds on this module's layers)
    if name == "MultiheadAttention":
        from .attention import MultiheadAttention
        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
