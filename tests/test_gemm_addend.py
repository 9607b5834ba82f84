"""The GEMM reading its addend in place: C = alpha * A @ B + beta * addend, the addend a strided
(possibly stride-0) array read by the micro-kernel's store at the first K block
(kernels/gemm.h, gemm_kernel.h; matmul.pyx's bmm and _reads_addend).  Reached from addmm,
Tensor.addmm, F.linear and baddbmm with one batch; checked against NumPy in float64, against
the old path (addend copied into out, then beta-accumulated) bit for bit, and for autograd."""
import functools
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite._core import matmul as _mm
from torchlite.autograd import gradcheck

from helpers import available_isa_levels, isa_level, tensor_of, to_numpy

LEVELS = available_isa_levels()          # the compiled GEMM levels (of 0, 3, 4) this CPU runs
FLOATS = [tl.float32, tl.float64]
NP = {tl.float32: np.float32, tl.float64: np.float64}
# (rtol, per-term error): |got - exact| <= rtol * |exact| + eps * sqrt(k + 1) * (|alpha| |A| @ |B| + |beta| |addend|)
TOL = {tl.float32: (1e-5, 1e-6), tl.float64: (1e-12, 1e-14),
       tl.float16: (2e-3, 1e-6), tl.bfloat16: (1.6e-2, 1e-6)}
FORMS = ["row", "col", "full", "full_T", "full_slice", "row_strided", "scalar"]


@pytest.fixture(params=LEVELS, ids=[f"isa{lv}" for lv in LEVELS])
def isa(request):
    """Run a test with each GEMM kernel level installed (helpers.isa_level restores the old one)."""
    with isa_level(request.param) as got:
        assert got == request.param and _mm.isa_level() == request.param
        yield got


# ---- helpers ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def operands(m, n, k, dtype):
    """(a, b) NumPy arrays of `dtype` (m x k, k x n) and, in float64, a @ b and |a| @ |b|: the
    same for every addend form, level and thread count, so NumPy multiplies each shape once."""
    rng = np.random.RandomState(m * 7919 + n * 104729 + k)
    a = rng.standard_normal((m, k)).astype(NP[dtype])
    b = rng.standard_normal((k, n)).astype(NP[dtype])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a, b, a64 @ b64, np.abs(a64) @ np.abs(b64)


def make_addend(form, m, n, dtype, rng, nan_at=None, fill=None):
    """(addmm's input tensor in the given form, its value broadcast to (m, n) in float64).
    fill: a constant for every element (NaN for the beta = 0 tests); nan_at: (i, j) of the
    (m, n) result whose addend element is NaN."""
    npdt = NP.get(dtype, np.float32)
    shape = {"row": (n,), "row_strided": (n,), "col": (m, 1), "scalar": ()}.get(form, (m, n))
    v = (3 * rng.standard_normal(shape)).astype(npdt) if fill is None else np.full(shape, fill, npdt)
    if nan_at is not None:
        i, j = nan_at
        idx = {"row": (j,), "row_strided": (j,), "col": (i, 0), "scalar": ()}.get(form, (i, j))
        v[idx] = np.nan
    if form == "full_T":          # a transposed view: column stride m
        t = tl.tensor(np.ascontiguousarray(v.T)).t()
    elif form == "full_slice":    # every other column of a wider matrix, at an offset
        wide = np.full((m, 2 * n + 1), 99, npdt)
        wide[:, 1::2] = v
        t = tl.tensor(wide)[:, 1::2]
    elif form == "row_strided":   # a bias with element stride 3
        wide = np.full((3 * n,), 99, npdt)
        wide[::3] = v
        t = tl.tensor(wide)[::3]
    else:
        t = tl.tensor(v)
    if dtype not in NP:
        t = t.to(dtype)
        v = to_numpy(t)
    return t, np.broadcast_to(v.astype(np.float64), (m, n))


def expected(prod, mag, add64, alpha, beta):
    """alpha * A @ B + beta * addend (beta = 0: the addend is ignored, NaN included) and the size of
    the terms summed, for the error bound."""
    if beta == 0:
        return alpha * prod, abs(alpha) * mag
    return alpha * prod + beta * add64, abs(alpha) * mag + abs(beta) * np.abs(add64)


def check(got, exact, mag, k, dtype):
    """got (a tensor) equals exact to rounding: rtol * |exact| + eps * sqrt(k + 1) * mag."""
    g = to_numpy(got).astype(np.float64)
    assert g.shape == exact.shape
    rtol, eps = TOL[dtype]
    bound = rtol * np.abs(exact) + eps * math.sqrt(k + 1) * mag
    err = np.abs(g - exact)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements off, first at "
                           f"{np.argwhere(bad)[0]}: got {g[bad][0]}, exact {exact[bad][0]}")


def old_path(add64, a, b, alpha, beta, dtype):
    """The product through the old path: the addend copied into out, then out beta-accumulated
    (addmm with out= the addend itself, which _reads_addend declines)."""
    c = tl.tensor(np.ascontiguousarray(add64).astype(NP[dtype]))
    r = tl.addmm(c, a, b, beta=beta, alpha=alpha, out=c)
    assert r is c
    return c.numpy()


# (m, n, k, beta, alpha): m in {1, 5, 7, 64, 1100} (MC <= 1024), n in {1, 3, 17, 33, 600} (NC <= 512),
# k in {0, 1, 9, 300} (KC = 256: two K blocks, the addend added once); the big ones split over threads
CASES = [
    (1, 1, 1, 1, 1),
    (1, 17, 9, 0.5, -2),        # one row: the matrix-vector path, addend copied into C first
    (5, 1, 300, 1, -2),         # one column, long
    (5, 3, 1, 0.5, 1),          # edge tiles only
    (7, 17, 9, 1, 1),
    (7, 33, 300, 0.5, -2),      # two K blocks
    (64, 33, 0, 0.5, 1),        # k = 0: beta * addend
    (64, 17, 300, 0, 1),        # beta = 0: no addend read
    (64, 600, 9, 1, -2),        # crosses NC
    (1100, 3, 9, 1, -2),        # crosses MC, narrow
    (1100, 17, 300, 0.5, 1),    # crosses MC and KC, two threads
    (1100, 600, 300, 1, -2),    # crosses all three blocks, two threads
]


# ---- values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", FORMS)
def test_addmm_addend_forms_and_blocking(isa, threads, dtype, form):
    """addmm with each addend form over shapes crossing the blocking: NumPy values, the old path's
    bits, and the addend left as it was."""
    rng = np.random.RandomState(1)
    for m, n, k, beta, alpha in CASES:
        a, b, prod, mag = operands(m, n, k, dtype)
        c, add64 = make_addend(form, m, n, dtype, rng)
        before = c.numpy().copy()
        got = tl.addmm(c, tl.tensor(a), tl.tensor(b), beta=beta, alpha=alpha)
        assert got.shape == (m, n) and got.dtype == dtype and got.is_contiguous()
        check(got, *expected(prod, mag, add64, alpha, beta), k, dtype)
        np.testing.assert_array_equal(got.numpy(), old_path(add64, tl.tensor(a), tl.tensor(b), alpha, beta, dtype),
                                      err_msg=f"direct path differs from the old path at {(m, n, k)}")
        np.testing.assert_array_equal(c.numpy(), before)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("beta", [1, 0.5, 0])
@pytest.mark.parametrize("alpha", [1, -2])
def test_every_beta_alpha(isa, dtype, form, beta, alpha):
    """Every beta in {1, 0.5, 0} with alpha in {1, -2}, on tile-edge and two-K-block shapes."""
    rng = np.random.RandomState(2)
    for m, n, k in [(7, 17, 9), (5, 33, 300), (1, 3, 9), (9, 1, 1)]:
        a, b, prod, mag = operands(m, n, k, dtype)
        c, add64 = make_addend(form, m, n, dtype, rng)
        check(tl.addmm(c, tl.tensor(a), tl.tensor(b), beta=beta, alpha=alpha),
              *expected(prod, mag, add64, alpha, beta), k, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", FORMS)
def test_beta_zero_ignores_nan_addend(isa, dtype, form):
    """beta = 0 ignores the addend, NaN included (as PyTorch does), on every path."""
    rng = np.random.RandomState(3)
    for m, n, k in [(1, 17, 9), (5, 1, 9), (7, 33, 300), (64, 600, 9), (5, 3, 0)]:
        a, b, prod, mag = operands(m, n, k, dtype)
        c, _ = make_addend(form, m, n, dtype, rng, fill=np.nan)
        got = tl.addmm(c, tl.tensor(a), tl.tensor(b), beta=0, alpha=-2)
        assert not np.isnan(got.numpy()).any()
        check(got, -2 * prod, 2 * mag, k, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", ["full", "full_T", "full_slice", "row", "row_strided", "col"])
def test_addend_element_lands_in_its_place(isa, dtype, form):
    """One NaN in the addend turns exactly the result elements it is broadcast to into NaN: each
    addend element is read at its own (strided) place, once."""
    rng = np.random.RandomState(4)
    for m, n, k in [(7, 33, 300), (64, 600, 9), (1100, 17, 1), (1, 17, 9), (5, 1, 9)]:
        i, j = m * 2 // 3, n // 2
        a, b, _, _ = operands(m, n, k, dtype)
        c, add64 = make_addend(form, m, n, dtype, rng, nan_at=(i, j))
        got = tl.addmm(c, tl.tensor(a), tl.tensor(b), beta=0.5)
        np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(add64))


# ---- bit-identity ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mnk", [(1100, 600, 300), (7, 17, 9), (1, 33, 300), (64, 1, 300), (5, 3, 0)])
def test_linear_equals_addmm_bit_for_bit(isa, threads, dtype, mnk):
    """F.linear(x, w, b) == addmm(b.expand(m, n).contiguous(), x, w.t()) == the old path, exactly:
    the addend is added once, to the accumulator, rounding the same way."""
    m, n, k = mnk
    rng = np.random.RandomState(5)
    x = tl.tensor(rng.standard_normal((m, k)).astype(NP[dtype]))
    w = tl.tensor(rng.standard_normal((n, k)).astype(NP[dtype]))
    bias = tl.tensor(rng.standard_normal((n,)).astype(NP[dtype]))
    y = F.linear(x, w, bias).numpy()
    full = bias.expand(m, n).contiguous()
    np.testing.assert_array_equal(y, tl.addmm(full, x, w.t()).numpy())
    np.testing.assert_array_equal(y, tl.addmm(bias, x, w.t()).numpy())
    np.testing.assert_array_equal(y, old_path(full.numpy(), x, w.t(), 1, 1, dtype))
    # an input folded from more dims is the same single GEMM
    np.testing.assert_array_equal(F.linear(x.reshape(1, m, k), w, bias).numpy().reshape(m, n), y)


@pytest.mark.parametrize("xshape", [(1, 5, 0), (2, 1, 5, 0)])
def test_linear_folded_input_with_zero_in_features(xshape):
    """F.linear of a >= 3-D input with in_features = 0 is the bias broadcast, as in PyTorch."""
    bias = tl.tensor(np.arange(3, dtype=np.float32))
    y = F.linear(tl.zeros(*xshape), tl.zeros(3, 0), bias)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(bias.numpy(), xshape[:-1] + (3,)))


def test_direct_path_does_not_depend_on_thread_count(isa):
    """The addend read in place gives the same bits on 1 and 2 threads."""
    old = tl.get_num_threads()
    rng = np.random.RandomState(6)
    try:
        for dtype in FLOATS:
            for m, n, k in [(1100, 600, 300), (300, 600, 17), (5, 1, 70000)]:
                a, b, _, _ = operands(m, n, k, dtype)
                c, _ = make_addend("full_T", m, n, dtype, rng)
                res = []
                for nt in (1, 2):
                    tl.set_num_threads(nt)
                    res.append(tl.addmm(c, tl.tensor(a), tl.tensor(b), beta=0.5, alpha=-2).numpy())
                np.testing.assert_array_equal(res[0], res[1])
    finally:
        tl.set_num_threads(old)


# ---- entry points: F.linear, Tensor.addmm, baddbmm ------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["2d", "2d_T", "1d", "3d", "3d_noncontig", "4d_noncontig"])
def test_linear_with_bias(isa, threads, dtype, kind):
    """F.linear(x, w, b) on 2-D inputs, a transposed one, 1-D, and inputs folded into one GEMM (3-D
    contiguous, >3-D) or not (3-D non-contiguous)."""
    rng = np.random.RandomState(7)
    for rows, k, n in [(1100, 300, 600), (5, 9, 17), (1, 300, 33), (7, 9, 1)]:
        xs = rng.standard_normal((rows, k)).astype(NP[dtype])
        w = rng.standard_normal((n, k)).astype(NP[dtype])
        bias = rng.standard_normal((n,)).astype(NP[dtype])
        if kind == "1d":
            xs = xs[0]
        lead = xs.shape[:-1]
        if kind == "2d":
            x = tl.tensor(xs)
        elif kind == "2d_T":
            x = tl.tensor(np.ascontiguousarray(xs.T)).t()
        elif kind == "1d":
            x = tl.tensor(xs)
        elif kind == "3d":
            lead = (1, rows) if rows % 5 else (5, rows // 5)
            x = tl.tensor(xs.reshape(lead + (k,)))
        elif kind == "3d_noncontig":    # stored transposed: not folded, matmul + bias
            lead = (1, rows)
            x = tl.tensor(np.ascontiguousarray(xs.T)).t().unsqueeze(0)
        else:                           # 4-D, stored transposed: folded (reshape copies)
            lead = (rows, 1, 1)
            x = tl.tensor(np.ascontiguousarray(xs.T)).t().unsqueeze(1).unsqueeze(1)
        x64 = xs.astype(np.float64).reshape(lead + (k,))
        got = F.linear(x, tl.tensor(w), tl.tensor(bias))
        assert got.shape == lead + (n,)
        exact = x64 @ w.T.astype(np.float64) + bias.astype(np.float64)
        mag = np.abs(x64) @ np.abs(w.T.astype(np.float64)) + np.abs(bias.astype(np.float64))
        check(got, exact, mag, k, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", ["row", "col", "full_T", "scalar"])
def test_tensor_addmm_method(isa, dtype, form):
    """Tensor.addmm (input.addmm(mat1, mat2, beta=, alpha=)) takes the same path as addmm."""
    rng = np.random.RandomState(8)
    for m, n, k in [(7, 33, 300), (64, 600, 9), (1, 17, 9)]:
        a, b, prod, mag = operands(m, n, k, dtype)
        c, add64 = make_addend(form, m, n, dtype, rng)
        got = c.addmm(tl.tensor(a), tl.tensor(b), beta=0.5, alpha=-2)
        check(got, *expected(prod, mag, add64, -2, 0.5), k, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("form", ["row", "col", "full", "full_T", "batched", "scalar"])
def test_baddbmm_batch_one_and_more(isa, threads, dtype, form):
    """baddbmm with one batch entry (the addend read in place) and with three (the old path)."""
    rng = np.random.RandomState(9)
    for m, n, k in [(7, 33, 300), (1, 17, 9), (64, 600, 9)]:
        for nb in (1, 3):
            a = rng.standard_normal((nb, m, k)).astype(NP[dtype])
            b = rng.standard_normal((nb, k, n)).astype(NP[dtype])
            if form == "batched":
                v = rng.standard_normal((1, m, n)).astype(NP[dtype])
                c, add64 = tl.tensor(v), v.astype(np.float64)
            else:
                c, add64 = make_addend(form, m, n, dtype, rng)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            got = tl.baddbmm(c, tl.tensor(a), tl.tensor(b), beta=0.5, alpha=-2)
            exact = -2 * (a64 @ b64) + 0.5 * add64
            mag = 2 * (np.abs(a64) @ np.abs(b64)) + 0.5 * np.abs(add64)
            check(got, exact, np.broadcast_to(mag, exact.shape), k, dtype)


# ---- out=, aliasing, other dtypes -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mk", [(9, 9), (64, 300), (300, 300)])
def test_out_forms_and_aliasing(isa, dtype, mk):
    """out= the addend, out aliasing mat1 or mat2, addmm_ in place, the addend a view of an operand or
    beside out in its storage, a resized / strided / transposed out (a strided out's gaps left alone)."""
    m, k = mk
    n = k                                    # square enough for out to alias mat1 (m x k == m x n)
    rng = np.random.RandomState(10)
    A = rng.standard_normal((m, k)).astype(NP[dtype])
    B = rng.standard_normal((k, n)).astype(NP[dtype])
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    C = rng.standard_normal((m, n)).astype(NP[dtype])
    C64 = C.astype(np.float64)
    bias = rng.standard_normal((n,)).astype(NP[dtype])
    bias64 = bias.astype(np.float64)
    mag = 2 * (np.abs(A64) @ np.abs(B64)) + 0.5 * np.maximum(np.abs(C64), np.abs(bias64))

    def want(add):
        return -2 * (A64 @ B64) + 0.5 * add

    kw = dict(beta=0.5, alpha=-2)
    c = tl.tensor(C)                                        # out is the addend
    assert tl.addmm(c, tl.tensor(A), tl.tensor(B), out=c, **kw) is c
    check(c, want(C64), mag, k, dtype)
    c = tl.tensor(C)                                        # the same, in place
    c.addmm_(tl.tensor(A), tl.tensor(B), **kw)
    check(c, want(C64), mag, k, dtype)
    a = tl.tensor(A)                                        # out aliases mat1
    tl.addmm(tl.tensor(bias), a, tl.tensor(B), out=a, **kw)
    check(a, want(bias64), mag, k, dtype)
    if m == k:                                              # out aliases mat2
        b = tl.tensor(B)
        tl.addmm(tl.tensor(C), tl.tensor(A), b, out=b, **kw)
        check(b, want(C64), mag, k, dtype)
        a = tl.tensor(A)                                    # the addend is mat1 itself, out apart
        check(tl.addmm(a, a, tl.tensor(B), **kw), want(A64), mag + np.abs(A64), k, dtype)
        s = tl.tensor(A)                                    # self is the addend and both factors
        s.addmm_(s, s, **kw)
        check(s, -2 * (A64 @ A64) + 0.5 * A64, 2 * (np.abs(A64) @ np.abs(A64)) + np.abs(A64), k, dtype)
    out = tl.empty(0, dtype=dtype)                          # resized
    assert tl.addmm(tl.tensor(bias), tl.tensor(A), tl.tensor(B), out=out, **kw) is out
    check(out, want(bias64), mag, k, dtype)
    out = tl.empty(n, m, dtype=dtype).t()                   # transposed out, the addend strided
    tl.addmm(tl.tensor(C).t().contiguous().t(), tl.tensor(A), tl.tensor(B), out=out, **kw)
    check(out, want(C64), mag, k, dtype)
    buf = tl.tensor(np.stack([np.zeros_like(C), C]))        # the addend beside out in one storage
    tl.addmm(buf[1], tl.tensor(A), tl.tensor(B), out=buf[0], **kw)
    check(buf[0], want(C64), mag, k, dtype)
    np.testing.assert_array_equal(buf[1].numpy(), C)
    big = tl.full((m, 2 * n), 7.0, dtype=dtype)             # every other column of a wider out
    out = big[:, ::2]
    tl.addmm(tl.tensor(bias), tl.tensor(A), tl.tensor(B), out=out, **kw)
    check(out, want(bias64), mag, k, dtype)
    np.testing.assert_array_equal(big.numpy()[:, 1::2], 7.0)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16], ids=str)
@pytest.mark.parametrize("form", ["row", "col", "full", "full_T", "scalar"])
def test_half_dtypes_go_through_float32(isa, dtype, form):
    """float16 / bfloat16 addmm and F.linear: computed in float32 and rounded once (never the
    direct path, which is float32/float64 only)."""
    rng = np.random.RandomState(11)
    for m, n, k in [(7, 33, 300), (1, 17, 9), (64, 600, 9)]:
        a = tensor_of(rng.standard_normal((m, k)), dtype.name)
        b = tensor_of(rng.standard_normal((k, n)), dtype.name)
        a64, b64 = to_numpy(a).astype(np.float64), to_numpy(b).astype(np.float64)
        c, add64 = make_addend(form, m, n, dtype, rng)
        got = tl.addmm(c, a, b, beta=0.5, alpha=-2)
        assert got.dtype == dtype
        exact, mag = expected(a64 @ b64, np.abs(a64) @ np.abs(b64), add64, -2, 0.5)
        check(got, exact, mag, k, dtype)
        if form == "row":
            y = F.linear(a, b.t(), c)
            check(y, a64 @ b64 + add64, np.abs(a64) @ np.abs(b64) + np.abs(add64), k, dtype)


def test_integer_addmm_keeps_the_old_path():
    """Integer products (not read in place) still add a broadcast addend, exactly."""
    rng = np.random.RandomState(12)
    a = rng.randint(-5, 6, (7, 300)).astype(np.int32)
    b = rng.randint(-5, 6, (300, 33)).astype(np.int32)
    bias = rng.randint(-5, 6, (33,)).astype(np.int32)
    got = tl.addmm(tl.tensor(bias), tl.tensor(a), tl.tensor(b), beta=2, alpha=3)
    np.testing.assert_array_equal(got.numpy(), 3 * (a.astype(np.int64) @ b) + 2 * bias)


# ---- autograd ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((5, 9), 3), ((1, 9), 4), ((9,), 3), ((2, 4, 9), 3), ((6, 2), 1)])
def test_linear_bias_gradcheck(shapes):
    """F.linear with a bias: gradients match finite differences in float64."""
    xshape, n = shapes
    rng = np.random.RandomState(13)
    x = tl.tensor(rng.standard_normal(xshape), requires_grad=True)
    w = tl.tensor(rng.standard_normal((n, xshape[-1])), requires_grad=True)
    b = tl.tensor(rng.standard_normal((n,)), requires_grad=True)
    assert gradcheck(F.linear, (x, w, b))


@pytest.mark.parametrize("form", ["row", "col", "full", "scalar"])
def test_addmm_gradcheck_with_broadcast_input(form):
    """addmm with a broadcast input, beta and alpha: gradients match finite differences."""
    rng = np.random.RandomState(14)
    shape = {"row": (4,), "col": (3, 1), "full": (3, 4), "scalar": ()}[form]
    c = tl.tensor(rng.standard_normal(shape), requires_grad=True)
    a = tl.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    b = tl.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    assert gradcheck(lambda c, a, b: tl.addmm(c, a, b, beta=0.5, alpha=-2), (c, a, b))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("xshape", [(64, 300), (1, 300), (4, 5, 300)])
def test_linear_bias_grads_match_torch(dtype, xshape):
    """F.linear with a bias, forward and backward, against PyTorch (skipped without torch)."""
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(15)
    xs = rng.standard_normal(xshape).astype(NP[dtype])
    ws = rng.standard_normal((33, xshape[-1])).astype(NP[dtype])
    bs = rng.standard_normal((33,)).astype(NP[dtype])
    gs = rng.standard_normal(xshape[:-1] + (33,)).astype(NP[dtype])
    lt = [tl.tensor(v, requires_grad=True) for v in (xs, ws, bs)]
    tt = [torch.tensor(v, requires_grad=True) for v in (xs, ws, bs)]
    y = F.linear(*lt)
    ty = torch.nn.functional.linear(*tt)
    y.backward(tl.tensor(gs))
    ty.backward(torch.tensor(gs))
    rtol, atol = (1e-5, 1e-4) if dtype == tl.float32 else (1e-12, 1e-11)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=atol)
    for got, want in zip(lt, tt):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=rtol, atol=atol)
