"""Gradients through views made while nothing was recording (torchlite/_tensor.py _wrap_view,
elementwise_grad.rebase_inplace).

Every view knows its base, recorded or not, so an in-place write through a view of a tensor
that requires no grad gives the base a CopySlices history, as in PyTorch.  CASES lists the
writes: each case's fn(L, *ws) (L is torchlite or torch) builds a base that requires no grad,
writes the inputs ws into it through views, and returns a result.  Each case is compared with
PyTorch (values and gradients) and passes gradcheck in float64.  A case may name a torch_fn
where PyTorch refuses the write (views made in no_grad mode, outputs of multi-output views):
torchlite computes the gradient of the same values, and torch_fn writes them the way PyTorch
accepts."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
from torchlite.autograd import gradcheck


class Case:
    def __init__(self, name, fn, *shapes, torch_fn=None):
        self.name, self.fn, self.shapes, self.torch_fn = name, fn, shapes, torch_fn

    def __repr__(self):
        return self.name


def _weights(L, n):
    """A fixed non-trivial constant of n elements (float64)."""
    return L.arange(1.0, n + 1, dtype=L.float64) / 3


def _add_slice(L, w):
    b = L.zeros(3, dtype=L.float64)
    b[1:].add_(w)
    return b * _weights(L, 3)


def _masked_fill(L, w, val):
    b = L.zeros(2, 3, dtype=L.float64)
    b[1].add_(w)
    b[1].masked_fill_(L.tensor([True, False, True]), val)
    return b * b


def _index_add(L, src):
    b = L.ones(3, 4, dtype=L.float64)
    b[:, 1:].index_add_(0, L.tensor([0, 2]), src)
    return b * b


def _scatter(L, src):
    b = L.ones(3, 4, dtype=L.float64)
    b.t().scatter_(1, L.tensor([[0, 1], [2, 0], [1, 2], [0, 2]]), src)
    return b * _weights(L, 12).reshape(3, 4)


def _no_grad_view(L, w, make_in_no_grad=True):
    b = L.zeros(3, dtype=L.float64)
    if make_in_no_grad:
        with L.no_grad():
            v = b[1:]
    else:
        v = b[1:]
    v.add_(w)
    return b.exp()


def _no_grad_view_of_graph(L, x, w, make_in_no_grad=True):
    b = x * 2
    if make_in_no_grad:
        with L.no_grad():
            v = b[1:]
    else:
        v = b[1:]
    v.mul_(w)
    return b * b


def _write_then_read_view(L, w):
    b = L.ones(4, dtype=L.float64)
    v = b[1:3]
    v.add_(w)
    return v * v + b.sum()


def _two_views(L, w1, w2):
    b = L.zeros(2, 3, dtype=L.float64)
    b[0].copy_(w1)
    b[1].add_(w2 * 2)
    return b.exp()


def _chained_inplace(L, w):
    b = L.ones(3, 3, dtype=L.float64)
    b.t()[2].copy_(w).mul_(w)
    return b * _weights(L, 9).reshape(3, 3)


def _unbind(L, w, multi=True):
    b = L.zeros(2, 3, dtype=L.float64)
    (b.unbind(0)[1] if multi else b.select(0, 1)).add_(w)
    return b.sin()


def _split(L, w, multi=True):
    b = L.ones(4, 3, dtype=L.float64)
    (b.split(2)[1] if multi else b.narrow(0, 2, 2)).mul_(w)
    return b * b


def _chunk(L, w, multi=True):
    b = L.ones(3, 4, dtype=L.float64)
    (b.chunk(2, 1)[0] if multi else b[:, :2]).sub_(w)
    return b * b


CASES = [
    Case("add_/slice", _add_slice, (2,)),
    Case("setitem/slice", lambda L, w: _setitem(L, w), (2,)),
    Case("copy_/narrow", lambda L, w: _copy_narrow(L, w), (2,)),
    Case("mul_/select", lambda L, w: _mul_select(L, w), (3,)),
    Case("masked_fill_/getitem", _masked_fill, (3,), ()),
    Case("index_add_/slice", _index_add, (2, 3)),
    Case("scatter_/t", _scatter, (4, 2)),
    Case("add_/view.t.getitem", lambda L, w: _view_of_view(L, w), (3,)),
    Case("add_/diagonal", lambda L, w: _diagonal(L, w), (3,)),
    Case("mul_/unsqueeze.getitem", lambda L, w: _unsqueeze(L, w), (2,)),
    Case("add_/step_none_getitem", lambda L, w: _strided_getitem(L, w), (2, 1)),
    Case("add_/squeeze", lambda L, w: _squeeze(L, w), (3,)),
    Case("add_/reshape.getitem", lambda L, w: _reshape(L, w), (3,)),
    Case("add_/as_strided", lambda L, w: _as_strided(L, w), (2,)),
    Case("add_/expand.getitem", lambda L, w: _expand(L, w), ()),
    Case("copy_.mul_/chained", _chained_inplace, (3,)),
    Case("two_views", _two_views, (3,), (3,)),
    Case("write_then_read_view", _write_then_read_view, (2,)),
    Case("no_grad_view", _no_grad_view, (2,),
         torch_fn=lambda L, w: _no_grad_view(L, w, False)),
    Case("no_grad_view_of_graph", _no_grad_view_of_graph, (3,), (2,),
         torch_fn=lambda L, x, w: _no_grad_view_of_graph(L, x, w, False)),
    Case("unbind", _unbind, (3,), torch_fn=lambda L, w: _unbind(L, w, False)),
    Case("split", _split, (2, 3), torch_fn=lambda L, w: _split(L, w, False)),
    Case("chunk", _chunk, (3, 2), torch_fn=lambda L, w: _chunk(L, w, False)),
]


def _setitem(L, w):
    b = L.zeros(3, dtype=L.float64)
    b[1:] = w
    return b * _weights(L, 3)


def _copy_narrow(L, w):
    b = L.zeros(3, dtype=L.float64)
    b.narrow(0, 1, 2).copy_(w)
    return b * _weights(L, 3) + b * b


def _mul_select(L, w):
    b = L.ones(2, 3, dtype=L.float64) * 1.5
    b.select(0, 0).mul_(w)
    return b * b


def _view_of_view(L, w):
    b = L.zeros(2, 3, dtype=L.float64)
    b.view(3, 2).t()[1].add_(w)
    return b.exp()


def _diagonal(L, w):
    b = L.eye(3, dtype=L.float64)
    b.diagonal().add_(w)
    return b @ _weights(L, 9).reshape(3, 3)


def _unsqueeze(L, w):
    b = L.ones(2, 3, dtype=L.float64)
    b.unsqueeze(0)[0, :, 1].mul_(w)
    return b * b


def _strided_getitem(L, w):
    b = L.zeros(4, 3, dtype=L.float64)
    b[::2, None, 1].add_(w)
    return b.exp()


def _squeeze(L, w):
    b = L.zeros(1, 3, dtype=L.float64)
    b.squeeze(0).add_(w)
    return b * b


def _reshape(L, w):
    b = L.zeros(2, 3, dtype=L.float64)
    b.reshape(3, 2)[:, 0].add_(w)
    return b.exp()


def _as_strided(L, w):
    b = L.zeros(4, dtype=L.float64)
    b.as_strided((2,), (2,), 1).add_(w)
    return b * _weights(L, 4)


def _expand(L, w):
    b = L.zeros(3, dtype=L.float64)
    b.unsqueeze(0).expand(1, 3)[0, 1].add_(w)
    return b.exp()


def _inputs(L, shapes, seed):
    rng = np.random.default_rng(seed)
    return [L.tensor(rng.uniform(-1, 1, s), dtype=L.float64, requires_grad=True) for s in shapes]


def _value_and_grads(L, fn, shapes):
    xs = _inputs(L, shapes, 0)
    out = fn(L, *xs)
    g = L.tensor(np.random.default_rng(1).uniform(-1, 1, tuple(out.shape)), dtype=L.float64)
    out.backward(g)
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    out, grads = _value_and_grads(tl, case.fn, case.shapes)
    ref_out, ref_grads = _value_and_grads(torch, case.torch_fn or case.fn, case.shapes)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    for g, rg in zip(grads, ref_grads):
        np.testing.assert_allclose(g, rg, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_gradcheck(case):
    assert gradcheck(lambda *xs: case.fn(tl, *xs), tuple(_inputs(tl, case.shapes, 2)))


# ---- what the base and the view become ---------------------------------------------------------
def test_base_becomes_non_leaf_with_copy_slices():
    b = tl.zeros(3)
    w = tl.ones(2, requires_grad=True)
    v = b[1:]
    assert not b.requires_grad and v.grad_fn is None and v._base is b
    v.add_(w)
    assert b.requires_grad and not b.is_leaf and b.grad_fn.name() == "CopySlices"
    assert v.requires_grad and v.grad_fn is not None and v._base is b
    b.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(b.detach().numpy(), [0.0, 1.0, 1.0])


def test_write_without_grad_operand_keeps_base_plain():
    b = tl.zeros(3)
    b[1:].add_(tl.ones(2))
    assert not b.requires_grad and b.grad_fn is None
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0, 1.0])


def test_write_in_no_grad_mode_records_nothing():
    b = tl.zeros(3)
    w = tl.ones(2, requires_grad=True)
    with tl.no_grad():
        b[1:].add_(w)
    assert not b.requires_grad and b.grad_fn is None
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0, 1.0])


def test_view_of_leaf_requiring_grad_still_refused():
    x = tl.ones(3, requires_grad=True)
    with tl.no_grad():
        v = x[1:]
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        v.mul_(tl.ones(2, requires_grad=True))


def test_leaf_view_requiring_grad_refused():
    b = tl.zeros(3)
    v = b[1:].requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        v.add_(1.0)


# ---- which results are views: the same as PyTorch ---------------------------------------------
VIEW_OPS = [
    ("getitem_int", lambda b: b[0]),
    ("getitem_slice", lambda b: b[1:, ::2]),
    ("getitem_ellipsis", lambda b: b[...]),
    ("getitem_none", lambda b: b[None, 0]),
    ("getitem_of_getitem", lambda b: b[1:][0]),
    ("getitem_advanced", lambda b: b[[0, 1]]),
    ("getitem_mask", lambda b: b[b > 0]),
    ("view", lambda b: b.view(-1)),
    ("view_same_dtype", lambda b: b.view(b.dtype)),
    ("view_other_dtype", lambda b: b.view(_int32_of(b))),
    ("reshape_view", lambda b: b.reshape(3, 2)),
    ("reshape_copy", lambda b: b.t().reshape(6)),
    ("t", lambda b: b.t()),
    ("T", lambda b: b.T),
    ("permute", lambda b: b.permute(1, 0)),
    ("transpose", lambda b: b.transpose(0, 1)),
    ("expand", lambda b: b[:1].expand(4, 3)),
    ("squeeze", lambda b: b[:1].squeeze(0)),
    ("unsqueeze", lambda b: b.unsqueeze(1)),
    ("flatten", lambda b: b.flatten()),
    ("narrow", lambda b: b.narrow(1, 1, 2)),
    ("select", lambda b: b.select(1, 2)),
    ("diagonal", lambda b: b.diagonal()),
    ("as_strided", lambda b: b.as_strided((2,), (1,), 1)),
    ("unfold", lambda b: b.unfold(1, 2, 1)),
    ("unbind", lambda b: b.unbind(1)[2]),
    ("split", lambda b: b.split(1)[1]),
    ("chunk", lambda b: b.chunk(3, 1)[1]),
    ("tensor_split", lambda b: b.tensor_split(2, 1)[1]),
    ("movedim", lambda b: b.movedim(0, 1)),
    ("clone", lambda b: b.clone()),
    ("contiguous_copy", lambda b: b.t().contiguous()),
    ("flip", lambda b: b.flip(0)),
    ("detach", lambda b: b.detach()),
]


def _int32_of(b):
    """int32 of the library that made b."""
    return tl.int32 if isinstance(b, tl.Tensor) else pytest.importorskip("torch").int32


@pytest.mark.parametrize("name,fn", VIEW_OPS, ids=[n for n, _ in VIEW_OPS])
@pytest.mark.parametrize("grad_mode", ["enabled", "no_grad"])
def test_base_and_is_view_match_torch(name, fn, grad_mode):
    torch = pytest.importorskip("torch")
    results = []
    for L in (tl, torch):
        b = L.arange(6.0).reshape(2, 3).clone()
        if grad_mode == "no_grad":
            with L.no_grad():
                v = fn(b)
        else:
            v = fn(b)
        results.append((v._base is b, v._base is None, v._is_view()))
    assert results[0] == results[1]


def test_detach_inplace_of_unrecorded_view_refused():
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        tl.zeros(2, 3)[0].detach_()


# ---- property: a write through any basic-indexing view of a plain base ---------------------------
@st.composite
def _base_and_index(draw):
    """A base shape, whether the view starts from its transpose (2-d only), and a basic index
    (ints and stepped slices) of that source."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    transposed = len(shape) == 2 and draw(st.booleans())
    idx = []
    for n in (shape[::-1] if transposed else shape):
        if draw(st.booleans()):
            idx.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.integers(0, n - 1))
            idx.append(slice(start, draw(st.integers(start + 1, n)), draw(st.integers(1, 3))))
    return shape, tuple(idx), transposed


@settings(max_examples=40, deadline=None)
@given(_base_and_index())
def test_write_through_any_view_property(case):
    """(b or b.t())[idx] += w on a plain base: b's values follow NumPy, and w's gradient is
    the upstream gradient at the view's elements."""
    shape, idx, transposed = case
    rng = np.random.default_rng(len(shape))
    b = tl.tensor(rng.uniform(-1, 1, shape), dtype=tl.float64)
    view = (b.t() if transposed else b)[idx]
    w = tl.tensor(rng.uniform(-1, 1, tuple(view.shape)), dtype=tl.float64, requires_grad=True)
    expect = b.numpy().copy()
    (expect.T if transposed else expect)[idx] += w.detach().numpy()
    view.add_(w)
    g = rng.uniform(-1, 1, shape)
    b.backward(tl.tensor(g))
    np.testing.assert_array_equal(b.detach().numpy(), expect)
    np.testing.assert_array_equal(w.grad.numpy(), (g.T if transposed else g)[idx])


def test_view_taken_under_no_grad_then_written_with_grad_on():
    """The write still changes a tensor of the graph: the gradient accounts for it (PyTorch
    refuses this case; torchlite gives the mathematically right gradient, never a silent
    wrong one).  A view of a leaf that requires grad is refused."""
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    with tl.no_grad():
        v = y[:2]
    v.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0, 2.0]
    with tl.no_grad():
        w = x[:2]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.mul_(3)


# ---- retain_grad and hooks across an in-place write (compared with PyTorch) -----------------------
# PyTorch: retain_grad follows the tensor to its latest version (the base's CopySlices history
# after a write through a view; a view's regenerated history after a write into its base); a
# hook stays on the history it was registered on, which a write through the view bypasses.
def _retain_base_write_view(L):
    x = L.tensor([[1., 2.], [3., 4.]], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y[0].mul_(3)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retain_view_write_base(L):
    x = L.tensor([[1., 2.], [3., 4.]], dtype=L.float64, requires_grad=True)
    y = x * 2
    v = y[0]
    v.retain_grad()
    y.mul_(3)
    (v * v).sum().backward()
    return v.grad, x.grad


def _hook_view_write_view(L):
    x = L.tensor([[1., 2.], [3., 4.]], dtype=L.float64, requires_grad=True)
    y = x * 2
    v = y[0]
    v.register_hook(lambda g: g * 100)
    v.mul_(3)
    y.sum().backward()
    return (x.grad,)


def _retain_both_two_writes(L):
    x = L.tensor([[1., 2.], [3., 4.]], dtype=L.float64, requires_grad=True)
    y = x * 2
    v = y[1]
    v.retain_grad()
    y.retain_grad()
    v.add_(1)
    y[0].mul_(2)
    (y * y * v.unsqueeze(0)).sum().backward()
    return v.grad, y.grad, x.grad


def _hook_base_write_view(L):
    x = L.tensor([[1., 2.], [3., 4.]], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y[0].mul_(3)
    y.sum().backward()
    return (x.grad,)


@pytest.mark.parametrize("fn", [_retain_base_write_view, _retain_view_write_base,
                                _hook_view_write_view, _retain_both_two_writes,
                                _hook_base_write_view], ids=lambda f: f.__name__.strip("_"))
def test_retain_grad_and_hooks_across_inplace_match_torch(fn):
    torch = pytest.importorskip("torch")
    ours, theirs = fn(tl), fn(torch)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a is not None and b is not None
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_view_taken_before_base_joined_graph_gets_gradient():
    # PyTorch: a view follows its base; writing a value requiring grad into the base (through
    # another view, or directly) makes views taken earlier carry that value's gradient
    b = tl.zeros(3)
    v = b[:2]
    w = tl.tensor([1.0, 2.0], requires_grad=True)
    b[1:].add_(w)
    assert v.requires_grad and v.grad_fn is not None
    (v * tl.tensor([10.0, 100.0])).sum().backward()
    assert w.grad.tolist() == [100.0, 0.0]

    b = tl.zeros(3)
    parts = b.unbind(0)
    w = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b.add_(w)
    (parts[0] * 5 + parts[2] * 7).backward()
    assert w.grad.tolist() == [5.0, 0.0, 7.0]


def test_view_registry_of_untracked_base_stays_small():
    b = tl.zeros(100)
    for i in range(10000):
        b[i % 90:]
    assert len(b._views) < 200


def test_inplace_write_partially_overlapping_its_operand_raises():
    y = tl.randn(3, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        y[1:].add_(y[:2])
    y[1:].add_(y[:2].clone())                       # the documented fix
    y.sum().backward()
    z = tl.randn(4, requires_grad=True).clone()
    for write in (lambda: z[1:].copy_(z[:3]), lambda: z[1:].mul_(z[:3]),
                  lambda: z[1:].addcmul_(z[:3], z[:3]), lambda: z[1:].lerp_(z[:3], 0.5)):
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            write()


def test_inplace_view_ops_change_metadata_and_keep_the_history():
    x = tl.randn(2, 3, dtype=tl.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.unsqueeze_(0)
    y = x * 2
    ptr = y.data_ptr()
    assert y.t_() is y and y.shape == (3, 2) and y.stride() == (1, 3) and y.data_ptr() == ptr
    y.unsqueeze_(0).transpose_(0, 2).squeeze_(2)
    assert y.shape == (2, 3)
    (y * tl.arange(6.0, dtype=tl.float64).view(2, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(6.0).reshape(2, 3))
    z = tl.arange(6.0).view(2, 3)
    z.swapdims_(0, 1)
    assert z.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
