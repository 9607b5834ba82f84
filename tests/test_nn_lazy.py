"""Lazy modules (nn.LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*,
LazyInstanceNorm*) and their placeholders (nn.UninitializedParameter / UninitializedBuffer):
the first forward reads the input size, draws the parameters as the eager layer would and
turns the module into that layer; checked against the eager layers with the same state and,
where installed, against PyTorch."""
import copy
import pickle

import numpy as np
import pytest

import torchlite as tl
from torchlite import nn
from torchlite.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

# lazy class, its arguments, the eager class, the eager arguments given the input, an input
LAYERS = [
    (nn.LazyLinear, (4,), nn.Linear, lambda x: (x.shape[-1], 4), (3, 2, 5)),
    (nn.LazyConv1d, (4, 3), nn.Conv1d, lambda x: (x.shape[1], 4, 3), (2, 6, 9)),
    (nn.LazyConv2d, (4, 3), nn.Conv2d, lambda x: (x.shape[1], 4, 3), (2, 6, 7, 7)),
    (nn.LazyConv3d, (2, 2), nn.Conv3d, lambda x: (x.shape[1], 2, 2), (1, 3, 4, 4, 4)),
    (nn.LazyConvTranspose1d, (4, 3), nn.ConvTranspose1d, lambda x: (x.shape[1], 4, 3), (2, 6, 5)),
    (nn.LazyConvTranspose2d, (4, 3), nn.ConvTranspose2d, lambda x: (x.shape[1], 4, 3), (2, 6, 4, 4)),
    (nn.LazyConvTranspose3d, (2, 2), nn.ConvTranspose3d, lambda x: (x.shape[1], 2, 2), (1, 3, 3, 3, 3)),
    (nn.LazyBatchNorm1d, (), nn.BatchNorm1d, lambda x: (x.shape[1],), (4, 5, 6)),
    (nn.LazyBatchNorm2d, (), nn.BatchNorm2d, lambda x: (x.shape[1],), (4, 5, 3, 3)),
    (nn.LazyBatchNorm3d, (), nn.BatchNorm3d, lambda x: (x.shape[1],), (2, 5, 2, 3, 3)),
    (nn.LazyInstanceNorm1d, (), nn.InstanceNorm1d, lambda x: (x.shape[1],), (4, 5, 6)),
    (nn.LazyInstanceNorm2d, (), nn.InstanceNorm2d, lambda x: (x.shape[1],), (4, 5, 3, 3)),
    (nn.LazyInstanceNorm3d, (), nn.InstanceNorm3d, lambda x: (x.shape[1],), (2, 5, 2, 3, 3)),
]
IDS = [lazy.__name__ for lazy, *_ in LAYERS]


@pytest.mark.parametrize("lazy_cls, args, eager_cls, eager_args, shape", LAYERS, ids=IDS)
def test_first_forward_materializes_and_becomes_the_eager_layer(lazy_cls, args, eager_cls, eager_args, shape):
    tl.manual_seed(0)
    m = lazy_cls(*args)
    assert m.has_uninitialized_params() and all(is_lazy(p) for p in m.parameters())
    params_before = list(m.parameters())
    x = tl.randn(*shape)
    y = m(x)
    assert type(m) is eager_cls and not any(is_lazy(t) for t in list(m.parameters()) + list(m.buffers()))
    assert [id(p) for p in m.parameters()] == [id(p) for p in params_before]     # the same objects
    kwargs = {"affine": True, "track_running_stats": True} if "Instance" in eager_cls.__name__ else {}
    eager = eager_cls(*eager_args(x), **kwargs)
    assert [(n, p.shape) for n, p in eager.named_parameters()] == [(n, p.shape) for n, p in m.named_parameters()]
    assert [(n, b.shape) for n, b in eager.named_buffers()] == [(n, b.shape) for n, b in m.named_buffers()]
    assert repr(eager) == repr(m)
    eager.load_state_dict(m.state_dict())
    m.eval(), eager.eval()
    np.testing.assert_allclose(m(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    assert y.requires_grad == any(p.requires_grad for p in m.parameters())


def test_parameters_are_drawn_as_the_eager_layers():
    tl.manual_seed(1)
    lin = nn.LazyLinear(300)
    lin(tl.randn(2, 50))
    bound = 1 / np.sqrt(50)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound and np.abs(b).max() <= bound
    bn = nn.LazyBatchNorm1d()
    x = tl.randn(4, 3)
    bn(x)
    np.testing.assert_array_equal(bn.weight.detach().numpy(), np.ones(3))
    np.testing.assert_array_equal(bn.bias.detach().numpy(), np.zeros(3))
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.numpy().mean(0), rtol=1e-5)   # from zeros
    assert bn.num_batches_tracked.item() == 1


def test_placeholders_refuse_ops_and_print_as_pytorch():
    p = UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and isinstance(p, nn.Parameter) and p.requires_grad
    with pytest.raises(ValueError, match="uninitialized parameter"):
        p + 1
    with pytest.raises(ValueError, match="uninitialized parameter"):
        p.shape
    b = UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((2, 3))
    assert b.shape == (2, 3) and not is_lazy(b) and isinstance(b, tl.Tensor)
    p.materialize((4,), dtype=tl.float64)
    assert type(p) is nn.Parameter and p.shape == (4,) and p.dtype == tl.float64


def test_conversions_before_the_first_forward_apply_after_it():
    m = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d()).double()
    m(tl.randn(4, 5, dtype=tl.float64))
    assert all(p.dtype == tl.float64 for p in m.parameters())
    assert m[1].running_mean.dtype == tl.float64 and m[1].num_batches_tracked.dtype == tl.int64


def test_optimizer_made_before_the_first_forward_trains():
    tl.manual_seed(2)
    m = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    opt = tl.optim.Adam(m.parameters(), lr=0.05)
    x = tl.randn(64, 4)
    y = x.sum(1, keepdim=True)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_state_dict_load_materializes_copy_and_pickle():
    tl.manual_seed(3)
    src = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d())
    x = tl.randn(2, 3, 6, 6)
    src(x)
    dst = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d())
    sd = dst.state_dict()
    assert is_lazy(sd["0.weight"]) and is_lazy(sd["1.running_mean"])
    dst.load_state_dict(src.state_dict())
    assert not dst[0].has_uninitialized_params() and dst[0].weight.shape == (4, 3, 3, 3)
    src.eval(), dst.eval()
    np.testing.assert_allclose(dst(x).detach().numpy(), src(x).detach().numpy(), rtol=1e-6)
    assert type(dst[0]) is nn.Conv2d
    fresh = nn.LazyLinear(2)
    for twin in (copy.deepcopy(fresh), pickle.loads(pickle.dumps(fresh))):
        assert twin.has_uninitialized_params()
        assert twin(tl.randn(3, 7)).shape == (3, 2) and type(twin) is nn.Linear


def test_bad_first_inputs_raise():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(tl.randn(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="expected an unbatched"):
        nn.LazyConv2d(4, 3)(tl.randn(5, 5))


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    for lazy_name, args, shape in (("LazyLinear", (4,), (3, 5)), ("LazyConv2d", (4, 3), (2, 3, 6, 6)),
                                   ("LazyBatchNorm2d", (), (2, 3, 4, 4)), ("LazyInstanceNorm1d", (), (2, 3, 5))):
        ours, theirs = getattr(nn, lazy_name)(*args), getattr(torch.nn, lazy_name)(*args)
        assert repr(ours) == repr(theirs)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        ours(tl.tensor(x))
        theirs(torch.from_numpy(x))
        assert repr(ours) == repr(theirs) and type(ours).__name__ == type(theirs).__name__
        ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        ours.eval(), theirs.eval()
        np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(),
                                   theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
