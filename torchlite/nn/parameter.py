"""nn.Parameter and nn.Buffer: the Tensor kinds a Module registers when they are assigned as
its attributes; UninitializedParameter and UninitializedBuffer, their shapeless placeholders in
lazy modules (nn.LazyLinear, ...) until the first forward.

A Parameter is a leaf Tensor (requires_grad=True by default) that shares its data with the
tensor it was made from.  Ops on it return plain Tensors (every op builds its result with
``_tensor._wrap``), as in PyTorch."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._tensor import Tensor
from .._ops._kit import tensor_arg

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .._device import device
    from .._dtype import dtype
    from .._size import Size

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


def _empty():
    from .._ops.creation import empty
    return empty(0)


def _alias(cls, data, requires_grad):
    """A new `cls` instance over data's memory (and version counter), a leaf outside any
    graph, with the given requires_grad flag."""
    tensor_arg(data, cls.__name__, "data")
    if requires_grad and not (data.is_floating_point() or data.is_complex()):
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

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        return _alias(cls, _empty() if data is None else data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
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

    def __reduce_ex__(self, proto: int) -> tuple[Any, ...]:
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

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            data = _empty()
        b = _alias(cls, data, False)
        b._requires_grad = data._requires_grad     # detached, so a leaf either way
        b.persistent = persistent
        return b

    def __reduce_ex__(self, proto: int) -> tuple[Any, ...]:
        return (_rebuild_buffer, (self.detach(), self.persistent))


def _rebuild_buffer(data, persistent):
    return Buffer(data, persistent=persistent)


# ---- lazy modules' placeholders ----------------------------------------------------------------
_DATA = Tensor.__dict__["_data"]          # the slot itself, below the placeholders' guard


class UninitializedTensorMixin:
    """A tensor with no shape yet.  Any op on it raises (ops reach a tensor's data through
    `_data`, which is guarded here); a Module's to()/cuda()/float()/... are kept and applied
    when `materialize` gives it a shape, which also turns it into `cls_to_become`."""

    cls_to_become = Tensor

    @property
    def _data(self) -> Any:
        raise ValueError(
            "Attempted to use an uninitialized parameter. This error happens when you are using a "
            "`LazyModule` or explicitly manipulating `torch.nn.parameter.UninitializedParameter` "
            "objects. When using LazyModules Call `forward` with a dummy batch to initialize the "
            "parameters before calling torch functions")

    @_data.setter
    def _data(self, value: Any) -> None:
        _DATA.__set__(self, value)

    def materialize(self, shape: Sequence[int], device: device | str | int | None = None,
                    dtype: dtype | None = None) -> None:
        """Give it data of `shape` (uninitialised memory, on `device` in `dtype`, by default
        those it was made with), apply the module conversions made meanwhile, and turn it
        into `cls_to_become`."""
        from .._ops.creation import empty
        placeholder = Tensor.__new__(Tensor)
        _DATA.__set__(placeholder, _DATA.__get__(self))
        data = empty(tuple(shape), device=device if device is not None else placeholder.device,
                     dtype=dtype if dtype is not None else placeholder.dtype)
        for fn in self.__dict__.pop("_pending", ()):
            data = fn(data)
        _DATA.__set__(self, data._data)
        self.__class__ = self.cls_to_become

    def _defer(self, fn: Callable[[Tensor], Tensor]) -> None:
        """Keep a Module._apply conversion for materialize."""
        self.__dict__.setdefault("_pending", []).append(fn)

    @property
    def shape(self) -> Size:
        return self._data.shape            # raises the error above

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto: int) -> tuple[Any, ...]:
        return (_rebuild_uninitialized, (type(self), self._requires_grad,
                                         list(self.__dict__.get("_pending", ()))))

    def __deepcopy__(self, memo: dict[int, Any]) -> UninitializedTensorMixin:
        copy = memo.get(id(self))
        if copy is None:
            copy = memo[id(self)] = _rebuild_uninitialized(type(self), self._requires_grad,
                                                           list(self.__dict__.get("_pending", ())))
        return copy


def _placeholder(device, dtype):
    from .._ops.creation import empty
    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers at its first forward (torch.nn.
    UninitializedParameter); it becomes a Parameter then."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: device | str | int | None = None,
                dtype: dtype | None = None) -> UninitializedParameter:
        return _alias(cls, _placeholder(device, dtype), requires_grad)


class _MaterializedBuffer(Tensor):
    """What an UninitializedBuffer becomes: a Tensor in all but name (a placeholder cannot turn
    into the slot-only Tensor class itself); it pickles and copies as a plain Tensor."""

    def __reduce_ex__(self, proto: int) -> Any:
        return self.detach().__reduce_ex__(proto)

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        return self.detach().clone()


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers at its first forward (torch.nn.
    UninitializedBuffer); it becomes a Tensor then."""

    cls_to_become = _MaterializedBuffer

    def __new__(cls, requires_grad: bool = False, device: device | str | int | None = None,
                dtype: dtype | None = None) -> UninitializedBuffer:
        t = _alias(cls, _placeholder(device, dtype), False)
        t._requires_grad = bool(requires_grad)
        return t


def _rebuild_uninitialized(cls, requires_grad, pending):
    t = cls(requires_grad)
    if pending:
        t.__dict__["_pending"] = pending
    return t


def is_lazy(param: Any) -> bool:
    """Whether `param` is a lazy module's placeholder (torch.nn.parameter.is_lazy)."""
    return isinstance(param, UninitializedTensorMixin)
