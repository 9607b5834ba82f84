"""Backward formulas of the elementwise ops in elementwise.py, and the recording hooks they use.

Each formula is written with Tensor ops, so it is differentiable again (create_graph=True gives
second derivatives).  A formula says which values it needs (the input `x`, the result `y`, the
operands `a`/`b`): only those are saved, as in PyTorch, which decides which later in-place
changes are errors (exp_ saves its result, so changing it afterwards is an error; sin_ saves
its input, which the in-place op then keeps a copy of).  Gradients of broadcast or
type-promoted inputs are summed back to the input's shape and cast to its dtype."""
import math

from .._tensor import Tensor, _wrap, _join_views
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .. import _dtype as D
from ..autograd.graph import Node, record, sum_to, pack, unpack, edge, refresh_view, _FREED, _NO_EDGE
from ..autograd.graph import fresh_view_of_base, move_retain_grad, saved_hooks_in_use, hook_saved
from ..autograd.graph import record_not_differentiable
from ..autograd.graph import needs_grad  # noqa: F401  (elementwise.py's in-place ops use it as _G.needs_grad)
from ..autograd.grad_mode import no_grad, _state
from ..autograd import anomaly as _anomaly
from ..autograd import graph as _graph

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


_elementwise = None


def _pw():
    """The elementwise module (it imports this one, so it is looked up on first use)."""
    global _elementwise
    if _elementwise is None:
        from . import elementwise
        _elementwise = elementwise
    return _elementwise


def _zeros(g):
    """PyTorch's gradient of a piecewise-constant op: zeros (not g * 0, which keeps NaN)."""
    from .creation import zeros_like
    return zeros_like(g)


def _mask(cond, g):
    """g where cond holds, 0 elsewhere (differentiable in g)."""
    return _pw().where(cond, g, 0.0)


def threshold_grad(g, x, threshold):
    """g where x > threshold, 0 elsewhere (a NaN x passes g on): the gradient of relu and
    threshold in one pass, by the binary op threshold_backward (PyTorch's kernel of that
    name), itself differentiable in g.  Traced (torchlite.compile derives backward graphs
    from these formulas, where g and x are fx proxies), the same values as public ops: there
    the fused kernel makes it one pass anyway."""
    pw = _pw()
    if not (isinstance(g, Tensor) and isinstance(x, Tensor)):
        return _zero_where(x <= threshold, g)
    return pw._binary(pw._B["threshold_backward"], g, x, None, "threshold_backward", float(threshold))


def _zero_where(cond, g):
    """0 where cond holds, g elsewhere (differentiable in g): _mask(~cond, g) without the
    pass that negates cond.  A NaN compares false, so a NaN input passes g on (PyTorch's
    rule for relu and the threshold family)."""
    return _pw().where(cond, 0.0, g)


# ---- unary: name -> (formula(g, x, y, params) -> grad_x, what it needs, node class name) -------
def _logit_grad(g, x, y, p):
    d = g / (x * (1 - x))
    eps = p[0]
    if eps >= 0:                    # clamped inputs have zero slope (PyTorch's rule)
        d = _mask((x >= eps) & (x <= 1 - eps), d)
    return d


def _clamp_grad(g, x, y, p):
    lo, hi = p[0], p[1]
    if lo == -math.inf:
        return _mask(x <= hi, g)
    if hi == math.inf:
        return _mask(x >= lo, g)
    return _mask((x >= lo) & (x <= hi), g)


def _digamma(x):
    """psi(x) = d lgamma(x)/dx from Tensor ops (so it differentiates again into trigamma):
    reflection below 1/2, six recurrence steps, then the asymptotic series (error < 1e-10)."""
    where = _pw().where
    reflect = x < 0.5
    z = where(reflect, 1 - x, x)
    shift = 1 / z
    for k in range(1, 6):
        shift = shift + 1 / (z + k)
    z6 = z + 6
    inv2 = 1 / (z6 * z6)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    d = z6.log() - 0.5 / z6 - tail - shift
    safe = where(reflect, x, 0.25)        # keeps tan finite where the branch is not taken
    # cot(pi x) = cot(pi r) with r = x - round(x), which is exact: pi * x itself would lose
    # the digits that matter near the poles (x close to an integer) in float32
    r = safe - safe.round().detach()
    psi = where(reflect, d - math.pi / (r * math.pi).tan(), d)
    # the poles, as PyTorch: -inf at +0, +inf at -0 (the side approached), NaN at the negative
    # integers (no side to prefer)
    psi = where(x == 0, where(x.signbit(), math.inf, -math.inf).to(psi.dtype), psi)
    return where((x < 0) & (x == x.floor()), math.nan, psi)


def _acosh_grad(g, x):
    """g / sqrt(x^2 - 1); for complex x as 1 / (sqrt(x - 1) sqrt(x + 1)), acosh's own branch
    (the two differ in sign where Re x < 0), as PyTorch."""
    if x.is_complex():
        return g * (x - 1).rsqrt() * (x + 1).rsqrt()
    return g * (x * x - 1).rsqrt()


UNARY = {
    "neg": (lambda g, x, y, p: -g, "", "NegBackward0"),
    "abs": (lambda g, x, y, p: g * x.sgn(), "x", "AbsBackward0"),
    "sgn": (lambda g, x, y, p: _sgn_grad(g, x, y), "xy", "SgnBackward0"),
    "angle": (lambda g, x, y, p: _angle_grad(g, x), "x", "AngleBackward0"),
    "conj": (lambda g, x, y, p: g.conj(), "", "ConjPhysicalBackward0"),
    "sign": (lambda g, x, y, p: _zeros(g), "", "SignBackward0"),
    "square": (lambda g, x, y, p: g * x * 2, "x", "PowBackward0"),
    "reciprocal": (lambda g, x, y, p: -g * (y * y), "y", "ReciprocalBackward0"),
    "exp": (lambda g, x, y, p: g * y, "y", "ExpBackward0"),
    "exp2": (lambda g, x, y, p: g * y * _LN2, "y", "Exp2Backward0"),
    "expm1": (lambda g, x, y, p: g * (y + 1), "y", "Expm1Backward0"),
    "log": (lambda g, x, y, p: g / x, "x", "LogBackward0"),
    "log2": (lambda g, x, y, p: g / (x * _LN2), "x", "Log2Backward0"),
    "log10": (lambda g, x, y, p: g / (x * _LN10), "x", "Log10Backward0"),
    "log1p": (lambda g, x, y, p: g / (x + 1), "x", "Log1PBackward0"),
    "sqrt": (lambda g, x, y, p: g / (y * 2), "y", "SqrtBackward0"),
    "rsqrt": (lambda g, x, y, p: g * (y * y * y) * -0.5, "y", "RsqrtBackward0"),
    "sin": (lambda g, x, y, p: g * x.cos(), "x", "SinBackward0"),
    "cos": (lambda g, x, y, p: g * -x.sin(), "x", "CosBackward0"),
    "tan": (lambda g, x, y, p: g * (y * y + 1), "y", "TanBackward0"),
    "asin": (lambda g, x, y, p: g * (1 - x * x).rsqrt(), "x", "AsinBackward0"),
    "acos": (lambda g, x, y, p: -g * (1 - x * x).rsqrt(), "x", "AcosBackward0"),
    "atan": (lambda g, x, y, p: g / (x * x + 1), "x", "AtanBackward0"),
    "sinh": (lambda g, x, y, p: g * x.cosh(), "x", "SinhBackward0"),
    "cosh": (lambda g, x, y, p: g * x.sinh(), "x", "CoshBackward0"),
    # g * (1 - y^2) and g * y * (1 - y) in two kernels each (addcmul fuses the last two steps)
    "tanh": (lambda g, x, y, p: _pw().addcmul(g, g * y, y, value=-1), "y", "TanhBackward0"),
    "sigmoid": (lambda g, x, y, p: _sigmoid_grad(g, y), "y", "SigmoidBackward0"),
    "asinh": (lambda g, x, y, p: g * (x * x + 1).rsqrt(), "x", "AsinhBackward0"),
    "acosh": (lambda g, x, y, p: _acosh_grad(g, x), "x", "AcoshBackward0"),
    "atanh": (lambda g, x, y, p: g / (1 - x * x), "x", "AtanhBackward0"),
    "erf": (lambda g, x, y, p: g * (-(x * x)).exp() * _TWO_OVER_SQRT_PI, "x", "ErfBackward0"),
    # the one-pass activations (F.gelu, F.silu): their gradients are binary kernel ops too
    "gelu": (lambda g, x, y, p: _pw().gelu_backward(g, x), "x", "GeluBackward0"),
    "gelu_tanh": (lambda g, x, y, p: _pw().gelu_backward(g, x, approximate="tanh"), "x",
                  "GeluBackward0"),
    "silu": (lambda g, x, y, p: _pw().silu_backward(g, x), "x", "SiluBackward0"),
    "hardswish": (lambda g, x, y, p: _pw().hardswish_backward(g, x), "x", "HardswishBackward0"),
    "hardsigmoid": (lambda g, x, y, p: _pw().hardsigmoid_backward(g, x), "x",
                    "HardsigmoidBackward0"),
    "erfc": (lambda g, x, y, p: g * (-(x * x)).exp() * -_TWO_OVER_SQRT_PI, "x", "ErfcBackward0"),
    "erfinv": (lambda g, x, y, p: g * (y * y).exp() * (math.sqrt(math.pi) / 2), "y", "ErfinvBackward0"),
    "lgamma": (lambda g, x, y, p: g * _digamma(x), "x", "LgammaBackward0"),
    "logit": (_logit_grad, "x", "LogitBackward0"),
    "floor": (lambda g, x, y, p: _zeros(g), "", "FloorBackward0"),
    "ceil": (lambda g, x, y, p: _zeros(g), "", "CeilBackward0"),
    "round": (lambda g, x, y, p: _zeros(g), "", "RoundBackward0"),
    "round_decimals": (lambda g, x, y, p: _zeros(g), "", "RoundBackward1"),
    "trunc": (lambda g, x, y, p: _zeros(g), "", "TruncBackward0"),
    "frac": (lambda g, x, y, p: g, "", "FracBackward0"),
    "relu": (lambda g, x, y, p: threshold_grad(g, y, 0.0), "y", "ReluBackward0"),   # NaN passes g
    "clamp": (_clamp_grad, "x", "ClampBackward1"),
    "nan_to_num": (lambda g, x, y, p: _mask(x.isfinite(), g), "x", "NanToNumBackward0"),
}


# ---- complex inputs ------------------------------------------------------------------------------
# PyTorch's convention: the gradient of a real loss L with respect to z = x + iy is
# dL/dx + i dL/dy.  For an op holomorphic in z (every formula in the tables except those of
# abs, sgn, angle and conj) that is g * conj(f'(z)), and since f'(z) is built from z and f(z)
# with real constants, conj(f'(z)) is the same formula on conj(z) and conj(f(z)): the nodes
# below conjugate the saved values of complex ops and run the real formula unchanged.
# abs, sgn, angle and conj are not holomorphic; their formulas are written out for complex z.
_NOT_HOLOMORPHIC = frozenset({"abs", "sgn", "angle", "conj"})


def _conj_saved(v):
    if isinstance(v, Tensor):
        return v.conj() if v._data.dtype >= 10 else v
    return v.conjugate() if isinstance(v, complex) else v


def _sgn_grad(g, x, y):
    """d sgn(z): zero for real input; for complex (g - Re(g conj(sgn z)) sgn z) / |z|, and 0
    at z = 0 (PyTorch's sgn_backward)."""
    if not x.is_complex():
        return _zeros(g)
    m = x.abs()
    d = (g - (g * y.conj()).real * y) / m
    return _pw().where(m == 0, 0.0, d)


def _angle_grad(g, x):
    """d angle(z): zero for real input; i z / |z|^2 times the (real) gradient for complex,
    and 0 at z = 0."""
    if not x.is_complex():
        return _zeros(g)
    m2 = (x * x.conj()).real
    return _pw().where(m2 == 0, 0.0, g * x * 1j / m2)


def _sigmoid_grad(g, y):
    gy = g * y
    return _pw().addcmul(gy, gy, y, value=-1)


class UnaryBackward(Node):
    """The node of a unary elementwise op (one subclass per op, named as PyTorch's)."""

    params = ()
    needs_x = needs_y = False
    holomorphic = True

    def backward(self, g):
        # complex: conj(f') g, the formula on the conjugates (see _NOT_HOLOMORPHIC)
        return (self.derivative_times(g, self.holomorphic and g._data.dtype >= 10),)

    def derivative_times(self, t, conjugate=False):
        """f'(x) t by the op's formula on the saved values (their conjugates with
        `conjugate`); forward mode calls it with the tangent."""
        if self._released:
            raise RuntimeError(_FREED)
        saved = self._saved
        x = unpack(self, "self", saved["self"]) if self.needs_x else None
        y = unpack(self, "result", saved["result"]) if self.needs_y else None
        if conjugate:
            x, y = _conj_saved(x), _conj_saved(y)
        return self.formula(t, x, y, self.params)


def _unary_class(op, formula, needs, class_name):
    return type(class_name, (UnaryBackward,), {"formula": staticmethod(formula),
                                               "needs_x": "x" in needs, "needs_y": "y" in needs,
                                               "holomorphic": op not in _NOT_HOLOMORPHIC})


_UNARY_NODES = {_ew.UNARY[op]: _unary_class(op, *entry) for op, entry in UNARY.items()}
_CLAMP = _ew.UNARY["clamp"]
_CLAMP_NAMED = {name: _unary_class("clamp", _clamp_grad, "x", cls_name) for name, cls_name in
                (("clamp_min", "ClampMinBackward0"), ("clamp_max", "ClampMaxBackward0"))}


def record_unary(code, x, result, params=(), name=""):
    """Record the node of unary kernel op `code` (x -> result), called as `name`."""
    if result._data.dtype < 6:
        return                      # integer and bool results are not differentiable
    cls = _UNARY_NODES.get(code)
    if code == _CLAMP:
        cls = _CLAMP_NAMED.get(name, cls)
    if cls is None:
        return record_not_differentiable(_U_NAMES[code], (x,), result)
    node = cls()
    if params:
        node.params = params
    if cls.needs_x or cls.needs_y:
        saved = node._saved = {}
        if cls.needs_x:
            saved["self"] = pack(x, False)
        if cls.needs_y:
            saved["result"] = (None, result._data, result._data.storage.version, 0)
        if saved_hooks_in_use:          # entries built inline go through saved_tensors_hooks too
            hook_saved(saved)
    node.next_functions = (edge(x),)
    result._requires_grad = True
    result.grad_fn = node
    result._output_nr = 0
    if _anomaly._enabled:
        node._trace = _anomaly.current_trace()
    if _graph.forward_ad is not None:
        _graph.forward_ad.propagate(node, (x,), result)


_U_NAMES = {v: k for k, v in _ew.UNARY.items()}
_B_NAMES = {v: k for k, v in _ew.BINARY.items()}


# ---- binary: name -> (grad_a(g, a, b, y, node), needs for grad_a,
#                      grad_b(g, a, b, y, node), needs for grad_b) ------------------------------
# a / b are Tensors or Python numbers; a gradient is only computed for a tensor input that
# requires grad.  The results are summed back to each input's shape by BinaryBackward.
def _isnan(v):
    return v.isnan() if isinstance(v, Tensor) else math.isnan(v)


def _pow_grad_base(g, a, b, y, n):
    if not isinstance(b, Tensor):
        if b == 0:
            return _zeros(g)
        return g * b * a.pow(b - 1)
    return _pw().where(b == 0, 0.0, g * b * a.pow(b - 1))


def _pow_grad_exponent(g, a, b, y, n):
    """d/db a**b = a**b * log(a), taken as 0 where a == 0 and b >= 0 (PyTorch's rule)."""
    where = _pw().where
    if isinstance(a, Tensor):
        b_sign = b.real if isinstance(b, Tensor) else (b.real if isinstance(b, complex) else b)
        return g * where((a == 0) & (b_sign >= 0), 0.0, y * a.log())
    log_a = math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan)
    if a == 0:
        return g * where(b >= 0, 0.0, y * log_a)
    return g * (y * log_a)


def _max_min_grads(is_max):
    """maximum/minimum: the larger (smaller) input gets the gradient, a tie splits it in
    half, and a NaN on either side gives it to both (PyTorch's rule)."""
    def grad(g, a, b, y, n, mine_loses):
        where = _pw().where
        half = where(a == b, g * 0.5, g)
        return where(mine_loses(a, b), 0.0, half)
    lt, gt = (lambda a, b: a < b), (lambda a, b: a > b)
    return ((lambda g, a, b, y, n: grad(g, a, b, y, n, lt if is_max else gt)), "ab",
            (lambda g, a, b, y, n: grad(g, a, b, y, n, gt if is_max else lt)), "ab")


def _fmax_fmin_grads(is_max):
    """fmax/fmin: the gradient goes to self where self wins or ties, or other is NaN (the
    value taken from self); to other elsewhere."""
    def takes_self(a, b):
        return ((a >= b) if is_max else (a <= b)) | _isnan(b)

    def grad_a(g, a, b, y, n):
        return _pw().where(takes_self(a, b), g, 0.0)

    def grad_b(g, a, b, y, n):
        return _pw().where(takes_self(a, b), 0.0, g)
    return grad_a, "ab", grad_b, "ab"


def _xlogy_grad_a(g, a, b, y, n):
    return g * _pw().xlogy((a != 0).to(a.dtype), b)


def _atan2_grad(g, a, b, sign_of, num):
    """g times d atan2(a, b): b / (a^2 + b^2) for a, -a / (a^2 + b^2) for b; 0 at the origin,
    where the quotient is 0/0, as PyTorch (its reciprocal of the denominator is zeroed there)."""
    d = a * a + b * b
    recip = _pw().where(d == 0, 0.0, 1.0 / d)
    return g * (num if sign_of > 0 else -num) * recip


BINARY = {
    "add": (lambda g, a, b, y, n: g, "", lambda g, a, b, y, n: g, ""),
    # alpha: conjugated in a complex backward (n is then a _Conjugated view of the node)
    "add_alpha": (lambda g, a, b, y, n: g, "", lambda g, a, b, y, n: g * n.alpha, ""),
    "sub": (lambda g, a, b, y, n: g, "", lambda g, a, b, y, n: -g, ""),
    "mul": (lambda g, a, b, y, n: g * b, "b", lambda g, a, b, y, n: g * a, "a"),
    "div": (lambda g, a, b, y, n: g / b, "b", lambda g, a, b, y, n: -g * a / (b * b), "ab"),
    "div_trunc": (lambda g, a, b, y, n: _zeros(g), "", lambda g, a, b, y, n: _zeros(g), ""),
    "div_floor": (lambda g, a, b, y, n: _zeros(g), "", lambda g, a, b, y, n: _zeros(g), ""),
    "remainder": (lambda g, a, b, y, n: g, "",
                  lambda g, a, b, y, n: -g * _pw().div(a, b, rounding_mode="floor"), "ab"),
    "fmod": (lambda g, a, b, y, n: g, "",
             lambda g, a, b, y, n: -g * _pw().div(a, b, rounding_mode="trunc"), "ab"),
    "pow": (_pow_grad_base, "ab", _pow_grad_exponent, "aby"),
    "atan2": (lambda g, a, b, y, n: _atan2_grad(g, a, b, 1, b), "ab",
              lambda g, a, b, y, n: _atan2_grad(g, a, b, -1, a), "ab"),
    "hypot": (lambda g, a, b, y, n: g * a / y, "ay", lambda g, a, b, y, n: g * b / y, "by"),
    "copysign": (lambda g, a, b, y, n: g * a.sign() * y.sign(), "ay",
                 lambda g, a, b, y, n: _zeros(g), ""),
    "maximum": _max_min_grads(True),
    "minimum": _max_min_grads(False),
    "fmax": _fmax_fmin_grads(True),
    "fmin": _fmax_fmin_grads(False),
    "xlogy": (_xlogy_grad_a, "ab", lambda g, a, b, y, n: g * a / b, "ab"),
    "threshold_backward": (lambda g, a, b, y, n: threshold_grad(g, b, n.alpha), "b",
                           lambda g, a, b, y, n: _zeros(g), ""),
    # the activations' gradients g * f'(x) (a: g, b: x): linear in g, and g * f''(x) in x
    "gelu_backward": (lambda g, a, b, y, n: _pw().gelu_backward(g, b), "b",
                      lambda g, a, b, y, n: g * a * _gelu_second(b), "ab"),
    "gelu_tanh_backward": (lambda g, a, b, y, n: _pw().gelu_backward(g, b, approximate="tanh"), "b",
                           lambda g, a, b, y, n: g * a * _gelu_tanh_second(b), "ab"),
    "silu_backward": (lambda g, a, b, y, n: _pw().silu_backward(g, b), "b",
                      lambda g, a, b, y, n: g * a * _silu_second(b), "ab"),
    # piecewise: hardswish'' is 1/3 strictly inside (-3, 3) and 0 elsewhere, hardsigmoid'' 0
    "hardswish_backward": (lambda g, a, b, y, n: _pw().hardswish_backward(g, b), "b",
                           lambda g, a, b, y, n: _pw().where((b > -3.0) & (b < 3.0), g * a / 3.0,
                                                             0.0), "ab"),
    "hardsigmoid_backward": (lambda g, a, b, y, n: _pw().hardsigmoid_backward(g, b), "b",
                             lambda g, a, b, y, n: _zeros(g), ""),
}


# the second derivatives of the one-pass activations, as Tensor ops (differentiable again)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_C = 0.044715


def _gelu_second(x):
    """gelu''(x) = phi(x) (2 - x^2), phi the standard normal density."""
    return (x * x * -0.5).exp() * _INV_SQRT_2PI * (2 - x * x)


def _gelu_tanh_second(x):
    """The tanh form's second derivative: with u = k (x + c x^3), t = tanh(u),
    (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2)."""
    x2 = x * x
    t = ((x + x * x2 * _GELU_TANH_C) * _SQRT_2_OVER_PI).tanh()
    du = (x2 * (3 * _GELU_TANH_C) + 1) * _SQRT_2_OVER_PI
    ddu = x * (6 * _GELU_TANH_C * _SQRT_2_OVER_PI)
    return (1 - t * t) * (du + x * (ddu - 2 * t * du * du) * 0.5)


def _silu_second(x):
    """silu''(x) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x)."""
    s = x.sigmoid()
    return s * (1 - s) * (x * (1 - 2 * s) + 2)

# the node's name, as PyTorch names it: by the op called (add/sub share a kernel op), and by
# which operands are numbers where PyTorch has separate overloads
_BINARY_NAMES = {"add": "AddBackward0", "sub": "SubBackward0", "mul": "MulBackward0",
                 "div": "DivBackward0", "remainder": "RemainderBackward1", "fmod": "FmodBackward1",
                 "pow": "PowBackward1", "atan2": "Atan2Backward0", "hypot": "HypotBackward0",
                 "copysign": "CopysignBackward0", "maximum": "MaximumBackward0",
                 "minimum": "MinimumBackward0", "fmax": "FmaxBackward0", "fmin": "FminBackward0",
                 "xlogy": "XlogyBackward0", "rsub": "RsubBackward0",
                 "threshold_backward": "ThresholdBackwardBackward0",
                 "gelu_backward": "GeluBackwardBackward0",
                 "gelu_tanh_backward": "GeluBackwardBackward0",
                 "silu_backward": "SiluBackwardBackward0",
                 "hardswish_backward": "HardswishBackwardBackward0",
                 "hardsigmoid_backward": "HardsigmoidBackwardBackward0"}
_NUMBER_OTHER_NAMES = {"remainder": "RemainderBackward0", "fmod": "FmodBackward0",
                       "pow": "PowBackward0", "xlogy": "XlogyBackward2"}
_NUMBER_SELF_NAMES = {"pow": "PowBackward2", "xlogy": "XlogyBackward1", "sub": "RsubBackward1",
                      "rsub": "RsubBackward1"}


def _binary_class_name(op, name, a_t, b_t):
    base = name.rstrip("_")
    if op in ("div_trunc", "div_floor") and base == "div":
        return "DivBackward2"
    if not b_t and op in _NUMBER_OTHER_NAMES:
        return _NUMBER_OTHER_NAMES[op]
    if not a_t and base in _NUMBER_SELF_NAMES:
        return _NUMBER_SELF_NAMES[base]
    return _BINARY_NAMES.get(base) or _BINARY_NAMES.get(op) or \
        "".join(p.capitalize() for p in base.split("_")) + "Backward0"


class BinaryBackward(Node):
    """The node of a binary elementwise op.  a / b hold a number operand (None for a tensor);
    a_fix / b_fix: (shape, dtype code) of a tensor input whose gradient must be summed back
    or cast (broadcasting, type promotion), else None."""

    a = b = None
    a_fix = b_fix = None
    alpha = 1.0

    def backward(self, g):
        saved = self._saved
        a, b, y = self.a, self.b, None
        if saved is not None:
            e = saved.get("self")
            if e is not None:
                a = unpack(self, "self", e)
            e = saved.get("other")
            if e is not None:
                b = unpack(self, "other", e)
            e = saved.get("result")
            if e is not None:
                y = unpack(self, "result", e)
        elif self._released:
            raise RuntimeError(_FREED)
        n = self
        if g._data.dtype >= 10:       # a complex op: every binary formula is holomorphic
            a, b, y = _conj_saved(a), _conj_saved(b), _conj_saved(y)
            if isinstance(self.alpha, complex):     # add's alpha: conjugated like the operands
                n = _Conjugated(self)
        ea, eb = self.next_functions
        ga = gb = None
        if ea[0] is not None:
            ga = self.grad_a(g, a, b, y, n)
            if self.a_fix is not None:
                ga = _fit(ga, self.a_fix)
        if eb[0] is not None:
            gb = self.grad_b(g, a, b, y, n)
            if self.b_fix is not None:
                gb = _fit(gb, self.b_fix)
        return ga, gb


class _Conjugated:
    """A binary node as its formulas see it in a complex backward: its scalar alpha
    conjugated, as the saved operands are (g * conj(alpha) for add(a, b, alpha=alpha)); the
    forward-mode JVP applies the same formulas to the node itself (alpha as it is)."""
    __slots__ = ("_node", "alpha")

    def __init__(self, node):
        self._node = node
        self.alpha = node.alpha.conjugate()

    def __getattr__(self, name):
        return getattr(self._node, name)


def _fit(grad, fix):
    """A gradient in its input's shape, dtype and device (fix: None when it already is; a
    CPU scalar tensor operand of an op on a CUDA device gets its gradient on the CPU)."""
    if fix is None:
        return grad
    shape, dtype, device = fix
    grad = sum_to(grad, shape)
    if grad._data.dtype != dtype:
        grad = grad.to(D.DTYPES[dtype])
    if grad._data.device != device:
        grad = grad.to(device)
    return grad


_BINARY_CLASSES = {}


def _binary_class(code, name, a_t, b_t):
    key = (code, name, a_t, b_t)
    cls = _BINARY_CLASSES.get(key)
    if cls is None:
        op = _B_NAMES[code]
        entry = BINARY.get(op)
        if entry is None or name == "floor_divide":     # PyTorch: floor_divide has no derivative
            return None
        grad_a, needs_a, grad_b, needs_b = entry
        cls = _BINARY_CLASSES[key] = type(_binary_class_name(op, name, a_t, b_t), (BinaryBackward,), {
            "grad_a": staticmethod(grad_a), "grad_b": staticmethod(grad_b),
            "needs_a": needs_a, "needs_b": needs_b})
    return cls


def _fix_of(t, result):
    arr, res = t._data, result._data
    if arr.shape == res.shape and arr.dtype == res.dtype and arr.device == res.device:
        return None
    return (arr.shape, arr.dtype, arr.device)


def record_binary(code, name, a, b, result, alpha=1.0):
    """Record the node of binary kernel op `code` called as `name` (a, b: Tensors or numbers)."""
    res = result._data
    if res.dtype < 6:
        return
    a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
    cls = _BINARY_CLASSES.get((code, name, a_t, b_t)) or _binary_class(code, name, a_t, b_t)
    if cls is None:
        return record_not_differentiable(name.rstrip("_"), (a if a_t else None, b if b_t else None), result)
    node = cls()
    saved = None
    if a_t:
        ea = edge(a)
        if ea[0] is not None:
            node.a_fix = _fix_of(a, result)
            if cls.needs_a:
                saved = _save_needed(saved, cls.needs_a, a, b, res, a_t, b_t)
    else:
        ea = _NO_EDGE
        node.a = a
    if b_t:
        eb = edge(b)
        if eb[0] is not None:
            node.b_fix = _fix_of(b, result)
            if cls.needs_b:
                saved = _save_needed(saved, cls.needs_b, a, b, res, a_t, b_t)
    else:
        eb = _NO_EDGE
        node.b = b
    if saved is not None:
        if saved_hooks_in_use:          # (_save_needed builds its entries inline)
            hook_saved(saved)
        node._saved = saved
    if alpha != 1.0:
        node.alpha = alpha
    node.next_functions = (ea, eb)
    result._requires_grad = True
    result.grad_fn = node
    result._output_nr = 0
    if _anomaly._enabled:
        node._trace = _anomaly.current_trace()
    if _graph.forward_ad is not None:
        _graph.forward_ad.propagate(node, (a, b), result)


def _save_needed(saved, needs, a, b, res, a_t, b_t):
    """Add what a gradient formula needs ('a', 'b', 'y' in needs) to the saved dict."""
    if saved is None:
        saved = {}
    if "a" in needs and a_t and "self" not in saved:
        saved["self"] = (a, a._data, a._data.storage.version, a.grad_fn)
    if "b" in needs and b_t and "other" not in saved:
        saved["other"] = (b, b._data, b._data.storage.version, b.grad_fn)
    if "y" in needs and "result" not in saved:
        saved["result"] = (None, res, res.storage.version, 0)
    return saved


# ---- ops without a formula -------------------------------------------------------------------
# ---- where, lerp, addcmul, addcdiv, clamp with tensor bounds -----------------------------------
class TernaryBackward(Node):
    """A three-input elementwise op.  Subclasses list `names` (the saved keys of the inputs)
    and `grads(g, v)` (v: the needed input values by name; numbers for number inputs) giving
    one gradient per input (None for an input that needs none)."""

    def backward(self, g):
        if self._released:
            raise RuntimeError(_FREED)
        v = dict(self.numbers)
        for k, entry in (self._saved or {}).items():
            v[k] = unpack(self, k, entry)
        if g._data.dtype >= 10:     # complex: where, lerp, addcmul, addcdiv are holomorphic
            v = {k: _conj_saved(x) for k, x in v.items()}
        grads = self.grads(g, v)
        return tuple(None if e[0] is None or gr is None else _fit(gr, fix)
                     for e, gr, fix in zip(self.next_functions, grads, self.fixes))


class WhereBackward0(TernaryBackward):
    names, needs = ("condition", "self", "other"), ("", "condition", "condition")

    def grads(self, g, v):
        where = _pw().where
        return None, where(v["condition"], g, 0.0), where(v["condition"], 0.0, g)


class LerpBackward0(TernaryBackward):
    names, needs = ("self", "end", "weight"), ("weight", "weight", "self end")

    def grads(self, g, v):
        # each gradient only when its input wants one: the weight is saved only for those of
        # self and end (`needs`), self and end only for the weight's
        wants = [e[0] is not None for e in self.next_functions]
        w = v.get("weight")
        return (g * (1 - w) if wants[0] else None, g * w if wants[1] else None,
                g * (v["end"] - v["self"]) if wants[2] else None)


class LerpBackward1(LerpBackward0):
    pass


class AddcmulBackward0(TernaryBackward):
    names, needs = ("self", "tensor1", "tensor2"), ("", "tensor2", "tensor1")

    def grads(self, g, v):
        gv = g * self.value
        return (g, gv * v["tensor2"] if "tensor2" in v else None,
                gv * v["tensor1"] if "tensor1" in v else None)


class AddcdivBackward0(TernaryBackward):
    names, needs = ("self", "tensor1", "tensor2"), ("", "tensor2", "tensor1 tensor2")

    def grads(self, g, v):
        t2 = v.get("tensor2")
        gv = g * self.value
        return (g, gv / t2 if t2 is not None else None,
                -gv * v["tensor1"] / (t2 * t2) if "tensor1" in v else None)


class ClampBackward0(TernaryBackward):
    """clamp with tensor (or NaN) bounds: PyTorch's clamp_backward_min_max."""
    names, needs = ("self", "min", "max"), ("self min max", "self min max", "self min max")

    def grads(self, g, v):
        x, lo, hi = v["self"], v["min"], v["max"]
        if lo is None:
            return _mask(x <= hi, g), None, _mask(x > hi, g)
        if hi is None:
            return _mask(x >= lo, g), _mask(x < lo, g), None
        return (_mask((x >= lo) & (x <= hi), g), _mask((x < lo) & (lo < hi), g),
                _mask((x > hi) | (hi < lo), g))


def record_ternary(cls, inputs, result, value=1.0):
    """Record cls (a TernaryBackward) over three inputs (Tensors, numbers or None)."""
    if result._data.dtype < 6:
        return result
    node = cls()
    tens = [x if isinstance(x, Tensor) else None for x in inputs]
    node.numbers = [(k, x) for k, x in zip(cls.names, inputs) if not isinstance(x, Tensor)]
    node.fixes = [None if t is None else _fix_of(t, result) for t in tens]
    node.value = value
    wanted = set()
    for t, needs in zip(tens, cls.needs):
        if t is not None and t._requires_grad:
            wanted.update(needs.split())
    saved = {k: pack(t, False) for k, t in zip(cls.names, tens) if t is not None and k in wanted}
    if saved:
        node._saved = saved
    record(node, tens, result)
    return result


# ---- in-place ops on tensors that are part of a graph ---------------------------------------------
def check_inplace(self, name, *operands):
    """PyTorch forbids in-place ops on a leaf that requires grad, or on a view of one (while
    recording), and writes into memory a tensor operand partially shares (the graph path
    computes out of place, so the kernel's own check would not see it)."""
    for t in operands:
        if type(t) is not float and type(t) is not int and t is not None:
            _ew.check_no_partial_overlap(self._data, getattr(t, "_data", None))
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = getattr(self, "_base", None)
    if base is None:
        return
    if base.grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    fn = self.grad_fn
    if fn is not None and fn._num_outputs > 1:
        raise RuntimeError(f"Output {self.output_nr} of {fn.name()} is a view and is being modified "
                           f"inplace. This view is the output of a function that returns multiple "
                           f"views. Such functions do not allow the output views to be modified "
                           f"inplace. You should replace the inplace operation by an out-of-place one.")


def keep_in_graph(r, inputs, name):
    """An in-place comparison or logical op on a float tensor of the graph (x.eq_(y)) gives a
    float result that PyTorch keeps in the graph with a zero gradient (EqBackward0): the bool
    result r, cast back to the input's dtype, with such a node."""
    from .._tensor import Tensor
    a = inputs[0]
    if r._requires_grad or not a.is_floating_point():
        return r
    out = r.to(a.dtype)
    tens = tuple(t if isinstance(t, Tensor) else None for t in inputs)

    def backward(node, g):
        return tuple(None if t is None else g.new_zeros(t.shape) for t in node.params)
    node = type("".join(p.capitalize() for p in name.rstrip("_").split("_")) + "Backward0",
                (Node,), {"backward": backward})()
    node.params = tens
    record(node, tens, out)
    return out


def rebase_inplace(self, out_of_place):
    """Run an in-place op on a tensor that is part of a graph (or gets a gradient through the
    other operand): compute it out of place on an alias of self that carries self's history,
    write the result into self's memory and make the op's node self's history.  When self is
    a view, its base's history changes instead (CopySlices), and self's follows from it.

    What the op's nodes saved decides what the in-place op keeps, as in PyTorch: a saved input
    that is self's old value is copied once (the memory is about to be overwritten), and the
    result, if the op's node saved it, becomes self itself, so a later in-place change of self
    is caught by the version check."""
    base = getattr(self, "_base", None)
    if base is not None:
        base_edge = edge(base)
        # the op reads the view's values through a fresh view of the base's history, not the
        # view's own node: CopySlices sends the region's gradient to the base's history, past
        # the view's old node (and the hooks registered on it), as PyTorch does
        old = fresh_view_of_base(self)
    else:
        old = _wrap(self._data, self._requires_grad)
        if self.grad_fn is not None:
            old.grad_fn, old._output_nr = self.grad_fn, self.output_nr
    if _graph.forward_ad is not None:       # the op reads self's tangent through the alias
        _graph.forward_ad.take_tangent(old, self)
    watch = (old, [])                       # Node.save() notes where `old` gets saved
    prev, _state.alias_watch = _state.alias_watch, watch
    try:
        r = out_of_place(old)
    finally:
        _state.alias_watch = prev
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast "
                           f"shape {list(r._data.shape)}")
    if r._data.dtype != self._data.dtype and not _ew.can_cast(r._data.dtype, self._data.dtype):
        raise RuntimeError(f"result type {_ew._TORCH_NAMES[r._data.dtype]} can't be cast to the "
                           f"desired output type {_ew._TORCH_NAMES[self._data.dtype]}")
    if _graph.forward_ad is not None:       # r's tangent now, while what the op read is unchanged
        _graph.forward_ad.tangent_of(r)
    node = r.grad_fn
    result_keys = _keep_old_value(node, old, r, watch[1])
    copy_slices = _copy_slices_node(self, base, base_edge, r) if base is not None else None
    with no_grad():
        _ew.copy_(self._data, r._data)
    self._bump_version()
    for key in result_keys:
        node._saved[key] = (None, self._data, self._data.storage.version, 0)
    if copy_slices is not None:
        if _graph.forward_ad is not None:       # the base's tangent, and the view's
            _graph.forward_ad.propagate(copy_slices, (base, r), base)
            _graph.forward_ad.take_tangent(self, r)
        base_fn, base_nr = base.grad_fn, getattr(base, "_output_nr", 0)
        joins = not base._requires_grad
        base._requires_grad = True
        base.grad_fn, base._output_nr = copy_slices, 0
        move_retain_grad(base, base_fn, base_nr, copy_slices, 0)
        refresh_view(self)                  # moves the view's retain_grad too
        if joins:
            _join_views(base)
        return self
    new_nr = getattr(r, "_output_nr", 0)
    move_retain_grad(self, self.grad_fn, self.output_nr, node, new_nr)
    joins = r._requires_grad and not self._requires_grad
    self._requires_grad = r._requires_grad
    self.grad_fn = node
    self._output_nr = new_nr
    if _graph.forward_ad is not None:
        _graph.forward_ad.take_tangent(self, r)
    if joins:
        _join_views(self)
    return self


class CopySlices(Node):
    """The history of a base tensor written in place through one of its views: the gradient
    of the view's region goes to the new values (the in-place op's result), the rest to the
    base's old history."""

    def backward(self, g):
        grad_region = None
        if self.next_functions[1][0] is not None:
            shape, strides, rel_offset = self.view_geometry
            in_layout = g.permute(*self.perm).contiguous().permute(*self.inverse_perm)
            grad_region = in_layout.as_strided(shape, strides, in_layout.storage_offset() + rel_offset)
        grad_base = g * self.mask if self.next_functions[0][0] is not None else None
        return grad_base, grad_region


def _dense_order(shape, strides):
    """The dims from outermost to innermost if this layout is dense and non-overlapping (the
    memory of a permuted contiguous tensor), else None."""
    order = sorted(range(len(shape)), key=lambda d: (strides[d], shape[d]), reverse=True)
    expect = 1
    for d in reversed(order):
        if shape[d] == 1:
            continue
        if strides[d] != expect:
            return None
        expect *= shape[d]
    return order


def _copy_slices_node(view, base, base_edge, r):
    """The CopySlices node of an in-place write through `view` into `base` (r: the values)."""
    from .creation import empty_like
    b, v = base._data, view._data
    order = _dense_order(b.shape, b.strides)
    if order is None:
        raise RuntimeError("an in-place operation through a view of a tensor whose memory is not "
                           "dense is not supported by autograd; use an out-of-place operation")
    node = CopySlices()
    node.perm = order
    node.inverse_perm = sorted(range(len(order)), key=lambda i: order[i])
    node.view_geometry = (v.shape, v.strides, v.offset - b.offset)
    mask = empty_like(base, requires_grad=False)            # 1 outside the view's region, 0 inside
    _A.fill_(mask._data, 1)
    _A.fill_(mask._data.as_strided(v.shape, v.strides, mask._data.offset + v.offset - b.offset), 0)
    node.mask = mask
    node.next_functions = (base_edge, edge(r))
    if _anomaly._enabled:
        node._trace = _anomaly.current_trace()
    return node


def _keep_old_value(node, old, r, watched):
    """Replace every saved reference to `old` (self's memory, about to change) by one copy;
    return the keys under which the op's node saved its result."""
    places = [(n, k) for n, k in watched if n._saved is not None]
    result_keys = []
    if node is not None and node._saved:
        for key, entry in node._saved.items():
            if entry is None:
                continue
            if entry[0] is old:
                places.append((node, key))
            elif entry[0] is None and entry[1] is r._data:
                result_keys.append(key)
    if places:
        copy = _wrap(_ew.clone(old._data, True), old._requires_grad)
        if old.grad_fn is not None:
            copy.grad_fn, copy._output_nr = old.grad_fn, old._output_nr
        for n, key in places:
            n._saved[key] = pack(copy, False)
    return result_keys


# ---- composite elementwise ops (logaddexp, sinc, deg2rad, ldexp, frexp): TernaryBackward's
# machinery (saved inputs by name, gradients summed back to broadcast inputs) serves one- and
# two-input ops too --------------------------------------------------------------------------
class LogaddexpBackward0(TernaryBackward):
    """d/da log(e^a + e^b) = 1 / (1 + e^(b - a))."""
    names, needs = ("self", "other"), ("self other", "self other")

    def grads(self, g, v):
        a, b = v["self"], v["other"]
        return g / ((b - a).exp() + 1), g / ((a - b).exp() + 1)


class Logaddexp2Backward0(TernaryBackward):
    """d/da log2(2^a + 2^b) = 1 / (1 + 2^(b - a))."""
    names, needs = ("self", "other"), ("self other", "self other")

    def grads(self, g, v):
        a, b = v["self"], v["other"]
        return g / ((b - a).exp2() + 1), g / ((a - b).exp2() + 1)


class Deg2RadBackward0(TernaryBackward):
    names, needs = ("self",), ("",)

    def grads(self, g, v):
        return (g * (math.pi / 180.0),)


class Rad2DegBackward0(TernaryBackward):
    names, needs = ("self",), ("",)

    def grads(self, g, v):
        return (g * (180.0 / math.pi),)


class SincBackward0(TernaryBackward):
    """(pi x cos(pi x) - sin(pi x)) / (pi x^2), and 0 at x = 0 (computed on x with its zeros
    replaced by 1, so the branch not taken stays finite for double backward)."""
    names, needs = ("self",), ("self",)

    def grads(self, g, v):
        where = _pw().where
        x = v["self"]
        zero = x == 0
        xs = where(zero, 1.0, x)
        px = xs * math.pi
        d = (px * px.cos() - px.sin()) / (px * xs)
        return (where(zero, 0.0, g * d),)


class LdexpBackward0(TernaryBackward):
    """input * 2**other: d/dinput = 2**other, d/dother = input * 2**other * ln 2."""
    names, needs = ("self", "other"), ("other", "self other")

    def grads(self, g, v):
        pw = _pw()
        scale = pw.pow(2.0, v["other"])
        ga = g * scale
        gb = None
        if self.next_functions[1][0] is not None:
            gb = g * v["self"] * scale * _LN2
        return ga, gb


class FrexpBackward0(Node):
    """mantissa = input * 2**-exponent (the exponent is piecewise constant)."""

    def backward(self, g_mantissa, g_exponent=None):
        e = self.saved("exponent")
        return (_pw().ldexp(g_mantissa, -e).to(g_mantissa.dtype),)


# ---- nextafter -------------------------------------------------------------------------------------
class NextafterBackward0(Node):
    """PyTorch's derivative of nextafter: the gradient passes to input unchanged, none to
    other (a step of one ulp is a slope of one)."""

    def backward(self, g):
        return g, None


def record_nextafter(input, other, result):
    record(NextafterBackward0(), (input, other), result)


def rebase(self, name, out_of_place, *operands):
    """Run an in-place op on a tensor that is part of a graph (or is written with a value that
    is): out_of_place(old) computes the result, which replaces self's value and history
    (rebase_inplace; a leaf requiring grad is refused, as in PyTorch)."""
    check_inplace(self, name, *operands)
    return rebase_inplace(self, out_of_place)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP, through views_grad's table) ----------
# The unary and binary nodes need no entry (forward_ad applies their diagonal formulas to the
# tangent); these are linear in their inputs, so they hold for complex tangents too.
def _copy_slices_jvp(node, inputs, t, meta):
    """The base's tangent outside the view's region and the new values' tangent inside it
    (zeros for an input without one), laid out as the base is, so the view's geometry
    addresses the region as it did in the base."""
    from .creation import zeros
    shape, dtype, device = meta[0]
    full = t[0] * node.mask if t[0] is not None else zeros(shape, dtype=dtype, device=device)
    full = full.to(dtype).permute(*node.perm).contiguous().permute(*node.inverse_perm)
    vshape, vstrides, rel_offset = node.view_geometry
    region = full.as_strided(vshape, vstrides, full.storage_offset() + rel_offset)
    if t[1] is not None:
        region.copy_(t[1])
    else:
        region.zero_()
    return [full]


def _where_jvp(node, inputs, t, meta):
    """where(c, a, b): a's tangent where c holds, b's elsewhere (zeros for one without)."""
    shape, dtype, _ = meta[0]
    cond = dict(node.numbers).get("condition")
    if cond is None:
        cond = node.saved("condition")
    out = _pw().where(cond, t[1] if t[1] is not None else 0.0, t[2] if t[2] is not None else 0.0)
    out = out.to(dtype)
    return [out if tuple(out.shape) == shape else out.expand(shape).contiguous()]


def _ternary_jvp(node, inputs, t, meta):
    """The other three-input elementwise ops (clamp with tensor bounds, lerp, addcmul,
    addcdiv, logaddexp, sinc, ldexp, deg2rad...): each input's Jacobian is diagonal, so its
    backward formula applied to its tangent (broadcast to the output, before the sum back to
    the input's shape) is J_i t_i; the terms add up.  Real tangents only (the complex ones
    would need the formulas on conjugated values): None falls back."""
    if len(meta) != 1 or any(x is not None and x.is_complex() for x in t):
        return None
    shape, dtype, _ = meta[0]
    v = dict(node.numbers)
    for k, entry in (node._saved or {}).items():
        v[k] = unpack(node, k, entry)
    total = None
    for i, ti in enumerate(t):
        if ti is None:
            continue
        term = node.grads(ti if tuple(ti.shape) == shape else ti.expand(shape), v)[i]
        total = term if total is None else total + term
    return [total.to(dtype)]


def _nextafter_jvp(node, inputs, t, meta):
    """The backward's slope: input's tangent passes unchanged (other's is dropped)."""
    shape, dtype, device = meta[0]
    if t[0] is None:
        from .creation import zeros
        return [zeros(shape, dtype=dtype, device=device)]
    return [t[0].to(dtype).expand(shape).contiguous()]


def _saved_input(node):
    return unpack(node, "self", node._saved["self"])


def _abs_jvp(node, inputs, t, meta):
    """|z| along t (complex: the real ones take the unary formula): Re(conj(sgn z) t)."""
    s = _saved_input(node).sgn()
    return [s.real * t[0].real + s.imag * t[0].imag]


def _angle_jvp(node, inputs, t, meta):
    """arg z along t: Im(conj(z) t) / |z|^2 (0 at z = 0, as the backward)."""
    z = _saved_input(node)
    r2 = z.real * z.real + z.imag * z.imag
    return [(z.real * t[0].imag - z.imag * t[0].real) / r2.masked_fill(r2 == 0, 1)]


def _sgn_jvp(node, inputs, t, meta):
    """z / |z| along t: (t - sgn(z) Re(conj(sgn z) t)) / |z| (0 at z = 0, as the backward)."""
    z = _saved_input(node)
    s, r = z.sgn(), z.abs()
    along = s.real * t[0].real + s.imag * t[0].imag
    return [((t[0] - s * along) / r.masked_fill(r == 0, 1)).masked_fill(r == 0, 0)]


JVP = {
    CopySlices: _copy_slices_jvp,
    WhereBackward0: _where_jvp,
    TernaryBackward: _ternary_jvp,
    # frexp: the mantissa is input * 2**-exponent, the exponent piecewise constant (no tangent)
    FrexpBackward0: lambda node, inputs, t, meta: [node.backward(t[0])[0], None],
    NextafterBackward0: _nextafter_jvp,
    # conj (complex tangents: the real ones take the unary formula): the conjugate tangent
    _UNARY_NODES[_ew.UNARY["conj"]]: lambda node, inputs, t, meta: [t[0].conj()],
    # the other ops that are not holomorphic, for complex tangents
    _UNARY_NODES[_ew.UNARY["abs"]]: _abs_jvp,
    _UNARY_NODES[_ew.UNARY["angle"]]: _angle_jvp,
    _UNARY_NODES[_ew.UNARY["sgn"]]: _sgn_jvp,
}
