"""Random numbers on the GPU: torchlite._core.random's fill, fill_int, fill_bernoulli and
fill_bernoulli_tensor launched as tl_random of cuda_kernels/random.cu.

The request takes the next blocks of the generator's Philox stream, exactly as the CPU's
does, and the kernel computes each element from its block with the CPU's transforms, so a
seed gives the same numbers on both devices, whatever the launch shape.  The kernels write a
contiguous buffer of their output type (float32, float64 or int64), which is then cast or
copied into the destination when that differs, as on the CPU.
"""
import math

from . import _array, _kernels as K, _launch
from ._registry import native

_DISTS = ("UNIFORM", "NORMAL", "LOG_NORMAL", "EXPONENTIAL", "CAUCHY", "GEOMETRIC", "BERNOULLI",
          "BERNOULLI_P", "RANDINT", "RANDINT_WIDE", "BELOW_INDEX", "BELOW_INDEX_WIDE")
_OUT_DTYPE = {"f32": K.FLOAT32, "f64": K.FLOAT64, "i64": K.INT64}
_THREADS = 256


def _generate(dst, gen, dist, out, **fields):
    """Fill dst (any dtype and layout) from the next blocks of gen with distribution `dist`
    computed as output type `out` ('f32', 'f64' or 'i64')."""
    if dst.has_internal_overlap():
        return NotImplemented                               # the CPU's error
    dtype = _OUT_DTYPE[out]
    direct = dst.dtype == dtype and dst.is_contiguous()
    target = dst if direct else _array.empty(dst.shape, dtype, dst.device_index)
    n = target.numel
    if n:
        threads = K.random_threads(dist, out, n)
        seed, base = gen.reserve_blocks(threads)
        req = K.pack_random_request(seed, base, n, out_ptr=target.data_ptr(), **fields)
        k = _launch.kernel("random.cu", K.random_kernel(dist, out), target.device_index)
        _launch.launch(k, _launch.grid_for(threads, target.device_index, _THREADS, 1), _THREADS,
                       [_launch.struct(req), _launch.u64(threads)])
    if not direct:
        from ._copy import copy_
        copy_(dst, target)
    return dst


def _float_out(dtype):
    return "f64" if dtype == K.FLOAT64 else "f32"


def _bits(dtype):
    return 11 if dtype == K.FLOAT16 else (8 if dtype == K.BFLOAT16 else 24)


@native("random", "fill", kernel=True)
def fill(dst, gen, dist, a=0.0, b=0.0, op="random"):
    name = _DISTS[dist]
    if dst.dtype not in K.FLOATS:
        return NotImplemented
    if name == "GEOMETRIC":
        return _generate(dst, gen, name, "f64", a=a, b=math.log1p(-a), bits=_bits(dst.dtype))
    return _generate(dst, gen, name, _float_out(dst.dtype), a=a, b=b, bits=_bits(dst.dtype))


@native("random", "fill_int", kernel=True)
def fill_int(dst, gen, low, range_, op="random_"):
    r = int(range_)
    if r < 1 or r > (1 << 64):
        return NotImplemented
    if r <= (1 << 32):
        return _generate(dst, gen, "RANDINT", "i64", low=low, range_=r, reject=((1 << 32) - r) % r)
    return _generate(dst, gen, "RANDINT_WIDE", "i64", low=low, range_=r & 0xFFFFFFFFFFFFFFFF,
                     reject=((1 << 64) - r) % r)


def _any_out(dtype):
    return "f64" if dtype == K.FLOAT64 else ("f32" if dtype in K.FLOATS else "i64")


@native("random", "fill_bernoulli", kernel=True)
def fill_bernoulli(dst, gen, p, op="bernoulli_"):
    return _generate(dst, gen, "BERNOULLI", _any_out(dst.dtype),
                     thresh=int(p * 4294967296.0 + 0.5))


@native("random", "fill_bernoulli_tensor", kernel=True)
def fill_bernoulli_tensor(dst, gen, p, op="bernoulli_"):
    if p.shape != dst.shape:
        return NotImplemented
    from ._elementwise import cast
    from ._copy import contiguous
    from ._reduction import reduce
    probs = contiguous(cast(p, K.FLOAT64))
    if probs.numel and not (_array.to_host(reduce("amin", probs, None, False)).item() >= 0.0
                            and _array.to_host(reduce("amax", probs, None, False)).item() <= 1.0):
        return NotImplemented                            # the CPU raises its error
    return _generate(dst, gen, "BERNOULLI_P", _any_out(dst.dtype), p_ptr=probs.data_ptr())
