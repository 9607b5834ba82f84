"""torchlite.nn.functional's dropout family and the Dropout Modules.

Dropout is random, so values are checked through what must hold for every draw (each element
is 0 or input / (1 - p); whole channels for the feature variants; the gradient is the same
mask times the same scale), through statistics over many elements (the kept fraction, alpha
dropout's mean and variance), and through reproducibility with torchlite.manual_seed."""
import importlib
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck

SEL = 1.7580993408473766
_dropout = importlib.import_module("torchlite.nn.functional.dropout")   # F.dropout is the function

# every function of the family, with its input shape and what it zeroes (elements or channels)
CASES = {
    "dropout": (lambda x, **kw: F.dropout(x, 0.3, **kw), (64, 50), "elements"),
    "dropout1d": (lambda x, **kw: F.dropout1d(x, 0.3, **kw), (40, 20, 6), "channels"),
    "dropout2d": (lambda x, **kw: F.dropout2d(x, 0.3, **kw), (40, 20, 3, 2), "channels"),
    "dropout3d": (lambda x, **kw: F.dropout3d(x, 0.3, **kw), (40, 20, 2, 2, 2), "channels"),
    "alpha_dropout": (lambda x, **kw: F.alpha_dropout(x, 0.3, True, **kw), (64, 50), "elements"),
    "feature_alpha_dropout": (lambda x, **kw: F.feature_alpha_dropout(x, 0.3, True, **kw),
                              (40, 20, 6), "channels"),
}


def test_every_function_has_a_case():
    assert sorted(CASES) == sorted(_dropout.__all__)


def _kept(name, x, y):
    """Boolean mask of kept elements, checking every element is kept (scaled) or dropped."""
    a, b = x.numpy().astype(np.float64), y.detach().numpy().astype(np.float64)
    if "alpha" in name:
        p = 0.3
        scale = 1 / math.sqrt((SEL ** 2 * p + 1) * (1 - p))
        kept = np.isclose(b, a * scale + SEL * scale * p, rtol=1e-5, atol=1e-6)
        dropped = np.isclose(b, -SEL * scale + SEL * scale * p, rtol=1e-5, atol=1e-6)
    else:
        kept = np.isclose(b, a / 0.7, rtol=1e-5, atol=1e-7)
        dropped = b == 0
    assert (kept | dropped).all()
    return kept


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_kept_fraction(name, threads):
    fn, shape, unit = CASES[name]
    x = tl.rand(*shape) + 0.5
    y = fn(x)
    kept = _kept(name, x, y)
    assert abs(kept.mean() - 0.7) < 0.06
    if unit == "channels":       # each (sample, channel) is kept or dropped as a whole
        per_channel = kept.reshape(shape[0], shape[1], -1)
        assert (per_channel.all(2) | ~per_channel.any(2)).all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_seed_reproducible_and_independent_of_threads(name):
    fn, shape, _ = CASES[name]
    x = tl.randn(*shape)
    results = []
    old = tl.get_num_threads()
    try:
        for th in (1, 2, 1):
            tl.set_num_threads(th)
            tl.manual_seed(123)
            results.append(fn(x).numpy())
    finally:
        tl.set_num_threads(old)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    tl.manual_seed(124)
    assert not np.array_equal(fn(x).numpy(), results[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_is_the_saved_mask_times_the_scale(name):
    fn, shape, _ = CASES[name]
    x = (tl.rand(*shape, dtype=tl.float64) + 0.5).requires_grad_()
    y = fn(x)
    kept = _kept(name, x.detach(), y)
    g, = tl.autograd.grad(y.sum(), x)
    scale = 1 / math.sqrt((SEL ** 2 * 0.3 + 1) * 0.7) if "alpha" in name else 1 / 0.7
    np.testing.assert_allclose(g.numpy(), kept * scale, rtol=1e-12)


def test_gradcheck_with_a_fixed_draw():
    x = tl.randn(3, 4, dtype=tl.float64, requires_grad=True)

    def fn(x):
        tl.manual_seed(0)        # the same mask at every evaluation
        return F.dropout(x, 0.4) * x
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_p_zero_eval_and_empty_return_the_input():
    x = tl.randn(3, 4, requires_grad=True)
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert F.alpha_dropout(x, 0.5) is x               # training defaults to False there
    assert F.dropout2d(tl.empty(0, 3, 2, 2), 0.5).shape == (0, 3, 2, 2)


@pytest.mark.parametrize("fn", [F.dropout, F.alpha_dropout])
def test_p_one_gives_zeros(fn):
    x = tl.randn(5, 3, requires_grad=True)
    y = fn(x, 1.0, training=True)
    assert (y == 0).all()
    g, = tl.autograd.grad(y.sum(), x)
    assert (g == 0).all()


def test_alpha_dropout_keeps_mean_and_variance():
    tl.manual_seed(1)
    x = tl.randn(200000)
    y = F.alpha_dropout(x, 0.2, True)
    assert abs(y.mean().item()) < 0.02 and abs(y.std().item() - 1) < 0.02


def test_inplace():
    x = tl.rand(100, 10) + 0.5
    ref = x.clone()
    tl.manual_seed(3)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    tl.manual_seed(3)
    np.testing.assert_array_equal(x.numpy(), F.dropout(ref, 0.5).numpy())
    leaf = tl.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.dropout(leaf, 0.5, inplace=True)
    y = tl.rand(4, 6, 5) + 0.5
    row = y[0]
    out = F.dropout1d(row, 0.5, inplace=True)
    assert out is row
    kept = row.numpy() != 0
    assert (kept.all(1) | ~kept.any(1)).all()


def test_unbatched_feature_dropout():
    x = tl.rand(6, 5) + 0.5
    y = F.dropout1d(x, 0.5)
    kept = y.numpy() != 0
    assert (kept.all(1) | ~kept.any(1)).all()
    assert F.dropout3d(tl.rand(3, 2, 2, 2), 0.5).shape == (3, 2, 2, 2)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.dropout(tl.ones(3), 1.5), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: F.dropout2d(tl.ones(3), -0.1), ValueError, "has to be between 0 and 1"),
    (lambda: F.dropout1d(tl.ones(2, 3, 4, 5)), RuntimeError, "Expected 2D or 3D input, but received a 4D"),
    (lambda: F.feature_alpha_dropout(tl.ones(4), 0.5, True), RuntimeError,
     "Feature dropout requires at least 2 dimensions"),
    (lambda: F.dropout(tl.ones(3, dtype=tl.int64), 0.5), RuntimeError, "can't be cast"),
])
def test_errors(call, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=msg):
            call()


def test_dropout2d_and_3d_warnings():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(tl.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(tl.ones(2, 3))
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(tl.ones(2, 3, 4))


# ---- modules ---------------------------------------------------------------------------------------
MODULES = ["Dropout()", "Dropout(0.2, True)", "Dropout1d()", "Dropout2d(0.1)", "Dropout3d()",
           "AlphaDropout(0.1)", "FeatureAlphaDropout()"]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_matches_torch(spec):
    torch = pytest.importorskip("torch")  # noqa: F841  (eval below reads it)
    assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))


def test_module_is_active_only_in_training():
    m = nn.Dropout(0.5)
    x = tl.ones(1000)
    assert (m(x) == 0).any()
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        nn.Dropout(2)
