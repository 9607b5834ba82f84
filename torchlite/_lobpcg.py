"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric positive definite
(generalized) eigenproblem A x = lambda B x by the locally optimal block preconditioned
conjugate gradient method (Knyazev 2001), without forming anything but products with A, B and
the preconditioner iK.

Each step takes the Rayleigh-Ritz solution of the problem restricted to the span of the current
vectors X, their residuals R = A X - B X diag(lambda) (preconditioned: iK R) and the previous
step's direction P.  That basis is made B-orthonormal through the eigendecomposition of its
Gram matrix, dropping the directions it no longer spans (Stathopoulos and Wu's orthogonal
basis selection, the "ortho" method's robustness: the plain Cholesky of "basic" fails on a
singular Gram matrix; both method names run this form).  It stops when every requested pair's
residual is below tol relative to the problem's scale, or after niter steps.

No gradient yet: when A (or B, X, iK) requires grad the results are recorded with a node whose
backward raises, so a gradient is never silently zero (PyTorch differentiates lobpcg with a
formula of its own for B = None; not built here)."""
from . import _dtype as D
from ._tensor import Tensor

__all__ = ["lobpcg"]


def _check_matrix(M, name, m, dtype):
    if not isinstance(M, Tensor):
        raise TypeError(f"lobpcg: {name} must be a Tensor, got {type(M).__name__}")
    if M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] != m:
        raise ValueError(f"lobpcg: {name} must be a square matrix of size {m} (or a batch of "
                         f"them), got shape {tuple(M.shape)}")
    if M.dtype is not dtype:
        raise ValueError(f"lobpcg: {name} has dtype {M.dtype}, A has {dtype}")


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """(E, X): the k largest (largest=False: smallest) eigenvalues of A x = lambda B x (B the
    identity when None) and their B-orthonormal eigenvectors, for a symmetric A of size
    (*, m, m) and a symmetric positive definite B.  X (*, m, n): the starting vectors (random
    ones from torchlite's generator when None, n = k by default); iK: a preconditioner
    (an approximation of A's inverse); niter: at most this many steps (1000 by default, -1:
    until converged); tol: the residual tolerance (finfo(A.dtype).eps ** 0.5 by default).
    tracker, ortho_iparams, ortho_fparams and ortho_bparams are accepted and not used."""
    import torchlite
    from .autograd.graph import needs_grad, record_not_differentiable
    from .autograd.grad_mode import no_grad
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg: A must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"lobpcg: A must be a square matrix (or a batch of them), got shape "
                         f"{tuple(A.shape)}")
    if A.dtype not in (D.float32, D.float64):
        raise ValueError(f"lobpcg: expected a float32 or float64 A, got {A.dtype}")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    m = A.shape[-1]
    for M, name in ((B, "B"), (iK, "iK")):
        if M is not None:
            _check_matrix(M, name, m, A.dtype)
    if X is not None:
        if not isinstance(X, Tensor) or X.ndim < 2 or X.shape[-2] != m:
            raise ValueError(f"lobpcg: X must be a tensor of shape (*, {m}, n)")
        n = X.shape[-1]
    k = (n if n is not None else 1) if k is None else int(k)
    n = k if n is None else int(n)
    if not 1 <= k <= n:
        raise ValueError(f"lobpcg: expected 1 <= k <= n, got k={k}, n={n}")
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else int(niter)
    tol = D.finfo(A.dtype).eps ** 0.5 if tol is None else float(tol)
    largest = True if largest is None else bool(largest)
    with no_grad():
        if A.ndim == 2:
            E, V = _solve(A, B, X, iK, k, n, niter, tol, largest)
        else:
            batch = tuple(A.shape[:-2])
            flat = [M.reshape((-1,) + tuple(M.shape[-2:])) if M is not None else None
                    for M in (A, B, X, iK)]
            pairs = [_solve(*(F[i] if F is not None else None for F in flat[:3]),
                            flat[3][i] if flat[3] is not None else None, k, n, niter, tol, largest)
                     for i in range(flat[0].shape[0])]
            E = torchlite.stack([e for e, _ in pairs]).reshape(batch + (k,))
            V = torchlite.stack([v for _, v in pairs]).reshape(batch + (m, k))
    inputs = [M for M in (A, B, X, iK) if M is not None]
    if needs_grad(*inputs):
        E, V = record_not_differentiable("lobpcg", inputs, [E, V])
    return E, V


def _solve(A, B, X, iK, k, n, niter, tol, largest):
    import torchlite
    m, dtype = A.shape[-1], A.dtype
    sign = 1.0 if largest else -1.0        # the smallest of A's are the largest of -A's
    A = (A + A.mT) * (0.5 * sign)          # A is read as symmetric
    if B is not None:
        B = (B + B.mT) * 0.5

    def b_of(V):
        return V if B is None else B @ V

    eps = D.finfo(dtype).eps

    def orthonormal(S):
        """A B-orthonormal basis of S's columns: the eigenvectors of the Gram matrix S^T B S,
        scaled, with the directions of (relatively) negligible weight dropped."""
        G = S.mT @ b_of(S)
        w, Q = torchlite.linalg.eigh((G + G.mT) * 0.5)
        keep = w > w.max() * (100 * eps) if w.numel() else w > 0
        Q, w = Q[:, keep], w[keep]
        return S @ (Q / w.sqrt())

    def ritz(S, count):
        """The Rayleigh-Ritz pairs of A on the B-orthonormal basis S: the `count` largest."""
        T = S.mT @ (A @ S)
        w, C = torchlite.linalg.eigh((T + T.mT) * 0.5)
        w, C = w.flip(-1)[:count], C.flip(-1)[:, :count]
        return w, S @ C

    if X is None:
        X = torchlite.randn(m, n, dtype=dtype)
    lam, X = ritz(orthonormal(X.to(dtype)), n)
    scale_a = torchlite.linalg.matrix_norm(A)
    scale_b = torchlite.linalg.matrix_norm(B) if B is not None else torchlite.tensor(1.0, dtype=dtype)
    P = None
    step = 0
    while niter < 0 or step < niter:
        R = A @ X - b_of(X) * lam
        bound = tol * (scale_a + lam.abs() * scale_b) * X.norm(dim=0)
        if bool((R.norm(dim=0)[:k] <= bound[:k]).all()):
            break
        W = R if iK is None else iK @ R
        S = torchlite.cat([X, W] + ([P] if P is not None else []), dim=1)
        lam_new, X_new = ritz(orthonormal(S), n)
        # the step's direction: the part of the new vectors outside the span of the old ones
        P = X_new - X @ (X.mT @ b_of(X_new))
        lam, X = lam_new, X_new
        step += 1
    return lam[:k] * sign, X[:, :k]
