"""Ready-made parametrizations (PyTorch's torch.nn.utils.parametrizations): weight_norm,
spectral_norm and orthogonal."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    """weight = g * v / ||v|| (the norm over every dim but `dim`; over the whole tensor for
    dim=None, stored as -1 as PyTorch does)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        with no_grad():
            weight_g = norm_except_dim(weight, 2, self.dim)
        return weight_g, weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """module.<name> as g * v / ||v||, with original0 = g (the norms) and original1 = v (the
    direction), as PyTorch's (its state_dict keys: parametrizations.weight.original0/1).
    State dicts of the old hook form (torch.nn.utils.weight_norm: keys weight_g, weight_v)
    load too, as in PyTorch."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _load_old_form(state_dict, prefix, local_metadata, strict, missing_keys,
                       unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    module._register_load_state_dict_pre_hook(_load_old_form)
    return module


class _SpectralNorm(Module):
    """weight / sigma(weight), sigma the largest singular value of the weight as a matrix (dim
    first, the rest flattened), estimated by power iteration: the vectors u and v are buffers,
    refined n_power_iterations times per forward in training (15 times at creation) and used
    as they are in eval, as PyTorch's."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        from ... import randn
        from ..functional import normalize
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        ndim = weight.ndim
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)
            h, w = mat.shape
            u = normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.flatten(1)

    def _power_method(self, mat, n):
        from ..functional import normalize
        with no_grad():
            for _ in range(n):
                self._u.copy_(normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        from ..functional import normalize
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """module.<name> divided by its spectral norm (PyTorch's parametrizations.spectral_norm):
    dim defaults to 1 for transposed convolutions, 0 otherwise; state_dict keys
    parametrizations.weight.original and parametrizations.weight.0._u / ._v."""
    weight = getattr(module, name, None)
    from ..parameter import Parameter
    if not isinstance(weight, Parameter):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d
        transposed = (ConvTranspose1d, ConvTranspose2d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q):
    from ... import eye, allclose, finfo
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * finfo(Q.dtype).eps
    return allclose(Q.mT @ Q, eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


def _make_orthogonal(A):
    """The Q of A's QR with R's diagonal made positive (unique, and continuous in A)."""
    from ... import linalg
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """A matrix (or batch) with orthonormal columns (or rows, when wide) from an unconstrained
    original: through the matrix exponential or the Cayley map of a skew-symmetric matrix made
    from its lower triangle, or the product of Householder reflectors stored below its
    diagonal.  With use_trivialization, the result is base @ Q(original), base a buffer holding
    the last assigned value, so assigning stays exact and the original restarts at zero."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ... import cat, eye, linalg
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(*X.shape[:-2], n, n - k)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id - A * 0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if self._buffers.get("base") is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        from ... import cat, geqrf, randn, zeros_like
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {tuple(self.shape)}. "
                             f"Got a tensor of shape {tuple(Q.shape)}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        with no_grad():
            if "base" not in self._buffers:
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = geqrf(Q)
                # the reflector signs so that the product gives back Q (geqrf's R can have a
                # negative diagonal); then 1 on the diagonal as householder_product reads it
                A.diagonal(dim1=-2, dim2=-1).copy_(A.diagonal(dim1=-2, dim2=-1).sign())
                A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_id = zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """module.<name> constrained to orthonormal columns (rows, for a wide matrix), PyTorch's
    parametrizations.orthogonal: orthogonal_map 'matrix_exp' (the default for square
    matrices), 'cayley', or 'householder' (the default otherwise); assigning an orthogonal
    matrix to module.<name> sets it exactly."""
    weight = getattr(module, name, None)
    from ..parameter import Parameter
    from ..._tensor import Tensor
    if not isinstance(weight, (Tensor, Parameter)):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} "
                         f"dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
