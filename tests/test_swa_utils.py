"""torchlite.optim.swa_utils: AveragedModel (SWA and EMA averages, use_buffers, n_averaged,
state dict keys), SWALR's schedule and update_bn's statistics, checked with NumPy and against
torch.optim.swa_utils on the same sequence of weights where torch is installed."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.optim import swa_utils


def _net():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def _perturb(model, step):
    """Deterministic new weights for the step-th update."""
    with tl.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(tl.tensor(np.random.default_rng(100 * step + i)
                              .standard_normal(tuple(p.shape)).astype(np.float32)))


def test_swa_average_is_the_mean_of_the_snapshots():
    model = _net()
    avg = swa_utils.AveragedModel(model)
    assert list(avg.state_dict())[0] == "n_averaged"
    assert all(k == "n_averaged" or k.startswith("module.") for k in avg.state_dict())
    snaps = []
    for s in range(4):
        _perturb(model, s)
        snaps.append([p.detach().numpy().copy() for p in model.parameters()])
        model[1](tl.randn(5, 4))            # the buffers change too
        avg.update_parameters(model)
    assert int(avg.n_averaged) == 4 and avg.n_averaged.dtype is tl.int64
    for i, p in enumerate(avg.module.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), np.mean([s[i] for s in snaps], 0),
                                   rtol=1e-5, atol=1e-6)
    # without use_buffers, buffers are copied from the model
    np.testing.assert_array_equal(avg.module[1].running_mean.numpy(),
                                  model[1].running_mean.numpy())
    assert int(avg.module[1].num_batches_tracked) == int(model[1].num_batches_tracked)
    x = tl.randn(2, 3)
    avg.eval()
    np.testing.assert_allclose(avg(x).detach().numpy(), avg.module(x).detach().numpy())
    # the averaged copy is independent of the model
    assert avg.module[0].weight is not model[0].weight


def test_ema_functions_and_avg_fn():
    decay = 0.9
    model = nn.Linear(2, 2)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(decay))
    ema1 = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(decay))
    swa1 = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn())
    expected = None
    snaps = []
    for s in range(5):
        _perturb(model, s)
        cur = [p.detach().numpy().copy() for p in model.parameters()]
        snaps.append(cur)
        expected = cur if expected is None else [decay * e + (1 - decay) * c
                                                 for e, c in zip(expected, cur)]
        for m in (ema, ema1, swa1):
            m.update_parameters(model)
    for got in (ema, ema1):
        for p, e in zip(got.module.parameters(), expected):
            np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-5, atol=1e-6)
    for i, p in enumerate(swa1.module.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), np.mean([s[i] for s in snaps], 0),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid decay"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def _torch_copy(torch, ours):
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.ReLU(), torch.nn.Linear(4, 2))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return theirs


@pytest.mark.parametrize("kind", ["swa", "ema", "swa_buffers", "ema_buffers"])
def test_averaged_model_against_torch(kind):
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsw
    ours_model = _net()
    theirs_model = _torch_copy(torch, ours_model)
    use_buffers = kind.endswith("buffers")
    if kind.startswith("ema"):
        ours = swa_utils.AveragedModel(ours_model, use_buffers=use_buffers,
                                       multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.8))
        theirs = tsw.AveragedModel(theirs_model, use_buffers=use_buffers,
                                   multi_avg_fn=tsw.get_ema_multi_avg_fn(0.8))
    else:
        ours = swa_utils.AveragedModel(ours_model, use_buffers=use_buffers)
        theirs = tsw.AveragedModel(theirs_model, use_buffers=use_buffers)
    rng = np.random.default_rng(0)
    for s in range(4):
        _perturb(ours_model, s)
        theirs_model.load_state_dict({k: torch.tensor(v.numpy())
                                      for k, v in ours_model.state_dict().items()})
        x = rng.standard_normal((6, 3)).astype(np.float32)
        ours_model(tl.tensor(x))
        theirs_model(torch.tensor(x))
        ours.update_parameters(ours_model)
        theirs.update_parameters(theirs_model)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    for k in b:
        np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    # the averaged model's state dict loads into torch's and back
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in a.items()})
    ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in b.items()})


def test_update_bn_recomputes_the_statistics():
    tl.manual_seed(0)
    model = _net()
    data = [tl.randn(8, 3) * 2 + 1 for _ in range(4)]
    model.eval()
    swa_utils.update_bn([(x, tl.zeros(8)) for x in data], model)
    assert model.training is False and model[1].momentum == 0.1
    # the statistics are the averages over the batches of the per-batch statistics
    with tl.no_grad():
        feats = [model[0](x).numpy() for x in data]
    np.testing.assert_allclose(model[1].running_mean.numpy(),
                               np.mean([f.mean(0) for f in feats], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_var.numpy(),
                               np.mean([f.var(0, ddof=1) for f in feats], 0), rtol=1e-5,
                               atol=1e-6)
    assert int(model[1].num_batches_tracked) == 4
    swa_utils.update_bn(data, nn.Linear(2, 2))         # no BatchNorm: nothing to do
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsw
    theirs = _torch_copy(torch, model)
    tsw.update_bn([torch.tensor(x.numpy()) for x in data], theirs)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


def _lrs(sched_cls, opt_cls, params, n, **kwargs):
    opt = opt_cls(params, lr=1.0)
    sched = sched_cls(opt, **kwargs)
    out = []
    for _ in range(n):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out, sched


@pytest.mark.parametrize("strategy, epochs", [("cos", 5), ("linear", 3), ("cos", 0)])
def test_swalr_schedule(strategy, epochs):
    p = nn.Parameter(tl.zeros(1))
    got, sched = _lrs(swa_utils.SWALR, tl.optim.SGD, [p], 8, swa_lr=0.05,
                      anneal_epochs=epochs, anneal_strategy=strategy)
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    # the closed form: lr = swa_lr * alpha(t) + lr0 * (1 - alpha(t)), t = min(1, step / epochs)
    alphas = [anneal(min(1.0, s / max(1, epochs))) for s in range(1, 9)]
    expected = [0.05 * a + 1.0 * (1 - a) for a in alphas]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    state = sched.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state
    sched.load_state_dict(state)
    assert sched.anneal_func(1.0) == 1.0
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsw
    theirs, _ = _lrs(tsw.SWALR, torch.optim.SGD, [torch.nn.Parameter(torch.zeros(1))], 8,
                     swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    np.testing.assert_allclose(got, theirs, rtol=1e-12)


def test_swalr_per_group_and_errors():
    a, b = nn.Parameter(tl.zeros(1)), nn.Parameter(tl.zeros(1))
    opt = tl.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=[0.1, 0.2], anneal_epochs=2, anneal_strategy="linear")
    for _ in range(3):
        opt.step()
        sched.step()
    assert [g["swa_lr"] for g in opt.param_groups] == [0.1, 0.2]
    np.testing.assert_allclose(sched.get_last_lr(), [0.1, 0.2])
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr"):
        swa_utils.SWALR(opt, [0.1, 0.2, 0.3])
