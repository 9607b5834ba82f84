"""torchlite.nn.utils.fusion: a conv (or linear) layer with the eval-mode BatchNorm after it
folded in gives conv -> bn's output, checked against the two layers run in sequence and
against torch.nn.utils.fusion on the same weights where torch is installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.utils import fusion


def _trained_bn(bn, x):
    """bn with running statistics from a few training batches, its affine parameters
    randomised, then put in eval mode."""
    bn.train()
    for _ in range(3):
        bn(x * 1.5 + 0.3)
    if bn.affine:
        with tl.no_grad():
            bn.weight.copy_(tl.rand(bn.num_features) + 0.5)
            bn.bias.copy_(tl.randn(bn.num_features))
    return bn.eval()


@pytest.mark.parametrize("conv_cls, bn_cls, shape, bias, affine", [
    (nn.Conv2d, nn.BatchNorm2d, (2, 3, 7, 7), True, True),
    (nn.Conv2d, nn.BatchNorm2d, (2, 3, 6, 5), False, True),
    (nn.Conv1d, nn.BatchNorm1d, (3, 3, 9), True, False),
])
def test_conv_bn_fused_equals_the_sequence(conv_cls, bn_cls, shape, bias, affine):
    tl.manual_seed(0)
    conv = conv_cls(3, 4, 3, bias=bias).eval()
    x = tl.randn(*shape)
    bn = _trained_bn(bn_cls(4, affine=affine), conv(x))
    fused = fusion.fuse_conv_bn_eval(conv, bn)
    assert type(fused) is conv_cls and fused is not conv
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    with tl.no_grad():
        expected = bn(conv(x)).numpy()
        got = fused(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # the original conv is untouched
    assert (conv.bias is None) == (not bias)


def test_transposed_conv_fusion():
    tl.manual_seed(1)
    conv = nn.ConvTranspose2d(3, 5, 3).eval()
    x = tl.randn(2, 3, 4, 4)
    bn = _trained_bn(nn.BatchNorm2d(5), conv(x))
    fused = fusion.fuse_conv_bn_eval(conv, bn, transpose=True)
    with tl.no_grad():
        np.testing.assert_allclose(fused(x).numpy(), bn(conv(x)).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("num_features", [6, 1])
def test_linear_bn_fused_equals_the_sequence(num_features):
    tl.manual_seed(2)
    linear = nn.Linear(4, 6).eval()
    x = tl.randn(8, 4)
    bn = nn.BatchNorm1d(num_features)
    y = linear(x) if num_features == 6 else linear(x)[:, :1]
    _trained_bn(bn, y)
    fused = fusion.fuse_linear_bn_eval(linear, bn)
    with tl.no_grad():
        seq = bn(linear(x)) if num_features == 6 else (
            (linear(x) - bn.running_mean) / (bn.running_var + bn.eps).sqrt() * bn.weight + bn.bias)
        np.testing.assert_allclose(fused(x).numpy(), seq.numpy(), rtol=1e-4, atol=1e-5)


def test_weights_functions_and_errors():
    w, rm, rv = tl.randn(4, 3, 3, 3), tl.randn(4), tl.rand(4) + 0.5
    fw, fb = fusion.fuse_conv_bn_weights(w, None, rm, rv, 1e-5, None, None)
    s = 1.0 / np.sqrt(rv.numpy() + 1e-5)
    np.testing.assert_allclose(fw.detach().numpy(), w.numpy() * s[:, None, None, None], rtol=1e-5)
    np.testing.assert_allclose(fb.detach().numpy(), -rm.numpy() * s, rtol=1e-5)
    assert fw.requires_grad is False and fb.requires_grad is False and fw.grad_fn is None
    fw64, _ = fusion.fuse_conv_bn_weights(w.double(), None, rm, rv, 1e-5, None, None)
    assert fw64.dtype is tl.float64
    lw, lb = fusion.fuse_linear_bn_weights(nn.Parameter(tl.randn(4, 3)), nn.Parameter(tl.randn(4)),
                                           rm, rv, 1e-5, tl.ones(4), tl.zeros(4))
    assert lw.requires_grad and lb.requires_grad and lw.is_leaf
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        fusion.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2).eval())
    with pytest.raises(AssertionError, match="out_features"):
        fusion.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(2).eval())
    with pytest.raises(AssertionError, match="running_mean"):
        fusion.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1).eval(),
                                 nn.BatchNorm2d(2, track_running_stats=False).eval())


def test_against_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as tf
    tl.manual_seed(3)
    conv = nn.Conv2d(3, 4, 3).eval()
    x = tl.randn(2, 3, 6, 6)
    bn = _trained_bn(nn.BatchNorm2d(4), conv(x))
    tconv, tbn = torch.nn.Conv2d(3, 4, 3).eval(), torch.nn.BatchNorm2d(4).eval()
    tconv.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv.state_dict().items()})
    tbn.load_state_dict({k: torch.tensor(v.numpy()) for k, v in bn.state_dict().items()})
    ours, theirs = fusion.fuse_conv_bn_eval(conv, bn), tf.fuse_conv_bn_eval(tconv, tbn)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-6,
                                   atol=1e-7)
    lin, tlin = nn.Linear(5, 4).eval(), torch.nn.Linear(5, 4).eval()
    tlin.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lin.state_dict().items()})
    ours, theirs = fusion.fuse_linear_bn_eval(lin, bn), tf.fuse_linear_bn_eval(tlin, tbn)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-6,
                                   atol=1e-7)
