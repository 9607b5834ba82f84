"""cat/stack and variants, splits, repeat/tile/repeat_interleave, roll, tril/triu, diag and
friends, block_diag, meshgrid, cartesian_prod and rot90 against NumPy (and PyTorch, where
installed, for dtype promotion and semantics NumPy lacks)."""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl

from helpers import DTYPE_NAMES, NP_DTYPE, tensor_of, to_numpy


def rand(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-50, 50, shape).astype(NP_DTYPE[dtype])


def layouts(a, dtype="float32"):
    """The values of a as contiguous, transposed, stepped and offset tensors."""
    yield tensor_of(a, dtype)
    if a.ndim >= 2:
        yield tensor_of(np.ascontiguousarray(np.swapaxes(a, 0, -1)), dtype).transpose(0, -1)
    if a.ndim >= 1:
        yield tensor_of(np.repeat(a, 2, axis=-1), dtype)[..., ::2]
        if a.shape[0]:
            yield tensor_of(np.concatenate([a[:1], a], 0), dtype)[1:]


def same(got, want):
    got = to_numpy(got) if isinstance(got, tl.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# ---- cat and stack ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_cat_every_dtype_and_layout(dtype, threads):
    a, b = rand((3, 4, 5), dtype, 1), rand((3, 2, 5), dtype, 2)
    for ta in layouts(a, dtype):
        for tb in layouts(b, dtype):
            r = tl.cat([ta, tb], 1)
            assert r.dtype is ta.dtype
            same(r, np.concatenate([a, b], 1))
    same(tl.cat((tensor_of(a, dtype), tensor_of(a, dtype)), -1), np.concatenate([a, a], -1))
    same(tl.concat([tensor_of(a, dtype)] * 3), np.concatenate([a] * 3))
    same(tl.concatenate([tensor_of(a, dtype)], dim=2), a)


def test_cat_large_parallel(threads):
    a, b = rand((300, 200), "float32", 3), rand((300, 100), "float32", 4)
    same(tl.cat([tl.tensor(a), tl.tensor(b).t().contiguous().t()], 1), np.concatenate([a, b], 1))


def test_cat_type_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
    for x, y in itertools.product(names, names):
        mine = tl.cat([tl.ones(2, dtype=getattr(tl, x)), tl.ones(3, dtype=getattr(tl, y))])
        theirs = torch.cat([torch.ones(2, dtype=getattr(torch, x)),
                            torch.ones(3, dtype=getattr(torch, y))])
        assert mine.dtype.name == str(theirs.dtype).split(".")[1]
        same(mine.float(), theirs.float().numpy())


def test_cat_promotes_values():
    r = tl.cat([tl.tensor([1, 2], dtype=tl.int32), tl.tensor([0.5])])
    assert r.dtype is tl.float32
    same(r, [1., 2., 0.5])
    r = tl.cat([tl.tensor([True, False]), tl.tensor([7], dtype=tl.uint8)])
    assert r.dtype is tl.uint8
    same(r, [1, 0, 7])


def test_cat_skips_legacy_empty_1d():
    x = rand((2, 3))
    same(tl.cat([tl.ones(0), tl.tensor(x), tl.ones(0)], 1), x)
    r = tl.cat([tl.ones(0), tl.ones(0)])
    assert r.shape == (0,)
    same(tl.cat([tl.tensor(x), tl.ones(0, 3)]), x)         # a (0, 3) tensor is not skipped
    with pytest.raises(RuntimeError, match="Expected size 3 but got size 0 for tensor number 1"):
        tl.cat([tl.tensor(x), tl.ones(2, 0)], 0)
    assert tl.cat([tl.tensor(x), tl.ones(2, 0)], 1).shape == (2, 3)


def test_cat_skipping_matches_torch():
    torch = pytest.importorskip("torch")
    x = rand((2, 3))
    for parts in ([np.zeros(0), x], [x, np.zeros(0), x], [np.zeros((2, 0)), x]):
        mine = tl.cat([tl.tensor(p, dtype=tl.float32) for p in parts], 1)
        theirs = torch.cat([torch.tensor(p, dtype=torch.float32) for p in parts], 1)
        same(mine, theirs.numpy())


def test_cat_out():
    x = rand((2, 3))
    out = tl.empty(0)
    r = tl.cat([tl.tensor(x), tl.tensor(x)], out=out)
    assert r is out
    same(out, np.concatenate([x, x]))
    out64 = tl.zeros(4, 3, dtype=tl.float64)
    tl.cat([tl.tensor(x), tl.tensor(x)], out=out64)
    same(out64, np.concatenate([x, x]))
    with pytest.raises(TypeError, match="can't be cast to the desired output type Int"):
        tl.cat([tl.tensor(x)], out=tl.empty(2, 3, dtype=tl.int32))
    with pytest.raises(TypeError, match="can't be cast to the desired output type Bool"):
        tl.cat([tl.tensor([1, 2])], out=tl.empty(2, dtype=tl.bool))
    t = tl.tensor(x)
    with pytest.raises(RuntimeError, match="single memory location"):
        tl.cat([t, t], out=t)


def test_cat_errors():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. "
                                           "Expected size 2 but got size 3 for tensor number 1 in "
                                           "the list."):
        tl.cat([tl.ones(2, 2), tl.ones(3, 2)], 1)
    with pytest.raises(RuntimeError, match="same number of dimensions: got 2 and 1"):
        tl.cat([tl.ones(2, 2), tl.ones(2)], 1)
    with pytest.raises(RuntimeError, match="zero-dimensional tensor \\(at position 0\\)"):
        tl.cat([tl.tensor(1.), tl.ones(2)])
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        tl.cat([])
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        tl.cat(tl.ones(2))
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        tl.cat([tl.ones(2), [1, 2]])
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.cat([tl.ones(2), tl.ones(2)], 1)


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "bfloat16", "float64"])
def test_stack_family(dtype):
    a, b = rand((3, 4), dtype, 5), rand((3, 4), dtype, 6)
    for ta, tb in zip(layouts(a, dtype), layouts(b, dtype)):
        for d in range(-3, 3):
            same(tl.stack([ta, tb], d), np.stack([a, b], d))
        same(tl.hstack([ta, tb]), np.hstack([a, b]))
        same(tl.vstack([ta, tb]), np.vstack([a, b]))
        same(tl.row_stack((ta, tb)), np.vstack([a, b]))
        same(tl.dstack([ta, tb]), np.dstack([a, b]))
        same(tl.column_stack([ta, tb]), np.column_stack([a, b]))
    v, s = rand((4,), dtype, 7), rand((), dtype, 8)
    tv, ts = tensor_of(v, dtype), tensor_of(s, dtype)
    same(tl.hstack([tv, ts, tv]), np.hstack([v, s, v]))
    same(tl.vstack([tv, tv]), np.vstack([v, v]))
    same(tl.vstack([ts, ts]), np.vstack([s, s]))
    same(tl.dstack([tv, tv]), np.dstack([v, v]))
    same(tl.dstack([ts]), np.dstack([s]))
    same(tl.column_stack([tv, tensor_of(a.T, dtype)]), np.column_stack([v, a.T]))
    same(tl.column_stack([ts, ts]), np.column_stack([s, s]))
    same(tl.stack([ts, ts]), np.stack([s, s]))
    out = tl.empty(0, dtype=getattr(tl, dtype))
    assert tl.stack([tv, tv], 1, out=out) is out
    same(out, np.stack([v, v], 1))


def test_stack_errors():
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size, but got "
                                           "\\[2, 3\\] at entry 0 and \\[2, 2\\] at entry 1"):
        tl.stack([tl.ones(2, 3), tl.ones(2, 2)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        tl.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.stack([tl.ones(2, 3)], 3)
    with pytest.raises(RuntimeError, match="hstack expects a non-empty TensorList"):
        tl.hstack([])


# ---- splitting -----------------------------------------------------------------------------
def _shares(view, base):
    return view._data.same_storage(base._data)


def test_split_and_chunk_views():
    x = rand((7, 4))
    for t in layouts(x):
        parts = tl.split(t, 3)
        assert [p.shape[0] for p in parts] == [3, 3, 1]
        for p, w in zip(parts, np.split(x, [3, 6])):
            same(p, w)
            assert _shares(p, t)
        for p, w in zip(t.split([1, 4, 2]), np.split(x, [1, 5])):
            same(p, w)
        for p, w in zip(tl.split(t, 2, dim=1), np.split(x, 2, axis=1)):
            same(p, w)
        for p, w in zip(t.chunk(3, -1), np.split(x, [2], axis=1)):
            same(p, w)
        for p, w in zip(tl.unsafe_split(t, 4), np.split(x, [4])):
            same(p, w)
        for p, w in zip(t.unsafe_chunk(3, -1), np.split(x, [2], axis=1)):
            same(p, w)
        for p, w in zip(tl.unsafe_split_with_sizes(t, [1, 4, 2]), np.split(x, [1, 5])):
            same(p, w)
    assert [p.shape[0] for p in tl.chunk(tl.arange(6), 4)] == [2, 2, 2]
    assert [p.shape[0] for p in tl.chunk(tl.arange(0), 3)] == [0, 0, 0]
    assert [p.shape[0] for p in tl.split(tl.arange(0), 0)] == [0]
    assert [p.shape[0] for p in tl.split(tl.arange(5), 5)] == [5]
    assert [p.shape[0] for p in tl.split(tl.arange(5), 9)] == [5]


def test_split_chunk_match_torch():
    torch = pytest.importorskip("torch")
    for n, c in itertools.product(range(0, 9), range(1, 6)):
        mine = [p.shape[0] for p in tl.chunk(tl.arange(n), c)]
        theirs = [p.shape[0] for p in torch.chunk(torch.arange(n), c)]
        assert mine == theirs, (n, c)
        if n:
            assert [p.shape[0] for p in tl.split(tl.arange(n), c)] == \
                [p.shape[0] for p in torch.split(torch.arange(n), c)]
        assert [p.shape[0] for p in tl.tensor_split(tl.arange(n), c)] == \
            [p.shape[0] for p in torch.tensor_split(torch.arange(n), c)]


def test_tensor_split():
    x = rand((7, 6))
    t = tl.tensor(x)
    for s in (1, 3, 7, 9):
        for p, w in zip(tl.tensor_split(t, s), np.array_split(x, s)):
            same(p, w)
    for idx in ([1, 5], [1, 5, 3, 10], [-2], [0, 0]):
        got = t.tensor_split(idx)
        want = np.split(x, idx)
        assert len(got) == len(want)
        for p, w in zip(got, want):
            same(p, w)
    for p, w in zip(tl.tensor_split(t, tl.tensor([2, 4]), dim=1), np.split(x, [2, 4], axis=1)):
        same(p, w)
    for p, w in zip(tl.tensor_split(t, tl.tensor(3), 1), np.array_split(x, 3, axis=1)):
        same(p, w)


def test_directional_splits():
    x = rand((4, 6, 8))
    t = tl.tensor(x)
    for got, want in ((tl.hsplit(t, 3), np.hsplit(x, 3)), (t.vsplit([1, 3]), np.vsplit(x, [1, 3])),
                      (tl.dsplit(t, 4), np.dsplit(x, 4)), (tl.hsplit(tl.tensor(x[0, 0]), 2),
                                                           np.hsplit(x[0, 0], 2))):
        assert len(got) == len(want)
        for p, w in zip(got, want):
            same(p, w)


def test_split_errors():
    t = tl.arange(5)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly "
                                           "to 5"):
        tl.split(t, [2, 2])
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        tl.split(t, 0)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative"):
        tl.split(t, -1)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        tl.chunk(t, 0)
    with pytest.raises(RuntimeError, match="chunk expects at least a 1-dimensional tensor"):
        tl.chunk(tl.tensor(1.), 2)
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        tl.tensor_split(t, 0)
    with pytest.raises(RuntimeError, match="dtype of long, but got Float"):
        tl.tensor_split(t, tl.tensor([1.]))
    with pytest.raises(RuntimeError, match="hsplit attempted to split along dimension 1, but the "
                                           "size of the dimension 3 is not divisible by the "
                                           "split_size 2!"):
        tl.hsplit(tl.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="hsplit requires a tensor with at least 1 dimension"):
        tl.hsplit(tl.tensor(1.), 1)
    with pytest.raises(RuntimeError, match="vsplit requires a tensor with at least 2 dimension"):
        tl.vsplit(tl.ones(3), 1)
    with pytest.raises(RuntimeError, match="dsplit requires a tensor with at least 3 dimension"):
        tl.dsplit(tl.ones(2, 3), 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.split(tl.ones(2, 3), 1, dim=2)


# ---- repeating -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "bfloat16", "float64"])
def test_repeat_and_tile(dtype, threads):
    x = rand((2, 3), dtype, 9)
    for t in layouts(x, dtype):
        for reps in [(1, 1), (2, 3), (3, 1), (1, 4), (2, 1, 2), (0, 2), (2, 2, 1, 3)]:
            same(t.repeat(*reps), np.tile(x, reps))
            same(t.repeat(reps), np.tile(x, reps))
        for reps in [(2,), (2, 2), (3, 1, 2)]:
            same(tl.tile(t, reps), np.tile(x, reps))
            same(t.tile(reps), np.tile(x, reps))
    s = tensor_of(rand((), dtype, 10), dtype)
    same(s.repeat(2, 3), np.tile(to_numpy(s), (2, 3)))
    big = tl.tensor(rand((40, 50)))
    same(big.repeat(30, 2), np.tile(to_numpy(big), (30, 2)))
    same(tl.tensor(rand((1, 3))).expand(4, 3).repeat(1, 2), np.tile(rand((1, 3)), (4, 2)))


def test_repeat_errors():
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "):
        tl.ones(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        tl.ones(2, 3).repeat(2, -1)
    with pytest.raises(TypeError, match="repeats"):
        tl.ones(2).repeat()
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        tl.ones(2).repeat(())


def test_empty_repeats_tuple():
    """x.repeat(()) repeats a 0-d tensor no times (a copy, in the graph); tile(x, ()) leaves
    any tensor as it is (its dims pad the empty tuple with ones)."""
    x = tl.tensor(3.0, requires_grad=True)
    for r in (x.repeat(()), x.repeat([]), tl.tile(x, ())):
        assert r.shape == () and r.item() == 3.0 and r.requires_grad and r is not x
    a = np.arange(6.0).reshape(2, 3)
    assert_values(tl.tile(tl.tensor(a), ()), np.tile(a, ()))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float16", "bfloat16", "float32"])
def test_repeat_interleave(dtype):
    x = rand((3, 4), dtype, 11)
    for t in layouts(x, dtype):
        same(tl.repeat_interleave(t, 2), np.repeat(x, 2))
        same(t.repeat_interleave(3, dim=1), np.repeat(x, 3, axis=1))
        same(t.repeat_interleave(0, dim=0), np.repeat(x, 0, axis=0))
        reps = np.array([1, 0, 3])
        same(tl.repeat_interleave(t, tl.tensor(reps), dim=0), np.repeat(x, reps, axis=0))
        reps = np.array([2, 1, 0, 2])
        same(t.repeat_interleave(tl.tensor(reps), dim=-1, output_size=5),
             np.repeat(x, reps, axis=1))
        same(tl.repeat_interleave(t, tl.tensor([2]), dim=1), np.repeat(x, 2, axis=1))
        same(tl.repeat_interleave(t, tl.tensor(2)), np.repeat(x, 2))
    flat_reps = np.arange(12) % 3
    same(tl.repeat_interleave(tensor_of(x, dtype), tl.tensor(flat_reps)),
         np.repeat(x.ravel(), flat_reps))
    same(tl.repeat_interleave(tl.tensor([2, 0, 1])), np.repeat(np.arange(3), [2, 0, 1]))
    same(tl.repeat_interleave(tensor_of(rand((), dtype, 12), dtype), 3),
         np.repeat(rand((), dtype, 12), 3))


def test_repeat_interleave_errors():
    t = tl.tensor([[1, 2], [3, 4]])
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        tl.repeat_interleave(t, tl.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        tl.repeat_interleave(t, tl.tensor([1, -2]), dim=0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        tl.repeat_interleave(t, -1)
    with pytest.raises(RuntimeError, match="allocated size does not match required size"):
        tl.repeat_interleave(t, tl.tensor([1, 2]), dim=0, output_size=4)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        tl.repeat_interleave(t, tl.tensor([1., 2.]), dim=0)


# ---- roll ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "int16", "int64", "bfloat16", "float32"])
def test_roll(dtype, threads):
    x = rand((4, 5, 6), dtype, 13)
    for t in layouts(x, dtype):
        for shifts, dims in [(1, 0), (-2, 1), (7, 2), ((1, 2), (0, 2)), ((3, -1, 4), (0, 1, 2)),
                             ((1, 1), (1, 1)), (0, 0), (5, -3)]:
            same(tl.roll(t, shifts, dims), np.roll(x, shifts, dims))
        for shifts in (3, -7, 0, 121):
            same(t.roll(shifts), np.roll(x, shifts))
    same(tl.roll(tl.tensor(5), 1), np.roll(np.array(5), 1))
    same(tl.roll(tl.ones(0, 3), 2, 0), np.ones((0, 3)))
    same(tl.roll(tl.arange(0), 1), np.arange(0))


def test_roll_errors():
    t = tl.arange(6).view(2, 3)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        tl.roll(t, (1, 2), (0,))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:0"):
        tl.roll(t, (1, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.roll(t, 1, 2)
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        tl.roll(tl.tensor(5), 1, 0)


# ---- triangles and diagonals ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_tril_triu(dtype, threads):
    x = rand((3, 5, 6), dtype, 14)
    for t in layouts(x, dtype):
        for k in (-7, -2, 0, 1, 3, 8):
            same(tl.tril(t, k), np.tril(x, k))
            same(t.triu(diagonal=k), np.triu(x, k))
            same(tl.triu(t[0], k), np.triu(x[0], k))
    big = rand((2, 300, 200), "float32", 15)
    same(tl.tril(tl.tensor(big), 5), np.tril(big, 5))
    same(tl.triu(tl.tensor(big).transpose(1, 2), -3), np.triu(big.transpose(0, 2, 1), -3))
    same(tl.tril(tl.ones(0, 3)), np.zeros((0, 3)))


def test_tril_triu_inplace_and_out():
    x = rand((4, 6))
    for t in layouts(x):
        before = t._version
        r = t.tril_(1)
        assert r is t and t._version > before
        same(t, np.tril(x, 1))
    for t in layouts(x):
        t.triu_(-1)
        same(t, np.triu(x, -1))
    base = tl.tensor(rand((6, 4)))
    view = base.t()
    view.tril_()
    same(base, np.tril(rand((6, 4)).T).T)        # the write goes through the view
    out = tl.empty(0)
    assert tl.triu(tl.tensor(x), 2, out=out) is out
    same(out, np.triu(x, 2))
    t = tl.tensor(x)
    tl.tril(t, out=t)
    same(t, np.tril(x))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        tl.tril(tl.ones(3))
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        tl.ones(3).triu_()
    with pytest.raises(RuntimeError, match="single memory location"):
        tl.ones(1, 3).expand(3, 3).tril_()


def test_tri_indices():
    for n, m, k in [(3, 4, 1), (4, 3, -1), (5, 5, 0), (0, 3, 0), (3, 0, 0), (4, 4, 10),
                    (4, 4, -10)]:
        same(tl.tril_indices(n, m, k), np.stack(np.tril_indices(n, k, m)))
        same(tl.triu_indices(n, m, k), np.stack(np.triu_indices(n, k, m)))
    r = tl.tril_indices(3, 3, dtype=tl.int32)
    assert r.dtype is tl.int32 and tl.triu_indices(3, 3).dtype is tl.int64
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        tl.tril_indices(-1, 4)
    with pytest.raises(NotImplementedError, match="\"triu_indices\" not implemented for 'Float'"):
        tl.triu_indices(3, 4, dtype=tl.float32)


@pytest.mark.parametrize("dtype", ["bool", "int32", "bfloat16", "float64"])
def test_diag_family(dtype):
    v = rand((4,), dtype, 16)
    m = rand((4, 6), dtype, 17)
    for k in (-5, -1, 0, 2, 6):
        same(tl.diag(tensor_of(v, dtype), k), np.diag(v, k))
        for t in layouts(m, dtype):
            got = tl.diag(t, k)
            same(got, np.diag(m, k))
            assert got.numel() == 0 or not _shares(got, t)
        same(tl.diagflat(tensor_of(m, dtype), k), np.diagflat(m, k))
    same(tensor_of(v, dtype).diag(), np.diag(v))
    same(tl.diagflat(tensor_of(rand((), dtype, 18), dtype)), np.diagflat(rand((), dtype, 18)))
    out = tl.empty(0, dtype=getattr(tl, dtype))
    assert tl.diag(tensor_of(v, dtype), 1, out=out) is out
    same(out, np.diag(v, 1))
    with pytest.raises(RuntimeError, match="Supports 1D or 2D tensors. Got 3D"):
        tl.diag(tl.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="Got 0D"):
        tl.diag(tl.tensor(1.))


def _np_diag_embed(x, offset, d1, d2):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    for i in range(x.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = x[..., i]
    nd = out.ndim
    d1, d2 = d1 % nd, d2 % nd
    rest = [d for d in range(nd) if d not in (d1, d2)]
    order = [0] * nd
    for src, dst in zip(range(nd - 2), rest):
        order[dst] = src
    order[d1], order[d2] = nd - 2, nd - 1
    return out.transpose(order)


def test_diag_embed():
    x = rand((2, 3, 4))
    for t in layouts(x):
        for offset, d1, d2 in [(0, -2, -1), (1, 0, 2), (-2, 3, 1), (2, 1, 0)]:
            same(tl.diag_embed(t, offset, d1, d2), _np_diag_embed(x, offset, d1, d2))
            same(t.diag_embed(offset, d1, d2), _np_diag_embed(x, offset, d1, d2))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        tl.diag_embed(tl.ones(2, 3), 0, 1, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.diag_embed(tl.tensor(1.))


def test_diag_embed_matches_torch():
    torch = pytest.importorskip("torch")
    x = rand((2, 3))
    for offset, d1, d2 in [(0, -2, -1), (1, 0, 2), (-1, 2, 0)]:
        same(tl.diag_embed(tl.tensor(x), offset, d1, d2),
             torch.diag_embed(torch.tensor(x), offset, d1, d2).numpy())


def test_block_diag():
    a, b, c = rand((2, 3), "int32"), rand((3,), "float32"), rand((), "float64")
    got = tl.block_diag(tl.tensor(a), tl.tensor(b), tl.tensor(c), tl.ones(0, 2))
    want = np.zeros((4, 9))
    want[:2, :3] = a
    want[2, 3:6] = b
    want[3, 6] = c
    assert got.dtype is tl.float64
    same(got, want)
    assert tl.block_diag().shape == (1, 0)
    same(tl.block_diag(tl.tensor(a).t()), a.T)
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 1 "
                                           "has 3 dimensions"):
        tl.block_diag(tl.ones(2), tl.ones(2, 2, 2))


def test_block_diag_matches_torch():
    torch = pytest.importorskip("torch")
    parts = [np.ones((2, 2)), np.arange(3.), np.array(5.), np.ones((0, 2))]
    same(tl.block_diag(*[tl.tensor(p) for p in parts]),
         torch.block_diag(*[torch.tensor(p) for p in parts]).numpy())


# ---- grids and rotation --------------------------------------------------------------------
def test_meshgrid():
    a, b, c = np.arange(3), np.arange(4) * 10, np.array([7, 8])
    for indexing in ("ij", "xy"):
        got = tl.meshgrid(tl.tensor(a), tl.tensor(b), tl.tensor(c), indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
            same(g, w)
        got = tl.meshgrid([tl.tensor(a), tl.tensor(b)], indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, indexing=indexing)):
            same(g, w)
    g = tl.meshgrid(tl.tensor(a), tl.tensor(5), indexing="ij")
    assert g[0].shape == (3, 1)
    t = tl.tensor(a)
    assert _shares(tl.meshgrid(t, t, indexing="ij")[0], t)      # expanded views
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        same(tl.meshgrid(tl.tensor(a), tl.tensor(b))[1], np.meshgrid(a, b, indexing="ij")[1])
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        tl.meshgrid(indexing="ij")
    with pytest.raises(RuntimeError, match="indexing must be one of \"xy\" or \"ij\""):
        tl.meshgrid(t, indexing="foo")
    with pytest.raises(RuntimeError, match="same dtype"):
        tl.meshgrid(t, t.float(), indexing="ij")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        tl.meshgrid(tl.ones(2, 2), indexing="ij")


def test_cartesian_prod():
    a, b, c = [1, 2, 3], [4, 5], [6, 7]
    got = tl.cartesian_prod(tl.tensor(a), tl.tensor(b), tl.tensor(c))
    same(got, np.array(list(itertools.product(a, b, c))))
    same(tl.cartesian_prod(tl.tensor(a)[::2], tl.tensor(b)),
         np.array(list(itertools.product(a[::2], b))))
    same(tl.cartesian_prod(tl.tensor(a)), np.array(a))
    assert tl.cartesian_prod(tl.tensor(a), tl.ones(0, dtype=tl.int64)).shape == (0, 2)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        tl.cartesian_prod(tl.ones(2, 2))


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_rot90(dtype):
    x = rand((3, 4, 5), dtype, 19)
    for t in layouts(x, dtype):
        for k in range(-5, 6):
            for dims in [(0, 1), (1, 0), (2, 0), (-1, -2)]:
                same(tl.rot90(t, k, dims), np.rot90(x, k, dims))
        same(t.rot90(), np.rot90(x))
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims = 3"):
        tl.rot90(tl.ones(2, 2), 1, [0, 1, 2])
    with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
        tl.rot90(tl.ones(2))
    with pytest.raises(RuntimeError, match="expected rotation dims to be different"):
        tl.rot90(tl.ones(2, 2), 1, [0, 0])
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.rot90(tl.ones(2, 2), 1, [0, 5])


# ---- property tests ------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), seed=st.integers(0, 2**31),
       nparts=st.integers(1, 4), data=st.data())
def test_cat_split_roundtrip_hypothesis(shape, seed, nparts, data):
    rng = np.random.default_rng(seed)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(nparts):
        s = list(shape)
        s[dim] = int(rng.integers(0, 4))
        parts.append(rng.standard_normal(s).astype(np.float32))
    ts = []
    for p in parts:
        if p.ndim >= 2 and rng.integers(0, 2):
            ts.append(tl.tensor(np.ascontiguousarray(np.swapaxes(p, 0, -1))).transpose(0, -1))
        else:
            ts.append(tl.tensor(p))
    whole = tl.cat(ts, dim)
    same(whole, np.concatenate(parts, dim))
    sizes = [p.shape[dim] for p in parts]
    for piece, p in zip(tl.split(whole, sizes, dim), parts):
        same(piece, p)


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), seed=st.integers(0, 2**31),
       data=st.data())
def test_roll_repeat_hypothesis(shape, seed, data):
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 9, shape)
    t = tl.tensor(np.repeat(x, 2, axis=-1))[..., ::2]
    nd = len(shape)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))
    shifts = data.draw(st.lists(st.integers(-10, 10), min_size=len(dims), max_size=len(dims)))
    same(tl.roll(t, shifts, dims), np.roll(x, shifts, dims))
    reps = data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd + 1))
    same(t.repeat(reps), np.tile(x, reps))


def test_tri_indices_extreme_arguments():
    """Huge offsets clamp (the triangle stops changing); huge sizes are refused at once."""
    assert tuple(tl.tril_indices(3, 3, 2 ** 63 - 1).shape) == (2, 9)
    assert tuple(tl.triu_indices(3, 3, -2 ** 63).shape) == (2, 9)
    assert tuple(tl.tril_indices(3, 3, -2 ** 63).shape) == (2, 0)
    with pytest.raises(RuntimeError, match="too many"):
        tl.tril_indices(2 ** 40, 2 ** 40)


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
def test_tri_indices_count_matches_numpy_and_torch(op):
    """The closed-form count (and the rows the kernel is given) agree with NumPy and PyTorch
    for every small size and offset, the ones beyond the matrix included."""
    torch = pytest.importorskip("torch")
    np_op = np.tril_indices if op == "tril_indices" else np.triu_indices
    for n, m in itertools.product(range(6), range(6)):
        for k in range(-8, 9):
            got = getattr(tl, op)(n, m, k)
            same(got, np.stack(np_op(n, k, m)))
            same(got, getattr(torch, op)(n, m, k).numpy())


def test_tri_indices_huge_sizes_fail_or_answer_at_once():
    """PyTorch allocates the result before listing anything: tril_indices(2**31, 7) (15e9
    indices) fails at once with the allocator's RuntimeError, where torchlite used to count
    2**31 rows first (about 1.4 s).  triu_indices(2**31, 7) has 28 indices and answers at once
    (the empty rows are not visited), and so do the other transposed cases."""
    import time
    torch = pytest.importorskip("torch")
    for op, args in [("tril_indices", (2 ** 31, 7)), ("triu_indices", (7, 2 ** 31)),
                     ("tril_indices", (2 ** 31, 7, 2 ** 31)), ("triu_indices", (2 ** 31, 7, -2 ** 31 + 3))]:
        start = time.perf_counter()
        with pytest.raises(RuntimeError):
            getattr(torch, op)(*args)
        with pytest.raises(RuntimeError, match="allocate|too many"):
            getattr(tl, op)(*args)
        assert time.perf_counter() - start < 0.5, (op, args)
    for op, args in [("triu_indices", (2 ** 31, 7)), ("tril_indices", (7, 2 ** 31)),
                     ("tril_indices", (2 ** 31, 7, -2 ** 31 + 3)), ("triu_indices", (2 ** 40, 1)),
                     ("tril_indices", (7, 2 ** 31, -2 ** 31)), ("triu_indices", (2 ** 63 - 1, 1))]:
        start = time.perf_counter()
        got = getattr(tl, op)(*args)
        assert time.perf_counter() - start < 0.5, (op, args)
        same(got, getattr(torch, op)(*args).numpy())
    # sizes past int64 overflow the index arithmetic: PyTorch's RuntimeError, before anything
    with pytest.raises(RuntimeError, match="too many"):
        tl.triu_indices(2 ** 31, 2 ** 31)
    # on the meta device only the shape is made, as PyTorch's
    want = tuple(torch.tril_indices(2 ** 31, 7, device="meta").shape)
    assert tuple(tl.tril_indices(2 ** 31, 7, device="meta").shape) == want == (2, 7 * 2 ** 31 - 21)


def test_tri_indices_argument_errors_match_torch():
    """PyTorch's exception types, in its order: the argument parser's ValueError for values
    beyond int64 and TypeError for non-integers, then the signs of row and col, then the
    dtype (int32 and int64 only: the others are NotImplementedError)."""
    torch = pytest.importorskip("torch")
    cases = [((2 ** 63, 1), {}), ((1, 2 ** 63), {}), ((3, 4, 2 ** 63), {}), ((3, 4, -2 ** 63 - 1), {}),
             ((-1, 5), {}), ((5, -1), {}), ((-1, -1), {}), ((3.0, 4), {}), ((3, 4, True), {}),
             ((-1, 5), {"dtype": "float32"}), ((3, 3), {"dtype": "int8"}), ((3, 3), {"dtype": "int16"}),
             ((3, 3), {"dtype": "uint8"}), ((3, 3), {"dtype": "bool"}), ((3, 3), {"dtype": "float64"})]
    for op in ("tril_indices", "triu_indices"):
        for args, kw in cases:
            kt = {k: getattr(torch, v) for k, v in kw.items()}
            kl = {k: getattr(tl, v) for k, v in kw.items()}
            with pytest.raises(Exception) as want:
                getattr(torch, op)(*args, **kt)
            with pytest.raises(want.type) as got:
                getattr(tl, op)(*args, **kl)
            if want.type in (RuntimeError, NotImplementedError):
                assert str(got.value) == str(want.value), (op, args, kw)
            elif want.type is ValueError:            # torchlite's message names the op too
                assert f"{op}()" in str(got.value)
        for dt in (tl.int32, tl.int64):
            assert getattr(tl, op)(4, 5, 1, dtype=dt).dtype is dt


# ---- diff, combinations, split_with_sizes, narrow_copy --------------------------------------------
from helpers import assert_values, make_noncontig  # noqa: E402


@pytest.mark.parametrize("n,dim", [(1, -1), (2, 0), (3, 1), (0, 1), (9, 1)])
def test_diff_matches_numpy(n, dim):
    x = np.random.default_rng(5).standard_normal((4, 5))
    for label, t in make_noncontig(x):
        assert_values(tl.diff(t, n, dim), np.diff(x, n, dim), 1e-12, msg=label)
    pre, app = np.ones((4, 2)), np.full((4, 1), 3.0)
    for order in (0, 2):        # n=0: the input as it is, prepend and append left out
        assert_values(tl.diff(tl.tensor(x), order, 1, tl.tensor(pre), tl.tensor(app)),
                      np.diff(x, order, 1, prepend=pre, append=app), 1e-12)


def test_diff_dtypes_and_errors():
    assert tl.diff(tl.tensor([True, False, False])).tolist() == [True, False]
    assert tl.diff(tl.tensor([1, 4, 9])).tolist() == [3, 5]
    assert tl.diff(tl.tensor([1, 4]), prepend=tl.tensor([0.5])).dtype is tl.float32
    x = tl.ones(3, 4)
    for call, msg in [(lambda: tl.diff(tl.tensor(1.0)), "at least one-dimensional"),
                      (lambda: tl.diff(x, n=-1), "non-negative"),
                      (lambda: tl.diff(x, append=tl.tensor(1.0)), "same dimension"),
                      (lambda: tl.diff(x, dim=0, prepend=tl.ones(1, 2)), "except along")]:
        with pytest.raises(RuntimeError, match=msg):
            call()


def test_diff_huge_orders_match_torch():
    """n beyond the dim empties it (as PyTorch, for any n up to 2**63 - 1); n = 2**63 or 2**64
    does not fit PyTorch's int64 argument: ValueError (naming diff here), before any check of
    the input, where torchlite used to return an empty tensor."""
    torch = pytest.importorskip("torch")
    x = np.arange(5.0) ** 2
    for n in (4, 5, 6, 100, 2 ** 31, 2 ** 62, 2 ** 63 - 1):
        got = tl.diff(tl.tensor(x), n=n)
        same(got, torch.diff(torch.tensor(x), n=n).numpy())
        same(got, np.diff(x, n=min(n, 5)))
    for n in (2 ** 63, 2 ** 64, -2 ** 63 - 1):
        with pytest.raises(ValueError):
            torch.diff(torch.tensor(x), n=n)
        with pytest.raises(ValueError, match=r"diff\(\): n="):
            tl.diff(tl.tensor(x), n=n)
        with pytest.raises(ValueError):            # before the 0-d input's RuntimeError
            tl.diff(tl.tensor(1.0), n=n)
    with pytest.raises(ValueError, match=r"diff\(\): dim="):
        tl.diff(tl.tensor(x), dim=2 ** 63)
    with pytest.raises(TypeError, match="argument 'dim' must be int"):
        tl.diff(tl.tensor(x), dim=1.0)
    with pytest.raises(TypeError, match="argument 'n' must be int"):
        tl.diff(tl.tensor(1.0), n=True)             # the parser's TypeError comes first too
    # n = 0 gives the input back without looking at dim, as PyTorch's
    same(tl.diff(tl.tensor(x), n=0, dim=5), torch.diff(torch.tensor(x), n=0, dim=5).numpy())
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        tl.diff(tl.tensor(x), n=-1, dim=5)


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations_match_itertools(r, with_replacement):
    x = np.array([3, 1, 4, 1])
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    got = tl.combinations(tl.tensor(x), r, with_replacement)
    if r == 0:
        assert tuple(got.shape) == (0,)
        return
    ref = np.array(list(make(x.tolist(), r)), dtype=np.int64).reshape(-1, r)
    assert_values(got, ref)
    buf = np.zeros(8, np.int64)
    buf[::2] = x[::-1]
    assert_values(tl.combinations(tl.tensor(buf)[::2], r, with_replacement),       # a stepped view
                  np.array(list(make(x[::-1].tolist(), r)), dtype=np.int64).reshape(-1, r))
    with pytest.raises(RuntimeError, match="1D vector"):
        tl.combinations(tl.ones(2, 2))
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.combinations(tl.ones(2), -1)


@pytest.mark.parametrize("n,r", [(1, 2), (2, 3), (3, 0), (3, 2)])
def test_combinations_stay_in_the_graph_even_when_empty(n, r):
    x = tl.arange(1.0, n + 1, dtype=tl.float64).requires_grad_()
    got = tl.combinations(x, r)
    assert got.requires_grad and got.grad_fn is not None
    got.sum().backward()
    rows = list(itertools.combinations(range(n), r)) if r else []
    want = np.zeros(n)
    for row in rows:
        for i in row:
            want[i] += 1
    assert_values(x.grad, want)


def test_split_with_sizes_and_narrow_copy():
    x = tl.arange(12.0).view(3, 4)
    a, b = x.split_with_sizes([1, 2])
    assert a.tolist() == [[0, 1, 2, 3]] and tuple(b.shape) == (2, 4)
    c, d = tl.split_with_sizes(x, [3, 1], dim=1)
    assert tuple(c.shape) == (3, 3) and d.tolist() == [[3], [7], [11]]
    with pytest.raises(RuntimeError, match="sum exactly to 3"):
        x.split_with_sizes([1, 1])
    y = tl.narrow_copy(x.t(), 1, 1, 2)
    assert y.is_contiguous() and y.tolist() == x.t()[:, 1:3].tolist()
    z = x.narrow_copy(0, 1, 1)
    z.fill_(-1)
    assert x[1].tolist() == [4, 5, 6, 7]            # a copy, not a view
