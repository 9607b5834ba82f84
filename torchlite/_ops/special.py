"""The special functions: the kernels behind torchlite.special (torch.special's names) and the
top-level ops PyTorch builds on them: polygamma, mvlgamma, i0, igamma, igammac and
kaiser_window, with their Tensor methods and in-place forms (and digamma_, the in-place form of
elementwise.py's digamma, which is also polygamma(0, .) and torch.special.digamma).

Each special function is one kernel of torchlite/_core/special.pyx (the math in
kernels/special_{gamma,bessel,math}.h), run through torchlite._dispatch (a CUDA tensor runs it
on host copies) on float32 or float64 operands that this module has promoted and broadcast.
PyTorch's dtype rules: integer and bool inputs compute in the default float dtype (the
incomplete gamma functions raise for them, as PyTorch does); float16 and bfloat16 compute in
float32 and round back where PyTorch accepts them, and raise PyTorch's NotImplementedError
where it does not; complex inputs raise.  Backward formulas are in special_grad.py; the Bessel
functions, Airy's Ai and the orthogonal polynomials have none in PyTorch (their results never
require grad), zeta has none for its first argument and the incomplete gamma functions none
for theirs (the node raises if that gradient is asked for).

The one-line aliases of existing ops (torch.special.expit is torch.sigmoid, ...) live in the
public face, torchlite/special.py."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

from .. import _dispatch
from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import Tensor, _wrap, _as_pyscalar
from . import _register
from . import special_grad as _G
from ._kit import int_arg, tensor_arg, no_out_with_grad as _no_out_with_grad, write_out
from .elementwise import _inplace_via
from .elementwise import digamma      # polygamma(0, .), torch.special.digamma: one digamma
from ..autograd.grad_mode import no_grad as _no_grad
from .. import _layout

if TYPE_CHECKING:
    from .._device import device
    from .._dtype import dtype
    from .._layout import layout

__all__ = ["polygamma", "mvlgamma", "i0", "i0_", "igamma", "igammac", "kaiser_window"]

# the kernel module's namespace in the dispatch layer (torchlite/_dispatch.py lists "special")
_K = _dispatch._NAMESPACES["special"]
_UNARY, _BINARY = _K.UNARY, _K.BINARY
_HALF = (D.float16, D.bfloat16)
# Laguerre's and Legendre's recurrences take n steps an element (the C code stops there too)
_MAX_RECURRENCE_DEGREE = 1 << 24


def _torch_name(dt):
    return _ew._TORCH_NAMES[dt.code]


# ---- dtypes -------------------------------------------------------------------------------------
def _not_implemented(kernel, dt):
    return NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_torch_name(dt)}\'')


def _dtypes(kernel, dt, half, promote_ints=True):
    """(compute dtype, result dtype) of a special function on dtype dt: integers and bool to
    the default float dtype, float16/bfloat16 through float32 where `half`."""
    if dt.is_complex or (not dt.is_floating_point and not promote_ints):
        raise _not_implemented(kernel, dt)
    if not dt.is_floating_point:
        dt = D.get_default_dtype()
        return dt, dt
    if dt in _HALF:
        if not half:
            raise _not_implemented(kernel, dt)
        return D.float32, dt
    return dt, dt


def _operand(x, op, arg):
    """What promotion reads of an operand: a Tensor's array, or a Python number."""
    if isinstance(x, Tensor):
        return x._data
    v = _as_pyscalar(x)
    if isinstance(v, (builtins.bool, builtins.int, builtins.float)):
        return v
    raise TypeError(f"{op}(): argument '{arg}' must be Tensor or Number, not {type(x).__name__}")


# ---- running the kernels --------------------------------------------------------------------------
def _unary_values(name, kernel, x, half):
    """f(x) as a new tensor of the result dtype, not recorded."""
    cdt, rdt = _dtypes(kernel, x.dtype, half)
    with _no_grad():
        xin = x.detach().to(cdt)
        out = _A.empty(tuple(xin.shape), cdt.code, device=xin._data)
        _K.unary(_UNARY[name], xin._data, out)
        r = _wrap(out)
        return r if rdt is cdt else r.to(rdt)


def _binary_values(name, kernel, a, b, half, promote_ints=True):
    """f(a, b) with broadcasting and PyTorch's type promotion (a or b may be a Python
    number), not recorded."""
    da, db = _operand(a, kernel, "input"), _operand(b, kernel, "other")
    cdt, rdt = _dtypes(kernel, D.DTYPES[_ew.result_type(da, db)], half, promote_ints)
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    if len(tensors) == 2:
        _dispatch.check_same_device(kernel, a._data, b._data)
    shape = tuple(_ew.broadcast_result(tuple(t._data for t in tensors), kernel))
    # the result's device: a CPU scalar tensor may join a CUDA tensor
    home = next((t for t in tensors if t._data.ndim), tensors[0]).device
    with _no_grad():
        ops = []
        for v in (a, b):
            if isinstance(v, Tensor):
                t = v.detach().to(cdt).to(home)
            else:
                t = _wrap(_A.full((), v, cdt.code, device=home))
            ops.append(t.expand(shape))
        out = _A.empty(shape, cdt.code, device=ops[0]._data)
        _K.binary(_BINARY[name], ops[0]._data, ops[1]._data, out)
        r = _wrap(out)
        return r if rdt is cdt else r.to(rdt)


def _deliver(r, out, name, inputs):
    """r, or r written into out= (PyTorch's rules: no autograd through out=, the result cast
    to out's dtype where the cast is safe, out resized to the result's shape)."""
    if out is None:
        return r
    _no_out_with_grad(name, *inputs)
    return write_out(r, out, name, casting="same_kind")


def _unary_op(name, kernel, half=False, grad=True, doc=""):
    """A one-argument special function fn(input, *, out=None)."""

    def fn(input, *, out=None):
        tensor_arg(input, kernel)
        r = _unary_values(name, kernel, input, half)
        if out is None and grad and _G.needs_grad(input):
            _G.record_unary(name, input, r)
        return _deliver(r, out, kernel, (input,))
    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = doc
    fn.__annotations__ = {"input": "Tensor", "out": "Tensor | None", "return": "Tensor"}
    return fn


def _binary_op(name, kernel, half=False, grad=True, doc="", tensors_only=False,
               promote_ints=True):
    """A two-argument special function fn(input, other, *, out=None)."""

    def fn(input, other, *, out=None):
        if tensors_only:
            tensor_arg(input, kernel)
            tensor_arg(other, kernel, "other")
        elif not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{kernel}(): expected at least one of 'input' and 'other' to be a "
                            f"Tensor, got {type(input).__name__} and {type(other).__name__}")
        r = _binary_values(name, kernel, input, other, half, promote_ints)
        if out is None and grad and _G.needs_grad(*[t for t in (input, other)
                                                    if isinstance(t, Tensor)]):
            _G.record_binary(name, input, other, r)
        return _deliver(r, out, kernel, (input, other))
    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = doc
    operand = "Tensor" if tensors_only else "Tensor | int | float"
    fn.__annotations__ = {"input": operand, "other": operand, "out": "Tensor | None", "return": "Tensor"}
    return fn


# ---- the functions ---------------------------------------------------------------------------------
erfcx = _unary_op("erfcx", "erfcx", doc="The scaled complementary error function, "
                                        "exp(input^2) * erfc(input).")
ndtr = _unary_op("ndtr", "ndtr", half=True,
                 doc="The area under the standard normal density from -inf to input.")
ndtri = _unary_op("ndtri", "ndtri",
                  doc="The argument x for which the area under the standard normal density "
                      "from -inf to x equals input (ndtr's inverse).")
log_ndtr = _unary_op("log_ndtr", "log_ndtr",
                     doc="The log of the area under the standard normal density from -inf to "
                         "input.")
entr = _unary_op("entr", "entr", half=True,
                 doc="The elementwise entropy: -input * log(input), 0 at 0, -inf below 0.")
i0 = _unary_op("i0", "i0", half=True,
               doc="The modified Bessel function of the first kind of order 0.")
i0e = _unary_op("i0e", "i0e", half=True,
                doc="The exponentially scaled modified Bessel function of the first kind of "
                    "order 0: exp(-|input|) * i0(input).")
i1 = _unary_op("i1", "i1", half=True,
               doc="The modified Bessel function of the first kind of order 1.")
i1e = _unary_op("i1e", "i1e", half=True,
                doc="The exponentially scaled modified Bessel function of the first kind of "
                    "order 1: exp(-|input|) * i1(input).")
bessel_j0 = _unary_op("j0", "bessel_j0", grad=False,
                      doc="The Bessel function of the first kind of order 0.")
bessel_j1 = _unary_op("j1", "bessel_j1", grad=False,
                      doc="The Bessel function of the first kind of order 1.")
bessel_y0 = _unary_op("y0", "bessel_y0", grad=False,
                      doc="The Bessel function of the second kind of order 0.")
bessel_y1 = _unary_op("y1", "bessel_y1", grad=False,
                      doc="The Bessel function of the second kind of order 1.")
modified_bessel_i0 = _unary_op("i0", "modified_bessel_i0", grad=False,
                               doc="The modified Bessel function of the first kind of order 0.")
modified_bessel_i1 = _unary_op("i1", "modified_bessel_i1", grad=False,
                               doc="The modified Bessel function of the first kind of order 1.")
modified_bessel_k0 = _unary_op("k0", "modified_bessel_k0", grad=False,
                               doc="The modified Bessel function of the second kind of order 0.")
modified_bessel_k1 = _unary_op("k1", "modified_bessel_k1", grad=False,
                               doc="The modified Bessel function of the second kind of order 1.")
scaled_modified_bessel_k0 = _unary_op("k0e", "scaled_modified_bessel_k0", grad=False,
                                      doc="The scaled modified Bessel function of the second "
                                          "kind of order 0: exp(input) * K0(input).")
scaled_modified_bessel_k1 = _unary_op("k1e", "scaled_modified_bessel_k1", grad=False,
                                      doc="The scaled modified Bessel function of the second "
                                          "kind of order 1: exp(input) * K1(input).")
spherical_bessel_j0 = _unary_op("spherical_j0", "spherical_bessel_j0", grad=False,
                                doc="The spherical Bessel function of the first kind of "
                                    "order 0: sin(input) / input.")
airy_ai = _unary_op("airy_ai", "airy_ai", grad=False, doc="The Airy function Ai(input).")

zeta = _binary_op("zeta", "zeta", doc="The Hurwitz zeta function: sum over k >= 0 of "
                                      "(other + k) ** -input.")
xlog1py = _binary_op("xlog1py", "xlog1py", half=True,
                     doc="input * log1p(other), with 0 where input is 0 (and other is not "
                         "NaN).")
gammainc = _binary_op("gammainc", "igamma", half=True, tensors_only=True, promote_ints=False,
                      doc="The regularized lower incomplete gamma function P(input, other).")
gammaincc = _binary_op("gammaincc", "igammac", half=True, tensors_only=True,
                       promote_ints=False,
                       doc="The regularized upper incomplete gamma function Q(input, other).")
for _f, _n in ((gammainc, "gammainc"), (gammaincc, "gammaincc")):
    _f.__name__ = _f.__qualname__ = _n


def _check_degree(kernel, n):
    """Laguerre's and Legendre's recurrences take n steps per element: a degree above
    _MAX_RECURRENCE_DEGREE raises here instead of running for seconds per element."""
    if isinstance(n, Tensor):
        if n.numel() == 0 or n.is_complex() or n.is_meta:
            return
        with _no_grad():
            top = n.detach().max().item()
    else:
        top = _as_pyscalar(n)
        if not isinstance(top, (builtins.int, builtins.float)):
            return              # not a number: _binary_values raises the TypeError
    if top == top and top > _MAX_RECURRENCE_DEGREE and not math.isinf(top):
        raise ValueError(f"{kernel}(): degree n = {top} is above the largest supported "
                         f"degree {_MAX_RECURRENCE_DEGREE} (the recurrence takes n steps per "
                         f"element)")


def _polynomial(name, kernel, what, bounded=True):
    op = _binary_op(name, kernel, grad=False)

    def fn(input, n, *, out=None):
        if not bounded:
            _check_degree(kernel, n)
        return op(input, n, out=out)
    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = (f"The {what} of degree n at input (n is truncated to an integer; a negative "
                  f"degree gives 0).")
    fn.__annotations__ = {"input": "Tensor | int | float", "n": "Tensor | int | float",
                          "out": "Tensor | None", "return": "Tensor"}
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_t", "chebyshev_polynomial_t",
                                     "Chebyshev polynomial of the first kind T_n")
chebyshev_polynomial_u = _polynomial("chebyshev_u", "chebyshev_polynomial_u",
                                     "Chebyshev polynomial of the second kind U_n")
chebyshev_polynomial_v = _polynomial("chebyshev_v", "chebyshev_polynomial_v",
                                     "Chebyshev polynomial of the third kind V_n")
chebyshev_polynomial_w = _polynomial("chebyshev_w", "chebyshev_polynomial_w",
                                     "Chebyshev polynomial of the fourth kind W_n")
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_t", "shifted_chebyshev_polynomial_t",
    "shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1)")
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_u", "shifted_chebyshev_polynomial_u",
    "shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1)")
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_v", "shifted_chebyshev_polynomial_v",
    "shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1)")
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_w", "shifted_chebyshev_polynomial_w",
    "shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1)")
hermite_polynomial_h = _polynomial("hermite_h", "hermite_polynomial_h",
                                   "physicists' Hermite polynomial H_n (NaN above degree 512, "
                                   "128 in float32, as in PyTorch)")
hermite_polynomial_he = _polynomial("hermite_he", "hermite_polynomial_he",
                                    "probabilists' Hermite polynomial He_n (NaN above degree "
                                    "512, 128 in float32, as in PyTorch)")
laguerre_polynomial_l = _polynomial("laguerre_l", "laguerre_polynomial_l",
                                    "Laguerre polynomial L_n (degrees up to 2**24)",
                                    bounded=False)
legendre_polynomial_p = _polynomial("legendre_p", "legendre_polynomial_p",
                                    "Legendre polynomial P_n (degrees up to 2**24)",
                                    bounded=False)


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of the digamma function (n >= 0)."""
    n = int_arg(n, "n", "polygamma")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    tensor_arg(input, "polygamma")
    if n == 0:
        return digamma(input, out=out)
    r = _binary_values("polygamma", "polygamma", float(n), input, True)
    if out is None and _G.needs_grad(input):
        _G.record_polygamma(n, input, r)
    return _deliver(r, out, "polygamma", (input,))


def mvlgamma(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The multivariate log-gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum over j < p of lgamma(input - j / 2)."""
    tensor_arg(input, "mvlgamma")
    p = int_arg(p, "p", "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    _, rdt = _dtypes("mvlgamma", input.dtype, True)
    x = input if input.dtype is rdt else input.to(rdt)
    with _no_grad():
        xd = x.detach()
        r = xd.lgamma()
        for j in range(1, p):
            r = r + (xd - 0.5 * j).lgamma()
        r = r + p * (p - 1) / 4 * math.log(math.pi)
    if out is None and _G.needs_grad(input):
        _G.record_mvlgamma(p, x, r)
    return _deliver(r, out, "mvlgamma", (input,))


def igamma(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    return gammainc(input, other, out=out)


def igammac(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other)."""
    return gammaincc(input, other, out=out)


def i0_(input: Tensor) -> Tensor:
    """In-place version of :func:`i0`."""
    return _inplace_via(input, i0, "i0_")


# ---- methods --------------------------------------------------------------------------------------
for _n, _f in (("i0", i0), ("i0_", i0_), ("igamma", igamma), ("igammac", igammac),
               ("mvlgamma", mvlgamma)):
    _register(_n)(_f)


def _method(name, fn, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    _register(name)(fn)


_method("polygamma", lambda self, n: polygamma(n, self), "polygamma(n, self).")
_method("digamma_", lambda self: _inplace_via(self, digamma, "digamma_"),
        "In-place version of :func:`digamma`.")
_method("igamma_", lambda self, other: _inplace_via(self, lambda old: igamma(old, other),
                                                    "igamma_", other),
        "In-place version of :func:`igamma`.")
_method("igammac_", lambda self, other: _inplace_via(self, lambda old: igammac(old, other),
                                                     "igammac_", other),
        "In-place version of :func:`igammac`.")
_method("polygamma_", lambda self, n: _inplace_via(self, lambda old: polygamma(n, old),
                                                   "polygamma_"),
        "In-place version of :func:`polygamma`.")
_method("mvlgamma_", lambda self, p: _inplace_via(self, lambda old: mvlgamma(old, p),
                                                  "mvlgamma_"),
        "In-place version of :func:`mvlgamma`.")


# ---- the Kaiser window ----------------------------------------------------------------------------
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: dtype | None = None, layout: layout | None = None,
                  device: device | str | int | None = None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """The Kaiser window i0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / i0(beta), k = 0..N-1, with
    N = window_length + 1 when periodic (the last point then dropped)."""
    _layout.check(layout, "kaiser_window")
    from .creation import _window
    window_length = int_arg(window_length, "window_length", "kaiser_window")
    beta = builtins.float(beta)

    def weights(k, m):
        t = (k * (2.0 / m) - 1.0).clamp(-1.0, 1.0)
        return i0(beta * (1.0 - t * t).sqrt()) / i0(k.new_full((), beta))
    with _no_grad():
        return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                       weights)
