"""torchlite.autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp) against central
finite differences in float64, and against torch.autograd.functional where PyTorch is
installed: the same functions on the same values, the same result structures (tuples vs
single tensors), create_graph results that differentiate like PyTorch's, and the same strict
errors."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import functional as AF

A = np.array([0.3, -1.2, 2.0])
B = np.array([[0.5, -0.4, 1.1], [-0.7, 0.2, 0.9]])
V3 = np.array([0.2, -0.5, 1.5])
V2 = np.array([1.0, -2.0])
M = np.array([[0.3, 0.1], [-0.2, 0.4], [0.5, -0.6]])


# ---- the functions, written once for both libraries ------------------------------------------
def one_to_one(x):
    return x.sin() * x.exp()


def two_to_two(a, b):
    return (b @ a).exp(), (a * b).sum(0).sin() + a.tanh()


def two_to_scalar(a, b):
    return (b @ a).tanh().sum() + (a ** 3).sum() * b.sum()


def one_to_scalar(x):
    return (x.sin() * x).sum() + (x ** 2).prod()


def tensor_in(lib, x):
    return lib.tensor(x, dtype=lib.float64)


def tl_args(*arrays):
    return tuple(tensor_in(tl, a) for a in arrays)


def assert_same(ours, theirs, rtol=1e-10, atol=1e-12):
    """Same structure (tuple nesting) and values as PyTorch's result."""
    import torch
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tl.Tensor), f"expected a Tensor, got {type(ours).__name__}"
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
        return
    assert type(ours) is type(theirs) and isinstance(theirs, (tuple, list)), (type(ours), type(theirs))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, t, rtol, atol)


def numerical_jacobian(f, arrays, eps=1e-6):
    """Central differences: per output, per input, an (out.shape + in.shape) array."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]

    def run(xs):
        out = f(*[tl.tensor(x) for x in xs])
        return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    outs = run(arrays)
    jac = [[np.zeros(o.shape + a.shape) for a in arrays] for o in outs]
    for k, a in enumerate(arrays):
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            for j, (p, m) in enumerate(zip(run(plus), run(minus))):
                jac[j][k][(Ellipsis,) + idx] = (p - m) / (2 * eps)
    return jac


# ---- against finite differences (no PyTorch needed) ----------------------------------------------
def test_jacobian_both_strategies_match_finite_differences():
    numeric = numerical_jacobian(two_to_two, [A, B])
    for kwargs in ({}, {"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        jac = AF.jacobian(two_to_two, tl_args(A, B), **kwargs)
        assert len(jac) == 2 and all(len(row) == 2 for row in jac)
        for j in range(2):
            for k in range(2):
                np.testing.assert_allclose(jac[j][k].numpy(), numeric[j][k], rtol=1e-7, atol=1e-8)
    single = AF.jacobian(one_to_one, tensor_in(tl, A))
    assert isinstance(single, tl.Tensor) and single.shape == (3, 3)
    np.testing.assert_allclose(single.numpy(), numerical_jacobian(one_to_one, [A])[0][0], rtol=1e-7)


def test_jvp_is_exact_not_a_difference_quotient():
    # J v through the double-vjp trick equals the Jacobian times v to rounding
    a, b = tl_args(A, B)
    va, vb = tl_args(V3, 0.5 * B)
    out, jv = AF.jvp(two_to_two, (a, b), (va, vb))
    jac = AF.jacobian(two_to_two, (a, b))
    for j in range(2):
        expect = (np.tensordot(jac[j][0].numpy(), V3, axes=1) +
                  np.tensordot(jac[j][1].numpy(), 0.5 * B, axes=2))
        np.testing.assert_allclose(jv[j].numpy(), expect, rtol=1e-13, atol=1e-14)
        assert not jv[j].requires_grad and not out[j].requires_grad


def test_hessian_hvp_vhp_match_finite_differences():
    x = tensor_in(tl, A)
    grad_fn = lambda v: tl.autograd.grad(one_to_scalar(v), v, create_graph=True)[0]   # noqa: E731

    def gradient(v):
        with tl.enable_grad():
            return grad_fn(v.detach().requires_grad_()).detach()
    numeric = numerical_jacobian(gradient, [A])[0][0]
    for strategy in ("reverse-mode", "forward-mode"):
        h = AF.hessian(one_to_scalar, x, vectorize=True, outer_jacobian_strategy=strategy)
        np.testing.assert_allclose(h.numpy(), numeric, rtol=1e-6, atol=1e-7)
    v = tensor_in(tl, V3)
    _, hv = AF.hvp(one_to_scalar, x, v)
    _, vh = AF.vhp(one_to_scalar, x, v)
    np.testing.assert_allclose(hv.numpy(), numeric @ V3, rtol=1e-6)
    np.testing.assert_allclose(vh.numpy(), V3 @ numeric, rtol=1e-6)


def test_argument_errors():
    x = tensor_in(tl, A)
    with pytest.raises(TypeError, match="tuple of Tensors"):
        AF.vjp(one_to_one, [x], tl.ones(3))
    with pytest.raises(RuntimeError, match="v has invalid size"):
        AF.vjp(one_to_one, x, tl.ones(2, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.jvp(one_to_one, x)
    with pytest.raises(RuntimeError, match="single element"):
        AF.hvp(one_to_one, x, x)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(one_to_one, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(one_to_one, x, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="strict=True"):
        AF.jacobian(one_to_one, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(AssertionError):
        AF.jacobian(one_to_one, x, strategy="sideways")


def test_strict_names_the_independent_input_or_output():
    a, b = tl_args(A, B)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda u, w: u * 2, (a, b), tl.ones(3, dtype=tl.float64), strict=True)
    with pytest.raises(RuntimeError, match="Output 1 of the user-provided function is independent of input 0"):
        AF.jacobian(lambda u, w: (u * w.sum(), w * 3), (a, b), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require"):
        AF.jvp(lambda u: tl.ones(3, dtype=tl.float64), a, a, strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        AF.hessian(lambda u: (u * 2).sum(), a, strict=True)
    # without strict, the independent parts are zeros
    _, (ga, gb) = AF.vjp(lambda u, w: u * 2, (a, b), tl.ones(3, dtype=tl.float64))
    assert gb.shape == b.shape and not gb.numpy().any()


def test_linearization_is_reusable():
    a, b = tl_args(A, B)
    with tl.enable_grad():
        a_, b_ = a.detach().requires_grad_(), b.detach().requires_grad_()
        lin = AF.Linearization(two_to_two(a_, b_), (a_, b_))
    jac = lin.jacobian()
    for _ in range(2):                                  # the graph is kept between products
        (p0, p1) = lin.jvp((tensor_in(tl, V3), None))
        np.testing.assert_allclose(p0.numpy(), jac[0][0].numpy() @ V3, rtol=1e-13)
        np.testing.assert_allclose(p1.numpy(), jac[1][0].numpy() @ V3, rtol=1e-13)


# ---- against PyTorch ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def both(torch, *arrays):
    return tl_args(*arrays), tuple(tensor_in(torch, a) for a in arrays)


def test_vjp_jvp_against_torch(torch):
    (a, b), (ta, tb) = both(torch, A, B)
    (v2, v3), (tv2, tv3) = both(torch, V2, V3)
    TF = torch.autograd.functional
    assert_same(AF.vjp(two_to_two, (a, b), (v2, v3)), TF.vjp(two_to_two, (ta, tb), (tv2, tv3)))
    assert_same(AF.vjp(one_to_one, a, v3), TF.vjp(one_to_one, ta, tv3))
    assert_same(AF.vjp(one_to_scalar, a), TF.vjp(one_to_scalar, ta))
    (vb,), (tvb,) = both(torch, 0.5 * B)
    assert_same(AF.jvp(two_to_two, (a, b), (v3, vb)), TF.jvp(two_to_two, (ta, tb), (tv3, tvb)))
    assert_same(AF.jvp(one_to_one, a, v3), TF.jvp(one_to_one, ta, tv3))
    assert_same(AF.jvp(lambda u: (u * 3,), a, v3), TF.jvp(lambda u: (u * 3,), ta, tv3))


@pytest.mark.parametrize("kwargs", [{}, {"vectorize": True},
                                    {"vectorize": True, "strategy": "forward-mode"}])
def test_jacobian_against_torch(torch, kwargs):
    (a, b), (ta, tb) = both(torch, A, B)
    TF = torch.autograd.functional
    assert_same(AF.jacobian(two_to_two, (a, b), **kwargs), TF.jacobian(two_to_two, (ta, tb), **kwargs))
    assert_same(AF.jacobian(one_to_one, a, **kwargs), TF.jacobian(one_to_one, ta, **kwargs))
    assert_same(AF.jacobian(lambda u: (u.exp(),), a, **kwargs),
                TF.jacobian(lambda u: (u.exp(),), ta, **kwargs))
    assert_same(AF.jacobian(lambda u, w: w @ u, (a, b), **kwargs),
                TF.jacobian(lambda u, w: w @ u, (ta, tb), **kwargs))


@pytest.mark.parametrize("kwargs", [{}, {"vectorize": True},
                                    {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}])
def test_hessian_against_torch(torch, kwargs):
    (a, b), (ta, tb) = both(torch, A, B)
    TF = torch.autograd.functional
    assert_same(AF.hessian(two_to_scalar, (a, b), **kwargs), TF.hessian(two_to_scalar, (ta, tb), **kwargs))
    assert_same(AF.hessian(one_to_scalar, a, **kwargs), TF.hessian(one_to_scalar, ta, **kwargs))


def test_hvp_vhp_against_torch(torch):
    (a, b, va, vb), (ta, tb, tva, tvb) = both(torch, A, B, V3, 0.5 * B)
    TF = torch.autograd.functional
    for ours, theirs in ((AF.hvp, TF.hvp), (AF.vhp, TF.vhp)):
        assert_same(ours(two_to_scalar, (a, b), (va, vb)), theirs(two_to_scalar, (ta, tb), (tva, tvb)))
        assert_same(ours(one_to_scalar, a, va), theirs(one_to_scalar, ta, tva))


def test_create_graph_results_differentiate_like_torch(torch):
    (a, b, v3, v2), (ta, tb, tv3, tv2) = both(torch, A, B, V3, V2)
    TF = torch.autograd.functional
    cases = [
        (lambda F, u, w, p, q: F.vjp(two_to_two, (u, w), (q, p), create_graph=True)[1]),
        (lambda F, u, w, p, q: F.jvp(two_to_two, (u, w), (p, w * 0.5), create_graph=True)[1]),
        (lambda F, u, w, p, q: F.jacobian(two_to_two, (u, w), create_graph=True)[1]),
        (lambda F, u, w, p, q: F.jacobian(two_to_two, (u, w), create_graph=True, vectorize=True)[0]),
        (lambda F, u, w, p, q: F.hessian(two_to_scalar, (u, w), create_graph=True)[0]),
        (lambda F, u, w, p, q: F.hvp(two_to_scalar, (u, w), (p, w), create_graph=True)[1]),
        (lambda F, u, w, p, q: F.vhp(two_to_scalar, (u, w), (p, w), create_graph=True)[1]),
    ]
    for case in cases:
        grads = []
        for lib, F, args in ((tl, AF, (a, b, v3, v2)), (torch, TF, (ta, tb, tv3, tv2))):
            u, w = (x.detach().requires_grad_() for x in args[:2])
            res = case(F, u, w, *args[2:])
            flat = [r for row in (res if isinstance(res, tuple) else (res,))
                    for r in (row if isinstance(row, tuple) else (row,))]
            assert all(r.requires_grad for r in flat)
            total = sum((r * r).sum() for r in flat)
            grads.append(lib.autograd.grad(total, (u, w), allow_unused=True))
        assert_same(tuple(g if g is not None else tl.zeros(1) for g in grads[0]),
                    tuple(g if g is not None else torch.zeros(1) for g in grads[1]), rtol=1e-9)


def test_strict_errors_like_torch(torch):
    (a, b), (ta, tb) = both(torch, A, B)
    TF = torch.autograd.functional
    cases = [
        lambda F, lib, u, w: F.vjp(lambda x, y: x * 2, (u, w), lib.ones(3, dtype=lib.float64), strict=True),
        lambda F, lib, u, w: F.jvp(lambda x, y: x * 2, (u, w), (u, w), strict=True),
        lambda F, lib, u, w: F.jacobian(lambda x, y: (x * y.sum(), y * 3), (u, w), strict=True),
        lambda F, lib, u, w: F.jacobian(lambda x: lib.ones(2, dtype=lib.float64), u, strict=True),
        lambda F, lib, u, w: F.hessian(lambda x: (x * 2).sum(), u, strict=True),
        lambda F, lib, u, w: F.hvp(lambda x, y: (x ** 2).sum(), (u, w), (u, w), strict=True),
        lambda F, lib, u, w: F.vhp(lambda x: (x * 2).sum(), u, u, strict=True),
        lambda F, lib, u, w: F.jacobian(one_to_one, u, strict=True, vectorize=True),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as theirs:
            case(TF, torch, ta, tb)
        with pytest.raises(RuntimeError) as ours:
            case(AF, tl, a, b)
        assert str(ours.value) == str(theirs.value)


def test_vectorized_jacobian_takes_one_batched_backward(monkeypatch):
    """vectorize=True (reverse mode, no create_graph) goes through func.jacrev's batched rows,
    not the loop over the basis; the same values as vectorize=False for two inputs and two
    outputs."""
    def no_loop(*a):
        raise AssertionError("vectorize=True looped over the basis")
    monkeypatch.setattr(AF, "_jacobian_rows_batched", no_loop)
    w = tl.tensor(np.random.default_rng(0).standard_normal((4, 3)))

    def two_to_two(u, v):
        return (w @ u).tanh() * v.sum(), u.sin() * v[0]
    u, v = tl.tensor([0.3, -0.2, 0.9], dtype=tl.float64), tl.tensor([1.5, -0.5], dtype=tl.float64)
    fast = AF.jacobian(two_to_two, (u, v), vectorize=True)
    slow = AF.jacobian(two_to_two, (u, v))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(fast[i][j].numpy(), slow[i][j].numpy(), rtol=1e-12, atol=1e-14)
