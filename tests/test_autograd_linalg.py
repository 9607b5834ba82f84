"""Autograd of the matrix products (torchlite/_ops/linalg_grad.py): finite differences
(gradcheck / gradgradcheck in float64) on contiguous and non-contiguous operands, PyTorch's
gradients as a second oracle, gradients summed over broadcast batch dims, the in-place forms,
grad_fn names and the errors autograd raises."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import gradcheck, gradgradcheck
from helpers import grad_leaves, torch_or_skip

_rng = np.random.default_rng(11)


def r(*shape):
    return _rng.standard_normal(shape)


# ---- the table: every differentiable op of linalg.py and its gradcheck case ------------------
# name: (fn(L, *inputs) -> output, input arrays, grad_fn name or None when PyTorch's differs)
CASES = {
    "mm": (lambda L, a, b: L.mm(a, b), [r(2, 3), r(3, 2)], "MmBackward0"),
    "matmul_2d_2d": (lambda L, a, b: a @ b, [r(2, 3), r(3, 4)], "MmBackward0"),
    "matmul_1d_1d": (lambda L, a, b: L.matmul(a, b), [r(3), r(3)], "DotBackward0"),
    "matmul_2d_1d": (lambda L, a, b: a @ b, [r(2, 3), r(3)], "MvBackward0"),
    "matmul_1d_2d": (lambda L, a, b: a @ b, [r(3), r(3, 2)], None),
    "matmul_3d_2d": (lambda L, a, b: a @ b, [r(2, 2, 3), r(3, 2)], None),
    "matmul_3d_1d": (lambda L, a, b: a @ b, [r(2, 2, 3), r(3)], None),
    "matmul_1d_3d": (lambda L, a, b: a @ b, [r(3), r(2, 3, 2)], None),
    "matmul_2d_3d": (lambda L, a, b: a @ b, [r(2, 3), r(2, 3, 2)], None),
    "matmul_3d_3d": (lambda L, a, b: a @ b, [r(2, 2, 3), r(2, 3, 2)], None),
    "matmul_broadcast": (lambda L, a, b: a @ b, [r(2, 1, 2, 3), r(3, 3, 2)], None),
    "matmul_broadcast_1": (lambda L, a, b: a @ b, [r(1, 2, 3), r(2, 1, 3, 2)], None),
    "bmm": (lambda L, a, b: L.bmm(a, b), [r(2, 2, 3), r(2, 3, 2)], "BmmBackward0"),
    "mv": (lambda L, a, b: L.mv(a, b), [r(2, 3), r(3)], "MvBackward0"),
    "dot": (lambda L, a, b: L.dot(a, b), [r(4), r(4)], "DotBackward0"),
    "vdot": (lambda L, a, b: L.vdot(a, b), [r(4), r(4)], "VdotBackward0"),
    "outer": (lambda L, a, b: L.outer(a, b), [r(3), r(2)], None),
    "trace": (lambda L, a: L.trace(a), [r(3, 4)], None),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0),
              [r(2, 2), r(2, 3), r(3, 2)], "AddmmBackward0"),
    "addmm_broadcast": (lambda L, c, a, b: L.addmm(c, a, b), [r(2), r(2, 3), r(3, 2)],
                        "AddmmBackward0"),
    "addmv": (lambda L, c, a, b: L.addmv(c, a, b, beta=2.0, alpha=-1.5), [r(2), r(2, 3), r(3)],
              "AddmvBackward0"),
    "addmv_0d": (lambda L, c, a, b: L.addmv(c, a, b), [r(), r(2, 3), r(3)], "AddmvBackward0"),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b, beta=0.5, alpha=2.0),
                [r(2, 1), r(2, 2, 3), r(2, 3, 2)], "BaddbmmBackward0"),
    "addbmm": (lambda L, c, a, b: L.addbmm(c, a, b, beta=1.5, alpha=0.5),
               [r(2, 2), r(3, 2, 3), r(3, 3, 2)], "AddbmmBackward0"),
    "inner": (lambda L, a, b: L.inner(a, b), [r(2, 3), r(2, 2, 3)], None),
    "inner_0d": (lambda L, a, b: L.inner(a, b), [r(), r(2, 3)], None),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b, 2), [r(2, 3, 2), r(3, 2, 2)], None),
    "tensordot_lists": (lambda L, a, b: L.tensordot(a, b, ([2, 0], [0, 2])),
                        [r(2, 3, 2), r(2, 2, 2)], None),
    "tensordot_outer": (lambda L, a, b: L.tensordot(a, b, 0), [r(2, 3), r(2)], None),
    "einsum_matmul": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [r(2, 3), r(3, 2)], None),
    "einsum_batch": (lambda L, a, b: L.einsum("bij,bjk->bik", a, b), [r(2, 2, 3), r(2, 3, 2)],
                     None),
    "einsum_trace": (lambda L, a: L.einsum("ii", a), [r(3, 3)], None),
    "einsum_diag": (lambda L, a: L.einsum("ii->i", a), [r(3, 3)], None),
    "einsum_diag_contract": (lambda L, a, b: L.einsum("iij,j->i", a, b), [r(2, 2, 3), r(3)],
                             None),
    "einsum_private_sum": (lambda L, a, b: L.einsum("ij,k->kj", a, b), [r(2, 3), r(2)], None),
    "einsum_ellipsis": (lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b),
                        [r(2, 1, 2, 3), r(2, 3, 2)], None),
    "einsum_size1_broadcast": (lambda L, a, b: L.einsum("ij,ij->i", a, b), [r(3, 1), r(3, 2)],
                               None),
    "einsum_three": (lambda L, a, b, c: L.einsum("bij,bjk,kl->bil", a, b, c),
                     [r(2, 2, 3), r(2, 3, 2), r(2, 2)], None),
    "einsum_sublist": (lambda L, a, b: L.einsum(a, [0, 1], b, [1, 2], [2, 0]),
                       [r(2, 3), r(3, 2)], None),
    "einsum_implicit": (lambda L, a, b: L.einsum("ij,jk", a, b), [r(2, 3), r(3, 2)], None),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), [r(2, 3), r(3)], None),
    "vecdot_dim0": (lambda L, a, b: L.linalg.vecdot(a, b, dim=0), [r(3, 1), r(3, 2)], None),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [r(3), r(3, 2), r(2, 2)],
                  None),
    "multi_dot_2d": (lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
                     [r(2, 3), r(3, 4), r(4, 2), r(2)], None),
    "chain_matmul": (lambda L, a, b, c: L.chain_matmul(a, b, c), [r(2, 3), r(3, 2), r(2, 2)],
                     None),
    "kron": (lambda L, a, b: L.kron(a, b), [r(2, 3), r(3)], None),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), [r(2, 3), r(2, 3)], None),
    "linalg_cross": (lambda L, a, b: L.linalg.cross(a, b, dim=0), [r(3, 2), r(3, 1)], None),
    "cdist": (lambda L, a, b: L.cdist(a, b), [r(3, 2), r(4, 2)], None),
    "cdist_mm": (lambda L, a, b: L.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
                 [r(3, 2), r(2, 2)], None),
    "cdist_p1": (lambda L, a, b: L.cdist(a, b, p=1.0), [r(2, 3, 2), r(3, 2)], None),
    "cdist_p3": (lambda L, a, b: L.cdist(a, b, p=3.0), [r(3, 2), r(2, 2)], None),
    "dist": (lambda L, a, b: L.dist(a, b, 3), [r(2, 3), r(3)], None),
    # torch's own vander backward fails (an in-place write into a saved tensor), so the torch
    # side of the comparison builds the same matrix from powers
    "vander": (lambda L, a: L.vander(a, 4) if L is tl else
               L.stack([a ** 3, a ** 2, a, L.ones_like(a)], 1), [r(3)], None),
}

_NAMES = sorted(CASES)


@pytest.mark.parametrize("layout", [0, 1, 2], ids=["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("name", _NAMES)
def test_gradcheck(name, layout):
    fn, arrays, _ = CASES[name]
    assert gradcheck(lambda *a: fn(tl, *a), grad_leaves(arrays, layout))


@pytest.mark.parametrize("name", _NAMES)
def test_gradgradcheck(name):
    fn, arrays, _ = CASES[name]
    assert gradgradcheck(lambda *a: fn(tl, *a), grad_leaves(arrays, 1))


def _grads(L, fn, arrays, dtype_name, requires=None):
    dt = getattr(L, dtype_name)
    xs = [L.tensor(a, dtype=dt) for a in arrays]
    for i, x in enumerate(xs):
        if requires is None or requires[i]:
            x.requires_grad_()
    out = fn(L, *xs)
    g = L.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)), dtype=out.dtype)
    wanted = [x for x in xs if x.requires_grad]
    return [np.asarray(v.double()) for v in L.autograd.grad(out, wanted, g)]


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("name", _NAMES)
def test_matches_torch(name, dtype_name):
    torch = torch_or_skip()
    fn, arrays, _ = CASES[name]
    tol = 1e-12 if dtype_name == "float64" else 1e-5
    for ours, theirs in zip(_grads(tl, fn, arrays, dtype_name),
                            _grads(torch, fn, arrays, dtype_name)):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["matmul_broadcast", "addmm", "einsum_three", "tensordot_lists",
                                  "baddbmm"])
def test_only_some_operands_require_grad(name):
    torch = torch_or_skip()
    fn, arrays, _ = CASES[name]
    for k in range(len(arrays)):
        requires = [i == k for i in range(len(arrays))]
        (ours,) = _grads(tl, fn, arrays, "float64", requires)
        (theirs,) = _grads(torch, fn, arrays, "float64", requires)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in _NAMES if CASES[n][2]])
def test_grad_fn_names(name):
    fn, arrays, expected = CASES[name]
    out = fn(tl, *grad_leaves(arrays, 0))
    assert type(out.grad_fn).__name__ == expected


def test_broadcast_batch_gradients_are_summed():
    a = tl.tensor(r(1, 3, 2, 4), requires_grad=True)       # broadcast over dims 0 and (b's) 1
    b = tl.tensor(r(5, 1, 4, 3), requires_grad=True)
    (a @ b).sum().backward()
    an, bn = a.detach().numpy(), b.detach().numpy()
    g = np.ones((5, 3, 2, 3))
    np.testing.assert_allclose(a.grad.numpy(), (g @ np.swapaxes(bn, -1, -2)).sum(0, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), (np.swapaxes(an, -1, -2) @ g).sum(1, keepdims=True),
                               rtol=1e-5)
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


def test_expanded_operands():
    base = tl.tensor(r(3, 1), dtype=tl.float64).requires_grad_()
    w = tl.tensor(r(4, 2), dtype=tl.float64).requires_grad_()
    for f in (lambda x, w: x.expand(3, 4).mm(w), lambda x, w: x.expand(2, 3, 4) @ w,
              lambda x, w: tl.einsum("ij,jk->ik", x.expand(3, 4), w)):
        assert gradcheck(f, (base, w))
        assert gradgradcheck(f, (base, w))


def test_mixed_dtype_outer():
    a = tl.tensor(r(3), dtype=tl.float32, requires_grad=True)
    b = tl.tensor(r(2), dtype=tl.float64, requires_grad=True)
    o = tl.outer(a, b)
    assert o.dtype is tl.float64
    o.sum().backward()
    assert a.grad.dtype is tl.float32 and b.grad.dtype is tl.float64
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, b.detach().numpy().sum()), rtol=1e-6)
    i = tl.arange(3)                                    # an integer operand gets no gradient
    tl.outer(i, b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), a.detach().double().numpy().sum() + 3.0, rtol=1e-6)


def test_empty_and_size_one_products():
    a = tl.zeros(2, 0, dtype=tl.float64, requires_grad=True)
    b = tl.zeros(0, 3, dtype=tl.float64, requires_grad=True)
    (a @ b).sum().backward()
    assert tuple(a.grad.shape) == (2, 0) and tuple(b.grad.shape) == (0, 3)
    c = tl.zeros(0, 2, 3, dtype=tl.float64, requires_grad=True)
    d = tl.zeros(0, 3, 4, dtype=tl.float64, requires_grad=True)
    tl.bmm(c, d).sum().backward()
    assert tuple(c.grad.shape) == (0, 2, 3)
    # broadcast matmul with a zero-size contracted or output dim (the batched first operand
    # against a matrix: its gradient is one flattened product)
    for sa, sb in (((2, 3, 0), (0, 4)), ((2, 0, 3), (3, 4)), ((2, 3, 4), (4, 0))):
        e = tl.ones(*sa, dtype=tl.float64, requires_grad=True)
        f = tl.ones(*sb, dtype=tl.float64, requires_grad=True)
        tl.matmul(e, f).sum().backward()
        want_e = np.full(sa, float(sb[1]))          # d sum(e @ f) / de = row sums of f
        want_f = np.full(sb, float(sa[0] * sa[1]))  # = column sums of e over the batch
        np.testing.assert_array_equal(e.grad.numpy(), want_e)
        np.testing.assert_array_equal(f.grad.numpy(), want_f)
    x = tl.tensor(r(1, 1), dtype=tl.float64).requires_grad_()
    y = tl.tensor(r(1, 5), dtype=tl.float64).requires_grad_()
    assert gradcheck(lambda x, y: x @ y, (x, y))


def test_large_matmul_backward_against_numpy(threads):
    a = tl.tensor(r(3, 70, 90), dtype=tl.float32, requires_grad=True)
    b = tl.tensor(r(90, 50), dtype=tl.float32, requires_grad=True)
    g = r(3, 70, 50).astype(np.float32)
    (a @ b).backward(tl.tensor(g))
    an, bn = a.detach().numpy().astype(np.float64), b.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(a.grad.numpy(), g @ bn.T, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(b.grad.numpy(), np.einsum("bmk,bmn->kn", an, g), rtol=2e-4,
                               atol=2e-4)


# ---- in-place forms --------------------------------------------------------------------------
INPLACE = [
    ("addmm_", lambda s, a, b: s.addmm_(a, b, beta=0.5, alpha=2.0), lambda L, s, a, b:
     L.addmm(s, a, b, beta=0.5, alpha=2.0), [r(2, 2), r(2, 3), r(3, 2)]),
    ("addmv_", lambda s, a, b: s.addmv_(a, b, alpha=3.0), lambda L, s, a, b:
     L.addmv(s, a, b, alpha=3.0), [r(2), r(2, 3), r(3)]),
    ("baddbmm_", lambda s, a, b: s.baddbmm_(a, b, beta=2.0), lambda L, s, a, b:
     L.baddbmm(s, a, b, beta=2.0), [r(2, 2, 2), r(2, 2, 3), r(2, 3, 2)]),
    ("addbmm_", lambda s, a, b: s.addbmm_(a, b), lambda L, s, a, b: L.addbmm(s, a, b),
     [r(2, 2), r(2, 2, 3), r(2, 3, 2)]),
]


@pytest.mark.parametrize("name,inplace,ref,arrays", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_forms(name, inplace, ref, arrays):
    xs = [tl.tensor(a, dtype=tl.float64, requires_grad=True) for a in arrays]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        inplace(*xs)
    s = xs[0] * 1.0
    out = inplace(s, xs[1], xs[2])
    assert out is s and s.grad_fn is not None
    got = tl.autograd.grad(s.sum(), xs)
    want = tl.autograd.grad(ref(tl, *xs).sum(), xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    # an operand requiring grad puts a self that does not into the graph
    s = tl.tensor(arrays[0], dtype=tl.float64)
    inplace(s, xs[1], xs[2])
    assert s.requires_grad and s.grad_fn is not None


# ---- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda a, b: tl.mm(a, b, out=tl.empty(2, 2)),
    lambda a, b: tl.matmul(a, b, out=tl.empty(2, 2)),
    lambda a, b: tl.matmul(a.unsqueeze(0), b, out=tl.empty(1, 2, 2)),
    lambda a, b: tl.bmm(a.unsqueeze(0), b.unsqueeze(0), out=tl.empty(1, 2, 2)),
    lambda a, b: tl.mv(a, b[:, 0], out=tl.empty(2)),
    lambda a, b: tl.dot(a[0], b[:, 0], out=tl.empty(())),
    lambda a, b: tl.addmm(tl.zeros(2, 2), a, b, out=tl.empty(2, 2)),
    lambda a, b: tl.outer(a[0], b[0], out=tl.empty(3, 2)),
    lambda a, b: tl.tensordot(a, b, 1, out=tl.empty(2, 2)),
    lambda a, b: tl.linalg.vecdot(a, a, out=tl.empty(2)),
])
def test_out_with_grad_raises(call):
    a = tl.tensor(r(2, 3), dtype=tl.float32, requires_grad=True)
    b = tl.tensor(r(3, 2), dtype=tl.float32)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic "
                                           "differentiation"):
        call(a, b)
    with tl.no_grad():
        call(a, b)


def test_modified_operand_raises_only_when_needed():
    a = tl.tensor(r(2, 3), dtype=tl.float64, requires_grad=True)
    b = tl.tensor(r(3, 2), dtype=tl.float64)
    c = a.mm(b)
    a.detach().add_(1.0)          # a's value is not needed for a's own gradient
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones((2, 2)) @ b.numpy().T, rtol=1e-12)
    c = a.mm(b)
    b.add_(1.0)                   # b is needed for a's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_no_grad_records_nothing():
    a = tl.tensor(r(2, 3), requires_grad=True)
    b = tl.tensor(r(3, 2), requires_grad=True)
    with tl.no_grad():
        for out in (a @ b, tl.einsum("ij,jk", a, b), tl.tensordot(a, b, 1), tl.inner(a, a),
                    tl.linalg.multi_dot([a, b, a])):
            assert not out.requires_grad and out.grad_fn is None
