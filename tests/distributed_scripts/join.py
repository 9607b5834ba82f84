"""Uneven inputs under mpiexec (2 ranks or more): DistributedDataParallel.join, the generic
Join context manager with a Joinable of our own, and register_builtin_comm_hook.  Prints
`OK <name>` lines; a wrong result raises, which aborts the job naming the rank.

Rank r trains on 3 + 2 r batches.  Every rank also computes the expected result itself, in
one process (the data is the same everywhere): while some ranks still run, the step is the
sum of their gradients divided by the initial world size (or by the ranks still running), and
at the end every rank holds the model of a last rank to finish."""
import copy

import numpy as np

import torchlite as torch
import torchlite.distributed as dist
from torchlite import nn
from torchlite.distributed.algorithms import Join, Joinable, JoinHook
from torchlite.distributed.algorithms.ddp_comm_hooks import default_hooks
from torchlite.nn.parallel import DistributedDataParallel as DDP
from rank_checks import same_on_every_rank

dist.init_process_group()
RANK, N = dist.get_rank(), dist.get_world_size()
LR = 0.1


def n_batches(r):
    return 3 + 2 * r


def batches(r):
    g = torch.Generator().manual_seed(100 + r)
    return [(torch.randn(4, 6, generator=g), torch.randn(4, 2, generator=g))
            for _ in range(n_batches(r))]


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


def expected(divide_by_initial_world_size):
    """The parameters after the join, computed in this one process."""
    model = mlp()
    data = [batches(r) for r in range(N)]
    for it in range(max(n_batches(r) for r in range(N))):
        running = [r for r in range(N) if it < n_batches(r)]
        total = [torch.zeros_like(p) for p in model.parameters()]
        for r in running:
            model.zero_grad()
            loss_fn(model, *data[r][it]).backward()
            for t, p in zip(total, model.parameters()):
                t += p.grad
        div = N if divide_by_initial_world_size else len(running)
        with torch.no_grad():
            for t, p in zip(total, model.parameters()):
                p -= LR * t / div
    return [p.detach().numpy().copy() for p in model.parameters()]


def train_uneven(model, **join_kwargs):
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    with model.join(**join_kwargs):
        for x, y in batches(RANK):
            opt.zero_grad()
            loss_fn(model, x, y).backward()
            opt.step()
    return [p.detach().numpy().copy() for p in model.module.parameters()]


import torchlite.nn.parallel.distributed as ddp_module  # noqa: E402

for divide in (True, False):
    for own in (False, True):
        # own: every weight a bucket of its own, all-reduced in its .grad (as large gradients
        # are); a joined rank then reduces zeros of that size
        ddp_module._OWN_BUCKET_BYTES = 128 if own else 1024 * 1024
        model = DDP(mlp())
        assert any(b.own for b in model._buckets) == own
        got = train_uneven(model, divide_by_initial_world_size=divide)
        want = expected(divide)
        for i, (a, b) in enumerate(zip(got, want)):
            if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
                raise AssertionError(f"join divide={divide} own={own}: parameter {i} differs by "
                                     f"{np.abs(a - b).max():.3g} on rank {RANK}")
        same_on_every_rank(f"join divide={divide} own={own}", got)
    ddp_module._OWN_BUCKET_BYTES = 1024 * 1024
    print(f"OK join divide_by_initial_world_size={divide}: ranks with "
          f"{[n_batches(r) for r in range(N)]} batches end with the expected model "
          f"(gradients bucketed and reduced in place)", flush=True)

# a communication hook (the default all-reduce) and unused parameters, under join
model = DDP(nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)))
model.register_comm_hook(None, default_hooks.allreduce_hook)
got = train_uneven(model)
same_on_every_rank("join with a comm hook", got)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b = nn.Linear(6, 8), nn.Linear(8, 2), nn.Linear(8, 2)

    def forward(self, x):
        return self.a(self.body(x)) if RANK == 0 else self.b(self.body(x))


got = train_uneven(DDP(TwoHeads(), find_unused_parameters=True))
same_on_every_rank("join with find_unused_parameters", got)

# BatchNorm buffers: broadcast from a rank still running, and the final model from a last joiner
cnn = DDP(nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)))
got = train_uneven(cnn)
same_on_every_rank("join with buffers", got + [b.numpy().copy() for b in cnn.module.buffers()])
print("OK join with a comm hook, unused parameters and buffers: every rank ends equal",
      flush=True)

# throw_on_early_termination: every rank raises as soon as one runs out
model = DDP(mlp())
opt = torch.optim.SGD(model.parameters(), lr=LR)
steps = 0
try:
    with model.join(throw_on_early_termination=True):
        for x, y in batches(RANK):
            opt.zero_grad()
            loss_fn(model, x, y).backward()
            opt.step()
            steps += 1
    raise AssertionError(f"throw_on_early_termination: rank {RANK} did not raise")
except RuntimeError as e:
    want = "exhausted all inputs" if RANK == 0 else "Detected at least one rank that exhausted"
    if want not in str(e) or steps != n_batches(0):
        raise AssertionError(f"throw_on_early_termination: rank {RANK} raised {e!r} after "
                             f"{steps} steps")
# the context is closed: plain training goes on
opt.zero_grad()
loss_fn(model, *batches(0)[0]).backward()
same_on_every_rank("after a throwing join", [p.grad.numpy().copy() for p in model.parameters()])
print("OK join throw_on_early_termination: every rank raises, training goes on after", flush=True)


# the generic context manager with a Joinable of our own: an all-reduce per iteration
class Counter(Joinable):
    def __init__(self):
        super().__init__()
        self.total = 0
        self.last = None

    def step(self):
        Join.notify_join_context(self)
        t = torch.ones(1)
        dist.all_reduce(t)
        self.total += int(t.item())

    def join_hook(self, **kwargs):
        counter = self

        class Hook(JoinHook):
            def main_hook(self):
                dist.all_reduce(torch.zeros(1))

            def post_hook(self, is_last_joiner):
                counter.last = is_last_joiner
        return Hook()

    @property
    def join_device(self):
        return torch.device("cpu")

    @property
    def join_process_group(self):
        return None


c = Counter()
with Join([c]):
    for _ in range(n_batches(RANK)):
        c.step()
want_total = sum(sum(1 for r in range(N) if it < n_batches(r)) for it in range(n_batches(RANK)))
if c.total != want_total or c.last != (RANK == N - 1):
    raise AssertionError(f"Join with a custom Joinable: rank {RANK} counted {c.total} "
                         f"(expected {want_total}), last joiner {c.last}")
print("OK join generic Join with a custom Joinable", flush=True)

# register_builtin_comm_hook
ref = DDP(mlp())
fp = DDP(mlp())
ar = DDP(mlp())
ar.register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
fp.register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
for m in (ref, ar, fp):
    x, y = batches(0)[0]
    loss_fn(m, x, y).backward()
g_ref, g_ar, g_fp = ([p.grad.numpy().copy() for p in m.parameters()] for m in (ref, ar, fp))
for a, b, c_ in zip(g_ref, g_ar, g_fp):
    if not np.allclose(a, b, rtol=1e-6, atol=1e-7) or not np.allclose(a, c_, rtol=1e-2, atol=1e-3):
        raise AssertionError(f"register_builtin_comm_hook: rank {RANK} gradients differ")
try:
    ar.register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    raise AssertionError("a second hook was accepted")
except RuntimeError:
    pass
try:
    copy.copy(ref).register_builtin_comm_hook("ALLREDUCE")
    raise AssertionError("a string hook type was accepted")
except TypeError:
    pass
print("OK ddp register_builtin_comm_hook", flush=True)
print(f"OK join all (rank {RANK})", flush=True)
