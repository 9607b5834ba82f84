"""NumPy arrays and scalars in a weights_only load: what ``torch.save(numpy_array)`` (or a
dict holding arrays and NumPy numbers) writes.

NumPy pickles an array as ``_reconstruct(ndarray, (0,), b'b')`` (an empty array) followed by
BUILD with ``(1, shape, dtype, is_fortran, raw bytes)``, a dtype as ``dtype('f4', False,
True)`` followed by BUILD with its byte order and sizes, and a scalar as ``scalar(dtype,
raw bytes)``.  serialization's restricted unpickler maps those names to the functions here,
which accept plain dtypes only -- booleans, integers, floats, complex numbers, fixed-width
bytes and str -- and check every argument (types, sizes, the byte count against the shape)
before NumPy sees it, so NumPy only ever copies bytes.  Object, structured, subarray and
void dtypes, whose state would unpickle arbitrary Python objects, raise UnpicklingError;
PyTorch's weights_only loader refuses NumPy arrays altogether (they need its
``add_safe_globals``, which torchlite honours too: then NumPy's own functions run)."""
from __future__ import annotations

import pickle
from typing import Any

PLAIN_KINDS = "biufcSU"
_MAX_DIMS = 64


def _bad(msg: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(f"Weights only load failed: {msg}")


def _np():
    import numpy
    return numpy


def _check_plain(dt: Any) -> None:
    np = _np()
    if not isinstance(dt, np.dtype):
        raise _bad(f"expected a NumPy dtype, got {type(dt).__name__}")
    if dt.kind not in PLAIN_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise _bad(f"NumPy dtype {dt!s:.40} is not a plain one (booleans, integers, floats, "
                   f"complex, bytes or str): object and structured arrays can hold arbitrary "
                   f"Python objects; load with weights_only=False only if you trust the file")


def reconstruct(cls: Any, shape: Any, typecode: Any) -> Any:
    """numpy's _reconstruct(ndarray, (0,), b'b'): the empty array BUILD then fills."""
    np = _np()
    if cls is not np.ndarray or shape != (0,) or typecode not in (b"b", "b"):
        raise _bad("numpy _reconstruct is only allowed as (ndarray, (0,), b'b')")
    return np.ndarray((0,), np.int8)


def dtype(spec: Any, align: Any = False, copy: Any = True) -> Any:
    """numpy.dtype(spec, align, copy) for a plain type string; always a fresh copy, so that
    its BUILD cannot change NumPy's shared dtype objects."""
    np = _np()
    if type(spec) is not str or len(spec) > 16 or type(align) is not bool or type(copy) is not bool:
        raise _bad(f"numpy.dtype is only allowed from a short type string, got {spec!r:.40}")
    try:
        dt = np.dtype(spec)
    except TypeError as e:
        raise _bad(f"numpy.dtype({spec!r}): {e}") from None
    _check_plain(dt)
    return np.dtype(spec, align, True)


def scalar(dt: Any, data: Any) -> Any:
    """numpy's scalar(dtype, raw bytes): one value of a plain dtype."""
    np = _np()
    _check_plain(dt)
    if type(data) is not bytes or len(data) != dt.itemsize:
        raise _bad(f"a NumPy {dt} scalar needs {dt.itemsize} bytes")
    return np.frombuffer(data, dtype=np.dtype(dt.str))[0]


def _check_dtype_state(state: Any, dt: Any) -> None:
    """(version 3, byte order, subarray, names, fields, element size, alignment, flags) and, in
    version 4, metadata: only the byte order may differ from the fresh dtype's own state (the
    sizes, alignment and flags it has already; flags would mark it as holding objects)."""
    if type(state) is not tuple or len(state) not in (8, 9) or state[0] not in (3, 4):
        raise _bad("invalid NumPy dtype state")
    if state[1] not in ("<", ">", "|", "=") or any(v is not None for v in state[2:5]):
        raise _bad("a NumPy dtype state may only set the byte order of a plain dtype")
    if len(state) == 9 and state[8] is not None:
        raise _bad("NumPy dtype metadata is not allowed")
    own = dt.__reduce__()[2]
    if tuple(state[5:8]) != tuple(own[5:8]):
        raise _bad(f"a NumPy dtype state may only set the byte order of {dt}, not its sizes "
                   f"or flags")


def _check_array_state(state: Any) -> None:
    if type(state) is not tuple or len(state) != 5 or state[0] != 1:
        raise _bad("invalid NumPy array state")
    _, shape, dt, fortran, raw = state
    if (type(shape) is not tuple or len(shape) > _MAX_DIMS
            or not all(type(d) is int and d >= 0 for d in shape)):
        raise _bad(f"invalid NumPy array shape {shape!r:.60}")
    _check_plain(dt)
    if type(fortran) is not bool or type(raw) is not bytes:
        raise _bad("invalid NumPy array state")
    n = 1
    for d in shape:
        n *= d
    if dt.itemsize == 0 and n:      # a huge array of nothing would cost its count in loops
        raise _bad(f"a NumPy array of zero-size {dt} elements must be empty")
    if n * dt.itemsize != len(raw):
        raise _bad(f"a NumPy array of shape {shape} and dtype {dt} needs {n * dt.itemsize} "
                   f"bytes, the file has {len(raw)}")


def build(inst: Any, state: Any) -> bool:
    """BUILD on a NumPy object: restore a dtype made by dtype() or an array made by
    reconstruct() from a checked state.  False when inst is not a NumPy object."""
    np = _np()
    if isinstance(inst, np.dtype):
        _check_plain(inst)
        _check_dtype_state(state, inst)
        inst.__setstate__(state)
        _check_plain(inst)
        return True
    if type(inst) is np.ndarray:
        if inst.shape != (0,) or inst.dtype != np.int8:
            raise _bad("a NumPy array's state can only be restored once")
        _check_array_state(state)
        # the array gets its own dtype object: the one the file built stays in its memo, and
        # a later BUILD of it must not change the array's element size
        inst.__setstate__(state[:2] + (np.dtype(state[2].str),) + state[3:])
        return True
    return False


def allowed_globals() -> dict[str, Any]:
    """The global names NumPy's pickles use (NumPy 2's numpy._core and 1's numpy.core), to
    the functions above; numpy.ndarray maps to the class itself, which reconstruct() accepts
    but REDUCE may not call (serialization leaves it out of the callables)."""
    np = _np()
    names = {"numpy.ndarray": np.ndarray, "numpy.dtype": dtype}
    for core in ("numpy._core.multiarray", "numpy.core.multiarray"):
        names[core + "._reconstruct"] = reconstruct
        names[core + ".scalar"] = scalar
    return names
