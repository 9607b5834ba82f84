"""Autograd of the reductions, scans, softmax and norms (torchlite/_ops/reduction_grad.py):
finite differences (gradcheck / gradgradcheck in float64) on contiguous and non-contiguous
inputs, PyTorch's gradients as a second oracle (ties, zeros and NaN follow PyTorch's rule per
op), grad_fn names, dtype= arguments, 0-d and empty inputs, and the errors autograd raises."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import torchlite as tl
from torchlite.autograd import gradcheck, gradgradcheck
from helpers import grad_leaves, torch_or_skip

_rng = np.random.default_rng(20261121)


def _rand(*shape):
    """Random float64 values, well apart from each other (no ties) and from zero."""
    n = math.prod(shape)
    v = _rng.permutation(n) + 1.0 + _rng.uniform(0.1, 0.4, n)
    return (v * _rng.choice([-1.0, 1.0], n) / n).reshape(shape)


X23, X34, X232 = _rand(2, 3), _rand(3, 4), _rand(2, 3, 2)
POS23 = np.abs(X23) + 0.5
WITH_NAN = np.array([[0.3, np.nan, -1.2], [np.nan, 0.7, 2.1]])
ZEROS = np.array([[0.0, 1.5, -0.7, 2.0], [0.0, 1.3, 0.0, -0.4], [0.9, -1.1, 0.6, 1.7]])
ONE_ZERO = np.array([[0.8, 0.0, -1.4], [1.2, 0.6, -0.9]])
INF = math.inf

# ---- the table: every differentiable op of reduction.py and its gradcheck case ---------------
# name: (fn(L, *inputs) -> output(s), where L is torchlite or torch; input arrays; grad_fn name)
CASES = {
    "sum": (lambda L, x: x.sum(), [X23], "SumBackward0"),
    "sum_dim": (lambda L, x: x.sum(1), [X34], "SumBackward1"),
    "sum_dims_keepdim": (lambda L, x: L.sum(x, (0, -1), keepdim=True), [X232], "SumBackward1"),
    "nansum": (lambda L, x: x.nansum(1), [WITH_NAN], "NansumBackward0"),
    "mean": (lambda L, x: x.mean(), [X23], "MeanBackward0"),
    "mean_dim": (lambda L, x: x.mean(-1, keepdim=True), [X34], "MeanBackward1"),
    "nanmean": (lambda L, x: x.nanmean(0), [WITH_NAN], None),
    "prod": (lambda L, x: x.prod(), [X23], "ProdBackward0"),
    "prod_dim": (lambda L, x: x.prod(1), [X34], "ProdBackward1"),
    "prod_zeros": (lambda L, x: x.prod(1, keepdim=True), [ZEROS], "ProdBackward1"),
    "prod_one_zero": (lambda L, x: x.prod(), [ONE_ZERO], "ProdBackward0"),
    "max": (lambda L, x: x.max(), [X34], "MaxBackward1"),
    "min": (lambda L, x: L.min(x), [X34], "MinBackward1"),
    "max_dim": (lambda L, x: x.max(1)[0], [X34], "MaxBackward0"),
    "min_dim": (lambda L, x: x.min(0, keepdim=True).values, [X34], "MinBackward0"),
    "amax": (lambda L, x: x.amax(1), [X34], "AmaxBackward0"),
    "amin": (lambda L, x: L.amin(x, (0, 2)), [X232], "AminBackward0"),
    "aminmax": (lambda L, x: L.aminmax(x, dim=1), [X34], "AminmaxBackward0"),
    "median": (lambda L, x: x.median(), [X34], "MedianBackward0"),
    "median_dim": (lambda L, x: x.median(1).values, [X34], "MedianBackward1"),
    "nanmedian": (lambda L, x: x.nanmedian(), [WITH_NAN], "NanmedianBackward0"),
    "nanmedian_dim": (lambda L, x: x.nanmedian(0, keepdim=True)[0], [X34], "NanmedianBackward1"),
    "var": (lambda L, x: x.var(), [X34], "VarBackward0"),
    "var_dim_correction": (lambda L, x: x.var(1, correction=0), [X34], "VarBackward0"),
    "std": (lambda L, x: L.std(x, 0, keepdim=True), [X34], "StdBackward0"),
    "var_mean": (lambda L, x: L.var_mean(x, 1), [X34], "VarMeanBackward0"),
    "std_mean": (lambda L, x: L.std_mean(x, (0, 1), correction=2), [X34], "StdMeanBackward0"),
    "logsumexp": (lambda L, x: x.logsumexp(1), [X34], "LogsumexpBackward0"),
    "logsumexp_dims": (lambda L, x: L.logsumexp(x, (0, 2), keepdim=True), [X232],
                       "LogsumexpBackward0"),
    "norm": (lambda L, x: x.norm(), [X34], "LinalgVectorNormBackward0"),
    "norm_p3_dim": (lambda L, x: L.norm(x, 3, 1), [X34], "LinalgVectorNormBackward0"),
    "vector_norm_1": (lambda L, x: L.linalg.vector_norm(x, 1, 0), [X34], None),
    "vector_norm_2": (lambda L, x: L.linalg.vector_norm(x, 2, (0, 1), keepdim=True), [X232],
                      None),
    "vector_norm_1.5": (lambda L, x: L.linalg.vector_norm(x, 1.5, 1), [X34], None),
    "vector_norm_0.5": (lambda L, x: L.linalg.vector_norm(x, 0.5, 1), [X34], None),
    "vector_norm_0": (lambda L, x: L.linalg.vector_norm(x, 0, 1), [X34], None),
    "vector_norm_inf": (lambda L, x: L.linalg.vector_norm(x, INF, 1), [X34], None),
    "vector_norm_-inf": (lambda L, x: L.linalg.vector_norm(x, -INF), [X34], None),
    "matrix_norm_fro": (lambda L, x: L.linalg.matrix_norm(x), [X232], None),
    "matrix_norm_1": (lambda L, x: L.linalg.matrix_norm(x, 1), [X34], "AmaxBackward0"),
    "matrix_norm_-inf": (lambda L, x: L.linalg.matrix_norm(x, -INF, keepdim=True), [X34],
                         "AminBackward0"),
    "linalg_norm": (lambda L, x: L.linalg.norm(x, dim=1), [X34], None),
    "cumsum": (lambda L, x: x.cumsum(1), [X34], "CumsumBackward0"),
    "cumsum_dim0": (lambda L, x: L.cumsum(x, -3), [X232], "CumsumBackward0"),
    "cumprod": (lambda L, x: x.cumprod(1), [X34], "CumprodBackward0"),
    "cumprod_zeros": (lambda L, x: x.cumprod(1), [ZEROS], "CumprodBackward0"),
    "cummax": (lambda L, x: x.cummax(1)[0], [X34], "CummaxBackward0"),
    "cummin": (lambda L, x: L.cummin(x, 0).values, [X34], "CumminBackward0"),
    "logcumsumexp": (lambda L, x: x.logcumsumexp(1), [X34], "LogcumsumexpBackward0"),
    "softmax": (lambda L, x: x.softmax(1), [X34], "SoftmaxBackward0"),
    "softmax_dim0": (lambda L, x: L.softmax(x, 0), [X232], "SoftmaxBackward0"),
    "log_softmax": (lambda L, x: x.log_softmax(-1), [X34], "LogSoftmaxBackward0"),
    "quantile": (lambda L, x: L.quantile(x, 0.3), [X34], None),
    "quantile_dim_q_tensor": (lambda L, x: x.quantile(L.tensor([0.2, 0.9], dtype=x.dtype), 1,
                                                      keepdim=True), [X34], None),
    "quantile_midpoint": (lambda L, x: L.quantile(x, 0.4, 0, interpolation="midpoint"), [X34],
                          None),
    "quantile_nearest": (lambda L, x: L.quantile(x, 0.6, 1, interpolation="nearest"), [X34], None),
    "nanquantile": (lambda L, x: L.nanquantile(x, 0.7, 1), [WITH_NAN], None),
    "cov": (lambda L, x: L.cov(x), [X34], None),
    "cov_weights": (lambda L, x, a: L.cov(x, correction=2, fweights=L.tensor([1, 3, 2, 1]),
                                          aweights=a), [X34, POS23[0].repeat(2)[:4]], None),
    "corrcoef": (lambda L, x: L.corrcoef(x), [X34], "ClampBackward1"),
    "renorm": (lambda L, x: L.renorm(x, 2, 0, 0.5), [X34], None),
    "renorm_p1_dim1": (lambda L, x: x.renorm(1, 1, 0.4), [X34], None),
}

_NAMES = sorted(CASES)


def _float_outputs(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [o for o in outs if o.is_floating_point()]


@pytest.mark.parametrize("layout", [0, 1, 2, 3], ids=["contiguous", "transposed", "stepped",
                                                      "offset"])
@pytest.mark.parametrize("name", _NAMES)
def test_gradcheck(name, layout):
    fn, arrays, _ = CASES[name]
    xs = grad_leaves(arrays, layout)
    assert gradcheck(lambda *a: fn(tl, *a), xs)


@pytest.mark.parametrize("name", _NAMES)
def test_gradgradcheck(name):
    fn, arrays, _ = CASES[name]
    assert gradgradcheck(lambda *a: fn(tl, *a), grad_leaves(arrays, 1))


def _grads(L, fn, arrays, dtype_name, seed):
    """The gradients of fn's float outputs w.r.t. its inputs, for fixed random output
    gradients, in library L."""
    dt = getattr(L, dtype_name)
    xs = [L.tensor(a, dtype=dt).requires_grad_() for a in arrays]
    outs = _float_outputs(fn(L, *xs))
    rng = np.random.default_rng(seed)
    gs = [L.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
    loss = sum((o * g).sum() for o, g in zip(outs, gs))      # one root for all the outputs
    got = L.autograd.grad(loss, xs, allow_unused=True)
    return [np.zeros(a.shape) if g is None else np.asarray(g.detach().double()) for g, a in
            zip(got, arrays)], [g.dtype if g is not None else None for g in got]


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("name", _NAMES)
def test_matches_torch(name, dtype_name):
    torch = torch_or_skip()
    fn, arrays, _ = CASES[name]
    ours, our_dtypes = _grads(tl, fn, arrays, dtype_name, 7)
    theirs, _ = _grads(torch, fn, arrays, dtype_name, 7)
    tol = 1e-12 if dtype_name == "float64" else 2e-5
    for a, b, dt in zip(ours, theirs, our_dtypes):
        assert dt is None or dt.name == dtype_name
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [n for n in _NAMES if CASES[n][2]])
def test_grad_fn_names(name):
    fn, arrays, expected = CASES[name]
    out = _float_outputs(fn(tl, *grad_leaves(arrays, 0)))[0]
    assert type(out.grad_fn).__name__ == expected
    assert repr(out.grad_fn).startswith(f"<{expected} object at 0x")


def test_broadcast_elementwise_second_order_through_sum():
    # sum_to (graph.py) undoes broadcasting with sum: second derivatives of broadcast
    # elementwise ops go through SumBackward
    a = tl.tensor(_rand(3), dtype=tl.float64).requires_grad_()
    b = tl.tensor(_rand(2, 1), dtype=tl.float64).requires_grad_()
    assert gradgradcheck(lambda a, b: a * b.sigmoid() + a.atan2(b), (a, b))


def test_expanded_and_permuted_inputs():
    base = tl.tensor(_rand(3, 1), dtype=tl.float64).requires_grad_()
    for f in (lambda x: x.expand(3, 4).prod(1), lambda x: x.expand(3, 4).t().softmax(0),
              lambda x: x.expand(3, 4).t().logsumexp(1), lambda x: x.expand(2, 3, 4).amax((0, 2)),
              lambda x: x.expand(3, 4).t().cumprod(0), lambda x: x.expand(3, 4).var(1)):
        assert gradcheck(f, (base,))
        assert gradgradcheck(f, (base,))


# ---- PyTorch's rules at ties, zeros and NaN --------------------------------------------------
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
NAN_TIES = np.array([1.0, np.nan, np.nan])
SPECIAL = [
    ("amax_ties", lambda L, x: x.amax(1), TIES),
    ("amin_ties_all", lambda L, x: x.amin(), TIES),
    ("max_ties", lambda L, x: x.max(), TIES),
    ("min_ties_all", lambda L, x: L.min(x), np.array([[0.0, 1.0], [0.0, 0.0]])),
    ("aminmax_ties", lambda L, x: L.aminmax(x, dim=1)[1], TIES),
    ("median_ties", lambda L, x: x.median(), TIES),
    ("vector_norm_inf_ties", lambda L, x: L.linalg.vector_norm(x, INF, 1), TIES - 1.0),
    ("max_nan", lambda L, x: x.max(), NAN_TIES),
    ("median_nan", lambda L, x: x.median(), NAN_TIES),
    ("nanmedian_nan", lambda L, x: x.nanmedian(), NAN_TIES),
    ("amax_nan", lambda L, x: x.amax(), NAN_TIES),
    ("nansum_nan", lambda L, x: x.nansum(), NAN_TIES),
    ("nanmean_all_nan", lambda L, x: x.nanmean(1), np.array([[np.nan, np.nan], [1.0, np.nan]])),
    ("cummax_ties", lambda L, x: x.cummax(1).values, TIES),
    ("cummin_ties", lambda L, x: x.cummin(1).values, TIES),
    ("prod_two_zeros", lambda L, x: x.prod(), ZEROS),
    ("prod_zeros_dim0", lambda L, x: x.prod(0), ZEROS),
    ("cumprod_zeros_dim0", lambda L, x: x.cumprod(0), ZEROS.T),
    ("norm2_at_zero", lambda L, x: L.linalg.vector_norm(x, 2, 1),
     np.array([[0.0, 0.0], [3.0, 4.0]])),
    ("norm1_at_zero", lambda L, x: L.linalg.vector_norm(x, 1, 1),
     np.array([[0.0, 0.0], [3.0, 0.0]])),
    ("norm3_at_zero", lambda L, x: L.linalg.vector_norm(x, 3), np.zeros((2, 2))),
    ("norm05_at_zero", lambda L, x: L.linalg.vector_norm(x, 0.5, 1),
     np.array([[0.0, 1.0], [0.0, 0.0]])),
    ("std_constant", lambda L, x: x.std(1), np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])),
    ("logsumexp_-inf", lambda L, x: x.logsumexp(1), np.array([[-INF, 0.0], [1.0, 2.0]])),
    ("softmax_-inf", lambda L, x: x.softmax(1), np.array([[-INF, 0.0], [1.0, 2.0]])),
    ("logcumsumexp_big", lambda L, x: x.logcumsumexp(0), np.array([800.0, -700.0, 799.0, 5.0])),
]


@pytest.mark.parametrize("name,fn,a", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_points_match_torch(name, fn, a):
    torch = torch_or_skip()
    ours, _ = _grads(tl, fn, [a], "float64", 3)
    theirs, _ = _grads(torch, fn, [a], "float64", 3)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-12, equal_nan=True)


def test_ties_rules_by_value():
    # values from PyTorch's documented rules (evenly over ties; to the index with a dim)
    x = tl.tensor(TIES, requires_grad=True)
    x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0.5, 0]])
    x.grad = None
    x.max(1).values.sum().backward()
    idx = x.max(1).indices.numpy()
    expect = np.zeros((2, 3))
    expect[np.arange(2), idx] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_prod_and_cumprod_zeros_second_order():
    # second derivatives with zeros need the division-free formulas
    for a in (ZEROS, ONE_ZERO, np.zeros((2, 3))):
        x = tl.tensor(a, dtype=tl.float64).requires_grad_()
        assert gradgradcheck(lambda x: x.prod(), (x,))
        assert gradgradcheck(lambda x: x.prod(0), (x,))
        assert gradgradcheck(lambda x: x.cumprod(1), (x,))


# ---- dtypes, 0-d and empty inputs ------------------------------------------------------------
def test_dtype_argument_casts_gradient_back():
    x = tl.tensor(X34, dtype=tl.float32).requires_grad_()
    for f in (lambda x: x.sum(1, dtype=tl.float64), lambda x: x.mean(dtype=tl.float64),
              lambda x: x.prod(0, dtype=tl.float64), lambda x: x.cumsum(1, dtype=tl.float64),
              lambda x: x.softmax(1, dtype=tl.float64), lambda x: x.log_softmax(0, tl.float64),
              lambda x: tl.linalg.vector_norm(x, 3, dtype=tl.float64)):
        out = f(x)
        assert out.dtype is tl.float64
        (g,) = tl.autograd.grad(out.sum(), x)
        assert g.dtype is tl.float32 and tuple(g.shape) == (3, 4)
        xd = tl.tensor(X34, dtype=tl.float64).requires_grad_()
        (gd,) = tl.autograd.grad(f(xd).sum(), xd)
        np.testing.assert_allclose(g.numpy(), gd.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dt", [tl.float16, tl.bfloat16])
def test_half_precision_gradients(dt):
    x = tl.tensor(X34, dtype=dt).requires_grad_()
    for f in (lambda x: x.sum(1), lambda x: x.mean(), lambda x: x.softmax(1), lambda x: x.amax(0),
              lambda x: x.cumsum(0), lambda x: x.norm()):
        (g,) = tl.autograd.grad(f(x).sum(), x)
        assert g.dtype is dt
        xd = x.detach().double().requires_grad_()
        (gd,) = tl.autograd.grad(f(xd).sum(), xd)
        np.testing.assert_allclose(g.double().numpy(), gd.numpy(), rtol=3e-2, atol=3e-2)


def test_zero_dim_inputs():
    x = tl.tensor(1.7, dtype=tl.float64, requires_grad=True)
    for f in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.mean(), lambda x: x.prod(),
              lambda x: x.prod(0), lambda x: x.amax(), lambda x: x.max(), lambda x: x.max(0)[0],
              lambda x: x.median(0)[0], lambda x: x.cumsum(0), lambda x: x.cumprod(0),
              lambda x: x.cummax(0)[0], lambda x: x.logcumsumexp(0), lambda x: x.softmax(0),
              lambda x: x.log_softmax(0), lambda x: x.logsumexp(0), lambda x: x.norm(),
              lambda x: x.var(correction=0)):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_empty_inputs():
    x = tl.zeros(0, 3, dtype=tl.float64, requires_grad=True)
    for f in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.mean(1), lambda x: x.prod(0),
              lambda x: x.cumsum(0), lambda x: x.cumprod(1), lambda x: x.softmax(1),
              lambda x: x.logsumexp(0), lambda x: x.norm(dim=1)):
        (g,) = tl.autograd.grad(f(x).sum(), x)
        assert tuple(g.shape) == (0, 3)
    (g,) = tl.autograd.grad(x.sum(0), x, tl.ones(3, dtype=tl.float64))
    assert tuple(g.shape) == (0, 3)


def test_size_one_dims():
    x = tl.tensor(_rand(1, 3, 1), dtype=tl.float64).requires_grad_()
    for f in (lambda x: x.sum((0, 2)), lambda x: x.prod(2), lambda x: x.max(0)[0],
              lambda x: x.softmax(2), lambda x: x.cumprod(0), lambda x: x.var(1),
              lambda x: x.std(0, correction=0)):
        assert gradcheck(f, (x,))


# ---- threads and hypothesis ------------------------------------------------------------------
def test_large_gradients_against_numpy(threads):
    a = _rng.standard_normal((67, 301))
    x = tl.tensor(a, dtype=tl.float64).requires_grad_()
    g = _rng.standard_normal((67, 301))
    y = x.softmax(1)
    (gx,) = tl.autograd.grad(y, x, tl.tensor(g))
    s = np.exp(a - a.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    np.testing.assert_allclose(gx.numpy(), s * (g - (g * s).sum(1, keepdims=True)), rtol=1e-10,
                               atol=1e-12)
    (gx,) = tl.autograd.grad(x.cumsum(1), x, tl.tensor(g))
    np.testing.assert_allclose(gx.numpy(), np.flip(np.flip(g, 1).cumsum(1), 1), rtol=1e-10)
    (gx,) = tl.autograd.grad(x.var(0), x, tl.tensor(g[0]))
    np.testing.assert_allclose(gx.numpy(), 2 * g[0] * (a - a.mean(0)) / 66, rtol=1e-10)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_hypothesis_sum_mean_amax_dims(shape, data):
    a = _rng.standard_normal(shape)
    nd = len(shape)
    dims = tuple(data.draw(st.sets(st.integers(-nd, nd - 1).map(lambda d: d % nd),
                                   min_size=1, max_size=nd)))
    keepdim = data.draw(st.booleans())
    layout = data.draw(st.integers(0, 3))
    (x,) = grad_leaves([a], layout)
    n = math.prod(shape[d] for d in dims)
    for op, expect in (("sum", lambda g: g), ("mean", lambda g: g / n)):
        out = getattr(x, op)(dims, keepdim=keepdim)
        g = _rng.standard_normal(tuple(out.shape))
        (gx,) = tl.autograd.grad(out, x, tl.tensor(g))
        gk = g if keepdim else np.expand_dims(g, tuple(sorted(dims)))
        np.testing.assert_allclose(gx.numpy(), np.broadcast_to(expect(gk), a.shape), rtol=1e-12)
    out = x.amax(dims, keepdim=keepdim)
    g = _rng.standard_normal(tuple(out.shape))
    (gx,) = tl.autograd.grad(out, x, tl.tensor(g))
    gk = g if keepdim else np.expand_dims(g, tuple(sorted(dims)))
    mask = a == a.max(axis=dims, keepdims=True)
    np.testing.assert_allclose(gx.numpy(), mask * gk / mask.sum(axis=dims, keepdims=True),
                               rtol=1e-12)


# ---- what is not differentiable, and the errors ----------------------------------------------
def test_integer_outputs_do_not_require_grad():
    x = tl.tensor(X34, requires_grad=True)
    for out in (x.argmax(), x.argmin(1), x.any(), x.all(1), x.count_nonzero(), x.max(1).indices,
                x.cummax(0).indices, x.median(1).indices, (x > 0).sum()):
        assert not out.requires_grad and out.grad_fn is None


def test_no_grad_records_nothing():
    x = tl.tensor(X34, requires_grad=True)
    with tl.no_grad():
        for out in (x.sum(), x.mean(1), x.prod(), x.amax(0), x.softmax(1), x.cumsum(0),
                    x.max(1).values, x.var(), x.norm()):
            assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("call", [
    lambda x: tl.sum(x, out=tl.empty(())),
    lambda x: tl.mean(x, 1, out=tl.empty(3)),
    lambda x: tl.amax(x, 0, out=tl.empty(4)),
    lambda x: tl.max(x, 1, out=(tl.empty(3), tl.empty(3, dtype=tl.int64))),
    lambda x: tl.cumsum(x, 0, out=tl.empty(3, 4)),
    lambda x: tl.logsumexp(x, 1, out=tl.empty(3)),
    lambda x: tl.linalg.vector_norm(x, out=tl.empty(())),
    lambda x: tl.var(x, out=tl.empty(())),
])
def test_out_with_grad_raises(call):
    x = tl.tensor(X34, dtype=tl.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic "
                                           "differentiation"):
        call(x)
    with tl.no_grad():
        call(x)                                 # without recording, out= is fine


def test_inplace_scans():
    x = tl.tensor(X34, dtype=tl.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.cumsum_(0)
    y = x * 1.0
    y.cumprod_(1)
    assert type(y.grad_fn).__name__ == "CumprodBackward0"
    (g,) = tl.autograd.grad(y.sum(), x)
    (ref,) = tl.autograd.grad(x.cumprod(1).sum(), x)
    np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-12)


def test_modified_saved_input_raises():
    x = tl.tensor(X34, dtype=tl.float64, requires_grad=True)
    y = x * 1.0
    p = y.prod(1)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        p.sum().backward()


def test_modified_saved_output_raises():
    x = tl.tensor(X34, dtype=tl.float64, requires_grad=True)
    s = x.softmax(1)
    s.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()
