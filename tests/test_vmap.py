"""torchlite.func.vmap with batching rules (torchlite/_vmap): every case against the oracle
of a Python loop -- the function called on each element's slice outside vmap, the results
stacked -- and, for the cases with a rule, with the fallback loop forbidden, so that a rule
that stopped applying fails instead of silently running per element.  Per-sample gradients
against one func.grad per sample, and torch.func where PyTorch is installed."""
import contextlib

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite import func
from torchlite._vmap import batched as _batched


@contextlib.contextmanager
def no_fallback():
    """Fail if any operation inside runs by the per-element loop."""
    original = _batched.loop

    def forbidden(fn, args, kwargs, inplace_self=None):
        raise AssertionError(f"vmap fell back to the loop for {getattr(fn, '__name__', fn)}")
    _batched.loop = forbidden
    try:
        yield
    finally:
        _batched.loop = original


def _loop_oracle(f, args, in_dims, out_dims):
    dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
    n = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    outs = [f(*[a if d is None else a.select(d, i) for a, d in zip(args, dims)])
            for i in range(n)]
    if isinstance(outs[0], tuple):
        od = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outs[0])
        return tuple(tl.stack([o[k] for o in outs], od[k]) for k in range(len(outs[0])))
    return tl.stack(outs, out_dims)


def check_vmap(f, *args, in_dims=0, out_dims=0, ruled=True, atol=1e-6):
    expected = _loop_oracle(f, args, in_dims, out_dims)
    with no_fallback() if ruled else contextlib.nullcontext():
        got = func.vmap(f, in_dims=in_dims, out_dims=out_dims)(*args)
    exp = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert isinstance(g, tl.Tensor), type(g)
        assert tuple(g.shape) == tuple(e.shape), (tuple(g.shape), tuple(e.shape))
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=atol)


def r(*shape, seed=0):
    return tl.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


X, Y, V, M = r(4, 3, 5), r(4, 5, seed=1), r(5, seed=2), r(5, 2, seed=3)

ELEMENTWISE_CASES = {
    "add batched + batched lower rank": (lambda a, b: a + b, (X, Y), 0),
    "sub unbatched left": (lambda a, b: b - a, (X, V), (0, None)),
    "mul scalar, rsub, rpow": (lambda a: 2.0 - a * 3 + 2 ** a.clamp(-1, 1), (X,), 0),
    "tensor op batched (reflected)": (lambda a: V * a + V / (a.abs() + 1), (X,), 0),
    "comparisons and where": (lambda a, b: tl.where(a > b, a, b * 2), (X, Y), 0),
    "unary chain": (lambda a: a.exp().log1p().tanh().sigmoid().sqrt(), (X,), 0),
    "F activations": (lambda a: F.gelu(a) + F.silu(a) + F.leaky_relu(a, 0.1) + F.softplus(a),
                      (X,), 0),
    "masked_fill": (lambda a: a.masked_fill(a > 0, 0.5), (X,), 0),
    "in_dims=1": (lambda a: a * 2 + 1, (X,), 1),
    "in_dims=-1": (lambda a, b: a * b, (X, r(3)), (-1, None)),
    "clamp with tensors": (lambda a, b: tl.clamp(a, min=b, max=b + 1), (X, Y), 0),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE_CASES))
def test_elementwise_rules_match_the_loop(name):
    f, args, in_dims = ELEMENTWISE_CASES[name]
    check_vmap(f, *args, in_dims=in_dims)


REDUCTION_CASES = {
    "sum all": lambda a: a.sum(),
    "sum dim": lambda a: a.sum(1),
    "sum dims keepdim": lambda a: tl.sum(a, (0, -1), keepdim=True),
    "mean -1": lambda a: a.mean(-1),
    "amax all": lambda a: a.amax(),
    "prod all": lambda a: a.prod(),
    "argmax all": lambda a: a.argmax(),
    "argmin dim": lambda a: a.argmin(0),
    "max dim": lambda a: tuple(a.max(1)),
    "max all": lambda a: a.max(),
    "min binary": lambda a: tl.min(a, a.flip(0)),
    "var std": lambda a: (a.var(0), a.std(1, unbiased=False)),
    "logsumexp": lambda a: a.logsumexp(-1),
    "softmax": lambda a: F.softmax(a, dim=0) + F.log_softmax(a, -1),
    "cumsum": lambda a: a.cumsum(1),
    "sort": lambda a: tuple(a.sort(0, descending=True)),
    "topk": lambda a: tuple(a.topk(2)),
    "norm": lambda a: F.normalize(a, dim=-1),
    "median all": lambda a: a.median(),
    "all any": lambda a: ((a > 0).all(), (a > 1).any(1)),
}


@pytest.mark.parametrize("name", list(REDUCTION_CASES))
def test_dim_rules_match_the_loop(name):
    check_vmap(REDUCTION_CASES[name], X)


SHAPE_CASES = {
    "view/reshape": lambda a: a.view(15) + a.reshape(5, 3).t().reshape(-1),
    "permute/transpose/T": lambda a: a.permute(1, 0) + a.transpose(0, 1) + a.T + a.mT,
    "unsqueeze/squeeze": lambda a: a.unsqueeze(0).unsqueeze(-1).squeeze(),
    "flatten/unflatten": lambda a: a.unsqueeze(1).flatten(1).unflatten(0, (3, 1)),
    "expand/repeat": lambda a: a[:, :1].expand(2, 3, 4) + a[:, :4].repeat(2, 1, 1),
    "index": lambda a: a[1, :3] + a[:, 2] + a[..., -1].sum() + a[None, 0, 1:3].sum(),
    "index tensor": lambda a: a[tl.tensor([2, 0])] + a[:, tl.tensor([1, 1, 4])].sum(),
    "select narrow": lambda a: a.select(1, 2) + a.narrow(1, 1, 3).sum(1),
    "cat stack": lambda a: tl.cat([a, a * 2, tl.ones(3, 5)], 1).sum(0)[:5] + tl.stack([a, a], -1).sum((0, 2)),
    "split chunk unbind": lambda a: a.split(2, 1)[0].sum() + a.chunk(3)[1].sum() + a.unbind(1)[4],
    "movedim flip roll": lambda a: a.movedim(0, 1).flip(0) + a.roll(1, 0).T + a.roll(2).T,
    "diagonal tril": lambda a: a[:, :3].diagonal() + a[:, :3].tril().sum(0) + tl.diag(a[0]).sum(0)[:3],
    "gather": lambda a: a.gather(1, tl.tensor([[0, 4], [1, 1], [2, 3]])),
    "len/iter/size": lambda a: a[len(a) - 1] * a.size(1) + sum(a),
}


@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_shape_and_indexing_rules_match_the_loop(name):
    check_vmap(SHAPE_CASES[name], X)


PRODUCT_CASES = {
    "matmul batched @ matrix": (lambda a, b: a @ b, (X, M), (0, None)),
    "matrix @ batched": (lambda a, b: b.T @ a, (X, r(3, 2)), (0, None)),
    "vector @ batched": (lambda a, b: b @ a, (X, r(3)), (0, None)),
    "batched vector @ matrix": (lambda a, b: a @ b, (Y, M), (0, None)),
    "batched @ batched": (lambda a, b: a @ b.T, (X, X), 0),
    "batched vectors dot": (lambda a, b: tl.dot(a, b), (Y, Y), 0),
    "mv, mm, outer": (lambda a, b: tl.mv(a, b) + tl.mm(a, tl.outer(b, b)).sum(1), (X, Y), 0),
    "3-d unbatched @ batched matrix": (lambda a, b: b @ a, (X, r(2, 5, 3)), (0, None)),
    "linear": (lambda a, w, b: F.linear(a, w, b), (X, r(2, 5), r(2)), (0, None, None)),
    "linear batched weight": (lambda a, w: F.linear(a, w), (X, r(4, 2, 5)), (None, 0)),
    "addmm": (lambda a, b: tl.addmm(b[0, :2], a[:, :2], b[:2, :2], beta=0.5, alpha=2),
              (X, X), 0),
    "einsum": (lambda a, b: tl.einsum("ij,jk->ik", a, b), (X, M), (0, None)),
    "einsum both": (lambda a, b: tl.einsum("ij,ij->i", a, b), (X, X), 0),
}


@pytest.mark.parametrize("name", list(PRODUCT_CASES))
def test_product_rules_match_the_loop(name):
    f, args, in_dims = PRODUCT_CASES[name]
    check_vmap(f, *args, in_dims=in_dims, atol=1e-5)


def test_layers_and_losses_match_the_loop():
    img = r(4, 2, 3, 6, 6)                 # 4 elements of a [2, 3, 6, 6] batch
    w = r(5, 3, 3, 3, seed=5)
    check_vmap(lambda a: F.conv2d(a, w, padding=1), img, atol=1e-5)
    check_vmap(lambda a: F.conv2d(a[0], w), img, atol=1e-5)
    check_vmap(lambda a, k: F.conv2d(a, k, stride=2), img, r(4, 5, 3, 3, 3), atol=1e-5)
    check_vmap(lambda a: F.max_pool2d(a, 2) + F.avg_pool2d(a, 2), img)
    check_vmap(lambda a: F.layer_norm(a, (5,)) + F.pad(a, (1, 1))[..., 1:-1], X)
    target = tl.tensor([[1, 4, -100], [0, 0, 2], [3, 3, 3], [-100, -100, 1]])
    logits = r(4, 3, 5)
    weight = tl.tensor([1.0, 2.0, 0.5, 1.0, 3.0])
    for kw in ({}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": weight},
               {"label_smoothing": 0.1}):
        check_vmap(lambda a, t: F.cross_entropy(a, t, **kw), logits, target, atol=1e-5)
    check_vmap(lambda a, t: F.nll_loss(F.log_softmax(a, -1), t), logits, target)
    check_vmap(lambda a, b: F.mse_loss(a, b) + F.l1_loss(a, b, reduction="sum"), X, X.flip(0))
    check_vmap(lambda a: F.binary_cross_entropy_with_logits(a, (a > 0).float()), X)


def test_fallback_runs_what_has_no_rule():
    # nonzero has no rule: per element, equal sizes here so the results stack
    m = tl.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])
    check_vmap(lambda a: tl.nonzero(a), m, ruled=False)
    check_vmap(lambda a: tl.kron(a, a), r(3, 2, 2), ruled=False)
    with pytest.raises(RuntimeError):                 # sizes that differ cannot stack
        func.vmap(lambda a: tl.nonzero(a))(tl.tensor([[1.0, 0.0], [1.0, 1.0]]))


def test_in_place_and_setitem():
    def f(a, b):
        c = a.clone()
        c.add_(b)
        c[0] = 7.0
        c[1:, 2] = b[:2]
        c.mul_(2).clamp_(max=10)
        return c
    check_vmap(f, X, r(5), in_dims=(0, None))
    check_vmap(f, X, Y)
    with pytest.raises(RuntimeError, match="not possible"):
        func.vmap(lambda a, b: a[0].add_(b))(Y, X)


def test_per_sample_gradients_match_one_grad_per_sample():
    rng = np.random.default_rng(0)
    params = {"w1": r(16, 8), "b1": r(16, seed=1), "w2": r(3, 16, seed=2), "b2": r(3, seed=3)}
    x = r(6, 8, seed=4)
    y = tl.tensor(rng.integers(0, 3, 6))

    def loss(p, xi, yi):
        h = F.relu(F.linear(xi, p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]).unsqueeze(0), yi.unsqueeze(0))
    with no_fallback():
        got = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for k in params:
        ref = tl.stack([func.grad(loss)(params, x[i], y[i])[k] for i in range(6)])
        np.testing.assert_allclose(got[k].numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    # grad_and_value, has_aux, grad with respect to the batched argument
    g, (v, aux) = func.vmap(func.grad_and_value(lambda p, xi: ((p["w1"] @ xi).pow(2).sum(),
                                                               xi.sum()), has_aux=True),
                            in_dims=(None, 0))(params, x)
    np.testing.assert_allclose(v.numpy(), ((x @ params["w1"].T) ** 2).sum(1).numpy(),
                               rtol=1e-5)
    np.testing.assert_allclose(aux.numpy(), x.sum(1).numpy(), rtol=1e-5)
    gx = func.vmap(func.grad(lambda xi: (xi.sin() * xi).sum()))(x.double())
    xd = x.double().numpy()
    np.testing.assert_allclose(gx.numpy(), np.cos(xd) * xd + np.sin(xd), rtol=1e-12)


def test_per_sample_gradients_of_a_cnn_use_the_grouped_convolution():
    w = r(4, 2, 3, 3)
    x = r(5, 2, 6, 6, seed=1)

    def loss(wt, xi):
        return F.conv2d(xi.unsqueeze(0), wt, padding=1).tanh().sum()
    with no_fallback():
        got = func.vmap(func.grad(loss), in_dims=(None, 0))(w, x)
    ref = tl.stack([func.grad(loss)(w, x[i]) for i in range(5)])
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


def test_nested_vmap_chunks_and_out_dims():
    a, b = r(3, 4), r(5, 4, seed=1)
    pair = func.vmap(func.vmap(lambda u, v: (u * v).sum(), in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_allclose(pair(a, b).numpy(), (a @ b.T).numpy(), rtol=1e-5, atol=1e-6)
    f = lambda u: (u * 2, u.sum())
    whole = func.vmap(f, out_dims=(1, 0))(X)
    chunked = func.vmap(f, out_dims=(1, 0), chunk_size=3)(X)
    assert tuple(whole[0].shape) == (3, 4, 5)
    for u, v in zip(whole, chunked):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    const = func.vmap(lambda u: tl.ones(2))(X)        # an unbatched output is expanded
    assert tuple(const.shape) == (4, 2)
    tree = func.vmap(lambda d: {"s": d["a"] + d["b"]}, in_dims=({"a": 0, "b": None},))(
        {"a": X, "b": V})
    np.testing.assert_allclose(tree["s"].numpy(), (X + V).numpy())


def test_randomness_modes():
    x = tl.ones(6, 100)
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda a: F.dropout(a, 0.5))(x)
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda a: a + tl.rand(100))(x)
    assert tl.equal(func.vmap(lambda a: F.dropout(a, 0.5, training=False))(x), x)
    tl.manual_seed(0)
    diff = func.vmap(lambda a: F.dropout(a, 0.5), randomness="different")(x)
    assert not all(tl.equal(diff[0], diff[i]) for i in range(1, 6))
    same = func.vmap(lambda a: F.dropout(a, 0.5), randomness="same")(x)
    assert all(tl.equal(same[0], same[i]) for i in range(1, 6))
    assert 20 < int((same[0] == 0).sum()) < 80
    noise = func.vmap(lambda a: a + tl.randn(100), randomness="different")(x)
    assert not tl.equal(noise[0], noise[1])
    noise = func.vmap(lambda a: a + tl.randn(100), randomness="same")(x)
    assert tl.equal(noise[0], noise[5])
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda a: a, randomness="sometimes")


def test_errors_and_the_door_closing():
    add = tl.add
    with pytest.raises(RuntimeError, match="item"):
        func.vmap(lambda a: a.sum().item())(X)
    with pytest.raises(RuntimeError, match="control flow"):
        func.vmap(lambda a: a if a.sum() > 0 else -a)(X)
    with pytest.raises(ValueError, match="same size"):
        func.vmap(lambda a, b: a + b)(X, tl.ones(3, 3, 5))
    with pytest.raises(ValueError, match="non-Tensor"):
        func.vmap(lambda a, k: a * k)(X, 2.0)
    with pytest.raises(ValueError, match="in_dim"):
        func.vmap(lambda a: a, in_dims=3)(X)
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 3)(X)
    with pytest.raises(ValueError, match="chunk_size"):
        func.vmap(lambda a: a, chunk_size=0)
    assert tl.add is add and tl.Tensor.__add__ is not None      # the door is closed again
    assert tl.add(tl.ones(2), 1).tolist() == [2.0, 2.0]


def test_against_torch_func_where_installed():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    t = rng.integers(0, 4, 5)

    def make(lib):
        Fn = lib.nn.functional

        def loss(wt, xi, ti):
            return Fn.cross_entropy(Fn.linear(xi, wt).tanh().unsqueeze(0), ti.unsqueeze(0))
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    ours = make(tl)(tl.tensor(w), tl.tensor(x), tl.tensor(t))
    theirs = make(torch)(torch.tensor(w), torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-6)


def test_other_transforms_inside_vmap_run_per_element():
    x = r(3, 4).double()
    f = lambda u: (u.sin() * u.sum()).tanh()
    jr = func.vmap(func.jacrev(f))(x)
    jf = func.vmap(func.jacfwd(f))(x)
    ref = tl.stack([func.jacrev(f)(x[i]) for i in range(3)])
    np.testing.assert_allclose(jr.numpy(), ref.numpy(), rtol=1e-10)
    np.testing.assert_allclose(jf.numpy(), ref.numpy(), rtol=1e-10)
    _, t = func.vmap(lambda p, v: func.jvp(f, (p,), (v,)))(x, tl.ones_like(x))
    np.testing.assert_allclose(t.numpy(), ref.sum(-1).numpy(), rtol=1e-10)
    _, vjp_fn = func.vjp(f, x[0])
    rows = func.vmap(vjp_fn)(tl.eye(4, dtype=tl.float64))[0]
    np.testing.assert_allclose(rows.numpy(), ref[0].numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", ["lstm", "gru", "mha", "encoder layer", "batchnorm eval",
                                  "batchnorm train", "embedding", "conv"])
def test_modules_under_vmap_match_the_loop(name):
    from torchlite import nn
    tl.manual_seed(0)
    x = r(3, 2, 5, 4)
    cases = {
        "lstm": (nn.LSTM(4, 6, batch_first=True), x, lambda m, a: m(a)[0]),
        "gru": (nn.GRU(4, 6), x[:, 0], lambda m, a: m(a)[0]),
        "mha": (nn.MultiheadAttention(4, 2, batch_first=True), x, lambda m, a: m(a, a, a)[0]),
        "encoder layer": (nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True,
                                                     activation="gelu"), x, lambda m, a: m(a)),
        "batchnorm eval": (nn.BatchNorm1d(5).eval(), x[..., 0], lambda m, a: m(a)),
        "batchnorm train": (nn.BatchNorm1d(5), x[..., 0], lambda m, a: m(a)),
        "embedding": (nn.Embedding(10, 3), tl.randint(0, 10, (3, 4)), lambda m, a: m(a)),
        "conv": (nn.Conv2d(2, 3, 3), r(3, 1, 2, 5, 5), lambda m, a: m(a)),
    }
    m, inp, call = cases[name]
    check_vmap(lambda a: call(m, a), inp, ruled=False, atol=1e-5)


REVIEW_CASES = {   # wrong answers and crashes a review found, each against the loop
    "addmm alpha beta, unbatched operands": (lambda i: tl.addmm(i, A_, B_, beta=0.5, alpha=2), X),
    "addbmm alpha": (lambda i: tl.addbmm(i, r(2, 3, 4), r(2, 4, 5), alpha=0.5), X),
    "msort": (lambda a: tl.msort(a), X),
    "aminmax all": (lambda a: tuple(tl.aminmax(a)), X),
    "sum of an empty dim list": (lambda a: a.sum([]) + a.mean([]), X),
    "renorm": (lambda a: a.renorm(2, 0, 1.0), X),
    "channel_shuffle": (lambda a: F.channel_shuffle(a[:, :4].T.reshape(2, 2, 3, 1), 2), X),
    "index_fill_": (lambda a: a.clone().index_fill_(0, tl.tensor([1]), -1.0), X),
    "t_ and unsqueeze_": (lambda a: a.clone().t_().unsqueeze_(0), X),
    "var with the unbiased flag": (lambda a: a.var(False) + tl.std(a, True), X),
    "unbatched tensor's method, batched argument": (lambda a: V.mul(a) + V.add(a).matmul(a.T).sum(), X),
    "masked_fill with a batched 0-d value": (lambda a: a.masked_fill(a > 0, a.sum()), X),
    "squeeze and gather of a 0-d element": (lambda a: a.squeeze(0) + tl.gather(a, 0, tl.tensor(0)), V),
    "unbatched indexed by batched": (lambda i: V[i], tl.tensor([4, 0, 2])),
    "type() string": (lambda a: a * (a.type() == "torchlite.FloatTensor"), X),
}
A_, B_ = r(3, 4, seed=7), r(4, 5, seed=8)


@pytest.mark.parametrize("name", list(REVIEW_CASES))
def test_review_cases_match_the_loop(name):
    f, x = REVIEW_CASES[name]
    check_vmap(f, x, ruled=False, atol=1e-5)


def test_review_randomness_and_out_dims_none():
    x = tl.ones(4, 50)
    tl.manual_seed(3)
    same = func.vmap(lambda a: F.dropout(a, 0.5), randomness="same", chunk_size=2)(x)
    assert all(tl.equal(same[0], same[i]) for i in range(4))
    tl.manual_seed(3)
    alpha = func.vmap(lambda a: F.alpha_dropout(a, 0.5, True), randomness="same")(x)
    tl.manual_seed(3)
    np.testing.assert_allclose(alpha[2].numpy(), F.alpha_dropout(x[0], 0.5, True).numpy(),
                               rtol=1e-6)
    feat = func.vmap(lambda a: F.feature_alpha_dropout(a.reshape(5, 10, 1), 0.5, True),
                     randomness="different")(x)
    assert tuple(feat.shape) == (4, 5, 10, 1)
    y = r(3)
    a, b = func.vmap(lambda u, v: (u * 2, v), in_dims=(0, None), out_dims=(0, None))(X, y)
    assert b is y and tuple(a.shape) == tuple(X.shape)
    a, k = func.vmap(lambda u: (u, 3), out_dims=(0, None))(X)
    assert k == 3
    assert not func.vmap(lambda u: tl.tensor(u.is_sparse))(X).any()


IMG = r(3, 2, 4, 6, 6, seed=11)          # a batch of 3 (N=2, C=4, 6 x 6) inputs
NEW_RULE_CASES = {
    # torch.* spellings of nn.functional ops take F's rules (no per-element loop)
    "conv2d": (lambda a: tl.conv2d(a, r(5, 4, 3, 3, seed=12), None, 1, 1), IMG),
    "max_pool2d and avg_pool1d": (lambda a: tl.max_pool2d(a, 2).sum() + tl.avg_pool1d(a[0], 2).sum(), IMG),
    "layer_norm and group_norm": (lambda a: tl.layer_norm(a, (6,)) + tl.group_norm(a, 2), IMG),
    "pixel_shuffle and channel_shuffle": (lambda a: tl.pixel_shuffle(a, 2).sum() + tl.channel_shuffle(a, 2).sum(), IMG),
    "selu, celu, threshold, hardshrink": (
        lambda a: tl.selu(a) + tl.celu(a, 0.5) + tl.threshold(a, 0.1, -1.0) + tl.hardshrink(a, 0.3), X),
    # and the new family members
    "rsub, ldexp": (lambda a: tl.rsub(a, 2.0) + tl.ldexp(a, tl.tensor(2)), X),
    "gcd, lcm": (lambda a: tl.gcd(a, tl.tensor(6)) + tl.lcm(a, tl.tensor(4)),
                 tl.tensor(np.arange(1, 25).reshape(4, 6))),
    "rot90": (lambda a: tl.rot90(a) + tl.rot90(a, 3, (1, 0)), r(4, 5, 5, seed=13)),
    "repeat_interleave": (lambda a: tl.repeat_interleave(a, 2).sum() + a.repeat_interleave(3, dim=1).sum(), X),
    "quantile": (lambda a: tl.quantile(a, 0.3) + tl.nanquantile(a, 0.7, dim=1).sum(), X),
    "function forms of methods": (lambda a: tl.permute(a, (1, 0)).sum(0) + tl.t(a).sum(0)
                                  + tl.clone(a).sum(1) + tl.detach(a).sum(1) + tl.ravel(a)[:3]
                                  + tl.fliplr(a).sum(1) + tl.flipud(a).sum(1), X),
    "take_along_dim": (lambda a: tl.take_along_dim(a, a.argsort(1), 1).sum(1)
                       + tl.take_along_dim(a, tl.tensor([[0], [2], [1]]), 1).sum(1)
                       + tl.take_along_dim(a, tl.tensor([3, 0]))[0], X),
    "cross": (lambda a: tl.cross(a[:, :3], a[:, 1:4], dim=1).sum(1)
              + tl.linalg.cross(a[:, :3], V[:3].expand(3, 3), dim=1).sum(1), X),
    "index_add, index_copy, index_fill": (
        lambda a: tl.index_add(a, 1, tl.tensor([0, 2]), a[:, :2] * 2, alpha=0.5).sum(1)
        + tl.index_copy(a, 0, tl.tensor([2, 0]), a[:2].flip(1)).sum(1)
        + tl.index_fill(a, 1, tl.tensor([1, 4]), -1.0).sum(1)
        + tl.index_add(tl.zeros(3, 5), 1, tl.tensor([3]), a[:, :1]).sum(1), X),
    "cholesky_inverse": (lambda a: tl.cholesky_inverse(tl.linalg.cholesky(a @ a.mT + tl.eye(3))), r(4, 3, 3, seed=14)),
    # attention, batch norm's training statistics, cosine similarity, prelu
    "scaled_dot_product_attention": (
        lambda a: F.scaled_dot_product_attention(a, a[..., :5, :] * 2, a[..., :5, :].flip(-1))
        + F.scaled_dot_product_attention(a, K4, K4, attn_mask=MASK)
        + F.scaled_dot_product_attention(a, a, a, is_causal=True, scale=0.3), r(3, 2, 6, 4, seed=15)),
    "batch_norm with batch statistics": (
        lambda a: F.batch_norm(a, None, None, r(4, seed=16), r(4, seed=17), training=True)
        + F.batch_norm(a, None, None, training=True, eps=1e-3) + tl.batch_norm(
            a, r(4, seed=16), None, None, None, True, 0.1, 1e-5, False), IMG),
    "cosine_similarity": (lambda a: F.cosine_similarity(a, a.flip(0), dim=0)[0]
                          + F.cosine_similarity(a, V, dim=-1) + tl.cosine_similarity(V, a, -1, 1e-3), X),
    "prelu": (lambda a: F.prelu(a, r(4, seed=18)).sum((0, 2, 3)) + F.prelu(a, tl.tensor([0.2])).sum((0, 2, 3))
              + tl.prelu(a[0, :, 0], r(6, seed=19)).sum(1), IMG),
    "upsample": (lambda a: F.upsample_nearest(a, scale_factor=2).sum((2, 3))
                 + F.upsample_bilinear(a, size=(4, 5)).sum((2, 3)), IMG),
    "max_unpool2d": (lambda a: F.max_unpool2d(*F.max_pool2d(a, 2, return_indices=True), 2), IMG),
    "grid_sample": (lambda a: F.grid_sample(a, GRID, align_corners=False)
                    + F.grid_sample(a, GRID * 0.5, mode="nearest", align_corners=True), IMG),
    "bilinear": (lambda a: F.bilinear(a, a.flip(0), r(2, 5, 5, seed=22), r(2, seed=23))
                 + F.bilinear(a, V.expand(3, 5), r(2, 5, 5, seed=24)), X),
    "pairwise_distance": (lambda a: F.pairwise_distance(a, V) + F.pairwise_distance(a, a.flip(0), p=1.0), X),
    "row losses": (lambda a: F.margin_ranking_loss(a, a.flip(1), a.sign()) + F.hinge_embedding_loss(a, a.sign())
                   + F.multilabel_soft_margin_loss(a, (a > 0).float(), reduction="sum")
                   + F.triplet_margin_loss(a, a.flip(0), a * 2, reduction="none").sum(), X),
}
K4, MASK = r(2, 5, 4, seed=20), r(6, 5, seed=21) > 0
GRID = r(2, 3, 3, 2, seed=25).tanh()


@pytest.mark.parametrize("name", list(NEW_RULE_CASES))
def test_new_rules_match_the_loop_without_it(name):
    f, x = NEW_RULE_CASES[name]
    check_vmap(f, x, ruled=True, atol=1e-5)
