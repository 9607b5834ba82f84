"""Weight normalization in its old hook form (PyTorch's torch.nn.utils.weight_norm), and the
two tensor functions both forms compute with (torch.norm_except_dim, torch._weight_norm).

weight_norm(module) replaces the Parameter `weight` by two Parameters, `weight_g` (the norm of
each slice along dim) and `weight_v` (the direction), and makes `module.weight` a plain
attribute holding g * v / ||v||, recomputed by a forward pre-hook before every forward: the
state dict keys are PyTorch's (`weight_g`, `weight_v`).  PyTorch deprecates this form for
torch.nn.utils.parametrizations.weight_norm (keys parametrizations.weight.original0/1), which
loads the old form's state dicts too; both give the same weight."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..parameter import Parameter

if TYPE_CHECKING:
    from typing import Any

    from ..._tensor import Tensor
    from ..modules.module import Module

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of v over every dim but `dim`, shaped to broadcast against v (v's size
    at dim, 1 elsewhere); dim=-1 means the norm of the whole tensor (a 0-d tensor), as in
    PyTorch (not the last dim)."""
    if dim == -1 or v.ndim == 0:
        return v.norm(pow)
    d = dim % v.ndim
    others = [i for i in range(v.ndim) if i != d]
    if not others:                      # a vector: each entry is its own slice
        return v.abs()
    return v.norm(pow, others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """v * (g / ||v||), the norm over every dim but dim (the whole tensor for dim=-1)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of weight_norm: module.<name> = _weight_norm(<name>_v, <name>_g,
    dim)."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim)
                                                         .detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize module.<name> as g * v / ||v|| with the Parameters <name>_g and
    <name>_v (see the module docstring); dim: the dim whose slices get one g each (None: one
    g for the whole tensor).  Returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo weight_norm: module.<name> becomes one Parameter holding g * v / ||v||.
    ValueError when module.<name> has no weight_norm."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
