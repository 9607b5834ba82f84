"""PowerSGD communication hooks, run under mpiexec (2 ranks or more).  Prints `OK <name>` lines;
a wrong result raises, which aborts the job naming the rank.

The oracle is NumPy in float64: every rank builds every rank's gradient (seeded by rank), so
the compressed all-reduce can be recomputed locally -- P = sum M_r Q, Gram-Schmidt on P,
Q = sum M_r^T P, result P Q^T / N."""
import pickle

import numpy as np

import torchlite as torch
import torchlite.distributed as dist
from torchlite import nn
from torchlite.distributed._grad_bucket import GradBucket
from torchlite.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
from torchlite.nn.parallel import DistributedDataParallel as DDP
from rank_checks import same_on_every_rank

dist.init_process_group()
RANK, N = dist.get_rank(), dist.get_world_size()
SHAPES = [(12, 10), (7,), (9, 4, 2), (3, 2)]      # matrix, vector, 3-d (9 x 8), too small


def grads_of(rank, dtype=np.float64):
    rng = np.random.default_rng(10 + rank)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def bucket_of(arrays, index=0, is_last=True, dtype=torch.float64):
    flat = torch.tensor(np.concatenate([a.reshape(-1) for a in arrays])).to(dtype)
    views, off = [], 0
    for a in arrays:
        views.append(flat[off:off + a.size].view(a.shape))
        off += a.size
    return GradBucket(index, flat, views, [None] * len(arrays), is_last)


def gram_schmidt(m):
    m = m.copy()
    for i in range(m.shape[1]):
        m[:, i] /= np.linalg.norm(m[:, i])
        m[:, i + 1:] -= np.outer(m[:, i], m[:, i] @ m[:, i + 1:])
    return m


def check(name, got, want, tol):
    err = np.abs(got - want).max()
    if err > tol:
        raise AssertionError(f"{name}: differs by {err:.3g} on rank {RANK}")


def value(fut):
    fut.wait()
    return fut.value().numpy().copy()


# ---- one bucket, the formula ---------------------------------------------------------------------
rank_r = 2
state = psgd.PowerSGDState(None, matrix_approximation_rank=rank_r, start_powerSGD_iter=2,
                           min_compression_rate=1)
mine = grads_of(RANK)
bucket = bucket_of(mine)
# before start_powerSGD_iter: the plain average
got = value(psgd.powerSGD_hook(state, bucket))
want = np.concatenate([sum(grads_of(r)[i] for r in range(N)).reshape(-1) / N for i in range(4)])
check("powerSGD before start_powerSGD_iter", got, want, 1e-12)
state.iter = state.start_powerSGD_iter
assert state.iter == 2
# a known warm start: the compressed matrices are (12, 10) and (9, 8); (3, 2) is too small
rng = np.random.default_rng(0)
q0 = [gram_schmidt(rng.standard_normal((m, rank_r))) for m in (10, 8)]
state.q_memory_dict[0] = [torch.tensor(q) for q in q0]
bucket = bucket_of(mine)
got = value(psgd.powerSGD_hook(state, bucket))
expect, new_q = [], []
for i, s in enumerate(SHAPES):
    total = sum(grads_of(r)[i] for r in range(N))
    if i in (0, 2):
        mats = [grads_of(r)[i].reshape(s[0], -1) for r in range(N)]
        q = q0[0 if i == 0 else 1]
        p = gram_schmidt(sum(m @ q for m in mats))
        q = sum(m.T @ p for m in mats)
        new_q.append(q)
        expect.append((p @ q.T / N).reshape(-1))
    else:
        expect.append(total.reshape(-1) / N)
want = np.concatenate(expect)
check("powerSGD formula", got, want, 1e-10)
check("powerSGD bucket views hold the result", bucket.gradients()[2].numpy().reshape(-1),
      got[12 * 10 + 7:12 * 10 + 7 + 72], 0)
for q, w in zip(state.q_memory_dict[0], new_q):
    check("powerSGD warm start keeps Q", q.numpy(), w, 1e-10)
local = np.concatenate([a.reshape(-1) for a in mine])
check("powerSGD error feedback", state.error_dict[0].numpy(), local - got, 1e-12)
before, after = 12 * 10 + 9 * 8, (12 + 10) * 2 + (9 + 8) * 2
assert state.compression_stats() == (before / after, before, after), state.compression_stats()
assert state.iter == 3
# next iteration: the error is added to the gradient first
bucket = bucket_of(mine)
err_before = state.error_dict[0].numpy().copy()
got2 = value(psgd.powerSGD_hook(state, bucket))
check("powerSGD second step is finite", np.isfinite(got2).astype(float), np.ones_like(got2), 0)
check("powerSGD error feedback accumulates", state.error_dict[0].numpy(),
      local + err_before - got2, 1e-12)
same_on_every_rank("powerSGD", [got, got2])
print("OK powerSGD formula: P, Gram-Schmidt, Q, warm start, error feedback, small tensors "
      "averaged as they are", flush=True)

# full rank: the approximation is the exact average
state = psgd.PowerSGDState(None, matrix_approximation_rank=100, start_powerSGD_iter=2,
                           min_compression_rate=0, use_error_feedback=False)
state.iter = 2
got = value(psgd.powerSGD_hook(state, bucket_of(mine)))
want = np.concatenate([sum(grads_of(r)[i] for r in range(N)).reshape(-1) / N for i in range(4)])
check("powerSGD full rank equals the average", got, want, 1e-10)
copy = pickle.loads(pickle.dumps(state))
assert copy.process_group is None and copy.matrix_approximation_rank == 100
assert len(copy.q_memory_dict[0]) == 3
print("OK powerSGD full rank: exact average; the state pickles", flush=True)

# ---- batched ---------------------------------------------------------------------------------------
state = psgd.PowerSGDState(None, matrix_approximation_rank=2, start_powerSGD_iter=2)
state.iter = 2
total = sum(np.concatenate([a.reshape(-1) for a in grads_of(r)]) for r in range(N))
numel = total.size
side = int(np.ceil(np.sqrt(numel)))
q0 = gram_schmidt(np.random.default_rng(1).standard_normal((side, 2)))
state.q_memory_dict[0] = torch.tensor(q0)
got = value(psgd.batched_powerSGD_hook(state, bucket_of(mine)))
mats = []
for r in range(N):
    flat = np.zeros(side * side)
    flat[:numel] = np.concatenate([a.reshape(-1) for a in grads_of(r)])
    mats.append(flat.reshape(side, side))
p = gram_schmidt(sum(m @ q0 for m in mats))
q = sum(m.T @ p for m in mats)
want = (p @ q.T / N).reshape(-1)[:numel]
check("batched powerSGD formula", got, want, 1e-10)
check("batched powerSGD error feedback", state.error_dict[0].numpy(),
      np.concatenate([a.reshape(-1) for a in mine]) - got, 1e-12)
print("OK batched powerSGD formula", flush=True)

# ---- errors ------------------------------------------------------------------------------------------
for kwargs in ({"start_powerSGD_iter": 1}, {"matrix_approximation_rank": 0}):
    try:
        psgd.PowerSGDState(None, **kwargs)
    except ValueError:
        pass
    else:
        raise AssertionError(f"PowerSGDState accepted {kwargs}")
print("OK powerSGD state checks", flush=True)


# ---- DDP training --------------------------------------------------------------------------------
def mlp():
    # tanh, not ReLU: a unit dead for the whole batch makes a gradient matrix rank-deficient,
    # and then even a full-rank PowerSGD is not the exact average
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


g = torch.Generator().manual_seed(0)
x, y = torch.randn(16, 8, generator=g), torch.randn(16, 3, generator=g)
k = 16 // N
xs, ys = x[RANK * k:(RANK + 1) * k], y[RANK * k:(RANK + 1) * k]
for hook, rank_r, exact in ((psgd.powerSGD_hook, 16, True), (psgd.powerSGD_hook, 1, False),
                            (psgd.batched_powerSGD_hook, 1, False)):
    dtype = torch.float64 if exact else torch.float32   # float32 Gram-Schmidt drifts ~1e-3
    torch.manual_seed(100)
    ref = mlp().to(dtype)
    torch.manual_seed(100 + RANK)
    model = DDP(mlp().to(dtype), bucket_cap_mb=0.0005)
    state = psgd.PowerSGDState(None, matrix_approximation_rank=rank_r, start_powerSGD_iter=3,
                               min_compression_rate=0 if exact else 2,
                               use_error_feedback=not exact, warm_start=not exact)
    model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    losses = []
    for step in range(15):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xs.to(dtype)), ys.to(dtype))
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = nn.functional.mse_loss(ref(x.to(dtype)), y.to(dtype))
        ref_loss.backward()
        ref_opt.step()
        losses.append(float(ref_loss))
    params = [p.detach().numpy().copy() for p in model.parameters()]
    same_on_every_rank(f"ddp {hook.__name__}", params)
    assert state.iter == 15, state.iter
    if exact:
        for a, b in zip(params, ref.parameters()):
            check("ddp powerSGD_hook at full rank", a, b.detach().numpy(), 1e-8)
    else:
        whole = nn.functional.mse_loss(model.module(x), y).item()
        if not whole < losses[0]:
            raise AssertionError(f"{hook.__name__}: loss {whole} not below {losses[0]}")
print("OK ddp powerSGD: full rank equals plain DDP; rank 1 and batched train, equal on every "
      "rank", flush=True)
print(f"OK powerSGD all (rank {RANK})", flush=True)
