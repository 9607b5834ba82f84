"""Tensor methods and attributes PyTorch code reaches for beyond the op families: the layout
objects and the flags of layouts and devices torchlite does not have, fill_diagonal_, addr_,
true_divide_, ormqr, the Python-callable maps (apply_, map_, map2_), set_/is_set_to,
as_subclass, dim_order, lu/lu_solve as methods.  Oracles: NumPy, finite differences, and
PyTorch where it is installed."""
import pickle
import warnings

import numpy as np
import pytest

import torchlite as tl

from helpers import torch_or_skip


# ---- layout -------------------------------------------------------------------------------------
def test_layout_objects_and_tensor_flags():
    x = tl.ones(2, 3)
    assert x.layout is tl.strided and repr(tl.strided) == "torchlite.strided"
    assert pickle.loads(pickle.dumps(tl.sparse_coo)) is tl.sparse_coo
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_meta",
                 "is_mkldnn", "is_mps", "is_xla", "is_xpu", "is_ipu", "is_vulkan", "is_maia",
                 "is_mtia"):
        assert getattr(x, flag) is False, flag
    assert x.dense_dim() == 2 and x.sparse_dim() == 0
    assert x.to_dense() is x and x.to_dense(tl.float64).dtype is tl.float64
    assert x.const_data_ptr() == x.data_ptr()
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False


def test_factories_take_strided_and_refuse_other_layouts():
    assert tl.zeros(2, layout=tl.strided).tolist() == [0.0, 0.0]
    assert tl.arange(3, layout=tl.strided).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="layout torchlite.sparse_coo is not supported"):
        tl.zeros(2, layout=tl.sparse_coo)
    with pytest.raises(RuntimeError, match="randn.*sparse_csr"):
        tl.randn(2, layout=tl.sparse_csr)
    with pytest.raises(TypeError, match="must be torchlite.layout"):
        tl.ones(2, layout="strided")
    with pytest.raises(ValueError, match="strided tensors only"):
        tl.signal.windows.hann(4, layout=tl.sparse_coo)


def test_dim_order():
    assert tl.ones(2, 3, 4).dim_order() == (0, 1, 2)
    assert tl.ones(2, 3, 4, 5).contiguous(memory_format=tl.channels_last).dim_order() == (0, 2, 3, 1)
    assert tl.ones(3, 4).t().dim_order() == (1, 0)


# ---- fill_diagonal_, addr_, true_divide_ ----------------------------------------------------------
@pytest.mark.parametrize("shape, wrap", [((4, 4), False), ((3, 5), False), ((7, 3), False),
                                         ((7, 3), True), ((8, 2), True), ((3, 3, 3), False)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    a = np.zeros(shape, dtype=np.float32)
    np.fill_diagonal(a, 5.0, wrap=wrap)
    x = tl.zeros(*shape)
    assert x.fill_diagonal_(5.0, wrap=wrap) is x
    np.testing.assert_array_equal(x.numpy(), a)


def test_fill_diagonal_errors_and_grad():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        tl.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        tl.zeros(2, 3, 3).fill_diagonal_(1)
    w = tl.ones(3, 3, requires_grad=True)
    y = w * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * (1 - np.eye(3)))


def test_addr_and_true_divide_in_place():
    m = tl.ones(2, 3)
    u, v = tl.tensor([1.0, 2.0]), tl.tensor([3.0, 4.0, 5.0])
    assert m.addr_(u, v, beta=2, alpha=0.5) is m
    np.testing.assert_allclose(m.numpy(), 2 + 0.5 * np.outer([1, 2], [3, 4, 5]))
    t = tl.tensor([3.0, 6.0])
    assert t.true_divide_(3) is t and t.tolist() == [1.0, 2.0]


# ---- ormqr --------------------------------------------------------------------------------------
def _q_from_geqrf(a, tau):
    """The full Q of LAPACK's reflectors, built here from their definition (NumPy)."""
    m = a.shape[0]
    Q = np.eye(m)
    for i in range(tau.shape[0]):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return Q


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_against_the_reflectors(shape, left, transpose):
    g = np.random.default_rng(3)
    A = tl.tensor(g.standard_normal(shape))
    a, tau = tl.geqrf(A)
    m = shape[0]
    C = tl.tensor(g.standard_normal((m, 2) if left else (2, m)))
    Q = _q_from_geqrf(a.numpy(), tau.numpy())
    Qe = Q.T if transpose else Q
    want = Qe @ C.numpy() if left else C.numpy() @ Qe
    np.testing.assert_allclose(tl.ormqr(a, tau, C, left=left, transpose=transpose).numpy(), want,
                               atol=1e-12)
    np.testing.assert_allclose(a.ormqr(tau, C, left, transpose).numpy(), want, atol=1e-12)


def test_ormqr_gradcheck_and_torch():
    g = np.random.default_rng(4)
    A = tl.tensor(g.standard_normal((4, 3)))
    a, tau = tl.geqrf(A)
    C = tl.tensor(g.standard_normal((4, 2)), requires_grad=True)
    a = a.detach().requires_grad_()
    tau = tau.detach().requires_grad_()
    assert tl.autograd.gradcheck(lambda a, t, c: tl.ormqr(a, t, c), (a, tau, C))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tl.ormqr(a.detach(), tau.detach(), tl.ones(3, 2, dtype=tl.float64))
    torch = torch_or_skip()
    ta, ttau = (torch.tensor(t.detach().numpy()) for t in (a, tau))
    np.testing.assert_allclose(tl.ormqr(a, tau, C).detach().numpy(),
                               torch.ormqr(ta, ttau, torch.tensor(C.detach().numpy())).numpy(),
                               atol=1e-12)


# ---- the Python-callable maps -------------------------------------------------------------------
def test_apply_map_map2():
    x = tl.arange(6.0).reshape(2, 3)
    assert x.apply_(lambda v: v * v + 1) is x
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3) ** 2 + 1)
    y = tl.ones(2, 3, dtype=tl.int64)
    y.map_(tl.tensor([1, 2, 3]), lambda a, b: a + 10 * b)      # the other broadcasts
    assert y.tolist() == [[11, 21, 31], [11, 21, 31]]
    z = tl.ones(2)
    z.map2_(tl.tensor([2.0, 3.0]), tl.tensor([4.0, 5.0]), lambda a, b, c: a + b * c)
    assert z.tolist() == [9.0, 16.0]
    t = x.t()                                                  # a non-contiguous self
    t.apply_(lambda v: -v)
    np.testing.assert_array_equal(x.numpy(), -(np.arange(6.0).reshape(2, 3) ** 2 + 1))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tl.ones(2, requires_grad=True).apply_(lambda v: v)


# ---- set_, is_set_to, as_subclass, lu methods --------------------------------------------------
def test_set_and_is_set_to():
    y = tl.arange(6.0)
    z = tl.empty(0)
    assert z.set_(y) is z and z.is_set_to(y)
    z[0] = 100.0                               # one memory: the write shows in y
    assert y[0].item() == 100.0
    z.set_(y, 1, (2,), (2,))
    assert z.tolist() == [1.0, 3.0] and not z.is_set_to(y)
    assert z.set_().shape == (0,)
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        tl.empty(0, dtype=tl.int64).set_(y)
    with pytest.raises(RuntimeError, match="requires grad"):
        tl.ones(2, requires_grad=True).set_(y)
    assert not tl.ones(3).is_set_to(tl.ones(3))


def test_as_subclass_shares_memory_and_history():
    class Marked(tl.Tensor):
        pass
    x = tl.ones(3, requires_grad=True)
    m = (x * 2).as_subclass(Marked)
    assert type(m) is Marked and m.grad_fn is not None
    p = (x * 3).as_subclass(tl.nn.Parameter)
    assert type(p) is tl.nn.Parameter
    (m.sum() + p.sum()).backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]
    base = tl.zeros(2)
    base.as_subclass(Marked)[0] = 7.0
    assert base[0].item() == 7.0
    with pytest.raises(TypeError, match="must be a subclass of Tensor"):
        base.as_subclass(int)


def test_lu_and_lu_solve_methods():
    g = np.random.default_rng(5)
    A = tl.tensor(g.standard_normal((3, 3)))
    b = tl.tensor(g.standard_normal((3, 2)))
    LU, piv = A.lu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = b.lu_solve(LU, piv)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(A.numpy(), b.numpy()), atol=1e-12)


def test_hardshrink_and_prelu_methods():
    x = tl.tensor([-1.0, -0.2, 0.3, 2.0])
    assert x.hardshrink(0.5).tolist() == [-1.0, 0.0, 0.0, 2.0]
    np.testing.assert_allclose(x.prelu(tl.tensor([0.1])).numpy(), [-0.1, -0.02, 0.3, 2.0],
                               rtol=1e-6)


# ---- as_strided_ ------------------------------------------------------------------------------
def test_as_strided_in_place_changes_the_geometry_not_the_storage():
    x = tl.arange(10.0)
    storage = x.untyped_storage().data_ptr()
    r = x.as_strided_((2, 3), (3, 1), 1)
    assert r is x and x.shape == (2, 3) and x.stride() == (3, 1) and x.storage_offset() == 1
    assert x.untyped_storage().data_ptr() == storage
    np.testing.assert_array_equal(x.numpy(), np.arange(1.0, 7.0).reshape(2, 3))
    assert tl.as_strided_(x, (3,), (2,), 0).tolist() == [0.0, 2.0, 4.0]


def test_as_strided_in_place_in_a_graph_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal(12)
    ta = torch.tensor(a, requires_grad=True)
    tb = ta * 2
    tb.as_strided_((3, 2), (2, 3), 1)
    (tb * tb).sum().backward()
    la = tl.tensor(a, requires_grad=True)
    lb = la * 2
    lb.as_strided_((3, 2), (2, 3), 1)
    assert type(lb.grad_fn).__name__ == "AsStridedBackward0"
    (lb * lb).sum().backward()
    np.testing.assert_allclose(lb.detach().numpy(), tb.detach().numpy())
    np.testing.assert_allclose(la.grad.numpy(), ta.grad.numpy())


def test_as_strided_in_place_refuses_a_leaf_that_requires_grad_and_bad_geometry():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tl.zeros(4, requires_grad=True).as_strided_((2,), (1,))
    x = tl.zeros(4)
    with pytest.raises(RuntimeError, match="out of bounds|require a storage"):
        x.as_strided_((2, 3), (3, 1), 2)
    assert x.shape == (4,)          # unchanged after the refusal


# ---- rrelu's generator ------------------------------------------------------------------------
def test_rrelu_takes_a_generator():
    x = -tl.ones(1000)
    a = tl.rrelu(x, 0.1, 0.3, True, tl.Generator().manual_seed(5))
    b = tl.rrelu(x, 0.1, 0.3, True, tl.Generator().manual_seed(5))
    c = tl.rrelu(x, 0.1, 0.3, True, tl.Generator().manual_seed(6))
    assert tl.equal(a, b) and not tl.equal(a, c)
    slopes = -a.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    y = -tl.ones(4)
    tl.rrelu_(y, 0.1, 0.3, True, tl.Generator().manual_seed(5))
    assert tl.equal(y, a[:4])
