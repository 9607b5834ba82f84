# Random numbers for the CPU array layer: the Philox4x32-10 generator state and the kernels
# that fill arrays from it.
#
# A generator is a 64-bit seed (the Philox key) and an offset (the next unused block of the
# counter space).  Each request reserves the blocks it needs (see the stream layout in
# kernels/random.h), so consecutive requests get fresh numbers, and any thread can compute
# any part of a request: results never depend on the number of threads.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t, uint32_t
from libc.math cimport log1p, INFINITY
from libc.string cimport memcpy
from torchlite._core.array cimport (Array, new_array, tl_itemsize, TL_BOOL, TL_INT64,
                                    TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64)
from torchlite._core.elementwise cimport cast_array, contiguous_array, copy_into, check_writable
from torchlite._core.parallel cimport num_chunks
from torchlite._core import isa_switch
import os

cdef extern from "kernels/random.h" nogil:
    enum:
        TL_RND_UNIFORM, TL_RND_NORMAL, TL_RND_LOG_NORMAL, TL_RND_EXPONENTIAL, TL_RND_CAUCHY
        TL_RND_GEOMETRIC, TL_RND_BERNOULLI, TL_RND_BERNOULLI_P, TL_RND_RANDINT
        TL_RND_RANDINT_WIDE, TL_RND_BELOW_INDEX, TL_RND_BELOW_INDEX_WIDE, TL_RND_NDISTS
        TL_RND_F32, TL_RND_F64, TL_RND_I64
        TL_PHILOX_LANES
    ctypedef struct tl_rnd_req:
        uint32_t key[2]
        uint64_t base
        int64_t n
        double a, b
        int bits
        float scale
        int64_t low
        uint64_t range
        uint64_t reject
        uint64_t thresh
        const double* p
        char* out
    ctypedef void (*tl_rnd_group_fn)(const tl_rnd_req* q, int64_t g, void* out)
    tl_rnd_group_fn tl_rnd_table[TL_RND_NDISTS][3]
    int tl_rnd_install(int level)
    int tl_rnd_words(int dist, int ot)
    void tl_rnd_run(const tl_rnd_req* q, tl_rnd_group_fn fn, int64_t group_elems, int itemsize,
                    int64_t g0, int64_t g1)
    void tl_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                          uint32_t k0, uint32_t k1, uint32_t out[4])
    void tl_philox_lanes_generic(const uint32_t key[2], uint64_t first, uint32_t draw,
                                 uint32_t w[4][TL_PHILOX_LANES])

cdef extern from "kernels/random_sample.h" nogil:
    void tl_rnd_poisson(const uint32_t key[2], uint64_t base, const double* rate,
                        const double* unused, double* out, int64_t e0, int64_t e1)
    void tl_rnd_binomial(const uint32_t key[2], uint64_t base, const double* count,
                         const double* prob, double* out, int64_t e0, int64_t e1)
    void tl_rnd_shuffle(int64_t* p, int64_t n)
    int tl_rnd_check_weights(const double* w, int64_t n, int64_t* positive)
    void tl_rnd_multinomial_replace(double* w, int64_t n, const double* u, int64_t k, int64_t* out)
    void tl_rnd_multinomial_no_replace(double* key, int64_t n, const double* expo, int64_t k,
                                       int64_t* out)

# distribution codes for fill()
UNIFORM = TL_RND_UNIFORM
NORMAL = TL_RND_NORMAL
LOG_NORMAL = TL_RND_LOG_NORMAL
EXPONENTIAL = TL_RND_EXPONENTIAL
CAUCHY = TL_RND_CAUCHY
GEOMETRIC = TL_RND_GEOMETRIC

DEFAULT_SEED = 67280421310721      # PyTorch's seed for a new Generator
cdef int64_t GRAIN = 16384         # elements per thread below which a request stays serial
cdef int _OUT_DTYPE[3]
_OUT_DTYPE[:] = [TL_FLOAT32, TL_FLOAT64, TL_INT64]


# ---------------------------------------------------------------------------------------
# ISA selection (tests run every compiled copy; torchlite._core.set_isa_level sets every module)
# ---------------------------------------------------------------------------------------
def _install(int level):
    """Install the sampling kernels of ISA `level` (one the CPU supports); returns it."""
    return tl_rnd_install(level)

set_isa_level, isa_level = isa_switch(_install)


def philox4x32_10(counter, key):
    """The raw Philox4x32-10 block for a 4-word counter and 2-word key (known-answer tests)."""
    cdef uint32_t out[4]
    tl_philox4x32_10(counter[0], counter[1], counter[2], counter[3], key[0], key[1], out)
    return (out[0], out[1], out[2], out[3])


def philox_lanes_portable(uint64_t first, key, uint32_t draw=0):
    """The portable 16-block kernel (non-x86 builds use it): words w[k][i] of blocks
    first + i, as 4 tuples of 16 (tests check it against the single-block function)."""
    cdef uint32_t w[4][TL_PHILOX_LANES]
    cdef uint32_t k[2]
    k[0] = key[0]
    k[1] = key[1]
    tl_philox_lanes_generic(k, first, draw, w)
    return tuple(tuple(w[j][i] for i in range(TL_PHILOX_LANES)) for j in range(4))


# ---------------------------------------------------------------------------------------
# Generator state
# ---------------------------------------------------------------------------------------
cdef uint64_t _seed_value(object seed) except? 0:
    """PyTorch's rule: int(seed), in [-2^63, 2^64); negative seeds wrap to uint64."""
    s = int(seed)
    if s < -(1 << 63) or s >= (1 << 64):
        raise ValueError(f"Overflow when unpacking long long: seed {s} is outside "
                         f"[-2**63, 2**64)")
    return <uint64_t>(s & 0xFFFFFFFFFFFFFFFF)


cdef class Philox:
    """A Philox4x32-10 stream: a 64-bit seed (the key) and the next unused block (offset)."""
    cdef uint64_t _seed
    cdef uint64_t _offset

    def __cinit__(self, *args, **kwargs):
        self._seed = DEFAULT_SEED
        self._offset = 0

    def manual_seed(self, seed):
        """Restart the stream from `seed`; returns self."""
        self._seed = _seed_value(seed)
        self._offset = 0
        return self

    def seed(self):
        """Seed from the operating system's entropy and return the seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self._seed = s
        self._offset = 0
        return s

    def initial_seed(self):
        return self._seed

    @property
    def offset(self):
        """Blocks (of four 32-bit words) used since the last seeding."""
        return self._offset

    def state_bytes(self):
        """The state as 16 bytes: seed and offset, little-endian uint64 each."""
        return int(self._seed).to_bytes(8, "little") + int(self._offset).to_bytes(8, "little")

    def set_state_bytes(self, bytes b):
        if len(b) != 16:
            raise RuntimeError(f"Expected a CPU generator state of size 16 but found the input "
                               f"RNG state size to be {len(b)}")
        self._seed = int.from_bytes(b[:8], "little")
        self._offset = int.from_bytes(b[8:], "little")

    cdef uint64_t reserve(self, uint64_t blocks):
        cdef uint64_t first = self._offset
        self._offset += blocks
        return first

    def reserve_blocks(self, uint64_t blocks):
        """(seed, first block): the next `blocks` Philox blocks of this generator, for a
        request the CUDA backend runs (the same stream as the CPU's requests)."""
        return self._seed, self.reserve(blocks)


# ---------------------------------------------------------------------------------------
# Running a request
# ---------------------------------------------------------------------------------------
cdef int _run(tl_rnd_req* q, Array target, Philox gen, int dist, int ot) except -1:
    """Fill the contiguous `target` (dtype of output type `ot`) from the next blocks of gen."""
    cdef tl_rnd_group_fn fn = tl_rnd_table[dist][ot]
    cdef int64_t group_elems = 4 * TL_PHILOX_LANES // tl_rnd_words(dist, ot)
    cdef int64_t ngroups = (target.n + group_elems - 1) // group_elems
    cdef int isz = tl_itemsize[target.dtype]
    cdef int nc, c
    if fn == NULL:
        raise RuntimeError(f"random: no kernel for distribution {dist}, output type {ot}")
    q.n = target.n
    q.out = target.ptr()
    q.key[0] = <uint32_t>gen._seed
    q.key[1] = <uint32_t>(gen._seed >> 32)
    q.base = gen.reserve(<uint64_t>ngroups * TL_PHILOX_LANES)
    nc = num_chunks(target.n, GRAIN)
    with nogil:
        if nc <= 1:
            tl_rnd_run(q, fn, group_elems, isz, 0, ngroups)
        else:
            for c in prange(nc, num_threads=nc, schedule="static"):
                tl_rnd_run(q, fn, group_elems, isz, ngroups * c // nc, ngroups * (c + 1) // nc)
    return 0


cdef int _generate(tl_rnd_req* q, Array dst, Philox gen, int dist, int ot, str op) except -1:
    """Fill dst, of any dtype and layout, element i (in row-major order) from position i of
    the request: directly when dst is contiguous with the kernel's dtype, else through a
    contiguous buffer that is then cast/copied in."""
    cdef Array target
    check_writable(dst, op)
    if dst.dtype == _OUT_DTYPE[ot] and dst.contiguous():
        target = dst
    else:
        target = new_array(dst.nd, dst.shp, _OUT_DTYPE[ot])
    _run(q, target, gen, dist, ot)
    if target is not dst:
        copy_into(dst, target)
    return 0


cdef inline int _float_out(int dtype) noexcept:
    return TL_RND_F64 if dtype == TL_FLOAT64 else TL_RND_F32


def fill(Array dst, Philox gen, int dist, double a=0.0, double b=0.0, str op="random"):
    """dst[...] = samples of a real distribution (dst floating):
    UNIFORM [a, b), NORMAL (mean a, std b), LOG_NORMAL (a, b), EXPONENTIAL (rate a),
    CAUCHY (median a, scale b), GEOMETRIC (success probability a)."""
    cdef tl_rnd_req q
    cdef int ot = _float_out(dst.dtype)
    q.a = a
    q.b = b
    q.bits = 11 if dst.dtype == TL_FLOAT16 else (8 if dst.dtype == TL_BFLOAT16 else 24)
    q.scale = 1.0 / (1 << q.bits)
    if dist == TL_RND_GEOMETRIC:
        ot = TL_RND_F64
        q.b = log1p(-a)
    _generate(&q, dst, gen, dist, ot, op)
    return dst


def fill_int(Array dst, Philox gen, int64_t low, object range_, str op="random_"):
    """dst[...] = integers uniform on [low, low + range_), 1 <= range_ <= 2^64, unbiased."""
    cdef tl_rnd_req q
    cdef int dist
    r = int(range_)
    if r < 1 or r > (1 << 64):
        raise RuntimeError(f"{op}: range {r} must be in [1, 2**64]")
    q.low = low
    if r <= (1 << 32):
        dist = TL_RND_RANDINT
        q.range = r
        q.reject = ((1 << 32) - r) % r
    else:
        dist = TL_RND_RANDINT_WIDE
        q.range = r & 0xFFFFFFFFFFFFFFFF
        q.reject = ((1 << 64) - r) % r
    _generate(&q, dst, gen, dist, TL_RND_I64, op)
    return dst


cdef inline int _any_out(int dtype) noexcept:
    if dtype == TL_FLOAT64:
        return TL_RND_F64
    if dtype >= TL_FLOAT16:
        return TL_RND_F32
    return TL_RND_I64


def fill_bernoulli(Array dst, Philox gen, double p, str op="bernoulli_"):
    """dst[...] = 1 with probability p (to 2^-32), else 0; dst of any dtype."""
    cdef tl_rnd_req q
    q.thresh = <uint64_t>(p * 4294967296.0 + 0.5)
    _generate(&q, dst, gen, TL_RND_BERNOULLI, _any_out(dst.dtype), op)
    return dst


def fill_bernoulli_tensor(Array dst, Philox gen, Array p, str op="bernoulli_"):
    """dst[...] = 1 with probability p[...] (p has dst's shape, values in [0, 1])."""
    cdef tl_rnd_req q
    cdef Array pc = contiguous_array(cast_array(p, TL_FLOAT64))
    if pc.n != dst.n:
        raise RuntimeError(f"{op}: probabilities of shape {p.shape} for a result of shape {dst.shape}")
    if not _all_in(<double*>pc.ptr(), pc.n, 0.0, 1.0):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    q.p = <double*>pc.ptr()
    _generate(&q, dst, gen, TL_RND_BERNOULLI_P, _any_out(dst.dtype), op)
    return dst


cdef bint _all_in(const double* x, int64_t n, double lo, double hi) noexcept nogil:
    cdef int64_t i
    cdef bint ok = True
    for i in range(n):
        ok = ok & (x[i] >= lo) & (x[i] <= hi)    # NaN fails both
    return ok


def all_in_range(Array x, double lo, double hi):
    """True when every element of x lies in [lo, hi] (a NaN never does)."""
    cdef Array c = contiguous_array(cast_array(x, TL_FLOAT64))
    cdef bint ok
    with nogil:
        ok = _all_in(<double*>c.ptr(), c.n, lo, hi)
    return ok


# ---------------------------------------------------------------------------------------
# randperm, multinomial, poisson
# ---------------------------------------------------------------------------------------
def randperm(int64_t n, Philox gen):
    """A random permutation of 0 .. n-1 (int64): draws in parallel, then a serial
    inside-out Fisher-Yates pass."""
    cdef tl_rnd_req q
    cdef int64_t shape[1]
    cdef Array out
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    shape[0] = n
    out = new_array(1, shape, TL_INT64)
    _run(&q, out, gen, TL_RND_BELOW_INDEX if n <= (1 << 31) else TL_RND_BELOW_INDEX_WIDE,
         TL_RND_I64)
    with nogil:
        tl_rnd_shuffle(<int64_t*>out.ptr(), n)
    return out


cdef Array _uniform_f64(int64_t n, Philox gen, int dist):
    """n float64 draws: U[0, 1) for UNIFORM, Exp(1) for EXPONENTIAL."""
    cdef tl_rnd_req q
    cdef int64_t shape[1]
    shape[0] = n
    cdef Array out = new_array(1, shape, TL_FLOAT64)
    q.a = 0.0 if dist == TL_RND_UNIFORM else 1.0
    q.b = 1.0
    _run(&q, out, gen, dist, TL_RND_F64)
    return out


def multinomial(Array probs, int64_t k, bint replacement, Philox gen):
    """k category indices per row of the 1-d or 2-d weights `probs` (int64, rows x k)."""
    cdef Array w = new_array(probs.nd, probs.shp, TL_FLOAT64)
    cdef int64_t rows = probs.shp[0] if probs.nd == 2 else 1
    cdef int64_t ncat = probs.shp[probs.nd - 1]
    cdef int64_t shape[2]
    cdef int64_t r, positive
    cdef int err
    cdef int nt = num_chunks(rows * (ncat + k), GRAIN) if rows > 1 else 1
    cdef Array draws, out
    cdef double* wp
    cdef double* dp
    cdef int64_t* op
    copy_into(w, probs)
    wp = <double*>w.ptr()
    for r in range(rows):
        err = tl_rnd_check_weights(wp + r * ncat, ncat, &positive)
        if err == 1:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if err == 2:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    shape[0] = rows
    shape[1] = k
    out = new_array(probs.nd, &shape[0] if probs.nd == 2 else &shape[1], TL_INT64)
    op = <int64_t*>out.ptr()
    if replacement:
        draws = _uniform_f64(rows * k, gen, TL_RND_UNIFORM)
        dp = <double*>draws.ptr()
        with nogil:
            for r in prange(rows, num_threads=nt, schedule="static"):
                tl_rnd_multinomial_replace(wp + r * ncat, ncat, dp + r * k, k, op + r * k)
    else:
        draws = _uniform_f64(rows * ncat, gen, TL_RND_EXPONENTIAL)
        dp = <double*>draws.ptr()
        with nogil:
            for r in prange(rows, num_threads=nt, schedule="static"):
                tl_rnd_multinomial_no_replace(wp + r * ncat, ncat, dp + r * ncat, k, op + r * k)
    return out


ctypedef void (*_per_element_sampler)(const uint32_t* key, uint64_t base, const double* a,
                                      const double* b, double* out, int64_t e0,
                                      int64_t e1) noexcept nogil


cdef int _per_element(_per_element_sampler sample, Array a, Array b, Array res,
                      Philox gen) except -1:
    """Run a sampler whose element e draws from its own block of gen's stream (a, b: float64
    contiguous parameter arrays of res's size; b may be None), in parallel chunks."""
    cdef uint32_t key[2]
    cdef uint64_t base
    cdef int64_t n = res.n, c
    cdef int nc
    cdef const double* ap = <const double*>a.ptr()
    cdef const double* bp = <const double*>b.ptr() if b is not None else NULL
    cdef double* rp = <double*>res.ptr()
    key[0] = <uint32_t>gen._seed
    key[1] = <uint32_t>(gen._seed >> 32)
    base = gen.reserve(<uint64_t>n)
    nc = num_chunks(n, 2048)
    with nogil:
        if nc <= 1:
            sample(key, base, ap, bp, rp, 0, n)
        else:
            for c in prange(nc, num_threads=nc, schedule="static"):
                sample(key, base, ap, bp, rp, n * c // nc, n * (c + 1) // nc)
    return 0


def poisson(Array rates, Philox gen):
    """Poisson samples with the given rates (>= 0), in rates' dtype."""
    cdef Array lam = contiguous_array(cast_array(rates, TL_FLOAT64))
    cdef Array res = new_array(rates.nd, rates.shp, TL_FLOAT64)
    cdef Array out
    if not _all_in(<double*>lam.ptr(), lam.n, 0.0, INFINITY):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    _per_element(tl_rnd_poisson, lam, None, res, gen)
    if rates.dtype == TL_FLOAT64:
        return res
    out = new_array(rates.nd, rates.shp, rates.dtype)
    copy_into(out, res)
    return out


def binomial(Array count, Array prob, Philox gen):
    """Binomial(count, prob) samples, one per element of the same-shaped count and prob, as a
    float64 array of that shape (kernels/random_sample.h tl_rnd_binomial: PyTorch's edge
    rules, NaN for a NaN probability or a NaN or infinite count).  Element e draws from its
    own block of the stream."""
    if count.n != prob.n or count.nd != prob.nd or any(count.shp[i] != prob.shp[i]
                                                       for i in range(count.nd)):
        raise RuntimeError("binomial: count and prob must have the same shape")
    cdef Array c = contiguous_array(cast_array(count, TL_FLOAT64))
    cdef Array p = contiguous_array(cast_array(prob, TL_FLOAT64))
    cdef Array res = new_array(prob.nd, prob.shp, TL_FLOAT64)
    _per_element(tl_rnd_binomial, c, p, res, gen)
    return res


# ---- draws at a given place of a stream (fused kernels; declared in random.pxd) ---------------
cdef void bernoulli_range(uint64_t seed, uint64_t base, double p, int64_t first, int64_t n,
                          int dtype, char* out) noexcept nogil:
    cdef tl_rnd_req q
    cdef int ot = TL_RND_F64 if dtype == TL_FLOAT64 else TL_RND_F32
    cdef int isz = 8 if dtype == TL_FLOAT64 else 4
    cdef int64_t G = 4 * TL_PHILOX_LANES, g, lo, hi
    cdef double tmp[4 * TL_PHILOX_LANES]
    q.key[0] = <uint32_t>seed
    q.key[1] = <uint32_t>(seed >> 32)
    q.base = base
    q.thresh = <uint64_t>(p * 4294967296.0 + 0.5)       # as fill_bernoulli
    if n <= 0:
        return
    for g in range(first // G, (first + n - 1) // G + 1):
        lo = first if first > g * G else g * G
        hi = first + n if first + n < g * G + G else g * G + G
        if lo == g * G and hi == g * G + G:
            tl_rnd_table[TL_RND_BERNOULLI][ot](&q, g, out + (lo - first) * isz)
        else:
            tl_rnd_table[TL_RND_BERNOULLI][ot](&q, g, tmp)
            memcpy(out + (lo - first) * isz, <char*>tmp + (lo - g * G) * isz, (hi - lo) * isz)


def fill_bernoulli_at(Array dst, seed, base, double p):
    """dst (contiguous float32/float64) = the Bernoulli(p) request of dst's size that starts at
    block `base` of stream `seed`: what fill_bernoulli draws when the generator stands there."""
    if (dst.dtype != TL_FLOAT32 and dst.dtype != TL_FLOAT64) or not dst.contiguous():
        raise ValueError("fill_bernoulli_at: a contiguous float32/float64 array")
    cdef uint64_t s = <uint64_t>(int(seed) & 0xFFFFFFFFFFFFFFFF)
    cdef uint64_t b = <uint64_t>(int(base) & 0xFFFFFFFFFFFFFFFF)
    with nogil:
        bernoulli_range(s, b, p, 0, dst.n, dst.dtype, dst.ptr())
    return dst
