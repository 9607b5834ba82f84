"""sort, argsort, msort, topk, kthvalue, unique, unique_consecutive, searchsorted, bucketize
and isin against NumPy (and PyTorch, where installed, for NaN order and return types)."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl

from helpers import DTYPE_NAMES, NP_DTYPE, tensor_of, to_numpy

FLOATS = ("float16", "bfloat16", "float32", "float64")


# ---- helpers -------------------------------------------------------------------------------
def data(shape, dtype, rng, ties=True, special=True):
    """Random values of dtype; with `ties` drawn from a small range so equal elements occur;
    with `special`, floats include NaN, +-inf, +-0.0."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in FLOATS:
        x = rng.standard_normal(n) * 10
        if ties:
            x = np.round(x)
        if special and n:
            pick = rng.integers(0, n, size=max(1, n // 8))
            x[pick] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, -np.nan], size=len(pick))
        return x.reshape(shape)
    info = np.iinfo(NP_DTYPE[dtype])
    lo, hi = (-5, 6) if ties else (info.min, info.max)
    lo = max(lo, info.min)
    return rng.integers(lo, hi, n, dtype=np.int64 if dtype != "uint8" else np.uint64,
                        endpoint=not ties).astype(NP_DTYPE[dtype]).reshape(shape)


def layouts(a, dtype):
    """(name, tensor) pairs holding a's values: contiguous, transposed, stepped, offset."""
    yield "contiguous", tensor_of(a, dtype)
    if a.ndim >= 2:
        swapped = tensor_of(np.ascontiguousarray(np.swapaxes(a, 0, -1)), dtype)
        yield "transposed", swapped.transpose(0, -1)
    if a.ndim >= 1:
        big = np.repeat(a, 2, axis=-1)
        yield "stepped", tensor_of(big, dtype)[..., ::2]
        pad = np.concatenate([a[..., :1], a], axis=-1) if a.shape[-1] else a
        yield "offset", tensor_of(pad, dtype)[..., 1:] if a.shape[-1] else tensor_of(a, dtype)


def np_sort(x, dim, descending):
    """Stable sort along dim with PyTorch's order (NaN largest); returns (values, indices)."""
    x = np.moveaxis(x, dim, -1)
    if descending:      # the reverse of a stable ascending sort of the reversed row
        idx = x.shape[-1] - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        idx = np.argsort(x, axis=-1, kind="stable")
    vals = np.take_along_axis(x, idx, -1)
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


def assert_same(got, want, signed_zero=True):
    """Equal values, NaN where NaN, and (unless signed_zero is False) the same sign of zero."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f" and signed_zero:
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def check_sort(t, dim, descending):
    x = to_numpy(t)
    v, i = tl.sort(t, dim, descending)
    want_v, want_i = np_sort(x, dim, descending)
    assert v.dtype is t.dtype and i.dtype is tl.int64
    assert_same(to_numpy(v), want_v)
    assert_same(i.numpy(), want_i)


# ---- sort ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_sort_every_dtype_and_layout(dtype, threads):
    rng = np.random.default_rng(1)
    for shape in [(7,), (3, 40), (2, 5, 33)]:
        a = data(shape, dtype, rng)
        for _, t in layouts(a, dtype):
            for dim in range(-t.ndim, t.ndim):
                for desc in (False, True):
                    check_sort(t, dim, desc)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_sort_long_rows_radix(dtype, threads):
    # 70000 elements take the 11-bit radix path; full-range integers use every key bit, and
    # int64/float64 keys spanning more than 2^32 use the 16-byte items
    rng = np.random.default_rng(2)
    for ties in (True, False):
        a = data((70000,), dtype, rng, ties=ties)
        for desc in (False, True):
            check_sort(tensor_of(a, dtype), 0, desc)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8"])
def test_sort_many_rows_parallel(dtype, threads):
    rng = np.random.default_rng(3)
    a = data((96, 700), dtype, rng, ties=False)
    t = tensor_of(a, dtype)
    check_sort(t, 1, False)
    check_sort(t, 0, True)          # strided rows


def test_sort_expanded_and_edge_shapes():
    rng = np.random.default_rng(4)
    row = tensor_of(data((1, 9), "float32", rng), "float32")
    check_sort(row.expand(4, 9), 1, False)
    check_sort(row.expand(4, 9), 0, False)          # every element of a row is equal
    for shape in [(0,), (3, 0), (0, 4), (1,), (1, 1), (5, 1)]:
        t = tensor_of(data(shape, "int32", rng), "int32")
        for dim in range(t.ndim):
            check_sort(t, dim, True)


def test_sort_0d():
    v, i = tl.sort(tl.tensor(3.5))
    assert v.shape == () and i.shape == () and v.item() == 3.5 and i.item() == 0
    v, i = tl.tensor(2).sort(0, True)
    assert v.item() == 2 and i.item() == 0


def test_sort_patterns_already_sorted_reversed_equal():
    n = 5000
    for a in (np.arange(n), np.arange(n)[::-1].copy(), np.zeros(n), np.arange(n) % 7,
              np.concatenate([np.arange(n // 2), np.arange(n // 2)[::-1]])):
        check_sort(tensor_of(a, "float32"), 0, False)
        check_sort(tensor_of(a, "int64"), 0, True)


def test_sort_nan_and_signed_zero_order_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.array([3., np.nan, -0.0, 0.0, -np.nan, np.inf, 1., -np.inf, 0.0, -0.0], np.float32)
    for desc in (False, True):
        v, i = tl.sort(tl.tensor(x), descending=desc, stable=True)
        tv, ti = torch.sort(torch.tensor(x), descending=desc, stable=True)
        assert_same(v.numpy(), tv.numpy())
        assert_same(i.numpy(), ti.numpy())


def test_sort_return_type_and_out():
    t = tl.tensor([[3, 1, 2], [0, 5, 4]])
    r = tl.sort(t, dim=1)
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    values, indices = r
    assert values is r.values and indices is r[1]
    assert "return_types.sort(" in repr(r) and "indices=tensor(" in repr(r)
    r2 = pickle.loads(pickle.dumps(r))
    assert type(r2) is type(r)
    assert_same(r2.values.numpy(), r.values.numpy())
    ov, oi = tl.empty(0, dtype=tl.int64), tl.empty(0, dtype=tl.int64)
    res = tl.sort(t, 1, True, out=(ov, oi))
    assert res.values is ov and res.indices is oi
    assert_same(ov.numpy(), np_sort(t.numpy(), 1, True)[0])
    with pytest.raises(RuntimeError, match="dtype"):
        tl.sort(t, out=(tl.empty(0), tl.empty(0, dtype=tl.int64)))


def test_sort_return_type_fields_match_torch():
    torch = pytest.importorskip("torch")
    for name, call in [("sort", lambda m, x: m.sort(x)), ("topk", lambda m, x: m.topk(x, 2)),
                       ("kthvalue", lambda m, x: m.kthvalue(x, 2))]:
        mine = call(tl, tl.tensor([3., 1., 2.]))
        theirs = call(torch, torch.tensor([3., 1., 2.]))
        assert type(mine).__name__ == type(theirs).__name__ == name
        assert mine._fields == tuple(f for f in ("values", "indices"))
        assert_same(mine.values.numpy(), theirs.values.numpy())


def test_argsort_and_msort():
    rng = np.random.default_rng(5)
    a = data((6, 50), "float32", rng)
    t = tl.tensor(a)
    assert_same(tl.argsort(t).numpy(), np_sort(a, -1, False)[1])
    assert_same(t.argsort(dim=0, descending=True).numpy(), np_sort(a, 0, True)[1])
    assert_same(tl.argsort(t, stable=True, dim=1).numpy(), np_sort(a, 1, False)[1])
    assert_same(tl.msort(t).numpy(), np_sort(a, 0, False)[0])
    assert_same(t.msort().numpy(), np_sort(a, 0, False)[0])


def test_sort_errors():
    t = tl.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.sort(t, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.sort(tl.tensor(1.), 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.argsort(t, -3)
    with pytest.raises(TypeError, match="Tensor"):
        tl.sort([3, 1, 2])


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3), seed=st.integers(0, 2**31),
       dtype=st.sampled_from(["int16", "float32", "float64", "bfloat16"]), desc=st.booleans(),
       perm=st.booleans(), step=st.integers(1, 3))
def test_sort_hypothesis_shapes_strides(shape, seed, dtype, desc, perm, step):
    rng = np.random.default_rng(seed)
    a = data(tuple(shape[:-1]) + (shape[-1] * step,), dtype, rng)
    t = tensor_of(a, dtype)[..., ::step]
    if perm and t.ndim >= 2:
        t = t.transpose(0, -1)
    dim = int(rng.integers(-t.ndim, t.ndim))
    check_sort(t, dim, desc)


# ---- topk ----------------------------------------------------------------------------------
def check_topk(t, k, dim, largest):
    x = to_numpy(t)
    v, i = tl.topk(t, k, dim, largest)
    want_v, want_i = np_sort(x, dim, largest)
    take = [slice(None)] * x.ndim
    take[dim] = slice(0, k)
    assert_same(to_numpy(v), want_v[tuple(take)])
    assert_same(i.numpy(), want_i[tuple(take)])      # ties go to the lower index


@pytest.mark.parametrize("dtype", [d for d in DTYPE_NAMES if d != "bool"])
def test_topk_every_dtype(dtype, threads):
    rng = np.random.default_rng(6)
    a = data((5, 300), dtype, rng)
    for _, t in layouts(a, dtype):
        for k in (0, 1, 3, 17, 150, 300):
            for largest in (True, False):
                check_topk(t, k, 1, largest)
        check_topk(t, 2, 0, True)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "int8"])
def test_topk_heap_and_select_paths(dtype, threads):
    # small k against a long row keeps a heap; large k selects; both must agree with a sort
    rng = np.random.default_rng(7)
    for ties in (True, False):
        t = tensor_of(data((3, 20000), dtype, rng, ties=ties), dtype)
        for k in (1, 5, 200, 1500, 19999, 20000):
            check_topk(t, k, 1, True)
        check_topk(t, 300, 1, False)


def test_topk_sorted_false_and_0d_and_out():
    t = tl.tensor([1, 9, 3, 7, 5])
    v, i = tl.topk(t, 3, sorted=False)
    assert sorted(v.tolist()) == [5, 7, 9]
    assert [t.tolist()[j] for j in i.tolist()] == v.tolist()
    v, i = tl.topk(tl.tensor(2.5), 1)
    assert v.shape == () and v.item() == 2.5 and i.item() == 0
    v, i = tl.topk(tl.tensor(2.5), 0)           # PyTorch gives the scalar for k = 0 too
    assert v.shape == () and v.item() == 2.5 and i.item() == 0
    ov, oi = tl.empty(0, dtype=tl.int64), tl.empty(0, dtype=tl.int64)
    tl.topk(t, 2, out=(ov, oi))
    assert ov.tolist() == [9, 7] and oi.tolist() == [1, 3]


def test_topk_nan_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.array([3., np.nan, -0.0, np.inf, 1., np.nan, -np.inf], np.float32)
    for largest in (True, False):
        for k in range(len(x) + 1):
            v = tl.topk(tl.tensor(x), k, largest=largest).values
            tv = torch.topk(torch.tensor(x), k, largest=largest).values
            np.testing.assert_array_equal(v.numpy(), tv.numpy())


def test_topk_errors():
    t = tl.ones(2, 3)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tl.topk(t, 4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tl.topk(t, -1)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tl.topk(tl.tensor(1.), 2)
    with pytest.raises(RuntimeError, match="bool"):
        tl.topk(tl.tensor([True, False]), 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.topk(t, 1, dim=2)
    with pytest.raises(TypeError, match="k"):
        tl.topk(t, 1.5)


# ---- kthvalue ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [d for d in DTYPE_NAMES if d != "bool"])
def test_kthvalue(dtype, threads):
    rng = np.random.default_rng(8)
    a = data((4, 2000), dtype, rng)
    for _, t in layouts(a, dtype):
        x = to_numpy(t)
        srt = np_sort(x, 1, False)[0]
        for k in (1, 2, 1000, 2000):
            v, i = tl.kthvalue(t, k, 1)
            assert v.shape == (4,) and i.shape == (4,)
            assert_same(to_numpy(v), srt[:, k - 1])
            picked = np.take_along_axis(x, i.numpy()[:, None], 1)[:, 0]
            np.testing.assert_array_equal(picked, srt[:, k - 1])
        v, i = t.kthvalue(3, 0, keepdim=True)
        assert v.shape == (1, 2000)
        assert_same(to_numpy(v)[0], np_sort(x, 0, False)[0][2])


def test_kthvalue_0d_and_errors():
    v, i = tl.kthvalue(tl.tensor(4.), 1)
    assert v.shape == () and v.item() == 4.0 and i.item() == 0
    t = tl.tensor([3., 1., 2.])
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        tl.kthvalue(t, 0)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        tl.kthvalue(t, 4)
    with pytest.raises(IndexError, match="non-zero size"):
        tl.kthvalue(tl.ones(0), 1)
    with pytest.raises(NotImplementedError, match="Bool"):
        tl.kthvalue(tl.tensor([True]), 1)


# ---- mode ------------------------------------------------------------------------------------
def _np_mode_row(row):
    """The most frequent value (the smallest of several; each NaN counts once, as NaN equals
    nothing, and sorts after every number) and the last index where it occurs."""
    items = row.tolist()
    cands = [(items.count(v), v, max(j for j, x in enumerate(items) if x == v))
             for v in sorted({v for v in items if v == v})]
    cands += [(1, float("nan"), j) for j, x in enumerate(items) if x != x]
    top = max(c[0] for c in cands)
    _, value, last = next(c for c in cands if c[0] == top)
    return value, last


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32", "float64", "bool"])
def test_mode_against_a_count(dtype, threads):
    rng = np.random.default_rng(21)
    for shape, dim in (((5, 40), 1), ((40, 3), 0), ((3, 4, 7), -1), ((6,), 0)):
        a = rng.integers(0, 2 if dtype == "bool" else 5, size=shape).astype(NP_DTYPE[dtype])
        if dtype.startswith("float"):
            a.flat[rng.integers(0, a.size, 3)] = np.nan
        v, i = tl.mode(tensor_of(a, dtype), dim)
        moved = np.moveaxis(a, dim, -1).reshape(-1, a.shape[dim])
        want = [_np_mode_row(r) for r in moved]
        out_shape = np.moveaxis(a, dim, -1).shape[:-1]
        np.testing.assert_array_equal(to_numpy(v).reshape(-1), np.array([w[0] for w in want], dtype=a.dtype))
        np.testing.assert_array_equal(i.numpy().reshape(-1), [w[1] for w in want])
        assert v.shape == out_shape and i.dtype == tl.int64
        vk, ik = tl.mode(tensor_of(a, dtype), dim, keepdim=True)
        assert vk.shape == tuple(1 if d == dim % a.ndim else s for d, s in enumerate(a.shape))


def test_mode_0d_errors_grad_and_torch():
    v, i = tl.mode(tl.tensor(4.))
    assert v.item() == 4.0 and i.item() == 0 and v.shape == ()
    with pytest.raises(IndexError, match="non-zero size"):
        tl.mode(tl.ones(2, 0), 1)
    x = tl.tensor([[1., 2., 2.], [3., 3., 1.]], requires_grad=True)
    v, i = x.mode(1)
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 1], [0, 1, 0]])
    assert type(v.grad_fn).__name__ == "ModeBackward0"
    o = (tl.empty(2), tl.empty(2, dtype=tl.int64))
    assert tl.mode(x.detach(), 1, out=o)[0] is o[0]
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).integers(0, 4, size=(6, 9))
    t, m = torch.mode(torch.from_numpy(a), 1), tl.mode(tl.from_numpy(a), 1)
    np.testing.assert_array_equal(m.values.numpy(), t.values.numpy())
    np.testing.assert_array_equal(m.indices.numpy(), t.indices.numpy())   # short rows: the last


# ---- unique --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_unique_flat(dtype, threads):
    rng = np.random.default_rng(9)
    a = data((6, 50), dtype, rng, special=False)
    for _, t in layouts(a, dtype):
        x = to_numpy(t)
        want, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
        assert_same(to_numpy(tl.unique(t)), want, False)
        u, i, c = tl.unique(t, return_inverse=True, return_counts=True)
        assert_same(to_numpy(u), want, False)
        assert_same(i.numpy(), inv.reshape(x.shape))
        assert_same(c.numpy(), cnt)
        u, c = t.unique(sorted=False, return_counts=True)
        assert_same(to_numpy(u), want, False)


def test_unique_nan_and_zero_match_torch():
    torch = pytest.importorskip("torch")
    x = np.array([np.nan, 1., np.nan, 1., -0.0, 0.0, 2., np.nan], np.float32)
    for fn in ("unique", "unique_consecutive"):
        mine = getattr(tl, fn)(tl.tensor(x), return_inverse=True, return_counts=True)
        theirs = getattr(torch, fn)(torch.tensor(x), return_inverse=True, return_counts=True)
        for m, t in zip(mine, theirs):
            assert_same(m.numpy(), t.numpy())


def test_unique_0d_empty_and_return_forms():
    u, inv = tl.unique(tl.tensor(5), return_inverse=True)
    assert u.tolist() == [5] and inv.shape == () and inv.item() == 0
    u, inv, c = tl.unique(tl.ones(0, 3), return_inverse=True, return_counts=True)
    assert u.shape == (0,) and inv.shape == (0, 3) and c.shape == (0,)
    assert isinstance(tl.unique(tl.tensor([1, 1])), tl.Tensor)
    assert len(tl.unique(tl.tensor([1, 1]), return_counts=True)) == 2


@pytest.mark.parametrize("dtype", ["int64", "float32", "uint8", "bfloat16"])
def test_unique_dim(dtype):
    rng = np.random.default_rng(10)
    base = data((4, 3), dtype, rng, special=False)
    a = np.concatenate([base, base[[2, 0]], base[[1]]], 0)       # repeated rows
    a = a[rng.permutation(len(a))]
    t = tensor_of(a, dtype)
    x = to_numpy(t)
    for tt, xx, dim in ((t, x, 0), (t.t(), x.T, 1)):
        want, inv, cnt = np.unique(xx, axis=dim, return_inverse=True, return_counts=True)
        u, i, c = tl.unique(tt, dim=dim, return_inverse=True, return_counts=True)
        assert_same(to_numpy(u), want, False)
        assert_same(i.numpy(), inv.reshape(-1))
        assert_same(c.numpy(), cnt)
    three = tensor_of(np.stack([a, a[::-1]], 2), dtype)
    want = np.unique(to_numpy(three), axis=1)
    assert_same(to_numpy(tl.unique(three, dim=1)), want, False)
    assert_same(to_numpy(tl.unique(three, dim=-1)), np.unique(to_numpy(three), axis=-1), False)


def test_unique_dim_edge_cases():
    u = tl.unique(tl.ones(0, 3), dim=0)
    assert u.shape == (0, 3)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        tl.unique(tl.ones(0, 3), dim=1)
    with pytest.raises(IndexError):
        tl.unique(tl.ones(2, 3), dim=2)


def _np_runs(x):
    """(values, inverse, counts) of runs of equal neighbours, by ==."""
    x = x.reshape(-1)
    if x.size == 0:
        return x, np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.concatenate([[0], np.nonzero(x[1:] != x[:-1])[0] + 1])
    counts = np.diff(np.concatenate([starts, [x.size]]))
    return x[starts], np.repeat(np.arange(len(starts)), counts), counts


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_unique_consecutive(dtype):
    rng = np.random.default_rng(11)
    a = np.repeat(data((40,), dtype, rng), rng.integers(1, 4, 40))
    t = tensor_of(a, dtype)
    x = to_numpy(t)
    want, inv, cnt = _np_runs(x)
    u, i, c = tl.unique_consecutive(t, return_inverse=True, return_counts=True)
    assert_same(to_numpy(u), want)
    assert_same(i.numpy(), inv)
    assert_same(c.numpy(), cnt)
    assert_same(to_numpy(t.unsqueeze(0).unique_consecutive()), want)


def test_unique_consecutive_dim():
    rng = np.random.default_rng(12)
    rows = rng.integers(0, 3, (8, 2))
    a = np.repeat(rows, rng.integers(1, 3, 8), axis=0)
    t = tl.tensor(a)
    keep = np.concatenate([[True], np.any(a[1:] != a[:-1], axis=1)])
    u, i, c = tl.unique_consecutive(t, return_inverse=True, return_counts=True, dim=0)
    assert_same(u.numpy(), a[keep])
    assert_same(i.numpy(), np.cumsum(keep) - 1)
    assert_same(c.numpy(), np.bincount(np.cumsum(keep) - 1))
    assert_same(tl.unique_consecutive(t.t(), dim=1).numpy(), a[keep].T)


# ---- searchsorted, bucketize, isin -----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_searchsorted_1d(dtype, threads):
    rng = np.random.default_rng(13)
    b = np.sort(data((60,), dtype, rng, special=False))
    bt = tensor_of(b, dtype)
    bnp = to_numpy(bt)
    v = np.concatenate([data((4991,), dtype, rng, special=False), bnp[::7]])
    vt = tensor_of(v, dtype)
    vnp = to_numpy(vt)
    for right in (False, True):
        want = np.searchsorted(bnp, vnp, side="right" if right else "left")
        got = tl.searchsorted(bt, vt, right=right)
        assert got.dtype is tl.int64
        assert_same(got.numpy(), want)
        got = tl.searchsorted(bt, vt.reshape(50, -1), side="right" if right else "left",
                              out_int32=True)
        assert got.dtype is tl.int32
        assert_same(got.numpy(), want.reshape(50, -1))


def test_searchsorted_batched_sorter_promotion_scalars():
    rng = np.random.default_rng(14)
    b = np.sort(rng.integers(0, 20, (3, 4, 9)), axis=-1)
    v = rng.standard_normal((3, 4, 6)) * 10
    got = tl.searchsorted(tl.tensor(b), tl.tensor(v, dtype=tl.float32), right=True)
    want = np.stack([[np.searchsorted(b[i, j], v.astype(np.float32)[i, j], "right")
                      for j in range(4)] for i in range(3)])
    assert_same(got.numpy(), want)
    # non-contiguous boundaries and values
    bt = tl.tensor(np.ascontiguousarray(b.transpose(2, 1, 0))).permute(2, 1, 0)
    assert_same(tl.searchsorted(bt, tl.tensor(v, dtype=tl.float32), right=True).numpy(), want)
    raw = rng.standard_normal(30)
    srt = np.argsort(raw)
    vals = rng.standard_normal(100)
    got = tl.searchsorted(tl.tensor(raw), tl.tensor(vals), sorter=tl.tensor(srt))
    assert_same(got.numpy(), np.searchsorted(raw, vals, sorter=srt))
    r = tl.searchsorted(tl.tensor([1., 2., 3.]), 2)
    assert r.shape == () and r.item() == 1
    assert tl.searchsorted(tl.tensor([1., 2., 3.]), 2.5, right=True).item() == 2
    assert tl.searchsorted(tl.ones(0), tl.tensor([1., 2.])).tolist() == [0, 0]
    assert tl.searchsorted(tl.tensor([1., 2.]), tl.ones(0)).shape == (0,)


def test_searchsorted_nan_matches_torch():
    torch = pytest.importorskip("torch")
    b = np.array([1., 2., 2., 3., np.nan], np.float32)
    v = np.array([np.nan, 2., 0., 5., -np.nan, 3.], np.float32)
    for right in (False, True):
        got = tl.searchsorted(tl.tensor(b), tl.tensor(v), right=right)
        want = torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right)
        assert_same(got.numpy(), want.numpy())


def test_searchsorted_errors():
    b = tl.tensor([1., 2., 3.])
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        tl.searchsorted(b, b, side="middle")
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        tl.searchsorted(b, b, side="left", right=True)
    with pytest.raises(RuntimeError, match="positive dimension"):
        tl.searchsorted(tl.tensor(1.), b)
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        tl.searchsorted(tl.ones(2, 3), tl.ones(3, 3))
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        tl.searchsorted(tl.ones(2, 3), tl.ones(5))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        tl.searchsorted(b, b, sorter=tl.tensor([0, 1, 3]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        tl.searchsorted(b, b, sorter=tl.tensor([0, -1, 2]))
    with pytest.raises(RuntimeError, match="same size"):
        tl.searchsorted(b, b, sorter=tl.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="long"):
        tl.searchsorted(b, b, sorter=tl.tensor([0, 1, 2], dtype=tl.int32))


def test_bucketize():
    rng = np.random.default_rng(15)
    bounds = np.array([1, 3, 5, 7, 9])
    x = rng.integers(0, 11, (4, 5))
    for right in (False, True):
        got = tl.bucketize(tl.tensor(x), tl.tensor(bounds), right=right)
        assert_same(got.numpy(), np.searchsorted(bounds, x, side="right" if right else "left"))
    assert tl.bucketize(3, tl.tensor(bounds)).item() == 1
    assert tl.bucketize(tl.tensor(x), tl.tensor(bounds), out_int32=True).dtype is tl.int32
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        tl.bucketize(tl.tensor(x), tl.tensor(bounds).reshape(1, -1))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_isin(dtype):
    rng = np.random.default_rng(16)
    e = tensor_of(data((7, 9), dtype, rng), dtype)
    tst = tensor_of(data((11,), dtype, rng), dtype)
    x, y = to_numpy(e), to_numpy(tst)
    for invert in (False, True):
        got = tl.isin(e, tst, invert=invert)
        assert got.dtype is tl.bool
        assert_same(got.numpy(), np.isin(x, y, invert=invert))     # NaN equals nothing


def test_isin_promotion_scalars_nan():
    assert tl.isin(tl.tensor([1, 2, 3]), tl.tensor([2.5, 3.0])).tolist() == [False, False, True]
    assert tl.isin(tl.tensor([1, 2, 3]), 2).tolist() == [False, True, False]
    r = tl.isin(2, tl.tensor([1, 2, 3]))
    assert r.shape == () and r.item() is True
    x = tl.tensor([1., np.nan, 2., -0.0])
    assert tl.isin(x, tl.tensor([np.nan, 0.0, 2.])).tolist() == [False, False, True, True]
    assert tl.isin(x[::2], tl.ones(0)).tolist() == [False, False]
    with pytest.raises(TypeError):
        tl.isin(1, 2)


def test_isin_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(17)
    a = data((50,), "float32", rng)
    b = data((20,), "float32", rng)
    np.testing.assert_array_equal(tl.isin(tl.tensor(a), tl.tensor(b)).numpy(),
                                  torch.isin(torch.tensor(a), torch.tensor(b)).numpy())


def _quickselect_killer(n, k):
    """Values on which the kernel's quickselect (median of 3, branch-free Lomuto partition;
    mirrored here step by step) makes no progress, built by McIlroy's adversary: elements
    start as 'gas' and get a value only when a comparison needs one.  Returns the values and
    the number of partition rounds the quickselect would make."""
    gas = n
    val = [gas] * n
    state = {"solid": 0, "candidate": -1}

    def freeze(x):
        val[x] = state["solid"]
        state["solid"] += 1

    def lt(x, y):
        if val[x] == gas and val[y] == gas:
            freeze(x if x == state["candidate"] else y)
        if val[x] == gas:
            state["candidate"] = x
        elif val[y] == gas:
            state["candidate"] = y
        return val[x] < val[y]

    a = list(range(n))
    lo, hi, target, rounds = 0, n, k - 1, 0
    while hi - lo > 32 and rounds <= 64:
        rounds += 1
        mid = lo + (hi - lo) // 2
        for i, j in ((lo, mid), (mid, hi - 1), (lo, mid)):
            if lt(a[j], a[i]):
                a[i], a[j] = a[j], a[i]
        pivot = a[mid]
        a[mid], a[hi - 1] = a[hi - 1], pivot
        i = lo
        for j in range(lo, hi - 1):
            x = a[j]
            smaller = lt(x, pivot)
            a[j], a[i] = a[i], x
            i += smaller
        a[hi - 1], a[i] = a[i], pivot
        if i == target:
            break
        hi, lo = (i, lo) if target < i else (hi, i + 1)
    return np.array(val, dtype=np.int64), rounds


def test_select_falls_back_on_adversarial_input():
    # the kernel stops quickselect after 64 rounds and radix sorts the rest: check that this
    # path (which random data never reaches) still gives the right answers
    n, k = 3000, 1500
    vals, rounds = _quickselect_killer(n, k)
    assert rounds > 64
    for dtype in ("int32", "float64"):
        t = tensor_of(vals, dtype)
        check_topk(t, k, 0, False)
        v, i = tl.kthvalue(t, k)
        assert v.item() == np.sort(vals)[k - 1] and vals[i.item()] == v.item()
