"""The CUDA array layer, differentially: each case runs the same code on CPU tensors and on
copies of them on the `cuda_device` fixture's device (the host-memory stand-in driver, and a
real GPU where there is one), and the results, brought back with .cpu(), must agree (exactly
on the stand-in, whose ops run the CPU kernels on host copies; to rounding on a GPU) and live
on the device.  Gradients likewise."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F


# ---- running a case on both devices ---------------------------------------------------------
def to_dev(x, device):
    if isinstance(x, tl.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_dev(e, device) for e in x)
    if isinstance(x, dict):
        return {k: to_dev(v, device) for k, v in x.items()}
    return x


def _values(t):
    """t's values as a NumPy array (float16/bfloat16 widened to float64)."""
    t = t.detach().cpu()
    return (t.double() if t.dtype in (tl.float16, tl.bfloat16) else t).numpy()


def assert_same(cpu, dev, rtol=1e-5, atol=1e-6, where="result", atol_of_largest=0.0):
    """dev (computed on the device) equals cpu: tensors on a CUDA device, same dtype, shape
    and values (NaNs in the same places); containers element by element.  atol_of_largest
    adds that fraction of the tensor's largest magnitude to atol: sums computed in another
    order differ by rounding relative to their terms, not to a small total."""
    if isinstance(cpu, tl.Tensor):
        assert isinstance(dev, tl.Tensor), f"{where}: {type(dev).__name__}, expected a Tensor"
        assert dev.device.type == "cuda", f"{where} is on {dev.device}"
        assert dev.dtype == cpu.dtype, f"{where}: dtype {dev.dtype} != {cpu.dtype}"
        assert tuple(dev.shape) == tuple(cpu.shape), f"{where}: shape {dev.shape} != {cpu.shape}"
        if cpu.is_floating_point():
            ref = _values(cpu)
            if atol_of_largest and ref.size and np.isfinite(ref).any():
                atol = atol + atol_of_largest * float(np.abs(ref[np.isfinite(ref)]).max())
            np.testing.assert_allclose(_values(dev), ref, rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(_values(dev), _values(cpu), err_msg=where)
    elif isinstance(cpu, (list, tuple)):
        assert len(dev) == len(cpu), where
        for i, (c, d) in enumerate(zip(cpu, dev)):
            assert_same(c, d, rtol, atol, f"{where}[{i}]", atol_of_largest)
    elif isinstance(cpu, float):
        assert math.isclose(dev, cpu, rel_tol=rtol, abs_tol=atol) or (math.isnan(cpu) and math.isnan(dev)), \
            f"{where}: {dev!r} != {cpu!r}"
    else:
        assert dev == cpu, f"{where}: {dev!r} != {cpu!r}"


def run_both(fn, inputs, device, **tol):
    """fn(*inputs) on the CPU and on `device` (the inputs copied there); asserts they agree."""
    cpu = fn(*inputs)
    dev = fn(*to_dev(inputs, device))
    assert_same(cpu, dev, **tol)
    return cpu, dev


def rnd(*shape, dtype=tl.float32, seed=0):
    g = np.random.default_rng(seed + sum(shape))
    return tl.tensor(g.standard_normal(shape)).to(dtype)


def rint(*shape, lo=0, hi=10, seed=0):
    return tl.tensor(np.random.default_rng(seed).integers(lo, hi, shape))


# ---- creation with device= -----------------------------------------------------------------------
CREATION = {
    "zeros": lambda d: tl.zeros(2, 3, device=d),
    "zeros_int": lambda d: tl.zeros((4,), dtype=tl.int32, device=d),
    "ones": lambda d: tl.ones(3, 2, dtype=tl.float64, device=d),
    "ones_bool": lambda d: tl.ones(5, dtype=tl.bool, device=d),
    "full": lambda d: tl.full((2, 2), 7.5, device=d),
    "full_int": lambda d: tl.full((3,), -3, dtype=tl.int64, device=d),
    "full_half": lambda d: tl.full((3,), 1.5, dtype=tl.float16, device=d),
    "full_bf16": lambda d: tl.full((3,), -2.25, dtype=tl.bfloat16, device=d),
    "full_int16": lambda d: tl.full((5,), -7, dtype=tl.int16, device=d),
    "full_f64": lambda d: tl.full((5,), 0.1, dtype=tl.float64, device=d),
    "empty_shape": lambda d: tl.empty(2, 0, 3, device=d).shape,
    "arange": lambda d: tl.arange(10, device=d),
    "arange_float": lambda d: tl.arange(0, 1, 0.125, device=d),
    "linspace": lambda d: tl.linspace(-1, 1, 7, device=d),
    "logspace": lambda d: tl.logspace(0, 2, 5, device=d),
    "eye": lambda d: tl.eye(3, 4, device=d),
    "tensor": lambda d: tl.tensor([[1, 2], [3, 4]], device=d),
    "tensor_float": lambda d: tl.tensor([1.5, -2.0], dtype=tl.float64, device=d),
    "zeros_like": lambda d: tl.zeros_like(tl.ones(2, 3, device=d)),
    "ones_like": lambda d: tl.ones_like(tl.ones(2, 3, device=d), dtype=tl.int64),
    "full_like": lambda d: tl.full_like(tl.ones(2, 3, device=d), 4),
    "new_zeros": lambda d: tl.ones(2, device=d).new_zeros(3, 1),
    "new_full": lambda d: tl.ones(2, device=d).new_full((2,), 3.0),
    "new_tensor": lambda d: tl.ones(2, device=d).new_tensor([1, 2, 3]),
    "tril_indices": lambda d: tl.tril_indices(3, 3, device=d),
    "triu_indices": lambda d: tl.triu_indices(3, 4, 1, device=d),
    "tensor_of_tensor": lambda d: tl.tensor(tl.arange(3.0, device=d)),       # keeps the device
    "empty_like_strided": lambda d: tl.zeros_like(tl.ones(3, 2, device=d).t()).stride(),
}


@pytest.mark.parametrize("name", list(CREATION))
def test_creation(cuda_device, name):
    make = CREATION[name]
    cpu, dev = make("cpu"), make(cuda_device)
    assert_same(cpu, dev)


RANDOM = {
    "rand": lambda d: tl.rand(3, 4, device=d),
    "randn": lambda d: tl.randn(5, device=d, dtype=tl.float64),
    "randint": lambda d: tl.randint(0, 10, (3, 3), device=d),
    "randperm": lambda d: tl.randperm(8, device=d),
    "rand_like": lambda d: tl.rand_like(tl.zeros(2, 2, device=d)),
    "randn_like": lambda d: tl.randn_like(tl.zeros(2, 2, device=d)),
    "normal": lambda d: tl.normal(0.0, 2.0, (4,), device=d),
    "normal_": lambda d: tl.empty(6, device=d).normal_(1.0, 0.5),
    "uniform_": lambda d: tl.zeros(2, 3, device=d).uniform_(-1, 1),
    "bernoulli": lambda d: tl.bernoulli(tl.full((10,), 0.5, device=d)),
    "multinomial": lambda d: tl.multinomial(tl.tensor([0.1, 0.2, 0.7], device=d), 5, replacement=True),
    "dropout": lambda d: F.dropout(tl.ones(20, device=d), 0.5, training=True),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_numbers_follow_the_seed(cuda_device, name):
    """torchlite.manual_seed seeds every device (as torch.manual_seed does), and a seed gives
    the same numbers on the device as on the CPU (one Philox stream layout for both)."""
    make = RANDOM[name]
    tl.manual_seed(123)
    cpu = make("cpu")
    tl.manual_seed(123)
    dev = make(cuda_device)
    assert_same(cpu, dev)
    tl.manual_seed(124)
    assert not tl.equal(make(cuda_device).cpu(), cpu) or cpu.numel() <= 1


def test_dropout_module_train_and_eval(cuda_device):
    m = nn.Dropout(0.3)
    x = rnd(4, 5)
    tl.manual_seed(5)
    cpu = m(x)
    tl.manual_seed(5)
    dev = m(x.to(cuda_device))
    assert_same(cpu, dev)
    m.eval()
    assert_same(m(x), m(x.to(cuda_device)))


# ---- pointwise ------------------------------------------------------------------------------------
A, B = rnd(3, 4), rnd(3, 4, seed=1)
POS = rnd(3, 4, seed=2).abs() + 0.1
ROW, COL = rnd(4, seed=3), rnd(3, 1, seed=4)
T = rnd(4, 3, seed=5).t()                   # transposed: non-contiguous
S = rnd(3, 8, seed=6)[:, ::2]               # sliced with a step
E = rnd(1, 4, seed=7).expand(3, 4)          # expanded: stride 0
I = rint(3, 4, lo=-5, hi=5)
BOOL = rnd(3, 4, seed=8) > 0

POINTWISE = {
    "neg": (lambda a: -a, [A]),
    "abs": (tl.abs, [A]),
    "exp": (tl.exp, [A]),
    "log": (tl.log, [POS]),
    "sqrt": (tl.sqrt, [POS]),
    "rsqrt": (tl.rsqrt, [POS]),
    "sin_cos": (lambda a: (a.sin(), a.cos(), a.tan()), [A]),
    "tanh_sigmoid": (lambda a: (a.tanh(), a.sigmoid(), F.softplus(a), F.gelu(a), F.silu(a)), [A]),
    "relu_family": (lambda a: (F.relu(a), F.leaky_relu(a, 0.1), F.elu(a), F.hardtanh(a), F.relu6(a * 4)), [A]),
    "floor_ceil_round": (lambda a: (a.floor(), a.ceil(), (a * 3).round(), a.trunc(), a.frac(), a.sign()), [A]),
    "pow": (lambda a, b: (a ** 2, POS_D(a) ** b, 2 ** a, a.pow(3)), [A, B]),
    "add_sub_mul_div": (lambda a, b: (a + b, a - b, a * b, a / b, a.add(b, alpha=2), a.sub(b, alpha=0.5)), [A, B]),
    "scalar_ops": (lambda a: (a + 1, 2 - a, a * 3.5, 1 / (a.abs() + 1), a // 0.5, a % 0.7), [A]),
    "broadcast_row_col": (lambda a, r, c: (a + r, a * c, r - c, tl.maximum(a, c)), [A, ROW, COL]),
    "noncontiguous": (lambda t, s, e: (t + s, t * e, s.exp(), e - t, t.contiguous()), [T, S, E]),
    "int_ops": (lambda i: (i + 3, i * i, i // 2, i % 3, i.abs(), -i, i & 6, i | 1, i ^ 3, i << 1, i >> 1), [I]),
    "int_true_div": (lambda i: (i / 2, i.float() / 3), [I]),
    "promotion": (lambda i, a, b: (i + a, i * 2.5, a.double() + b, a.half() + b, b.to(tl.bfloat16) * 2,
                                   i.to(tl.int8) + i.to(tl.int32), BOOL_D(i) + i), [I, A, B]),
    "compare": (lambda a, b: (a < b, a <= b, a > 0, a == b, a != b, a >= b, tl.eq(a, a)), [A, B]),
    "logical": (lambda m, n: (m & n, m | n, ~m, m ^ n, tl.logical_and(m, n), tl.logical_not(m)), [BOOL, BOOL.t().t()]),
    "where": (lambda m, a, b: (tl.where(m, a, b), tl.where(m, a, 0.0), a.masked_fill(m, -1.0)), [BOOL, A, B]),
    "clamp": (lambda a: (a.clamp(-0.5, 0.5), a.clamp(min=0), a.clamp(max=0.1), tl.clip(a, -1, 1)), [A]),
    "clamp_tensor": (lambda a, r: a.clamp(min=r), [A, ROW]),
    "lerp_addcmul": (lambda a, b, c: (tl.lerp(a, b, 0.3), tl.addcmul(a, b, c, value=0.5),
                                     tl.addcdiv(a, b, c.abs() + 1, value=2.0)), [A, B, T]),
    "minmax_binary": (lambda a, b: (tl.maximum(a, b), tl.minimum(a, b), tl.fmod(a, 0.3), tl.remainder(a, 0.3),
                                    tl.atan2(a, b), tl.hypot(a, b)), [A, B]),
    "nan_inf": (lambda a: (tl.log(a), tl.isnan(tl.log(a)), tl.isinf(1 / (a * 0)), tl.isfinite(a / 0),
                           tl.nan_to_num(tl.log(a))), [A]),
    "cast": (lambda a: (a.int(), a.long(), a.bool(), a.half(), a.to(tl.bfloat16), a.double(), a.to(tl.uint8)), [A * 4]),
    "float16_math": (lambda a, b: (a + b, a * b, a.exp(), a.sum()), [A.half(), B.half()]),
    "erf_expm1": (lambda a: (tl.erf(a), tl.expm1(a), tl.log1p(a.abs()), tl.reciprocal(a), a.square()), [A]),
    "zero_size": (lambda z: (z + 1, z.sum(), z * z, z.exp()), [tl.ones(0, 3)]),
    "zero_dim": (lambda s, a: (s + a, s * 2, a * s, s.exp()), [tl.tensor(2.5), A]),
}


def POS_D(a):
    return a.abs() + 0.5


def BOOL_D(i):
    return i > 0


@pytest.mark.parametrize("name", list(POINTWISE))
def test_pointwise(cuda_device, name):
    fn, inputs = POINTWISE[name]
    run_both(fn, inputs, cuda_device)


def test_cpu_scalar_tensor_joins_cuda_tensors(cuda_device):
    """A 0-dim CPU tensor may be an operand of an op on CUDA tensors (as in PyTorch)."""
    x = A.to(cuda_device)
    s = tl.tensor(3.0)
    for r, expect in ((x * s, A * 3), (s + x, A + 3), (tl.where(x > 0, x, s), tl.where(A > 0, A, s)),
                      (x.clamp(max=s), A.clamp(max=3.0)), (x.add_(0) / s, A / 3)):
        assert_same(expect, r)


# ---- in-place and views ------------------------------------------------------------------------------
def _inplace_views(x, y):
    x = x.clone()
    x[1:, ::2].add_(y[1:, ::2])
    x[0].mul_(2)
    x.t()[1].sub_(1.5)
    x[:, 3].fill_(7)
    x[2, 1:3].zero_()
    v = x.view(12)
    v[5] = -1
    x.diagonal().clamp_(max=0.5)
    x.unsqueeze(0)[0, 0, 0] = 9
    x[:, :2].copy_(y[:, 2:])
    x[:, 1].masked_fill_(x[:, 1] > 0, 100)
    x.relu_().exp_().log_()
    return x, v


def _inplace_noncontiguous_sources(x, y):
    out = tl.zeros(4, 3)
    out = out.to(x.device)
    out.copy_(x.t())
    out[1:].add_(y.t()[1:], alpha=3)
    out.t().mul_(2.0)
    z = x.t().contiguous()
    z += y.t()
    z *= 2
    z /= 4
    z -= 1
    return out, z, x.t().reshape(12), x.t().flatten(), x.t().reshape(2, 6)


def _version_and_alias(x, y):
    x = x.clone()
    v = x[0]
    before = v._version
    x.add_(1)
    return v, x, v._version > before


@pytest.mark.parametrize("fn", [_inplace_views, _inplace_noncontiguous_sources, _version_and_alias],
                         ids=lambda f: f.__name__.strip("_"))
def test_inplace_and_views(cuda_device, fn):
    run_both(fn, [A, B], cuda_device)


def test_views_share_device_memory(cuda_device):
    x = tl.zeros(3, 4, device=cuda_device)
    v = x[1]
    v.fill_(2)
    x.t()[0].add_(1)
    assert x.data_ptr() == v.data_ptr() - 4 * 4 and x.is_cuda and v.is_cuda
    assert x.cpu().tolist() == [[1, 0, 0, 0], [3, 2, 2, 2], [1, 0, 0, 0]]
    assert x.t().is_contiguous() is False and x.t().stride() == (1, 4)
    assert x.storage_offset() == 0 and v.storage_offset() == 4


# ---- reductions ----------------------------------------------------------------------------------------
R3 = rnd(2, 3, 4, seed=11)

REDUCTIONS = {
    "sum": (lambda x: (x.sum(), x.sum(0), x.sum((0, 2)), x.sum(-1, keepdim=True), x.sum(1, dtype=tl.float64)), [R3]),
    "mean": (lambda x: (x.mean(), x.mean(1), x.mean((1, 2), keepdim=True)), [R3]),
    "var_std": (lambda x: (x.var(), x.var(1), x.var(0, unbiased=False), x.std(2), tl.var_mean(x, 1),
                           tl.std_mean(x, dim=(0, 2))), [R3]),
    "max_min": (lambda x: (x.max(), x.min(), x.max(1), x.min(2, keepdim=True), x.amax((0, 1)), x.amin(-1),
                           tl.aminmax(x, dim=1)), [R3]),
    "argmax": (lambda x: (x.argmax(), x.argmax(1), x.argmin(2, keepdim=True)), [R3]),
    "prod": (lambda x: (x.prod(), x.prod(1), (x * 0 + 2).prod(2, dtype=tl.float64)), [R3]),
    "any_all": (lambda x: ((x > 0).any(), (x > 0).all(1), (x > -5).all(), x.any(2), x.bool().all()), [R3]),
    "logsumexp": (lambda x: (x.logsumexp(1), tl.logsumexp(x, (0, 2))), [R3]),
    "cumsum": (lambda x: (x.cumsum(1), x.cumprod(2), x.cummax(0), x.cummin(1), tl.logcumsumexp(x, 2)), [R3]),
    "norm": (lambda x: (x.norm(), x.norm(dim=1), x.norm(p=1, dim=2), tl.linalg.vector_norm(x, 3, dim=0)), [R3]),
    "count_nonzero": (lambda x: (tl.count_nonzero(x > 0), (x > 0).sum(1), (x > 0).sum(dtype=tl.int32)), [R3]),
    "int_sum": (lambda i: (i.sum(), i.sum(0), i.max(1), i.prod(1), i.float().mean(1)), [I]),
    "noncontiguous": (lambda t: (t.sum(0), t.max(1), t.mean(), t.var(1), t.argmax(0)), [T]),
    "median_quantile": (lambda x: (x.median(), x.median(1), x.nanmedian(), x.nanmean(1), x.nansum(),
                                   x.quantile(0.3), x.quantile(tl.tensor([0.2, 0.9]).to(x.device), dim=1)), [R3]),
    "dist": (lambda a, b: (tl.dist(a, b), tl.cdist(a, b), F.cosine_similarity(a, b, dim=-1)), [A, B]),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(cuda_device, name):
    fn, inputs = REDUCTIONS[name]
    run_both(fn, inputs, cuda_device)


def test_item_tolist_and_python_conversions(cuda_device):
    x = tl.tensor([[1.5, -2.0], [3.0, 4.25]], device=cuda_device)
    assert x[1, 1].item() == 4.25 and x.sum().item() == 6.75
    assert x.tolist() == [[1.5, -2.0], [3.0, 4.25]] and x[0].tolist() == [1.5, -2.0]
    assert float(x[0, 0]) == 1.5 and int(x[1, 0]) == 3 and bool(x[0, 0] > 0) is True
    i = tl.arange(5, device=cuda_device)
    assert [2, 3][i[1]] == 3 and list(range(10))[i[4]] == 4 and len(i) == 5
    assert [t.item() for t in i] == [0, 1, 2, 3, 4]
    assert x.t().tolist() == [[1.5, 3.0], [-2.0, 4.25]]
    with pytest.raises(RuntimeError):
        x.item()
    with pytest.raises(RuntimeError):
        bool(x)
    assert tl.tensor(7, device=cuda_device).item() == 7


def test_numpy_of_a_cuda_tensor_is_a_type_error(cuda_device):
    x = tl.ones(3, device=cuda_device)
    with pytest.raises(TypeError, match="cuda"):
        x.numpy()
    with pytest.raises(TypeError, match="cuda"):
        np.asarray(x)
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones(3, np.float32))


def test_repr_names_the_device(cuda_device):
    x = tl.tensor([1.0, 2.5], device=cuda_device)
    assert repr(x) == "tensor([1.0000, 2.5000], device='cuda:0')"
    assert repr(tl.tensor([1, 2], device=cuda_device)) == "tensor([1, 2], device='cuda:0')"
    assert repr(tl.zeros(2, dtype=tl.float64, device=cuda_device)) == \
        "tensor([0., 0.], device='cuda:0', dtype=torchlite.float64)"
    w = tl.ones(2, device=cuda_device, requires_grad=True)
    assert repr(w * 2).endswith("device='cuda:0', grad_fn=<MulBackward0>)")
    assert str(x.device) == "cuda:0" and x.device == tl.device("cuda", 0) and x.get_device() == 0
    assert repr(tl.ones(2000, device=cuda_device)).count("...") == 1


# ---- linear algebra -------------------------------------------------------------------------------------
LINALG = {
    "matmul": (lambda a, b: (a @ b.t(), a.t() @ b, a[0] @ b[1], a @ b[0]), [A, B]),
    "mm_mv": (lambda a, b: (tl.mm(a, b.t()), tl.mv(a, b[0]), tl.dot(a[0], b[0]), tl.outer(a[0], b[1])), [A, B]),
    "bmm": (lambda x, y: (tl.bmm(x, y), x @ y, tl.matmul(x, y[0])), [rnd(2, 3, 4), rnd(2, 4, 5, seed=1)]),
    "broadcast_matmul": (lambda x, y: x @ y, [rnd(2, 1, 3, 4), rnd(5, 4, 2, seed=2)]),
    "addmm": (lambda c, a, b: (tl.addmm(c, a, b.t()), tl.addmm(c, a, b.t(), beta=0.5, alpha=2),
                               tl.baddbmm(c.expand(2, 3, 3), a.expand(2, 3, 4), b.t().expand(2, 4, 3))),
              [rnd(3, 3, seed=9), A, B]),
    "einsum": (lambda x, y: (tl.einsum("ij,kj->ik", x, y), tl.einsum("ij->j", x), tl.einsum("ii", x[:, :3]),
                             tl.einsum("bij,bjk->bik", x[None], y.t()[None])), [A, B]),
    "int_matmul": (lambda i: i @ i.t(), [I]),
    "float64_matmul": (lambda a, b: a.double() @ b.double().t(), [A, B]),
    "linear": (lambda x, w, b: (F.linear(x, w, b), F.linear(x, w)), [A, rnd(5, 4, seed=3), rnd(5, seed=4)]),
    "linalg": (lambda m: (tl.linalg.inv(m), tl.linalg.det(m), tl.linalg.solve(m, m[:, :1]),
                          tl.linalg.cholesky(m @ m.t() + tl.eye(3).to(m.device))),
               [rnd(3, 3, seed=21) + 3 * tl.eye(3)]),
    "triu_tril": (lambda a: (a.triu(), a.tril(-1), tl.trace(a[:, :3]), tl.diag(a[0]), tl.diag_embed(a[:2, :2])), [A]),
    "kron_cross": (lambda a, b: (tl.kron(a[:2, :2], b[:2, :2]), tl.cross(a[:, :3], b[:, :3], dim=1)), [A, B]),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg(cuda_device, name):
    fn, inputs = LINALG[name]
    run_both(fn, inputs, cuda_device, rtol=1e-4, atol=1e-5)


# ---- indexing ---------------------------------------------------------------------------------------------
X = rnd(4, 5, seed=31)
IDX = tl.tensor([2, 0, 3, 3])
MASK = X > 0


def _getitem(x, idx, m):
    return (x[1], x[-1, 2:], x[::2, 1::2], x[None, 1, ..., None], x[idx], x[:, idx],
            x[idx, idx], x[idx[:2, None], idx[None, :3]], x[m], x[m[:, 0]], x[[0, 2]], x[1:3, [0, 4]],
            x[tl.tensor(1)], x[..., 1], x[idx > 1])


def _setitem(x, idx, m):
    x = x.clone()
    x[0] = 1.0
    x[1, 2:] = tl.arange(3.0).to(x.device)
    x[idx[:2]] = -2.0
    x[:, idx[:2]] = x[:, :2] * 10
    x[m] = 0.5
    y = x.clone()
    y[y > 1] = y[y > 1] * 0 - 3
    y[[0, 1], [1, 2]] = tl.tensor([7.0, 8.0]).to(x.device)
    y[idx, 0] += 1            # repeated index: one write, as on the CPU
    y.index_put_((idx,), tl.ones(4, 5).to(x.device), accumulate=True)
    return x, y


GATHER = {
    # scatter of values: which of several writes to one place lands is unspecified on CUDA
    # (as in PyTorch), so its index u is repeat-free; the reductions take i with repeats
    "gather_scatter": (lambda x, i, u: (x.gather(1, i), tl.zeros(4, 5).to(x.device).scatter(1, u, x),
                                        tl.zeros(4, 5).to(x.device).scatter_add(1, i, x),
                                        x.scatter(1, i, 2.0), x.scatter_reduce(1, i, x, "amax")),
                       [X, rint(4, 3, hi=5), tl.tensor([[0, 2, 4], [1, 3, 0], [4, 0, 2], [3, 1, 2]])]),
    "index_select_add": (lambda x, i: (x.index_select(0, i), x.index_select(1, i), x.index_add(0, i, x),
                                       x.index_copy(0, tl.tensor([1, 0]).to(x.device), x[:2]),
                                       x.index_fill(1, i, -1.0), tl.take(x, i), x.take_along_dim(i[:1, None], 1)),
                         [X, IDX]),
    "masked": (lambda x, m: (x.masked_select(m), x.masked_scatter(m, -x), m.nonzero(), tl.nonzero(m, as_tuple=True),
                             tl.argwhere(m), m.sum()), [X, MASK]),
    "getitem": (_getitem, [X, IDX, MASK]),
    "setitem": (_setitem, [X, IDX, MASK]),
    "embedding": (lambda w, i: (F.embedding(i, w), F.embedding(i.view(2, 2), w, padding_idx=0),
                                F.one_hot(i, 5)), [rnd(5, 3, seed=5), IDX]),
}


@pytest.mark.parametrize("name", list(GATHER))
def test_indexing(cuda_device, name):
    fn, inputs = GATHER[name]
    run_both(fn, inputs, cuda_device)


def test_index_out_of_range_is_an_index_error(cuda_device):
    x = X.to(cuda_device)
    with pytest.raises(IndexError):
        x[tl.tensor([0, 9]).to(cuda_device)]
    with pytest.raises(IndexError):
        x[4]
    with pytest.raises((IndexError, RuntimeError)):
        x.index_select(0, tl.tensor([7]).to(cuda_device))


# ---- joining and reshaping ----------------------------------------------------------------------------------
JOIN = {
    "cat_stack": (lambda a, b: (tl.cat([a, b]), tl.cat([a, b.t().t()], 1), tl.stack([a, b], 2), tl.hstack([a, b]),
                                tl.vstack([a, b]), tl.cat([a, tl.zeros(0, 4).to(a.device)]),
                                tl.cat([a.int(), b.long()]), tl.column_stack([a[0], b[0]])), [A, B]),
    "split_chunk": (lambda a: (a.split(2, 1), a.split([1, 2], 0), a.chunk(3, 1), a.unbind(0),
                               a.tensor_split(3, 1)), [A]),
    "flip_roll": (lambda a: (a.flip(0), a.flip((0, 1)), a.roll(1, 1), a.roll((1, -2), (0, 1)), a.roll(5),
                             tl.rot90(a), a.fliplr()), [A]),
    "pad": (lambda x: (F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), value=3.0), F.pad(x[None], (2, 2), mode="reflect"),
                       F.pad(x[None], (1, 1, 1, 1), mode="replicate"), F.pad(x[None], (1, 2), mode="circular")),
            [A]),
    "repeat_tile": (lambda a: (a.repeat(2, 1), a.repeat(1, 2, 1), tl.tile(a, (2,)), a.repeat_interleave(2, 0),
                               a.expand(2, 3, 4).contiguous(), a.unsqueeze(1).expand(3, 2, 4).reshape(6, 4)), [A]),
    "reshape_permute": (lambda r: (r.permute(2, 0, 1).contiguous(), r.transpose(0, 2).reshape(-1), r.movedim(0, -1),
                                   r.flatten(1), r.unflatten(2, (2, 2)), r.squeeze(), r[:, None].squeeze(1),
                                   r.narrow(2, 1, 2), r.unfold(2, 2, 1), r.swapaxes(0, 1), r.view(6, 4).t()), [R3]),
    "where_nonzero_tril": (lambda a: (tl.tril(a), a.triu(1), tl.meshgrid(a[0], a[:, 0], indexing="ij")), [A]),
}


@pytest.mark.parametrize("name", list(JOIN))
def test_joining(cuda_device, name):
    fn, inputs = JOIN[name]
    run_both(fn, inputs, cuda_device)


# ---- sorting -------------------------------------------------------------------------------------------------
SORTS = {
    "sort": (lambda x: (x.sort(), x.sort(0, descending=True), x.argsort(1), x.t().sort(1), x.msort()), [X]),
    "sort_stable": (lambda i: (i.sort(stable=True), i.sort(0, stable=True, descending=True)), [rint(4, 6, hi=3)]),
    "topk_kthvalue": (lambda x: (x.topk(2), x.topk(3, 0, largest=False), x.kthvalue(2, 1), x.t().topk(1)), [X]),
    "unique": (lambda i: (i.unique(), tl.unique(i, return_inverse=True, return_counts=True), i.unique(dim=0),
                          tl.unique_consecutive(i.flatten(), return_counts=True), i.unique(sorted=True)),
               [rint(4, 3, hi=3)]),
    "searchsorted": (lambda s, v: (tl.searchsorted(s, v), tl.bucketize(v, s), tl.searchsorted(s, v, right=True)),
                     [tl.tensor([0.0, 1.0, 2.5, 4.0]), rnd(6, seed=41) * 3]),
    "histc_bincount": (lambda x, i: (tl.histc(x, 5, -2, 2), tl.bincount(i), tl.bincount(i, weights=x[0]),
                                     tl.histogram(x, 4)),
                       [X, tl.tensor([0, 1, 1, 4, 2])]),
}


@pytest.mark.parametrize("name", list(SORTS))
def test_sorting(cuda_device, name):
    fn, inputs = SORTS[name]
    run_both(fn, inputs, cuda_device)


# ---- nn.functional ------------------------------------------------------------------------------------------------
LOGITS, TARGET = rnd(6, 5, seed=51), tl.tensor([0, 4, 2, 2, 1, 3])
IMG = rnd(2, 3, 8, 8, seed=52)

NN = {
    "softmax": (lambda x: (F.softmax(x, 1), F.log_softmax(x, 0), x.softmax(-1), F.softmin(x, 1)), [LOGITS]),
    "cross_entropy": (lambda x, t: (F.cross_entropy(x, t), F.cross_entropy(x, t, reduction="none"),
                                    F.cross_entropy(x, t, label_smoothing=0.1), F.cross_entropy(x, t, ignore_index=2),
                                    F.cross_entropy(x, t, weight=tl.arange(1.0, 6.0).to(x.device)),
                                    F.cross_entropy(x, x.softmax(1))), [LOGITS, TARGET]),
    "nll": (lambda x, t: (F.nll_loss(x.log_softmax(1), t), F.nll_loss(x.log_softmax(1), t, reduction="sum")),
            [LOGITS, TARGET]),
    "losses": (lambda a, b: (F.mse_loss(a, b), F.l1_loss(a, b), F.smooth_l1_loss(a, b), F.huber_loss(a, b, delta=0.5),
                             F.binary_cross_entropy(a.sigmoid(), b.sigmoid()),
                             F.binary_cross_entropy_with_logits(a, (b > 0).float()),
                             F.kl_div(a.log_softmax(1), b.softmax(1), reduction="batchmean"),
                             F.mse_loss(a, b, reduction="none")), [A, B]),
    "conv1d": (lambda x, w, b: (F.conv1d(x, w, b), F.conv1d(x, w, stride=2, padding=1),
                                F.conv1d(x, w[:, :1], groups=3)),
               [rnd(2, 3, 10, seed=53), rnd(6, 3, 3, seed=54), rnd(6, seed=55)]),
    "conv2d": (lambda x, w, b: (F.conv2d(x, w, b), F.conv2d(x, w, None, stride=2, padding=1, dilation=2),
                                F.conv2d(x, w[:, :1], groups=3, padding="same")),
               [IMG, rnd(6, 3, 3, 3, seed=56), rnd(6, seed=57)]),
    "conv_transpose2d": (lambda x, w: (F.conv_transpose2d(x, w), F.conv_transpose2d(x, w, stride=2, padding=1,
                                                                                   output_padding=1)),
                         [IMG, rnd(3, 4, 3, 3, seed=58)]),
    "pooling": (lambda x: (F.max_pool2d(x, 2), F.max_pool2d(x, 3, 2, 1, return_indices=True), F.avg_pool2d(x, 2),
                           F.avg_pool2d(x, 3, 1, 1, count_include_pad=False), F.adaptive_avg_pool2d(x, (3, 3)),
                           F.adaptive_max_pool2d(x, 2), F.max_pool1d(x[0], 2), F.avg_pool1d(x[0], 3)), [IMG]),
    "batch_norm": (lambda x, w, b: (F.batch_norm(x, tl.zeros(3).to(x.device), tl.ones(3).to(x.device), w, b,
                                                 training=True),
                                    F.batch_norm(x, tl.zeros(3).to(x.device) + 0.1, tl.ones(3).to(x.device) * 2, w, b)),
                   [IMG, rnd(3, seed=59), rnd(3, seed=60)]),
    "layer_group_norm": (lambda x, w, b: (F.layer_norm(x, (8,)), F.layer_norm(x, (8, 8)),
                                          F.group_norm(x, 3, w, b), F.group_norm(x, 1),
                                          F.instance_norm(x), F.normalize(x, dim=1)),
                         [IMG, rnd(3, seed=61), rnd(3, seed=62)]),
    "interpolate": (lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 5), mode="bilinear"),
                               F.pixel_shuffle(x.repeat(1, 4, 1, 1)[:, :4], 2), F.unfold(x, 2)), [IMG]),
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  [rnd(2, 4, 3, seed=63), rnd(2, 4, 3, seed=64), rnd(2, 4, 3, seed=65)]),
}


@pytest.mark.parametrize("name", list(NN))
def test_nn_functional(cuda_device, name):
    fn, inputs = NN[name]
    run_both(fn, inputs, cuda_device, rtol=1e-4, atol=1e-5)


def test_batch_norm_updates_running_stats_on_the_device(cuda_device):
    cpu = nn.BatchNorm2d(3)
    dev = nn.BatchNorm2d(3).to(cuda_device)
    for _ in range(2):
        assert_same(cpu(IMG), dev(IMG.to(cuda_device)))
    assert_same(cpu.running_mean, dev.running_mean)
    assert_same(cpu.running_var, dev.running_var)
    assert dev.num_batches_tracked.item() == 2 and dev.num_batches_tracked.is_cuda


# ---- gradients -----------------------------------------------------------------------------------------------
def _grads(model_fn, params, inputs):
    loss = model_fn(*params, *inputs)
    loss.backward()
    return [loss] + [p.grad for p in params]


def _mlp(w1, b1, w2, b2, x, t):
    return F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), t)


def _cnn(w, b, gamma, beta, fw, x, t):
    h = F.conv2d(x, w, b, padding=1)
    h = F.batch_norm(h, None, None, gamma, beta, training=True)
    h = F.max_pool2d(F.relu(h), 2)
    h = F.avg_pool2d(h, 2).flatten(1)
    return F.cross_entropy(h @ fw, t)


GRAD_CASES = {
    "mlp": (_mlp, [rnd(8, 4), rnd(8), rnd(3, 8, seed=1), rnd(3, seed=2)],
            [rnd(5, 4, seed=3), tl.tensor([0, 2, 1, 1, 0])]),
    "cnn": (_cnn, [rnd(4, 3, 3, 3), rnd(4), rnd(4, seed=1), rnd(4, seed=2), rnd(16, 3, seed=3)],
            [IMG, tl.tensor([1, 2])]),
    "indexing": (lambda w, i, m: (w[i].sum() + w[m].exp().sum() + w.gather(1, i[None].expand(4, 4)).pow(2).sum()
                                  + w.index_select(1, i).sum() + w[:, ::2].t().sum() * 2),
                 [rnd(4, 4)], [tl.tensor([0, 2, 2, 3]), rnd(4, 4, seed=9) > 0]),
    "reductions": (lambda w: (w.max(1)[0].sum() + w.logsumexp(0).sum() + w.var(1).sum() + w.norm()
                              + w.cumsum(1).mean() + w.sort(1)[0][:, 0].sum() + w.topk(2)[0].sum() + w.prod(1).sum()),
                   [rnd(3, 4)], []),
    "embedding_layer_norm": (lambda e, g, i: F.layer_norm(F.embedding(i, e), (3,), g).pow(2).sum(),
                             [rnd(5, 3), rnd(3)], [tl.tensor([[1, 4], [1, 0]])]),
    "conv_transpose": (lambda w, x: F.conv_transpose2d(x, w, stride=2).sin().sum(), [rnd(3, 2, 3, 3)], [IMG]),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_backward_matches_cpu(cuda_device, name):
    fn, params, inputs = GRAD_CASES[name]
    cpu_params = [p.clone().requires_grad_() for p in params]
    dev_params = [p.to(cuda_device).requires_grad_() for p in params]
    cpu = _grads(fn, cpu_params, inputs)
    dev = _grads(fn, dev_params, to_dev(inputs, cuda_device))
    # float32 gradients summed in another order (atomics, other tilings): on these cases the
    # CPU's own float32 result is up to 1e-6 of the largest gradient away from float64's
    assert_same(cpu, dev, rtol=1e-5, atol=1e-6, atol_of_largest=2e-6)
    assert all(p.is_leaf and p.grad.device == p.device for p in dev_params)


def test_autograd_grad_and_higher_order(cuda_device):
    def f(x):
        return (x ** 3 * x.sin()).sum()

    def grads(x):
        x = x.clone().requires_grad_()
        (g,) = tl.autograd.grad(f(x), x, create_graph=True)
        (gg,) = tl.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = tl.autograd.grad(gg.sum(), x)
        return g, gg, ggg

    run_both(grads, [rnd(5)], cuda_device)
    x = rnd(5).to(cuda_device).requires_grad_()
    y = (x * 2).sum()
    (g,) = tl.autograd.grad(y, x, grad_outputs=tl.tensor(3.0, device=cuda_device))
    assert_same(tl.full((5,), 6.0), g)


def test_backward_with_gradient_argument_and_hooks(cuda_device):
    def run(x, gout):
        x = x.clone().requires_grad_()
        seen = []
        x.register_hook(lambda g: seen.append(g.device.type) or g * 2)
        (x * x).backward(gout)
        return x.grad, seen[0] == x.device.type
    run_both(run, [rnd(3, 2), rnd(3, 2, seed=4)], cuda_device)


def test_grad_accumulates_across_backwards(cuda_device):
    def run(x):
        w = x.clone().requires_grad_()
        for k in range(3):
            (w * k).sum().backward()
        w.grad.zero_()
        (w ** 2).mean().backward()
        return w.grad
    run_both(run, [rnd(4)], cuda_device)
