"""PyTorch's out= rules, which every op family takes from the op-author kit
(torchlite/_ops/_kit.py): out is resized to the result's shape, its dtype must match (or, for
the ops that cast into out, accept) the result's, out= is refused while an input requires
grad, the factories make their values in out's dtype, and the returned object is out itself
(or a tuple of the given outs).  Values are checked against NumPy."""
import math

import numpy as np
import pytest

import torchlite as tl

from helpers import torch_or_skip


# ---- factories: out's dtype decides the values, a disagreeing dtype= raises --------------------
@pytest.mark.parametrize("make, expect", [
    (lambda out: tl.arange(5, out=out), lambda dt: np.arange(5).astype(dt)),
    (lambda out: tl.arange(1.0, 6.0, 2.0, out=out), lambda dt: np.arange(1, 6, 2).astype(dt)),
    (lambda out: tl.linspace(0, 10, 5, out=out), lambda dt: np.linspace(0, 10, 5).astype(dt)),
    (lambda out: tl.logspace(0, 2, 3, out=out), lambda dt: np.logspace(0, 2, 3).astype(dt)),
    (lambda out: tl.eye(3, 2, out=out), lambda dt: np.eye(3, 2, dtype=dt)),
    (lambda out: tl.full((2, 3), 7, out=out), lambda dt: np.full((2, 3), 7, dtype=dt)),
    (lambda out: tl.zeros(4, out=out), lambda dt: np.zeros(4, dtype=dt)),
    (lambda out: tl.ones(2, 2, out=out), lambda dt: np.ones((2, 2), dtype=dt)),
])
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.int64, tl.int32])
def test_factory_out_takes_its_dtype_from_out(make, expect, dtype):
    out = tl.empty(7, dtype=dtype)
    r = make(out)
    assert r is out and out.dtype is dtype
    want = expect(np.dtype(str(dtype).split(".")[-1]))
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.numpy(), want)


def test_range_and_empty_out():
    out = tl.empty(0, dtype=tl.float64)
    with pytest.warns(UserWarning, match="deprecated"):
        assert tl.range(1, 3, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 3.0])
    assert tl.empty(2, 5, out=out) is out and out.shape == (2, 5) and out.dtype is tl.float64


@pytest.mark.parametrize("make", [
    lambda out: tl.arange(3, dtype=tl.float64, out=out),
    lambda out: tl.linspace(0, 1, 3, dtype=tl.float64, out=out),
    lambda out: tl.eye(2, dtype=tl.float64, out=out),
    lambda out: tl.full((2,), 1.0, dtype=tl.float64, out=out),
    lambda out: tl.zeros(2, dtype=tl.float64, out=out),
    lambda out: tl.randn(2, dtype=tl.float64, out=out),
    lambda out: tl.randint(0, 3, (2,), dtype=tl.float64, out=out),
])
def test_factory_dtype_disagreeing_with_out_raises(make):
    with pytest.raises(RuntimeError, match=r"dtype Double does not match dtype of out parameter \(Float\)"):
        make(tl.empty(0))


def test_factory_out_matches_torch():
    torch = torch_or_skip()
    for name, args in (("arange", (5,)), ("linspace", (0, 10, 5)), ("logspace", (0, 2, 3)),
                       ("eye", (3,)), ("full", ((2,), 7))):
        for tdt, ldt in ((torch.float32, tl.float32), (torch.int64, tl.int64)):
            t_out, l_out = torch.empty(0, dtype=tdt), tl.empty(0, dtype=ldt)
            getattr(torch, name)(*args, out=t_out)
            getattr(tl, name)(*args, out=l_out)
            np.testing.assert_array_equal(l_out.numpy(), t_out.numpy(), err_msg=name)


# ---- results written into out: resized, dtype rules, grad refused -------------------------------
def _x():
    return tl.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)


@pytest.mark.parametrize("call, oracle", [
    (lambda x, out: tl.sum(x, 1, out=out), lambda a: a.sum(1)),
    (lambda x, out: tl.mm(x, x.T, out=out), lambda a: a @ a.T),
    (lambda x, out: tl.kron(x, x[:1], out=out), lambda a: np.kron(a, a[:1])),
    (lambda x, out: tl.addr(x, x[:, 0], x[0], out=out), lambda a: a + np.outer(a[:, 0], a[0])),
    (lambda x, out: tl.outer(x[0], x[1], out=out), lambda a: np.outer(a[0], a[1])),
    (lambda x, out: tl.cat([x, x], 0, out=out), lambda a: np.concatenate([a, a])),
    (lambda x, out: tl.triu(x, out=out), lambda a: np.triu(a)),
    (lambda x, out: tl.exp(x, out=out), np.exp),
    (lambda x, out: tl.clamp(x, 0.2, 0.9, out=out), lambda a: np.clip(a, 0.2, 0.9)),
    (lambda x, out: tl.linalg.cross(x[:, :3], x[:, 1:], out=out),
     lambda a: np.cross(a[:, :3], a[:, 1:])),
    (lambda x, out: tl.fft.rfft(x, out=out), lambda a: np.fft.rfft(a)),
    (lambda x, out: tl.gather(x, 1, tl.tensor([[0], [2], [1]]), out=out),
     lambda a: np.take_along_axis(a, np.array([[0], [2], [1]]), 1)),
])
def test_out_is_resized_written_and_returned(call, oracle):
    x = _x()
    want = oracle(x.numpy().astype(np.float64))
    out = tl.empty(1, dtype=tl.complex64 if np.iscomplexobj(want) else tl.float32)
    version = out._version
    assert call(x, out) is out
    assert out.shape == want.shape and out._version > version
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def _f32():
    return tl.empty(0)


def _c64():
    return tl.empty(0, dtype=tl.complex64)


def _pair():
    return (tl.empty(0), tl.empty(0, dtype=tl.int64))


@pytest.mark.parametrize("call, make_out", [
    (lambda x, out: tl.sum(x, 1, out=out), _f32),
    (lambda x, out: tl.mm(x, x.T, out=out), _f32),
    (lambda x, out: tl.kron(x, x, out=out), _f32),
    (lambda x, out: tl.addr(x, x[:, 0], x[0], out=out), _f32),
    (lambda x, out: tl.exp(x, out=out), _f32),
    (lambda x, out: tl.linalg.inv(x[:3, :3] + tl.eye(3), out=out), _f32),
    (lambda x, out: tl.linalg.tensorinv(x[:2, :2] + tl.eye(2), ind=1, out=out), _f32),
    (lambda x, out: tl.fft.fft(x, out=out), _c64),
    (lambda x, out: tl.sort(x, out=out), _pair),
])
def test_out_refused_while_an_input_requires_grad(call, make_out):
    x = _x().requires_grad_()
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(x, make_out())
    out = make_out()
    with tl.no_grad():          # nothing records without grad mode, so out= is allowed
        assert call(x, out) is out or tuple(call(x, out)) == tuple(out)


def test_exact_dtype_ops_refuse_another_out_dtype():
    x = _x()
    for call in (lambda out: tl.mm(x, x.T, out=out), lambda out: tl.triu(x, out=out),
                 lambda out: tl.diag(x, out=out), lambda out: tl.linalg.inv(x[:3, :3], out=out),
                 lambda out: tl.max(x, 1, out=(out, tl.empty(0, dtype=tl.int64)))):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
            call(tl.empty(0, dtype=tl.float64))


def test_casting_ops_cast_where_allowed():
    x = _x()
    out = tl.empty(0, dtype=tl.float64)
    tl.exp(x, out=out)                  # float32 -> float64: allowed
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy().astype(np.float64)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tl.clamp(x, 0, 1, out=tl.empty(0, dtype=tl.int64))
    with pytest.raises(TypeError, match="can't be cast to the desired output type Long"):
        tl.cat([x], out=tl.empty(0, dtype=tl.int64))
    out = tl.empty(0, dtype=tl.int64)   # sum computes in out's dtype, as PyTorch's does
    tl.sum(tl.tensor([1.0, 2.0]), 0, out=out)
    assert out.item() == 3


def test_tuple_outs():
    x = _x()
    v, i = tl.empty(0), tl.empty(0, dtype=tl.int64)
    r = tl.max(x, 1, out=(v, i))
    assert r.values is v and r.indices is i
    np.testing.assert_array_equal(i.numpy(), x.numpy().argmax(1))
    with pytest.raises(TypeError, match="must be tuple of 2 Tensors"):
        tl.sort(x, out=(v,))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not int"):
        tl.sort(x, out=(v, 3))
    P, L, U = tl.empty(0), tl.empty(0), tl.empty(0)
    LU, piv = tl.linalg.lu_factor(x[:3, :3] + tl.eye(3))
    res = tl.lu_unpack(LU, piv, out=(P, L, U))
    assert res.P is P and res.L is L and res.U is U
    np.testing.assert_allclose((P @ L @ U).numpy(), (x[:3, :3] + tl.eye(3)).numpy(), atol=1e-6)
    a, tau = tl.empty(0), tl.empty(0)
    assert tuple(tl.geqrf(x, out=(a, tau))) == (a, tau) and tau.shape == (3,)
    assert not math.isnan(a.sum().item())
