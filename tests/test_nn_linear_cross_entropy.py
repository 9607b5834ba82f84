"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss (PyTorch 2.13's): the reference form
against a NumPy log-softmax, the chunked form (options=LinearCrossEntropyOptions) against the
reference in values and gradients, PyTorch's argument errors, and PyTorch where installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F

from helpers import torch_or_skip


def _np_loss(x, W, b, t, weight=None, ignore=-100, reduction="mean"):
    z = x @ W.T + (0 if b is None else b)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    w = np.ones(W.shape[0]) if weight is None else weight
    keep = t != ignore
    safe = np.where(keep, t, 0)
    per = -logp[np.arange(len(t)), safe] * w[safe] * keep
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    return per.sum() / (w[safe] * keep).sum()


def _data(n=9, f=4, c=6, seed=0):
    g = np.random.default_rng(seed)
    return (g.standard_normal((n, f)), g.standard_normal((c, f)), g.standard_normal(c),
            g.integers(0, c, n))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [None, 1, 2, 4, 100])
def test_values_against_numpy(reduction, chunk):
    x, W, b, t = _data()
    t[2] = -100
    weight = np.linspace(0.5, 2.0, W.shape[0])
    opts = None if chunk is None else tl.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    got = F.linear_cross_entropy(tl.tensor(x), tl.tensor(W), tl.tensor(t), linear_bias=tl.tensor(b),
                                 weight=tl.tensor(weight), reduction=reduction, options=opts)
    np.testing.assert_allclose(got.numpy(), _np_loss(x, W, b, t, weight, reduction=reduction),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_chunked_equals_reference_with_gradients(reduction, label_smoothing):
    x, W, b, t = _data(n=11)
    t[0] = 3
    grads = []
    for opts in (None, tl.nn.LinearCrossEntropyOptions(batch_chunk_size=3)):
        xs = [tl.tensor(a, requires_grad=True) for a in (x, W, b)]
        out = F.linear_cross_entropy(xs[0], xs[1], tl.tensor(t), linear_bias=xs[2],
                                     reduction=reduction, label_smoothing=label_smoothing,
                                     options=opts)
        (out * tl.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)).sum().backward()
        grads.append([out.detach().numpy()] + [a.grad.numpy() for a in xs])
    for ref, chunked in zip(*grads):
        np.testing.assert_allclose(chunked, ref, rtol=1e-12, atol=1e-13)


def test_gradcheck_through_the_chunks():
    x, W, b, t = _data(n=5, f=3, c=4)
    xs = [tl.tensor(a, requires_grad=True) for a in (x, W, b)]
    opts = tl.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    assert tl.autograd.gradcheck(
        lambda x, W, b: F.linear_cross_entropy(x, W, tl.tensor(t), linear_bias=b, options=opts), xs)


def test_k_dimensional_weight_and_unbatched_input():
    g = np.random.default_rng(1)
    x, W = g.standard_normal((4, 3)), g.standard_normal((2, 5, 3))      # C = 2, d1 = 5
    t = g.integers(0, 2, (4, 5))
    got = F.linear_cross_entropy(tl.tensor(x), tl.tensor(W), tl.tensor(t))
    logits = tl.tensor(np.einsum("nf,cdf->ncd", x, W))
    np.testing.assert_allclose(got.numpy(), F.cross_entropy(logits, tl.tensor(t)).numpy(),
                               rtol=1e-12)
    with pytest.warns(UserWarning, match="reference implementation"):
        again = F.linear_cross_entropy(tl.tensor(x), tl.tensor(W), tl.tensor(t),
                                       options=tl.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    np.testing.assert_allclose(again.numpy(), got.numpy(), rtol=1e-12)
    x1, W1, _, _ = _data(n=1)
    one = F.linear_cross_entropy(tl.tensor(x1[0]), tl.tensor(W1), tl.tensor(2))
    np.testing.assert_allclose(one.item(), _np_loss(x1, W1, None, np.array([2])), rtol=1e-12)


@pytest.mark.parametrize("args, kwargs, msg", [
    (((2, 3, 3), (2, 3), (3, 2)), {}, "expected input with dimensionality 1 or 2, got 3"),
    (((2, 3), (2,), (2, 2)), {}, "expected linear_weight with dimensionality at least 2, got 1"),
    (((2, 3), (2, 4), (2,)), {}, r"last dimensions \(in_features\), got 3 and 4, respectively"),
    (((3,), (2, 4, 3), (2, 4)), {}, r"requires batched input, \(N, 3\), got unbatched input"),
    (((2, 3), (2, 3), (2,)), {"linear_bias": (3,)}, r"expected linear_bias shape \(2,\), got \(3,\)"),
])
def test_errors(args, kwargs, msg):
    t = [tl.zeros(*s) for s in args[:2]] + [tl.zeros(*args[2], dtype=tl.int64)]
    kw = {k: tl.zeros(*v) for k, v in kwargs.items()}
    with pytest.raises(RuntimeError, match=msg):
        F.linear_cross_entropy(*t, **kw)
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified"):
        F.linear_cross_entropy(tl.zeros(2, 3), tl.zeros(2, 3), tl.zeros(2, 2), ignore_index=0)
    with pytest.raises(ValueError, match="batch_chunk_size must be a positive int"):
        F.linear_cross_entropy(tl.zeros(2, 3), tl.zeros(4, 3), tl.zeros(2, dtype=tl.int64),
                               options=tl.nn.LinearCrossEntropyOptions(batch_chunk_size=0))


def test_module_keys_and_values():
    m = tl.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, weight=tl.ones(4))
    assert list(m.state_dict()) == ["weight", "linear.weight", "linear.bias"]
    assert m.linear.weight.shape == (8, 3) and m.linear.bias.shape == (8,)
    x, t = tl.randn(5, 3), tl.randint(0, 4, (5, 2))
    w = m.linear.weight.reshape(4, 2, 3)
    want = F.cross_entropy((x @ w.reshape(8, 3).T + m.linear.bias).reshape(5, 4, 2), t)
    np.testing.assert_allclose(m(x, t).item(), want.item(), rtol=1e-6)


def test_matches_torch():
    torch = torch_or_skip()
    torch.manual_seed(0)
    ref = torch.nn.LinearCrossEntropyLoss(3, 4, bias=True, label_smoothing=0.1)
    ours = tl.nn.LinearCrossEntropyLoss(3, 4, bias=True, label_smoothing=0.1,
                                        options=tl.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    x, t = torch.randn(7, 3), torch.randint(0, 4, (7,))
    a = ref(x, t)
    b = ours(tl.tensor(x.numpy()), tl.tensor(t.numpy()))
    a.backward()
    b.backward()
    np.testing.assert_allclose(b.item(), a.item(), rtol=1e-6)
    np.testing.assert_allclose(ours.linear.weight.grad.numpy(), ref.linear.weight.grad.numpy(),
                               rtol=1e-5, atol=1e-7)
