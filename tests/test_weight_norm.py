"""The hook forms of weight and spectral normalization (torchlite.nn.utils.weight_norm /
spectral_norm: weight_g/weight_v, weight_orig/weight_u/weight_v, PyTorch's state dict keys),
norm_except_dim and _weight_norm, the parametrization form of weight_norm (dim=None, loading
the old form's state dicts), checked with NumPy and against torch where installed."""
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.utils import (remove_spectral_norm, remove_weight_norm, spectral_norm,
                                weight_norm)
from torchlite.nn.utils import parametrizations
from torchlite.nn.utils.weight_norm import _weight_norm, norm_except_dim


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


def _np_norm_except_dim(v, dim):
    if dim == -1:
        return np.sqrt((v ** 2).sum())
    d = dim % v.ndim
    axes = tuple(i for i in range(v.ndim) if i != d)
    return np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
def test_norm_except_dim_and_weight_norm_function(dim):
    v = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = norm_except_dim(tl.tensor(v), 2, dim)
    expected = _np_norm_except_dim(v, dim)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)
    g = np.random.default_rng(1).random(expected.shape).astype(np.float32)
    np.testing.assert_allclose(_weight_norm(tl.tensor(v), tl.tensor(g), dim).numpy(),
                               v * g / expected, rtol=1e-5)
    torch = pytest.importorskip("torch")
    assert tuple(torch.norm_except_dim(torch.tensor(v), 2, dim).shape) == tuple(got.shape)
    np.testing.assert_allclose(norm_except_dim(tl.tensor(v), 3, dim).numpy(),
                               torch.norm_except_dim(torch.tensor(v), 3, dim).numpy(), rtol=1e-5)


def test_weight_norm_hook_form():
    tl.manual_seed(0)
    m = nn.Linear(3, 4)
    w = m.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert tuple(m.weight_g.shape) == (4, 1)
    np.testing.assert_allclose(m.weight_g.detach().numpy(), _np_norm_except_dim(w, 0), rtol=1e-6)
    np.testing.assert_allclose(m.weight.detach().numpy(), w, rtol=1e-5, atol=1e-6)
    # g scales each row; the hook recomputes weight before forward
    with tl.no_grad():
        m.weight_g.mul_(2.0)
    x = tl.randn(2, 3)
    y = m(x)
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ (2 * w).T + m.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    y.sum().backward()
    assert m.weight_g.grad.shape == (4, 1) and m.weight_v.grad.shape == (4, 3)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        _quiet(weight_norm, m)
    remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(m)
    # dim=None: one g for the whole tensor
    m2 = _quiet(weight_norm, nn.Conv1d(2, 3, 3), dim=None)
    assert m2.weight_g.dim() == 0


def test_weight_norm_against_torch_both_forms():
    torch = pytest.importorskip("torch")
    tl.manual_seed(1)
    ours = _quiet(weight_norm, nn.Conv2d(2, 3, 3), dim=1)
    theirs = _quiet(torch.nn.utils.weight_norm, torch.nn.Conv2d(2, 3, 3), dim=1)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # the parametrization form loads the hook form's state dict, as PyTorch's does
    para = parametrizations.weight_norm(nn.Conv2d(2, 3, 3), dim=1)
    para.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    np.testing.assert_allclose(para(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # dim=None in the parametrization form: a 0-d g, as PyTorch's
    p0 = parametrizations.weight_norm(nn.Linear(3, 4), dim=None)
    t0 = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 4), dim=None)
    assert tuple(p0.parametrizations.weight.original0.shape) == \
        tuple(t0.parametrizations.weight.original0.shape) == ()


def test_spectral_norm_hook_form_against_numpy():
    tl.manual_seed(3)
    m = nn.Linear(5, 4)
    w = m.weight.detach().numpy().copy()
    spectral_norm(m, n_power_iterations=1)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert m.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    x = tl.randn(2, 5)
    for _ in range(30):             # power iteration converges to the top singular value
        m(x)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.detach().numpy(), w / sigma, rtol=1e-4, atol=1e-6)
    # in eval no iteration: u and v stay put
    m.eval()
    u = m.weight_u.numpy().copy()
    m(x)
    np.testing.assert_array_equal(m.weight_u.numpy(), u)
    m.train()
    m(x).sum().backward()
    assert m.weight_orig.grad is not None and m.weight_orig.grad.shape == (4, 5)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(m)
    remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and not m._state_dict_hooks
    np.testing.assert_allclose(m.weight.detach().numpy(), w / sigma, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(m)
    # transposed convolutions normalise along dim 1
    ct = spectral_norm(nn.ConvTranspose2d(3, 5, 2))
    assert tuple(ct.weight_u.shape) == (5,) and tuple(ct.weight_v.shape) == (3 * 2 * 2,)


def test_spectral_norm_against_torch_and_old_checkpoints():
    torch = pytest.importorskip("torch")
    tl.manual_seed(4)
    ours = spectral_norm(nn.Conv2d(2, 3, 3))
    theirs = torch.nn.utils.spectral_norm(torch.nn.Conv2d(2, 3, 3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((1, 2, 5, 5)).astype(np.float32)
    for _ in range(2):          # training forwards: the same power iterations
        a = ours(tl.tensor(x)).detach().numpy()
        b = theirs(torch.tensor(x)).detach().numpy()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.weight_u.numpy(), theirs.weight_u.numpy(), rtol=1e-4,
                               atol=1e-6)
    # a checkpoint of the format before version 1: weight and weight_u, no weight_v
    state = {k: tl.tensor(v.numpy()) for k, v in theirs.state_dict().items() if k != "weight_v"}
    state["weight"] = tl.tensor(theirs.weight.detach().numpy())
    fresh = spectral_norm(nn.Conv2d(2, 3, 3))
    fresh.load_state_dict(state)
    fresh.eval()
    theirs.eval()
    np.testing.assert_allclose(fresh(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-3, atol=1e-4)
