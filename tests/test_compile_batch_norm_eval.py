"""torchlite.compile on convolutional inference: batch norm in evaluation mode becomes a
per-channel multiply-add (its coefficients cached while the statistics keep their versions)
that fuses with the activation and residual add after it, and in-place activations on fresh
single-use values become their out-of-place forms so they can fuse.  Values are checked
against eager torchlite; training mode, gradients and views keep eager's behaviour."""
import numpy as np

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from compile_helpers import kernels_of


class _Block(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
        self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
        self.act = act

    def forward(self, x):
        h = self.act(self.bn1(self.conv1(x)))
        return self.act(self.bn2(self.conv2(h)) + x)


def _trained_stats(m):
    g = tl.Generator().manual_seed(0)
    for bn in (m.bn1, m.bn2):
        bn.running_mean.copy_(tl.randn(4, generator=g) * 0.3)
        bn.running_var.copy_(tl.rand(4, generator=g) + 0.5)
        bn.weight.data.copy_(tl.randn(4, generator=g))
        bn.bias.data.copy_(tl.randn(4, generator=g))
    return m


def _targets(c):
    (entry,) = c._compiled.cache.values()
    return [getattr(n.target, "__name__", str(n.target)) for n in entry.graph.nodes
            if n.op == "call_function"]


def test_eval_batch_norm_and_in_place_activation_fuse_and_match_eager():
    for act in (nn.ReLU(inplace=True), nn.ReLU6(inplace=True), nn.Hardswish(inplace=True),
                nn.SiLU(inplace=True)):
        tl.manual_seed(0)
        m = _trained_stats(_Block(act)).eval()
        c = tl.compile(m)
        x = tl.randn(2, 4, 8, 8, generator=tl.Generator().manual_seed(1))
        with tl.no_grad():
            got, want = c(x), m(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        names = _targets(c)
        assert "batch_norm" not in names, names
        assert len(kernels_of(c)) == 2      # (x * s + t) -> act, and (x * s + t + x) -> act


def test_coefficients_follow_in_place_changes_of_the_statistics():
    m = _trained_stats(_Block(nn.ReLU(inplace=True))).eval()
    c = tl.compile(m)
    x = tl.randn(2, 4, 8, 8)
    with tl.no_grad():
        c(x)
        m.bn1.running_mean.add_(0.5)
        m.bn2.weight.mul_(2.0)
        np.testing.assert_allclose(c(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
        m.load_state_dict(_trained_stats(_Block(nn.ReLU())).state_dict())
        np.testing.assert_allclose(c(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_training_mode_and_gradients_keep_the_batch_norm():
    m = _trained_stats(_Block(nn.ReLU(inplace=True)))
    ref = _trained_stats(_Block(nn.ReLU(inplace=True)))
    ref.load_state_dict(m.state_dict())
    c = tl.compile(m)
    x = tl.randn(2, 4, 8, 8)
    c(x).sum().backward()                   # training: batch statistics, running ones updated
    ref(x).sum().backward()
    assert "batch_norm" in _targets(c)
    np.testing.assert_allclose(m.bn1.running_mean.numpy(), ref.bn1.running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.bn1.weight.grad.numpy(), ref.bn1.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-5)
    m.eval(), ref.eval()                    # evaluation with gradients wanted: kept whole too
    m.zero_grad(), ref.zero_grad()
    c(x).sum().backward()
    ref(x).sum().backward()
    np.testing.assert_allclose(m.bn2.bias.grad.numpy(), ref.bn2.bias.grad.numpy(), rtol=1e-4,
                               atol=1e-5)


def test_in_place_activations_on_views_and_inputs_stay_in_place():
    def on_view(x):
        y = x * 2.0
        F.relu(y[:, :2], inplace=True)      # writes into y through the view
        return y

    def on_input(x):
        F.relu(x, inplace=True)             # the caller's tensor changes, as eagerly
        return x + 1.0
    c1, c2 = tl.compile(on_view), tl.compile(on_input)
    x = tl.randn(3, 4)
    np.testing.assert_array_equal(c1(x).numpy(), on_view(x).numpy())
    a, b = x.clone(), x.clone()
    np.testing.assert_array_equal(c2(a).numpy(), on_input(b).numpy())
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert (a.numpy() >= 0).all()
