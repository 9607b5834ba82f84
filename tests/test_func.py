"""torchlite.func against finite differences / closed forms, and torch.func where
installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite import func as F


def f(x):
    return (x.sin() * x).sum()


def _x():
    return tl.tensor([0.3, -1.2, 2.0], dtype=tl.float64)


def test_grad_hessian_and_composition():
    x = _x()
    g = F.grad(f)(x)
    xn = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xn) * xn + np.sin(xn), rtol=1e-12)
    h = F.hessian(f)(x)
    np.testing.assert_allclose(h.numpy(), np.diag(2 * np.cos(xn) - xn * np.sin(xn)), atol=1e-12)
    gg = F.grad(lambda v: F.grad(f)(v).sum())(x)            # grad of grad composes
    np.testing.assert_allclose(gg.numpy(), np.diag(h.numpy()), rtol=1e-12)
    assert not x.requires_grad and not g.requires_grad


def test_grad_and_value_argnums_aux():
    a, b = _x(), _x() * 2
    (ga, gb), (val, aux) = F.grad_and_value(lambda u, v: ((u * v).sum(), "aux"),
                                            argnums=(0, 1), has_aux=True)(a, b)
    np.testing.assert_allclose(ga.numpy(), b.numpy())
    np.testing.assert_allclose(gb.numpy(), a.numpy())
    assert aux == "aux" and abs(val.item() - (a * b).sum().item()) < 1e-12
    with pytest.raises(RuntimeError, match="scalar"):
        F.grad(lambda v: v * 2)(a)


def test_vjp_and_jacobians():
    x = _x()
    out, fn = F.vjp(lambda v: v.exp() * 2, x)
    (g,) = fn(tl.ones(3, dtype=tl.float64))
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(x.numpy()))
    w = tl.tensor(np.arange(6.0).reshape(2, 3))
    jr = F.jacrev(lambda v: (w @ v).tanh())(x)
    jf = F.jacfwd(lambda v: (w @ v).tanh())(x)
    y = np.tanh(w.numpy() @ x.numpy())
    np.testing.assert_allclose(jr.numpy(), (1 - y ** 2)[:, None] * w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jf.numpy(), jr.numpy())


def test_vmap_dims_and_gradients():
    xs = tl.tensor(np.arange(12.0).reshape(3, 4))
    ys = tl.tensor(np.arange(4.0))
    got = F.vmap(lambda a, b: (a * b).sum())(xs, ys.expand(3, 4))
    np.testing.assert_allclose(got.numpy(), (xs.numpy() * ys.numpy()).sum(1))
    got = F.vmap(lambda a, b: a + b, in_dims=(1, None), out_dims=1)(xs, ys[:3])
    np.testing.assert_allclose(got.numpy(), xs.numpy() + ys.numpy()[:3, None])
    per_sample = F.vmap(F.grad(f))(xs.double())
    np.testing.assert_allclose(per_sample.numpy(),
                               np.cos(xs.numpy()) * xs.numpy() + np.sin(xs.numpy()), rtol=1e-12)
    with pytest.raises(ValueError, match="same size"):
        F.vmap(lambda a, b: a + b)(xs, tl.ones(4, 4))


def test_functional_call_and_ensembles():
    tl.manual_seed(0)
    lin = nn.Linear(3, 2)
    x = tl.randn(5, 3)
    w = tl.zeros(2, 3)
    out = F.functional_call(lin, {"weight": w}, (x,))
    np.testing.assert_allclose(out.detach().numpy(),
                               np.broadcast_to(lin.bias.detach().numpy(), (5, 2)), rtol=1e-6)
    assert lin.weight.abs().sum().item() > 0                   # restored
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3)
    outs = F.vmap(lambda p: F.functional_call(models[0], p, (x,)))(params)
    for i, m in enumerate(models):
        np.testing.assert_allclose(outs[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="missing"):
        F.functional_call(lin, {"weight": w}, (x,), strict=True)


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    x = np.array([0.3, -1.2, 2.0])
    theirs = torch.func.hessian(lambda v: (v.sin() * v).sum())(torch.tensor(x)).numpy()
    np.testing.assert_allclose(F.hessian(f)(tl.tensor(x)).numpy(), theirs, atol=1e-12)
    assert tl.vmap is F.vmap
