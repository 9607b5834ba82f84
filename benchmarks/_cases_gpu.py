"""GPU benchmark cases and issue 15's speed targets (bench_gpu.py runs them): torchlite on CUDA
against PyTorch on CUDA, the same inputs (drawn once from NumPy) in both.

A case's `build(lib, inputs)` returns a zero-argument callable that runs the op once on the
library's device and returns its result; `lib` is bench_gpu.Lib (`.mod` is torchlite or
torch, `.device`, `.tensor(numpy_array)` puts an array on the device).  Units: GFLOP/s counts
2·M·N·K per matmul, GB/s the bytes the op must read plus write (12 per element for `a + b`),
ms/step the time of one training step.  A target is the least acceptable ratio torchlite
throughput / torch throughput; for ms/step it is torch's time / torchlite's time, so a ratio
above 1 always means torchlite is faster.  `tol` bounds the result check: the largest
difference from torch's result over the compared elements, relative to the largest element
of torch's result (bench_gpu.rel_error)."""
import operator
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from _cases_core import F32, M, Target
from _cases_nn import _labels, _mlp, _set_weights, _small_cnn

T_MATMUL = Target(0.6, ">= 0.6x")
T_EWISE = Target(0.85, ">= 0.85x")
T_REDUCE = Target(0.75, ">= 0.75x")
T_MATMUL_HALF = Target(0.5, ">= 0.5x")
T_STEP = Target(1 / 1.5, "time <= 1.5x torch")

# (section key, heading), in the order the results file shows them
SECTIONS = (
    ("matmul", "Matrix multiply, float32 (TF32 off in torch; torchlite has no TF32)"),
    ("matmul_half", "Matrix multiply, float16 and bfloat16 (float32 accumulation)"),
    ("elementwise", "Elementwise, float32, out of place"),
    ("reduction", "Sums, float32"),
    ("training", "Training steps (zero_grad, forward, CrossEntropyLoss, backward, SGD with "
                 "momentum 0.9)"),
)
TIME_UNITS = ("ms/step",)

# sizes: "full" is what issue 15's targets are stated for; "quick" is a smoke run
PROFILES = {
    "full": {"matmul": (4096, 2048), "bmm": (64, 512), "ewise": 64 * M, "sum": 64 * M,
             "sum2d": 8192, "mlp_batches": (64, 256), "cnn_batch": 64},
    "quick": {"matmul": (1024, 512), "bmm": (16, 128), "ewise": 1 * M, "sum": 1 * M,
              "sum2d": 1024, "mlp_batches": (64,), "cnn_batch": 64},
}


@dataclass(frozen=True)
class GpuCase:
    name: str
    section: str                     # a key of SECTIONS
    unit: str                        # "GFLOP/s", "GB/s" or "ms/step"
    work: float                      # flops or bytes per call (1 for ms/step)
    make_inputs: Callable            # (numpy Generator) -> list of arrays
    build: Callable                  # (lib, inputs) -> zero-argument callable
    desc: str
    target: Optional[Target] = None
    tol: float = 1e-6


# ---- inputs ------------------------------------------------------------------------------------
def _normal(*shapes):
    return lambda rng: [rng.standard_normal(s, dtype=np.float32) for s in shapes]


def _uniform(shape):
    """U[0, 1): a sum far from zero, so a dropped or doubled block shows in the check."""
    return lambda rng: [rng.random(shape, dtype=np.float32)]


def _with_labels(shape, batch):
    return lambda rng: [rng.standard_normal(shape, dtype=np.float32), _labels(rng, batch)]


def _count(n):
    return f"{n // M}M" if n >= M and n % M == 0 else str(n)


# ---- builds ------------------------------------------------------------------------------------
def _matmul(lib, xs):
    a, b = lib.tensor(xs[0]), lib.tensor(xs[1])
    return lambda: a @ b


def _matmul_as(dtype):
    def build(lib, xs):
        a, b = (getattr(lib.tensor(x), dtype)() for x in xs)
        return lambda: a @ b
    return build


def _bmm(lib, xs):
    a, b = lib.tensor(xs[0]), lib.tensor(xs[1])
    bmm = lib.mod.bmm
    return lambda: bmm(a, b)


def _binary(op):
    def build(lib, xs):
        a, b = lib.tensor(xs[0]), lib.tensor(xs[1])
        return lambda: op(a, b)
    return build


def _exp(lib, xs):
    a = lib.tensor(xs[0])
    exp = lib.mod.exp
    return lambda: exp(a)


def _sum(dim):
    def build(lib, xs):
        a = lib.tensor(xs[0])
        return (lambda: a.sum()) if dim is None else (lambda: a.sum(dim))
    return build


def _train_step(make_model):
    """The CPU benchmark's training step (_cases_nn.py): the same model and weights, moved to
    the device; the callable returns the loss."""
    def build(lib, xs):
        nn, optim = lib.mod.nn, lib.mod.optim
        model = make_model(nn)
        _set_weights(lib, model, 0)
        model.to(lib.device)
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        x, y = lib.tensor(xs[0]), lib.tensor(xs[1])

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    return build


# ---- the cases -----------------------------------------------------------------------------------
def _matmul_cases(p):
    big, mid = p["matmul"]
    batch, n = p["bmm"]
    cases = [GpuCase(f"matmul_{s}", "matmul", "GFLOP/s", 2.0 * s ** 3, _normal((s, s), (s, s)),
                     _matmul, f"A @ B, {s}x{s}", target, tol=1e-4)
             for s, target in ((big, T_MATMUL), (mid, None))]
    cases.append(GpuCase(f"bmm_{batch}x{n}x{n}", "matmul", "GFLOP/s", 2.0 * batch * n ** 3,
                         _normal((batch, n, n), (batch, n, n)), _bmm,
                         f"torch.bmm of {batch} pairs of {n}x{n}", None, tol=1e-4))
    # float16/bfloat16: each side rounds its float32 sums once to the output type, so two
    # correct results differ by about one rounding of that type (bfloat16: 2^-8)
    cases += [GpuCase(f"matmul_{dt}_{big}", "matmul_half", "GFLOP/s", 2.0 * big ** 3,
                      _normal((big, big), (big, big)), _matmul_as(dt), f"A @ B, {big}x{big}, {dt}",
                      T_MATMUL_HALF, tol=1e-2 if dt == "bfloat16" else 2e-3)
              for dt in ("half", "bfloat16")]
    return cases


def _elementwise_cases(p):
    n = p["ewise"]
    return [
        GpuCase(f"add_{_count(n)}", "elementwise", "GB/s", 3 * F32 * n, _normal(n, n),
                _binary(operator.add), f"a + b, {_count(n)} floats", T_EWISE),
        GpuCase(f"mul_{_count(n)}", "elementwise", "GB/s", 3 * F32 * n, _normal(n, n),
                _binary(operator.mul), f"a * b, {_count(n)} floats", T_EWISE),
        GpuCase(f"exp_{_count(n)}", "elementwise", "GB/s", 2 * F32 * n, _normal(n), _exp,
                f"exp(a), {_count(n)} floats", T_EWISE, tol=1e-5),
    ]


# A column summed in order in float32 (8192 terms of U[0,1)) is off by up to ~4e-6 of its
# value; one element dropped from it shows as ~1.2e-4.
SUM_TOL = 5e-5


def _reduction_cases(p):
    n, s = p["sum"], p["sum2d"]
    whole = GpuCase(f"sum_{_count(n)}", "reduction", "GB/s", F32 * (n + 1), _uniform(n),
                    _sum(None), f"a.sum() over {_count(n)} floats in U[0,1)", T_REDUCE, tol=SUM_TOL)
    return [whole] + [
        GpuCase(f"sum_dim{d}_{s}x{s}", "reduction", "GB/s", F32 * (s * s + s), _uniform((s, s)),
                _sum(d), f"a.sum({d}) of {s}x{s} in U[0,1)", T_REDUCE, tol=SUM_TOL)
        for d in (0, 1)]


def _training_cases(p):
    cases = [GpuCase(f"mlp_step_b{b}", "training", "ms/step", 1, _with_labels((b, 784), b),
                     _train_step(_mlp), f"MLP 784-512-512-10, batch {b}", T_STEP, tol=1e-3)
             for b in p["mlp_batches"]]
    b = p["cnn_batch"]
    cases.append(GpuCase(f"cnn_step_b{b}", "training", "ms/step", 1,
                         _with_labels((b, 1, 28, 28), b), _train_step(_small_cnn),
                         f"small CNN on 1x28x28 (conv 1->16, pool, conv 16->32, pool, linear), "
                         f"batch {b}", T_STEP, tol=1e-3))
    return cases


def make_cases(profile="full"):
    """Every case at a profile's sizes (a PROFILES key, or a dict of the same shape), in the
    order the results show them."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    return _matmul_cases(p) + _elementwise_cases(p) + _reduction_cases(p) + _training_cases(p)
