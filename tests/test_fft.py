"""torchlite.fft and stft/istft: values against numpy.fft (and torch.fft where NumPy has no
such function), gradients by gradcheck/gradgradcheck (finite differences in float64) and
against PyTorch, argument rules and errors.  The kernel itself (sizes, strides, threads) is
tested in test_fft_kernel.py."""
import numpy as np
import pytest

import torchlite as tl

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
NORMS = (None, "backward", "ortho", "forward")


def rnd(*shape, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def close(t, want, dtype=np.float64):
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    scale = max(1.0, float(np.abs(want).max()) if np.size(want) else 1.0)
    np.testing.assert_allclose(t.numpy(), want, rtol=tol, atol=tol * scale)


# ---- one dim -------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 1, 5, 8, 13, 16])
def test_1d_against_numpy(n, norm):
    x, z = rnd(3, 10), rnd(3, 10, complex_=True, seed=1)
    tx, tz = tl.tensor(x), tl.tensor(z)
    close(tl.fft.fft(tx, n, norm=norm), np.fft.fft(x, n, norm=norm))
    close(tl.fft.fft(tz, n, norm=norm), np.fft.fft(z, n, norm=norm))
    close(tl.fft.ifft(tz, n, norm=norm), np.fft.ifft(z, n, norm=norm))
    close(tl.fft.rfft(tx, n, norm=norm), np.fft.rfft(x, n, norm=norm))
    close(tl.fft.irfft(tz, n, norm=norm), np.fft.irfft(z, n, norm=norm))
    close(tl.fft.hfft(tz, n, norm=norm), np.fft.hfft(z, n, norm=norm))
    close(tl.fft.ihfft(tx, n, norm=norm), np.fft.ihfft(x, n, norm=norm))


@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_dims_and_layouts(dim):
    z = rnd(4, 6, 5, complex_=True, seed=2)
    t = tl.tensor(z)
    close(tl.fft.fft(t, dim=dim), np.fft.fft(z, axis=dim))
    close(tl.fft.fft(t.transpose(0, 2), dim=dim), np.fft.fft(z.transpose(2, 1, 0), axis=dim))
    x = rnd(4, 6, 5, seed=3)
    close(tl.fft.rfft(tl.tensor(x)[:, ::2], dim=dim), np.fft.rfft(x[:, ::2], axis=dim))


def test_dtypes():
    x32 = rnd(2, 8).astype(np.float32)
    r = tl.fft.fft(tl.tensor(x32))
    assert r.dtype is tl.complex64
    close(r, np.fft.fft(x32), np.float32)
    assert tl.fft.rfft(tl.tensor(x32)).dtype is tl.complex64
    assert tl.fft.irfft(tl.fft.rfft(tl.tensor(x32))).dtype is tl.float32
    assert tl.fft.fft(tl.tensor(rnd(4))).dtype is tl.complex128
    ints = tl.arange(6)
    assert tl.fft.fft(ints).dtype is tl.complex64                 # the default float's complex
    close(tl.fft.fft(ints), np.fft.fft(np.arange(6)), np.float32)
    assert tl.fft.ifft(tl.tensor(rnd(4))).dtype is tl.complex128     # real input to ifft
    with pytest.raises(RuntimeError, match="Half"):
        tl.fft.fft(tl.ones(4, dtype=tl.float16))


# ---- n dims -------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS)
def test_nd_against_numpy(norm):
    x, z = rnd(4, 5, 6, seed=4), rnd(4, 5, 6, complex_=True, seed=5)
    tx, tz = tl.tensor(x), tl.tensor(z)
    for s, dim in [(None, None), ((3, 7), None), (None, (0, 2)), ((5, 4), (2, 0)), ((8,), (-2,))]:
        axes = dim if dim is not None else (None if s is None else tuple(range(-len(s), 0)))
        close(tl.fft.fftn(tx, s, dim, norm), np.fft.fftn(x, s, axes, norm))
        close(tl.fft.fftn(tz, s, dim, norm), np.fft.fftn(z, s, axes, norm))
        close(tl.fft.ifftn(tz, s, dim, norm), np.fft.ifftn(z, s, axes, norm))
        close(tl.fft.rfftn(tx, s, dim, norm), np.fft.rfftn(x, s, axes, norm))
        close(tl.fft.irfftn(tz, s, dim, norm), np.fft.irfftn(z, s, axes, norm))
    close(tl.fft.fft2(tz, norm=norm), np.fft.fft2(z, norm=norm))
    close(tl.fft.ifft2(tz, (3, 3), norm=norm), np.fft.ifft2(z, (3, 3), norm=norm))
    close(tl.fft.rfft2(tx, norm=norm), np.fft.rfft2(x, norm=norm))
    close(tl.fft.irfft2(tz, norm=norm), np.fft.irfft2(z, norm=norm))


@needs_torch
@pytest.mark.parametrize("norm", NORMS)
def test_hermitian_nd_against_torch(norm):
    x, z = rnd(4, 5, 6, seed=6), rnd(4, 5, 6, complex_=True, seed=7)
    for fn, arg in (("hfftn", z), ("ihfftn", x), ("hfft2", z), ("ihfft2", x)):
        for s in (None, (3, 8)):
            want = getattr(torch.fft, fn)(torch.tensor(arg), s=s, norm=norm).numpy()
            close(getattr(tl.fft, fn)(tl.tensor(arg), s=s, norm=norm), want)


def test_round_trips():
    x = rnd(3, 17, seed=8)
    t = tl.tensor(x)
    close(tl.fft.irfft(tl.fft.rfft(t), 17), x)
    close(tl.fft.ifft(tl.fft.fft(t)).real, x)
    close(tl.fft.irfftn(tl.fft.rfftn(t), t.shape), x)
    close(tl.fft.hfft(tl.fft.ihfft(t), 17), x)


def test_helpers():
    close(tl.fft.fftfreq(7, 0.5), np.fft.fftfreq(7, 0.5), np.float32)
    close(tl.fft.fftfreq(8), np.fft.fftfreq(8), np.float32)
    assert tl.fft.fftfreq(4).dtype is tl.float32
    assert tl.fft.fftfreq(4, dtype=tl.float64).dtype is tl.float64
    close(tl.fft.rfftfreq(9, 2.0), np.fft.rfftfreq(9, 2.0), np.float32)
    a = np.arange(30).reshape(5, 6)
    np.testing.assert_array_equal(tl.fft.fftshift(tl.tensor(a)).numpy(), np.fft.fftshift(a))
    np.testing.assert_array_equal(tl.fft.ifftshift(tl.tensor(a), 1).numpy(),
                                  np.fft.ifftshift(a, 1))
    np.testing.assert_array_equal(tl.fft.fftshift(tl.tensor(a), (0,)).numpy(),
                                  np.fft.fftshift(a, (0,)))


def test_errors():
    t = tl.ones(4)
    with pytest.raises(RuntimeError, match="Invalid normalization mode"):
        tl.fft.fft(t, norm="xyz")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        tl.fft.fft(t, n=0)
    with pytest.raises(RuntimeError, match="rfft expects a real input"):
        tl.fft.rfft(t * 1j)
    with pytest.raises(IndexError):
        tl.fft.fft(t, dim=3)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        tl.fft.irfft(tl.ones(1, dtype=tl.complex64))
    with pytest.raises(RuntimeError, match="2 values"):
        tl.fft.fftn(t, s=(4, 4))
    with pytest.raises(TypeError):
        tl.fft.fft([1.0, 2.0])


# ---- gradients ---------------------------------------------------------------------------------
X = rnd(2, 5, seed=9)
Z = rnd(2, 5, complex_=True, seed=10)
GRAD_CASES = {
    "fft_real": (lambda x, m: m.fft.fft(x), X),
    "fft_pad": (lambda x, m: m.fft.fft(x, n=7), X),
    "fft_cut_dim0": (lambda z, m: m.fft.fft(z, n=1, dim=0), Z),
    "ifft_ortho": (lambda z, m: m.fft.ifft(z, norm="ortho"), Z),
    "rfft_even": (lambda x, m: m.fft.rfft(x, n=8), X),
    "rfft_odd": (lambda x, m: m.fft.rfft(x), X),
    "irfft": (lambda z, m: m.fft.irfft(z), Z),
    "irfft_odd": (lambda z, m: m.fft.irfft(z, n=9, norm="forward"), Z),
    "irfft_short": (lambda z, m: m.fft.irfft(z, n=4), Z),
    "hfft": (lambda z, m: m.fft.hfft(z, n=7), Z),
    "ihfft": (lambda x, m: m.fft.ihfft(x), X),
    "fft2": (lambda z, m: m.fft.fft2(z), Z),
    "rfft2": (lambda x, m: m.fft.rfft2(x, s=(3, 4)), X),
    "irfft2": (lambda z, m: m.fft.irfft2(z, s=(3, 6)), Z),
    "hfft2": (lambda z, m: m.fft.hfft2(z), Z),
    "ihfft2": (lambda x, m: m.fft.ihfft2(x, norm="forward"), X),
    "fftn_real": (lambda x, m: m.fft.fftn(x, norm="ortho"), X),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradcheck(case):
    f, a = GRAD_CASES[case]
    t = tl.tensor(a, requires_grad=True)
    assert tl.autograd.gradcheck(lambda v: f(v, tl), (t,))
    assert tl.autograd.gradgradcheck(lambda v: f(v, tl), (t,))


@needs_torch
@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(case):
    f, a = GRAD_CASES[case]
    t, tt = tl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = rnd(*f(tt.detach(), torch).shape, seed=11)
    (f(t, tl).abs() * tl.tensor(w)).sum().backward()
    (f(tt, torch).abs() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_grad_fn_names():
    x = tl.tensor(X, requires_grad=True)
    z = tl.tensor(Z, requires_grad=True)
    assert type(tl.fft.rfft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(tl.fft.ifft(z).grad_fn).__name__ == "FftC2CBackward0"
    assert type(tl.fft.irfft(z).grad_fn).__name__ == "FftC2RBackward0"


# ---- stft / istft -------------------------------------------------------------------------------
STFT_CASES = [dict(), dict(hop_length=5, win_length=10), dict(center=False),
              dict(pad_mode="constant", normalized=True), dict(onesided=False),
              dict(pad_mode="replicate"), dict(pad_mode="circular", hop_length=3)]


@needs_torch
@pytest.mark.parametrize("kw", STFT_CASES, ids=str)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_istft_against_torch(kw, batched):
    x = rnd(2, 100, seed=12) if batched else rnd(100, seed=12)
    win = kw.get("win_length", 16)
    a = tl.stft(tl.tensor(x), 16, window=tl.hann_window(win, dtype=tl.float64),
                return_complex=True, **kw)
    b = torch.stft(torch.tensor(x), 16, window=torch.hann_window(win, dtype=torch.float64),
                   return_complex=True, **kw)
    close(a, b.numpy())
    if kw.get("center", True):
        ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
        r = tl.istft(a, 16, window=tl.hann_window(win, dtype=tl.float64), length=100, **ikw)
        rt = torch.istft(b, 16, window=torch.hann_window(win, dtype=torch.float64), length=100,
                         **ikw)
        close(r, rt.numpy())
        close(r, x)                                     # istft(stft(x)) == x


def test_stft_round_trip_and_gradients():
    x = rnd(64, seed=13)
    w = tl.hann_window(16, dtype=tl.float64)
    s = tl.stft(tl.tensor(x), 16, hop_length=4, window=w, return_complex=True)
    assert s.shape == (9, 17)
    close(tl.istft(s, 16, hop_length=4, window=w), x)
    close(tl.istft(s, 16, hop_length=4, window=w, length=70)[:64], x)
    real = tl.stft(tl.tensor(x), 16, hop_length=4, window=w, return_complex=False)
    assert real.shape == (9, 17, 2)
    t = tl.tensor(x[:40], requires_grad=True)
    assert tl.autograd.gradcheck(
        lambda v: tl.stft(v, 8, hop_length=3, window=w[::2], return_complex=True), (t,))
    sd = tl.stft(tl.tensor(x[:40]), 8, hop_length=2, window=w[::2], return_complex=True)
    assert tl.autograd.gradcheck(lambda v: tl.istft(v, 8, hop_length=2, window=w[::2]),
                                 (sd.detach().requires_grad_(),))


def test_stft_errors():
    x = tl.ones(100)
    with pytest.raises(RuntimeError, match="return_complex"):
        tl.stft(x, 16)
    with pytest.raises(RuntimeError, match="win_length"):
        tl.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="window"):
        tl.stft(x, 16, window=tl.ones(8), return_complex=True)
    with pytest.raises(RuntimeError, match="pad_mode"):
        tl.stft(x, 16, pad_mode="nope", return_complex=True)
    s = tl.stft(x, 16, hop_length=16, window=tl.hann_window(16), return_complex=True)
    with pytest.raises(RuntimeError, match="NOLA"):
        tl.istft(s, 16, hop_length=16, window=tl.hann_window(16))
    with pytest.raises(RuntimeError, match="complex"):
        tl.istft(tl.ones(9, 4), 16)
