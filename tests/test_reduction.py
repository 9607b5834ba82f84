"""Reductions, argmax/argmin, var/std, norms, scans, median and softmax against NumPy (float64
references), across dims, layouts, dtypes, thread counts and ISA levels, plus PyTorch for
result dtypes and tie-breaking where it is installed."""
import contextlib
import itertools
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import torchlite as tl
import torchlite._core as _core
from torchlite._ops import reduction as R

from helpers import (ALL_DTYPES, NP_DTYPE, assert_values, available_isa_levels,
                     isa_level, make_noncontig, rounded_to, to_numpy, torch_or_skip)

DIMS_3D = [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (2, 1), (-1, 0), [0, 1, 2], ()]


def np_axis(dim, ndim):
    """NumPy's axis for a torch dim argument (None/() -> every dim)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if ndim == 0:
        return ()
    return tuple(d % ndim for d in dims)


def keep(r, x, axis, keepdims):
    """r computed with keepdims=True, squeezed unless keepdims."""
    if keepdims:
        return r
    return np.squeeze(r, axis=tuple(range(x.ndim)) if axis is None else axis)


def np_logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros([1] * x.ndim)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return keep(r, x, axis, keepdims)


def np_norm(x, p, axis, keepdims):
    a = np.abs(x)
    if p == math.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
    with np.errstate(divide="ignore"):
        return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def np_softmax(x, axis, log=False):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


@contextlib.contextmanager
def num_threads(n):
    old = tl.get_num_threads()
    tl.set_num_threads(n)
    try:
        yield
    finally:
        tl.set_num_threads(old)


def rand3(shape=(3, 4, 5), nan=False):
    x = np.random.randn(*shape)
    if nan:
        x[np.random.rand(*shape) < 0.15] = np.nan
    return x.astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------------------------------
# Every reduction, every dim combination, every layout
# ---------------------------------------------------------------------------------------
# name: (torchlite call, numpy reference with keepdims, data has NaN)
REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum(d, k), lambda x, a, k: np.sum(x, axis=a, keepdims=k), False),
    "nansum": (lambda t, d, k: tl.nansum(t, d, k), lambda x, a, k: np.nansum(x, axis=a, keepdims=k), True),
    "mean": (lambda t, d, k: t.mean(d, k), lambda x, a, k: np.mean(x, axis=a, keepdims=k), False),
    "nanmean": (lambda t, d, k: t.nanmean(d, k), lambda x, a, k: np.nanmean(x, axis=a, keepdims=k), True),
    "amax": (lambda t, d, k: t.amax(() if d is None else d, k), lambda x, a, k: np.max(x, axis=a, keepdims=k), True),
    "amin": (lambda t, d, k: tl.amin(t, () if d is None else d, k),
             lambda x, a, k: np.min(x, axis=a, keepdims=k), True),
    "logsumexp": (lambda t, d, k: tl.logsumexp(t, () if d is None else d, k), np_logsumexp, False),
    "var": (lambda t, d, k: t.var(d, keepdim=k), lambda x, a, k: np.var(x, axis=a, ddof=1, keepdims=k), False),
    "std0": (lambda t, d, k: t.std(d, keepdim=k, correction=0), lambda x, a, k: np.std(x, axis=a, keepdims=k), False),
    "norm2": (lambda t, d, k: t.norm(2, d, k), lambda x, a, k: np_norm(x, 2, a, k), False),
    "norm1": (lambda t, d, k: t.norm(1, d, k), lambda x, a, k: np_norm(x, 1, a, k), False),
    "norminf": (lambda t, d, k: t.norm(math.inf, d, k), lambda x, a, k: np_norm(x, math.inf, a, k), False),
    "norm-inf": (lambda t, d, k: t.norm(-math.inf, d, k), lambda x, a, k: np_norm(x, -math.inf, a, k), False),
    "norm3": (lambda t, d, k: t.norm(3, d, k), lambda x, a, k: np_norm(x, 3, a, k), False),
    "norm0": (lambda t, d, k: t.norm(0, d, k), lambda x, a, k: np_norm(x, 0, a, k), False),
    "prod": (lambda t, d, k: t.prod(d, k) if not isinstance(d, (tuple, list)) else None,
             lambda x, a, k: np.prod(x, axis=a, keepdims=k), False),
    "any": (lambda t, d, k: (t > 0.8).any(d, k), lambda x, a, k: np.any(x > 0.8, axis=a, keepdims=k), False),
    "all": (lambda t, d, k: (t > -1.5).all(d, k), lambda x, a, k: np.all(x > -1.5, axis=a, keepdims=k), False),
    "count_nonzero": (lambda t, d, k: tl.count_nonzero(t > 0, d) if not k else None,
                      lambda x, a, k: np.sum(x > 0, axis=a), False),
}


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_reductions_every_dim_and_layout(op):
    tl_fn, np_fn, nan = REDUCTIONS[op]
    x = rand3(nan=nan)
    ref_tol = 3e-6 if op != "norm3" else 1e-5
    for label, t in make_noncontig(x, tl.float32):
        for dim, keepdim in itertools.product(DIMS_3D, (False, True)):
            res = tl_fn(t, dim, keepdim)
            if res is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ref = np_fn(x, np_axis(dim, 3), keepdim)
            assert_values(res, ref, rtol=ref_tol, atol=1e-6,
                          msg=f"{op} {label} dim={dim} keepdim={keepdim}")


@pytest.mark.parametrize("shape", [(), (1,), (0,), (7,), (1, 1, 7), (5, 1), (0, 3), (3, 0),
                                   (2, 0, 3), (1, 0), (2, 1, 3)])
def test_reductions_special_shapes(shape):
    x = np.asarray(np.random.randn(*shape)).astype(np.float32).astype(np.float64)
    t = tl.tensor(x.astype(np.float32))
    nd = len(shape)
    dims = [None] + list(range(-max(nd, 1), max(nd, 1))) + ([tuple(range(nd))] if nd else [])
    for dim, keepdim in itertools.product(dims, (False, True)):
        axis = np_axis(dim, nd)
        red = x.size if axis is None else int(np.prod([shape[a] for a in axis]))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases = [(t.sum(dim, keepdim), np.sum(x, axis=axis, keepdims=keepdim)),
                     (t.mean(dim, keepdim), np.mean(x, axis=axis, keepdims=keepdim)),
                     (t.any(dim, keepdim), np.any(x, axis=axis, keepdims=keepdim)),
                     (t.all(dim, keepdim), np.all(x, axis=axis, keepdims=keepdim)),
                     (t.norm(2, dim, keepdim), np_norm(x, 2, axis, keepdim)),
                     (tl.logsumexp(t, () if dim is None else dim, keepdim),
                      np_logsumexp(x, axis, keepdim)),
                     (t.var(dim, keepdim=keepdim), np.var(x, axis=axis, ddof=1, keepdims=keepdim))]
            if not isinstance(dim, tuple):
                cases.append((t.prod(dim, keepdim), np.prod(x, axis=axis, keepdims=keepdim)))
            if red > 0:
                cases.append((t.amax(() if dim is None else dim, keepdim),
                              np.max(x, axis=axis, keepdims=keepdim)))
                cases.append((t.amin(() if dim is None else dim, keepdim),
                              np.min(x, axis=axis, keepdims=keepdim)))
        for res, ref in cases:
            assert_values(res, ref, rtol=3e-6, atol=1e-6, msg=f"shape {shape} dim {dim}")
        if red == 0:
            with pytest.raises((IndexError, RuntimeError), match="amax"):
                t.amax(() if dim is None else dim, keepdim)
            if not isinstance(dim, tuple):
                with pytest.raises((IndexError, RuntimeError), match="Expected reduction dim"):
                    t.argmax(dim, keepdim)


def test_empty_identities():
    e = tl.zeros(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert math.isnan(e.mean().item())
    assert_values(e.sum(0), np.zeros(3))
    assert_values(e.prod(0), np.ones(3))
    assert_values(tl.logsumexp(e, 0), np.full(3, -np.inf))
    assert_values(e.any(0), np.zeros(3, bool))
    assert_values(e.all(0), np.ones(3, bool))
    assert_values(tl.count_nonzero(e, 0), np.zeros(3, np.int64))
    assert e.amax(1).shape == (0,) and e.max(1).indices.shape == (0,)


# ---------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_dtypes(dtype):
    if dtype is tl.bool:
        x = np.random.rand(4, 6) > 0.5
    elif dtype.is_floating_point:
        x = rounded_to(np.random.randn(4, 6) * 3, dtype)
    else:
        lo = 0 if dtype is tl.uint8 else -5
        x = np.random.randint(lo, 6, size=(4, 6)).astype(NP_DTYPE[dtype.name])
    t = tl.tensor(np.asarray(x, dtype=NP_DTYPE[dtype.name])).to(dtype)
    xf = np.asarray(x, dtype=np.float64)
    fl = dtype.is_floating_point
    acc = dtype if fl else tl.int64
    rtol = {"float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype.name, 2e-6)
    for dim in (None, 0, 1, (0, 1)):
        axis = np_axis(dim, 2)
        r = t.sum(dim)
        assert r.dtype is acc
        assert_values(r, rounded_to(xf.sum(axis), dtype) if fl else x.astype(np.int64).sum(axis),
                      rtol=rtol)
        r = tl.nansum(t, dim)
        assert r.dtype is acc
        r = t.amax(() if dim is None else dim)
        assert r.dtype is dtype
        assert_values(r, np.max(x, axis=axis))
        assert_values(t.amin(() if dim is None else dim), np.min(x, axis=axis))
        r = t.any(dim)
        assert r.dtype is (tl.uint8 if dtype is tl.uint8 else tl.bool)
        assert_values(r, np.any(x, axis=axis))
        assert_values(t.all(dim), np.all(x, axis=axis))
        r = tl.count_nonzero(t, dim)
        assert r.dtype is tl.int64
        assert_values(r, np.count_nonzero(x, axis=axis))
    for dim in (None, 1):
        r = t.prod(dim)
        assert r.dtype is acc
        if fl:
            assert_values(r, rounded_to(np.prod(xf, axis=dim), dtype), rtol=rtol * 4)
        else:
            assert_values(r, np.prod(x.astype(np.int64), axis=dim))
    r = t.cumsum(1)
    assert r.dtype is acc
    if not fl:
        assert_values(r, np.cumsum(x.astype(np.int64), axis=1))
        assert_values(t.cumprod(0), np.cumprod(x.astype(np.int64), axis=0))
    v = t.max(1)
    assert v.values.dtype is dtype and v.indices.dtype is tl.int64
    assert_values(v.values, np.max(x, axis=1))
    if dtype is not tl.bool:
        assert_values(t.argmax(1), np.argmax(x, axis=1))
        assert_values(t.argmin(0), np.argmin(x, axis=0))
        cm = t.cummax(1)
        assert cm.values.dtype is dtype
        assert_values(cm.values, np.maximum.accumulate(x, axis=1))
    if fl:
        for fn, ref in ((lambda u: u.mean(1), xf.mean(1)), (lambda u: u.var(0), xf.var(0, ddof=1)),
                        (lambda u: u.softmax(1), np_softmax(xf, 1)),
                        (lambda u: tl.logsumexp(u, 1), np_logsumexp(xf, 1, False)),
                        (lambda u: u.norm(), np.sqrt((xf ** 2).sum()))):
            r = fn(t)
            assert r.dtype is dtype
            assert_values(r, rounded_to(ref, dtype), rtol=rtol * 4, atol=rtol)
    else:
        with pytest.raises(RuntimeError, match="could not infer output dtype"):
            t.mean()
        assert t.mean(dtype=tl.float64).item() == pytest.approx(xf.mean())
        with pytest.raises(RuntimeError, match="only support floating point"):
            t.var()


def test_half_sums_accumulate_in_float32():
    # 4096 ones in float16: a float16 accumulator would stop at 2048
    assert tl.ones(4096, dtype=tl.float16).sum().item() == 4096.0
    assert tl.ones(4096, dtype=tl.bfloat16).sum().item() == 4096.0
    assert tl.ones(70000, dtype=tl.float16).sum().item() == math.inf   # over float16's range
    assert tl.ones(256, 300, dtype=tl.bfloat16).mean(0).float().numpy().tolist() == [1.0] * 300


def test_dtype_argument():
    x = np.arange(12).reshape(3, 4)
    t = tl.tensor(x)
    r = t.sum(0, dtype=tl.float32)
    assert r.dtype is tl.float32
    assert_values(r, x.sum(0))
    f = tl.tensor([[1.7, -2.9], [0.5, 3.2]])
    r = f.sum(dtype=tl.int32)                 # the input is cast first, as PyTorch does
    assert r.dtype is tl.int32 and r.item() == 1 - 2 + 0 + 3
    assert f.sum(dtype=tl.float64).dtype is tl.float64
    assert t.prod(1, dtype=tl.int32).dtype is tl.int32
    assert t.cumsum(1, dtype=tl.float64).dtype is tl.float64
    assert tl.softmax(t, 1, dtype=tl.float64).dtype is tl.float64
    assert t.mean(dtype=tl.float32).item() == pytest.approx(5.5)


# ---------------------------------------------------------------------------------------
# Numerics: exact sums, NaN, pieces and their folding
# ---------------------------------------------------------------------------------------
def test_float32_sum_of_2_25_ones_is_exact():
    ones = tl.ones(2 ** 25)
    assert ones.sum().item() == 33554432.0
    assert ones.mean().item() == 1.0
    assert ones.view(2 ** 24, 2).sum(0).tolist() == [16777216.0, 16777216.0]   # column path
    assert ones.view(2, 2 ** 24).sum(1).tolist() == [16777216.0, 16777216.0]   # row pieces
    assert ones.view(2 ** 24, 2).t().sum(1).tolist() == [16777216.0, 16777216.0]


def test_nan_propagation():
    x = np.random.randn(5, 70).astype(np.float32)
    x[2, 33] = np.nan
    x[4, 0] = np.nan
    t = tl.tensor(x)
    for fn in (lambda u, d: u.sum(d), lambda u, d: u.amax(d), lambda u, d: u.amin(d),
               lambda u, d: u.mean(d), lambda u, d: u.max(d).values, lambda u, d: u.min(d).values,
               lambda u, d: u.norm(2, d), lambda u, d: u.var(d), lambda u, d: tl.logsumexp(u, d),
               lambda u, d: u.prod(d)):
        for d in (0, 1):
            r = to_numpy(fn(t, d))
            assert np.array_equal(np.isnan(r), np.isnan(x).any(axis=d)), d
    assert math.isnan(t.sum().item()) and math.isnan(t.max().item()) and math.isnan(t.amin().item())
    assert t.argmax().item() == 2 * 70 + 33 and t.argmin().item() == 2 * 70 + 33
    assert_values(t.argmax(1), [np.argmax(r) for r in x])       # NumPy: the first NaN
    assert_values(t.max(0).indices, np.argmax(x, axis=0))
    assert not math.isnan(tl.nansum(t).item())
    assert math.isnan(tl.tensor([math.nan, math.nan]).nanmean().item())


@pytest.mark.parametrize("shape,dim", [((3, 70001), 1), ((70001,), 0), ((1500, 1100), 0),
                                       ((3, 1100, 1030), 1), ((2, 700, 3), 1), ((1030, 3), 0),
                                       ((3, 4, 40000), (0, 2)), ((8, 16, 300), (0, 2)),
                                       ((5, 3, 7, 11), (0, 2, 3))])
def test_large_pieces(shape, dim, threads):
    """Shapes that split the reduced extent into several pieces and columns into blocks, and
    reductions over an outer and an inner dim around a kept one (NCHW over (0, 2, 3))."""
    x = np.random.rand(*shape).astype(np.float32)
    t = tl.tensor(x)
    xd = x.astype(np.float64)
    assert_values(t.sum(dim), xd.sum(dim), rtol=1e-6)
    assert_values(t.mean(dim), xd.mean(dim), rtol=1e-6)
    assert_values(t.var(dim), xd.var(dim, ddof=1), rtol=1e-5)
    assert_values(t.amax(dim), x.max(dim))
    assert_values(tl.logsumexp(t, dim), np_logsumexp(xd, dim, False), rtol=1e-6)
    if isinstance(dim, tuple):
        return
    # ties across pieces: the maximum appears several times; the first index wins
    y = np.round(x * 4).astype(np.float32)
    u = tl.tensor(y)
    assert_values(u.argmax(dim), y.argmax(dim))
    assert_values(u.argmin(dim), y.argmin(dim))
    assert_values(u.max(dim).indices, y.argmax(dim))


def test_results_identical_for_1_and_2_threads():
    x = np.random.randn(700, 900).astype(np.float32)
    t = tl.tensor(x)
    big = tl.tensor(np.random.randn(3_000_000).astype(np.float32))
    ops = [lambda: big.sum(), lambda: big.mean(), lambda: big.norm(), lambda: big.var(),
           lambda: t.sum(0), lambda: t.sum(1), lambda: t.t().sum(0), lambda: t.var(0),
           lambda: tl.logsumexp(t, 1), lambda: tl.logsumexp(t, 0), lambda: t.softmax(1),
           lambda: t.softmax(0), lambda: t.log_softmax(1), lambda: t.argmax(0), lambda: t.argmax(1),
           lambda: big.argmax(), lambda: t.cumsum(0), lambda: t.cumsum(1), lambda: t[:, ::3].sum(0),
           lambda: t.norm(3, 1), lambda: t.median(1).values, lambda: t.prod(0)]
    with num_threads(1):
        one = [to_numpy(f()) for f in ops]
    with num_threads(2):
        two = [to_numpy(f()) for f in ops]
    for k, (a, b) in enumerate(zip(one, two)):
        assert a.tobytes() == b.tobytes(), k


@pytest.mark.parametrize("level", available_isa_levels())
def test_every_isa_level(level):
    with isa_level(level) as got:
        assert got == level
        for shape in ((37, 1031), (1031, 37), (5, 70003)):
            x = np.random.randn(*shape).astype(np.float32)
            x64 = x.astype(np.float64)
            for dt in (tl.float32, tl.float64):
                t = tl.tensor(x).to(dt)
                for dim in (0, 1, None):
                    # float32 summation error is relative to sum |x| (eps = 6e-8)
                    assert_values(t.sum(dim), x64.sum(dim), atol=1e-7 * np.abs(x64).sum(dim).max())
                    assert_values(t.amax(() if dim is None else dim), x.max(dim))
                    assert_values(t.argmax(dim), x.argmax(dim))
                    assert_values(t.argmin(dim), x.argmin(dim))
                    assert_values(t.var(dim), x64.var(dim, ddof=1), rtol=1e-5)
                    assert_values(t.norm(2, dim), np.sqrt((x64 ** 2).sum(dim)), rtol=1e-6)
                    assert_values(t.norm(math.inf, dim), np.abs(x).max(dim))
                    assert_values(tl.count_nonzero(t > 0.5, dim), (x > 0.5).sum(dim))
                    assert_values((t > 3.5).any(dim), (x > 3.5).any(dim))
                for dim in (0, 1):
                    assert_values(tl.logsumexp(t, dim), np_logsumexp(x64, dim, False), rtol=1e-6,
                                  atol=1e-6)
                    assert_values(t.softmax(dim), np_softmax(x64, dim), rtol=1e-5, atol=1e-9)
                    assert_values(t.log_softmax(dim), np_softmax(x64, dim, True), rtol=1e-5,
                                  atol=1e-6)


@pytest.mark.parametrize("level", available_isa_levels())
def test_one_set_isa_level_sets_every_kernel_module(level):
    from torchlite._core import elementwise, matmul, random, reduction
    with isa_level(level) as got:
        assert got == level == _core.isa_level()
        assert [m.isa_level() for m in (elementwise, reduction, matmul, random)] == [level] * 4


def test_torchlite_isa_environment_sets_every_kernel_module():
    import subprocess
    import sys
    code = ("import torchlite._core as c; from torchlite._core import elementwise, reduction, "
            "matmul, random; print([m.isa_level() for m in (elementwise, reduction, matmul, random)],"
            " c.isa_level())")
    env = dict(os.environ, TORCHLITE_ISA="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert "".join(out) == "[0,0,0,0]0"


@pytest.mark.parametrize("level", available_isa_levels())
def test_inf_and_nan_rows_every_isa_level(level):
    """Rows holding inf or NaN take the exact path of the max/min kernels."""
    x = np.random.randn(6, 300).astype(np.float32)
    x[0, 50] = np.inf
    x[1, 3] = -np.inf
    x[2, 150] = np.nan
    x[3, 7], x[3, 100] = np.inf, np.nan
    x[4, 299] = np.nan                       # in the scalar tail
    x[5, :] = -np.inf
    with isa_level(level), np.errstate(invalid="ignore"):
        for t, y in ((tl.tensor(x), x), (tl.tensor(x.T.copy()).t(), x)):
            assert_values(t.amax(1), y.max(1))
            assert_values(t.amin(1), y.min(1))
            assert_values(t.argmax(1), y.argmax(1))
            assert_values(t.argmin(1), y.argmin(1))
            assert_values(t.max(1).values, y.max(1))
            assert_values(t.norm(math.inf, 1), np.abs(y).max(1))
            assert_values(t.norm(-math.inf, 1), np.abs(y).min(1))
            sm = to_numpy(t.softmax(1))
            assert np.isnan(sm[[0, 2, 3, 4, 5]]).all()    # inf - inf, NaN, all -inf: as PyTorch
            assert_values(t[1:2].softmax(1), np_softmax(y[1:2].astype(np.float64), 1), rtol=1e-5,
                          atol=1e-9)


def test_expanded_input():
    row = np.random.randn(1, 7).astype(np.float32)
    t = tl.tensor(row).expand(5, 7)
    y = np.broadcast_to(row, (5, 7)).astype(np.float64)
    for dim in (None, 0, 1):
        assert_values(t.sum(dim), y.sum(dim), rtol=1e-6)
        assert_values(t.amax(() if dim is None else dim), y.max(dim))
    assert_values(t.argmax(0), np.zeros(7, np.int64))
    assert_values(t.softmax(0), np.full((5, 7), 0.2), rtol=1e-6)
    assert_values(t.cumsum(0), np.cumsum(y, 0), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# max/min/argmax with indices
# ---------------------------------------------------------------------------------------
def test_max_min_with_indices_and_ties():
    x = np.random.randint(0, 3, size=(4, 5, 6)).astype(np.float32)     # many ties
    for label, t in make_noncontig(x):
        for dim in (0, 1, 2, -1, -2):
            for keepdim in (False, True):
                r = t.max(dim, keepdim)
                assert isinstance(r, tuple) and r._fields == ("values", "indices")
                assert_values(r.values, np.max(x, axis=dim, keepdims=keepdim), msg=label)
                assert_values(r.indices, np.expand_dims(np.argmax(x, axis=dim), dim) if keepdim
                              else np.argmax(x, axis=dim), msg=label)
                r = tl.min(t, dim, keepdim=keepdim)
                assert_values(r.indices, np.expand_dims(np.argmin(x, axis=dim), dim) if keepdim
                              else np.argmin(x, axis=dim), msg=label)
                assert_values(t.argmax(dim, keepdim), np.expand_dims(np.argmax(x, axis=dim), dim)
                              if keepdim else np.argmax(x, axis=dim), msg=label)
        # dim=None: the index into the C-order flattening, whatever the layout
        assert t.argmax().item() == np.argmax(x) and t.argmin().item() == np.argmin(x), label
        assert t.argmax(None, True).shape == (1, 1, 1)
        assert t.max().item() == x.max() and t.min().item() == x.min()


def test_max_binary_form_and_aminmax():
    a = np.random.randn(3, 4).astype(np.float32)
    b = np.random.randn(4).astype(np.float32)
    assert_values(tl.max(tl.tensor(a), tl.tensor(b)), np.maximum(a, b))
    assert_values(tl.min(tl.tensor(a), tl.tensor(b)), np.minimum(a, b))
    r = tl.aminmax(tl.tensor(a))
    assert r._fields == ("min", "max") and r.min.item() == a.min() and r.max.item() == a.max()
    r = tl.tensor(a).aminmax(dim=1, keepdim=True)
    assert_values(r.min, a.min(1, keepdims=True))
    assert_values(r.max, a.max(1, keepdims=True))


# ---------------------------------------------------------------------------------------
# var/std overloads and correction
# ---------------------------------------------------------------------------------------
def test_var_std_overloads():
    x = rand3()
    t = tl.tensor(x.astype(np.float32))
    assert_values(t.var(0, False), x.var(0), rtol=3e-6)
    assert_values(t.var(unbiased=False), x.var(), rtol=3e-6)
    assert_values(t.var(False), x.var(), rtol=3e-6)
    assert_values(t.var(1, True, True), x.var(1, ddof=1, keepdims=True), rtol=3e-6)
    assert_values(t.std((0, 2), correction=2.5), np.sqrt(((x - x.mean((0, 2), keepdims=True)) ** 2)
                                                        .sum((0, 2)) / (15 - 2.5)), rtol=3e-6)
    v, m = tl.var_mean(t, 2, correction=0)
    assert_values(v, x.var(2), rtol=3e-6)
    assert_values(m, x.mean(2), rtol=3e-6)
    s, m = tl.std_mean(t, [0, 1], keepdim=True)
    assert_values(s, x.std((0, 1), ddof=1, keepdims=True), rtol=3e-6)
    assert_values(m, x.mean((0, 1), keepdims=True), rtol=3e-6)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        r = tl.tensor([1.0, 2.0]).var(correction=2)
    assert r.item() == math.inf
    with pytest.warns(UserWarning):
        assert math.isnan(tl.ones(1).std().item())
    with pytest.raises(TypeError):
        t.std(1, unbiased=False, correction=1)
    big = np.random.randn(300000).astype(np.float32) + 1000.0       # a large common offset
    assert_values(tl.tensor(big).var(), big.astype(np.float64).var(ddof=1), rtol=1e-4)


# ---------------------------------------------------------------------------------------
# softmax / log_softmax
# ---------------------------------------------------------------------------------------
def test_softmax_dims_layouts():
    x = rand3((4, 5, 70)) * 5
    for label, t in make_noncontig(x, tl.float32):
        for dim in (0, 1, 2, -1):
            r = tl.softmax(t, dim)
            assert r.dtype is tl.float32 and r.is_contiguous()
            assert_values(r, np_softmax(x, dim), rtol=2e-6, atol=1e-9, msg=label)
            assert_values(t.log_softmax(dim), np_softmax(x, dim, True), rtol=2e-6, atol=2e-6,
                          msg=label)
    y = np.random.randn(3, 4)
    assert_values(tl.tensor(y).softmax(0), np_softmax(y, 0), rtol=1e-12)
    assert tl.softmax(tl.tensor(2.0), 0).item() == 1.0
    assert tl.softmax(tl.zeros(0, 3), 1).shape == (0, 3)
    r = tl.tensor([[-math.inf, -math.inf], [math.inf, 1.0], [-math.inf, 0.0]])
    assert_values(r.softmax(1), [[np.nan, np.nan], [np.nan, np.nan], [0.0, 1.0]])
    assert_values(r.log_softmax(1)[2], [-np.inf, 0.0])
    h = tl.tensor(y).half()
    assert h.softmax(1).dtype is tl.float16
    assert_values(h.softmax(1), rounded_to(np_softmax(rounded_to(y, tl.float16), 1), tl.float16),
                  rtol=2e-3)
    big = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)      # stable: no overflow
    assert_values(tl.tensor(big).softmax(1), [[1.0, 0.0, 0.0]])


# ---------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------
def np_cum_arg(x, axis, is_min):
    """cummax/cummin values and indices with PyTorch's rules (later index on ties, NaN sticks)."""
    x = np.moveaxis(x, axis, -1)
    vals = np.empty_like(x)
    idx = np.empty(x.shape, np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        best, bi = None, 0
        for i, v in enumerate(x[pos]):
            take = (best is None or v != v or
                    (best == best and (v <= best if is_min else v >= best)))
            if take:
                best, bi = v, i
            vals[pos + (i,)] = best
            idx[pos + (i,)] = bi
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def test_scans_dims_layouts():
    x = rand3((3, 4, 300))
    for label, t in make_noncontig(x, tl.float32):
        for dim in (0, 1, 2, -1):
            assert_values(t.cumsum(dim), np.cumsum(x, axis=dim), rtol=1e-6, atol=1e-5, msg=label)
            assert_values(tl.cumprod(t * 0.2 + 1, dim), np.cumprod(x.astype(np.float32) * np.float32(0.2)
                                                                   + 1, axis=dim), rtol=2e-5)
            assert_values(t.logcumsumexp(dim), np.logaddexp.accumulate(x, axis=dim), rtol=2e-6,
                          atol=2e-6)
    y = np.random.randint(0, 3, size=(4, 9)).astype(np.float32)
    y[1, 3] = np.nan
    for dim in (0, 1):
        for is_min, fn in ((False, tl.cummax), (True, tl.cummin)):
            r = fn(tl.tensor(y), dim)
            v, i = np_cum_arg(y, dim, is_min)
            assert_values(r.values, v)
            assert_values(r.indices, i)
    assert tl.tensor(3.0).cumsum(0).item() == 3.0
    assert tl.zeros(0, 2).cumsum(0).shape == (0, 2)
    t = tl.tensor([1.0, 2.0, 3.0])
    assert t.cumsum_(0) is t and t.tolist() == [1.0, 3.0, 6.0]


# ---------------------------------------------------------------------------------------
# median
# ---------------------------------------------------------------------------------------
def test_median():
    x = np.random.randint(0, 7, size=(5, 6, 7)).astype(np.float32)
    for label, t in make_noncontig(x):
        for dim in (0, 1, 2, -1):
            r = t.median(dim)
            srt = np.sort(x, axis=dim)
            ref = np.take(srt, (x.shape[dim] - 1) // 2, axis=dim)
            assert_values(r.values, ref, msg=label)
            picked = np.take_along_axis(x, np.expand_dims(to_numpy(r.indices), dim), dim)
            assert_values(r.values, np.squeeze(picked, dim), msg=label)
            assert t.median(dim, keepdim=True).values.shape[dim] == 1
        assert t.median().item() == np.sort(x, axis=None)[(x.size - 1) // 2]
    n = tl.tensor([[1.0, math.nan, 2.0, 3.0], [4.0, 1.0, 2.0, 3.0]])
    r = n.median(1)
    assert math.isnan(r.values[0].item()) and r.indices[0].item() == 1 and r.values[1].item() == 2
    r = n.nanmedian(1)
    assert r.values.tolist() == [2.0, 2.0]
    assert math.isnan(tl.tensor([math.nan] * 3).nanmedian().item())
    assert math.isnan(tl.zeros(0).median().item())
    i = tl.tensor(np.array([[3, 1, 2, 9]]))
    assert i.median(1).values.dtype is tl.int64 and i.median(1).values.item() == 2


# ---------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------
def test_vector_norm():
    x = rand3()
    t = tl.tensor(x.astype(np.float32))
    for ord in (2, 1, math.inf, -math.inf, 0, 0.5, 3, -1, -2.5):
        for dim in (None, 1, (0, 2), -1):
            for keepdim in (False, True):
                assert_values(R.vector_norm(t, ord, dim, keepdim),
                              np_norm(x, ord, np_axis(dim, 3), keepdim), rtol=1e-5, atol=1e-7,
                              msg=f"ord={ord} dim={dim}")
    assert R.vector_norm(t, dtype=tl.float64).dtype is tl.float64
    z = tl.tensor([0.0, 3.0, 4.0])
    assert R.vector_norm(z, -1).item() == 0.0
    assert R.vector_norm(z, 0).item() == 2.0
    assert R.vector_norm(tl.zeros(0)).item() == 0.0


# ---------------------------------------------------------------------------------------
# out=
# ---------------------------------------------------------------------------------------
def test_out_arguments():
    x = np.random.randn(3, 4).astype(np.float32)
    t = tl.tensor(x)
    o = tl.empty(0, dtype=tl.float64)
    assert tl.sum(t, 0, out=o) is o and o.shape == (4,)
    assert_values(o, x.astype(np.float64).sum(0), rtol=1e-6)
    v, i = tl.empty(0), tl.empty(0, dtype=tl.int64)
    r = tl.max(t, 1, out=(v, i))
    assert r.values is v and r.indices is i
    assert_values(i, x.argmax(1))
    o = tl.empty(3, dtype=tl.int64)
    assert tl.argmax(t, 1, out=o) is o and o.tolist() == x.argmax(1).tolist()
    o = tl.empty(3)
    assert tl.cumsum(t, 0, out=tl.empty(3, 4)).shape == (3, 4)
    assert tl.logsumexp(t, 1, out=o) is o
    with pytest.raises(RuntimeError, match="dtype"):
        tl.amax(t, 0, out=tl.empty(4, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="only supports bool"):
        tl.any(t, 0, out=tl.empty(4))


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
ERRORS = [
    (lambda t: t.sum((0, 0)), RuntimeError, "appears multiple times"),
    (lambda t: t.sum((0, -2)), RuntimeError, "appears multiple times"),
    (lambda t: t.sum(2), IndexError, "Dimension out of range"),
    (lambda t: t.amax(-3), IndexError, "Dimension out of range"),
    (lambda t: t.sum("a"), TypeError, "dim"),
    (lambda t: t.prod((0, 1)), TypeError, "prod"),
    (lambda t: t.max((0, 1)), TypeError, "max"),
    (lambda t: t.argmax((0, 1)), TypeError, "argmax"),
    (lambda t: t.max(keepdim=True), TypeError, "max"),
    (lambda t: t.long().mean(), RuntimeError, "mean(): could not infer output dtype. Input dtype "
                                              "must be either a floating point or complex dtype. Got: Long"),
    (lambda t: t.mean(dtype=tl.int64), RuntimeError, "Optional dtype"),
    (lambda t: t.long().nanmean(), RuntimeError, "nanmean"),
    (lambda t: t.long().var(), RuntimeError, "std and var only support floating point"),
    (lambda t: t.int().std(), RuntimeError, "std and var only support floating point"),
    (lambda t: (t > 0).argmax(), RuntimeError, "does not support bool"),
    (lambda t: tl.zeros(0, 3).max(), RuntimeError, "Specify the reduction dim"),
    (lambda t: tl.zeros(0, 3).max(0), IndexError, "Expected reduction dim 0 to have non-zero size"),
    (lambda t: tl.zeros(0, 3).argmax(0), IndexError, "Expected reduction dim 0"),
    (lambda t: tl.zeros(0, 3).argmax(), IndexError, "input.numel() == 0"),
    (lambda t: tl.zeros(0, 3).amin(), RuntimeError, "Specify the reduction dim"),
    (lambda t: tl.zeros(0, 0).amax(0), IndexError, "non-zero size"),
    (lambda t: tl.zeros(0, 3).median(0), IndexError, "median(): Expected reduction dim 0"),
    (lambda t: tl.zeros(0, 3).aminmax(), RuntimeError, "no identity"),
    (lambda t: tl.zeros(0, 3).aminmax(dim=0), IndexError, "non-zero size"),
    (lambda t: tl.logsumexp(t, None), TypeError, "dim"),
    (lambda t: tl.softmax(t.long(), 0), NotImplementedError, "not implemented for 'Long'"),
    (lambda t: tl.log_softmax(t.long(), -1), NotImplementedError, "log_softmax_lastdim"),
    (lambda t: tl.softmax(t, 2), IndexError, "Dimension out of range"),
    (lambda t: t.softmax(None), TypeError, "dim"),
    (lambda t: t.cumsum(None), TypeError, "dim"),
    (lambda t: t.cumsum(3), IndexError, "Dimension out of range"),
    (lambda t: t.long().logcumsumexp(0), RuntimeError, "not implemented for 'Long'"),
    (lambda t: (t > 0).median(), RuntimeError, "not implemented for 'Bool'"),
    (lambda t: t.norm(p="abc"), RuntimeError, "Order abc not supported"),
    (lambda t: t.long().norm(), RuntimeError, "Expected a floating point"),
    (lambda t: R.vector_norm(t, "fro"), TypeError, "must be Number"),
    (lambda t: R.vector_norm(t, dtype=tl.float16), RuntimeError, "without narrowing"),
    (lambda t: R.vector_norm(tl.zeros(0), math.inf), RuntimeError, "on an empty tensor"),
    (lambda t: R.vector_norm(tl.zeros(0, 3), -math.inf, dim=0), RuntimeError, "dimension 0"),
    (lambda t: tl.linalg.matrix_norm(t[0]), RuntimeError, "at least 2 dimensions"),
    (lambda t: tl.linalg.matrix_norm(t, 3), RuntimeError, "Order 3 not supported"),
    (lambda t: tl.linalg.matrix_norm(t, 1, dim=(0, 0)), RuntimeError, "dims must be different"),
    (lambda t: tl.linalg.matrix_norm(t, dim=(0, 1, 2)), RuntimeError, "2-tuple"),
    (lambda t: tl.linalg.matrix_norm(t.long()), RuntimeError, "Expected a floating point"),
    (lambda t: tl.linalg.norm(tl.zeros(2, 2, 2), 2), RuntimeError, "must be 1D or 2D"),
    (lambda t: tl.linalg.norm(t, dim=(0, 1, 2)), RuntimeError, "length 1 or 2"),
    (lambda t: t.norm("fro", dim=(0, 1, 2)), RuntimeError, "2-tuple"),
    (lambda t: tl.sum([1, 2]), TypeError, "must be Tensor"),
    (lambda t: t.count_nonzero((1, -1)), RuntimeError, "appears multiple times"),
    (lambda t: tl.tensor(1.0).sum(1), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, frag = ERRORS[case]
    t = tl.tensor(np.random.randn(2, 3).astype(np.float32))
    with pytest.raises(exc) as info:
        fn(t)
    assert frag in str(info.value), str(info.value)


# ---------------------------------------------------------------------------------------
# PyTorch as the oracle for dtypes, ties and corrections
# ---------------------------------------------------------------------------------------
TORCH_OPS = [
    ("sum", lambda m, t: t.sum()), ("sum0", lambda m, t: t.sum(0)), ("nansum", lambda m, t: m.nansum(t)),
    ("prod", lambda m, t: t.prod(1)), ("amax", lambda m, t: t.amax(0)), ("max", lambda m, t: t.max()),
    ("maxdim", lambda m, t: t.max(1)[0]), ("any", lambda m, t: t.any(1)), ("all", lambda m, t: t.all()),
    ("cnz", lambda m, t: m.count_nonzero(t, 0)), ("cumsum", lambda m, t: t.cumsum(1)),
    ("cumprod", lambda m, t: t.cumprod(0)), ("cummax", lambda m, t: t.cummax(1)[0]),
    ("mean", lambda m, t: t.mean(0)), ("var", lambda m, t: t.var(1)), ("lse", lambda m, t: m.logsumexp(t, 1)),
    ("softmax", lambda m, t: m.softmax(t, 1)), ("norm", lambda m, t: t.norm()),
    ("median", lambda m, t: t.median(1)[0]), ("argmax", lambda m, t: t.argmax(1)),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_result_dtypes_match_torch(dtype):
    torch = torch_or_skip()
    x = np.random.randint(0, 4, size=(3, 5)).astype(np.float32)
    t = tl.tensor(x).to(dtype)
    tt = torch.tensor(x).to(getattr(torch, dtype.name))
    for name, fn in TORCH_OPS:
        try:
            expected = fn(torch, tt)
        except Exception as e:       # PyTorch refuses this dtype: so must we
            with pytest.raises(type(e) if isinstance(e, (TypeError, IndexError)) else RuntimeError):
                fn(tl, t)
            continue
        got = fn(tl, t)
        assert got.dtype.name == str(expected.dtype).split(".")[-1], (name, dtype)
        exp = expected.float().numpy() if expected.dtype == torch.bfloat16 else expected.numpy()
        assert_values(got, exp, rtol=2e-2 if dtype in (tl.float16, tl.bfloat16) else 1e-6,
                      atol=1e-2 if dtype in (tl.float16, tl.bfloat16) else 1e-6, msg=name)


def test_ties_nan_and_corrections_match_torch():
    torch = torch_or_skip()
    x = np.array([[1.0, 3.0, 3.0, np.nan, np.nan, 0.0], [2.0, 2.0, 1.0, 1.0, 2.0, 1.0]], np.float32)
    t, tt = tl.tensor(x), torch.tensor(x)
    for fn in (lambda m, u: u.argmax(1), lambda m, u: u.argmin(1), lambda m, u: u.argmax(),
               lambda m, u: u.max(1)[1], lambda m, u: u.min(1)[1], lambda m, u: u.cummax(1)[1],
               lambda m, u: u.cummin(1)[1], lambda m, u: u.argmax(0), lambda m, u: u.median(1)[0],
               lambda m, u: u.nanmedian(1)[0]):
        # (median's index on ties is PyTorch's implementation detail: test_median checks ours)
        np.testing.assert_array_equal(to_numpy(fn(tl, t)), fn(torch, tt).numpy())
    y = np.random.randn(4, 7).astype(np.float32)
    for kw in ({}, {"correction": 0}, {"correction": 3}, {"unbiased": False}):
        for dim in (None, 0, 1):
            np.testing.assert_allclose(to_numpy(tl.tensor(y).var(dim, **kw)),
                                       torch.tensor(y).var(dim, **kw).numpy(), rtol=1e-5)
            np.testing.assert_allclose(to_numpy(tl.tensor(y).std(dim, **kw)),
                                       torch.tensor(y).std(dim, **kw).numpy(), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# hypothesis: shapes, strides, dims
# ---------------------------------------------------------------------------------------
@st.composite
def reduction_cases(draw):
    nd = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 5), min_size=nd, max_size=nd))
    perm = draw(st.permutations(range(nd)))
    steps = draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd))
    dims = draw(st.sets(st.integers(0, max(nd - 1, 0)), max_size=nd)) if nd else set()
    neg = draw(st.booleans())
    keepdim = draw(st.booleans())
    return shape, perm, steps, sorted(dims), neg, keepdim


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reduction_cases())
def test_hypothesis_layouts(case):
    shape, perm, steps, dims, neg, keepdim = case
    nd = len(shape)
    # a buffer with the steps, permuted: its view has the logical `shape`
    big = [s * st_ for s, st_ in zip(shape, steps)]
    buf = np.asarray(np.random.randn(*[big[p] for p in perm])).astype(np.float32)
    inv = np.argsort(perm)
    view = tl.tensor(buf).permute(*inv.tolist()) if nd else tl.tensor(buf)
    ref = np.transpose(buf, inv) if nd else buf
    for d in range(nd):
        view = view[(slice(None),) * d + (slice(None, None, steps[d]),)]
        ref = ref[(slice(None),) * d + (slice(None, None, steps[d]),)]
    ref = ref.astype(np.float64)
    dim = tuple(d - nd if neg else d for d in dims) if dims else None
    axis = np_axis(dim, nd)
    assert_values(view.sum(dim, keepdim), np.sum(ref, axis=axis, keepdims=keepdim), rtol=3e-6,
                  atol=1e-5)
    red = ref.size if axis is None else int(np.prod([ref.shape[a] for a in axis]))
    if red:
        assert_values(view.amax(() if dim is None else dim, keepdim),
                      np.max(ref, axis=axis, keepdims=keepdim))
    if len(dims) == 1 and ref.shape[dims[0]] > 0:
        assert_values(view.argmax(dim[0], keepdim),
                      np.argmax(ref, axis=dims[0]) if not keepdim else
                      np.expand_dims(np.argmax(ref, axis=dims[0]), dims[0]))
        assert_values(view.softmax(dim[0]), np_softmax(ref, dims[0]), rtol=1e-5, atol=1e-9)
        assert_values(view.cumsum(dim[0]), np.cumsum(ref, axis=dims[0]), rtol=1e-6, atol=1e-5)


# ---- quantile, bincount, histc/histogram, cov/corrcoef, renorm --------------------------------------

_QRNG = np.random.default_rng(4242)
_QX = _QRNG.standard_normal((4, 7))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_quantile_matches_numpy(interpolation, dim, keepdim, threads):
    q = np.array([0.0, 0.25, 0.5, 0.625, 1.0])
    ref = np.quantile(_QX, q, axis=dim, keepdims=keepdim, method=interpolation)
    for label, t in make_noncontig(_QX):
        got = tl.quantile(t, tl.tensor(q), dim, keepdim, interpolation=interpolation)
        assert_values(got, ref, 1e-12, 1e-12, msg=label)
        one = tl.quantile(t, 0.375, dim, keepdim, interpolation=interpolation)
        assert_values(one, np.quantile(_QX, 0.375, axis=dim, keepdims=keepdim, method=interpolation),
                      1e-12, 1e-12, msg=label)


def test_quantile_nan_rules_and_float32():
    x = _QX.copy()
    x[0, 2] = np.nan
    x[2, :] = np.nan
    t = tl.tensor(x)
    assert_values(tl.quantile(t, 0.3, 1), np.quantile(x, 0.3, axis=1), 1e-12)
    # (np.nanquantile warns on the all-NaN row; its answer there is NaN too)
    ref = np.array([np.nanquantile(r, 0.3) if not np.isnan(r).all() else np.nan for r in x])
    assert_values(tl.nanquantile(t, 0.3, 1), ref, 1e-12)
    assert math.isnan(tl.quantile(t, 0.5).item())
    assert_values(tl.quantile(tl.tensor(_QX, dtype=tl.float32), 0.4, 0),
                  np.quantile(_QX.astype(np.float32), 0.4, axis=0), 1e-6)
    assert tl.quantile(tl.tensor(3.0), 0.5, dim=0).item() == 3.0


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile_gradient_reaches_q(fn):
    """Linear interpolation is differentiable in q: d/dq = (n - 1) * (above - below), checked
    by finite differences; the other interpolations do not depend on q smoothly and leave it
    out of the graph."""
    x = tl.tensor(np.random.default_rng(3).standard_normal((3, 6)))
    q = tl.tensor([0.13, 0.52, 0.91], dtype=tl.float64, requires_grad=True)
    f = getattr(tl, fn)
    assert tl.autograd.gradcheck(lambda qq: f(x, qq, dim=1), (q,))
    assert tl.autograd.gradcheck(lambda qq: f(x, qq), (q,))
    for interpolation in ("lower", "higher", "midpoint", "nearest"):
        q.grad = None
        xg = x.clone().requires_grad_()
        f(xg, q, dim=1, interpolation=interpolation).sum().backward()
        assert q.grad is None and xg.grad is not None


def test_quantile_errors():
    x = tl.tensor(_QX)
    for call, exc, msg in [
            (lambda: tl.quantile(x, 1.5), RuntimeError, r"range \[0, 1\] but got 1.5"),
            (lambda: tl.quantile(x, tl.tensor([0.5, -0.1], dtype=tl.float64)), RuntimeError, "q values must be"),
            (lambda: tl.quantile(tl.tensor([1, 2]), 0.5), RuntimeError, "float or double"),
            (lambda: tl.quantile(x, tl.tensor([0.5], dtype=tl.float32)), RuntimeError, "same dtype"),
            (lambda: tl.quantile(x, 0.5, interpolation="cubic"), RuntimeError, "but got cubic"),
            (lambda: tl.quantile(tl.tensor([]), 0.5), RuntimeError, "non-empty"),
            (lambda: tl.quantile(x, tl.tensor([[0.5]], dtype=tl.float64)), RuntimeError, "1D tensor"),
            (lambda: tl.quantile(x, 0.5, dim=2), IndexError, "out of range")]:
        with pytest.raises(exc, match=msg):
            call()


def test_bincount():
    v = _QRNG.integers(0, 9, 50)
    w = _QRNG.standard_normal(50)
    for label, t in make_noncontig(v):
        assert_values(tl.bincount(t), np.bincount(v), msg=label)
    assert tl.bincount(tl.tensor(v)).dtype is tl.int64
    assert_values(tl.bincount(tl.tensor(v), tl.tensor(w), minlength=12),
                  np.bincount(v, w, minlength=12), 1e-12)
    assert tl.bincount(tl.tensor(v), tl.tensor(w, dtype=tl.float32)).dtype is tl.float32
    assert tl.bincount(tl.tensor(v), tl.tensor(v)).dtype is tl.float64
    assert tl.bincount(tl.tensor(v, dtype=tl.uint8)).tolist() == np.bincount(v).tolist()
    assert tl.bincount(tl.tensor([], dtype=tl.int64), minlength=3).tolist() == [0, 0, 0]
    for call, exc, msg in [
            (lambda: tl.bincount(tl.tensor([-1, 2])), RuntimeError, "non-negative"),
            (lambda: tl.bincount(tl.tensor([[1]])), RuntimeError, "1-d"),
            (lambda: tl.bincount(tl.tensor([1.0])), NotImplementedError, "Float"),
            (lambda: tl.bincount(tl.tensor([1]), minlength=-1), RuntimeError, "minlength"),
            (lambda: tl.bincount(tl.tensor([1, 2]), tl.tensor([1.0])), RuntimeError, "same length")]:
        with pytest.raises(exc, match=msg):
            call()


@pytest.mark.parametrize("dt", [tl.float32, tl.float64])
def test_histc_matches_torch(dt):
    torch = torch_or_skip()
    x = _QRNG.standard_normal(300)
    x[:4] = [-1.0, 1.0, 0.0, 0.5]               # on the bin edges of (-1, 1) in 4 bins
    t, tt = tl.tensor(x).to(dt), torch.tensor(x).to(getattr(torch, dt.name))
    for args in [(7,), (4, -1, 1), (10, 0, 0), (3, 0.25, 0.5)]:
        got = tl.histc(t, *args)
        assert got.dtype is dt
        np.testing.assert_array_equal(got.numpy(), torch.histc(tt, *args).numpy())
    assert tl.histc(tl.tensor([2.0, 2.0]), 4).tolist() == [0.0, 0.0, 2.0, 0.0]
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        tl.histc(t, 3, 2, 1)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tl.histc(t, 0)
    with pytest.raises(RuntimeError, match="not finite"):
        tl.histc(tl.tensor([1.0, math.inf]))
    with pytest.raises(NotImplementedError, match="Long"):
        tl.histc(tl.tensor([1, 2]))


def test_histogram_matches_numpy():
    x = _QRNG.standard_normal(200)
    w = _QRNG.uniform(0, 2, 200)
    for bins, kw in [(5, {}), (6, dict(range=(-1.0, 2.0))), (4, dict(density=True)),
                     (3, dict(weight=w))]:
        np_kw = {k if k != "weight" else "weights": v for k, v in kw.items()}
        hist, edges = tl.histogram(tl.tensor(x), bins,
                                   **{k: tl.tensor(v) if k == "weight" else v for k, v in kw.items()})
        ref_h, ref_e = np.histogram(x, bins, **np_kw)
        np.testing.assert_allclose(hist.numpy(), ref_h, rtol=1e-12)
        np.testing.assert_allclose(edges.numpy(), ref_e, rtol=1e-12, atol=1e-15)
    edges = np.array([-2.0, -0.5, 0.0, 3.0])
    r = tl.histogram(tl.tensor(x), tl.tensor(edges))
    np.testing.assert_array_equal(r.hist.numpy(), np.histogram(x, edges)[0])
    assert r.bin_edges.tolist() == edges.tolist()
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        tl.histogram(tl.tensor(x), 3, range=(2.0, 1.0))


@pytest.mark.parametrize("kw", [{}, dict(correction=0), dict(fweights=True), dict(aweights=True),
                                dict(fweights=True, aweights=True, correction=3)])
def test_cov_matches_numpy(kw):
    x = _QRNG.standard_normal((3, 8))
    fw, aw = _QRNG.integers(0, 4, 8), _QRNG.uniform(0.1, 1.0, 8)
    args = {"ddof": kw.get("correction", 1), "fweights": fw if "fweights" in kw else None,
            "aweights": aw if "aweights" in kw else None}
    ours = {"correction": kw.get("correction", 1),
            "fweights": tl.tensor(fw) if "fweights" in kw else None,
            "aweights": tl.tensor(aw) if "aweights" in kw else None}
    for label, t in make_noncontig(x):
        assert_values(tl.cov(t, **ours), np.cov(x, **args), 1e-12, 1e-14, msg=label)
    assert_values(tl.cov(tl.tensor(x[0])), np.cov(x[0]), 1e-12)
    assert tl.cov(tl.tensor([1, 2, 4])).dtype is tl.float32


def test_cov_corrcoef_edge_cases_and_errors():
    x = _QRNG.standard_normal((4, 6))
    assert_values(tl.corrcoef(tl.tensor(x)), np.corrcoef(x), 1e-12, 1e-14)
    assert tl.corrcoef(tl.tensor([1.0, 2.0, 3.0])).item() == 1.0
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        assert math.isinf(tl.cov(tl.tensor(x), correction=6)[0, 0].item())
    t = tl.tensor(x)
    for call, msg in [
            (lambda: tl.cov(tl.zeros(2, 3, 4)), "two or fewer dimensions"),
            (lambda: tl.cov(tl.tensor([True, False])), "bool dtype"),
            (lambda: tl.cov(t, fweights=tl.ones(6)), "integral dtype"),
            (lambda: tl.cov(t, fweights=tl.tensor([1, -1, 1, 1, 1, 1])), "cannot be negative"),
            (lambda: tl.cov(t, aweights=tl.tensor([1, 1, 1, 1, 1, 1])), "floating point dtype"),
            (lambda: tl.cov(t, fweights=tl.tensor([1, 2])), "same numel")]:
        with pytest.raises(RuntimeError, match=msg):
            call()


def test_renorm_matches_torch():
    torch = torch_or_skip()
    x = _QRNG.standard_normal((3, 4, 2))
    for p, dim, maxnorm in [(2, 0, 1.0), (1, 1, 0.5), (math.inf, 2, 0.8), (3, -1, 10.0)]:
        for label, t in make_noncontig(x):
            assert_values(tl.renorm(t, p, dim, maxnorm),
                          torch.renorm(torch.tensor(x), p, dim, maxnorm).numpy(), 1e-12, msg=label)
    y = tl.tensor(x)
    assert y.renorm_(2, 0, 1.0) is y
    assert_values(y, torch.renorm(torch.tensor(x), 2, 0, 1.0).numpy(), 1e-12)
    for call, exc, msg in [(lambda: tl.renorm(tl.tensor(x), 0, 0, 1), RuntimeError, "non-positive"),
                           (lambda: tl.renorm(tl.tensor(x), 1, 0, -1), RuntimeError, "maxnorm"),
                           (lambda: tl.renorm(tl.tensor([[1]]), 1, 0, 1), RuntimeError, "floating"),
                           (lambda: tl.renorm(tl.tensor(x), 1, 5, 1), IndexError, "out of range"),
                           (lambda: tl.renorm(tl.tensor([1.0]), 1, 0, 1), RuntimeError,
                            "at least 2 dimensions, got 1")]:
        with pytest.raises(exc, match=msg):
            call()


def test_trapezoid_matches_numpy():
    rng = np.random.default_rng(9)
    y = rng.standard_normal((3, 5))
    x1 = np.sort(rng.standard_normal(5))
    for dim in (1, -1):
        np.testing.assert_allclose(tl.trapezoid(tl.tensor(y), dim=dim).numpy(),
                                   np.trapezoid(y, axis=dim), atol=1e-12)
    np.testing.assert_allclose(tl.trapezoid(tl.tensor(y), dx=0.5).numpy(),
                               np.trapezoid(y, dx=0.5), atol=1e-12)
    np.testing.assert_allclose(tl.trapz(tl.tensor(y), tl.tensor(x1)).numpy(),
                               np.trapezoid(y, x1), atol=1e-12)
    np.testing.assert_allclose(tl.trapezoid(tl.tensor(y.T), tl.tensor(x1), dim=0).numpy(),
                               np.trapezoid(y.T, x1, axis=0), atol=1e-12)
    cum = np.cumsum((y[:, 1:] + y[:, :-1]) / 2, axis=1)
    np.testing.assert_allclose(tl.cumulative_trapezoid(tl.tensor(y)).numpy(), cum, atol=1e-12)
    assert tl.trapezoid(tl.ones(0)).item() == 0.0


# ---- histogramdd, gradient -----------------------------------------------------------------------
def test_histogramdd_matches_numpy():
    rng = np.random.default_rng(41)
    x = rng.random((300, 3))
    w = rng.random(300)
    for kwargs in (dict(bins=[3, 4, 2]), dict(bins=3, range=[0.0, 1.0, 0.0, 2.0, 0.2, 0.8], density=True),
                   dict(bins=4, weight=True), dict(bins=5, density=True, weight=True)):
        k = dict(kwargs)
        weighted = k.pop("weight", False)
        got = tl.histogramdd(tl.tensor(x), **k, weight=tl.tensor(w) if weighted else None)
        rng_np = None if "range" not in k else np.array(k["range"]).reshape(-1, 2)
        hist, edges = np.histogramdd(x, bins=k["bins"], range=rng_np, density=k.get("density", False),
                                     weights=w if weighted else None)
        np.testing.assert_allclose(got.hist.numpy(), hist, rtol=1e-12)
        for a, b in zip(got.bin_edges, edges):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-12)
    edges = [tl.tensor([0.0, 0.5, 1.0]), tl.tensor([0.0, 0.2, 1.0])]
    got = tl.histogramdd(tl.tensor(x[:, :2]), bins=edges)
    np.testing.assert_array_equal(got.hist.numpy(), np.histogramdd(x[:, :2], bins=[e.numpy() for e in edges])[0])
    assert got.hist.dtype == tl.float64 and type(got).__name__ == "histogramdd"
    with pytest.raises(RuntimeError, match="expected 3 bin counts"):
        tl.histogramdd(tl.tensor(x), bins=[2, 2])
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tl.histogramdd(tl.tensor(x), bins=0)
    with pytest.raises(NotImplementedError, match="histogramdd"):
        tl.histogramdd(tl.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="too many to count"):     # refused before any edge is made
        tl.histogramdd(tl.tensor(x), bins=10 ** 9)


def _np_gradients(a, spacing, edge_order):
    g = np.gradient(a, *spacing, edge_order=edge_order)
    return list(g) if isinstance(g, (list, tuple)) else [g]


@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 5)])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(shape, edge_order):
    rng = np.random.default_rng(42)
    a = rng.standard_normal(shape)
    for spacing in (1, 0.5):
        got = tl.gradient(tl.tensor(a), spacing=spacing, edge_order=edge_order)
        for g, w in zip(got, _np_gradients(a, [spacing], edge_order)):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)
    coords = [np.sort(rng.random(n)) * 5 for n in shape]
    got = tl.gradient(tl.tensor(a), spacing=[tl.tensor(c) for c in coords], edge_order=edge_order)
    for g, w in zip(got, _np_gradients(a, coords, edge_order)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-9, atol=1e-9)
    steps = [0.5 + i for i in range(len(shape))]
    got = tl.gradient(tl.tensor(a), spacing=steps, edge_order=edge_order)
    for g, w in zip(got, _np_gradients(a, steps, edge_order)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)


def test_gradient_dims_integers_autograd_and_errors():
    a = tl.arange(12.0).reshape(3, 4) ** 2
    (only,) = tl.gradient(a, dim=1)
    np.testing.assert_allclose(only.numpy(), np.gradient(a.numpy(), axis=1))
    (g,) = tl.gradient(tl.arange(5), spacing=2)
    assert g.dtype == tl.float32 and g.tolist() == [0.5] * 5
    x = tl.randn(6, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: tl.gradient(t, edge_order=2)[0], (x,))
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        tl.gradient(tl.ones(2), edge_order=2)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        tl.gradient(tl.ones(3), edge_order=3)
    with pytest.raises(RuntimeError, match="same length"):
        tl.gradient(tl.ones(3, 3), spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="appears multiple times"):
        tl.gradient(tl.ones(3, 3), dim=(1, 1))
    assert tl.gradient(tl.arange(4.0), spacing=None, dim=None)[0].tolist() == [1.0] * 4
