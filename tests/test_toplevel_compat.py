"""The top-level names PyTorch programs reach for beyond the op families: math's constants,
build facts, torch.cond / torch.while_loop, set_default_tensor_type, the deprecated norm and
autocast spellings, torch.binomial, torch.convolution and embedding_renorm_.  Oracles: math,
NumPy, the functions these stand for, finite differences, and PyTorch where installed."""
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F

from helpers import torch_or_skip


def test_constants_and_build_facts():
    assert (tl.e, tl.pi, tl.inf) == (math.e, math.pi, math.inf) and math.isnan(tl.nan)
    assert tl.newaxis is None and tl.ones(3)[tl.newaxis].shape == (1, 3)
    assert tl.has_lapack and tl.has_spectral and tl.has_mkl is False
    assert isinstance(tl.has_openmp, bool) and tl.compiled_with_cxx11_abi()
    assert tl.get_device_module("cpu") is tl.cpu and tl.get_device_module(tl.device("cuda:0")) is tl.cuda
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        tl.get_device_module("mps")


def test_cond_and_while_loop():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = tl.cond(x.sum() > 2, lambda a: a * 3, lambda a: a - 1, (x,))
    y.sum().backward()
    assert y.tolist() == [3.0, 6.0] and x.grad.tolist() == [3.0, 3.0]
    assert tl.cond(False, lambda a: a * 3, lambda a: a - 1, [x]).tolist() == [0.0, 1.0]
    i, total = tl.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                             (tl.tensor(0), tl.tensor(0)))
    assert (i.item(), total.item()) == (5, 10)
    with pytest.raises(RuntimeError, match="one element"):
        tl.cond(tl.ones(2), lambda: 1, lambda: 2)
    with pytest.raises(RuntimeError, match="returned 1 values for 2"):
        tl.while_loop(lambda a, b: a < 1, lambda a, b: a + 1, (tl.tensor(0), tl.tensor(0)))


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            tl.set_default_tensor_type("torch.DoubleTensor")
        assert tl.ones(1).dtype is tl.float64
        with pytest.warns(UserWarning):
            tl.set_default_tensor_type(tl.FloatTensor)
        assert tl.ones(1).dtype is tl.float32
        with pytest.raises(TypeError, match="floating-point"), pytest.warns(UserWarning):
            tl.set_default_tensor_type(tl.LongTensor)
    finally:
        tl.set_default_dtype(tl.float32)


def test_deprecated_norms():
    g = np.random.default_rng(0)
    a = g.standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="deprecated"):
        fro = tl.frobenius_norm(tl.tensor(a), (1, 2))
    np.testing.assert_allclose(fro.numpy(), np.sqrt((a ** 2).sum((1, 2))), rtol=1e-12)
    with pytest.warns(UserWarning, match="deprecated"):
        nuc = tl.nuclear_norm(tl.tensor(a[0]), True)
    assert nuc.shape == (1, 1)
    np.testing.assert_allclose(nuc.item(), np.linalg.svd(a[0], compute_uv=False).sum(), rtol=1e-12)


def test_autocast_spellings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert tl.get_autocast_cpu_dtype() is tl.bfloat16 and tl.get_autocast_gpu_dtype() is tl.float16
        assert tl.is_autocast_cpu_enabled() is False
        tl.set_autocast_cpu_dtype(tl.float16)
        assert tl.get_autocast_dtype("cpu") is tl.float16
        tl.set_autocast_cpu_dtype(tl.bfloat16)
    a = tl.ones(4, 4)
    tl.set_autocast_enabled("cpu", True)
    try:
        assert tl.is_autocast_enabled("cpu") and (a @ a).dtype is tl.bfloat16
    finally:
        tl.set_autocast_enabled("cpu", False)
    assert (a @ a).dtype is tl.float32
    assert tl.autocast_increment_nesting() == 1 and tl.autocast_decrement_nesting() == 0
    assert tl.GradScaler is tl.amp.GradScaler and tl.OutOfMemoryError is tl.cuda.OutOfMemoryError
    tl.set_anomaly_enabled(True, check_nan=False)
    try:
        assert tl.is_anomaly_enabled() and not tl.is_anomaly_check_nan_enabled()
    finally:
        tl.set_anomaly_enabled(False)
    assert tl.is_anomaly_check_nan_enabled()


def test_binomial():
    g = tl.Generator().manual_seed(0)
    n, p = tl.full((200_000,), 30.0, dtype=tl.float64), tl.full((200_000,), 0.3, dtype=tl.float64)
    s = tl.binomial(n, p, generator=g).numpy()
    assert np.all(s == np.round(s)) and s.min() >= 0 and s.max() <= 30
    np.testing.assert_allclose(s.mean(), 9.0, atol=0.03)
    np.testing.assert_allclose(s.var(), 30 * 0.3 * 0.7, rtol=0.02)
    again = tl.binomial(n[:5], p[:5], generator=tl.Generator().manual_seed(0))
    np.testing.assert_array_equal(again.numpy(), s[:5])
    assert tl.binomial(tl.tensor([4.0, 4.0]), tl.tensor([0.0, 1.0])).tolist() == [0.0, 4.0]


def test_binomial_edges_and_streams():
    """Bad parameters give NaN (a count that is not a finite number >= 0, a probability outside
    [0, 1]); huge counts stay exact in expectation; each element draws from its own block of
    the stream, so a draw does not depend on the elements around it; float32 in, float32 out."""
    nan, inf = float("nan"), float("inf")
    got = tl.binomial(tl.tensor([4.0, 4.0, -1.0, 3.0, 3.0, inf, nan, nan, inf]),
                      tl.tensor([0.0, 1.0, 0.5, 1.5, -0.5, 1.0, 0.0, 0.5, 0.5])).tolist()
    assert got[:7] == [0.0, 4.0, 0.0, 3.0, 0.0, inf, 0.0] and all(np.isnan(got[7:]))   # PyTorch's rules
    for n in (1e12, 1e15, 1e30):          # BTRS's bound stays accurate; beyond 2**53 the normal limit
        big = tl.binomial(tl.full((20_000,), n, dtype=tl.float64), tl.full((20_000,), 0.4, dtype=tl.float64))
        z = (big.numpy() - 0.4 * n) / np.sqrt(n * 0.4 * 0.6)
        assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05, n
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        tl.binomial(tl.tensor([3]), tl.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="Half"):
        tl.binomial(tl.tensor([3.0]).half(), tl.tensor([0.5]).half())
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        tl.binomial(tl.tensor([3.0]), tl.tensor([0.5], dtype=tl.float64))
    rare = tl.binomial(tl.full((20_000,), 1e15, dtype=tl.float64), tl.full((20_000,), 2e-15, dtype=tl.float64))
    np.testing.assert_allclose(rare.numpy().mean(), 2.0, atol=0.05)
    n, p = tl.full((10,), 30.0), tl.linspace(0.05, 0.95, 10)
    a = tl.binomial(n, p, generator=tl.Generator().manual_seed(7))
    b = tl.binomial(n[:4], p[:4], generator=tl.Generator().manual_seed(7))
    assert a.dtype is tl.float32 and a[:4].tolist() == b.tolist()
    w = tl.tensor([0.5], requires_grad=True)
    out = tl.binomial(tl.tensor([3.0]), w)
    with pytest.raises(RuntimeError):
        out.sum().backward()


def test_convolution_and_embedding_renorm():
    g = np.random.default_rng(1)
    x = tl.tensor(g.standard_normal((1, 2, 6, 6)))
    w = tl.tensor(g.standard_normal((3, 2, 3, 3)))
    np.testing.assert_allclose(tl.convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1).numpy(),
                               F.conv2d(x, w, stride=2, padding=1).numpy(), rtol=1e-12)
    wt = tl.tensor(g.standard_normal((2, 3, 3, 3)))
    np.testing.assert_allclose(tl.convolution(x, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1).numpy(),
                               F.conv_transpose2d(x, wt, stride=2, padding=1, output_padding=1).numpy(),
                               rtol=1e-12)
    emb = tl.tensor(g.standard_normal((5, 3)) * 3)
    before = emb.numpy().copy()
    assert tl.embedding_renorm_(emb, tl.tensor([0, 2, 2]), 1.0, 2.0) is emb
    norms = np.linalg.norm(emb.numpy(), axis=1)
    np.testing.assert_allclose(norms[[0, 2]], 1.0, rtol=1e-6)
    np.testing.assert_array_equal(emb.numpy()[[1, 3, 4]], before[[1, 3, 4]])
    torch = torch_or_skip()
    tw = torch.tensor(before)
    torch.embedding_renorm_(tw, torch.tensor([0, 2, 2]), 1.0, 2.0)
    np.testing.assert_allclose(emb.numpy(), tw.numpy(), rtol=1e-12)
