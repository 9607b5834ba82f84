"""nn.Parameter and nn.Buffer: the Tensor kinds a Module registers when they are assigned as
its attributes.

A Parameter is a leaf Tensor (requires_grad=True by default) that shares its data with the
tensor it was made from.  Ops on it return plain Tensors (every op builds its result with
``_tensor._wrap``), as in PyTorch."""
from .._tensor import Tensor

__all__ = ["Parameter", "Buffer"]


def _empty():
    from .._ops.creation import empty
    return empty(0)


def _alias(cls, data, requires_grad):
    """A new `cls` instance over data's memory (and version counter), a leaf outside any
    graph, with the given requires_grad flag."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): argument 'data' must be Tensor, not "
                        f"{type(data).__name__}")
    if requires_grad and not data.is_floating_point():
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t = object.__new__(cls)
    t._data = data._data
    t._requires_grad = bool(requires_grad)
    t._grad = None
    t.grad_fn = None
    t._base = None
    return t


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter when it is assigned as an attribute.

    Parameter(data=None, requires_grad=True): shares data's memory; requires_grad is set
    even under no_grad (as in PyTorch)."""

    def __new__(cls, data=None, requires_grad=True):
        return _alias(cls, _empty() if data is None else data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        # the gradient is not copied (PyTorch's Parameter.__deepcopy__ drops it too)
        found = memo.get(id(self))
        if found is not None:
            return found
        result = type(self)(self.detach().clone(), self._requires_grad)
        state = getattr(self, "__dict__", None)
        if state:
            import copy
            result.__dict__.update(copy.deepcopy(state, memo))
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        # the data pickles as a plain Tensor; extra attributes set on the parameter travel too
        return (_rebuild_parameter, (type(self), self.detach(), self._requires_grad,
                                     dict(getattr(self, "__dict__", {}))))


def _rebuild_parameter(cls, data, requires_grad, state):
    p = cls(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


class Buffer(Tensor):
    """A Tensor that a Module registers as a buffer when it is assigned as an attribute.

    Buffer(data=None, *, persistent=True): shares data's memory; a non-persistent buffer is
    left out of the module's state_dict."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _empty()
        b = _alias(cls, data, False)
        b._requires_grad = data._requires_grad     # detached, so a leaf either way
        b.persistent = persistent
        return b

    def __reduce_ex__(self, proto):
        return (_rebuild_buffer, (self.detach(), self.persistent))


def _rebuild_buffer(data, persistent):
    return Buffer(data, persistent=persistent)
