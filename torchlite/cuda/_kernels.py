"""The CUDA kernel sources (cuda_kernels/*.cu) and the catalogue of their variants.

A *source* is one .cu file plus the cuda_kernels headers it includes (resolved here, so the
cache key covers them and NVRTC gets them in memory).  A *variant* is one template
instantiation, named by its NVRTC name expression (``tl_unary<tl::op::Exp, float, float>``).
`variants()` lists every variant the backend may launch: tests/test_cuda_compile.py compiles
all of them for sm_80 and sm_90.  The op lists mirror the CPU's (torchlite/_core/kernels/
ewise_ops.h): an op exists on the GPU for the dtypes it exists for on the CPU, plus
float16/bfloat16, which the GPU computes through float32 in the same kernel.

Also here: the host-side packing of the kernels' parameter structs (`pack_indexer`,
`pack_params`, `pack_random_request`), whose layouts tl_common.cuh / tl_philox.cuh pin with
static_asserts.
"""
import hashlib
import os
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

# ---- where the sources live (one home: torchlite/_core/__init__.py) ---------------------------
from .._core import cuda_kernel_dir as kernel_dir  # noqa: E402


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class KernelSource:
    """A .cu file and the local headers it includes, directly or not (name -> text)."""
    name: str
    text: str
    headers: tuple          # ((name, text), ...) sorted by name

    def digest(self):
        """sha256 over the file and every header it includes (names and contents)."""
        h = hashlib.sha256()
        for name, text in ((self.name, self.text),) + self.headers:
            data = text.encode()
            h.update(f"{name}\0{len(data)}\0".encode())
            h.update(data)
        return h.hexdigest()


def load_source(name, directory=None):
    """Read cuda_kernels/<name> and the quoted #includes it reaches (angle-bracket includes
    are CUDA's own headers, found through the include path)."""
    d = directory or kernel_dir()
    return source_from_text(name, _read(os.path.join(d, name)), d)


def source_from_text(name, text, directory=None):
    """A KernelSource of generated CUDA C `text` (named `name` in NVRTC's messages) whose
    quoted #includes are cuda_kernels/ headers, read as load_source reads them."""
    d = directory or kernel_dir()
    headers = {}
    pending = _INCLUDE.findall(text)
    while pending:
        inc = pending.pop()
        if inc in headers:
            continue
        path = os.path.join(d, inc)
        if not os.path.isfile(path):
            raise RuntimeError(f"torchlite: {name} includes \"{inc}\", which is not in {d}")
        headers[inc] = _read(path)
        pending.extend(_INCLUDE.findall(headers[inc]))
    return KernelSource(name, text, tuple(sorted(headers.items())))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- dtypes -------------------------------------------------------------------------------
# torchlite dtype code (torchlite/_core/kernels/types.h) -> the kernels' element type
CTYPE = {0: "bool", 1: "tl::u8", 2: "tl::i8", 3: "tl::i16", 4: "tl::i32", 5: "tl::i64",
         6: "__half", 7: "__nv_bfloat16", 8: "float", 9: "double", 10: "tl::c64", 11: "tl::c128"}
(BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, COMPLEX64,
 COMPLEX128) = range(12)
FLOATS = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)
INTS = (UINT8, INT8, INT16, INT32, INT64)
ALL = (BOOL,) + INTS + FLOATS                 # the real dtypes
COMPLEX = (COMPLEX64, COMPLEX128)
REAL_OF = {COMPLEX64: FLOAT32, COMPLEX128: FLOAT64}
COMPLEX32 = 12               # no kernels of its own: moved by bits, computed on host copies
ITEMSIZE = {BOOL: 1, UINT8: 1, INT8: 1, INT16: 2, INT32: 4, INT64: 8, FLOAT16: 2, BFLOAT16: 2,
            FLOAT32: 4, FLOAT64: 8, COMPLEX64: 8, COMPLEX128: 16, COMPLEX32: 4}
BITS_TYPE = {1: "tl::u8", 2: "tl::u16", 4: "tl::u32", 8: "tl::u64", 16: "tl::u128"}   # by item size


def functor(op):
    """The tl::op functor of a CPU op name: NAN_TO_NUM -> tl::op::NanToNum."""
    return "tl::op::" + "".join(w.capitalize() for w in op.lower().split("_"))


# ---- elementwise op lists (the CPU's, kernels/ewise_ops.h) ---------------------------------
UNARY_FLOAT = ("NEG ABS SIGN SQUARE RECIPROCAL EXP EXP2 EXPM1 LOG LOG2 LOG10 LOG1P SQRT RSQRT "
               "SIN COS TAN ASIN ACOS ATAN SINH COSH TANH ASINH ACOSH ATANH ERF ERFC ERFINV "
               "SIGMOID LOGIT FLOOR CEIL ROUND TRUNC FRAC RELU CLAMP NAN_TO_NUM ISNAN ISINF "
               "ISPOSINF ISNEGINF ISFINITE SIGNBIT LOGICAL_NOT LGAMMA ROUND_DECIMALS ANGLE SGN "
               "GELU GELU_TANH SILU HARDSWISH HARDSIGMOID").split()
UNARY_INT = ("NEG ABS SIGN SQUARE BITWISE_NOT RELU CLAMP LOGICAL_NOT ISNAN ISINF ISPOSINF "
             "ISNEGINF ISFINITE SIGNBIT").split()
UNARY_BOOL = ("LOGICAL_NOT BITWISE_NOT ABS SIGN SQUARE ISNAN ISINF ISPOSINF ISNEGINF ISFINITE "
              "SIGNBIT").split()
UNARY_TO_BOOL = set("ISNAN ISINF ISPOSINF ISNEGINF ISFINITE SIGNBIT LOGICAL_NOT".split())

BINARY_FLOAT = ("ADD SUB MUL DIV DIV_TRUNC DIV_FLOOR REMAINDER FMOD POW ATAN2 HYPOT COPYSIGN "
                "MAXIMUM MINIMUM FMAX FMIN EQ NE LT LE GT GE LOGICAL_AND LOGICAL_OR LOGICAL_XOR "
                "ADD_ALPHA XLOGY THRESHOLD_BACKWARD GELU_BACKWARD GELU_TANH_BACKWARD "
                "SILU_BACKWARD HARDSWISH_BACKWARD HARDSIGMOID_BACKWARD").split()
BINARY_INT = ("ADD SUB MUL DIV_TRUNC DIV_FLOOR REMAINDER FMOD POW MAXIMUM MINIMUM BITWISE_AND "
              "BITWISE_OR BITWISE_XOR SHL SHR ADD_ALPHA EQ NE LT LE GT GE LOGICAL_AND LOGICAL_OR "
              "LOGICAL_XOR").split()
BINARY_BOOL = ("ADD MUL MAXIMUM MINIMUM BITWISE_AND BITWISE_OR BITWISE_XOR EQ NE LT LE GT GE "
               "LOGICAL_AND LOGICAL_OR LOGICAL_XOR").split()
BINARY_TO_BOOL = set("EQ NE LT LE GT GE LOGICAL_AND LOGICAL_OR LOGICAL_XOR".split())

TERNARY_FLOAT = ("LERP", "ADDCMUL", "ADDCDIV")      # WHERE: by element size, any dtype

# complex64/complex128 (the CPU's TL_*_OPS_COMPLEX, and the complex loops of ewise_body.h that
# return a real or bool: abs, angle and the predicates)
UNARY_COMPLEX = ("NEG SQUARE RECIPROCAL EXP EXP2 EXPM1 LOG LOG2 LOG10 LOG1P SQRT RSQRT SIN COS TAN "
                 "ASIN ACOS ATAN SINH COSH TANH ASINH ACOSH ATANH SIGMOID NAN_TO_NUM SGN CONJ ABS "
                 "ANGLE ISNAN ISINF ISFINITE LOGICAL_NOT").split()
UNARY_COMPLEX_TO_REAL = {"ABS", "ANGLE"}
BINARY_COMPLEX = "ADD SUB MUL DIV POW ADD_ALPHA EQ NE".split()


def _unary_dtypes(op):
    return ((FLOATS if op in UNARY_FLOAT else ()) + (INTS if op in UNARY_INT else ())
            + ((BOOL,) if op in UNARY_BOOL else ()) + (COMPLEX if op in UNARY_COMPLEX else ()))


def _binary_dtypes(op):
    return ((FLOATS if op in BINARY_FLOAT else ()) + (INTS if op in BINARY_INT else ())
            + ((BOOL,) if op in BINARY_BOOL else ()) + (COMPLEX if op in BINARY_COMPLEX else ()))


def unary_ops():
    return sorted(set(UNARY_FLOAT) | set(UNARY_INT) | set(UNARY_BOOL) | set(UNARY_COMPLEX))


def binary_ops():
    return sorted(set(BINARY_FLOAT) | set(BINARY_INT) | set(BINARY_BOOL) | set(BINARY_COMPLEX))


# ---- name expressions ---------------------------------------------------------------------
@lru_cache(maxsize=None)      # a name per launch: made once
def unary_kernel(op, dtype):
    """The kernel of unary `op` on `dtype` (the output is bool for predicates)."""
    if dtype not in _unary_dtypes(op):
        raise KeyError(f"no CUDA kernel for unary {op} on dtype code {dtype}")
    if op in UNARY_TO_BOOL:
        out = "bool"
    elif dtype in COMPLEX and op in UNARY_COMPLEX_TO_REAL:
        out = CTYPE[REAL_OF[dtype]]              # |z| and arg z are real
    else:
        out = CTYPE[dtype]
    return f"tl_unary<{functor(op)}, {CTYPE[dtype]}, {out}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def binary_kernel(op, dtype):
    if dtype not in _binary_dtypes(op):
        raise KeyError(f"no CUDA kernel for binary {op} on dtype code {dtype}")
    out = "bool" if op in BINARY_TO_BOOL else CTYPE[dtype]
    return f"tl_binary<{functor(op)}, {CTYPE[dtype]}, {out}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def where_kernel(dtype):
    return f"tl_ternary<tl::op::Where, bool, {BITS_TYPE[ITEMSIZE[dtype]]}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def ternary_kernel(op, dtype):
    if op == "WHERE":
        return where_kernel(dtype)
    if op not in TERNARY_FLOAT or dtype not in FLOATS + COMPLEX:
        raise KeyError(f"no CUDA kernel for ternary {op} on dtype code {dtype}")
    t = CTYPE[dtype]
    return f"tl_ternary<{functor(op)}, {t}, {t}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def cast_kernel(src, dst):
    """src -> dst conversion; a same-dtype copy moves bits."""
    if src == dst:
        t = BITS_TYPE[ITEMSIZE[src]]
        return f"tl_unary<tl::op::Identity, {t}, {t}>"
    return f"tl_unary<tl::op::Identity, {CTYPE[src]}, {CTYPE[dst]}>"


def fill_kernel(dtype):
    return f"tl_fill<{BITS_TYPE[ITEMSIZE[dtype]]}>"


def arange_kernel(dtype):
    if dtype in FLOATS:
        return f"tl_arange<{CTYPE[dtype]}>"
    if dtype in INTS:
        return f"tl_arange_int<{CTYPE[dtype]}>"
    raise KeyError(f"no CUDA arange for dtype code {dtype}")


def linspace_kernel(dtype):
    if dtype not in INTS + FLOATS:
        raise KeyError(f"no CUDA linspace for dtype code {dtype}")
    return f"tl_linspace<{CTYPE[dtype]}>"


REDUCTIONS_ALL = ("Sum", "Prod", "Max", "Min", "Any", "All")      # every dtype
REDUCTIONS_FLOAT = ("Mean", "NanSum", "VarStd")                    # floating dtypes


@lru_cache(maxsize=None)      # a name per launch: made once
def reduce_kernel(op, dtype):
    """tl_reduce over `op` (Sum, Prod, Max, Min, Any, All, Mean, NanSum, VarStd)."""
    if dtype not in ALL or not (op in REDUCTIONS_ALL or (op in REDUCTIONS_FLOAT and dtype in FLOATS)):
        raise KeyError(f"no CUDA reduction {op} on dtype code {dtype}")
    return f"tl_reduce<tl::red::{op}<{CTYPE[dtype]}> >"


@lru_cache(maxsize=None)      # a name per launch: made once
def softmax_kernel(dtype, backward=False):
    if dtype not in FLOATS:
        raise KeyError(f"no CUDA softmax on dtype code {dtype}")
    return f"tl_softmax{'_backward' if backward else ''}<{CTYPE[dtype]}>"


# distribution (the CPU's TL_RND_* order) -> output kind -> functor
RANDOM = {
    "UNIFORM": {"f32": "UniformF32", "f64": "UniformF64"},
    "NORMAL": {"f32": "NormalF32", "f64": "NormalF64"},
    "LOG_NORMAL": {"f32": "LogNormalF32", "f64": "LogNormalF64"},
    "EXPONENTIAL": {"f32": "ExponentialF32", "f64": "ExponentialF64"},
    "CAUCHY": {"f32": "CauchyF32", "f64": "CauchyF64"},
    "GEOMETRIC": {"f64": "GeometricF64"},
    "BERNOULLI": {"f32": "Bernoulli<float>", "f64": "Bernoulli<double>", "i64": "Bernoulli<tl::i64>"},
    "BERNOULLI_P": {"f32": "BernoulliP<float>", "f64": "BernoulliP<double>", "i64": "BernoulliP<tl::i64>"},
    "RANDINT": {"i64": "Randint"},
    "RANDINT_WIDE": {"i64": "RandintWide"},
    "BELOW_INDEX": {"i64": "BelowIndex"},
    "BELOW_INDEX_WIDE": {"i64": "BelowIndexWide"},
}
RANDOM_TWO_WORD = {"UniformF64", "NormalF64", "LogNormalF64", "ExponentialF64", "CauchyF64",
                   "GeometricF64", "RandintWide", "BelowIndexWide"}


def random_kernel(dist, out):
    """tl_random for distribution `dist` writing `out` ('f32', 'f64' or 'i64')."""
    f = RANDOM[dist][out]
    return f"tl_random<tl::rnd::{f}{' ' if f.endswith('>') else ''}>"


def random_threads(dist, out, n):
    """Threads (= Philox blocks) a request for n elements takes: the CPU's group rule."""
    per_group = 32 if RANDOM[dist][out] in RANDOM_TWO_WORD else 64
    return (n + per_group - 1) // per_group * 16


# GEMM tile configurations (BM, BN, BK, TM, TN) by dtype: a large tile and a small one
GEMM_CONFIGS = {
    FLOAT32: ((128, 128, 8, 8, 8), (64, 64, 8, 4, 4)),
    FLOAT64: ((128, 64, 8, 8, 4), (64, 64, 8, 4, 4)),
    FLOAT16: ((128, 128, 8, 8, 8), (64, 64, 8, 4, 4)),
    BFLOAT16: ((128, 128, 8, 8, 8), (64, 64, 8, 4, 4)),
}


TENSOR_CORE_DTYPES = (FLOAT16, BFLOAT16)      # tl_gemm_tc: mma.sync, sm_80 and later
# tl_gemm_tc's tiles (BM, BN, BK, WARPS_M, WARPS_N, STAGES): large ones for products of many
# tiles, in order of preference (the first whose shared memory the device allows a block),
# and a small one (more blocks) for the rest.  128 x 128 with 4 warps of 64 x 64 and 4 stages
# of 32 was the fastest on an H200 for a @ b (benchmarks/RESULTS-gpu.md, run 7), and two
# such blocks fit a multiprocessor
TC_LARGE = ((128, 128, 32, 2, 2, 4),)
TC_SMALL = (64, 64, 32, 2, 2, 4)
TC_CONFIGS = TC_LARGE + (TC_SMALL,)
# the large tile with its blocks ordered for the L2 cache (GROUP_M rows of tiles at a time):
# not launched by the library until a GPU run measures it (benchmarks/tune_gemm_tc.py tries
# it), compiled with the others so that it is known to build
TC_GROUPED = tuple(cfg + (8,) for cfg in TC_LARGE)


def gemm_tc_shared_bytes(config, a_k, b_k):
    """Dynamic shared memory of tl_gemm_tc: STAGES buffers of both tiles, rows padded by 8."""
    bm, bn, bk, _, _, stages = config[:6]
    a = (bm * (bk + 8)) if a_k else (bk * (bm + 8))
    b = (bn * (bk + 8)) if b_k else (bk * (bn + 8))
    return stages * (a + b) * 2


def gemm_tc_kernel(dtype, config, a_k, b_k):
    """The tensor-core GEMM for float16/bfloat16: tile `config` (TC_CONFIGS), A k-contiguous
    (a_k) or m-contiguous, B k-contiguous (b_k) or n-contiguous.  A seventh element of config,
    GROUP_M, orders the tiles for the L2 cache (gemm.cu; benchmarks/tune_gemm_tc.py)."""
    if dtype not in TENSOR_CORE_DTYPES:
        raise KeyError(f"no tensor-core GEMM for dtype code {dtype}")
    bm, bn, bk, wm, wn, stages = config[:6]
    group = f", {config[6]}" if len(config) > 6 and config[6] > 1 else ""
    return (f"tl_gemm_tc<{CTYPE[dtype]}, {bm}, {bn}, {bk}, {wm}, {wn}, {stages}, "
            f"{int(a_k)}, {int(b_k)}{group}>")


def gemm_kernel(dtype, config):
    bm, bn, bk, tm, tn = config
    return f"tl_gemm<{CTYPE[dtype]}, {bm}, {bn}, {bk}, {tm}, {tn}>"


SPLIT_K_DTYPES = (FLOAT32, FLOAT64)      # their GEMM writes the compute type: exact partials


def gemm_splitk_sum_kernel(dtype):
    """The sum of a split-K GEMM's partial products (float32/float64)."""
    if dtype not in SPLIT_K_DTYPES:
        raise KeyError(f"no split-K sum for dtype code {dtype}")
    return f"tl_gemm_splitk_sum<{CTYPE[dtype]}>"


SCATTER_ADD_DTYPES = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64, INT32, INT64)   # atomicAdd exists


def gather_kernel(dtype):
    """gather / index_select / embedding: moves bits, one kernel per element size."""
    return f"tl_gather<{BITS_TYPE[ITEMSIZE[dtype]]}>"


def scatter_kernel(dtype):
    return f"tl_scatter<{BITS_TYPE[ITEMSIZE[dtype]]}>"


def scatter_add_kernel(dtype):
    if dtype not in SCATTER_ADD_DTYPES:
        raise KeyError(f"no CUDA scatter_add on dtype code {dtype} (no atomic add)")
    return f"tl_scatter_add<{CTYPE[dtype]}>"


MULTI_MAX = 48              # parameters per tl_sgd_multi launch (optim.cu's TL_MULTI_MAX)


def optimizer_kernel(name, dtype):
    """tl_sgd / tl_adam / tl_sgd_multi over parameters of a floating dtype."""
    if name not in ("sgd", "adam", "sgd_multi") or dtype not in FLOATS:
        raise KeyError(f"no fused CUDA {name} on dtype code {dtype}")
    return f"tl_{name}<{CTYPE[dtype]}>"


NLL_DTYPES = (FLOAT32, FLOAT64)
NLL_TARGETS = (INT64, UINT8)


def lstm_kernel(kind, dtype):
    """tl_lstm_fwd / tl_lstm_bwd (kind 'fwd' or 'bwd') over float32/float64 arrays."""
    if kind not in ("fwd", "bwd") or dtype not in (FLOAT32, FLOAT64):
        raise KeyError(f"no CUDA LSTM step {kind} on dtype code {dtype}")
    return f"tl_lstm_{kind}<{CTYPE[dtype]}>"


def nll_kernel(kind, dtype, target_dtype):
    """tl_nll_forward / tl_nll_backward / tl_nll_reduce (kind 'forward', 'backward' or
    'reduce') for float32/float64 log-probabilities and int64/uint8 targets."""
    if dtype not in NLL_DTYPES or target_dtype not in NLL_TARGETS:
        raise KeyError(f"no CUDA nll kernel for dtype codes {dtype}, {target_dtype}")
    return f"tl_nll_{kind}<{CTYPE[dtype]}, {CTYPE[target_dtype]}>"


MAX_POOL_DTYPES = FLOATS + (INT64, INT32, INT16, INT8, UINT8)


def max_pool_kernel(dtype):
    """tl_max_pool2d for the dtypes the CPU's max pooling takes."""
    if dtype not in MAX_POOL_DTYPES:
        raise KeyError(f"no CUDA max pooling for dtype code {dtype}")
    return f"tl_max_pool2d<{CTYPE[dtype]}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def col2im_kernel(dtype):
    """tl_col2im for float32/float64 columns."""
    if dtype not in (FLOAT32, FLOAT64):
        raise KeyError(f"no CUDA col2im for dtype code {dtype}")
    return f"tl_col2im<{CTYPE[dtype]}>"


@lru_cache(maxsize=None)      # a name per launch: made once
def im2col_kernel(dtype):
    """tl_im2col for float32/float64 inputs."""
    if dtype not in (FLOAT32, FLOAT64):
        raise KeyError(f"no CUDA im2col for dtype code {dtype}")
    return f"tl_im2col<{CTYPE[dtype]}>"


def batch_norm_coefs_kernel(kind, dtype):
    """tl_bn_forward_coefs / tl_bn_backward_coefs (kind 'forward' or 'backward')."""
    if dtype not in (FLOAT32, FLOAT64):
        raise KeyError(f"no CUDA batch-norm coefficients for dtype code {dtype}")
    return f"tl_bn_{kind}_coefs<{CTYPE[dtype]}>"


# ---- the catalogue --------------------------------------------------------------------------
# per-source NVRTC options beyond the common ones (_nvrtc.base_options)
SOURCE_OPTIONS = {
    "elementwise.cu": (),
    "reduction.cu": (),
    "softmax.cu": (),
    "random.cu": ("--fmad=false",),      # the CPU's rounding, step by step (tl_philox.cuh)
    "gemm.cu": (),
    "indexing.cu": (),
    "optim.cu": (),
    "loss.cu": (),
    "norm.cu": (),
    "conv.cu": (),
    "pool.cu": (),
    "rnn.cu": (),
}


@lru_cache(maxsize=None)
def variants():
    """{source name: (name expression, ...)} for every kernel variant."""
    ew = []
    for op in unary_ops():
        ew += [unary_kernel(op, dt) for dt in _unary_dtypes(op)]
    for op in binary_ops():
        ew += [binary_kernel(op, dt) for dt in _binary_dtypes(op)]
    ew += sorted({where_kernel(dt) for dt in ALL + COMPLEX})
    ew += [ternary_kernel(op, dt) for op in TERNARY_FLOAT for dt in FLOATS + COMPLEX]
    ew += [cast_kernel(s, d) for s in ALL + COMPLEX for d in ALL + COMPLEX if s != d]
    ew += sorted({cast_kernel(dt, dt) for dt in ALL + COMPLEX})
    ew += sorted({fill_kernel(dt) for dt in ALL + COMPLEX})
    ew += [arange_kernel(dt) for dt in INTS + FLOATS]
    ew += [linspace_kernel(dt) for dt in INTS + FLOATS]
    red = [reduce_kernel(op, dt) for op in REDUCTIONS_ALL for dt in ALL]
    red += [reduce_kernel(op, dt) for op in REDUCTIONS_FLOAT for dt in FLOATS]
    sm = [softmax_kernel(dt, bw) for dt in FLOATS for bw in (False, True)]
    rnd = [random_kernel(d, o) for d in RANDOM for o in RANDOM[d]]
    gemm = [gemm_kernel(dt, c) for dt in GEMM_CONFIGS for c in GEMM_CONFIGS[dt]]
    gemm += [gemm_tc_kernel(dt, c, ak, bk) for dt in TENSOR_CORE_DTYPES for c in TC_CONFIGS + TC_GROUPED
             for ak in (True, False) for bk in (True, False)]
    gemm += [gemm_splitk_sum_kernel(dt) for dt in SPLIT_K_DTYPES]
    index = sorted({gather_kernel(dt) for dt in ALL + COMPLEX})
    index += sorted({scatter_kernel(dt) for dt in ALL + COMPLEX})
    index += [scatter_add_kernel(dt) for dt in SCATTER_ADD_DTYPES]
    optim = [optimizer_kernel(name, dt) for name in ("sgd", "adam", "sgd_multi") for dt in FLOATS]
    loss = [nll_kernel(k, dt, tt) for k in ("forward", "backward", "reduce") for dt in NLL_DTYPES
            for tt in NLL_TARGETS]
    norm = [batch_norm_coefs_kernel(k, dt) for k in ("forward", "backward")
            for dt in (FLOAT32, FLOAT64)]
    conv = [k(dt) for k in (col2im_kernel, im2col_kernel) for dt in (FLOAT32, FLOAT64)]
    pool = [max_pool_kernel(dt) for dt in MAX_POOL_DTYPES]
    rnn = [lstm_kernel(k, dt) for k in ("fwd", "bwd") for dt in (FLOAT32, FLOAT64)]
    return {"elementwise.cu": tuple(ew), "reduction.cu": tuple(red), "softmax.cu": tuple(sm),
            "random.cu": tuple(rnd), "gemm.cu": tuple(gemm), "indexing.cu": tuple(index),
            "optim.cu": tuple(optim), "loss.cu": tuple(loss), "norm.cu": tuple(norm),
            "conv.cu": tuple(conv), "pool.cu": tuple(pool), "rnn.cu": tuple(rnn)}


# ---- parameter packing (layouts pinned by static_asserts in the .cuh files) ---------------
MAX_DIMS = 25          # TL_MAX_DIMS
MAX_SCALARS = 4        # TL_MAX_SCALARS


def magic_divisor(d):
    """(magic, shift) with q = (umulhi(i, magic) + i) >> shift == i // d for 0 <= i < 2^32
    (division by an invariant integer; the 33-bit multiplier is 2^32 + magic)."""
    if not 1 <= d < (1 << 32):
        raise ValueError(f"divisor {d} outside [1, 2^32)")
    shift = (d - 1).bit_length()                # ceil(log2 d)
    magic = ((1 << 32) * ((1 << shift) - d)) // d + 1
    return magic & 0xFFFFFFFF, shift


def indexer_size(nops):
    """sizeof(tl::Indexer<nops>)."""
    return _stride_offset(nops) + 8 * nops * MAX_DIMS


def _stride_offset(nops):
    return (8 + 8 * nops + 12 * MAX_DIMS + 7) // 8 * 8


def pack_indexer(shape=None, strides=None, steps=None):
    """The bytes of a tl::Indexer<N>.

    Contiguous fast path: pack_indexer(steps=(1, 1, 0)) (N = len(steps)): operand k at
    i * steps[k].  Strided: pack_indexer(shape, strides) with strides[k] the element strides
    of operand k (output first), shape dim 0 outermost; at most MAX_DIMS dims, every size
    >= 1 and the element count < 2^32 (the kernels index strided launches in 32 bits)."""
    if shape is None:
        nops = len(steps)
        head = struct.pack(f"<ii{nops}q", 0, 0, *steps)
        return head + bytes(indexer_size(nops) - len(head))
    nops, nd = len(strides), len(shape)
    if nd > MAX_DIMS:
        raise ValueError(f"{nd} dims after coalescing; the CUDA kernels take at most {MAX_DIMS}")
    numel = 1
    for s in shape:
        numel *= s
    if numel >= 1 << 32 or min(shape, default=1) < 1:
        raise ValueError(f"strided launch of shape {tuple(shape)}: sizes must be >= 1 and the "
                         f"element count < 2^32 (split the launch)")
    pad = MAX_DIMS - nd
    magics = [magic_divisor(s) for s in shape]
    out = struct.pack(f"<ii{nops}q", nd, 0, *([0] * nops))
    out += struct.pack(f"<{MAX_DIMS}I", *shape, *([0] * pad))
    out += struct.pack(f"<{MAX_DIMS}I", *(m for m, _ in magics), *([0] * pad))
    out += struct.pack(f"<{MAX_DIMS}I", *(s for _, s in magics), *([0] * pad))
    out += bytes(_stride_offset(nops) - len(out))
    for d in range(MAX_DIMS):
        out += struct.pack(f"<{nops}q", *((strides[k][d] if d < nd else 0) for k in range(nops)))
    assert len(out) == indexer_size(nops)
    return out


def indexer_offsets(packed, nops, i):
    """Operand offsets at linear index i, computed from packed bytes exactly as the kernel's
    tl::offsets does (magic-number division); for tests of pack_indexer."""
    nd = struct.unpack_from("<i", packed, 0)[0]
    if nd == 0:
        steps = struct.unpack_from(f"<{nops}q", packed, 8)
        return [i * s for s in steps]
    base = 8 + 8 * nops
    size = struct.unpack_from(f"<{MAX_DIMS}I", packed, base)
    magic = struct.unpack_from(f"<{MAX_DIMS}I", packed, base + 4 * MAX_DIMS)
    shift = struct.unpack_from(f"<{MAX_DIMS}I", packed, base + 8 * MAX_DIMS)
    stride = struct.unpack_from(f"<{MAX_DIMS * nops}q", packed, _stride_offset(nops))
    offs, rem = [0] * nops, i
    for d in range(nd - 1, -1, -1):
        q = (((rem * magic[d]) >> 32) + rem) >> shift[d]
        c = rem - q * size[d]
        for k in range(nops):
            offs[k] += c * stride[d * nops + k]
        rem = q
    return offs


_PARAMS = struct.Struct(f"<{MAX_SCALARS}dQ")
_NO_SCALARS = (0.0,) * MAX_SCALARS


def pack_params(scalars=(), err_ptr=0):
    """The bytes of tl::Params: up to MAX_SCALARS doubles and the error-flag pointer."""
    n = len(scalars)
    if n > MAX_SCALARS:
        raise ValueError(f"at most {MAX_SCALARS} op scalars")
    return _PARAMS.pack(*scalars, *_NO_SCALARS[n:], err_ptr)


def pack_random_request(seed, base, n, a=0.0, b=0.0, bits=24, low=0, range_=0, reject=0,
                        thresh=0, p_ptr=0, out_ptr=0):
    """The bytes of tl::rnd::Req (96 bytes), field for field the CPU's tl_rnd_req."""
    seed &= 0xFFFFFFFFFFFFFFFF
    return struct.pack("<IIQqddifqQQQQQ", seed & 0xFFFFFFFF, seed >> 32, base, n, a, b, bits,
                       1.0 / (1 << bits), low, range_ & 0xFFFFFFFFFFFFFFFF, reject, thresh,
                       p_ptr, out_ptr)
