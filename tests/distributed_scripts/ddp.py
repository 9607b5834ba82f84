"""DistributedDataParallel checks, run under mpiexec (2 ranks or more).  Prints `OK <name>`
lines; a wrong result raises, which aborts the job naming the rank.

Each rank trains on its shard of a fixed batch; every rank also computes the single-process
reference itself (the data is the same everywhere), so no result has to travel to compare."""
import copy

import numpy as np

import torchlite as torch
import torchlite.distributed as dist
from torchlite import nn
from torchlite.nn.parallel import DistributedDataParallel as DDP
from rank_checks import same_on_every_rank

dist.init_process_group()
RANK, N = dist.get_rank(), dist.get_world_size()
STEPS = 20


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 3))


def batch(shape, rows=16, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, *shape, generator=g).to(dtype)
    y = torch.randn(rows, 3, generator=g).to(dtype)
    return x, y


def shard(t, r=RANK):
    k = t.shape[0] // N
    return t[r * k:(r + 1) * k]


def params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def close(name, a, b, rtol, atol):
    for i, (x, y) in enumerate(zip(a, b)):
        if not np.allclose(x, y, rtol=rtol, atol=atol):
            raise AssertionError(f"{name}: tensor {i} differs by {np.abs(x - y).max():.3g} on rank {RANK}")


def make(factory, dtype=torch.float32):
    """This rank's model (a different initialisation on every rank: DDP must broadcast rank
    0's) and the reference, a copy of rank 0's initial model."""
    torch.manual_seed(100)
    reference = factory().to(dtype)
    torch.manual_seed(100 + RANK)
    local = factory().to(dtype)
    return local, reference


def mlp_equivalence(name, dtype=torch.float32, rtol=1e-4, atol=1e-5, hook=None, **ddp_kwargs):
    local, ref = make(mlp, dtype)
    model = DDP(local, **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(None, hook)
    close(f"{name} broadcast at construction", params(local), params(ref), 0, 0)
    x, y = batch((8,), dtype=dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    for _ in range(STEPS):
        opt.zero_grad()
        loss_fn(model(shard(x)), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(ref(x), y).backward()
        ref_opt.step()
    same_on_every_rank(name, params(local))
    close(name, params(local), params(ref), rtol, atol)
    diff = max(np.abs(a - b).max() for a, b in zip(params(local), params(ref)))
    print(f"OK {name}: {STEPS} steps on {N} ranks equal one process on the whole batch "
          f"(max |diff| {diff:.2g})", flush=True)


mlp_equivalence("ddp mlp")
mlp_equivalence("ddp mlp float64", dtype=torch.float64, rtol=1e-10, atol=1e-12)
mlp_equivalence("ddp mlp small buckets + gradient_as_bucket_view", bucket_cap_mb=0.0005,
                gradient_as_bucket_view=True)


# ---- communication hooks -------------------------------------------------------------------------
from torchlite.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402

mlp_equivalence("ddp allreduce_hook", hook=default_hooks.allreduce_hook, bucket_cap_mb=0.0005)
mlp_equivalence("ddp fp16_compress_hook", rtol=1e-3, atol=1e-4, hook=default_hooks.fp16_compress_hook)
mlp_equivalence("ddp bf16_compress_hook", rtol=1e-2, atol=1e-3, hook=default_hooks.bf16_compress_hook)
seen = []


def summing_hook(state, bucket):
    """A user's hook on the GradBucket API: sum over the ranks, then average in the callback."""
    seen.append((bucket.index(), bucket.is_last(), len(bucket.parameters()), len(bucket.gradients())))
    assert sum(g.numel() for g in bucket.gradients()) == bucket.buffer().numel()
    work = dist.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0] / N)


mlp_equivalence("ddp custom comm hook", hook=summing_hook, bucket_cap_mb=0.0005)
assert seen and any(last for _, last, _, _ in seen) and all(p == g for _, _, p, g in seen), seen
try:
    m = DDP(mlp())
    m.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    m(shard(batch((8,))[0])).sum().backward()
except RuntimeError as e:
    assert "must return a torchlite.futures.Future" in str(e), e
else:
    raise AssertionError("a hook returning a tensor was accepted")
print("OK ddp comm hook errors: a hook must return a Future", flush=True)


# ---- CNN with BatchNorm ---------------------------------------------------------------------------
# DDP does not synchronise batch statistics: each rank normalises with its own shard's mean and
# variance (PyTorch's DDP does the same; SyncBatchNorm would use the whole batch's).  So the
# single-process equivalent runs the model once per shard and averages the shard losses.  With
# broadcast_buffers=True rank 0's running statistics are copied to every rank before each
# forward, so rank 0's buffers are those of a model that only ever saw shard 0.
local, ref = make(cnn)
model = DDP(local)
assert list(model.state_dict())[0].startswith("module.") and model.module is local
x, y = batch((1, 6, 6))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()
for _ in range(STEPS):
    opt.zero_grad()
    loss_fn(model(shard(x)), shard(y)).backward()
    opt.step()
    ref_opt.zero_grad()
    losses, kept = [], None
    for r in range(N):
        losses.append(loss_fn(ref(shard(x, r)), shard(y, r)))
        if r == 0:
            kept = {k: v.clone() for k, v in ref.named_buffers()}
    with torch.no_grad():                                  # back to rank 0's running statistics
        for k, v in ref.named_buffers():
            v.copy_(kept[k])
    (sum(losses) / N).backward()
    ref_opt.step()
same_on_every_rank("ddp cnn parameters", params(local))
close("ddp cnn", params(local), params(ref), 1e-4, 1e-5)
if RANK == 0:
    close("ddp cnn rank 0 buffers", [b.numpy() for b in local.buffers()],
          [b.numpy() for b in ref.buffers()], 1e-5, 1e-6)
# in eval mode every rank uses rank 0's statistics (broadcast before the forward)
model.eval()
with torch.no_grad():
    out = model(x[:4])
same_on_every_rank("ddp cnn eval outputs", [out.numpy()])
model.train()
print(f"OK ddp cnn+batchnorm: {STEPS} steps equal the per-shard reference; rank 0's buffers match",
      flush=True)


# ---- the averaged gradients: handed over when this backward made them, copied into kept ones ----
local, ref = make(mlp)
model = DDP(local)
x, y = batch((8,), rows=16 * N)
for step in range(4):
    set_to_none = step < 2
    for p in local.parameters():
        if set_to_none:
            p.grad = None
        else:
            p.grad.zero_()
    kept = [p.grad for p in local.parameters()]
    loss_fn(model(shard(x)), shard(y)).backward()
    for p in ref.parameters():
        p.grad = None
    loss_fn(ref(x), y).backward()
    close(f"ddp gradients, step {step}", [p.grad for p in local.parameters()],
          [p.grad for p in ref.parameters()], 1e-4, 1e-5)
    if not set_to_none:          # gradients that existed before the step stay the same tensors
        assert all(p.grad is k for p, k in zip(local.parameters(), kept)), "a kept .grad was replaced"
    for p in local.parameters():
        p.grad.add_(1.0)         # what a user does with .grad never reaches the next averages
print("OK ddp gradients: new ones handed the bucket's buffer, kept ones written in place", flush=True)


# ---- no_sync: gradient accumulation ----------------------------------------------------------
local, ref = make(mlp)
model = DDP(local)
x, y = batch((8,), rows=16 * N)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
for step in range(5):
    xs, ys = shard(x), shard(y)
    half = xs.shape[0] // 2
    opt.zero_grad()
    with model.no_sync():
        (loss_fn(model(xs[:half]), ys[:half]) / 2).backward()
    if step == 0:      # no communication yet: the ranks' gradients differ
        everyone = [None] * N
        dist.all_gather_object(everyone, [p.grad.numpy().copy() for p in local.parameters()])
        assert not np.array_equal(everyone[0][0], everyone[-1][0]), "no_sync communicated"
    (loss_fn(model(xs[half:]), ys[half:]) / 2).backward()
    opt.step()
    ref_opt.zero_grad()
    loss_fn(ref(x), y).backward()
    ref_opt.step()
same_on_every_rank("ddp no_sync", params(local))
close("ddp no_sync", params(local), params(ref), 1e-4, 1e-5)
print("OK ddp no_sync: accumulating 2 micro-batches equals the larger batch", flush=True)


# ---- find_unused_parameters -------------------------------------------------------------------
class Heads(nn.Module):
    """`b` is used on rank 0 only, `c` never."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 4)
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)
        self.c = nn.Linear(4, 2)

    def forward(self, x, use_b):
        h = self.trunk(x).relu()
        out = self.a(h)
        return out + self.b(h) if use_b else out


def heads_with_unused(**ddp_kwargs):
    """Two iterations of Heads under DDP(find_unused_parameters=True): locally unused heads
    averaged as the whole batch's, the globally unused one keeps grad None; returns the DDP and
    the batch."""
    torch.manual_seed(5)
    local = Heads()
    ref = copy.deepcopy(local)
    model = DDP(local, find_unused_parameters=True, **ddp_kwargs)
    x = torch.randn(4 * N, 4, generator=torch.Generator().manual_seed(3))
    for it in range(2):
        local.zero_grad()
        model(shard(x), use_b=RANK == 0).square().mean().backward()
        ref.zero_grad()
        for r in range(N):
            (ref(shard(x, r), use_b=r == 0).square().mean() / N).backward()
        for name, p in local.named_parameters():
            q = ref.get_parameter(name)
            if name.startswith("c."):
                assert p.grad is None and q.grad is None, name
            else:
                assert np.allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6), name
        same_on_every_rank("find_unused grads", [p.grad.numpy() for n, p in local.named_parameters()
                                                 if not n.startswith("c.")])
    return model, x


_, x = heads_with_unused(bucket_cap_mb=0.0001)
print("OK ddp find_unused_parameters: locally unused heads averaged, globally unused keep grad None",
      flush=True)

# without find_unused_parameters an unused parameter stops the reduction; the next forward says so
torch.manual_seed(5)
model = DDP(Heads())
model(shard(x), use_b=True).sum().backward()
try:
    model(shard(x), use_b=True)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e) and "c.weight" in str(e), e
else:
    raise AssertionError("an unused parameter without find_unused_parameters did not raise")
print("OK ddp unused parameter without find_unused_parameters raises on the next forward", flush=True)


# ---- overlap: buckets are all-reduced while backward still runs -----------------------------------
events = []
real_all_reduce = dist.all_reduce


def recording_all_reduce(tensor, *args, **kwargs):
    events.append(("all_reduce", kwargs.get("async_op", False)))
    return real_all_reduce(tensor, *args, **kwargs)


# torchlite's engine accumulates a layer's weight gradient as soon as it is computed, but the
# biases only at the end of backward; so after the first iteration DDP re-forms its buckets in
# the order the gradients actually arrived (as PyTorch's DDP does), and from then on the weight
# buckets start their all-reduce while backward is still running.
torch.manual_seed(0)
local = mlp()
model = DDP(local, bucket_cap_mb=0.001)       # about one weight matrix per bucket
model(shard(batch((8,))[0])).sum().backward()     # the first iteration: records the order
dist.all_reduce = recording_all_reduce
try:
    xs = shard(batch((8,))[0]).requires_grad_()
    h = model(xs)
    xs.register_hook(lambda g: events.append(("input grad", None)))
    h.sum().backward()
finally:
    dist.all_reduce = real_all_reduce
names = [e[0] for e in events]
early = names.index("input grad")
assert names.count("all_reduce") >= 3 and names[:early].count("all_reduce") >= 2, names
assert all(e[1] is True for e in events[:early] if e[0] == "all_reduce"), events
print(f"OK ddp overlap: {names[:early].count('all_reduce')} of {names.count('all_reduce')} non-blocking "
      f"bucket all-reduces started before backward reached the input", flush=True)

# parameters of different shapes on different ranks are refused at construction, on every rank
torch.manual_seed(0)
try:
    DDP(nn.Linear(4, 3 if RANK == 0 else 2))
except RuntimeError as e:
    assert "different parameters" in str(e), e
else:
    if N > 1:
        raise AssertionError("mismatched models were accepted")

# process_group=None means the default group, and DDP keeps that group (PyTorch's attribute)
d = DDP(nn.Linear(2, 2))
assert d.process_group is not None and dist.get_process_group_ranks(d.process_group) == list(range(N))
assert d.join_process_group is d.process_group
print("OK ddp process_group: None resolves to the default group", flush=True)

# ---- large gradients: all-reduced in place in .grad, each a bucket of its own ----------------
import torchlite.nn.parallel.distributed as ddp_module  # noqa: E402

torch.manual_seed(0)
wide = DDP(nn.Sequential(nn.Linear(8, 32768), nn.Linear(32768, 8), nn.Linear(8, 3)))  # 1 MiB weights
assert [b.own for b in wide._buckets] == [False, True, True], [b.own for b in wide._buckets]
x, y = batch((8,))
grads = []
for _ in range(2):
    wide.zero_grad()
    nn.MSELoss()(wide(shard(x)), shard(y)).backward()
    grads.append([p.grad.numpy().copy() for p in wide.parameters()])
    assert all(b.flat is None for b in wide._buckets if b.own), "a bucket of its own made a buffer"
same_on_every_rank("ddp wide gradients", grads[-1])
ref = copy.deepcopy(wide.module)
ref.zero_grad()
nn.MSELoss()(ref(x), y).backward()
close("ddp wide gradients", grads[-1], [p.grad.numpy() for p in ref.parameters()], 1e-4, 1e-6)

ddp_module._OWN_BUCKET_BYTES = 256          # the small MLP's weights go on their own too
try:
    mlp_equivalence("ddp own buckets")
    mlp_equivalence("ddp own buckets float64", dtype=torch.float64, rtol=1e-10, atol=1e-12)
    mlp_equivalence("ddp own buckets + allreduce_hook", hook=default_hooks.allreduce_hook)
    # no_sync accumulation into the .grad that is then reduced in place
    local, ref = make(mlp)
    model = DDP(local)
    assert any(b.own for b in model._buckets)
    x, y = batch((8,), rows=16 * N)
    for step in range(3):
        xs, ys = shard(x), shard(y)
        half = xs.shape[0] // 2
        local.zero_grad()
        with model.no_sync():
            (loss_fn(model(xs[:half]), ys[:half]) / 2).backward()
        (loss_fn(model(xs[half:]), ys[half:]) / 2).backward()
        ref.zero_grad()
        loss_fn(ref(x), y).backward()
        close(f"ddp own buckets no_sync step {step}", [p.grad.numpy() for p in local.parameters()],
              [p.grad.numpy() for p in ref.parameters()], 1e-4, 1e-5)
    # a weight unused on some ranks (its gradient None there: the zeros go through a buffer)
    ddp_module._OWN_BUCKET_BYTES = 16
    assert any(b.own for b in heads_with_unused()[0]._buckets)
finally:
    ddp_module._OWN_BUCKET_BYTES = 1024 * 1024
print("OK ddp large gradients reduced in place: the same averages, no bucket buffer, with no_sync, "
      "unused parameters and hooks", flush=True)

dist.destroy_process_group()
print(f"OK ddp all (rank {RANK})", flush=True)
