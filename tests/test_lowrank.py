"""torch.svd_lowrank / pca_lowrank (torchlite/_ops/lowrank.py): randomized SVDs checked against
NumPy's exact SVD on matrices of known low rank and on centred data, and PyTorch where
installed."""
import numpy as np
import pytest

import torchlite as tl


def test_svd_lowrank_recovers_a_low_rank_matrix():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 30))
    for mat in (A, A.T):
        tl.manual_seed(1)
        U, S, V = tl.svd_lowrank(tl.tensor(mat), q=5)
        m, n = mat.shape
        assert U.shape == (m, 5) and S.shape == (5,) and V.shape == (n, 5)
        np.testing.assert_allclose(U.numpy() @ np.diag(S.numpy()) @ V.numpy().T, mat, atol=1e-10)
        np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(mat, compute_uv=False)[:3], rtol=1e-12)
        np.testing.assert_allclose(U.numpy().T @ U.numpy(), np.eye(5), atol=1e-12)
    M = rng.standard_normal((1, 30))
    U, S, V = tl.svd_lowrank(tl.tensor(A + M), q=4, M=tl.tensor(M))     # the SVD of A alone
    np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(A, compute_uv=False)[:3], rtol=1e-10)


def test_repeatable_with_a_seed_and_batched():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((2, 20, 8))
    tl.manual_seed(7)
    a = tl.svd_lowrank(tl.tensor(A), q=3, niter=0)
    tl.manual_seed(7)
    b = tl.svd_lowrank(tl.tensor(A), q=3, niter=0)
    assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a, b))
    assert a[0].shape == (2, 20, 3) and a[1].shape == (2, 3) and a[2].shape == (2, 8, 3)


def test_pca_lowrank_finds_the_principal_directions():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 4)) @ np.diag([5.0, 3.0, 1.0, 0.1]) + 7.0
    U, S, V = tl.pca_lowrank(tl.tensor(X), q=4)
    Xc = X - X.mean(0)
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    np.testing.assert_allclose(S.numpy(), s, rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(V.numpy() * vt.T, axis=0)), 1.0, atol=1e-10)   # up to sign
    _, S0, _ = tl.pca_lowrank(tl.tensor(X), q=4, center=False)            # full rank: exact
    np.testing.assert_allclose(S0.numpy(), np.linalg.svd(X, compute_uv=False), rtol=1e-8)
    assert tl.pca_lowrank(tl.tensor(X))[1].shape == (4,)                  # q: min(6, m, n)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="not greater than min"):
        tl.svd_lowrank(tl.randn(5, 3), q=4)
    with pytest.raises(ValueError, match="niter"):
        tl.svd_lowrank(tl.randn(5, 3), q=2, niter=-1)
    with pytest.raises(ValueError, match="not greater than min"):
        tl.pca_lowrank(tl.randn(5, 3), q=4)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 5)) @ np.diag([4.0, 2.0, 1.0, 0.5, 0.1])
    _, S, _ = tl.pca_lowrank(tl.tensor(X), q=5)
    _, St, _ = torch.pca_lowrank(torch.tensor(X), q=5)
    np.testing.assert_allclose(S.numpy(), St.numpy(), rtol=1e-10)
