"""A stress test of two compiler features against eager torchlite: a fused kernel's backward
reading back the costly forward values (erf/exp/tanh/sigmoid/log results, dropout masks,
softmax results) that its forward program writes out, and a fused program's outputs taking
the inputs' memory order.  Values and gradients (float32 and float64, within rounding) over
chains of costly and cheap ops, inputs requiring grad in several patterns, several outputs,
retain_graph / create_graph / no_grad, dynamic shapes, strided layouts, empty and 1-element
tensors, extreme values; then a few training runs of small models, compiled against eager
with the same seed (dropout draws eager's masks by design)."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401

TOL = {tl.float32: dict(rtol=2e-5, atol=2e-6), tl.float64: dict(rtol=1e-10, atol=1e-12)}


# ---- inputs ----------------------------------------------------------------------------------
def make(spec, dtype, g):
    """A tensor of `spec` = (shape, layout): layout 'c' contiguous, 'cl' channels_last, 't' a
    transposed view, 's' a sliced view (every other column of a wider tensor), 'big' extreme
    values (huge, inf, NaN, subnormal) in place of part of the elements."""
    shape, layout = spec
    if layout == "t":
        return tl.randn(*reversed(shape), generator=g, dtype=dtype).permute(*reversed(range(len(shape))))
    if layout == "s":
        wide = tuple(shape[:-1]) + (2 * shape[-1] + 1,)
        return tl.randn(*wide, generator=g, dtype=dtype)[..., 1::2]
    x = tl.randn(*shape, generator=g, dtype=dtype)
    if layout == "cl":
        return x.to(memory_format=tl.channels_last)
    if layout == "big":
        a = x.numpy().copy().reshape(-1)
        special = [1e30, -1e30, math.inf, -math.inf, math.nan, 88.8, -104.0, 1e-40, 9.0, -9.0, 3e38]
        a[: len(special)] = special[: a.size]
        return tl.from_numpy(a.reshape(shape).astype(a.dtype))
    return x


def leaves(xs, wants):
    """Fresh leaves of the same values (and strides), requiring grad where wants[i]."""
    out = []
    for x, w in zip(xs, wants):
        y = x.detach().clone() if x.is_contiguous() else _strided_copy(x)
        out.append(y.requires_grad_() if w else y)
    return out


def _strided_copy(x):
    """A leaf with x's values and strides (clone keeps a dense layout, not a view's)."""
    y = x.detach()
    if y.is_contiguous(memory_format=tl.channels_last):
        return y.clone(memory_format=tl.channels_last)
    return y + 0.0 if y.dim() == 0 else y.clone()


def as_tuple(y):
    return y if isinstance(y, tuple) else (y,)


def run_side(fn, xs, wants, seed, weights=None, backward=True):
    """(outputs, gradients) of fn on fresh leaves: the loss is sum(out_i * weight_i) over the
    float outputs (weights drawn once from a fixed generator)."""
    args = leaves(xs, wants)
    tl.manual_seed(seed)
    outs = as_tuple(fn(*args))
    grads = [None] * len(args)
    if backward and any(wants) and any(o.requires_grad for o in outs):
        loss = 0.0
        for o, w in zip(outs, weights):
            if o.requires_grad:
                loss = loss + (o * w).sum()
        loss.backward()
        grads = [a.grad for a in args]
    return outs, grads, args


def weights_for(outs):
    g = tl.Generator().manual_seed(99)
    return [tl.randn(*o.shape, generator=g, dtype=o.dtype) if o.is_floating_point() else None
            for o in outs]


def assert_close(a, b, dtype, what=""):
    assert (a is None) == (b is None), what
    if a is None:
        return
    assert tuple(a.shape) == tuple(b.shape), (what, a.shape, b.shape)
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), err_msg=what, **TOL[dtype])


def compare(fn, xs, wants, dtype, seed=0, strides=True, **compile_kw):
    """fn compiled against fn eager on inputs xs: outputs (values, dtypes, strides where eager's
    are dense) and the gradients of the inputs in `wants`."""
    c = tl.compile(fn, **compile_kw)
    with tl.no_grad():
        tl.manual_seed(seed)
        weights = weights_for(as_tuple(fn(*xs)))
    got, g_got, _ = run_side(c, xs, wants, seed, weights)
    want, g_want, _ = run_side(fn, xs, wants, seed, weights)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, dtype, f"output {i}")
        assert a.requires_grad == b.requires_grad, f"output {i} requires_grad"
        # a row value (last dim 1) is a column of a wider array by design (README)
        if strides and b.numel() > 1 and b.shape[-1] > 1 and b.is_contiguous(memory_format=_format_of(b)):
            assert a.stride() == b.stride(), (f"output {i}", a.stride(), b.stride())
    for i, (a, b) in enumerate(zip(g_got, g_want)):
        assert_close(a, b, dtype, f"grad {i}")
    return c


def _format_of(t):
    if t.dim() == 4 and t.is_contiguous(memory_format=tl.channels_last):
        return tl.channels_last
    return tl.contiguous_format


# ---- the functions -----------------------------------------------------------------------------
def gelu_affine(x, w, b):
    return F.gelu(x) * w + b


def gelu_tanh(x, y):
    return F.gelu(x, approximate="tanh") - x * y


def silu_sigmoid(x, y):
    return F.silu(x) * y.sigmoid()


def mish_softplus(x, y):
    return F.mish(x) + F.softplus(y) * 0.5


def softplus_beta(x, y):
    return F.softplus(x, beta=2.0, threshold=5.0) - y.exp() * 0.1


def transcendental_chain(x, y):
    return (x.tanh() * 0.5).exp().log() + x.sigmoid() * y.tanh()


def log_sigmoid_exp(x, y):
    return (x.sigmoid() + 1e-3).log() * (-x.abs()).exp() + y.log1p().expm1() * 0.0 + y


def erf_in_where(x, y):
    return tl.where(x > 0, x.erf(), (y * 2.0).erf() * 3.0) + y


def erf_in_clamp(x, y):
    return tl.clamp(x.erf() * 3.0, -1.0, 2.0) + y.exp().clamp(max=1.5) * x


def sin_cos_atan(x, y):
    return x.sin() * y.cos() + (x * y).atan() + tl.erfc(x)


def exp_output_reused(x, y):
    e = x.exp()
    return e, e * y, (e + y).tanh()


def tanh_and_gelu_outputs(x, y):
    t = (x * y).tanh()
    return t, F.gelu(t + x), t.sigmoid()


def sigmoid_output_only(x):
    s = x.sigmoid()
    return s * 1.0, s.log()


def masked_softmax(x, m):
    return F.softmax(tl.where(m, x * 0.5, -math.inf), -1) * x


def masked_log_softmax(x, bias):
    return F.log_softmax(x + bias, -1).exp() * 2.0 + F.log_softmax(x, dim=-1)


def logsumexp_written_out(x):
    return (x * 2.0).exp().sum(-1, keepdim=True).log() - x.mean(-1, keepdim=True)


def rms_norm_tanh(x, w):
    return x.tanh() * tl.rsqrt(x.tanh().pow(2).mean(-1, keepdim=True) + 1e-6) * w


def dropout_fn(p):
    def fn(x, y):
        return F.dropout(F.gelu(x), p, True) * y.sigmoid()
    fn.__name__ = f"dropout_{p}"
    return fn


def dropout_residual(p):
    def fn(x, y):
        return y + F.dropout((x * 1.5).tanh(), p, True) * 2.0
    fn.__name__ = f"dropout_residual_{p}"
    return fn


def dropout_layer_norm(x, y, w, b):
    r = y + F.dropout(F.gelu(x), 0.25, True)
    mu = r.mean(-1, keepdim=True)
    d = r - mu
    var = (d * d).mean(-1, keepdim=True)
    return d * tl.rsqrt(var + 1e-5) * w + b


def two_dropouts(x):
    a = F.dropout(x.exp() * 0.1, 0.3, True)
    return a + F.dropout(x.sigmoid(), 0.6, True), a


def inplace_before(x, y):
    t = x * 2.0
    t.add_(1.0)
    return t.exp() * y.tanh()


def inplace_after(x, y):
    e = (x.exp() * y).sigmoid()
    u = e * 3.0
    u.mul_(0.5)
    return u + e.tanh()


def inplace_between(x, y):
    a = x.tanh() * y
    b = a.clone()
    b.sub_(0.25)
    return a.exp() + b.erf()


def scalar_input(x, s):
    return (x * s).exp() * 0.01 + s.sigmoid() + F.gelu(x + s)


def bias_broadcast(x, b):
    return F.gelu(x + b) * b.tanh()


def channels_last_bias(x, b):
    return F.silu(x * 0.5 + b).exp() * 0.1 + (x - b).erf()


def mixed_order(x, y):
    return y + (x * 2.0).sigmoid()


def mixed_order_2(x, y):
    return y.tanh() * 0.5 + x.exp() * 0.1, x.erf() - y


def mixed_many_outputs(x, y):
    e = x.exp() * 0.1
    return y * 2.0 + e, e.tanh(), x + e


R = "c"
CASES = [
    # name, fn, input specs (shape, layout), wants
    ("gelu_affine", gelu_affine, [((8, 33), R), ((33,), R), ((33,), R)], (True, True, True)),
    ("gelu_affine_x_only", gelu_affine, [((8, 33), R), ((33,), R), ((33,), R)], (True, False, False)),
    ("gelu_affine_w_only", gelu_affine, [((8, 33), R), ((33,), R), ((33,), R)], (False, True, False)),
    ("gelu_affine_no_grad", gelu_affine, [((8, 33), R), ((33,), R), ((33,), R)], (False, False, False)),
    ("gelu_tanh", gelu_tanh, [((5, 7, 9), R), ((5, 7, 9), R)], (True, True)),
    ("gelu_tanh_y", gelu_tanh, [((5, 7, 9), R), ((5, 7, 9), R)], (False, True)),
    ("silu_sigmoid", silu_sigmoid, [((6, 40), R), ((40,), R)], (True, True)),
    ("mish_softplus", mish_softplus, [((6, 40), R), ((6, 40), R)], (True, True)),
    ("softplus_beta", softplus_beta, [((6, 40), R), ((6, 40), R)], (True, False)),
    ("transcendental_chain", transcendental_chain, [((4, 50), R), ((4, 50), R)], (True, True)),
    ("log_sigmoid_exp", log_sigmoid_exp, [((4, 50), R), ((4, 50), "c")], (True, False)),
    ("erf_in_where", erf_in_where, [((9, 31), R), ((9, 31), R)], (True, True)),
    ("erf_in_clamp", erf_in_clamp, [((9, 31), R), ((9, 31), R)], (True, True)),
    ("sin_cos_atan", sin_cos_atan, [((3, 70), R), ((3, 70), R)], (True, True)),
    ("exp_output_reused", exp_output_reused, [((7, 20), R), ((7, 20), R)], (True, True)),
    ("exp_output_reused_y", exp_output_reused, [((7, 20), R), ((20,), R)], (False, True)),
    ("tanh_and_gelu_outputs", tanh_and_gelu_outputs, [((7, 20), R), ((7, 20), R)], (True, True)),
    ("sigmoid_output_only", sigmoid_output_only, [((11, 13), R)], (True,)),
    ("masked_log_softmax", masked_log_softmax, [((6, 24), R), ((24,), R)], (True, True)),
    ("logsumexp_written_out", logsumexp_written_out, [((6, 24), R)], (True,)),
    ("rms_norm_tanh", rms_norm_tanh, [((6, 24), R), ((24,), R)], (True, True)),
    ("inplace_before", inplace_before, [((6, 24), R), ((6, 24), R)], (True, True)),
    ("inplace_after", inplace_after, [((6, 24), R), ((6, 24), R)], (True, True)),
    ("inplace_between", inplace_between, [((6, 24), R), ((6, 24), R)], (True, True)),
    ("scalar_input", scalar_input, [((6, 24), R), ((), R)], (True, True)),
    ("scalar_input_s_only", scalar_input, [((6, 24), R), ((), R)], (False, True)),
    ("bias_broadcast", bias_broadcast, [((4, 5, 6), R), ((5, 1), R)], (True, True)),
    ("bias_broadcast_b_only", bias_broadcast, [((4, 5, 6), R), ((6,), R)], (False, True)),
    # layouts
    ("channels_last_bias", channels_last_bias, [((2, 3, 4, 5), "cl"), ((3, 1, 1), R)], (True, True)),
    ("channels_last_both", transcendental_chain, [((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), "cl")], (True, True)),
    ("channels_last_gelu", gelu_affine, [((2, 6, 3, 3), "cl"), ((6, 1, 1), R), ((6, 1, 1), R)],
     (True, True, True)),
    ("mixed_order", mixed_order, [((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), R)], (True, True)),
    ("mixed_order_rev", mixed_order, [((2, 3, 4, 5), R), ((2, 3, 4, 5), "cl")], (True, True)),
    ("mixed_order_2", mixed_order_2, [((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), R)], (True, True)),
    ("mixed_order_2_rev", mixed_order_2, [((2, 3, 4, 5), R), ((2, 3, 4, 5), "cl")], (True, True)),
    ("mixed_many_outputs", mixed_many_outputs, [((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), R)], (True, True)),
    ("mixed_many_outputs_t", mixed_many_outputs, [((3, 4, 5), "t"), ((3, 4, 5), R)], (True, False)),
    ("transposed", erf_in_where, [((6, 7), "t"), ((6, 7), R)], (True, True)),
    ("sliced", silu_sigmoid, [((6, 9), "s"), ((9,), R)], (True, True)),
    ("sliced_and_transposed", exp_output_reused, [((5, 8), "s"), ((5, 8), "t")], (True, True)),
    ("long_rows_channels_last", gelu_tanh, [((2, 300, 2, 2), "cl"), ((2, 300, 2, 2), "cl")], (True, True)),
    # empty and 1-element
    ("empty_rows", gelu_affine, [((0, 5), R), ((5,), R), ((5,), R)], (True, True, True)),
    ("empty_cols", transcendental_chain, [((3, 0), R), ((3, 0), R)], (True, True)),
    ("one_element", exp_output_reused, [((1,), R), ((1,), R)], (True, True)),
    ("one_by_one", mish_softplus, [((1, 1), R), ((1, 1), R)], (True, True)),
    ("zero_dim", transcendental_chain, [((), R), ((), R)], (True, True)),
    ("one_element_softmax", masked_log_softmax, [((3, 1), R), ((1,), R)], (True, True)),
    # extreme values through the saved erf/exp/tanh/sigmoid
    ("big_gelu", gelu_affine, [((4, 8), "big"), ((8,), R), ((8,), R)], (True, True, True)),
    ("big_chain", transcendental_chain, [((4, 8), "big"), ((4, 8), R)], (True, True)),
    ("big_exp_outputs", exp_output_reused, [((4, 8), "big"), ((4, 8), R)], (True, True)),
    ("big_silu", silu_sigmoid, [((4, 8), "big"), ((8,), R)], (True, True)),
    ("big_mish", mish_softplus, [((4, 8), "big"), ((4, 8), "big")], (True, True)),
    ("big_erf_where", erf_in_where, [((4, 8), "big"), ((4, 8), R)], (True, True)),
    ("big_log_softmax", masked_log_softmax, [((4, 8), "big"), ((8,), R)], (True, True)),
]
DROPOUT_CASES = [
    (f"dropout_{p}", dropout_fn(p), [((6, 64), R), ((64,), R)], (True, True)) for p in (0.0, 0.1, 0.5, 0.9, 1.0)
] + [
    (f"dropout_residual_{p}", dropout_residual(p), [((5, 48), R), ((5, 48), R)], (True, True))
    for p in (0.2, 0.7)
] + [
    ("dropout_residual_cl", dropout_residual(0.3), [((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), R)], (True, False)),
    ("dropout_layer_norm", dropout_layer_norm, [((4, 32), R), ((4, 32), R), ((32,), R), ((32,), R)],
     (True, True, True, True)),
    ("dropout_layer_norm_w", dropout_layer_norm, [((4, 32), R), ((4, 32), R), ((32,), R), ((32,), R)],
     (False, False, True, False)),
    ("two_dropouts", two_dropouts, [((8, 40), R)], (True,)),
]


def _inputs(specs, dtype, seed=1):
    g = tl.Generator().manual_seed(seed)
    return [make(s, dtype, g) for s in specs]


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,fn,specs,wants", CASES + DROPOUT_CASES, ids=[c[0] for c in CASES + DROPOUT_CASES])
def test_compiled_matches_eager(name, fn, specs, wants, dtype):
    xs = _inputs(specs, dtype)
    compare(fn, xs, wants, dtype, seed=5)


def test_masked_softmax_with_fully_masked_rows():
    g = tl.Generator().manual_seed(3)
    x = tl.randn(5, 12, generator=g)
    m = tl.rand(5, 12, generator=g) > 0.4
    m[2] = False                         # a row of -inf only: NaN, as eager
    m[3] = True
    compare(masked_softmax, [x, m], (True, False), tl.float32)


@pytest.mark.parametrize("act", ["softplus", "softplus_beta", "mish"])
def test_softplus_and_mish_gradients_past_exp_overflow(act):
    """Fused with a neighbour, softplus and mish are traced as their formula; past exp's
    overflow (x > 88 in float32) its unused branch gave 0 * inf = NaN gradients."""
    fn = {"softplus": lambda t: F.softplus(t * 1.5) * 2.0, "mish": lambda t: F.mish(t * 1.5) * 2.0,
          "softplus_beta": lambda t: F.softplus(t * 1.5, beta=0.5, threshold=10.0) * 2.0}[act]
    x = tl.tensor([[90.0, 200.0, 1e5, 3e38, 25.0, 5.0, -100.0, math.nan]])
    compare(fn, [x], (True,), tl.float32)
    compare(fn, [x.double() * 10.0], (True,), tl.float64)


def test_the_kernels_save_costly_values():
    """The cases above do go through saved values: the backward plans hold some."""
    c = tl.compile(exp_output_reused)
    xs = leaves(_inputs([((7, 20), R), ((7, 20), R)], tl.float32), (True, True))
    sum(o.sum() for o in c(*xs)).backward()
    plans = [k._backward for k in kernels_of(c) if k._backward is not None]
    assert plans and any(p.saved_names for p in plans)


# ---- autograd patterns -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
def test_retain_graph_and_two_backward_calls(dtype):
    xs = _inputs([((6, 30), R), ((30,), R)], dtype)
    c = tl.compile(tanh_and_gelu_outputs)
    res = []
    for f in (c, tanh_and_gelu_outputs):
        a, b = leaves(xs, (True, True))
        t, gl, s = f(a, b)
        loss = (t * 2.0).sum() + gl.sum() + (s * s).sum()
        loss.backward(retain_graph=True)
        first = a.grad.clone()
        loss.backward()
        res.append((first, a.grad, b.grad))
    for u, v in zip(*res):
        assert_close(u, v, dtype)
    assert_close(res[0][1], res[0][0] * 2, dtype)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
def test_backward_through_different_outputs(dtype):
    xs = _inputs([((6, 30), R), ((6, 30), R)], dtype)
    c = tl.compile(exp_output_reused)
    res = []
    for f in (c, exp_output_reused):
        a, b = leaves(xs, (True, True))
        e, p, t = f(a, b)
        p.sum().backward(retain_graph=True)
        g1 = (a.grad.clone(), b.grad.clone())
        t.backward(tl.ones_like(t) * 0.5, retain_graph=True)
        g2 = (a.grad.clone(), b.grad.clone())
        (ga,) = tl.autograd.grad(e.sum(), a)
        res.append(g1 + g2 + (ga,))
    for u, v in zip(*res):
        assert_close(u, v, dtype)


def test_backward_twice_without_retain_graph_raises_as_eager():
    xs = _inputs([((4, 10), R), ((4, 10), R)], tl.float32)
    c = tl.compile(gelu_tanh)
    for f in (c, gelu_tanh):
        a, b = leaves(xs, (True, True))
        y = f(a, b)
        y.sum().backward()
        with pytest.raises(RuntimeError):
            y.sum().backward()


@pytest.mark.parametrize("fn,specs", [
    (transcendental_chain, [((4, 6), R), ((4, 6), R)]),
    (mish_softplus, [((4, 6), R), ((4, 6), R)]),
    (gelu_tanh, [((4, 6), R), ((4, 6), R)]),
    (erf_in_where, [((4, 6), R), ((4, 6), R)]),
    (masked_log_softmax, [((4, 6), R), ((6,), R)]),
    (logsumexp_written_out, [((4, 6), R)]),
    (channels_last_bias, [((2, 3, 2, 2), "cl"), ((3, 1, 1), R)]),
], ids=["chain", "mish", "gelu_tanh", "erf_where", "log_softmax", "logsumexp", "channels_last"])
def test_second_derivatives(fn, specs):
    dtype = tl.float64
    xs = _inputs(specs, dtype)
    wants = (True,) * len(xs)
    c = tl.compile(fn)
    res = []
    for f in (c, fn):
        args = leaves(xs, wants)
        out = sum((o * (k + 1.0)).sum() for k, o in enumerate(as_tuple(f(*args))))
        gs = tl.autograd.grad(out, args, create_graph=True)
        hs = tl.autograd.grad(sum((gg * gg).sum() for gg in gs), args)
        res.append([g.detach() for g in gs] + list(hs))
    for u, v in zip(*res):
        assert_close(u, v, dtype)


@pytest.mark.parametrize("fn,specs", [
    (gelu_affine, [((3, 5), R), ((5,), R), ((5,), R)]),
    (mish_softplus, [((3, 5), R), ((3, 5), R)]),
    (softplus_beta, [((3, 5), R), ((3, 5), R)]),
    (logsumexp_written_out, [((3, 5), R)]),
    (dropout_layer_norm, [((3, 5), R), ((3, 5), R), ((5,), R), ((5,), R)]),
    (channels_last_bias, [((2, 3, 2, 2), "cl"), ((3, 1, 1), R)]),
    (exp_output_reused, [((3, 5), R), ((3, 5), R)]),
], ids=["gelu", "mish", "softplus", "logsumexp", "dropout_ln", "channels_last", "outputs"])
def test_float64_finite_differences(fn, specs):
    """The compiled gradient against central differences of the compiled function itself
    (the same seed for every evaluation, so a dropout draws one mask throughout)."""
    xs = _inputs(specs, tl.float64)
    c = tl.compile(fn)
    wants = (True,) * len(xs)
    with tl.no_grad():
        tl.manual_seed(4)
        weights = weights_for(as_tuple(c(*xs)))
    _, grads, _ = run_side(c, xs, wants, 4, weights)

    def loss(vals):
        tl.manual_seed(4)
        with tl.no_grad():
            outs = as_tuple(c(*vals))
        return sum(float((o * w).sum()) for o, w in zip(outs, weights))
    h = 1e-6
    for i, x in enumerate(xs):
        base = x.detach().contiguous().numpy()
        num = np.zeros(base.size)
        for j in range(base.size):
            for sgn in (1, -1):
                a = base.copy().reshape(-1)
                a[j] += sgn * h
                vals = list(xs)
                vals[i] = tl.from_numpy(a.reshape(base.shape))
                num[j] += sgn * loss(vals)
        np.testing.assert_allclose(grads[i].numpy().reshape(-1), num / (2 * h), rtol=1e-6, atol=1e-7,
                                   err_msg=f"input {i}")


# ---- grad modes and shapes -------------------------------------------------------------------
def test_no_grad_forward_and_the_same_function_with_and_without_grad():
    xs = _inputs([((6, 30), R), ((30,), R)], tl.float32)
    c = tl.compile(silu_sigmoid)
    want, gw, _ = run_side(silu_sigmoid, xs, (True, True), 0, [tl.ones(6, 30)])
    for rounds in range(2):
        a, b = leaves(xs, (True, True))
        with tl.no_grad():
            y = c(a, b)
        assert not y.requires_grad
        assert_close(y, want[0], tl.float32)
        y = c(*leaves(xs, (False, False)))
        assert not y.requires_grad
        assert_close(y, want[0], tl.float32)
        got, gg, _ = run_side(c, xs, (True, True), 0, [tl.ones(6, 30)])
        assert_close(got[0], want[0], tl.float32)
        for u, v in zip(gg, gw):
            assert_close(u, v, tl.float32)
        got, gg, _ = run_side(c, xs, (False, True), 0, [tl.ones(6, 30)])
        assert gg[0] is None
        assert_close(gg[1], gw[1], tl.float32)


@pytest.mark.parametrize("dynamic", [True, None], ids=["dynamic", "automatic"])
@pytest.mark.parametrize("fn,specs,wants", [
    (gelu_affine, [((3, 16), R), ((16,), R), ((16,), R)], (True, True, True)),
    (exp_output_reused, [((3, 16), R), ((3, 16), R)], (True, False)),
    (masked_log_softmax, [((3, 16), R), ((16,), R)], (True, True)),
    (dropout_layer_norm, [((3, 16), R), ((3, 16), R), ((16,), R), ((16,), R)], (True, True, True, True)),
    (channels_last_bias, [((3, 4, 2, 2), "cl"), ((4, 1, 1), R)], (True, True)),
    (mixed_order, [((3, 4, 2, 2), "cl"), ((3, 4, 2, 2), R)], (True, True)),
], ids=["gelu", "outputs", "log_softmax", "dropout_ln", "channels_last", "mixed"])
def test_dynamic_shapes(fn, specs, wants, dynamic):
    c = tl.compile(fn, dynamic=dynamic)
    for batch in (3, 5, 1, 3):
        for dtype in (tl.float32, tl.float64):
            s = [((batch,) + shape[1:], lay) if len(shape) > 1 and shape[0] == 3 else (shape, lay)
                 for shape, lay in specs]
            xs = _inputs(s, dtype, seed=batch)
            with tl.no_grad():
                tl.manual_seed(2)
                weights = weights_for(as_tuple(fn(*xs)))
            got, gg, _ = run_side(c, xs, wants, 2, weights)
            want, gw, _ = run_side(fn, xs, wants, 2, weights)
            for u, v in zip(got + tuple(gg), want + tuple(gw)):
                assert_close(u, v, dtype, f"batch {batch}")
            for u, v in zip(got, want):
                if v.is_contiguous(memory_format=_format_of(v)):
                    assert u.stride() == v.stride(), (batch, u.stride(), v.stride())


def test_an_output_changed_in_place_after_the_call():
    """The saved copy of an output is the forward's value: a later in-place change of the
    output must fail the backward as eager does when the formula reads it, or give eager's
    gradient when it does not."""
    xs = _inputs([((4, 10), R), ((4, 10), R)], tl.float32)
    c = tl.compile(lambda a, b: (a * b).tanh() + a)
    res = []
    for f in (c, lambda a, b: (a * b).tanh() + a):
        a, b = leaves(xs, (True, True))
        y = f(a, b)
        y.mul_(2.0)          # y's own formula (add) does not read it
        y.sum().backward()
        res.append((a.grad, b.grad))
    for u, v in zip(*res):
        assert_close(u, v, tl.float32)


def test_an_input_changed_in_place_that_only_the_recomputation_would_read():
    """exp's gradient reads its saved result, not its input: changing the input in place
    after the call fails eager's backward in no way, and must not fail the compiled one
    (the kernel used to keep the input for the Python form); create_graph=True, whose
    formulas recompute exp from the input, still reads it."""
    x = _inputs([((4, 10), R)], tl.float32)[0]
    fn = lambda a: (a * 1.0).exp() * 3.0   # noqa: E731
    c = tl.compile(fn)
    res = []
    for f in (c, fn):
        a = x.detach().requires_grad_()
        h = a * 2.0
        y = f(h)
        h.add_(1.0)
        y.sum().backward()
        res.append(a.grad)
    assert_close(res[0], res[1], tl.float32)
    a = x.detach().requires_grad_()
    h = a * 2.0
    (g,) = tl.autograd.grad(c(h).sum(), a, create_graph=True)
    assert_close(g, (x * 2.0).exp() * 6.0, tl.float32)


def test_outputs_of_inputs_not_requiring_grad_do_not_require_grad():
    x, y = _inputs([((4, 10), R), ((4, 10), R)], tl.float32)
    c = tl.compile(lambda a, b: (a.exp() * 2.0, (a.exp() + b).tanh(), tl.where(b > 0, a.sigmoid(), 0.0)))
    e, t, w = c(x, y.detach().requires_grad_())
    assert not e.requires_grad and t.requires_grad and not w.requires_grad
    assert e.grad_fn is None
    with pytest.raises(RuntimeError):
        e.sum().backward()
    c2 = tl.compile(lambda a, b: tl.where(b > 0, a.exp(), a * 2.0))
    assert not c2(x, y.detach().requires_grad_()).requires_grad


# ---- whole models ----------------------------------------------------------------------------
def _train(model, data, steps, compiled, seed):
    m = model.compile() or model if compiled else model
    opt = tl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    tl.manual_seed(seed)
    for x, t in data[:steps]:
        opt.zero_grad()
        out = m(x)
        loss = ((out - t) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def _compare_training(make_model, data, steps=4):
    results = []
    for compiled in (True, False):
        tl.manual_seed(0)
        model = make_model()
        model.train()
        losses = _train(model, data, steps, compiled, seed=11)
        results.append((losses, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}))
    (lc, pc), (le, pe) = results
    np.testing.assert_allclose(lc, le, rtol=1e-4, atol=1e-6)
    for k in pe:
        np.testing.assert_allclose(pc[k], pe[k], rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_transformer_encoder_layer_training(norm_first):
    g = tl.Generator().manual_seed(5)
    data = [(tl.randn(3, 7, 16, generator=g), tl.randn(3, 7, 16, generator=g)) for _ in range(4)]
    _compare_training(lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, activation="gelu",
                                                         batch_first=True, norm_first=norm_first), data)


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.Parameter(tl.randn(8, 1, 1) * 0.1)
        self.c2 = nn.Conv2d(8, 4, 3, padding=1)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        h = self.c1(x)
        h = self.drop(F.gelu(h + self.b1)) + h.sigmoid() * 0.5
        h = self.c2(h)
        return F.silu(h) * h.tanh()


def test_cnn_channels_last_training():
    g = tl.Generator().manual_seed(6)
    data = [(tl.randn(2, 3, 6, 6, generator=g).to(memory_format=tl.channels_last),
             tl.randn(2, 4, 6, 6, generator=g)) for _ in range(4)]

    def make():
        return _CNN().to(memory_format=tl.channels_last)
    _compare_training(make, data)
