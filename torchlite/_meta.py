"""The meta device: arrays with a shape, strides, offset and dtype but no data (PyTorch's
'meta' device), for building a model without its memory and for working out shapes.

A MetaArray keeps its metadata in a CPU `Array` over address 0 (`_core.array.external`, never
read), as the CUDA backend's arrays keep theirs over device memory, so every view is the
CPU's own code run on metadata.  Like the CUDA backend, this module is reached only through
torchlite/_dispatch.py (creation: `meta_like` and `array.empty(..., device='meta')`), which
sends every array-layer call with a meta array here (`call`):
- the fills (constant and random) do nothing: there is nothing to fill, and as in PyTorch a
  random fill on the meta device does not advance the CPU generator;
- a function whose result's size depends on the values (nonzero, unique, ...) raises
  NotImplementedError, as PyTorch's meta kernels do;
- every other function runs its CPU kernel on stand-ins: each meta storage becomes a zero
  buffer of its size (allocated lazily by the OS, so reading it costs no memory), and the
  arrays the kernel returns come back as meta arrays of the same shapes, strides and dtypes
  (a view of an argument as the same view of the meta storage).  So shapes, dtypes, broadcasting,
  type promotion and argument errors are the CPU's by construction; the price is that such an
  op takes a real op's time and, while it runs, the memory of its result.
"""
from ._core import array as _A

DEVICE = "meta"


# Meta arrays alive now, and what to call when the last one goes (_dispatch takes its
# dispatching wrappers away then, so the CPU path pays nothing once the meta device is done
# with: a model built on it and moved to the CPU trains at full speed).
_live = [0]
on_last_gone = None


class MetaArray:
    __slots__ = ("_meta", "__weakref__")

    def __init__(self, meta):
        self._meta = meta
        _live[0] += 1

    def __del__(self):
        _live[0] -= 1
        if _live[0] == 0 and on_last_gone is not None:
            try:
                on_last_gone()
            except Exception:           # interpreter shutdown: nothing left to restore
                pass

    shape = property(lambda self: self._meta.shape)
    strides = property(lambda self: self._meta.strides)
    offset = property(lambda self: self._meta.offset)
    ndim = property(lambda self: self._meta.ndim)
    numel = property(lambda self: self._meta.numel)
    itemsize = property(lambda self: self._meta.itemsize)
    dtype = property(lambda self: self._meta.dtype)
    storage = property(lambda self: self._meta.storage)
    device = DEVICE

    def is_contiguous(self):
        return self._meta.is_contiguous()

    def data_ptr(self):
        return 0

    def storage_nbytes(self):
        return self._meta.storage_nbytes()

    def has_internal_overlap(self):
        return self._meta.has_internal_overlap()

    def is_non_overlapping_and_dense(self):
        return self._meta.is_non_overlapping_and_dense()

    def same_storage(self, other):
        return isinstance(other, MetaArray) and self._meta.storage is other._meta.storage

    def alias_with_own_version(self):
        return MetaArray(self._meta.alias_with_own_version())

    def item(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def __repr__(self):
        return f"<MetaArray shape={self.shape} dtype={self.dtype}>"


def _view_method(name):
    meta_method = getattr(_A.Array, name)

    def method(self, *args):
        meta = meta_method(self._meta, *args)       # None: view() of strides that do not allow it
        return None if meta is None else MetaArray(meta)
    method.__name__ = name
    method.__doc__ = f"The view `{name}` of the CPU array (torchlite/_core/array.pyx), on metadata."
    return method


for _name in ("as_strided", "view", "permute", "transpose", "expand", "slice", "select",
              "squeeze", "unsqueeze", "diagonal", "unfold"):
    setattr(MetaArray, _name, _view_method(_name))


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


def like(a):
    """A new contiguous meta array with the shape and dtype of array `a` (any device)."""
    return empty(a.shape, a.dtype)


# ---- array-layer functions on meta arrays ---------------------------------------------------
# writing into their first argument only, with nothing to write on the meta device
_FILLS = {("array", "fill_"), ("array", "fill_affine"), ("random", "fill"),
          ("random", "fill_int"), ("random", "fill_bernoulli"),
          ("random", "fill_bernoulli_tensor"), ("random", "fill_bernoulli_at")}

# results whose size (or value, for a Python result) depends on the data
_DATA_DEPENDENT = {("indexing", "nonzero"), ("indexing", "masked_select"),
                   ("sorting", "unique"), ("sorting", "unique_consecutive"),
                   ("sorting", "unique_dim"), ("random", "all_in_range"),
                   ("random", "multinomial"), ("random", "poisson"), ("random", "randperm")}


def call(op, cpu_fn, args, kwargs):
    """cpu_fn(*args, **kwargs) for an array-layer function `op` (module, name) called with
    meta arrays (see the module docstring)."""
    if op in _FILLS:
        return None
    if op in _DATA_DEPENDENT:
        raise NotImplementedError(
            f"{op[0]}.{op[1]}: its result depends on the values, which a meta tensor does not "
            f"have (as in PyTorch, no meta implementation exists)")
    return _run_on_standins(cpu_fn, args, kwargs)


class _StandIn:
    """A zero-filled host buffer for one meta storage (numpy.zeros: pages come from the OS
    on first write, reads see the shared zero page)."""
    __slots__ = ("buf", "host")

    def __init__(self, meta_array):
        import numpy as np
        nbytes = meta_array.storage_nbytes()
        self.buf = np.zeros(max(nbytes, 1), dtype=np.uint8)
        self.host = _A.external(self.buf.ctypes.data, nbytes, self.buf, 1)   # uint8

    def view(self, a):
        return _A.reinterpret(self.host, a.dtype, a.shape, a.strides, a.offset)


def _run_on_standins(cpu_fn, args, kwargs):
    standins = {}

    def down(x):
        if type(x) is MetaArray:
            key = id(x.storage)
            s = standins.get(key)
            if s is None:
                s = standins[key] = (_StandIn(x), x)
            return s[0].view(x)
        if type(x) in (list, tuple):
            return type(x)(down(e) for e in x)
        return x

    hargs = tuple(down(a) for a in args)
    hkwargs = {k: down(v) for k, v in kwargs.items()} if kwargs else {}
    result = cpu_fn(*hargs, **hkwargs)

    def up(r):
        if isinstance(r, _A.Array):
            for s, base in standins.values():
                if r.same_storage(s.host):
                    return MetaArray(_A.reinterpret(base._meta, r.dtype, r.shape, r.strides,
                                                    r.offset))
            return MetaArray(_A.external(0, r.storage_nbytes(), None, r.dtype).as_strided(
                r.shape, r.strides, r.offset))
        if type(r) in (list, tuple):
            return type(r)(up(e) for e in r)
        return r

    return up(result)


def reinterpret(a, dtype, shape, strides, offset):
    """The same (absent) bytes seen as another dtype (array.reinterpret for meta arrays)."""
    return MetaArray(_A.reinterpret(a._meta, dtype, shape, strides, offset))
