"""The meta device: arrays with a shape, strides, offset and dtype but no data (PyTorch's
'meta' device), for building a model without its memory and for working out shapes.

A MetaArray keeps its metadata in a CPU `Array` over address 0 (`_core.array.external`, never
read), as the CUDA backend's arrays keep theirs over device memory, so every view is the
CPU's own code run on metadata (the base class, `_core/metadata_array.pyx`).  Like the CUDA
backend, this module is reached only through torchlite/_dispatch.py (creation: `meta_like`
and `array.empty(..., device='meta')`), which sends every array-layer call with a meta array
here (`call`):
- the fills (constant and random) do nothing: there is nothing to fill, and as in PyTorch a
  random fill on the meta device does not advance the CPU generator;
- a function whose result's size depends on the values (nonzero, unique, ...) raises
  NotImplementedError, as PyTorch's meta kernels do;
- every other function runs its CPU kernel on stand-ins: each meta storage becomes a zero
  buffer of the bytes the call's views reach (allocated lazily by the OS, so reading it
  costs no memory; ones instead when the kernel refuses zeros, as a divisor), and the
  arrays the kernel returns come back as meta arrays of the same shapes, strides and dtypes
  (a view of an argument as the same view of the meta storage).  So shapes, dtypes, broadcasting,
  type promotion and argument errors are the CPU's by construction; the price is that such an
  op takes a real op's time and, while it runs, the memory of its result.
"""
import threading

from ._core import array as _A
from ._core import elementwise as _ew
from ._core import indexing as _ix
from ._core.metadata_array import MetadataArray

DEVICE = "meta"


# Meta arrays alive now, and what to call when the first one appears and the last one goes
# (_dispatch installs its dispatching wrappers, and takes them away again, so the CPU path
# pays nothing once the meta device is done with: a model built on it and moved to the CPU
# trains at full speed).  A re-entrant lock keeps the count and the calls in one order when
# arrays come and go on several threads (or in a garbage collection during one of the calls).
_live = [0]
_lock = threading.RLock()
on_first_alive = None
on_last_gone = None


class MetaArray(MetadataArray):
    __slots__ = ("__weakref__",)

    def __init__(self, meta):
        self._meta = meta
        with _lock:
            _live[0] += 1
            if _live[0] == 1 and on_first_alive is not None:
                on_first_alive()

    def __del__(self):
        try:
            with _lock:
                _live[0] -= 1
                if _live[0] == 0 and on_last_gone is not None:
                    on_last_gone()
        except Exception:               # interpreter shutdown: nothing left to restore
            pass

    def _wrap(self, meta):
        return MetaArray(meta)

    @classmethod
    def over(cls, meta, device_index=None):
        return cls(meta)                # through __init__, which counts the live arrays

    device = DEVICE

    def data_ptr(self):
        return 0

    def item(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def __repr__(self):
        return f"<MetaArray shape={self.shape} dtype={self.dtype}>"


# ---- creation ------------------------------------------------------------------------------
_MAX_NBYTES = 1 << 62


def empty(shape, dtype, order=None):
    """A meta array of `shape` and dtype code `dtype`: contiguous, or with its dims laid out
    innermost-first in `order` (array.empty_strided's order)."""
    shape = tuple(int(d) for d in shape)
    for d in shape:
        if d < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: "
                               f"{list(shape)}")
    strides, step = [0] * len(shape), 1
    for d in (order if order is not None else range(len(shape) - 1, -1, -1)):
        strides[d] = step
        step *= max(shape[d], 1)
    itemsize = _A.external(0, 0, None, dtype).itemsize
    nbytes = step * itemsize if all(shape) else 0
    if nbytes > _MAX_NBYTES:
        raise RuntimeError(f"meta tensor of shape {list(shape)} is too large ({nbytes} bytes)")
    base = _A.external(0, nbytes, None, dtype)
    return MetaArray(base.as_strided(shape, tuple(strides), 0))


# ---- array-layer functions on meta arrays ---------------------------------------------------
# writing into their first argument only, with nothing to write on the meta device
_FILLS = {("array", "fill_"), ("array", "fill_affine"), ("random", "fill"),
          ("random", "fill_int"), ("random", "fill_bernoulli"),
          ("random", "fill_bernoulli_tensor"), ("random", "fill_bernoulli_at")}

# results whose size (or value, for a Python result) depends on the data
_DATA_DEPENDENT = {("indexing", "nonzero"), ("indexing", "masked_select"),
                   ("indexing", "count_nonzero"), ("sorting", "unique"),
                   ("sorting", "unique_consecutive"), ("sorting", "unique_dim"),
                   ("random", "all_in_range"), ("random", "multinomial"),
                   ("random", "poisson"), ("random", "randperm")}
_BOOL = 0       # dtype code of bool (torchlite/_dtype.py, _core/kernels/types.h)
_GATHER = _ix.GATHER        # advanced indexing's read; its other ops write


def call(op, cpu_fn, args, kwargs):
    """cpu_fn(*args, **kwargs) for an array-layer function `op` (module, name) called with
    meta arrays (see the module docstring)."""
    if op in _FILLS or (op == ("indexing", "advanced") and args[0] != _GATHER
                        and type(args[1]) is MetaArray):
        return None                     # (advanced indexing's writes return None too)
    if op in _DATA_DEPENDENT or (op == ("indexing", "advanced") and _has_meta_mask(args)):
        raise NotImplementedError(
            f"{op[0]}.{op[1]}: its result depends on the values, which a meta tensor does not "
            f"have (as in PyTorch, no meta implementation exists)")
    return _run_on_standins(cpu_fn, args, kwargs)


def _has_meta_mask(args):
    """Whether advanced indexing's groups (its third argument) index by a meta boolean mask,
    whose number of True elements is the result's size."""
    groups = args[2] if len(args) > 2 else ()
    return any(type(g[2]) is MetaArray and g[2].dtype == _BOOL for g in groups)


class _StandIn:
    """A zero-filled host buffer for the bytes of one meta storage that this call's views
    reach (numpy.zeros: pages come from the OS on first write, reads see the shared zero
    page); `lo` is the storage byte the buffer starts at."""
    __slots__ = ("buf", "host", "lo", "base")

    def __init__(self, views, ones=False):
        import numpy as np
        spans = [_span(v) for v in views]
        self.lo = min(a for a, _ in spans) // 16 * 16        # a multiple of every itemsize
        hi = max(b for _, b in spans)
        self.base = views[0]
        self.buf = np.zeros(max(hi - self.lo, 1), dtype=np.uint8)
        self.host = _A.external(self.buf.ctypes.data, hi - self.lo, self.buf, 1)   # uint8
        if ones:                        # each view reads ones in its own dtype
            for v in views:
                _A.fill_(self.view(v), 1)

    def view(self, a):
        return _A.reinterpret(self.host, a.dtype, a.shape, a.strides,
                              a.offset - self.lo // a.itemsize)

    def back(self, r):
        """The result r, a view of this buffer, as the same view of the meta storage."""
        return MetaArray(_A.reinterpret(self.base._meta, r.dtype, r.shape, r.strides,
                                        r.offset + self.lo // r.itemsize))


def _span(a):
    """The storage bytes [lo, hi) array a reaches (none: an empty span at its offset)."""
    lo = a.offset * a.itemsize
    if a.numel == 0:
        return lo, lo
    hi = lo + a.itemsize
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += (n - 1) * st * a.itemsize
        else:
            hi += (n - 1) * st * a.itemsize
    return lo, hi


def _metas(x, found):
    """Every meta array in x (lists and tuples looked into), grouped by storage."""
    if type(x) is MetaArray:
        found.setdefault(id(x.storage), []).append(x)
    elif type(x) in (list, tuple):
        for e in x:
            _metas(e, found)


def _down(x, standins):
    """x with each meta array replaced by its view of a stand-in, and each CPU array with no
    dims (a scalar tensor that may join meta ones) by a copy, so a kernel writing to it
    cannot change the caller's value with stand-in numbers."""
    t = type(x)
    if t is MetaArray:
        return standins[id(x.storage)].view(x)
    if t is _A.Array:
        return _ew.clone(x, True) if x.ndim == 0 else x
    if t in (list, tuple):
        return t(_down(e, standins) for e in x)
    return x


def _up(r, standins):
    """The kernel's result with its arrays as meta arrays: a view of a stand-in as the same
    view of the meta storage, a new array as a new meta array of its shape and strides."""
    if isinstance(r, _A.Array):
        for s in standins.values():
            if r.same_storage(s.host):
                return s.back(r)
        return MetaArray(_A.external(0, r.storage_nbytes(), None, r.dtype).as_strided(
            r.shape, r.strides, r.offset))
    if type(r) in (list, tuple):
        return type(r)(_up(e, standins) for e in r)
    return r


def _run_on_standins(cpu_fn, args, kwargs):
    """cpu_fn on zero stand-ins; if the kernel refuses zeros (an integer division by zero,
    LU pivots that must be in [1, n]), once more on stand-ins of ones, and the first error if
    that fails too (an error of shapes or dtypes does not depend on the values)."""
    found = {}
    for x in (args if not kwargs else args + tuple(kwargs.values())):
        _metas(x, found)
    try:
        return _run_once(cpu_fn, args, kwargs, found, False)
    except (ZeroDivisionError, RuntimeError, ValueError, IndexError) as first:
        try:
            return _run_once(cpu_fn, args, kwargs, found, True)
        except Exception:
            raise first from None


def _run_once(cpu_fn, args, kwargs, found, ones):
    standins = {key: _StandIn(views, ones) for key, views in found.items()}
    hargs = tuple(_down(a, standins) for a in args)
    hkwargs = {k: _down(v, standins) for k, v in kwargs.items()} if kwargs else {}
    return _up(cpu_fn(*hargs, **hkwargs), standins)


def reinterpret(a, dtype, shape, strides, offset):
    """The same (absent) bytes seen as another dtype (array.reinterpret for meta arrays)."""
    return MetaArray(_A.reinterpret(a._meta, dtype, shape, strides, offset))
