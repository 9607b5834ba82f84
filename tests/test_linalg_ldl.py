"""torchlite.linalg.ldl_factor(_ex) and ldl_solve: Bunch-Kaufman LDL^T in LAPACK's compact
form.  Checked by what the factors must do (solve A X = B, NumPy's product as the judge; the
determinant from D's blocks and the pivots' parity), by their structure, and against PyTorch's
LD and pivots (LAPACK's sytrf) where PyTorch is installed."""
import numpy as np
import pytest

import torchlite as tl


def _symmetric(rng, n, zero_diagonal=False, batch=(), dtype=np.float64):
    m = rng.standard_normal(batch + (n, n))
    a = m + np.swapaxes(m, -1, -2)
    if zero_diagonal:             # forces 2x2 blocks and interchanges
        a[..., np.arange(n), np.arange(n)] = 0.0
    return a.astype(dtype)


def _det_from_factors(LD, piv):
    """det(A) = det(D) (the permutations cancel in P L D L^T P^T): 1x1 and 2x2 blocks."""
    n, k, det = LD.shape[0], 0, 1.0
    while k < n:
        if piv[k] > 0:
            det *= LD[k, k]
            k += 1
        else:
            det *= LD[k, k] * LD[k + 1, k + 1] - LD[k + 1, k] ** 2
            k += 2
    return det


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 30])
@pytest.mark.parametrize("zero_diagonal", [False, True])
def test_factor_and_solve(n, zero_diagonal):
    rng = np.random.default_rng(n)
    A = _symmetric(rng, n, zero_diagonal and n > 1)
    LD, piv, info = tl.linalg.ldl_factor_ex(tl.tensor(A))
    assert int(info) == 0 and piv.dtype is tl.int32 and LD.dtype is tl.float64
    ld, p = LD.numpy(), piv.numpy()
    assert np.array_equal(ld, np.tril(ld))
    assert ((p != 0) & (np.abs(p) <= n)).all()
    neg = np.flatnonzero(p < 0)
    assert len(neg) % 2 == 0 and (p[neg[0::2]] == p[neg[1::2]]).all() and (neg[1::2] == neg[0::2] + 1).all()
    np.testing.assert_allclose(_det_from_factors(ld, p), np.linalg.det(A), rtol=1e-9)
    B = rng.standard_normal((n, 4))
    X = tl.linalg.ldl_solve(LD, piv, tl.tensor(B)).numpy()
    np.testing.assert_allclose(A @ X, B, atol=1e-9 * max(1.0, np.abs(X).max()))


def test_batched_broadcast_float32_and_the_non_ex_form():
    rng = np.random.default_rng(7)
    A = _symmetric(rng, 6, batch=(3,), dtype=np.float32)
    LD, piv = tl.linalg.ldl_factor(tl.tensor(A))
    assert LD.shape == (3, 6, 6) and piv.shape == (3, 6)
    B = rng.standard_normal((2, 1, 6, 2)).astype(np.float32)       # batch dims broadcast
    X = tl.linalg.ldl_solve(LD, piv, tl.tensor(B)).numpy()
    assert X.shape == (2, 3, 6, 2)
    np.testing.assert_allclose(A @ X, np.broadcast_to(B, X.shape), atol=2e-4)


def test_only_the_lower_triangle_is_read():
    rng = np.random.default_rng(3)
    A = _symmetric(rng, 5)
    junk = A + np.triu(rng.standard_normal((5, 5)), 1)
    a, b = tl.linalg.ldl_factor(tl.tensor(A)), tl.linalg.ldl_factor(tl.tensor(junk))
    assert tl.equal(a.LD, b.LD) and tl.equal(a.pivots, b.pivots)


def test_singular_input():
    LD, piv, info = tl.linalg.ldl_factor_ex(tl.zeros(3, 3))
    assert int(info) == 1
    with pytest.raises(tl.linalg.LinAlgError, match="not invertible"):
        tl.linalg.ldl_factor(tl.zeros(3, 3))
    with pytest.raises(tl.linalg.LinAlgError, match=r"Batch element 1"):
        tl.linalg.ldl_factor_ex(tl.stack([tl.eye(2), tl.zeros(2, 2)]), check_errors=True)


def test_errors_and_no_gradient():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tl.linalg.ldl_factor(tl.ones(3))
    with pytest.raises(RuntimeError, match="square"):
        tl.linalg.ldl_factor(tl.ones(2, 3))
    LD, piv = tl.linalg.ldl_factor(tl.eye(3, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="pivots to be integers"):
        tl.linalg.ldl_solve(LD, piv.long(), tl.ones(3, 1, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tl.linalg.ldl_solve(LD, piv, tl.ones(4, 1, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="pivots must be"):
        tl.linalg.ldl_solve(LD, tl.tensor([1, 9, 3], dtype=tl.int32), tl.ones(3, 1, dtype=tl.float64))
    A = tl.eye(3, dtype=tl.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="not (differentiable|implemented)"):
        tl.linalg.ldl_factor(A * 2).LD.sum().backward()


@pytest.mark.parametrize("n", [2, 4, 7, 70])
def test_factors_match_pytorch(n):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11 + n)
    for zero_diagonal in (False, True):
        A = _symmetric(rng, n, zero_diagonal, batch=(3,))
        ours = tl.linalg.ldl_factor_ex(tl.tensor(A))
        theirs = torch.linalg.ldl_factor_ex(torch.tensor(A))
        np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
        np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
        np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), atol=1e-9)
        B = rng.standard_normal((3, n, 2))
        np.testing.assert_allclose(
            tl.linalg.ldl_solve(ours.LD, ours.pivots, tl.tensor(B)).numpy(),
            torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(B)).numpy(), atol=1e-8)


def test_empty_matrices():
    LD, piv, info = tl.linalg.ldl_factor_ex(tl.zeros(2, 0, 0))
    assert LD.shape == (2, 0, 0) and piv.shape == (2, 0) and info.tolist() == [0, 0]
    assert tl.linalg.ldl_solve(LD, piv, tl.zeros(2, 0, 3)).shape == (2, 0, 3)
