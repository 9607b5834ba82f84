"""Backward formulas of the view, conversion and joining ops (torchlite/_ops/views_grad.py,
conversion_grad.py, joining_grad.py).

CASES lists every differentiable op of these families once with its gradcheck case.  Each
case runs gradcheck in float64 on several input layouts (contiguous, transposed, strided,
broadcast through expand), gradgradcheck on the contiguous layout, and a comparison of the
values and gradients with PyTorch's.  A case's fn(L, *xs) is written once for both libraries
(L is torchlite or torch).  The harness is tests/helpers.py's (test_autograd_indexing.py
uses it too)."""
import numpy as np
import pytest

import torchlite as tl
from helpers import LAYOUTS, Case, case_table_tests, grad_fn_names, missing_ops


# ---- the table: every differentiable view, conversion and joining op -----------------------------
CASES = [
    # views
    Case("view", lambda L, x: x.contiguous().view(3, 2) * 1, (2, 3)),
    Case("view_as", lambda L, x, y: x.contiguous().view_as(y) * y, (2, 3), (3, 2)),
    Case("reshape", lambda L, x: x.reshape(-1), (2, 3)),
    Case("reshape_copy", lambda L, x: x.t().reshape(6), (2, 3)),
    Case("reshape_as", lambda L, x, y: x.reshape_as(y) * y, (2, 3), (6,)),
    Case("flatten", lambda L, x: x.flatten(1), (2, 3, 2)),
    Case("ravel", lambda L, x: x.ravel(), (2, 3)),
    Case("unflatten", lambda L, x: x.unflatten(1, (2, 2)), (3, 4)),
    Case("permute", lambda L, x: x.permute(2, 0, 1), (2, 3, 2)),
    Case("transpose", lambda L, x: x.transpose(0, -1), (2, 3, 2)),
    Case("swapaxes", lambda L, x: x.swapaxes(0, 1), (2, 3)),
    Case("t", lambda L, x: x.t(), (2, 3)),
    Case("T", lambda L, x: x.T, (2, 3)),
    Case("mT", lambda L, x: x.mT, (2, 2, 3)),
    Case("movedim", lambda L, x: x.movedim((0, 1), (2, 0)), (2, 3, 2)),
    Case("expand", lambda L, x: x.expand(2, 3, 4), (3, 1)),
    Case("expand_as", lambda L, x, y: x.expand_as(y) * y, (1, 3), (2, 3)),
    Case("broadcast_to", lambda L, x: L.broadcast_to(x, (2, 2, 3)), (2, 3)),
    Case("broadcast_tensors", lambda L, x, y: L.broadcast_tensors(x, y), (2, 1), (3,)),
    Case("squeeze", lambda L, x: x.squeeze(), (2, 1, 3)),
    Case("squeeze_dim", lambda L, x: x.squeeze(1), (2, 1, 3)),
    Case("squeeze_dims", lambda L, x: x.squeeze((1, 3)), (2, 1, 3, 1)),
    Case("unsqueeze", lambda L, x: x.unsqueeze(-1), (2, 3)),
    Case("atleast_3d", lambda L, x: L.atleast_3d(x), (3,)),
    Case("narrow", lambda L, x: x.narrow(1, 1, 2), (2, 4)),
    Case("select", lambda L, x: x.select(1, -1), (2, 3)),
    Case("unbind", lambda L, x: x.unbind(1), (2, 3)),
    Case("unbind_partial", lambda L, x: x.unbind(0)[1], (2, 3)),
    Case("diagonal", lambda L, x: x.diagonal(1), (3, 4)),
    Case("diagonal_dims", lambda L, x: x.diagonal(-1, 0, 2), (3, 2, 3)),
    # (an expanded leaf has too small a storage for these geometries)
    Case("as_strided", lambda L, x: x.as_strided((2, 2), (1, 2)), (2, 3), layouts=LAYOUTS[:3]),
    Case("as_strided_overlap", lambda L, x: x.as_strided((3, 3), (1, 1)), (2, 3),
         layouts=LAYOUTS[:3]),
    Case("as_strided_of_expanded", lambda L, x: x.expand(3, 4).as_strided((2, 2), (1, 1)), (4,),
         layouts=("contig", "step")),
    Case("unfold", lambda L, x: x.unfold(1, 2, 2), (2, 5)),
    Case("unfold_overlap", lambda L, x: x.unfold(1, 3, 1), (2, 5)),
    Case("flip", lambda L, x: x.flip((0, 1)), (2, 3)),
    Case("fliplr", lambda L, x: x.fliplr(), (2, 3)),
    Case("flipud", lambda L, x: x.flipud(), (2, 3)),
    Case("clone", lambda L, x: x.clone(), (2, 3)),
    Case("contiguous", lambda L, x: x.t().contiguous(), (2, 3)),
    # conversions (float64 -> float64 so that finite differences are exact enough)
    Case("to_copy", lambda L, x: x.to(L.float64, copy=True), (2, 3)),
    Case("double", lambda L, x: x.double() * 1, (2, 3)),
    Case("cpu", lambda L, x: x.cpu() * 2, (2, 3)),
    Case("type_as", lambda L, x, y: x.type_as(y) * y, (2, 3), (2, 3)),
    # joining and splitting
    Case("cat", lambda L, x, y: L.cat([x, y, x], 1), (2, 3), (2, 1)),
    Case("cat_legacy_empty", lambda L, x: L.cat([x, L.zeros(0, dtype=L.float64)], 0), (2, 3)),
    Case("concat", lambda L, x, y: L.concat([x, y]), (2, 3), (1, 3)),
    Case("stack", lambda L, x, y: L.stack([x, y], 1), (2, 3), (2, 3)),
    Case("hstack", lambda L, x, y: L.hstack([x, y]), (3,), (2,)),
    Case("vstack", lambda L, x, y: L.vstack([x, y]), (3,), (2, 3)),
    Case("dstack", lambda L, x, y: L.dstack([x, y]), (2, 3), (2, 3)),
    Case("column_stack", lambda L, x, y: L.column_stack([x, y]), (3,), (3, 2)),
    Case("split", lambda L, x: x.split(2, 1), (2, 5)),
    Case("split_sizes", lambda L, x: L.split(x, [1, 3, 1], 1), (2, 5)),
    Case("split_partial", lambda L, x: x.split(1, 0)[1] * 3, (3, 2)),
    Case("chunk", lambda L, x: x.chunk(3, 0), (4, 2)),
    Case("tensor_split", lambda L, x: x.tensor_split(3, 1), (2, 4)),
    Case("tensor_split_unordered", lambda L, x: x.tensor_split([3, 1], 1), (2, 4)),
    Case("hsplit", lambda L, x: L.hsplit(x, 2), (2, 4)),
    Case("vsplit", lambda L, x: L.vsplit(x, [1]), (3, 2)),
    Case("repeat", lambda L, x: x.repeat(2, 1, 3), (2, 3)),
    Case("repeat_zero", lambda L, x: x.repeat(0, 2), (2, 3), double=False),
    Case("tile", lambda L, x: x.tile((2,)), (2, 3)),
    Case("repeat_interleave", lambda L, x: x.repeat_interleave(2, 1), (2, 3)),
    Case("repeat_interleave_flat", lambda L, x: x.repeat_interleave(2), (2, 3)),
    Case("repeat_interleave_counts",
         lambda L, x: x.repeat_interleave(L.tensor([2, 0, 1]), dim=1), (2, 3)),
    Case("roll", lambda L, x: x.roll((1, -2), (0, 1)), (2, 3)),
    Case("roll_flat", lambda L, x: x.roll(4), (2, 3)),
    Case("tril", lambda L, x: x.tril(), (3, 3)),
    Case("triu", lambda L, x: x.triu(-1), (2, 3, 3)),
    Case("diag_1d", lambda L, x: L.diag(x, -1), (3,)),
    Case("diag_2d", lambda L, x: L.diag(x, 1), (3, 4)),
    Case("diagflat", lambda L, x: L.diagflat(x), (2, 2)),
    Case("diag_embed", lambda L, x: L.diag_embed(x, 1, 0, 2), (2, 3)),
    Case("rot90", lambda L, x: x.rot90(1, (0, 1)), (2, 3)),
    Case("rot90_k2", lambda L, x: x.rot90(2), (2, 3)),
    Case("rot90_k3", lambda L, x: x.rot90(-1), (2, 3)),
    Case("rot90_k0", lambda L, x: x.rot90(4), (2, 3)),
    Case("block_diag", lambda L, x, y: L.block_diag(x, y), (2, 3), (2,)),
    Case("meshgrid", lambda L, x, y: L.meshgrid(x, y, indexing="xy"), (3,), (2,)),
    Case("cartesian_prod", lambda L, x, y: L.cartesian_prod(x, y), (3,), (2,)),
    Case("diff", lambda L, x: L.diff(x, 2, 1), (2, 4)),
    Case("diff_prepend", lambda L, x, y: x.diff(dim=0, prepend=y), (2, 3), (1, 3)),
    Case("combinations", lambda L, x: L.combinations(x, 2), (4,)),
    Case("combinations_replacement", lambda L, x: L.combinations(x, 3, with_replacement=True), (2,)),
    Case("split_with_sizes", lambda L, x: x.split_with_sizes([1, 2], 1), (2, 3)),
    Case("narrow_copy", lambda L, x: x.narrow_copy(1, 1, 2), (2, 3)),
    Case("sum_to_size", lambda L, x: x.sum_to_size(1, 3), (2, 3)),
    # 0-d, empty and size-1 dims
    Case("view_0d", lambda L, x: x.view(1, 1), ()),
    Case("expand_0d", lambda L, x: x.expand(2, 3), ()),
    Case("unsqueeze_0d", lambda L, x: x.unsqueeze(0), ()),
    Case("reshape_empty", lambda L, x: x.reshape(3, 0), (0, 3)),
    Case("permute_empty", lambda L, x: x.permute(1, 0), (0, 3)),
    Case("cat_empty", lambda L, x, y: L.cat([x, y]), (0, 3), (2, 3), check=False),
    Case("split_empty", lambda L, x: x.split(1, 1), (0, 3)),
    Case("stack_size1", lambda L, x: L.stack([x]), (1, 3)),
    Case("flip_size1", lambda L, x: x.flip(0), (1, 3)),
    Case("expand_size1", lambda L, x: x.expand(1, 2, 3), (1, 3)),
]


test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_table_covers_every_op():
    """Each op of the task has a case (a missing op would be a missing gradient)."""
    ops = ("view view_as reshape reshape_as flatten unflatten permute transpose t T mT movedim "
           "expand expand_as broadcast_to squeeze unsqueeze narrow select unbind diagonal "
           "as_strided unfold flip clone contiguous to_copy double cpu cat concat stack hstack "
           "vstack dstack split chunk tensor_split repeat tile repeat_interleave roll tril triu "
           "diag_1d diag_2d diag_embed rot90").split()
    assert missing_ops(CASES, ops) == []


# ---- node names, conversions, grad mode --------------------------------------------------------
NAMED = [
    ("view", lambda L, x: x.view(-1)), ("reshape_copy", lambda L, x: x.t().reshape(-1)),
    ("permute", lambda L, x: x.permute(1, 0)), ("T", lambda L, x: x.T), ("mT", lambda L, x: x.mT),
    ("t", lambda L, x: x.t()), ("expand", lambda L, x: x[:1].expand(3, 4)),
    ("squeeze", lambda L, x: x[:1].squeeze()), ("squeeze1", lambda L, x: x[:1].squeeze(0)),
    ("squeeze2", lambda L, x: x[:1].squeeze((0,))), ("unsqueeze", lambda L, x: x.unsqueeze(0)),
    ("narrow", lambda L, x: x.narrow(0, 1, 1)), ("select", lambda L, x: x.select(0, 1)),
    ("unbind", lambda L, x: x.unbind()[0]), ("diagonal", lambda L, x: x.diagonal()),
    ("as_strided", lambda L, x: x.as_strided((2,), (1,))), ("unfold", lambda L, x: x.unfold(1, 2, 1)),
    ("flip", lambda L, x: x.flip(0)), ("clone", lambda L, x: x.clone()),
    ("contiguous", lambda L, x: x.t().contiguous()), ("to", lambda L, x: x.float()),
    ("cat", lambda L, x: L.cat([x, x])), ("stack", lambda L, x: L.stack([x, x])),
    ("split", lambda L, x: x.split(1)[0]), ("split_sizes", lambda L, x: x.split([1, 2])[0]),
    ("chunk", lambda L, x: x.chunk(2)[0]), ("repeat", lambda L, x: x.repeat(2, 1)),
    ("roll", lambda L, x: x.roll(1, 0)), ("tril", lambda L, x: x.tril()),
    ("triu", lambda L, x: x.triu()), ("diag_embed", lambda L, x: L.diag_embed(x)),
    ("diag_1d", lambda L, x: L.diag(x[0])), ("block_diag", lambda L, x: L.block_diag(x, x)),
]


@pytest.mark.parametrize("name,fn", NAMED, ids=[n for n, _ in NAMED])
def test_node_names_match_torch(name, fn):
    ours, torchs = grad_fn_names(fn)
    assert ours == torchs


@pytest.mark.parametrize("convert,dtype", [("float", tl.float32), ("half", tl.float16),
                                           ("bfloat16", tl.bfloat16)])
def test_conversion_casts_gradient_back(convert, dtype):
    x = tl.tensor([[1.0, -2.0, 3.0]], dtype=tl.float64, requires_grad=True)
    y = getattr(x, convert)()
    assert y.dtype is dtype and type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * tl.tensor([[2.0, 3.0, 4.0]], dtype=dtype)).sum().backward()
    assert x.grad.dtype is tl.float64
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 3.0, 4.0]])


def test_conversion_to_integer_and_same_dtype():
    x = tl.tensor([1.5, 2.5], requires_grad=True)
    assert x.to(tl.float32) is x and x.float() is x
    assert not x.long().requires_grad and x.long().grad_fn is None
    y = x.to(tl.float64)
    (y * 2).sum().backward()
    assert x.grad.dtype is tl.float32 and x.grad.tolist() == [2.0, 2.0]


def test_no_grad_records_nothing():
    x = tl.randn(3, 4, requires_grad=True)
    with tl.no_grad():
        outs = [x.view(-1), x.t(), x.reshape(12), x[0], x.double(), tl.cat([x, x]),
                x.split(2)[0], x.unbind()[0], x.repeat(2, 1), x.flip(0), x.clone()]
    assert all(o.grad_fn is None and not o.requires_grad for o in outs)


def test_out_argument_refuses_grad():
    x = tl.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tl.cat([x, x], out=tl.empty(4, 3))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tl.tril(x, out=tl.empty(2, 3))
    with tl.no_grad():
        tl.cat([x, x], out=tl.empty(4, 3))      # fine without grad mode


def test_in_place_joining_ops_on_graph_tensors():
    x = tl.randn(3, 3, dtype=tl.float64, requires_grad=True)
    y = x * 1
    y.tril_()
    assert type(y.grad_fn).__name__ == "TrilBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tril(np.ones((3, 3))))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.triu_()


def test_copy_and_fill_on_graph_tensors():
    x = tl.randn(3, dtype=tl.float64, requires_grad=True)
    v = tl.tensor(2.0, dtype=tl.float64, requires_grad=True)
    buf = tl.zeros(2, 3, dtype=tl.float64)
    buf.copy_(x * 3)                    # broadcast over the rows: the gradient sums them
    assert buf.requires_grad and type(buf.grad_fn).__name__ == "CopyBackwards"
    w = tl.zeros(4, dtype=tl.float64).fill_(v)
    (buf.sum() + (w * tl.arange(4.0, dtype=tl.float64)).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])
    assert v.grad.item() == 6.0
    z = x * 1
    z.zero_()
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])     # zero_ cut the path


def test_unbind_backward_gets_zeros_for_unused_outputs():
    x = tl.randn(3, 2, dtype=tl.float64, requires_grad=True)
    a, b, c = x.unbind(0)
    (b * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [2, 2], [0, 0]])


def test_views_of_views_chain():
    x = tl.randn(2, 3, 4, dtype=tl.float64, requires_grad=True)
    y = x.permute(2, 0, 1)[1:].reshape(3, 6).t().unsqueeze(0).expand(2, 6, 3)
    y.sum().backward()
    expected = np.zeros((2, 3, 4))
    expected[:, :, 1:] = 2
    np.testing.assert_array_equal(x.grad.numpy(), expected)


# ---- property test: random chains of views ----------------------------------------------------------
def _random_view_chain(data, st, ndim):
    """A chain of view ops for an ndim tensor, as (name, args) steps both libraries accept."""
    steps = []
    perm = data.draw(st.permutations(range(ndim)))
    steps.append(("permute", tuple(perm)))
    if data.draw(st.booleans()):
        steps.append(("flip", (0,)))
    steps.append(("unsqueeze", (data.draw(st.integers(0, ndim)),)))
    return steps


def test_hypothesis_view_chains_match_torch():
    """Random shapes through permute, narrow, flip, unsqueeze, expand and reshape: the
    gradient equals PyTorch's."""
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def run(data):
        shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
        steps = _random_view_chain(data, st, len(shape))
        dim = data.draw(st.integers(0, len(shape)))      # a dim of the unsqueezed result
        a = np.random.default_rng(0).standard_normal(shape)
        g = None
        results = []
        for L in (tl, torch):
            x = L.tensor(a, dtype=L.float64, requires_grad=True)
            y = x
            for name, args in steps:
                y = getattr(y, name)(*args)
            size = y.shape[dim]
            y = y.narrow(dim, size // 2, size - size // 2)
            y = y.expand(2, *y.shape).reshape(-1)
            if g is None:
                g = np.random.default_rng(1).standard_normal(tuple(y.shape))
            (y * L.tensor(g, dtype=L.float64)).sum().backward()
            results.append(x.grad.numpy())
        np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    run()
