"""Hunting aliasing through the engine's .grad steal (a leaf takes a gradient nothing else
holds as its .grad without a copy): in every case the values of every .grad and of every
tensor the user can reach are checked against NumPy (or PyTorch where installed) after later
in-place updates, and no two leaves' .grad, nor a .grad and a user-visible tensor, share
memory unless PyTorch's would."""
import io

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F


def _ptr(t):
    return t.untyped_storage().data_ptr()


def _distinct(leaves, others=()):
    """No two leaves' .grad share memory, nor a .grad with one of `others`."""
    ps = [_ptr(p.grad) for p in leaves if p.grad is not None]
    return len(set(ps)) == len(ps) and not set(ps) & {_ptr(o) for o in others}


# ---- weight sharing, tied weights, parameters through views and joins --------------------------
def test_one_parameter_used_twice_and_accumulated():
    w = tl.randn(3, requires_grad=True)
    x = tl.randn(3)
    for k in (1, 2, 3):
        (w * x + w * 2).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), k * (x.numpy() + 2), rtol=1e-6)
    held = w.grad
    (w * 2).sum().backward()                      # accumulates in place: the held one too
    assert held is w.grad


def test_tied_embedding_and_head_with_an_optimizer_step():
    tl.manual_seed(0)
    emb, head = nn.Embedding(10, 4), nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    idx = tl.tensor([1, 2, 3, 1])
    W = emb.weight.detach().numpy().copy()
    head(emb(idx)).sum().backward()
    # d/dW sum(E[idx] @ W.T) = onehot(idx).T @ (1 @ W) + 1.T @ E[idx]
    onehot = np.eye(10)[[1, 2, 3, 1]]
    want = onehot.T @ (np.ones((4, 10)) @ W) + np.ones((4, 10)).T @ W[[1, 2, 3, 1]]
    np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-5, atol=1e-5)
    tl.optim.SGD(emb.parameters(), lr=0.1).step()
    np.testing.assert_allclose(emb.weight.detach().numpy(), W - 0.1 * want, rtol=1e-5, atol=1e-5)


_VIEWS = {
    "index": (lambda p: p[0] * 3, lambda a, g: np.r_[3 * g[None], np.zeros((1, 3))]),
    "t": (lambda p: p.t() * 2, lambda a, g: 2 * g.T),
    "view": (lambda p: p.view(6) * 2, lambda a, g: 2 * g.reshape(2, 3)),
    "expand": (lambda p: p[:1].expand(4, 3) * 2, lambda a, g: np.r_[2 * g.sum(0)[None], np.zeros((1, 3))]),
    "unsqueeze": (lambda p: p.unsqueeze(0) * 2, lambda a, g: 2 * g[0]),
    "permute": (lambda p: p.permute(1, 0) * 2, lambda a, g: 2 * g.T),
    "narrow": (lambda p: p.narrow(1, 0, 2) * 2, lambda a, g: np.c_[2 * g, np.zeros(2)]),
    "identity_view": (lambda p: p.view(2, 3), lambda a, g: g),
    "clone": (lambda p: p.clone(), lambda a, g: g),
    "contiguous": (lambda p: p.contiguous(), lambda a, g: g),
    "plus_zero": (lambda p: p + 0, lambda a, g: g),
    "to_same_dtype": (lambda p: p.to(tl.float32), lambda a, g: g),
}


@pytest.mark.parametrize("name", list(_VIEWS))
def test_parameter_through_a_view_with_a_user_gradient(name):
    f, want_of = _VIEWS[name]
    p = tl.arange(6.0).reshape(2, 3).requires_grad_()
    y = f(p)
    g = np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)) + 1
    gt = tl.tensor(g)
    y.backward(gt)
    want = want_of(p, g)
    np.testing.assert_allclose(p.grad.numpy(), want)
    assert p.grad.stride() == p.stride()
    assert _distinct([p], [gt, p])
    gt.fill_(100.0)                               # the caller's gradient changes: .grad does not
    np.testing.assert_allclose(p.grad.numpy(), want)
    f(p).backward(tl.tensor(g))
    np.testing.assert_allclose(p.grad.numpy(), 2 * want)
    p.grad.add_(1.0)                              # and .grad changing leaves p and g alone
    np.testing.assert_allclose(p.detach().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(gt.numpy(), np.full(g.shape, 100.0))


def test_cat_stack_split_chunk_unbind_of_parameters():
    a, b = tl.randn(2, 3, requires_grad=True), tl.randn(2, 3, requires_grad=True)
    for make in (lambda: tl.cat([a, b]), lambda: tl.stack([a, b]), lambda: tl.cat([a, b], 1)):
        a.grad = b.grad = None
        y = make()
        g = tl.randn(*y.shape)
        g0 = g.numpy().copy()
        y.backward(g)
        assert _distinct([a, b], [g])
        a.grad.add_(1.0)
        b.grad.mul_(0.0)
        np.testing.assert_array_equal(g.numpy(), g0)
    p = tl.randn(4, 3, requires_grad=True)
    for make in (lambda: p.split(2), lambda: p.chunk(2), lambda: p.unbind(0), lambda: p.split([1, 3])):
        p.grad = None
        parts = make()
        gs = [tl.randn(*q.shape) for q in parts]
        tl.autograd.backward(parts, gs)
        want = np.concatenate([g.numpy().reshape(q.shape) for g, q in zip(gs, parts)]).reshape(4, 3)
        np.testing.assert_allclose(p.grad.numpy(), want)
        assert _distinct([p], gs)
        p.grad.add_(5.0)
        got = np.concatenate([g.numpy().reshape(q.shape) for g, q in zip(gs, parts)]).reshape(4, 3)
        np.testing.assert_array_equal(got, want)


# ---- custom Functions returning tensors something else holds ------------------------------------
_GLOBAL = tl.full((3,), 4.0)


def _fn(backward):
    class Fn(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.k = tl.full((3,), 3.0)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return backward(ctx, g)
    return Fn


_KEPT = []
_BACKWARDS = {
    "global": lambda ctx, g: _GLOBAL,
    "global_view": lambda ctx, g: _GLOBAL.view(3),
    "global_view_of_view": lambda ctx, g: _GLOBAL.view(1, 3).view(3),
    "global_detach": lambda ctx, g: _GLOBAL.detach(),
    "global_data": lambda ctx, g: _GLOBAL.data,
    "global_as_strided": lambda ctx, g: _GLOBAL.as_strided((3,), (1,)),
    "ctx_attribute": lambda ctx, g: ctx.k,
    "kept_product": lambda ctx, g: _KEPT.append(g * 2) or _KEPT[-1],
    "kept_numpy": lambda ctx, g: (lambda r: _KEPT.append(r.numpy()) or r)(g * 2),
    "kept_dlpack": lambda ctx, g: (lambda r: _KEPT.append(np.from_dlpack(r)) or r)(g * 2),
    "kept_storage": lambda ctx, g: (lambda r: _KEPT.append(tl.empty(0).set_(r.untyped_storage())) or r)(g * 2),
    "kept_view": lambda ctx, g: (lambda r: _KEPT.append(r[1:]) or r)(g * 2),
}


@pytest.mark.parametrize("name", list(_BACKWARDS))
def test_custom_function_gradient_held_elsewhere_is_copied(name):
    _GLOBAL.fill_(4.0)
    _KEPT.clear()
    w = tl.ones(3, requires_grad=True)
    _fn(_BACKWARDS[name]).apply(w).sum().backward()
    first = w.grad.numpy().copy()
    kept = [np.array(k.numpy() if isinstance(k, tl.Tensor) else k, copy=True) for k in _KEPT]
    w.grad.add_(10.0)
    np.testing.assert_array_equal(_GLOBAL.numpy(), np.full(3, 4.0))
    for k, before in zip(_KEPT, kept):
        np.testing.assert_array_equal(k.numpy() if isinstance(k, tl.Tensor) else k, before)
    np.testing.assert_array_equal(w.grad.numpy(), first + 10.0)


def test_custom_function_returning_grad_output_to_two_inputs():
    class Both(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BothViews(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g.view(3), g.view(3)
    for fn in (Both, BothViews):
        a, b = tl.ones(3, requires_grad=True), tl.ones(3, requires_grad=True)
        (fn.apply(a, b) * 2).sum().backward()
        assert _distinct([a, b])
        a.grad.add_(1.0)
        np.testing.assert_array_equal(b.grad.numpy(), np.full(3, 2.0))


def test_custom_function_returning_its_saved_output():
    class SavedOut(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return ctx.saved_tensors[0]
    w = tl.zeros(3, requires_grad=True)
    y = SavedOut.apply(w)
    y.sum().backward()
    w.grad.add_(1.0)
    np.testing.assert_array_equal(y.detach().numpy(), np.ones(3))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))


# ---- hooks -------------------------------------------------------------------------------------
def test_tensor_and_post_accumulate_hooks():
    w = tl.ones(3, requires_grad=True)
    kept, post = [], []
    w.register_hook(lambda g: kept.append(g))
    w.register_post_accumulate_grad_hook(lambda p: post.append(p.grad))
    (w * 2).sum().backward()
    (w * 2).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), np.full(3, 2.0))
    # the post-accumulate hook sees .grad itself (PyTorch's too), updated in place
    assert post[0] is post[1] is w.grad
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 4.0))
    y = w * 1.0
    y.register_hook(lambda g: kept.append(g))       # an intermediate's gradient, kept
    (y * 3).sum().backward()
    w.grad.zero_()
    np.testing.assert_array_equal(kept[-1].numpy(), np.full(3, 3.0))


@pytest.mark.parametrize("make", [lambda w: w.view(3), lambda w: w + 0, lambda w: w * 1])
def test_retain_grad_and_leaf_do_not_share(make):
    w = tl.ones(3, requires_grad=True)
    y = make(w)
    y.retain_grad()
    (y * 3).sum().backward()
    assert _ptr(w.grad) != _ptr(y.grad)
    w.grad.add_(1.0)
    np.testing.assert_array_equal(y.grad.numpy(), np.full(3, 3.0))


def test_module_full_backward_hooks_keep_their_gradients():
    tl.manual_seed(0)
    m = nn.Linear(3, 3)
    kept = []
    m.register_full_backward_hook(lambda mod, gi, go: kept.append((gi, go)))
    x = tl.randn(2, 3, requires_grad=True)
    m(x).sum().backward()
    gi0, go0 = kept[0][0][0].numpy().copy(), kept[0][1][0].numpy().copy()
    for p in (x, m.weight, m.bias):
        p.grad.add_(100.0)
    np.testing.assert_array_equal(kept[0][0][0].numpy(), gi0)
    np.testing.assert_array_equal(kept[0][1][0].numpy(), go0)
    assert _distinct([x, m.weight, m.bias])


def test_node_hooks_keep_their_gradients():
    w = tl.ones(3, requires_grad=True)
    kept = []
    y = w * 2
    y.grad_fn.register_hook(lambda gi, go: kept.append(gi))
    y.grad_fn.register_prehook(lambda go: kept.append(go))
    y.sum().backward()
    snap = [[t.numpy().copy() for t in k if t is not None] for k in kept]
    w.grad.add_(5.0)
    for k, s in zip(kept, snap):
        for t, v in zip([t for t in k if t is not None], s):
            np.testing.assert_array_equal(t.numpy(), v)


def test_accumulate_grad_node_hooks_run():
    """A leaf's AccumulateGrad node (grad_fn.next_functions[0][0]) runs its pre-hooks, which
    may replace the gradient, and its hooks, as PyTorch's: they were never called."""
    w = tl.ones(3, requires_grad=True)
    calls = []
    y = w * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: calls.append(("pre", go[0].numpy().copy())))
    acc.register_hook(lambda gi, go: calls.append(("post", gi, go[0].numpy().copy())))
    y.sum().backward()
    assert [c[0] for c in calls] == ["pre", "post"]
    np.testing.assert_array_equal(calls[0][1], np.full(3, 2.0))
    assert calls[1][1] == ()
    # a pre-hook's replacement is what accumulates; one from outside is copied
    outside = tl.full((3,), 7.0)
    w2 = tl.ones(3, requires_grad=True)
    y2 = w2 * 2
    h = y2.grad_fn.next_functions[0][0].register_prehook(lambda go: (outside,))
    y2.sum().backward()
    np.testing.assert_array_equal(w2.grad.numpy(), np.full(3, 7.0))
    w2.grad.add_(1.0)
    np.testing.assert_array_equal(outside.numpy(), np.full(3, 7.0))
    h.remove()
    # backward(inputs=...) runs the node too; autograd.grad does not
    y3 = w2 * 2
    n3 = y3.grad_fn.next_functions[0][0]
    seen = []
    n3.register_prehook(lambda go: seen.append(1) or (go[0] * 10,))
    (y3 * 1).sum().backward(inputs=[w2])
    np.testing.assert_array_equal(w2.grad.numpy(), np.full(3, 28.0))
    (g,) = tl.autograd.grad((w2 * 2).sum(), w2)
    np.testing.assert_array_equal(g.numpy(), np.full(3, 2.0))
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="changed the type"):
        n3.register_prehook(lambda go: (go[0].double(),))
        (w2 * 2).sum().backward()


def test_accumulate_grad_node_hooks_against_pytorch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (tl, torch):
        w = lib.ones(3, requires_grad=True)
        log = []
        y = w * 2
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: (go[0] * 3,))
        acc.register_hook(lambda gi, go: log.append((len(gi), go[0].detach().numpy().copy())))
        y.sum().backward()
        out.append((w.grad.numpy().copy(), log))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1][0][0] == out[1][1][0][0]
    np.testing.assert_array_equal(out[0][1][0][1], out[1][1][0][1])


# ---- backward variants --------------------------------------------------------------------------
def test_backward_inputs_and_autograd_grad():
    a, b = tl.ones(3, requires_grad=True), tl.ones(3, requires_grad=True)
    (a * 2 + b * 3).sum().backward(inputs=[a, b])
    a.grad.add_(1.0)
    np.testing.assert_array_equal(b.grad.numpy(), np.full(3, 3.0))
    y = a + 0
    (y * 2).sum().backward(inputs=[a, y])
    assert _ptr(a.grad) != _ptr(y.grad)
    a.grad.add_(1.0)
    np.testing.assert_array_equal(y.grad.numpy(), np.full(3, 2.0))
    c = tl.ones(3, requires_grad=True)
    (g,) = tl.autograd.grad((c * 2).sum(), c)
    assert c.grad is None
    g.add_(1.0)                                 # autograd.grad's result is the caller's own
    (g2,) = tl.autograd.grad((c * 2).sum(), c)
    np.testing.assert_array_equal(g2.numpy(), np.full(3, 2.0))


def test_retain_graph_create_graph_and_accumulation():
    a = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (a * a).sum()
    y.backward(retain_graph=True)
    first = a.grad
    y.backward()
    assert first is a.grad
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 8.0, 12.0])
    b = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (b ** 2).sum().backward()
    held = b.grad
    (b ** 2).sum().backward(create_graph=True)
    np.testing.assert_array_equal(held.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(b.grad.detach().numpy(), [4.0, 8.0, 12.0])
    assert b.grad.requires_grad


def test_checkpoint_matches_plain_backward():
    from torchlite.utils.checkpoint import checkpoint
    tl.manual_seed(0)
    lin = nn.Linear(4, 4)
    x = tl.randn(2, 4, requires_grad=True)
    F.gelu(lin(x)).sum().backward()
    want = [t.grad.numpy().copy() for t in (lin.weight, lin.bias, x)]
    for reentrant in (False, True):
        lin.zero_grad()
        x.grad = None
        checkpoint(lambda t: F.gelu(lin(t)), x, use_reentrant=reentrant).sum().backward()
        for t, w in zip((lin.weight, lin.bias, x), want):
            np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-6)
        assert _distinct([lin.weight, lin.bias, x])


# ---- training loops against PyTorch -------------------------------------------------------------
def _train(lib, opt_name, kw, clip, set_to_none, accum, scaler):
    rng = np.random.default_rng(0)
    l1, l2 = lib.nn.Linear(5, 8), lib.nn.Linear(8, 3)
    with lib.no_grad():
        l1.weight.copy_(lib.tensor(rng.normal(size=(8, 5)).astype(np.float32)))
        l1.bias.zero_()
        l2.weight.copy_(lib.tensor(rng.normal(size=(3, 8)).astype(np.float32)))
        l2.bias.fill_(0.1)
    params = list(l1.parameters()) + list(l2.parameters())
    opt = getattr(lib.optim, opt_name)(params, **kw)
    sc = lib.amp.GradScaler("cpu", init_scale=8.0) if scaler else None
    for _ in range(3):
        opt.zero_grad(set_to_none=set_to_none)
        for _ in range(accum):
            x = lib.tensor(rng.normal(size=(4, 5)).astype(np.float32))
            loss = lib.nn.functional.silu(l2(lib.nn.functional.gelu(l1(x)))).pow(2).sum()
            (sc.scale(loss) if sc else loss).backward()
        if sc:
            sc.unscale_(opt)
        if clip:
            lib.nn.utils.clip_grad_norm_(params, 0.5)
        if sc:
            sc.step(opt)
            sc.update()
        else:
            opt.step()
    return [p.detach().numpy().copy() for p in params], [p.grad.numpy().copy() for p in params]


@pytest.mark.parametrize("opt_name,kw", [
    ("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1, momentum=0.9, foreach=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, foreach=True)), ("Adam", dict(lr=0.01, fused=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)), ("RMSprop", dict(lr=0.01)), ("Adagrad", dict(lr=0.1))])
@pytest.mark.parametrize("variant", ["plain", "clip_zero_false_accum", "scaler"])
def test_training_loop_against_pytorch(opt_name, kw, variant):
    torch = pytest.importorskip("torch")
    args = dict(clip=variant != "plain", set_to_none=variant == "plain", accum=2 if variant != "plain" else 1,
                scaler=variant == "scaler")
    a, ag = _train(tl, opt_name, kw, **args)
    b, bg = _train(torch, opt_name, kw, **args)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
    for x, y in zip(ag, bg):
        np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-4)


# ---- dtypes, layouts, special tensors -----------------------------------------------------------
def test_float64_leaf_with_a_float32_gradient():
    keep = []

    class F32(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.float() * 2

        @staticmethod
        def backward(ctx, g):
            keep.append(g)
            return g
    w = tl.ones(3, dtype=tl.float64, requires_grad=True)
    F32.apply(w).sum().backward()
    assert w.grad.dtype == tl.float64
    w.grad.add_(1.0)
    np.testing.assert_array_equal(keep[0].numpy(), np.ones(3))
    v = tl.ones(3, dtype=tl.float64, requires_grad=True)
    (v.float() * 3).sum().backward()
    assert v.grad.dtype == tl.float64
    np.testing.assert_array_equal(v.grad.numpy(), np.full(3, 3.0))


def test_grad_strides_follow_the_parameter_against_pytorch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (tl, torch):
        p = lib.tensor(np.arange(24, dtype=np.float32).reshape(4, 6)).t().detach().requires_grad_()
        q = lib.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)).to(
            memory_format=lib.channels_last).requires_grad_()
        r = lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))[:, ::2].detach().requires_grad_()
        s = lib.tensor(np.arange(3, dtype=np.float32)).reshape(1, 3).expand(4, 3).detach().requires_grad_()
        m = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
        ((p * 2).sum() + (q * 3).sum() + (r * 4).sum() + (s * m).sum()).backward()
        (p.t() * 1.0).sum().backward()
        (q * q).sum().backward()
        (r * 1).sum().backward()
        (s * 1).sum().backward()
        out.append([(t.grad.stride(), t.grad.numpy().copy()) for t in (p, q, r, s)])
    for (sa, ga), (sb, gb) in zip(*out):
        assert sa == sb
        np.testing.assert_allclose(ga, gb)


def test_complex_and_zero_dim_parameters():
    w = tl.tensor(np.array([1 + 2j, 3 - 1j], dtype=np.complex64), requires_grad=True)
    (w * w.conj()).real.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([1 + 2j, 3 - 1j]), rtol=1e-6)
    r = tl.tensor(np.arange(4, dtype=np.float32).reshape(2, 2), requires_grad=True)
    c = tl.view_as_complex(r)
    (c * tl.tensor(np.array([1j, 2], dtype=np.complex64))).real.sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), [[0.0, -1.0], [2.0, 0.0]])
    a, b = tl.tensor(2.0, requires_grad=True), tl.tensor(3.0, requires_grad=True)
    (a * b).backward()
    (a + b).backward()
    np.testing.assert_array_equal([a.grad.item(), b.grad.item()], [4.0, 3.0])
    s = tl.tensor(1.5, requires_grad=True)
    s.backward()                                  # the root is the leaf
    s.grad.add_(1.0)
    assert s.item() == 1.5 and s.grad.item() == 2.0
    u = tl.ones(3, requires_grad=True)
    g = tl.full((3,), 2.0)
    u.backward(g)
    u.grad.add_(1.0)
    np.testing.assert_array_equal(g.numpy(), np.full(3, 2.0))


def test_embedding_gradients_against_pytorch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (tl, torch):
        e, e2 = lib.nn.Embedding(6, 3), lib.nn.Embedding(6, 3, padding_idx=0)
        with lib.no_grad():
            e.weight.copy_(lib.tensor(np.arange(18, dtype=np.float32).reshape(6, 3)))
            e2.weight.copy_(e.weight)
        idx = lib.tensor([0, 2, 2, 5])
        (e(idx) * 2).sum().backward()
        (e2(idx) * e(idx)).sum().backward()
        (lib.nn.functional.embedding(idx, e.weight) ** 2).sum().backward()
        out.append([e.weight.grad.numpy().copy(), e2.weight.grad.numpy().copy()])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_numpy_backed_gradients_and_parameters():
    arr = np.ones(3, dtype=np.float32)
    w = tl.ones(3, requires_grad=True)
    (w * 2).backward(tl.from_numpy(arr))
    w.grad.add_(1.0)
    np.testing.assert_array_equal(arr, np.ones(3))
    parr = np.ones(3, dtype=np.float32)
    p = tl.from_numpy(parr).requires_grad_()
    (p * 2).sum().backward()
    tl.optim.SGD([p], lr=0.5).step()
    np.testing.assert_array_equal(parr, np.zeros(3))     # the step writes into NumPy's memory
    np.testing.assert_array_equal(p.grad.numpy(), np.full(3, 2.0))


def test_meta_parameters():
    w = tl.empty(3, 4, device="meta", requires_grad=True)
    (w * 2).sum().backward()
    (w * 2).sum().backward()
    assert w.grad.device.type == "meta" and w.grad.shape == (3, 4)


def test_a_stolen_grad_is_a_plain_tensor():
    """A gradient taken without a copy may have been a view (Linear's weight gradient): .grad
    itself must not be one (detach_, set_, saving behave as for any tensor)."""
    tl.manual_seed(0)
    m = nn.Linear(4, 3)
    m(tl.randn(5, 4)).pow(2).sum().backward()
    g = m.weight.grad
    assert not g._is_view() and g._base is None
    assert g.untyped_storage().nbytes() == 12 * 4
    buf = io.BytesIO()
    tl.save(g, buf)
    buf.seek(0)
    np.testing.assert_array_equal(tl.load(buf).numpy(), g.numpy())
    g.detach_()
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((3, 4)))


def test_user_assigned_grad_accumulates_in_place():
    w = tl.ones(3, requires_grad=True)
    t = tl.zeros(3)
    w.grad = t
    (w * 2).sum().backward()
    np.testing.assert_array_equal(t.numpy(), np.full(3, 2.0))      # PyTorch's too
