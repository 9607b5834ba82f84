"""Pruning (PyTorch's torch.nn.utils.prune): zero out entries or whole slices of a module's
parameter through a mask, keeping the original values.

PyTorch's mechanism, so that state dicts and scripts carry over: pruning `weight` moves the
Parameter to `weight_orig`, registers the mask as the buffer `weight_mask`, and makes
`module.weight` a plain attribute holding `weight_orig * weight_mask`, recomputed before every
forward by a forward pre-hook (the pruning method object itself).  The state dict therefore
holds `weight_orig` and `weight_mask` (PyTorch's keys).  Pruning the same parameter again
combines the masks: the new method only looks at the entries (unstructured) or slices
(structured) that are still alive, and the methods are kept together in a PruningContainer.
`remove` makes the pruning permanent: `weight` becomes a Parameter again holding the masked
values.

A custom method subclasses BasePruningMethod, sets PRUNING_TYPE ("unstructured",
"structured" with a `dim` attribute, or "global") and implements compute_mask(t,
default_mask)."""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from ..._ops.creation import ones_like, zeros_like
from ..._ops.random import rand, rand_like
from ..._ops.linalg import norm
from ..._ops.sorting import kthvalue, topk
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .convert_parameters import parameters_to_vector

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from ..modules.module import Module

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _contiguous_copy(t):
    """A contiguous copy of t (so that .view(-1) on it is always possible)."""
    c = t.contiguous()
    return c.clone() if c is t else c


class BasePruningMethod(ABC):
    """The base of every pruning method; an instance is also the forward pre-hook that
    recomputes module.<name> = <name>_orig * <name>_mask."""

    _tensor_name = None

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for tensor t (same shape), given the mask of earlier pruning
        (default_mask): entries already pruned must stay pruned."""

    def apply_mask(self, module: Module) -> Tensor:
        """<name>_orig * <name>_mask: the pruned tensor."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None,
              **kwargs) -> BasePruningMethod:
        """Prune module.<name> with cls(*args, **kwargs), reparametrizing it on first use and
        combining with earlier pruning otherwise; returns the method (a PruningContainer when
        the tensor was pruned before)."""
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {importance_scores.shape} vs "
                                 f"{orig.shape}")
        method, old = _method_for(cls, module, name, args, kwargs)
        first_time = old is None
        if first_time:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = _contiguous_copy(getattr(module, name + "_mask").detach())
        try:
            scores = importance_scores if importance_scores is not None else orig
            with no_grad():
                mask = method.compute_mask(scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_time:          # put the Parameter back as it was
                orig = module._parameters.pop(name + "_orig")
                module.__dict__.pop(name, None)
                module.register_parameter(name, orig)
            else:                   # keep the earlier pruning, without the failed method
                if old is method:
                    old._pruning_methods = old._pruning_methods[:-1]
                module.register_forward_pre_hook(old)
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """t with this method's mask applied (a new tensor; no module involved)."""
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError("importance_scores should have the same shape as tensor t")
        scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        with no_grad():
            mask = self.compute_mask(scores, default_mask=default_mask)
        return t * mask

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: module.<name> becomes a Parameter holding the masked
        values; <name>_orig and <name>_mask go away."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 f"removed")
        with no_grad():
            weight = self.apply_mask(module)
        module.__dict__.pop(self._tensor_name, None)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _method_for(cls, module, name, args, kwargs):
    """(method, the earlier hook or None): a new cls(*args, **kwargs) for module.<name>,
    merged with the pruning hook already on that tensor (which is taken off the module: the
    returned method is registered anew)."""
    method = cls(*args, **kwargs)           # first: bad arguments leave the module as it is
    method._tensor_name = name
    old, old_keys = None, []
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            old_keys.append(key)
    if len(old_keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    for key in old_keys:
        del module._forward_pre_hooks[key]
    if old is None:
        return method, None
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old, old
    container = PruningContainer(old)
    container.add_pruning_method(method)
    return container, old


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after another to one tensor; the mask of the last one
    is computed on what the earlier ones left."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """default_mask updated by the last method, computed on the part of t still alive:
        the unpruned entries (unstructured), the slices along its dim that have an unpruned
        entry (structured), or all of t (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            where = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     'the attribute `dim` defined.')
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            others = [d for d in range(n_dims) if d != dim]
            alive = default_mask.sum(dim=others) != 0 if others else default_mask != 0
            where = tuple(alive if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            where = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (useful to reparametrize a tensor for a custom
    mask later)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries (an int) or that fraction of them (a float in [0, 1]) chosen
    at random among the unpruned ones."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_amount_type(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.numel()
        n_prune = _count_to_prune(self.amount, size)
        _validate_amount(n_prune, size)
        mask = _contiguous_copy(default_mask)
        if n_prune != 0:
            scores = rand_like(t)
            idx = topk(scores.reshape(-1), k=n_prune).indices
            mask.view(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> RandomUnstructured:
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` (int) or the fraction `amount` (float) of entries with the
    smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_amount_type(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.numel()
        n_prune = _count_to_prune(self.amount, size)
        _validate_amount(n_prune, size)
        mask = _contiguous_copy(default_mask)
        if n_prune != 0:
            idx = topk(t.abs().reshape(-1), k=n_prune, largest=False).indices
            mask.view(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,
              importance_scores: Tensor | None = None) -> L1Unstructured:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` (int) or the fraction `amount` (float) of the slices along `dim`,
    chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_amount_type(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured(t)
        _check_dim(t, self.dim)
        n = t.shape[self.dim]
        n_prune = _count_to_prune(self.amount, n)
        _validate_amount(n_prune, n)
        if n_prune == 0:
            return default_mask
        scores = rand(n)
        threshold = kthvalue(scores, k=n_prune).values
        mask = _slices_mask(t, self.dim, scores > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> RandomStructured:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes `amount` (int) or the fraction `amount` (float) of the slices along `dim` with
    the smallest L`n` norm (n as torch.norm's p: an int, float, inf, -inf, 'fro' or
    'nuc')."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _validate_amount_type(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured(t)
        _check_dim(t, self.dim)
        n_slices = t.shape[self.dim]
        n_prune = _count_to_prune(self.amount, n_slices)
        _validate_amount(n_prune, n_slices)
        if n_prune == 0:
            return default_mask
        dim = self.dim % t.dim()
        norms = norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        keep = topk(norms, k=n_slices - n_prune, largest=True).indices
        mask = _slices_mask(t, dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
              importance_scores: Tensor | None = None) -> LnStructured:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0 (combined with any earlier mask)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"mask of shape {tuple(self.mask.shape)} does not match the "
                                 f"tensor's shape {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> CustomFromMask:
        return super().apply(module, name, mask=mask)


# ---- the functional forms ---------------------------------------------------------------------
def identity(module: Module, name: str) -> Module:
    """Reparametrize module.<name> with an all-ones mask (prunes nothing); returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune `amount` random entries of module.<name>; returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` entries of module.<name> with the smallest |importance score|
    (the entries themselves by default); returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune `amount` random slices of module.<name> along dim; returns module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` slices of module.<name> along dim with the smallest L`n` norm of
    their importance scores; returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune module.<name> where mask is 0; returns module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
                        importance_scores: dict[tuple[Module, str], Tensor] | None = None, **kwargs) -> None:
    """Prune the (module, name) pairs of `parameters` together, as one flat tensor, with
    pruning_method(**kwargs) (an unstructured method class such as L1Unstructured): e.g. the
    20% smallest weights over the whole network rather than per layer.  importance_scores:
    {(module, name): tensor}, the parameters themselves for pairs not in it."""
    if not hasattr(parameters, "__iter__") or isinstance(parameters, (str, Tensor)):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([
        importance_scores.get((module, name), getattr(module, name))
        for module, name in parameters])
    default_mask = parameters_to_vector([_mask_of(module, name) for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    with no_grad():
        final_mask = container.compute_mask(scores.detach(), default_mask.detach())
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[start:start + n].view_as(param))
        start += n


def remove(module: Module, name: str) -> Module:
    """Make the pruning of module.<name> permanent (see BasePruningMethod.remove); returns
    module.  ValueError when module.<name> is not pruned."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module: Module) -> bool:
    """Whether any module of the tree has a pruning hook."""
    for _, sub in module.named_modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


# ---- helpers ----------------------------------------------------------------------------------
def _mask_of(module, name):
    """The current mask of module.<name>: <name>_mask, or all ones when it is not pruned."""
    mask = getattr(module, name + "_mask", None)
    return mask if mask is not None else ones_like(getattr(module, name))


def _validate_amount_type(amount):
    """amount: a non-negative int (a count) or a float in [0, 1] (a fraction)."""
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _count_to_prune(amount, size):
    """How many of `size` units amount means (a fraction rounds half to even, as Python's
    round, which is what PyTorch uses)."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * size)


def _validate_amount(n_prune, size):
    if n_prune > size:
        raise ValueError(f"amount={n_prune} should be smaller than the number of parameters to "
                         f"prune={size}")


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {tuple(t.shape)} with {t.dim()} dims")


def _check_dim(t, dim):
    if not -t.dim() <= dim < t.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-t.dim()}, {t.dim() - 1}], but got {dim})")


def _slices_mask(t, dim, index):
    """A 0/1 mask of t's shape with ones on the slices of `dim` that index (bools or integer
    positions) selects."""
    mask = zeros_like(t)
    where = tuple(index if d == dim % t.dim() else slice(None) for d in range(t.dim()))
    mask[where] = 1
    return mask
