"""torchlite.utils: utilities (torch.utils): data loading in torchlite.utils.data, activation
checkpointing in torchlite.utils.checkpoint, TensorBoard logging in torchlite.utils.tensorboard,
timing in torchlite.utils.benchmark, and PyTorch's names hooks.RemovableHandle,
model_zoo.load_url and dlpack.from_dlpack/to_dlpack,
each imported on first use (data brings NumPy in, which `import torchlite` does not need);
swap_tensors."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["data", "checkpoint", "tensorboard", "benchmark", "hooks", "model_zoo", "dlpack", "_pytree",
           "swap_tensors"]


def _slot_names(cls):
    names = []
    for c in cls.__mro__:
        slots = c.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in names if n not in ("__weakref__", "__dict__")]


def swap_tensors(t1: Tensor, t2: Tensor) -> None:
    """Swap the contents of two tensors in place (PyTorch's torch.utils.swap_tensors): after
    it, the object t1 has t2's data, metadata, autograd state, attributes and type, and t2
    has t1's, while every reference to either object stays valid -- how
    `Module.load_state_dict(assign=True)`-style code replaces a parameter that an optimizer
    already holds.  Raises RuntimeError when either tensor is weakly referenced or when the
    two types have different slots (their layouts cannot be exchanged)."""
    from .._tensor import Tensor
    if not isinstance(t1, Tensor) or not isinstance(t2, Tensor):
        raise TypeError(f"swap_tensors: expected two Tensors, got {type(t1).__name__} and "
                        f"{type(t2).__name__}")
    for name, t in (("t1", t1), ("t2", t2)):
        if weakref.getweakrefcount(t) > 0:
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    if t1 is t2:
        return
    slots1, slots2 = _slot_names(type(t1)), _slot_names(type(t2))
    if sorted(slots1) != sorted(slots2):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    if hasattr(t1, "__dict__") != hasattr(t2, "__dict__"):
        raise RuntimeError(f"Cannot swap t1 and t2: torchlite cannot exchange the types "
                           f"{type(t1).__name__} and {type(t2).__name__} (only one has an "
                           f"instance __dict__; a plain Tensor has none): wrap the tensor in "
                           f"nn.Parameter first")
    missing = object()
    values1 = {n: getattr(t1, n, missing) for n in slots1}
    values2 = {n: getattr(t2, n, missing) for n in slots2}
    cls1, cls2 = type(t1), type(t2)
    if cls1 is not cls2:
        t1.__class__, t2.__class__ = cls2, cls1
    for target, values in ((t1, values2), (t2, values1)):
        for n, v in values.items():
            if v is missing:
                if hasattr(target, n):
                    delattr(target, n)
            else:
                setattr(target, n, v)
    if hasattr(t1, "__dict__"):
        d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
        t1.__dict__.clear()
        t1.__dict__.update(d2)
        t2.__dict__.clear()
        t2.__dict__.update(d1)


def __getattr__(name):
    if name in __all__ and name != "swap_tensors":           # (and _pytree, PyTorch's name for its tree utilities)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'torchlite.utils' has no attribute '{name}'")
