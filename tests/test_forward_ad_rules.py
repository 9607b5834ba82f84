"""Forward AD's JVP rules beside the backward formulas for the ops that used to fall back to
the double backward: the scatter family (scatter, scatter_add, scatter_reduce, index_add,
index_copy, index_fill, index_put / setitem, masked_scatter, put, and the slice/select/
diagonal_scatter writes through a view), the scans and sorts (cumprod, cummax/cummin,
logcumsumexp, sort, topk, kthvalue, msort, mode), the other linear ops (padding, resampling,
unfold/fold, repeat, roll, tril/triu, diag_embed, block_diag, as_strided, copy_/fill_, the
pooling backwards as ops), where and the other three-input elementwise ops, the products
(outer, inner, tensordot, vecdot, einsum) and the LSTM layer; then the fused losses (nll_loss,
cross_entropy, binary_cross_entropy with and without logits, ctc_loss), the FFT primitives and
the complex views (real/imag, view_as_real/view_as_complex, conj), the special functions,
frexp/nextafter, the decompositions and solvers (inv, solve, solve_triangular, cholesky_solve,
det, slogdet, cholesky, matrix_exp, pinv, qr, eigh, svd, eig, lu, lu_factor), 3-d and
fractional max pooling, prelu and the convolution's weight gradient.

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


# ==== the losses, fft, the special functions, the decompositions, 3-d/fractional pooling, prelu ====
@pytest.fixture
def no_double_backward_but_complex_elementwise(monkeypatch):
    """As no_double_backward, but the complex elementwise nodes (whose formula tables hold for
    real tangents only: documented to take the double backward) may still fall back."""
    from torchlite._ops import elementwise_grad as EG
    fallback = fwAD._by_double_backward

    def refuse(node, meta, tangents):
        if isinstance(node, (EG.UnaryBackward, EG.BinaryBackward)) and \
                any(t is not None and t.dtype.is_complex for t in tangents):
            return fallback(node, meta, tangents)
        raise AssertionError(f"{node.name()} fell back to the double backward")
    monkeypatch.setattr(fwAD, "_by_double_backward", refuse)


def _probe_tangent(xs, seed):
    g = tl.Generator().manual_seed(seed)
    return [tl.randn(*x.shape, dtype=x.dtype, generator=g) for x in xs]


def _check_against_central_differences(f, xs, ts, node, rtol=1e-6, atol=1e-7):
    primal, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(primal.detach().numpy(), f(*xs).detach().numpy(), rtol=1e-12, atol=1e-12)
    assert tangent is not None and tangent.dtype is primal.dtype
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=rtol, atol=atol)
    if node is not None:
        assert node in _node_names(f(*[x.detach().requires_grad_() for x in xs]))


def _eye(n):
    return tl.eye(n, dtype=F64)


def _sym_part(a):
    return a @ a.T + _eye(a.shape[0])


def _gauge_free_svd(a, full=False):
    """S, U Vh and U diag(c) U^T, V diag(c) V^T: unchanged by the singular vectors' signs."""
    U, S, Vh = tl.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    c = tl.arange(1, k + 1, dtype=F64)
    U, Vh = U[..., :k], Vh[..., :k, :]
    return tl.cat([S.reshape(-1), (U @ Vh).reshape(-1), ((U * c) @ U.mT).reshape(-1),
                   ((Vh.mT * c) @ Vh).reshape(-1)])


def _gauge_free_eigh(a):
    w, V = tl.linalg.eigh(a + a.mT)
    c = tl.arange(1, w.shape[-1] + 1, dtype=F64)
    return tl.cat([w.reshape(-1), ((V * c) @ V.mT).reshape(-1)])


def _gauge_free_eig(a):
    """The eigenvalues and V diag(c) V^-1 (each eigenvector's scale and phase cancel)."""
    L, V = tl.linalg.eig(a)
    c = tl.arange(1, L.shape[-1] + 1, dtype=F64).to(V.dtype)
    return tl.cat([L, ((V * c) @ tl.linalg.inv(V)).reshape(-1)])


def _lu_parts(a):
    _, L, U = tl.linalg.lu(a)
    return tl.cat([L.reshape(-1), U.reshape(-1)])


def _qr_parts(a, mode="reduced"):
    Q, R = tl.linalg.qr(a, mode=mode)
    return tl.cat([Q.reshape(-1), R.reshape(-1)])


TGT = tl.tensor([0, 1, 4, 1])
WCLS = tl.tensor([0.5, 2.0, 1.0, 0.25, 3.0], dtype=F64)
SPATIAL_TGT = tl.randint(0, 3, (2, 6, 6), generator=G)
PROB = tl.rand(4, 5, dtype=F64, generator=G) * 0.8 + 0.1
POS_W = tl.tensor([1.0, 2.0, 0.5, 3.0, 1.5], dtype=F64)
CTC_X = tl.randn(6, 2, 4, dtype=F64, generator=G)
CTC_TARGETS = tl.tensor([[1, 2, 2], [3, 1, 0]])
SQ = X[:, :4] + 3 * _eye(4)                          # a well-conditioned square matrix
SINGULAR = X[:, :4].clone()
SINGULAR[2] = 0.0                                   # rank 3, det exactly 0 through LU
VOL = tl.randn(1, 2, 5, 4, 6, dtype=F64, generator=G)
FRAC2 = tl.rand(2, 3, 2, dtype=F64, generator=G)
FRAC3 = tl.rand(1, 2, 3, dtype=F64, generator=G)
W3 = tl.tensor([0.25, -0.5, 1.5], dtype=F64)
GY = tl.randn(2, 4, 3, 3, dtype=F64, generator=G)
A_CONST = X.abs() + 0.5

NEW_CASES = {
    # losses
    "nll_loss": (lambda x: F.nll_loss(x, TGT), (X,), "NllLossBackward0"),
    "nll_loss weight ignore_index none": (lambda x: F.nll_loss(x, TGT, weight=WCLS, ignore_index=1, reduction="none"),
                                          (X,), "NllLossBackward0"),
    "nll_loss 1-d input": (lambda x: F.nll_loss(x[0], tl.tensor(3), weight=WCLS), (X,), "NllLossBackward0"),
    "nll_loss2d sum": (lambda a: F.nll_loss(a, SPATIAL_TGT, reduction="sum"), (IMG,), "NllLoss2DBackward0"),
    "cross_entropy": (lambda x: F.cross_entropy(x, TGT), (X,), "NllLossBackward0"),
    "cross_entropy weight ignore_index": (lambda x: F.cross_entropy(x, TGT, weight=WCLS, ignore_index=4), (X,),
                                          "NllLossBackward0"),
    "cross_entropy weight ignore_index smoothing": (
        lambda x: F.cross_entropy(x, TGT, weight=WCLS, ignore_index=1, label_smoothing=0.2), (X,), "NllLossBackward0"),
    "cross_entropy spatial none": (lambda a: F.cross_entropy(a, SPATIAL_TGT, weight=WCLS[:3], reduction="none"),
                                   (IMG,), "NllLoss2DBackward0"),
    "cross_entropy spatial sum": (lambda a: F.cross_entropy(a, SPATIAL_TGT, ignore_index=2, reduction="sum"),
                                  (IMG,), "NllLoss2DBackward0"),
    "cross_entropy probabilities": (lambda x, s: F.cross_entropy(x, s.softmax(1), weight=WCLS, label_smoothing=0.1),
                                    (X, S), None),
    "binary_cross_entropy": (lambda x, s: F.binary_cross_entropy(x.sigmoid(), s.sigmoid(), weight=WCLS), (X, S),
                             "BinaryCrossEntropyBackward0"),
    "binary_cross_entropy none": (lambda x, s: F.binary_cross_entropy(x.sigmoid(), s.sigmoid(), reduction="none"),
                                  (X, S), "BinaryCrossEntropyBackward0"),
    "bce_with_logits weight pos_weight": (
        lambda x, s: F.binary_cross_entropy_with_logits(x, s.sigmoid(), weight=WCLS, pos_weight=POS_W), (X, S),
        "BinaryCrossEntropyWithLogitsBackward0"),
    "bce_with_logits sum": (lambda x, s: F.binary_cross_entropy_with_logits(x, s, reduction="sum"), (X, S),
                            "BinaryCrossEntropyWithLogitsBackward0"),
    "bce_with_logits pos_weight none": (
        lambda x, s: F.binary_cross_entropy_with_logits(x, s.sigmoid(), pos_weight=POS_W, reduction="none"), (X, S),
        "BinaryCrossEntropyWithLogitsBackward0"),
    # PyTorch's CTC gradient takes log_probs from a log_softmax: the tangent comes through one
    "ctc_loss": (lambda x: F.ctc_loss(F.log_softmax(x, 2), CTC_TARGETS, [6, 5], [3, 2], reduction="none"),
                 (CTC_X,), "CtcLossBackward0"),
    "ctc_loss mean": (lambda x: F.ctc_loss(F.log_softmax(x, 2), tl.tensor([1, 2, 2, 3]), [6, 4], [3, 1]),
                      (CTC_X,), "CtcLossBackward0"),
    # fft (real inputs; complex ones below)
    "rfft": (lambda x: tl.fft.rfft(x, n=7, norm="ortho"), (X,), "FftR2CBackward0"),
    "fft of a real input": (lambda x: tl.fft.fft(x, dim=0, norm="forward"), (X,), "FftR2CBackward0"),
    "fft2 and ifft": (lambda x: tl.fft.fft2(x, s=(4, 6)) + tl.fft.ifft(x, n=6), (X,), "FftC2CBackward0"),
    "irfft": (lambda x: tl.fft.irfft(tl.fft.rfft(x) * (1 + 2j), n=9, norm="ortho"), (X,), "FftC2RBackward0"),
    "hfft and ihfft": (lambda x: tl.fft.hfft(tl.fft.ihfft(x), n=6) + tl.fft.irfftn(tl.fft.rfftn(x), s=(4, 6)),
                       (X,), "FftC2RBackward0"),
    "view_as_real": (lambda x: tl.view_as_real(tl.fft.fft(x)), (X,), "ViewAsRealBackward0"),
    "real and imag": (lambda x: tl.fft.fft(x).real * 2 - tl.fft.fft(x, dim=0).imag, (X,), "RealBackward0"),
    "view_as_complex": (lambda x: tl.view_as_complex(x[:, :4].contiguous().reshape(4, 2, 2)), (X,),
                        "ViewAsComplexBackward0"),
    # special functions
    "special unary": (lambda x: tl.special.erfcx(x) + tl.special.ndtr(x) + tl.special.log_ndtr(x)
                      + tl.special.ndtri(x.sigmoid()) + tl.special.entr(x.abs()) + tl.special.i0(x)
                      + tl.special.i0e(x) + tl.special.i1(x) + tl.special.i1e(x), (X,), "SpecialErfcxBackward0"),
    "special binary": (lambda x, s: tl.special.xlog1py(x, s.abs()) + tl.special.zeta(4.0, s.abs() + 1)
                       + tl.special.gammainc(A_CONST, s.abs()) + tl.special.gammaincc(A_CONST, s.abs()),
                       (X, S), "SpecialXlog1PyBackward0"),
    "xlog1py of a number": (lambda s: tl.special.xlog1py(2.0, s.abs()) + tl.special.xlog1py(s, 0.5), (S,),
                            "SpecialXlog1PyBackward0"),
    "polygamma and mvlgamma": (lambda x: tl.polygamma(2, x.abs() + 1) + tl.mvlgamma(x.abs() + 3, 3), (X,),
                               "PolygammaBackward0"),
    "frexp": (lambda x: tl.frexp(x * 3)[0], (X,), "FrexpBackward0"),
    "nextafter": (lambda x, s: tl.nextafter(x, s[0]), (X, S), "NextafterBackward0"),
    # decompositions and solvers
    "inv": (lambda a: tl.linalg.inv(a), (SQ,), "LinalgInvExBackward0"),
    "solve": (lambda a, b: tl.linalg.solve(a, b), (SQ, S), "LinalgSolveExBackward0"),
    "solve vector": (lambda a, b: tl.linalg.solve(a, b[:, 0]), (SQ, S), "LinalgSolveExBackward0"),
    "solve left=False": (lambda a, b: tl.linalg.solve(a, b[:, :4], left=False), (SQ, S), "LinalgSolveExBackward0"),
    "solve batched": (lambda a, b: tl.linalg.solve(tl.stack([a, a.T]), b[:, :2]), (SQ, S), "LinalgSolveExBackward0"),
    "solve_triangular": (lambda a, b: tl.linalg.solve_triangular(a, b, upper=True), (SQ, S),
                         "LinalgSolveTriangularBackward0"),
    "solve_triangular lower unit right": (
        lambda a, b: tl.linalg.solve_triangular(a, b[:, :4], upper=False, left=False, unitriangular=True), (SQ, S),
        "LinalgSolveTriangularBackward0"),
    "cholesky_solve": (lambda b, a: tl.cholesky_solve(b, a.tril() + _eye(4)), (S, SQ), "CholeskySolveBackward0"),
    "cholesky_solve upper": (lambda b, a: tl.cholesky_solve(b, a.triu() + _eye(4), upper=True), (S, SQ),
                             "CholeskySolveBackward0"),
    "det": (lambda a: tl.linalg.det(a), (X[:, :4],), "LinalgDetBackward0"),
    "det batched": (lambda a: tl.linalg.det(tl.stack([a, a @ a.T])), (X[:, :4],), "LinalgDetBackward0"),
    "det singular": (lambda a: tl.linalg.det(a), (SINGULAR,), "LinalgDetBackward0"),
    "slogdet": (lambda a: tl.stack(tl.linalg.slogdet(a)), (X[:, :4],), "LinalgSlogdetBackward0"),
    "logdet": (lambda a: tl.logdet(_sym_part(a)), (X,), "LinalgSlogdetBackward0"),
    "cholesky": (lambda a: tl.linalg.cholesky(_sym_part(a)), (X,), "LinalgCholeskyExBackward0"),
    "cholesky upper": (lambda a: tl.linalg.cholesky(_sym_part(a), upper=True), (X,), "LinalgCholeskyExBackward0"),
    "matrix_exp": (lambda a: tl.linalg.matrix_exp(tl.stack([a, -a.T]) * 0.5), (X[:, :4],), "LinalgMatrixExpBackward0"),
    "pinv wide and tall": (lambda a: tl.cat([tl.linalg.pinv(a).reshape(-1), tl.linalg.pinv(a[:3].T).reshape(-1)]),
                           (X,), "LinalgPinvBackward0"),
    "qr tall": (lambda a: _qr_parts(a.T), (X,), "LinalgQrBackward0"),
    "qr wide": (lambda a: _qr_parts(a), (X,), "LinalgQrBackward0"),
    "qr complete square": (lambda a: _qr_parts(a, "complete"), (X[:, :4],), "LinalgQrBackward0"),
    "eigh": (_gauge_free_eigh, (X[:, :4],), "LinalgEighBackward0"),
    "eigvalsh": (lambda a: tl.linalg.eigvalsh(a + a.T), (X[:, :4],), "LinalgEighBackward0"),
    "svd wide": (_gauge_free_svd, (X,), "LinalgSvdBackward0"),
    "svd tall": (lambda a: _gauge_free_svd(a.T), (X,), "LinalgSvdBackward0"),
    "svd full square": (lambda a: _gauge_free_svd(a, True), (X[:, :4],), "LinalgSvdBackward0"),
    "svdvals": (lambda a: tl.linalg.svdvals(a), (X,), "LinalgSvdBackward0"),
    "eig": (_gauge_free_eig, (X[:, :4],), "LinalgEigBackward0"),
    "eigvals": (lambda a: tl.linalg.eigvals(a), (X[:, :4],), "LinalgEigBackward0"),
    "lu square": (_lu_parts, (X[:, :4],), "LinalgLuBackward0"),
    "lu wide": (_lu_parts, (X,), "LinalgLuBackward0"),
    "lu tall": (lambda a: _lu_parts(a.T), (X,), "LinalgLuBackward0"),
    "lu_factor wide": (lambda a: tl.linalg.lu_factor(a)[0], (X,), "LinalgLuFactorExBackward0"),
    "lu_factor tall": (lambda a: tl.linalg.lu_factor(a.T)[0], (X,), "LinalgLuFactorExBackward0"),
    # batches
    "decompositions batched": (lambda a: tl.cat([
        _gauge_free_svd(tl.stack([a, a.flip(1)])), _gauge_free_eigh(tl.stack([a[:, :4], a[:, 1:]])),
        _qr_parts(tl.stack([a.T, a.flip(0).T])), tl.linalg.lu_factor(tl.stack([a, a.flip(0)]))[0].reshape(-1),
        tl.linalg.cholesky(tl.stack([_sym_part(a), _sym_part(a.flip(1))])).reshape(-1),
        tl.linalg.pinv(tl.stack([a, a * 2])).reshape(-1), tl.linalg.slogdet(tl.stack([a[:, :4], a[:, 1:]]))[1]]),
        (X,), "LinalgSvdBackward0"),
    # pooling, prelu, the convolution's weight gradient
    "max_pool3d": (lambda v: F.max_pool3d(v, 2, stride=(2, 1, 2), padding=1), (VOL,), "MaxPool3DWithIndicesBackward0"),
    "adaptive_max_pool3d": (lambda v: F.adaptive_max_pool3d(v, (2, 3, 4)), (VOL,), "AdaptiveMaxPool3DBackward0"),
    "fractional_max_pool2d": (lambda a: F.fractional_max_pool2d(a, 2, output_size=(3, 4), _random_samples=FRAC2),
                              (IMG,), "FractionalMaxPool2DBackward0"),
    "fractional_max_pool2d unbatched": (
        lambda a: F.fractional_max_pool2d(a[0], 3, output_ratio=0.5, _random_samples=FRAC2[:1]), (IMG,),
        "FractionalMaxPool2DBackward0"),
    "fractional_max_pool3d": (lambda v: F.fractional_max_pool3d(v, 2, output_size=(3, 2, 3), _random_samples=FRAC3),
                              (VOL,), "FractionalMaxPool3DBackward0"),
    "prelu": (lambda a, w: F.prelu(a, w), (IMG, W3), "PreluKernelBackward0"),
    "prelu one weight": (lambda a, w: F.prelu(a, w[:1]), (IMG, W3), "PreluKernelBackward0"),
    "conv2d_weight": (lambda a, gy: tl.nn.grad.conv2d_weight(a, (4, 3, 3, 3), gy, stride=2, padding=1), (IMG, GY),
                      "ConvolutionBackwardBackward0"),
}


@pytest.mark.parametrize("name", list(NEW_CASES))
def test_new_rules_against_central_differences(name, no_double_backward_but_complex_elementwise):
    f, xs, node = NEW_CASES[name]
    _check_against_central_differences(f, xs, _probe_tangent(xs, 1), node)


@pytest.mark.parametrize("name", list(NEW_CASES))
def test_new_rules_under_no_grad(name, no_double_backward_but_complex_elementwise):
    """Tangents travel under no_grad too (each op records its node for a dual input)."""
    f, xs, _ = NEW_CASES[name]
    ts = _probe_tangent(xs, 1)
    _, want = jvp(f, xs, ts)
    with tl.no_grad():
        _, got = jvp(f, xs, ts)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["binary_cross_entropy", "bce_with_logits weight pos_weight", "special binary",
                                  "nextafter", "solve", "solve vector", "solve_triangular",
                                  "solve_triangular lower unit right", "cholesky_solve", "prelu", "conv2d_weight"])
@pytest.mark.parametrize("which", [0, 1])
def test_new_rules_with_one_input_without_tangent(name, which, no_double_backward):
    f, xs, _ = NEW_CASES[name]
    ts = [t if i == which else None for i, t in enumerate(_probe_tangent(xs, 3))]
    _, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=1e-6, atol=1e-7)


def test_a_tangent_without_a_formula_still_raises():
    """zeta has no derivative in its first argument (as in PyTorch): the rule leaves that case
    to the double backward, which raises PyTorch's error."""
    q = S.abs() + 1
    with pytest.raises(NotImplementedError, match="zeta"):
        jvp(lambda a, b: tl.special.zeta(a, b), (X.abs() + 2, q), (S, S))


def test_cross_entropy_with_every_target_ignored_gives_nan(no_double_backward):
    f = lambda x: F.cross_entropy(x, tl.full((4,), 2), ignore_index=2)    # noqa: E731
    primal, tangent = jvp(f, (X,), (S,))
    assert np.isnan(primal.item()) and np.isnan(tangent.item())


def test_other_losses_are_compositions_with_rules(no_double_backward):
    """mse/l1/smooth_l1/huber/kl_div/poisson/gaussian/margin losses are built from ops that
    have rules: none of them falls back."""
    t = S.abs() + 0.5
    losses = [
        lambda x: F.mse_loss(x, t) + F.l1_loss(x, t) + F.smooth_l1_loss(x, t, beta=0.5) + F.huber_loss(x, t),
        lambda x: F.kl_div(F.log_softmax(x, 1), t.softmax(1), reduction="batchmean")
        + F.kl_div(x, t.log(), reduction="sum", log_target=True),
        lambda x: F.poisson_nll_loss(x, t) + F.gaussian_nll_loss(x, t, t) + F.soft_margin_loss(x, t.sign()),
        lambda x: F.margin_ranking_loss(x[0], x[1], t[2].sign()) + F.hinge_embedding_loss(x, -t.sign())
        + F.multilabel_soft_margin_loss(x, (t > 1).double()) + F.multi_margin_loss(x, TGT)
        + F.cosine_embedding_loss(x, x.flip(0), tl.tensor([1.0, -1, 1, -1], dtype=F64))
        + F.triplet_margin_loss(x, x.flip(0), x.flip(1)),
    ]
    for f in losses:
        _check_against_central_differences(f, (X,), (S,), None)


# ---- complex tangents: the linear tables -------------------------------------------------------------
C128 = tl.complex128
ZC = tl.complex(X, S)
COMPLEX_NEW_CASES = {
    "fft and ifft": (lambda z: tl.fft.fft(z, n=7) + tl.fft.ifft(z, norm="ortho", n=7), "FftC2CBackward0"),
    "fftn": (lambda z: tl.fft.fftn(z, s=(3, 6), norm="forward"), "FftC2CBackward0"),
    "irfft": (lambda z: tl.fft.irfft(z, n=9), "FftC2RBackward0"),
    "irfft even": (lambda z: tl.fft.irfft(z, norm="forward"), "FftC2RBackward0"),
    "hfft": (lambda z: tl.fft.hfft(z, n=7, norm="ortho"), "FftC2RBackward0"),
    "view_as_real": (lambda z: tl.view_as_real(z * 1), "ViewAsRealBackward0"),
    "real and imag": (lambda z: z.real * 2 + z.imag.flip(0), "ImagBackward0"),
    "view_as_complex round trip": (lambda z: tl.view_as_complex(tl.view_as_real(z).flip(0).contiguous()),
                                   "ViewAsComplexBackward0"),
    "conj_physical": (lambda z: tl.conj_physical(z) * (1 + 2j), "ConjPhysicalBackward0"),
    "eig": (lambda z: _gauge_free_eig(z[:, :4]), "LinalgEigBackward0"),
}


@pytest.mark.parametrize("name", list(COMPLEX_NEW_CASES))
def test_new_linear_rules_with_complex_tangents(name, no_double_backward_but_complex_elementwise):
    f, node = COMPLEX_NEW_CASES[name]
    t = tl.randn(4, 5, dtype=C128, generator=tl.Generator().manual_seed(7))
    _check_against_central_differences(f, (ZC,), (t,), node)


# ---- tied to the backward: <J t, g> = <t, J^T g> ------------------------------------------------------
@pytest.mark.parametrize("name", ["ctc_loss", "cholesky_solve", "det", "cross_entropy spatial none",
                                  "lu_factor tall", "bce_with_logits pos_weight none", "fractional_max_pool3d"])
def test_new_rules_follow_the_backward(name, no_double_backward):
    f, xs, _ = NEW_CASES[name]
    ts = _probe_tangent(xs, 4)
    out = f(*xs)
    gout = tl.randn(*out.shape, dtype=F64, generator=tl.Generator().manual_seed(5))
    lhs, rhs = _adjoint_gap(f, xs, ts, gout)
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


# ---- against PyTorch's forward AD -----------------------------------------------------------------------
def _tt(torch, t):
    return torch.from_numpy(t.numpy().copy())


def _torch_gauge_free_svd(torch, a):
    U, S, Vh = torch.linalg.svd(a, full_matrices=False)
    c = torch.arange(1, S.shape[-1] + 1, dtype=torch.float64)
    return torch.cat([S, (U @ Vh).reshape(-1), ((U * c) @ U.mT).reshape(-1), ((Vh.mT * c) @ Vh).reshape(-1)])


def _torch_gauge_free_eigh(torch, a):
    w, V = torch.linalg.eigh(a + a.mT)
    c = torch.arange(1, w.shape[-1] + 1, dtype=torch.float64)
    return torch.cat([w, ((V * c) @ V.mT).reshape(-1)])


NEW_TORCH_CASES = {
    "nll_loss weight ignore_index none": lambda torch, x: torch.nn.functional.nll_loss(
        x, _tt(torch, TGT), weight=_tt(torch, WCLS), ignore_index=1, reduction="none"),
    "nll_loss2d sum": lambda torch, a: torch.nn.functional.nll_loss(a, _tt(torch, SPATIAL_TGT), reduction="sum"),
    "cross_entropy weight ignore_index": lambda torch, x: torch.nn.functional.cross_entropy(
        x, _tt(torch, TGT), weight=_tt(torch, WCLS), ignore_index=4),
    "cross_entropy weight ignore_index smoothing": lambda torch, x: torch.nn.functional.cross_entropy(
        x, _tt(torch, TGT), weight=_tt(torch, WCLS), ignore_index=1, label_smoothing=0.2),
    "cross_entropy spatial none": lambda torch, a: torch.nn.functional.cross_entropy(
        a, _tt(torch, SPATIAL_TGT), weight=_tt(torch, WCLS[:3]), reduction="none"),
    "binary_cross_entropy": lambda torch, x, s: torch.nn.functional.binary_cross_entropy(
        x.sigmoid(), s.sigmoid(), weight=_tt(torch, WCLS)),
    "bce_with_logits weight pos_weight": lambda torch, x, s: torch.nn.functional.binary_cross_entropy_with_logits(
        x, s.sigmoid(), weight=_tt(torch, WCLS), pos_weight=_tt(torch, POS_W)),
    "bce_with_logits sum": lambda torch, x, s: torch.nn.functional.binary_cross_entropy_with_logits(
        x, s, reduction="sum"),
    "rfft": lambda torch, x: torch.fft.rfft(x, n=7, norm="ortho"),
    "fft of a real input": lambda torch, x: torch.fft.fft(x, dim=0, norm="forward"),
    "fft2 and ifft": lambda torch, x: torch.fft.fft2(x, s=(4, 6)) + torch.fft.ifft(x, n=6),
    "irfft": lambda torch, x: torch.fft.irfft(torch.fft.rfft(x) * (1 + 2j), n=9, norm="ortho"),
    "hfft and ihfft": lambda torch, x: torch.fft.hfft(torch.fft.ihfft(x), n=6)
    + torch.fft.irfftn(torch.fft.rfftn(x), s=(4, 6)),
    "special unary": lambda torch, x: torch.special.erfcx(x) + torch.special.ndtr(x) + torch.special.log_ndtr(x)
    + torch.special.ndtri(x.sigmoid()) + torch.special.entr(x.abs()) + torch.special.i0(x)
    + torch.special.i0e(x) + torch.special.i1(x) + torch.special.i1e(x),
    "polygamma and mvlgamma": lambda torch, x: torch.polygamma(2, x.abs() + 1) + torch.mvlgamma(x.abs() + 3, 3),
    "det": lambda torch, a: torch.linalg.det(a),
    "slogdet": lambda torch, a: torch.stack(torch.linalg.slogdet(a)),
    "inv": lambda torch, a: torch.linalg.inv(a),
    "solve": lambda torch, a, b: torch.linalg.solve(a, b),
    "solve left=False": lambda torch, a, b: torch.linalg.solve(a, b[:, :4], left=False),
    "solve_triangular": lambda torch, a, b: torch.linalg.solve_triangular(a, b, upper=True),
    "cholesky_solve": lambda torch, b, a: torch.cholesky_solve(b, a.tril() + torch.eye(4, dtype=torch.float64)),
    "cholesky": lambda torch, a: torch.linalg.cholesky(a @ a.T + torch.eye(4, dtype=torch.float64)),
    "matrix_exp": lambda torch, a: torch.linalg.matrix_exp(torch.stack([a, -a.T]) * 0.5),
    "pinv wide and tall": lambda torch, a: torch.cat([torch.linalg.pinv(a).reshape(-1),
                                                      torch.linalg.pinv(a[:3].T).reshape(-1)]),
    "qr tall": lambda torch, a: torch.cat([v.reshape(-1) for v in torch.linalg.qr(a.T)]),
    "qr wide": lambda torch, a: torch.cat([v.reshape(-1) for v in torch.linalg.qr(a)]),
    "eigh": _torch_gauge_free_eigh,
    "svd wide": _torch_gauge_free_svd,
    "svd tall": lambda torch, a: _torch_gauge_free_svd(torch, a.T),
    "lu wide": lambda torch, a: torch.cat([v.reshape(-1) for v in torch.linalg.lu(a)[1:]]),
    "lu tall": lambda torch, a: torch.cat([v.reshape(-1) for v in torch.linalg.lu(a.T)[1:]]),
    "max_pool3d": lambda torch, v: torch.nn.functional.max_pool3d(v, 2, stride=(2, 1, 2), padding=1),
    "prelu": lambda torch, a, w: torch.nn.functional.prelu(a, w),
}


@pytest.mark.parametrize("name", list(NEW_TORCH_CASES))
def test_new_rules_against_torch(name, no_double_backward_but_complex_elementwise):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    f, xs, _ = NEW_CASES[name]
    ts = _probe_tangent(xs, 2)
    _, got = jvp(f, xs, ts)
    with tfw.dual_level():
        out = NEW_TORCH_CASES[name](torch, *[tfw.make_dual(_tt(torch, x), _tt(torch, t)) for x, t in zip(xs, ts)])
        want = tfw.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-11)


def test_eigvals_against_torch(no_double_backward_but_complex_elementwise):
    """The eigenvalues' order is the solver's: each value's tangent is compared with PyTorch's
    for the same value."""
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    a = X[:, :4]
    t = _probe_tangent((a,), 2)[0]
    primal, got = jvp(tl.linalg.eigvals, (a,), (t,))
    with tfw.dual_level():
        out = torch.linalg.eigvals(tfw.make_dual(_tt(torch, a), _tt(torch, t)))
        want_primal, want = (v.detach().numpy() for v in tfw.unpack_dual(out))
    mine, theirs = primal.detach().numpy(), want_primal
    order = [int(np.argmin(np.abs(theirs - v))) for v in mine]
    assert sorted(order) == list(range(len(mine)))
    np.testing.assert_allclose(mine, theirs[order], rtol=1e-10)
    np.testing.assert_allclose(got.numpy(), want[order], rtol=1e-9, atol=1e-11)
