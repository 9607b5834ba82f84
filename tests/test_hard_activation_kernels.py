"""hardswish and hardsigmoid as one kernel pass each, forward and backward (kernel ops
hardswish/hardsigmoid and hardswish_backward/hardsigmoid_backward, kernels/ewise_ops.h, with
their formulas in cuda_kernels/tl_scalar_math.cuh), and the one-pass in-place forms of
hardtanh/relu6, silu, hardswish and hardsigmoid.  Checked against NumPy written in PyTorch's
order of operations (to the bit in float32), float64 gradient checks away from the kinks,
and PyTorch where installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F

POINTS = np.concatenate([np.linspace(-8, 8, 1601), [-3.0, 3.0, -2.9999, 2.9999, -1e30, 1e30,
                                                    np.inf, -np.inf, np.nan, -0.0]])


def _relu6_of_plus3(x, t):
    r = x + t(3)
    r = np.where(r < 0, t(0), r)            # a NaN stays NaN, as PyTorch's max/min keep it
    return np.where(r > 6, t(6), r)


def _hardswish(x, t):
    return x * _relu6_of_plus3(x, t) / t(6)


def _hardsigmoid(x, t):
    return _relu6_of_plus3(x, t) / t(6)


def _hardswish_grad(g, x, t):
    # PyTorch's branches: 0 for x <= -3, g (x / 3 + 1/2) below 3, else g (a NaN x too)
    return np.where(x <= -3, t(0), np.where(x < 3, g * (x / t(3) + t(0.5)), g))


def _hardsigmoid_grad(g, x, t):
    return np.where((x > -3) & (x < 3), g * (t(1) / t(6)), t(0))


CASES = {"hardswish": (F.hardswish, _hardswish, _hardswish_grad),
         "hardsigmoid": (F.hardsigmoid, _hardsigmoid, _hardsigmoid_grad)}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_gradients_in_pytorch_order(name, dtype):
    fn, ref, ref_grad = CASES[name]
    t = dtype
    x = POINTS.astype(dtype)
    g = np.linspace(-1.7, 2.3, x.size).astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        want, want_g = ref(x, t), ref_grad(g, x, t)
    xt = tl.tensor(x, requires_grad=True)
    y = fn(xt)
    np.testing.assert_array_equal(y.detach().numpy(), want)
    y.backward(tl.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), want_g)


@pytest.mark.parametrize("name", list(CASES))
def test_first_and_second_derivatives_away_from_the_kinks(name):
    fn = CASES[name][0]
    x = np.array([-5.0, -2.5, -1.0, -0.1, 0.3, 1.7, 2.6, 4.0, 7.5])
    t = tl.tensor(x, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(fn, (t,)) and tl.autograd.gradgradcheck(fn, (t,))
    (g,) = tl.autograd.grad(fn(t).sum(), t, create_graph=True)
    (gg,) = tl.autograd.grad(g.sum(), t)
    inside = (x > -3) & (x < 3)
    want = np.where(inside, 1 / 3, 0.0) if name == "hardswish" else np.zeros_like(x)
    np.testing.assert_allclose(gg.numpy(), want, rtol=1e-12, atol=0)


def test_node_names_follow_pytorch():
    x = tl.randn(5, requires_grad=True)
    assert F.hardswish(x).grad_fn.name() == "HardswishBackward0"
    assert F.hardsigmoid(x).grad_fn.name() == "HardsigmoidBackward0"
    (g,) = tl.autograd.grad(F.hardswish(x).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "HardswishBackwardBackward0"


@pytest.mark.parametrize("fn, kw", [(F.hardswish, {}), (F.hardsigmoid, {}), (F.silu, {}),
                                    (F.relu6, {}), (F.hardtanh, {"min_val": -0.5, "max_val": 2.0})])
def test_in_place_forms_write_once_and_keep_autograd(fn, kw):
    x = tl.randn(7, 9, generator=tl.Generator().manual_seed(3)) * 4
    want = fn(x.clone(), **kw)
    y = x.clone()
    v = y._version
    out = fn(y, inplace=True, **kw)
    assert out is y and y._version > v
    np.testing.assert_array_equal(y.numpy(), want.numpy())
    # strided (a transposed view written in place)
    z = x.clone().t()
    fn(z, inplace=True, **kw)
    np.testing.assert_array_equal(z.numpy(), fn(x.t(), **kw).numpy())
    # on a tensor of the graph: the gradient of the in-place form is the out-of-place one's
    a = x.clone().requires_grad_()
    b = a * 1.0
    fn(b, inplace=True, **kw).sum().backward()
    a2 = x.clone().requires_grad_()
    fn(a2 * 1.0, **kw).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), a2.grad.numpy())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(x.clone().requires_grad_(), inplace=True, **kw)


def test_relu6_in_place_on_integers_keeps_the_dtype():
    x = tl.tensor([-4, 3, 9], dtype=tl.int32)
    F.relu6(x, inplace=True)
    assert x.dtype == tl.int32 and x.tolist() == [0, 3, 6]


@pytest.mark.parametrize("fn, kernel", [(F.hardswish, "hardswish_cpu"),
                                        (F.hardsigmoid, "hardsigmoid_cpu")])
def test_integer_and_complex_inputs_raise_as_pytorch(fn, kernel):
    for x, name in ((tl.tensor([1, 2]), "Long"), (tl.tensor([1 + 1j]), "ComplexFloat")):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'{name}\''):
            fn(x)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_is_one_instruction_and_equals_eager_to_the_bit(name):
    from compile_helpers import check_one_instruction_activation
    check_one_instruction_activation(CASES[name][0], seed=6, scale=3.0)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for dtype, exact in ((np.float32, True), (np.float64, False)):
        x = (rng.normal(size=(64, 33)) * 4).astype(dtype)
        gy = rng.normal(size=(64, 33)).astype(dtype)
        for name in ("hardswish", "hardsigmoid"):
            t = tl.tensor(x, requires_grad=True)
            tt = torch.tensor(x, requires_grad=True)
            y, ty = getattr(F, name)(t), getattr(torch.nn.functional, name)(tt)
            np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
            y.backward(tl.tensor(gy))
            ty.backward(torch.tensor(gy))
            if exact:
                np.testing.assert_array_equal(t.grad.numpy(), tt.grad.numpy())
            else:   # PyTorch's float64 hardsigmoid gradient scales by 1/6 rounded to float32
                np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-7)
