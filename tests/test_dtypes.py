"""dtypes: promotion and casting tables against PyTorch, conversions between every pair of
dtypes (float16 exhaustively against NumPy, bfloat16 against PyTorch), finfo/iinfo and the
default dtype."""
import pickle

import numpy as np
import pytest

import torchlite as tl
from torchlite import _dtype as D

from helpers import ALL_DTYPES, DTYPE_NAMES, NP_DTYPE, default_dtype, to_numpy, torch_or_skip


def test_dtype_objects():
    assert [d.name for d in ALL_DTYPES] == list(DTYPE_NAMES)
    assert [d.code for d in ALL_DTYPES] == list(range(10))
    assert [d.itemsize for d in ALL_DTYPES] == [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]
    assert [d.is_floating_point for d in ALL_DTYPES] == [False] * 6 + [True] * 4
    assert tl.uint8.is_signed is False and tl.int8.is_signed and tl.float16.is_signed
    assert repr(tl.float32) == "torchlite.float32" and str(tl.int64) == "torchlite.int64"
    assert tl.float is tl.float32 and tl.double is tl.float64 and tl.half is tl.float16
    assert tl.int is tl.int32 and tl.long is tl.int64 and tl.short is tl.int16
    for d in ALL_DTYPES:
        assert pickle.loads(pickle.dumps(d)) is d
    assert tl.float32.to_real() is tl.float32 and not tl.float32.is_complex
    assert tl.float32.to_complex() is tl.complex64 and tl.float64.to_complex() is tl.complex128
    assert tl.complex64.to_real() is tl.float32 and tl.complex128.to_real() is tl.float64
    assert tl.cfloat is tl.complex64 and tl.cdouble is tl.complex128
    assert tl.complex64.is_complex and not tl.complex64.is_floating_point
    assert (tl.complex64.itemsize, tl.complex128.itemsize) == (8, 16)
    with pytest.raises(RuntimeError):
        tl.int64.to_complex()


def test_to_dtype_accepts_numpy_and_python_types():
    assert D.to_dtype(np.float32) is tl.float32
    assert D.to_dtype(np.dtype("int16")) is tl.int16
    assert D.to_dtype(float) is tl.float64 and D.to_dtype(int) is tl.int64
    assert D.to_dtype(bool) is tl.bool and D.to_dtype(None, tl.int8) is tl.int8
    assert tl.zeros(2, dtype=np.float64).dtype is tl.float64
    assert tl.tensor([1, 2], dtype=float).dtype is tl.float64
    with pytest.raises(TypeError):
        D.to_dtype("not a dtype")
    assert tl.zeros(2, dtype=np.complex64).dtype is tl.complex64
    assert D.to_dtype(complex) is tl.complex128
    with pytest.raises(TypeError):
        tl.zeros(2, dtype=np.dtype("U3"))


def test_promote_types_matches_torch():
    torch = torch_or_skip()
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            want = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
            assert tl.promote_types(a, b).name == str(want)[6:], (a, b)
            assert tl.promote_types(a, b) is tl.promote_types(b, a)


def test_promote_types_rules():
    """The documented rules, checked without torch."""
    assert tl.promote_types(tl.uint8, tl.int8) is tl.int16
    assert tl.promote_types(tl.float16, tl.bfloat16) is tl.float32
    assert tl.promote_types(tl.bool, tl.float16) is tl.float16
    assert tl.promote_types(tl.int64, tl.float16) is tl.float16
    assert tl.promote_types(tl.uint8, tl.int64) is tl.int64
    for d in ALL_DTYPES:
        assert tl.promote_types(d, d) is d and tl.promote_types(tl.bool, d) is d


def test_can_cast_matches_torch():
    torch = torch_or_skip()
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            want = torch.can_cast(getattr(torch, a.name), getattr(torch, b.name))
            assert tl.can_cast(a, b) == want, (a, b)


def _cast_inputs():
    """Values every dtype can hold, plus fractional, negative and large ones."""
    return np.array([0.0, 1.0, -1.0, 2.5, -2.5, 0.49, 127.0, 128.0, -128.0, 255.0, 256.0, 1e4,
                     -3e4, 65504.0, 1e5, 3.4e38 / 2, 1e-8, -0.0, np.nan, np.inf, -np.inf, 1e-40])


def _safe_for(src, dst, x):
    """The values whose cast from src to dst is defined (no float -> int overflow, which is
    undefined in C and differs between PyTorch builds)."""
    if not dst.is_floating_point and src.is_floating_point:
        lo, hi = {"bool": (-np.inf, np.inf), "uint8": (-128, 256), "int8": (-129, 128),
                  "int16": (-32769, 32768), "int32": (-2 ** 31 - 1, 2 ** 31),
                  "int64": (-2 ** 62, 2 ** 62)}[dst.name]
        return (x > lo) & (x < hi) & (np.isfinite(x) | (dst is tl.bool))
    return np.ones(x.shape, bool)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
def test_casts_match_torch(src):
    torch = torch_or_skip()
    x = _cast_inputs()
    x = x[_safe_for(tl.float64, src, x)]
    t_src = torch.tensor(x).to(getattr(torch, src.name))
    l_src = tl.tensor(x).to(src)
    np.testing.assert_array_equal(to_numpy(l_src).astype(np.float64), t_src.double().numpy())
    for dst in ALL_DTYPES:
        vals = t_src.double().numpy()
        ok = _safe_for(src, dst, vals)
        want = t_src.to(getattr(torch, dst.name))[torch.from_numpy(ok)].double().numpy()
        for label, s in (("contiguous", l_src), ("strided", tl.tensor(np.repeat(x, 2)).to(src)[::2]),
                         ("expanded", None)):
            if s is None:
                s = tl.tensor(x[:1]).to(src).expand(len(x))
                got = to_numpy(s.to(dst)).astype(np.float64)
                np.testing.assert_array_equal(got, np.full(len(x), want[0] if ok[0] else got[0]))
                continue
            got = to_numpy(s.to(dst)).astype(np.float64)[ok]
            np.testing.assert_array_equal(got, want, err_msg=f"{src}->{dst} {label}")
            real = ~np.isnan(want)           # (a NaN's sign bit means nothing)
            np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]),
                                          err_msg=f"{src}->{dst} {label}")
        assert l_src.to(dst).dtype is dst


def test_float16_conversions_exhaustive():
    """Every float16 bit pattern to float32, and float32 values (incl. ties, subnormals,
    overflow) to float16, bit for bit as NumPy rounds them."""
    bits = np.arange(65536, dtype=np.uint16)
    halves = bits.view(np.float16)
    from_half = tl.from_numpy(halves).float().numpy()
    nan = np.isnan(halves)
    np.testing.assert_array_equal(from_half[~nan], halves[~nan].astype(np.float32))
    assert np.isnan(from_half[nan]).all()
    # float32 -> float16: all halves, midpoints between neighbours (ties), and nudges
    f = halves[~nan].astype(np.float32)
    f = np.sort(f[np.isfinite(f)])
    mids = ((f[1:].astype(np.float64) + f[:-1]) / 2).astype(np.float32)
    nudged = np.concatenate([np.nextafter(mids, np.float32(np.inf)),
                             np.nextafter(mids, np.float32(-np.inf))])
    rng = np.random.default_rng(0)
    rand = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-9, 6, 200_000)).astype(np.float32)
    x = np.concatenate([f, mids, nudged, rand, np.float32([65519.0, 65520.0, 7e4, np.inf, -np.inf,
                                                           1e-8, -1e-8, 3e-8, 0.0, -0.0])])
    got = tl.from_numpy(x).half().numpy()
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert np.isnan(tl.tensor([np.nan]).half().numpy()).all()
    # float64 -> float16 goes through float32 in torchlite: check a few exactly
    vals = np.array([1.0, -2.5, 65504.0, 6.1e-5, 1e-7])
    np.testing.assert_array_equal(tl.tensor(vals).half().numpy(), vals.astype(np.float16))


def test_bfloat16_conversions_match_torch():
    torch = torch_or_skip()
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100_000) * 10.0 ** rng.integers(-38, 38, 100_000)).astype(np.float32)
    bits = np.arange(0, 65536, 7, dtype=np.uint32) << 16      # exact bfloat16 values
    ties = (bits | 0x8000).view(np.float32)                   # exactly halfway: ties to even
    x = np.concatenate([x, bits.view(np.float32), ties, np.float32([np.inf, -np.inf, 0.0, -0.0,
                                                                     3.4e38, 1e-40])])
    got = tl.from_numpy(x).bfloat16().view(tl.int16).numpy()
    want = torch.from_numpy(x).bfloat16().view(torch.int16).numpy()
    finite = np.isfinite(x) | np.isinf(x)
    np.testing.assert_array_equal(got[finite], want[finite])
    nan_bits = tl.tensor([np.nan]).bfloat16().float().numpy()
    assert np.isnan(nan_bits).all()
    back = tl.from_numpy(x).bfloat16().float().numpy()
    np.testing.assert_array_equal(back[finite], torch.from_numpy(x).bfloat16().float().numpy()[finite])


def test_finfo_iinfo_match_torch():
    torch = torch_or_skip()
    for d in (tl.float16, tl.bfloat16, tl.float32, tl.float64):
        a, b = tl.finfo(d), torch.finfo(getattr(torch, d.name))
        for k in ("bits", "eps", "max", "min", "tiny", "resolution", "smallest_normal"):
            assert getattr(a, k) == getattr(b, k), (d, k)
    for d in (tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64):
        a, b = tl.iinfo(d), torch.iinfo(getattr(torch, d.name))
        assert (a.bits, a.min, a.max) == (b.bits, b.min, b.max), d
    assert tl.finfo().bits == 32
    with pytest.raises(TypeError):
        tl.finfo(tl.int32)
    with pytest.raises(TypeError):
        tl.iinfo(tl.float32)


def test_finfo_values_are_the_dtype_limits():
    """Without torch: max is representable and the next power of two overflows."""
    for d in (tl.float16, tl.float32, tl.float64):
        fi = tl.finfo(d)
        npdt = NP_DTYPE[d.name]
        assert fi.max == float(np.finfo(npdt).max) and fi.eps == float(np.finfo(npdt).eps)
        assert fi.tiny == float(np.finfo(npdt).tiny)
        assert tl.tensor([fi.max], dtype=tl.float64).to(d).item() == fi.max
    for d in (tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64):
        ii = tl.iinfo(d)
        assert (ii.min, ii.max) == (np.iinfo(NP_DTYPE[d.name]).min, np.iinfo(NP_DTYPE[d.name]).max)


def test_default_dtype():
    assert tl.get_default_dtype() is tl.float32
    with default_dtype(tl.float64):
        assert tl.get_default_dtype() is tl.float64
        assert tl.tensor([1.5]).dtype is tl.float64
        assert tl.zeros(2).dtype is tl.float64 and tl.ones(2).dtype is tl.float64
        assert tl.arange(0.0, 1.0, 0.5).dtype is tl.float64 and tl.arange(3).dtype is tl.int64
        assert tl.full((2,), 1.5).dtype is tl.float64 and tl.linspace(0, 1, 3).dtype is tl.float64
        assert tl.tensor([1, 2]).sqrt().dtype is tl.float64
        assert repr(tl.tensor([1.5])) == "tensor([1.5000])"
        assert repr(tl.tensor([1.5], dtype=tl.float32)) == "tensor([1.5000], dtype=torchlite.float32)"
    with default_dtype(tl.float16):
        assert tl.tensor([1.5]).dtype is tl.float16 and (tl.tensor([1]) / 2).dtype is tl.float16
    with default_dtype(tl.bfloat16):
        assert tl.empty(1).dtype is tl.bfloat16
    assert tl.get_default_dtype() is tl.float32
    for bad in (tl.int32, tl.bool, "float64", None):
        with pytest.raises(TypeError):
            tl.set_default_dtype(bad)
    assert tl.get_default_dtype() is tl.float32
