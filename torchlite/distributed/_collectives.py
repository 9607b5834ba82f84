"""The collectives and point-to-point operations on torchlite CPU tensors, over MPI.

A contiguous tensor goes to MPI as a NumPy view of its own memory (no copy): `t.numpy()`
shares memory, and dtypes MPI cannot carry as such travel as their bit patterns (bool as
uint8, float16 as uint16, bfloat16 as int16).  A non-contiguous tensor goes through a
contiguous copy, written back into it afterwards.

Reductions: MPI has no float16/bfloat16 arithmetic, so those are reduced in a float32 copy
and rounded back once at the end (more accurate than a float16 ring, and the same on every
rank).  bool reduces as PyTorch's: SUM and MAX are a logical or, PRODUCT and MIN a logical
and.  AVG is a SUM divided by the group size afterwards; it is floating-point only (an integer
or bool tensor raises, as in PyTorch).

Every argument that can be checked locally is checked before MPI is called (list lengths,
sizes, dtypes, ranks), so a mistake raises instead of hanging.  With
TORCHLITE_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG=DETAIL) each collective first
compares its name, dtype, shapes and op across the ranks and raises on a mismatch."""
from __future__ import annotations

import enum
import warnings
from typing import TYPE_CHECKING

import numpy as np

from . import _backend
from ._work import Work

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._device import device
    from .._tensor import Tensor

__all__ = ["ReduceOp", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single",
           "all_to_all", "send", "recv", "isend", "irecv", "barrier", "broadcast_object_list",
           "all_gather_object", "gather_object", "scatter_object_list"]


class ReduceOp:
    """The reduction of all_reduce, reduce and reduce_scatter: ReduceOp.SUM, AVG, PRODUCT, MIN,
    MAX, BAND, BOR, BXOR (the bitwise ones for integer and bool tensors)."""

    class RedOpType(enum.Enum):
        """The reduction kinds (PyTorch's ReduceOp.RedOpType)."""
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


# ---- tensors as MPI buffers ---------------------------------------------------------------------

def _tl():
    import torchlite
    return torchlite


def _dtypes():
    tl = _tl()
    return {tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16,
            tl.float32, tl.float64}


_MPI_TYPES = {}


def _mpi_type(arr):
    """The MPI datatype of a NumPy array's elements (one of the types _raw makes)."""
    if not _MPI_TYPES:
        MPI = _backend._mpi()
        _MPI_TYPES.update({np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.int8): MPI.INT8_T,
                           np.dtype(np.int16): MPI.INT16_T, np.dtype(np.uint16): MPI.UINT16_T,
                           np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
                           np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE})
    return _MPI_TYPES[arr.dtype]


def _raw(t):
    """A 1-D NumPy view of contiguous tensor t's memory, in a dtype MPI carries."""
    tl = _tl()
    t = t.detach()
    if t.dtype is tl.bfloat16:
        return t.view(tl.int16).numpy().reshape(-1)
    a = t.numpy().reshape(-1)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    if a.dtype == np.float16:
        return a.view(np.uint16)
    return a


def _is_half(dtype):
    tl = _tl()
    return dtype is tl.float16 or dtype is tl.bfloat16


class _Buf:
    """MPI's side of one tensor.  `arr` is a 1-D NumPy array over the tensor's own memory
    when it can be (contiguous, and no float16/bfloat16 reduction), else over a contiguous
    copy (float32 for a float16/bfloat16 reduction); `finish()` writes such a copy back.

    mode 'in': MPI only reads it; 'out': only writes it; 'inout': both."""

    def __init__(self, t, mode, reduce=False):
        tl = _tl()
        self.t = t
        self.mode = mode
        d = t.detach()
        self.copied = False
        half = reduce and _is_half(t.dtype)
        if half:
            if mode == "out":
                self.tmp = tl.empty(tuple(t.shape), dtype=tl.float32)
            else:
                self.tmp = d.to(tl.float32).contiguous()
            self.copied = True
        elif d.is_contiguous():
            self.tmp = d
        else:
            self.tmp = tl.empty(tuple(t.shape), dtype=t.dtype) if mode == "out" else d.contiguous()
            self.copied = True
        self.arr = self.tmp.numpy().reshape(-1) if half else _raw(self.tmp)
        self.mpi_type = _mpi_type(self.arr)

    def spec(self):
        """The [buffer, datatype] pair mpi4py takes."""
        return [self.arr, self.mpi_type]

    def finish(self):
        """Write the copy back into the tensor (when there is one and MPI wrote it)."""
        if self.mode == "in":
            return
        d = self.t.detach()
        if self.copied:
            d.copy_(self.tmp)
        else:
            self.t._bump_version()


def _check_tensor(t, name="tensor"):
    tl = _tl()
    if not isinstance(t, tl.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torchlite.Tensor but got {type(t).__name__} instead.")
    if t.device.type != "cpu":
        raise RuntimeError(f"torchlite.distributed: {name} is on {t.device}; only CPU tensors are "
                           f"supported (there is no GPU path yet)")
    if t.dtype not in _dtypes():
        raise TypeError(f"torchlite.distributed: unsupported dtype {t.dtype} for {name}")


def _check_tensor_list(ts, name):
    tl = _tl()
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, tl.Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torchlite.Tensor].")
    for t in ts:
        _check_tensor(t, name)


def _expect_list(ts, n, ref, name, op):
    """ts: n tensors, each of ref's shape and dtype (as every rank's piece must be)."""
    _check_tensor_list(ts, name)
    if len(ts) != n:
        raise RuntimeError(f"{op}: invalid {name} (expected length {n}, got {len(ts)})")
    for i, t in enumerate(ts):
        if t.dtype != ref.dtype:
            raise RuntimeError(f"{op}: invalid tensor type at index {i} of {name} (expected "
                               f"{ref.dtype}, got {t.dtype})")
        if tuple(t.shape) != tuple(ref.shape):
            raise RuntimeError(f"{op}: invalid tensor size at index {i} of {name} (expected "
                               f"{tuple(ref.shape)}, got {tuple(t.shape)})")


def _same_dtype(a, b, op):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: the input and output tensors must have the same dtype (got "
                           f"{b.dtype} and {a.dtype})")


_MPI_OPS = {}


def _reduce_op(op, dtype, opname):
    """(MPI op, divide afterwards) for a ReduceOp on a tensor of `dtype`."""
    tl = _tl()
    if isinstance(op, ReduceOp.RedOpType):
        kind = op
    else:
        raise TypeError(f"{opname}: op must be a ReduceOp (ReduceOp.SUM, ...), got {op!r}")
    MPI = _backend._mpi()
    if not _MPI_OPS:
        _MPI_OPS.update({ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                         ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
                         ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR})
    if kind is ReduceOp.PREMUL_SUM:
        raise NotImplementedError(f"{opname}: ReduceOp.PREMUL_SUM is not supported by the MPI backend")
    floating = dtype.is_floating_point
    if kind is ReduceOp.AVG and not floating:
        raise RuntimeError(f"{opname}: ReduceOp.AVG needs a floating-point tensor: the result type "
                           f"Float can't be cast to the desired output type {dtype}")
    if kind in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise RuntimeError(f"{opname}: {kind.name} is only defined for integer and bool tensors, got {dtype}")
    if dtype is tl.bool:       # 0/1 bytes: or = max, and = min
        kind = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PRODUCT: ReduceOp.MIN}.get(kind, kind)
    return _MPI_OPS[kind], op is ReduceOp.AVG


def _pg(group, opname):
    pg = _backend.resolve(group)
    if pg is None:
        warnings.warn(f"Running {opname} on global rank {_backend._state.world.rank()} which does "
                      f"not belong to the given group.", stacklevel=3)
    return pg


def _root(pg, rank, group_rank, what, opname):
    """The group rank of a src/dst argument (a global rank), or of group_src/group_dst."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{opname}: can only specify one of {what} or group_{what}")
    if group_rank is not None:
        if not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"{opname}: group_{what}={group_rank!r} is not a rank of the group "
                             f"(size {pg.size()})")
        return group_rank
    if rank is None:
        raise ValueError(f"{opname}: either {what} or group_{what} must be specified")
    if pg is _backend._state.world:
        if not isinstance(rank, int) or isinstance(rank, bool):
            raise TypeError(f"{opname}: {what} must be an int, got {type(rank).__name__}")
        if not 0 <= rank < pg.size():
            raise RuntimeError(f"{opname}: invalid root rank: {rank} (world size {pg.size()})")
        return rank
    return pg.group_rank(rank, what)


def _debug_check(pg, opname, *fields):
    """TORCHLITE_DISTRIBUTED_DEBUG=DETAIL: every rank must be running the same collective with
    matching arguments; raises RuntimeError naming the ranks that differ."""
    if not pg.debug:
        return
    mine = (opname,) + tuple(fields)
    everyone = pg.comm.allgather(mine)
    bad = [r for r, f in enumerate(everyone) if f != everyone[0]]
    if bad:
        detail = "; ".join(f"rank {r}: {everyone[r]}" for r in [0] + bad)
        raise RuntimeError(f"torchlite.distributed (DEBUG=DETAIL): the ranks disagree about "
                           f"{opname}: {detail}")


def _shape(t):
    return tuple(t.shape)


def _dtype_name(t):
    return str(t.dtype)


def _run(pg, async_op, blocking, nonblocking, finish, result, keep):
    """Run one operation: blocking (returns None), or non-blocking (returns a Work)."""
    if async_op:
        req = nonblocking()
        reqs = req if isinstance(req, list) else [req]
        return Work(reqs, finish, result, pg.timeout, keep)
    blocking()
    if finish is not None:
        finish()
    return None


def _flat(n, dtype, reduce=False):
    """A contiguous scratch tensor of n elements: float32 for a float16/bfloat16 reduction."""
    tl = _tl()
    if reduce and _is_half(dtype):
        dtype = tl.float32
    return tl.empty(n, dtype=dtype)


def _arr(flat, reduce=False):
    """The NumPy view MPI uses for a scratch tensor made by _flat."""
    return flat.numpy() if reduce and flat.dtype is _tl().float32 else _raw(flat)


def _copy_into(dst, src_flat):
    """dst (any layout) <- the elements of a 1-D scratch tensor, cast to dst's dtype."""
    dst.detach().copy_(src_flat.view(tuple(dst.shape)))


# ---- collectives --------------------------------------------------------------------------------

def all_reduce(tensor: Tensor, op: ReduceOp.RedOpType = ReduceOp.SUM, group: _backend.ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce `tensor` over all ranks of the group, in place: afterwards every rank holds the
    same result.  async_op=True returns a Work (wait() before reading the tensor); otherwise
    None."""
    _check_tensor(tensor)
    pg = _pg(group, "all_reduce")
    if pg is None:
        return None
    mop, avg = _reduce_op(op, tensor.dtype, "all_reduce")
    _debug_check(pg, "all_reduce", _dtype_name(tensor), _shape(tensor), op.name)
    MPI = _backend._mpi()
    b = _Buf(tensor, "inout", reduce=True)

    def finish():
        if avg:
            b.arr /= pg.size()
        b.finish()
    return _run(pg, async_op, lambda: pg.comm.Allreduce(MPI.IN_PLACE, b.spec(), mop),
                lambda: pg.comm.Iallreduce(MPI.IN_PLACE, b.spec(), mop), finish, [tensor], b)


def broadcast(tensor: Tensor, src: int | None = None, group: _backend.ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Copy `tensor` of rank `src` (a global rank; or group_src, a rank in the group) into
    `tensor` on every other rank of the group."""
    _check_tensor(tensor)
    pg = _pg(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src", "broadcast")
    _debug_check(pg, "broadcast", _dtype_name(tensor), _shape(tensor), root)
    b = _Buf(tensor, "out" if pg.rank() != root else "in")
    return _run(pg, async_op, lambda: pg.comm.Bcast(b.spec(), root),
                lambda: pg.comm.Ibcast(b.spec(), root), b.finish, [tensor], b)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp.RedOpType = ReduceOp.SUM,
           group: _backend.ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce `tensor` over the group into `tensor` on rank `dst` (a global rank; or
    group_dst); the other ranks' tensors are left as they were."""
    _check_tensor(tensor)
    pg = _pg(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst", "reduce")
    mop, avg = _reduce_op(op, tensor.dtype, "reduce")
    _debug_check(pg, "reduce", _dtype_name(tensor), _shape(tensor), op.name, root)
    MPI = _backend._mpi()
    if pg.rank() == root:
        b = _Buf(tensor, "inout", reduce=True)

        def finish():
            if avg:
                b.arr /= pg.size()
            b.finish()
        return _run(pg, async_op, lambda: pg.comm.Reduce(MPI.IN_PLACE, b.spec(), mop, root),
                    lambda: pg.comm.Ireduce(MPI.IN_PLACE, b.spec(), mop, root), finish, [tensor], b)
    b = _Buf(tensor, "in", reduce=True)
    return _run(pg, async_op, lambda: pg.comm.Reduce(b.spec(), None, mop, root),
                lambda: pg.comm.Ireduce(b.spec(), None, mop, root), None, [tensor], b)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: _backend.ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Every rank's `tensor` into `tensor_list` (one tensor per rank of the group, each of
    `tensor`'s shape and dtype), on every rank."""
    _check_tensor(tensor)
    pg = _pg(group, "all_gather")
    if pg is None:
        return None
    n = pg.size()
    _expect_list(tensor_list, n, tensor, "output tensor list", "all_gather")
    _debug_check(pg, "all_gather", _dtype_name(tensor), _shape(tensor))
    src = _Buf(tensor, "in")
    k = tensor.numel()
    flat = _flat(n * k, tensor.dtype)
    out = _raw(flat)
    spec = [out, _mpi_type(out)]

    def finish():
        for i, t in enumerate(tensor_list):
            _copy_into(t, flat[i * k:(i + 1) * k])
    return _run(pg, async_op, lambda: pg.comm.Allgather(src.spec(), spec),
                lambda: pg.comm.Iallgather(src.spec(), spec), finish, list(tensor_list), (src, flat))


def _separate(inp, out):
    """inp's buffer, copied when it overlaps out's memory (MPI forbids aliasing)."""
    if np.may_share_memory(inp.arr, out.arr):
        inp.arr = inp.arr.copy()
    return inp


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: _backend.ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's `input_tensor`, concatenated in rank order, into `output_tensor` (of
    world_size times as many elements: stacked (world_size, *shape) or concatenated along
    dimension 0)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _pg(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _same_dtype(output_tensor, input_tensor, "all_gather_into_tensor")
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise RuntimeError(f"all_gather_into_tensor: output tensor size must be equal to world_size "
                           f"times input tensor size ({pg.size()} x {input_tensor.numel()} elements), "
                           f"got {output_tensor.numel()}")
    _debug_check(pg, "all_gather_into_tensor", _dtype_name(input_tensor), _shape(input_tensor))
    out = _Buf(output_tensor, "out")
    src = _separate(_Buf(input_tensor, "in"), out)
    return _run(pg, async_op, lambda: pg.comm.Allgather(src.spec(), out.spec()),
                lambda: pg.comm.Iallgather(src.spec(), out.spec()), out.finish, [output_tensor],
                (src, out))


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp.RedOpType = ReduceOp.SUM,
                   group: _backend.ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce `input_list` (one tensor per rank, each of `output`'s shape) over the group, and
    give rank i the reduction of everyone's input_list[i], in `output`."""
    _check_tensor(output, "output")
    pg = _pg(group, "reduce_scatter")
    if pg is None:
        return None
    n = pg.size()
    _expect_list(input_list, n, output, "input tensor list", "reduce_scatter")
    mop, avg = _reduce_op(op, output.dtype, "reduce_scatter")
    _debug_check(pg, "reduce_scatter", _dtype_name(output), _shape(output), op.name)
    k = output.numel()
    flat = _flat(n * k, output.dtype, reduce=True)
    for i, t in enumerate(input_list):
        flat[i * k:(i + 1) * k].copy_(t.detach().reshape(-1))
    send = _arr(flat, reduce=True)
    out = _Buf(output, "out", reduce=True)

    def finish():
        if avg:
            out.arr /= n
        out.finish()
    return _run(pg, async_op, lambda: pg.comm.Reduce_scatter_block([send, out.mpi_type], out.spec(), mop),
                lambda: pg.comm.Ireduce_scatter_block([send, out.mpi_type], out.spec(), mop),
                finish, [output], (flat, out))


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp.RedOpType = ReduceOp.SUM,
                          group: _backend.ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce `input` (world_size times `output`'s elements) over the group and give rank i
    the i-th block of the result, in `output`."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _pg(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    _same_dtype(output, input, "reduce_scatter_tensor")
    if input.numel() != pg.size() * output.numel():
        raise RuntimeError(f"reduce_scatter_tensor: input tensor must be the same size as output size "
                           f"times world size ({pg.size()} x {output.numel()} elements), got "
                           f"{input.numel()}")
    mop, avg = _reduce_op(op, output.dtype, "reduce_scatter_tensor")
    _debug_check(pg, "reduce_scatter_tensor", _dtype_name(input), _shape(input), op.name)
    out = _Buf(output, "out", reduce=True)
    src = _separate(_Buf(input, "in", reduce=True), out)

    def finish():
        if avg:
            out.arr /= pg.size()
        out.finish()
    return _run(pg, async_op, lambda: pg.comm.Reduce_scatter_block(src.spec(), out.spec(), mop),
                lambda: pg.comm.Ireduce_scatter_block(src.spec(), out.spec(), mop), finish, [output],
                (src, out))


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: _backend.ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Every rank's `tensor` into `gather_list` on rank `dst` (one tensor per rank, each of
    `tensor`'s shape and dtype); the other ranks pass no gather_list.  dst defaults to 0."""
    _check_tensor(tensor)
    pg = _pg(group, "gather")
    if pg is None:
        return None
    if dst is None and group_dst is None:
        group_dst = 0
    root = _root(pg, dst, group_dst, "dst", "gather")
    n = pg.size()
    if pg.rank() == root:
        _expect_list(gather_list, n, tensor, "gather_list", "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _debug_check(pg, "gather", _dtype_name(tensor), _shape(tensor), root)
    src = _Buf(tensor, "in")
    if pg.rank() != root:
        return _run(pg, async_op, lambda: pg.comm.Gather(src.spec(), None, root),
                    lambda: pg.comm.Igather(src.spec(), None, root), None, [], src)
    k = tensor.numel()
    flat = _flat(n * k, tensor.dtype)
    out = _raw(flat)
    spec = [out, _mpi_type(out)]

    def finish():
        for i, t in enumerate(gather_list):
            _copy_into(t, flat[i * k:(i + 1) * k])
    return _run(pg, async_op, lambda: pg.comm.Gather(src.spec(), spec, root),
                lambda: pg.comm.Igather(src.spec(), spec, root), finish, list(gather_list), (src, flat))


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: _backend.ProcessGroup | None = None, async_op: bool = False,
            group_src: int | None = None) -> Work | None:
    """Rank `src`'s scatter_list[i] into `tensor` on rank i of the group (scatter_list: one
    tensor per rank, each of `tensor`'s shape and dtype, given on src only).  src defaults
    to 0."""
    _check_tensor(tensor)
    pg = _pg(group, "scatter")
    if pg is None:
        return None
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "src", "scatter")
    n = pg.size()
    if pg.rank() == root:
        _expect_list(scatter_list, n, tensor, "scatter_list", "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _debug_check(pg, "scatter", _dtype_name(tensor), _shape(tensor), root)
    out = _Buf(tensor, "out")
    if pg.rank() != root:
        return _run(pg, async_op, lambda: pg.comm.Scatter(None, out.spec(), root),
                    lambda: pg.comm.Iscatter(None, out.spec(), root), out.finish, [tensor], out)
    k = tensor.numel()
    flat = _flat(n * k, tensor.dtype)
    for i, t in enumerate(scatter_list):
        flat[i * k:(i + 1) * k].copy_(t.detach().reshape(-1))
    send = _raw(flat)
    spec = [send, _mpi_type(send)]
    return _run(pg, async_op, lambda: pg.comm.Scatter(spec, out.spec(), root),
                lambda: pg.comm.Iscatter(spec, out.spec(), root), out.finish, [tensor], (flat, out))


def _splits(sizes, rows, n, name):
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: {name} dimension 0 ({rows}) must be divisible by "
                               f"the world size ({n}) when no split sizes are given")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise RuntimeError(f"all_to_all_single: {name}_split_sizes has {len(sizes)} entries, expected "
                           f"one per rank ({n})")
    if any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise RuntimeError(f"all_to_all_single: {name}_split_sizes {sizes} must be non-negative and "
                           f"add up to dimension 0 of the {name} ({rows})")
    return sizes


def _displs(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: Sequence[int] | None = None,
                      input_split_sizes: Sequence[int] | None = None, group: _backend.ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Split `input` along dimension 0 into one piece per rank (input_split_sizes rows each,
    or equal pieces), send piece j to rank j, and concatenate the pieces received, in rank
    order, into `output` (output_split_sizes rows from each rank)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _pg(group, "all_to_all_single")
    if pg is None:
        return None
    _same_dtype(output, input, "all_to_all_single")
    if input.dim() == 0 or output.dim() == 0:
        raise RuntimeError("all_to_all_single: the tensors need at least one dimension")
    n = pg.size()
    in_row = input.numel() // input.shape[0] if input.shape[0] else int(np.prod(input.shape[1:]))
    out_row = output.numel() // output.shape[0] if output.shape[0] else int(np.prod(output.shape[1:]))
    if tuple(input.shape[1:]) != tuple(output.shape[1:]):
        raise RuntimeError(f"all_to_all_single: input {tuple(input.shape)} and output "
                           f"{tuple(output.shape)} must agree beyond dimension 0")
    isz = _splits(input_split_sizes, input.shape[0], n, "input")
    osz = _splits(output_split_sizes, output.shape[0], n, "output")
    if pg.debug:     # rank i's piece for rank j must be as long as what rank j expects from i
        table = pg.comm.allgather((isz, osz))
        for i in range(n):
            for j in range(n):
                if table[i][0][j] != table[j][1][i]:
                    raise RuntimeError(f"all_to_all_single (DEBUG=DETAIL): rank {i} sends {table[i][0][j]} "
                                       f"rows to rank {j}, which expects {table[j][1][i]}")
    _debug_check(pg, "all_to_all_single", _dtype_name(input), tuple(input.shape[1:]))
    out = _Buf(output, "out")
    src = _separate(_Buf(input, "in"), out)
    sc = [s * in_row for s in isz]
    rc = [s * out_row for s in osz]
    sspec = [src.arr, sc, _displs(sc), src.mpi_type]
    rspec = [out.arr, rc, _displs(rc), out.mpi_type]
    return _run(pg, async_op, lambda: pg.comm.Alltoallv(sspec, rspec),
                lambda: pg.comm.Ialltoallv(sspec, rspec), out.finish, [output], (src, out))


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor],
               group: _backend.ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Send input_tensor_list[j] to rank j and receive rank j's piece for this rank into
    output_tensor_list[j] (one tensor per rank in each list, all of one dtype)."""
    pg = _pg(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    for name, ts in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if len(ts) != n:
            raise RuntimeError(f"all_to_all: {name} has {len(ts)} tensors, expected one per rank ({n})")
    dtype = input_tensor_list[0].dtype
    if any(t.dtype != dtype for t in list(output_tensor_list) + list(input_tensor_list)):
        raise RuntimeError("all_to_all: every tensor of both lists must have the same dtype")
    sc = [t.numel() for t in input_tensor_list]
    rc = [t.numel() for t in output_tensor_list]
    if pg.debug:
        table = pg.comm.allgather((sc, rc))
        for i in range(n):
            for j in range(n):
                if table[i][0][j] != table[j][1][i]:
                    raise RuntimeError(f"all_to_all (DEBUG=DETAIL): rank {i} sends {table[i][0][j]} "
                                       f"elements to rank {j}, which expects {table[j][1][i]}")
    _debug_check(pg, "all_to_all", str(dtype))
    sflat = _flat(sum(sc), dtype)
    rflat = _flat(sum(rc), dtype)
    sd, rd = _displs(sc), _displs(rc)
    for t, o, c in zip(input_tensor_list, sd, sc):
        sflat[o:o + c].copy_(t.detach().reshape(-1))
    sarr, rarr = _raw(sflat), _raw(rflat)
    sspec = [sarr, sc, sd, _mpi_type(sarr)]
    rspec = [rarr, rc, rd, _mpi_type(rarr)]

    def finish():
        for t, o, c in zip(output_tensor_list, rd, rc):
            _copy_into(t, rflat[o:o + c])
    return _run(pg, async_op, lambda: pg.comm.Alltoallv(sspec, rspec),
                lambda: pg.comm.Ialltoallv(sspec, rspec), finish, list(output_tensor_list), (sflat, rflat))


def barrier(group: _backend.ProcessGroup | None = None, async_op: bool = False,
            device_ids: list[int] | None = None) -> Work | None:
    """Wait until every rank of the group has reached the barrier."""
    pg = _pg(group, "barrier")
    if pg is None:
        return None
    _debug_check(pg, "barrier")
    return _run(pg, async_op, pg.comm.Barrier, pg.comm.Ibarrier, None, [], None)


# ---- point to point -----------------------------------------------------------------------------

def _peer(pg, rank, group_rank, what, opname):
    peer = _root(pg, rank, group_rank, what, opname)
    if peer == pg.rank():
        kind = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: should not be the same as rank of the current process.")
    return peer


def _tag(tag):
    if not isinstance(tag, int) or tag < 0:
        raise ValueError(f"tag must be a non-negative int, got {tag!r}")
    return tag


def send(tensor: Tensor, dst: int | None = None, group: _backend.ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send `tensor` to rank `dst` (blocking until MPI is done with the buffer)."""
    _check_tensor(tensor)
    pg = _pg(group, "send")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst", "send")
    b = _Buf(tensor, "in")
    pg.comm.Send(b.spec(), peer, _tag(tag))
    return None


def recv(tensor: Tensor, src: int | None = None, group: _backend.ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into `tensor` from rank `src` (any rank when src and group_src are None);
    returns the sender's global rank."""
    _check_tensor(tensor)
    pg = _pg(group, "recv")
    if pg is None:
        return -1
    MPI = _backend._mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src", "recv")
    b = _Buf(tensor, "out")
    status = MPI.Status()
    pg.comm.Recv(b.spec(), peer, _tag(tag), status)
    b.finish()
    return pg.ranks[status.Get_source()]


def isend(tensor: Tensor, dst: int | None = None, group: _backend.ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending `tensor` to rank `dst`; returns a Work (do not modify the tensor before
    wait())."""
    _check_tensor(tensor)
    pg = _pg(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst", "isend")
    b = _Buf(tensor, "in")
    return Work([pg.comm.Isend(b.spec(), peer, _tag(tag))], None, [tensor], pg.timeout, b)


def irecv(tensor: Tensor, src: int | None = None, group: _backend.ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into `tensor` from rank `src` (any rank when None); returns a Work."""
    _check_tensor(tensor)
    pg = _pg(group, "irecv")
    if pg is None:
        return None
    MPI = _backend._mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src", "irecv")
    b = _Buf(tensor, "out")
    work = Work([pg.comm.Irecv(b.spec(), peer, _tag(tag))], b.finish, [tensor], pg.timeout, b)
    work._status = [MPI.Status()]
    return work


# ---- Python objects (pickled, as PyTorch does) ---------------------------------------------------

def _check_list(object_list, name):
    if not isinstance(object_list, list):
        raise TypeError(f"{name} must be a list, got {type(object_list).__name__}")


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: _backend.ProcessGroup | None = None,
                          device: device | str | None = None, group_src: int | None = None) -> None:
    """Rank src's picklable objects into `object_list` on every rank (in place; the list must
    have the same length everywhere).  Pickle runs code when loading: use it only between the
    job's own ranks."""
    _check_list(object_list, "object_list")
    pg = _pg(group, "broadcast_object_list")
    if pg is None:
        return None
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "src", "broadcast_object_list")
    _debug_check(pg, "broadcast_object_list", len(object_list), root)
    got = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root=root)
    if len(got) != len(object_list):
        raise RuntimeError(f"broadcast_object_list: rank {pg.ranks[root]} sent {len(got)} objects "
                           f"but object_list here has {len(object_list)} slots")
    object_list[:] = got
    return None


def all_gather_object(object_list: list[Any], obj: Any, group: _backend.ProcessGroup | None = None) -> None:
    """Every rank's picklable `obj` into object_list (one slot per rank of the group)."""
    _check_list(object_list, "object_list")
    pg = _pg(group, "all_gather_object")
    if pg is None:
        return None
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} slots, expected one "
                         f"per rank ({pg.size()})")
    _debug_check(pg, "all_gather_object")
    object_list[:] = pg.comm.allgather(obj)
    return None


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None,
                  group: _backend.ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Every rank's picklable `obj` into object_gather_list on rank dst (default 0)."""
    pg = _pg(group, "gather_object")
    if pg is None:
        return None
    if dst is None and group_dst is None:
        group_dst = 0
    root = _root(pg, dst, group_dst, "dst", "gather_object")
    if pg.rank() == root:
        _check_list(object_gather_list, "object_gather_list")
        if len(object_gather_list) != pg.size():
            raise ValueError(f"gather_object: object_gather_list has {len(object_gather_list)} slots, "
                             f"expected one per rank ({pg.size()})")
    elif object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on non-destination ranks.")
    _debug_check(pg, "gather_object", root)
    got = pg.comm.gather(obj, root=root)
    if pg.rank() == root:
        object_gather_list[:] = got
    return None


def scatter_object_list(scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: _backend.ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """Rank src's scatter_object_input_list[i] into scatter_object_output_list[0] on rank i."""
    _check_list(scatter_object_output_list, "scatter_object_output_list")
    if len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _pg(group, "scatter_object_list")
    if pg is None:
        return None
    if src is None and group_src is None:
        group_src = 0
    root = _root(pg, src, group_src, "src", "scatter_object_list")
    if pg.rank() == root:
        _check_list(scatter_object_input_list, "scatter_object_input_list")
        if len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list has "
                             f"{len(scatter_object_input_list)} objects, expected one per rank ({pg.size()})")
    _debug_check(pg, "scatter_object_list", root)
    data = list(scatter_object_input_list) if pg.rank() == root else None
    scatter_object_output_list[0] = pg.comm.scatter(data, root=root)
    return None

