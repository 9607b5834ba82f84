"""Ready-made parametrizations (PyTorch's torch.nn.utils.parametrizations): weight_norm so
far (orthogonal and spectral_norm are not here yet)."""
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm"]


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
