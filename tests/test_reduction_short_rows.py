"""Row max/min/argmax/argmin and softmax/log_softmax over rows of every length around the
fixed-lane paths' widths (16, 32, 64, and 128 for rows of 81 to 128) and the chunking below
256 (kernels/reduce_body.h's TL_BEST_SHORT, TL_LANES128 and TL_SOFTMAX_SHORT), with NaN, -inf
and +inf in rows; NumPy is the oracle."""
import numpy as np
import pytest

import torchlite as tl

LENGTHS = [1, 2, 7, 15, 16, 17, 31, 32, 33, 40, 63, 64, 65, 79, 80, 81, 96, 100, 113, 127, 128, 129,
           255, 256, 257, 300]


def rows(n, dtype, seed):
    a = np.random.default_rng(seed).standard_normal((7, n)).astype(dtype) * 4
    a[1, n // 2] = np.nan                 # a NaN anywhere: the row's max/min is NaN
    a[2, :] = -np.inf                     # a row of -inf
    a[3, -1] = np.inf                     # +inf last
    a[4, : n // 2] = -np.inf              # half masked, as a causal attention row
    a[5, 0] = np.nan                      # NaN first
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_max_min_and_their_indices(n, dtype):
    a = rows(n, dtype, n)
    t = tl.from_numpy(a)
    np.testing.assert_array_equal(t.amax(-1).numpy(), a.max(-1))
    np.testing.assert_array_equal(t.amin(-1).numpy(), a.min(-1))
    np.testing.assert_array_equal(t.abs().amax(-1).numpy(), np.abs(a).max(-1))
    np.testing.assert_array_equal(t.argmax(-1).numpy(), a.argmax(-1))     # the first NaN, as
    np.testing.assert_array_equal(t.argmin(-1).numpy(), a.argmin(-1))     # NumPy and PyTorch


@pytest.mark.parametrize("n", LENGTHS)
def test_integer_rows(n):
    a = np.random.default_rng(n).integers(-1000, 1000, (5, n))
    t = tl.from_numpy(a)
    np.testing.assert_array_equal(t.amax(-1).numpy(), a.max(-1))
    np.testing.assert_array_equal(t.argmin(-1).numpy(), a.argmin(-1))


def _softmax(a, log):
    with np.errstate(invalid="ignore", over="ignore"):
        m = a.max(-1, keepdims=True)
        e = np.exp(a - m)
        s = e.sum(-1, keepdims=True)
        return (a - m) - np.log(s) if log else e / s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows(n, dtype, log):
    a = rows(n, dtype, 100 + n)
    got = (tl.log_softmax if log else tl.softmax)(tl.from_numpy(a), -1).numpy()
    _assert_like(got, _softmax(a.astype(np.float64), log), dtype)


def _assert_like(got, want, dtype):
    """The same NaNs and infinities as NumPy's float64 result, the finite values close."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(np.isinf(got[ok]), np.isinf(want[ok]))
    fin = ok & np.isfinite(want)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[fin], want[fin], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nrows", [1, 15, 16, 17, 33, 100, 1000])
@pytest.mark.parametrize("n", [1, 5, 16, 17, 40, 64, 81, 100, 128])
@pytest.mark.parametrize("threads", [1, 2])
def test_log_softmax_of_short_rows_in_groups(nrows, n, dtype, threads):
    """A log_softmax of rows of at most 64, or of 81 to 128, takes its logs for a group of 16
    rows at once: row
    counts around the group (and each thread's share of the rows) and special rows at group
    edges and inside the last, partial group."""
    a = np.random.default_rng(nrows * 100 + n).standard_normal((nrows, n)).astype(dtype) * 3
    for r, fill in ((15, np.nan), (16, -np.inf), (nrows - 1, np.inf), (nrows // 2, -np.inf)):
        if 0 <= r < nrows:
            a[r, r % n] = fill
    if nrows > 17:
        a[17, :] = -np.inf                # a whole row masked
    old = tl.get_num_threads()
    tl.set_num_threads(threads)
    try:
        got = tl.log_softmax(tl.from_numpy(a), -1).numpy()
    finally:
        tl.set_num_threads(old)
    _assert_like(got, _softmax(a.astype(np.float64), True), dtype)
