"""dtype and device conversion (to, float, double, ..., cpu, cuda) and in-place filling."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import _memory_format as MF
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .. import _dispatch
from .._device import device as _device_cls, to_device
from .._tensor import Tensor, _wrap, _as_pyscalar
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import inplace_records, needs_grad
from . import _register
from . import conversion_grad as _CG
from . import elementwise_grad as _EG
from ._kit import tensor_arg

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .._device import device
    from .._dtype import dtype
    from .._memory_format import memory_format


def _parse_to(args, kwargs):
    """Tensor.to's overloads: to(dtype), to(device[, dtype]), to(tensor), and keywords."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    fmt = MF.check(kwargs.pop("memory_format", None), "to")
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device_cls, builtins.int)) and not isinstance(a, builtins.bool):
            device = a
        elif isinstance(a, builtins.bool):
            non_blocking = a          # the positional non_blocking flag
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (D.to_dtype(dtype), (to_device(device) if device is not None else None), copy,
            non_blocking, fmt)


def _moved(arr, device, non_blocking):
    """arr's elements on `device` (a torchlite.device; a CUDA or the meta device is
    involved), through the backend's device services."""
    if device.type == "meta":
        return _dispatch.meta_like(arr)         # a shape and a dtype, no data
    if arr.device == "meta":
        raise NotImplementedError(
            "Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
            "instead when moving module from meta to a different device.")
    if device.type == "cpu":
        return _dispatch.devices.to_host(arr, non_blocking)
    index = _dispatch.devices.checked_index(device, f"move a tensor to {device}")
    return _dispatch.devices.to_device(arr, index, non_blocking)


def _same_device(device, current):
    """Whether moving to `device` is a no-op ('cuda' means the current CUDA device)."""
    if device == current:
        return True
    return device.type == current.type == "cuda" and device.index is None \
        and current.index == _dispatch.devices.current_index()


@_register("to")
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Convert dtype and/or device; returns self when nothing changes (unless copy=True).
    non_blocking=True makes a copy from pinned memory, or to the host, asynchronous."""
    dtype, device, copy, non_blocking, fmt = _parse_to(args, dict(kwargs))
    t = self
    if device is not None and not _same_device(device, self.device):
        t = _wrap(_moved(self._data, device, non_blocking))
        copy = False
    if dtype is not None and dtype is not t.dtype:
        t = _wrap(_ew.cast(t._data, dtype.code))
        copy = False
    if copy:
        t = _wrap(_ew.clone(t._data, True))
    if t is not self and self._requires_grad and (_grad_state.enabled or needs_grad(self)):
        _CG.record_to(self, t)
    if fmt is not None and fmt is not MF.preserve_format:
        t = t.contiguous(memory_format=fmt)     # a copy only when the layout differs
    return t


def _to_dtype(dt):
    def fn(self: Tensor, memory_format: memory_format | None = None) -> Tensor:
        return to(self, dt)
    fn.__name__ = dt.name
    fn.__doc__ = f"self.to(torchlite.{dt.name})"
    return fn


for _name, _dt in (("float", D.float32), ("double", D.float64), ("half", D.float16),
                   ("bfloat16", D.bfloat16), ("long", D.int64), ("int", D.int32), ("short", D.int16),
                   ("char", D.int8), ("byte", D.uint8), ("bool", D.bool),
                   ("cfloat", D.complex64), ("cdouble", D.complex128), ("chalf", D.complex32)):
    setattr(Tensor, _name, _to_dtype(_dt))


@_register("type")
def type(self: Tensor, dtype: dtype | str | builtins.type | None = None,
         non_blocking: bool = False) -> str | Tensor:
    """With no argument the legacy type name ('torchlite.FloatTensor'); else the tensor cast
    to a dtype or a legacy type (torchlite.LongTensor, 'torch.LongTensor')."""
    from . import legacy_types
    if dtype is None:
        return legacy_types.type_name(self)
    legacy = legacy_types.dtype_of_type_name(dtype)
    return to(self, legacy if legacy is not None else D.to_dtype(dtype))


@_register("type_as")
def type_as(self: Tensor, other: Tensor) -> Tensor:
    return to(self, other.dtype)


@_register("cpu")
def cpu(self: Tensor, memory_format: memory_format | None = None) -> Tensor:
    return self if self.device.type == "cpu" else to(self, "cpu")


@_register("cuda")
def cuda(self: Tensor, device: device | str | int | None = None, non_blocking: bool = False,
         memory_format: memory_format | None = None) -> Tensor:
    """This tensor on a CUDA device (the current one, an index, or a device); a clear
    RuntimeError saying what is missing when CUDA is not usable here."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return to(self, device, non_blocking=non_blocking)


@_register("copy_")
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy src's elements into self (broadcasting src, casting to self's dtype)."""
    tensor_arg(src, "copy_", "src")
    if src.device != self.device:
        src = src.to(self.device)
    if inplace_records(self, src):
        return _EG.rebase(self, "copy_", lambda old: _copied(old, src), src)
    _ew.copy_(self._data, src._data)
    self._bump_version()
    return self


def _copied(old, src):
    """The out-of-place form of old.copy_(src): src broadcast and cast to old."""
    r = _wrap(_A.empty(old._data.shape, old._data.dtype, device=old._data))
    _ew.copy_(r._data, src._data)
    _CG.record_copy(old, src, r)
    return r


@_register("fill_")
def fill_(self: Tensor, value: Tensor | int | float | bool | complex) -> Tensor:
    """Set every element to value (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
    if inplace_records(self, value):
        return _EG.rebase(self, "fill_", lambda old: _filled(old, value))
    if isinstance(value, Tensor):
        value = value.item()
    _A.fill_(self._data, _as_pyscalar(value))
    self._bump_version()
    return self


def _filled(old, value):
    """The out-of-place form of old.fill_(value)."""
    v = value.item() if isinstance(value, Tensor) else value
    r = _wrap(_A.full(old._data.shape, _as_pyscalar(v), old._data.dtype, device=old._data))
    _CG.record_fill(old, value, r)
    return r


@_register("fill_diagonal_")
def fill_diagonal_(self: Tensor, fill_value: Tensor | int | float | bool | complex, wrap: bool = False) -> Tensor:
    """Set the main diagonal (elements i, i, ..., i) to fill_value in place.  A 2-d matrix
    may be any shape; with wrap=True a tall one's diagonal starts again every n + 1 rows
    (NumPy's fill_diagonal).  More dims must all have one length."""
    from .creation import arange, tensor
    nd = self.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        m, n = self.shape
        pos = arange(0, m * n, n + 1, device=self.device)
        index = (pos // n, pos % n)
    else:
        index = (arange(min(self.shape), device=self.device),) * nd
    if not isinstance(fill_value, Tensor):
        fill_value = tensor(_as_pyscalar(fill_value), dtype=self.dtype, device=self.device)
    return self.index_put_(index, fill_value)


# ---- Python callables over the elements (CPU only and slow, as PyTorch's) ---------------------
def _set_from_python(self, values):
    """Write the Python numbers `values` (row-major) into self, in place."""
    from .creation import tensor
    return self.copy_(tensor(values, dtype=self.dtype).reshape(tuple(self.shape)))


def _python_values(t, op):
    if t.device.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")
    return t.reshape(-1).tolist()


@_register("apply_")
def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:
    """Replace each element x by callable(x), a Python function of a Python number."""
    return _set_from_python(self, [callable(v) for v in _python_values(self, "apply_")])


@_register("map_")
def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape."""
    other = _python_values(tensor.expand_as(self), "map_")
    mine = _python_values(self, "map_")
    return _set_from_python(self, [callable(a, b) for a, b in zip(mine, other)])


@_register("map2_")
def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
    """self[i] = callable(self[i], x[i], y[i]), x and y broadcast to self's shape."""
    xs, ys = (_python_values(t.expand_as(self), "map2_") for t in (x, y))
    mine = _python_values(self, "map2_")
    return _set_from_python(self, [callable(a, b, c) for a, b, c in zip(mine, xs, ys)])


@_register("set_")
def set_(self: Tensor, source: Any = None, storage_offset: int = 0, size: Sequence[int] | None = None,
         stride: Sequence[int] | None = None) -> Tensor:
    """Make self view source's memory: all of it as source views it, or (size, stride,
    storage_offset given) that window of it; with no source, self becomes empty.  self keeps
    no history (as PyTorch's set_, it is not differentiable)."""
    if inplace_records(self):
        raise RuntimeError("set_: a tensor that requires grad cannot be set to other memory "
                           "in grad mode (use torchlite.no_grad())")
    if source is None:
        self._data = _A.empty((0,), self._data.dtype, device=self._data)
    elif not isinstance(source, Tensor):
        if not hasattr(source, "_array_for_set"):         # a storage (_ops/storage.py)
            raise TypeError(f"set_(): source must be a Tensor or a storage, got "
                            f"{builtins.type(source).__name__}")
        self._data = source._array_for_set(self.dtype, storage_offset, size, stride)
    else:
        tensor_arg(source, "set_", "source")
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type "
                               f"{self.dtype}")
        if size is None:
            self._data = source._data
        else:
            self._data = source.as_strided(size, stride if stride is not None else
                                           _contiguous_strides(size), storage_offset)._data
    self._bump_version()
    return self


def _contiguous_strides(size):
    strides, acc = [], 1
    for n in reversed(tuple(size)):
        strides.append(acc)
        acc *= builtins.max(n, 1)
    return tuple(reversed(strides))


@_register("zero_")
def zero_(self: Tensor) -> Tensor:
    return fill_(self, 0)


# ---- memory placement ----------------------------------------------------------------------------
@_register("share_memory_")
def share_memory_(self: Tensor) -> Tensor:
    """Returns self.  torchlite's DataLoader workers pass batches by pickling, not through
    shared memory, so CPU tensors are not moved to shared memory (a no-op for now)."""
    return self


@_register("is_shared")
def is_shared(self: Tensor) -> bool:
    """False: torchlite does not place CPU tensors in shared memory (see share_memory_)."""
    return False


@_register("is_pinned")
def is_pinned(self: Tensor, device: device | str | int | None = None) -> bool:
    """Whether this CPU tensor is in page-locked (pinned) host memory."""
    # nothing is pinned before the backend is loaded: a CPU program never loads it to ask
    if self.device.type != "cpu" or not _dispatch.backend_loaded():
        return False
    return _dispatch.devices.is_pinned(self._data)


@_register("pin_memory")
def pin_memory(self: Tensor, device: device | str | int | None = None) -> Tensor:
    """A copy of this CPU tensor in page-locked host memory, which copies to the GPU with
    non_blocking=True overlap with computation.  Needs CUDA; without it this raises, as in
    PyTorch."""
    if not _dispatch.devices.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
    if _dispatch.devices.is_pinned(self._data):
        return self
    t = _wrap(_dispatch.devices.pin(self._data))
    if self._requires_grad and (_grad_state.enabled or needs_grad(self)):
        _CG.record_to(self, t)
    return t


@_register("record_stream")
def record_stream(self: Tensor, stream: Any) -> None:
    """Mark this CUDA tensor's memory as used by work queued on `stream`, so the caching
    allocator does not hand it out again before that work is done (torch.Tensor.record_stream)."""
    if self.device.type != "cuda":
        raise RuntimeError(f"record_stream: expected a CUDA tensor, but got a tensor on {self.device}")
    self._data.record_stream(stream.cuda_stream, stream)


@_register("is_inference")
def is_inference(self: Tensor) -> bool:
    """False: torchlite's inference_mode only stops recording, it makes no inference tensors."""
    return False
