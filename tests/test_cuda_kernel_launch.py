"""The CUDA backend's kernel-backed ops against the CPU, with and without a GPU.

Each test runs twice.  "emulated": the fake driver (tests/fake_cuda_driver.py) plus the host
emulation of the kernels (tests/fake_cuda_kernels.py), which reads every launch's arguments as
the device would and computes the result on the host, so what the backend decides and packs
(dtypes, casts, broadcasting, coalescing, the fast paths, out=, overlaps, error flags, block
shapes, split reductions) is checked in CI without a GPU.  "gpu": the same tests on a real
GPU (skipped without one), where the kernels themselves run.  Either way each test also
checks that its kernels ran, not the host fallback.  The kernels' CUDA C is compiled for
sm_80 and sm_90 in test_cuda_compile.py.
"""
import contextlib
import itertools
import random
import types

import numpy as np
import pytest

import torchlite as tl
from torchlite import cuda
from torchlite.cuda import _elementwise, _kernels as K, _launch, _runtime

from fake_cuda_driver import FakeDriver, installed
import fake_cuda_kernels

_HAS_GPU = cuda.is_available()        # probed before any stand-in driver is installed


@pytest.fixture(params=["emulated", "compiled", "gpu"])
def dev(request, monkeypatch):
    """Where the test runs; .launched lists the kernels launched, .transfers the host copies."""
    rec = types.SimpleNamespace(kind=request.param, launched=[], transfers=[])
    with contextlib.ExitStack() as stack:
        if request.param == "gpu":
            if not _HAS_GPU:
                pytest.skip("no CUDA GPU")
        else:
            if request.param == "compiled" and not fake_cuda_kernels.compiler():
                pytest.skip("no C++ compiler to run the kernels on the CPU")
            fake = stack.enter_context(installed(FakeDriver()))
            fake_cuda_kernels.install(fake, monkeypatch, compiled=request.param == "compiled")
        launch, d2h = _launch.launch, _runtime.copy_d2h
        monkeypatch.setattr(_launch, "launch", lambda k, *a, **kw: (rec.launched.append(k.name),
                                                                    launch(k, *a, **kw))[1])
        monkeypatch.setattr(_runtime, "copy_d2h", lambda *a, **kw: (rec.transfers.append("d2h"),
                                                                    d2h(*a, **kw))[1])
        yield rec


def _same(cpu, gpu):
    """Equal: exactly for integers and bool, to a few ulps for floats and complex numbers
    (a GPU's exp, sin, ... may differ from the CPU's in the last bit, and a CPU build for
    AVX2 fuses multiply-adds that the host build of the kernels rounds twice; the Python
    emulation is exact)."""
    got = gpu.cpu()
    assert got.dtype == cpu.dtype and got.shape == cpu.shape
    if cpu.is_complex():
        rtol = 1e-13 if cpu.dtype == tl.complex128 else 3e-6
        np.testing.assert_allclose(got.numpy(), cpu.numpy(), rtol=rtol, atol=rtol)
        return
    if not cpu.is_floating_point():
        np.testing.assert_array_equal(got.numpy(), cpu.numpy())
        return
    rtol = {tl.float64: 1e-13, tl.float32: 3e-6}.get(cpu.dtype, 4e-3)
    np.testing.assert_allclose(got.double().numpy(), cpu.double().numpy(), rtol=rtol, atol=rtol)


CASES = {
    "add_scalar": lambda t: t + 1.5,
    "sub_alpha": lambda t: tl.sub(t, t * 0.5, alpha=2),
    "mul_transposed": lambda t: t.mT * t.mT,
    "div_broadcast": lambda t: t / (t[..., :1].abs() + 1),
    "exp": lambda t: t.exp(),
    "sigmoid_flip": lambda t: t.flip(-1).sigmoid(),
    "pow_expanded": lambda t: t[:1].expand_as(t) ** 2,
    "maximum_nan": lambda t: tl.maximum(t, tl.full_like(t, float("nan"))),
    "cmp_and": lambda t: (t > 0) & (t < 0.5),
    "where": lambda t: tl.where(t > 0, t, -t),
    "lerp": lambda t: tl.lerp(t, t.flip(0), 0.25),
    "addcmul": lambda t: tl.addcmul(t, t, t, value=0.5),
    "clamp": lambda t: t.clamp(-0.3, 0.4),
    "int_floor_div": lambda t: (t * 100).long() // 7,
    "int_remainder": lambda t: (t * 100).int() % -3,
    "int_to_float_exp": lambda t: (t * 3).long().exp(),
    "bool_not": lambda t: ~(t > 0),
    "half": lambda t: (t.half() * 3).float(),
    "bfloat16": lambda t: t.bfloat16() + 1,
    "double_mixed": lambda t: t.double() + t,
    "round_int": lambda t: (t * 10).long().round(),
    "inplace_view": lambda t: t.clone()[1:, ::2].mul_(3),
    "inplace_self": lambda t: t.clone().add_(1).mul_(t),
    "out_other_dtype": lambda t: tl.add(t, 1, out=tl.empty(t.shape, dtype=tl.float64, device=t.device)),
    "fill_transposed": lambda t: t.clone().mT.fill_(2.5),
    "copy_broadcast": lambda t: t.clone().copy_(t[0]),
    "copy_cast_strided": lambda t: tl.empty(t.shape[::-1], dtype=tl.int32, device=t.device).copy_(t.mT * 10),
    "contiguous_permuted": lambda t: t.unsqueeze(0).permute(2, 0, 1).contiguous(),
    "zero_dim": lambda t: t[0, 0] * 2,
    "misaligned": lambda t: t.flatten()[1:] * 2 + t.flatten()[:-1],     # element loop, not Vec4
    "strided_1d": lambda t: t.flatten()[::3].abs() + 1,                 # one dim, step 3
    "empty": lambda t: t[:0] + 1,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_elementwise_launch_matches_cpu(dev, name):
    x = tl.randn(5, 6, generator=tl.Generator().manual_seed(3))
    fn = CASES[name]
    _same(fn(x), fn(x.cuda()))


def _complex_input(dtype):
    """5 x 6 complex numbers, with a row of infinities, NaNs and zeros for the predicates."""
    g = np.random.default_rng(5)
    z = g.standard_normal((5, 6)) + 1j * g.standard_normal((5, 6))
    z[4] = [complex("inf"), complex(0, float("-inf")), complex("nan"), 0, complex(3, float("nan")), -2]
    return tl.tensor(z).to(dtype)


_FINITE = slice(0, 4)          # the rows without special values (for the transcendental ops)
COMPLEX_CASES = {
    **{f"unary_{op}": (lambda op: lambda t: getattr(t[_FINITE], op)())(op)
       for op in ("neg", "square", "reciprocal", "exp", "log", "log2", "log10", "sqrt", "rsqrt",
                  "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "sgn", "conj_physical",
                  "abs", "angle", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p",
                  "expm1", "exp2")},
    **{f"predicate_{op}": (lambda op: lambda t: getattr(t, op)())(op)
       for op in ("isnan", "isinf", "isfinite", "logical_not")},
    # C99's values at infinities and NaNs (the inverse functions' own branches)
    "inverse_special_values": lambda t: tl.stack([f(t[4:]) for f in (
        tl.asin, tl.acos, tl.atan, tl.asinh, tl.acosh, tl.atanh, tl.log1p)]),
    "nan_to_num": lambda t: tl.stack([t.nan_to_num(), t.nan_to_num(1.5, 3.0, -4.0)]),
    "add_complex_alpha": lambda t: tl.add(t, t.flip(1), alpha=2 - 1j),
    "sub_complex_alpha_in_place": lambda t: t.clone().sub_(t.flip(0), alpha=0.5j),
    "add_transposed": lambda t: t.mT + t.mT.flip(0),
    "sub_alpha": lambda t: tl.sub(t, t.flip(1), alpha=2),
    "mul_scalar": lambda t: t * (2 - 0.5j),
    "div_broadcast": lambda t: t[_FINITE] / t[:1, :],
    "pow_tensor": lambda t: t[_FINITE] ** (t[_FINITE] * 0.25),
    "pow_int": lambda t: t ** 3,
    "eq_ne": lambda t: tl.stack([t == t.flip(1), t != t]),
    "real_operand": lambda t: t * t.real.float() + 1,
    "where": lambda t: tl.where(t.real > 0, t, t.conj()),
    "lerp": lambda t: tl.lerp(t, t.flip(0), t[_FINITE.start:1]),
    "addcmul": lambda t: tl.addcmul(t, t, t.flip(1), value=0.5),
    "addcdiv": lambda t: tl.addcdiv(t[_FINITE], t[_FINITE], t[_FINITE].flip(1), value=-2),
    "cast_to_real": lambda t: tl.view_as_real(t).sum(-1).double() + t.real.to(tl.float16).float(),
    "cast_from_real": lambda t: (t.real * 10).long().to(t.dtype) + t.real.double(),
    "cast_complex": lambda t: t.to(tl.complex128 if t.dtype == tl.complex64 else tl.complex64),
    "cast_to_bool": lambda t: (t * tl.tensor([0, 1, 1j, 0, 1, 0]).to(t.device)).bool(),
    "fill": lambda t: tl.full((3, 4), 1 - 2j, dtype=t.dtype, device=t.device),
    "fill_strided": lambda t: t.clone().mT.fill_(2.5 + 1j),
    "gather": lambda t: t[tl.tensor([3, 0, 3]).to(t.device)],
    "scatter": lambda t: t.clone().scatter_(0, tl.tensor([[2, 0, 1, 3, 4, 0]]).to(t.device), t[:1] * 2),
    "gather_along_dim": lambda t: t.gather(1, tl.tensor([[5, 0], [1, 1], [2, 4], [0, 0], [3, 5]]).to(t.device)),
    "contiguous_permuted": lambda t: t.unsqueeze(0).permute(2, 0, 1).contiguous(),
}


@pytest.mark.parametrize("dtype", [tl.complex64, tl.complex128])
@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_launch_matches_cpu(dev, name, dtype, monkeypatch):
    """Every complex kernel of the catalogue (the CPU's complex ops, whose math is one source
    with the CPU's: cuda_kernels/tl_complex.cuh) against the CPU; none runs on host copies."""
    from torchlite.cuda import _fallback

    def no_fallback(fn, *args, **kwargs):
        raise AssertionError(f"{name}: {fn.__name__} ran on host copies")
    x = _complex_input(dtype)
    fn = COMPLEX_CASES[name]
    expect = fn(x)
    xd = x.cuda()
    monkeypatch.setattr(_fallback, "run_on_host", no_fallback)
    _same(expect, fn(xd))


def test_complex32_on_cuda_matches_cpu(dev):
    """complex32 has no kernels of its own: it is moved by the 4-byte kernels (copies, fills,
    where, gather) and computed on host copies, with the CPU's values."""
    c = tl.from_numpy(_complex_input(tl.complex64)[:4].numpy()).chalf()
    for fn in (lambda t: t * t + 1j, lambda t: t.abs(), lambda t: tl.cat([t, t.flip(0)]),
               lambda t: tl.where(t.real > 0, t, t.conj()), lambda t: t.to(tl.complex64),
               lambda t: t.to(tl.complex64).chalf(), lambda t: t[tl.tensor([2, 0]).to(t.device)],
               lambda t: tl.full((2,), 1 - 1j, dtype=tl.chalf, device=t.device), lambda t: t.sum(0)):
        expect, got = fn(c), fn(c.cuda())
        assert got.device.type == "cuda" and got.dtype == expect.dtype
        assert got.cpu().tolist() == expect.tolist()
    # a kernel's result cast into a complex32 out=, and where over complex32 and float16
    z = tl.from_numpy(_complex_input(tl.complex64)[:4].numpy())
    out = tl.zeros(z.shape, dtype=tl.chalf).cuda()
    tl.add(z.cuda(), z.cuda(), out=out)
    assert out.cpu().tolist() == (z + z).chalf().tolist()
    cond, h = c.real > 0, c.real.abs()
    assert tl.where(cond.cuda(), c.cuda(), h.cuda()).cpu().tolist() == tl.where(cond, c, h).tolist()


def test_complex_kernels_are_in_the_catalogue():
    """Each complex op of the CPU's lists has its CUDA kernels, for both complex dtypes."""
    from torchlite._core import elementwise as ew
    names = set(K.variants()["elementwise.cu"])
    for dt, ct, rt in ((K.COMPLEX64, "tl::c64", "float"), (K.COMPLEX128, "tl::c128", "double")):
        for op in K.UNARY_COMPLEX:
            out = "bool" if op in K.UNARY_TO_BOOL else (rt if op in K.UNARY_COMPLEX_TO_REAL else ct)
            assert f"tl_unary<{K.functor(op)}, {ct}, {out}>" in names
            assert op.lower() in ew.UNARY
        for op in K.BINARY_COMPLEX:
            assert K.binary_kernel(op, dt) in names
        assert K.where_kernel(dt) in names and K.fill_kernel(dt) in names


def test_launches_are_kernels_not_fallbacks(dev):
    x = tl.randn(4, 5).cuda()
    dev.transfers.clear()
    (x.mT * 2 + x.mT).exp()
    kinds = set(dev.launched)
    assert "tl_binary<tl::op::Mul, float, float>" in kinds
    assert "tl_unary<tl::op::Exp, float, float>" in kinds
    assert dev.transfers == []


def test_integer_division_by_zero_raises(dev):
    a = tl.tensor([4, 5]).cuda()
    with pytest.raises(ZeroDivisionError):
        a // tl.tensor([1, 0]).cuda()
    _same(tl.tensor([4, 5]) // 2, a // 2)


def test_partial_overlap_of_dense_operands_raises(dev):
    y = tl.arange(6.).cuda()
    with pytest.raises(RuntimeError, match="single memory location"):
        y[1:].add_(y[:-1])


def test_mixed_device_operands_raise(dev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tl.ones(3).cuda() + tl.ones(3)
    _same(tl.ones(3) + tl.tensor(2.0), tl.ones(3).cuda() + tl.tensor(2.0))   # a CPU scalar may join


# ---- launch geometry ------------------------------------------------------------------------
class _FakeOperand:
    """What the launch geometry reads of an array: shape, strides, numel, is_contiguous."""

    def __init__(self, shape, strides):
        self.shape, self.strides, self.ndim = tuple(shape), tuple(strides), len(shape)
        self.numel = int(np.prod(shape)) if shape else 1

    def is_contiguous(self):
        step = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s != 1 and st != step:
                return False
            step *= s
        return True


def _offsets(shape, strides, i):
    out, rem = [0] * len(strides), i
    for d in range(len(shape) - 1, -1, -1):
        rem, c = divmod(rem, shape[d])
        for k, st in enumerate(strides):
            out[k] += c * st[d]
    return out


@pytest.mark.parametrize("seed", range(40))
def test_packed_indexer_visits_the_elements_of_the_original_strides(seed):
    rng = random.Random(seed)
    nd = rng.randint(0, 5)
    shape = [rng.choice([1, 1, 2, 3, 4]) for _ in range(nd)]

    class Op(_FakeOperand):
        def __init__(self, strides):
            super().__init__(tuple(shape), tuple(strides))

    def contiguous():
        st, step = [0] * nd, 1
        for d in reversed(range(nd)):
            st[d], step = step, step * shape[d]
        return st

    ops = [Op(contiguous())]
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["contiguous", "random", "broadcast"])
        if kind == "contiguous":
            ops.append(Op(contiguous()))
        else:
            ops.append(Op([0 if kind == "broadcast" and rng.random() < 0.5 else rng.randint(-7, 9)
                           for _ in range(nd)]))
    packed, n = _elementwise._indexer(tuple(shape), ops)
    total = int(np.prod(shape)) if shape else 1
    assert n == total
    full = [_elementwise._broadcast_strides(o, tuple(shape)) for o in ops]
    for i in range(total):
        assert K.indexer_offsets(packed, len(ops), i) == _offsets(shape, full, i)


def test_coalesce_merges_contiguous_dims_and_drops_ones():
    shape, strides = _elementwise.coalesce([2, 1, 3, 4], [[12, 12, 4, 1], [0, 0, 0, 1]])
    assert shape == [6, 4] and strides == [[4, 1], [0, 1]]
    shape, strides = _elementwise.coalesce([2, 3], [[1, 2]])        # transposed: not mergeable
    assert shape == [2, 3] and strides == [[1, 2]]


def test_contiguous_operands_take_the_fast_path():
    Op = _FakeOperand
    packed, n = _elementwise._indexer((3, 4), [Op((3, 4), (4, 1)), Op((3, 4), (4, 1)), Op((), ())])
    assert n == 12 and packed[:4] == b"\0\0\0\0"               # ndim 0: steps, not strides
    assert K.indexer_offsets(packed, 3, 5) == [5, 5, 0]


def test_every_kernel_the_backend_names_is_in_the_compiled_catalogue():
    names = set(itertools.chain.from_iterable(K.variants().values()))
    for op in K.unary_ops():
        for dt in K.ALL:
            try:
                assert K.unary_kernel(op, dt) in names
            except KeyError:
                pass
    for src, dst in itertools.product(K.ALL, K.ALL):
        assert K.cast_kernel(src, dst) in names


# ---- reductions ----------------------------------------------------------------------------
def _close(cpu, gpu, rtol=1e-6, atol=1e-6):
    got = gpu.cpu()
    assert got.dtype == cpu.dtype and got.shape == cpu.shape
    np.testing.assert_allclose(got.double().numpy(), cpu.double().numpy(), rtol=rtol, atol=atol)


REDUCTIONS = {
    "sum_all": lambda t: t.sum(),
    "sum_dim0": lambda t: t.sum(0),
    "sum_dim1_keepdim": lambda t: t.sum(1, keepdim=True),
    "sum_dims_transposed": lambda t: t.mT.sum((0, 1)),
    "sum_3d_middle": lambda t: t.reshape(3, 4, 5).sum(1),
    "sum_int": lambda t: (t * 10).long().sum(1),
    "prod": lambda t: (t.abs() + 0.5).prod(0),
    "nansum": lambda t: tl.where(t > 1, float("nan"), t).nansum(1),
    "mean": lambda t: t.mean(1),
    "mean_all_double": lambda t: t.double().mean(),
    "amax": lambda t: t.amax(0),
    "amin_strided": lambda t: t[:, ::2].amin(1),
    "max_dim": lambda t: t.max(1)[0],
    "max_dim_indices": lambda t: t.max(1)[1],
    "min_dim0_indices": lambda t: t.min(0)[1],
    "argmax_all": lambda t: t.argmax(),
    "argmin_dim_keepdim": lambda t: t.argmin(1, keepdim=True),
    "argmax_nan": lambda t: tl.where(t > 1.2, float("nan"), t).argmax(1),
    "any": lambda t: (t > 1).any(1),
    "all": lambda t: (t > -2).all(0),
    "var": lambda t: t.var(1),
    "std_all_unbiased0": lambda t: t.std(correction=0),
    "var_mean": lambda t: tl.var_mean(t, 0)[1],
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_launch_matches_cpu(dev, name):
    x = tl.randn(12, 5, generator=tl.Generator().manual_seed(7))
    fn = REDUCTIONS[name]
    _close(fn(x), fn(x.cuda()))
    assert any(k.startswith("tl_reduce<") for k in dev.launched), "the fallback ran"


def test_split_reduction_over_many_elements(dev):
    x = tl.randn(40000, generator=tl.Generator().manual_seed(1))
    _close(x.sum(), x.cuda().sum(), rtol=1e-5)
    _close(x.reshape(8, 5000).sum(1), x.cuda().reshape(8, 5000).sum(1), rtol=1e-5)


# ---- matrix products -----------------------------------------------------------------------
MATMULS = {
    "mm": lambda a, b: a @ b,
    "mm_transposed_a": lambda a, b: a.mT.contiguous().mT @ b,
    "mm_transposed_both": lambda a, b: (b.mT @ a.mT).mT,
    "bmm_broadcast": lambda a, b: a.expand(3, *a.shape) @ b,
    "batched_4d": lambda a, b: a.reshape(1, 1, *a.shape).expand(2, 3, *a.shape) @ b,
    "addmm": lambda a, b: tl.addmm(tl.ones(a.shape[0], b.shape[1], device=a.device), a, b,
                                   beta=0.5, alpha=2.0),
    "linear": lambda a, b: tl.nn.functional.linear(a, b.mT, tl.ones(b.shape[1], device=a.device)),
    "double": lambda a, b: a.double() @ b.double(),
    "half": lambda a, b: (a.half() @ b.half()).float(),
    "matvec": lambda a, b: a @ b[:, 0],
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_launch_matches_cpu(dev, name):
    g = tl.Generator().manual_seed(5)
    a, b = tl.randn(70, 33, generator=g), tl.randn(33, 150, generator=g)
    fn = MATMULS[name]
    # float32 sums of 33 products of O(1) terms: another summation order differs by ~1e-6
    _close(fn(a, b), fn(a.cuda(), b.cuda()), rtol=1e-5, atol=1e-5)
    assert any(k.startswith("tl_gemm<") for k in dev.launched), "the fallback ran"


def _tc_products(dtype, m, k, n, g):
    """{name: (product of CPU or CUDA tensors, expected kernel prefix)}: the four operand
    layouts of tl_gemm_tc (A k- or m-contiguous, B k- or n-contiguous), a broadcast batch
    wide enough for the large tile, beta != 0, an output with a non-unit column stride, and
    operands it cannot copy 16 bytes at a time (misaligned, K odd), which take tl_gemm."""
    a, b = tl.randn(m, k, generator=g).to(dtype), tl.randn(k, n, generator=g).to(dtype)
    at, bt = a.mT.contiguous(), b.mT.contiguous()            # (k, m) and (n, k) in memory
    big = tl.randn(m * k + 1, generator=g).to(dtype)

    def strided_out(x, y):
        out = tl.empty(y.shape[1], x.shape[0], dtype=dtype, device=x.device).mT
        return tl.matmul(x, y, out=out)
    tc = "tl_gemm_tc<"
    return {
        "A k, B n": (lambda d: d(a) @ d(b), tc, (1, 0)),
        "A k, B k": (lambda d: d(a) @ d(bt).mT, tc, (1, 1)),
        "A m, B n": (lambda d: d(at).mT @ d(b), tc, (0, 0)),
        "A m, B k": (lambda d: d(at).mT @ d(bt).mT, tc, (0, 1)),
        "batch of 140": (lambda d: d(a).expand(140, m, k) @ d(b), tc, (1, 0)),
        "beta": (lambda d: tl.addmm(tl.ones(m, n, dtype=dtype, device=d(a).device), d(a), d(b),
                                    beta=0.5, alpha=2.0), tc, (1, 0)),
        "strided out": (lambda d: strided_out(d(a), d(b)), tc, (1, 0)),
        "misaligned": (lambda d: d(big)[1:].view(m, k) @ d(b), "tl_gemm<", None),
    }


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
@pytest.mark.parametrize("shape", [(40, 24, 72), (136, 200, 80), (8, 8, 8)])
def test_tensor_core_matmul_matches_cpu(dev, dtype, shape):
    """tl_gemm_tc: float16/bfloat16 products on tensor cores, against the CPU's
    float32-accumulated product rounded once, over ragged edges (M, N, K not multiples of the
    tiles; K not a multiple of 32), every operand layout, broadcast batches, beta != 0."""
    m, k, n = shape
    g = tl.Generator().manual_seed(9)
    for name, (fn, kernel, layout) in _tc_products(dtype, m, k, n, g).items():
        dev.launched.clear()
        want, got = fn(lambda t: t), fn(lambda t: t.cuda())
        # one rounding to the output type apart, relative to the sums' size (sqrt(k) terms)
        tol = (2 ** -8 if dtype == tl.bfloat16 else 2 ** -10) * 2 * max(1.0, k ** 0.5)
        _close(want.float(), got.float(), rtol=tol, atol=tol)
        ran = [x for x in dev.launched if x.startswith("tl_gemm")]
        assert ran and all(x.startswith(kernel) for x in ran), (name, ran)
        if layout is not None:       # ...the template's last two arguments: A_K, B_K
            assert all(x.replace(" ", "").endswith(f",{layout[0]},{layout[1]}>") for x in ran), (name, ran)
    if k % 2:
        return
    dev.launched.clear()
    a, b = tl.randn(m, k + 1, generator=g).to(dtype), tl.randn(k + 1, n, generator=g).to(dtype)
    _close((a @ b).float(), (a.cuda() @ b.cuda()).float(), rtol=0.05, atol=0.05)
    assert all(x.startswith("tl_gemm<") for x in dev.launched if x.startswith("tl_gemm")), "K odd"


def test_tensor_core_tiles_and_shared_memory():
    """The large tile is chosen when it gives a wave of blocks: the first of K.TC_LARGE whose
    dynamic shared memory the device allows a block (227 KB on sm_90, 163 KB on sm_80, 99 KB
    on sm_86/sm_89); the last large tile and the small one fit everywhere."""
    from torchlite.cuda import _matmul
    for layout in itertools.product((True, False), repeat=2):
        assert _matmul._tc_config(4096, 4096, 1, 132, 227 << 10, layout) == K.TC_LARGE[0]
        assert _matmul._tc_config(4096, 4096, 1, 132, 99 << 10, layout) == K.TC_LARGE[-1]
        assert _matmul._tc_config(64, 512, 1, 132, 227 << 10, layout) == K.TC_SMALL
        assert _matmul._tc_config(64, 512, 140, 132, 227 << 10, layout) == K.TC_LARGE[0]
        for cfg in (K.TC_LARGE[-1], K.TC_SMALL):
            assert K.gemm_tc_shared_bytes(cfg, *layout) <= 99 << 10
        assert K.gemm_tc_shared_bytes(K.TC_LARGE[0], *layout) <= 163 << 10


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_split_k_products_match_cpu(dev, dtype):
    """Few output tiles over a long K (a convolution's weight gradient) run as pieces of K in
    parallel, summed by tl_gemm_splitk_sum: with a K the pieces divide and one they do not,
    a transposed operand, beta != 0 into a strided output, and a whole convolution's weight
    gradient."""
    g = tl.Generator().manual_seed(3)
    for m, k, n in ((16, 4096, 9), (20, 2500, 33)):
        a, b = tl.randn(m, k, generator=g, dtype=dtype), tl.randn(n, k, generator=g, dtype=dtype).mT
        c = tl.randn(n, m, generator=g, dtype=dtype).mT
        dev.launched.clear()
        want = tl.addmm(c, a, b, beta=0.5, alpha=2.0)
        cc = c.cuda()
        got = tl.addmm(cc, a.cuda(), b.cuda(), beta=0.5, alpha=2.0)
        # sums of k products of O(1) terms in another order: ~sqrt(k) rounding steps apart
        tol = (1e-6 if dtype == tl.float32 else 1e-14) * k ** 0.5 * 4
        _close(want, got, rtol=tol, atol=tol)
        assert any(x.startswith("tl_gemm_splitk_sum<") for x in dev.launched), dev.launched
    x = tl.randn(8, 1, 28, 28, generator=g, dtype=dtype, requires_grad=True)
    conv = tl.nn.Conv2d(1, 16, 3, padding=1).to(dtype)
    conv(x).square().sum().backward()
    want = conv.weight.grad.clone()
    conv.zero_grad()
    conv.cuda()
    dev.launched.clear()
    conv(x.detach().cuda()).square().sum().backward()
    _close(want, conv.weight.grad, rtol=1e-4, atol=1e-3 if dtype == tl.float32 else 1e-9)
    assert any(x.startswith("tl_gemm_splitk_sum<") for x in dev.launched)


@pytest.mark.parametrize("per_image", [True, False], ids=["per-image", "folded"])
def test_conv_im2col_and_weight_gradient_match_cpu(dev, monkeypatch, per_image):
    """Convolutions through tl_im2col (zero padding, stride, dilation, groups, an input with
    permuted strides) and both weight-gradient forms: a GEMM per image summed over the images
    (tl_gemm_splitk_sum), or the images folded into one product's inner dim."""
    from torchlite.cuda import _conv
    if not per_image:
        monkeypatch.setattr(_conv, "PER_IMAGE", 0)
    g = tl.Generator().manual_seed(8)
    F = tl.nn.functional
    cases = [dict(stride=1, padding=1), dict(stride=2, padding=(2, 1), dilation=(1, 2)),
             dict(stride=1, padding=0, groups=2)]
    for dtype in (tl.float32, tl.float64):
        x0 = tl.randn(3, 7, 4, 6, generator=g, dtype=dtype).permute(0, 3, 1, 2)   # (3, 6, 7, 4)
        for kw in cases:
            w0 = tl.randn(4, 6 // kw.get("groups", 1), 3, 2, generator=g, dtype=dtype)
            b0 = tl.randn(4, generator=g, dtype=dtype)        # the GEMM's addend, in place
            gy = None
            res = []
            for dev_name in ("cpu", "cuda"):
                x = x0.detach().to(dev_name).requires_grad_()
                w = w0.detach().to(dev_name).requires_grad_()
                bias = b0.detach().to(dev_name).requires_grad_()
                y = F.conv2d(x, w, bias, **kw)
                if gy is None:
                    gy = tl.randn(*y.shape, generator=g, dtype=dtype)
                y.backward(gy.to(dev_name))
                res.append((y.detach(), x.grad, w.grad, bias.grad))
            tol = 1e-5 if dtype == tl.float32 else 1e-12
            for want, got in zip(*res):
                _close(want, got, rtol=tol, atol=tol)
    assert "tl_im2col<float>" in dev.launched and "tl_im2col<double>" in dev.launched
    assert ("tl_gemm_splitk_sum<double>" in dev.launched) == per_image


@pytest.mark.parametrize("dtype", [tl.float32, tl.float16])
def test_addmm_reads_its_addend_in_place(dev, dtype):
    """beta * input + alpha * a @ b with input read by the GEMM where it lies (a broadcast
    row: Linear's bias; a column; a full matrix; a batch-broadcast baddbmm input), with no
    copy into the output; in place (addmm_), into an out= that aliases an operand, through
    the split-K path (float32: few tiles over a long K) and the tensor-core kernel (float16)."""
    g = tl.Generator().manual_seed(12)
    k = 4096 if dtype == tl.float32 else 40
    a, b = tl.randn(24, k, generator=g).to(dtype), tl.randn(k, 16, generator=g).to(dtype)
    tol = (1e-5 if dtype == tl.float32 else 2e-3) * max(1.0, k ** 0.5)
    for c in (tl.randn(16, generator=g), tl.randn(24, 1, generator=g), tl.randn(24, 16, generator=g)):
        c = c.to(dtype)
        dev.launched.clear()
        want = tl.addmm(c, a, b, beta=0.5, alpha=-2.0)
        got = tl.addmm(c.cuda(), a.cuda(), b.cuda(), beta=0.5, alpha=-2.0)
        copies = [x for x in dev.launched if x.startswith(("tl_unary", "tl_binary"))]
        assert not copies, f"the addend was copied: {dev.launched}"
        assert any(x.startswith("tl_gemm") for x in dev.launched)
        _close(want.float(), got.float(), rtol=tol, atol=tol)
    lin = tl.nn.Linear(k, 16).to(dtype)
    x = a
    with tl.no_grad():
        _close(lin(x).float(), lin.cuda()(x.cuda()).float(), rtol=tol, atol=tol)
    # in place: the addend is the output
    c = tl.randn(24, 16, generator=g).to(dtype)
    cc = c.cuda()
    c.addmm_(a, b, beta=2.0)
    cc.addmm_(a.cuda(), b.cuda(), beta=2.0)
    _close(c.float(), cc.float(), rtol=tol, atol=tol)
    # out= aliasing an operand: computed aside, the addend still read where it lies
    sq, bias = tl.randn(16, 16, generator=g).to(dtype), tl.randn(16, generator=g).to(dtype)
    sqc = sq.cuda()
    want = tl.addmm(bias, sq, sq, beta=1.5)
    tl.addmm(bias.cuda(), sqc, sqc, beta=1.5, out=sqc)
    _close(want.float(), sqc.float(), rtol=1e-2, atol=1e-2)
    # a batch-broadcast input of baddbmm
    ba, bb = tl.randn(3, 5, 8, generator=g).to(dtype), tl.randn(3, 8, 6, generator=g).to(dtype)
    inp = tl.randn(5, 6, generator=g).to(dtype)
    _close(tl.baddbmm(inp, ba, bb, beta=0.25).float(),
           tl.baddbmm(inp.cuda(), ba.cuda(), bb.cuda(), beta=0.25).float(), rtol=1e-2, atol=1e-2)
    # beta == 0 ignores the input, NaN included
    nan = tl.full((16,), float("nan"), dtype=dtype)
    _close(tl.addmm(nan, a, b, beta=0).float(), tl.addmm(nan.cuda(), a.cuda(), b.cuda(), beta=0).float(),
           rtol=tol, atol=tol)
    if dtype == tl.float32:
        assert "tl_gemm_splitk_sum<float>" in dev.launched
    else:
        assert any(x.startswith("tl_gemm_tc<") for x in dev.launched)


def test_matmul_with_out_aliasing_an_operand(dev):
    a = tl.randn(8, 8)
    ac = a.cuda()
    tl.matmul(ac, ac, out=ac)
    _close(a @ a, ac, rtol=1e-5)


SOFTMAXES = {
    "softmax_last": lambda t: t.softmax(-1),
    "log_softmax_first": lambda t: t.log_softmax(0),
    "softmax_middle_3d": lambda t: t.reshape(3, 4, 5).softmax(1),
    "softmax_transposed": lambda t: t.mT.softmax(1),
    "cross_entropy": lambda t: tl.nn.functional.cross_entropy(t, tl.arange(12, device=t.device) % 5),
}


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_launch_matches_cpu(dev, name):
    x = tl.randn(12, 5, generator=tl.Generator().manual_seed(11))
    fn = SOFTMAXES[name]
    _close(fn(x), fn(x.cuda()), rtol=1e-5)
    assert any(k.startswith("tl_softmax<") for k in dev.launched), "the fallback ran"


# ---- indexing ------------------------------------------------------------------------------
def _idx(device, *values):
    return tl.tensor(list(values), device=device)


INDEXING = {
    "gather": lambda t: t.gather(1, _idx(t.device, [0, 4], [1, 1], [3, 2]).repeat(4, 1)),
    "take_along_dim": lambda t: tl.take_along_dim(t, t.argsort(1), 1),
    "index_tensor": lambda t: t[_idx(t.device, 3, -1, 0)],
    "index_tensor_dim1": lambda t: t[:, _idx(t.device, 4, 0)],
    "index_select": lambda t: t.index_select(1, _idx(t.device, 2, 2, 0)),
    "embedding": lambda t: tl.nn.functional.embedding(_idx(t.device, [1, 5], [11, 0]), t),
    "scatter": lambda t: tl.zeros(3, 5, device=t.device).scatter(0, _idx(t.device, [0, 1, 2, 0, 1]), t[:1]),
    "scatter_add": lambda t: tl.zeros(3, 5, device=t.device).scatter_add(
        0, _idx(t.device, [0, 1, 2, 0, 1], [2, 2, 2, 2, 2]), t[:2]),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_index_launch_matches_cpu(dev, name):
    x = tl.randn(12, 5, generator=tl.Generator().manual_seed(13))
    fn = INDEXING[name]
    _close(fn(x), fn(x.cuda()))
    assert any(k.startswith(("tl_gather<", "tl_scatter")) for k in dev.launched), "the fallback ran"


def test_index_out_of_range_raises_the_cpu_error_and_writes_nothing(dev):
    x = tl.zeros(3, 4).cuda()
    with pytest.raises(IndexError):
        x[tl.tensor([0, 7]).cuda()]
    with pytest.raises(RuntimeError):
        x.scatter_(0, tl.tensor([[0, 9, 0, 0]]).cuda(), tl.ones(1, 4).cuda())
    assert x.cpu().abs().sum().item() == 0


# ---- random numbers --------------------------------------------------------------------------
def _gen(seed, offset=0):
    from torchlite._core import random as R
    g = R.Philox()
    g.set_state_bytes(seed.to_bytes(8, "little") + offset.to_bytes(8, "little"))
    return g


RANDOM_FILLS = {
    "uniform_f32": (tl.float32, lambda d, a, g: d.fill(a, g, d.UNIFORM, -1.0, 2.0)),
    "normal_f64": (tl.float64, lambda d, a, g: d.fill(a, g, d.NORMAL, 0.5, 3.0)),
    "exponential_f32": (tl.float32, lambda d, a, g: d.fill(a, g, d.EXPONENTIAL, 2.0)),
    "geometric_f32": (tl.float32, lambda d, a, g: d.fill(a, g, d.GEOMETRIC, 0.3)),
    "randint_i64": (tl.int64, lambda d, a, g: d.fill_int(a, g, -5, 17)),
    "randint_wide_i32": (tl.int32, lambda d, a, g: d.fill_int(a, g, 0, 1 << 40)),
    "bernoulli_bool": (tl.bool, lambda d, a, g: d.fill_bernoulli(a, g, 0.3)),
    "bernoulli_f32_strided": (tl.float32, lambda d, a, g: d.fill_bernoulli(a.transpose(0, 1), g, 0.7)),
}


@pytest.mark.parametrize("name", sorted(RANDOM_FILLS))
def test_random_launch_gives_the_cpu_stream(dev, name):
    from torchlite import _dispatch
    dtype, fill = RANDOM_FILLS[name]
    cpu = tl.empty(37, 29, dtype=dtype)
    gpu = tl.empty(37, 29, dtype=dtype, device="cuda")
    g_cpu, g_gpu = _gen(1234, 80), _gen(1234, 80)
    fill(_dispatch.random, cpu._data, g_cpu)
    fill(_dispatch.random, gpu._data, g_gpu)
    _same(cpu, gpu)
    assert g_cpu.state_bytes() == g_gpu.state_bytes()           # the same blocks consumed
    assert any(k.startswith("tl_random<") for k in dev.launched), "the fallback ran"


def test_bernoulli_with_probability_tensor(dev):
    from torchlite import _dispatch
    p = tl.rand(50, generator=tl.Generator().manual_seed(2))
    cpu, gpu = tl.empty(50), tl.empty(50, device="cuda")
    _dispatch.random.fill_bernoulli_tensor(cpu._data, _gen(9), p._data)
    _dispatch.random.fill_bernoulli_tensor(gpu._data, _gen(9), p.cuda()._data)
    _same(cpu, gpu)
    with pytest.raises(RuntimeError, match="p_in"):
        _dispatch.random.fill_bernoulli_tensor(gpu._data, _gen(9), (p + 1).cuda()._data)


# ---- fused optimizer steps -------------------------------------------------------------------
OPTIMIZERS = {
    "sgd": lambda ps: tl.optim.SGD(ps, lr=0.1),
    "sgd_momentum_wd": lambda ps: tl.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1,
                                               weight_decay=0.01),
    "sgd_nesterov_maximize": lambda ps: tl.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True,
                                                     maximize=True),
    "adam": lambda ps: tl.optim.Adam(ps, lr=0.01),
    "adam_amsgrad_wd": lambda ps: tl.optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
    "adamw": lambda ps: tl.optim.AdamW(ps, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_optimizer_step_follows_the_cpu_trajectory(dev, name):
    g = tl.Generator().manual_seed(21)
    w0, x = tl.randn(6, 4, generator=g), tl.randn(5, 6, generator=g)

    def run(device):
        w = w0.clone().to(device).requires_grad_()
        opt = OPTIMIZERS[name]([w])
        for _ in range(5):
            opt.zero_grad()
            ((x.to(device) @ w).tanh() ** 2).sum().backward()
            opt.step()
        return w.detach()

    _close(run("cpu"), run("cuda"), rtol=1e-5)
    kernel = "tl_sgd_multi<float>" if name.startswith("sgd") else "tl_adam<float>"
    assert dev.launched.count(kernel) == 5


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_of_many_parameters_in_one_launch_follows_the_cpu(dev, momentum):
    """tl_sgd_multi: 60 parameters of two dtypes and many sizes (one of them empty), one of
    them joining after the first step (its momentum buffer's first step beside the others'
    later ones): the CPU's trajectory, in one launch per dtype and 48 parameters."""
    g = tl.Generator().manual_seed(4)
    shapes = [(i % 7 + 1, 3 * i + 1) for i in range(58)] + [(0, 3), (1000,)]
    dtypes = [tl.float32 if i % 10 else tl.float64 for i in range(len(shapes))]
    init = [tl.randn(*s, generator=g, dtype=dt) for s, dt in zip(shapes, dtypes)]
    grads = [[tl.randn(*s, generator=g, dtype=dt) for s, dt in zip(shapes, dtypes)] for _ in range(3)]

    def run(device):
        ps = [t.clone().to(device).requires_grad_() for t in init]
        opt = tl.optim.SGD(ps[:-1], lr=0.1, momentum=momentum, nesterov=momentum > 0, weight_decay=0.01)
        for step in range(3):
            if step == 1:
                opt.add_param_group({"params": [ps[-1]]})
            for p, gr in zip(ps, grads[step]):
                p.grad = gr.to(device)
            dev.launched.clear()
            opt.step()
        return ps
    for want, got in zip(run("cpu"), run("cuda")):
        _close(want.detach(), got.detach(), rtol=1e-6 if want.dtype == tl.float32 else 1e-12)
    # the last step: group 0 (59 parameters: 53 float32, one of them empty, and 6 float64:
    # 48 + 4 float32 in two launches) and group 1
    assert sorted(dev.launched) == sorted(["tl_sgd_multi<double>", "tl_sgd_multi<float>",
                                           "tl_sgd_multi<float>", "tl_sgd_multi<float>"]), dev.launched


def _native_matches_cpu(monkeypatch, fn, x):
    """fn(x) on the device equals fn(x) on the CPU, with no call taking the host fallback."""
    from torchlite.cuda import _fallback

    def no_fallback(cpu_fn, *a):
        raise AssertionError(f"{cpu_fn.__name__} ran on host copies")
    expected = fn(x)
    xc = x.cuda()
    with monkeypatch.context() as m:
        m.setattr(_fallback, "run_on_host", no_fallback)
        got = fn(xc)
    _close(expected, got, rtol=1e-6)


# ---- joining, norms and metadata-only functions -----------------------------------------------
JOINS = {
    "cat_dim0": lambda t: tl.cat([t, t * 2, t[:1]], 0),
    "cat_dim1_cast": lambda t: tl.cat([t, t.double()], 1),
    "cat_legacy_empty": lambda t: tl.cat([t, tl.empty(0, device=t.device)], 0),
    "stack": lambda t: tl.stack([t, t.mT.contiguous().mT, t + 1], 1),
    "norm2": lambda t: t.norm(),
    "norm1_dim": lambda t: tl.linalg.vector_norm(t, 1, dim=1),
    "norm_inf_keepdim": lambda t: tl.linalg.vector_norm(t, float("inf"), dim=0, keepdim=True),
}


@pytest.mark.parametrize("name", sorted(JOINS))
def test_join_and_norm_launches_match_cpu(dev, name, monkeypatch):
    x = tl.randn(4, 5, generator=tl.Generator().manual_seed(17))
    _native_matches_cpu(monkeypatch, JOINS[name], x)


def test_metadata_functions_move_no_data(dev):
    from torchlite import _dispatch
    a = tl.ones(3, 4).cuda()._data
    dev.transfers.clear()
    assert _dispatch.elementwise.result_type(a, 2.5) == tl.float32.code
    assert _dispatch.joining.stack_plan([a, a], 0)[0] == (2, 3, 4)
    assert dev.transfers == [] and dev.launched == []


def test_record_stream_and_cpu_scalar_gradients(dev):
    x = tl.randn(3, generator=tl.Generator().manual_seed(4)).cuda().requires_grad_()
    s = tl.tensor(2.0, requires_grad=True)          # a CPU scalar tensor in CUDA ops
    ((x * s).exp() + s * s).sum().backward()
    xc, sc = x.detach().cpu().requires_grad_(), tl.tensor(2.0, requires_grad=True)
    ((xc * sc).exp() + sc * sc).sum().backward()
    assert s.grad.device.type == "cpu"
    _close(sc.grad, s.grad, rtol=1e-6)
    _close(xc.grad, x.grad, rtol=1e-6)
    x.detach().record_stream(tl.cuda.Stream())
    with pytest.raises(RuntimeError, match="CUDA tensor"):
        tl.ones(2).record_stream(tl.cuda.Stream())


def test_record_stream_keeps_the_stream_until_the_memory_is_freed(dev):
    """The freed block waits on an event recorded on every stream that used it, so those
    streams must outlive the Stream objects a program drops (a GPU crashed on a destroyed
    one)."""
    import gc
    t = tl.ones(4).cuda()
    t.record_stream(tl.cuda.Stream())          # the Stream object is dropped at once
    gc.collect()
    t._data.block.release()                    # raises (stand-in) or crashes (GPU) without it


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_lstm_steps_run_as_kernels(dev, dtype):
    """nn.LSTM's fused steps (cuda_kernels/rnn.cu) forward and backward, against the CPU's,
    with no step on host copies."""
    tl.manual_seed(0)
    cpu = tl.nn.LSTM(6, 5, num_layers=2, batch_first=True).to(dtype)
    gpu = tl.nn.LSTM(6, 5, num_layers=2, batch_first=True).to(dtype)
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x = tl.randn(3, 4, 6, dtype=dtype)
    results = []
    for m, inp in ((cpu, x), (gpu, x.cuda().requires_grad_())):
        if m is gpu:
            dev.transfers.clear()
        out, (h, c) = m(inp if m is gpu else inp.requires_grad_())
        (out.sin().sum() + (h * c).sum()).backward()
        if m is gpu:
            assert dev.transfers == [], "a step ran on host copies"
        results.append([out, h, c, inp.grad] + [p.grad for p in m.parameters()])
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == tl.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(*results):
        _close(a.detach(), b.detach(), **tol)
    kind = "float" if dtype == tl.float32 else "double"
    assert f"tl_lstm_fwd<{kind}>" in dev.launched and f"tl_lstm_bwd<{kind}>" in dev.launched


MORE = {
    "arange_float": lambda t: tl.arange(0.5, 7.0, 0.25, device=t.device),
    "arange_int": lambda t: tl.arange(-3, 40, 3, device=t.device),
    "linspace": lambda t: tl.linspace(-1, 1, 13, device=t.device),
    "linspace_double": lambda t: tl.linspace(0, 10, 7, dtype=tl.float64, device=t.device),
    "flip": lambda t: t.flip(0, 1),
    "flip_transposed": lambda t: t.mT.flip(1) * 1,
    "logsumexp": lambda t: t.logsumexp(1),
    "logsumexp_keepdim_inf": lambda t: tl.where(t > 1, float("inf"), t).logsumexp(0, keepdim=True),
    "tril": lambda t: t.tril(),
    "triu_offset": lambda t: t.triu(1),
    "tril_negative_bool": lambda t: (t > 0).tril(-1),
    "causal_mask": lambda t: tl.nn.Transformer.generate_square_subsequent_mask(5, device=t.device),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_launches_match_cpu(dev, name, monkeypatch):
    x = tl.randn(4, 6, generator=tl.Generator().manual_seed(23))
    _native_matches_cpu(monkeypatch, MORE[name], x)


SCANS = {
    "cumsum_float": lambda t: t.cumsum(1),
    "cumsum_dim0_long": lambda t: (t * 10).long().cumsum(0),
    "cumsum_bool": lambda t: (t > 0).cumsum(1),
    "nonzero": lambda t: (t > 0.3).nonzero(),
    "nonzero_1d": lambda t: t.flatten().gt(0).nonzero(),
    "argwhere_3d": lambda t: tl.argwhere(t.reshape(2, 3, 4) < -0.2),
    "nonzero_none": lambda t: (t > 100).nonzero(),
}


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_and_nonzero_launches_match_cpu(dev, name, monkeypatch):
    x = tl.randn(4, 6, generator=tl.Generator().manual_seed(29))
    _native_matches_cpu(monkeypatch, SCANS[name], x)


def _masked_set(t):
    u = t.clone()
    u[t > 0.5] = -1.0
    return u


def _masked_set_rows(t):
    u = t.clone()
    u[t[:, 0] > 0] = 2.0
    return u


MASKS = {
    "mask_select_all_dims": lambda t: t[t > 0],
    "mask_rows": lambda t: t[t[:, 0] > 0],
    "mask_trailing_dim": lambda t: t[:, t[0] > 0],
    "masked_select": lambda t: tl.masked_select(t, t < 0),
    "mask_set_scalar": _masked_set,
    "mask_set_rows": _masked_set_rows,
    "mask_empty_selection": lambda t: t[t > 100],
}


@pytest.mark.parametrize("name", sorted(MASKS))
def test_mask_indexing_launches_match_cpu(dev, name, monkeypatch):
    x = tl.randn(5, 6, generator=tl.Generator().manual_seed(31))
    _native_matches_cpu(monkeypatch, MASKS[name], x)


@pytest.mark.parametrize("one_block", [True, False], ids=["one-block", "per-target"])
def test_fused_nll_kernels_and_their_range_check(dev, monkeypatch, one_block):
    """cross_entropy's kernels against the CPU: a reduced loss of few targets by
    tl_nll_reduce alone (one block, one copy back), or with per-target losses summed after
    (tl_nll_forward: 'none', and reductions over more targets than one block takes)."""
    from torchlite.cuda import _loss
    if not one_block:
        monkeypatch.setattr(_loss, "_ONE_BLOCK", 1)
    g = tl.Generator().manual_seed(37)
    x = tl.randn(6, 5, generator=g, requires_grad=True)
    t = tl.tensor([0, 4, 2, -100, 1, 3])
    w = tl.rand(5, generator=g) + 0.5
    xc = x.detach().cuda().requires_grad_()
    for kw in (dict(), dict(weight=w, ignore_index=-100), dict(reduction="sum"),
               dict(reduction="none", ignore_index=-100)):
        kc = {k: (v.cuda() if isinstance(v, tl.Tensor) else v) for k, v in kw.items()}
        loss = tl.nn.functional.cross_entropy(x, t.clamp(min=0) if "ignore_index" not in kw else t, **kw)
        lc = tl.nn.functional.cross_entropy(xc, (t.clamp(min=0) if "ignore_index" not in kw else t).cuda(), **kc)
        _close(loss.detach(), lc.detach(), rtol=1e-6)
        gx, = tl.autograd.grad(loss.sum(), x)
        gc, = tl.autograd.grad(lc.sum(), xc)
        _close(gx, gc, rtol=1e-6)
    assert "tl_nll_forward<float, tl::i64>" in dev.launched
    assert "tl_nll_backward<float, tl::i64>" in dev.launched
    assert ("tl_nll_reduce<float, tl::i64>" in dev.launched) == one_block
    with pytest.raises(IndexError, match="Target 9 is out of bounds"):
        tl.nn.functional.cross_entropy(xc, tl.tensor([0, 9, 0, 0, 0, 0]).cuda())
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        tl.nn.functional.cross_entropy(xc, tl.tensor([0, 1, -3, 0, 0, 0]).cuda(), reduction="sum")
    t_all = tl.full((6,), -100, dtype=tl.int64)
    assert np.isnan(tl.nn.functional.cross_entropy(xc, t_all.cuda()).item())


POOLS = {
    "k2": dict(kernel_size=2),
    "k3_s2_p1": dict(kernel_size=3, stride=2, padding=1),
    "dilated_ceil": dict(kernel_size=2, stride=2, dilation=2, ceil_mode=True),
}


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.int32])
def test_max_pool_kernel_matches_cpu_values_and_indices(dev, name, dtype):
    g = tl.Generator().manual_seed(41)
    x = (tl.randn(2, 3, 7, 8, generator=g) * 4).to(dtype)
    if dtype.is_floating_point:
        x[0, 0, 1, 1] = float("nan")
        x[0, 0, 1, 2] = float("nan")                     # the last NaN of a window wins
        x[1, 2] = float("-inf")                          # windows of only the lowest value
    F = tl.nn.functional
    v, i = F.max_pool2d(x, return_indices=True, **POOLS[name])
    vc, ic = F.max_pool2d(x.cuda(), return_indices=True, **POOLS[name])
    np.testing.assert_array_equal(ic.cpu().numpy(), i.numpy())
    np.testing.assert_array_equal(vc.cpu().numpy(), v.numpy())
    assert any(k.startswith("tl_max_pool2d<") for k in dev.launched)


# ---- the stand-in driver leaves nothing of its own behind ------------------------------------
def test_stand_in_driver_objects_stay_with_it(monkeypatch):
    """What is made under the stand-in driver (cached scalar operands, loaded kernels, events,
    streams) never reaches the driver installed after it: on a real GPU a stand-in's host
    address handed to a kernel was an illegal address, and an event it made, destroyed through
    the real driver, a crash."""
    from torchlite.cuda import _state
    before = [dict(c) for c in _state.driver_caches()]
    first = FakeDriver()
    with installed(first), monkeypatch.context() as mp:
        fake_cuda_kernels.install(first, mp)
        _same(tl.ones(3) + 1.5, tl.ones(3).cuda() + 1.5)
        assert _elementwise._scalars                            # cached under the stand-in
        kept = [_runtime._Event(0), cuda.Event(), cuda.Stream(), tl.arange(4.0).cuda()]
        kept[1].record()
        kept[3].add_(1, alpha=2)
        kept[3].record_stream(kept[2])        # its block, freed, waits on an event of that stream
    assert [dict(c) for c in _state.driver_caches()] == before
    second = FakeDriver()
    with installed(second):
        first.calls.clear()
        del kept[:]
        import gc
        gc.collect()
        assert not set(second.calls) & {"cuEventDestroy", "cuEventCreate", "cuMemFree"}, second.calls
        assert first.calls.count("cuEventDestroy") >= 2


# ---- the driver calls made in C (torchlite/_core/driver_calls.pyx) ----------------------------
def test_c_launch_hands_the_driver_what_it_reads():
    """The real driver is called through a C function pointer: here a ctypes function of
    cuLaunchKernel's signature, which reads the launch back as the driver would (the handle,
    dims, shared bytes, stream, and each parameter's bytes through the void* array)."""
    import ctypes
    import struct as st
    from torchlite._core import driver_calls as C
    seen = {}
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)

    def entry(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        sizes = (8, 8, 4, 4, 8, 4, 8, 24)
        seen.update(f=f, dims=(gx, gy, gz, bx, by, bz), shared=shared, stream=stream, extra=extra,
                    args=[ctypes.string_at(params[i], n) for i, n in enumerate(sizes)])
        return 7 if f == 0xBAD else 0
    fn = proto(entry)
    address = ctypes.cast(fn, ctypes.c_void_p).value
    blob = st.pack("<3q", 1, -2, 3)
    args = [C.ptr(0xDEAD0000BEEF), C.i64(-5), C.i32(-3), C.f32(0.5), C.f64(-2.25), C.u32(2**32 - 1),
            C.u64(2**64 - 1), C.struct(blob)]
    assert C.launch(address, 0x1234, (3, 2), 128, 96, 0x77, args) == 0
    assert seen["f"] == 0x1234 and seen["dims"] == (3, 2, 1, 128, 1, 1)
    assert seen["shared"] == 96 and seen["stream"] == 0x77 and seen["extra"] is None
    assert seen["args"] == [st.pack("<Q", 0xDEAD0000BEEF), st.pack("<q", -5), st.pack("<i", -3),
                            st.pack("<f", 0.5), st.pack("<d", -2.25), st.pack("<I", 2**32 - 1),
                            st.pack("<Q", 2**64 - 1), blob]
    assert C.launch(address, 0xBAD, 1, (32, 4, 2), 0, 0, args[:1]) == 7       # the driver's code
    assert seen["dims"] == (1, 1, 1, 32, 4, 2)
    # bad input raises before the driver is called
    with pytest.raises(OverflowError):
        C.i32(2**31)
    with pytest.raises(OverflowError):
        C.launch(address, 1, -1, 1, 0, 0, [])
    with pytest.raises(ValueError, match="1 to 3 dims"):
        C.launch(address, 1, (1, 1, 1, 1), 1, 0, 0, [])
    with pytest.raises(TypeError):
        C.launch(address, 1, 1, 1, 0, 0, [ctypes.c_int(1)])
    with pytest.raises(ValueError, match="at most 64"):
        C.launch(address, 1, 1, 1, 0, 0, [C.i32(0)] * 65)


def test_c_copies_memsets_and_synchronisation_call_the_driver_as_declared():
    """Copies, memsets and stream synchronisation through C function pointers (here ctypes
    functions of the driver's signatures), with each argument at its declared width."""
    import ctypes
    from torchlite._core import driver_calls as C
    seen = []
    u64, vp, sz = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t

    def entry(proto, code=0):
        fn = proto(lambda *a: (seen.append(a), code)[1])
        entry.keep.append(fn)
        return ctypes.cast(fn, ctypes.c_void_p).value
    entry.keep = []
    copy = entry(ctypes.CFUNCTYPE(ctypes.c_int, u64, u64, sz, vp))
    assert C.copy(copy, 2**63 + 5, 16, 2**40, 0x99) == 0
    assert seen[-1] == (2**63 + 5, 16, 2**40, 0x99)
    for width, ctype in ((1, ctypes.c_ubyte), (2, ctypes.c_ushort), (4, ctypes.c_uint)):
        fn = entry(ctypes.CFUNCTYPE(ctypes.c_int, u64, ctype, sz, vp))
        value = (1 << (8 * width)) - 2
        assert C.memset(fn, width, 0x1000, value, 7, 0) == 0
        assert seen[-1] == (0x1000, value, 7, None)
        with pytest.raises(ValueError, match="cannot hold"):
            C.memset(fn, width, 0x1000, 1 << (8 * width), 7, 0) if width < 4 else C.memset(fn, 3, 0, 0, 1, 0)
    sync = entry(ctypes.CFUNCTYPE(ctypes.c_int, vp), code=700)
    assert C.synchronize(sync, 0x42) == 700 and seen[-1] == (0x42,)
    # the stand-in driver's Python functions take the same arguments and return (code,)
    assert C.copy(lambda *a: (seen.append(a), (0,))[1], 1, 2, 3, 4) == 0 and seen[-1] == (1, 2, 3, 4)


def test_driver_entry_points_come_from_cuGetProcAddress_once(monkeypatch):
    """_driver.c_entry with a driver module that presents itself as cuda-python's: the C
    address comes from cuGetProcAddress (asked for the CUDA 12.0 form, or the driver's own
    when older), once per name; a missing entry raises CudaError naming it; another module
    (the tests' stand-in) gets its Python function back."""
    from torchlite.cuda import _driver
    asked = []

    def get_proc(name, version, flags):
        asked.append((name, version))
        return (0, 0 if name == b"cuMissing" else 0x1000 + len(asked), 0)
    real_like = types.SimpleNamespace(
        __name__="cuda.bindings.driver", cuDriverGetVersion=lambda: (0, 12080),
        cuGetProcAddress=get_proc, cuGetErrorString=lambda err: (0, b""),
        CUdriverProcAddress_flags=types.SimpleNamespace(CU_GET_PROC_ADDRESS_DEFAULT=0))
    monkeypatch.setattr(_driver, "_c_entries", {})
    monkeypatch.setattr(_driver, "_c_entries_module", None)
    monkeypatch.setattr(_driver, "driver_module", lambda: real_like)
    first = _driver.c_entry("cuLaunchKernel")
    assert _driver.c_entry("cuLaunchKernel") == first and asked == [(b"cuLaunchKernel", 12000)]
    _driver.c_entry("cuMemcpyDtoDAsync")
    assert len(asked) == 2
    with pytest.raises(_driver.CudaError, match="no cuMissing"):
        _driver.c_entry("cuMissing")
    real_like.cuDriverGetVersion = lambda: (0, 11080)
    monkeypatch.setattr(_driver, "_c_entries", {})
    _driver.c_entry("cuMemsetD8Async")
    assert asked[-1] == (b"cuMemsetD8Async", 11080)
    stand_in = types.SimpleNamespace(cuLaunchKernel=lambda *a: (0,))
    monkeypatch.setattr(_driver, "driver_module", lambda: stand_in)
    assert _driver.c_entry("cuLaunchKernel") is stand_in.cuLaunchKernel
