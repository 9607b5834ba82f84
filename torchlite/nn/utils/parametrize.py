"""Parametrizations (PyTorch's torch.nn.utils.parametrize): a module's tensor (weight, say)
computed on every access from an unconstrained original by a small Module, such as a
symmetric or normalised weight.

register_parametrization(module, "weight", P()) moves the weight to
module.parametrizations.weight.original (a Parameter, or several original0, original1, ...
when P has right_inverse returning several tensors) and makes module.weight a property that
returns P(original); the state_dict keys are PyTorch's
("parametrizations.weight.original").  Like PyTorch, the module's class is replaced by a
subclass of it holding the property, so other modules of the same class are untouched."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ..._tensor import Tensor

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "ParametrizationList", "type_before_parametrizations"]

_cache = {}
_cache_enabled = 0


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside, each parametrized tensor is computed once (and reused until the block ends)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its original(s)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        new = original
        if hasattr(first, "right_inverse"):
            try:
                with no_grad():
                    new = first.right_inverse(original)
            except NotImplementedError:     # no way back: the original is kept as it is
                new = original
        if isinstance(new, (tuple, list)):
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                self.register_parameter(f"original{i}", Parameter(t.detach().clone(),
                                                                   original.requires_grad))
        else:
            self.is_tensor = True
            self.ntensors = 1
            if new is original:
                self.register_parameter("original", original if isinstance(original, Parameter)
                                        else Parameter(original.detach(), False))
            else:
                self.register_parameter("original", Parameter(new.detach().clone(),
                                                              original.requires_grad))

    def right_inverse(self, value: Tensor | Sequence[Tensor]) -> None:
        """Set the original(s) so that the parametrized tensor becomes value."""
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, v in enumerate(value):
                    getattr(self, f"original{i}").copy_(v)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _parametrized_property(name):
    def get(self):
        plist = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)
    return property(get, set_)


def _inject_class(module):
    cls = module.__class__
    new = type(f"Parametrized{cls.__name__}", (cls,), {"_torchlite_parametrized_from": cls})
    object.__setattr__(module, "__class__", new)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """module.<tensor_name> becomes parametrization(original) on every access (see the
    module docstring); registering a second one on the same name chains it."""
    if not isinstance(parametrization, Module):
        raise TypeError("parametrization must be a torchlite.nn.Module")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            with no_grad():
                x = plist()
                y = parametrization(x)
            if tuple(y.shape) != tuple(x.shape) or y.dtype != x.dtype:
                raise ValueError(f"Registering a parametrization may not change the shape or "
                                 f"dtype of the tensor: {tuple(x.shape)} {x.dtype} -> "
                                 f"{tuple(y.shape)} {y.dtype}")
        plist.append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    if not unsafe:
        with no_grad():
            y = parametrization(original)
        if tuple(y.shape) != tuple(original.shape) or y.dtype != original.dtype:
            raise ValueError(f"Registering a parametrization may not change the shape or dtype "
                             f"of the tensor: {tuple(original.shape)} {original.dtype} -> "
                             f"{tuple(y.shape)} {y.dtype}")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    module._parameters.pop(tensor_name, None)
    module._buffers.pop(tensor_name, None)
    if not is_parametrized(module):
        _inject_class(module)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _parametrized_property(tensor_name))
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if plists is None:
        return False
    return tensor_name is None or tensor_name in plists


def type_before_parametrizations(module: Module) -> type[Module]:
    return getattr(type(module), "_torchlite_parametrized_from", type(module))


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo register_parametrization: tensor_name becomes a plain Parameter again, holding
    the parametrized value (leave_parametrized) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    with no_grad():
        if leave_parametrized:
            value = plist()
        elif plist.is_tensor:
            value = plist.original
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, Parameter(value.detach().clone()))
    if not module.parametrizations._modules:
        del module._modules["parametrizations"]
        object.__setattr__(module, "__class__", type_before_parametrizations(module))
    return module
