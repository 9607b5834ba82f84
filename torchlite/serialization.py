"""torchlite.save and torchlite.load: PyTorch's checkpoint format, written and read without
PyTorch.

The file is PyTorch's zip layout (torch >= 1.6), every record stored uncompressed:

    <archive>/data.pkl                   the object, pickled (protocol 2 by default)
    <archive>/.format_version            "1"
    <archive>/.storage_alignment         "64"
    <archive>/byteorder                  "little"
    <archive>/data/<key>                 the bytes of one storage, aligned to 64 in the file
    <archive>/version                    "3\\n"
    <archive>/.data/serialization_id     40 decimal digits

A tensor pickles as torch.save pickles it: ``torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, OrderedDict())`` where ``storage`` is the persistent id
``('storage', torch.FloatStorage, key, 'cpu', numel)``; the whole storage is saved once, so
views keep their strides and offset and tensors sharing a storage still share it after
loading.  A tensor on the meta device has no storage: it pickles as
``torch._utils._rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad)`` and loads
back onto the meta device, as PyTorch does.  The torch names are written into the pickle as
text: torchlite never imports torch.

Loading never runs code from the file.  With weights_only=True (the default) the pickle is
interpreted by a small restricted VM (_WeightsUnpickler) that builds only plain data and the
objects of an allow-list (_allowed_globals), mapped to torchlite's own; every size the file
declares is checked against the bytes really there before anything is allocated or viewed.
weights_only=False hands the pickle to Python's own unpickler, which can import and call
anything the file names (only for files you trust); torch's names still map to torchlite's
objects, and any other torch object is refused.

The legacy format of torch < 1.6 (a sequence of pickles followed by the raw storages) is read
too; it is never written.
"""
from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import uuid
import zipfile
import zlib
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING

import _compat_pickle

from . import _dtype as D
from . import _numpy_pickle
from ._dispatch import array as _A
from ._device import device as _Device
from ._size import MAX_NUMEL, Size
from ._tensor import Tensor, _wrap

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import IO, Any

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

DEFAULT_PROTOCOL = 2
_ALIGNMENT = 64                  # storage records start at multiples of this in the file
_MAX_DIMS = 16                   # MAX_DIMS of torchlite/_core/array.pxd
_UINT8 = D.uint8.code
_CPU = _Device("cpu")

# torch's legacy typed-storage class of each dtype: how a pickle names a storage's dtype
_STORAGE_CLASS_NAMES = {
    D.bool: "BoolStorage", D.uint8: "ByteStorage", D.int8: "CharStorage",
    D.int16: "ShortStorage", D.int32: "IntStorage", D.int64: "LongStorage",
    D.float16: "HalfStorage", D.bfloat16: "BFloat16Storage", D.float32: "FloatStorage",
    D.float64: "DoubleStorage", D.complex64: "ComplexFloatStorage",
    D.complex128: "ComplexDoubleStorage"}     # complex32: none (an UntypedStorage, as torch)


# =========================================================================================
# Writing
# =========================================================================================
class _Global:
    """A module-level name that the pickle refers to as a GLOBAL (module, name), written as
    text: how torch's functions and classes get into a checkpoint without importing torch."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):
        # pickle wants a reduce function to be callable; this one only exists in the file
        raise TypeError(f"{self.module}.{self.name} is only a name written into checkpoints")

    def __repr__(self):
        return f"<global {self.module}.{self.name}>"


_REBUILD_TENSOR_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_META = _Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")
_TORCH_DTYPES = {d: _Global("torch", d.name) for d in D.DTYPES}
_TORCH_STORAGE_CLASSES = {d: _Global("torch", n) for d, n in _STORAGE_CLASS_NAMES.items()}
# dtypes torch.save writes as an UntypedStorage of bytes and the dtype (_rebuild_tensor_v3):
# those without a legacy typed-storage class that torch's weights_only loader accepts
_UNTYPED_DTYPES = (D.complex32,)


class _SavedStorage:
    """One storage being saved: its record key, the dtype it is pickled as, its location
    ('cpu', 'cuda:0', ...) and an array over its bytes in host memory (which keeps the memory
    alive until the record is written; a copy for a storage on a device)."""

    __slots__ = ("key", "dtype", "array", "numel", "location", "untyped")

    def __init__(self, key, dtype, array, untyped=False):
        self.key = key
        self.untyped = untyped           # pickled as torch.storage.UntypedStorage (of bytes)
        self.dtype = D.uint8 if untyped else dtype
        self.numel = array.storage_nbytes() // self.dtype.itemsize
        self.location = array.device
        if self.location != "cpu":
            nbytes = array.storage_nbytes()
            array = _wrap(_A.reinterpret(array, D.uint8.code, (nbytes,), (1,), 0)).cpu()._data
        self.array = array

    def bytes_view(self):
        """The storage's numel * itemsize bytes, as a memoryview (no copy)."""
        return _memory(self.array.storage.data_ptr(), self.numel * self.dtype.itemsize)


def _memory(address, nbytes):
    """A writable memoryview of nbytes at address; whoever owns the memory must keep it
    alive while the view is used.  (ctypes, not NumPy: importing NumPy costs 30-100 ms.)"""
    import ctypes
    if nbytes == 0:
        return memoryview(bytearray())
    return memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")


class _CheckpointPickler(pickle._Pickler):
    """Python's pickler (the pure-Python one: only it lets a GLOBAL be written by name),
    taught to write tensors, Parameters, dtypes, Size and device as torch.save does."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}       # (address, nbytes) of a storage -> _SavedStorage, key order

    def persistent_id(self, obj):
        if type(obj) is _SavedStorage:
            cls = _UNTYPED_STORAGE if obj.untyped else _TORCH_STORAGE_CLASSES[obj.dtype]
            return ("storage", cls, obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        cls = type(obj)
        if cls is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        if cls is _Device:
            return (_TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented

    def _reduce_tensor(self, t):
        from .nn.parameter import Parameter
        if isinstance(t, Parameter):
            # as torch's Parameter.__reduce_ex__: the data as a plain tensor, plus any
            # attributes set on the parameter
            state = dict(getattr(t, "__dict__", None) or {})
            if state:
                return (_REBUILD_PARAMETER_WITH_STATE,
                        (t.detach(), t.requires_grad, OrderedDict(), state))
            return (_REBUILD_PARAMETER, (t.detach(), t.requires_grad, OrderedDict()))
        arr = t._data
        if arr.device == "meta":             # no storage to save: shape, strides and dtype
            return (_REBUILD_META, (D.DTYPES[arr.dtype], tuple(arr.shape), tuple(arr.strides),
                                    t.requires_grad))
        dtype = D.DTYPES[arr.dtype]
        if dtype in _UNTYPED_DTYPES:
            storage = self._storage_of(arr, dtype, untyped=True)
            return (_REBUILD_TENSOR_V3, (storage, arr.offset, tuple(arr.shape), tuple(arr.strides),
                                         t.requires_grad, OrderedDict(), dtype))
        storage = self._storage_of(arr, dtype)
        return (_REBUILD_TENSOR_V2, (storage, arr.offset, tuple(arr.shape), tuple(arr.strides),
                                     t.requires_grad, OrderedDict()))

    def _storage_of(self, arr, dtype, untyped=False):
        st = arr.storage
        # two storage objects over the same memory (Tensor.data makes one) are one storage
        ident = (arr.device, st.data_ptr(), st.nbytes)
        saved = self.storages.get(ident)
        if saved is None:
            saved = self.storages[ident] = _SavedStorage(str(len(self.storages)), dtype, arr,
                                                         untyped)
        elif saved.untyped != untyped or (not untyped and saved.dtype is not dtype):
            raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                               f"data as different types ({saved.dtype} and {dtype})")
        return saved

    def _save_named_global(self, obj):
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def _save_dtype(self, obj):
        self.save(_TORCH_DTYPES[obj])

    dispatch[_Global] = _save_named_global
    dispatch[D.dtype] = _save_dtype


def _pickle_checkpoint(obj, protocol):
    buf = io.BytesIO()
    pickler = _CheckpointPickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), list(pickler.storages.values())


_LOCAL_HEADER_SIZE = 30
_ZIP64_EXTRA_SIZE = 20
_PADDING_EXTRA_ID = 0x4246       # 'FB': the extra-field id PyTorch pads its records with


def _write_aligned_record(zf, archive_start, name, data):
    """Add a stored record whose bytes start at a multiple of _ALIGNMENT from the start of
    the archive (padding goes into the local header's extra field, as PyTorch does)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = memoryview(data).nbytes
    # zipfile's own rule for when it adds a zip64 extra field to the local header
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
    header = (_LOCAL_HEADER_SIZE + len(name.encode("utf-8")) + 4 +
              (_ZIP64_EXTRA_SIZE if zip64 else 0))
    pad = -(zf.fp.tell() - archive_start + header) % _ALIGNMENT
    info.extra = struct.pack("<HH", _PADDING_EXTRA_ID, pad) + b"Z" * pad
    with zf.open(info, "w") as out:
        out.write(data)
    info.extra = b""       # the local header has it; the central directory needs no padding


def _serialization_id():
    return f"{uuid.uuid4().int % 10 ** 40:040d}".encode()


def _write_checkpoint(fileobj, archive_name, pickled, storages):
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        start = zf.fp.tell()
        prefix = archive_name + "/"

        def record(name, data):
            _write_aligned_record(zf, start, prefix + name, data)

        record("data.pkl", pickled)
        record(".format_version", b"1")
        record(".storage_alignment", str(_ALIGNMENT).encode())
        record("byteorder", sys.byteorder.encode())
        for s in storages:
            record("data/" + s.key, s.bytes_view())
        record("version", b"3\n")
        record(".data/serialization_id", _serialization_id())


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj: object, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save an object (tensors, state_dicts, optimizer state, containers of those with
    numbers and strings, or anything picklable) to a path or a writable binary file object,
    in PyTorch's zip checkpoint format: ``torch.load(f, weights_only=True)`` reads it.

    Tensors sharing a storage are saved with one copy of it and share it again after
    loading; views keep their strides and storage offset.  pickle_protocol 2 (the default)
    is the one torch's weights_only loader understands.  PyTorch's private flags are taken
    for the scripts that pass them: the file is the zip format whichever
    _use_new_zipfile_serialization says (torch.load of any PyTorch since 1.6 reads it), and
    it always records the byte order."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("torchlite.save writes its pickles itself: pickle_module must be None "
                         "or the standard pickle module")
    if type(pickle_protocol) is not int:
        raise TypeError(f"torchlite.save: pickle_protocol must be an int, got "
                        f"{type(pickle_protocol).__name__}")
    if not 1 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"torchlite.save: pickle_protocol must be between 1 and "
                         f"{pickle.HIGHEST_PROTOCOL}, got {pickle_protocol}")
    if not _is_path(f) and not hasattr(f, "write"):
        raise TypeError(f"torchlite.save: f must be a path or a writable binary file object, "
                        f"got {type(f).__name__}")
    # pickle everything first, so that an unpicklable object leaves no half-written file
    pickled, storages = _pickle_checkpoint(obj, pickle_protocol)
    if _is_path(f):
        parent = os.path.dirname(os.fsdecode(f))
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        # PyTorch names the archive's folder after the file, less its extension
        archive = os.path.splitext(os.path.basename(os.fsdecode(f)))[0] or "archive"
        with open(f, "wb") as fh:
            _write_checkpoint(fh, archive, pickled, storages)
    else:
        _write_checkpoint(f, "archive", pickled, storages)


# =========================================================================================
# Reading: the objects a checkpoint may name (the allow-list), mapped to torchlite's
# =========================================================================================
class _StorageType:
    """What a pickle's torch.FloatStorage (or torch.UntypedStorage) stands for: a dtype."""

    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self):
        return f"torch.{self.name}"


class _LoadedStorage:
    """A storage read from a checkpoint: its bytes (a uint8 array on the cpu), the dtype
    and size in bytes the pickle declared for it, and the device its tensors go to."""

    __slots__ = ("array", "dtype", "nbytes", "device", "key")

    def __init__(self, array, dtype, nbytes, device, key):
        self.array = array
        self.dtype = dtype
        self.nbytes = nbytes
        self.device = device
        self.key = key


def _bad(what):
    return RuntimeError(f"torchlite.load: invalid tensor in the checkpoint: {what}")


def _int_arg(x, what):
    if type(x) is not int:
        raise _bad(f"{what} must be an int, got {type(x).__name__}")
    if not -2 ** 63 <= x < 2 ** 63:     # also keeps huge integers out of the size arithmetic
        raise _bad(f"{what} (an integer of {x.bit_length()} bits) is out of the int64 range")
    return x


def _int_tuple(x, what):
    if not isinstance(x, (tuple, list)):
        raise _bad(f"{what} must be a tuple of ints, got {type(x).__name__}")
    return tuple(_int_arg(v, what) for v in x)


def _check_hooks_and_metadata(backward_hooks, metadata):
    # hooks are never called (torch drops them too); metadata would set conj/neg bits
    if backward_hooks is not None and not isinstance(backward_hooks, dict):
        raise _bad(f"backward_hooks must be a dict, got {type(backward_hooks).__name__}")
    if metadata:
        raise _bad(f"tensor metadata {metadata!r} (conjugate/negative bits) is not supported")


def _tensor_from(storage, dtype, storage_offset, size, stride, requires_grad):
    """The tensor with this dtype, offset, size and stride over a loaded storage, after
    checking that every element it can reach lies inside the bytes the storage declared."""
    if type(storage) is not _LoadedStorage:
        raise _bad(f"expected a storage, got {type(storage).__name__}")
    size = _int_tuple(size, "size")
    stride = _int_tuple(stride, "stride")
    offset = _int_arg(storage_offset, "storage offset")
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    if len(size) != len(stride):
        raise _bad(f"size {size} and stride {stride} differ in length")
    if len(size) > _MAX_DIMS:
        raise _bad(f"{len(size)} dimensions (torchlite supports at most {_MAX_DIMS})")
    if offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise _bad(f"negative size, stride or offset: size {size}, stride {stride}, "
                   f"storage offset {offset}")
    numel = 1
    for n in size:
        numel *= n
    if numel > MAX_NUMEL:
        raise _bad(f"size {size} has more than 2**62 elements")
    if numel == 0:
        # no element to reach: any offset is valid (as in torch), if byte offsets fit int64
        if offset > MAX_NUMEL // 8:
            raise _bad(f"storage offset {offset} is too large")
    else:
        # one past the last element the view reaches (Python ints: no overflow)
        end = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if end * dtype.itemsize > storage.nbytes:
            raise _bad(f"size {size}, stride {stride} and storage offset {offset} reach "
                       f"{end * dtype.itemsize} bytes of {dtype}, but storage "
                       f"'{storage.key}' holds {storage.nbytes} bytes")
    return _finish(_strided_view(storage.array, dtype, size, stride, offset, numel), storage,
                   requires_grad)


def _finish(arr, storage, requires_grad):
    t = _wrap(arr)
    if storage.device != _CPU:
        t = t.to(storage.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _strided_view(arr, dtype, size, stride, offset, numel):
    """The view (dtype, size, stride, offset) of arr's storage, bounds already checked."""
    if numel:
        return _A.reinterpret(arr, dtype.code, size, stride, offset)
    # array.reinterpret stops copying strides at the first zero-size dim, so an empty view
    # is built with one zero-size dim last and the others at size 1, then each of those is
    # sliced to 0 (slicing keeps the stride) and the dims are put back in order
    zeros = [i for i, n in enumerate(size) if n == 0]
    order = [i for i in range(len(size)) if size[i] != 0] + zeros[1:] + zeros[:1]
    v = _A.reinterpret(arr, dtype.code, [size[i] or 1 for i in order[:-1]] + [0],
                       [stride[i] for i in order], offset)
    for pos in range(len(order) - len(zeros), len(order) - 1):
        v = v.slice(pos, 0, 0, 1)
    return v.permute(sorted(range(len(order)), key=order.__getitem__))


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_from(storage, getattr(storage, "dtype", None), storage_offset, size,
                        stride, False)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    _check_hooks_and_metadata(backward_hooks, metadata)
    return _tensor_from(storage, getattr(storage, "dtype", None), storage_offset, size,
                        stride, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    _check_hooks_and_metadata(backward_hooks, metadata)
    if type(dtype) is not D.dtype:
        raise _bad(f"expected a dtype, got {type(dtype).__name__}")
    return _tensor_from(storage, dtype, storage_offset, size, stride, requires_grad)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A tensor on the meta device (no storage, nothing to read) of these sizes and strides."""
    from ._ops.creation import empty_strided
    if type(dtype) is not D.dtype:
        raise _bad(f"expected a dtype, got {type(dtype).__name__}")
    size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    if len(size) != len(stride) or any(d < 0 for d in size) or any(st < 0 for st in stride):
        raise _bad(f"meta tensor of size {size} and stride {stride}")
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    t = empty_strided(size, stride, dtype=dtype, device="meta")
    return t.requires_grad_() if requires_grad else t


def _set_attributes(obj, state):
    """Restore the attributes a pickle's state holds (dict, or (dict, slots) as pickle's
    BUILD takes) on an OrderedDict or a Parameter, through its __dict__ only: a name can
    neither reach a slot nor a property, so it can only add plain attributes."""
    slots = None
    if isinstance(state, tuple):
        if len(state) != 2:
            raise pickle.UnpicklingError(f"invalid object state: a tuple of {len(state)}")
        state, slots = state
    if slots:
        raise pickle.UnpicklingError(f"cannot restore slot attributes {sorted(slots)!r} "
                                     f"on {type(obj).__name__}")
    if not state:
        return obj
    if not isinstance(state, dict) or not all(type(k) is str for k in state):
        raise pickle.UnpicklingError(f"invalid object state for {type(obj).__name__}: "
                                     f"{type(state).__name__}")
    special = sorted(k for k in state if k.startswith("__") and k.endswith("__"))
    if special:     # an instance attribute would shadow the class's __reduce_ex__ and such
        raise pickle.UnpicklingError(f"cannot set special attributes {special} on "
                                     f"{type(obj).__name__}")
    if not hasattr(obj, "__dict__"):
        raise pickle.UnpicklingError(f"cannot restore attributes {sorted(state)!r} on "
                                     f"{type(obj).__name__}")
    obj.__dict__.update(state)
    return obj


def _restore_trusted_state(inst, state):
    """BUILD on an instance of a class the user allowed: its own __setstate__, else what
    pickle does (the __dict__ part, then the slots)."""
    if hasattr(inst, "__setstate__"):
        inst.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        inst.__dict__.update(state)
    if slots:
        for k, v in slots.items():
            setattr(inst, k, v)


def _parameter_class():
    from .nn.parameter import Parameter
    return Parameter


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, Tensor):
        raise _bad(f"Parameter data must be a tensor, got {type(data).__name__}")
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    _check_hooks_and_metadata(backward_hooks, None)
    return _parameter_class()(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_attributes(_rebuild_parameter(data, requires_grad, backward_hooks), state)


_TENSOR_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3,
                      _rebuild_parameter, _rebuild_parameter_with_state,
                      _rebuild_meta_tensor_no_storage)


def _rebuild_from_type_v2(func, new_type, args, state):
    """torch's path for tensor subclasses and tensors with attributes: func(*args), made a
    new_type (Tensor or Parameter), with attributes from state."""
    if not any(func is f for f in _TENSOR_REBUILDERS):
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2: unsupported function {func!r}")
    if type(args) is not tuple:
        raise _bad("_rebuild_from_type_v2 arguments must be a tuple")
    Parameter = _parameter_class()
    ret = func(*args)
    if new_type is Parameter and type(ret) is not Parameter:
        ret = Parameter(ret, ret.requires_grad)
    elif new_type is not type(ret):
        raise pickle.UnpicklingError(f"torchlite cannot load tensors of type {new_type!r}")
    return _set_attributes(ret, state)


def _size_from_pickle(dims=()):
    if type(dims) not in (tuple, list) or not all(type(d) is int for d in dims):
        raise pickle.UnpicklingError(f"torch.Size takes a tuple of ints, got {dims!r:.60}")
    return Size(dims)


def _device_from_pickle(device_type, index=None):
    if not isinstance(device_type, str) or (index is not None and type(index) is not int):
        raise pickle.UnpicklingError(f"invalid torch.device({device_type!r:.40}, {index!r:.40})")
    return _Device(device_type, index)


def _bytes_from_pickle(text, encoding):
    # protocol 2 pickles bytes as _codecs.encode(<latin-1 text>, 'latin1')
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is only allowed as (str, 'latin1')")
    return text.encode("latin-1")


def _empty_bytes_from_pickle(data=b""):
    # protocols 0-2 pickle b"" as bytes(); never bytes(n), which would allocate n bytes
    if type(data) not in (bytes, bytearray):
        raise pickle.UnpicklingError("bytes is only allowed from bytes")
    return bytes(data)


def _bytearray_from_pickle(data=b"", encoding=None):
    if type(data) is str and encoding in ("latin1", "latin-1"):
        return bytearray(data.encode("latin-1"))
    if type(data) in (bytes, bytearray) and encoding is None:
        return bytearray(data)
    raise pickle.UnpicklingError("bytearray is only allowed from bytes or latin-1 text")


def _iterable_arg(items, what):
    if type(items) not in (list, tuple, set, frozenset):
        raise pickle.UnpicklingError(f"{what} is only allowed from a list, tuple or set")
    return items


def _set_from_pickle(items=()):
    return set(_iterable_arg(items, "set"))


def _frozenset_from_pickle(items=()):
    return frozenset(_iterable_arg(items, "frozenset"))


def _complex_from_pickle(real=0.0, imag=0.0):
    if type(real) not in (int, float) or type(imag) not in (int, float):
        raise pickle.UnpicklingError("complex is only allowed from two numbers")
    return complex(real, imag)


def _mapping_from_pickle(cls):
    def build(items=()):
        if type(items) not in (list, tuple, dict, OrderedDict, Counter):
            raise pickle.UnpicklingError(f"{cls.__name__} is only allowed from a list or dict")
        return cls(items)
    build.__name__ = cls.__name__
    return build


_ALLOWED = None


def _allowed_globals():
    """Full name -> object for every global a checkpoint may name (what torch's
    weights_only unpickler accepts, less what torchlite cannot represent)."""
    global _ALLOWED
    if _ALLOWED is None:
        untyped = _StorageType("UntypedStorage", D.uint8)
        g = {
            "collections.OrderedDict": _mapping_from_pickle(OrderedDict),
            "collections.Counter": _mapping_from_pickle(Counter),
            "torch._utils._rebuild_tensor": _rebuild_tensor,
            "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
            "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
            "torch._utils._rebuild_parameter": _rebuild_parameter,
            "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
            "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
            "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
            "torch.nn.parameter.Parameter": _parameter_class(),
            "torch.Tensor": Tensor,
            "torch.Size": _size_from_pickle,
            "torch.device": _device_from_pickle,
            "_codecs.encode": _bytes_from_pickle,
            "builtins.bytes": _empty_bytes_from_pickle,
            "builtins.set": _set_from_pickle,
            "builtins.frozenset": _frozenset_from_pickle,
            "builtins.bytearray": _bytearray_from_pickle,
            "builtins.complex": _complex_from_pickle,
            "torch.storage.UntypedStorage": untyped,
            "torch.UntypedStorage": untyped,
        }
        for d in D.DTYPES:
            g["torch." + d.name] = d
        for d, name in _STORAGE_CLASS_NAMES.items():
            g["torch." + name] = _StorageType(name, d)
        # torch.save(numpy_array) files: plain-dtype arrays and scalars (_numpy_pickle.py)
        g.update(_numpy_pickle.allowed_globals())
        _ALLOWED = g
    return _ALLOWED


def _callable_globals():
    """id -> object of the allowed globals that REDUCE may call (not torch.Tensor: its
    legacy constructor would allocate whatever size the file asks; not numpy.ndarray, the
    same)."""
    import numpy
    return {id(v): v for v in _allowed_globals().values()
            if callable(v) and v is not Tensor and v is not numpy.ndarray
            and type(v) is not _StorageType}


# ---- the user's allow-list (torch.serialization.add_safe_globals) ------------------------------
# Classes and functions the user has vouched for: a weights_only load may then name them (GLOBAL),
# call them (REDUCE), create instances with cls.__new__ (NEWOBJ) and restore an instance's state
# (BUILD: __setstate__, else its __dict__ and slots), as PyTorch's weights_only unpickler does.
# Process-wide, as in PyTorch; safe_globals(...) adds some for the length of a with block.
_user_safe = []


def _check_safe_entry(entry):
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, "
                            f"but got: {type(entry[1])}")
    elif not hasattr(entry, "__module__") or not hasattr(entry, "__qualname__"):
        raise TypeError(f"add_safe_globals: {entry!r:.80} is not a class or function (give "
                        f"(obj, 'module.name') for an object without a module and name)")


def add_safe_globals(safe_globals: Iterable[Callable[..., Any] | tuple[Callable[..., Any], str]]) -> None:
    """Mark classes and functions as safe for load(weights_only=True): a checkpoint may then
    name, call and build them.  Entries are the objects themselves, found under
    f"{obj.__module__}.{obj.__qualname__}", or (obj, "module.name") pairs for an object
    pickled under another name.  Only add what you trust: load calls them with the file's
    arguments."""
    entries = list(safe_globals)
    for e in entries:
        _check_safe_entry(e)
    for e in entries:
        if e not in _user_safe:
            _user_safe.append(e)


def get_safe_globals() -> list[Callable[..., Any] | tuple[Callable[..., Any], str]]:
    """The entries add_safe_globals (and the safe_globals blocks now open) have added."""
    return list(_user_safe)


def clear_safe_globals() -> None:
    """Forget every entry add_safe_globals added."""
    _user_safe.clear()


class safe_globals:
    """with safe_globals([...]): add_safe_globals for the length of the block only."""

    def __init__(self, safe_globals: Iterable[Callable[..., Any] | tuple[Callable[..., Any], str]]) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        self._added = [e for e in self.safe_globals if e not in _user_safe]
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> bool:
        for e in self._added:
            if e in _user_safe:
                _user_safe.remove(e)
        return False


def _user_allowed_globals():
    """Full name -> object of the user's allow-list."""
    out = {}
    for e in _user_safe:
        if isinstance(e, tuple):
            out[e[1]] = e[0]
        else:
            out[f"{e.__module__}.{e.__qualname__}"] = e
    return out


def _user_allowed(obj):
    return any(obj is v for v in _user_allowed_globals().values())


def _canonical_global(module, name):
    # torch's checkpoints are protocol 2: Python 2 names (__builtin__.set) map to Python 3's
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    return f"{_compat_pickle.IMPORT_MAPPING.get(module, module)}.{name}"


def _globals_named_in(data):
    """The full names a pickle's GLOBAL and STACK_GLOBAL opcodes give, read by disassembling
    it (pickletools: nothing is built or run).  STACK_GLOBAL's two strings are followed through
    the memo, as pickle protocol 4 writes them."""
    import pickletools
    found, strings, memo = set(), [], {}
    for op, arg, _ in pickletools.genops(data):
        if op.name == "GLOBAL":
            module, _, name = arg.partition(" ")
            found.add(_canonical_global(module, name))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
            strings.append(arg)
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            strings.append(memo.get(arg))
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
            key = len(memo) if op.name == "MEMOIZE" else arg
            memo[key] = strings[-1] if strings else None
        elif op.name == "STACK_GLOBAL":
            if len(strings) >= 2 and all(type(x) is str for x in strings[-2:]):
                found.add(_canonical_global(strings[-2], strings[-1]))
        if op.name not in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "BINGET",
                           "LONG_BINGET", "GET", "BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
            strings.append(None)         # anything else between two strings breaks the pair
    return found


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike[str] | IO[bytes]) -> list[str]:
    """The names of the classes and functions a torch.save / torchlite.save checkpoint (zip
    format) refers to that load(weights_only=True) would refuse: neither torchlite's
    allow-list nor add_safe_globals has them.  The pickle is disassembled, not run, so
    nothing is imported; an object the pickle builds at load time is not seen."""
    with _Opened(f, False) as opened:
        fh = opened.fh
        start = fh.tell()
        magic = fh.read(4)
        fh.seek(start)
        if magic != b"PK\x03\x04":
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        ckpt = _ZipCheckpoint(fh)
        if ckpt.has("constants.pkl"):
            raise ValueError("Expected input to be a checkpoint returned by torch.save but got "
                             "a torchscript checkpoint")
        if not ckpt.has("data.pkl"):
            raise _damaged("no record data.pkl")
        try:
            names = _globals_named_in(ckpt.read("data.pkl"))
        except ValueError as e:
            raise pickle.UnpicklingError(f"corrupt pickle data: {e}") from e
    allowed = set(_allowed_globals()) | set(_user_allowed_globals())
    return sorted(names - allowed)


_TORCH_DTYPE_PREFIXES = ("complex", "cfloat", "cdouble", "chalf", "uint", "int", "float",
                         "qint", "quint", "bits")


def _forbidden_global(full_name):
    module, _, name = full_name.rpartition(".")
    if module == "torch" and name.endswith("Storage"):
        return pickle.UnpicklingError(
            f"torchlite.load: unsupported storage type {full_name}: torchlite has no such "
            f"dtype (it supports {', '.join(d.name for d in D.DTYPES)})")
    if module == "torch" and name.startswith(_TORCH_DTYPE_PREFIXES):
        return pickle.UnpicklingError(f"torchlite.load: torchlite has no dtype {full_name}")
    if _names_module_class(module, name):
        return pickle.UnpicklingError(
            f"Weights only load failed: the checkpoint holds a whole {full_name} object (an "
            f"nn.Module pickled by save(model, f)), and torchlite.load(weights_only=True) only "
            f"builds tensors, containers, numbers and strings. Save the weights instead: "
            f"torchlite.save(model.state_dict(), f), then build the model and call "
            f"model.load_state_dict(torchlite.load(f)). If you trust the source of this file, "
            f"torchlite.load(f, weights_only=False) unpickles the module (that can run "
            f"arbitrary code).")
    return pickle.UnpicklingError(
        f"Weights only load failed: Unsupported global: GLOBAL {full_name} was not an "
        f"allowed global. torchlite.load(weights_only=True) only builds tensors, containers, "
        f"numbers and strings, and what torchlite.serialization.add_safe_globals([...]) (or "
        f"the safe_globals([...]) context manager) marks as trusted; load with "
        f"weights_only=False only if you trust the source of the file (that can run "
        f"arbitrary code).")


def _names_module_class(module, name):
    """Whether module.name is an nn.Module class of a module already imported (nothing is
    imported to find out: that would run the module's code)."""
    mod = sys.modules.get(module)
    obj = mod.__dict__.get(name) if mod is not None else None
    if not isinstance(obj, type):
        return False
    from .nn import Module
    return issubclass(obj, Module)


def _find_allowed_global(module, name):
    full = _canonical_global(module, name)
    # NumPy's names: the user's allow-list first (then NumPy's own functions run, as in
    # PyTorch, which has no built-in entries for them), else the checked rebuilders
    obj = _user_allowed_globals().get(full) if full.startswith("numpy.") else None
    if obj is None:
        obj = _allowed_globals().get(full)
    if obj is None:
        obj = _user_allowed_globals().get(full)
    if obj is None:
        raise _forbidden_global(full)
    return obj


# =========================================================================================
# Reading: the restricted pickle VM
# =========================================================================================
_OPS = {}


def _op(*codes):
    def register(fn):
        for c in codes:
            _OPS[c[0]] = fn
        return fn
    return register


# opcodes that build arbitrary objects or need out-of-band data: never interpreted
_REFUSED_OPS = {pickle.INST[0]: "INST", pickle.OBJ[0]: "OBJ", pickle.EXT1[0]: "EXT1",
                pickle.EXT2[0]: "EXT2", pickle.EXT4[0]: "EXT4",
                pickle.NEXT_BUFFER[0]: "NEXT_BUFFER",
                pickle.READONLY_BUFFER[0]: "READONLY_BUFFER"}

_unpack_I = struct.Struct("<I").unpack


class _WeightsUnpickler:
    """A pickle interpreter that builds only data: None, bools, numbers, strings, bytes,
    tuples, lists, dicts, sets, and what the allow-list's functions return.  REDUCE may call
    only allow-listed functions, BUILD may only add attributes to an OrderedDict or a
    Parameter, lists/dicts/sets may only grow through their own opcodes, and the persistent
    ids must name storages.  Constructors that copy a container (set(list), ...) draw on a
    budget proportional to the pickle's length, so a small file cannot make huge copies."""

    def __init__(self, data, persistent_load, encoding="utf-8", start=0):
        self._data = data
        self._pos = start
        self._persistent_load = persistent_load
        self._encoding = encoding
        self._budget = 8 * len(data) + (1 << 20)
        self._callables = _callable_globals()
        self._stack = []
        self._metastack = []
        self._memo = {}

    @property
    def position(self):
        """Offset just past the STOP opcode, once load() returned."""
        return self._pos

    def load(self):
        data = self._data
        n = len(data)
        stop = pickle.STOP[0]
        while True:
            pos = self._pos
            if pos >= n:
                raise pickle.UnpicklingError("pickle data was truncated")
            code = data[pos]
            self._pos = pos + 1
            if code == stop:
                if not self._stack or self._metastack:
                    raise pickle.UnpicklingError("corrupt pickle data: STOP with an unbalanced "
                                                 "stack")
                return self._stack.pop()
            handler = _OPS.get(code)
            if handler is None:
                raise pickle.UnpicklingError(self._opcode_error(code, pos))
            try:
                handler(self)
            except (pickle.UnpicklingError, RuntimeError):
                raise
            except Exception as e:
                raise pickle.UnpicklingError(f"corrupt pickle data at byte {pos}: "
                                             f"{type(e).__name__}: {e}") from e

    @staticmethod
    def _opcode_error(code, pos):
        name = _REFUSED_OPS.get(code)
        if name is not None:
            return (f"Weights only load failed: pickle opcode {name} (at byte {pos}) is not "
                    f"allowed by torchlite.load(weights_only=True)")
        return f"corrupt pickle data: unknown opcode {bytes([code])!r} at byte {pos}"

    # -- reading ------------------------------------------------------------------------
    def _read(self, n):
        pos = self._pos
        end = pos + n
        if n < 0 or end > len(self._data):
            raise pickle.UnpicklingError("pickle data was truncated")
        self._pos = end
        return bytes(self._data[pos:end])

    def _readline(self):
        pos = self._pos
        end = self._data.find(b"\n", pos)
        if end < 0:
            raise pickle.UnpicklingError("pickle data was truncated")
        self._pos = end + 1
        return bytes(self._data[pos:end])

    def _charge(self, *objs):
        for o in objs:
            if type(o) in (list, tuple, dict, OrderedDict, Counter, set, frozenset,
                                    str, bytes, bytearray):
                self._budget -= len(o)
        if self._budget < 0:
            raise pickle.UnpicklingError("pickle data copies more than its own size allows: "
                                         "the file is corrupt or hostile")

    def _push(self, value):
        self._stack.append(value)

    def _pop_mark(self):
        items = self._stack
        self._stack = self._metastack.pop()
        return items

    # -- framing and marks --------------------------------------------------------------
    @_op(pickle.PROTO)
    def _proto(self):
        proto = self._read(1)[0]
        if proto > pickle.HIGHEST_PROTOCOL:
            raise pickle.UnpicklingError(f"unsupported pickle protocol: {proto}")

    @_op(pickle.FRAME)
    def _frame(self):
        self._read(8)       # frames only group opcodes: the whole pickle is in memory

    @_op(pickle.MARK)
    def _mark(self):
        self._metastack.append(self._stack)
        self._stack = []

    @_op(pickle.POP)
    def _pop(self):
        if self._stack:
            self._stack.pop()
        else:
            self._pop_mark()

    @_op(pickle.POP_MARK)
    def _pop_mark_op(self):
        self._pop_mark()

    @_op(pickle.DUP)
    def _dup(self):
        self._push(self._stack[-1])

    # -- scalars, strings, bytes (most opcodes are table-driven: see _simple_opcodes) -----
    @_op(pickle.INT)
    def _int(self):
        line = self._readline()
        self._push(False if line == b"00" else True if line == b"01" else int(line, 0))

    @_op(pickle.LONG)
    def _long(self):
        line = self._readline()
        self._push(int(line[:-1] if line.endswith(b"L") else line, 0))

    @_op(pickle.FLOAT)
    def _float(self):
        self._push(float(self._readline()))

    @_op(pickle.UNICODE)
    def _unicode(self):
        self._push(str(self._readline(), "raw-unicode-escape"))

    def _py2_string(self, raw):
        return raw if self._encoding == "bytes" else raw.decode(self._encoding, "strict")

    @_op(pickle.STRING)
    def _string(self):
        import codecs
        raw = self._readline().rstrip(b"\r")
        if len(raw) < 2 or raw[0] != raw[-1] or raw[:1] not in (b'"', b"'"):
            raise pickle.UnpicklingError("the STRING opcode argument must be quoted")
        self._push(self._py2_string(codecs.escape_decode(raw[1:-1])[0]))

    # -- containers ---------------------------------------------------------------------
    @_op(pickle.TUPLE)
    def _tuple(self):
        self._push(tuple(self._pop_mark()))

    @_op(pickle.TUPLE1)
    def _tuple1(self):
        self._stack[-1] = (self._stack[-1],)

    @_op(pickle.TUPLE2)
    def _tuple2(self):
        b = self._stack.pop()
        self._stack[-1] = (self._stack[-1], b)

    @_op(pickle.TUPLE3)
    def _tuple3(self):
        c = self._stack.pop()
        b = self._stack.pop()
        self._stack[-1] = (self._stack[-1], b, c)

    @_op(pickle.LIST)
    def _list(self):
        self._push(self._pop_mark())

    def _target(self, kinds, opname):
        target = self._stack[-1]
        if type(target) not in kinds:
            raise pickle.UnpicklingError(f"{opname} on a {type(target).__name__} is "
                                         f"not allowed")
        return target

    @_op(pickle.APPEND)
    def _append(self):
        item = self._stack.pop()
        self._target((list,), "APPEND").append(item)

    @_op(pickle.APPENDS)
    def _appends(self):
        items = self._pop_mark()
        self._target((list,), "APPENDS").extend(items)

    @_op(pickle.DICT)
    def _dict(self):
        items = self._pop_mark()
        if len(items) % 2:
            raise pickle.UnpicklingError("DICT with an odd number of items")
        self._push(dict(zip(items[::2], items[1::2])))

    _MAPPINGS = (dict, OrderedDict, Counter)

    @_op(pickle.SETITEM)
    def _setitem(self):
        value = self._stack.pop()
        key = self._stack.pop()
        self._target(self._MAPPINGS, "SETITEM")[key] = value

    @_op(pickle.SETITEMS)
    def _setitems(self):
        items = self._pop_mark()
        if len(items) % 2:
            raise pickle.UnpicklingError("SETITEMS with an odd number of items")
        target = self._target(self._MAPPINGS, "SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    @_op(pickle.ADDITEMS)
    def _additems(self):
        items = self._pop_mark()
        self._target((set,), "ADDITEMS").update(items)

    @_op(pickle.FROZENSET)
    def _frozenset(self):
        self._push(frozenset(self._pop_mark()))

    # -- memo ---------------------------------------------------------------------------
    @_op(pickle.GET)
    def _get(self):
        self._push(self._memo[int(self._readline())])

    @_op(pickle.BINGET)
    def _binget(self):
        self._push(self._memo[self._read(1)[0]])

    @_op(pickle.LONG_BINGET)
    def _long_binget(self):
        self._push(self._memo[_unpack_I(self._read(4))[0]])

    @_op(pickle.PUT)
    def _put(self):
        i = int(self._readline())
        if i < 0:
            raise pickle.UnpicklingError("negative PUT argument")
        self._memo[i] = self._stack[-1]

    @_op(pickle.BINPUT)
    def _binput(self):
        self._memo[self._read(1)[0]] = self._stack[-1]

    @_op(pickle.LONG_BINPUT)
    def _long_binput(self):
        self._memo[_unpack_I(self._read(4))[0]] = self._stack[-1]

    @_op(pickle.MEMOIZE)
    def _memoize(self):
        self._memo[len(self._memo)] = self._stack[-1]

    # -- objects: only through the allow-list -------------------------------------------
    @_op(pickle.GLOBAL)
    def _global(self):
        module = self._readline().decode("utf-8")
        name = self._readline().decode("utf-8")
        self._push(_find_allowed_global(module, name))

    @_op(pickle.STACK_GLOBAL)
    def _stack_global(self):
        name = self._stack.pop()
        module = self._stack.pop()
        if type(module) is not str or type(name) is not str:
            raise pickle.UnpicklingError("STACK_GLOBAL requires two strings")
        self._push(_find_allowed_global(module, name))

    @_op(pickle.REDUCE)
    def _reduce(self):
        args = self._stack.pop()
        func = self._stack[-1]
        if self._callables.get(id(func)) is not func and not _user_allowed(func):
            raise pickle.UnpicklingError(f"Weights only load failed: trying to call "
                                         f"{type(func).__name__} object {func!r:.80}, "
                                         f"which is not an allowed function")
        if type(args) is not tuple:
            raise pickle.UnpicklingError("REDUCE arguments must be a tuple")
        self._charge(*args)
        self._stack[-1] = func(*args)

    def _new_object(self, cls, args, kwargs):
        if type(args) is not tuple or type(kwargs) is not dict:
            raise pickle.UnpicklingError("NEWOBJ arguments must be a tuple and a dict")
        if cls is _parameter_class():
            self._charge(*args)
            return cls(*args, **kwargs)
        if isinstance(cls, type) and _user_allowed(cls):
            self._charge(*args)
            return cls.__new__(cls, *args, **kwargs)
        raise pickle.UnpicklingError(f"Weights only load failed: cannot create a new "
                                     f"{cls!r:.80} object (only Parameter and the classes "
                                     f"add_safe_globals allows)")

    @_op(pickle.NEWOBJ)
    def _newobj(self):
        args = self._stack.pop()
        cls = self._stack.pop()
        self._push(self._new_object(cls, args, {}))

    @_op(pickle.NEWOBJ_EX)
    def _newobj_ex(self):
        kwargs = self._stack.pop()
        args = self._stack.pop()
        cls = self._stack.pop()
        self._push(self._new_object(cls, args, kwargs))

    @_op(pickle.BUILD)
    def _build(self):
        state = self._stack.pop()
        inst = self._stack[-1]
        self._charge(state)
        if type(inst) in (OrderedDict, Counter, _parameter_class()):
            _set_attributes(inst, state)
        elif _user_allowed(type(inst)):
            _restore_trusted_state(inst, state)
        elif not _numpy_pickle.build(inst, state):
            raise pickle.UnpicklingError(f"Weights only load failed: can only restore the "
                                         f"state of an OrderedDict, a Parameter, a NumPy array "
                                         f"or dtype, or a class add_safe_globals allows, not a "
                                         f"{type(inst).__name__}")

    @_op(pickle.PERSID)
    def _persid(self):
        self._push(self._persistent_load(self._readline().decode("ascii")))

    @_op(pickle.BINPERSID)
    def _binpersid(self):
        pid = self._stack.pop()
        self._push(self._persistent_load(pid))


def _simple_opcodes():
    """Handlers for the opcodes that push one value: a constant, a fixed-size number, or a
    length-prefixed string or bytes."""
    def constant(make):
        return lambda vm: vm._push(make())

    def number(size, unpack):
        return lambda vm: vm._push(unpack(vm._read(size))[0])

    def sized(len_size, len_unpack, convert):
        def handler(vm):
            n = len_unpack(vm._read(len_size))[0]
            vm._push(convert(vm, vm._read(n)))
        return handler

    utf8 = lambda vm, raw: str(raw, "utf-8", "surrogatepass")     # noqa: E731
    raw_bytes = lambda vm, raw: raw                               # noqa: E731
    u1, u4, u8, i4 = (struct.Struct(f).unpack for f in ("<B", "<I", "<Q", "<i"))
    return {
        pickle.NONE: constant(lambda: None), pickle.NEWTRUE: constant(lambda: True),
        pickle.NEWFALSE: constant(lambda: False), pickle.EMPTY_TUPLE: constant(tuple),
        pickle.EMPTY_LIST: constant(list), pickle.EMPTY_DICT: constant(dict),
        pickle.EMPTY_SET: constant(set),
        pickle.BININT: number(4, i4), pickle.BININT1: number(1, u1),
        pickle.BININT2: number(2, struct.Struct("<H").unpack),
        pickle.BINFLOAT: number(8, struct.Struct(">d").unpack),
        pickle.LONG1: sized(1, u1, lambda vm, raw: pickle.decode_long(raw)),
        pickle.LONG4: sized(4, i4, lambda vm, raw: pickle.decode_long(raw)),
        pickle.BINUNICODE: sized(4, u4, utf8), pickle.SHORT_BINUNICODE: sized(1, u1, utf8),
        pickle.BINUNICODE8: sized(8, u8, utf8),
        pickle.BINBYTES: sized(4, u4, raw_bytes), pickle.SHORT_BINBYTES: sized(1, u1, raw_bytes),
        pickle.BINBYTES8: sized(8, u8, raw_bytes),
        pickle.BYTEARRAY8: sized(8, u8, lambda vm, raw: bytearray(raw)),
        pickle.SHORT_BINSTRING: sized(1, u1, _WeightsUnpickler._py2_string),
        pickle.BINSTRING: sized(4, i4, _WeightsUnpickler._py2_string),
    }


_OPS.update((code[0], handler) for code, handler in _simple_opcodes().items())


class _FullUnpickler(pickle.Unpickler):
    """weights_only=False: Python's unpickler (it imports and calls whatever the file names),
    with torch's names mapped to torchlite's objects and any other torch object refused."""

    def __init__(self, file, persistent_load, **kwargs):
        super().__init__(file, **kwargs)
        self._storage_loader = persistent_load

    def persistent_load(self, pid):
        return self._storage_loader(pid)

    def find_class(self, module, name):
        if module == "torch" or module.startswith("torch."):
            obj = _allowed_globals().get(f"{module}.{name}")
            if obj is None:
                raise pickle.UnpicklingError(
                    f"torchlite.load cannot load {module}.{name}: it is a PyTorch object, and "
                    f"torchlite never imports torch")
            return obj
        return super().find_class(module, name)


def _unpickle(data, persistent_load, weights_only, encoding, start=0):
    """(object, offset just past its pickle) for the pickle at data[start:]."""
    if weights_only:
        vm = _WeightsUnpickler(data, persistent_load, encoding, start)
        return vm.load(), vm.position
    stream = io.BytesIO(data)
    stream.seek(start)
    obj = _FullUnpickler(stream, persistent_load, encoding=encoding).load()
    return obj, stream.tell()


# =========================================================================================
# Reading: storages and where they go (map_location)
# =========================================================================================
def _cuda_available():
    try:
        from . import cuda
    except ImportError:
        return False
    return bool(cuda.is_available())


def _target_device(location):
    """The device a storage tagged `location` (or mapped to it) is restored to."""
    try:
        dev = location if isinstance(location, _Device) else _Device(str(location))
    except (RuntimeError, TypeError) as e:
        raise RuntimeError(f"don't know how to restore data location of a storage "
                           f"(tagged with {location}): {e}") from None
    if dev.type == "cuda" and not _cuda_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "torchlite.cuda.is_available() is False. If you are running on a "
                           "CPU-only machine, please use torchlite.load with "
                           "map_location=torchlite.device('cpu') to map your storages to the "
                           "CPU.")
    return dev


def _location_mapper(map_location):
    """fn(location, read) -> (uint8 array of the storage's bytes, device), where read()
    reads the bytes: map_location as torch.load takes it (None, a device or device string, a
    dict of location strings, or a callable(storage, location))."""
    if map_location is None:
        def target(location):
            return location
    elif isinstance(map_location, (str, _Device)):
        def target(location):
            return map_location
    elif isinstance(map_location, dict):
        def target(location):
            return map_location.get(location, location)
    elif callable(map_location):
        return _callable_mapper(map_location)
    else:
        raise TypeError(f"torchlite.load: map_location must be None, a device, a string, a "
                        f"dict or a callable, got {type(map_location).__name__}")

    def place(location, read):
        device = _target_device(target(location))     # before reading: fail early
        return read(), device
    return place


def _callable_mapper(map_location):
    def place(location, read):
        arr = read()
        storage = _wrap(arr)     # the storage's bytes, as a uint8 tensor
        result = map_location(storage, location)
        if result is None or result is storage:
            return arr, _target_device(location if result is None else "cpu")
        if not isinstance(result, Tensor) or result.dtype is not D.uint8 \
                or tuple(result.shape) != tuple(storage.shape):
            raise RuntimeError(f"torchlite.load: map_location returned {result!r:.80}; it "
                               f"must return the storage it was given (a uint8 tensor of "
                               f"{storage.numel()} bytes), a copy of it, or None")
        if result.device.type != "cpu":
            return arr, _target_device(result.device)
        return result.contiguous()._data, _CPU
    return place


def _ascii(x):
    return x.decode("ascii") if isinstance(x, bytes) else x


def _normalize_bool_bytes(arr):
    """Make every byte of a bool storage 0 or 1 (a file may hold others): kernels count and
    select with bool masks and must see the same truth value every time."""
    t = _wrap(arr)
    if t.numel() and t.max().item() > 1:
        t.clamp_(max=1)


class _StorageTable:
    """persistent_load for a checkpoint: reads each storage once (later references share
    it), checks the size the pickle declares against the bytes the file holds for it, and
    places it (map_location).  `source` knows the file: size_of(key, nbytes) -> bytes held
    (None if there is no such storage), read(key) -> uint8 array of them."""

    def __init__(self, source, mapper):
        self._source = source
        self._mapper = mapper
        self._loaded = {}                    # key -> (uint8 array, device)
        self._bool_checked = set()

    def __call__(self, pid):
        storage_type, key, location, numel = _parse_storage_id(pid)
        dtype = storage_type.dtype
        nbytes = numel * dtype.itemsize
        size = self._source.size_of(key, nbytes)
        if size is None:
            raise _damaged(f"no data for storage '{key}'")
        if nbytes > size:
            raise _damaged(f"storage '{key}' declares {numel} elements of {dtype} "
                           f"({nbytes} bytes) but the file holds {size} bytes for it")
        if key not in self._loaded:
            self._loaded[key] = self._mapper(location, lambda: self._source.read(key))
        arr, dev = self._loaded[key]
        if dev != _CPU and arr.device == "cpu":
            # one copy of the storage on its device, which all its tensors view (as in torch)
            arr = _wrap(arr).to(dev)._data
            self._loaded[key] = (arr, dev)
        if dtype is D.bool and key not in self._bool_checked:
            _normalize_bool_bytes(arr)
            self._bool_checked.add(key)
        return _LoadedStorage(arr, dtype, nbytes, dev, key)


def _parse_storage_id(pid):
    """(storage type, key, location, numel) of a persistent id, checked: ('storage', type,
    key, location, numel), plus a sixth entry, None, in the legacy format."""
    if type(pid) is tuple and pid and _ascii(pid[0]) != "storage":
        raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got "
                                     f"{pid[0]!r:.40}")
    if type(pid) is not tuple or len(pid) not in (5, 6):
        raise pickle.UnpicklingError(f"persistent id must be ('storage', type, key, location, "
                                     f"numel), got {type(pid).__name__} {pid!r:.60}")
    _, storage_type, key, location, numel = pid[:5]
    if len(pid) == 6 and pid[5] is not None:
        raise pickle.UnpicklingError("storage views (torch < 0.4 checkpoints) are not supported")
    key, location = _ascii(key), _ascii(location)
    if type(storage_type) is not _StorageType:
        raise pickle.UnpicklingError(f"unsupported storage type {storage_type!r:.60}")
    if type(key) is not str or type(location) is not str \
            or type(numel) is not int or numel < 0:
        raise pickle.UnpicklingError(f"invalid storage id {pid!r:.200}")
    return storage_type, key, location, numel


# =========================================================================================
# Reading: files
# =========================================================================================
def _readinto_full(fh, view):
    """Fill view from fh; the number of bytes read (less than len(view) at end of file)."""
    got, n = 0, view.nbytes
    readinto = getattr(fh, "readinto", None)
    while got < n:
        if readinto is not None:
            k = readinto(view[got:])
        else:
            chunk = fh.read(min(n - got, 1 << 24))
            k = len(chunk)
            view[got:got + k] = chunk
        if not k:
            break
        got += k
    return got


def _byte_array(n):
    """A new uint8 array of n bytes (torchlite's allocator) and a writable memoryview of it
    (valid while the array lives)."""
    arr = _A.empty((n,), _UINT8)
    return arr, _memory(arr.data_ptr(), n)


def _damaged(what):
    return RuntimeError(f"torchlite.load: the checkpoint is corrupt or truncated: {what}")


class _ZipCheckpoint:
    """The records of a PyTorch zip checkpoint, each validated against the file before it is
    read: stored (uncompressed), inside the file, CRC-32 checked, and no more storage bytes
    in all than the file holds (so overlapping records cannot multiply memory)."""

    def __init__(self, fh, mapping=None):
        self._fh = fh
        self._mapping = mapping
        self._size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        try:
            infos = zipfile.ZipFile(fh).infolist()
        except Exception as e:
            raise _damaged(f"unreadable zip structure ({type(e).__name__}: {e})") from e
        if not infos:
            raise _damaged("the archive is empty")
        first = infos[0].filename
        if "/" not in first:
            raise _damaged(f"record {first!r} is not in the archive's folder")
        prefix = first.split("/", 1)[0] + "/"
        self._records = {i.filename[len(prefix):]: i for i in infos
                         if i.filename.startswith(prefix)}
        self._storage_budget = self._size

    def has(self, name):
        return name in self._records

    def size_of(self, name):
        info = self._records.get(name)
        return None if info is None else info.file_size

    def _span(self, name):
        """(ZipInfo, offset of the record's first byte in the file)."""
        info = self._records.get(name)
        if info is None:
            raise _damaged(f"no record {name!r}")
        if info.flag_bits & 0x1:
            raise _damaged(f"record {name!r} is encrypted")
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise RuntimeError(f"torchlite.load: record {name!r} is compressed (method "
                               f"{info.compress_type}); PyTorch checkpoints store records "
                               f"uncompressed")
        fh = self._fh
        fh.seek(info.header_offset)
        header = fh.read(_LOCAL_HEADER_SIZE)
        if len(header) < _LOCAL_HEADER_SIZE or header[:4] != b"PK\x03\x04":
            raise _damaged(f"bad local header for record {name!r}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        raw_name = fh.read(name_len)
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        if raw_name.decode(encoding, "replace") != info.orig_filename:
            raise _damaged(f"local header of record {name!r} names {raw_name!r}")
        start = info.header_offset + _LOCAL_HEADER_SIZE + name_len + extra_len
        if start + info.file_size > self._size:
            raise _damaged(f"record {name!r} ({info.file_size} bytes at offset {start}) runs "
                           f"past the end of the file ({self._size} bytes)")
        return info, start

    @staticmethod
    def _check_crc(name, expected, data):
        if zlib.crc32(data) != expected:
            raise _damaged(f"CRC-32 mismatch in record {name!r}")

    def read(self, name):
        """A small record's bytes."""
        info, start = self._span(name)
        self._fh.seek(start)
        data = self._fh.read(info.file_size)
        if len(data) != info.file_size:
            raise _damaged(f"record {name!r} is truncated")
        self._check_crc(name, info.CRC, data)
        return data

    def read_storage(self, name):
        """A storage record, as a new uint8 array (or, with mmap, a view of the mapping)."""
        info, start = self._span(name)
        self._storage_budget -= info.file_size
        if self._storage_budget < 0:
            raise _damaged("its storage records overlap")
        if self._mapping is not None and info.file_size and start % _ALIGNMENT == 0:
            import numpy as np
            return _A.from_numpy(np.frombuffer(self._mapping, np.uint8, info.file_size, start))
        arr, view = _byte_array(info.file_size)
        self._fh.seek(start)
        if _readinto_full(self._fh, view) != info.file_size:
            raise _damaged(f"record {name!r} is truncated")
        # the CRC costs ~16 ms per 100 MB (torch.load skips it); it cannot overlap the read
        # on another thread, as zlib.crc32 holds the GIL (Python 3.11)
        self._check_crc(name, info.CRC, view)
        return arr


def _load_zip(fh, mapper, weights_only, encoding, mapping):
    ckpt = _ZipCheckpoint(fh, mapping)
    if ckpt.has("constants.pkl"):
        raise RuntimeError("torchlite.load: this is a TorchScript archive (torch.jit.save), "
                           "which torchlite cannot load")
    if ckpt.has("byteorder"):
        order = ckpt.read("byteorder")
        if order not in (b"little", b"big"):
            raise _damaged(f"unknown byte order {order[:20]!r}")
        if order.decode() != sys.byteorder:
            raise RuntimeError(f"torchlite.load: the checkpoint was written on a {order.decode()}"
                               f"-endian machine; byte swapping is not supported")
    if not ckpt.has("data.pkl"):
        raise _damaged("no record data.pkl")
    return _unpickle(ckpt.read("data.pkl"), _StorageTable(_ZipStorages(ckpt), mapper),
                     weights_only, encoding)[0]


class _ZipStorages:
    """Storage source of a zip checkpoint: storage <key> is record data/<key>."""

    def __init__(self, ckpt):
        self._ckpt = ckpt

    def size_of(self, key, nbytes):
        return self._ckpt.size_of("data/" + key)

    def read(self, key):
        return self._ckpt.read_storage("data/" + key)


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001


def _load_legacy(data, mapper, weights_only, encoding):
    """torch < 1.6's format (torch.save(..., _use_new_zipfile_serialization=False)): pickles
    of the magic number, the protocol version, system info and the object, then the list of
    storage keys, then each storage as an int64 element count and its bytes."""
    # the header is read by the restricted VM whatever weights_only says: a file whose first
    # pickle is not the magic number is no checkpoint, and nothing of it is run to find out
    try:
        magic, pos = _unpickle(data, _no_storages, True, encoding, 0)
    except pickle.UnpicklingError:
        magic = None
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise RuntimeError("torchlite.load: invalid magic number; the file is not a PyTorch "
                           "checkpoint (neither a zip archive nor torch's legacy format), or it "
                           "is corrupt. A file written by pickle.dump is read with pickle.load, "
                           "and only if you trust its source")
    protocol, pos = _unpickle(data, _no_storages, True, encoding, pos)
    if type(protocol) is not int or protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"torchlite.load: invalid protocol version {protocol!r:.40}")
    sys_info, pos = _unpickle(data, _no_storages, True, encoding, pos)
    if not isinstance(sys_info, dict) or \
            sys_info.get("little_endian", True) != (sys.byteorder == "little"):
        raise RuntimeError("torchlite.load: the checkpoint's byte order is not this machine's")
    storages = _LegacyStorages(len(data) - pos)
    obj, pos = _unpickle(data, _StorageTable(storages, mapper), weights_only, encoding, pos)
    keys, pos = _unpickle(data, _no_storages, True, encoding, pos)
    storages.fill(keys, data, pos)
    return obj


def _no_storages(pid):
    raise pickle.UnpicklingError("unexpected persistent id in a checkpoint header")


class _LegacyStorages:
    """Storage source of a legacy checkpoint.  Its storages' bytes follow the object's
    pickle, so each is allocated (its declared size checked against what is left of the
    file) when the pickle first names it, and filled once the pickle is read."""

    def __init__(self, bytes_left):
        self._left = bytes_left
        self._sizes = {}        # key -> (nbytes, itemsize) of its first reference
        self._views = {}        # key -> writable memoryview of its array

    def size_of(self, key, nbytes):
        if key not in self._sizes:
            if nbytes > self._left:
                raise _damaged(f"storage '{key}' declares {nbytes} bytes, more than the file "
                               f"holds")
            self._left -= nbytes
            self._sizes[key] = nbytes
        return self._sizes[key]

    def read(self, key):
        arr, self._views[key] = _byte_array(self._sizes[key])
        return arr

    def fill(self, keys, data, pos):
        if type(keys) is not list or set(keys) != set(self._views) \
                or len(keys) != len(self._views):
            raise _damaged("its list of storage keys does not match the storages it uses")
        for key in keys:
            view = self._views[key]
            if pos + 8 + view.nbytes > len(data):
                raise _damaged(f"storage '{key}' is truncated")
            count = struct.unpack("<q", data[pos:pos + 8])[0]
            # the count is in elements of the storage's type; its bytes must be what the
            # pickle declared
            if count < 0 or (count == 0) != (view.nbytes == 0) or \
                    (count and view.nbytes % count):
                raise _damaged(f"storage '{key}' holds {count} elements, which do not fill "
                               f"{view.nbytes} bytes")
            view[:] = data[pos + 8:pos + 8 + view.nbytes]
            pos += 8 + view.nbytes


class _Opened:
    """The binary file to read: opened here for a path (and closed after), else the caller's
    own file object, which must be readable and seekable."""

    def __init__(self, f, use_mmap):
        self._own = _is_path(f)
        if use_mmap and not self._own:
            raise ValueError("f must be a file path in order to use the mmap argument")
        if self._own:
            self.fh = open(f, "rb")
        else:
            if not hasattr(f, "read"):
                raise TypeError(f"torchlite.load: f must be a path or a readable binary file "
                                f"object, got {type(f).__name__}")
            if hasattr(f, "seekable") and not f.seekable():
                raise io.UnsupportedOperation(
                    "You can only torchlite.load from a file that is seekable. Please pre-load "
                    "the data into a buffer like io.BytesIO and try to load from it instead.")
            self.fh = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._own:
            self.fh.close()


def _weights_only_setting(weights_only, pickle_module):
    """load's weights_only after PyTorch's rules: the default is True, or False when a
    pickle_module is given; TORCH_FORCE_WEIGHTS_ONLY_LOAD forces True;
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD makes the default False (with PyTorch's warning) but
    leaves an explicit argument alone; both set is an error."""
    truthy = ("1", "y", "yes", "true")
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in truthy
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in truthy
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if weights_only is None:
        if force_no:
            import warnings
            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                          "the`weights_only` argument was not explicitly passed to `torch.load`, "
                          "forcing weights_only=False.", UserWarning, stacklevel=3)
            return False
        return pickle_module is None
    return bool(weights_only)


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load an object saved by torchlite.save or torch.save (zip format, or torch < 1.6's
    legacy format) from a path or a seekable binary file object.

    weights_only (default True) builds only tensors, Parameters, containers (dict,
    OrderedDict, list, tuple, set), numbers, strings, bytes, dtypes, torch.Size, devices and
    NumPy arrays and scalars of plain dtypes (torch.save(numpy_array) files; rebuilt from
    checked bytes, see torchlite/_numpy_pickle.py -- PyTorch refuses these unless allowed by
    add_safe_globals); any other object the file names raises pickle.UnpicklingError naming
    it.  weights_only=False lets Python's pickle import and call what the file names: only
    for files you trust.  As in PyTorch, the environment variable
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 makes the default False (with a warning; an explicit
    weights_only wins) and TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 forces True.
    map_location: None (where they were saved), a device or string, a dict {saved location:
    new location}, or callable(storage, location) returning the storage (a uint8 tensor of
    its bytes), a copy of it, or None.  mmap=True maps the file
    (a path) copy-on-write instead of reading it: storages are not read, nor CRC-checked,
    until used.  encoding (for Python 2 strings) is the one pickle_load_args entry."""
    weights_only = _weights_only_setting(weights_only, pickle_module)
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("torchlite.load reads pickles itself: pickle_module must be None or "
                         "the standard pickle module")
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"torchlite.load: unexpected arguments {sorted(pickle_load_args)}")
    mapper = _location_mapper(map_location)
    with _Opened(f, bool(mmap)) as opened:
        fh = opened.fh
        start = fh.tell()
        magic = fh.read(4)
        fh.seek(start)
        if not magic:
            raise RuntimeError("torchlite.load: the file is empty")
        if magic == b"PK\x03\x04":
            mapping = _map_file(fh) if mmap else None
            return _load_zip(fh, mapper, weights_only, encoding, mapping)
        if magic[:1] == pickle.PROTO:
            if mmap:
                raise RuntimeError("mmap can only be used with files saved with the zip "
                                   "format of torch.save (torch >= 1.6)")
            return _load_legacy(fh.read(), mapper, weights_only, encoding)
        raise RuntimeError("torchlite.load: the file is not a PyTorch checkpoint (neither a "
                           "zip archive nor a legacy pickle)")


def _map_file(fh):
    import mmap as _mmap
    # copy-on-write, as torch's default: writes to loaded tensors never reach the file
    return _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY)


from ._safetensors import save_safetensors, load_safetensors  # noqa: E402,F401  (re-export)
