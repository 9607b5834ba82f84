"""torchlite.linalg decompositions and solvers (torchlite/_core/linalg_decomp.pyx and
torchlite/_ops/linalg_decomp.py): values against NumPy's np.linalg (LAPACK, an independent
oracle) in float64 and float32, over batched, non-contiguous (transposed, stepped, expanded)
and ill-conditioned inputs, thread counts 1 and 2; structural properties (orthonormal Q/U/V,
triangular factors, reconstructions); PyTorch's result types, conventions and errors."""
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite import linalg as LA
from torchlite._ops import linalg_decomp as D

try:
    import torch
except ImportError:          # the PyTorch comparisons are skipped without it
    torch = None

_rng = np.random.default_rng(2024)
TOL = {"float64": 1e-10, "float32": 1e-5}
DTYPES = ("float64", "float32")


def rnd(*shape):
    return _rng.standard_normal(shape)


def wc(*shape):
    """Well-conditioned squares."""
    return rnd(*shape) + 2 * math.sqrt(shape[-1]) * np.eye(shape[-1])


def ill(n, cond=1e8):
    """A square with singular values spread from 1 to 1/cond (invertible, badly conditioned)."""
    q1, _ = np.linalg.qr(rnd(n, n))
    q2, _ = np.linalg.qr(rnd(n, n))
    return (q1 * np.logspace(0, -math.log10(cond), n)) @ q2


def layouts(a, dtype):
    """The same values as torchlite tensors in several memory layouts."""
    dt = getattr(tl, dtype)
    out = {"contiguous": tl.tensor(a, dtype=dt)}
    out["transposed"] = tl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dt).mT
    big = np.zeros(a.shape[:-2] + (2 * a.shape[-2], 3 * a.shape[-1]))
    big[..., ::2, ::3] = a
    out["stepped"] = tl.tensor(big, dtype=dt)[..., ::2, ::3]
    if a.ndim == 2:
        out["expanded"] = tl.tensor(a, dtype=dt).unsqueeze(0).expand(3, *a.shape)
    return out


def ref(x):
    """NumPy's view of a (possibly expanded) torchlite tensor, in float64."""
    return np.asarray(x.contiguous().numpy(), dtype=np.float64)


def close(got, want, dtype, scale=None):
    got = ref(got) if isinstance(got, tl.Tensor) else np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    s = scale if scale is not None else max(np.abs(want).max(initial=0.0), 1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[dtype] * s * 10)


def mT(a):
    return np.swapaxes(a, -1, -2)


@pytest.fixture(params=[0, 3, 4])
def isa(request):
    """Run with the decomposition module's vector loops and GEMM of each SIMD level."""
    from torchlite._core import linalg_decomp as K
    from torchlite._core.elementwise import cpu_isa_level
    if request.param > cpu_isa_level():
        pytest.skip(f"the CPU lacks SIMD level {request.param}")
    old = K.isa_level()
    K.set_isa_level(request.param)
    yield request.param
    K.set_isa_level(old)


# ---- solvers --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (3, 0, 0)])
def test_inv_solve_det(dtype, shape, threads):
    a = wc(*shape)
    for name, x in layouts(a, dtype).items():
        want_a = np.broadcast_to(a, tuple(x.shape))
        close(LA.inv(x), np.linalg.inv(want_a), dtype)
        close(LA.det(x), np.linalg.det(want_a), dtype, scale=np.abs(np.linalg.det(want_a)).max(initial=1))
        s, la = LA.slogdet(x)
        ws, wla = np.linalg.slogdet(want_a)
        close(s, ws, dtype)
        close(la, wla, dtype)
        b = rnd(*tuple(x.shape)[:-1], 2)
        close(LA.solve(x, tl.tensor(b, dtype=x.dtype)), np.linalg.solve(want_a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_vector_broadcast_and_left(dtype):
    a = wc(2, 4, 4)
    dt = getattr(tl, dtype)
    b = rnd(4)
    close(LA.solve(tl.tensor(a, dtype=dt), tl.tensor(b, dtype=dt)),
          np.linalg.solve(a, np.broadcast_to(b, (2, 4))[..., None])[..., 0], dtype)
    bb = rnd(2, 4)                       # batch of vectors (B.shape == A.shape[:-1])
    close(LA.solve(tl.tensor(a, dtype=dt), tl.tensor(bb, dtype=dt)),
          np.linalg.solve(a, bb[..., None])[..., 0], dtype)
    br = rnd(3, 1, 5, 4)                 # X A = B, batch broadcast
    close(LA.solve(tl.tensor(a, dtype=dt), tl.tensor(br, dtype=dt), left=False),
          mT(np.linalg.solve(mT(a), mT(br))), dtype)


def test_ill_conditioned_backward_error():
    for n in (8, 40):
        a = ill(n, 1e10)
        x = LA.inv(tl.tensor(a))
        res = np.abs(a @ x.numpy() - np.eye(n)).max()
        assert res < 1e-13 * np.linalg.norm(x.numpy(), 2) * n
        b = rnd(n, 3)
        xs = LA.solve(tl.tensor(a), tl.tensor(b)).numpy()
        assert np.abs(a @ xs - b).max() < 1e-13 * np.abs(xs).max() * n
        s, la = LA.slogdet(tl.tensor(a))
        assert abs(la.item() - np.linalg.slogdet(a)[1]) < 1e-16 * 1e10 * n   # cond * eps * n


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(dtype, upper, left, unit):
    a = wc(2, 5, 5)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri = tri - np.diag(np.diagonal(tri, axis1=-2, axis2=-1)[0]) * 0   # keep shape
        tri[..., range(5), range(5)] = 1
    b = rnd(2, 5, 3) if left else rnd(2, 3, 5)
    want = np.linalg.solve(tri, b) if left else mT(np.linalg.solve(mT(tri), mT(b)))
    for x in layouts(a, dtype).values():       # the other triangle (and diagonal) is not read
        if x.ndim != 3:
            continue
        got = LA.solve_triangular(x, tl.tensor(b, dtype=x.dtype), upper=upper, left=left,
                                  unitriangular=unit)
        close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (2, 6, 4), (4, 6), (1, 3), (0, 2)])
def test_lu_factor_and_lu(dtype, shape, threads):
    a = rnd(*shape)
    x = layouts(a, dtype)["transposed"]
    P, L, U = LA.lu(x)
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(L.shape) == shape[:-2] + (m, k) and tuple(U.shape) == shape[:-2] + (k, n)
    Ln, Un = ref(L), ref(U)
    assert np.array_equal(np.triu(Ln, 1), 0 * Ln) and np.all(np.diagonal(Ln, 0, -2, -1) == 1)
    assert np.array_equal(np.tril(Un, -1), 0 * Un)
    assert np.all(np.abs(Ln) <= 1 + 1e-12)          # partial pivoting bounds the multipliers
    close(P @ L @ U, a, dtype)
    LU, piv = LA.lu_factor(x)
    assert piv.dtype == tl.int32 and tuple(piv.shape) == shape[:-2] + (k,)
    torch = pytest.importorskip("torch")
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    close(LU, tLU.numpy(), dtype)


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_lu_solve(adjoint, left):
    a = wc(2, 4, 4)
    b = rnd(2, 4, 3) if left else rnd(2, 3, 4)
    LU, piv = LA.lu_factor(tl.tensor(a))
    got = LA.lu_solve(LU, piv, tl.tensor(b), left=left, adjoint=adjoint)
    aa = mT(a) if adjoint else a
    want = np.linalg.solve(aa, b) if left else mT(np.linalg.solve(mT(aa), mT(b)))
    close(got, want, "float64")


def test_lu_solve_rejects_bad_pivots():
    LU = tl.tensor(wc(3, 3))
    with pytest.raises(RuntimeError, match="pivots must be in"):
        LA.lu_solve(LU, tl.tensor([1, 9, 3], dtype=tl.int32), tl.ones(3, 1, dtype=tl.float64))


# ---- Cholesky --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper, threads):
    g = rnd(3, 6, 6)
    a = g @ mT(g) + 6 * np.eye(6)
    junk = a + np.triu(np.ones((6, 6)) * 7, 1) if not upper else a + np.tril(np.ones((6, 6)) * 7, -1)
    for x in layouts(junk, dtype).values():   # only the named triangle is read
        L = LA.cholesky(x, upper=upper)
        want = np.linalg.cholesky(np.broadcast_to(a, tuple(x.shape)))
        close(L, mT(want) if upper else want, dtype)
    out = LA.cholesky_ex(tl.tensor(a, dtype=getattr(tl, dtype)))
    assert out.info.dtype == tl.int32 and not out.info.any().item()
    b = rnd(3, 6, 2)
    close(D.cholesky_solve(tl.tensor(b), tl.tensor(np.linalg.cholesky(a))), np.linalg.solve(a, b),
          "float64")


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_gradients(upper):
    """By finite differences through the triangle the forward reads (tril/triu of a free
    matrix), and against PyTorch, whose gradient for the factor is the whole matrix formula
    -(C L) (C = gB X^T + X gB^T), upper triangle included."""
    a = wc(4, 4)
    a = a @ a.T
    fac = np.linalg.cholesky(a)
    fac = fac.T if upper else fac
    b = tl.tensor(rnd(2, 4, 3), requires_grad=True)
    m = tl.tensor(fac, requires_grad=True)
    tri = (lambda t: t.triu()) if upper else (lambda t: t.tril())
    assert tl.autograd.gradcheck(lambda bb, mm: D.cholesky_solve(bb, tri(mm), upper), (b, m))
    torch = pytest.importorskip("torch")
    tb = torch.tensor(b.detach().numpy(), requires_grad=True)
    tm = torch.tensor(fac, requires_grad=True)
    g = rnd(2, 4, 3)
    torch.cholesky_solve(tb, tm, upper).backward(torch.tensor(g))
    b.grad = m.grad = None
    D.cholesky_solve(b, m, upper).backward(tl.tensor(g))
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), atol=1e-10)


def test_cholesky_not_positive_definite():
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): The factorization could not "
                       r"be completed because the input is not positive-definite \(the leading "
                       r"minor of order 2 is not positive-definite\)"):
        LA.cholesky(tl.tensor(a))
    assert issubclass(LA.LinAlgError, RuntimeError)
    info = LA.cholesky_ex(tl.tensor(a)).info
    assert info.tolist() == [0, 2]


# ---- QR ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 2), (0, 3), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode, threads):
    a = rnd(*shape)
    m, n = shape[-2:]
    k = min(m, n)
    for x in layouts(a, dtype).values():
        Q, R = LA.qr(x, mode=mode)
        batch = tuple(x.shape)[:-2]
        want_a = np.broadcast_to(a, tuple(x.shape))
        Rn = ref(R)
        assert np.array_equal(np.triu(Rn), Rn)
        if mode == "r":
            assert tuple(Q.shape) == (0,)
        else:
            qc = m if mode == "complete" else k
            assert tuple(Q.shape) == batch + (m, qc)
            Qn = ref(Q)
            close(mT(Qn) @ Qn, np.broadcast_to(np.eye(qc), batch + (qc, qc)), dtype)
            close(Qn @ Rn, want_a, dtype)
        # R agrees with LAPACK's up to the signs of its rows
        Rw = np.linalg.qr(want_a, mode="r" if mode == "r" else mode)
        Rw = Rw[1] if isinstance(Rw, tuple) else Rw
        close(np.abs(Rn), np.abs(Rw), dtype)


def test_qr_legacy_and_torch_signs():
    torch = pytest.importorskip("torch")
    a = rnd(5, 3)
    Q, R = D.qr(tl.tensor(a))
    tQ, tR = torch.linalg.qr(torch.tensor(a))
    close(Q, tQ.numpy(), "float64")         # same Householder sign convention as LAPACK
    close(R, tR.numpy(), "float64")
    Q2, R2 = D.qr(tl.tensor(a), some=False)
    assert tuple(Q2.shape) == (5, 5) and tuple(R2.shape) == (5, 3)


# ---- eigh -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 5, 17])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, n, uplo, threads):
    g = rnd(2, n, n)
    a = g + mT(g)
    junk = a + (np.triu(np.ones((n, n)), 1) if uplo == "L" else np.tril(np.ones((n, n)), -1)) * 5
    for x in layouts(junk, dtype).values():
        w, V = LA.eigh(x, UPLO=uplo)
        want_a = np.broadcast_to(a, tuple(x.shape))
        close(w, np.linalg.eigvalsh(want_a), dtype)
        Vn = ref(V)
        close(mT(Vn) @ Vn, np.broadcast_to(np.eye(n), Vn.shape), dtype)
        close((Vn * ref(w)[..., None, :]) @ mT(Vn), want_a, dtype)
        close(LA.eigvalsh(x, UPLO=uplo), np.linalg.eigvalsh(want_a), dtype)


def test_eigh_repeated_and_structured(isa):
    for a in (np.eye(6), np.zeros((4, 4)), np.diag([3.0, 1, 1, 2, 2, 2]),
              np.ones((7, 7)), np.diag(np.ones(9), 1) + np.diag(np.ones(9), -1),
              ill(12, 1e12) + mT(ill(12, 1e12))):
        w, V = LA.eigh(tl.tensor(a))
        np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a), atol=1e-13 * max(1, np.abs(a).max()) * 10)
        Vn = V.numpy()
        np.testing.assert_allclose(Vn.T @ Vn, np.eye(len(a)), atol=1e-13)


# ---- SVD --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 6, 2), (1, 1), (0, 3), (3, 0)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, shape, full, threads, isa):
    a = rnd(*shape)
    m, n = shape[-2:]
    k = min(m, n)
    for x in layouts(a, dtype).values():
        U, S, Vh = LA.svd(x, full_matrices=full)
        want_a = np.broadcast_to(a, tuple(x.shape))
        close(S, np.linalg.svd(want_a, compute_uv=False), dtype)
        Un, Sn, Vn = ref(U), ref(S), ref(Vh)
        assert Un.shape[-1] == (m if full else k) and Vn.shape[-2] == (n if full else k)
        close(mT(Un) @ Un, np.broadcast_to(np.eye(Un.shape[-1]), Un.shape[:-2] + (Un.shape[-1],) * 2), dtype)
        close(Vn @ mT(Vn), np.broadcast_to(np.eye(Vn.shape[-2]), Vn.shape[:-2] + (Vn.shape[-2],) * 2), dtype)
        close((Un[..., :k] * Sn[..., None, :]) @ Vn[..., :k, :], want_a, dtype)
        close(LA.svdvals(x), np.linalg.svd(want_a, compute_uv=False), dtype)


def test_svd_rank_deficient_and_ill_conditioned(isa):
    for a in (np.zeros((4, 3)), np.ones((5, 4)), np.outer(rnd(6), rnd(3)), ill(10, 1e13)):
        U, S, Vh = LA.svd(tl.tensor(a))
        Un, Vn = U.numpy(), Vh.numpy()
        np.testing.assert_allclose(Un.T @ Un, np.eye(Un.shape[1]), atol=1e-13)
        np.testing.assert_allclose(Vn @ Vn.T, np.eye(Vn.shape[0]), atol=1e-13)
        k = min(a.shape)
        np.testing.assert_allclose((Un[:, :k] * S.numpy()) @ Vn[:k], a, atol=1e-13)
        np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-14)
    # one-sided Jacobi keeps tiny singular values to high relative accuracy
    d = np.logspace(0, -14, 6)
    q1, _ = np.linalg.qr(rnd(6, 6))
    s = LA.svdvals(tl.tensor(np.diag(d) @ q1)).numpy()
    np.testing.assert_allclose(s, d, rtol=1e-10)


def test_svd_legacy():
    a = rnd(2, 5, 3)
    U, S, V = D.svd(tl.tensor(a))
    assert tuple(U.shape) == (2, 5, 3) and tuple(V.shape) == (2, 3, 3)
    close((U.numpy() * S.numpy()[..., None, :]) @ mT(V.numpy()), a, "float64")
    U, S, V = D.svd(tl.tensor(a), some=False)
    assert tuple(U.shape) == (2, 5, 5)
    U, S, V = D.svd(tl.tensor(a), compute_uv=False)
    assert tuple(U.shape) == (2, 5, 5) and not U.any().item() and not V.any().item()
    close(S, np.linalg.svd(a, compute_uv=False), "float64")


# ---- derived ops ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv_matrix_rank(dtype, shape):
    a = rnd(*shape)
    for x in layouts(a, dtype).values():
        want_a = np.broadcast_to(a, tuple(x.shape))
        close(LA.pinv(x), np.linalg.pinv(want_a), dtype)
        np.testing.assert_array_equal(LA.matrix_rank(x).numpy(), np.linalg.matrix_rank(want_a))
    low = rnd(6, 2) @ rnd(2, 5)
    assert LA.matrix_rank(tl.tensor(low)).item() == 2
    assert LA.matrix_rank(tl.tensor(low), atol=1e3).item() == 0
    close(LA.pinv(tl.tensor(low)), np.linalg.pinv(low), "float64")
    close(D.pinverse(tl.tensor(low)), np.linalg.pinv(low, rcond=1e-15), "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_hermitian_reads_the_lower_triangle(dtype):
    """hermitian=True takes A as the symmetric matrix of its lower triangle (eigh's view, as
    PyTorch's), including singular ones; an empty batch gives an empty result."""
    a = rnd(2, 4, 4)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    close(LA.pinv(tl.tensor(a, dtype=getattr(tl, dtype)), hermitian=True), np.linalg.pinv(sym),
          dtype)
    v = rnd(5, 2)
    low = v @ v.T                       # rank 2, symmetric
    close(LA.pinv(tl.tensor(low), hermitian=True), np.linalg.pinv(low, hermitian=True), "float64")
    assert LA.pinv(tl.zeros(3, 0, 0), hermitian=True).shape == (3, 0, 0)
    # the gradient is pinv's formula, right for symmetric inputs (as PyTorch's gradcheck
    # of it, through a symmetrised input)
    x = tl.tensor(low + np.eye(5), requires_grad=True)
    assert tl.autograd.gradcheck(lambda m: LA.pinv((m + m.mT) / 2, hermitian=True), (x,))


def test_lstsq_matches_torch():
    torch = pytest.importorskip("torch")
    for a, b in ((rnd(6, 3), rnd(6, 2)), (rnd(3, 5), rnd(3, 2)), (rnd(2, 6, 3), rnd(2, 6))):
        for driver in (None, "gels", "gelsd", "gelss", "gelsy"):
            got = LA.lstsq(tl.tensor(a), tl.tensor(b), driver=driver)
            want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
            assert type(got).__name__ == "linalg_lstsq"
            for f in ("solution", "residuals", "rank", "singular_values"):
                g, w = getattr(got, f), getattr(want, f)
                assert tuple(g.shape) == tuple(w.shape), (f, driver)
                if w.numel() and (a.shape[-2] >= a.shape[-1] or f != "solution" or driver != "gels"):
                    np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_power(dtype):
    a = wc(2, 3, 3) / 4
    x = tl.tensor(a, dtype=getattr(tl, dtype))
    for k in (0, 1, 2, 5, -1, -3):
        close(LA.matrix_power(x, k), np.linalg.matrix_power(a, k), dtype)
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 3 by 4"):
        LA.matrix_power(tl.ones(3, 4), 2)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_matrix_power_stays_in_the_graph(k):
    """A^0 and A^1 are new tensors in the graph (PyTorch's), never A itself; gradients by
    finite differences (A^0's is zero)."""
    a = tl.tensor(wc(2, 3, 3) / 4, requires_grad=True)
    r = LA.matrix_power(a, k)
    assert r is not a and r.requires_grad and r.grad_fn is not None
    assert tl.autograd.gradcheck(lambda x: LA.matrix_power(x, k), (a,))


def _expm_reference(a):
    """exp(A) by a long Taylor series after scaling (float64 NumPy, independent)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-2).max(), 1e-300)))) + 1)
    x = a / 2.0 ** s
    term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    out = term.copy()
    for k in range(1, 30):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [1e-3, 1.0, 20.0])
def test_matrix_exp(dtype, scale):
    a = rnd(2, 4, 4) * scale
    for x in layouts(a, dtype).values():
        want = _expm_reference(np.broadcast_to(a, tuple(x.shape)))
        close(D.matrix_exp(x), want, dtype, scale=np.abs(want).max() * 10)
    close(LA.matrix_exp(tl.zeros(3, 3)), np.eye(3), "float32")


def test_cond_and_svd_norms():
    a = rnd(2, 4, 3)
    x = tl.tensor(a)
    close(LA.cond(tl.tensor(a[0, :3])), np.linalg.cond(a[0, :3]), "float64", scale=np.linalg.cond(a[0, :3]))
    for p in ("fro", "nuc", 1, -1, math.inf, -math.inf, -2):
        close(LA.cond(tl.tensor(a[0, :3]), p), np.linalg.cond(a[0, :3], p), "float64",
              scale=abs(np.linalg.cond(a[0, :3], p)))
    for ord_ in (2, -2, "nuc"):
        close(LA.matrix_norm(x, ord_), np.linalg.norm(a, ord_, axis=(-2, -1)), "float64")
        close(LA.norm(x, ord_, dim=(0, 2), keepdim=True),
              np.linalg.norm(a, ord_, axis=(0, 2), keepdims=True), "float64")
        close(LA.matrix_norm(x.float(), ord_), np.linalg.norm(a, ord_, axis=(-2, -1)), "float32")
    close(tl.norm(x, "nuc"), np.linalg.norm(a, "nuc", axis=(-2, -1)), "float64")


# ---- results, aliases, errors ------------------------------------------------------------------
def test_named_tuples_and_aliases():
    a = tl.tensor(wc(3, 3))
    assert LA.slogdet(a)._fields == ("sign", "logabsdet")
    assert type(LA.slogdet(a)).__name__ == "linalg_slogdet" and type(D.slogdet(a)).__name__ == "slogdet"
    assert LA.eigh(a + a.mT)._fields == ("eigenvalues", "eigenvectors")
    assert LA.svd(a)._fields == ("U", "S", "Vh") and D.svd(a)._fields == ("U", "S", "V")
    assert LA.qr(a)._fields == ("Q", "R") and LA.lu(a)._fields == ("P", "L", "U")
    assert LA.lu_factor(a)._fields == ("LU", "pivots")
    assert LA.lu_factor_ex(a)._fields == ("LU", "pivots", "info")
    assert LA.inv_ex(a)._fields == ("inverse", "info") and LA.solve_ex(a, a)._fields == ("result", "info")
    for method, fn in (("det", LA.det), ("inverse", LA.inv), ("logdet", D.logdet),
                       ("matrix_exp", LA.matrix_exp), ("pinverse", LA.pinv)):
        close(getattr(a, method)(), ref(fn(a + 0 * a.mT if method == "logdet" else a)), "float64")
    close(a.matrix_power(2), ref(a @ a), "float64")
    assert a.slogdet()[0].item() == LA.slogdet(a)[0].item()
    assert tuple(a.svd()[2].shape) == (3, 3) and tuple(a.qr()[0].shape) == (3, 3)


def test_logdet_signs():
    assert math.isnan(D.logdet(tl.tensor(-np.eye(3))).item())
    assert D.logdet(tl.zeros(2, 2)).item() == -math.inf
    s, la = LA.slogdet(tl.zeros(2, 2))
    assert s.item() == 0 and la.item() == -math.inf
    assert LA.det(tl.zeros(2, 2)).item() == 0


def test_float32_results_keep_dtype():
    a = tl.tensor(wc(3, 3), dtype=tl.float32)
    for r in (LA.inv(a), LA.det(a), LA.cholesky(a @ a.mT), LA.qr(a).Q, LA.eigh(a + a.mT)[1],
              LA.svd(a).U, LA.pinv(a), LA.matrix_exp(a), LA.solve(a, a)):
        assert r.dtype == tl.float32


ERRORS = [
    (lambda: LA.inv(tl.ones(3, 4)), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda: LA.inv(tl.zeros(3, 3)), LA.LinAlgError,
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because "
     "the input matrix is singular."),
    (lambda: LA.inv(tl.stack([tl.eye(3), tl.tensor([[1.0, 0, 0], [0, 0, 0], [0, 0, 1]])])),
     LA.LinAlgError, "linalg.inv: (Batch element 1): The diagonal element 2 is zero"),
    (lambda: LA.solve(tl.zeros(3, 3), tl.ones(3)), LA.LinAlgError,
     "torch.linalg.solve: The solver failed because the input matrix is singular."),
    (lambda: LA.solve(tl.ones(3, 4), tl.ones(3)), RuntimeError,
     "linalg.solve: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda: LA.solve(tl.eye(3), tl.ones(4)), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)"),
    (lambda: LA.solve_triangular(tl.eye(3), tl.ones(4, 2), upper=True), RuntimeError,
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    (lambda: LA.det(tl.ones(3, 4)), RuntimeError, "linalg.det: A must be batches of square"),
    (lambda: LA.eigh(tl.ones(3, 4)), RuntimeError, "linalg.eigh: A must be batches of square"),
    (lambda: LA.eigh(tl.eye(3), UPLO="X"), RuntimeError,
     "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: LA.svd(tl.ones(3)), RuntimeError,
     "linalg.svd: The input tensor A must have at least 2 dimensions."),
    (lambda: LA.qr(tl.ones(3)), RuntimeError,
     "linalg.qr: The input tensor A must have at least 2 dimensions."),
    (lambda: LA.qr(tl.ones(3, 3), mode="x"), RuntimeError,
     "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'"),
    (lambda: LA.inv(tl.ones(3, 3, dtype=tl.int64)), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: LA.inv(tl.eye(3, dtype=tl.float16)), RuntimeError,
     "linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda: LA.svd(tl.eye(3, dtype=tl.int32)), RuntimeError,
     "linalg.svd: Expected a floating point or complex tensor as input. Got Int"),
    (lambda: LA.lu_factor(tl.ones(3)), RuntimeError,
     "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    (lambda: LA.lu_factor(tl.zeros(3, 3)), RuntimeError, "U[1,1] is zero"),
    (lambda: LA.matrix_exp(tl.ones(3, 4)), RuntimeError,
     "linalg.matrix_exp: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda: LA.lstsq(tl.ones(3, 4), tl.ones(2, 1)), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    (lambda: LA.solve(tl.eye(3), tl.ones(3, dtype=tl.float64)), RuntimeError,
     "Expected A and B to have the same dtype"),
    (lambda: LA.inv("x"), TypeError, "must be Tensor"),
    # not yet for complex matrices: said as such (it used to read "Expected a floating point
    # or complex tensor ... Got ComplexFloat")
    (lambda: LA.svd(tl.eye(3, dtype=tl.complex64)), NotImplementedError,
     "linalg.svd: complex matrices (ComplexFloat) are not supported yet"),
    (lambda: LA.cholesky(tl.eye(3, dtype=tl.complex128)), NotImplementedError,
     "linalg.cholesky: complex matrices (ComplexDouble) are not supported yet"),
    # removed from PyTorch in 1.9: they raise (as PyTorch's do) naming the replacement
    (lambda: tl.eig(tl.eye(2)), RuntimeError, "now removed. Use torch.linalg.eig"),
    (lambda: tl.symeig(tl.eye(2), eigenvectors=True), RuntimeError, "torch.linalg.eigh"),
    (lambda: tl.lstsq(tl.eye(2), tl.eye(2)), RuntimeError, "torch.linalg.lstsq(A, B)"),
    (lambda: tl.solve(tl.eye(2), tl.eye(2)), RuntimeError, "torch.linalg.solve(A, B)"),
    (lambda: tl.matrix_rank(tl.eye(2)), RuntimeError, "torch.linalg.matrix_rank"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, msg = ERRORS[case]
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


def test_ex_variants_do_not_raise():
    z = tl.zeros(2, 3, 3)
    assert LA.inv_ex(z).info.tolist() == [1, 1]
    assert LA.solve_ex(z, tl.ones(2, 3)).info.tolist() == [1, 1]
    assert LA.lu_factor_ex(z).info.tolist() == [1, 1]
    with pytest.raises(LA.LinAlgError):
        LA.inv_ex(z, check_errors=True)


def test_hypothesis_shapes_and_strides():
    hyp = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    @hyp.settings(max_examples=40, deadline=None)
    @hyp.given(m=st.integers(0, 6), n=st.integers(0, 6), batch=st.lists(st.integers(0, 3), max_size=2),
               transpose=st.booleans(), seed=st.integers(0, 2 ** 31))
    def check(m, n, batch, transpose, seed):
        a = np.random.default_rng(seed).standard_normal(tuple(batch) + (m, n))
        x = tl.tensor(a)
        if transpose:
            x = tl.tensor(np.ascontiguousarray(mT(a))).mT
        S = LA.svdvals(x).numpy()
        np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False) if a.size else
                                   np.zeros(tuple(batch) + (min(m, n),)), atol=1e-12)
        Q, R = LA.qr(x)
        np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-12)
        P, L, U = LA.lu(x)
        np.testing.assert_allclose(P.numpy() @ L.numpy() @ U.numpy(), a, atol=1e-12)
        if m == n:
            s = a + mT(a)
            w = LA.eigvalsh(tl.tensor(s)).numpy()
            np.testing.assert_allclose(w, np.linalg.eigvalsh(s) if s.size else w, atol=1e-12)
            np.testing.assert_allclose(LA.det(x).numpy(), np.linalg.det(a) if a.size else
                                       np.ones(tuple(batch)), rtol=1e-9, atol=1e-12)
    check()


# ---- the blocked kernels (panels of 48: sizes spanning several blocks), every SIMD level ----
@pytest.mark.parametrize("m,n", [(130, 130), (150, 101), (101, 150)])
def test_blocked_factorisations(m, n, isa, threads):
    a = rnd(m, n)
    x = tl.tensor(a)
    P, L, U = LA.lu(x)
    np.testing.assert_allclose(P.numpy() @ L.numpy() @ U.numpy(), a, atol=1e-12)
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(LA.lu_factor(x).pivots.numpy(),
                                  torch.linalg.lu_factor(torch.tensor(a)).pivots.numpy())
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(x, mode=mode)
        Qn = Q.numpy()
        np.testing.assert_allclose(Qn @ R.numpy(), a, atol=1e-12)
        np.testing.assert_allclose(Qn.T @ Qn, np.eye(Qn.shape[1]), atol=1e-13)
        np.testing.assert_allclose(np.abs(R.numpy()), np.abs(np.linalg.qr(a, mode=mode)[1]),
                                   atol=1e-12)
    if m == n:
        close(LA.inv(x), np.linalg.inv(a), "float64", scale=np.abs(np.linalg.inv(a)).max())
        b = rnd(n, 70)
        close(LA.solve(x, tl.tensor(b)), np.linalg.solve(a, b), "float64",
              scale=np.abs(np.linalg.solve(a, b)).max())
        LU, piv = LA.lu_factor(x)
        close(LA.lu_solve(LU, piv, tl.tensor(b), adjoint=True), np.linalg.solve(a.T, b),
              "float64", scale=np.abs(np.linalg.solve(a.T, b)).max())
        spd = a @ a.T + n * np.eye(n)
        close(LA.cholesky(tl.tensor(spd)), np.linalg.cholesky(spd), "float64")
        for upper in (True, False):
            tri = (np.triu(a) if upper else np.tril(a)) + 4 * np.sqrt(n) * np.eye(n)
            close(LA.solve_triangular(tl.tensor(tri), tl.tensor(b), upper=upper),
                  np.linalg.solve(tri, b), "float64")
            close(LA.solve_triangular(tl.tensor(tri), tl.tensor(b.T), upper=upper, left=False),
                  np.linalg.solve(tri.T, b).T, "float64")
        s = a + a.T
        w, V = LA.eigh(tl.tensor(s))
        np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(s), atol=1e-12 * n)
        np.testing.assert_allclose(V.numpy() @ np.diag(w.numpy()) @ V.numpy().T, s, atol=1e-11)
    S = LA.svdvals(x[:60, :50])
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a[:60, :50], compute_uv=False),
                               atol=1e-12)


def test_large_single_matrix_uses_threads(threads):
    """n = 700: the lone-matrix kernels split their GEMMs / rows over threads (n^3 >= 2^28)."""
    n = 700
    a = rnd(n, n)
    x = tl.tensor(a)
    d = LA.slogdet(x)
    ws, wl = np.linalg.slogdet(a)
    assert d.sign.item() == ws and abs(d.logabsdet.item() - wl) < 1e-9
    spd = a @ a.T / n + np.eye(n)
    np.testing.assert_allclose(LA.cholesky(tl.tensor(spd)).numpy(), np.linalg.cholesky(spd),
                               atol=1e-12)
    Q, R = LA.qr(x)
    np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-11)
    s = a + a.T
    np.testing.assert_allclose(LA.eigvalsh(tl.tensor(s)).numpy(), np.linalg.eigvalsh(s),
                               atol=1e-10)


def test_out_arguments():
    a = tl.tensor(wc(3, 3))
    out = tl.empty(0, dtype=tl.float64)
    r = LA.inv(a, out=out)
    assert r is out and tuple(out.shape) == (3, 3)
    close(out, np.linalg.inv(a.numpy()), "float64")
    Q, R = tl.empty(3, 3, dtype=tl.float64), tl.empty(3, 3, dtype=tl.float64)
    res = LA.qr(a, out=(Q, R))
    assert res.Q is Q and res.R is R
    close(Q @ R, a.numpy(), "float64")
    w = tl.empty(3, dtype=tl.float64)
    assert LA.eigvalsh(a + a.mT, out=w) is w
    close(w, np.linalg.eigvalsh((a + a.mT).numpy()), "float64")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got float"):
        LA.inv(a, out=tl.empty(3, 3))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        LA.inv(a.clone().requires_grad_(), out=tl.empty(3, 3, dtype=tl.float64))


def test_thread_count_does_not_change_results():
    a = rnd(700, 700)
    results = []
    for nt in (1, 2):
        old = tl.get_num_threads()
        tl.set_num_threads(nt)
        try:
            results.append((LA.lu_factor(tl.tensor(a)).LU.numpy(), LA.qr(tl.tensor(a)).R.numpy(),
                            LA.inv(tl.tensor(a[:300, :300])).numpy()))
        finally:
            tl.set_num_threads(old)
    for x, y in zip(*results):
        np.testing.assert_array_equal(x, y)


# ---- lu_unpack, the older solver names, tensorinv/tensorsolve, linalg.diagonal/vander -------------
def _rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_lu_unpack_and_legacy_lu_solve():
    A, B = _rnd(2, 4, 4), _rnd(2, 4, 3, seed=1)
    LU, piv = tl.linalg.lu_factor(tl.tensor(A))
    P, L, U = tl.lu_unpack(LU, piv)
    np.testing.assert_allclose((P @ L @ U).numpy(), A, atol=1e-12)
    assert np.allclose(np.tril(L.numpy(), -1) + np.eye(4), L.numpy())
    np.testing.assert_allclose(tl.lu_solve(tl.tensor(B), LU, piv).numpy(), np.linalg.solve(A, B),
                               atol=1e-10)
    LU2, piv2 = tl.lu(tl.tensor(A))
    np.testing.assert_array_equal(LU2.numpy(), LU.numpy())
    assert len(tl.lu(tl.tensor(A), get_infos=True)) == 3
    wide = tl.tensor(_rnd(3, 5, seed=2))
    P, L, U = tl.lu_unpack(*tl.linalg.lu_factor(wide[:, :3]))
    assert P.shape == (3, 3) and L.shape == (3, 3) and U.shape == (3, 3)
    LUt = tl.tensor(LU.numpy(), requires_grad=True)
    assert tl.autograd.gradcheck(lambda m: tl.lu_unpack(m, piv)[1:], (LUt,))
    if torch is not None:
        Pt, Lt, Ut = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(A)))
        P, L, U = tl.lu_unpack(LU, piv)
        for a, b in ((P, Pt), (L, Lt), (U, Ut)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"transpose": True}, {"upper": False}, {"unitriangular": True}])
def test_triangular_solve(kw):
    T = np.triu(_rnd(4, 4)) + 4 * np.eye(4)
    A = T if kw.get("upper", True) else T.T
    B = _rnd(4, 3, seed=3)
    X, coef = tl.triangular_solve(tl.tensor(B), tl.tensor(A), **kw)
    M = A.copy()
    if kw.get("unitriangular"):
        np.fill_diagonal(M, 1)
    M = np.triu(M) if kw.get("upper", True) else np.tril(M)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(M.T if kw.get("transpose") else M, B),
                               atol=1e-12)
    np.testing.assert_array_equal(coef.numpy(), A)
    a = tl.tensor(A, requires_grad=True)
    b = tl.tensor(B, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: tl.triangular_solve(b, a, **kw).solution, (a, b))


def test_cholesky_inverse():
    S = _rnd(4, 4, seed=4)
    S = S @ S.T + 4 * np.eye(4)
    L = np.linalg.cholesky(S)
    np.testing.assert_allclose(tl.cholesky_inverse(tl.tensor(L)).numpy(), np.linalg.inv(S),
                               atol=1e-12)
    np.testing.assert_allclose(tl.cholesky_inverse(tl.tensor(L.T), upper=True).numpy(),
                               np.linalg.inv(S), atol=1e-12)
    Lt = tl.tensor(L, requires_grad=True)
    assert tl.autograd.gradcheck(lambda m: tl.cholesky_inverse(m.tril()), (Lt,))


def test_tensorinv_and_tensorsolve():
    A = _rnd(6, 2, 3, seed=5)
    X = tl.linalg.tensorinv(tl.tensor(A), ind=1)
    assert X.shape == (2, 3, 6)
    np.testing.assert_allclose(np.tensordot(X.numpy(), A, 1).reshape(6, 6), np.eye(6), atol=1e-10)
    with pytest.raises(RuntimeError, match="prod"):
        tl.linalg.tensorinv(tl.ones(2, 3), ind=1)
    A2, B2 = _rnd(2, 3, 6, seed=6), _rnd(2, 3, seed=7)
    Xs = tl.linalg.tensorsolve(tl.tensor(A2), tl.tensor(B2))
    assert Xs.shape == (6,)
    np.testing.assert_allclose(np.tensordot(A2, Xs.numpy(), 1), B2, atol=1e-10)
    Xd = tl.linalg.tensorsolve(tl.tensor(A2.transpose(2, 0, 1)), tl.tensor(B2), dims=(0,))
    np.testing.assert_allclose(Xd.numpy(), Xs.numpy(), atol=1e-10)
    A4, B4 = _rnd(3, 4, 4, 3, seed=8), _rnd(3, 4, seed=9)    # only the sizes' products must match
    X4 = tl.linalg.tensorsolve(tl.tensor(A4), tl.tensor(B4), dims=(0, 2))
    np.testing.assert_allclose(np.tensordot(A4.transpose(1, 3, 0, 2), X4.numpy(), 2), B4.reshape(4, 3),
                               atol=1e-9)
    a = tl.tensor(A, requires_grad=True)
    assert tl.autograd.gradcheck(lambda m: tl.linalg.tensorinv(m, ind=1), (a,))
    if torch is not None:
        np.testing.assert_allclose(
            Xs.numpy(), torch.linalg.tensorsolve(torch.tensor(A2), torch.tensor(B2)).numpy())


def test_linalg_diagonal_and_vander():
    A = tl.tensor(_rnd(2, 3, 3))
    np.testing.assert_array_equal(tl.linalg.diagonal(A).numpy(), np.diagonal(A.numpy(), 0, -2, -1))
    np.testing.assert_array_equal(tl.linalg.diagonal(A, offset=1, dim1=0, dim2=2).numpy(),
                                  np.diagonal(A.numpy(), 1, 0, 2))
    x = np.array([1.0, 2.0, -3.0])
    np.testing.assert_array_equal(tl.linalg.vander(tl.tensor(x)).numpy(),
                                  np.vander(x, increasing=True))
    np.testing.assert_array_equal(tl.linalg.vander(tl.tensor([1, 2]), N=4).numpy(),
                                  [[1, 1, 1, 1], [1, 2, 4, 8]])
    xt = tl.tensor(x, requires_grad=True)
    assert tl.autograd.gradcheck(lambda v: tl.linalg.vander(v, N=4), (xt,))
    assert tl.linalg.vander(tl.tensor(2.0), N=2).tolist() == [[1.0, 2.0]]
    with pytest.raises(RuntimeError, match="greater than 1"):
        tl.linalg.vander(tl.tensor([1.0, 2.0]), N=1)


def test_det_gradient_of_singular_matrices_is_pytorchs_zeros():
    # det(A) A^-T has no inverse to use for a singular A: the gradient there is 0 (as PyTorch
    # gives), and the invertible matrices of the same batch keep their exact gradient
    A = tl.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]], dtype=tl.float64,
                  requires_grad=True)
    tl.linalg.det(A).sum().backward()
    np.testing.assert_array_equal(A.grad[0].numpy(), np.zeros((2, 2)))
    np.testing.assert_allclose(A.grad[1].numpy(), [[3.0, -1.0], [-1.0, 2.0]], rtol=1e-12)  # adj(A)^T
    Z = tl.zeros(3, 3, requires_grad=True)
    tl.det(Z).backward()
    assert Z.grad.abs().sum().item() == 0
