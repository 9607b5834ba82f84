"""softmax/log_softmax backward over the last dim as one fused pass per row (the reduction
kernels' softmax_backward, PyTorch's _softmax_backward_data): checked against the formula in
float64 NumPy, against float64 central differences, for row lengths around the kernel's lane
count, non-contiguous inputs and gradients, other dims (the formula's path), create_graph
(second derivatives through the formula) and PyTorch where installed."""
import numpy as np
import pytest

import torchlite as tl


def _np_softmax(x, log):
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def _np_grad(x, g, log):
    y = _np_softmax(x, log)
    if log:
        return g - np.exp(y) * g.sum(-1, keepdims=True)
    return y * (g - (g * y).sum(-1, keepdims=True))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", [1, 3, 7, 16, 17, 64, 65, 1000])
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_last_dim_gradient_matches_the_formula(log, n, dtype):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(5, 3, n)) * 3
    g = rng.normal(size=(5, 3, n))
    t = tl.tensor(x, dtype=dtype, requires_grad=True)
    y = t.log_softmax(-1) if log else t.softmax(-1)
    y.backward(tl.tensor(g, dtype=dtype))
    xs = t.detach().to(tl.float64).numpy()
    want = _np_grad(xs, tl.tensor(g, dtype=dtype).to(tl.float64).numpy(), log)
    tol = 1e-12 if dtype is tl.float64 else 3e-6
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("log", [False, True])
def test_against_central_differences(log):
    x = tl.tensor(np.random.default_rng(0).normal(size=(4, 9)), dtype=tl.float64, requires_grad=True)
    fn = (lambda t: t.log_softmax(-1)) if log else (lambda t: t.softmax(-1))
    assert tl.autograd.gradcheck(fn, (x,)) and tl.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("log", [False, True])
def test_strided_gradients_other_dims_and_empty(log):
    rng = np.random.default_rng(3)
    x = tl.tensor(rng.normal(size=(6, 8)), dtype=tl.float64, requires_grad=True)
    g = tl.tensor(rng.normal(size=(8, 6)), dtype=tl.float64).t()          # a transposed view
    (x.log_softmax(-1) if log else x.softmax(-1)).backward(g)
    np.testing.assert_allclose(x.grad.numpy(), _np_grad(x.detach().numpy(), g.numpy(), log), rtol=1e-12)
    xt = tl.tensor(rng.normal(size=(8, 6)), dtype=tl.float64).t().requires_grad_()   # non-contiguous x
    (xt.log_softmax(1) if log else xt.softmax(1)).backward(g)
    np.testing.assert_allclose(xt.grad.numpy(), _np_grad(xt.detach().numpy(), g.numpy(), log), rtol=1e-12)
    x0 = tl.tensor(rng.normal(size=(4, 5)), dtype=tl.float64, requires_grad=True)   # dim 0: the formula
    g0 = tl.tensor(rng.normal(size=(4, 5)), dtype=tl.float64)
    (x0.log_softmax(0) if log else x0.softmax(0)).backward(g0)
    want = _np_grad(x0.detach().numpy().T, g0.numpy().T, log).T
    np.testing.assert_allclose(x0.grad.numpy(), want, rtol=1e-12)
    e = tl.zeros(0, 4, requires_grad=True)
    (e.log_softmax(-1) if log else e.softmax(-1)).sum().backward()
    assert e.grad.shape == (0, 4)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.normal(size=(32, 4, 64)).astype(np.float32) * 4
    g = rng.normal(size=(32, 4, 64)).astype(np.float32)
    for log in (False, True):
        t, tt = tl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (t.log_softmax(-1) if log else t.softmax(-1)).backward(tl.tensor(g))
        (tt.log_softmax(-1) if log else tt.softmax(-1)).backward(torch.tensor(g))
        np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)
