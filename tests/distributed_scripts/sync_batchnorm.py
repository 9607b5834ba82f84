"""nn.SyncBatchNorm under mpiexec (2 ranks or more): each rank normalises its shard of a fixed
batch with the whole batch's statistics.  Every rank also runs BatchNorm on the whole batch
itself (the data is the same everywhere), so the comparison needs no transfer.  Prints
`OK <name>` lines; a wrong result raises, which aborts the job naming the rank."""
import numpy as np

import torchlite as torch
import torchlite.distributed as dist
from torchlite import nn
from torchlite.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group()
RANK, N = dist.get_rank(), dist.get_world_size()


def close(a, b, tol, what):
    np.testing.assert_allclose(np.asarray(a.detach().double().numpy()), np.asarray(b.detach().double().numpy()),
                               rtol=tol, atol=tol, err_msg=f"rank {RANK}: {what}")


for shape, dtype, tol in (((4 * N, 3, 5, 5), torch.float64, 1e-10), ((6 * N, 4), torch.float32, 2e-5),
                          ((2 * N, 2, 3, 2, 2), torch.float64, 1e-10)):
    g = torch.Generator().manual_seed(11)
    full = (torch.randn(*shape, generator=g) * 3 + 1).to(dtype)
    gy = torch.randn(*shape, generator=g).to(dtype)
    k = shape[0] // N
    mine = slice(RANK * k, (RANK + 1) * k)
    ref = nn.BatchNorm3d(shape[1]) if len(shape) == 5 else (nn.BatchNorm2d(shape[1]) if len(shape) == 4
                                                             else nn.BatchNorm1d(shape[1]))
    ref = ref.to(dtype)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5, generator=g)
        ref.bias.uniform_(-1, 1, generator=g)
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(ref.__class__(shape[1]).to(dtype))
    sync.load_state_dict(ref.state_dict())
    assert type(sync) is nn.SyncBatchNorm
    x_full = full.clone().requires_grad_()
    y_full = ref(x_full)
    (y_full * gy).sum().backward()
    x = full[mine].clone().requires_grad_()
    y = sync(x)
    (y * gy[mine]).sum().backward()
    close(y, y_full[mine], tol, f"output {shape}")
    close(x.grad, x_full.grad[mine], tol, f"input gradient {shape}")
    gw = sync.weight.grad.clone()
    dist.all_reduce(gw)                          # per rank, as in PyTorch: their sum is the whole
    close(gw, ref.weight.grad, tol, f"weight gradient {shape}")
    close(sync.running_mean, ref.running_mean, tol, f"running mean {shape}")
    close(sync.running_var, ref.running_var, tol, f"running var {shape}")
    sync.eval(), ref.eval()
    close(sync(full[mine]), ref(full)[mine], tol, f"eval output {shape}")
print(f"OK sync batchnorm matches the whole batch's (rank {RANK})", flush=True)

# a DDP model converted with convert_sync_batchnorm trains as the single process on the whole batch
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(4 * 6 * 6, 3)).double()
single = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                       nn.Linear(4 * 6 * 6, 3)).double()
single.load_state_dict(model.state_dict())
ddp = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(model))
opt, opt1 = torch.optim.SGD(ddp.parameters(), lr=0.1), torch.optim.SGD(single.parameters(), lr=0.1)
g = torch.Generator().manual_seed(5)
x, t = torch.randn(4 * N, 1, 6, 6, generator=g).double(), torch.randn(4 * N, 3, generator=g).double()
k = 4
for _ in range(5):
    opt.zero_grad()
    # DDP averages the ranks' gradients: each rank's loss is its shard's mean
    ((ddp(x[RANK * k:(RANK + 1) * k]) - t[RANK * k:(RANK + 1) * k]) ** 2).sum().div(k).backward()
    opt.step()
    opt1.zero_grad()
    ((single(x) - t) ** 2).sum().div(4 * N).backward()
    opt1.step()
for (name, p), q in zip(ddp.module.named_parameters(), single.parameters()):
    close(p, q, 1e-9, f"ddp + sync batchnorm parameter {name}")
close(ddp.module[1].running_var, single[1].running_var, 1e-9, "ddp + sync batchnorm running var")
print(f"OK ddp with sync batchnorm trains as one process (rank {RANK})", flush=True)
