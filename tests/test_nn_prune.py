"""torchlite.nn.utils.prune: PyTorch's reparametrization (weight_orig, weight_mask, a forward
pre-hook), the masks of each method checked with NumPy and against torch.nn.utils.prune on the
same weights where torch is installed, iterative pruning, global pruning, removal, and state
dicts that load both ways."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.utils import prune


def _weights(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _linear(w, b=None):
    m = nn.Linear(w.shape[1], w.shape[0])
    with tl.no_grad():
        m.weight.copy_(tl.tensor(w))
        if b is not None:
            m.bias.copy_(tl.tensor(b))
    return m


def _torch_linear(torch, w, b=None):
    m = torch.nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w))
        if b is not None:
            m.bias.copy_(torch.tensor(b))
    return m


def test_l1_unstructured_reparametrizes_as_pytorch():
    w = _weights((4, 5))
    m = _linear(w)
    out = prune.l1_unstructured(m, "weight", amount=0.3)
    assert out is m
    assert [k for k, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [k for k, _ in m.named_buffers()] == ["weight_mask"]
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    mask = m.weight_mask.numpy()
    # the 6 (round(0.3 * 20)) smallest |w| are pruned
    expected = np.ones(20, np.float32)
    expected[np.argsort(np.abs(w).reshape(-1))[:6]] = 0
    np.testing.assert_array_equal(mask.reshape(-1), expected)
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * mask)
    np.testing.assert_array_equal(m.weight_orig.detach().numpy(), w)
    # the hook recomputes weight before forward; the gradient reaches weight_orig, masked
    with tl.no_grad():
        m.weight_orig.mul_(2.0)
    x = tl.tensor(_weights((3, 5), seed=1))
    y = m(x)
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ (2 * w * mask).T
                               + m.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), mask * x.numpy().sum(0), rtol=1e-5)
    assert prune.is_pruned(m) and prune.is_pruned(nn.Sequential(m))
    assert not prune.is_pruned(nn.Linear(2, 2))


def test_integer_amount_and_zero_amount():
    w = _weights((3, 4), seed=2)
    m = prune.l1_unstructured(_linear(w), "weight", amount=5)
    assert int(m.weight_mask.sum()) == 12 - 5
    m = prune.l1_unstructured(_linear(w), "weight", amount=0)
    assert int(m.weight_mask.sum()) == 12
    m = prune.identity(_linear(w), "weight")
    np.testing.assert_array_equal(m.weight.detach().numpy(), w)


def test_iterative_structured_pruning_keeps_pruned_slices():
    tl.manual_seed(1)
    conv = nn.Conv2d(2, 8, 3)
    prune.random_structured(conv, "weight", amount=2, dim=0)
    first = conv.weight_mask.numpy().reshape(8, -1).max(1)
    prune.random_structured(conv, "weight", amount=0.5, dim=0)     # half of the 6 left
    second = conv.weight_mask.numpy().reshape(8, -1).max(1)
    assert int((first == 0).sum()) == 2 and int((second == 0).sum()) == 2 + 3
    assert np.all(second <= first)


def test_random_unstructured_and_random_structured_counts():
    tl.manual_seed(0)
    m = prune.random_unstructured(nn.Linear(10, 8), "weight", amount=0.25)
    assert int(m.weight_mask.sum()) == 80 - 20
    conv = nn.Conv2d(3, 6, 3)
    prune.random_structured(conv, "weight", amount=2, dim=0)
    mask = conv.weight_mask.numpy()
    per_channel = mask.reshape(6, -1)
    # whole output channels go: each channel is all ones or all zeros, two of them zeros
    assert set(per_channel.min(1)) <= {0.0, 1.0}
    np.testing.assert_array_equal(per_channel.min(1), per_channel.max(1))
    assert int((per_channel.max(1) == 0).sum()) == 2
    assert np.all(conv.weight.detach().numpy()[per_channel.max(1) == 0] == 0)


@pytest.mark.parametrize("n, dim", [(1, 0), (2, 0), (2, 1), (float("inf"), -1), (3, 1)])
def test_ln_structured_against_numpy(n, dim):
    w = _weights((6, 3, 2, 2), seed=3)
    conv = nn.Conv2d(3, 6, 2)
    with tl.no_grad():
        conv.weight.copy_(tl.tensor(w))
    prune.ln_structured(conv, "weight", amount=0.5, n=n, dim=dim)
    d = dim % 4
    moved = np.moveaxis(w, d, 0).reshape(w.shape[d], -1)
    norms = np.linalg.norm(moved, ord=n, axis=1)
    keep = np.argsort(-norms)[:w.shape[d] - round(0.5 * w.shape[d])]
    expected = np.zeros(w.shape[d], np.float32)
    expected[keep] = 1
    got = np.moveaxis(conv.weight_mask.numpy(), d, 0).reshape(w.shape[d], -1)
    np.testing.assert_array_equal(got, np.repeat(expected[:, None], got.shape[1], 1))


def _torch_prune_matches(torch, steps, shape=(6, 8), seed=4):
    """Apply the same sequence of (tl_fn, torch_fn, kwargs) to equal Linear layers; the masks,
    pruned weights and forward outputs must be equal."""
    import torch.nn.utils.prune as tp
    w = _weights(shape, seed)
    ours, theirs = _linear(w), _torch_linear(torch, w)
    with torch.no_grad():
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    for name, kwargs in steps:
        getattr(prune, name)(ours, "weight", **kwargs)
        getattr(tp, name)(theirs, "weight", **kwargs)
    np.testing.assert_array_equal(ours.weight_mask.numpy(), theirs.weight_mask.numpy())
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = _weights((2, shape[1]), seed=5)
    np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    return ours, theirs


@pytest.mark.parametrize("steps", [
    [("l1_unstructured", {"amount": 0.3})],
    [("l1_unstructured", {"amount": 0.3}), ("l1_unstructured", {"amount": 0.5})],
    [("ln_structured", {"amount": 2, "n": 2, "dim": 0}), ("l1_unstructured", {"amount": 7})],
    [("l1_unstructured", {"amount": 0.2}), ("ln_structured", {"amount": 0.4, "n": 1, "dim": 1})],
    [("ln_structured", {"amount": 1, "n": float("inf"), "dim": -1}),
     ("ln_structured", {"amount": 1, "n": 1, "dim": 0})],
])
def test_masks_and_iterative_pruning_match_torch(steps):
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_prune_matches(torch, steps)
    hooks = [h for h in ours._forward_pre_hooks.values()]
    assert len(hooks) == 1
    if len(steps) > 1:
        assert isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == len(steps)


def test_state_dicts_load_both_ways():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tp
    w = _weights((4, 6), seed=6)
    ours = prune.l1_unstructured(_linear(w), "weight", amount=0.5)
    theirs = tp.random_unstructured(_torch_linear(torch, _weights((4, 6), seed=7)), "weight",
                                    amount=0.25)
    # torch -> torchlite: the pruned weight follows torch's mask after the next forward
    ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = _weights((3, 6), seed=8)
    np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # torchlite -> torch
    ours2 = prune.ln_structured(_linear(_weights((4, 6), seed=9)), "weight", 0.5, 2, 0)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours2.state_dict().items()})
    np.testing.assert_allclose(theirs(torch.tensor(x)).detach().numpy(),
                               ours2(tl.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_global_unstructured_against_numpy_and_torch():
    w1, w2 = _weights((4, 5), seed=10), _weights((3, 4), seed=11) * 0.5
    a, b = _linear(w1), _linear(w2)
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.4)
    flat = np.concatenate([np.abs(w1).reshape(-1), np.abs(w2).reshape(-1)])
    expected = np.ones_like(flat)
    expected[np.argsort(flat)[:round(0.4 * flat.size)]] = 0
    got = np.concatenate([a.weight_mask.numpy().reshape(-1), b.weight_mask.numpy().reshape(-1)])
    np.testing.assert_array_equal(got, expected)
    assert isinstance(list(a._forward_pre_hooks.values())[0], prune.CustomFromMask)
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured([(a, "bias")], pruning_method=prune.RandomStructured,
                                  amount=1)
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tp
    ta, tb = _torch_linear(torch, w1), _torch_linear(torch, w2)
    tp.global_unstructured([(ta, "weight"), (tb, "weight")],
                           pruning_method=tp.L1Unstructured, amount=0.4)
    np.testing.assert_array_equal(a.weight_mask.numpy(), ta.weight_mask.numpy())
    np.testing.assert_array_equal(b.weight_mask.numpy(), tb.weight_mask.numpy())


def test_importance_scores_and_custom_mask():
    w = _weights((3, 4), seed=12)
    scores = tl.arange(12.0).view(3, 4)
    m = prune.l1_unstructured(_linear(w), "weight", amount=4, importance_scores=scores)
    np.testing.assert_array_equal(m.weight_mask.numpy().reshape(-1), [0] * 4 + [1] * 8)
    with pytest.raises(AssertionError):
        prune.l1_unstructured(_linear(w), "weight", 1, importance_scores=tl.ones(2))
    mask = tl.tensor((np.arange(12) % 3 != 0).reshape(3, 4).astype(np.float32))
    m = prune.custom_from_mask(m, "weight", mask)
    np.testing.assert_array_equal(m.weight_mask.numpy(),
                                  np.minimum(mask.numpy(), [[0] * 4, [1] * 4, [1] * 4]))


def test_remove_makes_pruning_permanent():
    w = _weights((4, 4), seed=13)
    m = prune.l1_unstructured(_linear(w), "weight", amount=0.5)
    mask = m.weight_mask.numpy().copy()
    prune.remove(m, "weight")
    assert isinstance(m.weight, nn.Parameter)
    assert list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * mask)
    assert not prune.is_pruned(m) and "weight_orig" not in m._parameters
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(m, "weight")


def test_argument_errors_are_pytorchs():
    m = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(m, "weight", amount="a lot")
    with pytest.raises(ValueError, match="range"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match="range"):
        prune.l1_unstructured(m, "weight", amount=-1)
    with pytest.raises(ValueError, match="smaller than the number"):
        prune.l1_unstructured(m, "weight", amount=7)
    # a failed pruning puts the parameter back (re-registered last, as PyTorch does)
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    assert "bias" in m._parameters
    # a failed second pruning keeps the first one working
    prune.l1_unstructured(m, "weight", amount=2)
    mask = m.weight_mask.numpy().copy()
    for bad in ({"amount": 9}, {"amount": "all"}):
        with pytest.raises((ValueError, TypeError)):
            prune.l1_unstructured(m, "weight", **bad)
        hooks = list(m._forward_pre_hooks.values())
        assert len(hooks) == 1 and isinstance(hooks[0], prune.L1Unstructured)
        np.testing.assert_array_equal(m.weight_mask.numpy(), mask)
    prune.l1_unstructured(m, "weight", amount=1)
    with pytest.raises(ValueError):
        prune.l1_unstructured(m, "weight", amount=9)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    assert int(m.weight_mask.sum()) == 3


def test_custom_method_and_container_api():
    class EveryOther(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    m = nn.Linear(3, 2)
    EveryOther.apply(m, "bias")
    np.testing.assert_array_equal(m.bias_mask.numpy(), [0, 1])
    # prune() applies a method to a bare tensor
    t = tl.arange(1.0, 7.0)
    np.testing.assert_array_equal(prune.L1Unstructured(amount=2).prune(t).numpy(),
                                  [0, 0, 3, 4, 5, 6])
    a, b = prune.L1Unstructured(0.1), prune.RandomUnstructured(0.1)
    a._tensor_name = b._tensor_name = "w"
    c = prune.PruningContainer(a)
    c.add_pruning_method(b)
    assert len(c) == 2 and c[1] is b and list(c) == [a, b]
    other = prune.Identity()
    other._tensor_name = "v"
    with pytest.raises(ValueError, match="Can only add pruning methods"):
        c.add_pruning_method(other)
    with pytest.raises(TypeError, match="not a BasePruningMethod"):
        c.add_pruning_method(3)
