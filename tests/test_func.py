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


# ---- jvp, linearize, jacfwd (the double-vjp trick of autograd.functional.Linearization) ---------
def _pair(a, b):
    return {"prod": (a * b[0]).exp(), "sum": (a.sin() + b[1]).sum()}


def test_jvp_and_linearize_are_exact():
    x, v = _x(), tl.tensor([1.0, 0.5, -2.0], dtype=tl.float64)
    out, jv = F.jvp(lambda t: t.sin() * t, (x,), (v,))
    xn, vn = x.numpy(), v.numpy()
    np.testing.assert_allclose(out.numpy(), np.sin(xn) * xn)
    np.testing.assert_allclose(jv.numpy(), (np.cos(xn) * xn + np.sin(xn)) * vn, rtol=1e-13)
    assert not out.requires_grad and not jv.requires_grad
    out2, jvp_fn = F.linearize(lambda t: t.sin() * t, x)
    np.testing.assert_allclose(out2.numpy(), out.numpy())
    for scale in (1.0, -3.0):                      # one graph, any number of tangents
        np.testing.assert_allclose(jvp_fn(v * scale).numpy(), jv.numpy() * scale, rtol=1e-13)
    with pytest.raises(RuntimeError, match="shape"):
        jvp_fn(tl.ones(2, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="dtype"):
        jvp_fn(tl.ones(3))


def test_jvp_structures_aux_strict_and_errors():
    a, b = _x(), tl.tensor([[0.5, 1.5, -1.0], [2.0, 0.1, 0.3]], dtype=tl.float64)
    out, tangent, aux = F.jvp(lambda p, q: (_pair(p, q), "aux"), (a, b), (a * 0 + 1, b * 0),
                              has_aux=True)
    assert aux == "aux" and set(tangent) == {"prod", "sum"}
    np.testing.assert_allclose(tangent["prod"].numpy(), out["prod"].numpy() * b.numpy()[0])
    np.testing.assert_allclose(tangent["sum"].item(), np.cos(a.numpy()).sum())
    _, zero = F.jvp(lambda p, q: p * 2, (a, b), (a, b))
    np.testing.assert_allclose(zero.numpy(), 2 * a.numpy())
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        F.jvp(lambda p: tl.ones(3), (a,), (a,), strict=True)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        F.jvp(lambda p: p, a, (a,))
    with pytest.raises(RuntimeError, match="same python structure"):
        F.jvp(lambda p, q: p, (a, b), (a,))


def test_jvp_composes_with_grad():
    # d/dx sum(J(x) v) for f = sin(x) * x: (2 cos x - x sin x) v
    x, v = _x(), tl.tensor([1.0, 0.5, -2.0], dtype=tl.float64)
    g = F.grad(lambda t: F.jvp(lambda s: s.sin() * s, (t,), (v,))[1].sum())(x)
    xn = x.numpy()
    np.testing.assert_allclose(g.numpy(), (2 * np.cos(xn) - xn * np.sin(xn)) * v.numpy(), rtol=1e-12)


def test_jacfwd_pytree_outputs_and_argnums():
    a, b = _x(), tl.tensor([[0.5, 1.5, -1.0], [2.0, 0.1, 0.3]], dtype=tl.float64)
    jf = F.jacfwd(_pair, argnums=(0, 1))(a, b)
    jr_prod = F.jacrev(lambda p, q: _pair(p, q)["prod"], argnums=(0, 1))(a, b)
    assert jf["prod"][0].shape == (3, 3) and jf["prod"][1].shape == (3, 2, 3)
    assert jf["sum"][0].shape == (3,) and jf["sum"][1].shape == (2, 3)
    for k in range(2):
        np.testing.assert_allclose(jf["prod"][k].numpy(), jr_prod[k].numpy(), rtol=1e-14)
    jac, aux = F.jacfwd(lambda t: (t.exp(), 7), has_aux=True)(a)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.exp(a.numpy())), rtol=1e-14)
    assert aux == 7


def test_jvp_linearize_jacfwd_against_torch_func():
    torch = pytest.importorskip("torch")
    an = np.array([0.3, -1.2, 2.0])
    bn = np.array([[0.5, 1.5, -1.0], [2.0, 0.1, 0.3]])
    vn = np.array([1.0, 0.5, -2.0])
    ours_args = (tl.tensor(an), tl.tensor(bn))
    theirs_args = (torch.tensor(an), torch.tensor(bn))
    ours = F.jvp(_pair, ours_args, (tl.tensor(vn), tl.tensor(bn * 0.5)))
    theirs = torch.func.jvp(_pair, theirs_args, (torch.tensor(vn), torch.tensor(bn * 0.5)))
    for o, t in zip(ours, theirs):
        for key in ("prod", "sum"):
            np.testing.assert_allclose(o[key].numpy(), t[key].numpy(), rtol=1e-12)
    out, fn = F.linearize(lambda t: (t.tanh() * t).cumsum(0), tl.tensor(an))
    tout, tfn = torch.func.linearize(lambda t: (t.tanh() * t).cumsum(0), torch.tensor(an))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fn(tl.tensor(vn)).numpy(), tfn(torch.tensor(vn)).numpy(), rtol=1e-12)
    jf = F.jacfwd(_pair, argnums=(0, 1))(*ours_args)
    tjf = torch.func.jacfwd(_pair, argnums=(0, 1))(*theirs_args)
    for key in ("prod", "sum"):
        for k in range(2):
            np.testing.assert_allclose(jf[key][k].numpy(), tjf[key][k].numpy(), rtol=1e-12, atol=1e-14)


def test_functional_call_ties_weights_as_pytorch():
    from torchlite import nn
    m = nn.Sequential(nn.Linear(3, 3, bias=False), nn.Linear(3, 3, bias=False))
    m[1].weight = m[0].weight                                  # tied
    x, w = tl.randn(2, 3), tl.randn(3, 3)
    both = tl.func.functional_call(m, {"0.weight": w}, (x,))
    np.testing.assert_allclose(both.detach().numpy(), ((x @ w.T) @ w.T).numpy(), rtol=1e-5)
    first = tl.func.functional_call(m, {"0.weight": w}, (x,), tie_weights=False)
    np.testing.assert_allclose(first.detach().numpy(),
                               ((x @ w.T) @ m[0].weight.T).detach().numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="tied"):
        tl.func.functional_call(m, {"0.weight": w, "1.weight": w * 2}, (x,))
    torch = pytest.importorskip("torch")
    mt = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False))
    mt[1].weight = mt[0].weight
    got = torch.func.functional_call(mt, {"0.weight": torch.tensor(w.numpy())},
                                     (torch.tensor(x.numpy()),))
    np.testing.assert_allclose(both.detach().numpy(), got.detach().numpy(), rtol=1e-5)


def _rows_jacobian(fn, *args, argnums=0):
    """The Jacobian by one torchlite.autograd.grad per output element (the oracle of the
    batched path)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    xs = [a.detach().requires_grad_() if i in nums else a for i, a in enumerate(args)]
    out = fn(*xs)
    rows = [[] for _ in nums]
    for y in out.reshape(-1):
        gs = tl.autograd.grad(y, [xs[n] for n in nums], retain_graph=True, allow_unused=True)
        for k, (g, n) in enumerate(zip(gs, nums)):
            rows[k].append(g if g is not None else tl.zeros_like(xs[n]))
    jacs = [tl.stack(r).reshape(tuple(out.shape) + tuple(xs[n].shape)) for r, n in zip(rows, nums)]
    return jacs[0] if isinstance(argnums, int) else tuple(jacs)


def test_jacrev_batched_rows_equal_one_backward_per_row(monkeypatch):
    """jacrev's one batched backward (vmap over the output basis) against a reverse pass per
    output element: matrix products, reductions, broadcasting, two inputs, chunks, aux."""
    def no_rows(*a):
        raise AssertionError("jacrev fell back to one pass per row")
    monkeypatch.setattr(F, "_jacrev_by_rows", no_rows)
    rng = np.random.default_rng(0)
    w = tl.tensor(rng.standard_normal((5, 4)))
    x, b = tl.tensor(rng.standard_normal(4)), tl.tensor(rng.standard_normal((3, 5)))

    def fn(v, c):
        h = (w @ v).tanh() + c                        # (3, 5)
        return h * h.softmax(-1) - h.mean(0, keepdim=True)

    want = _rows_jacobian(fn, x, b, argnums=(0, 1))
    for chunk in (None, 4, 1):
        got = F.jacrev(fn, argnums=(0, 1), chunk_size=chunk)(x, b)
        assert got[0].shape == (3, 5, 4) and got[1].shape == (3, 5, 3, 5)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)
    jac, aux = F.jacrev(lambda v: (fn(v, b), "aux"), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), want[0].numpy(), rtol=1e-12, atol=1e-14)
    assert aux == "aux"


def test_jacrev_falls_back_to_rows_where_vmap_cannot_run():
    """A function that reads a value in Python or draws random numbers cannot run under vmap:
    jacrev takes one reverse pass per row instead, with the same result."""
    x = tl.tensor([0.5, -1.0, 2.0], dtype=tl.float64)

    def reads_a_value(v):
        return v * 2 if v.sum().item() > 0 else v * 3

    np.testing.assert_allclose(F.jacrev(reads_a_value)(x).numpy(), 2 * np.eye(3))

    def draws(v):
        tl.manual_seed(0)
        return v * tl.rand(3, dtype=tl.float64)

    tl.manual_seed(0)
    r = tl.rand(3, dtype=tl.float64)
    np.testing.assert_allclose(F.jacrev(draws)(x).numpy(), np.diag(r.numpy()))


def test_jacrev_against_torch_func():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    wn, xn = rng.standard_normal((6, 4)), rng.standard_normal(4)
    ours = F.jacrev(lambda v: (tl.tensor(wn) @ v).sigmoid().cumsum(0))(tl.tensor(xn))
    theirs = torch.func.jacrev(lambda v: (torch.tensor(wn) @ v).sigmoid().cumsum(0))(torch.tensor(xn))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_hessian_of_a_scalar_takes_one_batched_backward(monkeypatch):
    """hessian of a one-element output is the Jacobian of grad, whose rows come from one
    batched backward (no reverse pass per row); against a NumPy closed form."""
    def no_rows(*a):
        raise AssertionError("hessian took one reverse pass per row")
    monkeypatch.setattr(F, "_jacrev_by_rows", no_rows)
    rng = np.random.default_rng(2)
    an = rng.standard_normal((5, 5))
    a = tl.tensor(an + an.T)
    x = tl.tensor(rng.standard_normal(5))
    h = F.hessian(lambda v: 0.5 * v @ a @ v + v.sin().sum())(x)
    np.testing.assert_allclose(h.numpy(), (an + an.T) - np.diag(np.sin(x.numpy())), rtol=1e-12, atol=1e-12)


def test_jacrev_of_output_structures_and_hessian_forms_against_torch():
    """jacrev over a tuple/dict output gives one Jacobian per output leaf in its structure;
    hessian of a vector output, of a (1,)-shaped one, and over a tuple argnums; all equal to
    one reverse pass per row, and to torch.func where installed."""
    rng = np.random.default_rng(3)
    wn, xn, yn = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    outs = lambda L, v: {"u": (L.tensor(wn) @ v).tanh(), "v": (v.sin(), v.cos().sum().reshape(1))}
    x = tl.tensor(xn)
    got = F.jacrev(lambda v: outs(tl, v))(x)
    np.testing.assert_allclose(got["u"].numpy(), _rows_jacobian(lambda v: outs(tl, v)["u"], x).numpy(),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["v"][0].numpy(), np.diag(np.cos(xn)), rtol=1e-12, atol=1e-14)
    assert got["v"][1].shape == (1, 3)
    forms = [(lambda L, v, w: (L.tensor(wn) @ (v * w)).tanh(), 0),           # vector output
             (lambda L, v, w: ((v * w.exp()) ** 2).sum().reshape(1), 0),      # (1,) output
             (lambda L, v, w: (v * w.sin()).sum() * v.sum(), (0, 1))]         # two arguments
    ours = [F.hessian(lambda v, w, f=f: f(tl, v, w), argnums=n)(x, tl.tensor(yn)) for f, n in forms]
    assert ours[0].shape == (4, 3, 3) and ours[1].shape == (1, 3, 3)
    assert [[h.shape for h in row] for row in ours[2]] == [[(3, 3)] * 2] * 2
    torch = pytest.importorskip("torch")
    for (f, n), h in zip(forms, ours):
        ref = torch.func.hessian(lambda v, w, f=f: f(torch, v, w), argnums=n)(torch.tensor(xn), torch.tensor(yn))
        pairs = ([(h, ref)] if isinstance(n, int) else
                 [(h[i][j], ref[i][j]) for i in range(2) for j in range(2)])
        for a, b in pairs:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_jacrev_argument_errors_as_torch_func():
    x = tl.ones(3)
    with pytest.raises(ValueError, match="chunk_size"):
        F.jacrev(lambda v: v * 2, chunk_size=0)
    with pytest.raises(RuntimeError, match="floating-point or complex"):
        F.jacrev(lambda v: (v * 2).long())(x)
