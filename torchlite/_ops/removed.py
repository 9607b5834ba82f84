"""Functions PyTorch removed in 1.9 and keeps only to say what replaces them: calling one
raises RuntimeError naming the torch.linalg function to use (as PyTorch's do), instead of an
AttributeError that says nothing."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["eig", "lstsq", "matrix_rank", "solve", "symeig"]

_REMOVED = "This function was deprecated since version 1.9 and is now removed."


def _removed(name, advice):
    def fn(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(f"{_REMOVED} {advice}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Removed from PyTorch in 1.9: {advice}"
    return fn


eig = _removed("eig", "Use torch.linalg.eig (eigenvalues and eigenvectors as complex tensors) "
                      "or torch.linalg.eigvals; torch.eig returned real tensors that mimicked "
                      "complex ones.")
lstsq = _removed("lstsq", "Use torch.linalg.lstsq(A, B): its arguments are in the other order, "
                          "and it returns the solution (and residuals, rank, singular values) "
                          "instead of a QR factorisation.")
matrix_rank = _removed("matrix_rank", "Use torch.linalg.matrix_rank; its 'symmetric' "
                                      "parameter is called 'hermitian' there.")
solve = _removed("solve", "Use torch.linalg.solve(A, B): its arguments are in the other order, "
                          "and it does not return the LU factorisation (torch.linalg.lu_factor "
                          "does).")
symeig = _removed("symeig", "Use torch.linalg.eigh (values and vectors) or "
                            "torch.linalg.eigvalsh; they read the lower triangle by default "
                            "(UPLO='L') where torch.symeig read the upper one.")
