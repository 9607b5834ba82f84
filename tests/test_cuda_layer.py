"""The library over the CUDA array layer: modules and optimizers on a device, save/load with
map_location, pinned memory and the DataLoader, mixed-device errors, out-of-memory handling,
the caching allocator (with a stand-in memory and through the stand-in driver), streams and
events.  Values are checked against the same code run on the CPU."""
import gc
import io
import math
import sys

import numpy as np
import pytest

import torchlite as tl
import torchlite.cuda as cuda
from torchlite.cuda import _state
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.cuda._allocator import CachingAllocator, size_class

from test_cuda_ops import assert_same, rnd


def small_model(seed=0):
    tl.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.0),
                         nn.Linear(8, 3))


def data(n=16, seed=1):
    g = np.random.default_rng(seed)
    return tl.tensor(g.standard_normal((n, 6)), dtype=tl.float32), tl.tensor(g.integers(0, 3, n))


# ---- modules ----------------------------------------------------------------------------------
def test_module_to_moves_parameters_and_buffers_keeping_identity(cuda_device):
    m = small_model()
    params = list(m.parameters())
    values = [p.detach().clone() for p in params]
    m(data()[0]).sum().backward()                         # grads move with their parameters
    assert m.to(cuda_device) is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    for p, v in zip(m.parameters(), values):
        assert p.is_cuda and p.is_leaf and p.requires_grad and isinstance(p, nn.Parameter)
        assert p.grad.is_cuda
        assert_same(v, p.detach())
    for name, b in m.named_buffers():
        assert b.is_cuda, name
    assert m[1].num_batches_tracked.dtype == tl.int64
    sd = m.state_dict()
    assert all(t.is_cuda for t in sd.values())
    assert m.cpu() is m and all(not p.is_cuda for p in m.parameters())
    assert all(not b.is_cuda for b in m.buffers())
    assert m.cuda() is m and all(p.device == tl.device("cuda", 0) for p in m.parameters())
    m.to(tl.device("cpu"))
    m.to(device=cuda_device, dtype=tl.float64)
    assert all(p.is_cuda and p.dtype == tl.float64 for p in m.parameters())
    assert m[1].num_batches_tracked.dtype == tl.int64 and m[1].num_batches_tracked.is_cuda


def test_load_state_dict_from_cpu_into_a_cuda_model(cuda_device):
    src = small_model(1)
    dst = small_model(2).to(cuda_device)
    ids = [id(p) for p in dst.parameters()]
    dst.load_state_dict(src.state_dict())
    assert [id(p) for p in dst.parameters()] == ids
    for (k, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        assert b.is_cuda, k
        assert_same(a, b)


MODULES = {
    "lstm": (lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True), lambda: rnd(2, 3, 4)),
    "gru_bidirectional": (lambda: nn.GRU(4, 3, bidirectional=True), lambda: rnd(3, 2, 4)),
    "rnn_tanh": (lambda: nn.RNN(4, 3), lambda: rnd(3, 2, 4)),
    "transformer_layer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                          lambda: rnd(2, 5, 8)),
    "multihead_attention": (lambda: SelfAttention(), lambda: rnd(4, 2, 8)),
    "conv_bn_pool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                           nn.MaxPool2d(2), nn.Conv2d(4, 2, 1), nn.AdaptiveAvgPool2d(1),
                                           nn.Flatten()), lambda: rnd(2, 3, 6, 6)),
    "embedding_layernorm": (lambda: nn.Sequential(nn.Embedding(10, 4, padding_idx=0), nn.LayerNorm(4)),
                            lambda: tl.tensor([[1, 0, 3], [9, 9, 2]])),
    "groupnorm_convtranspose": (lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 2, stride=2), nn.GroupNorm(2, 4),
                                                      nn.Upsample(scale_factor=2)), lambda: rnd(1, 3, 3, 3)),
    "conv1d_avgpool": (lambda: nn.Sequential(nn.Conv1d(3, 4, 3, groups=1), nn.AvgPool1d(2), nn.Tanh()),
                       lambda: rnd(2, 3, 9)),
    "embedding_bag": (lambda: nn.EmbeddingBag(10, 3, mode="mean"), lambda: tl.tensor([[1, 2], [3, 9]])),
}


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2)

    def forward(self, x):
        mask = tl.ones(x.shape[0], x.shape[0], dtype=tl.bool, device=x.device).triu(1)
        return self.mha(x, x, x, attn_mask=mask)


def _first_tensor(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


@pytest.mark.parametrize("name", list(MODULES))
def test_modules_forward_and_backward_match_cpu(cuda_device, name):
    make, make_input = MODULES[name]
    tl.manual_seed(3)
    cpu_m = make()
    dev_m = make()
    dev_m.load_state_dict(cpu_m.state_dict())
    dev_m.to(cuda_device)
    x = make_input()
    outs = []
    for m, inp in ((cpu_m, x), (dev_m, x.to(cuda_device))):
        out = m(inp)
        y = _first_tensor(out)
        # a loss no normalisation layer makes constant (sum(y**2) would be, after LayerNorm)
        weights = tl.linspace(-1.0, 2.0, y.numel(), device=y.device).reshape(y.shape).sin()
        (y * weights).sum().backward()
        outs.append((out, [p.grad for p in m.parameters()]))
    assert_same(outs[0], outs[1], rtol=1e-4, atol=1e-5)


# ---- optimizers -----------------------------------------------------------------------------------
OPTIMIZERS = {
    "sgd_momentum": lambda ps: tl.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda ps: tl.optim.Adam(ps, lr=0.01, amsgrad=True),
    "adamw": lambda ps: tl.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda ps: tl.optim.RMSprop(ps, lr=0.01, momentum=0.5),
}


def mlp():
    tl.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _trajectory(make_opt, device, steps=5):
    # no BatchNorm here: it makes the first layer's bias gradient zero up to rounding, which
    # Adam's m / sqrt(v) would turn into steps of full size in a rounding-dependent direction
    m = mlp().to(device)
    opt = make_opt(m.parameters())
    x, t = data()
    x, t = x.to(device), t.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), t)
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, list(m.parameters()), opt


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_follow_the_cpu_trajectory(cuda_device, name):
    cpu_losses, cpu_params, _ = _trajectory(OPTIMIZERS[name], "cpu")
    dev_losses, dev_params, opt = _trajectory(OPTIMIZERS[name], cuda_device)
    assert_same(cpu_losses, dev_losses, rtol=1e-5)
    assert_same([p.detach() for p in cpu_params], [p.detach() for p in dev_params], rtol=1e-5)
    for state in opt.state.values():
        for k, v in state.items():
            if isinstance(v, tl.Tensor) and k != "step":
                assert v.is_cuda, k


def test_optimizer_state_loaded_onto_the_device(cuda_device):
    """A state saved from a CPU run continues on the device as it would on the CPU."""
    make = OPTIMIZERS["adam"]
    _, _, cpu_opt = _trajectory(make, "cpu", steps=2)
    buf = io.BytesIO()
    tl.save(cpu_opt.state_dict(), buf)
    m = mlp().to(cuda_device)
    opt = make(m.parameters())
    buf.seek(0)
    opt.load_state_dict(tl.load(buf))
    for state in opt.state.values():
        assert state["exp_avg"].is_cuda and state["exp_avg_sq"].is_cuda and not state["step"].is_cuda
    x, t = data()
    F.cross_entropy(m(x.to(cuda_device)), t.to(cuda_device)).backward()
    opt.step()
    assert all(p.is_cuda for p in m.parameters())


def test_clip_grad_norm_on_the_device(cuda_device):
    def run(device):
        m = small_model().to(device)
        x, t = data()
        (F.cross_entropy(m(x.to(device)), t.to(device)) * 100).backward()
        norm = nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        vnorm = nn.utils.clip_grad_value_(m.parameters(), 0.01)
        return norm, [p.grad for p in m.parameters()], vnorm
    cpu, dev = run("cpu"), run(cuda_device)
    assert_same(cpu[:2], dev[:2])
    assert dev[0].is_cuda and dev[0].ndim == 0


def test_training_on_digits_reaches_the_cpu_loss(cuda_device):
    """A small MLP trained for a few epochs on sklearn's digits: the same losses on the
    device as on the CPU, to rounding."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X = tl.tensor(X[:512] / 16.0, dtype=tl.float32)
    y = tl.tensor(y[:512])

    def train(device):
        tl.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
        opt = tl.optim.Adam(model.parameters(), lr=0.01)
        loader = tl.utils.data.DataLoader(tl.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True,
                                          generator=tl.Generator().manual_seed(1))
        losses = []
        for _ in range(3):
            for xb, yb in loader:
                xb, yb = xb.to(device), yb.to(device)
                opt.zero_grad()
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        model.eval()
        with tl.no_grad():
            acc = (model(X.to(device)).argmax(1) == y.to(device)).float().mean().item()
        return losses, acc

    cpu_losses, cpu_acc = train("cpu")
    dev_losses, dev_acc = train(cuda_device)
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < 0.5 * cpu_losses[0]
    assert abs(dev_acc - cpu_acc) <= 1 / 512


# ---- save / load ------------------------------------------------------------------------------------
def _saved(obj):
    buf = io.BytesIO()
    tl.save(obj, buf)
    return buf.getvalue()


def test_save_cuda_tensors_and_load_them_anywhere(cuda_device):
    m = small_model().to(cuda_device)
    sd = m.state_dict()
    raw = _saved(sd)
    cpu_sd = {k: v.cpu() for k, v in sd.items()}

    def load(map_location):
        return tl.load(io.BytesIO(raw), map_location=map_location)

    for where, on_cuda in ((None, True), ("cpu", False), ("cuda", True), ("cuda:0", True),
                           (tl.device("cpu"), False), (tl.device("cuda", 0), True),
                           ({"cuda:0": "cpu"}, False), ({"cpu": "cuda:0"}, True),
                           (lambda storage, loc: storage, False),
                           (lambda storage, loc: storage.cuda(), True),
                           (lambda storage, loc: None, True)):
        loaded = load(where)
        assert list(loaded) == list(sd), where
        for k, v in loaded.items():
            assert v.is_cuda == on_cuda, (where, k)
            assert v.dtype == sd[k].dtype
            np.testing.assert_array_equal(v.cpu().numpy(), cpu_sd[k].numpy(), err_msg=f"{where} {k}")


def test_saved_views_share_one_storage_on_the_device(cuda_device):
    base = tl.arange(12.0, device=cuda_device).view(3, 4)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t()}
    loaded = tl.load(io.BytesIO(_saved(obj)))
    assert all(v.is_cuda for v in loaded.values())
    loaded["base"][1, 2] = 100.0
    assert loaded["row"][2].item() == 100.0 and loaded["col"][1].item() == 100.0
    assert loaded["t"][2, 1].item() == 100.0 and loaded["t"].stride() == (1, 4)
    assert loaded["row"].storage_offset() == 4


def test_saved_location_names_the_device(cuda_device):
    import zipfile
    raw = _saved({"w": tl.ones(2, device=cuda_device), "c": tl.ones(2)})
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
    assert b"cuda:0" in pkl and b"cpu" in pkl


def test_a_cuda_checkpoint_loads_into_torch_on_the_cpu(cuda_device):
    torch = pytest.importorskip("torch")
    raw = _saved({"w": tl.arange(6.0, device=cuda_device).view(2, 3)})
    loaded = torch.load(io.BytesIO(raw), map_location="cpu")
    assert loaded["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_whole_model_checkpoint_on_device(cuda_device):
    m = small_model().to(cuda_device)
    m.eval()
    x = data()[0].to(cuda_device)
    expect = m(x)
    buf = io.BytesIO()
    tl.save({"model": m.state_dict(), "x": x}, buf)
    buf.seek(0)
    ck = tl.load(buf, map_location="cpu")
    m2 = small_model(5)
    m2.load_state_dict(ck["model"])
    m2.eval()
    assert_same(m2(ck["x"]), expect)


# ---- pinned memory and the DataLoader -------------------------------------------------------------
def test_pin_memory_and_non_blocking_copies(cuda_device):
    x = tl.arange(10.0)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and not p.is_cuda and p.tolist() == x.tolist()
    assert p.pin_memory() is p
    d = p.to(cuda_device, non_blocking=True)
    back = d.cpu()
    cuda.synchronize()
    assert d.is_cuda and back.tolist() == x.tolist()
    h = d.to("cpu", non_blocking=True)
    cuda.synchronize()
    assert h.tolist() == x.tolist()
    z = tl.zeros(3, pin_memory=True)
    assert z.is_pinned() and z.tolist() == [0.0, 0.0, 0.0]
    assert tl.tensor([1, 2], pin_memory=True).is_pinned()
    with pytest.raises(RuntimeError):
        d.pin_memory()
    # kernels treat pinned arrays as any CPU array
    assert_same((x * 2 + 1).sum(), (p.cuda() * 2 + 1).sum())
    assert (p * 2).tolist() == (x * 2).tolist()


def test_dataloader_pin_memory_gives_pinned_batches(cuda_device):
    X, y = data(10)
    ds = tl.utils.data.TensorDataset(X, y)
    loader = tl.utils.data.DataLoader(ds, batch_size=4, pin_memory=True)
    seen = 0
    for xb, yb in loader:
        assert xb.is_pinned() and yb.is_pinned()
        xd = xb.to(cuda_device, non_blocking=True)
        assert xd.is_cuda
        np.testing.assert_array_equal(xd.cpu().numpy(), X[seen:seen + len(xb)].numpy())
        seen += len(xb)
    assert seen == 10
    dict_loader = tl.utils.data.DataLoader([{"a": tl.ones(2)}] * 3, batch_size=2, pin_memory=True)
    assert all(b["a"].is_pinned() for b in dict_loader)


# ---- mixed devices ----------------------------------------------------------------------------------------
MIXED = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"

MIXED_OPS = {
    "add": lambda c, h: c + h,
    "radd": lambda c, h: h + c,
    "mul_": lambda c, h: c.mul_(h),
    "where": lambda c, h: tl.where(c > 0, c, h),
    "addcmul": lambda c, h: tl.addcmul(c, c, h),
    "matmul": lambda c, h: c @ h.t(),
    "mm": lambda c, h: tl.mm(h, c.t()),
    "bmm": lambda c, h: tl.bmm(c[None], h.t()[None]),
    "cat": lambda c, h: tl.cat([c, h]),
    "stack": lambda c, h: tl.stack([h, c]),
    "index_select": lambda c, h: c.index_select(0, tl.tensor([0, 1])) * h,
    "gather": lambda c, h: c.gather(1, tl.tensor([[0], [1], [0]])),
    "scatter_add": lambda c, h: c.scatter_add(0, tl.zeros(3, 4, dtype=tl.int64).to(c.device), h),
    "index_put": lambda c, h: c.index_put_((tl.tensor([0]).to(c.device),), h[:1]),
    "mse_loss": lambda c, h: F.mse_loss(c, h),
    "cross_entropy": lambda c, h: F.cross_entropy(c, tl.tensor([0, 1, 2])),
    "conv2d": lambda c, h: F.conv2d(c[None, None], h[None, None]),
    "linear_weight": lambda c, h: F.linear(c, h),
    "linear_bias": lambda c, h: F.linear(c, c, h[0]),
    "copy_into_mask": lambda c, h: c.masked_fill_(h > 0, 1.0),
    "maximum": lambda c, h: tl.maximum(c, h),
    "dot": lambda c, h: tl.dot(c[0], h[0]),
}


@pytest.mark.parametrize("name", list(MIXED_OPS))
def test_mixed_devices_raise_pytorch_error(cuda_device, name):
    c = rnd(3, 4).to(cuda_device)
    h = rnd(3, 4, seed=1)
    with pytest.raises(RuntimeError) as info:
        MIXED_OPS[name](c, h)
    assert MIXED in str(info.value)


def test_module_with_cpu_weights_and_cuda_input_raises(cuda_device):
    m = nn.Linear(4, 2)
    with pytest.raises(RuntimeError, match=MIXED.replace("!", "")):
        m(rnd(3, 4).to(cuda_device))
    conv = nn.Conv2d(1, 1, 3)
    with pytest.raises(RuntimeError, match=MIXED.replace("!", "")):
        conv(rnd(1, 1, 5, 5).to(cuda_device))
    m.to(cuda_device)
    with pytest.raises(RuntimeError, match=MIXED.replace("!", "")):
        m(rnd(3, 4))


def test_a_cpu_grad_for_a_cuda_param_is_refused(cuda_device):
    # PyTorch refuses the assignment itself, so no optimizer ever sees the mismatch
    p = nn.Parameter(tl.ones(3, device=cuda_device))
    with pytest.raises(RuntimeError, match="gradient located on device 'cpu' to a tensor "
                                           "located on device 'cuda:0'"):
        p.grad = tl.ones(3)
    assert p.grad is None


def test_cpu_scalar_tensor_with_cuda_tensor_is_allowed(cuda_device):
    c = rnd(3, 4).to(cuda_device)
    s = tl.tensor(2.0)
    for r, e in ((c * s, rnd(3, 4) * 2), (s - c, 2 - rnd(3, 4)), (c.mul_(s), rnd(3, 4) * 2),
                 (tl.maximum(c, s), tl.maximum(rnd(3, 4) * 2, tl.tensor(2.0)))):
        assert_same(e, r)
    c[0, 0] = tl.tensor(5.0)
    assert c[0, 0].item() == 5.0
    idx = tl.tensor([0, 2])                           # CPU indices index a CUDA tensor
    assert_same(rnd(3, 4)[idx] * 2, c.clone().fill_(0).add_(rnd(3, 4).to(cuda_device) * 2)[idx])
    w = tl.tensor(3.0, requires_grad=True)           # a CPU scalar parameter in a device graph
    (c * w).sum().backward()
    assert w.grad.device.type == "cpu" and math.isclose(w.grad.item(), c.sum().item(), rel_tol=1e-5)


def test_cuda_index_of_a_cpu_tensor_raises(cuda_device):
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
        rnd(3, 4)[tl.tensor([0, 1]).to(cuda_device)]


def test_copy_between_devices_is_allowed(cuda_device):
    c = tl.zeros(3, 4, device=cuda_device)
    h = rnd(3, 4)
    c.copy_(h)
    c[1:] = h[:2] * 0 + 7                             # a basic-index write copies across devices
    expect = h.clone()
    expect[1:] = 7
    assert_same(expect, c)
    back = tl.zeros(3, 4)
    back.copy_(c.t().t())
    assert back.tolist() == expect.tolist()


# ---- out of memory ------------------------------------------------------------------------------------------
def test_out_of_memory_frees_the_cache_retries_and_reports_sizes(fake_cuda):
    fake_cuda.capacity = 1 << 20                           # 1 MiB of "device" memory
    a = tl.empty(100_000, device="cuda")                    # 400 kB, cached after `del`
    del a
    reserved = cuda.memory_reserved()
    assert reserved >= 400_000 and cuda.memory_allocated() == 0
    b = tl.empty(200_000, device="cuda")                    # 800 kB: needs the cached block freed
    assert cuda.memory_reserved() == size_class(800_000) and fake_cuda.calls.count("cuMemFree") == 1
    small = tl.empty(10_000, device="cuda")                 # 40 kB, cached after `del`
    del small
    fake_cuda.calls.clear()
    with pytest.raises(cuda.OutOfMemoryError) as info:
        tl.empty(100_000, device="cuda")
    err = info.value
    assert isinstance(err, RuntimeError)
    assert "CUDA out of memory. Tried to allocate 390.62 KiB" in str(err)
    assert "1.00 MiB total capacity" in str(err)
    assert f"{size_class(800_000) / 1024:.2f} KiB is allocated" in str(err)
    # tried, gave the cached block back, tried again
    assert fake_cuda.calls == ["cuMemAlloc", "cuMemFree", "cuMemAlloc"]
    assert cuda.memory_reserved() == cuda.memory_allocated() == size_class(800_000)
    stats = _state.allocator.stats(0)
    assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 2
    del b
    c = tl.ones(100_000, device="cuda")                     # the cache serves it: no new allocation
    assert c[5].item() == 1.0


def test_out_of_memory_on_a_move_to_the_device(fake_cuda):
    fake_cuda.capacity = 64 << 10
    x = tl.ones(100_000)
    with pytest.raises(cuda.OutOfMemoryError, match="Tried to allocate"):
        x.cuda()
    with pytest.raises(RuntimeError, match="out of memory"):
        tl.zeros(40_000, device="cuda")


# ---- the allocator through the stand-in driver -----------------------------------------------------------------
def test_memory_statistics_and_block_reuse(fake_cuda):
    assert cuda.memory_allocated() == 0 and cuda.memory_reserved() == 0
    a = tl.empty(1000, device="cuda")                     # 4000 bytes: a 4096-byte class
    assert cuda.memory_allocated() == size_class(4000) == 4096
    assert cuda.memory_reserved() == 4096 and cuda.max_memory_allocated() == 4096
    b = tl.empty(10, device="cuda")
    assert cuda.memory_allocated() == 4096 + 512
    del a
    assert cuda.memory_allocated() == 512 and cuda.memory_reserved() == 4096 + 512
    assert cuda.max_memory_allocated() == 4096 + 512
    allocs = fake_cuda.calls.count("cuMemAlloc")
    c = tl.empty(1000, device="cuda")                     # the same size class: the cached block
    assert fake_cuda.calls.count("cuMemAlloc") == allocs
    d = tl.empty(700, device="cuda")                      # 2800 bytes: class 3072, a new block
    assert size_class(2800) == 3072 and fake_cuda.calls.count("cuMemAlloc") == allocs + 1
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == cuda.memory_allocated()
    del c, d
    before = cuda.memory_reserved()
    cuda.empty_cache()
    assert cuda.memory_reserved() == before - 4096 - 3072
    assert fake_cuda.calls.count("cuMemFree") == 2
    assert cuda.memory_allocated("cuda:0") == 512 and cuda.max_memory_reserved() >= before
    del b
    cuda.empty_cache()
    assert cuda.memory_reserved() == 0 and not fake_cuda.buffers


def test_views_keep_device_memory_alive(fake_cuda):
    x = tl.arange(1000.0, device="cuda")
    v = x[10:20]
    del x
    assert cuda.memory_allocated() == size_class(4000)
    assert v.tolist() == [float(i) for i in range(10, 20)]
    del v
    assert cuda.memory_allocated() == 0


# ---- the allocator alone, with a stand-in memory --------------------------------------------------------------
class Memory:
    """The allocator's `mem`: addresses counted up, `capacity` bytes, events done on demand."""

    def __init__(self, capacity=1 << 20):
        self.capacity = capacity
        self.used = 0
        self.live = {}
        self.next = 0x1000
        self.log = []
        self.events = []

    def alloc(self, device, nbytes):
        self.log.append(("alloc", device, nbytes))
        if self.used + nbytes > self.capacity:
            raise cuda.OutOfMemoryError("stand-in: out of memory")
        address, self.next = self.next, self.next + nbytes
        self.live[address] = nbytes
        self.used += nbytes
        return address

    def free(self, device, address):
        self.log.append(("free", device, address))
        self.used -= self.live.pop(address)

    def record_event(self, device, stream):
        event = {"stream": stream, "done": False}
        self.events.append(event)
        return event

    def event_done(self, event):
        return event["done"]

    def total_memory(self, device):
        return self.capacity


@pytest.mark.parametrize("nbytes,expect", [(0, 512), (1, 512), (512, 512), (513, 1024), (2048, 2048),
                                           (2049, 2560), (4096, 4096), (4097, 5120), (10_000, 10_240),
                                           ((1 << 20) + 1, (1 << 20) + (1 << 18))])
def test_size_class(nbytes, expect):
    assert size_class(nbytes) == expect
    assert size_class(expect) == expect                   # a class is its own class
    if nbytes > 2048:
        assert (size_class(nbytes) - nbytes) <= size_class(nbytes) // 4


def test_allocator_reuses_by_device_stream_and_size():
    mem = Memory()
    al = CachingAllocator(mem)
    a = al.malloc(0, 1000)
    addr = a.address
    a.release()
    held = [al.malloc(0, 900)]
    assert held[-1].address == addr                       # same class (1024): reused
    held.append(al.malloc(0, 1000))
    assert held[-1].address != addr                       # that block is taken now
    b = al.malloc(0, 3000, stream=7)
    b_addr = b.address
    b.release()
    held.append(al.malloc(0, 3000, stream=0))
    assert held[-1].address != b_addr                     # other stream: not shared
    held.append(al.malloc(1, 3000, stream=7))
    assert held[-1].address != b_addr                     # other device: not shared
    held.append(al.malloc(0, 3000, stream=7))
    assert held[-1].address == b_addr
    assert [op for op, *_ in mem.log].count("free") == 0
    st = al.stats(0)
    assert st["allocated"] == 1024 * 2 + 3072 * 2 and st["reserved"] == st["allocated"]
    assert al.stats(1)["allocated"] == 3072


def test_allocator_block_freed_by_garbage_collection():
    mem = Memory()
    al = CachingAllocator(mem)
    block = al.malloc(0, 100)
    addr = block.address
    del block
    assert al.stats(0)["allocated"] == 0 and al.cached_bytes(0) == 512
    assert al.malloc(0, 10).address == addr


def test_allocator_block_in_cyclic_garbage_gives_its_memory_back():
    # the block is reachable only from a reference cycle: the cycle collector must free it
    # through its release, not clear its fields first (the C Block is never gc-cleared)
    mem = Memory()
    al = CachingAllocator(mem)

    class Holder:
        pass
    addresses = []
    for _ in range(20):
        block = al.malloc(0, 100)         # made before the cycle: collected first
        h = Holder()
        h.me, h.block = h, block
        addresses.append(block.address)
        del h, block
    gc.collect()
    assert al.stats(0)["allocated"] == 0 and al.cached_bytes(0) == 20 * 512
    assert al.malloc(0, 10).address in addresses


def test_a_block_used_on_another_stream_in_cyclic_garbage_waits_for_that_stream():
    # the collector may clear the block's `streams` dict before the block goes: the release
    # must run first (a finalizer), or the block is reused while the other stream works on it
    mem = Memory()
    al = CachingAllocator(mem)

    class Stream:
        pass

    class Holder:
        pass
    gc.collect()
    block = al.malloc(0, 100)
    block.record_stream(7, Stream())
    h = Holder()
    h.me, h.block = h, block
    del h, block
    gc.collect()
    assert len(mem.events) == 1 and mem.events[0]["stream"] == 7
    assert al.cached_bytes(0) == 0                        # held back until the event is done


def test_a_freed_block_an_observer_keeps_stays_a_valid_object():
    from torchlite.cuda import _allocator
    kept = []

    def observer(device, address, nbytes, allocated, reserved):
        if nbytes < 0:
            kept.append(sys._getframe(1).f_locals["block"])   # a debugging observer's habit
    _allocator.set_observer(observer)
    try:
        al = CachingAllocator(Memory())
        b = al.malloc(0, 100)
        address = b.address
        del b
    finally:
        _allocator.set_observer(None)
    gc.collect()
    junk = [bytearray(64) for _ in range(1000)]           # reuse any memory freed too soon
    assert kept[0].address == address and kept[0].size == 512 and junk


def test_a_cuda_array_without_its_metadata_raises_instead_of_crashing():
    from torchlite.cuda._array import CudaArray
    a = CudaArray.__new__(CudaArray)
    for read in (lambda: a.offset, lambda: a.ndim, lambda: a.is_contiguous(), lambda: a.shape):
        with pytest.raises(AttributeError):
            read()


def test_record_stream_holds_a_block_until_its_event_is_done():
    mem = Memory()
    al = CachingAllocator(mem)
    block = al.malloc(0, 1000, stream=0)
    addr = block.address
    block.record_stream(5)
    block.record_stream(0)                                # its own stream: nothing to wait for
    block.release()
    assert len(mem.events) == 1 and mem.events[0]["stream"] == 5
    assert al.stats(0)["allocated"] == 0
    other = al.malloc(0, 1000)                            # the event is pending: a new block
    assert other.address != addr
    mem.events[0]["done"] = True
    assert al.malloc(0, 1000).address == addr             # collected once the event is done


def test_oom_releases_cached_blocks_and_retries_once():
    mem = Memory(capacity=4096)
    al = CachingAllocator(mem)
    a = al.malloc(0, 2048)
    a.release()                                           # 2048 cached
    b = al.malloc(0, 3000)                                # needs the cached block's memory back
    assert ("free", 0, a.address) in mem.log and b.size == 3072
    st = al.stats(0)
    assert st["num_alloc_retries"] == 1 and st["reserved"] == 3072 and st["num_ooms"] == 0
    mem.log.clear()
    with pytest.raises(cuda.OutOfMemoryError) as info:
        al.malloc(0, 2000)
    assert [op for op, *_ in mem.log] == ["alloc", "alloc"]
    msg = str(info.value)
    assert "Tried to allocate 1.95 KiB" in msg and "4.00 KiB total capacity" in msg
    assert "3.00 KiB is allocated" in msg and "3.00 KiB is reserved" in msg
    assert al.stats(0)["num_ooms"] == 1
    b.release()
    al.empty_cache()
    assert mem.used == 0 and al.stats(0)["reserved"] == 0
    al.reset_peak(0)
    assert al.stats(0)["max_allocated"] == 0


# ---- streams and events ------------------------------------------------------------------------------------------
def test_streams_and_events(fake_cuda):
    s = cuda.Stream()
    assert s.cuda_stream != 0 and s.device == tl.device("cuda", 0)
    assert cuda.current_stream() == cuda.default_stream()
    x = tl.ones(4, device="cuda")
    with cuda.stream(s):
        assert cuda.current_stream() == s
        y = x * 2                                          # work (and its memory) on s
        assert y.tolist() == [2.0] * 4
    assert cuda.current_stream() == cuda.default_stream()
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    z = (x + 1).sum()
    end.record()
    end.synchronize()
    assert start.query() and end.query() and z.item() == 8.0
    assert start.elapsed_time(end) >= 0.0
    cuda.current_stream().wait_stream(s)
    s.wait_event(end)
    s.synchronize()
    cuda.synchronize()
    assert s.query() is True
    e = s.record_event()
    e.wait()
    assert "cuStreamWaitEvent" in fake_cuda.calls and "cuEventElapsedTime" in fake_cuda.calls
    assert "cuCtxSynchronize" in fake_cuda.calls
    # memory allocated on s is only reused on s
    del y
    with cuda.stream(s):
        again = tl.empty(4, device="cuda")
    assert again.is_cuda


def test_record_stream_on_a_device_array(fake_cuda):
    s = cuda.Stream()
    x = tl.empty(1000, device="cuda")
    addr = x.data_ptr()
    x._data.record_stream(s.cuda_stream)        # (Tensor.record_stream is not there yet)
    del x
    assert "cuEventRecord" in fake_cuda.calls
    y = tl.empty(1000, device="cuda")                      # the stand-in's events are always done
    assert y.data_ptr() == addr


def test_cuda_seeds(cuda_device):
    """torchlite.cuda.manual_seed alone sets the device's draws; a seed gives the numbers a
    CPU generator with that seed gives."""
    cuda.manual_seed(7)
    a = tl.randn(5, device=cuda_device)
    tl.rand(3)                                              # CPU draws leave the device's stream alone
    cuda.manual_seed(7)
    b = tl.randn(5, device=cuda_device)
    assert_same(a.cpu(), b)
    assert_same(tl.randn(5, generator=tl.Generator().manual_seed(7)), a)
    assert cuda.initial_seed() == 7
    state = cuda.get_rng_state()
    c = tl.rand(4, device=cuda_device)
    cuda.set_rng_state(state)
    assert_same(c.cpu(), tl.rand(4, device=cuda_device))
    tl.manual_seed(11)
    assert cuda.initial_seed() == 11


# ---- the stand-in itself does not leak ------------------------------------------------------------------------
def _cuda_state():
    from torchlite import _dispatch
    from torchlite.cuda import _driver, _runtime, _state
    return {"driver_module": _driver.driver_module, "status": _driver._status,
            "kernels": _state.kernels_enabled, "initialized": _state.initialized,
            "devices": _state.devices, "allocator": _state.allocator, "generators": _state.generators,
            "runtime_allocator": _runtime._allocator, "host_allocator": _runtime._host_allocator,
            "dispatch": _dispatch._enabled, "elementwise.binary": _dispatch.elementwise.binary,
            "tls": dict(cuda._tls.__dict__), "runtime_tls": dict(_runtime._tls.__dict__)}


def test_the_stand_in_leaves_nothing_behind():
    from fake_cuda_driver import FakeDriver, installed
    before = _cuda_state()
    with installed(FakeDriver()) as fake:
        assert cuda.is_available() and installed.active
        x = tl.ones(3, device="cuda") * 2
        with cuda.stream(cuda.Stream()):
            y = (x + 1).cpu()
        cuda.set_device(0)
        cuda.manual_seed(3)
        p = tl.zeros(2).pin_memory()
        assert fake.buffers
    assert _cuda_state() == before and not installed.active
    assert y.tolist() == [3.0] * 3 and p.tolist() == [0.0, 0.0]     # host memory stays valid
    del x
    if not cuda.is_available():
        with pytest.raises(RuntimeError):
            tl.zeros(2, device="cuda")


def test_deepcopy_and_pickle_keep_the_device(cuda_device):
    """copy.deepcopy of a CUDA tensor or module stays on the device (it went through pickling
    and came back on the CPU: the buffers of a deep-copied model -- AveragedModel,
    TransformerEncoder's layer clones, a compiled copy -- were then on the wrong device), and
    a pickled CUDA tensor loads back onto CUDA, as PyTorch's."""
    import copy
    import pickle
    m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)).to(cuda_device)
    c = copy.deepcopy(m)
    assert {t.device.type for t in list(c.parameters()) + list(c.buffers())} == {"cuda"}
    assert c[1].running_mean.data_ptr() != m[1].running_mean.data_ptr()
    c.train()
    x = tl.randn(2, 2, 5, 5, device=cuda_device)
    assert_same(c(x), m(x))                        # (a BatchNorm step updates its buffers)
    t = tl.arange(6.0, device=cuda_device).view(2, 3).t().requires_grad_()
    for u in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert u.device.type == "cuda" and u.tolist() == t.tolist() and u.requires_grad
    view = t.detach()[1:, ::2]
    v = copy.deepcopy(view)
    assert v.device.type == "cuda" and v.stride() == view.stride()
    assert v.storage_offset() == view.storage_offset() and v.tolist() == view.tolist()
    h = tl.tensor([1.5, -2.25], dtype=tl.bfloat16).to(cuda_device)      # no NumPy dtype: bits
    for u in (copy.deepcopy(h), pickle.loads(pickle.dumps(h))):
        assert u.device.type == "cuda" and u.dtype is tl.bfloat16 and u.tolist() == [1.5, -2.25]
    layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0).to(cuda_device)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    assert {p.device.type for p in enc.parameters()} == {"cuda"}


def test_a_driver_cache_made_under_the_stand_in_is_emptied_after_it():
    """A module first imported under the stand-in makes its driver caches then; what they
    hold (the stand-in's handles, its host addresses) must not outlive it."""
    from fake_cuda_driver import FakeDriver, installed
    with installed(FakeDriver()):
        late = _state.driver_cache()
        late["key"] = "a stand-in handle"
    assert late == {}


def test_a_real_driver_after_the_stand_in_gets_no_stand_in_scalar():
    """GPU run 10's failure, on the CPU: in a fresh process, the stand-in's `x * 2` was the
    first to import torchlite/cuda/_elementwise.py, whose cache of scalar operands then kept
    the stand-in's host-memory array for 2 after the stand-in went, and a real GPU's `x * 2`
    later in the process read it (CUDA_ERROR_ILLEGAL_ADDRESS, test_profiler_device.py)."""
    import subprocess
    import sys
    import os
    code = (
        "import sys; sys.modules.pop('torchlite.cuda._elementwise', None)\n"
        "import torchlite as tl\n"
        "assert 'torchlite.cuda._elementwise' not in sys.modules\n"
        "from fake_cuda_driver import FakeDriver, installed\n"
        "import fake_cuda_kernels\n"
        "class Patch:\n"
        "    def setattr(self, obj, name, value): setattr(obj, name, value)\n"
        "with installed(FakeDriver()) as fake:\n"
        "    fake_cuda_kernels.install(fake, Patch())\n"
        "    (tl.ones(4, device='cuda') * 2).cpu()\n"
        "from torchlite.cuda import _elementwise, _state\n"
        "assert len(_elementwise._scalars) == 0, _elementwise._scalars\n"
        "assert all(len(c) == 0 for c in _state.driver_caches())\n"
        "print('clean')\n")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=env, cwd=here)
    assert r.returncode == 0 and "clean" in r.stdout, r.stderr[-3000:]
