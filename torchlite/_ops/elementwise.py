"""Elementwise ops: arithmetic, math functions, comparisons and logic, where, clamp, lerp.

Each op is one call into the array layer (torchlite/_core/elementwise.pyx, loops in
kernels/ewise_body.h), which does broadcasting, type promotion and the out= checks.  The
tables below name every op once; the functional form, the method and the in-place method
are all made from that one entry."""
from __future__ import annotations

import builtins
import math
import numbers
import warnings

from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import check_same_device as _check_same_device
from .._dispatch import elementwise as _ew
from .._tensor import Tensor, _wrap, _as_pyscalar
from . import _register
from . import elementwise_grad as _G
from ..autograd.grad_mode import _state as _grad_state, no_grad as _no_grad
from ..autograd.graph import inplace_records as _inplace_records, needs_grad
from ._kit import no_out_with_grad as _no_out_with_grad, out_array as _out_array, tensor_arg
from ._kit import write_out as _write_out
from .._autocast_state import entry as _autocast, run as _autocast_run

_U = _ew.UNARY
_B = _ew.BINARY
_T = _ew.TERNARY

# The annotations of the functions the tables below generate (strings, as `from __future__
# import annotations` makes those of the written ones); each function gets its own copy.
_NUMBER = "int | float | bool | complex"
_UNARY_ANNOTATIONS = {"input": "Tensor", "out": "Tensor | None", "return": "Tensor"}
_INPLACE_ANNOTATIONS = {"self": "Tensor", "return": "Tensor"}


class _Foreign(TypeError):
    """An operand that is neither a Tensor nor a number: the functions raise it (a
    TypeError), the operators turn it into NotImplemented so that Python asks the other
    operand (its __radd__, ...), as PyTorch's operators do."""


# a TypeError as far as anyone can see (tracebacks print "TypeError: ..."); the class only
# tells the operators apart from the functions' other argument errors
_Foreign.__name__ = _Foreign.__qualname__ = "TypeError"
_Foreign.__module__ = "builtins"


def _operand(x, op):
    """The array of a Tensor, or a Python number for a number."""
    if isinstance(x, Tensor):
        return x._data
    v = _as_pyscalar(x)
    if isinstance(v, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        return v
    raise _Foreign(f"{op}(): expected Tensor or Number as argument, but got {type(x).__name__}")


def _check_devices(op, *xs):
    """RuntimeError unless the tensors are on one device; a CPU tensor with no dims may join
    tensors on any device (PyTorch's rule for scalar tensors)."""
    for x in xs:
        if isinstance(x, Tensor) and x._data.device != "cpu":
            _check_same_device(op, *[x._data for x in xs if isinstance(x, Tensor)])
            return


def _result(arr, out):
    """Wrap a result; with out=, the array was written into out already."""
    if out is None:
        return _wrap(arr)
    return out


def _bshape(*xs):
    from .._core.array import broadcast_shapes
    return broadcast_shapes(*[x.shape for x in xs if isinstance(x, Tensor)])


# ---- the one-pass activations' gradients (PyTorch's aten ops of these names) --------------------
def gelu_backward(grad_output, input, approximate="none"):
    """grad_output * gelu'(input) in one pass (the exact form, or approximate='tanh'):
    GeluBackward0's formula, a binary kernel op (differentiable again)."""
    return _binary(_B["gelu_tanh_backward" if approximate == "tanh" else "gelu_backward"],
                   grad_output, input, None, "gelu_backward")


def silu_backward(grad_output, input):
    """grad_output * silu'(input) in one pass: SiluBackward0's formula."""
    return _binary(_B["silu_backward"], grad_output, input, None, "silu_backward")


def hardswish_backward(grad_output, input):
    """grad_output * hardswish'(input) in one pass: HardswishBackward0's formula."""
    return _binary(_B["hardswish_backward"], grad_output, input, None, "hardswish_backward")


def hardsigmoid_backward(grad_output, input):
    """grad_output * hardsigmoid'(input) in one pass: HardsigmoidBackward0's formula."""
    return _binary(_B["hardsigmoid_backward"], grad_output, input, None, "hardsigmoid_backward")


# ---- unary ---------------------------------------------------------------------------------
def _unary(code, input, out, p0=0.0, p1=0.0, p2=0.0, name=""):
    tensor_arg(input, name, "input")
    if out is None:
        r = _wrap(_ew.unary(code, input._data, None, p0, p1, p2))
        if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
            _G.record_unary(code, input, r, (p0, p1, p2), name)
        return r
    _no_out_with_grad(name, input)
    _ew.unary(code, input._data, _out_array(out, input.shape, name), p0, p1, p2)
    return out


def _unary_(code, self, p0=0.0, p1=0.0, p2=0.0, name=""):
    if _inplace_records(self):
        _G.check_inplace(self, name)
        return _G.rebase_inplace(self, lambda old: _G.keep_in_graph(
            _unary(code, old, None, p0, p1, p2, name), (old,), name))
    _ew.unary(code, self._data, self._data, p0, p1, p2)
    self._bump_version()
    return self


def _make_unary(name, op, doc, inplace=True, aliases=()):
    code = _U[op]

    def fn(input, *, out=None):
        if _autocast.regions and _autocast.here.active:
            return _autocast_run(fn, locals())
        return _unary(code, input, out, name=name)

    def fn_(self):
        return _unary_(code, self, name=name + "_")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__annotations__ = dict(_UNARY_ANNOTATIONS)
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn_.__doc__ = f"In-place version of :func:`{name}`."
    fn_.__annotations__ = dict(_INPLACE_ANNOTATIONS)
    _register(name, *aliases)(fn)
    if inplace:
        _register(name + "_", *[a + "_" for a in aliases])(fn_)
    return fn, fn_


_UNARY_OPS = [
    # (name, kernel op, doc, aliases)
    ("neg", "neg", "-input, elementwise.", ("negative",)),
    ("abs", "abs", "|input|, elementwise.", ("absolute",)),
    ("sign", "sign", "-1, 0 or 1 by the sign of each element (0 for NaN).", ()),
    ("square", "square", "input * input.", ()),
    ("reciprocal", "reciprocal", "1 / input (integers are promoted to float).", ()),
    ("exp", "exp", "e ** input.", ()),
    ("exp2", "exp2", "2 ** input.", ()),
    ("expm1", "expm1", "e ** input - 1, accurate near 0.", ("special_expm1",)),
    ("log", "log", "Natural logarithm.", ()),
    ("log2", "log2", "Base-2 logarithm.", ()),
    ("log10", "log10", "Base-10 logarithm.", ()),
    ("log1p", "log1p", "log(1 + input), accurate near 0.", ()),
    ("sqrt", "sqrt", "Square root.", ()),
    ("rsqrt", "rsqrt", "1 / sqrt(input).", ()),
    ("sin", "sin", "Sine.", ()),
    ("cos", "cos", "Cosine.", ()),
    ("tan", "tan", "Tangent.", ()),
    ("asin", "asin", "Arcsine.", ("arcsin",)),
    ("acos", "acos", "Arccosine.", ("arccos",)),
    ("atan", "atan", "Arctangent.", ("arctan",)),
    ("sinh", "sinh", "Hyperbolic sine.", ()),
    ("cosh", "cosh", "Hyperbolic cosine.", ()),
    ("tanh", "tanh", "Hyperbolic tangent.", ()),
    ("asinh", "asinh", "Inverse hyperbolic sine.", ("arcsinh",)),
    ("acosh", "acosh", "Inverse hyperbolic cosine.", ("arccosh",)),
    ("atanh", "atanh", "Inverse hyperbolic tangent.", ("arctanh",)),
    ("erf", "erf", "The error function.", ()),
    ("erfc", "erfc", "1 - erf(input).", ()),
    ("erfinv", "erfinv", "The inverse error function.", ()),
    ("sigmoid", "sigmoid", "1 / (1 + exp(-input)).", ()),
    ("floor", "floor", "Largest integer <= input (identity on integer tensors).", ()),
    ("ceil", "ceil", "Smallest integer >= input (identity on integer tensors).", ()),
    ("trunc", "trunc", "Rounds toward zero (identity on integer tensors).", ("fix",)),
    ("frac", "frac", "input - trunc(input).", ()),
    ("relu", "relu", "max(input, 0).", ()),
    ("lgamma", "lgamma", "log|Gamma(input)|.", ()),
    ("bitwise_not", "bitwise_not", "~input on integers, logical not on bool.", ()),
    ("logical_not", "logical_not", "input == 0, as bool.", ()),
]
_BOOL_UNARY = [
    ("isnan", "isnan", "True where input is NaN."),
    ("isinf", "isinf", "True where input is +inf or -inf."),
    ("isposinf", "isposinf", "True where input is +inf."),
    ("isneginf", "isneginf", "True where input is -inf."),
    ("isfinite", "isfinite", "True where input is neither inf nor NaN."),
    ("signbit", "signbit", "True where the sign bit is set (including -0.0)."),
]

for _name, _op, _doc, _aliases in _UNARY_OPS:
    globals()[_name], globals()[_name + "_"] = _make_unary(_name, _op, _doc, True, _aliases)
    for _a in _aliases:
        globals()[_a] = globals()[_name]
for _name, _op, _doc in _BOOL_UNARY:
    globals()[_name] = _make_unary(_name, _op, _doc, False)[0]

angle = _make_unary("angle", "angle", "The argument of each complex element in radians "
                    "(atan2(imag, real)); for real input pi where it is negative, else 0 "
                    "(NaN kept).  Integers give floats.", False)[0]
_neg_checked = globals()["neg"]


def _no_bool_neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if isinstance(input, Tensor) and input.dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return _neg_checked(input, out=out)


neg = negative = _register("neg", "negative")(_no_bool_neg)
neg.__doc__ = "-input, elementwise."
neg.__name__ = neg.__qualname__ = "neg"      # the name graph code and fx transformers read


_abs_ = globals()["abs_"]


@_register("abs_", "absolute_")
def abs_(self: Tensor) -> Tensor:
    """In-place version of :func:`abs` (not for complex tensors: |z| is real, as PyTorch says)."""
    if isinstance(self, Tensor) and self.is_complex():
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _abs_(self)


absolute_ = abs_
_sign_real = globals()["sign"]
_sign_real_ = globals()["sign_"]


@_register("sign")
def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of each element (0 for NaN); complex input: use sgn."""
    if isinstance(input, Tensor) and input.is_complex():
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                           "Please use torch.sgn instead.")
    return _sign_real(input, out=out)


_SGN = _U["sgn"]


@_register("sgn")
def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input / |input| for complex input (0 where input is 0); the sign for real input."""
    if isinstance(input, Tensor) and input._data.dtype < 6:       # integers and bool
        return _sign_real(input, out=out)
    return _unary(_SGN, input, out, name="sgn")


@_register("sgn_")
def sgn_(self: Tensor) -> Tensor:
    """In-place version of :func:`sgn`."""
    if self._data.dtype < 6:
        return _sign_real_(self)
    return _unary_(_SGN, self, name="sgn_")


_CONJ = _U["conj"]


@_register("conj_physical")
def conj_physical(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex conjugate as a new tensor (a real tensor is returned as it is, as in
    PyTorch)."""
    if not input.is_complex():
        return input if out is None else out.copy_(input)
    return _unary(_CONJ, input, out, name="conj_physical")


@_register("conj_physical_")
def conj_physical_(self: Tensor) -> Tensor:
    """In-place complex conjugate (a no-op on a real tensor)."""
    if not self.is_complex():
        return self
    return _unary_(_CONJ, self, name="conj_physical_")


@_register("conj")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate.  A real tensor is returned as it is (as in PyTorch).  torchlite
    conjugates eagerly: a complex input gives a new tensor, where PyTorch returns a view with
    its lazy conjugate bit set; values and gradients are the same, is_conj() is always False
    and resolve_conj() has nothing to do."""
    if not input.is_complex():
        return input
    return _unary(_CONJ, input, None, name="conj")


@_register("resolve_conj", "resolve_neg")
def resolve_conj(input: Tensor) -> Tensor:
    """The tensor itself: torchlite has no lazy conjugate or negative bits (see conj)."""
    return input


@_register("is_conj", "is_neg")
def is_conj(input: Tensor) -> bool:
    """False: torchlite conjugates eagerly (see conj)."""
    return False


resolve_neg, is_neg = resolve_conj, is_conj
_square_same_dtype = globals()["square"]


@_register("square")
def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * input; a bool tensor squares to int64 (PyTorch computes pow(input, 2))."""
    if isinstance(input, Tensor) and input.dtype is D.bool:
        input = input.to(D.int64)
    return _square_same_dtype(input, out=out)


@_register("positive")
def positive(input: Tensor) -> Tensor:
    if input.dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@_register("round")
def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Round half to even; with decimals, round to that many decimal places."""
    if decimals == 0:
        return _unary(_U["round"], input, out, name="round")
    if not input.is_floating_point():
        raise RuntimeError('"round_decimals" not implemented for integer tensors')
    return _unary(_U["round_decimals"], input, out, builtins.float(decimals), name="round")


@_register("round_")
def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    if decimals == 0:
        return _unary_(_U["round"], self, name="round_")
    return _unary_(_U["round_decimals"], self, builtins.float(decimals), name="round_")


def _bound(v, name):
    if v is None or isinstance(v, Tensor):
        return v
    return _as_pyscalar(v)


@_register("clamp", "clip")
def clamp(input: Tensor, min: Tensor | int | float | None = None, max: Tensor | int | float | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """Limit every element to [min, max]: NaN stays NaN, min > max gives max everywhere, a NaN
    bound gives NaN.  Bounds may be numbers or tensors; a float bound promotes an integer
    tensor (PyTorch's result_type rule)."""
    return _clamp(input, min, max, out, "clamp")


def _clamp(input, min, max, out, name):
    min, max = _bound(min, "min"), _bound(max, "max")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    tensor_arg(input, "clamp", "input")
    bounds = [b._data if isinstance(b, Tensor) else b for b in (min, max) if b is not None]
    rdt = D.DTYPES[_ew.result_type(input._data, *bounds)]
    _check_int_bounds(rdt, min, max)
    if _kernel_bound_ok(rdt, min) and _kernel_bound_ok(rdt, max):
        x = input if rdt is input.dtype else input.to(rdt)
        lo = -math.inf if min is None else builtins.float(min)
        hi = math.inf if max is None else builtins.float(max)
        return _unary(_U["clamp"], x, out, lo, hi, name=name)
    # tensor or NaN bounds, and integer bounds the one-pass kernel cannot hold exactly: two
    # passes of maximum/minimum, whose scalar path range-checks and keeps int64 exact
    if out is None and _G.needs_grad(input, min, max):
        with _no_grad():
            r = _clamp_two_pass(input, min, max)
        return _G.record_ternary(_G.ClampBackward0, (input, min, max), r)
    r = _clamp_two_pass(input, min, max)
    if out is None:
        return r
    _no_out_with_grad("clamp", input, min, max)
    _write_out(r, out, "clamp", casting="same_kind")
    return out


def _clamp_two_pass(input, min, max):
    # a bound may be a number here (maximum() itself takes only tensors, as PyTorch's)
    r = input if min is None else _binary(_B["maximum"], input, min, None, "maximum")
    return r if max is None else _binary(_B["minimum"], r, max, None, "minimum")


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                "int64": "int64_t"}


def _check_int_bounds(dt, *bounds):
    """clamp's bounds must fit an integer result dtype (unlike arithmetic, which wraps)."""
    if dt.is_floating_point or dt is D.bool:
        return
    info = D.iinfo(dt)
    for b in bounds:
        if isinstance(b, builtins.int) and not info.min <= b <= info.max:
            raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[dt.name]} without overflow")


def _kernel_bound_ok(dt, b):
    """Whether the clamp kernel, which takes its bounds as doubles, handles bound b exactly."""
    if b is None:
        return True
    if isinstance(b, Tensor):
        return False
    if dt.is_floating_point:
        return not math.isnan(b)
    info = D.iinfo(dt)
    return info.min <= b <= info.max and -2 ** 53 <= b <= 2 ** 53


@_register("clamp_", "clip_")
def clamp_(self: Tensor, min: Tensor | int | float | None = None,
           max: Tensor | int | float | None = None) -> Tensor:
    """In-place clamp; a bound that would promote self's dtype is an error."""
    if _inplace_records(self, min, max):
        _G.check_inplace(self, "clamp_", min, max)
        return _G.rebase_inplace(self, lambda old: clamp(old, min, max))
    _check_inplace_broadcast(self, "clamp_", min, max)
    clamp(self, min, max, out=self)
    self._bump_version()
    return self


def _check_inplace_broadcast(self, name, *others):
    """An in-place op cannot grow self: the operands must broadcast to self's shape."""
    shape = self._data.shape
    if all(not isinstance(t, Tensor) or t._data.shape == shape for t in others):
        return
    b = _bshape(self, *others)
    if tuple(b) != tuple(shape):
        raise RuntimeError(f"{name}: output with shape {list(shape)} doesn't match the broadcast "
                           f"shape {list(b)}")


def _ternary_(code, self, b, c, name, value=1.0):
    """self = op(self, b, c) in place, straight into self's memory (the kernel refuses a
    broadcast shape other than self's)."""
    xs = [x._data if isinstance(x, Tensor) else _operand(x, name) for x in (b, c)]
    if self._data.device != "cpu" or any(getattr(x, "device", "cpu") != "cpu" for x in xs):
        _check_devices(name, self, b, c)
    _check_inplace_broadcast(self, name, b, c)
    _ew.ternary(code, self._data, xs[0], xs[1], self._data, builtins.float(value))
    self._bump_version()
    return self


clip, clip_ = clamp, clamp_


@_register("clamp_min")
def clamp_min(input: Tensor, min: Tensor | int | float) -> Tensor:
    """clamp(input, min=min)."""
    return _clamp(input, min, None, None, "clamp_min")


@_register("clamp_max")
def clamp_max(input: Tensor, max: Tensor | int | float) -> Tensor:
    """clamp(input, max=max)."""
    return _clamp(input, None, max, None, "clamp_max")


def _no_complex_nan_to_num_grad(input):
    """PyTorch has no derivative of nan_to_num for complex outputs: it refuses to record one."""
    if input.is_complex() and input._requires_grad and _grad_state.enabled:
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs with "
                           "complex dtype.")


@_register("nan_to_num")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """Replace NaN, +inf and -inf (by default with 0 and the dtype's largest/smallest values);
    a complex element has each of its real and imaginary parts replaced (by the defaults of
    its parts' dtype)."""
    if not (input.is_floating_point() or input.is_complex()):
        return _unary(_U["nan_to_num"], input, out, name="nan_to_num")
    _no_complex_nan_to_num_grad(input)
    fi = D.finfo(input.dtype)
    return _unary(_U["nan_to_num"], input, out, builtins.float(nan),
                  fi.max if posinf is None else builtins.float(posinf),
                  fi.min if neginf is None else builtins.float(neginf), name="nan_to_num")


@_register("nan_to_num_")
def nan_to_num_(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    fi = D.finfo(self.dtype) if self.is_floating_point() or self.is_complex() else None
    if fi is not None:
        _no_complex_nan_to_num_grad(self)
    return _unary_(_U["nan_to_num"], self, builtins.float(nan),
                   fi.max if posinf is None and fi else builtins.float(posinf or 0),
                   fi.min if neginf is None and fi else builtins.float(neginf or 0), name="nan_to_num_")


@_register("logit")
def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """log(p / (1 - p)); with eps, p is first clamped to [eps, 1 - eps]."""
    return _unary(_U["logit"], input, out, -1.0 if eps is None else builtins.float(eps), name="logit")


@_register("logit_")
def logit_(self: Tensor, eps: float | None = None) -> Tensor:
    return _unary_(_U["logit"], self, -1.0 if eps is None else builtins.float(eps), name="logit_")


# ---- binary --------------------------------------------------------------------------------
def _binary(code, a, b, out, name, alpha=1.0):
    a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
    x = a._data if a_t else _operand(a, name)
    y = b._data if b_t else _operand(b, name)
    if a_t and b_t and x.device != y.device:
        _check_devices(name, a, b)
    if out is None:
        r = _wrap(_ew.binary(code, x, y, None, alpha))
        if ((a_t and a._requires_grad) or (b_t and b._requires_grad)) and (_grad_state.enabled or needs_grad(a, b)):
            _G.record_binary(code, name, a if a_t else x, b if b_t else y, r, alpha)
        return r
    _no_out_with_grad(name, a, b)
    _ew.binary(code, x, y, _out_array(out, _bshape(a, b), name), alpha)
    return out


def _binary_(code, self, other, name, alpha=1.0):
    if _inplace_records(self, other):
        _G.check_inplace(self, name, other)
        return _G.rebase_inplace(self, lambda old: _G.keep_in_graph(
            _binary(code, old, other, None, name, alpha), (old, other), name))
    y = other._data if isinstance(other, Tensor) else _operand(other, name)
    _ew.binary(code, self._data, y, self._data, alpha)
    self._bump_version()
    return self


# Which operands of a binary function may be Python numbers (PyTorch's overloads): both,
# either one but not both (the default), only `other`, or neither.
_NUMBER_OPERANDS = {
    "mul": "both", "floor_divide": "both",
    **{n: "other" for n in ("fmod", "copysign", "eq", "ne", "lt", "le", "gt", "ge")},
    **{n: "none" for n in ("atan2", "hypot", "maximum", "minimum", "fmax", "fmin",
                           "logical_and", "logical_or", "logical_xor")},
}


def _check_number_operands(name, input, other):
    """PyTorch's TypeError for a number where the function takes only a Tensor."""
    allowed = _NUMBER_OPERANDS.get(name, "either")
    a_t, b_t = isinstance(input, Tensor), isinstance(other, Tensor)
    if allowed == "both":
        return
    if not a_t and not b_t:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected "
                        f"at least one Tensor")
    if not a_t and allowed != "either":
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not b_t and allowed == "none":
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")


def _binary_annotations(name):
    """The annotations of the generated binary function and its in-place form, from which
    operands _NUMBER_OPERANDS lets be numbers."""
    allowed = _NUMBER_OPERANDS.get(name, "either")
    number = "Tensor | " + _NUMBER
    first = number if allowed in ("both", "either") else "Tensor"
    second = "Tensor" if allowed == "none" else number
    return ({"input": first, "other": second, "out": "Tensor | None", "return": "Tensor"},
            {"self": "Tensor", "other": second, "return": "Tensor"})


def _make_binary(name, op, doc, aliases=(), inplace=True):
    code = _B[op]

    def fn(input, other, *, out=None):
        if _autocast.regions and _autocast.here.active:
            return _autocast_run(fn, locals())
        if type(input) is not Tensor or type(other) is not Tensor:
            _check_number_operands(name, input, other)
        return _binary(code, input, other, out, name)

    def fn_(self, other):
        if type(other) is not Tensor:
            _check_number_operands(name, self, other)
        return _binary_(code, self, other, name + "_")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn.__annotations__, fn_.__annotations__ = _binary_annotations(name)
    _register(name, *aliases)(fn)
    if inplace:
        _register(name + "_", *[a + "_" for a in aliases])(fn_)
    return fn, fn_


_BINARY_OPS = [
    ("mul", "mul", "input * other, with broadcasting and type promotion.", ("multiply",)),
    ("floor_divide", "div_floor", "input // other, rounding toward -inf (Python's rule).", ()),
    ("remainder", "remainder", "Python's modulus: the result has the sign of the divisor.", ()),
    ("fmod", "fmod", "C's fmod: the result has the sign of the dividend.", ()),
    ("atan2", "atan2", "Arctangent of input / other with the quadrant.", ("arctan2",)),
    ("hypot", "hypot", "sqrt(input**2 + other**2) without overflow.", ()),
    ("copysign", "copysign", "|input| with the sign of other.", ()),
    ("maximum", "maximum", "Elementwise maximum; NaN propagates.", ()),
    ("minimum", "minimum", "Elementwise minimum; NaN propagates.", ()),
    ("fmax", "fmax", "Elementwise maximum ignoring NaN.", ()),
    ("fmin", "fmin", "Elementwise minimum ignoring NaN.", ()),
    ("eq", "eq", "input == other, as bool.", ()),
    ("ne", "ne", "input != other, as bool.", ("not_equal",)),
    ("lt", "lt", "input < other, as bool.", ("less",)),
    ("le", "le", "input <= other, as bool.", ("less_equal",)),
    ("gt", "gt", "input > other, as bool.", ("greater",)),
    ("ge", "ge", "input >= other, as bool.", ("greater_equal",)),
    ("logical_and", "logical_and", "Elementwise logical AND, as bool.", ()),
    ("logical_or", "logical_or", "Elementwise logical OR, as bool.", ()),
    ("logical_xor", "logical_xor", "Elementwise logical XOR, as bool.", ()),
    ("bitwise_and", "bitwise_and", "Bitwise AND of integers (logical on bool).", ()),
    ("bitwise_or", "bitwise_or", "Bitwise OR of integers (logical on bool).", ()),
    ("bitwise_xor", "bitwise_xor", "Bitwise XOR of integers (logical on bool).", ()),
    ("bitwise_left_shift", "shl", "input << other.", ()),
    ("bitwise_right_shift", "shr", "input >> other (arithmetic for signed integers).", ()),
    ("xlogy", "xlogy", "input * log(other), with 0 where input is 0.", ()),
]
for _name, _op, _doc, _aliases in _BINARY_OPS:
    globals()[_name], globals()[_name + "_"] = _make_binary(_name, _op, _doc, _aliases)
    for _a in _aliases:
        globals()[_a] = globals()[_name]


_ADD, _SUB, _ADD_ALPHA = _B["add"], _B["sub"], _B["add_alpha"]


def _alpha(a, b, alpha, op, negate=False):
    """add/sub's alpha as the kernel takes it (a float, or a complex for a complex result;
    None for 1, which needs no kernel of its own), after PyTorch's alpha_check on the result
    dtype: a floating-point alpha needs a floating or complex result, a complex alpha a
    complex one (RuntimeError otherwise, whatever alpha's value)."""
    alpha = _as_pyscalar(alpha)
    if type(alpha) is builtins.int or type(alpha) is builtins.bool:
        if alpha == 1:
            return None
        return -builtins.float(alpha) if negate else builtins.float(alpha)
    if isinstance(alpha, (builtins.float, builtins.complex)):
        x = a._data if isinstance(a, Tensor) else _operand(a, op)
        y = b._data if isinstance(b, Tensor) else _operand(b, op)
        rdt = _ew.binary_dtypes(_ADD_ALPHA, x, y)[1]
        if rdt < 6:                                          # bool and integer results
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                               "point number.")
        if isinstance(alpha, builtins.complex) and rdt < 10:
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                               "number.")
        if alpha == 1:
            return None
        return -alpha if negate else alpha
    return -builtins.float(alpha) if negate else builtins.float(alpha)


_NO = object()       # "not given", for the deprecated overloads' extra positional argument


def _scalar_first(name, kwarg, scalar, tensors):
    """PyTorch's deprecated overloads that put the scalar before the tensors -- add(input,
    alpha, other), addcmul(input, value, tensor1, tensor2), their methods and in-place forms,
    still common in optimizers written for PyTorch 1.x: `scalar` (what was passed where the
    first tensor goes) after PyTorch's deprecation warning, or PyTorch's TypeError when the
    arguments are not of that form.  (An extra positional parameter with a default, rather
    than a wrapper: these ops are called in every training step.)"""
    n = len(tensors) + 1
    if not isinstance(scalar, numbers.Number) or isinstance(scalar, Tensor) \
            or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}() takes {n} positional arguments but {n + 1} were given")
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number {kwarg}, Tensor ...)\n"
                  f"Consider using one of the following signatures instead:\n\t{name}(Tensor ..., *, "
                  f"Number {kwarg}=1)", UserWarning, stacklevel=3)
    return scalar


@_register("add")
def add(input: Tensor | int | float | bool | complex, other: Tensor | int | float | bool | complex,
        _other: Tensor = _NO, *, alpha: int | float | bool | complex = 1,
        out: Tensor | None = None) -> Tensor:
    """input + alpha * other, with broadcasting and type promotion (a complex alpha for a
    complex result only).  (add(input, alpha, other): the deprecated overload.)"""
    if _other is not _NO:
        other, alpha = _other, _scalar_first("add", "alpha", other, (_other,))
    a = _alpha(input, other, alpha, "add")
    if a is None:
        return _binary(_ADD, input, other, out, "add")
    return _binary(_ADD_ALPHA, input, other, out, "add", a)


@_register("add_")
def add_(self: Tensor, other: Tensor | int | float | bool | complex, _other: Tensor = _NO, *,
         alpha: int | float | bool | complex = 1) -> Tensor:
    if _other is not _NO:
        other, alpha = _other, _scalar_first("add_", "alpha", other, (_other,))
    a = _alpha(self, other, alpha, "add_")
    if a is None:
        return _binary_(_ADD, self, other, "add_")
    return _binary_(_ADD_ALPHA, self, other, "add_", a)


def _is_bool_operand(x):
    return x._data.dtype == 0 if type(x) is Tensor else isinstance(x, builtins.bool)


def _no_bool_sub(a, b):
    """PyTorch rejects `-` with any bool operand (a Python bool counts as a bool tensor)."""
    a_bool, b_bool = _is_bool_operand(a), _is_bool_operand(b)
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


@_register("sub", "subtract")
def sub(input: Tensor | int | float | bool | complex, other: Tensor | int | float | bool | complex,
        _other: Tensor = _NO, *, alpha: int | float | bool | complex = 1,
        out: Tensor | None = None) -> Tensor:
    """input - alpha * other.  (sub(input, alpha, other): the deprecated overload.)"""
    if _other is not _NO:
        other, alpha = _other, _scalar_first("sub", "alpha", other, (_other,))
    _no_bool_sub(input, other)
    a = _alpha(input, other, alpha, "sub", negate=True)
    if a is None:
        return _binary(_SUB, input, other, out, "sub")
    return _binary(_ADD_ALPHA, input, other, out, "sub", a)


subtract = sub


@_register("sub_", "subtract_")
def sub_(self: Tensor, other: Tensor | int | float | bool | complex, _other: Tensor = _NO, *,
         alpha: int | float | bool | complex = 1) -> Tensor:
    if _other is not _NO:
        other, alpha = _other, _scalar_first("sub_", "alpha", other, (_other,))
    _no_bool_sub(self, other)
    a = _alpha(self, other, alpha, "sub_", negate=True)
    if a is None:
        return _binary_(_SUB, self, other, "sub_")
    return _binary_(_ADD_ALPHA, self, other, "sub_", a)


@_register("rsub")
def rsub(input: Tensor, other: Tensor | int | float | bool | complex, *,
         alpha: int | float | bool | complex = 1) -> Tensor:
    """other - alpha * input (input must be a Tensor, as in PyTorch)."""
    tensor_arg(input, "rsub", "input", pos=1)
    _no_bool_sub(input, other)
    a = _alpha(other, input, alpha, "rsub", negate=True)
    if a is None:
        return _binary(_SUB, other, input, None, "rsub")
    return _binary(_ADD_ALPHA, other, input, None, "rsub", a)


_DIV_CODES = {None: _B["div"], "trunc": _B["div_trunc"], "floor": _B["div_floor"]}


def _div_code(rounding_mode):
    try:
        return _DIV_CODES[rounding_mode]
    except KeyError:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{rounding_mode}'") from None


@_register("div", "divide")
def div(input: Tensor | int | float | bool | complex, other: Tensor | int | float | bool | complex, *,
        rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:
    """input / other: true division (ints give floats), or with rounding_mode 'trunc'/'floor'."""
    return _binary(_div_code(rounding_mode), input, other, out, "div")


divide = div


@_register("div_", "divide_")
def div_(self: Tensor, other: Tensor | int | float | bool | complex, *, rounding_mode: str | None = None) -> Tensor:
    return _binary_(_div_code(rounding_mode), self, other, "div_")


@_register("true_divide")
def true_divide(input: Tensor | int | float | bool | complex, other: Tensor | int | float | bool | complex, *,
                out: Tensor | None = None) -> Tensor:
    return div(input, other, out=out)


@_register("true_divide_")
def true_divide_(self: Tensor, other: Tensor | int | float | bool | complex) -> Tensor:
    return div_(self, other)


_POW, _MUL = _B["pow"], _B["mul"]


def _check_int_pow(base, exponent):
    if isinstance(base, Tensor) and base._data.dtype < 6 and \
            isinstance(exponent, builtins.int) and not isinstance(exponent, builtins.bool) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


@_register("pow")
def pow(input: Tensor | int | float | bool | complex, exponent: Tensor | int | float | bool | complex, *,
        out: Tensor | None = None) -> Tensor:
    """input ** exponent (either may be a number, not both)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(pow, locals())
    if type(input) is not Tensor and type(exponent) is not Tensor:
        _check_number_operands("pow", input, exponent)
    exponent = exponent if isinstance(exponent, Tensor) else _as_pyscalar(exponent)
    _check_int_pow(input, exponent)
    if out is None and isinstance(input, Tensor) and type(exponent) in (builtins.int, builtins.float) \
            and exponent == 2 and (input.is_floating_point() or isinstance(exponent, builtins.int)):
        return square(input)
    return _binary(_POW, input, exponent, out, "pow")


@_register("pow_")
def pow_(self: Tensor, exponent: Tensor | int | float | bool | complex) -> Tensor:
    _check_int_pow(self, exponent)
    return _binary_(_POW, self, exponent, "pow_")


@_register("float_power")
def float_power(input: Tensor | int | float | bool | complex, exponent: Tensor | int | float | bool | complex, *,
                out: Tensor | None = None) -> Tensor:
    """pow computed in float64."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(float_power, locals())
    if type(input) is not Tensor and type(exponent) is not Tensor:
        _check_number_operands("float_power", input, exponent)
    a = input.double() if isinstance(input, Tensor) else builtins.float(input)
    b = exponent.double() if isinstance(exponent, Tensor) else builtins.float(exponent)
    return pow(a, b, out=out) if isinstance(a, Tensor) else pow(a, b)


# ---- ternary -------------------------------------------------------------------------------
_WHERE = _T["where"]


def _where_method(self, condition, other):
    """x.where(condition, y): PyTorch's method puts self as the chosen values, so it is
    torchlite.where(condition, self, other)."""
    return where(condition, self, other)


Tensor.where = _where_method


def where(condition: Tensor, input: Tensor | int | float | bool | complex | None = None,
          other: Tensor | int | float | bool | complex | None = None, *,
          out: Tensor | None = None) -> Tensor | tuple[Tensor, ...]:
    """input where condition is True, else other (numbers are allowed for input/other).
    where(condition) alone is nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if isinstance(condition, Tensor) and condition.dtype is D.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will "
                      "be removed in a future version of PyTorch. Use a boolean condition instead.",
                      UserWarning, stacklevel=2)
        condition = condition != 0
    c = condition._data
    x = input._data if isinstance(input, Tensor) else _operand(input, "where")
    y = other._data if isinstance(other, Tensor) else _operand(other, "where")
    _check_devices("where", condition, input, other)
    if out is None:
        r = _wrap(_ew.ternary(_WHERE, c, x, y))
        if _G.needs_grad(input, other):
            _G.record_ternary(_G.WhereBackward0, (condition, input, other), r)
        return r
    _no_out_with_grad("where", input, other)
    _ew.ternary(_WHERE, c, x, y, _out_array(out, _bshape(condition, input, other), "where"))
    return out


def _ternary(code, a, b, c, out, name, value=1.0, node=None):
    xs = [x._data if isinstance(x, Tensor) else _operand(x, name) for x in (a, b, c)]
    _check_devices(name, a, b, c)
    if out is None:
        r = _wrap(_ew.ternary(code, *xs, None, builtins.float(value)))
        if node is not None and _G.needs_grad(a, b, c):
            _G.record_ternary(node, (a, b, c), r, value)
        return r
    _no_out_with_grad(name, a, b, c)
    _ew.ternary(code, *xs, _out_array(out, _bshape(a, b, c), name), builtins.float(value))
    return out


@_register("lerp")
def lerp(input: Tensor, end: Tensor, weight: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """input + weight * (end - input)."""
    node = _G.LerpBackward1 if isinstance(weight, Tensor) else _G.LerpBackward0
    return _ternary(_T["lerp"], input, end, weight, out, "lerp", node=node)


@_register("lerp_")
def lerp_(self: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
    if _inplace_records(self, end, weight):
        _G.check_inplace(self, "lerp_", end, weight)
        return _G.rebase_inplace(self, lambda old: lerp(old, end, weight))
    return _ternary_(_T["lerp"], self, end, weight, "lerp_")


@_register("addcmul")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, _tensor2: Tensor = _NO, *,
            value: int | float | bool | complex = 1, out: Tensor | None = None) -> Tensor:
    """input + value * tensor1 * tensor2 (integer tensors too, with an integer value).
    (addcmul(input, value, tensor1, tensor2): the deprecated overload.)"""
    if _tensor2 is not _NO:
        value = _scalar_first("addcmul", "value", tensor1, (tensor2, _tensor2))
        tensor1, tensor2, _tensor2 = tensor2, _tensor2, _NO
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(addcmul, locals())
    if isinstance(value, builtins.complex):         # (the fused kernel takes a real value)
        return add(input, mul(tensor1, tensor2), alpha=value, out=out)
    xs = [x._data if isinstance(x, Tensor) else _operand(x, "addcmul") for x in (input, tensor1, tensor2)]
    if _ew.result_type(*xs) >= 6:                   # floating and complex: the fused kernel
        return _ternary(_T["addcmul"], input, tensor1, tensor2, out, "addcmul", value,
                        _G.AddcmulBackward0)
    # the fused kernel is float-only; integers take two exact passes
    if isinstance(value, builtins.float):
        raise RuntimeError("addcmul: for integral input tensors, argument value must not be a "
                           "floating point number.")
    return add(input, mul(tensor1, tensor2), alpha=value, out=out)


@_register("addcmul_")
def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, _tensor2: Tensor = _NO, *,
             value: int | float | bool | complex = 1) -> Tensor:
    if _tensor2 is not _NO:
        value = _scalar_first("addcmul_", "value", tensor1, (tensor2, _tensor2))
        tensor1, tensor2 = tensor2, _tensor2
    if _inplace_records(self, tensor1, tensor2):
        _G.check_inplace(self, "addcmul_", tensor1, tensor2)
        return _G.rebase_inplace(self, lambda old: addcmul(old, tensor1, tensor2, value=value))
    if isinstance(value, builtins.complex):
        return self.add_(mul(tensor1, tensor2), alpha=value)
    if self._data.dtype < 6:
        _check_inplace_broadcast(self, "addcmul_", tensor1, tensor2)
        addcmul(self, tensor1, tensor2, value=value, out=self)
        self._bump_version()
        return self
    return _ternary_(_T["addcmul"], self, tensor1, tensor2, "addcmul_", value)


@_register("addcdiv")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, _tensor2: Tensor = _NO, *,
            value: int | float | bool | complex = 1, out: Tensor | None = None) -> Tensor:
    """input + value * tensor1 / tensor2.  (addcdiv(input, value, tensor1, tensor2): the
    deprecated overload.)"""
    if _tensor2 is not _NO:
        value = _scalar_first("addcdiv", "value", tensor1, (tensor2, _tensor2))
        tensor1, tensor2, _tensor2 = tensor2, _tensor2, _NO
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(addcdiv, locals())
    if isinstance(value, builtins.complex):         # (the fused kernel takes a real value)
        return add(input, div(tensor1, tensor2), alpha=value, out=out)
    return _ternary(_T["addcdiv"], input, tensor1, tensor2, out, "addcdiv", value,
                    _G.AddcdivBackward0)


@_register("addcdiv_")
def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, _tensor2: Tensor = _NO, *,
             value: int | float | bool | complex = 1) -> Tensor:
    if _tensor2 is not _NO:
        value = _scalar_first("addcdiv_", "value", tensor1, (tensor2, _tensor2))
        tensor1, tensor2 = tensor2, _tensor2
    if _inplace_records(self, tensor1, tensor2):
        _G.check_inplace(self, "addcdiv_", tensor1, tensor2)
        return _G.rebase_inplace(self, lambda old: addcdiv(old, tensor1, tensor2, value=value))
    if isinstance(value, builtins.complex):
        return self.add_(div(tensor1, tensor2), alpha=value)
    return _ternary_(_T["addcdiv"], self, tensor1, tensor2, "addcdiv_", value)


# ---- closeness -----------------------------------------------------------------------------
@_register("isclose")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise (inf equals inf of the same sign)."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype} did not match {other.dtype}")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be non-negative, got {rtol} and {atol}")
    eq_ = eq(input, other)
    if not input.is_floating_point() and not input.is_complex() and input.dtype is not D.bool:
        diff = abs(sub(input.double(), other.double()))
        return logical_or(eq_, le(diff, atol + rtol * abs(other.double())))
    if input.dtype is D.bool:
        return eq_
    diff = abs(sub(input, other))
    close = le(diff, add(mul(abs(other), rtol), atol))
    close = logical_and(close, isfinite(diff))
    r = logical_or(eq_, close)
    if equal_nan:
        r = logical_or(r, logical_and(isnan(input), isnan(other)))
    return r


@_register("allclose")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when isclose holds everywhere."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


@_register("equal")
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool(eq(input, other).all())


# ---- composite elementwise ops ---------------------------------------------------------------
# Each is a few kernel calls (made without recording); the gradient is one node named as
# PyTorch's, with its formula in elementwise_grad.py.
def _float_operand(x, name):
    """x as a float tensor: integers and bool become the default float dtype (PyTorch's rule
    for ops that only compute in floating point)."""
    tensor_arg(x, name, "input")
    return x if x.is_floating_point() else x.to(D.DTYPES[_ew.get_default_float()])


def _tensor_operands(name, input, other, what="other"):
    for arg, v in (("input", input), (what, other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {1 if arg == 'input' else 2}) "
                            f"must be Tensor, not {type(v).__name__}")
    _check_devices(name, input, other)


def _finish_composite(r, out, name, inputs, node_cls):
    """Record node_cls over inputs on result r, or write r into out=."""
    if out is None:
        if node_cls is not None and _G.needs_grad(*inputs):
            _G.record_ternary(node_cls, inputs, r)
        return r
    _no_out_with_grad(name, *inputs)
    _write_out(r, out, name, casting="same_kind")
    return out


def _inplace_via(self, out_of_place, name, *others):
    """self = out_of_place(self) in place: through the graph when it records, else computed
    out of place and copied back (the result dtype must be castable to self's)."""
    if _inplace_records(self, *others):
        _G.check_inplace(self, name, *others)
        return _G.rebase_inplace(self, out_of_place)
    r = out_of_place(self)
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"{name}: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(r.shape)}")
    if not _ew.can_cast(r.dtype.code, self._data.dtype):
        raise RuntimeError(f"result type {_ew._TORCH_NAMES[r.dtype.code]} can't be cast to the "
                           f"desired output type {_ew._TORCH_NAMES[self._data.dtype]}")
    _ew.copy_(self._data, r._data)
    self._bump_version()
    return self


def _logaddexp_impl(name, input, other, out, base2):
    _tensor_operands(name, input, other)
    rdt = D.DTYPES[_ew.result_type(input._data, other._data)]
    if not rdt.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_ew._TORCH_NAMES[rdt.code]}\'')
    with _no_grad():
        a, b = input.to(rdt), other.to(rdt)
        m = maximum(a, b)
        d = neg(abs(sub(a, b)))
        r = add(m, div(log1p(exp2(d)), math.log(2.0))) if base2 else add(m, log1p(exp(d)))
        # inf + inf of the same sign: the formula gives NaN (inf - inf), the answer is a
        r = where(logical_and(isinf(a), eq(a, b)), a, r)
    return _finish_composite(r, out, name, (input, other),
                             _G.Logaddexp2Backward0 if base2 else _G.LogaddexpBackward0)


@_register("logaddexp")
def logaddexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log(exp(input) + exp(other)), without overflow (floating-point inputs only)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(logaddexp, locals())
    return _logaddexp_impl("logaddexp", input, other, out, False)


@_register("logaddexp2")
def logaddexp2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log2(2**input + 2**other), without overflow (floating-point inputs only)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(logaddexp2, locals())
    return _logaddexp_impl("logaddexp2", input, other, out, True)


def _scaled(name, factor, node_cls):
    def fn(input, *, out=None):
        if isinstance(input, Tensor) and input.is_complex():
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        x = _float_operand(input, name)
        with _no_grad():
            r = mul(x, factor)
        return _finish_composite(r, out, name, (input,), node_cls)

    def fn_(self):
        return _inplace_via(self, fn, name + "_")
    fn.__annotations__ = dict(_UNARY_ANNOTATIONS)
    fn_.__annotations__ = dict(_INPLACE_ANNOTATIONS)
    return fn, fn_


deg2rad, deg2rad_ = _scaled("deg2rad", math.pi / 180.0, _G.Deg2RadBackward0)
deg2rad.__doc__ = "Degrees to radians: input * pi / 180 (integers become floats)."
rad2deg, rad2deg_ = _scaled("rad2deg", 180.0 / math.pi, _G.Rad2DegBackward0)
rad2deg.__doc__ = "Radians to degrees: input * 180 / pi (integers become floats)."
for _fn in (deg2rad, deg2rad_, rad2deg, rad2deg_):
    _fn.__name__ = _fn.__qualname__ = ("deg2rad" if _fn in (deg2rad, deg2rad_) else "rad2deg") + \
        ("_" if _fn in (deg2rad_, rad2deg_) else "")
    _register(_fn.__name__)(_fn)
deg2rad_.__doc__ = "In-place version of :func:`deg2rad`."
rad2deg_.__doc__ = "In-place version of :func:`rad2deg`."


@_register("sinc")
def sinc(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """sin(pi * input) / (pi * input), and 1 at 0 (integers become floats; a complex input
    gives the complex sinc)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(sinc, locals())
    x = input if isinstance(input, Tensor) and input.is_complex() else _float_operand(input, "sinc")
    with _no_grad():
        zero = eq(x, 0)
        px = mul(where(zero, 1.0, x), math.pi)      # no 0/0 where the answer is 1
        r = where(zero, 1.0, div(sin(px), px)).to(x.dtype)
    return _finish_composite(r, out, "sinc", (input,), _G.SincBackward0)


@_register("sinc_")
def sinc_(self: Tensor) -> Tensor:
    """In-place version of :func:`sinc`."""
    return _inplace_via(self, sinc, "sinc_")


@_register("heaviside")
def heaviside(input: Tensor, values: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Heaviside step: 0 where input < 0 (and NaN), values where input == 0, 1 where
    input > 0.  input and values must have the same dtype; not differentiable."""
    _tensor_operands("heaviside", input, values, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    with _no_grad():
        r = where(eq(input, 0), values, gt(input, 0).to(input.dtype))
    if out is None and _G.needs_grad(input, values):
        _G.record_not_differentiable("heaviside", (input, values), r)
        return r
    return _finish_composite(r, out, "heaviside", (input, values), None)


@_register("heaviside_")
def heaviside_(self: Tensor, values: Tensor) -> Tensor:
    """In-place version of :func:`heaviside`."""
    return _inplace_via(self, lambda old: heaviside(old, values), "heaviside_", values)


def _integer_pair(name, input, other):
    _tensor_operands(name, input, other)
    rdt = D.DTYPES[_ew.result_type(input._data, other._data)]
    if rdt.is_floating_point or rdt is D.bool:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_ew._TORCH_NAMES[rdt.code]}\'')
    return input.to(rdt), other.to(rdt)


def _gcd_values(a, b):
    """Euclid's algorithm on whole tensors: |a|, |b| step to (b, a mod b) until every b is 0
    (at most ~90 steps for int64, usually far fewer).  Broadcast first: the loop may not run."""
    shape = _bshape(a, b)
    a, b = abs(a).expand(shape), abs(b).expand(shape)
    while builtins.bool(ne(b, 0).any()):
        nz = ne(b, 0)
        a, b = where(nz, b, a), where(nz, remainder(a, where(nz, b, 1)), 0)
    return a.contiguous()           # not an expanded view when the loop did not run


@_register("gcd")
def gcd(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Greatest common divisor of integers, elementwise (non-negative; gcd(0, 0) = 0)."""
    a, b = _integer_pair("gcd", input, other)
    return _finish_composite(_gcd_values(a, b), out, "gcd", (), None)


@_register("lcm")
def lcm(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Least common multiple of integers, elementwise (non-negative; 0 if either is 0)."""
    a, b = _integer_pair("lcm", input, other)
    g = _gcd_values(a, b)
    r = abs(mul(div(a, where(eq(g, 0), 1, g), rounding_mode="trunc"), b))
    return _finish_composite(where(eq(g, 0), 0, r).to(a.dtype), out, "lcm", (), None)


@_register("gcd_")
def gcd_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :func:`gcd`."""
    return _inplace_via(self, lambda old: gcd(old, other), "gcd_")


@_register("lcm_")
def lcm_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :func:`lcm`."""
    return _inplace_via(self, lambda old: lcm(old, other), "lcm_")


_return_types = None


def _frexp_type():
    global _return_types
    if _return_types is None:
        from .. import return_types
        _return_types = getattr(return_types, "frexp", None) or \
            return_types._make("frexp", ("mantissa", "exponent"))
    return _return_types


@_register("frexp")
def frexp(input: Tensor, *, out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(mantissa, exponent) with input = mantissa * 2**exponent and 0.5 <= |mantissa| < 1
    (mantissa 0 and exponent 0 for 0; inf and NaN keep their value with exponent 0)."""
    tensor_arg(input, "frexp", "input")
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with _no_grad():
        x = input.double()                  # every exponent and power of 2 below is exact here
        finite = logical_and(isfinite(x), ne(x, 0))
        e = where(finite, floor(log2(abs(where(finite, x, 1.0)))) + 1, 0.0)
        m = div(div(x, exp2(floor(e / 2))), exp2(e - floor(e / 2)))   # two steps: no overflow
        # log2 may round to the next integer near powers of 2: move m back into [0.5, 1)
        big = logical_and(ge(abs(m), 1.0), finite)
        small = logical_and(lt(abs(m), 0.5), finite)
        m = where(big, m * 0.5, where(small, m * 2.0, m))
        e = where(big, e + 1, where(small, e - 1, e))
        mantissa, exponent = m.to(input.dtype), e.to(D.int32)
    if out is not None:
        _no_out_with_grad("frexp", input)
        return _write_out(_frexp_type()(mantissa, exponent), out, "frexp", casting="same_kind")
    if _G.needs_grad(input):
        node = _G.FrexpBackward0()
        node.save_output(exponent=exponent)
        _G.record(node, (input,), (mantissa, exponent))
    return _frexp_type()(mantissa, exponent)


@_register("ldexp")
def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * 2**other (computed as PyTorch does: input * pow(2.0, other))."""
    _tensor_operands("ldexp", input, other)
    with _no_grad():
        r = mul(input, pow(2.0, other))
    return _finish_composite(r, out, "ldexp", (input, other), _G.LdexpBackward0)


@_register("ldexp_")
def ldexp_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :func:`ldexp`."""
    return _inplace_via(self, lambda old: ldexp(old, other), "ldexp_", other)


@_register("float_power_")
def float_power_(self: Tensor, exponent: Tensor | int | float | bool | complex) -> Tensor:
    """In-place float_power: self must already be float64."""
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_ew._TORCH_NAMES[self._data.dtype]} "
                           f"but the operation's result requires dtype Double")
    return pow_(self, exponent.double() if isinstance(exponent, Tensor) else builtins.float(exponent))


@_register("clamp_min_")
def clamp_min_(self: Tensor, min: Tensor | int | float) -> Tensor:
    """In-place clamp_min."""
    return clamp_(self, min=min)


@_register("clamp_max_")
def clamp_max_(self: Tensor, max: Tensor | int | float) -> Tensor:
    """In-place clamp_max."""
    return clamp_(self, max=max)


@_register("is_nonzero")
def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (an error for any other number of elements)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


@_register("is_same_size")
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


# ---- operators -----------------------------------------------------------------------------
def _invert(self):
    """~x: bitwise_not of an integer or bool tensor; for a floating or complex one PyTorch's
    TypeError of the operator (torch.bitwise_not itself raises its RuntimeError)."""
    if self.is_floating_point() or self.is_complex():
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


def _rev(fn):
    return lambda self, other: fn(other, self)


def _rtruediv(self, other):
    """other / self (on autocast's CUDA float32 list, as number / tensor is in PyTorch)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(_rtruediv, locals())
    try:
        return _binary(_DIV_CODES[None], other, self, None, "div")
    except _Foreign:
        return _foreign(_rtruediv, self, other)


def _ndarray_operand(x):
    """A NumPy array as a tensor (PyTorch's operators take them: t + array is a tensor), or
    None for anything else."""
    t = type(x)
    if t.__name__ == "ndarray" and t.__module__ == "numpy":
        from .creation import as_tensor
        return as_tensor(x)
    return None


def _foreign(op, self, other):
    """op(self, other) for an operand that is not a Tensor or number: with it as a tensor
    when it is a NumPy array, else NotImplemented."""
    t = _ndarray_operand(other)
    return NotImplemented if t is None else op(self, t)


def _foreign_aware(op):
    """The operator op (self, other), returning NotImplemented for a foreign operand."""
    def dunder(self, other):
        try:
            return op(self, other)
        except _Foreign:
            return _foreign(op, self, other)
    dunder.__name__ = getattr(op, "__name__", "dunder")
    return dunder


def _add_op(s, o):
    try:
        return _binary(_ADD, s, o, None, "add")
    except _Foreign:
        return _foreign(_add_op, s, o)


def _mul_op(s, o):
    try:
        return _binary(_MUL, s, o, None, "mul")
    except _Foreign:
        return _foreign(_mul_op, s, o)


def _sub_op(s, o):
    try:
        _no_bool_sub(s, o)
        return _binary(_SUB, s, o, None, "sub")
    except _Foreign:
        return _foreign(_sub_op, s, o)


def _truediv_op(s, o):
    try:
        return _binary(_DIV_CODES[None], s, o, None, "div")
    except _Foreign:
        return _foreign(_truediv_op, s, o)


def _install_operators():
    T = Tensor
    # the common operators inline (one call each); the others through _foreign_aware below
    T.__add__ = _add_op
    T.__radd__ = _add_op
    T.__iadd__ = lambda s, o: _binary_(_ADD, s, o, "add_")
    T.__sub__ = _sub_op
    T.__rsub__ = lambda s, o: sub(o, s)
    T.__isub__ = sub_
    T.__mul__ = _mul_op
    T.__rmul__ = _mul_op
    T.__imul__ = lambda s, o: _binary_(_MUL, s, o, "mul_")
    T.__truediv__ = _truediv_op
    T.__rtruediv__ = _rtruediv
    T.__itruediv__ = lambda s, o: _binary_(_DIV_CODES[None], s, o, "div_")
    T.__floordiv__ = floor_divide
    T.__rfloordiv__ = _rev(floor_divide)
    T.__ifloordiv__ = globals()["floor_divide_"]
    T.__mod__ = remainder
    T.__rmod__ = _rev(remainder)
    T.__imod__ = globals()["remainder_"]
    T.__pow__ = pow
    T.__rpow__ = _rev(pow)
    T.__ipow__ = pow_
    T.__neg__ = neg
    T.__pos__ = positive
    T.__abs__ = abs
    T.__invert__ = _invert
    T.__and__ = bitwise_and
    T.__rand__ = _rev(bitwise_and)
    T.__iand__ = globals()["bitwise_and_"]
    T.__or__ = bitwise_or
    T.__ror__ = _rev(bitwise_or)
    T.__ior__ = globals()["bitwise_or_"]
    T.__xor__ = bitwise_xor
    T.__rxor__ = _rev(bitwise_xor)
    T.__ixor__ = globals()["bitwise_xor_"]
    T.__lshift__ = bitwise_left_shift
    T.__rlshift__ = _rev(bitwise_left_shift)
    T.__ilshift__ = globals()["bitwise_left_shift_"]
    T.__rshift__ = bitwise_right_shift
    T.__rrshift__ = _rev(bitwise_right_shift)
    T.__irshift__ = globals()["bitwise_right_shift_"]
    T.__eq__ = lambda s, o: eq(s, o) if isinstance(o, Tensor) or _is_num(o) else NotImplemented
    T.__ne__ = lambda s, o: ne(s, o) if isinstance(o, Tensor) or _is_num(o) else NotImplemented
    T.__lt__ = lt
    T.__le__ = le
    T.__gt__ = gt
    T.__ge__ = ge
    T.__hash__ = lambda s: id(s)
    # (__rtruediv__, on autocast's lists, handles a foreign operand itself)
    for name in ("__iadd__", "__rsub__", "__isub__", "__imul__", "__itruediv__",
                 "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__",
                 "__imod__", "__pow__", "__rpow__", "__ipow__", "__and__", "__rand__", "__iand__",
                 "__or__", "__ror__", "__ior__", "__xor__", "__rxor__", "__ixor__", "__lshift__",
                 "__rlshift__", "__ilshift__", "__rshift__", "__rrshift__", "__irshift__",
                 "__lt__", "__le__", "__gt__", "__ge__"):
        setattr(T, name, _foreign_aware(getattr(T, name)))
    # Python 2's names, which PyTorch's Tensor still has
    T.__div__, T.__rdiv__, T.__idiv__ = T.__truediv__, T.__rtruediv__, T.__itruediv__


def _is_num(o):
    import numbers
    return isinstance(o, numbers.Number)


_install_operators()


def digamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """d/dx lgamma(x) (psi), differentiable again (trigamma through autograd)."""
    from .elementwise_grad import _digamma
    tensor_arg(input, "digamma", "input")
    if input.is_complex():
        raise NotImplementedError(f"\"digamma\" not implemented for '{_ew._TORCH_NAMES[input._data.dtype]}'")
    x = input if input.is_floating_point() else input.to(D.get_default_dtype())
    r = _digamma(x)
    if out is None:
        return r
    _no_out_with_grad("digamma", input)
    return _write_out(r, out, "digamma")


_register("digamma")(digamma)

# the integer type of each floating type's size: nextafter steps the bit pattern by one
_BITS_OF = {D.float16: D.int16, D.bfloat16: D.int16, D.float32: D.int32, D.float64: D.int64}


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The floating-point value after input in the direction of other, elementwise (the
    smallest subnormal, signed as other, after a zero; other itself where they are equal; NaN
    where either is)."""
    for name, t in (("input", input), ("other", other)):
        tensor_arg(t, "nextafter", name)
    dt = D.DTYPES[_ew.result_type(input._data, other._data)]
    if dt not in _BITS_OF:
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{_ew._TORCH_NAMES[dt.code]}\'')
    shape = _A.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    x = input.detach().to(dt).expand(shape).contiguous()
    y = other.detach().to(dt).expand(shape).contiguous()
    bits = x.view(_BITS_OF[dt])
    # a positive value moving up, or a negative one moving down, grows in magnitude: its bit
    # pattern (sign and magnitude) goes up by one; otherwise down by one
    stepped = where((y > x) == (x > 0), bits + 1, bits - 1).view(dt)
    smallest = bits.new_ones(()).view(dt)
    r = where(x == 0, copysign(smallest.expand(shape), y), stepped)
    r = where(x == y, y, r)
    r = where(x.isnan() | y.isnan(), x + y, r)
    if _G.needs_grad(input, other):
        _G.record_nextafter(input, other, r)
    if out is None:
        return r
    from ._kit import write_out
    return write_out(r._data, out, "nextafter")


@_register("nextafter_")
def nextafter_(self: Tensor, other: Tensor) -> Tensor:
    """In-place nextafter."""
    return self.copy_(nextafter(self, other))


_register("nextafter")(nextafter)
_MORE = ["digamma", "nextafter", "angle", "sgn", "sgn_", "conj", "conj_physical", "conj_physical_", "resolve_conj",
         "resolve_neg", "is_conj", "is_neg"]

__all__ = sorted(set(
    _MORE + [n for n, *_ in _UNARY_OPS] + [n + "_" for n, *_ in _UNARY_OPS]
    + [a for *_, al in _UNARY_OPS for a in al]
    + [n for n, *_ in _BOOL_UNARY]
    + [n for n, *_ in _BINARY_OPS] + [a for *_, al in _BINARY_OPS for a in al]
    + ["add", "sub", "subtract", "rsub", "div", "divide", "true_divide", "pow", "float_power",
       "where", "clamp", "clip", "clamp_", "clip_", "clamp_min", "clamp_max", "nan_to_num",
       "nan_to_num_", "logit", "round", "round_", "positive", "isclose", "allclose", "equal",
       "lerp", "addcmul", "addcdiv", "neg", "negative", "logaddexp", "logaddexp2", "deg2rad",
       "deg2rad_", "rad2deg", "rad2deg_", "sinc", "sinc_", "heaviside", "gcd", "gcd_", "lcm",
       "lcm_", "frexp", "ldexp", "ldexp_", "clamp_min_", "clamp_max_", "is_nonzero",
       "is_same_size"]))
