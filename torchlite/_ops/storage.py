"""Storages as PyTorch's Python API shows them: torchlite.UntypedStorage (the bytes under a
tensor), torchlite.TypedStorage (the same bytes read as one dtype; deprecated in PyTorch, still
what Tensor.storage() returns) and the legacy per-dtype names (FloatStorage, LongStorage, ...),
with Tensor.untyped_storage(), Tensor.storage(), Tensor.storage_type() and Tensor.set_(storage,
offset, size, stride).

A storage object here is a handle: it holds a 1-d view over the whole of the array layer's
buffer (uint8 for an untyped storage, the dtype for a typed one), so reads and writes through it
are reads and writes of the tensors that share the buffer, and data_ptr() is the buffer's
address.  Two handles on one buffer are two Python objects (PyTorch hands back the same one)."""
from __future__ import annotations

import builtins
import warnings
import weakref
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._tensor import Tensor, _wrap
from .._dispatch import array as _A
from .legacy_types import NAMES as _LEGACY_TENSOR_NAMES

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from .._device import device
    from .._dtype import dtype


def _whole(array, dtype):
    """A 1-d array of `dtype` over every byte of array's buffer."""
    nbytes = array.storage_nbytes()
    return _A.reinterpret(array, dtype.code, (nbytes // dtype.itemsize,), (1,), 0)


def _new_bytes(data, device, dtype):
    """A fresh buffer as a 1-d tensor of dtype: `data` an element count or a sequence."""
    from .creation import empty, tensor
    if isinstance(data, builtins.int) and not isinstance(data, builtins.bool):
        if data < 0:
            raise RuntimeError(f"Storage: size must be non-negative, got {data}")
        return empty(data, dtype=dtype, device=device)
    return tensor(list(data), dtype=dtype, device=device)


class _StorageBase:
    """What both kinds share; `_data` is the 1-d Tensor over the whole buffer."""

    __slots__ = ("_data", "__weakref__")

    def size(self) -> int:
        return self._data.shape[0]

    def __len__(self) -> int:
        return self._data.shape[0]

    def nbytes(self) -> int:
        return self._data.shape[0] * self._data.element_size()

    def element_size(self) -> int:
        return self._data.element_size()

    def data_ptr(self) -> int:
        return self._data.data_ptr()

    @property
    def device(self) -> device:
        return self._data.device

    @property
    def is_cuda(self) -> bool:
        return self._data.is_cuda

    @property
    def is_meta(self) -> bool:
        return self._data.is_meta

    def _item_index(self, idx):
        if isinstance(idx, builtins.bool) or not isinstance(idx, builtins.int):
            try:
                idx = idx.__index__()
            except AttributeError:
                raise TypeError(f"{type(self).__name__} indices must be integers, got "
                                f"{type(idx).__name__}") from None
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return idx + n if idx < 0 else idx

    def __getitem__(self, idx: int) -> int | float | bool | complex:
        return self._data[self._item_index(idx)].item()

    def __setitem__(self, idx: int | slice, value: int | float | bool | complex | _StorageBase | Tensor) -> None:
        if isinstance(idx, builtins.slice):
            self._data[idx] = value._data if isinstance(value, _StorageBase) else value
            return
        self._data[self._item_index(idx)] = value

    def __iter__(self) -> Iterator[int | float | bool | complex]:
        return iter(self.tolist())

    def tolist(self) -> list[int | float | bool | complex]:
        return self._data.tolist()

    def fill_(self, value: int | float | bool | complex) -> _StorageBase:
        self._data.fill_(value)
        return self

    def copy_(self, source: _StorageBase | Tensor, non_blocking: bool | None = None) -> _StorageBase:
        src = source._data if isinstance(source, _StorageBase) else source
        if src.numel() != self._data.numel() * self.element_size() // src.element_size():
            raise RuntimeError(f"copy_: storages of {self.nbytes()} and "
                               f"{src.numel() * src.element_size()} bytes differ in size")
        self._data.copy_(src if src.dtype is self._data.dtype else
                         _wrap(_whole(src._data, self._data.dtype)))
        return self

    def is_shared(self) -> bool:
        return False

    def share_memory_(self) -> _StorageBase:
        """A no-op: torchlite's DataLoader workers pass tensors through their own shared
        memory (torchlite.multiprocessing), not through the storage."""
        return self

    def is_pinned(self, device: device | str = "cuda") -> bool:
        return self._data.is_pinned()

    def _same_kind(self, data):
        raise NotImplementedError    # each kind builds its own handle

    def _storage_elements(self):
        """The elements as a tensor sharing the buffer (torchlite.tensor(storage) copies it)."""
        return self._data

    def _array_for_set(self, dtype, storage_offset, size, stride):
        """Tensor.set_(storage, ...)'s array: the buffer read as `dtype` (a typed storage must
        be of that dtype), from storage_offset (in elements) with size/stride (default: all of
        it, 1-d)."""
        from .conversion import _contiguous_strides
        if isinstance(self, TypedStorage) and self.dtype is not dtype:
            raise RuntimeError(f"Could not set tensor of type {dtype} to a storage of type "
                               f"{self.dtype}")
        whole = _whole(self._data._data, dtype)
        if size is None:
            if storage_offset:
                raise TypeError("set_(): a storage offset needs a size (and optionally a stride)")
            return whole
        size = tuple(_int_arg(n, "size") for n in size)
        stride = (tuple(_int_arg(n, "stride") for n in stride) if stride is not None
                  else _contiguous_strides(size))
        offset = _int_arg(storage_offset, "storage_offset")
        if len(size) != len(stride):
            raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        if any(n < 0 for n in size):
            raise RuntimeError(f"set_: negative dimension in size {list(size)}")
        if any(st < 0 for st in stride):
            raise RuntimeError(f"set_: negative stride in {list(stride)}")
        # the elements the view reaches, in Python ints (no overflow), against the storage
        if all(size):
            end = offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))
            if end > whole.shape[0]:
                raise RuntimeError(f"set_: size {list(size)}, stride {list(stride)} and storage "
                                   f"offset {offset} reach {end} elements of {dtype}, but the "
                                   f"storage holds {whole.shape[0]} (torchlite does not grow a "
                                   f"storage)")
        return _A.reinterpret(whole, dtype.code, size, stride, offset)

    def clone(self) -> _StorageBase:
        return self._same_kind(self._data.clone())

    def cpu(self) -> _StorageBase:
        return self if self.device.type == "cpu" else self._same_kind(self._data.cpu())

    def cuda(self, device: device | str | int | None = None, non_blocking: bool = False) -> _StorageBase:
        return self._same_kind(self._data.cuda(device, non_blocking=non_blocking))

    def to(self, *, device: device | str | int | None = None, non_blocking: bool = False) -> _StorageBase:
        return self._same_kind(self._data.to(device, non_blocking=non_blocking))

    def pin_memory(self, device: device | str = "cuda") -> _StorageBase:
        return self._same_kind(self._data.pin_memory())

    def __copy__(self) -> _StorageBase:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> _StorageBase:
        return memo.setdefault(id(self), self.clone())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[torchlite.storage.{type(self).__name__}("
        kind = "" if isinstance(self, UntypedStorage) else f"dtype={self._data.dtype}, "
        return f"{body}\n{head}{kind}device={self.device}) of size {len(self)}]".lstrip("\n")

    def __reduce__(self) -> tuple[Any, ...]:
        # its bytes and how to read them (a copy: the unpickled storage has memory of its own);
        # rebuilt on the CPU, as the bytes came through it
        raw = bytes(self._data.cpu().contiguous().view(D.uint8).numpy().tobytes())
        dtype = None if isinstance(self, UntypedStorage) else self.dtype.name
        return (_rebuild_storage, (raw, dtype))


_LIVE = weakref.WeakValueDictionary()     # id(the array layer's buffer) -> its UntypedStorage


class UntypedStorage(_StorageBase):
    """The bytes of a buffer: UntypedStorage(n) holds n new bytes, UntypedStorage(seq) the
    bytes in seq; Tensor.untyped_storage() the buffer under a tensor.  Items are ints 0..255."""

    __slots__ = ()

    def __init__(self, *args: Any, device: device | str | int | None = None) -> None:
        if len(args) > 1:
            raise TypeError(f"UntypedStorage(): expected a size or a sequence, got {len(args)} arguments")
        self._data = _new_bytes(args[0] if args else 0, device, D.uint8)

    @classmethod
    def _over(cls, array):
        """The handle of array's buffer: the same object for every tensor on that buffer while
        one is alive (PyTorch's untyped_storage() is the same object too)."""
        key = id(array.storage)
        s = _LIVE.get(key)
        if s is None:
            s = cls.__new__(cls)
            s._data = _wrap(_whole(array, D.uint8))     # holds the buffer, so the key stays its
            _LIVE[key] = s
        return s

    def _same_kind(self, data):
        return UntypedStorage._over(data._data)

    def untyped(self) -> UntypedStorage:
        return self

    def __getitem__(self, idx: int | slice) -> int | UntypedStorage:
        if isinstance(idx, builtins.slice):
            if idx.step not in (None, 1):
                raise RuntimeError("UntypedStorage: slices must have step 1")
            part = UntypedStorage.__new__(UntypedStorage)
            part._data = self._data[idx]              # a view: the same bytes
            return part
        return super().__getitem__(idx)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> str:
        if dtype is None:
            return "torchlite.UntypedStorage"
        raise TypeError("UntypedStorage.type(dtype): an untyped storage holds bytes; use "
                        "TypedStorage(wrap_storage=..., dtype=...)")


def _dtype_of(dtype):
    if dtype is None:
        from .._dtype import get_default_dtype
        return get_default_dtype()
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"TypedStorage: dtype must be a torchlite.dtype, got {type(dtype).__name__}")
    return dtype


class TypedStorage(_StorageBase):
    """A buffer read as one dtype: TypedStorage(n, dtype=...) (n new elements),
    TypedStorage(seq, dtype=...), TypedStorage(wrap_storage=untyped, dtype=...) (that buffer's
    bytes as dtype); Tensor.storage() the buffer under a tensor.  Its legacy names
    (FloatStorage, ...) make one of a fixed dtype.  Items are Python numbers."""

    __slots__ = ("dtype", "_untyped_storage")

    def __init__(self, *args: Any, device: device | str | int | None = None, dtype: dtype | None = None,
                 wrap_storage: UntypedStorage | None = None) -> None:
        self.dtype = _dtype_of(dtype)
        if wrap_storage is not None:
            if args:
                raise TypeError("TypedStorage(): wrap_storage takes no positional arguments")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"TypedStorage(): wrap_storage must be an UntypedStorage, got "
                                f"{type(wrap_storage).__name__}")
            self._set(wrap_storage._data._data, wrap_storage)
            return
        if len(args) > 1:
            raise TypeError(f"TypedStorage(): expected a size or a sequence, got {len(args)} arguments")
        self._set(_new_bytes(args[0] if args else 0, device, self.dtype)._data)

    def _set(self, array, untyped=None):
        self._data = _wrap(_whole(array, self.dtype))
        self._untyped_storage = untyped if untyped is not None else UntypedStorage._over(array)

    @classmethod
    def _over(cls, array, dtype):
        s = cls.__new__(cls)
        s.dtype = dtype
        s._set(array)
        return s

    def _same_kind(self, data):
        return TypedStorage._over(data._data, self.dtype)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def __getitem__(self, idx: int) -> int | float | bool | complex:
        if isinstance(idx, builtins.slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return super().__getitem__(idx)

    def type(self, dtype: str | type | None = None, non_blocking: bool = False) -> str | TypedStorage:
        """The legacy type name ('torchlite.FloatStorage'), or a copy cast to the storage type
        `dtype` names (a legacy storage class or its name)."""
        if dtype is None:
            return f"torchlite.{_LEGACY_NAME[self.dtype]}"
        name = dtype if isinstance(dtype, str) else getattr(dtype, "__name__", "")
        target = _LEGACY_DTYPES.get(name.rsplit(".", 1)[-1])
        if target is None:
            raise ValueError(f"invalid storage type {dtype!r}")
        return self._cast(target)

    def _cast(self, dtype):
        return self if dtype is self.dtype else TypedStorage._over(self._data.to(dtype)._data, dtype)

    def pickle_storage_type(self) -> str:
        return _LEGACY_NAME[self.dtype]


def _add_casts():
    for method, dt in (("float", D.float32), ("double", D.float64), ("half", D.float16),
                       ("bfloat16", D.bfloat16), ("long", D.int64), ("int", D.int32),
                       ("short", D.int16), ("char", D.int8), ("byte", D.uint8), ("bool", D.bool),
                       ("cfloat", D.complex64), ("cdouble", D.complex128)):
        def cast(self: TypedStorage, _dt: dtype = dt) -> TypedStorage:
            return self._cast(_dt)
        cast.__name__ = method
        cast.__doc__ = f"A copy as {dt} (this storage itself if it is {dt} already)."
        setattr(TypedStorage, method, cast)


_add_casts()


# ---- the legacy names: FloatStorage(...) makes a float32 TypedStorage ---------------------------
# FloatStorage for FloatTensor, ...: legacy_types' table of the per-dtype names
_LEGACY_DTYPES = {name.replace("Tensor", "Storage"): dt for name, dt in _LEGACY_TENSOR_NAMES.items()}
_LEGACY_NAME = {dt: name for name, dt in _LEGACY_DTYPES.items()}
_LEGACY_NAME[D.complex32] = "ComplexHalfStorage"


class _LegacyStorageType(type):
    """isinstance(s, FloatStorage) holds for float32 TypedStorages; calling the class makes one."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None, wrap_storage=None):
        return TypedStorage(*args, device=device, dtype=cls.dtype, wrap_storage=wrap_storage)

    def __repr__(cls):
        return f"<class 'torchlite.{cls.__name__}'>"


for _name, _dt in _LEGACY_DTYPES.items():
    globals()[_name] = _LegacyStorageType(_name, (), {"dtype": _dt, "__module__": __name__,
                                                      "__doc__": f"A TypedStorage of {_dt}."})
__all__ = ["UntypedStorage", "TypedStorage", *_LEGACY_DTYPES]


# ---- the Tensor methods ------------------------------------------------------------------------
_warned = [False]


def _untyped_storage(self):
    """The bytes under this tensor, shared with every tensor viewing them."""
    return UntypedStorage._over(self._data)


def _storage(self):
    """The buffer under this tensor read as its dtype (a TypedStorage; PyTorch deprecates it in
    favour of untyped_storage(), and warns once, as here)."""
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter to "
                      "you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
    return TypedStorage._over(self._data, self.dtype)


def _storage_type(self):
    """The legacy storage class of this tensor's dtype (FloatStorage for float32, ...)."""
    name = _LEGACY_NAME.get(self.dtype)
    if name not in _LEGACY_DTYPES:
        raise RuntimeError(f"storage_type: no legacy storage class for {self.dtype}")
    return globals()[name]


def _rebuild_storage(raw, dtype_name):
    """A pickled storage back: an UntypedStorage of the bytes, or a TypedStorage of dtype."""
    if not isinstance(raw, (bytes, bytearray)):
        raise TypeError("a pickled storage holds bytes")
    from .creation import frombuffer
    untyped = UntypedStorage._over(frombuffer(bytearray(raw), dtype=D.uint8).clone()._data) \
        if raw else UntypedStorage(0)
    if dtype_name is None:
        return untyped
    dtype = getattr(D, str(dtype_name), None)
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"a pickled storage names an unknown dtype {dtype_name!r}")
    return TypedStorage(wrap_storage=untyped, dtype=dtype)


def _int_arg(value, what):
    if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
        try:
            value = value.__index__()
        except AttributeError:
            raise TypeError(f"set_(): {what} must be ints, got {type(value).__name__}") from None
    return value


def is_storage(obj: Any) -> bool:
    return isinstance(obj, _StorageBase)


Tensor.untyped_storage = _untyped_storage
Tensor.storage = _storage
Tensor.storage_type = _storage_type
