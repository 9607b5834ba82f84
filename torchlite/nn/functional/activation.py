"""Activation functions (torch.nn.functional's): relu and its relatives, the smooth
activations (elu, gelu, silu, mish, softplus, ...), the hard ones (hardtanh, hardsigmoid,
hardswish), shrinkage, softmax and friends.

relu, sigmoid, tanh, softmax and log_softmax are the Tensor ops of the same name.  An activation
that PyTorch computes as one op is one op here: its forward runs on the array layer outside the
graph and one node with PyTorch's name (activation_grad.py) holds its input, so a training
step records one node per activation, not one per arithmetic step.  The few that PyTorch
itself composes (softsign, tanhshrink, softmin, glu) are compositions of Tensor ops here too."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._dispatch import elementwise as _ew
from ..._ops import _register
from ..._ops import elementwise as _P
from ..._ops import reduction as _R
from ..._ops import elementwise_grad as _PG
from ..._ops.random import rand_like as _rand_like
from ..._ops.creation import empty_like as _empty_like, zeros_like as _zeros_like
from ...autograd.grad_mode import _state as _grad_state, no_grad as _no_grad
from ...autograd.graph import inplace_records as _inplace_records, needs_grad
from . import activation_grad as _G
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

# the one-pass activation kernels (kernels/ewise_ops.h)
_GELU, _GELU_TANH, _SILU = _ew.UNARY["gelu"], _ew.UNARY["gelu_tanh"], _ew.UNARY["silu"]
_HARDSWISH, _HARDSIGMOID = _ew.UNARY["hardswish"], _ew.UNARY["hardsigmoid"]

if TYPE_CHECKING:
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "softplus",
           "softsign", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "sigmoid", "tanh",
           "softmax", "log_softmax", "softmin", "glu", "logsigmoid", "threshold", "threshold_",
           "tanhshrink", "softshrink", "hardshrink", "gumbel_softmax"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# ---- the machinery every fused activation shares ----------------------------------------------
def _need_float(input, kernel, real=False):
    """PyTorch's smooth activations have float kernels only (real ones only when real)."""
    if input._data.dtype < 6 or (real and input.is_complex()):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_ew._TORCH_NAMES[input._data.dtype]}'")


def _fused(cls, input, forward, params):
    """forward(input), computed outside the graph, with `cls` recorded as its history when
    input requires grad (one node for the whole activation)."""
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        with _no_grad():
            out = forward(input)
        return _G.record_pointwise(cls, input, out, params)
    return forward(input)


def _inplace(input, out_of_place, name, in_place=None):
    """input overwritten with out_of_place(input).  On a tensor of the graph the in-place
    op goes through elementwise_grad.rebase_inplace (PyTorch's checks and CopySlices);
    elsewhere in_place, when given, writes the result straight into input (one pass, where
    out_of_place and a copy back take two and a new tensor)."""
    if _inplace_records(input):
        _PG.check_inplace(input, name)
        return _PG.rebase_inplace(input, out_of_place)
    if in_place is not None:
        return in_place(input)
    r = out_of_place(input)
    _ew.copy_(input._data, r._data)
    input._bump_version()
    return input


def _maybe_inplace(input, inplace, op, name, in_place=None):
    """op(input), or written back into input when inplace (see _inplace)."""
    return _inplace(input, op, name + "_", in_place) if inplace else op(input)


# ---- relu family -------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0) (the gradient at 0 is 0)."""
    tensor_arg(input, "relu", "input", pos=1)
    return _P.relu_(input) if inplace else _P.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return relu(input, True)


def _hardtanh_bounds(input, min_val, max_val):
    if not input.is_floating_point():       # an integer tensor keeps its dtype (PyTorch casts
        return int(min_val), int(max_val)   # the bounds to it)
    return min_val, max_val


def _hardtanh(input, min_val, max_val, cls=_G.HardtanhBackward0):
    min_val, max_val = _hardtanh_bounds(input, min_val, max_val)
    return _fused(cls, input, lambda x: _P.clamp(x, min_val, max_val), (min_val, max_val))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val]; no gradient at or beyond the bounds."""
    tensor_arg(input, "hardtanh", "input", pos=1)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, inplace, lambda x: _hardtanh(x, min_val, max_val), "hardtanh",
                          lambda x: _P.clamp_(x, *_hardtanh_bounds(x, min_val, max_val)))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6): hardtanh(input, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky(x, slope):
    return _P.where(x > 0, x, x * slope)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where input > 0, else negative_slope * input."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(leaky_relu, locals())
    tensor_arg(input, "leaky_relu", "input", pos=1)
    _need_float(input, "leaky_relu_cpu")
    slope = float(negative_slope)
    cls = _G.LeakyReluBackward1 if inplace else _G.LeakyReluBackward0
    return _maybe_inplace(input, inplace, lambda x: _fused(cls, x, lambda v: _leaky(v, slope),
                                                           (slope,)), "leaky_relu")


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, True)


def _prelu_weight_shape(input, weight):
    """The shape weight broadcasts with along input's channel dim (dim 1; dim 0 is the batch)."""
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
                           f"{weight.ndim}")
    n = weight.numel()
    if n == 1:
        return (1,) * input.ndim if input.ndim else ()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                           f"numbers = {n} and channel size = {channels}.")
    return (1, n) + (1,) * (input.ndim - 2)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """input where input > 0, else weight * input, with one learnt slope per channel (dim 1)
    or one shared slope."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(prelu, locals())
    tensor_arg(input, "prelu", "input", pos=1)
    tensor_arg(weight, "prelu", "weight", pos=2)
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_ew._TORCH_NAMES[input._data.dtype]} and "
                           f"{_ew._TORCH_NAMES[weight._data.dtype]}")
    wshape = _prelu_weight_shape(input, weight)
    wb = weight.detach().reshape(wshape)
    out = _P.where(input.detach() > 0, input.detach(), input.detach() * wb)
    if (input._requires_grad or weight._requires_grad) and (_grad_state.enabled or needs_grad(input, weight)):
        return _G.record_prelu(input, weight, wshape, out)
    return out


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky relu: in training each non-positive element is scaled by a slope drawn
    uniformly from [lower, upper]; in eval the slope is (lower + upper) / 2."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(rrelu, locals())
    return rrelu_with_generator(input, lower, upper, training, inplace, None)


def rrelu_with_generator(input, lower, upper, training, inplace, generator):
    """rrelu whose training slopes come from `generator` (the default generator when None):
    torch.rrelu's ATen form takes one."""
    tensor_arg(input, "rrelu", "input", pos=1)
    _need_float(input, "rrelu_with_noise_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    cls = _G.RreluWithNoiseBackward1 if inplace else _G.RreluWithNoiseBackward0
    return _maybe_inplace(input, inplace, lambda x: _rrelu(x, lower, upper, training, cls, generator),
                          "rrelu")


def _rrelu(x, lower, upper, training, cls, generator):
    slope = (lower + upper) / 2.0
    if not training:
        return _fused(cls, x, lambda v: _leaky(v, slope), (None, slope))
    with _no_grad():
        draw = _rand_like(x, generator=generator) * (upper - lower) + lower
        noise = _P.where(x.detach() > 0, 1.0, draw)
    return _fused(cls, x, lambda v: v * noise, (noise, slope))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place rrelu."""
    return rrelu(input, lower, upper, training, True)


# ---- the exponential family --------------------------------------------------------------------
def _elu_forward(x, alpha, scale, input_scale):
    neg = (x.clamp(max=0.0) * input_scale).expm1() * (alpha * scale)
    # x <= 0 picks the exponential, so a NaN takes the linear branch: its gradient is then
    # scale, as PyTorch's elu_backward gives (compile differentiates this formula)
    return _P.where(x <= 0, neg, x * scale if scale != 1.0 else x)


def _elu(input, alpha, scale, input_scale, inplace, name, cls):
    tensor_arg(input, name, "input", pos=1)
    _need_float(input, "elu_cpu")
    params = (float(alpha), float(scale), float(input_scale))
    return _maybe_inplace(input, inplace,
                          lambda x: _fused(cls, x, lambda v: _elu_forward(v, *params), params),
                          name)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where input > 0, else alpha * (exp(input) - 1)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(elu, locals())
    return _elu(input, alpha, 1.0, 1.0, inplace, "elu",
                _G.EluBackward1 if inplace else _G.EluBackward0)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place elu."""
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(input, alpha) with the self-normalising constants (alpha ~ 1.6733,
    scale ~ 1.0507)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(selu, locals())
    return _elu(input, SELU_ALPHA, SELU_SCALE, 1.0, inplace, "selu",
                _G.EluBackward1 if inplace else _G.EluBackward0)


def selu_(input: Tensor) -> Tensor:
    """In-place selu."""
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(celu, locals())
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(input, alpha, 1.0, 1.0 / alpha, inplace, "celu",
                _G.CeluBackward1 if inplace else _G.CeluBackward0)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place celu."""
    return celu(input, alpha, True)


def gelu(input: Tensor, *, approximate: str = "none") -> Tensor:
    """x * Phi(x) (Phi: the standard normal CDF); approximate='tanh' uses
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).  approximate is keyword-only, as in
    PyTorch (gelu(x, 'tanh') raises there; accepted here, the ONNX exporter, which reads it
    from the keywords, exported the exact GELU for it)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(gelu, locals())
    tensor_arg(input, "gelu", "input", pos=1)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _need_float(input, "GeluKernelImpl")
    if input.is_complex():
        raise NotImplementedError(f'"GeluKernelImpl" not implemented for '
                                  f"'{_ew._TORCH_NAMES[input._data.dtype]}'")
    # one kernel pass forward and one backward (GeluBackward0 runs gelu_backward); compiled,
    # both are one instruction of a fused kernel
    return _P._unary(_GELU_TANH if approximate == "tanh" else _GELU, input, None, name="gelu")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(silu, locals())
    tensor_arg(input, "silu", "input", pos=1)
    _need_float(input, "silu_cpu")
    if input.is_complex():
        # the kernel op is real only; PyTorch's silu takes complex inputs: x * sigmoid(x)
        return _maybe_inplace(input, inplace, lambda x: x * _P.sigmoid(x), "silu")
    return _maybe_inplace(input, inplace, lambda x: _P._unary(_SILU, x, None, name="silu"), "silu",
                          lambda x: _P._unary_(_SILU, x, name="silu_"))


def _softplus_forward(x, beta, threshold):
    bx = x * beta if beta != 1 else x
    return _P.where(bx > threshold, x, bx.exp().log1p() / beta if beta != 1 else bx.exp().log1p())


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta; linear (x) where beta * x > threshold."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(softplus, locals())
    tensor_arg(input, "softplus", "input", pos=1)
    _need_float(input, "softplus_cpu")
    return _fused(_G.SoftplusBackward0, input, lambda x: _softplus_forward(x, beta, threshold),
                  (beta, threshold))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(mish, locals())
    tensor_arg(input, "mish", "input", pos=1)
    _need_float(input, "mish_cpu")
    return _maybe_inplace(input, inplace, lambda x: _fused(_G.MishBackward0, x, _mish_forward, ()),
                          "mish")


def _mish_forward(x):
    return x * _softplus_forward(x, 1.0, 20.0).tanh()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed as min(x, 0) - log1p(exp(-|x|)) (no overflow)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(logsigmoid, locals())
    tensor_arg(input, "logsigmoid", "input", pos=1)
    _need_float(input, "log_sigmoid_cpu")
    return _fused(_G.LogSigmoidBackward0, input,
                  lambda x: x.clamp(max=0.0) - (-x.abs()).exp().log1p(), ())


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) (composed, as in PyTorch)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(softsign, locals())
    tensor_arg(input, "softsign", "input", pos=1)
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) (composed, as in PyTorch)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(tanhshrink, locals())
    tensor_arg(input, "tanhshrink", "input", pos=1)
    return input - input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return _P.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _P.tanh(input)


# ---- piecewise-linear ones ---------------------------------------------------------------------
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(hardsigmoid, locals())
    tensor_arg(input, "hardsigmoid", "input", pos=1)
    _need_float(input, "hardsigmoid_cpu", real=True)
    return _maybe_inplace(input, inplace,
                          lambda x: _P._unary(_HARDSIGMOID, x, None, name="hardsigmoid"),
                          "hardsigmoid", lambda x: _P._unary_(_HARDSIGMOID, x, name="hardsigmoid_"))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(hardswish, locals())
    tensor_arg(input, "hardswish", "input", pos=1)
    _need_float(input, "hardswish_cpu", real=True)
    return _maybe_inplace(input, inplace,
                          lambda x: _P._unary(_HARDSWISH, x, None, name="hardswish"),
                          "hardswish", lambda x: _P._unary_(_HARDSWISH, x, name="hardswish_"))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """input where input > threshold, else value."""
    tensor_arg(input, "threshold", "input", pos=1)
    cls = _G.ThresholdBackward1 if inplace else _G.ThresholdBackward0

    def op(x):
        return _fused(cls, x, lambda v: _P.where(v > threshold, v, _fill_value(v, value)),
                      (threshold,))
    return _maybe_inplace(input, inplace, op, "threshold")


def _fill_value(x, value):
    """value in x's dtype kind (an integer tensor keeps its dtype: PyTorch truncates)."""
    return value if x.is_floating_point() else int(value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold."""
    return globals()["threshold"](input, threshold, value, True)


def _check_lambd(input, lambd):
    if lambd < 0:
        fmax = D.finfo(input.dtype).max
        raise RuntimeError(f"lambda must be in range [0, {fmax:g}] for input dtype "
                           f"{_ew._TORCH_NAMES[input._data.dtype]}, but found {lambd:g}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    tensor_arg(input, "softshrink", "input", pos=1)
    _need_float(input, "softshrink_check")
    _check_lambd(input, lambd)
    return _fused(_G.SoftshrinkBackward0, input, lambda x: _P.where(
        x > lambd, x - lambd, _P.where(x < -lambd, x + lambd, 0.0)), (lambd,))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    tensor_arg(input, "hardshrink", "input", pos=1)
    _need_float(input, "hardshrink_cpu")
    return _fused(_G.HardshrinkBackward0, input, lambda x: _P.where(
        (x >= -lambd) & (x <= lambd), 0.0, x), (lambd,))


# ---- softmax and relatives ---------------------------------------------------------------------
def _implicit_dim(name, ndim, stacklevel):
    """PyTorch's legacy rule when no dim is given: warn, and use dim 0 for 0-, 1- and 3-d
    input, else dim 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim (dtype= casts the input first)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(softmax, locals())
    tensor_arg(input, "softmax", "input", pos=1)
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return _R.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: dtype | None = None) -> Tensor:
    """log(softmax(x)) along dim, computed stably."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(log_softmax, locals())
    tensor_arg(input, "log_softmax", "input", pos=1)
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return _R.log_softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dtype | None = None) -> Tensor:
    """softmax(-x) along dim."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(softmin, locals())
    tensor_arg(input, "softmin", "input", pos=1)
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return _R.softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of input along dim."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(glu, locals())
    tensor_arg(input, "glu", "input", pos=1)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.size(dim)
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim % input.ndim} is size {size}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution: softmax((logits + g) / tau) with Gumbel
    noise g drawn from torchlite's generator.  hard=True returns the one-hot of the sample's
    argmax with the soft sample's gradient (straight-through)."""
    tensor_arg(logits, "gumbel_softmax", "input", pos=1)
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- for torchlite.compile ---------------------------------------------------------------------
def _not_inplace(forward):
    """forward, for calls without inplace=True (an in-place activation stays one op)."""
    def decompose(input, *args, inplace=False, **kwargs):
        return None if inplace else forward(input, *args, **kwargs)
    return decompose


# Each activation's elementwise formula as the Tensor ops its eager forward runs (the forward
# functions above), called as the activation is: torchlite.compile traces these and fuses the
# ops with their neighbours.  None: this call stays whole.  (hardtanh and relu6 are not here:
# as clamp their gradient at the bounds would be clamp's 1 where theirs is 0.)
COMPILE_DECOMPOSITIONS = {
    relu: _not_inplace(lambda x: _P.relu(x)),
    mish: _not_inplace(_mish_forward),
    leaky_relu: _not_inplace(lambda x, negative_slope=0.01: _leaky(x, float(negative_slope))),
    elu: _not_inplace(lambda x, alpha=1.0: _elu_forward(x, float(alpha), 1.0, 1.0)),
    selu: _not_inplace(lambda x: _elu_forward(x, SELU_ALPHA, SELU_SCALE, 1.0)),
    softplus: lambda input, beta=1.0, threshold=20.0: _softplus_forward(input, beta, threshold),
    sigmoid: _P.sigmoid,
    tanh: _P.tanh,
}


# Tensor.hardshrink and Tensor.prelu, as PyTorch's Tensor has them
_register("hardshrink")(hardshrink)
_register("prelu")(prelu)
