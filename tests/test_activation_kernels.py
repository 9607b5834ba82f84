"""GELU (exact and tanh) and SiLU as one kernel pass each, forward and backward (kernel ops
gelu/gelu_tanh/silu and gelu_backward/gelu_tanh_backward/silu_backward, kernels/ewise_ops.h).
Checked against float64 formulas computed with Python's math module, float64 central
differences for the first and second derivatives, and PyTorch where installed."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F

_ERF = np.vectorize(math.erf)


def _gelu(x):
    return x * 0.5 * (1 + _ERF(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _silu(x):
    return x / (1 + np.exp(-x))


CASES = {"gelu": (lambda t: F.gelu(t), _gelu),
         "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), _gelu_tanh),
         "silu": (lambda t: F.silu(t), _silu)}
POINTS = np.concatenate([np.linspace(-12, 12, 2401), [-1e4, -50.0, -6.1, -1e-30, 0.0, 1e-30, 6.1, 50.0, 1e4]])


@pytest.mark.parametrize("name", list(CASES))
def test_values_float64_and_float32(name):
    fn, ref = CASES[name]
    want = ref(POINTS)
    got64 = fn(tl.tensor(POINTS, dtype=tl.float64)).numpy()
    # gelu's 1 + erf(x / sqrt 2) cancels in the negative tail (PyTorch's formula too): the
    # error is a few roundings of 1, relative to x, not to the tiny result
    bound = 4e-16 * np.abs(want) + 4e-16 * np.abs(POINTS)
    assert np.all(np.abs(got64 - want) <= bound), np.max(np.abs(got64 - want) - bound)
    x32 = POINTS.astype(np.float32)
    got32 = fn(tl.tensor(x32)).numpy().astype(np.float64)
    want32 = ref(x32.astype(np.float64))
    bound = 2e-6 * np.abs(want32) + 1.2e-7 * np.abs(x32)
    assert np.all(np.abs(got32 - want32) <= bound), np.max(np.abs(got32 - want32) - bound)


@pytest.mark.parametrize("name", list(CASES))
def test_special_values(name):
    fn, _ = CASES[name]
    x = tl.tensor([float("inf"), float("-inf"), float("nan")])
    got = fn(x).numpy()
    assert got[0] == np.inf and np.isnan(got[2])
    assert got[1] == 0 or np.isnan(got[1])          # -inf * 0: PyTorch gives NaN for gelu too


@pytest.mark.parametrize("name", list(CASES))
def test_first_and_second_derivatives_against_differences(name):
    fn, ref = CASES[name]
    x = np.linspace(-7, 7, 57)
    h = 1e-5
    d1 = (ref(x + h) - ref(x - h)) / (2 * h)
    k = 1e-4        # a wider step for the second difference: its rounding noise is eps |f| / k^2
    d2 = (ref(x + k) - 2 * ref(x) + ref(x - k)) / (k * k)
    t = tl.tensor(x, dtype=tl.float64, requires_grad=True)
    (g,) = tl.autograd.grad(fn(t).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), d1, rtol=1e-8, atol=1e-9)
    (gg,) = tl.autograd.grad(g.sum(), t)
    np.testing.assert_allclose(gg.numpy(), d2, rtol=1e-5, atol=1e-6)
    small = tl.tensor(x[::7], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(fn, (small,)) and tl.autograd.gradgradcheck(fn, (small,))


def test_node_names_follow_pytorch():
    x = tl.randn(4, requires_grad=True)
    y = F.gelu(x)
    assert y.grad_fn.name() == "GeluBackward0"
    assert F.silu(x).grad_fn.name() == "SiluBackward0"
    (g,) = tl.autograd.grad(y.sum(), x, create_graph=True)
    assert g.grad_fn.name() == "GeluBackwardBackward0"


def test_float32_gradient_matches_float64():
    x = np.random.default_rng(0).normal(size=5000) * 3
    for name, (fn, _) in CASES.items():
        t32 = tl.tensor(x.astype(np.float32), requires_grad=True)
        t64 = tl.tensor(x.astype(np.float32).astype(np.float64), requires_grad=True)
        fn(t32).sum().backward()
        fn(t64).sum().backward()
        np.testing.assert_allclose(t32.grad.numpy(), t64.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_silu_in_place_and_strided_inputs():
    x = tl.randn(6, 8)
    want = F.silu(x.clone())
    y = x.clone()
    F.silu(y, inplace=True)
    np.testing.assert_array_equal(y.numpy(), want.numpy())
    xt = x.t()
    np.testing.assert_array_equal(F.gelu(xt).numpy(), F.gelu(xt.contiguous()).numpy())


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).normal(size=(64, 33)).astype(np.float32) * 4
    g = np.random.default_rng(2).normal(size=(64, 33)).astype(np.float32)
    for name, kw in (("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {})):
        t = tl.tensor(x, requires_grad=True)
        tt = torch.tensor(x, requires_grad=True)
        y = getattr(F, name)(t, **kw)
        ty = getattr(torch.nn.functional, name)(tt, **kw)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=2e-6)
        y.backward(tl.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_is_one_instruction_and_equals_eager_to_the_bit(name):
    from compile_helpers import check_one_instruction_activation
    check_one_instruction_activation(CASES[name][0], seed=5)


def test_float32_gelu_accuracy_by_region():
    """The float32 GELU kernel (vmath.h's tl_geluf: Phi from one exponential) in ulp of the
    float64 value, region by region (the bounds its comment states, with a little room)."""
    x = np.linspace(-12, 12, 200001).astype(np.float32)
    got = F.gelu(tl.tensor(x)).numpy().astype(np.float64)
    xd = x.astype(np.float64)
    want = xd * 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in xd])
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(got - want)
    for lo, hi, bound in ((-1, 1, 8), (1, 12, 2.5), (-3, -1, 16), (-5, -3, 32)):
        m = (xd >= lo) & (xd < hi) & (np.abs(want) > 1e-38)
        assert np.max(err[m] / ulp[m]) <= bound, (lo, hi, np.max(err[m] / ulp[m]))
    m = (xd < -5) & (np.abs(want) > 1e-38)
    assert np.max(err[m] / np.abs(want[m])) < 2e-5
    # the gradient: absolute error of a few float32 roundings of values of size 1
    t = tl.tensor(x, requires_grad=True)
    F.gelu(t).sum().backward()
    pdf = np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    dwant = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in xd]) + xd * pdf
    assert np.max(np.abs(t.grad.numpy() - dwant)) < 4e-7
