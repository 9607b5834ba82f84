"""Creation functions: tensor, as_tensor, from_numpy, zeros, ones, full, empty, arange,
linspace, logspace, eye and the *_like forms."""
from __future__ import annotations

import builtins
import math
import numbers
import os
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import _memory_format as MF
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .. import _dispatch
from .._device import to_device, factory_device
from .._size import check_numel, ints_from_args
from .._tensor import Tensor, _wrap, _as_pyscalar
from . import _register
from ._kit import factory_dtype, out_array, write_out
from .. import _layout

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._device import device
    from .._dtype import dtype
    from .._layout import layout
    from .._memory_format import memory_format


def _place(arr, device, requires_grad=False, dtype=None, pin_memory=False):
    """Finish a new array: move it to `device` (None: leave it where it is), or into pinned
    host memory, set requires_grad."""
    dev = to_device(device)
    if dev.type == "meta":
        arr = _dispatch.meta_like(arr)
    elif dev.type != "cpu":
        index = _dispatch.devices.checked_index(dev, f"create a tensor on {dev}")
        arr = _dispatch.devices.to_device(arr, index)
    t = _wrap(arr)
    if pin_memory:
        t = t.pin_memory()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _on_meta(shape, dt, device, requires_grad, out):
    """A factory's result when it goes to the meta device (no values to compute, nothing
    drawn from a generator), else None."""
    if out is not None or not _dispatch.is_meta(factory_device(device)):
        return None
    t = _wrap(_dispatch.array.empty(tuple(shape), dt.code, device="meta"))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _made(arr, device, requires_grad, out, op):
    """A factory's result: the array as a new tensor on `device`, or (out= given; the array
    was made in out's dtype) copied into out, which keeps its device."""
    if out is None:
        return _place(arr, factory_device(device), requires_grad)
    return write_out(_place(arr, out.device), out, op)


def _on(device):
    """The array-layer device for a creation's `device=` argument: None for the CPU, else
    'cuda:N' (after checking that CUDA is usable and N exists), so new arrays are made on
    the device instead of on the host and copied over.  None means the default device
    (torchlite.set_default_device)."""
    device = factory_device(device)
    if device is None or device == "cpu":
        return None
    dev = to_device(device)
    if dev.type == "cpu":
        return None
    if dev.type == "meta":
        return "meta"
    return f"cuda:{_dispatch.devices.checked_index(dev, f'create a tensor on {dev}')}"


def _size_args(size, op):
    """zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) all mean shape (2, 3)."""
    return check_numel(ints_from_args(size, op), op)


# ---- tensor() from Python data ---------------------------------------------------------------
def _infer(data, shape, flat, depth, state):
    """Walk nested sequences: fill `shape` on the first path, check the rest against it,
    append scalars to `flat`; state[0] is the widest kind of Python value seen (0 bool, 1 int,
    2 float, 3 complex), state[2] the promoted dtype of the typed values (NumPy scalars and
    tensors), state[3] whether any Python value was seen."""
    if isinstance(data, Tensor):
        # a tensor inside a sequence, as PyTorch reads it: where the first path (the shape)
        # has a value, one value -- a one-element tensor's item(), its dtype taking part in the
        # inference as a NumPy scalar's; any other size is an error -- and where a sequence
        # is expected, a sequence of its rows
        if depth < len(shape) and data.ndim:
            if data.shape[0] != shape[depth]:
                raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} "
                                 f"(got {data.shape[0]})")
            for row in data:
                _infer(row, shape, flat, depth + 1, state)
            return
        if data.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if depth != len(shape):
            raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got a scalar)")
        state[2] = data.dtype if state[2] is None else D.promote_types(state[2], data.dtype)
        flat.append(data.item())
        return
    if isinstance(data, (list, tuple, builtins.range)) or _is_array_like(data):
        n = len(data)
        if depth == len(shape):
            if flat:          # values were already found at this depth: [1, [2, 3]]
                raise ValueError(f"expected a number at dim {depth}, got a sequence of length {n}")
            shape.append(n)
        elif shape[depth] != n:
            raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {n})")
        for x in data:
            _infer(x, shape, flat, depth + 1, state)
        return
    if depth != len(shape):
        raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got a scalar)")
    if hasattr(data, "dtype") and hasattr(data, "__array_interface__"):    # a NumPy scalar:
        code = _A.numpy_dtype_code(data.__array_interface__["typestr"])   # its dtype counts,
        if code >= 0:                                                     # as in PyTorch
            nd = D.DTYPES[code]
            state[2] = nd if state[2] is None else D.promote_types(state[2], nd)
            flat.append(_as_pyscalar(data))
            return
    state[3] = True
    if isinstance(data, (builtins.str, builtins.bytes)):
        # PyTorch's errors: a string where the first value of a sequence is looked for is
        # read as one more dimension; elsewhere it is a bad value
        kind = type(data).__name__
        if depth and not flat:
            raise ValueError(f"too many dimensions '{kind}'")
        raise TypeError(f"new(): invalid data type '{kind}'")
    v = _as_pyscalar(data)
    if isinstance(v, builtins.bool):
        k = 0
    elif isinstance(v, builtins.int):
        k = 1
    elif isinstance(v, builtins.float):
        k = 2
    elif isinstance(v, builtins.complex):
        k = 3
    else:
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    flat.append(v)
    state[0] = builtins.max(state[0], k)


def _is_array_like(x):
    return hasattr(x, "__array_interface__") and hasattr(x, "__len__") and getattr(x, "ndim", 0) > 0


def _from_data(data, dtype):
    """A new CPU array holding a copy of `data` (scalar, nested sequence, NumPy, Tensor)."""
    dt = D.to_dtype(dtype)
    if isinstance(data, Tensor):
        arr = data.cpu()._data if data.device.type != "cpu" else data._data
        return _ew.clone(_ew.cast(arr, dt.code) if dt else arr, False)
    if hasattr(data, "__array_interface__") and (not isinstance(data, numbers.Number)
                                                  or hasattr(data, "dtype")):
        import numpy as np
        a = np.asarray(data)        # NumPy arrays and NumPy scalars (0-d, their own dtype)
        if a.dtype.kind == "O":
            data = a.tolist()
        else:
            if a.dtype.byteorder == ">" or (a.strides and builtins.min(a.strides) < 0):
                a = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("="))
            src = _A.from_numpy(a)
            out = _ew.clone(src, False)
            return _ew.cast(out, dt.code) if dt else out
    if type(data) is list and data and dt is None:     # the common flat list, without _infer
        kinds = {type(x) for x in data}
        if kinds == {int}:
            return _A.from_flat(data, [len(data)], D.int64.code)
        if kinds == {float} or kinds == {float, int}:
            return _A.from_flat(data, [len(data)], D.get_default_dtype().code)
    shape, flat, state = [], [], [0, None, None, False]
    _infer(data, shape, flat, 0, state)
    if dt is None:
        if not flat:      # no values to infer from (tensor([]), tensor([[]])): the default
            dt = D.get_default_dtype()
        else:
            dt = (D.bool, D.int64, D.get_default_dtype(), D.get_default_complex_dtype())[state[0]]
            if state[2] is not None:        # NumPy scalars and tensors keep their dtypes,
                dt = D.promote_types(dt, state[2]) if state[3] else state[2]   # promoted with Python's
    return _A.from_flat(flat, shape, dt.code)


def tensor(data: Any, *, dtype: dtype | None = None, device: str | device | int | None = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists/tuples, a NumPy array or
    another tensor).  The dtype is inferred as PyTorch does: bool, int64, or the default float;
    a tensor's copy stays on its device unless `device` is given."""
    if not isinstance(data, Tensor) and hasattr(data, "_storage_elements"):    # a storage
        data = data._storage_elements()
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _place(_from_data(data, dtype), factory_device(device), requires_grad, pin_memory=pin_memory)


def as_tensor(data: Any, dtype: dtype | None = None,
              device: str | device | int | None = None) -> Tensor:
    """Like tensor(), but shares memory with `data` when it is already a tensor or a NumPy
    array of the right dtype and device."""
    dt = D.to_dtype(dtype)
    if isinstance(data, Tensor):
        if (dt is None or dt is data.dtype) and (device is None or to_device(device) == data.device):
            return data
        return data.to(device=device, dtype=dt)
    if hasattr(data, "__array_interface__") and not isinstance(data, numbers.Number):
        code = _A.numpy_dtype_code(data.__array_interface__["typestr"])
        if code >= 0 and (dt is None or dt.code == code) and to_device(device).type == "cpu":
            try:
                return from_numpy(data)
            except (ValueError, TypeError):
                pass
    return tensor(data, dtype=dtype, device=device)


def asarray(obj: Any, *, dtype: dtype | None = None, device: str | device | int | None = None,
            copy: bool | None = None, requires_grad: bool = False) -> Tensor:
    t = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray: Any) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes show through both ways)."""
    import numpy as np
    if not isinstance(ndarray, np.ndarray):     # a NumPy scalar's buffer is a temporary
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.flags.writeable:
        import warnings
        warnings.warn("The given NumPy array is not writable, and torchlite does not support non-writable "
                      "tensors. This means writing to this tensor will result in undefined behavior. You may "
                      "want to copy the array to protect its data or make it writable before converting it to "
                      "a tensor.", UserWarning, stacklevel=2)
    return _wrap(_A.from_numpy(ndarray))


def _tensor_reduce_ex(self, proto):
    """Tensor.__reduce_ex__: pickled as a NumPy copy of its values and requires_grad (the
    names _from_pickle/_from_bf16_bits of this module are written into pickles: keep them)."""
    import numpy as np
    if self.is_meta:                             # no values: its shape, strides and dtype
        return (_from_meta_pickle, (tuple(self.shape), tuple(self.stride()), self.dtype.code,
                                    self.requires_grad))
    on_device = self.device.type != "cpu"        # back onto its device, as PyTorch's pickles
    if self._data.dtype == D.bfloat16.code:      # no NumPy dtype: carry its bits
        bits = np.asarray(self.detach().cpu().view(D.int16)._data).copy()
        if on_device:
            return (_from_bf16_bits_on, (bits, self.requires_grad, str(self.device)))
        return (_from_bf16_bits, (bits, self.requires_grad))
    values = np.array(self.detach().cpu().numpy(), copy=True)
    if on_device:
        return (_from_pickle_on, (values, self.requires_grad, str(self.device)))
    return (_from_pickle, (values, self.requires_grad))


Tensor.__reduce_ex__ = _tensor_reduce_ex


def _tensor_deepcopy(self, memo):
    """copy.deepcopy(tensor), PyTorch's way: the storage is deep-copied once per deepcopy (so
    views of one base stay views of one copy, tied by their memory as before) and the copy
    views it with the same size, strides and offset, on the same device; requires_grad, the
    gradient (deep-copied) and a subclass's type are kept.  Only a graph leaf can be copied
    (PyTorch's error: a module holding a computed weight, as weight_norm's, cannot be
    deep-copied there either).  (Before, deepcopy went through pickling, which brought a CUDA
    tensor -- a module's buffers -- back to the CPU.)"""
    import copy
    found = memo.get(id(self))
    if found is not None:
        return found
    if self.grad_fn is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.  If you were attempting to "
                           "deepcopy a module, this may be because of a weight_norm or "
                           "parametrization whose value is computed in the graph")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        if self.is_meta:                     # no memory to share: the same metadata
            new = empty_strided(tuple(self.shape), tuple(self.stride()), dtype=self.dtype,
                                device="meta")
        else:
            storage = copy.deepcopy(self.untyped_storage(), memo)     # once per storage
            new = empty(0, dtype=self.dtype, device=self.device)
            new.set_(storage, self.storage_offset(), tuple(self.shape), tuple(self.stride()))
    if type(self) is not Tensor:
        new = new.as_subclass(type(self))
    new.requires_grad_(self.requires_grad)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = copy.deepcopy(self.grad, memo)
    state = getattr(self, "__dict__", None)
    if state:
        new.__dict__.update(copy.deepcopy(state, memo))
    return new


Tensor.__deepcopy__ = _tensor_deepcopy


def _from_pickle(array, requires_grad):
    t = _wrap(_ew.clone(_A.from_numpy(array), False))
    t.requires_grad = requires_grad
    return t


def _from_pickle_on(array, requires_grad, device):
    """A pickled tensor of a device other than the CPU, put back on it (an error naming the
    device when it is not available, as PyTorch's)."""
    t = _wrap(_ew.clone(_A.from_numpy(array), False)).to(device)
    t.requires_grad = requires_grad
    return t


def _from_bf16_bits_on(bits, requires_grad, device):
    t = _from_bf16_bits(bits, False).to(device)
    t.requires_grad = requires_grad
    return t


def _from_meta_pickle(shape, strides, dtype_code, requires_grad):
    t = empty_strided(shape, strides, dtype=D.DTYPES[dtype_code], device="meta")
    t.requires_grad = requires_grad
    return t


def _from_bf16_bits(bits, requires_grad):
    t = _from_pickle(bits, requires_grad)
    return t.view(D.bfloat16)


# ---- filled tensors ----------------------------------------------------------------------
def _new_full(size, value, dtype, device, requires_grad, out=None, op="full", pin_memory=False):
    shape = _size_args(size, op)
    if out is not None:
        factory_dtype(dtype, out, op)
        _A.fill_(out_array(out, shape, op), value)
        return out
    dt = D.to_dtype(dtype, D.get_default_dtype())
    return _place(_A.full(shape, value, dt.code, device=_on(device)), None, requires_grad,
                  pin_memory=pin_memory)


def zeros(*size: int | Sequence[int], out: Tensor | None = None, dtype: dtype | None = None,
          layout: layout | None = None, device: str | device | int | None = None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros of the given shape (default dtype float32)."""
    _layout.check(layout, "zeros")
    return _new_full(size, 0, dtype, device, requires_grad, out, "zeros", pin_memory)


def ones(*size: int | Sequence[int], out: Tensor | None = None, dtype: dtype | None = None,
         layout: layout | None = None, device: str | device | int | None = None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ones of the given shape."""
    _layout.check(layout, "ones")
    return _new_full(size, 1, dtype, device, requires_grad, out, "ones", pin_memory)


def empty(*size: int | Sequence[int], out: Tensor | None = None, dtype: dtype | None = None,
          layout: layout | None = None, device: str | device | int | None = None,
          requires_grad: bool = False, pin_memory: bool = False,
          memory_format: memory_format | None = None) -> Tensor:
    """An uninitialised tensor of the given shape (laid out in memory_format when given)."""
    _layout.check(layout, "empty")
    shape = _size_args(size, "empty")
    if out is not None:
        factory_dtype(dtype, out, "empty")
        out_array(out, shape, "empty")
        return out
    dt = D.to_dtype(dtype, D.get_default_dtype())
    fmt = MF.check(memory_format, "empty")
    if fmt is None or fmt is MF.preserve_format:
        arr = _A.empty(shape, dt.code, device=_on(device))
    else:       # PyTorch's strides for the format, size-0 dims included (format_strides)
        arr = _A.empty_with_strides(shape, MF.format_strides(shape, fmt, "empty"), dt.code,
                                    device=_on(device))
    return _place(arr, None, requires_grad, pin_memory=pin_memory)


def full(size: int | Sequence[int], fill_value: bool | int | float | complex | Tensor, *,
         out: Tensor | None = None, dtype: dtype | None = None, layout: layout | None = None,
         device: str | device | int | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with fill_value; the dtype follows the value (bool, int64, the default
    float or the default complex dtype)."""
    _layout.check(layout, "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    fill_value = _as_pyscalar(fill_value)
    if dtype is None and out is None:
        dtype = (D.bool if isinstance(fill_value, builtins.bool) else
                 D.int64 if isinstance(fill_value, builtins.int) else
                 D.get_default_complex_dtype() if isinstance(fill_value, builtins.complex) else
                 D.get_default_dtype())
    return _new_full((size,), fill_value, dtype, device, requires_grad, out, "full")


def _like_array(input: Tensor, dt: D.dtype, device: str | device | int | None,
                memory_format: memory_format | None, op: str) -> Any:
    """The uninitialised array of a *_like op (empty_like, zeros_like, rand_like, ...): input's
    shape, dtype `dt`, on `device` (None: input's), with the strides PyTorch's empty_like
    gives (see _memory_format.like_strides): preserve_format, the default, keeps a dense
    input's strides and gives any other input dense strides in its own dim order (a sliced
    channels_last input stays channels_last); another memory_format lays it out as asked."""
    on = None if device is None else _on(device) or "cpu"
    return _A.empty_like(input._data, dt.code, device=on,
                         memory_format=MF.check(memory_format, op), op=op)


def _like(input, fill_value, dtype, device, requires_grad, memory_format=None):
    """A new tensor shaped like input, filled with fill_value (None: uninitialised), laid out
    as _like_array says."""
    if not isinstance(input, Tensor):
        raise TypeError(f"argument 'input' must be Tensor, not {type(input).__name__}")
    dt = D.to_dtype(dtype, input.dtype)
    arr = _like_array(input, dt, device, memory_format, "empty_like")
    if fill_value is not None:
        _A.fill_(arr, _as_pyscalar(fill_value.item() if isinstance(fill_value, Tensor) else fill_value))
    return _place(arr, None, requires_grad)


def empty_like(input: Tensor, *, dtype: dtype | None = None, layout: layout | None = None,
               device: str | device | int | None = None, requires_grad: bool = False,
               memory_format: memory_format | None = None) -> Tensor:
    """An uninitialised tensor with input's shape, dtype and memory order."""
    _layout.check(layout, "empty_like")
    return _like(input, None, dtype, device, requires_grad, memory_format)


def zeros_like(input: Tensor, *, dtype: dtype | None = None, layout: layout | None = None,
               device: str | device | int | None = None, requires_grad: bool = False,
               memory_format: memory_format | None = None) -> Tensor:
    """Zeros with input's shape, dtype and memory order."""
    _layout.check(layout, "zeros_like")
    return _like(input, 0, dtype, device, requires_grad, memory_format)


def ones_like(input: Tensor, *, dtype: dtype | None = None, layout: layout | None = None,
              device: str | device | int | None = None, requires_grad: bool = False,
              memory_format: memory_format | None = None) -> Tensor:
    """Ones with input's shape, dtype and memory order."""
    _layout.check(layout, "ones_like")
    return _like(input, 1, dtype, device, requires_grad, memory_format)


def full_like(input: Tensor, fill_value: bool | int | float | complex | Tensor, *,
              dtype: dtype | None = None, layout: layout | None = None,
              device: str | device | int | None = None, requires_grad: bool = False,
              memory_format: memory_format | None = None) -> Tensor:
    """fill_value everywhere, with input's shape, dtype (not the value's) and memory order."""
    _layout.check(layout, "full_like")
    return _like(input, fill_value, dtype, device, requires_grad, memory_format)


# ---- ranges ------------------------------------------------------------------------------
def _scalar_arg(x, name, op):
    if isinstance(x, Tensor):
        x = x.item() if not x.is_meta else 0.0      # a meta tensor: only the result's shape counts
    x = _as_pyscalar(x)
    if not isinstance(x, (builtins.int, builtins.float)):
        raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(x).__name__}")
    return x


def arange(start: int | float | Tensor = 0, end: int | float | Tensor | None = None,
           step: int | float | Tensor = 1, *, out: Tensor | None = None, dtype: dtype | None = None,
           layout: layout | None = None, device: str | device | int | None = None,
           requires_grad: bool = False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) by step: int64 for integer
    arguments, the default float dtype otherwise.  With an integer dtype, fractional
    arguments are truncated toward zero first, as PyTorch does."""
    _layout.check(layout, "arange")
    if end is None:
        start, end = 0, start
    start = _scalar_arg(start, "start", "arange")
    end = _scalar_arg(end, "end", "arange")
    step = _scalar_arg(step, "step", "arange")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if any(isinstance(v, builtins.float) and not math.isfinite(v) for v in (start, end, step)):
        raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if (end - start) / step < 0:
        raise RuntimeError(f"arange: upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    all_int = all(isinstance(v, builtins.int) for v in (start, end, step))
    dt = factory_dtype(dtype, out, "arange", D.int64 if all_int else None)
    if dt is D.bool:
        raise RuntimeError("\"arange\" not implemented for 'Bool'")
    meta = _on_meta((_arange_length(start, end, step, dt),), dt, device, requires_grad, out)
    if meta is not None:
        return meta
    if dt.is_floating_point:
        arr = _A.fill_affine(_A.empty((_arange_length(start, end, step, dt),), dt.code),
                             start, step)
    else:
        arr = _arange_int(start, end, step, dt)
    return _made(arr, device, requires_grad, out, "arange")


def _arange_length(start, end, step, dt):
    """arange's number of values: for int64, from the arguments truncated toward zero (as
    PyTorch computes it), else from the arguments as given."""
    if dt is D.int64:
        istart, iend, istep = builtins.int(start), builtins.int(end), builtins.int(step)
        if istep == 0:      # a fractional step that truncates to 0: PyTorch's ValueError
            raise ValueError("arange: step must be nonzero")
        return _range_length(-((istart - iend) // istep))      # ceil((iend - istart) / istep)
    return _range_length(math.ceil((end - start) / step))


def _range_length(n):
    if n >= 2 ** 62:
        raise RuntimeError(f"arange: invalid size {n}, possible overflow?")
    return builtins.max(builtins.int(n), 0)


def _arange_int(start, end, step, dt):
    """PyTorch's integer arange: values trunc(start) + i * trunc(step), computed in int64 and
    cast (wrapping) to dt.  int64 also takes its length from the truncated arguments; the
    smaller types take it from the original ones."""
    istart, istep = builtins.int(start), builtins.int(step)
    arr = _A.fill_affine(_A.empty((_arange_length(start, end, step, dt),), D.int64.code),
                         istart, istep)
    return arr if dt is D.int64 else _ew.cast(arr, dt.code)


def range(start: int | float = 0, end: int | float | None = None, step: int | float = 1, *,
          out: Tensor | None = None, dtype: dtype | None = None, layout: layout | None = None,
          device: str | device | int | None = None, requires_grad: bool = False) -> Tensor:
    """start, start + step, ... up to and including end: deprecated in PyTorch, which warns
    (arange excludes end); float by default."""
    _layout.check(layout, "range")
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    n = builtins.int(math.floor((end - start) / step)) + 1
    if n < 0:
        raise RuntimeError(f"upper bound and larger bound inconsistent with step sign (start={start}, "
                           f"end={end}, step={step})")
    check_numel((n,), "range")
    dt = factory_dtype(dtype, out, "range")
    arr = _A.fill_affine(_A.empty((n,), D.float64.code), builtins.float(start), builtins.float(step))
    return _made(_ew.cast(arr, dt.code), device, requires_grad, out, "range")


def linspace(start: int | float | Tensor, end: int | float | Tensor, steps: int, *,
             out: Tensor | None = None, dtype: dtype | None = None, layout: layout | None = None,
             device: str | device | int | None = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from start to end, both included."""
    _layout.check(layout, "linspace")
    device = _tensor_ends_device(start, end, device)
    start = _scalar_arg(start, "start", "linspace")
    end = _scalar_arg(end, "end", "linspace")
    if not isinstance(steps, numbers.Integral) or isinstance(steps, builtins.bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    steps = builtins.int(steps)              # (a NumPy integer too, as PyTorch takes it)
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    check_numel((steps,), "linspace")
    dt = factory_dtype(dtype, out, "linspace")
    meta = _on_meta((steps,), dt, device, requires_grad, out)
    if meta is not None:
        return meta
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    work = D.float64 if dt.is_floating_point else D.float64
    arr = _A.fill_affine(_A.empty((steps,), work.code), builtins.float(start), step, True, builtins.float(end))
    if steps == 1:
        _A.fill_(arr, builtins.float(start))
    return _made(_ew.cast(arr, dt.code), device, requires_grad, out, "linspace")


def _tensor_ends_device(start, end, device):
    """linspace/logspace with a meta tensor end make a meta result, whatever device= says
    (PyTorch's dispatch: a meta argument selects the meta kernel)."""
    if any(isinstance(x, Tensor) and x.is_meta for x in (start, end)):
        return "meta"
    return device


def logspace(start: int | float | Tensor, end: int | float | Tensor, steps: int, base: float = 10.0,
             *, out: Tensor | None = None, dtype: dtype | None = None, layout: layout | None = None,
             device: str | device | int | None = None, requires_grad: bool = False) -> Tensor:
    """base ** linspace(start, end, steps)."""
    _layout.check(layout, "logspace")
    device = _tensor_ends_device(start, end, device)
    dt = factory_dtype(dtype, out, "logspace")
    if isinstance(steps, builtins.int) and steps >= 0:
        meta = _on_meta((steps,), dt, device, requires_grad, out)
        if meta is not None:
            return meta
    exps = linspace(start, end, steps, dtype=D.float64)
    arr = _ew.binary(_ew.BINARY["pow"], builtins.float(base), exps._data)
    return _made(_ew.cast(arr, dt.code), device, requires_grad, out, "logspace")


def eye(n: int, m: int | None = None, *, out: Tensor | None = None, dtype: dtype | None = None,
        layout: layout | None = None, device: str | device | int | None = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-d tensor with ones on the diagonal."""
    _layout.check(layout, "eye")
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if not isinstance(v, numbers.Integral) or isinstance(v, builtins.bool):
            raise TypeError(f"eye(): argument '{name}' must be int, not {type(v).__name__}")
    n, m = builtins.int(n), builtins.int(m)  # (NumPy integers too, as PyTorch takes them)
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got {n} and {m}")
    check_numel((n, m), "eye")
    dt = factory_dtype(dtype, out, "eye")
    meta = _on_meta((n, m), dt, device, requires_grad, out)
    if meta is not None:
        return meta
    arr = _A.full((n, m), 0, dt.code)
    _A.fill_(arr.diagonal(0, 0, 1), 1)
    return _made(arr, device, requires_grad, out, "eye")


def _is_data(a):
    """Whether the one argument of the legacy constructors is data to copy rather than a size:
    a sequence or an array with dims (a NumPy array has __index__, but only a 0-d one is a
    size, as in PyTorch), not an int or a 0-d integer."""
    if isinstance(a, builtins.int) or _is_size(a):
        return False
    ndim = getattr(a, "ndim", None)
    if ndim is not None and not isinstance(a, Tensor):
        return ndim > 0
    return not hasattr(a, "__index__")


def _legacy_new(cls, *args, **kwargs):
    """torchlite.Tensor(...): Tensor([..]) and Tensor(ndarray) copy data as float32;
    Tensor(2, 3) is empty."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
    if not args:
        return empty(0, device=device)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Tensor):
            return a.detach()
        if _is_data(a):
            return tensor(a, dtype=D.get_default_dtype(), device=device)
    return empty(*args, device=device)


Tensor.__new__ = staticmethod(_legacy_new)


# ---- Tensor methods ------------------------------------------------------------------------
@_register("new")
def _new(self, *args, device=None):
    """The legacy constructor with self's dtype: x.new(2, 3) / x.new(Size) is uninitialised,
    x.new([1, 2]) copies data, x.new() is empty, x.new(tensor) aliases tensor."""
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    device = device or self.device
    if not args:
        return empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and _is_data(args[0]):
        return tensor(args[0], dtype=self.dtype, device=device)
    return empty(*args, dtype=self.dtype, device=device)


def _is_size(x):
    from .._size import Size
    return isinstance(x, Size)


@_register("new_tensor")
def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


@_register("new_zeros")
def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device, layout=layout,
                 requires_grad=requires_grad, pin_memory=pin_memory)


@_register("new_ones")
def _new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device, layout=layout,
                requires_grad=requires_grad, pin_memory=pin_memory)


@_register("new_empty")
def _new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device, layout=layout,
                 requires_grad=requires_grad, pin_memory=pin_memory)


@_register("new_full")
def _new_full_m(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
                pin_memory=False):
    _layout.check(layout, "new_full")
    out = full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
               requires_grad=requires_grad)
    return out.pin_memory() if pin_memory else out


# ---- more creation: scalar_tensor, empty_strided, fill, zero_ --------------------------------
def scalar_tensor(s: bool | int | float | complex | Tensor, *, dtype: dtype | None = None,
                  layout: layout | None = None, device: str | device | int | None = None,
                  pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number s (float32 by default, whatever the number's type)."""
    _layout.check(layout, "scalar_tensor")
    return full((), s, dtype=dtype or D.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: dtype | None = None,
                  layout: layout | None = None, device: str | device | int | None = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` with the given strides (its storage just large
    enough), as torch.empty_strided."""
    _layout.check(layout, "empty_strided")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError("empty_strided: sizes and strides must be non-negative")
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = empty(n, dtype=dtype, device=device)
    r = base.as_strided(size, stride)
    r = r.detach()
    if requires_grad:
        r.requires_grad_()
    return r


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *,
                   dtype: dtype | None = None, layout: layout | None = None,
                   device: str | device | int | None = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` whose dims lie in memory in the order physical_layout
    (outermost first), as torch.empty_permuted: empty_permuted((N, C, H, W), (0, 2, 3, 1)) is
    channels-last."""
    _layout.check(layout, "empty_permuted")
    size, order = tuple(int(s) for s in size), tuple(int(d) for d in physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(order)} must be a permutation of the "
                           f"{len(size)} dims of size {list(size)}")
    base = empty(tuple(size[d] for d in order), dtype=dtype, device=device)
    inverse = [0] * len(order)
    for position, d in enumerate(order):
        inverse[d] = position
    r = base.permute(inverse).detach()
    if requires_grad:
        r.requires_grad_()
    return r


def frombuffer(buffer: Any, *, dtype: dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over an object exposing the buffer protocol (bytes-like), sharing its
    memory, as torch.frombuffer: `count` elements of `dtype` from byte `offset` (-1: all)."""
    import numpy as np
    try:
        view = memoryview(buffer)
    except TypeError:
        raise TypeError(f"frombuffer: expected an object implementing the buffer protocol, got "
                        f"{type(buffer).__name__}") from None
    item = dtype.itemsize
    nbytes = view.nbytes
    if offset < 0 or offset > nbytes or (offset == nbytes and nbytes):
        raise ValueError(f"both buffer length ({nbytes}) and offset ({offset}) must be greater than 0 "
                         f"and offset must be less than the buffer length")
    if count == -1:
        if (nbytes - offset) % item:
            raise ValueError(f"buffer length ({nbytes - offset} after offset {offset}) must be a multiple of "
                             f"element size ({item})")
        count = (nbytes - offset) // item
    elif count <= 0 or offset + count * item > nbytes:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset}) must not "
                         f"be greater than actual buffer length ({nbytes})")
    if view.readonly:
        import warnings
        warnings.warn("The given buffer is not writable, and torchlite does not support non-writable tensors. "
                      "This means you can write to the underlying (supposedly non-writable) buffer using the "
                      "tensor. You may want to copy the buffer to protect its data or make it writable before "
                      "converting it to a tensor.", UserWarning, stacklevel=2)
    raw = np.frombuffer(view.cast("B") if view.format != "B" else view, dtype=np.uint8, count=count * item,
                        offset=offset)
    t = _wrap(_A.from_numpy(raw)).view(dtype)      # (warned above if read-only)
    if requires_grad:
        t.requires_grad_()
    return t


def from_file(filename: str | os.PathLike[str], shared: bool | None = None, size: int = 0, *,
              dtype: dtype | None = None, layout: layout | None = None,
              device: str | device | int | None = None, pin_memory: bool = False,
              requires_grad: bool = False) -> Tensor:
    """A 1-d tensor of `size` elements of `dtype` (the default dtype) from the bytes at the
    start of file `filename` (torch.from_file): with shared=True the tensor's memory is the file
    itself, mapped (writes reach the file; the file is created, or grown, to the size needed);
    else a private copy-on-write mapping (writes stay in the tensor; the file must hold the
    bytes).  Its storage keeps the mapping open."""
    import numpy as np
    _layout.check(layout, "from_file")
    dtype = dtype if dtype is not None else D.get_default_dtype()
    size = int(size)
    if size < 0:
        raise RuntimeError(f"from_file: size must be non-negative, got {size}")
    nbytes = size * dtype.itemsize
    path = os.fspath(filename)
    if shared:
        with open(path, "ab") as f:              # created when missing; never shrunk
            if f.seek(0, os.SEEK_END) < nbytes:
                f.truncate(nbytes)
    else:
        try:
            have = os.path.getsize(path)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{path}> in read-only mode: {e.strerror} "
                               f"({e.errno})") from None
        if have < nbytes:
            raise RuntimeError(f"file <{path}> size <{have}> is smaller than the required "
                               f"mapping size <{nbytes}>")
    if nbytes == 0:
        raw = np.zeros(0, np.uint8)
    else:
        raw = np.memmap(path, dtype=np.uint8, mode="r+" if shared else "c", shape=(nbytes,))
    t = _wrap(_A.from_numpy(raw)).view(dtype)
    if device is not None or pin_memory:
        t = t.to(device if device is not None else "cpu")
        if pin_memory:
            t = t.pin_memory()
    if requires_grad:
        t.requires_grad_()
    return t


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                       layout=None, pin_memory=False):
    _layout.check(layout, "_new_empty_strided")
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


Tensor.new_empty_strided = _new_empty_strided


def fill(input: Tensor, value: bool | int | float | complex | Tensor) -> Tensor:
    """A new tensor shaped like input, every element value (torch.fill); a tensor value
    gets the gradient (the sum of the result's), input none."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return zeros_like(input) + value.reshape(()).to(input.dtype)
    if input.requires_grad:         # in the graph, with a zero gradient, as PyTorch's
        return input.clone().fill_(value)
    return full_like(input, value)


def zero_(input: Tensor) -> Tensor:
    """input set to zeros in place (torch.zero_)."""
    return input.zero_()


# ---- signal windows (torch.hann_window and friends) ------------------------------------------
def _window(name, length, periodic, dtype, device, requires_grad, weights):
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    dtype = dtype or D.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if length <= 1:
        return ones(length, dtype=dtype, device=device, requires_grad=requires_grad)
    n = length + 1 if periodic else length
    k = arange(length, dtype=D.float64)
    w = weights(k, n - 1).to(dtype)
    w = w.to(device) if device is not None else w
    return w.requires_grad_() if requires_grad else w


def _cosines(*coeffs):
    import math

    def weights(k, m):
        w = zeros_like(k)
        for j, c in enumerate(coeffs):
            w = w + ((-1) ** j) * c * (2 * math.pi * j * k / m).cos()
        return w
    return weights


def hann_window(window_length: int, periodic: bool = True, *, dtype: dtype | None = None,
                layout: layout | None = None, device: str | device | int | None = None,
                pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi k / (N - 1)), with N = window_length + 1 when periodic."""
    _layout.check(layout, "hann_window")
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: dtype | None = None, layout: layout | None = None,
                   device: str | device | int | None = None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """alpha - beta cos(2 pi k / (N - 1))."""
    _layout.check(layout, "hamming_window")
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: dtype | None = None,
                    layout: layout | None = None, device: str | device | int | None = None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    _layout.check(layout, "blackman_window")
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(0.42, 0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: dtype | None = None,
                    layout: layout | None = None, device: str | device | int | None = None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """1 - |2k / (N - 1) - 1|: the triangle."""
    _layout.check(layout, "bartlett_window")
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - (2 * k / m - 1).abs())


MORE_CREATION = ["scalar_tensor", "empty_strided", "fill", "zero_", "hann_window",
                 "hamming_window", "blackman_window", "bartlett_window"]
