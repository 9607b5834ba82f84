"""torchlite.special: PyTorch's torch.special, the same names, arguments and dtype rules.

    import torchlite as torch
    torch.special.i0e(x); torch.special.gammainc(a, x); torch.special.zeta(s, q)

The special functions proper (Bessel, gamma, error-function families, the orthogonal
polynomials) are kernels of torchlite/_core/special.pyx, through torchlite/_ops/special.py;
the others are the elementwise and reduction ops torchlite already has under their top-level
names (torch.special.expit is torch.sigmoid, torch.special.gammaln is torch.lgamma, ...), as in
PyTorch.  Loaded on first use of `torchlite.special`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._ops.special import (  # noqa: F401
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
    chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, digamma, entr,
    erfcx, gammainc, gammaincc, hermite_polynomial_h, hermite_polynomial_he, i0, i0e, i1, i1e,
    laguerre_polynomial_l, legendre_polynomial_p, log_ndtr, modified_bessel_i0,
    modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, ndtr, ndtri, polygamma,
    scaled_modified_bessel_k0, scaled_modified_bessel_k1, shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w, spherical_bessel_j0, xlog1py, zeta)
from ._ops.special import mvlgamma as _mvlgamma
from ._ops.elementwise import (erf, erfc, erfinv, exp2, expm1, log1p, logit, sinc,  # noqa: F401
                             xlogy, round)
from ._ops.elementwise import lgamma as gammaln, sigmoid as expit  # noqa: F401
from ._ops.reduction import logsumexp  # noqa: F401
from ._ops.reduction import softmax as _softmax, log_softmax as _log_softmax

if TYPE_CHECKING:
    from ._dtype import dtype
    from ._tensor import Tensor

psi = digamma

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]


def multigammaln(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The multivariate log-gamma function of dimension p (torch.mvlgamma)."""
    return _mvlgamma(input, p, out=out)


def softmax(input: Tensor, dim: int, *, dtype: dtype | None = None) -> Tensor:
    """exp(input) / sum(exp(input)) along dim, computed in dtype when it is given."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: dtype | None = None) -> Tensor:
    """log(softmax(input)) along dim, computed in dtype when it is given."""
    return _log_softmax(input, dim, dtype=dtype)
