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
    # erf(.) + 1 is read back (the product's gradient reads that factor); erf's own derivative
    # reads exp(-x^2), not erf, so erf itself is not saved
    assert plan.saved_names == ["add"], plan.saved_names
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
    # the mask is saved already scaled by 1 / (1 - p): the backward is one product, no draw
    assert plan.saved_names == ["truediv"], plan.saved_names
    assert all(ins[0] != 6 for ins in plan.spec.instrs), plan.spec.instrs     # no RANDOM
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


def test_scaled_mask_gives_one_instruction_backward():
    x = tl.randn(64, 300, generator=tl.Generator().manual_seed(8))
    g = tl.randn(64, 300, generator=tl.Generator().manual_seed(9))
    fn = lambda t: F.dropout(t, 0.25, True)     # noqa: E731
    c = tl.compile(fn)
    tl.manual_seed(3)
    y_c, gx_c = _fwd_bwd(c, x, g)
    plan = _backward_plan(c)
    assert len(plan.spec.instrs) == 1, plan.spec.instrs
    # the gradient is g where the element was kept (scaled by 1 / 0.75), 0 where dropped
    kept = y_c != 0
    np.testing.assert_allclose(gx_c[kept], g.numpy()[kept] / 0.75, rtol=1e-6)
    assert (gx_c[~kept] == 0).all()
    tl.manual_seed(3)
    y_e, gx_e = _fwd_bwd(fn, x, g)
    np.testing.assert_array_equal(y_c, y_e)
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-6)


def test_chain_end_is_not_saved_where_the_formula_reads_the_start():
    # exp(t) * 2 + 1: the product's gradient reads no factor of its own, exp's reads exp(t),
    # so exp is what the backward reads back, not the chain's end
    x = tl.randn(16, 40, generator=tl.Generator().manual_seed(10))
    g = tl.randn(16, 40, generator=tl.Generator().manual_seed(11))
    fn = lambda t: t.exp() * 2.0 + 1.0      # noqa: E731
    c = tl.compile(fn)
    y_c, gx_c = _fwd_bwd(c, x, g)
    assert _backward_plan(c).saved_names == ["exp"], _backward_plan(c).saved_names
    y_e, gx_e = _fwd_bwd(fn, x, g)
    np.testing.assert_allclose(gx_c, gx_e, rtol=1e-6)
    np.testing.assert_allclose(gx_c, 2 * np.exp(x.numpy()) * g.numpy(), rtol=1e-5)


def test_gradient_passed_through_is_not_copied_by_the_program():
    # a + dropout(b): a's gradient is the output's, passed on as eager's add passes it
    a0 = tl.randn(32, 128, generator=tl.Generator().manual_seed(12))
    b0 = tl.randn(32, 128, generator=tl.Generator().manual_seed(13))
    g = tl.randn(32, 128, generator=tl.Generator().manual_seed(14))
    fn = lambda a, b: a + F.dropout(b, 0.5, True)   # noqa: E731
    c = tl.compile(fn)
    a, b = a0.detach().requires_grad_(), b0.detach().requires_grad_()
    tl.manual_seed(5)
    y = c(a, b)
    y.backward(g)
    plan = _backward_plan(c)
    assert len(plan.spec.out_dtypes) == 1 and plan.passed.count(None) == 1, plan.passed
    np.testing.assert_array_equal(a.grad.numpy(), g.numpy())
    kept = (y - a).detach().numpy() != 0
    np.testing.assert_allclose(b.grad.numpy(), np.where(kept, g.numpy() * 2, 0), rtol=1e-6)
    # a broadcast addend's passed-through gradient is still summed back to its shape
    w = tl.randn(128, generator=tl.Generator().manual_seed(15)).requires_grad_()
    b2 = b0.detach().requires_grad_()
    c2 = tl.compile(lambda w, b: w + b.sigmoid())
    c2(w, b2).backward(g)
    np.testing.assert_allclose(w.grad.numpy(), g.numpy().sum(0), rtol=1e-5, atol=1e-5)
    s = 1 / (1 + np.exp(-b0.numpy()))
    np.testing.assert_allclose(b2.grad.numpy(), g.numpy() * s * (1 - s), rtol=1e-5)
