"""Matrix decompositions and solvers (torch.linalg.cholesky, lu, qr, eigh, svd, solve, inv,
det, ...) and their top-level / Tensor aliases.

The factorisations run on torchlite's own kernels (torchlite/_core/linalg_decomp.pyx: LU with
partial pivoting, Cholesky, Householder QR, tridiagonal QL, one-sided Jacobi SVD); the derived
ops (pinv, lstsq, matrix_rank, matrix_power, matrix_exp, cond) are compositions of them and of
the matrix products.  Each op checks its arguments with PyTorch's messages, and records a
backward node (linalg_decomp_grad.py) when an input requires grad."""
from __future__ import annotations

import builtins
import numbers
import math
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import linalg_decomp as _K
from .._tensor import Tensor, _wrap
from .. import return_types as _rt
from ..autograd.graph import needs_grad, record_not_differentiable
from ..autograd.grad_mode import no_grad
from . import _register
from . import linalg_decomp_grad as _G
from ._kit import with_out, tensor_arg

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["det", "logdet", "slogdet", "inverse", "svd", "qr", "cholesky", "cholesky_solve",
           "matrix_power", "matrix_exp", "pinverse", "geqrf", "orgqr", "ormqr", "lu_unpack",
           "triangular_solve", "cholesky_inverse"]


class LinAlgError(RuntimeError):
    """A numerical failure of a linalg op (singular matrix, not positive-definite, no
    convergence): torch.linalg.LinAlgError."""


LinAlgError.__module__ = "torchlite.linalg"
_K.set_error_class(LinAlgError)


def _tuple_type(name, fields):
    return getattr(_rt, name, None) or _rt._make(name, fields)


_Slogdet = _tuple_type("linalg_slogdet", ("sign", "logabsdet"))
_SlogdetLegacy = _tuple_type("slogdet", ("sign", "logabsdet"))
_Qr = _tuple_type("linalg_qr", ("Q", "R"))
_QrLegacy = _tuple_type("qr", ("Q", "R"))
_Eigh = _tuple_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_Eig = _tuple_type("linalg_eig", ("eigenvalues", "eigenvectors"))
_Svd = _tuple_type("linalg_svd", ("U", "S", "Vh"))
_SvdLegacy = _tuple_type("svd", ("U", "S", "V"))
_LuFactor = _tuple_type("linalg_lu_factor", ("LU", "pivots"))
_LuFactorEx = _tuple_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_Lu = _tuple_type("linalg_lu", ("P", "L", "U"))
_InvEx = _tuple_type("linalg_inv_ex", ("inverse", "info"))
_CholeskyEx = _tuple_type("linalg_cholesky_ex", ("L", "info"))
_SolveEx = _tuple_type("linalg_solve_ex", ("result", "info"))
_Lstsq = _tuple_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# ---- argument checks ---------------------------------------------------------------------
_LOW_PRECISION = (D.float16.code, D.bfloat16.code, D.complex32.code)
_COMPLEX = (D.complex64.code, D.complex128.code)
_REAL = (D.float32.code, D.float64.code)


def _matrix(A, op, square=False):
    """Check A is a (batch of) floating matrices (square when asked), as torch words it."""
    tensor_arg(A, op, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    code = A._data.dtype
    if code in _LOW_PRECISION:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_K._NAMES[code]}")
    if code in _COMPLEX:            # PyTorch takes these; these decompositions are real only
        raise NotImplementedError(f"{op}: complex matrices ({_K._NAMES[code]}) are not "
                                  f"supported yet (linalg.eig, eigvals, eigvalsh, svdvals, "
                                  f"inv, solve and the matrix norms take them)")
    if code not in _REAL:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_K._NAMES[code]}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _same_dtype(A, B, op):
    if A.dtype != B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{_K._NAMES[A._data.dtype]} and B of type {_K._NAMES[B._data.dtype]} "
                           f"instead")


def _raise_info(info, op, message):
    """Raise LinAlgError for the first nonzero info (message(info) words it), prefixed with
    the batch element as torch does for batched inputs.  A meta tensor has no values to
    check (PyTorch's meta kernels do not check them either)."""
    if info.is_meta:
        return
    flat = info.reshape(-1).tolist()
    for b, v in enumerate(flat):
        if v != 0:
            prefix = f"(Batch element {b}): " if info.ndim > 0 else ""
            raise LinAlgError(f"{op}: {prefix}{message(v)}")


def _broadcast_batch(A, B, op, shapes_msg):
    """A (*a, n, n) and B (*b, n, k) broadcast to a common batch shape."""
    try:
        batch = tuple(_broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    except RuntimeError:
        raise RuntimeError(shapes_msg) from None
    return A.expand(batch + tuple(A.shape[-2:])), B.expand(batch + tuple(B.shape[-2:]))


def _broadcast_shapes(a, b):
    from .._dispatch import array as _A
    return _A.broadcast_shapes(tuple(a), tuple(b))


def _where(c, x, y):
    from .elementwise import where
    return where(c, x, y)


def _eye_like(A, n=None):
    from .creation import eye
    n = A.shape[-1] if n is None else n
    return eye(n, dtype=A.dtype, device=A.device)


# ---- LU -----------------------------------------------------------------------------------
@with_out("linalg_lu_factor_ex")
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.lu_factor_ex: (LU, pivots, info) with partial pivoting."""
    op = "torch.linalg.lu_factor_ex"
    tensor_arg(A, op, "A")
    if A.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A.shape)} instead")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _K.lu_factor(_matrix(A, "linalg.lu_factor")._data)
    res = (_wrap(lu), _wrap(piv), _wrap(info))
    if check_errors and not A.is_meta:          # (a meta tensor has no values to check)
        _raise_info(res[2], "linalg.lu_factor", lambda v: f"U[{v},{v}] is zero and using it on "
                    f"lu_solve would result in a division by zero.")
    if needs_grad(A):
        _G.record_lu_factor(A, _permutation(res[1], A.shape[-2], A.dtype), res)
    return _LuFactorEx(*res)


@with_out("linalg_lu_factor")
def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple[Tensor, Tensor]:
    """torch.linalg.lu_factor: (LU, pivots) with A = P L U; raises when U has a zero on its
    diagonal (torch's rule, lu_solve would divide by it)."""
    lu, piv, info = lu_factor_ex(A, pivot=pivot)
    for b, v in enumerate(info.reshape(-1).tolist() if not info.is_meta else ()):
        if v != 0:
            prefix = f"(Batch element {b}): " if info.ndim > 0 else ""
            raise RuntimeError(f"torch.linalg.lu_factor: {prefix}U[{v},{v}] is zero and using "
                               f"it on lu_solve would result in a division by zero. If you still "
                               f"want to perform the factorization, consider calling "
                               f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _LuFactor(lu, piv)


def _permutation(piv, m, dtype):
    """The permutation matrices P (..., m, m) of LAPACK-style pivots (..., k): row i of
    P^T A is row perm[i] of A, so P[perm[i], i] = 1, i.e. P = I[perm]^T."""
    from .creation import empty, tensor
    batch = tuple(piv.shape[:-1])
    if piv.is_meta:                 # the shape only: the pivots' values are not there
        return empty(batch + (m, m), dtype=dtype, device=piv.device)
    nb, k = math.prod(batch), piv.shape[-1]
    rows = piv.reshape(nb, k).tolist() if nb * k else [[]] * nb
    perms = []
    for row in rows:
        perm = list(range(m))
        for i, p in enumerate(row):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        perms.append(perm)
    index = tensor(perms, dtype=D.int64, device=piv.device).reshape(batch + (m,))
    return _eye_like(piv, m).to(dtype)[index].mT.contiguous()


def _unpacked(LU, piv, A):
    """(P, L, U) of lu_factor's packed result, outside the graph."""
    with no_grad():
        LU = LU.detach()
        m, n = LU.shape[-2], LU.shape[-1]
        k = min(m, n)
        L = LU[..., :, :k].tril(-1) + _eye_like(LU, m)[:, :k]
        U = LU[..., :k, :].triu()
        return _permutation(piv, m, A.dtype), L, U


@with_out("linalg_lu")
def lu(A: Tensor, *, pivot: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.lu: (P, L, U) with A = P L U, L unit lower-triangular (m x k), U upper
    (k x n), k = min(m, n).  Differentiable in L and U (P is piecewise constant)."""
    with no_grad():
        LU, piv, _ = lu_factor_ex(A, pivot=pivot)
    P, L, U = _unpacked(LU, piv, A)
    if needs_grad(A):
        _G.record_lu(A, P, L, U)
    return _Lu(P, L, U)


@with_out("linalg_lu_solve")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """torch.linalg.lu_solve: X with A X = B (adjoint: A^T X = B; left=False: X A = B) from
    lu_factor's (LU, pivots)."""
    op = "linalg.lu_solve"
    _matrix(LU, op, square=True)
    tensor_arg(pivots, op, "pivots")
    tensor_arg(B, op, "B")
    _same_dtype(LU, B, op)
    n = LU.shape[-1]
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LU.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if B.ndim < 2 or (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(str(s) for s in B.shape[-2:])})")
    rhs = B if left else B.mT
    trans = adjoint if left else not adjoint
    LUb, Bb = _broadcast_batch(LU, rhs, op, f"{op}: batch shapes do not broadcast")
    pb = pivots.expand(tuple(LUb.shape[:-1]))
    if needs_grad(LU, B):
        # differentiable in LU and B: the same solve as triangular solves of L = tril(LU, -1)
        # + I and U = triu(LU), each of which has its own backward
        X = _lu_solve_composed(LUb, pb, Bb, trans)
    else:
        X = _wrap(_K.lu_solve(LUb._data, pb._data, Bb._data, trans))
    return X if left else X.mT


def _lu_solve_composed(LU, piv, B, trans):
    """A X = B (trans: A^T X = B) for A = P L U, as P and two triangular solves."""
    n = LU.shape[-1]
    P = _permutation(piv, n, LU.dtype)
    L = LU.tril(-1) + _eye_like(LU, n)
    U = LU.triu()
    if not trans:                   # X = U^-1 L^-1 P^T B
        Y = solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    # A^T = U^T L^T P^T: X = P L^-T U^-T B
    Y = solve_triangular(U.mT, B, upper=False)
    return P @ solve_triangular(L.mT, Y, upper=True, unitriangular=True)


# ---- solve / inv ----------------------------------------------------------------------------
def _solve_raw(A, B, op, check):
    """X with A X = B (B a batch of matrices of A's batch dims after broadcasting), and the
    info of A's LU."""
    lu_, piv, info = _K.lu_factor(A._data)
    if check:
        _raise_info(_wrap(info), op, lambda v: "The solver failed because the input matrix is "
                    "singular.")
    A2, B2 = _broadcast_batch(_wrap(lu_), B, op, f"{op}: batch shapes do not broadcast")
    piv2 = _wrap(piv).expand(tuple(A2.shape[:-1]))
    return _wrap(_K.lu_solve(A2._data, piv2._data, B2._data, False)), _wrap(info)


def _vector_rhs(A, B):
    """Whether B is a (batch of) vectors for solve(A, B), torch's rule."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _is_complex(*ts):
    return any(isinstance(t, Tensor) and t.is_complex() for t in ts)


def _real_embedding(A):
    """The real (2m x 2n) matrix [[Re A, -Im A], [Im A, Re A]] of a complex A: it maps
    [Re x; Im x] to [Re Ax; Im Ax], so complex solves, inverses, singular values and Hermitian
    eigenvalues run on the real kernels (and differentiate through real/imag).  Its singular
    values are A's, each twice (the embedding commutes with multiplication by i); for a
    Hermitian A it is symmetric, with A's eigenvalues each twice."""
    return _embed_parts(A.real, A.imag)


def _embed_parts(re, im):
    """_real_embedding of the complex matrix re + i im."""
    from .joining import cat
    return cat([cat([re, -im], -1), cat([im, re], -1)], -2)


def _pairs_once(w):
    """The embedding's values (sorted, so each one's two copies are neighbours) once each: the
    mean of each pair, so that the gradient reaching a value spreads over its whole
    two-dimensional space of vectors, which is what makes it the complex matrix's gradient
    (one copy's vectors alone span an arbitrary half of it when values repeat)."""
    return (w[..., ::2] + w[..., 1::2]) * 0.5


def _complex_solve(A, B, left, check, op):
    """_solve for complex A and B through the real embedding (twice the size, 8x the flops of
    a complex LU: no complex kernel yet)."""
    from .complex import complex as _complex
    from .joining import cat
    tensor_arg(A, op, "A")
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    vec = _vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vec else B
    if not left:                            # X A = B  <=>  A^T X^T = B^T
        Xt, info = _complex_solve(A.mT, Bm.mT, True, check, op)
        X = Xt.mT
        return (X.squeeze(-1) if vec else X), info
    n = A.shape[-1]
    X2, info = _solve(_real_embedding(A), cat([Bm.real, Bm.imag], -2), True, check, op)
    X = _complex(X2[..., :n, :], X2[..., n:, :])
    return (X.squeeze(-1) if vec else X), info


def _solve(A, B, left, check, op):
    if _is_complex(A, B):
        return _complex_solve(A, B, left, check, op)
    _matrix(A, op, square=True)
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    vec = _vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vec else B
    if Bm.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(str(s) for s in Bm.shape[-2:])})")
    if left:
        Xm, info = _solve_raw(A, Bm, "torch.linalg.solve", check)
    else:   # X A = B  <=>  A^T X^T = B^T
        Xm, info = _solve_raw(A.mT, Bm.mT, "torch.linalg.solve", check)
        Xm = Xm.mT
    X = Xm.squeeze(-1) if vec else Xm
    if needs_grad(A, B):
        _G.record_solve(A, B, X, left, vec)
    return X, info


@with_out("linalg_solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """torch.linalg.solve: X with A X = B (left=False: X A = B); B may be a (batch of)
    vectors; raises LinAlgError for a singular A."""
    return _solve(A, B, left, True, "linalg.solve")[0]


@with_out("linalg_solve_ex")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> tuple[Tensor, Tensor]:
    """torch.linalg.solve_ex: (result, info) without raising for singular inputs."""
    X, info = _solve(A, B, left, check_errors, "linalg.solve")
    return _SolveEx(X, info)


def _inv(A, check, op="linalg.inv"):
    if _is_complex(A):
        from .complex import complex as _complex
        if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
            _matrix(A.real, op, square=True)          # PyTorch's shape errors
        n = A.shape[-1]
        E, info = _inv(_real_embedding(A), check, op)
        return _complex(E[..., :n, :n], E[..., n:, :n]), info
    _matrix(A, op, square=True)
    lu_, piv, info = _K.lu_factor(A._data)
    if check:
        _raise_info(_wrap(info), op, lambda v: f"The diagonal element {v} is zero, the inversion "
                    f"could not be completed because the input matrix is singular.")
    eye = _eye_like(A).expand(tuple(A.shape))
    X = _wrap(_K.lu_solve(lu_, piv, eye._data, False))
    if needs_grad(A):
        _G.record_inv(A, X)
    return X, _wrap(info)


@with_out("linalg_inv")
def inv(A: Tensor) -> Tensor:
    """torch.linalg.inv: the inverse of a (batch of) square matrices; LinAlgError when one is
    singular."""
    return _inv(A, True)[0]


@with_out("linalg_inv_ex")
def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple[Tensor, Tensor]:
    """torch.linalg.inv_ex: (inverse, info) without raising for singular inputs."""
    return _InvEx(*_inv(A, check_errors))


@_register("inverse")
@with_out("inverse")
def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input)


@with_out("linalg_solve_triangular")
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """torch.linalg.solve_triangular: X with A X = B (left=False: X A = B), A upper or lower
    triangular (the other triangle is not read), unitriangular: its diagonal taken as ones."""
    op = "linalg.solve_triangular"
    _matrix(A, op, square=True)
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(str(s) for s in B.shape[-2:])})")
    if left:
        A2, B2 = _broadcast_batch(A, B, op, f"{op}: batch shapes do not broadcast")
        X = _wrap(_K.solve_triangular(A2._data, B2._data, upper, unitriangular))
    else:   # X A = B  <=>  A^T X^T = B^T, A^T triangular the other way
        A2, B2 = _broadcast_batch(A.mT, B.mT, op, f"{op}: batch shapes do not broadcast")
        X = _wrap(_K.solve_triangular(A2._data, B2._data, not upper, unitriangular)).mT
    if needs_grad(A, B):
        _G.record_solve_triangular(A, B, X, upper, left, unitriangular)
    return X


# ---- determinants -----------------------------------------------------------------------------
@with_out("linalg_det")
def det(A: Tensor) -> Tensor:
    """torch.linalg.det through LU: (-1)^swaps * prod(diag(U))."""
    _matrix(A, "linalg.det", square=True)
    d, _, _ = _K.lu_det(A._data)
    r = _wrap(d)
    return _G.record_det(A, r) if needs_grad(A) else r


def _slogdet(A, op):
    _matrix(A, op, square=True)
    _, s, la = _K.lu_det(A._data, op)
    sign, lad = _wrap(s), _wrap(la)
    if needs_grad(A):
        _G.record_slogdet(A, sign, lad)
    return sign, lad


@with_out("linalg_slogdet")
def linalg_slogdet(A: Tensor) -> tuple[Tensor, Tensor]:
    """torch.linalg.slogdet: (sign, log|det|), sign 0 and -inf for a singular matrix."""
    return _Slogdet(*_slogdet(A, "linalg.slogdet"))


@_register("slogdet")
def slogdet(input: Tensor) -> tuple[Tensor, Tensor]:
    """torch.slogdet (torch.return_types.slogdet)."""
    return _SlogdetLegacy(*_slogdet(input, "linalg.slogdet"))


@_register("logdet")
def logdet(input: Tensor) -> Tensor:
    """torch.logdet: log(det): NaN for a negative determinant, -inf for a singular matrix."""
    sign, lad = _slogdet(input, "logdet")
    from .creation import full
    return _where(sign >= 0, lad, full((), math.nan, dtype=lad.dtype, device=lad.device))


det = _register("det")(det)


# ---- Cholesky ---------------------------------------------------------------------------------
def _cholesky(A, upper, check, op):
    _matrix(A, op, square=True)
    src = A.mT if upper else A      # upper reads A's upper triangle: the lower one of A^T
    L, info = _K.cholesky(src._data)
    L, info = _wrap(L), _wrap(info)
    if check:
        _raise_info(info, "linalg.cholesky", lambda v: f"The factorization could not be "
                    f"completed because the input is not positive-definite (the leading minor "
                    f"of order {v} is not positive-definite).")
    res = L.mT if upper else L
    if needs_grad(A):
        _G.record_cholesky(A, res, upper)
    return res, info


@with_out("linalg_cholesky")
def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """torch.linalg.cholesky: L with A = L L^T (upper=True: U with A = U^T U), from the lower
    (upper) triangle of A; LinAlgError when A is not positive-definite."""
    return _cholesky(A, upper, True, "linalg.cholesky")[0]


@with_out("linalg_cholesky_ex")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple[Tensor, Tensor]:
    """torch.linalg.cholesky_ex: (L, info), info the order of the failing minor (0: fine)."""
    return _CholeskyEx(*_cholesky(A, upper, check_errors, "linalg.cholesky"))


@_register("cholesky")
@with_out("cholesky")
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in torch, same as linalg.cholesky)."""
    return _cholesky(input, upper, True, "linalg.cholesky")[0]


@_register("cholesky_solve")
@with_out("cholesky_solve")
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_solve(B, L): X with (L L^T) X = B (upper: (U^T U) X = B), by two
    triangular solves; its gradient is PyTorch's formula (linalg_decomp_grad.py)."""
    L = input2
    with no_grad():
        if upper:
            X = solve_triangular(L, solve_triangular(L.mT, input, upper=False), upper=True)
        else:
            X = solve_triangular(L.mT, solve_triangular(L, input, upper=False), upper=True)
    if needs_grad(input, input2):
        _G.record_cholesky_solve(input, input2, X, upper)
    return X


# ---- QR -------------------------------------------------------------------------------------
def _qr(A, mode, op="linalg.qr"):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    _matrix(A, op)
    Q, R = _K.qr(A._data, mode)
    Q, R = _wrap(Q), _wrap(R)
    if mode == "r":
        Q = _wrap(Q._data.view((0,)))                    # torch's Q for mode='r': shape (0,)
    if needs_grad(A):
        _G.record_qr(A, Q, R, mode)
    return Q, R


@with_out("linalg_qr")
def linalg_qr(A: Tensor, mode: str = "reduced") -> tuple[Tensor, Tensor]:
    """torch.linalg.qr: Householder QR; mode 'reduced' (Q m x k), 'complete' (Q m x m) or 'r'
    (Q empty).  R's diagonal signs follow LAPACK's convention."""
    return _Qr(*_qr(A, mode))


@_register("qr")
@with_out("qr")
def qr(input: Tensor, some: bool = True) -> tuple[Tensor, Tensor]:
    """torch.qr (legacy): some=True is mode 'reduced', some=False 'complete'."""
    return _QrLegacy(*_qr(input, "reduced" if some else "complete"))


# ---- symmetric eigenproblem --------------------------------------------------------------------
def _eigh(A, UPLO, vectors):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _matrix(A, "linalg.eigh", square=True)
    w, V = _K.eigh(A._data, UPLO == "L", vectors)
    w, V = _wrap(w), _wrap(V)
    if needs_grad(A):
        _G.record_eigh(A, w, V, UPLO)
    return w, V


@with_out("linalg_eigh")
def eigh(A: Tensor, UPLO: str = "L") -> tuple[Tensor, Tensor]:
    """torch.linalg.eigh: eigenvalues (ascending) and orthonormal eigenvectors (columns) of a
    symmetric matrix read from its lower (UPLO='L') or upper triangle."""
    return _Eigh(*_eigh(A, UPLO, True))


@with_out("linalg_eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """torch.linalg.eigvalsh: the eigenvalues of eigh (eigenvectors computed only when a
    gradient needs them); of a complex Hermitian A, through the real embedding."""
    if _is_complex(A) and A._data.dtype != D.complex32.code:
        return _complex_eigvalsh(A, UPLO)
    return _eigh(A, UPLO, needs_grad(A))[0]


def _complex_eigvalsh(A, UPLO):
    """A's eigenvalues (ascending, real): its real embedding's, which has each twice, taken
    once (_pairs_once).  The Hermitian matrix is the one the UPLO triangle describes (the other
    triangle and the imaginary parts of the diagonal are not read, as in PyTorch); the
    gradient, as PyTorch's, is the full V diag(g) V^H, not folded onto that triangle."""
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        _matrix(A.real, "linalg.eigvalsh", square=True)           # PyTorch's shape errors
    tri = (lambda t: t.tril(-1)) if UPLO == "L" else (lambda t: t.triu(1))
    re = A.real
    re = tri(re) + tri(re).mT + re.diagonal(0, -2, -1).diag_embed()
    im = tri(A.imag) - tri(A.imag).mT                               # no diagonal
    # the Hermitian matrix's values, with A's gradient passed through unchanged
    re = A.real + (re - A.real).detach()
    im = A.imag + (im - A.imag).detach()
    w = _eigh(_embed_parts(re, im), "L", needs_grad(A))[0]
    return _pairs_once(w)


# ---- general eigenproblem ----------------------------------------------------------------------
def _eig(A, vectors, op):
    tensor_arg(A, op, "A")
    if A.ndim >= 2 and A.numel() and not A.is_meta and not bool(A.detach().isfinite().all()):
        raise RuntimeError(f"torch.{op}: input tensor should not contain infs or NaNs.")
    grad = needs_grad(A)
    w, V = _K.eig(A._data, vectors or grad)            # the backward needs the vectors
    # complex64 for float32/complex64 input, complex128 for float64/complex128 (PyTorch's)
    single = A.dtype.itemsize == 4 or A.dtype == D.complex64
    out_dtype = D.complex64 if single else D.complex128
    w, V = _wrap(w).to(out_dtype), _wrap(V).to(out_dtype)
    if grad:
        _G.record_eig(A, w, V, (w, V) if vectors else (w,))
    return w, V


@with_out("linalg_eig")
def eig(A: Tensor) -> tuple[Tensor, Tensor]:
    """torch.linalg.eig: eigenvalues and eigenvectors (unit-norm columns, largest component
    real) of a general square matrix, as complex tensors; order unspecified, as in PyTorch."""
    return _Eig(*_eig(A, True, "linalg.eig"))


@with_out("linalg_eigvals")
def eigvals(A: Tensor) -> Tensor:
    """torch.linalg.eigvals: the eigenvalues of eig, as a complex tensor."""
    return _eig(A, False, "linalg.eigvals")[0]


# ---- SVD --------------------------------------------------------------------------------------
def _svd(A, full_matrices, compute_uv, op="linalg.svd"):
    _matrix(A, op)
    want = compute_uv or needs_grad(A)
    U, S, Vh = _K.svd(A._data, full_matrices if want else False, want, op)
    U, S, Vh = _wrap(U), _wrap(S), _wrap(Vh)
    if needs_grad(A):
        _G.record_svd(A, U, S, Vh, full_matrices)
    return U, S, Vh


@with_out("linalg_svd")
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.svd: A = U diag(S) Vh, S descending (one-sided Jacobi: accurate singular
    values, also the small ones).  Singular vectors are unique up to sign only."""
    return _Svd(*_svd(A, full_matrices, True))


@with_out("linalg_svdvals")
def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """torch.linalg.svdvals: the singular values, descending; of a complex A, those of its
    real embedding, which has each twice, taken once (_pairs_once: the gradient that reaches
    Re A and Im A is PyTorch's, U diag(g) V^H)."""
    if _is_complex(A) and A._data.dtype != D.complex32.code:
        if A.ndim < 2:
            _matrix(A.real, "linalg.svdvals")                      # PyTorch's shape error
        return _pairs_once(_svd(_real_embedding(A), False, False, "linalg.svdvals")[1])
    return _svd(A, False, False, "linalg.svdvals")[1]


@_register("svd")
@with_out("svd")
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """torch.svd (legacy): returns V, not Vh; some=False gives full U and V; compute_uv=False
    returns zero-filled U (m x m) and V (n x n)."""
    if not compute_uv:
        from .creation import zeros
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return _SvdLegacy(zeros(batch + (m, m), dtype=input.dtype, device=input.device), S,
                          zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = _svd(input, not some, True)
    return _SvdLegacy(U, S, Vh.mT)


def _tolerance(S, A, atol, rtol, op):
    """max(atol, rtol * largest singular value), torch's defaults: rtol = eps * max(m, n)
    when neither is given, 0 when only a positive atol is."""
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        rtol = 0.0 if (atol is not None and not _is_zero(atol)) else D.finfo(A.dtype).eps * max(m, n)
    if atol is None:
        atol = 0.0
    smax = S[..., :1] if S.shape[-1] else S.sum(-1, keepdim=True)
    rt = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    at = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    thr = smax * rt
    from .elementwise import maximum
    if isinstance(at, Tensor):
        return maximum(thr, at.to(thr.dtype))
    return thr.clamp(min=builtins.float(at))


def _is_zero(x):
    return (x == 0).all().item() if isinstance(x, Tensor) else x == 0


@with_out("linalg_pinv")
def pinv(A: Tensor, *, atol: float | Tensor | None = None, rtol: float | Tensor | None = None,
         hermitian: bool = False) -> Tensor:
    """torch.linalg.pinv through the SVD: V diag(1/s for s > tol, else 0) U^T, tol =
    max(atol, rtol * s_max).  hermitian=True: through eigh, which reads only the lower
    triangle (as PyTorch's does): V diag(1/l for |l| > tol, else 0) V^T, tol relative to
    the largest |l|.  The gradient is pinv's own formula in P and A, either way (PyTorch's)."""
    _matrix(A, "linalg.pinv")
    with no_grad():
        if hermitian:
            L, V = eigh(A)
            absL = L.abs()
            largest = absL.amax(-1, keepdim=True) if absL.shape[-1] else absL
            thr = _tolerance(largest, A, atol, rtol, "linalg.pinv")
            keep = absL > thr
            inv_l = _where(keep, 1 / _where(keep, L, L.new_ones(())), L.new_zeros(()))
            P = (V * inv_l.unsqueeze(-2)) @ V.mT
        else:
            U, S, Vh = _svd(A, False, True, "linalg.pinv")
            thr = _tolerance(S, A, atol, rtol, "linalg.pinv")
            keep = S > thr
            inv_s = _where(keep, 1 / _where(keep, S, S.new_ones(())), S.new_zeros(()))
            P = (Vh.mT * inv_s.unsqueeze(-2)) @ U.mT
    if needs_grad(A):
        _G.record_pinv(A, P)
    return P


@_register("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


@with_out("linalg_matrix_rank")
def matrix_rank(A: Tensor, tol: float | Tensor | None = None, *, atol: float | Tensor | None = None,
                rtol: float | Tensor | None = None, hermitian: bool = False) -> Tensor:
    """torch.linalg.matrix_rank: the number of singular values above max(atol, rtol * s_max)
    (int64)."""
    _matrix(A, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    with no_grad():
        S = _svd(A, False, False, "linalg.matrix_rank")[1]
        return (S > _tolerance(S, A, atol, rtol, "linalg.matrix_rank")).sum(-1)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """torch.linalg.lstsq: the least-squares (minimum-norm) solution of A X = B through the
    pseudo-inverse, in torch's named tuple.  As on torch's CPU: rank is returned except for
    driver 'gels', singular_values only for 'gelsd'/'gelss', residuals (squared column norms of
    A X - B) when m > n and every A has full rank (and driver is not 'gelsy')."""
    op = "torch.linalg.lstsq"
    _matrix(A, "linalg.lstsq")
    tensor_arg(B, op, "B")
    _same_dtype(A, B, "torch.linalg.lstsq")
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vec = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vec else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2], A.shape[-1]
    rt = D.finfo(A.dtype).eps * max(m, n) if rcond is None or rcond < 0 else rcond
    X = pinv(A, rtol=rt) @ Bm
    with no_grad():
        S = svdvals(A)
        rank = (S > S[..., :1] * rt).sum(-1) if S.shape[-1] else S.sum(-1).long()
    from .creation import empty
    res = X.reshape(-1)[:0]       # empty; part of the graph like torch's (requires grad with X)
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        res = ((A @ X - Bm) ** 2).sum(-2)          # (..., k), (..., 1) for a vector B, as torch
    sv = S if driver in ("gelsd", "gelss") else empty((0,), dtype=A.dtype, device=A.device)
    if driver == "gels":
        rank = empty((0,), dtype=rank.dtype, device=rank.device)
    return _Lstsq(X.squeeze(-1) if vec else X, res, rank, sv)


# ---- powers and the exponential ---------------------------------------------------------------
@_register("matrix_power")
@with_out("linalg_matrix_power")
def matrix_power(A: Tensor, n: int) -> Tensor:
    """torch.linalg.matrix_power: A^n by repeated squaring (n < 0: the inverse's power)."""
    op = "linalg.matrix_power"
    tensor_arg(A, op, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not isinstance(n, numbers.Integral) or isinstance(n, builtins.bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    n = builtins.int(n)                      # (a NumPy integer too, as PyTorch takes it)
    if n == 0:      # the identity, in the graph (zero gradient) as PyTorch's is
        return A.clone().copy_(_eye_like(A).expand(tuple(A.shape)))
    if n == 1:
        return A.clone()
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:          # binary powering: result *= base for each set bit
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


# Pade(13) coefficients and the largest 1-norm it serves to double precision (Higham 2005)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(A):
    """exp(A) by scaling and squaring with the [13/13] Pade approximant (one scale for the
    whole batch: the largest any matrix needs)."""
    # (a meta matrix has no norm: any scale gives the result's shape)
    norm1 = A.abs().sum(-2).amax(-1).amax().item() if A.numel() and not A.is_meta else 0.0
    s = max(0, math.ceil(math.log2(norm1 / _THETA13))) if norm1 > _THETA13 else 0
    X = A / (2.0 ** s)
    b = _PADE13
    I = _eye_like(A).expand(tuple(A.shape))
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
             + b[1] * I)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * I
    R = _solve_raw(V - U, V + U, "linalg.matrix_exp", False)[0]
    for _ in range(s):
        R = R @ R
    return R


@_register("matrix_exp")
def matrix_exp(A: Tensor) -> Tensor:
    """torch.linalg.matrix_exp: the matrix exponential (scaling and squaring, Pade 13)."""
    op = "linalg.matrix_exp"
    _matrix(A, op, square=True)
    with no_grad():
        E = _expm(A.double() if A.dtype != D.float64 else A).to(A.dtype)
    if needs_grad(A):
        _G.record_matrix_exp(A, E)
    return E


# ---- Householder reflectors -------------------------------------------------------------------
@_register("orgqr")
@with_out("householder_product")
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first n columns of H_1 H_2 ... H_k, where
    H_i = I - tau_i v_i v_i^H and v_i is column i of A below the diagonal with a 1 on it (the
    reflectors geqrf returns).  A (*, m, n) with m >= n, tau (*, k) with k <= n.  Written with
    recorded ops, so gradients flow to A and tau."""
    op = "linalg.householder_product"
    if not isinstance(A, Tensor) or not isinstance(tau, Tensor):
        raise TypeError(f"{op}(): expected tensors for input and tau")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1] if tau.ndim else 0
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if k > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: tau of shape {tuple(tau.shape)} does not match the batch of "
                           f"input {tuple(A.shape)}")
    from .creation import eye
    Q = eye(m, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], m, m)
    below = A.tril(-1) + eye(m, n, dtype=A.dtype, device=A.device)     # the v_i, 1 on the diagonal
    for i in range(k - 1, -1, -1):            # Q = H_1 (H_2 (... (H_k I)))
        v = below[..., :, i:i + 1]
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mT @ Q)
    r = Q[..., :, :n]
    if k == 0 and (A.requires_grad or tau.requires_grad):
        # no reflector: the identity, still in the graph (zero gradients), as in PyTorch
        r = r + A.clone().zero_() + tau.sum(-1).reshape(*tau.shape[:-1], 1, 1) * 0
    return r


@_register("geqrf")
@with_out("geqrf")
def geqrf(input: Tensor) -> tuple[Tensor, Tensor]:
    """torch.geqrf: QR as LAPACK's geqrf gives it: (a, tau), R on and above a's diagonal and the
    Householder reflectors below it (see householder_product).  LAPACK itself computes it
    (NumPy's qr(mode='raw')); like PyTorch's, it has no gradient."""
    import numpy as np
    tensor_arg(input, "geqrf", "input")
    if input.ndim < 2:
        raise RuntimeError("geqrf: input must have at least 2 dimensions.")
    if not input.is_floating_point():
        raise RuntimeError(f"geqrf: expected a floating point tensor, got {input.dtype}")
    x = input.detach().cpu().numpy()
    batch = x.shape[:-2]
    m, n = x.shape[-2:]
    count = int(np.prod(batch, dtype=np.int64))
    flat = x.reshape(count, m, n).astype(np.float64)
    a = np.empty_like(flat)
    tau = np.empty((flat.shape[0], min(m, n)))
    for b in range(flat.shape[0]):
        if m == 0 or n == 0:            # nothing to factor (LAPACK is not called)
            a[b], tau[b] = flat[b], 0.0
            continue
        h, t = np.linalg.qr(flat[b], mode="raw")
        a[b], tau[b] = h.T, t
    from .creation import tensor
    ra = tensor(a.reshape(*batch, m, n), dtype=input.dtype, device=input.device)
    rt = tensor(tau.reshape(*batch, min(m, n)), dtype=input.dtype, device=input.device)
    if needs_grad(input):           # in the graph, refusing to backpropagate (PyTorch's geqrf)
        record_not_differentiable("geqrf", (input,), (ra, rt))
    return _rt.geqrf(ra, rt)


orgqr = householder_product


@_register("ormqr")
@with_out("ormqr")
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """torch.ormqr: other multiplied by the full m x m orthogonal Q of geqrf's reflectors
    (input's columns below the diagonal, tau): Q @ other (left), other @ Q (not left), with
    Q^H in place of Q when transpose.  Q is householder_product of the reflectors completed
    with zero columns and zero taus (identity reflectors), so it is differentiable."""
    op = "ormqr"
    tensor_arg(input, op, "input")
    tensor_arg(tau, op, "tau")
    tensor_arg(other, op, "other")
    if input.ndim < 2 or other.ndim < 2:
        raise RuntimeError(f"{op}: input and other must have at least 2 dimensions, got "
                           f"{input.ndim} and {other.ndim}")
    m, k = input.shape[-2], tau.shape[-1]
    if k > min(m, input.shape[-1]):
        raise RuntimeError(f"{op}: tau.shape[-1] must be less than or equal to "
                           f"min(input.shape[-2], input.shape[-1]), got {k}")
    if (other.shape[-2] if left else other.shape[-1]) != m:
        raise RuntimeError(f"{op}: other of shape {tuple(other.shape)} cannot be multiplied by "
                           f"Q of shape ({m}, {m}) from the {'left' if left else 'right'}")
    from .creation import zeros
    from .joining import cat
    lead = tuple(input.shape[:-2])
    A = input[..., :, :k]
    if k < m:
        A = cat([A, zeros(lead + (m, m - k), dtype=input.dtype, device=input.device)], -1)
        tau = cat([tau, zeros(tuple(tau.shape[:-1]) + (m - k,), dtype=tau.dtype,
                              device=tau.device)], -1)
    Q = householder_product(A, tau)
    if transpose:
        Q = Q.mH
    return Q @ other if left else other @ Q




# ---- compositions: unpacking, the older solver names, tensor inverses ------------------------------
_LuUnpack = _tuple_type("lu_unpack", ("P", "L", "U"))
_TriangularSolve = _tuple_type("triangular_solve", ("solution", "cloned_coefficient"))
_LuLegacy = _tuple_type("lu", ("LU", "pivots"))


@_register("lu_unpack")
@with_out("lu_unpack")
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """torch.lu_unpack: (P, L, U) from lu_factor's (LU, pivots), A = P L U; L and U are
    differentiable in LU_data.  unpack_data=False / unpack_pivots=False leave L, U / P empty."""
    from .creation import empty
    op = "lu_unpack"
    _matrix(LU_data, op)
    tensor_arg(LU_pivots, op, "LU_pivots")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(f"{op}: Expected LU_pivots.shape == LU_data.shape[:-2] + (min(m, n),) "
                           f"= {list(LU_data.shape[:-2]) + [k]}, got {list(LU_pivots.shape)}")
    nothing = empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L = LU_data[..., :, :k].tril(-1) + _eye_like(LU_data, m)[:, :k] if unpack_data else nothing
    U = LU_data[..., :k, :].triu() if unpack_data else nothing
    P = _permutation(LU_pivots, m, LU_data.dtype) if unpack_pivots else nothing
    return _LuUnpack(P, L, U)


@with_out("lu")
def lu_legacy(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:
    """torch.lu / torch.functional.lu: (LU, pivots), or (LU, pivots, infos) with get_infos,
    i.e. linalg.lu_factor_ex; a singular matrix raises unless get_infos."""
    LU, pivots, infos = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (LU, pivots, infos) if get_infos else _LuLegacy(LU, pivots)


def lu_solve_legacy(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out: Tensor | None = None) -> Tensor:
    """torch.lu_solve(b, LU_data, LU_pivots): linalg.lu_solve with the older argument order."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


@_register("lu")
def _lu_method(self: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:
    """Tensor.lu: torch.lu on self."""
    return lu_legacy(self, pivot, get_infos)


@_register("lu_solve")
def _lu_solve_method(self: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Tensor.lu_solve(LU_data, LU_pivots): solves A X = self from A's LU factorisation."""
    return lu_solve_legacy(self, LU_data, LU_pivots)


@_register("triangular_solve")
@with_out("triangular_solve")
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> tuple[Tensor, Tensor]:
    """torch.triangular_solve: (X, A.clone()) with A X = b (transpose: A^T X = b) for a
    triangular A (upper or lower), by linalg.solve_triangular."""
    tensor_arg(b, "triangular_solve", "b")
    tensor_arg(A, "triangular_solve", "A")
    coef = A.mT if transpose else A
    X = solve_triangular(coef, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TriangularSolve(X, A.clone())


@_register("cholesky_inverse")
@with_out("cholesky_inverse")
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_inverse: the inverse of A = L L^T (upper: U^T U) from its Cholesky
    factor, through cholesky_solve of the identity (differentiable)."""
    _matrix(L, "cholesky_inverse", square=True)
    eye = _eye_like(L).expand(L.shape)
    return cholesky_solve(eye, L, upper)


@with_out("linalg.tensorinv")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """torch.linalg.tensorinv: the tensor X with tensordot(X, A, ind) the identity: A seen as a
    (prod(shape[:ind]), prod(shape[ind:])) square matrix, inverted, shaped shape[ind:] +
    shape[:ind]."""
    tensor_arg(A, "linalg.tensorinv", "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{cols} != {rows}")
    X = inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))
    return X


@with_out("linalg.tensorsolve")
def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B (dims of A moved to the
    end first), as one linear solve of A seen as a square matrix."""
    tensor_arg(A, "linalg.tensorsolve", "A")
    tensor_arg(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        rest = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(rest + dims)
    x_shape = tuple(A.shape[B.ndim:])
    rows, cols = B.numel(), math.prod(x_shape)
    if math.prod(A.shape[:B.ndim]) != rows or rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    X = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)
    return X


# ---- LDL^T (Bunch-Kaufman): linalg.ldl_factor(_ex), ldl_solve ----------------------------------
# LAPACK's sytf2/sytrs for the lower triangle, in NumPy on each matrix of the batch: A = P L D
# L^T P^T with D of 1x1 and 2x2 blocks, in LAPACK's compact form (LD: L below the diagonal,
# D on it and, for a 2x2 block, at (k+1, k); pivots 1-based, negative for the two rows of a
# 2x2 block), so PyTorch's LD and pivots read the same here.  Neither op is differentiable, as
# in PyTorch.
_LDL_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0       # Bunch-Kaufman's growth bound


_LdlFactor = _tuple_type("linalg_ldl_factor", ("LD", "pivots"))
_LdlFactorEx = _tuple_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))


def _sytf2_lower(a):
    """Factor the symmetric matrix whose lower triangle a holds, in place; (pivots, info)."""
    import numpy as np
    n = a.shape[0]
    ipiv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or absakk != absakk:      # a zero (or NaN) pivot column
            info = info or k + 1
            kp = k
        else:
            if absakk >= _LDL_ALPHA * colmax:
                kp = k                                           # 1x1, no interchange
            else:
                jmax = k + int(np.argmax(np.abs(a[imax, k:imax])))
                rowmax = abs(a[imax, jmax])
                if imax < n - 1:
                    rowmax = max(rowmax, float(np.abs(a[imax + 1:, imax]).max()))
                if absakk >= _LDL_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _LDL_ALPHA * rowmax:
                    kp = imax                                    # 1x1, rows k and imax swapped
                else:
                    kp, kstep = imax, 2                          # 2x2 block of rows k, imax
            kk = k + kstep - 1
            if kp != kk:                    # swap rows and columns kk and kp of the trailing part
                if kp < n - 1:
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = seg
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.outer(x, x * d11)
                    a[k + 1:, k] = x * d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                d21 = (1.0 / (d11 * d22 - 1.0)) / d21
                ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * ck - ck1)
                wkp1 = d21 * (d22 * ck1 - ck)
                a[k + 2:, k + 2:] -= np.outer(ck, wk) + np.outer(ck1, wkp1)
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return ipiv, info


def _sytrs_lower(a, ipiv, b):
    """Solve A X = B (b, in place) from _sytf2_lower's a and pivots."""
    n = a.shape[0]
    k = 0
    while k < n:                                      # L D Y = P^T B, forward
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            if k < n - 1:
                b[k + 1:] -= a[k + 1:, k:k + 1] * b[k:k + 1]
            b[k] /= a[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            if kp != k + 1:
                b[[k + 1, kp]] = b[[kp, k + 1]]
            if k < n - 2:
                b[k + 2:] -= a[k + 2:, k:k + 1] * b[k:k + 1]
                b[k + 2:] -= a[k + 2:, k + 1:k + 2] * b[k + 1:k + 2]
            akm1k = a[k + 1, k]
            akm1, ak = a[k, k] / akm1k, a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:                                     # L^T P^T X = Y, backward
        if ipiv[k] > 0:
            if k < n - 1:
                b[k] -= a[k + 1:, k] @ b[k + 1:]
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            if k < n - 1:
                b[k] -= a[k + 1:, k] @ b[k + 1:]
                b[k - 1] -= a[k + 1:, k - 1] @ b[k + 1:]
            kp = -ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def _real_matrix(A, op):
    _matrix(A, op, square=True)
    if A.is_complex():
        raise RuntimeError(f"{op}: complex inputs are not supported yet (torchlite factors "
                           f"real symmetric matrices)")


@with_out("linalg_ldl_factor_ex")
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.ldl_factor_ex: (LD, pivots, info) of the symmetric matrix whose lower
    triangle A holds (Bunch-Kaufman pivoting, LAPACK's compact form); info > 0 names the
    first exactly-zero block of D (the factorization is still complete).  hermitian only
    matters for complex inputs, which torchlite does not factor yet."""
    import numpy as np
    op = "linalg.ldl_factor_ex"
    _real_matrix(A, op)
    if A.is_meta:                   # shapes and dtypes only, as PyTorch's meta kernel
        from .creation import empty
        LD = A.detach().tril().contiguous()
        batch = tuple(A.shape[:-2])
        return _LdlFactorEx(LD, empty(batch + (A.shape[-1],), dtype=D.int32, device=A.device),
                            empty(batch, dtype=D.int32, device=A.device))
    x = A.detach().cpu().numpy()
    batch, n = x.shape[:-2], x.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))
    flat = np.tril(x.reshape((count, n, n))).copy()
    piv = np.empty((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for b in range(flat.shape[0]):
        piv[b], info[b] = _sytf2_lower(flat[b])
    from .creation import tensor
    LD = tensor(np.tril(flat).reshape(x.shape), dtype=A.dtype, device=A.device)
    pivots = tensor(piv.reshape(batch + (n,)), dtype=D.int32, device=A.device)
    infos = tensor(info.reshape(batch), dtype=D.int32, device=A.device)
    if check_errors and info.any():
        _raise_info(infos, "linalg.ldl_factor", lambda v: (
            f"The factorization could not be completed because the input is not invertible: "
            f"the block of D at ({v}, {v}) is exactly zero."))
    if needs_grad(A):
        record_not_differentiable("linalg.ldl_factor_ex", (A,), (LD,))
    return _LdlFactorEx(LD, pivots, infos)


@with_out("linalg_ldl_factor")
def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple[Tensor, Tensor]:
    """torch.linalg.ldl_factor: ldl_factor_ex's (LD, pivots), raising LinAlgError when D has
    an exactly-zero block (a singular A)."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _LdlFactor(LD, pivots)


@with_out("linalg_ldl_solve")
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """torch.linalg.ldl_solve: X with A X = B from ldl_factor's (LD, pivots); the batch dims
    of LD (and pivots) and B broadcast."""
    import numpy as np
    op = "torch.linalg.ldl_solve"
    _real_matrix(LD, op)
    tensor_arg(pivots, op, "pivots")
    tensor_arg(B, op, "B")
    n = LD.shape[-1]
    if pivots.dtype is not D.int32:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {pivots.dtype}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {tuple(pivots.shape)} instead")
    if B.ndim < 2 or B.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {'x'.join(map(str, B.shape[-2:]))})")
    _same_dtype(LD, B, op)
    batch = tuple(_broadcast_shapes(LD.shape[:-2], B.shape[:-2]))
    if LD.is_meta or B.is_meta:
        from .creation import empty
        return empty(batch + tuple(B.shape[-2:]), dtype=B.dtype, device="meta")
    count = int(np.prod(batch, dtype=np.int64))
    a = np.broadcast_to(LD.detach().cpu().numpy(), batch + (n, n)).reshape((count, n, n))
    p = np.broadcast_to(pivots.cpu().numpy(), batch + (n,)).reshape((count, n))
    if ((p == 0) | (np.abs(p) > n)).any():
        raise RuntimeError(f"{op}: pivots must be LAPACK's, in [-{n}, -1] or [1, {n}]")
    k = B.shape[-1]
    b = np.broadcast_to(B.detach().cpu().numpy(), batch + (n, k)).reshape((count, n, k)).copy()
    for i in range(b.shape[0]):
        _sytrs_lower(a[i], p[i], b[i])
    from .creation import tensor
    X = tensor(b.reshape(batch + (n, k)), dtype=B.dtype, device=B.device)
    if needs_grad(LD, B):
        record_not_differentiable("linalg.ldl_solve", (LD, B), (X,))
    return X
