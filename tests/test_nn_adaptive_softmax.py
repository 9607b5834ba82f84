"""nn.AdaptiveLogSoftmaxWithLoss: against NumPy's log-softmax of the same weights (the
adaptive softmax's factorisation written out by hand), and against PyTorch's module with the
same state dict where PyTorch is installed (outputs, loss, gradients, log_prob, predict)."""
import numpy as np
import pytest

import torchlite as tl
from torchlite import nn


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def _np_log_prob(m, x):
    """[N, n_classes] log-probabilities from the module's weights, in NumPy."""
    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    head = x @ sd["head.weight"].T + (sd["head.bias"] if "head.bias" in sd else 0)
    hl = _log_softmax(head)
    short = m.shortlist_size
    parts = [hl[:, :short]]
    for i in range(m.n_clusters):
        z = (x @ sd[f"tail.{i}.0.weight"].T) @ sd[f"tail.{i}.1.weight"].T
        parts.append(_log_softmax(z) + hl[:, short + i:short + i + 1])
    return np.concatenate(parts, 1)


def _module(head_bias=True, seed=0):
    tl.manual_seed(seed)
    return nn.AdaptiveLogSoftmaxWithLoss(12, 15, [3, 8], div_value=2.0, head_bias=head_bias).double()


@pytest.mark.parametrize("head_bias", [False, True])
def test_values_and_gradients_against_numpy(head_bias):
    m = _module(head_bias)
    x = np.random.default_rng(1).standard_normal((9, 12))
    target = np.array([0, 2, 3, 7, 8, 14, 1, 9, 5])
    lp = _np_log_prob(m, x)
    out = m(tl.tensor(x), tl.tensor(target))
    np.testing.assert_allclose(out.output.detach().numpy(), lp[np.arange(9), target], rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -lp[np.arange(9), target].mean(), rtol=1e-12)
    np.testing.assert_allclose(m.log_prob(tl.tensor(x)).detach().numpy(), lp, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.exp(lp).sum(1), 1.0, rtol=1e-12)
    assert m.predict(tl.tensor(x)).tolist() == lp.argmax(1).tolist()
    xt = tl.tensor(x, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a: m(a, tl.tensor(target)).loss, (xt,))


def test_unbatched_input():
    m = _module()
    x = np.random.default_rng(2).standard_normal(12)
    out = m(tl.tensor(x), tl.tensor(10))
    assert out.output.shape == ()
    np.testing.assert_allclose(out.output.item(), _np_log_prob(m, x[None])[0, 10], rtol=1e-12)
    assert m.log_prob(tl.tensor(x)).shape == (15,)
    assert m.predict(tl.tensor(x)).shape == ()


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = _module()
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(12, 15, [3, 8], div_value=2.0, head_bias=True).double()
    assert list(theirs.state_dict()) == list(ours.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
    assert repr(theirs) == repr(ours)
    x = np.random.default_rng(3).standard_normal((10, 12))
    target = np.array([0, 14, 3, 7, 8, 2, 1, 9, 5, 13])
    a, b = tl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oa, ob = ours(a, tl.tensor(target)), theirs(b, torch.tensor(target))
    oa.loss.backward()
    ob.loss.backward()
    np.testing.assert_allclose(oa.output.detach().numpy(), ob.output.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-14)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-14, err_msg=name)
    np.testing.assert_allclose(ours.log_prob(a).detach().numpy(), theirs.log_prob(b).detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    assert ours.predict(a).tolist() == theirs.predict(b).tolist()


def test_training_lowers_the_loss():
    m = _module(seed=4)
    opt = tl.optim.Adam(m.parameters(), lr=0.05)
    g = tl.Generator().manual_seed(5)
    x = tl.randn(64, 12, generator=g).double()
    target = (x[:, 0] > 0).long() * 10 + (x[:, 1] > 0).long()      # four classes over three groups
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = m(x, target).loss
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.3 * first


@pytest.mark.parametrize("cutoffs", [[], [8, 3], [0, 4], [4, 15], [4, 4]])
def test_bad_cutoffs_raise(cutoffs):
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(12, 15, cutoffs)


def test_bad_inputs_raise():
    m = _module()
    x = tl.randn(4, 12).double()
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 14\]"):
        m(x, tl.tensor([0, 1, 15, 2]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(x, tl.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(x, tl.zeros(4, 2, dtype=tl.int64))
    with pytest.raises(RuntimeError, match="12 features"):
        m(tl.randn(4, 5).double(), tl.tensor([0, 1, 2, 3]))
