"""Random numbers (torchlite/_ops/random.py over _core/random.pyx, kernels/philox.h and
random*.h): the Philox generator against its published known answers, determinism (seeds,
threads, SIMD levels, layouts), the stream layout, statistics with fixed seeds and loose
bounds, dtypes and shapes, in-place fills of strided views, and argument errors."""
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
from torchlite._core import random as _R

FLOATS = (tl.float16, tl.bfloat16, tl.float32, tl.float64)
INTS = (tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64)


def gen(seed=0):
    return tl.Generator().manual_seed(seed)


def np_of(t):
    """A float64 or int64 NumPy copy (bfloat16 through float32)."""
    if t.dtype is tl.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def with_threads(n, fn):
    old = tl.get_num_threads()
    tl.set_num_threads(n)
    try:
        return fn()
    finally:
        tl.set_num_threads(old)


def with_isa(level, fn):
    old = _R.isa_level()
    _R.set_isa_level(level)
    try:
        return fn()
    finally:
        _R.set_isa_level(old)


def a_bit_of_everything(seed):
    """One request of each kind, in sizes that end in partial groups."""
    g = gen(seed)
    outs = [tl.rand(1001, generator=g), tl.randn(3, 333, generator=g),
            tl.rand(517, dtype=tl.float64, generator=g), tl.randn(4099, dtype=tl.float64, generator=g),
            tl.randint(-5, 17, (70_001,), generator=g),
            tl.randint(0, 2**31 + 1, (5000,), generator=g),        # rejects about half the draws
            tl.randint(-2**40, 2**45, (999,), generator=g),
            tl.empty(3000, dtype=tl.int64).random_(-2**63, None, generator=g),
            tl.randperm(40_000, generator=g), tl.empty(777).bernoulli_(0.3, generator=g),
            tl.bernoulli(tl.rand(555, generator=g), generator=g),
            tl.empty(600).exponential_(2.0, generator=g), tl.empty(600).cauchy_(generator=g),
            tl.empty(600).log_normal_(generator=g), tl.empty(600).geometric_(0.2, generator=g),
            tl.poisson(tl.rand(300, generator=g) * 30, generator=g),
            tl.multinomial(tl.rand(7, 50, generator=g), 20, generator=g),
            tl.multinomial(tl.rand(7, 50, generator=g), 20, True, generator=g)]
    return [np_of(t) for t in outs]


# ---- the generator itself --------------------------------------------------------------------
# Random123's known answers for Philox4x32-10 (tests/kat_vectors): counter, key, result.
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_philox_known_answers(counter, key, expected):
    assert _R.philox4x32_10(counter, key) == expected


@pytest.mark.parametrize("first,draw", [(0, 0), (2**32 - 5, 0), (2**64 - 16, 7)])
def test_portable_lane_kernel_matches_single_blocks(first, draw):
    key = (0xa4093822, 0x299f31d0)
    w = _R.philox_lanes_portable(first, key, draw)
    for i in range(16):
        b = first + i
        block = _R.philox4x32_10((b & 0xffffffff, b >> 32, draw, 0), key)
        assert tuple(w[k][i] for k in range(4)) == block


def test_randint_full_range_is_the_raw_stream():
    # with range 2^32, element e is word (e mod 64) / 16 of block 16 (e / 64) + e mod 16
    n = 200
    words = tl.randint(0, 2**32, (n,), generator=gen(0x1234_5678_9abc)).numpy()
    seed = 0x1234_5678_9abc
    key = (seed & 0xffffffff, seed >> 32)
    for e in range(n):
        block = 16 * (e // 64) + e % 16
        assert words[e] == _R.philox4x32_10((block, 0, 0, 0), key)[(e % 64) // 16]


def test_bounded_integers_are_lemire_with_redraws_from_the_same_word():
    seed, span, n = 77, 2**31 + 1, 400        # rejects about half of the first draws
    got = tl.randint(10, 10 + span, (n,), generator=gen(seed)).numpy()
    key = (seed & 0xffffffff, seed >> 32)
    reject = (2**32 - span) % span
    redrawn = 0
    for e in range(n):
        block, word, draw = 16 * (e // 64) + e % 16, (e % 64) // 16, 0
        while True:
            m = _R.philox4x32_10((block, 0, draw, 0), key)[word] * span
            if m & 0xffffffff >= reject:
                break
            draw += 1
        redrawn += draw > 0
        assert got[e] == 10 + (m >> 32)
    assert redrawn > n // 4


def test_same_seed_same_numbers_and_fresh_numbers_after():
    a, b = a_bit_of_everything(7), a_bit_of_everything(7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = a_bit_of_everything(8)
    assert not np.array_equal(a[0], c[0])
    g = gen(3)
    first, second = tl.rand(100, generator=g), tl.rand(100, generator=g)
    assert not np.array_equal(first.numpy(), second.numpy())


@pytest.mark.parametrize("n", [1, 2])
def test_thread_count_never_changes_results(n):
    ref = with_threads(1, lambda: a_bit_of_everything(11))
    got = with_threads(n, lambda: a_bit_of_everything(11))
    for x, y in zip(ref, got):
        np.testing.assert_array_equal(x, y)


def test_results_do_not_depend_on_thread_count_for_big_requests(threads):
    big = lambda: [np_of(t) for t in (tl.randn(1 << 18, generator=gen(1)),
                                      tl.randint(0, 10, (1 << 18,), generator=gen(1)),
                                      tl.poisson(tl.full((20_000,), 12.5), generator=gen(1)))]
    ref = with_threads(1, big)
    for x, y in zip(ref, big()):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("level", [0, 3, 4])
def test_every_simd_level_gives_the_same_numbers(level):
    ref = with_isa(0, lambda: a_bit_of_everything(5))
    got = with_isa(level, lambda: a_bit_of_everything(5))
    for x, y in zip(ref, got):
        # integers and uniforms are exact; float32 math may differ by FMA rounding only
        np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-6)
    words = lambda: tl.randint(0, 2**32, (4096,), generator=gen(9)).numpy()
    np.testing.assert_array_equal(with_isa(level, words), with_isa(0, words))


def test_requests_of_whole_groups_continue_the_stream():
    g = gen(4)
    parts = np.concatenate([tl.rand(64, generator=g).numpy(), tl.rand(128, generator=g).numpy()])
    np.testing.assert_array_equal(parts, tl.rand(192, generator=gen(4)).numpy())
    assert g.offset == 3 * 16


def test_offset_advances_by_whole_groups():
    g = gen(0)
    tl.rand(1, generator=g)
    assert g.offset == 16
    tl.rand(65, dtype=tl.float64, generator=g)     # 32 float64 per group: 3 groups
    assert g.offset == 16 + 48
    tl.rand(0, generator=g)
    assert g.offset == 64


# ---- generators and seeding ------------------------------------------------------------------
def test_generator_is_independent_of_the_default_one():
    tl.manual_seed(1)
    a = tl.rand(10).numpy()
    tl.manual_seed(1)
    g = tl.Generator().manual_seed(99)
    tl.rand(1000, generator=g)
    np.testing.assert_array_equal(tl.rand(10).numpy(), a)
    assert tl.initial_seed() == 1 and g.initial_seed() == 99


def test_manual_seed_returns_the_generator_and_accepts_pytorch_seeds():
    assert tl.manual_seed(5) is tl.default_generator
    assert isinstance(tl.default_generator, tl.Generator)
    g = tl.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == tl.device("cpu")
    assert g.manual_seed(-1) is g and g.initial_seed() == 2**64 - 1
    assert g.manual_seed(2.7).initial_seed() == 2
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2**64)
    with pytest.raises(ValueError, match="Overflow"):
        tl.manual_seed(-2**63 - 1)


def test_seed_draws_a_fresh_seed():
    s = tl.seed()
    assert isinstance(s, int) and 0 <= s < 2**64 and tl.initial_seed() == s
    g = tl.Generator()
    assert g.seed() == g.initial_seed()


def test_state_round_trip():
    g = gen(21)
    tl.randn(100, generator=g)
    state = g.get_state()
    assert state.dtype is tl.uint8 and state.shape == (16,)
    a = tl.randn(50, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(tl.randn(50, generator=g).numpy(), a)
    h = tl.Generator().set_state(state)
    np.testing.assert_array_equal(tl.randn(50, generator=h).numpy(), a)
    tl.manual_seed(3)
    s = tl.get_rng_state()
    b = tl.rand(5).numpy()
    tl.set_rng_state(s)
    np.testing.assert_array_equal(tl.rand(5).numpy(), b)


def test_state_errors():
    g = tl.Generator()
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(tl.zeros(16))
    with pytest.raises(TypeError, match="ByteTensor"):
        tl.set_rng_state([0] * 16)
    with pytest.raises(RuntimeError, match="size"):
        g.set_state(tl.zeros(5, dtype=tl.uint8))


def test_generator_pickles_with_its_state():
    g = gen(8)
    tl.rand(10, generator=g)
    h = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(tl.rand(9, generator=h).numpy(), tl.rand(9, generator=g).numpy())


def test_fork_rng_restores_the_default_state():
    import torchlite.random as tr
    tl.manual_seed(2)
    with tr.fork_rng():
        tl.rand(100)
    np.testing.assert_array_equal(tl.rand(4).numpy(), (tl.manual_seed(2), tl.rand(4))[1].numpy())
    assert tr.initial_seed() == 2 and tr.default_generator is tl.default_generator


def test_generator_argument_must_be_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        tl.rand(3, generator=3)
    with pytest.raises(TypeError, match="Generator"):
        tl.zeros(3).normal_(generator="g")


# ---- statistics (fixed seeds, bounds many standard errors wide) --------------------------------
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_normal_moments(dtype):
    x = tl.randn(1_000_000, dtype=dtype, generator=gen(1)).numpy().astype(np.float64)
    assert abs(x.mean()) < 0.006 and abs(x.std() - 1) < 0.006
    assert abs((x ** 3).mean()) < 0.03 and abs((x ** 4).mean() - 3) < 0.06
    assert abs((np.abs(x) < 1).mean() - 0.6826895) < 0.003     # shape, not just moments
    y = tl.normal(3.0, 0.5, (200_000,), dtype=dtype, generator=gen(2)).numpy()
    assert abs(y.mean() - 3) < 0.01 and abs(y.std() - 0.5) < 0.01


def test_normal_pairs_are_uncorrelated():
    x = tl.randn(1 << 20, generator=gen(3)).numpy().astype(np.float64).reshape(-1, 64)
    # Box-Muller partners: element i and 16 + i of each group
    assert abs(np.corrcoef(x[:, :16].ravel(), x[:, 16:32].ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(x[:, :-1].ravel(), x[:, 1:].ravel())[0, 1]) < 0.01


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_range_and_resolution(dtype):
    x = np_of(tl.rand(200_000, dtype=dtype, generator=gen(4)))
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.005
    bits = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]
    scaled = x * 2.0 ** bits
    np.testing.assert_array_equal(scaled, np.floor(scaled))     # exact multiples of 2^-bits
    assert len(np.unique(x)) > min(2 ** bits, 200_000) * 0.5


def test_uniform_with_bounds_and_histogram():
    x = tl.empty(500_000, dtype=tl.float64).uniform_(-2.0, 3.0, generator=gen(5)).numpy()
    assert x.min() >= -2 and x.max() < 3
    counts = np.histogram(x, bins=10, range=(-2, 3))[0]
    chi2 = ((counts - 50_000) ** 2 / 50_000).sum()
    assert chi2 < 60           # 9 degrees of freedom: p < 1e-8


@pytest.mark.parametrize("low,high", [(0, 10), (-7, 3), (5, 2**31 + 5), (-2**40, 2**41 + 3)])
def test_randint_chi_square(low, high):
    x = tl.randint(low, high, (400_000,), generator=gen(6)).numpy()
    assert x.min() >= low and x.max() < high and x.dtype == np.int64
    buckets = ((x - low) * 10 // (high - low)).astype(np.int64) if high - low < 2**40 else \
        np.floor((x.astype(np.float64) - low) / (high - low) * 10).astype(np.int64)
    counts = np.bincount(buckets, minlength=10)
    chi2 = ((counts - 40_000) ** 2 / 40_000).sum()
    assert chi2 < 60


def test_randint_rejection_is_unbiased():
    # range 3 * 2^30: a plain 32-bit multiply-shift would put a quarter of its 2^32 inputs
    # nowhere and skew the thirds; with rejection each third is 1/3
    x = tl.randint(0, 3 * 2**30, (600_000,), generator=gen(7)).numpy()
    thirds = np.bincount(x // 2**30, minlength=3) / x.size
    np.testing.assert_allclose(thirds, 1 / 3, atol=0.005)
    assert (np.bincount(x % 3, minlength=3) / x.size).min() > 0.33


def test_random_full_int64_range_covers_both_signs():
    x = tl.empty(100_000, dtype=tl.int64).random_(-2**63, None, generator=gen(8)).numpy()
    assert abs((x < 0).mean() - 0.5) < 0.01
    assert (x > 2**62).mean() > 0.2 and (x < -2**62).mean() > 0.2


def test_randperm_is_a_permutation_and_uniform():
    for n in (0, 1, 2, 17, 64, 1000, 100_003):
        p = tl.randperm(n, generator=gen(n)).numpy()
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    g = gen(9)
    counts = {}
    for _ in range(6000):
        key = tuple(tl.randperm(3, generator=g).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6 and min(counts.values()) > 850 and max(counts.values()) < 1150
    pos = np.array([tl.randperm(5, generator=g).tolist() for _ in range(5000)])
    assert np.abs(np.stack([np.bincount(pos[:, i], minlength=5) for i in range(5)]) - 1000).max() < 150


@pytest.mark.parametrize("dtype", [tl.int32, tl.int16, tl.uint8, tl.float32, tl.float64, tl.float16])
def test_randperm_dtypes(dtype):
    p = tl.randperm(200, dtype=dtype, generator=gen(1))
    assert p.dtype is dtype
    np.testing.assert_array_equal(np.sort(np_of(p)), np.arange(200))
    np.testing.assert_array_equal(np_of(p), tl.randperm(200, generator=gen(1)).numpy())


def test_bernoulli_frequencies():
    x = tl.empty(400_000).bernoulli_(0.3, generator=gen(10)).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.004
    p = tl.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).expand(100_000, 5)
    y = tl.bernoulli(p, generator=gen(11)).numpy()
    np.testing.assert_allclose(y.mean(axis=0), [0, 0.1, 0.5, 0.9, 1], atol=0.006)
    assert y[:, 0].max() == 0 and y[:, 4].min() == 1
    assert tl.empty(1000).bernoulli_(0.0, generator=gen(0)).numpy().max() == 0
    assert tl.empty(1000).bernoulli_(1.0, generator=gen(0)).numpy().min() == 1


@pytest.mark.parametrize("dtype", [tl.bool, tl.uint8, tl.int32, tl.int64, tl.float16,
                                   tl.bfloat16, tl.float64])
def test_bernoulli_into_every_dtype(dtype):
    x = tl.zeros(50_000, dtype=dtype).bernoulli_(0.25, generator=gen(12))
    assert x.dtype is dtype
    v = np_of(x).astype(np.float64)
    assert set(np.unique(v)) <= {0.0, 1.0} and abs(v.mean() - 0.25) < 0.01
    # the same draws whatever the dtype
    np.testing.assert_array_equal(v, tl.zeros(50_000).bernoulli_(0.25, generator=gen(12)).numpy())
    b = tl.bernoulli(tl.full((3, 4), 0.5, dtype=tl.float64), generator=gen(1))
    assert b.dtype is tl.float64 and b.shape == (3, 4)


def test_bernoulli_with_broadcast_probabilities():
    x = tl.zeros(20_000, 3).bernoulli_(tl.tensor([0.0, 0.5, 1.0]), generator=gen(13)).numpy()
    np.testing.assert_allclose(x.mean(axis=0), [0, 0.5, 1], atol=0.02)


def test_multinomial_with_replacement_frequencies():
    w = tl.tensor([1.0, 0.0, 2.0, 3.0, 4.0])
    s = tl.multinomial(w, 200_000, replacement=True, generator=gen(14)).numpy()
    np.testing.assert_allclose(np.bincount(s, minlength=5) / s.size, [0.1, 0, 0.2, 0.3, 0.4], atol=0.005)
    rows = tl.multinomial(tl.tensor([[0.0, 1.0], [1.0, 0.0]]), 100, True, generator=gen(1)).numpy()
    assert (rows[0] == 1).all() and (rows[1] == 0).all() and rows.shape == (2, 100)


def test_multinomial_without_replacement():
    g = gen(15)
    w = tl.rand(50, 40, generator=g) + 0.01
    s = tl.multinomial(w, 40, generator=g).numpy()
    assert s.shape == (50, 40)
    for row in s:
        np.testing.assert_array_equal(np.sort(row), np.arange(40))    # no repeats
    # the first pick follows the weights; later picks never repeat one
    w = tl.tensor([1.0, 2.0, 3.0, 0.0])
    first = np.array([tl.multinomial(w, 3, generator=g).tolist() for _ in range(6000)])
    np.testing.assert_allclose(np.bincount(first[:, 0], minlength=4) / 6000, [1 / 6, 2 / 6, 3 / 6, 0],
                               atol=0.02)
    assert (first != 3).all()
    # the zero-weight category comes last when every category is drawn
    every = tl.multinomial(w, 4, generator=g).numpy()
    assert every[-1] == 3 and sorted(every) == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", [tl.float16, tl.float64])
def test_multinomial_dtypes_and_empty_rows(dtype):
    assert tl.multinomial(tl.ones(2, 3, dtype=dtype), 2, generator=gen(1)).shape == (2, 2)
    e = tl.multinomial(tl.zeros(0, 3, dtype=dtype), 2)
    assert e.shape == (0, 2) and e.dtype is tl.int64


def test_exponential_cauchy_log_normal_geometric():
    g = gen(16)
    e = tl.empty(400_000).exponential_(2.0, generator=g).numpy().astype(np.float64)
    assert e.min() > 0 and np.isfinite(e).all() and abs(e.mean() - 0.5) < 0.005
    assert abs((e > 1).mean() - math.exp(-2)) < 0.003
    c = tl.empty(400_000, dtype=tl.float64).cauchy_(1.0, 2.0, generator=g).numpy()
    assert np.isfinite(c).all() and abs(np.median(c) - 1) < 0.03
    assert abs((np.abs(c - 1) < 2).mean() - 0.5) < 0.005          # quartiles at median +- sigma
    c32 = tl.empty(400_000).cauchy_(generator=g).numpy()
    assert np.isfinite(c32).all() and abs((np.abs(c32) < 1).mean() - 0.5) < 0.005
    ln = tl.empty(400_000).log_normal_(1.0, 0.5, generator=g).numpy().astype(np.float64)
    assert ln.min() > 0 and abs(np.log(ln).mean() - 1) < 0.01 and abs(np.log(ln).std() - 0.5) < 0.01
    geo = tl.empty(400_000, dtype=tl.int64).geometric_(0.25, generator=g).numpy()
    assert geo.min() >= 1 and abs(geo.mean() - 4) < 0.05 and abs((geo == 1).mean() - 0.25) < 0.005


@pytest.mark.parametrize("rate", [0.0, 0.7, 4.0, 9.99, 10.0, 35.0, 1e4])
def test_poisson_moments(rate):
    x = tl.poisson(tl.full((100_000,), rate, dtype=tl.float64), generator=gen(17)).numpy()
    assert (x >= 0).all() and (x == np.floor(x)).all()
    if rate == 0:
        assert x.max() == 0
        return
    assert abs(x.mean() - rate) < 6 * math.sqrt(rate / x.size) + 1e-3
    assert abs(x.var() / rate - 1) < 0.03
    if rate < 12:
        from math import exp, factorial
        expected = np.array([exp(-rate) * rate ** k / factorial(k) for k in range(8)])
        freq = np.bincount(x.astype(np.int64), minlength=8)[:8] / x.size
        np.testing.assert_allclose(freq, expected, atol=0.006)


def test_poisson_keeps_dtype_and_shape():
    p = tl.poisson(tl.full((2, 3), 4.0), generator=gen(1))
    assert p.dtype is tl.float32 and p.shape == (2, 3)
    assert tl.poisson(tl.ones(0)).shape == (0,)


# ---- dtypes, shapes, out=, like-forms ---------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (3, 1, 5), (130,)])
def test_shapes_including_empty_and_0d(shape):
    g = gen(18)
    for t in (tl.rand(shape, generator=g), tl.randn(*shape, generator=g),
              tl.randint(3, shape, generator=g), tl.normal(0.0, 1.0, shape, generator=g),
              tl.randint(1, 4, size=shape, generator=g)):
        assert t.shape == shape
    assert tl.rand(generator=g).shape == () and tl.randn([], generator=g).shape == ()
    x = tl.empty(shape).normal_(generator=g)
    assert x.shape == shape and np.isfinite(x.numpy()).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_dtypes(dtype):
    for t in (tl.rand(5, dtype=dtype), tl.randn(5, dtype=dtype), tl.normal(0.0, 1.0, (5,), dtype=dtype),
              tl.empty(5, dtype=dtype).exponential_(), tl.rand_like(tl.zeros(5, dtype=dtype)),
              tl.randn_like(tl.zeros(5, dtype=dtype))):
        assert t.dtype is dtype
    assert tl.rand(3).dtype is tl.get_default_dtype()


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_half_types_go_through_float32(dtype):
    a = tl.randn(1000, dtype=dtype, generator=gen(19))
    b = tl.randn(1000, generator=gen(19)).to(dtype)
    np.testing.assert_array_equal(np_of(a), np_of(b))


@pytest.mark.parametrize("dtype", INTS + (tl.bool, tl.float32, tl.float64))
def test_randint_dtypes(dtype):
    hi = 2 if dtype is tl.bool else 100
    t = tl.randint(0, hi, (1000,), dtype=dtype, generator=gen(20))
    assert t.dtype is dtype
    v = np_of(t).astype(np.int64)
    assert v.min() >= 0 and v.max() < hi and len(np.unique(v)) == hi
    assert tl.randint(5, (3,)).dtype is tl.int64


@pytest.mark.parametrize("dtype", INTS + FLOATS + (tl.bool,))
def test_random_default_ranges(dtype):
    x = np_of(tl.empty(20_000, dtype=dtype).random_(generator=gen(21)))
    if dtype is tl.bool:
        lo, top = 0, 1
    elif dtype.is_floating_point:
        lo, top = 0, 2 ** {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]
    else:
        lo, top = 0, tl.iinfo(dtype).max
    assert x.min() >= lo and x.max() <= top and (x == np.floor(x)).all()
    assert x.max() > top / 2
    y = np_of(tl.empty(20_000, dtype=dtype).random_(2, generator=gen(22)))   # random_(to)
    assert set(np.unique(y)) == {0, 1}
    if dtype is not tl.bool and dtype is not tl.uint8:
        z = np_of(tl.empty(20_000, dtype=dtype).random_(-3, 4, generator=gen(23)))
        assert set(np.unique(z)) == set(range(-3, 4))


def test_random_from_keyword_and_to_none():
    x = tl.empty(1000, dtype=tl.int8).random_(-5, None, generator=gen(1)).numpy()
    assert x.min() >= -5 and x.max() <= 127 and x.min() < 0
    y = tl.empty(1000, dtype=tl.int64).random_(**{"from": 3, "to": 6}).numpy()
    assert set(np.unique(y)) == {3, 4, 5}


def test_randint_signatures():
    g = gen(2)
    assert tl.randint(5, (4,), generator=g).numpy().max() < 5
    assert tl.randint(3, 10, size=(4,), generator=g).numpy().min() >= 3
    assert tl.randint(low=2, high=4, size=(50,), generator=g).numpy().min() >= 2
    assert tl.randint(high=4, size=[50], generator=g).shape == (50,)
    x = tl.randint_like(tl.zeros(2, 3), 7, generator=g)
    assert x.dtype is tl.float32 and x.shape == (2, 3) and np_of(x).max() < 7
    y = tl.randint_like(tl.zeros(5, dtype=tl.int32), 3, 5, generator=g)
    assert y.dtype is tl.int32 and set(np.unique(y.numpy())) <= {3, 4}


def test_out_and_requires_grad():
    out = tl.empty(2)
    r = tl.rand(3, 4, out=out, generator=gen(1))
    assert r is out and out.shape == (3, 4)
    np.testing.assert_array_equal(out.numpy(), tl.rand(3, 4, generator=gen(1)).numpy())
    o64 = tl.empty(5, dtype=tl.float64)
    tl.randn(5, out=o64, generator=gen(2))
    np.testing.assert_array_equal(o64.numpy(), tl.randn(5, dtype=tl.float64, generator=gen(2)).numpy())
    oi = tl.empty(4, dtype=tl.int32)
    assert tl.randint(0, 3, (4,), out=oi) is oi and oi.dtype is tl.int32
    op = tl.empty(0, dtype=tl.int64)
    assert tl.randperm(6, out=op) is op and sorted(op.tolist()) == list(range(6))
    on = tl.empty(3)
    assert tl.normal(tl.zeros(3), tl.ones(3), out=on) is on
    assert tl.randn(2, 2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        tl.randint(0, 3, (2,), requires_grad=True)


def test_normal_overloads():
    g = gen(24)
    mean = tl.arange(4.0).reshape(4, 1)
    std = tl.tensor([0.0, 1.0, 2.0])
    x = tl.normal(mean, std, generator=g)
    assert x.shape == (4, 3) and x.dtype is tl.float32
    np.testing.assert_array_equal(x.numpy()[:, 0], np.arange(4.0))       # std 0: the mean
    assert tl.normal(mean, 1.0).shape == (4, 1) and tl.normal(mean=mean).shape == (4, 1)
    assert tl.normal(0.0, tl.ones(2, dtype=tl.float64)).dtype is tl.float64
    assert tl.normal(tl.zeros(3, dtype=tl.float16), tl.ones(3, dtype=tl.float64)).dtype is tl.float16
    # same stream as randn: mean + std * z
    z = tl.randn(5, generator=gen(25)).numpy()
    got = tl.normal(tl.full((5,), 2.0), tl.full((5,), 3.0), generator=gen(25)).numpy()
    np.testing.assert_allclose(got, 2 + 3 * z, rtol=1e-6)
    big = tl.normal(tl.full((200_000,), -1.0), 2.0, generator=g).numpy()
    assert abs(big.mean() + 1) < 0.02 and abs(big.std() - 2) < 0.02


def test_tensor_methods_exist():
    x = tl.full((4,), 0.5)
    assert x.bernoulli(generator=gen(1)).shape == (4,)
    assert x.multinomial(2, generator=gen(1)).shape == (2,)
    for name in ("uniform_", "normal_", "random_", "bernoulli_", "exponential_", "cauchy_",
                 "log_normal_", "geometric_"):
        assert callable(getattr(x, name))
    v = x._version
    x.uniform_()
    assert x._version > v


# ---- in-place fills of strided views ------------------------------------------------------------
def _views():
    base = lambda: tl.zeros(6, 10)
    return [("transposed", lambda b: b.t()), ("stepped", lambda b: b[:, ::3]),
            ("row slice", lambda b: b[1:4]), ("column", lambda b: b[:, 7]),
            ("reversed-order dims", lambda b: b.reshape(2, 3, 10).permute(2, 0, 1))], base


FILLS = [("normal_", lambda t, g: t.normal_(1.0, 2.0, generator=g)),
         ("uniform_", lambda t, g: t.uniform_(-1.0, 1.0, generator=g)),
         ("random_", lambda t, g: t.random_(1, 50, generator=g)),
         ("bernoulli_", lambda t, g: t.bernoulli_(0.5, generator=g)),
         ("exponential_", lambda t, g: t.exponential_(generator=g)),
         ("cauchy_", lambda t, g: t.cauchy_(generator=g)),
         ("log_normal_", lambda t, g: t.log_normal_(generator=g)),
         ("geometric_", lambda t, g: t.geometric_(0.5, generator=g))]


@pytest.mark.parametrize("fill", FILLS, ids=[f[0] for f in FILLS])
def test_inplace_fills_on_views_fill_each_element_once_in_row_major_order(fill):
    views, base = _views()
    for name, make in views:
        b = base()
        v = make(b)
        fill[1](v, gen(26))
        ref = tl.empty(*v.shape)
        fill[1](ref, gen(26))
        np.testing.assert_array_equal(v.numpy(), ref.numpy(), err_msg=name)
        # everything outside the view is untouched
        marker = tl.zeros(6, 10)
        make(marker).fill_(1)
        mask = marker.numpy() == 0
        assert (b.numpy()[mask] == 0).all(), name


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       steps=st.lists(st.integers(1, 3), min_size=3, max_size=3),
       transpose=st.booleans(), dtype=st.sampled_from([tl.float32, tl.float64, tl.float16]))
def test_property_strided_fill_matches_contiguous_fill(shape, steps, transpose, dtype):
    full = [s * k for s, k in zip(shape, steps)]
    b = tl.zeros(*full, dtype=dtype)
    v = b[tuple(slice(None, None, k) for k in steps[:len(shape)])]
    if transpose and v.ndim >= 2:
        v = v.transpose(0, v.ndim - 1)
    v.normal_(generator=gen(27))
    ref = tl.empty(*v.shape, dtype=dtype).normal_(generator=gen(27))
    np.testing.assert_array_equal(np_of(v), np_of(ref))
    assert np.count_nonzero(np_of(b)) <= max(v.numel(), 0)


def test_noncontiguous_inputs_read_in_row_major_order():
    w = tl.rand(30, 8, generator=gen(28)) + 0.01
    for view in (w.t(), w[::2, 1::3], w.t()[2]):
        a = tl.multinomial(view, 3, generator=gen(29)).numpy()
        b = tl.multinomial(view.contiguous(), 3, generator=gen(29)).numpy()
        np.testing.assert_array_equal(a, b)
        c = tl.bernoulli(view * 0.9, generator=gen(30)).numpy()
        d = tl.bernoulli((view * 0.9).contiguous(), generator=gen(30)).numpy()
        np.testing.assert_array_equal(c, d)
        e = tl.poisson(view * 20, generator=gen(31)).numpy()
        np.testing.assert_array_equal(e, tl.poisson((view * 20).contiguous(), generator=gen(31)).numpy())
    p = tl.full((5, 1), 0.5).expand(5, 4000)           # stride-0 probabilities
    x = tl.bernoulli(p, generator=gen(32)).numpy()
    assert abs(x.mean() - 0.5) < 0.02 and not (x == x[:, :1]).all()


def test_fill_of_overlapping_view_is_refused():
    with pytest.raises(RuntimeError, match="single memory location"):
        tl.zeros(3).expand(2, 3).normal_()
    with pytest.raises(RuntimeError, match="single memory location"):
        tl.zeros(1, 3).expand(4, 3).random_(0, 5)


# ---- argument errors --------------------------------------------------------------------------
ERRORS = [
    (lambda m: m.randint(5, 3, (2,)), RuntimeError, "less than"),
    (lambda m: m.randint(5, 5, (2,)), RuntimeError, "less than"),
    (lambda m: m.randint(0, 300, (2,), dtype=m.uint8), RuntimeError, "out of bounds"),
    (lambda m: m.randint(-1, 3, (2,), dtype=m.uint8), RuntimeError, "out of bounds"),
    (lambda m: m.randint(0, 3, (2,), dtype=m.bool), RuntimeError, "out of bounds"),
    (lambda m: m.randint(0, 2**63, (2,)), ValueError, "Overflow"),
    (lambda m: m.randint(0.5, 3.5, (2,)), TypeError, ""),
    (lambda m: m.randint(3, 2), TypeError, "size"),
    (lambda m: m.zeros(3).random_(3, 3), RuntimeError, "less than"),
    (lambda m: m.zeros(3).random_(1.5, 3), TypeError, ""),
    (lambda m: m.normal(0.0, -1.0, (3,)), RuntimeError, "std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), -1.0), RuntimeError, "std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), m.tensor([1.0, -1.0, 1.0])), RuntimeError, "std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), m.ones(2)), RuntimeError, ""),
    (lambda m: m.normal(0.0, 1.0), TypeError, ""),
    (lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0), NotImplementedError, "normal_kernel_cpu"),
    (lambda m: m.zeros(3).normal_(0, -1), RuntimeError, "std >= 0.0"),
    (lambda m: m.zeros(3, dtype=m.int64).normal_(), NotImplementedError, "normal_kernel_cpu"),
    (lambda m: m.randn(2, dtype=m.int64), NotImplementedError, "normal_kernel_cpu"),
    (lambda m: m.rand(2, dtype=m.int32), NotImplementedError, "check_uniform_bounds"),
    (lambda m: m.zeros(3).uniform_(2, 1), RuntimeError, "range"),
    (lambda m: m.zeros(3).uniform_(float("nan"), 1), RuntimeError, "out of bounds"),
    (lambda m: m.zeros(3).uniform_(-1e39, 1e39), RuntimeError, "out of bounds"),
    (lambda m: m.zeros(3, dtype=m.int64).uniform_(), NotImplementedError, "check_uniform_bounds"),
    (lambda m: m.zeros(3).exponential_(0), RuntimeError, "lambda > 0.0"),
    (lambda m: m.zeros(3, dtype=m.int64).exponential_(), RuntimeError, "continuous"),
    (lambda m: m.zeros(3).geometric_(1), RuntimeError, "(0, 1)"),
    (lambda m: m.zeros(3).geometric_(0), RuntimeError, "(0, 1)"),
    (lambda m: m.zeros(3).log_normal_(1, 0), RuntimeError, "std > 0.0"),
    (lambda m: m.zeros(3).cauchy_(0, -1), RuntimeError, "sigma > 0.0"),
    (lambda m: m.zeros(3, dtype=m.int64).cauchy_(), RuntimeError, "continuous"),
    (lambda m: m.zeros(3).bernoulli_(1.5), RuntimeError, "[0, 1]"),
    (lambda m: m.zeros(3).bernoulli_(-0.1), RuntimeError, "[0, 1]"),
    (lambda m: m.bernoulli(m.tensor([0.5, 2.0])), RuntimeError, "p_in"),
    (lambda m: m.bernoulli(m.tensor([0.5, float("nan")])), RuntimeError, "p_in"),
    (lambda m: m.zeros(3).bernoulli_(m.tensor([0.5, -1.0, 0.1])), RuntimeError, "p_in"),
    (lambda m: m.bernoulli(m.tensor([1, 0])), NotImplementedError, "bernoulli"),
    (lambda m: m.multinomial(m.tensor([1.0, -1.0]), 1), RuntimeError, "element < 0"),
    (lambda m: m.multinomial(m.tensor([1.0, float("inf")]), 1), RuntimeError, "inf"),
    (lambda m: m.multinomial(m.tensor([1.0, float("nan")]), 1), RuntimeError, "nan"),
    (lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1), RuntimeError, "sum of probabilities"),
    (lambda m: m.multinomial(m.tensor([[1.0, 1.0], [0.0, 0.0]]), 1), RuntimeError, "sum of probabilities"),
    (lambda m: m.multinomial(m.tensor([1.0, 1.0]), 3), RuntimeError, "without replacement"),
    (lambda m: m.multinomial(m.tensor([1.0, 1.0]), 0), RuntimeError, "n_sample <= 0"),
    (lambda m: m.multinomial(m.tensor([1, 1]), 1), RuntimeError, "floating-point"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), RuntimeError, "1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor(1.0), 1), RuntimeError, "1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor([1.0, 2.0]), 1.5), TypeError, "num_samples"),
    (lambda m: m.poisson(m.tensor([-1.0])), RuntimeError, "non-negative"),
    (lambda m: m.poisson(m.tensor([1])), NotImplementedError, "poisson"),
    (lambda m: m.randperm(-1), RuntimeError, "negative"),
    (lambda m: m.randperm(3000, dtype=m.float16), RuntimeError, "2049"),
    (lambda m: m.randperm(300, dtype=m.int8), RuntimeError, "overflow"),
    (lambda m: m.randperm(5, dtype=m.bool), NotImplementedError, "randperm"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_argument_errors(case):
    fn, exc, fragment = ERRORS[case]
    with pytest.raises(exc) as info:
        fn(tl)
    assert fragment in str(info.value)


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_argument_errors_match_pytorch(case):
    torch = pytest.importorskip("torch")
    fn, exc, _ = ERRORS[case]
    with pytest.raises(exc):
        fn(torch)
