"""Matrix products (torchlite/_ops/linalg.py over the GEMM of torchlite/_core/matmul.pyx and
kernels/gemm*.h), checked against NumPy in float64 and against PyTorch where installed."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import torchlite as tl
from torchlite._ops import linalg as LA
from torchlite._core import matmul as _mm

CPU_LEVEL = _mm.set_isa_level(99)
LEVELS = [lv for lv in (0, 3, 4) if lv <= CPU_LEVEL]
FLOATS = [tl.float32, tl.float64]
INTS = [tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64]
NP = {tl.float32: np.float32, tl.float64: np.float64, tl.uint8: np.uint8, tl.int8: np.int8,
      tl.int16: np.int16, tl.int32: np.int32, tl.int64: np.int64, tl.float16: np.float16}


@pytest.fixture(params=LEVELS, ids=[f"isa{lv}" for lv in LEVELS])
def isa(request):
    """Run a test on each compiled GEMM kernel the CPU can execute."""
    _mm.set_isa_level(request.param)
    yield request.param
    _mm.set_isa_level(99)


# ---- helpers --------------------------------------------------------------------------------
def rand(shape, dtype=tl.float32, rng=np.random):
    if dtype in INTS:
        lo, hi = (0, 6) if dtype == tl.uint8 else (-5, 6)
        return rng.randint(lo, hi, size=shape).astype(NP[dtype])
    return rng.standard_normal(shape).astype(NP.get(dtype, np.float32))


def layout(x, kind):
    """A torchlite tensor equal to numpy array x, stored in the given layout."""
    if kind == "contig" or x.ndim < 2:
        if kind == "strided" and x.ndim == 1:
            big = np.zeros((x.shape[0] * 2 + 1,), x.dtype)
            big[1::2] = x
            return tl.tensor(big)[1::2]
        return tl.tensor(x)
    if kind == "T":            # stored transposed: the last two dims swap strides
        return tl.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2))).transpose(-1, -2)
    if kind == "strided":      # every other row, every third column, with an offset
        big = np.zeros(x.shape[:-2] + (2 * x.shape[-2] + 1, 3 * x.shape[-1] + 2), x.dtype)
        big[..., 1::2, 2::3] = x
        return tl.tensor(big)[..., 1::2, 2::3]
    if kind == "Tstrided":
        return layout(np.ascontiguousarray(np.swapaxes(x, -1, -2)), "strided").transpose(-1, -2)
    raise ValueError(kind)


def ref(a, b):
    """NumPy reference: float64 for floats, wrapped int64 for integers."""
    if np.issubdtype(a.dtype, np.integer):
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def check(res, expected, k=1, dtype=None, magnitude=None):
    """res equals expected to rounding: an error bound that grows with sqrt(k) (k products
    summed) times the size of the values summed (magnitude: |a| @ |b|, when cancellation
    makes the result smaller than its terms; else the result's own size)."""
    got = res.numpy() if hasattr(res, "numpy") else np.asarray(res)
    assert got.shape == expected.shape
    if np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(got, expected)
        return
    tol = {np.float64: 1e-12, np.float16: 2e-3}.get(got.dtype.type, 2e-6)
    size = magnitude if magnitude is not None else expected
    scale = np.sqrt(max(k, 1)) * (np.abs(size).max() if size.size else 1) + 1e-30
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=0, atol=tol * scale)


# ---- the kernel on every layout, ISA level and thread count ---------------------------------
LAYOUTS = ["contig", "T", "strided", "Tstrided"]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_mm_layouts(isa, threads, dtype, la, lb):
    # n covers every micro-kernel width: one, two or three vectors, full and masked
    for m, n, k in [(1, 1, 1), (7, 13, 5), (33, 50, 17), (9, 80, 20), (5, 75, 3), (70, 41, 300)]:
        a, b = rand((m, k), dtype), rand((k, n), dtype)
        check(tl.mm(layout(a, la), layout(b, lb)), ref(a, b), k)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mnk", [(1030, 40, 37), (24, 1000, 70), (50, 60, 600), (200, 300, 130)])
def test_mm_block_boundaries(isa, threads, dtype, mnk):
    """Sizes crossing the cache blocks (MC rows, NC columns, KC depth) and the thread grid."""
    m, n, k = mnk
    a, b = rand((m, k), dtype), rand((k, n), dtype)
    check(tl.mm(tl.tensor(a), tl.tensor(b)), ref(a, b), k)
    check(tl.mm(layout(a, "T"), layout(b, "T")), ref(a, b), k)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gemv_paths(isa, threads, dtype):
    """One-column and one-row products: by rows, by columns, strided, and a long dot product
    split over threads."""
    for m, k in [(1, 1), (3, 700), (600, 50), (1000, 9)]:
        a, x = rand((m, k), dtype), rand((k,), dtype)
        for la in LAYOUTS:
            check(tl.mv(layout(a, la), layout(x, "strided")), ref(a, x), k)
            check(tl.matmul(layout(x, "contig"), layout(a.T.copy(), la)), ref(x, a.T), k)
    x, y = rand((70000,), dtype), rand((70000,), dtype)
    check(tl.dot(tl.tensor(x), tl.tensor(y)), ref(x, y), 70000)


def test_results_do_not_depend_on_thread_count():
    rng = np.random.RandomState(1)
    cases = [((300, 200), (200, 250)), ((1, 50000), (50000, 1)), ((700, 300), (300, 1)),
             ((64, 40, 30), (64, 30, 20))]
    old = tl.get_num_threads()
    try:
        for sa, sb in cases:
            a, b = tl.tensor(rand(sa, rng=rng)), tl.tensor(rand(sb, rng=rng))
            tl.set_num_threads(1)
            r1 = (a @ b).numpy()
            tl.set_num_threads(2)
            r2 = (a @ b).numpy()
            np.testing.assert_array_equal(r1, r2)
    finally:
        tl.set_num_threads(old)


def test_float32_accuracy_long_k(isa):
    """float32 stays within ~1e-5 (relative to the result's scale) of float64 for K = 4096."""
    rng = np.random.RandomState(2)
    a, b = rng.standard_normal((40, 4096)), rng.standard_normal((4096, 30))
    got = tl.mm(tl.tensor(a.astype(np.float32)), tl.tensor(b.astype(np.float32))).numpy()
    exact = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    assert np.abs(got - exact).max() / np.abs(exact).max() < 1e-5


# ---- dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_dtypes_wrap_like_a_cast(threads, dtype):
    a, b = rand((9, 31), dtype), rand((31, 7), dtype)
    check(tl.mm(layout(a, "T"), tl.tensor(b)), ref(a, b))
    big = np.full((3, 40), 100, NP[dtype])       # products overflow the dtype: wraps
    check(tl.matmul(tl.tensor(big), tl.tensor(big.T.copy())), ref(big, big.T))
    check(tl.matmul(tl.tensor(a[0]), tl.tensor(a[1])), ref(a[0], a[1]))
    check(tl.bmm(tl.tensor(a[None]), tl.tensor(b[None])), ref(a[None], b[None]))


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16], ids=str)
def test_half_dtypes_compute_in_float32(dtype):
    a = tl.tensor(rand((20, 30))).to(dtype)
    b = tl.tensor(rand((30, 10))).to(dtype)
    res = tl.mm(a, b)
    assert res.dtype == dtype
    exact = tl.mm(a.float(), b.float()).numpy()
    np.testing.assert_allclose(res.float().numpy(), exact, rtol=1e-2, atol=1e-2 * np.abs(exact).max())
    # rounded once from the float32 result, as PyTorch does
    np.testing.assert_array_equal(res.float().numpy(), tl.tensor(exact).to(dtype).float().numpy())
    r2 = tl.addmm(a[:, :10], a, b, beta=0.5, alpha=2)
    assert r2.dtype == dtype


@pytest.mark.parametrize("fn", [lambda a: tl.mm(a, a.t()), lambda a: tl.matmul(a, a.t()),
                                lambda a: tl.dot(a[0], a[0]), lambda a: tl.mv(a, a[0]),
                                lambda a: tl.bmm(a[None], a.t()[None])])
def test_bool_is_rejected_like_pytorch(fn):
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        fn(tl.ones(2, 2, dtype=tl.bool))


# ---- matmul forms -----------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((4, 1, 2, 3), (5, 3, 2)),
    ((1, 2, 3), (6, 3, 2)), ((2, 1, 3, 4), (1, 5, 4, 2)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)),
    ((0,), (0,)), ((2, 3), (3, 0)), ((4, 0, 3), (4, 3, 2)), ((1, 1), (1, 1)), ((3, 1, 5), (5, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_forms(sa, sb):
    a, b = rand(sa), rand(sb)
    check(tl.matmul(tl.tensor(a), tl.tensor(b)), ref(a, b), sa[-1])
    check(tl.tensor(a) @ tl.tensor(b), ref(a, b), sa[-1])


def test_matmul_on_transposed_and_expanded_batches(isa, threads):
    a = rand((3, 1, 6, 5))
    b = rand((4, 5, 7))
    ta = layout(a, "T")
    tb = tl.tensor(b[:1]).expand(4, 5, 7)          # batch of stride 0
    check(tl.matmul(ta, tb), ref(a, np.broadcast_to(b[:1], (4, 5, 7))), 5)
    row = rand((1, 5))
    check(tl.matmul(tl.tensor(row).expand(6, 5), tl.tensor(b)), ref(np.repeat(row, 6, 0), b), 5)
    # a 3-D operand that cannot be folded into one matrix (permuted batch)
    p = rand((6, 3, 5))
    check(tl.matmul(tl.tensor(p).permute(1, 0, 2), tl.tensor(b[0])), ref(p.transpose(1, 0, 2), b[0]), 5)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(0, 20), n=st.integers(0, 20), k=st.integers(0, 40),
       batch=st.lists(st.integers(1, 3), max_size=2), bcast=st.integers(0, 3),
       la=st.sampled_from(LAYOUTS), lb=st.sampled_from(LAYOUTS),
       dtype=st.sampled_from([tl.float32, tl.float64, tl.int32]))
def test_matmul_property(m, n, k, batch, bcast, la, lb, dtype):
    ba = [1 if bcast & 1 else s for s in batch]
    bb = [1 if bcast & 2 else s for s in batch]
    a, b = rand(tuple(ba) + (m, k), dtype), rand(tuple(bb) + (k, n), dtype)
    check(tl.matmul(layout(a, la), layout(b, lb)), ref(a, b), k, magnitude=ref(np.abs(a), np.abs(b)))


# ---- add* forms, out=, in-place, aliasing ------------------------------------------------------
def test_addmm_addmv_baddbmm_addbmm(threads):
    a, b, c = rand((4, 6)), rand((6, 5)), rand((5,))
    check(tl.addmm(tl.tensor(c), tl.tensor(a), tl.tensor(b), beta=0.5, alpha=-2),
          0.5 * c + -2 * ref(a, b), 6)
    v = rand((6,))
    check(tl.addmv(tl.tensor(c[:4]), tl.tensor(a), tl.tensor(v), beta=2, alpha=3),
          2 * c[:4] + 3 * ref(a, v), 6)
    check(tl.addmv(tl.tensor(1.5), tl.tensor(a), tl.tensor(v)), 1.5 + ref(a, v), 6)
    x, y, z = rand((3, 4, 6)), rand((3, 6, 5)), rand((4, 5))
    check(tl.baddbmm(tl.tensor(z), tl.tensor(x), tl.tensor(y), beta=-1, alpha=0.25),
          -z + 0.25 * ref(x, y), 6)
    check(tl.addbmm(tl.tensor(z), tl.tensor(x), tl.tensor(y), alpha=2),
          z + 2 * ref(x, y).sum(0), 18)
    check(tl.addbmm(tl.tensor(z), tl.tensor(x[:0]), tl.tensor(y[:0]), beta=3), 3 * z)


def test_beta_zero_ignores_nan_and_k_zero():
    nan = tl.full((2, 3), float("nan"))
    check(tl.addmm(nan, tl.ones(2, 4), tl.ones(4, 3), beta=0), np.full((2, 3), 4.0))
    check(tl.addmm(tl.full((2, 3), 2.0), tl.ones(2, 0), tl.ones(0, 3), beta=3), np.full((2, 3), 6.0))
    check(tl.addmm(nan, tl.ones(2, 0), tl.ones(0, 3), beta=0), np.zeros((2, 3)))
    check(tl.mm(tl.ones(2, 0), tl.ones(0, 3)), np.zeros((2, 3)))
    inf = tl.mm(tl.full((2, 2), float("inf")), tl.zeros(2, 2))   # inf * 0 is NaN, as in BLAS
    assert np.isnan(inf.numpy()).all()


def test_integer_alpha_beta_truncate_like_pytorch():
    i = tl.arange(4).reshape(2, 2)
    check(tl.addmm(i * 10, i, i, beta=0.5), np.array([[2, 3], [6, 11]]))
    check(tl.addmm(i * 10, i, i, alpha=1.5, beta=2), np.array([[2, 23], [46, 71]]))


def test_out_and_inplace_and_aliasing():
    a, b = rand((4, 4)), rand((4, 4))
    ta, tb = tl.tensor(a), tl.tensor(b)
    out = tl.empty(0)
    assert tl.mm(ta, tb, out=out) is out and out.shape == (4, 4)
    check(out, ref(a, b), 4)
    out_t = tl.empty(4, 4).t()                     # a transposed out is written through strides
    tl.matmul(ta, tb, out=out_t)
    check(out_t, ref(a, b), 4)
    x = tl.tensor(a)
    tl.mm(x, tb, out=x)                            # out aliases an input
    check(x, ref(a, b), 4)
    y = tl.tensor(a)
    y.addmm_(y, y, beta=2)                         # self is input and both factors
    check(y, 2 * a + ref(a, a), 4)
    z = tl.tensor(a)
    v0 = z._version
    z.addmm_(tb, tb, alpha=0.5)
    assert z._version > v0
    check(z, a + 0.5 * ref(b, b), 4)
    w = tl.tensor(a[0])
    w.addmv_(ta, tb[0], beta=0)
    check(w, ref(a, b[0]), 4)
    bb = tl.tensor(rand((2, 4, 4)))
    exp = bb.numpy() + ref(bb.numpy(), bb.numpy())
    bb.baddbmm_(bb, bb)
    check(bb, exp, 4)
    s = tl.tensor(a)
    s.addbmm_(tl.tensor(b[None]), tl.tensor(b[None]))
    check(s, a + ref(b, b), 4)
    for fn in (tl.dot, tl.vdot):
        o = tl.empty(())
        assert fn(ta[0], tb[0], out=o) is o
        check(o, ref(a[0], b[0]), 4)
    o = tl.empty(3)
    tl.mv(ta, tb[0], out=o)
    check(o, ref(a, b[0]), 4)
    o = tl.empty(1)
    tl.bmm(tl.tensor(a[None]), tl.tensor(b[None]), out=o)
    check(o, ref(a[None], b[None]), 4)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
        tl.mm(ta, tb, out=tl.empty(4, 4, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="Bad in-place call"):
        tl.ones(2, 3).addmm_(tl.ones(3, 3), tl.ones(3, 3))


# ---- vector products, tensordot --------------------------------------------------------------
def test_dot_vdot_mv_outer_inner():
    a, b = rand((7,)), rand((7,))
    check(tl.dot(tl.tensor(a), tl.tensor(b)), ref(a, b), 7)
    check(tl.vdot(tl.tensor(a), tl.tensor(b)), ref(a, b), 7)
    check(tl.tensor(a).dot(tl.tensor(b)), ref(a, b), 7)
    check(tl.outer(tl.tensor(a), tl.tensor(b[:3])), np.outer(a, b[:3]))
    check(tl.ger(tl.tensor(a), tl.tensor(b[:3])), np.outer(a, b[:3]))
    assert tl.outer(tl.ones(2, dtype=tl.int32), tl.ones(3)).dtype == tl.float32   # promotes
    assert tl.outer(tl.ones(2, dtype=tl.bool), tl.ones(3, dtype=tl.bool)).dtype == tl.bool
    x, y = rand((2, 3, 5)), rand((4, 5))
    check(tl.inner(tl.tensor(x), tl.tensor(y)), np.inner(x, y), 5)
    check(tl.inner(tl.tensor(2.0), tl.tensor(y)), 2 * y)
    check(tl.dot(tl.zeros(0), tl.zeros(0)), np.array(0.0))


@pytest.mark.parametrize("sa,sb,dims", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((3, 4), (4, 3), ([0, 1], [1, 0])),
    ((2, 3, 4), (5, 4), ([-1], [1])), ((2, 3), (3,), ([1], [0])),
])
def test_tensordot(sa, sb, dims):
    a, b = rand(sa), rand(sb)
    check(tl.tensordot(tl.tensor(a), tl.tensor(b), dims=dims), np.tensordot(a, b, axes=dims), 12)


@pytest.mark.parametrize("sa,sb,dims", [((3, 1), (2, 4), ([1], [1])),
                                        ((1, 1, 1), (2, 1, 2), ([0, 1], [2, 0])),
                                        ((2, 3), (1, 4), ([1], [0]))])
def test_tensordot_broadcasts_size_one_contracted_dims(sa, sb, dims):
    """A contracted dim of size 1 broadcasts against the other side (PyTorch's rule); the
    gradients sum over the broadcast, as for the explicitly expanded operands."""
    a, b = rand(sa, tl.float64), rand(sb, tl.float64)
    ea, eb = list(sa), list(sb)
    for i, j in zip(*dims):
        ea[i] = eb[j] = max(sa[i], sb[j])
    want = np.tensordot(np.broadcast_to(a, ea), np.broadcast_to(b, eb), axes=dims)
    ta, tb = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
    check(tl.tensordot(ta, tb, dims=dims).detach(), want, 12)
    assert tl.autograd.gradcheck(lambda x, y: tl.tensordot(x, y, dims=dims), (ta, tb))


def test_chain_matmul_and_multi_dot():
    from torchlite._ops.linalg import multi_dot
    ms = [rand((3, 40)), rand((40, 2)), rand((2, 30)), rand((30, 5))]
    check(tl.chain_matmul(*[tl.tensor(m) for m in ms]), ms[0] @ ms[1] @ ms[2] @ ms[3], 40)
    v, w = rand((3,)), rand((5,))
    check(multi_dot([tl.tensor(v)] + [tl.tensor(m) for m in ms] + [tl.tensor(w)]),
          v @ ms[0] @ ms[1] @ ms[2] @ ms[3] @ w, 40)


def test_vecdot():
    from torchlite._ops.linalg import vecdot
    a, b = rand((2, 3, 4)), rand((3, 4))
    check(vecdot(tl.tensor(a), tl.tensor(b)), (a * b).sum(-1), 4)
    check(vecdot(tl.tensor(a), tl.tensor(b[:, :1]), dim=1), (a * b[:, :1]).sum(1), 4)
    with pytest.raises(RuntimeError, match="floating point"):
        vecdot(tl.ones(3, dtype=tl.int32), tl.ones(3, dtype=tl.int32))


# ---- einsum ----------------------------------------------------------------------------------
EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]),
    ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("i...->...", [(3, 4, 5)]),
    ("...", [(2, 3)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk,kl->", [(2, 3), (3, 4), (4, 5)]),
    ("iij->j", [(3, 3, 4)]), ("iji->j", [(3, 4, 3)]), ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]),
    ("abc,cd,dab->", [(2, 3, 4), (4, 5), (5, 2, 3)]), ("ba", [(3, 4)]), ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,kl->ijkl", [(2, 3), (4, 5)]), ("i,i,i->i", [(4,), (4,), (4,)]), ("ij,j->i", [(3, 4), (4,)]),
    ("i...i", [(3, 3)]), ("bn,anm,bm->ba", [(2, 3), (5, 3, 4), (2, 4)]), ("ii->", [(0, 0)]),
    ("ij,jk->ik", [(3, 0), (0, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_numpy(eq, shapes):
    xs = [rand(s, tl.float64) for s in shapes]
    expected = np.einsum(eq, *xs)
    got = tl.einsum(eq, *[tl.tensor(x) for x in xs])
    check(got, np.asarray(expected), 60)


def test_einsum_forms_broadcast_and_layouts():
    a, b = rand((3, 4)), rand((4, 5))
    ta, tb = tl.tensor(a), tl.tensor(b)
    check(tl.einsum("ij,jk", [ta, tb]), a @ b, 4)
    check(tl.einsum(ta, [0, 1], tb, [1, 2], [0, 2]), a @ b, 4)
    check(tl.einsum(ta, [0, 1], tb, [1, 2]), a @ b, 4)
    check(tl.einsum(ta, [Ellipsis, 1], [Ellipsis]), a.sum(1), 4)
    check(tl.einsum(" ij , jk -> ik ", ta, tb), a @ b, 4)
    c = rand((1, 4))                        # size-1 dims broadcast, as in PyTorch
    check(tl.einsum("ij,ij->ij", ta, tl.tensor(c)), a * c)
    check(tl.einsum("ij,jk->ik", layout(a, "T"), layout(b, "strided")), a @ b, 4)
    i8 = tl.tensor(rand((3, 4), tl.int8))
    assert tl.einsum("ij->i", i8).dtype == tl.int64          # sums promote, as torch.sum does
    assert tl.einsum("ii->i", i8[:, :3]).dtype == tl.int8
    assert tl.einsum("ij,ij->i", i8, i8).dtype == tl.int8
    check(tl.einsum("ij,jk->k", i8, i8.t()), ref(i8.numpy(), i8.numpy().T).sum(0))
    assert tl.einsum("ij,ij->ij", tl.ones(2, 2, dtype=tl.bool), tl.ones(2, 2, dtype=tl.bool)).dtype == tl.bool


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_einsum_property(data):
    """Random equations (repeated labels, any output order, 1-3 operands) against NumPy."""
    letters = "abcde"
    sizes = {lab: data.draw(st.integers(1, 4)) for lab in letters}
    terms = data.draw(st.lists(st.lists(st.sampled_from(letters), max_size=4), min_size=1, max_size=3))
    used = sorted(set("".join("".join(t) for t in terms)))
    out = data.draw(st.permutations(used)) if used else []
    out = out[:data.draw(st.integers(0, len(out)))]
    eq = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    xs = [rand(tuple(sizes[lab] for lab in t), tl.float64) for t in terms]
    check(tl.einsum(eq, *[tl.tensor(x) for x in xs]), np.asarray(np.einsum(eq, *xs)), 64)


EINSUM_ERRORS = [
    (("ij,jk->ik", (2, 3), (4, 2)), "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    (("ij,jk", (2, 3)), "fewer operands were provided than specified in the equation"),
    (("ij", (2, 2), (2,)), "more operands were provided than specified in the equation"),
    (("ijk,jk", (2, 3), (3, 2)), "the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given"),
    (("ij,jk->iz", (2, 3), (3, 2)), "output subscript z does not appear in the equation for any input operand"),
    (("ij,jk->ii", (2, 3), (3, 2)), "output subscript i appears more than once in the output"),
    (("ii->i", (2, 3)), "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    (("i.j->i", (2, 3)), "found '.' for operand 0 that is not part of any ellipsis"),
    (("i...j...", (2, 2)), "found '.' for operand 0 for which an ellipsis was already found"),
    (("ij->ji->", (2, 2)), "invalid subscript given at index 6 in the equation string, subscripts must be in [a-zA-Z]"),
    (("i1", (2, 2)), "invalid subscript given at index 1"),
    (("...ij,...jk", (5, 2, 3), (4, 3, 2)), "dimension 0 covered by ellipsis in operand 1has size 4 which does not broadcast with previously seen ellipsis with size 5"),
]


@pytest.mark.parametrize("args,msg", EINSUM_ERRORS, ids=[a[0] for a, _ in EINSUM_ERRORS])
def test_einsum_errors(args, msg):
    with pytest.raises(RuntimeError) as ei:
        tl.einsum(args[0], *[tl.ones(*s) for s in args[1:]])
    assert msg in str(ei.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as et:
        torch.einsum(args[0], *[torch.ones(*s) for s in args[1:]])
    assert msg in str(et.value)


# ---- errors: the same type and message as PyTorch ----------------------------------------------
def _f(*shape, dtype="float32"):
    return ("ones", shape, dtype)


def _make(lib, spec):
    """Build an argument for either library from a ("ones" | "tensor", shape, dtype) spec."""
    if not (isinstance(spec, tuple) and len(spec) == 3 and spec[0] in ("ones", "tensor")):
        return spec
    kind, shape, dtype = spec
    dt = getattr(lib, dtype)
    return lib.tensor(shape, dtype=dt) if kind == "tensor" else lib.ones(*shape, dtype=dt)


ERRORS = [
    ("mm", [_f(2, 3), _f(4, 5)], {}, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("mm", [_f(2, 3), _f(3, 4, dtype="float64")], {}, RuntimeError, "expected m1 and m2 to have the same dtype, but got: float != double"),
    ("mm", [_f(2, 3, dtype="int64"), _f(3, 4)], {}, RuntimeError, "expected m1 and m2 to have the same dtype, but got: long int != float"),
    ("mm", [_f(2, 2, 3), _f(3, 2)], {}, RuntimeError, "self must be a matrix"),
    ("mm", [_f(2, 3), _f(3)], {}, RuntimeError, "mat2 must be a matrix"),
    ("matmul", [_f(2, 3), _f(4, 5)], {}, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("matmul", [_f(3), _f(4)], {}, RuntimeError, "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"),
    ("matmul", [_f(2, 3), _f(4)], {}, RuntimeError, "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("matmul", [_f(3), _f(4, 2)], {}, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
    ("matmul", [_f(2, 2, 3), _f(2, 4, 2)], {}, RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ("matmul", [_f(4, 5, 2, 3), _f(4, 5, 4, 2)], {}, RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: [20, 3] but got: [20, 4]."),
    ("matmul", [_f(5, 2, 3), _f(4, 2)], {}, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (10x3 and 4x2)"),
    ("matmul", [_f(5, 2, 3), _f(4)], {}, RuntimeError, "size mismatch, got input (10), mat (10x3), vec (4)"),
    ("matmul", [_f(3, 2, 3), _f(2, 3, 2)], {}, RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("matmul", [("tensor", 1.0, "float32"), _f(3)], {}, RuntimeError, "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("matmul", [_f(3), _f(3, dtype="float64")], {}, RuntimeError, "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("matmul", [_f(2, 3), _f(3, dtype="float64")], {}, RuntimeError, "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ("matmul", [_f(2, 2, 3), _f(2, 3, 2, dtype="float64")], {}, RuntimeError, "expected scalar type Float but found Double"),
    ("bmm", [_f(2, 3), _f(3, 2)], {}, RuntimeError, "batch1 must be a 3D tensor"),
    ("bmm", [_f(2, 2, 3), _f(3, 2)], {}, RuntimeError, "batch2 must be a 3D tensor"),
    ("bmm", [_f(2, 2, 3), _f(3, 3, 2)], {}, RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    ("bmm", [_f(2, 2, 3, dtype="float64"), _f(2, 3, 2)], {}, RuntimeError, "expected scalar type Double but found Float"),
    ("dot", [_f(3, 1), _f(3)], {}, RuntimeError, "1D tensors expected, but got 2D and 1D tensors"),
    ("dot", [_f(3, dtype="int32"), _f(3, dtype="int64")], {}, RuntimeError, "dot : expected both vectors to have same dtype, but found Int and Long"),
    ("vdot", [_f(3), _f(3, dtype="float64")], {}, RuntimeError, "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("mv", [_f(3), _f(3)], {}, RuntimeError, "vector + matrix @ vector expected, got 1, 1, 1"),
    ("mv", [_f(2, 3), _f(3, 1)], {}, RuntimeError, "vector + matrix @ vector expected, got 1, 2, 2"),
    ("mv", [_f(2, 3, dtype="float64"), _f(3)], {}, RuntimeError, "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    ("addmv", [_f(3), _f(2, 3), _f(3)], {}, RuntimeError, "size mismatch, got input (3), mat (2x3), vec (3)"),
    ("addmv", [_f(2, 2), _f(2, 3), _f(3)], {}, RuntimeError, "vector + matrix @ vector expected, got 2, 2, 1"),
    ("addmm", [_f(3, 3), _f(2, 3), _f(3, 2)], {}, RuntimeError, "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3, 3]"),
    ("addmm", [_f(2, 2), _f(2, 3, dtype="float64"), _f(3, 2)], {}, RuntimeError, "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("addmm", [_f(2, 2, dtype="float64"), _f(2, 3), _f(3, 2)], {}, RuntimeError, "self and mat2 must have the same dtype, but got Double and Float"),
    ("addmm", [_f(2, 2), _f(2, 3, 1), _f(3, 2)], {}, RuntimeError, "mat1 must be a matrix, got 3-D tensor"),
    ("addmm", [_f(2, 2), _f(2, 3), _f(4, 2)], {}, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)"),
    ("baddbmm", [_f(1, 2, 2, dtype="float64"), _f(1, 2, 3), _f(1, 3, 2)], {}, RuntimeError, "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    ("baddbmm", [_f(2, 2, 2), _f(2, 2, 3), _f(2, 4, 2)], {}, RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ("addbmm", [_f(2, 2), _f(2, 2, 3), _f(3, 3, 2)], {}, RuntimeError, "batch1 and batch2 must have same number of batches, got 2 and 3"),
    ("addbmm", [_f(2, 2), _f(2, 2, 3), _f(2, 4, 2)], {}, RuntimeError, "Incompatible matrix sizes for bmm (2x3 and 4x2)"),
    ("outer", [_f(2, 2), _f(3)], {}, RuntimeError, "outer: Expected 1-D argument self, but got 2-D"),
    ("outer", [_f(2), _f(3, 1)], {}, RuntimeError, "outer: Expected 1-D argument vec2, but got 2-D"),
    ("inner", [_f(2, 3), _f(4)], {}, RuntimeError, "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [4]"),
    ("inner", [_f(2, 3), _f(3, dtype="float64")], {}, RuntimeError, "both inputs should have same dtype"),
    ("tensordot", [_f(2, 3), _f(4, 2)], {"dims": 1}, RuntimeError, "contracted dimensions need to match, but first has size 3 in dim -1 and second has size 4 in dim 0"),
    ("tensordot", [_f(2, 3), _f(3, 2)], {"dims": -1}, RuntimeError, "tensordot expects dims >= 0, but got dims=-1"),
    ("tensordot", [_f(2, 3), _f(3, 2)], {"dims": 3}, RuntimeError, "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
    ("tensordot", [_f(2, 3), _f(3, 2)], {"dims": ([0], [0, 1])}, RuntimeError, "both dimension lists should have same length"),
    ("tensordot", [_f(2, 3), _f(3, 2)], {"dims": ([5], [0])}, IndexError, "Dimension out of range"),
    ("tensordot", [_f(2, 3), _f(3, 2, dtype="float64")], {"dims": 1}, RuntimeError, "both inputs should have same dtype"),
    ("mm", [_f(2, 3), _f(3, 2)], {"out": _f(2, 2, dtype="int64")}, RuntimeError, "Expected out tensor to have dtype float, but got long int instead"),
    ("mm", [_f(2, 3, dtype="bool"), _f(3, 2, dtype="bool")], {}, NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    ("dot", [_f(3, dtype="bool"), _f(3, dtype="bool")], {}, NotImplementedError, "\"dot\" not implemented for 'Bool'"),
    ("mv", [_f(2, 3, dtype="bool"), _f(3, dtype="bool")], {}, NotImplementedError, "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    ("bmm", [_f(1, 2, 3, dtype="bool"), _f(1, 3, 2, dtype="bool")], {}, NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    ("matmul", [1, _f(3)], {}, TypeError, "matmul(): argument 'input' (position 1) must be Tensor, not int"),
    ("dot", [_f(3), 2], {}, TypeError, "dot(): argument 'tensor' (position 2) must be Tensor, not int"),
]


@pytest.mark.parametrize("op,args,kw,exc,msg", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_match_pytorch(op, args, kw, exc, msg):
    with pytest.raises(exc) as ei:
        getattr(tl, op)(*[_make(tl, a) for a in args], **{k: _make(tl, v) for k, v in kw.items()})
    assert msg in str(ei.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as et:
        getattr(torch, op)(*[_make(torch, a) for a in args], **{k: _make(torch, v) for k, v in kw.items()})
    assert msg in str(et.value)


def test_matmul_operator_with_non_tensor():
    with pytest.raises(TypeError):
        tl.ones(2, 2) @ 2
    with pytest.raises(TypeError):
        2 @ tl.ones(2, 2)


# ---- PyTorch as a second oracle ---------------------------------------------------------------
def test_against_pytorch_values_and_dtypes():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(3)
    cases = [
        ("matmul", [(4, 1, 3, 5), (2, 5, 6)], {}), ("mm", [(5, 7), (7, 3)], {}),
        ("bmm", [(3, 4, 5), (3, 5, 2)], {}), ("addmm", [(3,), (2, 4), (4, 3)], {"beta": 0.5, "alpha": 2}),
        ("baddbmm", [(1, 3), (2, 4, 5), (2, 5, 3)], {"alpha": -1}), ("addbmm", [(4, 3), (2, 4, 5), (2, 5, 3)], {}),
        ("addmv", [(), (4, 5), (5,)], {"beta": 2}), ("inner", [(2, 5), (3, 5)], {}),
        ("tensordot", [(2, 3, 4), (4, 3, 2)], {"dims": ([1, 2], [1, 0])}), ("outer", [(3,), (4,)], {}),
    ]
    for dt in ("float32", "float64", "int32", "float16", "bfloat16"):
        for op, shapes, kw in cases:
            xs = [rng.randint(-3, 4, size=s) for s in shapes]
            mine = getattr(tl, op)(*[tl.tensor(x).to(getattr(tl, dt)) for x in xs], **kw)
            theirs = getattr(torch, op)(*[torch.tensor(x).to(getattr(torch, dt)) for x in xs], **kw)
            assert str(mine.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], (op, dt)
            np.testing.assert_allclose(mine.float().numpy(), theirs.float().numpy(), rtol=1e-2, atol=1e-2)
    for eq, shapes in EINSUM[:20]:
        xs = [rng.randint(-3, 4, size=s) for s in shapes]
        for dt in ("float32", "int64"):
            mine = tl.einsum(eq, *[tl.tensor(x).to(getattr(tl, dt)) for x in xs])
            theirs = torch.einsum(eq, *[torch.tensor(x).to(getattr(torch, dt)) for x in xs])
            assert str(mine.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], eq
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-4)


def test_methods_registered():
    a = tl.tensor(rand((3, 3)))
    for name in ("matmul", "mm", "bmm", "addmm", "addmm_", "addmv", "addmv_", "addbmm",
                 "addbmm_", "baddbmm", "baddbmm_", "dot", "vdot", "mv", "outer", "ger", "inner"):
        assert callable(getattr(a, name)), name
    check(a.matmul(a), ref(a.numpy(), a.numpy()), 3)
    check(a.__rmatmul__(a[0]), ref(a.numpy()[0], a.numpy()), 3)
    assert {"matmul", "mm", "bmm", "einsum", "tensordot", "addmm", "dot"} <= set(tl.__all__)


def test_trace_matches_numpy():
    for shape, dt in (((3, 4), tl.float32), ((5, 2), tl.float64), ((4, 4), tl.int32), ((0, 3), tl.float32)):
        x = tl.arange(int(np.prod(shape)), dtype=dt).view(*shape)
        t = tl.trace(x.t()) if shape[0] == 5 else x.trace()
        ref = np.trace(x.numpy().T if shape[0] == 5 else x.numpy())
        assert t.item() == ref and t.dim() == 0
        assert t.dtype == (tl.int64 if dt == tl.int32 else dt)
    with pytest.raises(RuntimeError, match="expected a matrix"):
        tl.trace(tl.ones(3))


# ---- kron, cross, cdist, dist, vander ------------------------------------------------------------
from helpers import assert_values, make_noncontig, torch_or_skip  # noqa: E402

_KR = np.random.default_rng(99)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,)), ((), (2,)),
                                   ((0, 2), (2, 2))])
def test_kron_matches_numpy(sa, sb):
    a, b = _KR.standard_normal(sa), _KR.standard_normal(sb)
    for (la, ta), (lb, tb) in zip(make_noncontig(a), make_noncontig(b)):
        assert_values(tl.kron(ta, tb), np.kron(a, b), 1e-12, msg=f"{la}/{lb}")
    assert tl.kron(tl.tensor([1, 2]), tl.tensor([1.5])).dtype is tl.float32


def test_cross_matches_numpy():
    a, b = _KR.standard_normal((4, 3)), _KR.standard_normal((1, 3))
    for la, ta in make_noncontig(a):
        assert_values(tl.linalg.cross(ta, tl.tensor(b)), np.cross(a, b), 1e-12, msg=la)
    assert_values(tl.cross(tl.tensor(a.T), tl.tensor(np.ascontiguousarray(np.repeat(b, 4, 0).T)), dim=0),
                  np.cross(a, b).T, 1e-12)
    assert tl.linalg.cross(tl.tensor([[1, 0, 0]]), tl.tensor([[0, 1, 0]])).tolist() == [[0, 0, 1]]
    with pytest.warns(UserWarning, match="without specifying the dim"):
        assert_values(tl.cross(tl.tensor(a.T), tl.tensor(a.T * 2)), np.zeros((3, 4)))
    for call, msg in [(lambda: tl.linalg.cross(tl.ones(4, 3), tl.ones(4, 3), dim=0), "must have length 3"),
                      (lambda: tl.linalg.cross(tl.ones(4, 3), tl.ones(3)), "same number of dimensions"),
                      (lambda: tl.linalg.cross(tl.ones(2, 3), tl.ones(2, 3, dtype=tl.float64)),
                       "expected scalar type Float")]:
        with pytest.raises(RuntimeError, match=msg):
            call()


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_matches_torch(p, mode, threads):
    torch = torch_or_skip()
    x1, x2 = _KR.standard_normal((2, 30, 4)), _KR.standard_normal((1, 6, 4))
    ref = torch.cdist(torch.tensor(x1), torch.tensor(x2), p, mode).numpy()
    for la, ta in make_noncontig(x1):
        assert_values(tl.cdist(ta, tl.tensor(x2), p, mode), ref, 1e-9, 1e-9, msg=la)


def test_cdist_shapes_and_errors():
    assert tl.cdist(tl.zeros(3, 0), tl.zeros(2, 0)).tolist() == [[0.0] * 2] * 3
    assert tuple(tl.cdist(tl.zeros(0, 3), tl.zeros(2, 3)).shape) == (0, 2)
    assert tuple(tl.cdist(tl.ones(2, 3, 4), tl.ones(1, 5, 4)).shape) == (2, 3, 5)
    x = tl.ones(3, 4)
    for call, exc, msg in [(lambda: tl.cdist(x, x, p=-1), RuntimeError, "non-negative p"),
                           (lambda: tl.cdist(x[0], x), RuntimeError, "at least 2D"),
                           (lambda: tl.cdist(x, x[:, :3]), RuntimeError, "same number of columns"),
                           (lambda: tl.cdist(x.long(), x.long()), RuntimeError, "floating-point"),
                           (lambda: tl.cdist(x, x.double()), RuntimeError, "expected scalar type"),
                           (lambda: tl.cdist(x, x, compute_mode="fast"), ValueError, "not a valid"),
                           (lambda: tl.cdist(tl.ones(2, 3, 4), tl.ones(3, 5, 4)), RuntimeError, "match|broadcast|size")]:
        with pytest.raises(exc, match=msg):
            call()


def test_dist_and_vander():
    a, b = _KR.standard_normal((3, 4)), _KR.standard_normal((4,))
    for p in (1, 2, 3.5, float("inf"), 0):
        assert_values(tl.dist(tl.tensor(a), tl.tensor(b), p),
                      np.linalg.norm((a - b).ravel(), p), 1e-12)
    assert tl.dist(tl.tensor(a, dtype=tl.float32), tl.tensor(b)).dtype is tl.float64
    with pytest.raises(RuntimeError, match="floating point"):
        tl.dist(tl.tensor([1, 2]), tl.tensor([1, 2]))
    x = np.array([1.5, -2.0, 0.5, 3.0])
    for N in (None, 0, 1, 3, 6):
        for inc in (False, True):
            assert_values(tl.vander(tl.tensor(x), N, inc), np.vander(x, N, inc), 1e-12)
    assert tl.vander(tl.tensor([1, 2, 3])).tolist() == np.vander([1, 2, 3]).tolist()
    assert tl.vander(tl.tensor([2, 3], dtype=tl.int8), 3).dtype is tl.int64
    assert tl.vander(tl.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    with pytest.raises(RuntimeError, match="one-dimensional"):
        tl.vander(tl.ones(2, 2))
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.vander(tl.ones(2), -1)


def test_addr_matches_numpy():
    a, u, v = rand((3, 4), tl.float64), rand((3,), tl.float64), rand((4,), tl.float64)
    check(tl.addr(tl.tensor(a), tl.tensor(u), tl.tensor(v), beta=0.5, alpha=2),
          0.5 * a + 2 * np.outer(u, v), 1)
    check(tl.tensor(a).addr(tl.tensor(u), tl.tensor(v)), a + np.outer(u, v), 1)
    nan = np.full((3, 4), np.nan)
    check(tl.addr(tl.tensor(nan), tl.tensor(u), tl.tensor(v), beta=0), np.outer(u, v), 1)
    with pytest.raises(RuntimeError, match="1-dimensional"):
        tl.addr(tl.tensor(a), tl.tensor(a), tl.tensor(v))


# ---- matrix norms (composed of the p-norm reduction and the SVD) ----------------------------
def test_matrix_norm_and_linalg_norm():
    a = np.random.randn(2, 3, 4)
    t = tl.tensor(a)
    for ord, ref in (("fro", lambda m, k: np.linalg.norm(m, "fro", axis=(-2, -1), keepdims=k)),
                     (1, lambda m, k: np.linalg.norm(m, 1, axis=(-2, -1), keepdims=k)),
                     (-1, lambda m, k: np.linalg.norm(m, -1, axis=(-2, -1), keepdims=k)),
                     (math.inf, lambda m, k: np.linalg.norm(m, np.inf, axis=(-2, -1), keepdims=k)),
                     (-math.inf, lambda m, k: np.linalg.norm(m, -np.inf, axis=(-2, -1), keepdims=k))):
        for keepdim in (False, True):
            assert_values(LA.matrix_norm(t, ord, keepdim=keepdim), ref(a, keepdim), rtol=1e-12)
        assert_values(LA.matrix_norm(t, ord, dim=(0, 2)),
                      np.linalg.norm(a, ord if ord != "fro" else "fro", axis=(0, 2)), rtol=1e-12)
        assert_values(LA.matrix_norm(t, ord, dim=(2, 0)),
                      np.linalg.norm(a, ord if ord != "fro" else "fro", axis=(2, 0)), rtol=1e-12)
    m = tl.tensor(a[0])
    assert LA.linalg_norm(m).item() == pytest.approx(np.linalg.norm(a[0]))
    assert LA.linalg_norm(m, 1).item() == pytest.approx(np.linalg.norm(a[0], 1))
    assert LA.linalg_norm(m, math.inf).item() == pytest.approx(np.linalg.norm(a[0], np.inf))
    assert_values(LA.linalg_norm(t, 3, dim=1), (np.abs(a) ** 3).sum(1) ** (1 / 3), rtol=1e-12)
    assert_values(LA.linalg_norm(t, dim=(0, 2)), np.linalg.norm(a, axis=(0, 2)), rtol=1e-12)
    assert LA.linalg_norm(t).item() == pytest.approx(np.sqrt((a ** 2).sum()))
    assert LA.linalg_norm(tl.tensor(a[0, 0]), math.inf).item() == pytest.approx(np.abs(a[0, 0]).max())
    for ord in ("nuc", 2, -2):
        assert_values(LA.matrix_norm(t, ord), np.linalg.norm(a, ord, axis=(-2, -1)), rtol=1e-12)
        assert LA.linalg_norm(m, ord).item() == pytest.approx(np.linalg.norm(a[0], ord))
    assert_values(t.norm("nuc"), np.linalg.norm(a, "nuc", axis=(-2, -1)), rtol=1e-12)
    assert t.norm("fro", dim=(1, 2)).shape == (2,)
    assert_values(t.norm(p="fro", dim=1), np.sqrt((a ** 2).sum(1)), rtol=1e-12)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 3, 0)])
@pytest.mark.parametrize("ord", [1, math.inf])
def test_max_matrix_norms_of_empty_matrices_are_zero(shape, ord):
    """The max over no column (row) sums is 0, as in PyTorch; the min (ord -1, -inf) over none
    raises as amin does."""
    t = tl.zeros(shape, dtype=tl.float64, requires_grad=True)
    r = LA.matrix_norm(t, ord)
    assert r.shape == shape[:-2] and np.all(r.detach().numpy() == 0)
    r.sum().backward()
    assert t.grad.shape == shape
    k = LA.matrix_norm(t, ord, keepdim=True)
    assert k.shape == shape[:-2] + (1, 1)
    empty_dim = 1 if ord == 1 else 0          # the dim the max runs over
    if shape[len(shape) - 2 + empty_dim] == 0:
        with pytest.raises(IndexError, match="amin"):
            LA.matrix_norm(t, -ord)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mnk", [(32, 1024, 256), (7, 77, 300), (64, 130, 513), (5, 2, 3),
                                 (1, 40, 9), (9, 1, 30)])
def test_prepacked_right_operand_gives_the_same_bits(isa, threads, dtype, mnk):
    """bmm(..., packed=pack_b(b)): b's panels packed once (for an RNN's steps) give exactly
    the unpacked product -- every block of k and n, both layouts of b, the thread split --
    and a PackedB that no longer matches (another b shape, another ISA level) is ignored."""
    m, n, k = mnk
    a, b = rand((m, k), dtype), rand((k, n), dtype)
    A = tl.tensor(a)._data
    for B in (tl.tensor(b)._data, layout(b, "T")._data):
        pk = _mm.pack_b(B)
        assert pk is not None and pk.matches(B)
        got = _mm.bmm(A, B, None, 1, 0, "mm", pk)
        plain = _mm.bmm(A, B, None, 1, 0, "mm")
        np.testing.assert_array_equal(LA._wrap(got).numpy(), LA._wrap(plain).numpy())
        check(LA._wrap(got), ref(a, b), k)
        c = rand((m, n), dtype)
        acc = tl.tensor(c)._data
        _mm.bmm(A, B, acc, 1, 1, "addmm", pk)
        check(LA._wrap(acc), ref(a, b) + c.astype(np.float64), k)
    other = _mm.pack_b(tl.tensor(rand((k, n + 1), dtype))._data)
    assert not other.matches(B)
    same_shape = tl.tensor(rand((k, n), dtype))._data      # another matrix of b's shape
    assert not pk.matches(same_shape)
    np.testing.assert_array_equal(
        LA._wrap(_mm.bmm(A, same_shape, None, 1, 0, "mm", pk)).numpy(),
        LA._wrap(_mm.bmm(A, same_shape, None, 1, 0, "mm")).numpy())
    np.testing.assert_array_equal(LA._wrap(_mm.bmm(A, B, None, 1, 0, "mm", other)).numpy(),
                                  LA._wrap(_mm.bmm(A, B, None, 1, 0, "mm")).numpy())
    if isa != CPU_LEVEL or CPU_LEVEL == 0:
        return
    _mm.set_isa_level(0)                          # panels packed for another kernel
    try:
        assert not pk.matches(B)
        np.testing.assert_array_equal(LA._wrap(_mm.bmm(A, B, None, 1, 0, "mm", pk)).numpy(),
                                      LA._wrap(_mm.bmm(A, B, None, 1, 0, "mm")).numpy())
    finally:
        _mm.set_isa_level(isa)


def test_pack_b_has_no_packed_form_for_other_dtypes():
    assert _mm.pack_b(tl.ones(3, 4, dtype=tl.int32)._data) is None
    assert _mm.pack_b(tl.ones(0, 4)._data) is None
    assert _mm.pack_b(tl.ones(2, 3, 4)._data) is None


# ---- strided operands: packing through any strides (kernels/gemm_kernel.h pack_block) ------
def strided_operand(buf, shape, strides, offset):
    """A torchlite view of the float buffer `buf` with these element strides (0 and
    overlapping ones included), and the NumPy array it holds."""
    view = np.lib.stride_tricks.as_strided(buf[offset:], shape, [s * buf.itemsize for s in strides])
    return tl.tensor(buf).as_strided(shape, strides, offset), np.array(view)


def attention_heads(dtype, rng, T=64, B=32, E=128, H=4):
    """q, k, v as multi_head_attention_forward folds a (T, B, 3E) projection's heads into a
    (B*H, T, E/H) batch (each head's rows B*E elements apart: 16 KB for float32 here), from
    the projection as it is and from its slices reshaped (the issue's reproduction)."""
    proj = rng.standard_normal((T, B, 3 * E)).astype(NP[dtype])
    packed = np.ascontiguousarray(proj.reshape(T, B, 3, E).transpose(2, 0, 1, 3))
    t = tl.tensor(packed)
    heads = [t[i].view(T, B * H, E // H).transpose(0, 1) for i in range(3)]
    sliced = tl.tensor(proj)[..., 2 * E:].reshape(T, B * H, E // H).transpose(0, 1)
    return heads, sliced


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_attention_head_layouts(isa, threads, dtype):
    """The six products of an attention layer's forward and backward on the head views
    (strides (32, 4096, 1) and their transposes), with the scale and mask of the scores'
    baddbmm: equal to NumPy, and bit for bit equal to the same products on contiguous copies
    (packing only moves values, it never changes the order of the sums)."""
    rng = np.random.default_rng(5)
    (q, k, v), v2 = attention_heads(dtype, rng)
    assert q.stride() == (32, 4096, 1) and v2.stride() == (32, 4096, 1)
    BH, T, D = q.shape
    p = tl.tensor(rng.standard_normal((BH, T, T)).astype(NP[dtype]))
    g = tl.tensor(rng.standard_normal((T, BH, D)).astype(NP[dtype])).transpose(0, 1)
    for a, b in [(q, k.transpose(1, 2)), (p, v), (p, v2), (g, v.transpose(1, 2)),
                 (p.transpose(1, 2), g), (p, k), (q.transpose(1, 2), p)]:
        an, bn = a.numpy(), b.numpy()
        got = tl.bmm(a, b)
        check(got, ref(an, bn), an.shape[-1])
        np.testing.assert_array_equal(got.numpy(), tl.bmm(a.contiguous(), b.contiguous()).numpy())
    qn, ktn = q.numpy(), k.transpose(1, 2).numpy()
    mask = np.triu(np.full((T, T), -1e4), 1).astype(NP[dtype])[None]      # broadcast batch
    scale = 1 / math.sqrt(D)
    got = tl.baddbmm(tl.tensor(mask), q, k.transpose(1, 2), alpha=scale)
    check(got, mask + scale * ref(qn, ktn), D,
          magnitude=scale * ref(np.abs(qn), np.abs(ktn)) + np.abs(mask))
    np.testing.assert_array_equal(
        got.numpy(), tl.baddbmm(tl.tensor(mask), q.contiguous(), k.transpose(1, 2).contiguous(),
                                alpha=scale).numpy())
    got = tl.baddbmm(tl.zeros((), dtype=dtype), q, k.transpose(1, 2), beta=0, alpha=scale)
    check(got, scale * ref(qn, ktn), D)


# m, n, k around the panel widths (MR 4/6/8, NR 8/16/24/48 over the ISA levels and dtypes),
# the 64-element packing groups, the 8x8 and 4x4 transposes and the KC = 256 depth
PACK_SIZES = [(2, 2, 1), (7, 9, 5), (8, 8, 8), (9, 17, 31), (24, 23, 33), (25, 47, 64),
              (6, 48, 7), (47, 49, 16), (64, 63, 9), (65, 65, 40), (13, 97, 257), (130, 33, 12)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_products_on_every_stride_pattern(isa, threads, dtype):
    """Each operand with its rows contiguous (row-major B, transposed A), its k contiguous,
    neither (both strides > 1, either the larger), a power-of-two stride of 2048 elements (a
    whole number of L1 ways), rows or k broadcast (stride 0), and a batch whose stride is
    odd, zero or smaller than the matrices' own: all equal to NumPy's float64 product."""
    rng = np.random.default_rng(7)
    big = 2048
    for m, n, k in PACK_SIZES:
        need = 3 + 2 * (max(m, n, k) * big + 3 * max(m, n, k) * 3) + 8
        buf = rng.standard_normal(need).astype(NP[dtype])

        def kinds(rows, cols):
            """(row stride, column stride) patterns of a rows x cols matrix."""
            return [(1, big), (big, 1), (3, cols * 3 + 1), (rows * 2 + 1, 2), (0, 1), (cols, 0),
                    (cols, 1), (1, rows)]

        for sa in kinds(m, k):
            for sb in kinds(k, n):
                for bs in (5, 0, 2):             # batch strides: odd, broadcast, overlapping
                    a, an = strided_operand(buf, (2, m, k), (bs,) + sa, 3)
                    b, bn = strided_operand(buf, (2, k, n), (bs + 1,) + sb, 1)
                    check(tl.bmm(a, b), ref(an, bn), k, magnitude=ref(np.abs(an), np.abs(bn)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_add_forms_with_strided_operands(isa, threads, dtype):
    """alpha, beta and the addend of addmm/baddbmm over operands that take the strided
    packing paths: a head-like B (row stride 4096, fewer columns than a panel), a transposed
    A, and a broadcast addend."""
    rng = np.random.default_rng(9)
    buf = rng.standard_normal(64 * 4096 + 64).astype(NP[dtype])
    b, bn = strided_operand(buf, (3, 40, 30), (32, 4096, 1), 5)
    a, an = strided_operand(buf, (3, 20, 40), (7, 1, 4096), 2)
    c = rng.standard_normal((1, 20, 30)).astype(NP[dtype])
    check(tl.baddbmm(tl.tensor(c), a, b, beta=0.5, alpha=-1.5), 0.5 * c + -1.5 * ref(an, bn), 40,
          magnitude=ref(np.abs(an), np.abs(bn)) + np.abs(c))
    out = tl.tensor(rng.standard_normal((3, 20, 30)).astype(NP[dtype]))
    expected = 2 * out.numpy().astype(np.float64) + 0.25 * ref(an, bn)
    tl.baddbmm(out, a, b, beta=2, alpha=0.25, out=out)
    check(out, expected, 40, magnitude=ref(np.abs(an), np.abs(bn)) + np.abs(expected))
    check(tl.addmm(tl.tensor(c[0, 0]), a[1], b[2], beta=-1), -c[0, 0] + ref(an[1], bn[2]), 40,
          magnitude=ref(np.abs(an[1]), np.abs(bn[2])) + np.abs(c[0, 0]))


def test_large_power_of_two_row_stride():
    """Rows 64K elements (256 KB) apart, on both operands, for the products with
    and without a transpose."""
    rng = np.random.default_rng(11)
    buf = rng.standard_normal(40 * 65536 + 64).astype(np.float32)
    a, an = strided_operand(buf, (40, 50), (65536, 1), 0)
    b, bn = strided_operand(buf, (40, 30), (65536, 1), 7)
    check(tl.mm(a.t(), b), ref(an.T, bn), 40)
    check(tl.mm(a[:, :30], b.t()), ref(an[:, :30], bn.T), 30)
    check(tl.mm(b.t(), a), ref(bn.T, an), 40)
