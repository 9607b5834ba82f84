"""torch.utils.hooks: RemovableHandle, the handle a module's register_*_hook returns (its home
is torchlite/nn/modules/module.py; a tensor's register_hook returns autograd's own handle,
torchlite/autograd/graph.py), and the marking of hooks that are not meant to be saved."""
import warnings

from ..nn.modules.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark hook f as one that is not saved with its tensor, which silences
    warn_if_has_hooks for it."""
    f.__torch_unserializable__ = True
    return f


def _tensor_hooks(tensor):
    fn = tensor.grad_fn
    if fn is None:
        return list(getattr(tensor, "_hooks", None) or ())
    return list((fn._tensor_hooks or {}).get(tensor.output_nr, ()))


def warn_if_has_hooks(tensor):
    """Warn for each backward hook on `tensor` that serialization would drop (those not marked
    with unserializable_hook)."""
    for hook in _tensor_hooks(tensor):
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is "
                          f"expected, you can decorate the function with "
                          f"@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
