"""torchlite.utils.checkpoint: gradients equal the plain model's (dropout included: the
recomputation replays the random numbers), the memory a deep model holds between forward and
backward shrinks, and PyTorch's argument rules."""
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite._core.array import memory_stats
from torchlite.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _deep(seed=0):
    tl.manual_seed(seed)
    return nn.Sequential(*[nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Dropout(0.2))
                           for _ in range(8)])


def _step(model, x, run):
    model.zero_grad()
    x.grad = None
    tl.manual_seed(7)
    before = memory_stats()["allocated"]
    out = run(model, x)
    held = memory_stats()["allocated"] - before
    out.square().mean().backward()
    return held, [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_same_gradients_half_the_memory(use_reentrant):
    model = _deep()
    x = tl.randn(256, 128, requires_grad=True)
    plain_held, plain = _step(model, x, lambda m, v: m(v))
    held, got = _step(model, x, lambda m, v: checkpoint_sequential(
        m, 4, v, use_reentrant=use_reentrant))
    for a, b in zip(plain, got):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert held <= plain_held / 2, (held, plain_held)


def test_checkpoint_a_module_whose_input_needs_no_grad():
    """The parameters still get their gradients (they are recorded as inputs of the node)."""
    tl.manual_seed(1)
    block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    x = tl.randn(3, 4)
    block(x).sum().backward()
    want = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    checkpoint(block, x, use_reentrant=False).sum().backward()
    for w, p in zip(want, block.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), w.numpy(), rtol=1e-6)


def test_functions_tuples_non_tensor_args_and_kwargs():
    a = tl.randn(3, requires_grad=True)
    b = tl.randn(3, requires_grad=True)

    def f(u, v, scale, shift=0.0):
        return u * v * scale + shift, (u - v).exp()
    o1, o2 = checkpoint(f, a, b, 2.0, shift=1.0, use_reentrant=False)
    (o1.sum() + o2.sum()).backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    p1, p2 = f(a, b, 2.0, shift=1.0)
    (p1.sum() + p2.sum()).backward()
    np.testing.assert_allclose(ga.numpy(), a.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), b.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: shift"):
        checkpoint(f, a, b, 2.0, shift=1.0, use_reentrant=True)


def test_argument_rules_and_the_determinism_check():
    x = tl.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(lambda v: v * 2, x)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda v: v, x, use_reentrant=False, determinism_check="strict")
    calls = []

    def changes_shape(v):
        calls.append(1)
        return v.repeat(len(calls))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = checkpoint(changes_shape, x, use_reentrant=True)
    with pytest.raises(CheckpointError, match="shape or dtype"):
        out.sum().backward()


def test_gradients_match_torch_checkpoint():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 5))
    x = rng.standard_normal((4, 5))
    results = []
    for lib, ck in ((tl, checkpoint), (torch, tcp.checkpoint)):
        wt = lib.tensor(w, requires_grad=True)
        xt = lib.tensor(x, requires_grad=True)
        out = ck(lambda v: (v @ wt).tanh() @ wt, xt, use_reentrant=False)
        out.sum().backward()
        results.append((wt.grad.numpy(), xt.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_a_closure_or_partial_gets_its_parameters_gradients(use_reentrant):
    # the parameters a closure reaches (not a Module or its method) were found by nothing, so
    # with an input that needs no grad they got none, silently; the same for the first
    # segment of checkpoint_sequential over a raw input
    import functools
    tl.manual_seed(0)
    enc, head = nn.Linear(3, 4), nn.Linear(4, 1)
    x = tl.randn(2, 3)
    head(enc(x).relu()).sum().backward()
    want = enc.weight.grad.clone()
    for fn in (lambda t: enc(t).relu(), functools.partial(lambda t, m: m(t).relu(), m=enc)):
        enc.zero_grad()
        head(checkpoint(fn, x, use_reentrant=use_reentrant)).sum().backward()
        assert enc.weight.grad is not None and tl.allclose(enc.weight.grad, want)
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU())
    checkpoint_sequential(seq, 2, x, use_reentrant=use_reentrant).sum().backward()
    assert all(p.grad is not None for p in seq.parameters())


def test_a_closure_with_dropout_recomputes_the_same_mask():
    tl.manual_seed(1)
    lin = nn.Linear(8, 8)
    x = tl.randn(4, 8)
    y = checkpoint(lambda t: F.dropout(lin(t), 0.5, training=True), x, use_reentrant=False)
    y.sum().backward()
    mask = (y != 0).float()
    # the gradient of the sum reaches the weight only through the kept elements: 2 * mask^T x
    assert tl.allclose(lin.weight.grad, 2 * mask.t() @ x)
