"""Indexing: tensor[...] / tensor[...] = v and the index ops (gather, scatter, index_*,
masked_*, nonzero, take, put), checked against NumPy and, where installed, PyTorch."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import torchlite as tl

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"]


def np_of(t):
    """A torchlite tensor as NumPy (bfloat16 through float32)."""
    if t.dtype == tl.bfloat16:
        t = t.to(tl.float32)
    return np.array(t.numpy(), copy=True)


def assert_same(got, want):
    """torchlite result vs a NumPy array or torch tensor: same shape and values."""
    if hasattr(want, "detach"):                       # a torch tensor
        want = (want.float() if str(want.dtype) == "torch.bfloat16" else want).numpy()
    want = np.asarray(want)
    g = np_of(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    np.testing.assert_array_equal(g, want)


class Lib:
    """Builds the same tensors and index objects in torchlite, torch or NumPy."""

    def __init__(self, mod):
        self.mod = mod
        self.is_np = mod is np

    def T(self, a, dtype=None):
        a = np.asarray(a)
        if self.is_np:
            return a.astype(dtype) if dtype else a
        dt = getattr(self.mod, dtype) if dtype else None
        return self.mod.tensor(a, dtype=dt) if dt else self.mod.tensor(a)

    def I(self, v):  # noqa: E743   int64 index array
        return self.T(np.array(v, dtype=np.int64))

    def I32(self, v):
        return self.T(np.array(v, dtype=np.int32))

    def M(self, v):                 # bool mask
        return self.T(np.array(v, dtype=bool))


TL = Lib(tl)
NP = Lib(np)


def optional_torch():
    """torch for an extra cross-check, or None: these tests' oracle is NumPy."""
    try:
        import torch
    except ImportError:
        return None
    return torch


# ---- base tensors of shape (4, 5, 6) in several layouts -------------------------------------
def make_base(L, layout, dtype="float32"):
    if layout == "contiguous":
        x = L.T(np.arange(120).reshape(4, 5, 6), dtype)
    elif layout == "transposed":
        x = L.T(np.arange(120).reshape(6, 5, 4), dtype)
        x = x.transpose(2, 1, 0) if L.is_np else x.permute(2, 1, 0)
    elif layout == "stepped":
        x = L.T(np.arange(8 * 5 * 12).reshape(8, 5, 12), dtype)[::2, :, ::2]
    else:   # expanded: stride 0 along dim 0
        x = L.T(np.arange(30).reshape(1, 5, 6), dtype)
        x = np.broadcast_to(x, (4, 5, 6)) if L.is_np else x.expand(4, 5, 6)
    return x


LAYOUTS = ["contiguous", "transposed", "stepped", "expanded"]
MASK45 = np.arange(20).reshape(4, 5) % 3 == 0
MASK56 = np.arange(30).reshape(5, 6) % 4 == 1
MASK4 = np.array([True, False, True, True])

# (name, index builder, NumPy reference): the reference is None where NumPy indexes the
# same way, else a function giving (view, NumPy index) that does what PyTorch does.
INDEXES = [
    ("int", lambda L: 1, None),
    ("neg_int", lambda L: -1, None),
    ("ints", lambda L: (1, 2), None),
    ("slice", lambda L: slice(1, 3), None),
    ("step", lambda L: (slice(None, None, 2), slice(1, None, 3)), None),
    ("ellipsis", lambda L: (Ellipsis, 1), None),
    ("none", lambda L: (None, 1, None), None),
    ("list", lambda L: [0, 2], None),
    ("nested_list", lambda L: [[0, 1], [2, 3]], lambda a: (a, ([0, 1], [2, 3]))),  # PyTorch: a tuple
    ("tensor_neg", lambda L: L.I([3, -1, 0]), None),
    ("int32", lambda L: (slice(None), L.I32([4, 0])), None),
    ("two_adjacent", lambda L: (L.I([0, 1]), L.I([1, 2])), None),
    ("slice_then_tensor", lambda L: (slice(None), L.I([0, 4])), None),
    ("separated", lambda L: (L.I([0, 1]), slice(None), L.I([1, 2])), None),
    ("adjacent_after_slice", lambda L: (slice(None), L.I([0, 1]), L.I([1, 2])), None),
    ("broadcast", lambda L: (L.I([[0], [1]]), L.I([1, 2, 3])), None),
    ("broadcast_sep", lambda L: (L.I([[0], [3]]), slice(1, 4), L.I([5, 2, 3])), None),
    ("ellipsis_tensor", lambda L: (Ellipsis, L.I([0, 5, 5])), None),
    # PyTorch applies ints (as selects) before the index arrays
    ("none_tensor", lambda L: (None, L.I([0]), None, 1), lambda a: (a[None, :, None, 1], (slice(None), [0]))),
    ("int_and_tensor", lambda L: (0, slice(None), L.I([0, 1])), lambda a: (a[0], (slice(None), [0, 1]))),
    ("full_mask", lambda L: L.M(np.arange(120).reshape(4, 5, 6) % 7 < 3), None),
    ("mask_2d", lambda L: L.M(MASK45), None),
    ("mask_2d_slice", lambda L: (L.M(MASK45), slice(1, 4)), None),
    ("slice_mask_2d", lambda L: (slice(None), L.M(MASK56)), None),
    ("mask_1d_list", lambda L: [True, False, True, False], None),
    ("mask_and_tensor", lambda L: (L.M(MASK4), slice(None), L.I([0, 1, 5])), None),
    ("empty_list", lambda L: [], lambda a: (a, np.zeros(0, np.int64))),
    ("empty_tensor", lambda L: (slice(None), L.I(np.zeros(0, np.int64))), None),
    ("true", lambda L: True, None),
    ("false", lambda L: False, None),
    ("true_after_tensor", lambda L: (L.I([0, 1]), True), None),
    ("zero_d_int", lambda L: L.T(np.int64(2)), None),
    ("zero_d_bool", lambda L: (L.T(np.bool_(True)), 1), None),
]


def np_view_index(a, build, ref):
    """The NumPy array and index that do what `build`'s index does in PyTorch."""
    return (a, build(NP)) if ref is None else ref(a)


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,build,ref", INDEXES, ids=[c[0] for c in INDEXES])
def test_getitem_matches_numpy_and_torch(layout, name, build, ref):
    got = make_base(TL, layout)[build(TL)]
    view, index = np_view_index(make_base(NP, layout), build, ref)
    assert_same(got, view[index])
    torch = optional_torch()
    if torch is not None:
        Lt = Lib(torch)
        assert_same(got, make_base(Lt, layout)[build(Lt)])


def test_basic_indexing_is_a_view_advanced_a_copy():
    x = tl.zeros(4, 5)
    v = x[1:3, ::2]
    v[0, 0] = 7.0
    assert x[1, 0].item() == 7.0
    a = x[[1, 2]]
    a[0, 0] = -1.0
    assert x[1, 0].item() == 7.0
    m = x[x > 0]
    assert m.tolist() == [7.0]
    m[0] = 5.0
    assert x[1, 0].item() == 7.0


def test_nested_list_is_a_tuple_with_a_warning():
    x = tl.arange(12).reshape(3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        got = x[[[0, 2], [1, 3]]]
    assert_same(got, np.arange(12).reshape(3, 4)[[0, 2], [1, 3]])


def test_zero_d_and_empty():
    s = tl.tensor(5.0)
    assert s[None].shape == (1,) and s[...].item() == 5.0
    assert s[tl.tensor(True)].tolist() == [5.0]
    assert s[tl.tensor(False)].shape == (0,)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        s[0]
    e = tl.zeros(0, 3)
    assert e[[]].shape == (0, 3)
    assert e[:, [0, 2]].shape == (0, 2)
    assert e[e > 0].shape == (0,)
    with pytest.raises(IndexError, match="out of bounds"):
        e[[0]]


# ---- setitem ---------------------------------------------------------------------------------
SET_INDEXES = [c for c in INDEXES if c[0] not in ("nested_list", "broadcast", "broadcast_sep",
                                                   "ellipsis_tensor", "true_after_tensor")]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("name,build,ref", SET_INDEXES, ids=[c[0] for c in SET_INDEXES])
@pytest.mark.parametrize("kind", ["scalar", "tensor", "broadcast"])
def test_setitem_matches_numpy_and_torch(layout, name, build, ref, kind):
    def value(L, shape):
        if kind == "scalar":
            return -3.5
        if kind == "tensor":
            return L.T(-np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 1)
        return L.T(-np.arange(shape[-1] if len(shape) else 1, dtype=np.float32) - 1)   # broadcast

    def run(L):
        x = make_base(L, layout)
        x = x.copy() if L.is_np else x.clone()
        view, index = np_view_index(x, build, ref) if L.is_np else (x, build(L))
        view[index] = value(L, view[index].shape)
        return x
    got = run(TL)
    assert_same(got, run(NP))
    torch = optional_torch()
    if torch is not None:
        assert_same(got, run(Lib(torch)))


def test_setitem_values_cast_and_strip_leading_ones():
    x = tl.zeros(3, dtype=tl.int64)
    x[[0, 1]] = 2.7
    assert x.tolist() == [2, 2, 0]
    x[[1, 2]] = tl.tensor([[[1.9, -1.5]]])      # leading size-1 dims dropped, cast to int64
    assert x.tolist() == [2, 1, -1]
    x[tl.tensor([True, False, True])] = [7, 8]
    assert x.tolist() == [7, 1, 8]
    y = tl.zeros(2, 3)
    y[1] = tl.tensor([[5.0]])
    assert y.tolist() == [[0, 0, 0], [5, 5, 5]]
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        tl.zeros(2, dtype=tl.int8)[[0]] = 1000
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        tl.zeros(2, dtype=tl.int8)[0] = 1000
    u = tl.zeros(2, dtype=tl.uint8)
    u[0] = -1                     # PyTorch wraps small negatives into uint8
    assert u.tolist() == [255, 0]
    with pytest.raises(TypeError, match="can't assign a NoneType"):
        y[[0]] = None


def test_setitem_value_shape_mismatch_and_overlap():
    x = tl.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be "
                                           r"broadcast to indexing result of shape \[2, 4\]"):
        x[[0, 1]] = tl.ones(3)
    z = tl.arange(6.0).reshape(2, 3)
    z[[1, 0]] = z                              # the value is read before any write
    assert z.tolist() == [[3, 4, 5], [0, 1, 2]]
    i = tl.tensor([2, 0, 1])
    i[i] = tl.tensor([10, 11, 12])             # index and target share memory
    assert i.tolist() == [11, 12, 10]


def test_setitem_duplicates_last_write_and_index_put_accumulate(threads):
    x = tl.zeros(5)
    x[[1, 1, 3]] = tl.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [0, 2, 0, 3, 0]
    x = tl.zeros(5)
    x.index_put_((tl.tensor([1, 1, 3, 1]),), tl.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
    assert x.tolist() == [0, 7, 0, 3, 0]
    big = tl.zeros(50, 400)
    rows = tl.tensor(np.random.randint(0, 50, 3000))
    big.index_put_((rows,), tl.ones(3000, 400), accumulate=True)
    want = np.zeros((50, 400), np.float32)
    np.add.at(want, rows.numpy(), 1.0)
    assert_same(big, want)


def test_index_put_matches_numpy():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = tl.tensor(a)
    got = x.index_put_((tl.tensor([0, 2, 0]), tl.tensor([1, 3, 1])), tl.tensor([1.0, 2.0, 3.0]),
                       accumulate=True)
    assert got is x
    want = a.copy()
    np.add.at(want, ([0, 2, 0], [1, 3, 1]), [1.0, 2.0, 3.0])
    assert_same(x, want)
    got = tl.tensor(a).index_put((tl.tensor([True, False, True]),), tl.tensor(5.0))
    want = a.copy()
    want[[True, False, True]] = 5.0
    assert_same(got, want)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        tl.zeros(3).index_put_((tl.tensor([0]),), tl.ones(1, dtype=tl.float64))
    with pytest.raises(TypeError, match="must be Tensor"):
        tl.zeros(3).index_put_((tl.tensor([0]),), 1.0)


# ---- errors (type and message as PyTorch) ----------------------------------------------------
ERRORS = [
    (lambda L: 5, IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    (lambda L: (0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    (lambda L: L.I([0, 4]), IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    (lambda L: (slice(None), L.I([-6])), IndexError, "index -6 is out of bounds"),
    (lambda L: (L.I([0, 1]), L.I([0, 1, 2])),
     IndexError, "shape mismatch: indexing tensors could not be broadcast"),
    (lambda L: L.M([True, False]), IndexError, "The shape of the mask [2] at index 0 does not match"),
    (lambda L: (slice(None), L.M(np.ones((5, 5), bool))),
     IndexError, "does not match the shape of the indexed tensor"),
    (lambda L: L.T(np.array([1.0])), IndexError, "tensors used as indices must be long, int, byte or bool"),
    (lambda L: L.T(np.array([1], np.int16)),
     IndexError, "tensors used as indices must be long, int, byte or bool"),
    (lambda L: 1.5, IndexError, "only integers, slices"),
    (lambda L: slice(None, None, -1), ValueError, "step must be greater than zero"),
    (lambda L: slice(None, None, 0), ValueError, "step must be greater than zero"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_getitem_errors_like_torch(case):
    build, exc, msg = ERRORS[case]
    x = make_base(TL, "contiguous")
    with pytest.raises(exc) as info:
        x[build(TL)]
    assert msg in str(info.value)
    torch = optional_torch()
    if torch is not None:       # PyTorch raises the same exception type
        Lt = Lib(torch)
        with pytest.raises(exc):
            make_base(Lt, "contiguous")[build(Lt)]


def test_setitem_errors_leave_tensor_untouched():
    x = tl.arange(6.0)
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 6"):
        x[[0, 1, 9]] = 100.0
    with pytest.raises(IndexError, match="out of bounds"):
        x[tl.tensor([0, 1, -7])] = tl.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(TypeError):
        x["a"]


# ---- gather / scatter ------------------------------------------------------------------------
def _rand_index(shape, high, seed=0):
    return np.random.RandomState(seed).randint(0, high, shape)


def _layouts2(L, a):
    """The same 2-d array as contiguous, transposed-storage and stepped views."""
    t = L.T(a)
    tt = L.T(np.ascontiguousarray(a.T))
    tt = tt.T if L.is_np else tt.t()
    st = L.T(np.repeat(a, 2, axis=1))[:, ::2]
    return [t, tt, st]


def _targets(idx, dim):
    """NumPy coordinates of the elements a scatter along dim writes."""
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    return tuple(coords)


def ref_gather(a, dim, idx):
    sub = a[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))]
    return np.take_along_axis(sub, idx, dim)


def ref_scatter(a, dim, idx, src, ufunc=None):
    out = a.copy()
    part = src if np.ndim(src) == 0 else src[tuple(slice(0, s) for s in idx.shape)]
    if ufunc is None:
        out[_targets(idx, dim)] = part
    else:
        ufunc.at(out, _targets(idx, dim), part)
    return out


def ref_scatter_reduce(a, dim, idx, src, reduce, include_self):
    """scatter_reduce by its definition: each target reduces its own list of values."""
    out = a.copy()
    lists = {}
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        lists.setdefault(tuple(tgt), []).append(src[pos])
    for tgt, vals in lists.items():
        vals = ([a[tgt]] if include_self else []) + vals
        if reduce == "sum":
            r = np.sum(vals, dtype=a.dtype)
        elif reduce == "prod":
            r = np.prod(vals, dtype=a.dtype)
        elif reduce == "amax":
            r = np.max(vals)
        elif reduce == "amin":
            r = np.min(vals)
        elif a.dtype.kind == "f":
            r = np.sum(vals, dtype=a.dtype) / len(vals)
        else:
            r = np.sum(vals, dtype=a.dtype) // len(vals)
        out[tgt] = r
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_scatter_match_numpy(dim, threads):
    # big enough to be split among threads; integer-valued, so sums are exact in any order
    a = np.random.randint(-50, 50, (260, 200)).astype(np.float32)
    d = dim % 2
    idx = _rand_index((240, 160), a.shape[d])
    src = np.random.randint(-50, 50, (250, 170)).astype(np.float32)
    # plain scatter needs distinct targets (PyTorch leaves repeats undefined)
    if d == 0:
        uniq = np.argsort(np.random.rand(260, 160), axis=0)[:240]
    else:
        uniq = np.argsort(np.random.rand(240, 200), axis=1)[:, :160]
    for x in _layouts2(TL, a):
        for make in (TL.I, TL.I32):
            i = make(idx)
            assert_same(tl.gather(x, dim, i), ref_gather(a, d, idx))
            assert_same(x.clone().scatter_(dim, i, TL.T(src), reduce="add"),
                        ref_scatter(a, d, idx, src, np.add))
            assert_same(x.scatter_add(dim, i, TL.T(src)), ref_scatter(a, d, idx, src, np.add))
            assert_same(x.scatter(dim, i, 2.5), ref_scatter(a, d, idx, np.float32(2.5)))
            assert_same(x.scatter(dim, make(uniq), TL.T(src)), ref_scatter(a, d, uniq, src))
    torch = optional_torch()
    if torch is not None:
        assert_same(tl.gather(tl.tensor(a), dim, TL.I(idx)),
                    torch.gather(torch.tensor(a), dim, torch.tensor(idx)))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "int32"])
def test_scatter_reduce_matches_reference(reduce, include_self, dtype):
    rs = np.random.RandomState(1)
    base = rs.randint(-5, 6, (6, 7)).astype(dtype)
    src = rs.randint(-5, 6, (8, 7)).astype(dtype)
    if reduce == "prod":
        src = (np.abs(src) % 3 + 1).astype(dtype)
    idx = rs.randint(0, 6, (8, 7))
    got = tl.tensor(base).scatter_reduce(0, TL.I(idx), tl.tensor(src), reduce, include_self=include_self)
    want = ref_scatter_reduce(base, 0, idx, src, reduce, include_self)
    np.testing.assert_allclose(np_of(got), want, rtol=1e-6)
    torch = optional_torch()
    if torch is not None:
        t = torch.tensor(base).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), reduce,
                                              include_self=include_self)
        np.testing.assert_allclose(np_of(got), t.numpy(), rtol=1e-6)


def test_scatter_reduce_nan_and_old_reduce():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    idx, src = np.array([0, 0, 2]), np.array([np.nan, 5.0, 1.0], np.float32)
    got = tl.tensor(a).scatter_reduce(0, tl.tensor(idx), tl.tensor(src), "amax")
    np.testing.assert_array_equal(np_of(got), ref_scatter_reduce(a, 0, idx, src, "amax", True))
    s = np.array([10, 20, 30, 40])
    i3, v3 = np.array([0, 1, 0]), np.array([1, 2, 3])
    assert_same(tl.tensor(s).scatter(0, tl.tensor(i3), tl.tensor(v3), reduce="multiply"),
                ref_scatter(s, 0, i3, v3, np.multiply))
    assert_same(tl.tensor(s).scatter(0, tl.tensor(i3), 2, reduce="multiply"),
                ref_scatter(s, 0, i3, np.int64(2), np.multiply))
    b = np.array([True, False])
    assert_same(tl.tensor(b).scatter_add(0, tl.tensor([0, 1, 1]), tl.tensor([True, True, True])),
                ref_scatter(b, 0, np.array([0, 1, 1]), np.ones(3, bool), np.logical_or))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        tl.tensor(s).scatter(0, tl.tensor([0]), tl.tensor([1]), reduce="mean")
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        tl.tensor(s).scatter_reduce(0, tl.tensor([0]), tl.tensor([1]), "add")


def test_gather_scatter_zero_d_and_empty():
    assert tl.gather(tl.tensor(5.0), 0, tl.tensor([0, 0])).tolist() == [5.0, 5.0]
    assert tl.gather(tl.tensor(5.0), 0, tl.tensor(0)).shape == ()
    assert tl.tensor(5.0).scatter(0, tl.tensor(0), tl.tensor(3.0)).item() == 3.0
    x = tl.arange(12.0).reshape(3, 4)
    assert tl.gather(x, 0, tl.zeros(0, 2, dtype=tl.int64)).shape == (0, 2)
    assert x.scatter(1, tl.zeros(3, 0, dtype=tl.int64), 1.0).tolist() == x.tolist()


GATHER_ERRORS = [
    (lambda T, x: T.gather(x, 1, T.tensor([[5]])),
     RuntimeError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: T.gather(x, 1, T.tensor([[-1]])),
     RuntimeError, "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: T.gather(x, 1, T.tensor([[1.0]])),
     RuntimeError, "gather(): Expected dtype int32/int64 for index"),
    (lambda T, x: T.gather(x, 1, T.tensor([1])),
     RuntimeError, "Index tensor must have the same number of dimensions as input tensor"),
    (lambda T, x: T.gather(x, 1, T.zeros(4, 1, dtype=T.int64)),
     RuntimeError, "Size does not match at dimension 0 expected index [4, 1] to be no larger than self "
                   "[3, 4] apart from dimension 1"),
    (lambda T, x: T.gather(x, 2, T.zeros(1, 1, dtype=T.int64)), IndexError, "Dimension out of range"),
    (lambda T, x: x.clone().scatter_(1, T.tensor([[4]]), 1.0),
     RuntimeError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: x.clone().scatter_(1, T.tensor([[0]]), T.ones(1, 1, dtype=T.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda T, x: x.clone().scatter_(1, T.tensor([[0, 1]]), T.ones(1, 1)),
     RuntimeError, "to be no larger size than src [1, 1]"),
    (lambda T, x: x.clone().scatter_(0, T.tensor([[0]], dtype=T.int16), 1.0),
     RuntimeError, "scatter(): Expected dtype int32/int64 for index"),
    (lambda T, x: x.clone().scatter_add_(0, T.tensor([[0]]), T.ones(1, 1, dtype=T.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda T, x: x.expand(2, 3, 4).scatter_(0, T.tensor([[[0]]]), 1.0),
     RuntimeError, "more than one element of the written-to tensor refers to a single memory location"),
    (lambda T, x: T.take_along_dim(x, T.tensor([0, 1]), 1),
     RuntimeError, "input and indices should have the same number of dimensions"),
    (lambda T, x: T.take_along_dim(x, T.tensor([[0]], dtype=T.int32), 1),
     RuntimeError, "dtype of indices should be Long but got Int"),
]


@pytest.mark.parametrize("case", range(len(GATHER_ERRORS)))
def test_gather_scatter_errors_like_torch(case):
    fn, exc, msg = GATHER_ERRORS[case]
    with pytest.raises(exc) as info:
        fn(tl, tl.arange(12.0).reshape(3, 4))
    assert msg in str(info.value)
    torch = optional_torch()
    if torch is not None:
        with pytest.raises(exc) as tinfo:
            fn(torch, torch.arange(12.0).reshape(3, 4))
        assert msg in str(tinfo.value)


def test_scatter_with_index_sharing_memory_and_partial_failure():
    i = tl.tensor([1, 0, 2])
    i.scatter_(0, i, tl.tensor([7, 8, 9]))      # index is the target: read before any write
    assert i.tolist() == [8, 7, 9]
    x = tl.zeros(2, 3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.scatter_add_(1, tl.tensor([[0, 1, 2], [0, 1, 3]]), tl.ones(2, 3))
    assert x.tolist() == [[0, 0, 0], [0, 0, 0]]


# ---- index_select / index_add / index_copy / index_fill -------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_index_ops_match_numpy(dim, threads):
    rs = np.random.RandomState(2)
    a = rs.randint(-9, 10, (30, 40, 50)).astype(np.float32)     # big enough for 2 threads
    d = dim % 3
    idx = rs.randint(0, a.shape[d], 40)
    uniq = rs.permutation(a.shape[d])[:7]
    pre = (slice(None),) * d
    x = tl.tensor(a).permute(2, 0, 1).contiguous().permute(1, 2, 0)    # non-contiguous, equal to a
    shape = list(a.shape)
    shape[d] = 40
    src = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 17
    shape[d] = 7
    src7 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

    assert_same(tl.index_select(x, dim, TL.I(idx)), np.take(a, idx, axis=d))
    assert_same(x.index_select(dim, TL.I32(idx)), np.take(a, idx, axis=d))
    want = a.copy()
    np.add.at(want, pre + (idx,), 2 * src)
    assert_same(x.index_add(dim, TL.I(idx), tl.tensor(src), alpha=2), want)
    want = a.copy()
    np.add.at(want, pre + (idx,), src)
    assert_same(x.clone().index_add_(dim, TL.I32(idx), tl.tensor(src)), want)
    want = a.copy()
    want[pre + (uniq,)] = src7
    assert_same(x.index_copy(dim, TL.I(uniq), tl.tensor(src7)), want)
    want = a.copy()
    want[pre + (uniq,)] = -1.5
    assert_same(x.index_fill(dim, TL.I(uniq), -1.5), want)
    want = a.copy()
    want[pre + (-1,)] = 3.0
    assert_same(x.index_fill(dim, TL.I([-1]), tl.tensor(3.0)), want)
    torch = optional_torch()
    if torch is not None:
        assert_same(x.index_select(dim, TL.I(idx)), torch.tensor(a).index_select(dim, torch.tensor(idx)))


INDEX_OP_ERRORS = [
    (lambda T, x: x.index_select(1, T.tensor([5])), RuntimeError, "out of DATA bounds, id=5 axis_dim=4"),
    (lambda T, x: x.index_select(1, T.tensor([-1])), RuntimeError, "out of DATA bounds, id=-1 axis_dim=4"),
    (lambda T, x: x[0].index_select(0, T.tensor([4])), IndexError, "index out of range in self"),
    (lambda T, x: x.index_select(1, T.tensor([1], dtype=T.int16)),
     RuntimeError, "index_select(): Expected dtype int32 or int64 for index"),
    (lambda T, x: x.index_select(1, T.tensor([[1]])),
     IndexError, "index_select(): Index is supposed to be a vector"),
    (lambda T, x: x.clone().index_add_(1, T.tensor([4]), T.ones(3, 1)),
     RuntimeError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: x.clone().index_add_(1, T.tensor([0]), T.ones(3, 1, dtype=T.float64)),
     RuntimeError, "index_add_(): self (Float) and source (Double) must have the same scalar type"),
    (lambda T, x: x.clone().index_add_(1, T.tensor([0]), T.ones(3, 2)),
     RuntimeError, "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), "
                   "for dim: 1"),
    (lambda T, x: x.clone().index_add_(0, T.tensor([1]), T.ones(1, 3)),
     RuntimeError, "source tensor shape must match self tensor shape, excluding the specified dimension"),
    (lambda T, x: x.clone().index_copy_(1, T.tensor([4]), T.ones(3, 1)),
     IndexError, "index_copy_(): index 4 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: x.clone().index_copy_(1, T.tensor([0], dtype=T.int32), T.ones(3, 1)),
     RuntimeError, "index_copy_(): Expected a long tensor for index, but got Int"),
    (lambda T, x: x.clone().index_copy_(0, T.tensor([0, 1]), T.ones(2, 3)),
     RuntimeError, "Source/destination tensor must have same slice shapes"),
    (lambda T, x: x.clone().index_fill_(1, T.tensor([4]), 1),
     IndexError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda T, x: x.clone().index_fill_(1, T.tensor([0], dtype=T.int32), 1),
     IndexError, "index_fill_(): Expected dtype int64 for index."),
    (lambda T, x: x.clone().index_fill_(0, T.tensor([0]), T.tensor([5.0])),
     RuntimeError, "index_fill_ only supports a 0-dimensional value tensor"),
    (lambda T, x: x.take(T.tensor([12])),
     IndexError, "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda T, x: x.take(T.tensor([-13])),
     IndexError, "out of range: tried to access index -13 on a tensor of 12 elements."),
    (lambda T, x: x.take(T.tensor([1], dtype=T.int32)),
     RuntimeError, "take(): Expected a long tensor for index, but got Int"),
    (lambda T, x: T.zeros(0).take(T.tensor([0])), IndexError, "take(): tried to take from an empty tensor"),
    (lambda T, x: x.clone().put_(T.tensor([12]), T.tensor([1.0])),
     IndexError, "out of range: tried to access index 12"),
    (lambda T, x: x.clone().put_(T.tensor([1, 2]), T.tensor([1.0])),
     IndexError, "put_(): Expected source and index to have the same number of elements"),
    (lambda T, x: x.clone().put_(T.tensor([0]), T.tensor([1])),
     RuntimeError, "put_(): self and source expected to have the same dtype"),
    (lambda T, x: x.masked_fill(T.tensor([1, 0, 1, 0]), 1.0),
     RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype long int"),
    (lambda T, x: T.zeros(4).masked_fill_(T.ones(3, 4, dtype=T.bool), 1.0),
     RuntimeError, "output with shape [4] doesn't match the broadcast shape [3, 4]"),
    (lambda T, x: T.zeros(4, dtype=T.int8).masked_fill(T.ones(4, dtype=T.bool), 1000),
     RuntimeError, "value cannot be converted to type int8_t without overflow"),
    (lambda T, x: T.zeros(4).masked_fill(T.ones(4, dtype=T.bool), T.tensor([1.0])),
     RuntimeError, "masked_fill_ only supports a 0-dimensional value tensor"),
    (lambda T, x: x.masked_select(T.ones(4, dtype=T.uint8)),
     RuntimeError, "masked_select: expected BoolTensor for mask"),
    (lambda T, x: x.masked_select(T.ones(2, dtype=T.bool)), RuntimeError, "must match the size of tensor"),
    (lambda T, x: x.clone().masked_scatter_(x > 5, T.arange(3.0)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    (lambda T, x: x.clone().masked_scatter_(x > 5, T.arange(10)),
     RuntimeError, "masked_scatter: expected self and source to have same dtypes"),
]


@pytest.mark.parametrize("case", range(len(INDEX_OP_ERRORS)))
def test_index_op_errors_like_torch(case):
    fn, exc, msg = INDEX_OP_ERRORS[case]
    with pytest.raises(exc) as info:
        fn(tl, tl.arange(12.0).reshape(3, 4))
    assert msg in str(info.value)
    torch = optional_torch()
    if torch is not None:
        with pytest.raises(exc):
            fn(torch, torch.arange(12.0).reshape(3, 4))


# ---- masks, nonzero, take, put -------------------------------------------------------------
def test_mask_ops_match_numpy(threads):
    rs = np.random.RandomState(3)
    a = rs.randn(300, 200).astype(np.float32)
    m = rs.rand(300, 200) > 0.5
    x, mt = tl.tensor(a), tl.tensor(m)
    assert_same(x[mt], a[m])
    assert_same(x.t()[mt.t()], a.T[m.T])
    assert_same(tl.masked_select(x, mt), a[m])
    assert_same(x.masked_select(tl.tensor(m[0])), np.broadcast_to(a, a.shape)[np.broadcast_to(m[0], a.shape)])
    assert_same(x.masked_fill(mt, 2.0), np.where(m, 2.0, a))
    assert_same(x.masked_fill(tl.tensor(m[:, :1]), tl.tensor(-1.0)), np.where(m[:, :1], -1.0, a))
    src = rs.randn(60000).astype(np.float32)
    want = a.copy()
    want[m] = src[:m.sum()]
    assert_same(x.clone().masked_scatter_(mt, tl.tensor(src)), want)
    assert_same(tl.nonzero(mt), np.argwhere(m))
    assert_same(tl.argwhere(x.t() > 1), np.argwhere(a.T > 1))
    for got, col in zip(tl.nonzero(mt, as_tuple=True), np.nonzero(m)):
        assert_same(got, col)
    y = x.clone()
    y[mt] = 0.0                       # the elementwise fast path
    assert_same(y, np.where(m, 0.0, a))
    y = x.clone()
    y[mt] = tl.tensor(src[:m.sum()])  # the general path, split among threads
    assert_same(y, want)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nonzero_every_dtype(dtype):
    vals = np.array([0, 1, 0, 3, 0, 1], np.float32).reshape(2, 3)
    x = tl.tensor(vals).to(getattr(tl, dtype))
    assert_same(tl.nonzero(x), np.argwhere(vals))
    assert_same(tl.nonzero(tl.tensor(3.0)), np.zeros((1, 0), np.int64))
    assert_same(tl.nonzero(tl.tensor(0.0)), np.zeros((0, 0), np.int64))
    assert tl.nonzero(tl.tensor(3.0), as_tuple=True)[0].tolist() == [0]


def test_nonzero_float_signed_zero_and_nan():
    assert tl.tensor([-0.0, float("nan"), 0.0, 1e-45]).nonzero().tolist() == [[1], [3]]
    h = tl.tensor([-0.0, 1.0, 0.0]).to(tl.float16)
    assert h.nonzero().tolist() == [[1]]


def test_take_take_along_dim_put_match_numpy():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = tl.tensor(a).permute(2, 0, 1)
    xa = a.transpose(2, 0, 1)
    idx = np.array([[0, 5, -1], [23, 7, -24]])
    assert_same(x.take(TL.I(idx)), np.take(xa, idx))
    tad = np.random.RandomState(4).randint(0, 2, (4, 1, 3))
    assert_same(tl.take_along_dim(x, TL.I(tad), 1), np.take_along_axis(xa, tad, 1))
    assert_same(tl.take_along_dim(x, TL.I([[0, 5, 23]])), np.take(xa, [0, 5, 23]))
    y = tl.zeros(4, 3).t()                      # put_ writes a non-contiguous tensor in place
    y.put_(TL.I([1, 1, 5, -1]), tl.tensor([1.0, 2, 3, 4]), accumulate=True)
    flat = np.zeros(12, np.float32)
    np.add.at(flat, [1, 1, 5, -1], [1.0, 2, 3, 4])
    assert_same(y, flat.reshape(3, 4))
    z = tl.zeros(4, 3).t().put(TL.I([0, 11]), tl.tensor([7.0, 8.0]))
    flat = np.zeros(12, np.float32)
    flat[[0, 11]] = [7.0, 8.0]
    assert_same(z, flat.reshape(3, 4))


def test_take_along_dim_counts_negative_indices_from_the_end():
    a = np.arange(24.0).reshape(2, 3, 4)
    neg = np.array([[[-1, 0, -3, 2]], [[-3, -2, 1, 2]]])            # (2, 1, 4) along dim 1
    x = tl.tensor(a, requires_grad=True)
    r = tl.take_along_dim(x, TL.I(neg), 1)
    assert_same(r.detach(), np.take_along_axis(a, neg % 3, 1))
    r.sum().backward()
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(2)[:, None, None], neg % 3, np.arange(4)[None, None, :]), 1.0)
    assert_same(x.grad, want)
    with pytest.raises(RuntimeError, match="out of bounds"):
        tl.take_along_dim(x, TL.I([[[-4]]]), 1)


def test_gather_with_an_empty_index_of_any_dtype():
    """PyTorch checks the index dtype only when there is an index to read."""
    x = tl.arange(6.0).reshape(2, 3)
    for dt in (tl.uint8, tl.int16, tl.float32):
        assert tl.gather(x, 1, tl.zeros(0, 0, dtype=dt)).shape == (0, 0)
    assert tl.gather(x, 0, tl.zeros(0, dtype=tl.int64)).shape == (0,)    # nor its dims
    xg = x.clone().requires_grad_()
    tl.gather(xg, 1, tl.zeros(0, 2, dtype=tl.int64)).sum().backward()
    assert xg.grad.tolist() == [[0.0] * 3] * 2
    with pytest.raises(RuntimeError, match="int32/int64"):
        tl.gather(x, 1, tl.zeros(1, 1, dtype=tl.uint8))


# ---- every dtype -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_ops_every_dtype(dtype, threads):
    dt = getattr(tl, dtype)
    base = (np.arange(60).reshape(6, 10) % 5).astype(np.float32)
    x = tl.tensor(base).to(dt)
    want = base.astype(bool).astype(np.float32) if dtype == "bool" else base
    idx = np.array([5, 0, 3, 3])
    assert_same(x[tl.tensor(idx)].to(tl.float32), want[idx])
    assert_same(x[:, tl.tensor(idx)].to(tl.float32), want[:, idx])
    assert_same(x[x.to(tl.float32) > 2].to(tl.float32), want[want > 2])
    g = _rand_index((6, 10), 10, seed=5)
    assert_same(tl.gather(x, 1, tl.tensor(g)).to(tl.float32), np.take_along_axis(want, g, 1))
    y = x.clone()
    y[tl.tensor([1, 4])] = tl.tensor(want[[2, 3]]).to(dt)
    w = want.copy()
    w[[1, 4]] = want[[2, 3]]
    assert_same(y.to(tl.float32), w)
    z = tl.zeros(6, 10, dtype=dt)
    z.index_add_(0, tl.tensor([0, 0, 5]), tl.ones(3, 10, dtype=dt))
    wz = np.zeros((6, 10), np.float32)
    np.add.at(wz, [0, 0, 5], 1.0)
    if dtype == "bool":
        wz = (wz > 0).astype(np.float32)
    assert_same(z.to(tl.float32), wz)
    s = tl.zeros(6, 10, dtype=dt).scatter_add(1, tl.tensor(g), x)
    ws = np.zeros((6, 10), np.float32)
    np.add.at(ws, (np.arange(6)[:, None].repeat(10, 1), g), want)
    if dtype == "bool":
        ws = (ws > 0).astype(np.float32)
    assert_same(s.to(tl.float32), ws)


# ---- property tests --------------------------------------------------------------------------
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4)


@st.composite
def index_items(draw, shape):
    """A random index tuple for `shape`: valid or not, of every kind."""
    items = []
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis", "array", "mask", "bool",
                                     "scalar_tensor"]))
        dim = sum(1 for i in items if i is not None and i is not Ellipsis and not isinstance(i, bool))
        size = shape[dim] if dim < len(shape) else 3
        if kind == "int":
            items.append(draw(st.integers(-size - 1, size)))
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)),
                               draw(st.none() | st.integers(1, 3))))
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis":
            if not any(i is Ellipsis for i in items):   # PyTorch's handling of a second one is erratic
                items.append(Ellipsis)
        elif kind == "array":      # 0-3 dims, int64 or int32, some out of range
            ashape = draw(st.lists(st.integers(0, 3), max_size=3))
            vals = draw(st.lists(st.integers(-size - 1, size), min_size=int(np.prod(ashape)),
                                 max_size=int(np.prod(ashape))))
            items.append(np.array(vals, draw(st.sampled_from([np.int64, np.int32]))).reshape(ashape))
        elif kind == "mask":       # over 1 or 2 dims, sometimes of the wrong shape
            k = draw(st.integers(1, 2))
            mshape = [shape[d] if d < len(shape) else 1 for d in range(dim, dim + k)]
            if draw(st.integers(0, 5)) == 0:
                mshape[0] += 1
            vals = draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))
            items.append(np.array(vals, bool).reshape(mshape))
        elif kind == "scalar_tensor":
            items.append(np.array(draw(st.integers(-size, size - 1) if size else st.just(0)),
                                  draw(st.sampled_from([np.int64, np.bool_]))))
        else:
            items.append(draw(st.booleans()))
    return tuple(items)


def _convert(items, mod):
    return tuple(mod.tensor(i) if isinstance(i, np.ndarray) else i for i in items)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=shapes, transposed=st.booleans())
def test_random_index_tuples_like_torch(data, shape, transposed):
    torch = pytest.importorskip("torch")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if transposed:
        a = np.ascontiguousarray(a.T).T
    items = data.draw(index_items(tuple(a.shape)))
    x = tl.tensor(np.ascontiguousarray(a.T)).permute(*reversed(range(a.ndim))) if transposed else tl.tensor(a)
    xt = torch.tensor(a)
    try:
        want = xt[_convert(items, torch)]
    except (IndexError, RuntimeError, TypeError, ValueError):
        with pytest.raises((IndexError, RuntimeError, TypeError, ValueError)):
            x[_convert(items, tl)]
        return
    got = x[_convert(items, tl)]
    assert_same(got, want)
    # the same index assigns the same elements
    y, yt = x.clone(), xt.clone()
    y[_convert(items, tl)] = -1.0
    yt[_convert(items, torch)] = -1.0
    assert_same(y, yt)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_random_gather_scatter_like_numpy(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    ishape = [data.draw(st.integers(0, s)) for s in shape]
    ishape[dim] = data.draw(st.integers(0, 6))
    lo, hi = (-2, shape[dim] + 1) if data.draw(st.booleans()) else (0, shape[dim] - 1)
    idx = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(ishape)),
                                      max_size=int(np.prod(ishape))))).reshape(ishape).astype(np.int64)
    a = np.random.randn(*shape).astype(np.float32)
    x, i = tl.tensor(a), tl.tensor(idx)
    valid = idx.size == 0 or (idx.min() >= 0 and idx.max() < shape[dim])
    if not valid:
        with pytest.raises(RuntimeError, match="out of bounds"):
            tl.gather(x, dim, i)
        before = x.clone()
        with pytest.raises(RuntimeError, match="out of bounds"):
            x.scatter_add_(dim, i, tl.ones(*ishape))
        assert_same(x, before.numpy())
        return
    assert_same(tl.gather(x, dim, i), np.take_along_axis(a[tuple(slice(0, s) if d != dim else slice(None)
                                                              for d, s in enumerate(ishape))], idx, dim))
    want = a.copy()
    coords = list(np.indices(ishape))
    coords[dim] = idx
    np.add.at(want, tuple(coords), 1.0)
    assert_same(x.scatter_add(dim, i, tl.ones(*ishape)), want)


def test_advanced_write_into_expanded_tensor_raises():
    x = tl.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[tl.tensor([0, 1])] = tl.tensor([1.0, 2.0])


# ---- slice_scatter, select_scatter, diagonal_scatter ---------------------------------------------
def _scatter_ref(x, region, src):
    out = x.copy()
    region(out)[...] = src
    return out


def test_scatter_of_regions_match_numpy():
    from helpers import assert_values, make_noncontig
    x = np.arange(24.0).reshape(4, 6)
    for label, t in make_noncontig(x):
        s = np.full((4, 2), -1.0)
        assert_values(tl.slice_scatter(t, tl.tensor(s), 1, 1, 5, 2),
                      _scatter_ref(x, lambda a: a[:, 1:5:2], s), msg=label)
        assert_values(tl.slice_scatter(t, tl.zeros(4, 6), 1, -10, 100), np.zeros((4, 6)), msg=label)
        assert_values(t.select_scatter(tl.tensor(np.ones(6)), 0, -1),
                      _scatter_ref(x, lambda a: a[-1], np.ones(6)), msg=label)
        d = np.array([7.0, 8.0, 9.0, 10.0])
        assert_values(tl.diagonal_scatter(t, tl.tensor(d), 2),
                      _scatter_ref(x, lambda a: np.einsum("ii->i", a[:, 2:]), d), msg=label)
        assert_values(t, x, msg=label)                      # the input is not modified
    r = tl.slice_scatter(tl.tensor(x), tl.zeros(2, 6, dtype=tl.int64), 0, 2)
    assert r.dtype is tl.float64 and r[2:].abs().sum().item() == 0


def test_scatter_of_regions_errors():
    x = tl.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"src size = \[3, 3\], slice size = \[3, 2\]"):
        tl.slice_scatter(x, tl.zeros(3, 3), 1, 0, 4, 2)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        tl.slice_scatter(x, tl.zeros(3, 2), 1, step=0)
    with pytest.raises(RuntimeError, match="equal to the slice"):
        tl.select_scatter(x, tl.zeros(3), 0, 0)
    with pytest.raises(IndexError):
        tl.select_scatter(x, tl.zeros(4), 0, 5)
    with pytest.raises(RuntimeError, match="equal to the slice"):
        tl.diagonal_scatter(x, tl.zeros(2), 1)
    with pytest.raises(IndexError):
        tl.slice_scatter(x, x, 2)


def test_unravel_index_matches_numpy():
    idx = np.array([0, 5, 11, -1, 7])
    got = tl.unravel_index(tl.tensor(idx), (3, 4))
    want = np.unravel_index(idx % 12, (3, 4))
    assert len(got) == 2 and all(g.dtype is tl.int64 for g in got)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    assert [t.item() for t in tl.unravel_index(tl.tensor(9), (2, 5))] == [1, 4]
    with pytest.raises(ValueError, match="out of bounds"):
        tl.unravel_index(tl.tensor([12]), (3, 4))
    with pytest.raises(TypeError, match="integer"):
        tl.unravel_index(tl.tensor([1.0]), (3, 4))


# ---- index_reduce ----------------------------------------------------------------------------------
def _np_index_reduce(a, dim, index, src, reduce, include_self):
    """Slice i of src reduced into slice index[i] of a copy of a, along dim."""
    out = np.moveaxis(a.astype(np.float64).copy(), dim, 0)
    s = np.moveaxis(src.astype(np.float64), dim, 0)
    ops = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}
    for j in set(index.tolist()):
        group = [s[i] for i in range(len(index)) if index[i] == j] + ([out[j]] if include_self else [])
        out[j] = ops[reduce](np.stack(group), axis=0)
    out = np.moveaxis(out, 0, dim)
    if np.issubdtype(a.dtype, np.integer):
        out = np.floor(out) if reduce == "mean" else out
    return out.astype(a.dtype)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_index_reduce_matches_numpy(reduce, include_self, dtype):
    rng = np.random.default_rng(31)
    for dim, shape, src_shape in ((0, (5, 3), (7, 3)), (1, (2, 4, 3), (2, 6, 3)), (-1, (3, 4), (3, 5))):
        a = (rng.standard_normal(shape) * 4).astype(dtype)
        src = (rng.standard_normal(src_shape) * 4).astype(dtype)
        index = rng.integers(0, shape[dim], src_shape[dim])
        want = _np_index_reduce(a, dim % a.ndim, index, src, reduce, include_self)
        got = tl.from_numpy(a).index_reduce(dim, tl.from_numpy(index), tl.from_numpy(src), reduce,
                                            include_self=include_self)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        x = tl.from_numpy(a.copy())
        assert x.index_reduce_(dim, tl.from_numpy(index).int(), tl.from_numpy(src), reduce,
                               include_self=include_self) is x
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)


def test_index_reduce_errors_and_gradient():
    x = tl.ones(3, 2)
    with pytest.raises(IndexError, match="index out of range"):
        x.index_reduce_(0, tl.tensor([0, 5]), tl.ones(2, 2), "prod")
    with pytest.raises(IndexError, match="index out of range"):
        x.index_reduce_(0, tl.tensor([-1, 0]), tl.ones(2, 2), "prod")
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size"):
        x.index_reduce_(0, tl.tensor([0, 1]), tl.ones(3, 2), "prod")
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin"):
        x.index_reduce_(0, tl.tensor([0, 1]), tl.ones(2, 2), "sum")
    with pytest.raises(IndexError, match="supposed to be a vector"):
        x.index_reduce_(0, tl.tensor([[0, 1]]), tl.ones(2, 2), "prod")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.index_reduce_(0, tl.tensor([0.0, 1.0]), tl.ones(2, 2), "prod")
    np.testing.assert_array_equal(x.numpy(), np.ones((3, 2)))          # checked before writing
    a = tl.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tl.float64, requires_grad=True)
    s = tl.tensor([[2.0, 5.0], [3.0, 1.0], [4.0, 6.0]], dtype=tl.float64, requires_grad=True)
    i = tl.tensor([0, 0, 1])
    assert tl.autograd.gradcheck(lambda a, s: a.index_reduce(0, i, s, "prod"), (a, s))
    assert tl.autograd.gradcheck(lambda a, s: a.index_reduce(0, i, s, "mean", include_self=False), (a, s))


def test_nonzero_static_pads_or_cuts():
    x = tl.tensor([[0, 1], [2, 0], [3, 4]])
    full = np.argwhere(x.numpy() != 0)
    np.testing.assert_array_equal(tl.nonzero_static(x, size=2).numpy(), full[:2])
    np.testing.assert_array_equal(x.nonzero_static(size=5, fill_value=-7).numpy(),
                                  np.concatenate([full, [[-7, -7]]]))
    assert tl.nonzero_static(tl.tensor(3), size=2).shape == (2, 0)
    assert tl.nonzero_static(x, size=0).shape == (0, 2)
    with pytest.raises(RuntimeError, match="non-negative integer"):
        tl.nonzero_static(x, size=-1)


def test_error_types_as_pytorch_for_out_aliasing_and_values():
    # an expanded out= (its elements alias each other) is refused before any resize, an out=
    # sharing the input's memory too (PyTorch's assert_no_internal_overlap / assert_no_overlap)
    x = tl.randn(3, 6)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tl.index_select(x, 1, tl.tensor([0, 1]), out=tl.empty(1, 6).expand(2, 6))
    v = tl.randn(10)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        tl.kthvalue(v, 5, out=(v, tl.empty((), dtype=tl.int64)))
    values, indices = tl.empty(0), tl.empty(0, dtype=tl.int64)
    tl.kthvalue(v, 5, out=(values, indices))          # separate out= tensors are fine
    assert values.item() == np.sort(v.numpy())[4]
    # a complex value fills a real tensor only without an imaginary part
    z = tl.zeros(2)
    assert z.masked_fill(tl.tensor(True), 1 + 0j).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="cannot be converted to type float without overflow"):
        z.masked_fill(tl.tensor(True), 1j)
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        tl.zeros(2, dtype=tl.int64).masked_fill(tl.tensor(True), 2j)
    assert tl.zeros(2, dtype=tl.bool).masked_fill(tl.tensor(True), 1j).tolist() == [True, True]
    # narrow_copy: a too-large dim is PyTorch's RuntimeError, a too-negative one an IndexError
    t = tl.zeros(10, 5, 20)
    with pytest.raises(RuntimeError, match="Expected dim <"):
        tl.narrow_copy(t, 3, 0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.narrow_copy(t, -4, 0, 0)
    # arange: a zero step is a RuntimeError, a fractional one that truncates to 0 for an integer
    # result PyTorch's ValueError
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tl.arange(0, 3, 0)
    with pytest.raises(ValueError, match="step must be nonzero"):
        tl.arange(0, 64, 0.5, out=tl.empty(0, dtype=tl.int64))
