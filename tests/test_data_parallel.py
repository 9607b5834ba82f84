"""torchlite.nn.DataParallel and its pieces (scatter, gather, replicate, parallel_apply):
the CPU pass-through wrapper with PyTorch's 'module.' state dict keys, scatter/gather of CPU
tensors along a dim through nested inputs, replicas whose gradients reach the original
parameters, and the whole multi-device path on two devices of the host-memory CUDA stand-in
(tests/fake_cuda_driver.py), checked against the module run on the whole batch.  Also
nn.utils.stateless.functional_call (PyTorch's older spelling of func.functional_call)."""
import collections
import importlib
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.parallel import (DataParallel, data_parallel, gather, parallel_apply,
                                   replicate, scatter)
from torchlite.nn.parallel.scatter_gather import scatter_kwargs

# the module (its name is also the function's, which nn.parallel exports, as in PyTorch)
dp_module = importlib.import_module("torchlite.nn.parallel.data_parallel")


def _net():
    tl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def test_exported_as_pytorch_does():
    assert nn.DataParallel is DataParallel and issubclass(DataParallel, nn.Module)


def test_cpu_pass_through(monkeypatch):
    monkeypatch.setattr(dp_module, "_cuda_device_count", lambda: 0)
    net = _net()
    dp = nn.DataParallel(net)
    assert dp.module is net and dp.device_ids == [] and dp.dim == 0
    x = tl.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), net(x).detach().numpy())
    assert list(dp.state_dict()) == ["module." + k for k in net.state_dict()]
    torch = pytest.importorskip("torch")
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(),
                                                       torch.nn.Linear(5, 2)))
    assert list(theirs.state_dict()) == list(dp.state_dict())
    dp.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    np.testing.assert_allclose(dp(x).detach().numpy(),
                               theirs(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("n, dim, devices", [(6, 0, 2), (5, 0, 2), (7, 1, 3), (2, 0, 4)])
def test_scatter_and_gather_cpu_tensors(n, dim, devices):
    shape = [3, 3]
    shape[dim] = n
    x = tl.tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
    parts = scatter(x, ["cpu"] * devices, dim)
    # torch.chunk's split: chunks of ceil(n / devices), fewer when n runs out
    size = -(-n // devices)
    expected = [x.numpy().take(range(i, min(i + size, n)), axis=dim) for i in range(0, n, size)]
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        np.testing.assert_array_equal(p.numpy(), e)
    np.testing.assert_array_equal(gather(list(parts), "cpu", dim).numpy(), x.numpy())


def test_scatter_nested_inputs_and_kwargs():
    Pair = collections.namedtuple("Pair", "a b")
    x, y = tl.arange(4.0), tl.arange(8.0).view(4, 2)
    out = scatter((x, [y, "tag"], {"k": y}, Pair(x, 3)), ["cpu", "cpu"])
    assert len(out) == 2
    first = out[0]
    np.testing.assert_array_equal(first[0].numpy(), [0, 1])
    assert isinstance(first[1], list) and first[1][1] == "tag"
    np.testing.assert_array_equal(first[1][0].numpy(), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(first[2]["k"].numpy(), [[0, 1], [2, 3]])
    assert isinstance(first[3], Pair) and first[3].b == 3
    args, kwargs = scatter_kwargs((x,), {"scale": 2.0}, ["cpu", "cpu"])
    assert len(args) == len(kwargs) == 2 and kwargs[1] == {"scale": 2.0}
    args, kwargs = scatter_kwargs((), {"t": x}, ["cpu", "cpu"])
    assert args == ((), ()) and len(kwargs) == 2


def test_gather_structures_and_scalars():
    outs = [{"y": tl.ones(2), "n": None}, {"y": tl.zeros(1), "n": None}]
    g = gather(outs, -1)
    np.testing.assert_array_equal(g["y"].numpy(), [1, 1, 0])
    assert g["n"] is None
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        v = gather([tl.tensor(1.0), tl.tensor(2.0)], "cpu")
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    with pytest.raises(ValueError, match="same number of keys"):
        gather([{"a": tl.ones(1)}, {"a": tl.ones(1), "b": tl.ones(1)}], "cpu")


def test_replicas_share_gradients_with_the_original():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    replicas = replicate(net, ["cpu", "cpu"])
    assert len(replicas) == 2 and all(type(r) is nn.Sequential for r in replicas)
    assert replicas[0] is not net and replicas[0][0] is not net[0]
    x = tl.randn(8, 3)
    parts = scatter(x, ["cpu", "cpu"])
    outs = parallel_apply(replicas, [(p,) for p in parts], None, ["cpu", "cpu"])
    y = gather(outs, "cpu")
    y.sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.zero_grad()
    # the same as the module on each half, summed
    (net(x[:4]).sum() + net(x[4:]).sum()).backward()
    for g, p in zip(grads, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)
    with tl.no_grad():
        detached = replicate(net, ["cpu"], detach=True)[0]
    assert detached[0].weight.grad_fn is None and not detached[0].weight.requires_grad


def test_parallel_apply_names_the_failing_replica():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    with pytest.raises(ValueError, match="boom") as info:
        parallel_apply([nn.Identity(), Boom()], [(tl.ones(1),), (tl.ones(1),)])
    assert any("replica 1" in note for note in getattr(info.value, "__notes__", []))
    with pytest.raises(AssertionError):
        parallel_apply([nn.Identity()], [(tl.ones(1),), (tl.ones(1),)])


@pytest.fixture
def two_fake_gpus():
    """Two CUDA devices of the host-memory stand-in (the kernels run on host copies)."""
    from fake_cuda_driver import FakeDriver, installed
    with installed(FakeDriver(devices=2)) as fake:
        yield fake


def test_data_parallel_over_two_devices(two_fake_gpus):
    net = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 2))
    x = tl.randn(6, 3)
    ref = [p.detach().clone() for p in net.parameters()]
    cpu_net = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 2))
    cpu_net.load_state_dict(net.state_dict())
    first_half = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 2))
    first_half.load_state_dict(net.state_dict())
    first_half(x[:3])
    dp = nn.DataParallel(net.to("cuda:0"))
    assert dp.device_ids == [0, 1] and dp.output_device == 0
    y = dp(x.to("cuda:0"))
    assert str(y.device) == "cuda:0" and tuple(y.shape) == (6, 2)
    # batch norm in training sees each device's half of the batch, as in PyTorch
    expected = tl.cat([cpu_net(x[:3]), cpu_net(x[3:])])
    np.testing.assert_allclose(y.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    y.sum().backward()
    expected.sum().backward()
    for p, q in zip(net.parameters(), cpu_net.parameters()):
        assert str(p.grad.device) == "cuda:0"
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    # only the replica on device_ids[0] updates the module's buffers (it shares them)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(net[1], name).cpu().numpy(),
                                   getattr(first_half[1], name).numpy(), rtol=1e-5, atol=1e-6)
    assert all(np.array_equal(p.detach().cpu().numpy(), r.numpy())
               for p, r in zip(net.parameters(), ref))
    # the replica on device 1 holds copies there
    r1 = replicate(net, [0, 1])[1]
    assert str(r1[0].weight.device) == "cuda:1" and str(r1[1].running_mean.device) == "cuda:1"


def test_output_device_dim_and_kwargs_on_two_devices(two_fake_gpus):
    seen = []

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tl.ones(1) * 2)

        def forward(self, x, *, shift):
            seen.append((str(x.device), tuple(x.shape), str(self.w.device)))
            return {"out": x * self.w + shift}
    x = tl.arange(12.0).view(3, 4)
    dp = nn.DataParallel(Scale().to("cuda:0"), output_device=1, dim=1)
    out = dp(x, shift=tl.ones(3, 4))
    assert str(out["out"].device) == "cuda:1"
    np.testing.assert_allclose(out["out"].detach().cpu().numpy(), x.numpy() * 2 + 1)
    # split along dim 1: 2 + 2 columns, each replica on its device
    assert seen == [("cuda:0", (3, 2), "cuda:0"), ("cuda:1", (3, 2), "cuda:1")]
    y = data_parallel(Scale().to("cuda:0"), x.to("cuda:0"), module_kwargs={"shift": 0.5})
    np.testing.assert_allclose(y["out"].detach().cpu().numpy(), x.numpy() * 2 + 0.5)
    with pytest.raises(RuntimeError, match="device_ids\\[0\\]"):
        nn.DataParallel(Scale())(x, shift=0.0)       # parameters still on the CPU
    one = nn.DataParallel(Scale(), device_ids=["cuda:1"])
    assert str(one.module.w.device) == "cuda:1"
    seen.clear()
    one(x, shift=0.0)
    assert seen == [("cuda:1", (3, 4), "cuda:1")]
    with pytest.raises(ValueError, match="Expected a cuda device"):
        nn.DataParallel(Scale(), device_ids=["cpu"])


def test_stateless_functional_call():
    from torchlite.nn.utils import stateless
    net = nn.Linear(2, 1)
    w = {"weight": tl.ones(1, 2), "bias": tl.zeros(1)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        y = stateless.functional_call(net, w, tl.tensor([[1.0, 2.0]]))
    np.testing.assert_allclose(y.detach().numpy(), [[3.0]])
    assert net.weight.shape == (1, 2) and isinstance(net.weight, nn.Parameter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert stateless.functional_call(nn.Identity(), {}, None, {"input": tl.ones(1)}) \
            .tolist() == [1.0]
        with pytest.raises(RuntimeError, match="nn.DataParallel"):
            stateless.functional_call(nn.DataParallel(net), w, tl.ones(1, 2))
