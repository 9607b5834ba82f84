"""Every collective of torchlite.distributed, every dtype, checked against NumPy on the inputs
gathered with mpi4py itself.  Run under mpiexec (any number of ranks); prints `OK <name>` lines,
and raises (which aborts the job, naming the rank) on the first wrong result."""
import numpy as np
from mpi4py import MPI

import torchlite as torch
import torchlite.distributed as dist

dist.init_process_group()
RANK, N = dist.get_rank(), dist.get_world_size()
COMM = MPI.COMM_WORLD
assert (RANK, N) == (COMM.Get_rank(), COMM.Get_size())
assert dist.is_initialized() and dist.get_backend() == "mpi" and dist.group.WORLD is not None

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
NP = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
      torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
      torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64}
R = dist.ReduceOp


def data(dt, shape, salt, rank=RANK):
    """This rank's input: small integers (sums and products of every rank exact in every
    dtype, even float16/bfloat16), and random normals for float32/float64."""
    rng = np.random.default_rng(1000 * rank + 10 * DTYPES.index(dt) + salt)
    if dt is torch.bool:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt in (torch.float32, torch.float64):
        return rng.standard_normal(shape).astype(NP[dt])
    lo = 0 if dt is torch.uint8 else -3
    return rng.integers(lo, 4, shape).astype(NP[dt])


def T(a, dt):
    """A torchlite tensor of dtype dt with a's values."""
    if dt is torch.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a)).clone()


def A(t):
    """A tensor's values as NumPy (bfloat16 as float32)."""
    if t.dtype is torch.bfloat16:
        return t.float().numpy()
    return t.detach().numpy()


def rounded(a, dt):
    """a rounded to dtype dt, as NumPy (what the tensor should hold)."""
    if dt is torch.bfloat16:
        return torch.from_numpy(np.asarray(a, dtype=np.float32)).to(torch.bfloat16).float().numpy()
    return np.asarray(a).astype(NP[dt])


def everyone(a):
    """Every rank's NumPy array, through mpi4py (not through the code under test)."""
    return COMM.allgather(a)


def reference(arrs, op, dt):
    stack = np.stack(arrs)
    if dt is torch.bool:
        fn = {R.SUM: np.any, R.MAX: np.any, R.BOR: np.any, R.PRODUCT: np.all, R.MIN: np.all,
              R.BAND: np.all, R.BXOR: lambda s, axis: np.logical_xor.reduce(s, axis=axis)}[op]
        return fn(stack, axis=0)
    if dt in (torch.float16, torch.bfloat16):
        stack = stack.astype(np.float32)      # reduced in float32, rounded once
    if op in (R.SUM, R.AVG):
        out = np.sum(stack, axis=0, dtype=stack.dtype)
        if op is R.AVG:
            out = out / len(arrs)
    else:
        out = {R.PRODUCT: lambda s: np.prod(s, axis=0, dtype=s.dtype), R.MIN: lambda s: s.min(0),
               R.MAX: lambda s: s.max(0), R.BAND: lambda s: np.bitwise_and.reduce(s, axis=0),
               R.BOR: lambda s: np.bitwise_or.reduce(s, axis=0),
               R.BXOR: lambda s: np.bitwise_xor.reduce(s, axis=0)}[op](stack)
    return rounded(out, dt)


def same(name, got, want, dt):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{name} [{dt}]: shape {got.shape}, expected {want.shape}")
    if dt in (torch.float32, torch.float64):
        ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        raise AssertionError(f"{name} [{dt}] on rank {RANK}: got\n{got}\nexpected\n{want}")


def ops_for(dt):
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dt in FLOATS:
        ops.append(R.AVG)
    else:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {exc.__name__}")


count = 0

# ---- all_reduce: contiguous, non-contiguous (a transposed view), 0-d, empty, async --------------
for dt in DTYPES:
    for op in ops_for(dt):
        a = data(dt, (3, 5), op.value)
        t = T(a, dt)
        assert dist.all_reduce(t, op=op) is None
        same("all_reduce", A(t), reference(everyone(a), op, dt), dt)
        base = T(a.T.copy(), dt)          # (5, 3); its transpose is a non-contiguous (3, 5) view
        view = base.t()
        assert not view.is_contiguous()
        dist.all_reduce(view, op=op)
        same("all_reduce non-contiguous", A(view), reference(everyone(a), op, dt), dt)
        t = T(a, dt)
        work = dist.all_reduce(t, op=op, async_op=True)
        assert isinstance(work, dist.Work)
        assert work.wait() is True and work.is_completed() and work.is_success()
        assert work.result()[0] is t
        same("all_reduce async", A(t), reference(everyone(a), op, dt), dt)
        count += 3
    s = T(data(dt, (), 7), dt)
    want = reference(everyone(A(s)), R.MAX, dt)
    dist.all_reduce(s, op=R.MAX)
    same("all_reduce 0-d", A(s), want, dt)
    e = torch.empty(0, dtype=dt)
    dist.all_reduce(e)
    assert e.shape == (0,)
    if dt not in FLOATS:
        raises(RuntimeError, dist.all_reduce, T(data(dt, (2,), 0), dt), op=R.AVG)
    else:
        raises(RuntimeError, dist.all_reduce, T(data(dt, (2,), 0), dt), op=R.BAND)
# a tensor that requires grad (PyTorch's collectives do not record autograd history)
w = torch.ones(3, requires_grad=True)
dist.all_reduce(w)
same("all_reduce requires_grad", A(w), np.full(3, N, np.float32), torch.float32)
print(f"OK all_reduce ({count} cases)", flush=True)

# ---- broadcast -----------------------------------------------------------------------------------
count = 0
for dt in DTYPES:
    for src in range(N):
        a = data(dt, (4, 3), src)
        t = T(a, dt)
        dist.broadcast(t, src=src)
        same("broadcast", A(t), rounded(everyone(a)[src], dt), dt)
        base = T(np.ascontiguousarray(a.T), dt)
        dist.broadcast(base.t(), src=src)
        same("broadcast non-contiguous", A(base.t()), rounded(everyone(a)[src], dt), dt)
        t = T(a, dt)
        dist.broadcast(t, group_src=src, async_op=True).wait()
        same("broadcast async", A(t), rounded(everyone(a)[src], dt), dt)
        count += 3
raises(RuntimeError, dist.broadcast, torch.ones(2), src=N)
raises(ValueError, dist.broadcast, torch.ones(2))
raises(TypeError, dist.broadcast, np.ones(2), src=0)
print(f"OK broadcast ({count} cases)", flush=True)

# ---- reduce --------------------------------------------------------------------------------------
count = 0
for dt in DTYPES:
    for op in ops_for(dt):
        for dst in range(N):
            a = data(dt, (2, 3), op.value + dst)
            t = T(a, dt)
            if count % 2:
                dist.reduce(t, dst=dst, op=op, async_op=True).wait()
            else:
                dist.reduce(t, dst=dst, op=op)
            inputs = everyone(a)
            want = reference(inputs, op, dt) if RANK == dst else rounded(a, dt)
            same("reduce", A(t), want, dt)
            count += 1
print(f"OK reduce ({count} cases)", flush=True)

# ---- all_gather, all_gather_into_tensor ---------------------------------------------------------
count = 0
for dt in DTYPES:
    a = data(dt, (2, 3), 1)
    outs = [torch.zeros(2, 3, dtype=dt) for _ in range(N)]
    outs[-1] = torch.zeros(3, 2, dtype=dt).t()     # a non-contiguous output
    dist.all_gather(outs, T(a, dt))
    for r, got in enumerate(everyone(a)):
        same("all_gather", A(outs[r]), rounded(got, dt), dt)
    outs = [torch.zeros(2, 3, dtype=dt) for _ in range(N)]
    dist.all_gather(outs, T(a, dt), async_op=True).wait()
    for r, got in enumerate(everyone(a)):
        same("all_gather async", A(outs[r]), rounded(got, dt), dt)
    flat = torch.zeros(N * 2, 3, dtype=dt)
    dist.all_gather_into_tensor(flat, T(a, dt))
    same("all_gather_into_tensor", A(flat), rounded(np.concatenate(everyone(a)), dt), dt)
    stacked = torch.zeros(N, 2, 3, dtype=dt)
    dist.all_gather_into_tensor(stacked, T(a, dt), async_op=True).wait()
    same("all_gather_into_tensor stacked", A(stacked), rounded(np.stack(everyone(a)), dt), dt)
    # in place: the input is this rank's block of the output
    flat = torch.zeros(N * 2, 3, dtype=dt)
    flat[2 * RANK:2 * RANK + 2].copy_(T(a, dt))
    dist.all_gather_into_tensor(flat, flat[2 * RANK:2 * RANK + 2])
    same("all_gather_into_tensor in place", A(flat), rounded(np.concatenate(everyone(a)), dt), dt)
    count += 5
raises(RuntimeError, dist.all_gather, [torch.zeros(2)] * (N + 1), torch.zeros(2))
raises(RuntimeError, dist.all_gather, [torch.zeros(3)] * N, torch.zeros(2))
raises(RuntimeError, dist.all_gather, [torch.zeros(2, dtype=torch.int32)] * N, torch.zeros(2))
raises(RuntimeError, dist.all_gather_into_tensor, torch.zeros(2 * N + 1), torch.zeros(2))
print(f"OK all_gather ({count} cases)", flush=True)

# ---- reduce_scatter, reduce_scatter_tensor ------------------------------------------------------
count = 0
for dt in DTYPES:
    for op in ops_for(dt):
        pieces = [data(dt, (2, 2), 10 * j + op.value) for j in range(N)]
        out = torch.zeros(2, 2, dtype=dt)
        dist.reduce_scatter(out, [T(p, dt) for p in pieces], op=op)
        want = reference([g[RANK] for g in everyone(pieces)], op, dt)
        same("reduce_scatter", A(out), want, dt)
        full = data(dt, (N * 2, 3), op.value)
        out = torch.zeros(2, 3, dtype=dt)
        work = dist.reduce_scatter_tensor(out, T(full, dt), op=op, async_op=bool(count % 2))
        if work is not None:
            work.wait()
        want = reference([g[2 * RANK:2 * RANK + 2] for g in everyone(full)], op, dt)
        same("reduce_scatter_tensor", A(out), want, dt)
        count += 2
raises(RuntimeError, dist.reduce_scatter_tensor, torch.zeros(2), torch.zeros(2 * N + 2))
raises(RuntimeError, dist.reduce_scatter, torch.zeros(2), [torch.zeros(2)] * (N + 1))
print(f"OK reduce_scatter ({count} cases)", flush=True)

# ---- gather, scatter -----------------------------------------------------------------------------
count = 0
for dt in DTYPES:
    for root in range(N):
        a = data(dt, (3,), root)
        outs = [torch.zeros(3, dtype=dt) for _ in range(N)] if RANK == root else None
        work = dist.gather(T(a, dt), outs, dst=root, async_op=bool(root % 2))
        if work is not None:
            work.wait()
        if RANK == root:
            for r, got in enumerate(everyone(a)):
                same("gather", A(outs[r]), rounded(got, dt), dt)
        else:
            everyone(a)
        pieces = [data(dt, (2, 2), 100 + j) for j in range(N)]
        out = torch.zeros(2, 2, dtype=dt).t()                 # non-contiguous output
        work = dist.scatter(out, [T(p, dt) for p in pieces] if RANK == root else None, src=root,
                            async_op=bool(root % 2))
        if work is not None:
            work.wait()
        same("scatter", A(out), rounded(everyone(pieces)[root][RANK], dt), dt)
        count += 2
if N > 1:
    other = (RANK + 1) % N
    raises(ValueError, dist.gather, torch.zeros(2), [torch.zeros(2)] * N, dst=other)
    raises(ValueError, dist.scatter, torch.zeros(2), [torch.zeros(2)] * N, src=other)
raises(RuntimeError, dist.gather, torch.zeros(2), [torch.zeros(2)] * (N + 1), dst=RANK)
print(f"OK gather/scatter ({count} cases)", flush=True)

# ---- all_to_all_single (equal and uneven splits), all_to_all ------------------------------------
count = 0
for dt in DTYPES:
    a = data(dt, (2 * N, 3), 5)
    out = torch.zeros(2 * N, 3, dtype=dt)
    dist.all_to_all_single(out, T(a, dt))
    want = np.concatenate([g[2 * RANK:2 * RANK + 2] for g in everyone(a)])
    same("all_to_all_single", A(out), rounded(want, dt), dt)
    # rank r sends r + j + 1 rows to rank j
    isz = [RANK + j + 1 for j in range(N)]
    osz = [i + RANK + 1 for i in range(N)]
    a = data(dt, (sum(isz), 2), 6)
    out = torch.zeros(sum(osz), 2, dtype=dt)
    dist.all_to_all_single(out, T(a, dt), output_split_sizes=osz, input_split_sizes=isz,
                           async_op=True).wait()
    pieces = []
    for i, g in enumerate(everyone(a)):
        start = sum(i + j + 1 for j in range(RANK))
        pieces.append(g[start:start + i + RANK + 1])
    same("all_to_all_single uneven", A(out), rounded(np.concatenate(pieces), dt), dt)
    ins = [data(dt, (j + 1,), 20 + j) for j in range(N)]
    outs = [torch.zeros(RANK + 1, dtype=dt) for _ in range(N)]
    dist.all_to_all(outs, [T(x, dt) for x in ins])
    for i, g in enumerate(everyone(ins)):
        same("all_to_all", A(outs[i]), rounded(g[RANK], dt), dt)
    count += 3
raises(RuntimeError, dist.all_to_all_single, torch.zeros(N, 2), torch.zeros(N, 3))
raises(RuntimeError, dist.all_to_all_single, torch.zeros(N), torch.zeros(N), None, [N + 1] + [0] * (N - 1))
print(f"OK all_to_all ({count} cases)", flush=True)

# ---- send/recv, isend/irecv ----------------------------------------------------------------------
count = 0
if N > 1:
    nxt, prv = (RANK + 1) % N, (RANK - 1) % N
    for dt in DTYPES:
        a = data(dt, (3, 2), 30)
        got = torch.zeros(3, 2, dtype=dt)
        rw = dist.irecv(got, src=prv, tag=7)
        sw = dist.isend(T(a, dt), dst=nxt, tag=7)
        sw.wait()
        rw.wait()
        same("isend/irecv", A(got), rounded(everyone(a)[prv], dt), dt)
        # blocking, even ranks send first; recv from any source returns the sender
        got = torch.zeros(2, 3, dtype=dt).t()
        if RANK % 2 == 0:
            dist.send(T(a, dt), dst=nxt)
            sender = dist.recv(got)
        else:
            sender = dist.recv(got)
            dist.send(T(a, dt), dst=nxt)
        assert sender == prv, (sender, prv)
        same("send/recv", A(got), rounded(everyone(a)[prv], dt), dt)
        count += 2
    raises(ValueError, dist.send, torch.zeros(2), dst=RANK)
    raises(ValueError, dist.recv, torch.zeros(2), src=RANK)
print(f"OK send/recv ({count} cases)", flush=True)

# ---- objects, barrier ----------------------------------------------------------------------------
objs = [None, None] if RANK else [{"lr": 0.1}, "hello"]
dist.broadcast_object_list(objs, src=0)
assert objs == [{"lr": 0.1}, "hello"], objs
gathered = [None] * N
dist.all_gather_object(gathered, {"rank": RANK, "sq": RANK * RANK})
assert gathered == [{"rank": r, "sq": r * r} for r in range(N)], gathered
raises(ValueError, dist.all_gather_object, [None] * (N + 1), 1)
got = [None] * N if RANK == 0 else None
dist.gather_object(("r", RANK), got, dst=0)
assert RANK != 0 or got == [("r", r) for r in range(N)], got
out = [None]
dist.scatter_object_list(out, [f"to {r}" for r in range(N)] if RANK == 0 else None, src=0)
assert out == [f"to {RANK}"], out
dist.barrier()
dist.barrier(async_op=True).wait()
print("OK objects/barrier", flush=True)

# ---- sub-groups ----------------------------------------------------------------------------------
if N >= 2:
    members = [0, N - 1]
    g = dist.new_group(members)
    if RANK in members:
        assert dist.get_rank(g) == members.index(RANK) and dist.get_world_size(g) == 2
        assert dist.get_process_group_ranks(g) == members
        assert dist.get_global_rank(g, 1) == N - 1 and dist.get_group_rank(g, N - 1) == 1
        t = torch.tensor([float(RANK + 1)])
        dist.all_reduce(t, group=g)
        assert t.item() == 1 + N, t
        t = torch.tensor([float(RANK)])
        dist.broadcast(t, src=N - 1, group=g)
        assert t.item() == N - 1
        raises(ValueError, dist.broadcast, t, src=N + 5, group=g)
        outs = [torch.zeros(1) for _ in range(2)]
        dist.all_gather(outs, torch.tensor([float(RANK)]), group=g)
        assert [o.item() for o in outs] == [0.0, float(N - 1)]
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(torch.ones(1), group=g) is None
        assert caught and "does not belong" in str(caught[0].message)
    evens = dist.new_group(list(range(0, N, 2)), use_local_synchronization=True) if RANK % 2 == 0 else None
    if evens is not None:
        t = torch.ones(2)
        dist.all_reduce(t, group=evens)
        assert t.tolist() == [float((N + 1) // 2)] * 2
        dist.destroy_process_group(evens)
    dist.destroy_process_group(g)
    print("OK new_group", flush=True)

dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"OK all collectives on {N} ranks (rank {RANK})", flush=True)
