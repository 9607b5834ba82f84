"""Indexing along one dim on the GPU: torchlite._core.indexing's gather, scatter and scatter_add
(`along_dim`) and advanced indexing by one integer index array (`advanced` with one group:
x[idx], index_select, embedding), launched as tl_gather / tl_scatter / tl_scatter_add of
cuda_kernels/indexing.cu.

The iteration space is the index's (or the result's); the data operand's strides leave out
the indexed dim, which the kernel walks by `dim_stride` elements per index value.  An index
out of range sets a flag the host reads back; the call then goes to the host fallback, which
raises the CPU's error.  Writes check the index range first (two small reductions), so a bad
index leaves the tensor unchanged, as on the CPU.  Masks, several index arrays and the other
scatter reductions run on host copies.
"""
from .. import _switches
from .._core import indexing as _cpu_index
from . import _array, _kernels as K, _launch
from ._elementwise import packed_indexer
from ._registry import native

_THREADS = 256


def _launch_index(name, data_out, data_in, index, shape, strides, dim_size, dim_stride,
                  wrap_negative, alpha=None, check=True):
    """One gather/scatter launch; returns False when an index was out of range.  check=False
    does not read the range flag back (a synchronisation): for indices known to be in range."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return True
    ix = packed_indexer(shape, strides)
    if ix is None:
        return None
    device = data_out.device_index
    word = _launch.ErrorWord.of(device)
    if check:
        word.reset()
    args = [_launch.ptr(data_out.data_ptr()), _launch.ptr(data_in.data_ptr()),
            _launch.ptr(index.data_ptr()), _launch.i64(n), _launch.struct(ix),
            _launch.i64(dim_size), _launch.i64(dim_stride), _launch.i32(1 if wrap_negative else 0),
            _launch.ptr(word.address)]
    if alpha is not None:
        args.append(_launch.f64(alpha))
    _launch.launch(_launch.kernel("indexing.cu", name, device), _launch.grid_for(n, device, _THREADS),
                   _THREADS, args)
    return not check or word.read() == 0


def _in_range(index, size, wrap_negative):
    from ._reduction import reduce
    if index.numel == 0:
        return True
    lo = _array.to_host(reduce("amin", index, None, False)).item()
    hi = _array.to_host(reduce("amax", index, None, False)).item()
    return (lo >= (-size if wrap_negative else 0)) and hi < size


@native("indexing", "along_dim", kernel=True)
def along_dim(op, a, dim, index, src=None, err=None):
    return _along_dim(op, a, dim, index, src, True)


def scatter_add_in_range(a, dim, index, src):
    """a.scatter_add_(dim, index, src) for indices known to be in range (max pooling's, made
    by its own forward kernel): no range check, so no synchronisation with the device.  None
    when done, NotImplemented where along_dim would not take the arrays either."""
    return _along_dim(_cpu_index.ADD, a, dim, index, src, False)


def _along_dim(op, a, dim, index, src, check):
    if index.dtype != K.INT64 or index.ndim != a.ndim or a.ndim == 0 or not 0 <= dim < a.ndim \
            or any(index.shape[i] > a.shape[i] for i in range(a.ndim) if i != dim):
        return NotImplemented                              # the CPU's checks and errors
    shape = index.shape
    a_strides = [0 if i == dim else a.strides[i] for i in range(a.ndim)]
    if op == _cpu_index.GATHER:
        out = _array.empty(shape, a.dtype, a.device_index)
        ok = _launch_index(K.gather_kernel(a.dtype), out, a, index, shape,
                           [out.strides, a_strides, index.strides], a.shape[dim],
                           a.strides[dim], False)
        return out if ok else NotImplemented
    if op not in (_cpu_index.PUT, _cpu_index.ADD) or src is None or src.dtype != a.dtype \
            or src.ndim != index.ndim or any(index.shape[i] > src.shape[i] for i in range(a.ndim)) \
            or src.same_storage(a) or index.same_storage(a) or a.has_internal_overlap():
        return NotImplemented
    if op == _cpu_index.ADD and (a.dtype not in K.SCATTER_ADD_DTYPES or (
            a.dtype in K.FLOATS and _switches.are_deterministic_algorithms_enabled())):
        return NotImplemented        # float atomics add in a varying order: the host path does not
    if check and not _in_range(index, a.shape[dim], False):
        return NotImplemented
    name = K.scatter_kernel(a.dtype) if op == _cpu_index.PUT else K.scatter_add_kernel(a.dtype)
    ok = _launch_index(name, a, src, index, shape, [a_strides, src.strides, index.strides],
                       a.shape[dim], a.strides[dim], False,
                       alpha=1.0 if op == _cpu_index.ADD else None, check=check)
    return None if ok else NotImplemented


def _masked(op, a, first, mask, value):
    """x[mask] (a gather of the selected elements) and x[mask] = scalar (a where in place)
    for a bool/uint8 mask over dims [first, first + mask.ndim) of a."""
    from .._core import elementwise as _cpu_ew
    from ._elementwise import ternary
    from ._copy import contiguous
    k = mask.ndim
    if mask.dtype not in (K.BOOL, K.UINT8) or a.shape[first:first + k] != mask.shape or k == 0:
        return NotImplemented                         # the CPU's errors
    if op == _cpu_index.GATHER:
        if mask.numel == 0:
            return NotImplemented
        flat_shape = a.shape[:first] + (mask.numel,) + a.shape[first + k:]
        flat = a.view(flat_shape) or contiguous(a).view(flat_shape)
        return advanced(op, flat, [(first, 1, _nonzero_linear(mask), _cpu_index.KIND_INDEX)],
                        None, (IndexError, "", False))
    if op == _cpu_index.PUT and value is not None and value.numel == 1 and not a.has_internal_overlap():
        from ._elementwise import binary
        cond = binary(_cpu_ew.BINARY["ne"], mask, False if mask.dtype == K.BOOL else 0)
        cond = cond.view((1,) * first + mask.shape + (1,) * (a.ndim - first - k))
        v = value.view(()) if value.ndim else value
        return None if ternary(_cpu_ew.TERNARY["where"], cond, v, a, out=a) is not NotImplemented \
            else NotImplemented
    return NotImplemented


@native("indexing", "advanced", kernel=True)
def advanced(op, a, groups, value=None, err=None):
    """x[idx] along one dim (a single integer index group): a gather into a new array;
    x[mask] and x[mask] = scalar for a single mask group."""
    if len(groups) == 1 and groups[0][3] == _cpu_index.KIND_MASK \
            and isinstance(groups[0][2], _array.CudaArray):
        return _masked(op, a, groups[0][0], groups[0][2], value)
    if op != _cpu_index.GATHER or len(groups) != 1:
        return NotImplemented
    first, ndims, idx, kind = groups[0]
    if kind != _cpu_index.KIND_INDEX or ndims != 1 or not isinstance(idx, _array.CudaArray) \
            or idx.dtype != K.INT64 or not 0 <= first < a.ndim:
        return NotImplemented
    wrap = True if err is None else bool(err[2])
    out_shape = a.shape[:first] + idx.shape + a.shape[first + 1:]
    nb = idx.ndim
    a_strides = list(a.strides[:first]) + [0] * nb + list(a.strides[first + 1:])
    i_strides = [0] * first + list(idx.strides) + [0] * (a.ndim - first - 1)
    out = _array.empty(out_shape, a.dtype, a.device_index)
    ok = _launch_index(K.gather_kernel(a.dtype), out, a, idx, out_shape,
                       [out.strides, a_strides, i_strides], a.shape[first], a.strides[first], wrap)
    return out if ok else NotImplemented


def _nonzero_linear(a):
    """The row-major linear indices (int64, in order) of a's nonzero elements."""
    from .._core import elementwise as _cpu_ew
    from ._elementwise import binary, cast, fill_affine, ternary
    from ._copy import contiguous
    from ._reduction import scan
    n, device = a.numel, a.device_index
    flags = binary(_cpu_ew.BINARY["ne"], contiguous(a).view((n,)), False if a.dtype == K.BOOL else 0)
    count = scan("cumsum", cast(flags, K.INT64), 0)
    nnz = _array.to_host(count.slice(0, n - 1, n, 1)).item()
    linear = fill_affine(_array.empty((n,), K.INT64, device), 0, 1)
    rows = ternary(_cpu_ew.TERNARY["where"], flags,
                   binary(_cpu_ew.BINARY["sub"], count, 1), nnz)
    found = _array.empty((nnz + 1,), K.INT64, device)       # row nnz: where the zeros go
    _launch_index(K.scatter_kernel(K.INT64), found, linear, rows, (n,), [[0], [1], [1]],
                  nnz + 1, 1, False)
    return found.slice(0, 0, nnz, 1)


@native("indexing", "nonzero", kernel=True)
def nonzero(a):
    """(n, ndim) int64 coordinates of a's nonzero elements in row-major order: a cumulative
    count of the nonzero flags gives each one its row, a scatter writes the linear indices
    there (the others to a spare row), and divisions turn them into coordinates.  The count
    is read back to size the result (a synchronisation, as in PyTorch)."""
    from .._core import elementwise as _cpu_ew
    from ._elementwise import binary
    if a.ndim == 0 or a.numel == 0:
        return NotImplemented
    found = _nonzero_linear(a)
    nnz, device = found.numel, a.device_index
    out = _array.empty((nnz, a.ndim), K.INT64, device)
    stride = 1
    for d in reversed(range(a.ndim)):
        coord = binary(_cpu_ew.BINARY["div_floor"], found, stride) if stride > 1 else found
        binary(_cpu_ew.BINARY["remainder"], coord, a.shape[d], out=out.select(1, d))
        stride *= a.shape[d]
    return out
