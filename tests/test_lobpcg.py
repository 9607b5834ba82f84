"""torchlite.lobpcg against NumPy's dense eigensolvers (and PyTorch's lobpcg where installed):
the k largest or smallest eigenpairs of symmetric and generalized problems, preconditioned,
batched, with PyTorch's argument errors."""
import numpy as np
import pytest

import torchlite as tl


def spd(m, seed, spread=100.0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    ev = np.linspace(1.0, spread, m)
    return q @ np.diag(ev) @ q.T, ev


def check_pairs(A, E, X, B=None, rtol=1e-6):
    """Residuals A x = lambda B x and B-orthonormal vectors."""
    B = np.eye(A.shape[0]) if B is None else B
    X, E = X.numpy(), E.numpy()
    assert np.abs(A @ X - B @ X * E).max() <= rtol * np.abs(A).max() * 10
    np.testing.assert_allclose(X.T @ B @ X, np.eye(X.shape[1]), atol=1e-8)


@pytest.mark.parametrize("largest", [True, False])
def test_extreme_eigenpairs_of_a_symmetric_matrix(largest):
    A, ev = spd(60, 0)
    tl.manual_seed(0)
    E, X = tl.lobpcg(tl.tensor(A), k=3, largest=largest)
    want = ev[::-1][:3] if largest else ev[:3]
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-10)
    check_pairs(A, E, X)


def test_generalized_problem_with_a_preconditioner_and_more_vectors_than_pairs():
    A, _ = spd(48, 1)
    rng = np.random.default_rng(2)
    Bm = rng.standard_normal((48, 48))
    Bm = Bm @ Bm.T + 48 * np.eye(48)
    L = np.linalg.cholesky(Bm)
    Li = np.linalg.inv(L)
    want = np.linalg.eigvalsh(Li @ A @ Li.T)[::-1][:2]
    iK = tl.tensor(np.linalg.inv(A + np.eye(48)))
    X0 = tl.tensor(rng.standard_normal((48, 5)))
    E, X = tl.lobpcg(tl.tensor(A), k=2, B=tl.tensor(Bm), X=X0, iK=iK)
    assert E.shape == (2,) and X.shape == (48, 2)
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-9)
    check_pairs(A, E, X, Bm)


def test_batches_and_float32():
    A, ev = spd(40, 3)
    E, X = tl.lobpcg(tl.tensor(np.stack([A, 3 * A])), k=2)
    assert E.shape == (2, 2) and X.shape == (2, 40, 2)
    np.testing.assert_allclose(E.numpy(), [ev[::-1][:2], 3 * ev[::-1][:2]], rtol=1e-9)
    E32, _ = tl.lobpcg(tl.tensor(A, dtype=tl.float32), k=2)
    assert E32.dtype is tl.float32
    np.testing.assert_allclose(E32.numpy(), ev[::-1][:2], rtol=1e-3)   # tol = eps ** 0.5


def test_argument_errors():
    A = tl.tensor(spd(8, 4)[0])
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        tl.lobpcg(A, k=3)
    with pytest.raises(ValueError, match="square"):
        tl.lobpcg(tl.ones(4, 5))
    with pytest.raises(ValueError, match="method"):
        tl.lobpcg(A, method="fast")
    with pytest.raises(ValueError, match="1 <= k <= n"):
        tl.lobpcg(A, k=2, n=1)
    with pytest.raises(TypeError):
        tl.lobpcg(np.eye(8))
    with pytest.raises(ValueError, match="B must be a square matrix of size 8"):
        tl.lobpcg(A, B=tl.eye(7, dtype=tl.float64))


def test_a_gradient_is_refused_not_silently_zero():
    A = tl.tensor(spd(12, 6)[0], requires_grad=True)
    E, X = tl.lobpcg(A, k=2)
    assert E.requires_grad and E.grad_fn is not None
    with pytest.raises(RuntimeError):
        E.sum().backward()


def test_against_torch_where_installed():
    torch = pytest.importorskip("torch")
    A, _ = spd(50, 5)
    for largest in (True, False):
        want, _ = torch.lobpcg(torch.tensor(A), k=4, largest=largest)
        got, _ = tl.lobpcg(tl.tensor(A), k=4, largest=largest)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-8)
