"""Forward AD's JVP rules beside the backward formulas for the ops that used to fall back to
the double backward: the scatter family (scatter, scatter_add, scatter_reduce, index_add,
index_copy, index_fill, index_put / setitem, masked_scatter, put, and the slice/select/
diagonal_scatter writes through a view), the scans and sorts (cumprod, cummax/cummin,
logcumsumexp, sort, topk, kthvalue, msort, mode), the other linear ops (padding, resampling,
unfold/fold, repeat, roll, tril/triu, diag_embed, block_diag, as_strided, copy_/fill_, the
pooling backwards as ops), where and the other three-input elementwise ops, the products
(outer, inner, tensordot, vecdot, einsum) and the LSTM layer.

Every tangent is checked against float64 central differences along a random tangent with
the double-backward fallback refused (so the rule is what ran), against PyTorch's own forward
AD where it is installed, and, at ties, against the backward's convention through
<J t, g> = <t, J^T g>."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.autograd.forward_ad as fwAD
import torchlite.nn.functional as F

F64 = tl.float64


def jvp(f, xs, ts):
    """(primal, tangent) of f at xs along ts (a None tangent: that input is not dual)."""
    with fwAD.dual_level():
        out = f(*[x if t is None else fwAD.make_dual(x, t) for x, t in zip(xs, ts)])
        primal, tangent = fwAD.unpack_dual(out)
    return primal, tangent


def central_difference(f, xs, ts, eps=1e-6):
    plus = f(*[x if t is None else x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x if t is None else x - eps * t for x, t in zip(xs, ts)])
    return ((plus - minus) / (2 * eps)).detach()


@pytest.fixture
def no_double_backward(monkeypatch):
    def refuse(node, meta, tangents):
        raise AssertionError(f"{node.name()} fell back to the double backward")
    monkeypatch.setattr(fwAD, "_by_double_backward", refuse)


def _node_names(t):
    """The names of the nodes in t's graph."""
    names, seen, stack = set(), set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(n.name())
        stack.extend(e[0] for e in n.next_functions)
    return names


def _setitem(x, key, value):
    y = x * 1.0
    y[key] = value
    return y


def _mul_through_view(x, s):
    y = x * 1.0
    y[1:3, ::2].mul_(s[:2, :3])
    return y


def _unpool(a):
    y, idx = F.max_pool2d(a, 2, return_indices=True)
    return F.max_unpool2d(y, idx, 2)


G = tl.Generator().manual_seed(0)
X = tl.randn(4, 5, dtype=F64, generator=G)
S = tl.randn(4, 5, dtype=F64, generator=G)
XZ = X.clone()                          # zeros for cumprod and the scatter's prod
XZ[1, 2] = XZ[2, 1] = XZ[2, 3] = 0.0
IMG = tl.randn(2, 3, 6, 6, dtype=F64, generator=G)
IDX = tl.tensor([[0, 1, 2, 1, 0], [3, 3, 0, 1, 2], [1, 0, 0, 0, 3], [2, 2, 2, 2, 2]])
ROWS = tl.tensor([0, 2, 0])

# name: (f, inputs, a node the rule must be taken for)
CASES = {
    "scatter": (lambda x, s: x.scatter(0, tl.tensor([[0, 1, 2, 3, 0]]), s), (X, S), "ScatterBackward0"),
    "scatter value": (lambda x: x.scatter(1, tl.tensor([[0], [2], [4], [1]]), 2.0), (X,), "ScatterBackward1"),
    "scatter_add": (lambda x, s: x.scatter_add(0, IDX, s), (X, S), "ScatterAddBackward0"),
    "scatter_reduce sum": (lambda x, s: x.scatter_reduce(0, IDX, s, "sum"), (X, S), "ScatterReduceBackward0"),
    "scatter_reduce mean": (lambda x, s: x.scatter_reduce(0, IDX, s, "mean", include_self=False), (X, S),
                            "ScatterReduceBackward0"),
    "scatter_reduce amax": (lambda x, s: x.scatter_reduce(0, IDX, s, "amax"), (X, S), "ScatterReduceBackward0"),
    "scatter_reduce amin": (lambda x, s: x.scatter_reduce(1, IDX[:, :3], s, "amin", include_self=False), (X, S),
                            "ScatterReduceBackward0"),
    "scatter_reduce prod": (lambda x, s: x.scatter_reduce(0, IDX, s, "prod"), (X, S), "ScatterReduceBackward0"),
    "scatter_reduce prod zeros": (lambda x, s: x.scatter_reduce(0, IDX, s, "prod", include_self=False),
                                  (XZ, XZ.flip(0)), "ScatterReduceBackward0"),
    "index_reduce amax": (lambda x, s: x.index_reduce(0, ROWS, s[:3], "amax"), (X, S), "ScatterReduceBackward0"),
    "index_add": (lambda x, s: x.index_add(1, ROWS, s[:, :3], alpha=2.0), (X, S), "IndexAddBackward0"),
    "index_copy": (lambda x, s: x.index_copy(1, tl.tensor([4, 0, 2]), s[:, :3]), (X, S), "IndexCopyBackward0"),
    "index_fill": (lambda x: x.index_fill(1, ROWS, -1.0), (X,), "IndexFillBackward0"),
    "index_fill tensor": (lambda x, s: x.index_fill(1, ROWS, s[0, 0]), (X, S), "IndexFillBackward1"),
    "index_put": (lambda x, s: x.index_put((tl.tensor([0, 2, 3]),), s[:3]), (X, S), "IndexPutBackward0"),
    "index_put accumulate": (lambda x, s: x.index_put((tl.tensor([0, 2, 0]),), s[1], accumulate=True), (X, S),
                             "IndexPutBackward0"),
    "setitem advanced": (lambda x, s: _setitem(x, (tl.tensor([1, 3]), slice(None)), s[:2]), (X, S),
                         "IndexPutBackward0"),
    "setitem basic": (lambda x, s: _setitem(x, (slice(1, 3), 0), s[0, :2]), (X, S), "CopySlices"),
    "masked_scatter": (lambda x, s: x.masked_scatter(x > 0, s), (X, S), "MaskedScatterBackward0"),
    "put": (lambda x, s: x.put(tl.tensor([0, 5, 19]), s[0, :3]), (X, S), "PutBackward0"),
    "put accumulate": (lambda x, s: x.put(tl.tensor([0, 5, 0]), s[0, :3], accumulate=True), (X, S),
                       "PutBackward0"),
    "slice_scatter": (lambda x, s: tl.slice_scatter(x, s[:, 1:3], 1, 1, 3), (X, S), "CopySlices"),
    "select_scatter": (lambda x, s: tl.select_scatter(x, s[0], 0, 2), (X, S), "CopySlices"),
    "diagonal_scatter": (lambda x, s: tl.diagonal_scatter(x, s[0, :4]), (X, S), "CopySlices"),
    "mul_ through a view": (_mul_through_view, (X, S), "CopySlices"),
    "copy_": (lambda x, s: (x * 1.0).copy_(s[0]), (X, S), "CopyBackwards"),
    "fill_": (lambda x, s: (x * 1.0).fill_(s[0, 0]), (X, S), "FillBackward0"),
    "sort": (lambda x: x.sort(1, descending=True)[0], (X,), "SortBackward0"),
    "topk": (lambda x: x.topk(2, 0)[0], (X,), "TopkBackward0"),
    "kthvalue": (lambda x: x.kthvalue(2, 1)[0], (X,), "KthvalueBackward0"),
    "kthvalue keepdim": (lambda x: x.kthvalue(3, 0, keepdim=True)[0], (X,), "KthvalueBackward0"),
    "msort": (lambda x: x.msort(), (X,), "SortBackward0"),
    "mode": (lambda x: x.mode(1)[0], (X,), "ModeBackward0"),
    "cumprod": (lambda x: x.cumprod(1), (X,), "CumprodBackward0"),
    "cumprod zeros": (lambda x: x.cumprod(1), (XZ,), "CumprodBackward0"),
    "cummax": (lambda x: x.cummax(1)[0], (X,), "CummaxBackward0"),
    "cummin": (lambda x: x.cummin(0)[0], (X,), "CumminBackward0"),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), (X * 3,), "LogcumsumexpBackward0"),
    # a wide range: summed in log space, nothing underflows (PyTorch's own JVP gives ~0 at the
    # first elements here)
    "logcumsumexp wide range": (lambda x: x.logcumsumexp(0), (X * 300,), "LogcumsumexpBackward0"),
    "aminmax": (lambda x: tl.stack(x.aminmax(dim=1)), (X,), "AminmaxBackward0"),
    "nansum": (lambda x: x.nansum(1), (X,), "NansumBackward0"),
    "nanmean": (lambda x: x.nanmean(0, keepdim=True), (X,), "NanmeanBackward0"),
    "vector_norm": (lambda x: tl.linalg.vector_norm(x, 3, dim=1) + tl.linalg.vector_norm(x, 1, dim=1)
                    + x.norm() + tl.linalg.vector_norm(x, float("inf")), (X,), "LinalgVectorNormBackward0"),
    "repeat": (lambda x: x.repeat(2, 1, 3), (X,), "RepeatBackward0"),
    "repeat_interleave": (lambda x: x.repeat_interleave(3, dim=1), (X,), "RepeatInterleaveBackward0"),
    "roll": (lambda x: x.roll((1, -2), (0, 1)), (X,), "RollBackward0"),
    "tril and triu": (lambda x: x.tril(1) + x.triu(-1), (X,), "TrilBackward0"),
    "diag": (lambda x: tl.diag(x[0], 1), (X,), "DiagEmbedBackward0"),
    "diag_embed": (lambda x: tl.diag_embed(x, 1, 0, 2), (X,), "DiagEmbedBackward0"),
    "block_diag": (lambda x, s: tl.block_diag(x, s[:2]), (X, S), "BlockDiagBackward0"),
    "as_strided": (lambda x: x.as_strided((3, 3), (2, 1), 1), (X,), "AsStridedBackward0"),
    "outer": (lambda x, s: tl.outer(x[0], s[1]), (X, S), "OuterBackward0"),
    "inner": (lambda x, s: tl.inner(x, s), (X, S), "InnerBackward0"),
    "tensordot": (lambda x, s: tl.tensordot(x, s, ([1], [1])), (X, S), "TensordotBackward0"),
    "vecdot": (lambda x, s: tl.linalg.vecdot(x, s[0]), (X, S), "LinalgVecdotBackward0"),
    "einsum": (lambda x, s: tl.einsum("ij,kj,k->ik", x, s, x[:, 0]), (X, S), "EinsumBackward0"),
    "where": (lambda x, s: tl.where(x[0] > 0, x, s[:, :1]), (X, S), "WhereBackward0"),
    "clamp with tensor bounds": (lambda x, s: x.clamp(min=s[0] * 0.3, max=s[1].abs()), (X, S), "ClampBackward0"),
    "lerp": (lambda x, s: tl.lerp(x, s, s.sigmoid()), (X, S), "LerpBackward1"),
    "addcmul and addcdiv": (lambda x, s: tl.addcmul(x[0], s, x, value=0.5) + tl.addcdiv(x, s, x.exp() + 1),
                            (X, S), "AddcdivBackward0"),
    "logaddexp": (lambda x, s: tl.logaddexp(x, s) + tl.logaddexp2(x, s[0]), (X, S), "LogaddexpBackward0"),
    "pad constant": (lambda a: F.pad(a, (1, 2, -1, 1), value=3.0), (IMG,), "ConstantPadNdBackward0"),
    "pad reflect": (lambda a: F.pad(a, (2, 1, 1, 2), mode="reflect"), (IMG,), "ReflectionPad2DBackward0"),
    "pad circular": (lambda a: F.pad(a[0], (2, 1), mode="circular"), (IMG,), "CircularPad1DBackward0"),
    "interpolate nearest": (lambda a: F.interpolate(a, scale_factor=2, mode="nearest"), (IMG,),
                            "UpsampleNearest2DBackward0"),
    "interpolate bicubic": (lambda a: F.interpolate(a, size=(5, 9), mode="bicubic"), (IMG,),
                            "UpsampleBicubic2DBackward0"),
    "unfold": (lambda a: F.unfold(a, 3, padding=1, stride=2), (IMG,), "Im2ColBackward0"),
    "fold": (lambda a: F.fold(a.reshape(2, 12, 9), (4, 4), 2, stride=1), (IMG,), "Col2ImBackward0"),
    "max_unpool2d": (_unpool, (IMG,), "MaxUnpool2DBackward0"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rules_against_central_differences(name, no_double_backward):
    f, xs, node = CASES[name]
    g = tl.Generator().manual_seed(1)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    primal, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(primal.detach().numpy(), f(*xs).detach().numpy(), rtol=1e-12, atol=1e-12)
    assert tangent is not None and tangent.dtype is F64
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=1e-6, atol=1e-7)
    # the rule of the op's own node ran (not only those of the ops around it)
    assert node in _node_names(f(*[x.detach().requires_grad_() for x in xs]))


# ---- an input without a tangent ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_reduce mean", "scatter_reduce amax",
                                  "index_add", "index_put", "masked_scatter", "put", "slice_scatter",
                                  "where", "block_diag", "tensordot", "einsum", "lerp"])
@pytest.mark.parametrize("which", [0, 1])
def test_one_input_without_tangent(name, which, no_double_backward):
    f, xs, _ = CASES[name]
    g = tl.Generator().manual_seed(3)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) if i == which else None for i, x in enumerate(xs)]
    _, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=1e-6, atol=1e-7)


def test_scatter_add_with_a_tangent_on_src_only(no_double_backward):
    t = tl.randn(4, 5, dtype=F64, generator=G)
    _, tangent = jvp(lambda x, s: x.scatter_add(0, IDX, s), (X, S), (None, t))
    np.testing.assert_array_equal(tangent.numpy(), tl.zeros(4, 5, dtype=F64).scatter_add(0, IDX, t).numpy())
    _, tangent = jvp(lambda x, s: x.scatter_add(0, IDX, s), (X, S), (t, None))
    np.testing.assert_array_equal(tangent.numpy(), t.numpy())


# ---- ties: the backward's convention ------------------------------------------------------------
TIED_X = tl.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]], dtype=F64)
TIED_SRC = tl.tensor([[3.0, 2.0, 5.0], [3.0, 2.0, 1.0]], dtype=F64)
TIED_IDX = tl.tensor([[0, 0, 1], [0, 1, 1]])
T_X = tl.tensor([[1.0, 10, 100], [1000, 1e4, 1e5]], dtype=F64)
T_SRC = tl.tensor([[2.0, 20, 200], [2000, 2e4, 2e5]], dtype=F64)


@pytest.mark.parametrize("reduce,include_self,want", [
    # row 0: x[0,0]=1 loses to src 3 (and src 2 at the same target); row 1: x[1,0]=3 ties src 3
    ("amax", True, [[2.0, 200.0, 100.0], [1500.0, 2e4, 1e5]]),
    ("amax", False, [[2.0, 200.0, 100.0], [2000.0, 2e4, 1e5]]),     # self is no candidate
    ("amin", True, [[1.0, 10.0, 100.0], [1500.0, 1e4, 1e5]]),
    ("amin", False, [[20.0, 200.0, 100.0], [2000.0, 2e5, 1e5]]),
])
def test_scatter_reduce_ties_share_the_tangent_evenly(reduce, include_self, want, no_double_backward):
    f = lambda x, s: x.scatter_reduce(1, TIED_IDX, s, reduce, include_self=include_self)  # noqa: E731
    _, tangent = jvp(f, (TIED_X, TIED_SRC), (T_X, T_SRC))
    np.testing.assert_allclose(tangent.numpy(), np.array(want), rtol=1e-12)


def _adjoint_gap(f, xs, ts, g):
    """<J t, g> - <t, J^T g>: J t by the rule, J^T g by the backward."""
    _, tangent = jvp(f, xs, ts)
    leaves = [x.detach().requires_grad_() for x in xs]
    grads = tl.autograd.grad(f(*leaves), leaves, g)
    lhs = float((tangent * g).sum())
    rhs = sum(float((t * gr).sum()) for t, gr in zip(ts, grads))
    return lhs, rhs


TIES = {
    "scatter_reduce amax": (lambda x, s: x.scatter_reduce(1, TIED_IDX, s, "amax"), (TIED_X, TIED_SRC)),
    "scatter_reduce amin": (lambda x, s: x.scatter_reduce(1, TIED_IDX, s, "amin"), (TIED_X, TIED_SRC)),
    "cummax": (lambda x: x.cummax(1)[0], (tl.tensor([[1.0, 3.0, 3.0, 2.0, 3.0], [2.0, 2.0, 1.0, 2.0, 0.0]],
                                                    dtype=F64),)),
    "cummin": (lambda x: x.cummin(1)[0], (tl.tensor([[1.0, 0.0, 0.0, 2.0, 0.0], [2.0, 2.0, 1.0, 1.0, 3.0]],
                                                    dtype=F64),)),
    "aminmax": (lambda x: tl.stack(x.aminmax(dim=1)), (tl.tensor([[1.0, 3.0, 3.0, 1.0], [2.0, 2.0, 2.0, 2.0]],
                                                                  dtype=F64),)),
    "sort": (lambda x: x.sort(1)[0], (tl.tensor([[1.0, 0.0, 1.0, 1.0]], dtype=F64),)),
    "topk": (lambda x: x.topk(2, 1)[0], (tl.tensor([[3.0, 1.0, 3.0, 3.0]], dtype=F64),)),
}


@pytest.mark.parametrize("name", list(TIES))
def test_ties_follow_the_backward(name, no_double_backward):
    f, xs = TIES[name]
    g = tl.Generator().manual_seed(4)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    out = f(*xs)
    gout = tl.randn(*out.shape, dtype=F64, generator=g)
    lhs, rhs = _adjoint_gap(f, xs, ts, gout)
    assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


def test_cummax_ties_take_the_tangent_at_the_returned_index(no_double_backward):
    x = tl.tensor([1.0, 3.0, 3.0, 2.0, 3.0], dtype=F64)
    t = tl.tensor([1.0, 10.0, 100.0, 1000.0, 1e4], dtype=F64)
    with fwAD.dual_level():
        values, indices = fwAD.make_dual(x, t).cummax(0)
        tangent = fwAD.unpack_dual(values).tangent
    np.testing.assert_array_equal(tangent.numpy(), t.numpy()[indices.numpy()])


# ---- the LSTM layer ------------------------------------------------------------------------------
def _lstm_call(lstm):
    names = [n for n, _ in lstm.named_parameters()]

    def call(x, h, c, *weights):
        out, (hn, cn) = tl.func.functional_call(lstm, dict(zip(names, weights)), (x, (h, c)))
        return tl.cat([out.reshape(-1), hn.reshape(-1), cn.reshape(-1)])
    return call, [p.detach() for p in lstm.parameters()]


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_layer_rule(bidirectional, no_double_backward):
    tl.manual_seed(0)
    lstm = tl.nn.LSTM(3, 4, num_layers=2, bidirectional=bidirectional).double()
    dirs = 2 if bidirectional else 1
    g = tl.Generator().manual_seed(5)
    x = tl.randn(5, 2, 3, dtype=F64, generator=g)
    h = tl.randn(2 * dirs, 2, 4, dtype=F64, generator=g)
    c = tl.randn(2 * dirs, 2, 4, dtype=F64, generator=g)
    call, weights = _lstm_call(lstm)
    xs = [x, h, c] + weights
    ts = [tl.randn(*v.shape, dtype=F64, generator=g) for v in xs]
    primal, tangent = jvp(call, xs, ts)
    assert "_LSTMLayerBackward" in _node_names(call(*[v.detach().requires_grad_() for v in xs]))
    np.testing.assert_allclose(tangent.numpy(), central_difference(call, xs, ts).numpy(), rtol=1e-6, atol=1e-7)
    # the input alone
    only_x = [ts[0]] + [None] * (len(xs) - 1)
    _, tangent = jvp(call, xs, only_x)
    np.testing.assert_allclose(tangent.numpy(), central_difference(call, xs, only_x).numpy(), rtol=1e-6,
                               atol=1e-7)


# ---- against PyTorch's forward AD -----------------------------------------------------------------
TORCH_CASES = {
    "scatter": lambda torch, x, s: x.scatter(0, torch.tensor([[0, 1, 2, 3, 0]]), s),
    "scatter_add": lambda torch, x, s: x.scatter_add(0, torch.tensor(IDX.numpy()), s),
    "scatter_reduce mean": lambda torch, x, s: x.scatter_reduce(0, torch.tensor(IDX.numpy()), s, "mean",
                                                                include_self=False),
    "scatter_reduce amax": lambda torch, x, s: x.scatter_reduce(0, torch.tensor(IDX.numpy()), s, "amax"),
    "index_add": lambda torch, x, s: x.index_add(1, torch.tensor([0, 2, 0]), s[:, :3], alpha=2.0),
    "index_copy": lambda torch, x, s: x.index_copy(1, torch.tensor([4, 0, 2]), s[:, :3]),
    "index_put accumulate": lambda torch, x, s: x.index_put((torch.tensor([0, 2, 0]),), s[1], accumulate=True),
    "masked_scatter": lambda torch, x, s: x.masked_scatter(x > 0, s),
    "put": lambda torch, x, s: x.put(torch.tensor([0, 5, 19]), s[0, :3]),
    "slice_scatter": lambda torch, x, s: torch.slice_scatter(x, s[:, 1:3], 1, 1, 3),
    "diagonal_scatter": lambda torch, x, s: torch.diagonal_scatter(x, s[0, :4]),
    "sort": lambda torch, x: x.sort(1, descending=True)[0],
    "topk": lambda torch, x: x.topk(2, 0)[0],
    "kthvalue": lambda torch, x: x.kthvalue(2, 1)[0],
    "cumprod zeros": lambda torch, x: x.cumprod(1),
    "cummax": lambda torch, x: x.cummax(1)[0],
    "logcumsumexp": lambda torch, x: x.logcumsumexp(1),
    "vector_norm": lambda torch, x: torch.linalg.vector_norm(x, 3, dim=1) + torch.linalg.vector_norm(x, 1, dim=1)
    + x.norm() + torch.linalg.vector_norm(x, float("inf")),
    "roll": lambda torch, x: x.roll((1, -2), (0, 1)),
    "einsum": lambda torch, x, s: torch.einsum("ij,kj,k->ik", x, s, x[:, 0]),
    "clamp with tensor bounds": lambda torch, x, s: x.clamp(min=s[0] * 0.3, max=s[1].abs()),
    "pad reflect": lambda torch, a: torch.nn.functional.pad(a, (2, 1, 1, 2), mode="reflect"),
    "interpolate bicubic": lambda torch, a: torch.nn.functional.interpolate(a, size=(5, 9), mode="bicubic"),
    "unfold": lambda torch, a: torch.nn.functional.unfold(a, 3, padding=1, stride=2),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_rules_against_torch(name, no_double_backward):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    f, xs, _ = CASES[name]
    g = tl.Generator().manual_seed(2)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    _, got = jvp(f, xs, ts)
    with tfw.dual_level():
        out = TORCH_CASES[name](torch, *[tfw.make_dual(torch.from_numpy(x.numpy().copy()),
                                                      torch.from_numpy(t.numpy().copy()))
                                         for x, t in zip(xs, ts)])
        want = tfw.unpack_dual(out).tangent.numpy()
    # PyTorch's logcumsumexp JVP scales by the slice's max and loses digits at the first elements
    rtol = 1e-8 if name == "logcumsumexp" else 1e-10
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=1e-12)


def test_lstm_against_torch(no_double_backward):
    torch = pytest.importorskip("torch")
    tl.manual_seed(0)
    lstm = tl.nn.LSTM(3, 4).double()
    ref = torch.nn.LSTM(3, 4).double()
    with torch.no_grad():
        for (_, p), q in zip(lstm.named_parameters(), ref.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    g = tl.Generator().manual_seed(6)
    x, t = tl.randn(5, 2, 3, dtype=F64, generator=g), tl.randn(5, 2, 3, dtype=F64, generator=g)
    _, got = jvp(lambda v: lstm(v)[0], (x,), (t,))
    _, want = torch.func.jvp(lambda v: ref(v)[0], (torch.from_numpy(x.numpy()),), (torch.from_numpy(t.numpy()),))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
