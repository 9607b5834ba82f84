"""What a fused kernel's backward reads back from its forward instead of computing again: the
costly values (transcendental functions, random masks, softmax results), never the cheap ones.
Gradients are checked against eager torchlite (the same formulas op by op) and, for GELU,
against float64 central differences."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401


def _backward_plan(compiled):
    (k,) = kernels_of(compiled)
    return k._backward


def _fwd_bwd(fn, x, g):
    x = x.detach().requires_grad_()
    y = fn(x)
    y.backward(g)
    return y.detach().numpy(), x.grad.numpy()


def test_erf_is_saved_and_gelu_matches_eager_and_differences():
    g0 = tl.Generator().manual_seed(0)
    x, g = tl.randn(64, 300, generator=g0), tl.randn(64, 300, generator=g0)
    # GELU written out (as model code may have it): its erf is read back by the backward
    fn = lambda t: t * ((t * 0.7071067811865476).erf() + 1) * 0.5 * 2.0   # noqa: E731
    c = tl.compile(fn)
    y_c, gx_c = _fwd_bwd(c, x, g)
    plan = _backward_plan(c)
    assert [n for n in plan.saved_names if n.startswith("erf")], plan.saved_names
    assert plan.forward_program is not None
    y_e, gx_e = _fwd_bwd(fn, x, g)
    np.testing.assert_allclose(y_c, y_e, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-5, atol=1e-6)
    # F.gelu is one instruction whose backward reads its input: nothing to save
    c = tl.compile(lambda t: F.gelu(t) * 2.0)
    y_c, gx_c = _fwd_bwd(c, x, g)
    assert _backward_plan(c).saved_names == []
    y_e, gx_e = _fwd_bwd(lambda t: F.gelu(t) * 2.0, x, g)
    np.testing.assert_allclose(y_c, y_e, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-5, atol=1e-6)
    # the derivative itself, in float64, against central differences
    xd = tl.randn(5, 7, generator=g0, dtype=tl.float64)
    cd = tl.compile(lambda t: F.gelu(t))
    _, gd = _fwd_bwd(cd, xd, tl.ones(5, 7, dtype=tl.float64))
    h = 1e-6
    a = xd.numpy()
    num = (F.gelu(tl.from_numpy(a + h)).numpy() - F.gelu(tl.from_numpy(a - h)).numpy()) / (2 * h)
    np.testing.assert_allclose(gd, num, rtol=1e-7, atol=1e-9)


def test_dropout_mask_is_saved_not_drawn_again():
    x = tl.randn(40, 256, generator=tl.Generator().manual_seed(1))
    g = tl.randn(40, 256, generator=tl.Generator().manual_seed(2))
    c = tl.compile(lambda t: F.dropout(F.gelu(t), 0.3, True) + t)
    tl.manual_seed(7)
    y_c, gx_c = _fwd_bwd(c, x, g)
    plan = _backward_plan(c)
    assert any(n.startswith("bernoulli") for n in plan.saved_names), plan.saved_names
    tl.manual_seed(7)
    y_e, gx_e = _fwd_bwd(lambda t: F.dropout(F.gelu(t), 0.3, True) + t, x, g)
    np.testing.assert_allclose(y_c, y_e, rtol=1e-6, atol=1e-7)     # eager's mask
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-5, atol=1e-6)
    # the random draws between forward and backward do not change the gradient
    tl.manual_seed(7)
    x2 = x.detach().requires_grad_()
    y = c(x2)
    tl.rand(1000)
    y.backward(g)
    np.testing.assert_allclose(x2.grad.numpy(), gx_e, rtol=1e-5, atol=1e-6)


def test_cheap_ops_are_recomputed_not_saved():
    x, w = tl.randn(32, 64), tl.randn(64)
    c = tl.compile(lambda a, b: (a * b + 1.0).relu() * a)
    a = x.detach().requires_grad_()
    c(a, w).sum().backward()
    plan = _backward_plan(c)
    assert plan.saved_names == [] and plan.forward_program is None


def test_saved_values_under_create_graph_give_second_derivatives():
    x = tl.randn(6, 5, dtype=tl.float64, generator=tl.Generator().manual_seed(3))
    fn = lambda t: (t.tanh() * t.exp()).sum()   # noqa: E731
    c = tl.compile(fn)
    xc = x.detach().requires_grad_()
    (gc,) = tl.autograd.grad(c(xc), xc, create_graph=True)
    (hc,) = tl.autograd.grad(gc.sum(), xc)
    xe = x.detach().requires_grad_()
    (ge,) = tl.autograd.grad(fn(xe), xe, create_graph=True)
    (he,) = tl.autograd.grad(ge.sum(), xe)
    np.testing.assert_allclose(gc.detach().numpy(), ge.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(hc.numpy(), he.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fn", [lambda t: t.sigmoid() * t, lambda t: (t * 0.5).exp() + t.sin(),
                                lambda t: F.softmax(t * 2.0, -1) * t])
def test_costly_unary_values_are_saved(fn):
    x = tl.randn(16, 33, generator=tl.Generator().manual_seed(4))
    g = tl.randn(16, 33, generator=tl.Generator().manual_seed(5))
    c = tl.compile(fn)
    y_c, gx_c = _fwd_bwd(c, x, g)
    assert _backward_plan(c).saved_names
    y_e, gx_e = _fwd_bwd(fn, x, g)
    np.testing.assert_allclose(y_c, y_e, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-5, atol=1e-6)
