"""torch.linalg.eig / eigvals (kernels/eig.h): eigenpairs of general real and complex matrices
checked by their residual A V = V diag(L), the eigenvalues against NumPy's (LAPACK) as
multisets, the vectors' normalisation (unit norm, largest component real), dtypes, batches,
degenerate matrices and errors; PyTorch where installed."""
import numpy as np
import pytest

import torchlite as tl


def _match(ref, got):
    """The largest distance between the multisets ref and got (nearest pairs, greedily)."""
    got, worst = list(got), 0.0
    for r in ref:
        j = int(np.argmin([abs(r - g) for g in got]))
        worst = max(worst, abs(r - got.pop(j)))
    return worst


def _check(A, L, V, tol):
    scale = max(1.0, float(np.abs(A).max()))
    assert np.abs(A @ V - V * L[..., None, :]).max() <= tol * scale * A.shape[-1]
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, atol=tol * 10)
    big = np.abs(V).argmax(axis=-2)
    lead = np.take_along_axis(V, big[..., None, :], axis=-2)
    assert np.abs(lead.imag).max() == 0 and (lead.real > 0).all()      # largest component real


@pytest.mark.parametrize("n", [1, 2, 3, 7, 30, 80])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_eigenpairs_of_random_matrices(n, kind):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    if kind == "complex":
        A = A + 1j * rng.standard_normal((n, n))
    L, V = tl.linalg.eig(tl.tensor(A))
    assert L.dtype == tl.complex128 and V.dtype == tl.complex128 and V.shape == (n, n)
    L, V = L.numpy(), V.numpy()
    _check(A, L, V, 1e-14)
    assert _match(np.linalg.eigvals(A), L) <= 1e-12 * max(1.0, np.abs(L).max())
    assert _match(np.linalg.eigvals(A), tl.linalg.eigvals(tl.tensor(A)).numpy()) <= 1e-12 * max(1.0, np.abs(L).max())


def test_single_precision_batches_and_dtypes():
    rng = np.random.default_rng(3)
    B = rng.standard_normal((4, 3, 6, 6)).astype(np.float32)
    L, V = tl.linalg.eig(tl.tensor(B))
    assert L.dtype == tl.complex64 and L.shape == (4, 3, 6) and V.shape == (4, 3, 6, 6)
    _check(B.astype(np.float64), L.numpy().astype(np.complex128), V.numpy().astype(np.complex128), 1e-6)
    C = (rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))).astype(np.complex64)
    assert tl.linalg.eigvals(tl.tensor(C)).dtype == tl.complex64
    e = tl.linalg.eig(tl.zeros(2, 0, 0))
    assert e.eigenvalues.shape == (2, 0) and e.eigenvectors.shape == (2, 0, 0)


def test_rotation_defective_and_structured_matrices():
    L, V = tl.linalg.eig(tl.tensor([[0.0, 1.0], [-1.0, 0.0]]))
    assert sorted(L.numpy().imag.tolist()) == pytest.approx([-1.0, 1.0]) and np.abs(L.numpy().real).max() < 1e-15
    J = np.diag(np.full(5, 2.0)) + np.diag(np.ones(4), 1)           # one Jordan block
    np.testing.assert_allclose(tl.linalg.eigvals(tl.tensor(J)).numpy(), np.full(5, 2.0), atol=1e-12)
    D = np.diag([3.0, -1.0, 0.5])
    L, V = tl.linalg.eig(tl.tensor(D))
    assert sorted(L.numpy().real.tolist()) == [-1.0, 0.5, 3.0]
    rng = np.random.default_rng(4)
    C = np.zeros((8, 8))                                             # a companion matrix
    C[1:, :-1] = np.eye(7)
    C[:, -1] = rng.standard_normal(8)
    L, V = tl.linalg.eig(tl.tensor(C))
    _check(C, L.numpy(), V.numpy(), 1e-13)
    assert _match(np.linalg.eigvals(C), L.numpy()) < 1e-12
    Z = np.zeros((4, 4))
    assert np.abs(tl.linalg.eigvals(tl.tensor(Z)).numpy()).max() == 0


def test_out_errors_and_gradient():
    A = tl.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=tl.float64)
    out = (tl.empty(2, dtype=tl.complex128), tl.empty(2, 2, dtype=tl.complex128))
    r = tl.linalg.eig(A, out=out)
    assert r.eigenvalues is out[0] and r.eigenvectors is out[1]
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        tl.linalg.eig(tl.tensor([[float("nan"), 1.0], [0.0, 1.0]]))
    with pytest.raises(RuntimeError, match="batches of square matrices"):
        tl.linalg.eig(tl.ones(2, 3))
    with pytest.raises(RuntimeError, match="floating point or complex"):
        tl.linalg.eig(tl.ones(2, 2, dtype=tl.int64))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tl.linalg.eigvals(tl.ones(3))
    # a matrix with complex eigenvalues (a real one's real eigenvectors have no phase to
    # depend on, so PyTorch's check rightly stays quiet there; an unseeded randn made this
    # test fail about one run in five)
    x = tl.tensor([[0.0, -2.0, 0.5], [1.0, 0.3, 0.0], [0.2, 0.0, 1.0]], requires_grad=True)
    L, V = tl.linalg.eig(x)
    assert bool((L.imag != 0).any())
    assert L.requires_grad and type(L.grad_fn).__name__ == "LinalgEigBackward0"
    with pytest.raises(RuntimeError, match="specified up to multiplication by e"):
        V.real.sum().backward()                  # depends on each vector's arbitrary phase


@pytest.mark.parametrize("kind", ["real", "complex"])
def test_gradients_against_finite_differences(kind):
    """Losses that do not depend on the eigenvectors' phases (PyTorch's condition), through
    the eigenvalues and the vectors' moduli, against central differences in float64."""
    rng = np.random.default_rng(6 if kind == "real" else 7)
    A = rng.standard_normal((4, 4)) + (1j * rng.standard_normal((4, 4)) if kind == "complex" else 0)
    W = tl.tensor(rng.standard_normal((4, 4)))

    def loss(a):
        L, V = tl.linalg.eig(a)
        return ((V.abs() ** 2) * W).sum() + (L.real ** 2).sum() + (L.imag * 3).sum()

    a = tl.tensor(A, requires_grad=True)
    loss(a).backward()
    h, num = 1e-6, np.zeros(A.shape, complex)
    for i in range(4):
        for j in range(4):
            for unit in ((1, 1j) if kind == "complex" else (1,)):
                e = np.zeros(A.shape, A.dtype)
                e[i, j] = h * unit
                num[i, j] += unit * (loss(tl.tensor(A + e)).item() - loss(tl.tensor(A - e)).item()) / (2 * h)
    np.testing.assert_allclose(a.grad.numpy(), num if kind == "complex" else num.real, atol=1e-7)
    x = tl.tensor(A, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: (tl.linalg.eigvals(t).abs() ** 2).sum(), (x,))


def test_complex_solve_and_inverse():
    """linalg.solve/inv on complex matrices (through the real embedding) and their gradients."""
    rng = np.random.default_rng(8)
    A = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    B = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    np.testing.assert_allclose(tl.linalg.solve(tl.tensor(A), tl.tensor(B)).numpy(), np.linalg.solve(A, B), atol=1e-13)
    np.testing.assert_allclose(tl.linalg.solve(tl.tensor(A), tl.tensor(B[:, 0].copy())).numpy(),
                               np.linalg.solve(A, B[:, 0]), atol=1e-13)
    X = tl.linalg.solve(tl.tensor(A), tl.tensor(B.T.copy()), left=False).numpy()
    np.testing.assert_allclose(X @ A, B.T, atol=1e-13)
    np.testing.assert_allclose(tl.linalg.inv(tl.tensor(A)).numpy(), np.linalg.inv(A), atol=1e-13)
    assert tl.linalg.inv(tl.tensor(A.astype(np.complex64))).dtype == tl.complex64
    a, b = tl.tensor(A, requires_grad=True), tl.tensor(B, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: tl.linalg.solve(a, b), (a, b))
    assert tl.autograd.gradcheck(lambda a: tl.linalg.inv(a), (a,))
    with pytest.raises(tl.linalg.LinAlgError, match="singular"):
        tl.linalg.solve(tl.zeros(2, 2, dtype=tl.complex128), tl.ones(2, dtype=tl.complex128))
    x = tl.tensor(A)
    np.testing.assert_array_equal(x.mH.numpy(), A.conj().T)        # the adjoint conjugates
    np.testing.assert_array_equal(x.H.numpy(), A.conj().T)
    np.testing.assert_array_equal(x.adjoint().numpy(), A.conj().T)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for A in (rng.standard_normal((6, 6)), rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6))):
        ours = tl.linalg.eig(tl.tensor(A))
        theirs = torch.linalg.eig(torch.tensor(A))
        assert str(ours.eigenvalues.dtype).split(".")[-1] == str(theirs.eigenvalues.dtype).split(".")[-1]
        assert _match(theirs.eigenvalues.numpy(), ours.eigenvalues.numpy()) < 1e-12
        # the same vectors up to a unit factor, for each eigenvalue (they are distinct here)
        for k, lam in enumerate(ours.eigenvalues.numpy()):
            j = int(np.argmin(np.abs(theirs.eigenvalues.numpy() - lam)))
            a, b = ours.eigenvectors.numpy()[:, k], theirs.eigenvectors.numpy()[:, j]
            assert abs(abs(np.vdot(a, b)) - 1) < 1e-10
