"""torchlite.signal.windows: every window against SciPy's scipy.signal.windows (float64) and
PyTorch's torch.signal.windows (float32 and float64) where they are installed, both
symmetric and periodic, the degenerate lengths 0 and 1, the argument checks, dtype, device
and requires_grad; and the top-level torch.*_window functions against their windows."""
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite.signal import windows as W

LENGTHS = (0, 1, 2, 3, 8, 11)

# name -> (kwargs for torchlite/torch, scipy.signal.windows call(M, sym))
CASES = {
    "bartlett": ({}, lambda sw, M, sym: sw.bartlett(M, sym=sym)),
    "blackman": ({}, lambda sw, M, sym: sw.blackman(M, sym=sym)),
    "cosine": ({}, lambda sw, M, sym: sw.cosine(M, sym=sym)),
    "hamming": ({}, lambda sw, M, sym: sw.hamming(M, sym=sym)),
    "hann": ({}, lambda sw, M, sym: sw.hann(M, sym=sym)),
    "nuttall": ({}, lambda sw, M, sym: sw.nuttall(M, sym=sym)),
    "kaiser": ({"beta": 8.6}, lambda sw, M, sym: sw.kaiser(M, 8.6, sym=sym)),
    "gaussian": ({"std": 2.5}, lambda sw, M, sym: sw.gaussian(M, 2.5, sym=sym)),
    "exponential": ({"tau": 3.0}, lambda sw, M, sym: sw.exponential(M, tau=3.0, sym=sym)),
    "general_hamming": ({"alpha": 0.6}, lambda sw, M, sym: sw.general_hamming(M, 0.6, sym=sym)),
    "general_cosine": ({"a": [0.5, 0.3, 0.2]},
                       lambda sw, M, sym: sw.general_cosine(M, [0.5, 0.3, 0.2], sym=sym)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("sym", [True, False], ids=["sym", "periodic"])
def test_against_scipy(name, sym):
    sw = pytest.importorskip("scipy.signal.windows")
    kwargs, ref = CASES[name]
    for M in LENGTHS:
        got = getattr(W, name)(M, sym=sym, dtype=tl.float64, **kwargs)
        assert got.dtype is tl.float64 and got.shape == (M,)
        # SciPy's nuttall coefficients are rounded to 7 digits as PyTorch's are; both compute
        # the same formula
        np.testing.assert_allclose(got.numpy(), ref(sw, M, sym), rtol=1e-13, atol=1e-15,
                                   err_msg=f"{name} M={M} sym={sym}")


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_against_pytorch(name, dtype):
    torch = pytest.importorskip("torch")
    kwargs, _ = CASES[name]
    for M in LENGTHS:
        for sym in (True, False):
            got = getattr(W, name)(M, sym=sym, dtype=getattr(tl, dtype), **kwargs)
            want = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype),
                                                       **kwargs)
            assert got.dtype.name == dtype and got.shape == tuple(want.shape)
            # PyTorch computes in the window's dtype, torchlite in float64 rounded once
            tol = 2e-6 if dtype == "float32" else 1e-13
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol,
                                       err_msg=f"{name} M={M} sym={sym}")


def test_default_dtype_device_requires_grad():
    w = W.hann(5)
    assert w.dtype is tl.float32 and w.device.type == "cpu" and not w.requires_grad
    w = W.gaussian(4, std=1.0, requires_grad=True, device="cpu")
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    old = tl.get_default_dtype()
    tl.set_default_dtype(tl.float64)
    try:
        assert W.blackman(3).dtype is tl.float64
    finally:
        tl.set_default_dtype(old)


def test_exponential_center_and_known_values():
    w = W.exponential(4, center=1.0, sym=False, dtype=tl.float64)
    np.testing.assert_allclose(w.numpy(), np.exp(-np.abs(np.arange(4) - 1.0)))
    np.testing.assert_allclose(W.exponential(5, sym=False, dtype=tl.float64).numpy(),
                               np.exp(-np.abs(np.arange(5) - 2.5)))
    assert W.hann(5, dtype=tl.float64).tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0],
                                                                 abs=3e-16)
    assert W.cosine(3, sym=False, dtype=tl.float64).tolist() == pytest.approx(
        [math.sin(math.pi * (k + 0.5) / 4) for k in range(3)], rel=1e-15)


def test_bad_arguments_raise_as_pytorch():
    with pytest.raises(ValueError, match="non-negative window length, got M=-1"):
        W.hann(-1)
    with pytest.raises(ValueError, match="float32 or float64 dtypes, got: torchlite.int64"):
        W.bartlett(4, dtype=tl.int64)
    with pytest.raises(ValueError, match="float32 or float64"):
        W.kaiser(4, dtype=tl.float16)
    with pytest.raises(ValueError, match="Standard deviation must be positive"):
        W.gaussian(4, std=0.0)
    with pytest.raises(ValueError, match="Tau must be positive"):
        W.exponential(4, tau=-1.0)
    with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
        W.exponential(4, center=1.0)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        W.kaiser(4, beta=-0.5)
    with pytest.raises(ValueError, match="Coefficients cannot be empty"):
        W.general_cosine(4, a=[])
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        W.general_cosine(4, a=3.0)
    with pytest.raises(TypeError, match="'M' must be int"):
        W.hann(4.0)
    with pytest.raises(TypeError):
        W.hann(4, True)          # sym is keyword-only


def test_top_level_windows_are_the_periodic_windows():
    for top, win, kw in [(tl.hann_window, W.hann, {}), (tl.hamming_window, W.hamming, {}),
                         (tl.blackman_window, W.blackman, {}), (tl.bartlett_window, W.bartlett, {}),
                         (tl.kaiser_window, W.kaiser, {"beta": 5.0})]:
        for M in (1, 4, 9):
            for periodic in (True, False):
                args = (M, periodic, kw["beta"]) if kw else (M, periodic)
                np.testing.assert_allclose(top(*args, dtype=tl.float64).numpy(),
                                           win(M, sym=not periodic, dtype=tl.float64, **kw).numpy(),
                                           rtol=1e-14, atol=1e-15)
