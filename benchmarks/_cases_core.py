"""The benchmark cases and the issue's speed targets (the one home of both).

A case builds, for one library, a zero-argument callable that runs the op once; the harness
(bench.py) times it.  Libraries are driven through a small adapter (``TorchLike`` for
torchlite and torch, which share PyTorch's API, and ``NumpyLib``), so each case is written
once.  An op the library does not have raises ``NotImplementedOp`` while building, which the
harness reports as "n/a (not implemented)".

Units: GFLOP/s and GB/s are throughputs (bigger is better); "us/op" is a time per op
(smaller is better).  GB/s counts the bytes the op must read plus write; M = 2**20 elements.
A target is the least acceptable ratio torchlite throughput / torch throughput (for us/op the
times are inverted, so a ratio above 1 always means torchlite is faster)."""
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

M = 1 << 20
F32 = 4           # bytes per float32


class NotImplementedOp(Exception):
    """The library lacks an op the case needs (reported as "n/a (not implemented)")."""


# ---- libraries -----------------------------------------------------------------------------
class TorchLike:
    """torchlite or torch: PyTorch's API, so the same case code drives both."""

    def __init__(self, name, mod):
        self.name = name
        self.mod = mod

    def array(self, x):
        # clone so the tensor lives in the library's own allocator, as a user's tensor would
        return self.mod.from_numpy(x).clone()

    def fn(self, *paths):
        """The first of the dotted paths (e.g. "softmax", "nn.functional.softmax") it has."""
        for path in paths:
            obj = self.mod
            try:
                for part in path.split("."):
                    obj = getattr(obj, part)
            except (AttributeError, ImportError):
                continue
            return obj
        raise NotImplementedOp(" / ".join(paths))

    def t(self, x):
        return x.t()

    def leaf(self, x):
        """A leaf tensor with requires_grad=True (autograd's input), in the library's memory."""
        t = self.array(x)
        if not hasattr(t, "requires_grad_"):
            raise NotImplementedOp("autograd (requires_grad_)")
        return t.requires_grad_()

    def to_numpy(self, r):
        if self.name == "torch":
            return r.detach().numpy()
        return np.asarray(r)


def _np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


class NumpyLib:
    """NumPy, with torch-style names for the few ops whose spelling differs."""
    name = "numpy"
    _FUNCS = {
        "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "sum": lambda x, dim=None: np.sum(x, axis=dim),
        "softmax": _np_softmax,
        "bmm": np.matmul,
        "mul": np.multiply,
    }

    def array(self, x):
        return x.copy()

    def fn(self, *paths):
        name = paths[0]
        f = self._FUNCS.get(name) or getattr(np, name, None)
        if f is None:
            raise NotImplementedOp(name)
        return f

    def t(self, x):
        return x.T

    def leaf(self, x):
        raise NotImplementedOp("autograd (NumPy has none)")

    def to_numpy(self, r):
        return np.asarray(r)


class Staged:
    """A callable whose every call has an untimed setup: the harness times only
    `run(setup())`'s run part (e.g. a backward, with the forward that builds its graph done
    in setup).  Calling it directly runs both, which is what the result check uses."""

    def __init__(self, setup, run):
        self.setup = setup
        self.run = run

    def __call__(self):
        return self.run(self.setup())


# ---- targets -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """torchlite throughput / torch throughput must be >= ratio (at the listed thread counts)."""
    ratio: float
    text: str                         # how the issue states it
    aim: Optional[float] = None       # a stretch goal, reported beside met/missed
    threads: Optional[tuple] = None   # None: every thread count


T_MATMUL = Target(0.8, ">= 0.8x", threads=(1, 2))
T_EWISE16M = Target(1.0, ">= 1.0x (aim 2x)", aim=2.0)
T_STRIDED = Target(0.8, ">= 0.8x")
T_REDUCE = Target(0.8, ">= 0.8x")
T_OVERHEAD = Target(1 / 1.5, "us <= 1.5x torch")
T_AUTOGRAD_CHAIN = Target(1 / 1.5, "us <= 1.5x torch")
T_MATMUL_BWD = Target(1 / 1.2, "time <= 1.2x torch")


# ---- cases ---------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    unit: str                                   # "GFLOP/s", "GB/s" or "us/op"
    work: float                                 # flops, bytes or ops per call
    make_inputs: Callable[[np.random.Generator], list]
    build: Callable                             # (lib, inputs) -> zero-arg callable
    desc: str
    target: Optional[Target] = None
    check: bool = True                          # compare each library's result with NumPy's
    tags: tuple = field(default_factory=tuple)
    # the expected result from the NumPy inputs, for cases NumPy cannot run itself (autograd);
    # None: run the case's build on NumPy.  May return a list when the case returns a tuple.
    reference: Optional[Callable] = None


def _randn(*shape):
    return lambda rng: [rng.standard_normal(shape, dtype=np.float32)]


def _randn2(sa, sb):
    return lambda rng: [rng.standard_normal(sa, dtype=np.float32),
                        rng.standard_normal(sb, dtype=np.float32)]


def _uniform(lo, hi, n):
    return lambda rng: [rng.uniform(lo, hi, n).astype(np.float32)]


def _matmul_build(form):
    """NN: A·B;  TN: A^T·B (A stored transposed, as in a backward);  NT: A·B^T."""
    def build(lib, xs):
        mm = lib.fn("matmul")
        a, b = lib.array(xs[0]), lib.array(xs[1])
        if form == "TN":
            a = lib.t(a)
        elif form == "NT":
            b = lib.t(b)
        return lambda: mm(a, b)
    return build


def _bmm_build(lib, xs):
    bmm = lib.fn("bmm")
    a, b = lib.array(xs[0]), lib.array(xs[1])
    return lambda: bmm(a, b)


def _ewise_build(op, nargs, transpose=False):
    def build(lib, xs):
        f = lib.fn(op)
        args = [lib.array(x) for x in xs[:nargs]]
        if transpose:
            args = [lib.t(a) for a in args]
        if nargs == 1:
            a, = args
            return lambda: f(a)
        a, b = args
        return lambda: f(a, b)
    return build


def _sum_build(dim):
    def build(lib, xs):
        f = lib.fn("sum")
        a = lib.array(xs[0])
        if dim is None:
            return lambda: f(a)
        return lambda: f(a, dim)
    return build


def _softmax_build(lib, xs):
    f = lib.fn("softmax", "nn.functional.softmax")
    a = lib.array(xs[0])
    return lambda: f(a, -1)


OVERHEAD_REPS = 100     # ops per call in the overhead cases, so the call itself is amortised


def _add_1elem_build(lib, xs):
    a, b = lib.array(xs[0]), lib.array(xs[1])

    def run():
        r = None
        for _ in range(OVERHEAD_REPS):
            r = a + b
        return r
    return run


def _chain_build(lib, xs):
    """100 small ops: y = tanh(y*w + w) - w, 25 times (4 ops each), as in BASELINE.md."""
    tanh = lib.fn("tanh")
    y0, w = lib.array(xs[0]), lib.array(xs[1])

    def run():
        y = y0
        for _ in range(OVERHEAD_REPS // 4):
            y = tanh(y * w + w) - w
        return y
    return run


def _chain_grad_build(lib, xs):
    """The chain above with w a leaf requiring grad: forward, then backward from a fixed
    gradient of ones (no extra op), with w.grad cleared first as a training step does.
    Returns dL/dw."""
    tanh = lib.fn("tanh")
    y0, w = lib.array(xs[0]), lib.leaf(xs[1])
    ones = lib.array(np.ones_like(xs[1]))

    def run():
        w.grad = None
        y = y0
        for _ in range(OVERHEAD_REPS // 4):
            y = tanh(y * w + w) - w
        y.backward(ones)
        return w.grad
    return run


def _chain_grad_reference(xs):
    """dy/dw of the chain, elementwise, by forward-mode differentiation in float64."""
    y, w = xs[0].astype(np.float64), xs[1].astype(np.float64)
    dy = np.zeros_like(y)
    for _ in range(OVERHEAD_REPS // 4):
        t = np.tanh(y * w + w)
        dy = (1 - t * t) * (dy * w + y + 1) - 1
        y = t - w
    return dy


def _matmul_bwd_build(lib, xs):
    """Backward of C = A @ B from a fixed G; the forward (building the graph) is untimed."""
    mm = lib.fn("matmul")
    a, b, g = lib.leaf(xs[0]), lib.leaf(xs[1]), lib.array(xs[2])

    def forward():
        a.grad = b.grad = None
        return mm(a, b)

    def backward(c):
        c.backward(g)
        return a.grad, b.grad
    return Staged(forward, backward)


def _matmul_bwd_reference(xs):
    a, b, g = xs
    return [g @ b.T, a.T @ g]


def _matmul_cases():
    cases = []
    forms = {"NN": "A·B", "TN": "A^T·B (A stored transposed)", "NT": "A·B^T (B stored transposed)"}
    for n in (1024, 2048):
        for form, what in forms.items():
            cases.append(Case(f"matmul_{n}_{form}", "GFLOP/s", 2.0 * n ** 3, _randn2((n, n), (n, n)),
                              _matmul_build(form), f"{what}, {n}x{n} float32", T_MATMUL,
                              tags=("matmul",)))
    cases.append(Case("bmm_64x128x128", "GFLOP/s", 2.0 * 64 * 128 ** 3,
                      _randn2((64, 128, 128), (64, 128, 128)), _bmm_build,
                      "batched matmul, 64 products of 128x128 (a matmul case)", T_MATMUL,
                      tags=("matmul",)))
    return cases


_EWISE = (("add", 2), ("mul", 2), ("exp", 1), ("sigmoid", 1))


def _elementwise_cases():
    cases = []
    n16 = 16 * M
    for op, nargs in _EWISE:
        cases.append(Case(f"{op}_16M", "GB/s", (nargs + 1) * n16 * F32,
                          _randn2((n16,), (n16,)), _ewise_build(op, nargs),
                          f"{op} of contiguous 16M float32, out of place", T_EWISE16M,
                          tags=("elementwise",)))
    for op, nargs in _EWISE:
        cases.append(Case(f"{op}_T4096x4096", "GB/s", (nargs + 1) * n16 * F32,
                          _randn2((4096, 4096), (4096, 4096)), _ewise_build(op, nargs, True),
                          f"{op} of transposed 4096x4096 views (x.t()), out of place",
                          T_STRIDED, tags=("elementwise",)))
    cases.append(Case("bcast_add_4096x4096+4096", "GB/s", (2 * n16 + 4096) * F32,
                      _randn2((4096, 4096), (4096,)), _ewise_build("add", 2),
                      "add a 4096 row to each row of 4096x4096", T_STRIDED,
                      tags=("elementwise",)))
    for op in ("add", "mul"):
        cases.append(Case(f"{op}_1M", "GB/s", 3 * M * F32, _randn2((M,), (M,)),
                          _ewise_build(op, 2), f"{op} of contiguous 1M float32 (in cache)",
                          None, tags=("elementwise",)))
    # loops whose math is one source with the CUDA kernels (cuda_kernels/tl_scalar_math.cuh,
    # tl_complex.cuh): Python's integer floor division, complex products
    n4 = 4 * M
    cases.append(Case("floor_divide_int64_4M", "GB/s", 3 * n4 * 8, _int_operands(n4),
                      _ewise_build("floor_divide", 2), "a // b of contiguous 4M int64 (b != 0)",
                      None, tags=("elementwise",)))
    cases.append(Case("mul_complex64_4M", "GB/s", 3 * n4 * 8, _complex_operands(n4),
                      _ewise_build("mul", 2), "a * b of contiguous 4M complex64", None,
                      tags=("elementwise",)))
    # the per-element samplers (kernels/random_sample.h): one draw per element, random
    # parameters (values differ between libraries: not compared)
    cases.append(Case("binomial_1M", "us/op", 1, _binomial_operands(M), _sampler_build("binomial"),
                      "1M Binomial(50, p) draws, p uniform in (0, 1), float64", None, check=False,
                      tags=("random",)))
    cases.append(Case("poisson_1M", "us/op", 1, _poisson_operands(M),
                      _sampler_build("poisson"), "1M Poisson(rate) draws, rate uniform in (0, 30), "
                      "float64", None, check=False, tags=("random",)))
    return cases


def _binomial_operands(n):
    return lambda rng: [np.full(n, 50.0), rng.uniform(0.0, 1.0, n)]


def _poisson_operands(n):
    return lambda rng: [rng.uniform(0.0, 30.0, n)]


def _sampler_build(name):
    """torchlite.binomial/poisson, torch's, or NumPy's Generator method of the same name."""
    def build(lib, xs):
        if lib.name == "numpy":
            gen = np.random.default_rng(0)
            f = getattr(gen, name)
            args = [xs[0].astype(np.int64), xs[1]] if name == "binomial" else xs   # (n: int)
            return lambda: f(*args)
        f = lib.fn(name)
        args = [lib.array(x) for x in xs]
        return lambda: f(*args)
    return build


def _int_operands(n):
    def make(rng):
        b = rng.integers(1, 50, n) * rng.choice(np.array([-1, 1]), n)
        return [rng.integers(-1000, 1000, n), b.astype(np.int64)]
    return make


def _complex_operands(n):
    def make(rng):
        return [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
                for _ in range(2)]
    return make


# the float32 math functions of issue 17's speed list, on arguments inside each one's domain
_MATH = (("sin", -4, 4), ("cos", -4, 4), ("tan", -1.5, 1.5), ("atan", -4, 4), ("erf", -3, 3),
         ("erfinv", -0.99, 0.99), ("log1p", -0.9, 10), ("expm1", -5, 5))
T_MATH = Target(1.0, ">= 1.0x")


def _pow_build(lib, xs):
    a = lib.array(xs[0])
    return lambda: a ** 1.7


def _math_cases():
    cases = []
    for n, label in ((M, "1M"), (16 * M, "16M")):
        for op, lo, hi in _MATH:
            cases.append(Case(f"{op}_{label}", "GB/s", 2 * n * F32, _uniform(lo, hi, n),
                              _ewise_build(op, 1), f"{op} of contiguous {label} float32",
                              T_MATH, tags=("elementwise", "math")))
        cases.append(Case(f"pow1.7_{label}", "GB/s", 2 * n * F32, _uniform(0.1, 10, n),
                          _pow_build, f"x ** 1.7 of contiguous {label} float32", T_MATH,
                          tags=("elementwise", "math")))
    return cases


def _reduction_cases():
    n16 = 16 * M
    return [
        Case("sum_16M", "GB/s", n16 * F32 + F32, _randn(n16), _sum_build(None),
             "sum of all 16M float32", T_REDUCE, tags=("reduction",)),
        Case("sum_dim0_4096x4096", "GB/s", (n16 + 4096) * F32, _randn(4096, 4096),
             _sum_build(0), "sum over dim 0 (columns) of 4096x4096", T_REDUCE,
             tags=("reduction",)),
        Case("sum_dim1_4096x4096", "GB/s", (n16 + 4096) * F32, _randn(4096, 4096),
             _sum_build(1), "sum over dim 1 (rows) of 4096x4096", T_REDUCE,
             tags=("reduction",)),
        Case("softmax_4096x1024", "GB/s", 2 * 4 * M * F32, _randn(4096, 1024), _softmax_build,
             "softmax over the last dim of 4096x1024", T_REDUCE, tags=("reduction",)),
    ]


def _overhead_cases():
    return [
        Case("add_1elem_overhead", "us/op", OVERHEAD_REPS, _randn2((1,), (1,)), _add_1elem_build,
             "a + b on 1-element tensors (per-op dispatch cost)", T_OVERHEAD,
             tags=("overhead",)),
        Case("chain100_64elem", "us/op", OVERHEAD_REPS, _randn2((64,), (64,)), _chain_build,
             "100 small ops: y = tanh(y*w + w) - w, 25 times, on 64 floats", None,
             tags=("overhead",)),
    ]


def _autograd_cases():
    n = 2048
    return [
        Case("chain100_fwd+bwd", "us/op", OVERHEAD_REPS, _randn2((64,), (64,)),
             _chain_grad_build, "the chain of 100 ops with w requiring grad, forward + "
             "backward; time per forward op", T_AUTOGRAD_CHAIN, tags=("autograd", "overhead"),
             reference=_chain_grad_reference),
        Case(f"matmul_{n}_bwd", "GFLOP/s", 2 * 2.0 * n ** 3,
             lambda rng: [rng.standard_normal((n, n), dtype=np.float32) for _ in range(3)],
             _matmul_bwd_build, f"C.backward(G) of C = A @ B, {n}x{n} float32, both requiring "
             "grad (two matmuls; the forward is untimed)", T_MATMUL_BWD,
             tags=("autograd", "matmul"), reference=_matmul_bwd_reference),
    ]


CASES = (_elementwise_cases() + _math_cases() + _overhead_cases() + _reduction_cases() + _matmul_cases()
         + _autograd_cases())


def relative_tolerance(case):
    """How far a result may be from NumPy's and still count as the same answer."""
    if case.name.startswith(("sum", "matmul", "bmm")):
        return 1e-3      # a different summation order changes the low bits
    return 1e-4
