"""torchlite's FFT kernel (torchlite/_core/fft.pyx: c2c, r2c, c2r and the plan cache) against
numpy.fft: every size class the planner has (mixed radix 8/4/2/3/5 and generic odd primes,
Bluestein, four-step splits), batched rows along every dim, strided, reversed, expanded and
empty inputs, truncation and zero-padding, both precisions, every ISA level, thread counts,
and the argument checks."""
import numpy as np
import pytest

import torchlite
from torchlite._core import fft as F
from torchlite._core import parallel
from torchlite._core.array import from_numpy, reinterpret

try:
    from hypothesis import given, settings, strategies as st
except ImportError:                          # the [test] extra has it; the sweep needs it
    given = None

TOL = {np.float32: 1e-4, np.float64: 1e-10}
CPLX = {np.float32: np.complex64, np.float64: np.complex128}

SIZES = [1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 16, 17, 30, 64, 97, 100, 127, 128, 210, 243, 256, 509,
         1000, 1024, 1031, 2 ** 12, 3 ** 7, 10007, 2 * 10007]


# ---- helpers ------------------------------------------------------------------------------
def cdata(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(CPLX[dtype])


def as_pairs(z):
    """A complex NumPy array as a torchlite Array with a trailing (real, imag) dim."""
    real = np.float32 if z.dtype == np.complex64 else np.float64
    return from_numpy(np.ascontiguousarray(z).view(real).reshape(z.shape + (2,)))


def as_complex(a):
    a = np.asarray(a)
    return a[..., 0] + 1j * a[..., 1]


def close(got, want, dtype):
    """Every entry within TOL of the largest magnitude of the expected result."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.size == 0:
        return
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got - want)))
    assert err <= TOL[dtype] * scale, f"error {err:.3g} vs magnitude {scale:.3g}"


def ref_c2c(z, dim, n, inverse, scale):
    f = np.fft.ifft if inverse else np.fft.fft
    out = f(z.astype(np.complex128), n=n, axis=dim)
    return out * (n if inverse else 1) * scale


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


# ---- every size, batched (tiles) and single rows (four-step where n >= 256) ----------------
@pytest.mark.parametrize("n", SIZES)
def test_c2c_sizes(n, dtype, rng):
    for rows in (1, 3, 17):
        z = cdata(rng, (rows, n), dtype)
        x = as_pairs(z)
        close(as_complex(F.c2c(x, 1, n, False, 1.0)), ref_c2c(z, 1, n, False, 1.0), dtype)
        close(as_complex(F.c2c(x, 1, n, True, 1.0 / n)), np.fft.ifft(z.astype(complex), axis=1),
              dtype)


@pytest.mark.parametrize("n", SIZES)
def test_r2c_sizes(n, dtype, rng):
    for rows in (1, 5, 17):
        r = rng.standard_normal((rows, n)).astype(dtype)
        close(as_complex(F.r2c(from_numpy(r), 1, n, True, 1.0)), np.fft.rfft(r, axis=1), dtype)
        close(as_complex(F.r2c(from_numpy(r), 1, n, False, 1.0)), np.fft.fft(r, axis=1), dtype)


@pytest.mark.parametrize("n", SIZES)
def test_c2r_sizes(n, dtype, rng):
    for rows in (1, 5, 17):
        h = cdata(rng, (rows, n // 2 + 1), dtype)
        close(F.c2r(as_pairs(h), 1, n, 1.0 / n), np.fft.irfft(h, n, axis=1), dtype)


def test_long_transforms(rng):
    """Four-step splits of long smooth lengths and Bluestein over a four-step length, single
    rows and batches of long rows (a row per thread)."""
    for n in (2 ** 16, 3 ** 9, 2 ** 5 * 3 ** 3 * 5 ** 2 * 7, 65537):
        z = cdata(rng, (n,), np.float64)
        close(as_complex(F.c2c(as_pairs(z), 0, n, False, 1.0)), np.fft.fft(z), np.float64)
        r = z.real.copy()
        close(as_complex(F.r2c(from_numpy(r), 0, n, True, 1.0)), np.fft.rfft(r), np.float64)
        h = np.fft.rfft(r)
        close(F.c2r(as_pairs(h), 0, n, 1.0 / n), r, np.float64)
    z = cdata(rng, (12, 4099), np.float32)
    close(as_complex(F.c2c(as_pairs(z), 1, 4099, True, 1.0)), ref_c2c(z, 1, 4099, True, 1.0),
          np.float32)
    z = cdata(rng, (10, 10000), np.float64)
    close(as_complex(F.c2c(as_pairs(z), 1, 10000, False, 1.0)), np.fft.fft(z, axis=1),
          np.float64)
    r = rng.standard_normal((10, 2 * 4099)).astype(np.float32)
    close(as_complex(F.r2c(from_numpy(r), 1, 2 * 4099, False, 1.0)), np.fft.fft(r, axis=1),
          np.float32)


@pytest.mark.parametrize("n", [10000, 2 * 4099, 9999])
def test_long_c2r_truncated_padded_and_strided(n, rng):
    """c2r of long rows (the split stage before a four-step core) from fewer, as many and
    more entries than n // 2 + 1, contiguous and every other entry."""
    for m in (1, 5, 3000, n // 2 + 1, 5001, 40000):
        for rows in (1, 9):
            h = cdata(rng, (rows, m), np.float64)
            want = np.fft.irfft(h, n, axis=1)
            close(F.c2r(as_pairs(h), 1, n, 1.0 / n), want, np.float64)
            stepped = as_pairs(np.repeat(h, 2, axis=1)).slice(1, 0, None, 2)
            close(F.c2r(stepped, 1, n, 1.0 / n), want, np.float64)


def test_long_rows_strided(rng):
    """Long rows read and written entry by entry: a transform dim that is not the last one,
    stepped and reversed rows, through the four-step and Bluestein stages."""
    for n in (8192, 10007):
        z = cdata(rng, (n, 3), np.float32)
        close(as_complex(F.c2c(as_pairs(z), 0, n, False, 1.0)), np.fft.fft(z, axis=0),
              np.float32)
        close(as_complex(F.c2c(as_pairs(z), 0, n + 5, True, 1.0)),
              ref_c2c(z, 0, n + 5, True, 1.0), np.float32)
        r = np.ascontiguousarray(z.real)
        close(as_complex(F.r2c(from_numpy(r), 0, n, True, 1.0)), np.fft.rfft(r, axis=0),
              np.float32)
        close(as_complex(F.r2c(from_numpy(r).slice(0, 1, None, 2), 0, n // 2, False, 1.0)),
              np.fft.fft(r[1::2], n // 2, axis=0), np.float32)
        h = z[: n // 2 + 1]
        close(F.c2r(as_pairs(h), 0, n, 1.0 / n), np.fft.irfft(h, n, axis=0), np.float32)
    r = rng.standard_normal(20000)
    rev = reinterpret(from_numpy(r), from_numpy(r).dtype, (20000,), (-1,), 19999)
    close(as_complex(F.r2c(rev, 0, 20000, True, 1.0)), np.fft.rfft(r[::-1]), np.float64)


def test_plan_kinds():
    f32 = from_numpy(np.zeros(1, np.float32)).dtype
    f64 = from_numpy(np.zeros(1, np.float64)).dtype
    assert F.plan(1024, f32).kind == "direct" and F.plan(1024, f32).split == (32, 32)
    assert F.plan(97 * 101, f64).kind == "direct"          # both primes by a butterfly
    p = F.plan(10007, f32)
    assert p.kind == "bluestein" and p.bluestein_length >= 2 * 10007 - 1
    assert p.split is not None                             # its convolution: four-step
    assert F.plan(100, f64).split is None


# ---- random sizes -------------------------------------------------------------------------
if given is not None:
    @settings(max_examples=120, deadline=None)
    @given(st.integers(1, 600), st.integers(1, 700), st.integers(1, 20),
           st.sampled_from(["c2c", "ic2c", "r2c", "r2c_full", "c2r"]),
           st.sampled_from([np.float32, np.float64]), st.integers(0, 2 ** 32 - 1))
    def test_random_sizes(n, m, rows, op, dtype, seed):
        """Any n against an input of m entries along dim (truncated or zero-padded)."""
        rng = np.random.default_rng(seed)
        if op in ("c2c", "ic2c"):
            z = cdata(rng, (rows, m), dtype)
            inv = op == "ic2c"
            close(as_complex(F.c2c(as_pairs(z), 1, n, inv, 0.5)), ref_c2c(z, 1, n, inv, 0.5),
                  dtype)
        elif op.startswith("r2c"):
            r = rng.standard_normal((rows, m)).astype(dtype)
            full = op == "r2c_full"
            want = (np.fft.fft if full else np.fft.rfft)(r, n, axis=1)
            close(as_complex(F.r2c(from_numpy(r), 1, n, not full, 1.0)), want, dtype)
        else:
            h = cdata(rng, (rows, m), dtype)
            close(F.c2r(as_pairs(h), 1, n, 1.0), np.fft.irfft(h, n, axis=1) * n, dtype)


# ---- layouts ------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_batched_rows_along_each_dim(dim, dtype, rng):
    shape = (6, 9, 20)
    z = cdata(rng, shape, dtype)
    n = shape[dim]
    close(as_complex(F.c2c(as_pairs(z), dim, n, False, 1.0)), np.fft.fft(z, axis=dim), dtype)
    close(as_complex(F.c2c(as_pairs(z), dim - 3, n + 3, True, 1.0)),
          ref_c2c(z, dim, n + 3, True, 1.0), dtype)
    r = z.real.copy()
    close(as_complex(F.r2c(from_numpy(r), dim, n, True, 1.0)), np.fft.rfft(r, axis=dim), dtype)
    close(as_complex(F.r2c(from_numpy(r), dim, 2 * n + 1, False, 1.0)),
          np.fft.fft(r, 2 * n + 1, axis=dim), dtype)
    close(F.c2r(as_pairs(z), dim, 2 * n - 2 if n > 1 else 1, 1.0),
          np.fft.irfft(z, 2 * n - 2 if n > 1 else 1, axis=dim) * (2 * n - 2 if n > 1 else 1),
          dtype)


def test_non_contiguous_inputs(dtype, rng):
    z = cdata(rng, (40, 30), dtype)
    pairs = np.ascontiguousarray(z).view(dtype).reshape(40, 30, 2)
    base = from_numpy(pairs)
    # transposed: the transform dim is the outer one in memory
    t = base.permute((1, 0, 2))
    close(as_complex(F.c2c(t, 1, 40, False, 1.0)), np.fft.fft(z.T, axis=1), dtype)
    # sliced with steps along both dims
    s = base.slice(0, 1, None, 3).slice(1, 2, None, 2)
    zs = z[1::3, 2::2]
    close(as_complex(F.c2c(s, 0, zs.shape[0], False, 1.0)), np.fft.fft(zs, axis=0), dtype)
    close(as_complex(F.c2c(s, 1, 7, True, 1.0)), ref_c2c(zs, 1, 7, True, 1.0), dtype)
    close(F.c2r(s, 1, 11, 1.0), np.fft.irfft(zs, 11, axis=1) * 11, dtype)
    # real data: transposed and stepped
    r = rng.standard_normal((50, 24)).astype(dtype)
    rt = from_numpy(r).permute((1, 0))
    close(as_complex(F.r2c(rt, 1, 50, True, 1.0)), np.fft.rfft(r.T, axis=1), dtype)
    rs = from_numpy(r).slice(0, 0, None, 2)
    close(as_complex(F.r2c(rs, 0, 25, False, 1.0)), np.fft.fft(r[::2], axis=0), dtype)
    close(as_complex(F.r2c(rs, 0, 26, True, 1.0)), np.fft.rfft(r[::2], 26, axis=0), dtype)


def test_negative_and_zero_strides(dtype, rng):
    z = cdata(rng, (5, 64), dtype)
    pairs = np.ascontiguousarray(z).view(dtype).reshape(5, 64, 2)
    base = from_numpy(pairs)
    code = base.dtype
    # reversed along the transform dim and along the batch dim
    rev = reinterpret(base, code, (5, 64, 2), (-128, -2, 1), 4 * 128 + 63 * 2)
    want = z[::-1, ::-1]
    close(as_complex(rev), want, dtype)
    close(as_complex(F.c2c(rev, 1, 64, False, 1.0)), np.fft.fft(want, axis=1), dtype)
    close(as_complex(F.c2c(rev, 0, 5, False, 1.0)), np.fft.fft(want, axis=0), dtype)
    r = rng.standard_normal(300).astype(dtype)
    rrev = reinterpret(from_numpy(r), code, (300,), (-1,), 299)
    close(as_complex(F.r2c(rrev, 0, 300, True, 1.0)), np.fft.rfft(r[::-1]), dtype)
    # a row repeated through a zero batch stride
    row = from_numpy(pairs[0:1])
    ex = row.expand((7, 64, 2))
    close(as_complex(F.c2c(ex, 1, 64, False, 1.0)), np.fft.fft(np.repeat(z[0:1], 7, 0), axis=1),
          dtype)


def test_truncation_and_padding(dtype, rng):
    z = cdata(rng, (3, 100), dtype)
    for n in (1, 37, 99, 100, 101, 256, 1000):
        close(as_complex(F.c2c(as_pairs(z), 1, n, False, 1.0)), np.fft.fft(z, n, axis=1), dtype)
        r = z.real.copy()
        close(as_complex(F.r2c(from_numpy(r), 1, n, True, 1.0)), np.fft.rfft(r, n, axis=1),
              dtype)
    h = cdata(rng, (3, 33), dtype)                     # 2 * (m - 1) = 64
    for n in (1, 2, 9, 40, 63, 64, 65, 66, 100, 257):
        close(F.c2r(as_pairs(h), 1, n, 1.0 / n), np.fft.irfft(h, n, axis=1), dtype)


def test_c2r_ignores_imaginary_parts_of_the_real_entries(rng):
    h = cdata(rng, (17,), np.float64)
    out = np.asarray(F.c2r(as_pairs(h), 0, 32, 1.0))
    h2 = h.copy()
    h2[0] = h2[0].real
    h2[16] = h2[16].real
    np.testing.assert_array_equal(out, np.asarray(F.c2r(as_pairs(h2), 0, 32, 1.0)))
    close(out, np.fft.irfft(h, 32) * 32, np.float64)


def test_scale_and_inverse_roundtrip(dtype, rng):
    for n in (60, 1024, 1031):
        z = cdata(rng, (4, n), dtype)
        fz = F.c2c(as_pairs(z), 1, n, False, 1.0 / np.sqrt(n))
        back = F.c2c(fz, 1, n, True, 1.0 / np.sqrt(n))
        close(as_complex(back), z, dtype)
        r = z.real.astype(dtype)
        close(F.c2r(F.r2c(from_numpy(r), 1, n, True, 2.0), 1, n, 0.5 / n), r, dtype)


def test_empty(dtype):
    z = np.zeros((0, 8, 2), dtype)
    out = F.c2c(from_numpy(z), 1, 8, False, 1.0)
    assert out.shape == (0, 8, 2)
    assert F.r2c(from_numpy(np.zeros((4, 0), dtype)), 0, 6, True, 1.0).shape == (4, 0, 2)
    assert F.c2r(from_numpy(np.zeros((0, 5, 2), dtype)), 1, 8, 1.0).shape == (0, 8)
    # nothing along the transform dim: n zeros in, zeros out
    out = F.c2c(from_numpy(np.zeros((3, 0, 2), dtype)), 1, 5, False, 1.0)
    np.testing.assert_array_equal(np.asarray(out), np.zeros((3, 5, 2), dtype))
    out = F.c2r(from_numpy(np.zeros((0, 2), dtype)), 0, 4, 1.0)
    np.testing.assert_array_equal(np.asarray(out), np.zeros(4, dtype))
    # a long transform of an empty batch is not planned
    assert F.c2c(from_numpy(np.zeros((0, 1, 2), dtype)), 1, 2 ** 39, False, 1.0).shape == \
        (0, 2 ** 39, 2)


# ---- arguments ----------------------------------------------------------------------------
def test_bad_arguments():
    c = from_numpy(np.zeros((4, 2), np.float32))
    r = from_numpy(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="c2c"):
        F.c2c(from_numpy(np.zeros((4, 2), np.int64)), 0, 4, False, 1.0)
    with pytest.raises(TypeError, match="r2c"):
        F.r2c(from_numpy(np.zeros(4, np.float16)), 0, 4, True, 1.0)
    with pytest.raises(ValueError, match="last dim"):
        F.c2c(from_numpy(np.zeros((4, 3), np.float32)), 0, 4, False, 1.0)
    with pytest.raises(ValueError, match="last dim"):
        F.c2r(r, 0, 4, 1.0)
    with pytest.raises(ValueError, match="stride 1"):
        F.c2c(from_numpy(np.zeros((2, 4), np.float32)).permute((1, 0)), 0, 4, False, 1.0)
    for bad_n in (0, -3):
        for call in (lambda: F.c2c(c, 0, bad_n, False, 1.0), lambda: F.r2c(r, 0, bad_n, True, 1.0),
                     lambda: F.c2r(c, 0, bad_n, 1.0)):
            with pytest.raises(ValueError, match=rf"Invalid number of data points \({bad_n}\)"):
                call()
    with pytest.raises(ValueError, match="2\\*\\*40"):
        F.c2c(c, 0, 2 ** 40 + 1, False, 1.0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.c2c(c, 1, 4, False, 1.0)                 # the (real, imag) dim is not a dim here
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.r2c(r, 1, 4, True, 1.0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.c2r(c, -2, 4, 1.0)
    with pytest.raises(TypeError):
        F.c2c(np.zeros((4, 2)), 0, 4, False, 1.0)


# ---- determinism and kernels ----------------------------------------------------------------
def test_results_do_not_depend_on_the_thread_count(rng):
    z1 = cdata(rng, (2 ** 16,), np.float32)
    z2 = cdata(rng, (10007,), np.float64)
    z3 = cdata(rng, (301, 100), np.float32)
    r1 = rng.standard_normal(2 ** 15).astype(np.float32)
    z4 = cdata(rng, (16, 4100), np.float64)
    z5 = cdata(rng, (9, 10000), np.float32)
    cases = [
        (lambda: F.c2c(as_pairs(z1), 0, 2 ** 16, False, 1.0)),           # four-step blocks
        (lambda: F.c2c(as_pairs(z2), 0, 10007, True, 1.0)),              # Bluestein, blocks
        (lambda: F.c2c(as_pairs(z3), 1, 100, False, 1.0)),               # tiles of rows
        (lambda: F.r2c(from_numpy(r1), 0, 2 ** 15, False, 1.0)),         # r2c merge
        (lambda: F.c2r(as_pairs(z4), 1, 2 * 4099, 1.0)),                 # rows in parallel
        (lambda: F.c2c(as_pairs(z5), 1, 10000, False, 1.0)),             # rows in parallel
    ]
    threads = torchlite.get_num_threads()
    adaptive = parallel.set_adaptive_threads(False)
    try:
        results = {}
        for nt in (1, 2, 3):
            torchlite.set_num_threads(nt)
            results[nt] = [np.asarray(case()).copy() for case in cases]
        for nt in (2, 3):
            for a, b in zip(results[1], results[nt]):
                np.testing.assert_array_equal(a, b)
    finally:
        parallel.set_adaptive_threads(adaptive)
        torchlite.set_num_threads(threads)


@pytest.mark.parametrize("level", [0, 3, 4])
def test_every_isa_level(level, rng):
    """Each SIMD copy of the kernels (butterflies, transposes) on every way rows go in and
    out: transposed blocks with a partial tile, rows side by side, entry by entry."""
    previous = F.isa_level()
    try:
        F.set_isa_level(level)
        for dtype in (np.float32, np.float64):
            z = cdata(rng, (37, 360), dtype)
            close(as_complex(F.c2c(as_pairs(z), 1, 360, True, 1.0)),
                  ref_c2c(z, 1, 360, True, 1.0), dtype)
            close(as_complex(F.c2c(as_pairs(z), 0, 37, False, 1.0)), np.fft.fft(z, axis=0), dtype)
            stepped = as_pairs(z).slice(1, 0, None, 3)
            close(as_complex(F.c2c(stepped, 1, 120, False, 1.0)), np.fft.fft(z[:, ::3], axis=1),
                  dtype)
            r = z.real.copy()
            close(as_complex(F.r2c(from_numpy(r), 1, 360, True, 1.0)), np.fft.rfft(r, axis=1),
                  dtype)
            close(as_complex(F.r2c(from_numpy(r), 1, 359, False, 1.0)),
                  np.fft.fft(r, 359, axis=1), dtype)
            close(as_complex(F.r2c(from_numpy(r), 0, 37, True, 1.0)), np.fft.rfft(r, axis=0),
                  dtype)
            for n in (512, 511, 718):
                close(F.c2r(as_pairs(z), 1, n, 1.0), np.fft.irfft(z, n, axis=1) * n, dtype)
            close(F.c2r(as_pairs(z), 0, 72, 1.0), np.fft.irfft(z, 72, axis=0) * 72, dtype)
            for n in (3 * 2 ** 13, 10007):
                y = cdata(rng, (n,), dtype)
                close(as_complex(F.c2c(as_pairs(y), 0, n, False, 1.0)), np.fft.fft(y), dtype)
                close(as_complex(F.r2c(from_numpy(y.real.copy()), 0, n, True, 1.0)),
                      np.fft.rfft(y.real), dtype)
    finally:
        F.set_isa_level(previous)


def test_plan_cache():
    previous = F.set_plan_cache_max_size(2)
    try:
        F.clear_plan_cache()
        info = F.plan_cache_info()
        assert info["size"] == 0 and info["bytes"] == 0 and info["max_size"] == 2
        x = from_numpy(np.ones((3, 2), np.float64))
        F.c2c(x, 0, 3, False, 1.0)
        F.c2c(x, 0, 3, True, 1.0)
        info = F.plan_cache_info()
        assert info["keys"] == [(3, "float64")] and info["hits"] >= 1 and info["bytes"] > 0
        F.r2c(from_numpy(np.ones(10, np.float32)), 0, 10, True, 1.0)       # plans n = 5
        F.c2c(x, 0, 7, False, 1.0)
        assert F.plan_cache_info()["keys"] == [(5, "float32"), (7, "float64")]
        F.set_plan_cache_max_size(0)
        assert F.plan_cache_info()["size"] == 0
        out = F.c2c(x, 0, 4, False, 1.0)                                   # runs uncached
        np.testing.assert_allclose(as_complex(out), np.fft.fft(np.full(3, 1 + 1j), 4))
        with pytest.raises(ValueError):
            F.set_plan_cache_max_size(-1)
    finally:
        F.set_plan_cache_max_size(previous)
        F.clear_plan_cache()
