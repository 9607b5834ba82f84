"""torchlite.nn.functional's activations and the activation Modules.

CASES lists every activation of nn/functional/activation.py once with its gradcheck case (run in
float64 on contiguous, transposed, strided and expanded inputs, gradgradcheck where twice
differentiable, values and gradients compared with PyTorch's).  NP_REFS gives every activation a
NumPy reference for its forward values; the other tests cover the in-place forms, dtypes, the
non-differentiable points, errors and the Modules."""
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.nn.functional import activation as _activation
from torchlite.autograd import gradcheck, gradgradcheck
from helpers import (Case, case_table_tests, check_against_torch, layout_params, missing_ops,
                     assert_values, make_noncontig)


def _f(L):
    return L.nn.functional


# ---- the gradient table ------------------------------------------------------------------------
CASES = [
    Case("relu", lambda L, x: _f(L).relu(x), (2, 3)),
    Case("relu_", lambda L, x: _f(L).relu_(x * 1), (2, 3)),
    Case("relu6", lambda L, x: _f(L).relu6(x * 4), (2, 3)),
    Case("hardtanh", lambda L, x: _f(L).hardtanh(x, -0.5, 0.8), (2, 3)),
    Case("hardtanh_", lambda L, x: _f(L).hardtanh_(x * 1), (2, 3)),
    Case("leaky_relu", lambda L, x: _f(L).leaky_relu(x, 0.2), (2, 3)),
    Case("leaky_relu_", lambda L, x: _f(L).leaky_relu_(x * 1, 0.3), (2, 3)),
    Case("prelu", lambda L, x, w: _f(L).prelu(x, w), (2, 3, 2), (3,), layouts=("contig", "t", "step")),
    Case("rrelu", lambda L, x: _f(L).rrelu(x, 0.1, 0.3), (2, 3)),
    Case("rrelu_", lambda L, x: _f(L).rrelu_(x * 1, 0.1, 0.3), (2, 3)),
    Case("elu", lambda L, x: _f(L).elu(x, 0.7), (2, 3)),
    Case("elu_", lambda L, x: _f(L).elu_(x * 1, 1.3), (2, 3)),
    Case("selu", lambda L, x: _f(L).selu(x), (2, 3)),
    Case("selu_", lambda L, x: _f(L).selu_(x * 1), (2, 3)),
    Case("celu", lambda L, x: _f(L).celu(x, 1.5), (2, 3)),
    Case("celu_", lambda L, x: _f(L).celu_(x * 1, 0.5), (2, 3)),
    Case("gelu", lambda L, x: _f(L).gelu(x), (2, 3)),
    Case("gelu_tanh", lambda L, x: _f(L).gelu(x, approximate="tanh"), (2, 3)),
    Case("silu", lambda L, x: _f(L).silu(x), (2, 3)),
    Case("mish", lambda L, x: _f(L).mish(x), (2, 3)),
    Case("softplus", lambda L, x: _f(L).softplus(x * 3, 2.0, 4.0), (2, 3)),
    Case("softsign", lambda L, x: _f(L).softsign(x), (2, 3)),
    Case("hardsigmoid", lambda L, x: _f(L).hardsigmoid(x * 4), (2, 3)),
    Case("hardswish", lambda L, x: _f(L).hardswish(x * 4), (2, 3)),
    Case("sigmoid", lambda L, x: _f(L).sigmoid(x), (2, 3)),
    Case("tanh", lambda L, x: _f(L).tanh(x), (2, 3)),
    Case("softmax", lambda L, x: _f(L).softmax(x, 1), (2, 3)),
    Case("log_softmax", lambda L, x: _f(L).log_softmax(x, 0), (2, 3)),
    Case("softmin", lambda L, x: _f(L).softmin(x, -1), (2, 3)),
    Case("glu", lambda L, x: _f(L).glu(x, 1), (2, 4)),
    Case("logsigmoid", lambda L, x: _f(L).logsigmoid(x * 10), (2, 3)),
    Case("threshold", lambda L, x: _f(L).threshold(x, 0.1, -2.0), (2, 3)),
    Case("threshold_", lambda L, x: _f(L).threshold_(x * 1, 0.1, -2.0), (2, 3)),
    Case("tanhshrink", lambda L, x: _f(L).tanhshrink(x), (2, 3)),
    Case("softshrink", lambda L, x: _f(L).softshrink(x, 0.3), (2, 3)),
    Case("hardshrink", lambda L, x: _f(L).hardshrink(x, 0.3), (2, 3)),
]

test_gradcheck, test_gradgradcheck, _ = case_table_tests(CASES)
# PyTorch's float64 hardsigmoid gradient uses 1/6 rounded to float32 (2e-8 off): compared below
_EXACT = [c for c in CASES if c.name != "hardsigmoid"]


@pytest.mark.parametrize("case,layout", layout_params(_EXACT))
def test_matches_torch(case, layout):
    check_against_torch(case, layout)


def test_hardsigmoid_matches_torch_to_float32_rounding():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((2, 3))
    grads = []
    for L in (tl, torch):
        x = L.tensor(a, requires_grad=True)
        y = L.nn.functional.hardsigmoid(x * 4)
        grads.append((y.detach().numpy(), L.autograd.grad(y.sum(), x)[0].numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-7)


# random, so tested on its own below (test_gumbel_softmax)
_RANDOM = ["gumbel_softmax"]


def test_every_activation_has_a_case():
    assert missing_ops(CASES, _activation.__all__) == _RANDOM


# ---- forward values against NumPy --------------------------------------------------------------
def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


_ERF = np.vectorize(math.erf)
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

NP_REFS = {
    "relu": (lambda x: F.relu(x), lambda x: np.maximum(x, 0)),
    "relu_": (lambda x: F.relu_(x.clone()), lambda x: np.maximum(x, 0)),
    "relu6": (lambda x: F.relu6(x * 4), lambda x: np.clip(x * 4, 0, 6)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.8), lambda x: np.clip(x, -0.5, 0.8)),
    "hardtanh_": (lambda x: F.hardtanh_(x.clone()), lambda x: np.clip(x, -1, 1)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "leaky_relu_": (lambda x: F.leaky_relu_(x.clone()), lambda x: np.where(x > 0, x, 0.01 * x)),
    "prelu": (lambda x: F.prelu(x.reshape(3, 3, 2), tl.tensor([0.1, 0.2, 0.3], dtype=x.dtype)),
              lambda x: np.where(x > 0, x, x * np.repeat([0.1, 0.2, 0.3], 2)).reshape(3, 3, 2)),
    "rrelu": (lambda x: F.rrelu(x, 0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "rrelu_": (lambda x: F.rrelu_(x.clone(), 0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "elu_": (lambda x: F.elu_(x.clone()), lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (lambda x: F.selu(x), lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "selu_": (lambda x: F.selu_(x.clone()),
              lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 1.5),
             lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5))),
    "celu_": (lambda x: F.celu_(x.clone(), 0.5),
              lambda x: np.maximum(x, 0) + np.minimum(0, 0.5 * np.expm1(x / 0.5))),
    "gelu": (lambda x: F.gelu(x), lambda x: x * 0.5 * (1 + _ERF(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    "silu": (lambda x: F.silu(x), lambda x: x * _np_sigmoid(x)),
    "mish": (lambda x: F.mish(x), lambda x: x * np.tanh(_np_softplus(x))),
    "softplus": (lambda x: F.softplus(x * 3, 2.0, 4.0), lambda x: _np_softplus(x * 3, 2.0, 4.0)),
    "softsign": (lambda x: F.softsign(x), lambda x: x / (1 + np.abs(x))),
    "hardsigmoid": (lambda x: F.hardsigmoid(x * 4), lambda x: np.clip(x * 4 + 3, 0, 6) / 6),
    "hardswish": (lambda x: F.hardswish(x * 4), lambda x: x * 4 * np.clip(x * 4 + 3, 0, 6) / 6),
    "sigmoid": (lambda x: F.sigmoid(x), _np_sigmoid),
    "tanh": (lambda x: F.tanh(x), np.tanh),
    "softmax": (lambda x: F.softmax(x, 1), lambda x: _np_softmax(x, 1)),
    "log_softmax": (lambda x: F.log_softmax(x, 0), lambda x: np.log(_np_softmax(x, 0))),
    "softmin": (lambda x: F.softmin(x, -1), lambda x: _np_softmax(-x, -1)),
    "glu": (lambda x: F.glu(x, 1), lambda x: x[:, :3] * _np_sigmoid(x[:, 3:])),
    "logsigmoid": (lambda x: F.logsigmoid(x * 30), lambda x: -np.logaddexp(0, -x * 30)),
    "threshold": (lambda x: F.threshold(x, 0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0)),
    "threshold_": (lambda x: F.threshold_(x.clone(), 0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0)),
    "tanhshrink": (lambda x: F.tanhshrink(x), lambda x: x - np.tanh(x)),
    "softshrink": (lambda x: F.softshrink(x, 0.3),
                   lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0))),
    "hardshrink": (lambda x: F.hardshrink(x, 0.3), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
}


def test_every_activation_has_a_numpy_reference():
    assert [n for n in _activation.__all__ if n not in NP_REFS] == _RANDOM


def _special_values():
    """A (3, 6) grid with the kinks and bounds of the activations above, and random values."""
    a = np.random.default_rng(3).standard_normal((3, 6)) * 3
    a[0] = [0.0, 1.0, -1.0, 0.75, -0.75, 0.3]
    a[1, :3] = [-0.5, 0.8, 0.1]
    return a


@pytest.mark.parametrize("name", sorted(NP_REFS))
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_forward_matches_numpy(name, dtype):
    fn, ref = NP_REFS[name]
    a = _special_values()
    tol = 2e-6 if dtype is tl.float32 else 1e-12
    for label, x in make_noncontig(a, dtype):
        # the reference computes in the input's dtype: a parameter is compared in that dtype
        # (PyTorch casts it), so x == float32(0.3) is inside hardshrink's [-0.3, 0.3]
        a_held = x.numpy()
        assert_values(fn(x), ref(a_held), rtol=tol, atol=tol, msg=f"{name} {label}")


@pytest.mark.parametrize("name", ["relu", "hardtanh", "leaky_relu", "elu", "gelu", "silu",
                                  "softplus", "hardswish", "logsigmoid", "softshrink", "mish"])
@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_reduced_precision_follows_float32(name, dtype):
    fn, _ = NP_REFS[name]
    x = tl.tensor(_special_values()).to(dtype)
    out = fn(x)
    assert out.dtype is dtype
    ref = fn(x.float())
    tol = 1e-2 if dtype is tl.float16 else 6e-2
    assert_values(out.float(), ref.numpy(), rtol=tol, atol=tol)


def test_zero_dim_and_empty_inputs():
    for name, (fn, ref) in NP_REFS.items():
        if name in ("glu", "prelu", "softmax", "log_softmax", "softmin"):
            continue
        assert fn(tl.tensor(-0.5, dtype=tl.float64)).shape == ()
        assert fn(tl.empty(0, 3)).shape == (0, 3), name
    assert F.softmax(tl.empty(0, 3), 1).shape == (0, 3)


# ---- the non-differentiable points follow PyTorch ------------------------------------------------
KINK_CASES = [
    ("relu", lambda F, x: F.relu(x)),
    ("relu6", lambda F, x: F.relu6(x * 6)),
    ("hardtanh", lambda F, x: F.hardtanh(x)),
    ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.1)),
    ("elu", lambda F, x: F.elu(x)),
    ("celu", lambda F, x: F.celu(x, 2.0)),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x * 3)),
    ("hardswish", lambda F, x: F.hardswish(x * 3)),
    ("threshold", lambda F, x: F.threshold(x, 1.0, 0.0)),
    ("softshrink", lambda F, x: F.softshrink(x, 1.0)),
    ("hardshrink", lambda F, x: F.hardshrink(x, 1.0)),
    ("prelu", lambda F, x: F.prelu(x, x.new_tensor([0.25]))),
    ("rrelu_eval", lambda F, x: F.rrelu(x)),
]


@pytest.mark.parametrize("name,fn", KINK_CASES, ids=[c[0] for c in KINK_CASES])
def test_gradients_at_kinks_match_torch(name, fn):
    torch = pytest.importorskip("torch")
    pts = [-1.0, 0.0, 1.0, -0.0, 2.0]
    grads = []
    for L in (tl, torch):
        x = L.tensor(pts, dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(fn(L.nn.functional, x).sum(), x, create_graph=True)
        gg = None
        if g.requires_grad and not (L is torch and name == "hardsigmoid"):   # no double
            gg = L.autograd.grad(g.sum(), x, allow_unused=True)[0]          # backward there
        grads.append((g.detach().numpy(), None if gg is None else gg.numpy()))
    # (rtol: PyTorch's float64 hardsigmoid slope is 1/6 rounded to float32)
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-7, atol=0)
    for got, ref in [(grads[0][1], grads[1][1])]:
        got = np.zeros(len(pts)) if got is None else got
        ref = np.zeros(len(pts)) if ref is None else ref
        np.testing.assert_allclose(got, ref, atol=1e-12)


def test_grad_fn_names_match_torch():
    torch = pytest.importorskip("torch")
    for case in CASES:
        names = []
        for L in (tl, torch):
            shapes = case.shapes
            xs = [L.ones(*s, dtype=L.float64, requires_grad=True) * 1 for s in shapes]
            names.append(type(case.fn(L, *xs).grad_fn).__name__)
        if case.name != "glu":                  # composed here (MulBackward0), fused in PyTorch
            assert names[0] == names[1], case.name


def test_second_derivative_through_saturated_elu_is_finite():
    x = tl.tensor([-800.0, -1.0, 800.0], dtype=tl.float64, requires_grad=True)
    g, = tl.autograd.grad(F.elu(x).sum(), x, create_graph=True)
    gg, = tl.autograd.grad(g.sum(), x)
    assert np.isfinite(gg.numpy()).all()


# ---- in-place forms ------------------------------------------------------------------------------
INPLACE = [("relu", {}), ("relu6", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
           ("selu", {}), ("celu", {}), ("silu", {}), ("mish", {}), ("hardtanh", {}),
           ("hardsigmoid", {}), ("hardswish", {}), ("rrelu", {})]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_flag_writes_input_and_keeps_gradient(name, kw):
    fn = getattr(F, name)
    a = _special_values()
    x = tl.tensor(a)
    ref = fn(x, **kw)
    y = x.clone()
    v = y._version
    out = fn(y, inplace=True, **kw)
    assert out is y and y._version > v
    assert_values(y, ref.numpy(), rtol=0, atol=0)
    leaf = tl.tensor(a, dtype=tl.float64, requires_grad=True)
    g_ref, = tl.autograd.grad(fn(leaf, **kw).sum(), leaf)
    g_in, = tl.autograd.grad(fn(leaf * 1, inplace=True, **kw).sum(), leaf)
    assert_values(g_in, g_ref.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(leaf, inplace=True, **kw)


def test_threshold_inplace_function():
    x = tl.tensor([0.0, 0.5, 2.0])
    assert F.threshold_(x, 0.6, 9.0) is x
    assert x.tolist() == [9.0, 9.0, 2.0]


def test_inplace_through_a_view_updates_base_gradient():
    torch = pytest.importorskip("torch")
    res = []
    for L in (tl, torch):
        w = L.tensor([[-1.0, 2.0], [3.0, -4.0]], dtype=L.float64, requires_grad=True)
        base = w * 1
        L.nn.functional.elu_(base[0])
        g, = L.autograd.grad((base * base).sum(), w)
        res.append(g.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


# ---- dtypes and argument checks --------------------------------------------------------------------
def test_integer_inputs():
    xi = tl.tensor([[-2, 1], [3, 0]])
    assert F.relu(xi).tolist() == [[0, 1], [3, 0]]
    assert F.relu6(xi * 3).dtype is tl.int64
    assert F.hardtanh(xi).tolist() == [[-1, 1], [1, 0]]
    assert F.threshold(xi, 0, 5).tolist() == [[5, 1], [3, 5]]
    for name, kernel in [("elu", "elu_cpu"), ("gelu", "GeluKernelImpl"), ("silu", "silu_cpu"),
                         ("leaky_relu", "leaky_relu_cpu"), ("softplus", "softplus_cpu"),
                         ("logsigmoid", "log_sigmoid_cpu"), ("hardswish", "hardswish_cpu")]:
        with pytest.raises(NotImplementedError, match=kernel):
            getattr(F, name)(xi)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.hardtanh(tl.ones(2), 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda: F.celu(tl.ones(2), 0.0), RuntimeError, "alpha cannot be 0 for CELU"),
    (lambda: F.gelu(tl.ones(2), approximate="fast"), RuntimeError, "either none or tanh"),
    (lambda: F.softshrink(tl.ones(2), -1.0), RuntimeError, "lambda must be in range"),
    (lambda: F.glu(tl.ones(3, 5)), RuntimeError, "dimension 1 is size 5"),
    (lambda: F.glu(tl.tensor(1.0)), RuntimeError, "glu does not support scalars"),
    (lambda: F.glu(tl.ones(2, 4), 2), IndexError, "Dimension out of range"),
    (lambda: F.prelu(tl.ones(2, 4, 3), tl.ones(3)), RuntimeError, "Found parameter numbers = 3 and channel size = 4"),
    (lambda: F.prelu(tl.ones(2, 4), tl.ones(2, 2)), RuntimeError, "scalar or 1D tensor"),
    (lambda: F.prelu(tl.ones(2, 4).double(), tl.ones(1)), RuntimeError, "Type promoting not supported"),
    (lambda: F.rrelu(tl.ones(2), 0.5, 0.1, True), RuntimeError, "Lower bound should be less"),
    (lambda: F.relu([1.0]), TypeError, "must be Tensor"),
    (lambda: F.softmax(tl.ones(2, 3), 2), IndexError, "Dimension out of range"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
@pytest.mark.parametrize("shape,dim", [((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 2), 1)])
def test_implicit_softmax_dim_warns_and_follows_legacy_rule(fn, shape, dim):
    x = tl.randn(*shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        out = fn(x)
    assert_values(out, fn(x, dim).numpy(), rtol=0, atol=0)


def test_softmax_dtype_argument():
    x = tl.randn(2, 3)
    for fn in (F.softmax, F.log_softmax, F.softmin):
        out = fn(x, 1, dtype=tl.float64)
        assert out.dtype is tl.float64
        assert_values(out, fn(x.double(), 1).numpy(), rtol=1e-12)


def test_rrelu_training_draws_slopes_in_range_reproducibly():
    x = -tl.rand(1000) - 0.1
    tl.manual_seed(5)
    y1 = F.rrelu(x, 0.1, 0.3, training=True)
    tl.manual_seed(5)
    y2 = F.rrelu(x, 0.1, 0.3, training=True)
    assert tl.equal(y1, y2)
    slopes = (y1 / x).numpy()
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6 and slopes.std() > 0.03
    pos = tl.rand(10)
    assert tl.equal(F.rrelu(pos, training=True), pos)
    leaf = x.double().requires_grad_()
    tl.manual_seed(7)
    y = F.rrelu(leaf, 0.1, 0.3, training=True)
    g, = tl.autograd.grad(y.sum(), leaf)
    assert_values(g, (y / leaf).detach().numpy(), rtol=1e-12)


def test_prelu_weight_gradient_sums_over_batch_and_space():
    x = tl.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)), requires_grad=True)
    w = tl.tensor([0.1, 0.4], dtype=tl.float64, requires_grad=True)
    assert gradcheck(lambda x, w: F.prelu(x, w), (x, w))
    w1 = tl.tensor([0.3], dtype=tl.float64, requires_grad=True)
    assert gradcheck(lambda x, w: F.prelu(x, w), (x, w1))
    assert gradgradcheck(lambda x, w: F.prelu(x, w), (x, w1))


# ---- modules ---------------------------------------------------------------------------------------
MODULES = ["ReLU()", "ReLU(inplace=True)", "ReLU6(True)", "LeakyReLU()", "LeakyReLU(0.2, True)",
           "PReLU()", "PReLU(4, 0.1)", "RReLU()", "RReLU(0.1, 0.3, True)", "ELU()",
           "ELU(0.5, True)", "SELU()", "SELU(True)", "CELU(2.0)", "GELU()", "GELU('tanh')",
           "SiLU()", "Mish(True)", "Softplus()", "Softplus(2, 10)", "Softsign()", "Hardtanh()",
           "Hardtanh(-2, 3, True)", "Hardsigmoid(True)", "Hardswish()", "Sigmoid()", "Tanh()",
           "Softmax()", "Softmax(1)", "Softmax2d()", "LogSoftmax(dim=1)", "Softmin(0)", "GLU()",
           "GLU(1)", "LogSigmoid()", "Threshold(0.1, 20)", "Threshold(0.1, 20, True)",
           "Tanhshrink()", "Softshrink()", "Hardshrink(0.3)"]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_and_forward_match_torch(spec):
    torch = pytest.importorskip("torch")
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    ours.eval()
    theirs.eval()
    a = np.random.default_rng(1).standard_normal((2, 4, 2, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ours(tl.tensor(a))
        ref = theirs(torch.tensor(a))
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=2e-6, atol=1e-6)


def test_prelu_module_parameters_and_training():
    m = nn.PReLU(3, init=0.1)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert m.weight.tolist() == pytest.approx([0.1] * 3)
    x = tl.randn(4, 3, 2)
    m(x).sum().backward()
    expected = tl.where(x > 0, 0.0, x).sum((0, 2))
    assert_values(m.weight.grad, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_rrelu_module_follows_training_mode():
    m = nn.RReLU(0.1, 0.3)
    x = -tl.ones(100)
    m.eval()
    assert_values(m(x), np.full(100, -0.2), rtol=1e-6)
    m.train()
    assert m(x).std().item() > 0.01


def test_softmax2d_checks_dims():
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(tl.ones(2, 3))


def test_hypothesis_activations_over_shapes_and_layouts():
    """Every activation over random shapes and permuted, stepped layouts against NumPy."""
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings, HealthCheck

    @st.composite
    def cases(draw):
        nd = draw(st.integers(1, 4))
        shape = draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd))
        steps = draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd))
        perm = draw(st.permutations(list(range(nd))))
        name = draw(st.sampled_from(sorted(n for n in NP_REFS if n not in ("glu", "prelu"))))
        return shape, steps, perm, name, draw(st.integers(0, 2 ** 16))

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        shape, steps, perm, name, seed = case
        rng = np.random.default_rng(seed)
        buf = rng.standard_normal([shape[p] * steps[p] for p in perm]) * 3
        x = tl.tensor(buf)[tuple(slice(None, None, steps[p]) for p in perm)].permute(
            *np.argsort(perm))
        fn, ref = NP_REFS[name]
        if name in ("softmax", "log_softmax") and len(shape) < 2:
            return
        assert_values(fn(x), ref(x.numpy()), rtol=1e-12, atol=1e-12, msg=name)

    run()


def test_gumbel_softmax():
    logits = tl.tensor([[2.0, 0.0, -1.0]] * 4000)
    tl.manual_seed(0)
    soft = F.gumbel_softmax(logits, tau=0.7)
    assert_values(soft.sum(1), np.ones(4000), rtol=1e-6)
    tl.manual_seed(0)
    hard = F.gumbel_softmax(logits, tau=0.7, hard=True)
    assert set(np.unique(hard.numpy())) <= {0.0, 1.0} and (hard.sum(1) == 1).all()
    # a hard sample is the argmax of the soft one drawn from the same noise
    np.testing.assert_array_equal(hard.numpy().argmax(1), soft.numpy().argmax(1))
    # Gumbel-max: category k is drawn with probability softmax(logits)[k]
    freq = hard.numpy().mean(0)
    np.testing.assert_allclose(freq, np.exp([2, 0, -1]) / np.exp([2, 0, -1]).sum(), atol=0.03)
    x = tl.randn(2, 3, dtype=tl.float64, requires_grad=True)
    assert gradcheck(lambda x: _seeded(x, False), (x,))
    # straight-through: the hard sample passes on the soft sample's gradient
    w = tl.randn(2, 3, dtype=tl.float64)
    g_hard, = tl.autograd.grad((_seeded(x, True) * w).sum(), x)
    g_soft, = tl.autograd.grad((_seeded(x, False) * w).sum(), x)
    assert_values(g_hard, g_soft.numpy(), rtol=1e-12)


def _seeded(x, hard):
    tl.manual_seed(3)          # the same noise at every evaluation
    return F.gumbel_softmax(x, tau=0.5, hard=hard)


# ---- gradients at the bounds and at NaN: PyTorch's comparisons, branch for branch -------------
_XS = [float("nan"), -1.0, 2.0, 3.0, -3.0, 0.0, 6.0]
_AT_BOUNDS = {   # PyTorch's backward formulas: a NaN input fails every "at or past the bound" test
    "relu": [1, 0, 1, 1, 0, 0, 1],
    "relu6": [1, 0, 1, 1, 0, 0, 0],
    "hardtanh": [1, 0, 0, 0, 0, 1, 0],
    "hardswish": [1, 1 / 6, 7 / 6, 1, 0, 0.5, 1],
    "threshold": [1, 0, 1, 1, 0, 0, 1],
}


@pytest.mark.parametrize("name", sorted(_AT_BOUNDS))
def test_gradients_at_the_bounds_and_at_nan_follow_pytorch(name):
    x = tl.tensor(_XS, dtype=tl.float64, requires_grad=True)
    f = (lambda v: F.threshold(v, 0.5, 0.0)) if name == "threshold" else getattr(F, name)
    f(x).backward(tl.ones(len(_XS), dtype=tl.float64))
    np.testing.assert_allclose(x.grad.numpy(), _AT_BOUNDS[name], rtol=1e-15)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(_XS, dtype=torch.float64, requires_grad=True)
    tf = (lambda v: torch.nn.functional.threshold(v, 0.5, 0.0)) if name == "threshold" \
        else getattr(torch.nn.functional, name)
    tf(tx).backward(torch.ones(len(_XS), dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_lp_pool3d_matches_its_formula_and_lppool3d():
    rng = np.random.default_rng(0)
    a = np.abs(rng.standard_normal((2, 3, 4, 6, 5)))
    x = tl.tensor(a, requires_grad=True)
    out = F.lp_pool3d(x, 2.0, (2, 3, 2), stride=(2, 3, 2))
    w = a[..., :4, :6, :4].reshape(2, 3, 2, 2, 2, 3, 2, 2)
    ref = np.sqrt((w ** 2).sum(axis=(3, 5, 7)))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(tl.nn.LPPool3d(2, (2, 3, 2))(x).detach().numpy(), ref, rtol=1e-12)
    out.sum().backward()
    assert x.grad.shape == x.shape and np.isfinite(x.grad.numpy()).all()
