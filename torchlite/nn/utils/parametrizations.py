"""Ready-made parametrizations (PyTorch's torch.nn.utils.parametrizations): weight_norm and
spectral_norm (orthogonal is not here yet)."""
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v, dim):
    if dim is None or dim == -1 and v.ndim == 0:
        return v.norm()
    d = dim % v.ndim
    dims = tuple(i for i in range(v.ndim) if i != d)
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    """weight = g * v / ||v|| (the norm over every dim but `dim`)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_g * (weight_v / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        with no_grad():
            weight_g = _norm_except_dim(weight, self.dim)
        return weight_g, weight


def weight_norm(module, name="weight", dim=0):
    """module.<name> as g * v / ||v||, with original0 = g (the norms) and original1 = v (the
    direction), as PyTorch's (its state_dict keys: parametrizations.weight.original0/1)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
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


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """module.<name> divided by its spectral norm (PyTorch's parametrizations.spectral_norm):
    dim defaults to 1 for transposed convolutions, 0 otherwise; state_dict keys
    parametrizations.weight.original and parametrizations.weight.0._u / ._v."""
    weight = getattr(module, name, None)
    from ...nn import Parameter
    if not isinstance(weight, Parameter):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d
        transposed = (ConvTranspose1d, ConvTranspose2d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
