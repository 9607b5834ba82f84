"""torchlite.nn.functional's embedding, embedding_bag and one_hot, and the Embedding Modules.

CASES lists the differentiable functions with their gradcheck cases (float64, gradgradcheck,
values and gradients compared with PyTorch's); the padding row and scale_grad_by_freq
deliberately differ from the true derivative, so they are compared with PyTorch only."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.nn.functional import sparse as _sparse
from helpers import Case, case_table_tests, assert_values


def _idx(L, values):
    return L.tensor(values)


_I = [[0, 2, 4], [2, 2, 1]]
CASES = [
    Case("embedding", lambda L, w: L.nn.functional.embedding(_idx(L, _I), w), (5, 3),
         layouts=("contig", "t", "step")),
    Case("embedding_bag", lambda L, w: L.nn.functional.embedding_bag(
        _idx(L, [0, 2, 4, 2, 1]), w, _idx(L, [0, 2, 2]), mode="sum"), (5, 3),
        layouts=("contig", "t", "step")),
    Case("embedding_bag_mean", lambda L, w: L.nn.functional.embedding_bag(_idx(L, _I), w), (5, 3)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_every_function_is_covered():
    names = {c.name.split("_mean")[0] for c in CASES} | {"one_hot"}     # one_hot: integer output
    assert sorted(names) == sorted(_sparse.__all__)


W = np.random.default_rng(0).standard_normal((6, 3))


@pytest.mark.parametrize("idx_dtype", [tl.int64, tl.int32])
def test_embedding_values_against_numpy(idx_dtype):
    idx = np.array([[5, 0], [3, 3], [1, 2]])
    out = F.embedding(tl.tensor(idx).to(idx_dtype), tl.tensor(W))
    assert_values(out, W[idx])
    assert F.embedding(tl.tensor(4), tl.tensor(W)).shape == (3,)
    assert F.embedding(tl.empty(0, 2, dtype=tl.int64), tl.tensor(W)).shape == (0, 2, 3)
    wt = tl.tensor(W.T.copy()).t()          # a transposed weight
    assert_values(F.embedding(tl.tensor(idx), wt), W[idx])


@pytest.mark.parametrize("kw", [{"padding_idx": 2}, {"padding_idx": -1},
                                {"scale_grad_by_freq": True},
                                {"padding_idx": 0, "scale_grad_by_freq": True},
                                {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}])
def test_embedding_options_match_torch(kw):
    torch = pytest.importorskip("torch")
    idx = [[0, 2, 5], [2, 2, 1]]
    go = np.random.default_rng(1).standard_normal((2, 3, 3))
    res = []
    for L in (tl, torch):
        w = L.tensor(W, requires_grad=True)
        y = L.nn.functional.embedding(L.tensor(idx), w, **kw)
        g, = L.autograd.grad((y * L.tensor(go)).sum(), w)
        res.append((y.detach().numpy(), g.numpy(), w.detach().numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_padding_row_gets_no_gradient_and_max_norm_renormalises_in_place():
    w = tl.tensor(W * 3, requires_grad=True)
    y = F.embedding(tl.tensor([1, 1, 4]), w, padding_idx=1)
    g, = tl.autograd.grad(y.sum(), w)
    assert g[1].tolist() == [0.0, 0.0, 0.0] and g[4].tolist() == [1.0, 1.0, 1.0]
    w2 = tl.tensor(W * 3)
    v = w2._version
    F.embedding(tl.tensor([0, 3]), w2, max_norm=1.0)
    assert w2._version > v
    norms = np.linalg.norm(w2.numpy(), axis=1)
    assert norms[0] <= 1.0 + 1e-6 and norms[3] <= 1.0 + 1e-6
    assert_values(w2[1], W[1] * 3)          # rows not looked up are left alone


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.embedding(tl.tensor([1.0, 2.0]), tl.randn(3, 2)), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
     "Int; but got torch.FloatTensor instead"),
    (lambda: F.embedding(tl.tensor([1, 5]), tl.randn(3, 2)), IndexError, "index out of range in self"),
    (lambda: F.embedding(tl.tensor([1, -1]), tl.randn(3, 2)), IndexError, "index out of range in self"),
    (lambda: F.embedding(tl.tensor([1, 2]), tl.randn(3)), RuntimeError, "'weight' must be 2-D"),
    (lambda: F.embedding(tl.tensor([1]), tl.randn(3, 2), padding_idx=3), AssertionError,
     "Padding_idx must be within num_embeddings"),
    (lambda: F.embedding(tl.tensor([1]), tl.randn(3, 2), padding_idx=-4), AssertionError,
     "Padding_idx must be within num_embeddings"),
    (lambda: F.embedding(tl.tensor([1]), tl.randn(3, 2), sparse=True), RuntimeError,
     "sparse gradients are not supported"),
    (lambda: F.one_hot(tl.tensor([1, 2], dtype=tl.int32)), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda: F.one_hot(tl.tensor([1, -2])), RuntimeError, "Class values must be non-negative."),
    (lambda: F.one_hot(tl.tensor([1, 5]), 3), RuntimeError, "Class values must be smaller than num_classes."),
    (lambda: F.one_hot(tl.tensor([], dtype=tl.int64)), RuntimeError,
     "Can not infer total number of classes from empty tensor."),
    (lambda: F.embedding_bag(tl.tensor([1, 2]), tl.randn(3, 2)), ValueError,
     "offsets has to be a 1D Tensor but got None"),
    (lambda: F.embedding_bag(tl.tensor([[1, 2]]), tl.randn(3, 2), tl.tensor([0])), ValueError,
     "if input is 2D, then offsets has to be None"),
    (lambda: F.embedding_bag(tl.tensor([1, 2]), tl.randn(3, 2), tl.tensor([1])), RuntimeError,
     "offsets\\[0\\] has to be 0"),
    (lambda: F.embedding_bag(tl.tensor([[1, 2]]), tl.randn(3, 2), mode="min"), ValueError,
     "mode has to be one of sum, mean or max"),
    (lambda: F.embedding_bag(tl.tensor([[1, 2]]), tl.randn(3, 2), per_sample_weights=tl.ones(1, 2)),
     NotImplementedError, "per_sample_weights is only supported for mode='sum'"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_one_hot_values():
    t = np.array([[1, 0], [3, 2]])
    out = F.one_hot(tl.tensor(t))
    assert out.dtype is tl.int64
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[t])
    np.testing.assert_array_equal(F.one_hot(tl.tensor(t), 6).numpy(), np.eye(6, dtype=np.int64)[t])
    assert F.one_hot(tl.tensor(2), 3).tolist() == [0, 0, 1]
    assert F.one_hot(tl.empty(0, dtype=tl.int64), 3).shape == (0, 3)
    assert F.one_hot(tl.tensor(t).t()).tolist() == np.eye(4, dtype=np.int64)[t.T].tolist()


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("kw", [dict(offsets=[0, 2, 2, 5]),
                                dict(offsets=[0, 2, 5], include_last_offset=True),
                                dict(offsets=[0, 1, 3], padding_idx=2)])
def test_embedding_bag_matches_torch(mode, kw):
    torch = pytest.importorskip("torch")
    res = []
    for L in (tl, torch):
        w = L.tensor(W, requires_grad=True)
        opts = dict(kw, offsets=L.tensor(kw["offsets"]))
        y = L.nn.functional.embedding_bag(L.tensor([0, 2, 5, 2, 1]), w, mode=mode, **opts)
        g, = L.autograd.grad((y * L.tensor(np.arange(y.numel()).reshape(y.shape) * 1.0)).sum(), w)
        res.append((y.detach().numpy(), g.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_embedding_bag_per_sample_weights():
    torch = pytest.importorskip("torch")
    res = []
    for L in (tl, torch):
        w = L.tensor(W, requires_grad=True)
        psw = L.tensor([0.5, 2.0, 1.0, -1.0], dtype=L.float64, requires_grad=True)
        y = L.nn.functional.embedding_bag(L.tensor([0, 2, 5, 2]), w, L.tensor([0, 3]), mode="sum",
                                          per_sample_weights=psw)
        res.append([y.detach().numpy()] + [g.numpy() for g in L.autograd.grad(y.sum(), (w, psw))])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _np_bags(idx, offsets, n_bags, pad=None):
    """NumPy oracle of ATen's embedding_bag index outputs: offset2bag, bag_size and, per
    feature, the weight row of each bag's first maximum."""
    bag_of = np.searchsorted(offsets, np.arange(len(idx)), side="right") - 1
    size = np.zeros(n_bags, dtype=np.int64)
    best = np.zeros((n_bags, W.shape[1]), dtype=np.int64)
    for b in range(n_bags):
        members = [i for i in idx[bag_of == b] if i != pad]
        size[b] = len(members)
        if members:
            best[b] = np.array(members)[W[members].argmax(0)]
    return bag_of, size, best


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("offsets, ilo, pad", [([0, 2, 2, 5], False, None), ([0, 2, 5], True, None),
                                               ([0, 1, 3], False, 2), ([0, 3], False, -1)])
def test_aten_embedding_bag_returns_its_index_tensors(mode, offsets, ilo, pad):
    """torch.embedding_bag (weight first, integer mode) returns (output, offset2bag, bag_size,
    max_indices); checked against NumPy, and against PyTorch for the modes whose index tensors
    PyTorch's CPU kernel fills (mean and max)."""
    idx = np.array([0, 2, 5, 2, 1])
    n_bags = len(offsets) - 1 if ilo else len(offsets)
    out, offset2bag, bag_size, max_indices = tl.embedding_bag(
        tl.tensor(W), tl.tensor(idx), tl.tensor(offsets), False, mode, False, None, ilo, pad)
    f_out = F.embedding_bag(tl.tensor(idx), tl.tensor(W), tl.tensor(offsets), mode=["sum", "mean", "max"][mode],
                            include_last_offset=ilo, padding_idx=pad)
    assert_values(out, f_out.numpy())
    bag_of, size, best = _np_bags(idx, np.array(offsets), n_bags, None if pad is None else pad % 6)
    assert offset2bag.tolist() == bag_of.tolist()
    assert bag_size.tolist() == size.tolist()
    assert max_indices.tolist() == (best if mode == 2 else size).tolist()
    torch = pytest.importorskip("torch")
    ref = torch.embedding_bag(torch.tensor(W), torch.tensor(idx), torch.tensor(offsets), False, mode,
                              False, None, ilo, pad)
    np.testing.assert_allclose(out.numpy(), ref[0].numpy(), rtol=1e-12)
    if mode != 0:           # (mode 0: PyTorch's CPU fast path leaves these empty or zero)
        for a, b in zip((offset2bag, bag_size, max_indices), ref[1:]):
            assert a.tolist() == b.tolist()


def test_aten_embedding_bag_gradient_and_errors():
    w = tl.tensor(W, requires_grad=True)
    out = tl.embedding_bag(w, tl.tensor([1, 2, 3]), tl.tensor([0, 1]), False, 0)[0]
    out.sum().backward()
    expect = np.zeros_like(W)
    expect[[1, 2, 3]] = 1
    assert_values(w.grad, expect)
    with pytest.raises(TypeError, match="offsets"):
        tl.embedding_bag(w, tl.tensor([1]), None)
    with pytest.raises(RuntimeError, match="mode"):
        tl.embedding_bag(w, tl.tensor([1]), tl.tensor([0]), False, 3)
    with pytest.raises(RuntimeError, match="per_sample_weights only supported with mode='sum'"):
        tl.embedding_bag(w, tl.tensor([1]), tl.tensor([0]), False, 1, False, tl.ones(1))


# ---- modules -------------------------------------------------------------------------------------
MODULES = ["Embedding(10, 3)",
           "Embedding(10, 3, padding_idx=-2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)",
           "EmbeddingBag(10, 3)", "EmbeddingBag(10, 3, mode='max', padding_idx=1)"]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_matches_torch(spec):
    torch = pytest.importorskip("torch")  # noqa: F841  (eval below reads it)
    assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))


def test_embedding_module_init_and_padding_row():
    tl.manual_seed(0)
    m = nn.Embedding(2000, 8, padding_idx=3)
    w = m.weight.detach().numpy()
    assert (w[3] == 0).all()
    others = np.delete(w, 3, axis=0)
    assert abs(others.mean()) < 0.02 and abs(others.std() - 1) < 0.02      # N(0, 1)
    out = m(tl.tensor([[3, 1]]))
    out.sum().backward()
    assert (m.weight.grad[3] == 0).all() and (m.weight.grad[1] == 1).all()


def test_from_pretrained():
    table = tl.tensor(W)
    m = nn.Embedding.from_pretrained(table)
    assert not m.weight.requires_grad and m.weight.data_ptr() == table.data_ptr()
    assert_values(m(tl.tensor([4])).detach(), W[[4]])
    m2 = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=0)
    assert m2.weight.requires_grad and m2.padding_idx == 0
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tl.ones(3))
    bag = nn.EmbeddingBag.from_pretrained(table, mode="sum")
    assert_values(bag(tl.tensor([[0, 1]])).detach(), W[[0]] + W[[1]])
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(3, 3, _weight=table)


def test_max_bag_gradient_goes_to_the_first_maximal_row():
    """Rows tied for a bag's maximum: the gradient goes to the first of them only (the row
    max_indices names), as PyTorch's backward does, in both forms."""
    w_np = np.arange(30.0).reshape(10, 3)
    w_np[4] = w_np[7]
    w = tl.tensor(w_np, requires_grad=True)
    out = tl.embedding_bag(w, tl.tensor([4, 7]), tl.tensor([0]), False, 2)
    out[0].sum().backward()
    assert out[3].tolist() == [[4, 4, 4]]
    expect = np.zeros_like(w_np)
    expect[4] = 1
    assert_values(w.grad, expect)
    w2 = tl.tensor(w_np, requires_grad=True)
    F.embedding_bag(tl.tensor([7, 4, 1]), w2, tl.tensor([0, 2]), mode="max").sum().backward()
    expect = np.zeros_like(w_np)
    expect[7] = expect[1] = 1
    assert_values(w2.grad, expect)


def test_bag_offsets_are_checked_and_may_be_empty():
    w = tl.tensor(W)
    with pytest.raises(RuntimeError, match="must not decrease"):
        F.embedding_bag(tl.tensor([1, 2, 3]), w, tl.tensor([0, 3, 2]))
    with pytest.raises(RuntimeError, match=r"offsets\[-1\] can not be greater than input's length 3"):
        F.embedding_bag(tl.tensor([1, 2, 3]), w, tl.tensor([0, 5]))
    none = tl.tensor([], dtype=tl.int64)
    assert F.embedding_bag(tl.tensor([1, 2, 3]), w, none).shape == (0, 3)
    out, offset2bag, bag_size, _ = tl.embedding_bag(w, tl.tensor([1, 2, 3]), none, False, 1)
    assert out.shape == (0, 3) and offset2bag.tolist() == [-1, -1, -1] and bag_size.tolist() == []
