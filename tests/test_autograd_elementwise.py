"""Autograd of the elementwise ops (torchlite/_ops/elementwise_grad.py).

One table, CASES, lists every differentiable op of elementwise.py with a gradcheck case on
float64 inputs in non-contiguous layouts (the first input is a transposed view, the second a
strided one-dimensional view broadcast against it); test_table_covers_every_op fails when an
op of elementwise.py is missing from it.  Each case runs gradcheck, gradgradcheck where the op
is twice differentiable, and compares first and second derivatives with PyTorch's."""
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite._ops import elementwise as _pw
from torchlite.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(20261121)
SHAPE = (2, 3)          # the first input; a second one is (3,) and broadcasts


def uni(lo, hi, shape=SHAPE):
    return _rng.uniform(lo, hi, shape)


def signed(lo, hi, shape=SHAPE):
    """Values with |v| in [lo, hi] and random signs (away from 0)."""
    return uni(lo, hi, shape) * _rng.choice([-1.0, 1.0], shape)


def off_integer(lo, hi, shape=SHAPE):
    """Values at least 0.2 away from every integer (piecewise-constant ops jump there)."""
    return np.floor(uni(lo, hi, shape)) + uni(0.2, 0.8, shape)


def distinct(shape=SHAPE, other=None):
    """Values that differ from `other` (broadcast) by at least 0.3: no ties."""
    v = signed(0.1, 2.0, shape)
    if other is not None:
        v = np.where(np.abs(v - other) < 0.3, v + 0.6, v)
    return v


B3 = signed(0.5, 2.0, (3,))
MOD_B = signed(1.5, 2.5, (3,))
MOD_A = MOD_B * off_integer(-3, 3)          # a / b stays away from integers
COND = np.array([[True, False, True], [False, True, True]])
LGAMMA_X = np.array([[0.3, 1.7, 4.2], [-0.4, -1.6, 2.5]])   # both sides of the poles


# ---- the table: case -> (op covered, fn(L, *inputs) with L torchlite or torch, input arrays,
#                          twice differentiable) -----------------------------------------------
def _u(name, lo, hi, second=True, op=None, gen=uni):
    return (op or name, lambda L, x: getattr(L, name)(x), [gen(lo, hi)], second)


CASES = {
    # unary
    "neg": _u("neg", -2, 2),
    "positive": ("positive", lambda L, x: L.positive(x), [uni(-2, 2)], True),
    "abs": _u("abs", 0.2, 2, gen=signed),
    "sign": _u("sign", 0.2, 2, gen=signed),
    "sgn": _u("sgn", 0.2, 2, gen=signed),
    "angle": _u("angle", 0.2, 2, gen=signed),
    "conj": ("conj", lambda L, x: L.conj(x), [uni(-2, 2)], True),
    "conj_physical": ("conj_physical", lambda L, x: L.conj_physical(x), [uni(-2, 2)], True),
    "resolve_conj": ("resolve_conj", lambda L, x: L.resolve_conj(x) * 1, [uni(-2, 2)], True),
    "resolve_neg": ("resolve_neg", lambda L, x: L.resolve_neg(x) * 1, [uni(-2, 2)], True),
    "square": _u("square", -2, 2),
    "reciprocal": _u("reciprocal", 0.5, 2, gen=signed),
    "exp": _u("exp", -2, 2),
    "exp2": _u("exp2", -2, 2),
    "expm1": _u("expm1", -2, 2),
    "log": _u("log", 0.3, 3),
    "log2": _u("log2", 0.3, 3),
    "log10": _u("log10", 0.3, 3),
    "log1p": _u("log1p", -0.6, 3),
    "sqrt": _u("sqrt", 0.3, 3),
    "rsqrt": _u("rsqrt", 0.3, 3),
    "sin": _u("sin", -3, 3),
    "cos": _u("cos", -3, 3),
    "tan": _u("tan", -1.2, 1.2),
    "asin": _u("asin", -0.9, 0.9),
    "acos": _u("acos", -0.9, 0.9),
    "atan": _u("atan", -3, 3),
    "sinh": _u("sinh", -2, 2),
    "cosh": _u("cosh", -2, 2),
    "tanh": _u("tanh", -2, 2),
    "asinh": _u("asinh", -3, 3),
    "acosh": _u("acosh", 1.2, 3),
    "atanh": _u("atanh", -0.9, 0.9),
    "erf": _u("erf", -2, 2),
    "erfc": _u("erfc", -2, 2),
    "erfinv": _u("erfinv", -0.9, 0.9),
    "lgamma": ("lgamma", lambda L, x: L.lgamma(x), [LGAMMA_X], True),
    "digamma": ("digamma", lambda L, x: L.digamma(x), [LGAMMA_X], True),
    "sigmoid": _u("sigmoid", -3, 3),
    "logit": _u("logit", 0.05, 0.95),
    "logit_eps": ("logit", lambda L, x: L.logit(x, eps=0.2),
                  [np.array([[0.1, 0.3, 0.5], [0.85, 0.7, 0.05]])], True),
    "floor": _u("floor", -3, 3, gen=off_integer),
    "ceil": _u("ceil", -3, 3, gen=off_integer),
    "trunc": _u("trunc", -3, 3, gen=off_integer),
    "round": _u("round", -3, 3, gen=off_integer),
    "round_decimals": ("round", lambda L, x: L.round(x, decimals=1),
                       [np.round(uni(-3, 3), 1) + 0.03], True),
    "frac": _u("frac", -3, 3, gen=off_integer),
    "relu": _u("relu", 0.2, 2, gen=signed),
    "nan_to_num": ("nan_to_num", lambda L, x: L.nan_to_num(x), [uni(-2, 2)], True),
    "clamp": ("clamp", lambda L, x: L.clamp(x, -0.5, 0.7), [np.array([[-1.0, -0.2, 0.3], [0.9, 0.5, -0.8]])], True),
    "clamp_min": ("clamp_min", lambda L, x: L.clamp_min(x, 0.1), [signed(0.3, 2)], True),
    "clamp_max": ("clamp_max", lambda L, x: L.clamp_max(x, 0.1), [signed(0.3, 2)], True),
    "clamp_tensor": ("clamp", lambda L, x, lo, hi: L.clamp(x, lo, hi),
                     [np.array([[-1.0, -0.2, 0.3], [0.9, 0.5, -0.8]]), np.array([-0.5, -0.4, 0.0]),
                      np.array([0.7, 0.2, 0.6])], True),
    "clip": ("clip", lambda L, x: L.clip(x, max=0.4), [signed(0.1, 1)], True),
    # binary (the second operand broadcasts, or is a Python number)
    "add": ("add", lambda L, a, b: L.add(a, b), [uni(-2, 2), B3], True),
    "add_alpha": ("add", lambda L, a, b: L.add(a, b, alpha=-1.5), [uni(-2, 2), B3], True),
    "add_number": ("add", lambda L, a: a + 2.5, [uni(-2, 2)], True),
    "sub": ("sub", lambda L, a, b: L.sub(a, b), [uni(-2, 2), B3], True),
    "sub_alpha": ("sub", lambda L, a, b: L.sub(a, b, alpha=2), [uni(-2, 2), B3], True),
    "rsub": ("rsub", lambda L, a, b: L.rsub(a, b), [uni(-2, 2), B3], True),
    "rsub_number": ("rsub", lambda L, a: 3 - a, [uni(-2, 2)], True),
    "mul": ("mul", lambda L, a, b: L.mul(a, b), [uni(-2, 2), B3], True),
    "mul_number": ("mul", lambda L, a: a * -1.5, [uni(-2, 2)], True),
    "div": ("div", lambda L, a, b: L.div(a, b), [uni(-2, 2), B3], True),
    "div_number": ("div", lambda L, a: a / 4.0, [uni(-2, 2)], True),
    "rdiv_number": ("div", lambda L, a: 2.0 / a, [signed(0.5, 2)], True),
    "div_trunc": ("div", lambda L, a, b: L.div(a, b, rounding_mode="trunc"), [MOD_A, MOD_B], True),
    "div_floor": ("div", lambda L, a, b: L.div(a, b, rounding_mode="floor"), [MOD_A, MOD_B], True),
    "true_divide": ("true_divide", lambda L, a, b: L.true_divide(a, b), [uni(-2, 2), B3], True),
    "remainder": ("remainder", lambda L, a, b: L.remainder(a, b), [MOD_A, MOD_B], True),
    "remainder_number": ("remainder", lambda L, a: L.remainder(a, 1.5),
                         [1.5 * off_integer(-3, 3)], True),
    "fmod": ("fmod", lambda L, a, b: L.fmod(a, b), [MOD_A, MOD_B], True),
    "pow": ("pow", lambda L, a, b: L.pow(a, b), [uni(0.5, 2), signed(0.5, 1.5, (3,))], True),
    "pow_number_exponent": ("pow", lambda L, a: a ** 3, [uni(-2, 2)], True),
    "pow_fractional_exponent": ("pow", lambda L, a: L.pow(a, -1.5), [uni(0.5, 2)], True),
    "pow_zero_exponent": ("pow", lambda L, a: a ** 0, [uni(-2, 2)], True),
    "pow_number_base": ("pow", lambda L, a: 2.5 ** a, [uni(-2, 2)], True),
    "float_power": ("float_power", lambda L, a, b: L.float_power(a, b), [uni(0.5, 2), B3], True),
    "atan2": ("atan2", lambda L, a, b: L.atan2(a, b), [signed(0.3, 2), B3], True),
    "hypot": ("hypot", lambda L, a, b: L.hypot(a, b), [signed(0.3, 2), B3], True),
    "copysign": ("copysign", lambda L, a, b: L.copysign(a, b), [signed(0.3, 2), B3], True),
    # the gradient passes to input (one ulp is a slope of 1 at float64's scale), none to other
    "nextafter": ("nextafter", lambda L, a, b: L.nextafter(a, b), [uni(-2, 2), uni(3, 4, (3,))], True),
    "maximum": ("maximum", lambda L, a, b: L.maximum(a, b), [distinct(other=B3), B3], True),
    "minimum": ("minimum", lambda L, a, b: L.minimum(a, b), [distinct(other=B3), B3], True),
    "fmax": ("fmax", lambda L, a, b: L.fmax(a, b), [distinct(other=B3), B3], True),
    "fmin": ("fmin", lambda L, a, b: L.fmin(a, b), [distinct(other=B3), B3], True),
    "xlogy": ("xlogy", lambda L, a, b: L.xlogy(a, b), [uni(-2, 2), uni(0.5, 2, (3,))], True),
    "xlogy_number_other": ("xlogy", lambda L, a: L.xlogy(a, 3.0), [uni(-2, 2)], True),
    "xlogy_number_self": ("xlogy", lambda L, b: L.xlogy(2.0, b), [uni(0.5, 2)], True),
    # ternary
    "where": ("where", lambda L, a, b: L.where(L.tensor(COND), a, b), [uni(-2, 2), B3], True),
    "where_number": ("where", lambda L, a: L.where(L.tensor(COND), a, 0.5), [uni(-2, 2)], True),
    "lerp": ("lerp", lambda L, a, b: L.lerp(a, b, 0.3), [uni(-2, 2), B3], True),
    "lerp_tensor_weight": ("lerp", lambda L, a, b, w: L.lerp(a, b, w),
                           [uni(-2, 2), B3, uni(0, 1, (2, 1))], True),
    "addcmul": ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.5),
                [uni(-2, 2), B3, uni(-2, 2, (2, 1))], True),
    "addcdiv": ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c, value=-2),
                [uni(-2, 2), B3, signed(0.5, 2, (2, 1))], True),
    # composite elementwise ops
    "logaddexp": ("logaddexp", lambda L, a, b: L.logaddexp(a, b), [uni(-2, 2), B3], True),
    "logaddexp2": ("logaddexp2", lambda L, a, b: L.logaddexp2(a, b), [uni(-2, 2), B3], True),
    "sinc": _u("sinc", 0.2, 2, gen=signed),
    "deg2rad": _u("deg2rad", -90, 90),
    "rad2deg": _u("rad2deg", -2, 2),
    "ldexp": ("ldexp", lambda L, a, b: L.ldexp(a, b), [uni(-2, 2), signed(0.5, 2, (3,))], True),
    "frexp": ("frexp", lambda L, x: L.frexp(x)[0], [signed(0.3, 20)], True),
}

# elementwise functions with no derivative: bool/integer results, and floor_divide (PyTorch
# has no derivative for it either; see test_floor_divide_is_not_differentiable)
NOT_DIFFERENTIABLE = {
    "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isposinf", "isneginf", "isfinite",
    "signbit", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "isclose", "allclose", "equal", "floor_divide", "heaviside", "gcd", "lcm", "is_nonzero",
    "is_same_size", "is_conj", "is_neg"}


def test_table_covers_every_op():
    covered = {getattr(_pw, op) for op, *_ in CASES.values()}
    excluded = {getattr(_pw, n) for n in NOT_DIFFERENTIABLE}
    names = {n for n in _pw.__all__ if not n.endswith("_")}      # aliases count as their op
    missing = sorted(n for n in names if getattr(_pw, n) not in covered | excluded)
    assert not missing, f"differentiable ops without a gradcheck case: {missing}"


def _layout(a, i):
    """The values of `a` as a float64 leaf in a non-contiguous layout: a 2-d first input is a
    transposed view, any other input every other element of a bigger buffer."""
    if i == 0 and a.ndim == 2:
        t = tl.tensor(np.ascontiguousarray(a.T)).t()
    else:
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],))
        big[..., ::2] = a
        t = tl.tensor(big)[..., ::2]
    assert not t.is_contiguous()
    return t.detach().requires_grad_()


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck(case):
    _, fn, arrays, second = CASES[case]
    inputs = [_layout(a, i) for i, a in enumerate(arrays)]
    assert gradcheck(lambda *xs: fn(tl, *xs), inputs)
    if second:
        assert gradgradcheck(lambda *xs: fn(tl, *xs), inputs)


# PyTorch computes `number / x` as reciprocal(x) * number: its node is a MulBackward0
# digamma is composite here: its grad_fn is its last step's (the reflection's where)
NAMED_OTHERWISE = {"rdiv_number": "DivBackward0", "digamma": "WhereBackward0"}


def _grads(L, fn, arrays, v_seed):
    """First derivatives (with a random output gradient v) and a Hessian-vector product."""
    xs = [L.tensor(a).requires_grad_() for a in arrays]
    out = fn(L, *xs)
    rng = np.random.default_rng(v_seed)
    v = L.tensor(rng.standard_normal(tuple(out.shape)))
    g = L.autograd.grad(out, xs, v, create_graph=True, allow_unused=True)
    u = [L.tensor(rng.standard_normal(tuple(x.shape))) for x in xs]
    used = [(gi * ui).sum() for gi, ui in zip(g, u) if gi is not None and gi.requires_grad]
    second = [None] * len(xs)
    if used:
        second = L.autograd.grad(sum(used), xs, allow_unused=True)
    return out, g, second


def _numpy(t):
    """A tensor's values (None for no gradient; PyTorch's lazy zero tensors included)."""
    if t is None:
        return None
    t = t.detach()
    return t.numpy(force=True) if hasattr(t, "_is_zerotensor") else t.numpy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    _, fn, arrays, second = CASES[case]
    out, g, h = _grads(tl, fn, arrays, 5)
    t_out, t_g, t_h = _grads(torch, fn, arrays, 5)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert (out.grad_fn is None) == (t_out.grad_fn is None)
    if out.grad_fn is not None:
        assert out.grad_fn.name() == NAMED_OTHERWISE.get(case, t_out.grad_fn.name())
    for mine, theirs in list(zip(g, t_g)) + (list(zip(h, t_h)) if second else []):
        mine, theirs = _numpy(mine), _numpy(theirs)
        if mine is None or theirs is None:      # no gradient: the other must be none or zeros
            assert mine is None and theirs is None or not (theirs if mine is None else mine).any()
            continue
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)


# ---- in-place forms: the same gradients as PyTorch, or the same error --------------------------
INPLACE = {
    "exp_": lambda y, w: y.exp_(),
    "sin_": lambda y, w: y.sin_(),
    "tanh_": lambda y, w: y.tanh_(),
    "sigmoid_": lambda y, w: y.sigmoid_(),
    "sqrt_": lambda y, w: y.abs_().sqrt_(),
    "relu_": lambda y, w: y.relu_(),
    "abs_": lambda y, w: y.abs_(),
    "neg_": lambda y, w: y.neg_(),
    "reciprocal_": lambda y, w: y.reciprocal_(),
    "square_": lambda y, w: y.square_(),
    "round_": lambda y, w: y.round_(),
    "nan_to_num_": lambda y, w: y.nan_to_num_(),
    "clamp_": lambda y, w: y.clamp_(-0.5, 0.5),
    "clamp_tensor_": lambda y, w: y.clamp_(w - 1, w),
    "logit_": lambda y, w: y.sigmoid().logit_(),
    "add_": lambda y, w: y.add_(w, alpha=3),
    "sub_": lambda y, w: y.sub_(w),
    "mul_": lambda y, w: y.mul_(w),
    "mul_self_": lambda y, w: y.mul_(y),
    "div_": lambda y, w: y.div_(w),
    "pow_": lambda y, w: y.abs_().pow_(w),
    "pow_number_": lambda y, w: y.pow_(2),
    "atan2_": lambda y, w: y.atan2_(w),
    "maximum_": lambda y, w: y.maximum_(w) if hasattr(y, "maximum_") else y.clamp_(min=w),
    "lerp_": lambda y, w: y.lerp_(w, 0.3),
    "addcmul_": lambda y, w: y.addcmul_(w, w, value=2),
    "addcdiv_": lambda y, w: y.addcdiv_(w, w * 2 + 3),
    "sinc_": lambda y, w: y.sinc_(),
    "deg2rad_": lambda y, w: y.deg2rad_(),
    "ldexp_": lambda y, w: y.ldexp_(w),
    "clamp_min_": lambda y, w: y.clamp_min_(0.1),
    "clamp_max_tensor_": lambda y, w: y.clamp_max_(w),
    "iadd": lambda y, w: y.__iadd__(w),
    "imul": lambda y, w: y.__imul__(w),
    "itruediv": lambda y, w: y.__itruediv__(w),
    "exp_then_add_": lambda y, w: y.exp_().add_(1),            # exp_ saved its result: error
    "sin_then_exp_": lambda y, w: y.sin_().exp_(),             # sin_ saved a copy of its input
    "chain": lambda y, w: y.sin_().mul_(w).add_(y.detach()).div_(w + 3).sub_(0.5).abs_().log1p_(),
}


def _inplace_result(L, case):
    x = L.tensor([[0.4, -1.3, 0.8], [1.1, -0.2, -0.7]], dtype=L.float64, requires_grad=True)
    w = L.tensor([0.6, 1.4, -0.9], dtype=L.float64, requires_grad=True)
    y = x * 2
    try:
        z = INPLACE[case](y, w)
        z.backward(L.ones_like(z))
    except RuntimeError as e:
        return "error", str(e).split(":")[0]
    assert z is y
    return x.grad.numpy(), None if w.grad is None else w.grad.numpy()


@pytest.mark.parametrize("case", sorted(INPLACE))
def test_inplace_matches_torch(case):
    torch = pytest.importorskip("torch")
    mine, theirs = _inplace_result(tl, case), _inplace_result(torch, case)
    if isinstance(theirs[0], str):
        assert mine == theirs
        return
    assert not isinstance(mine[0], str), mine
    for m, t in zip(mine, theirs):
        if t is None:
            assert m is None
        else:
            np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-12)


# ---- PyTorch's conventions where the derivative is undefined ---------------------------------------
def _point_grads(L, name, fn):
    x = L.tensor([-1.0, 0.0, 2.0, -0.0], dtype=L.float64, requires_grad=True)
    fn(L, x).backward(L.ones(4, dtype=L.float64))
    return x.grad.tolist()


POINTS = {
    "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(),
    "sign": lambda L, x: x.sign(),
    "sqrt": lambda L, x: x.abs().sqrt(),
    "clamp_bounds": lambda L, x: x.clamp(0.0, 2.0),
    "clamp_tensor_ties": lambda L, x: x.clamp(L.zeros(4, dtype=L.float64), L.full((4,), 2.0, dtype=L.float64)),
    "maximum_tie": lambda L, x: L.maximum(x, L.zeros(4, dtype=L.float64)),
    "minimum_tie": lambda L, x: L.minimum(x, L.zeros(4, dtype=L.float64)),
    "fmax_tie": lambda L, x: L.fmax(x, L.zeros(4, dtype=L.float64)),
    "fmin_tie": lambda L, x: L.fmin(x, L.zeros(4, dtype=L.float64)),
    "pow_zero_exponent": lambda L, x: x ** 0,
    "pow_half": lambda L, x: x.abs() ** 0.5,
    "zero_base_pow": lambda L, x: L.pow(L.zeros(4, dtype=L.float64), x),
    "number_zero_base_pow": lambda L, x: 0.0 ** x,
    "xlogy_zero": lambda L, x: L.xlogy(x, L.zeros(4, dtype=L.float64)),
    "copysign_zero": lambda L, x: L.copysign(x, L.ones(4, dtype=L.float64)),
    "nan_to_num_inf": lambda L, x: (x / 0.0).nan_to_num(),
    "hypot_origin": lambda L, x: L.hypot(x, L.zeros(4, dtype=L.float64)),
    "logit_eps_edge": lambda L, x: (x.abs() / 4).logit(eps=0.25),
    "maximum_nan": lambda L, x: L.maximum(x, L.tensor([math.nan, 0.0, math.nan, 1.0], dtype=L.float64)),
    "fmax_nan": lambda L, x: L.fmax(x, L.tensor([math.nan, 0.0, math.nan, 1.0], dtype=L.float64)),
}


@pytest.mark.parametrize("case", sorted(POINTS))
def test_undefined_points_follow_torch(case):
    torch = pytest.importorskip("torch")
    mine = _point_grads(tl, case, POINTS[case])
    theirs = _point_grads(torch, case, POINTS[case])
    np.testing.assert_allclose(np.array(mine), np.array(theirs), rtol=1e-14, atol=0)


def test_floor_divide_is_not_differentiable():
    x = tl.tensor([3.5, -2.5], requires_grad=True)
    y = x // 2
    assert y.requires_grad and "FloorDivide" in y.grad_fn.name()
    with pytest.raises(RuntimeError, match="the derivative for 'floor_divide' is not implemented"):
        y.backward(tl.ones(2))


def test_float32_half_and_promoted_inputs_get_their_own_dtype():
    a = tl.tensor([1.0, 2.0], dtype=tl.float32, requires_grad=True)
    b = tl.tensor([3.0, 4.0], dtype=tl.float64, requires_grad=True)
    (a * b).backward(tl.ones(2, dtype=tl.float64))
    assert a.grad.dtype is tl.float32 and b.grad.dtype is tl.float64
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]
    h = tl.tensor([0.5, -1.0], dtype=tl.float16, requires_grad=True)
    h.exp().backward(tl.ones(2, dtype=tl.float16))
    assert h.grad.dtype is tl.float16
    np.testing.assert_allclose(h.grad.float().numpy(), np.exp([0.5, -1.0]), rtol=2e-3)


def test_out_argument_with_grad_raises():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    for call in (lambda: tl.exp(x, out=tl.empty(2)), lambda: tl.add(x, 1, out=tl.empty(2)),
                 lambda: tl.where(tl.tensor([True, False]), x, 0.0, out=tl.empty(2)),
                 lambda: tl.lerp(x, x, 0.5, out=tl.empty(2))):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            call()
    with tl.no_grad():
        assert tl.exp(x, out=tl.empty(2)).requires_grad is False


def test_integer_and_bool_results_never_require_grad():
    x = tl.tensor([1.5, -2.0], requires_grad=True)
    for r in (x > 0, x.isnan(), x == x, x.signbit(), x.long(), x.long() * 2, tl.logical_not(x)):
        assert not r.requires_grad and r.grad_fn is None
    for make in (lambda: tl.tensor([1, 2], requires_grad=True), lambda: tl.tensor([1, 2]).requires_grad_(),
                 lambda: tl.tensor([True]).requires_grad_()):
        with pytest.raises(RuntimeError, match="floating point"):
            make()


# ---- property: gradients of broadcast operands, any shapes and layouts --------------------------------
_GRAD_FORMULAS = {          # op -> (d out/d a, d out/d b) in NumPy, elementwise
    "add": (lambda a, b: np.ones_like(a * b), lambda a, b: np.ones_like(a * b)),
    "sub": (lambda a, b: np.ones_like(a * b), lambda a, b: -np.ones_like(a * b)),
    "mul": (lambda a, b: b + 0 * a, lambda a, b: a + 0 * b),
    "div": (lambda a, b: 1 / b + 0 * a, lambda a, b: -a / (b * b)),
    "atan2": (lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b)),
}


def _strided_leaf(values, transposed):
    """A float64 leaf holding `values`: reversed-dims transposed view, or a stepped view."""
    if transposed and values.ndim >= 2:
        t = tl.tensor(np.ascontiguousarray(values.transpose())).permute(*range(values.ndim - 1, -1, -1))
    elif values.ndim >= 1:
        big = np.zeros(values.shape[:-1] + (2 * values.shape[-1],))
        big[..., ::2] = values
        t = tl.tensor(big)[..., ::2]
    else:
        t = tl.tensor(values)
    return t.detach().requires_grad_()


def _reduce_to(arr, shape):
    lead = arr.ndim - len(shape)
    arr = arr.sum(axis=tuple(range(lead))) if lead else arr
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and arr.shape[i] != 1)
    return arr.sum(axis=axes, keepdims=True) if axes else arr


try:
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra.numpy import mutually_broadcastable_shapes
except ImportError:                                     # pragma: no cover
    given = None

if given is not None:
    @settings(max_examples=60, deadline=None)
    @given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
           op=st.sampled_from(sorted(_GRAD_FORMULAS)), layout=st.tuples(st.booleans(), st.booleans()),
           seed=st.integers(0, 2 ** 16))
    def test_broadcast_gradients_property(shapes, op, layout, seed):
        rng = np.random.default_rng(seed)
        (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
        av, bv = rng.uniform(0.5, 2.0, sa), rng.uniform(0.5, 2.0, sb)
        a, b = _strided_leaf(av, layout[0]), _strided_leaf(bv, layout[1])
        v = rng.standard_normal(out_shape)
        out = getattr(tl, op)(a, b)
        ga, gb = tl.autograd.grad(out, [a, b], tl.tensor(v))
        da, db = _GRAD_FORMULAS[op]
        abv = np.broadcast_arrays(av, bv)
        assert tuple(ga.shape) == sa and tuple(gb.shape) == sb
        np.testing.assert_allclose(ga.numpy(), _reduce_to(da(*abv) * v, sa), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb.numpy(), _reduce_to(db(*abv) * v, sb), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("wants", [(False, False, True), (True, False, False),
                                   (False, True, True), (True, True, False)])
def test_ternary_gradients_for_any_subset_of_inputs(wants):
    """A ternary node saves only what the wanted gradients need (lerp keeps the weight for
    self's and end's, self and end for the weight's): each subset works, by finite
    differences."""
    rng = np.random.default_rng(8)
    vals = [rng.uniform(-2, 2, (2, 3)), rng.uniform(-2, 2, (2, 3)), rng.uniform(0, 1, (2, 3))]
    ts = [tl.tensor(v, requires_grad=w) for v, w in zip(vals, wants)]
    leaves = tuple(t for t in ts if t.requires_grad)

    def f(*xs):
        it = iter(xs)
        a, b, w = [next(it) if t.requires_grad else t for t in ts]
        return tl.lerp(a, b, w)
    assert gradcheck(f, leaves)


def test_lgamma_gradient_near_the_poles():
    """d lgamma / dx = digamma, whose reflection term pi cot(pi x) is taken at x - round(x)
    (exact) so float32 keeps its digits next to the poles: float32 within 1e-5 of float64,
    and float64 equal to PyTorch's digamma where installed."""
    x = np.array([-0.999, -1.001, -3.0001, -2.9999, -4.99999, -20.0001, -0.0001, -1e-6, -100.5,
                  -7.3, 2.5, 30.0], dtype=np.float32)
    grads = {}
    for dt in (tl.float32, tl.float64):
        t = tl.tensor(x.astype(np.float64), dtype=dt, requires_grad=True)
        tl.lgamma(t).sum().backward()
        grads[dt] = t.grad.numpy().astype(np.float64)
    np.testing.assert_allclose(grads[tl.float32], grads[tl.float64], rtol=1e-5)
    torch = pytest.importorskip("torch")
    want = torch.digamma(torch.tensor(x.astype(np.float64))).numpy()
    np.testing.assert_allclose(grads[tl.float64], want, rtol=1e-10)


def test_digamma_and_its_gradient():
    x = tl.tensor([0.3, 1.0, 2.5, -1.5, 10.0], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(tl.digamma, (x,))            # trigamma, by autograd
    np.testing.assert_allclose(tl.digamma(tl.tensor([1.0])).item(), -0.5772156649015329,
                               rtol=1e-6)
    assert tl.tensor([2.0]).digamma().dtype is tl.float32
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(tl.digamma(x).detach().numpy(),
                               torch.digamma(torch.tensor(x.detach().numpy())).numpy(), rtol=1e-10)


def test_atan2_gradient_at_the_origin_is_zero_as_pytorch():
    # d atan2(y, x) is 0/0 at (0, 0); PyTorch zeroes the reciprocal of the denominator there
    # (a NaN would poison every parameter it reaches); elsewhere the usual formula
    y = tl.tensor([0.0, 1.0, 0.0], requires_grad=True)
    x = tl.tensor([0.0, 0.0, 2.0], requires_grad=True)
    tl.atan2(y, x).sum().backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.5] and x.grad.tolist() == [0.0, -1.0, 0.0]
    assert math.copysign(1.0, x.grad[0].item()) == -1.0          # -0, as PyTorch's
