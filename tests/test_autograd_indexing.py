"""Backward formulas of the indexing ops and of the value-selecting sorts
(torchlite/_ops/indexing_grad.py), and autograd through setitem and the in-place index ops.

CASES lists every differentiable op of these families once with its gradcheck case; the
harness (gradcheck on several layouts, gradgradcheck, comparison with PyTorch) is
tests/helpers.py's.  Index tensors hold no repeated target where the op's result would
depend on which write wins (scatter, index_copy, put without accumulate)."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import gradcheck

from helpers import Case, case_table_tests, grad_fn_names, check_against_torch, missing_ops

MASK = [True, False, True]


def _i(L, v):
    return L.tensor(v)


CASES = [
    # tensor[index]
    Case("getitem_int", lambda L, x: x[1], (2, 3)),
    Case("getitem_negative", lambda L, x: x[-1, -2], (2, 3)),
    Case("getitem_slice_step", lambda L, x: x[:, ::2], (2, 3)),
    Case("getitem_none_ellipsis", lambda L, x: x[None, ..., 1:], (2, 3)),
    Case("getitem_bool_scalar", lambda L, x: x[True], (2, 3)),
    Case("getitem_list_repeats", lambda L, x: x[[1, 0, 1]], (2, 3)),
    Case("getitem_tensor_2d", lambda L, x: x[:, _i(L, [[0, 2], [2, 2]])], (2, 3)),
    Case("getitem_two_arrays", lambda L, x: x[_i(L, [0, 1, 1]), _i(L, [2, 2, 0])], (2, 3)),
    Case("getitem_mask", lambda L, x: x[_i(L, [[True, False, True], [False, False, True]])], (2, 3)),
    Case("getitem_mask_row", lambda L, x: x[:, _i(L, MASK)], (2, 3)),
    Case("getitem_mixed", lambda L, x: x[1:, None, [0, 0, 2]], (2, 3)),
    # index ops
    Case("gather", lambda L, x: x.gather(1, _i(L, [[0, 0], [2, 1]])), (2, 3)),
    Case("scatter_src", lambda L, x, s: x.scatter(1, _i(L, [[0, 2], [1, 0]]), s), (2, 3), (2, 2)),
    Case("scatter_value", lambda L, x: x.scatter(0, _i(L, [[1, 0, 1]]), 2.5), (2, 3)),
    Case("scatter_add", lambda L, x, s: x.scatter_add(1, _i(L, [[0, 0], [1, 0]]), s), (2, 3), (2, 2)),
    Case("scatter_reduce_sum", lambda L, x, s: x.scatter_reduce(1, _i(L, [[0, 0], [2, 0]]), s, "sum"),
         (2, 3), (2, 2)),
    Case("scatter_reduce_mean",
         lambda L, x, s: x.scatter_reduce(1, _i(L, [[0, 0], [2, 0]]), s, "mean", include_self=False),
         (2, 3), (2, 2)),
    Case("scatter_reduce_amax", lambda L, x, s: x.scatter_reduce(1, _i(L, [[0, 0], [2, 0]]), s, "amax"),
         (2, 3), (2, 2), layouts=("contig", "t", "step")),
    Case("scatter_reduce_amin",
         lambda L, x, s: x.scatter_reduce(0, _i(L, [[1, 1, 0]]), s, "amin", include_self=False),
         (2, 3), (2, 3), layouts=("contig", "t", "step")),
    Case("scatter_reduce_prod", lambda L, x, s: x.scatter_reduce(1, _i(L, [[0, 0], [2, 0]]), s, "prod"),
         (2, 3), (2, 2)),
    Case("index_select", lambda L, x: x.index_select(1, _i(L, [2, 0, 2])), (2, 3)),
    Case("index_add", lambda L, x, s: x.index_add(0, _i(L, [1, 1, 0]), s, alpha=2.0), (2, 3), (3, 3)),
    Case("index_copy", lambda L, x, s: x.index_copy(1, _i(L, [2, 0]), s), (2, 3), (2, 2)),
    Case("index_fill", lambda L, x: x.index_fill(1, _i(L, [2, 2]), -1.0), (2, 3)),
    Case("index_fill_tensor", lambda L, x, v: x.index_fill(0, _i(L, [1, 1]), v.sum()), (2, 3), (2,)),
    Case("index_put", lambda L, x, v: x.index_put((_i(L, [1, 0]),), v), (2, 3), (3,)),
    Case("index_put_accumulate",
         lambda L, x, v: x.index_put((_i(L, [1, 1]), _i(L, [0, 0])), v, accumulate=True), (2, 3), (2,)),
    Case("masked_fill", lambda L, x: x.masked_fill(_i(L, MASK), 0.5), (2, 3)),
    Case("masked_fill_broadcast", lambda L, x, v: x.masked_fill(_i(L, [[True], [False]]), v.sum()),
         (3,), (2,)),
    Case("masked_select", lambda L, x: x.masked_select(_i(L, [[True], [False]])), (2, 3)),
    Case("masked_select_broadcast", lambda L, x: x.masked_select(_i(L, [[True, False, True]] * 2)),
         (3,)),
    Case("masked_scatter", lambda L, x, s: x.masked_scatter(_i(L, MASK), s), (2, 3), (5,)),
    Case("take", lambda L, x: x.take(_i(L, [[5, 0], [5, -1]])), (2, 3)),
    Case("take_along_dim", lambda L, x: L.take_along_dim(x, _i(L, [[1], [0]]), 1), (2, 3)),
    # (torch's flat take_along_dim views its input: contiguous inputs only)
    Case("take_along_dim_flat", lambda L, x: L.take_along_dim(x, _i(L, [4, 4, 0])), (2, 3),
         layouts=("contig",)),
    Case("put", lambda L, x, s: x.put(_i(L, [4, 0]), s), (2, 3), (2,)),
    Case("put_accumulate", lambda L, x, s: x.put(_i(L, [4, 4, 1]), s, accumulate=True), (2, 3), (3,)),
    # sorting: the selected values get the gradient
    Case("sort", lambda L, x: x.sort(1, descending=True)[0], (2, 3)),
    Case("sort_dim0", lambda L, x: x.sort(0).values, (3, 2), layouts=("contig", "t", "step")),
    Case("topk", lambda L, x: x.topk(2, 1)[0], (2, 3)),
    Case("topk_smallest", lambda L, x: x.topk(1, 0, largest=False).values, (3, 2),
         layouts=("contig", "t", "step")),
    Case("kthvalue", lambda L, x: x.kthvalue(2, 1)[0], (2, 3)),
    Case("kthvalue_keepdim", lambda L, x: x.kthvalue(1, 0, keepdim=True).values, (3, 2),
         layouts=("contig", "t", "step")),
    Case("msort", lambda L, x: L.msort(x), (3, 2), layouts=("contig", "t", "step")),
    # scatter of a whole region
    Case("slice_scatter", lambda L, x, s: L.slice_scatter(x, s, 1, 0, 3, 2), (2, 3), (2, 2)),
    Case("select_scatter", lambda L, x, s: x.select_scatter(s, 0, -1), (2, 3), (3,)),
    Case("diagonal_scatter", lambda L, x, s: L.diagonal_scatter(x, s, 1), (2, 3), (2,)),
    # 0-d, empty and size-1 dims
    Case("getitem_0d", lambda L, x: x[None, ...], ()),
    Case("getitem_0d_mask", lambda L, x: x[_i(L, True)], ()),
    Case("getitem_empty_index", lambda L, x: x[_i(L, [[], []]).long()], (2, 3), double=False),
    Case("gather_0d", lambda L, x: x.gather(0, _i(L, 0)), ()),
    Case("sort_0d", lambda L, x: x.sort()[0], ()),
    Case("topk_size1", lambda L, x: x.topk(1, 0)[0], (1, 3)),
    Case("index_select_empty", lambda L, x: x.index_select(0, _i(L, [0])[:0]), (2, 3), double=False),
    Case("masked_select_none", lambda L, x: x.masked_select(_i(L, [False, False, False])), (2, 3),
         double=False),
    Case("take_empty_input_dim", lambda L, x: x.take(_i(L, [0])[:0]), (0, 3)),
]


test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_table_covers_every_op():
    ops = ("getitem_int getitem_mask gather scatter_src scatter_value scatter_add index_select "
           "index_add index_copy index_fill index_put masked_fill masked_select masked_scatter "
           "take take_along_dim put sort topk kthvalue msort").split()
    assert missing_ops(CASES, ops) == []


# ---- setitem and the in-place index ops on tensors in a graph ------------------------------------
def _setitem_chain(L, x, v):
    y = x * 1
    y[0] = v                                # basic index, value broadcast over nothing
    y[1, ::2] = v[:2] * 2                   # basic index with a step
    y[[1, 0], [1, 0]] = v[2]                # advanced index, 0-d value
    y[_i(L, [[False, True, False], [False, False, False]])] = 7.0     # mask, number
    return y


def test_setitem_gradcheck_and_torch():
    x = tl.randn(2, 3, dtype=tl.float64, requires_grad=True)
    v = tl.randn(3, dtype=tl.float64, requires_grad=True)
    assert gradcheck(lambda a, b: _setitem_chain(tl, a, b), (x, v))
    check_against_torch(Case("setitem", _setitem_chain, (2, 3), (3,)), "contig")


def test_setitem_value_broadcast_with_leading_ones():
    torch = pytest.importorskip("torch")
    grads = []
    for L in (tl, torch):
        x = L.ones(2, 3, dtype=L.float64, requires_grad=True)
        v = L.tensor([[[1.0, 2.0, 3.0]]], dtype=L.float64, requires_grad=True)
        y = x * 2
        y[:, :] = v                          # (1, 1, 3) broadcast to (2, 3)
        (y * L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=L.float64)).sum().backward()
        grads.append((x.grad.numpy(), v.grad.numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])


def test_setitem_records_copyslices_and_index_put():
    x = tl.randn(2, 3, requires_grad=True)
    y = x * 1
    y[0] = 1.0
    assert type(y.grad_fn).__name__ == "CopySlices"
    y[[0, 1]] = 2.0
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"


def test_setitem_into_plain_tensor_makes_it_part_of_the_graph():
    v = tl.tensor([1.0, 2.0], requires_grad=True)
    buf = tl.zeros(3, 2)
    buf[1] = v
    assert buf.requires_grad and not buf.is_leaf
    (buf * tl.tensor([[1.0, 1.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert v.grad.tolist() == [3.0, 4.0]


def test_setitem_on_leaf_requiring_grad_is_refused():
    x = tl.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with tl.no_grad():
        x[0] = 1.0                          # allowed outside grad mode, as in PyTorch
    assert x.tolist() == [1.0, 0.0, 0.0] and x.grad_fn is None


def test_inplace_write_through_a_view_updates_the_base():
    """Writing through the tensor itself, and through a view of it: the view's history and the
    base's history both see the write (torch's answers)."""
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y[0] = 10.0                             # through y itself: tracked
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]

    x.grad = None
    y = x * 2
    row = y[1:]                             # a view of y
    row[0] = 10.0                           # y's memory changes ...
    assert y.tolist() == [2.0, 10.0, 6.0]
    row.sum().backward(retain_graph=True)   # ... the view's own history is right
    assert x.grad.tolist() == [0.0, 0.0, 2.0]

    x.grad = None
    y.sum().backward()                      # the base sees the write through its view
    assert x.grad.tolist() == [2.0, 0.0, 2.0]


INPLACE = [
    ("scatter_", lambda L, z, s: z.scatter_(1, _i(L, [[2], [0]]), s[:, :1])),
    ("scatter_add_", lambda L, z, s: z.scatter_add_(0, _i(L, [[1, 1, 0]]), s[:1])),
    ("scatter_reduce_", lambda L, z, s: z.scatter_reduce_(1, _i(L, [[0, 0], [1, 2]]), s[:, :2], "sum")),
    ("index_add_", lambda L, z, s: z.index_add_(0, _i(L, [1, 1]), s)),
    ("index_copy_", lambda L, z, s: z.index_copy_(1, _i(L, [2, 0]), s[:, :2])),
    ("index_fill_", lambda L, z, s: z.index_fill_(1, _i(L, [1]), s[0, 0])),
    ("index_put_", lambda L, z, s: z.index_put_((_i(L, [0, 0]),), s[0], accumulate=True)),
    ("masked_fill_", lambda L, z, s: z.masked_fill_(_i(L, MASK), s[1, 1])),
    ("masked_scatter_", lambda L, z, s: z.masked_scatter_(_i(L, MASK), s)),
    ("put_", lambda L, z, s: z.put_(_i(L, [5, 1]), s[1, :2])),
    ("copy_", lambda L, z, s: z.copy_(s[1])),
    ("fill_", lambda L, z, s: z.fill_(s[0, 2])),
]


@pytest.mark.parametrize("name,op", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_ops_on_graph_tensors(name, op):
    """In-place on a non-leaf (z = x * 1) and on a plain tensor written with a value that
    requires grad: gradcheck passes and both gradients match PyTorch's."""
    def fn(L, x, s):
        z = x * 1
        op(L, z, s)
        w = L.zeros(2, 3, dtype=L.float64)
        op(L, w, s * 3)
        return z * w + z

    xs = [tl.randn(2, 3, dtype=tl.float64, requires_grad=True) for _ in range(2)]
    assert gradcheck(lambda a, b: fn(tl, a, b), tuple(xs))
    check_against_torch(Case(name, fn, (2, 3), (2, 3)), "contig")


@pytest.mark.parametrize("name,op", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_ops_on_leaves_requiring_grad_are_refused(name, op):
    z = tl.zeros(2, 3, dtype=tl.float64, requires_grad=True)
    s = tl.ones(2, 3, dtype=tl.float64)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        op(tl, z, s)


def test_out_argument_refuses_grad():
    x = tl.randn(2, 3, requires_grad=True)
    for call in (lambda: tl.gather(x, 1, tl.tensor([[0], [1]]), out=tl.empty(2, 1)),
                 lambda: tl.index_select(x, 0, tl.tensor([0]), out=tl.empty(1, 3)),
                 lambda: tl.take(x, tl.tensor([0]), out=tl.empty(1)),
                 lambda: tl.sort(x, out=(tl.empty(2, 3), tl.empty(2, 3, dtype=tl.int64)))):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            call()


# ---- node names, non-differentiable outputs --------------------------------------------------------
NAMED = [
    ("select", lambda L, x: x[0]), ("slice", lambda L, x: x[1:]), ("unsqueeze", lambda L, x: x[None]),
    ("alias", lambda L, x: x[...]), ("index", lambda L, x: x[[0, 1]]),
    ("gather", lambda L, x: x.gather(1, _i(L, [[0], [1], [0]]))),
    ("scatter", lambda L, x: x.scatter(1, _i(L, [[0]]), x)),
    ("scatter_value", lambda L, x: x.scatter(1, _i(L, [[0]]), 1.0)),
    ("scatter_add", lambda L, x: x.scatter_add(1, _i(L, [[0]]), x)),
    ("scatter_reduce", lambda L, x: x.scatter_reduce(1, _i(L, [[0]]), x, "amax")),
    ("index_select", lambda L, x: x.index_select(0, _i(L, [0]))),
    ("index_add", lambda L, x: x.index_add(0, _i(L, [0]), x[:1])),
    ("index_copy", lambda L, x: x.index_copy(0, _i(L, [0]), x[:1])),
    ("index_fill", lambda L, x: x.index_fill(0, _i(L, [0]), 1.0)),
    ("index_put", lambda L, x: x.index_put((_i(L, [0]),), x[0, :1])),
    ("masked_fill", lambda L, x: x.masked_fill(x > 0, 0.0)),
    ("masked_select", lambda L, x: x.masked_select(x > 0)),
    ("masked_scatter", lambda L, x: x.masked_scatter(x > 0, x)),
    ("take", lambda L, x: x.take(_i(L, [0]))), ("put", lambda L, x: x.put(_i(L, [0]), x[0, :1])),
    ("sort", lambda L, x: x.sort()[0]), ("topk", lambda L, x: x.topk(2)[0]),
    ("kthvalue", lambda L, x: x.kthvalue(2)[0]), ("msort", lambda L, x: x.msort()),
]


@pytest.mark.parametrize("name,fn", NAMED, ids=[n for n, _ in NAMED])
def test_node_names_match_torch(name, fn):
    ours, torchs = grad_fn_names(fn)
    assert ours == torchs


def test_integer_outputs_never_require_grad():
    x = tl.randn(3, 4, requires_grad=True)
    assert not x.sort()[1].requires_grad and not x.argsort().requires_grad
    assert not x.topk(2)[1].requires_grad and not x.nonzero().requires_grad
    assert not (x > 0).requires_grad


def test_unique_is_not_differentiable():
    x = tl.tensor([1.0, 2.0, 1.0], requires_grad=True)
    u, counts = x.unique(return_counts=True)
    assert u.requires_grad and not counts.requires_grad
    with pytest.raises(RuntimeError, match="the derivative for 'unique' is not implemented"):
        u.sum().backward()


def test_scatter_with_reduce_is_not_differentiable():
    x = tl.randn(2, 3, requires_grad=True)
    y = x.scatter(1, tl.tensor([[0], [1]]), x, reduce="add")
    with pytest.raises(RuntimeError, match="derivative for 'scatter with reduce='add'' is not"):
        y.sum().backward()


def test_scatter_src_larger_than_index_gets_zero_gradient_outside():
    """PyTorch raises here (its gather gives the index's shape); the unused src elements
    simply get no gradient."""
    x = tl.zeros(2, 3, dtype=tl.float64, requires_grad=True)
    s = tl.ones(2, 3, dtype=tl.float64, requires_grad=True)
    x.scatter(1, tl.tensor([[2], [0]]), s).sum().backward()
    assert s.grad.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    assert x.grad.tolist() == [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]


def test_saved_index_modified_in_place_is_detected():
    x = tl.randn(2, 3, requires_grad=True)
    idx = tl.tensor([[0], [1]])
    y = x.gather(1, idx)
    idx[0, 0] = 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_advanced_index_gradient_accumulates_repeats():
    x = tl.zeros(4, requires_grad=True)
    x[tl.tensor([1, 1, 3, 1])].sum().backward()
    assert x.grad.tolist() == [0.0, 3.0, 0.0, 1.0]


# ---- property test: random indices -----------------------------------------------------------------
def _random_index(data, st, shape):
    """A random index for `shape`: per dim an int, a slice with a step or an int list
    (at most one list, so the result's layout is the same in both libraries), maybe a None."""
    items, used_list = [], False
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "list", "none"] if not used_list
                                         else ["int", "slice", "none"]))
        if kind == "int":
            items.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(st.integers(-n, n))
            items.append(slice(start, None, data.draw(st.integers(1, 3))))
        elif kind == "list":
            used_list = True
            items.append(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4)))
        else:
            items.extend([None, slice(None)])
    return tuple(items)


def test_hypothesis_getitem_and_setitem_match_torch(threads):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def run(data):
        shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
        idx = _random_index(data, st, shape)
        a = np.random.default_rng(0).standard_normal(shape)
        results = []
        for L in (tl, torch):
            x = L.tensor(a, dtype=L.float64, requires_grad=True)
            picked = x[idx]
            g = L.tensor(np.random.default_rng(1).standard_normal(tuple(picked.shape)),
                         dtype=L.float64)
            y = x * 2
            y[idx] = picked * 3                 # setitem of the same region
            ((picked * g).sum() + (y * y).sum()).backward()
            results.append(x.grad.numpy())
        np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    run()


def test_gradients_do_not_depend_on_thread_count(threads):
    """Advanced-index and scatter gradients on a tensor large enough to run in parallel."""
    x = tl.tensor(np.random.default_rng(0).standard_normal((300, 200)), requires_grad=True)
    idx = tl.tensor(np.random.default_rng(1).integers(0, 300, 5000))
    (x[idx] * 1.5).sum().backward()
    counts = np.bincount(idx.numpy(), minlength=300)
    np.testing.assert_allclose(x.grad.numpy(), np.repeat(counts[:, None] * 1.5, 200, 1), rtol=1e-6)
    x.grad = None
    col = tl.tensor(np.random.default_rng(2).integers(0, 200, (300, 50)))
    x.gather(1, col).sum().backward()
    expected = np.zeros((300, 200))
    np.add.at(expected, (np.arange(300)[:, None], col.numpy()), 1.0)
    np.testing.assert_allclose(x.grad.numpy(), expected)
