"""Creation functions (torchlite/_ops/creation.py): tensor() inference, NumPy interop and
memory sharing, filled tensors, ranges, *_like and the default dtype."""
import math

import numpy as np
import pytest

import torchlite as tl

from helpers import ALL_DTYPES, NP_DTYPE, default_dtype, to_numpy, torch_or_skip


# ---------------------------------------------------------------------------------------
# tensor(): dtype and shape inference
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype, shape", [
    (3, tl.int64, ()), (3.5, tl.float32, ()), (True, tl.bool, ()),
    ([1, 2, 3], tl.int64, (3,)), ([1, 2.5], tl.float32, (2,)), ([True, 1], tl.int64, (2,)),
    ([True, 1.5], tl.float32, (2,)), ([True, False], tl.bool, (2,)),
    ([[1, 2], [3, 4]], tl.int64, (2, 2)), ((1, 2), tl.int64, (2,)), ([[1, 2], (3, 4)], tl.int64, (2, 2)),
    ([], tl.float32, (0,)), ([[]], tl.float32, (1, 0)), ([[], []], tl.float32, (2, 0)),
    (range(4), tl.int64, (4,)), ([[[1.5]]], tl.float32, (1, 1, 1)),
    ([np.float32(1.5), np.float32(2.5)], tl.float32, (2,)), ([np.int32(1), np.int64(2)], tl.int64, (2,)),
    ([np.bool_(True)], tl.bool, (1,)),
])
def test_tensor_inference(data, dtype, shape):
    t = tl.tensor(data)
    assert t.dtype is dtype and t.shape == shape
    assert t.is_contiguous()
    np.testing.assert_array_equal(to_numpy(t), np.array(data, dtype=NP_DTYPE[dtype.name]).reshape(shape))


def test_tensor_inference_matches_torch():
    torch = torch_or_skip()
    for data in ([1, 2], [1.0], [True], [[1, 2.0]], [], [[]], 5, 2.5, False, [True, 2]):
        a, b = tl.tensor(data), torch.tensor(data)
        assert a.dtype.name == str(b.dtype)[6:] and tuple(a.shape) == tuple(b.shape), data


@pytest.mark.parametrize("data", [[[1, 2], [3]], [1, [2, 3]], [[1, 2], 3], [[1], [[2]]],
                                  [[], [1]], [[[]], [1]]])
def test_tensor_ragged_raises(data):
    with pytest.raises(ValueError, match="expected"):
        tl.tensor(data)


def test_empty_array_is_contiguous_at_array_level():
    assert tl.tensor([[], []])._data.is_contiguous()


def test_tensor_bad_data():
    for bad in (None, [None], "abc", ["a"], [object()], {1: 2}):
        with pytest.raises((TypeError, RuntimeError, ValueError)):
            tl.tensor(bad)
    assert tl.tensor(1 + 2j).item() == 1 + 2j        # complex numbers make complex tensors


@pytest.mark.parametrize("data,exc,msg", [
    (["a", "b"], ValueError, "too many dimensions 'str'"),      # read as one more dimension
    ([["a"]], ValueError, "too many dimensions 'str'"),
    ("a", TypeError, "invalid data type 'str'"),
    ([1, "a"], TypeError, "invalid data type 'str'"),
    (b"ab", TypeError, "invalid data type 'bytes'"),
])
def test_tensor_of_strings_raises_as_torch(data, exc, msg):
    with pytest.raises(exc, match=msg):
        tl.tensor(data)


def test_tensor_explicit_dtype():
    assert tl.tensor([1.7, -1.7], dtype=tl.int32).tolist() == [1, -1]
    assert tl.tensor([1, 2], dtype=tl.float16).dtype is tl.float16
    assert tl.tensor([0, 2, 0], dtype=tl.bool).tolist() == [False, True, False]
    assert tl.tensor(2 ** 62).item() == 2 ** 62
    assert tl.tensor([-2 ** 63]).item() == -2 ** 63
    with pytest.raises(RuntimeError, match="overflow"):
        tl.tensor([2 ** 63])
    for d in ALL_DTYPES:
        t = tl.tensor([[0, 1], [1, 0]], dtype=d)
        assert t.dtype is d and t.tolist() == [[0, 1], [1, 0]]


def test_integer_fill_value_out_of_range_raises():
    for fn in (lambda: tl.tensor([300], dtype=tl.uint8), lambda: tl.full((2,), 300, dtype=tl.uint8),
               lambda: tl.zeros(2, dtype=tl.int8).fill_(-129)):
        with pytest.raises(RuntimeError, match="overflow"):
            fn()


def test_tensor_from_tensors():
    a = tl.tensor([tl.tensor(1), tl.tensor(2)])
    assert a.dtype is tl.int64 and a.tolist() == [1, 2]
    b = tl.tensor([tl.tensor(1, dtype=tl.int32), tl.tensor(2, dtype=tl.int32)])
    assert b.dtype is tl.int32
    c = tl.tensor([tl.tensor(1, dtype=tl.int32), 5])
    assert c.dtype is tl.int64 and c.tolist() == [1, 5]
    d = tl.tensor([tl.tensor(1.5), 2])
    assert d.dtype is tl.float32
    src = tl.tensor([1.0, 2.0])
    e = tl.tensor(src)
    assert e.tolist() == [1.0, 2.0] and e.data_ptr() != src.data_ptr()
    src.add_(1)
    assert e.tolist() == [1.0, 2.0]
    assert tl.tensor(src.t() if src.ndim == 2 else src, dtype=tl.int64).dtype is tl.int64
    nc = tl.arange(6.0).view(2, 3).t()
    cp = tl.tensor(nc)
    assert cp.tolist() == nc.tolist() and cp.is_contiguous()


def test_tensor_from_a_list_of_tensors_reads_them_as_pytorch_does():
    # a one-element tensor where a value belongs is that value (a list of per-sample outputs
    # of shape [1] gives shape [N], not [N, 1]); where a sequence belongs, its rows; a tensor
    # of several elements where a value belongs is an error (values checked against PyTorch)
    T = tl.tensor
    assert T([T([1.0]), T([2.0])]).shape == (2,)
    assert T([[T([[1.0]])], [T([[2.0]])]]).shape == (2, 1)
    assert T([[2.0], T([1.0])]).tolist() == [[2.0], [1.0]]
    assert T([[1.0, 2.0], T([3.0, 4.0])]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    h = T([T([1.0], dtype=tl.float16), 3])
    assert h.dtype is tl.float16 and h.tolist() == [1.0, 3.0]
    assert T([T(1, dtype=tl.int32), T(2.0, dtype=tl.float64)]).dtype is tl.float64
    assert T([T(1, dtype=tl.int32), 2.5]).dtype is tl.float32
    assert T([T(1j), T(2.0)]).dtype is tl.complex64
    for bad in ([T([1.0, 2.0]), T([3.0, 4.0])], [T([])]):
        with pytest.raises(ValueError, match="only one element tensors"):
            T(bad)


def test_legacy_constructors_copy_numpy_arrays():
    a = np.array([1.0, 2.0])
    t = tl.Tensor(a)
    assert t.dtype is tl.float32 and t.tolist() == [1.0, 2.0]
    n = tl.zeros(2, dtype=tl.int32).new(np.array([3, 4]))
    assert n.dtype is tl.int32 and n.tolist() == [3, 4]
    assert tl.Tensor(np.int64(3)).shape == (3,) and tl.Tensor(np.array(3)).shape == (3,)  # sizes
    with pytest.raises(TypeError):
        tl.Tensor(np.float32(2.5))


def test_tensor_from_numpy_copies():
    a = np.arange(6.0).reshape(2, 3)
    t = tl.tensor(a)
    assert t.dtype is tl.float64 and t.is_contiguous()
    a[0, 0] = 99
    assert t[0, 0].item() == 0.0
    for arr in (a[:, ::2], a.T, a[::-1], np.asfortranarray(a), np.arange(5, dtype=">i4"),
                np.arange(4.0, dtype=">f8").reshape(2, 2), np.array(5.0), np.float32(2.5),
                np.zeros((0, 3), np.int16), np.arange(3, dtype=np.uint8)):
        t = tl.tensor(arr)
        assert t.shape == np.shape(arr) and t.is_contiguous()
        want = np.asarray(arr)
        np.testing.assert_array_equal(t.numpy(), want)
        assert t.numpy().dtype == want.dtype.newbyteorder("=")
    assert tl.tensor(np.array([1, 2], np.int32), dtype=tl.float64).dtype is tl.float64
    with pytest.raises(TypeError):
        tl.tensor(np.array([1, 2], dtype=np.uint16))
    with pytest.raises(TypeError):
        tl.tensor(np.array(["a"]))
    obj = np.array([1, 2.5], dtype=object)
    assert tl.tensor(obj).tolist() == [1.0, 2.5]


def test_from_numpy_and_as_tensor_share_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tl.from_numpy(a)
    assert t.dtype is tl.float32 and t.shape == (2, 3)
    a[1, 2] = -1
    assert t[1, 2].item() == -1
    t[0, 0] = 42
    assert a[0, 0] == 42
    v = tl.from_numpy(a[:, ::2])                  # strided NumPy view: strides carried over
    assert v.stride() == (3, 2) and v.tolist() == a[:, ::2].tolist()
    s = tl.as_tensor(a)
    s.mul_(2)
    assert a[0, 0] == 84
    assert tl.as_tensor(a, dtype=tl.float64).dtype is tl.float64
    a[0, 0] = 0
    assert tl.as_tensor(a, dtype=tl.float64)[0, 0].item() == 0.0
    ta = tl.tensor([1, 2])
    assert tl.as_tensor(ta) is ta
    assert tl.as_tensor(ta, dtype=tl.float32).dtype is tl.float32
    assert tl.as_tensor([1, 2]).tolist() == [1, 2]
    assert tl.asarray(a).data_ptr() == a.ctypes.data
    assert tl.asarray(a, copy=True).data_ptr() != a.ctypes.data
    with pytest.raises(TypeError):
        tl.from_numpy([1, 2])
    with pytest.raises((TypeError, ValueError)):
        tl.from_numpy(np.arange(3, dtype=">i4"))
    with pytest.raises(ValueError, match="negative"):
        tl.from_numpy(np.arange(4.0)[::-1])
    big_endian = np.arange(3, dtype=">f4")
    t = tl.as_tensor(big_endian)                 # cannot share: converted to native order
    assert t.tolist() == [0.0, 1.0, 2.0]
    zero_d = tl.from_numpy(np.array(3.5))
    assert zero_d.shape == () and zero_d.item() == 3.5


def test_from_numpy_keeps_array_alive():
    import gc
    t = tl.from_numpy(np.arange(100_000, dtype=np.int64))     # the only reference to the array
    gc.collect()
    junk = [np.full(100_000, -1, dtype=np.int64) for _ in range(5)]   # reuse freed memory
    assert t[99_999].item() == 99_999 and t[::25_000].tolist() == [0, 25_000, 50_000, 75_000]
    del junk


# ---------------------------------------------------------------------------------------
# zeros / ones / full / empty / eye
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_filled(dt):
    for size in ((2, 3), [2, 3], (0,), (), (1, 1, 1)):
        for fn, v in ((tl.zeros, 0), (tl.ones, 1)):
            t = fn(size, dtype=dt)
            assert t.dtype is dt and t.shape == tuple(size) and t.is_contiguous()
            np.testing.assert_array_equal(to_numpy(t), np.full(size, v, dtype=NP_DTYPE[dt.name]))
        f = tl.full(size, 3 if dt is not tl.bool else True, dtype=dt)
        np.testing.assert_array_equal(to_numpy(f), np.full(size, 3, dtype=NP_DTYPE[dt.name]))
        e = tl.empty(size, dtype=dt)
        assert e.shape == tuple(size) and e.dtype is dt
    assert tl.zeros(2, 3, dtype=dt).shape == (2, 3)


def test_full_dtype_follows_value():
    assert tl.full((2,), 3).dtype is tl.int64
    assert tl.full((2,), 3.0).dtype is tl.float32
    assert tl.full((2,), True).dtype is tl.bool
    assert tl.full((2,), tl.tensor(2.5)).tolist() == [2.5, 2.5]
    assert tl.full((2,), 1.5, dtype=tl.int64).tolist() == [1, 1]
    assert tl.full((2,), np.float64(2.5)).dtype is tl.float32
    assert tl.full([], 7).shape == ()
    assert tl.full((1,), -0.0).numpy()[0] == 0 and np.signbit(tl.full((1,), -0.0).numpy()[0])
    assert math.isnan(tl.full((1,), math.nan).item())
    with default_dtype(tl.float64):
        assert tl.full((1,), 1.0).dtype is tl.float64


def test_size_arguments():
    assert tl.zeros(2, 3).shape == tl.zeros((2, 3)).shape == tl.zeros([2, 3]).shape == (2, 3)
    assert tl.zeros(()).shape == () and tl.ones([]).shape == ()
    assert tl.zeros(np.int64(2), tl.tensor(3)).shape == (2, 3)
    assert tl.empty(tl.Size([4, 1])).shape == (4, 1)
    with pytest.raises(RuntimeError, match="negative"):
        tl.zeros(2, -1)
    with pytest.raises(TypeError):
        tl.zeros(2.5)
    with pytest.raises(TypeError):
        tl.ones("a")
    with pytest.raises(TypeError):
        tl.empty((2, None))


def test_creation_out_and_requires_grad():
    out = tl.empty(5)
    assert tl.zeros(2, 3, out=out) is out and out.shape == (2, 3) and out.tolist() == [[0.0] * 3] * 2
    assert tl.ones(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        tl.zeros(2, dtype=tl.int64, requires_grad=True)


def test_eye():
    for n, m in ((3, None), (2, 4), (4, 2), (0, None), (1, 0)):
        want = np.eye(n, m, dtype=np.float32)
        np.testing.assert_array_equal(tl.eye(n, m).numpy(), want)
    assert tl.eye(2, dtype=tl.int64).tolist() == [[1, 0], [0, 1]]
    assert tl.eye(2, dtype=tl.bool).dtype is tl.bool
    with pytest.raises(RuntimeError):
        tl.eye(-1)
    with pytest.raises(TypeError):
        tl.eye(2.5)


# ---------------------------------------------------------------------------------------
# arange / linspace / logspace
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kw", [
    ((5,), {}), ((1, 4), {}), ((0, 1, 0.25), {}), ((5, 0, -1), {}), ((5, 0, -1.5), {}),
    ((0, 5), {"dtype": "float64"}), ((0.5, 5), {}), ((0, 1, 0.1), {}), ((-1.0, 1.0, 0.1), {}),
    ((0, 5.5), {"dtype": "int64"}), ((0, 10, 2.5), {"dtype": "int32"}), ((0, 10, 2.5), {"dtype": "int64"}),
    ((-0.5, 3.7, 1.5), {"dtype": "int64"}), ((5, 0, -1.5), {"dtype": "int32"}),
    ((0, 1, 0.5), {"dtype": "int32"}), ((0, 300), {"dtype": "uint8"}), ((0, 5), {"dtype": "float16"}),
    ((1, 2.5, 0.5), {"dtype": "uint8"}), ((5, 5), {}), ((10, 20, 3), {"dtype": "int16"}),
    ((0, 3), {"dtype": "bfloat16"}), ((1e6, 1e6 + 5), {"dtype": "float64"}), ((-3, 3), {"dtype": "int8"}),
])
def test_arange_matches_torch(args, kw):
    torch = torch_or_skip()
    want = torch.arange(*args, **{k: getattr(torch, v) for k, v in kw.items()})
    got = tl.arange(*args, **{k: getattr(tl, v) for k, v in kw.items()})
    assert got.dtype.name == str(want.dtype)[6:]
    assert tuple(got.shape) == tuple(want.shape)
    # float32 values may differ in the last bit: torch's vector loop adds the step in float
    tol = 0 if got.dtype in (tl.float64,) or not got.is_floating_point() else 1e-6
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.double().numpy(), rtol=tol,
                               atol=tol)


def test_arange_values_without_torch():
    np.testing.assert_array_equal(tl.arange(10).numpy(), np.arange(10))
    np.testing.assert_array_equal(tl.arange(3, -7, -2).numpy(), np.arange(3, -7, -2))
    np.testing.assert_allclose(tl.arange(0, 1, 0.1, dtype=tl.float64).numpy(), np.arange(0, 1, 0.1),
                               rtol=0, atol=1e-15)
    assert tl.arange(0, 1, 0.1).shape == (10,) and tl.arange(-1.0, 1.0, 0.1).shape == (20,)
    assert tl.arange(tl.tensor(3)).tolist() == [0, 1, 2]
    assert tl.arange(np.int32(3)).dtype is tl.int64
    big = tl.arange(2 ** 40, 2 ** 40 + 3)
    assert big.tolist() == [2 ** 40, 2 ** 40 + 1, 2 ** 40 + 2]
    out = tl.empty(0, dtype=tl.int64)
    assert tl.arange(3, out=out) is out and out.tolist() == [0, 1, 2]


def test_arange_errors():
    for args, kw in (((0, 5, 0), {}), ((0, 5, -1), {}), ((5, 0), {}), ((math.inf,), {}),
                     ((0, math.nan), {}), ((0, 5), {"dtype": tl.bool}), ((1e20,), {})):
        with pytest.raises(RuntimeError):
            tl.arange(*args, **kw)
    with pytest.raises(ValueError):        # a step that truncates to 0 for the integer dtype (PyTorch's type)
        tl.arange(0, 1, 0.5, dtype=tl.int64)
    with pytest.raises(TypeError):
        tl.arange("5")


@pytest.mark.parametrize("start, end, steps, dt", [
    (0, 1, 5, None), (0, 1, 1, None), (0, 1, 0, None), (1, 0, 4, None), (0, 10, 5, "int64"),
    (-3, 7, 4, "int32"), (0, 1, 7, "float64"), (-1.5, 2.5, 33, "float64"), (2, 2, 3, None),
    (0, 255, 10, "uint8"), (0, 1, 11, "float16"), (10, -10, 7, "int64"),
])
def test_linspace_matches_torch(start, end, steps, dt):
    torch = torch_or_skip()
    want = torch.linspace(start, end, steps, dtype=getattr(torch, dt) if dt else None)
    got = tl.linspace(start, end, steps, dtype=getattr(tl, dt) if dt else None)
    assert got.dtype.name == str(want.dtype)[6:] and tuple(got.shape) == tuple(want.shape)
    tol = 1e-6 if got.dtype is tl.float32 else 1e-3 if got.dtype is tl.float16 else 0
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.double().numpy(), rtol=tol,
                               atol=tol)
    if steps >= 2 and got.is_floating_point():
        assert got[0].item() == want[0].item() and got[-1].item() == want[-1].item()


def test_linspace_values_without_torch():
    got = tl.linspace(-2.0, 3.0, 101, dtype=tl.float64).numpy()
    np.testing.assert_allclose(got, np.linspace(-2.0, 3.0, 101), rtol=0, atol=1e-15)
    assert got[0] == -2.0 and got[-1] == 3.0
    assert tl.linspace(0, 1, 1).tolist() == [0.0]
    assert tl.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(RuntimeError):
        tl.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        tl.linspace(0, 1, 2.5)


def test_logspace():
    np.testing.assert_allclose(tl.logspace(0, 2, 3).numpy(), [1.0, 10.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(tl.logspace(0, 3, 4, base=2).numpy(), [1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(tl.logspace(-1, 1, 5, dtype=tl.float64).numpy(),
                               np.logspace(-1, 1, 5), rtol=1e-14)
    assert tl.logspace(0, 2, 3, dtype=tl.int64).tolist() == [1, 10, 100]
    torch = pytest.importorskip("torch")
    for args in ((0, 2, 3), (1, -1, 7), (0, 3, 4)):
        np.testing.assert_allclose(tl.logspace(*args).numpy(), torch.logspace(*args).numpy(),
                                   rtol=1e-6)


# ---------------------------------------------------------------------------------------
# *_like, new_*, legacy constructor
# ---------------------------------------------------------------------------------------
def test_like_functions():
    src = tl.tensor([[1, 2, 3]], dtype=tl.int32)
    for fn, v in ((tl.zeros_like, 0), (tl.ones_like, 1)):
        t = fn(src)
        assert t.dtype is tl.int32 and t.shape == (1, 3) and t.tolist() == [[v] * 3]
        assert fn(src, dtype=tl.float64).dtype is tl.float64
    assert tl.full_like(src, 2.7).tolist() == [[2, 2, 2]]       # the input's dtype, not the value's
    assert tl.full_like(tl.tensor([1.0]), 3).dtype is tl.float32
    assert tl.full_like(src, 7, dtype=tl.float16).dtype is tl.float16
    e = tl.empty_like(src)
    assert e.shape == src.shape and e.dtype is src.dtype and e.data_ptr() != src.data_ptr()
    assert tl.ones_like(src, requires_grad=False).requires_grad is False
    with pytest.raises(TypeError):
        tl.zeros_like([1, 2])


def test_like_preserves_dense_layout():
    torch = torch_or_skip()
    base_tl, base_t = tl.arange(24.0).view(2, 3, 4), torch.arange(24.0).view(2, 3, 4)
    for view in (lambda x: x.t() if x.ndim == 2 else x.permute(2, 0, 1), lambda x: x.transpose(0, 1),
                 lambda x: x[:, ::2], lambda x: x[0, :1].expand(5, 4), lambda x: x,
                 lambda x: x.permute(1, 2, 0)[:, 1:]):
        a, b = view(base_tl), view(base_t)
        for fn in ("empty_like", "zeros_like", "ones_like"):
            # a dense input keeps its strides; any other gets dense strides in its own dim
            # order (PyTorch's infer_dense_strides; torchlite used to go row-major there)
            got, want = getattr(tl, fn)(a), getattr(torch, fn)(b)
            assert got.stride() == want.stride(), (fn, got.stride(), want.stride())
        assert tl.full_like(a, 5).tolist() == torch.full_like(b, 5).tolist()


def test_new_methods():
    x = tl.tensor([1, 2], dtype=tl.int32)
    assert x.new_zeros(3).dtype is tl.int32 and x.new_zeros(3).tolist() == [0, 0, 0]
    assert x.new_ones((2, 1)).shape == (2, 1)
    assert x.new_full((2,), 5).tolist() == [5, 5]
    assert x.new_empty(4).shape == (4,)
    assert x.new_tensor([1.5]).dtype is tl.int32
    assert x.new_tensor([1.5], dtype=tl.float32).tolist() == [1.5]
    assert x.new_zeros(2, dtype=tl.float64).dtype is tl.float64


def test_legacy_constructor():
    t = tl.Tensor([1, 2])
    assert t.dtype is tl.float32 and t.tolist() == [1.0, 2.0]
    assert tl.Tensor(2, 3).shape == (2, 3) and tl.Tensor().shape == (0,)
    src = tl.tensor([1.0])
    assert tl.Tensor(src).data_ptr() == src.data_ptr()
    assert isinstance(t, tl.Tensor)


@pytest.mark.parametrize("make,dtype", [
    (lambda: tl.as_tensor(np.int32(3)), tl.int32), (lambda: tl.as_tensor(np.float64(2.5)), tl.float64),
    (lambda: tl.tensor(np.float32(2)), tl.float32), (lambda: tl.tensor(np.bool_(True)), tl.bool),
    (lambda: tl.tensor([np.float64(1.5)]), tl.float64),
    (lambda: tl.tensor([np.int32(1), np.int32(2)]), tl.int32),
    (lambda: tl.tensor([np.float32(1), 2.5]), tl.float32),
    (lambda: tl.tensor([np.int32(1), 2]), tl.int64),
    (lambda: tl.tensor([np.float32(1), np.float64(2)]), tl.float64),
    (lambda: tl.tensor([np.int32(1), np.float32(2)]), tl.float32),
    (lambda: tl.tensor([1.5, np.float64(2)]), tl.float64),
    (lambda: tl.tensor([np.int8(1), True]), tl.int8),
    (lambda: tl.tensor([np.uint8(1), 2.0]), tl.float32)])
def test_numpy_scalars_keep_their_dtype(make, dtype):
    """As PyTorch: a NumPy scalar counts with its own dtype, promoted with Python values'."""
    t = make()
    assert t.dtype == dtype
    assert t.dim() in (0, 1)


def test_from_numpy_refuses_numpy_scalars():
    """A NumPy scalar's buffer is a temporary: sharing it would read freed memory (torch
    raises TypeError too); as_tensor copies it instead."""
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tl.from_numpy(np.float32(3.5))
    assert tl.as_tensor(np.float32(3.5)).item() == 3.5
    assert tl.as_tensor(np.bool_(True)).item() is True


@pytest.mark.parametrize("name,ref", [
    ("hann_window", np.hanning), ("hamming_window", np.hamming),
    ("blackman_window", np.blackman), ("bartlett_window", np.bartlett)])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_windows_match_numpy(name, ref, n):
    """The symmetric window is NumPy's; the periodic one (the default) is the first n of the
    symmetric window of n + 1."""
    fn = getattr(tl, name)
    np.testing.assert_allclose(fn(n, periodic=False, dtype=tl.float64).numpy(), ref(n),
                               atol=1e-12)
    want = ref(n + 1)[:n] if n > 1 else np.ones(n)
    np.testing.assert_allclose(fn(n, dtype=tl.float64).numpy(), want, atol=1e-12)
    assert fn(n).dtype is tl.float32
    with pytest.raises(RuntimeError, match="floating point"):
        fn(3, dtype=tl.int64)


def test_scalar_tensor_empty_strided_fill_zero():
    assert tl.scalar_tensor(3).dtype is tl.float32 and tl.scalar_tensor(3).shape == ()
    e = tl.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)
    assert tl.ones(2).new_empty_strided((3,), (2,)).stride() == (2,)
    x = tl.ones(2, 3, requires_grad=True)
    f = tl.fill(x, 4.0)
    np.testing.assert_array_equal(f.detach().numpy(), np.full((2, 3), 4.0))
    assert f.requires_grad                              # in the graph, as PyTorch's
    f.sum().backward()
    assert x.grad is None or not x.grad.any().item()    # with no gradient for input
    v = tl.tensor(2.0, requires_grad=True)
    tl.fill(tl.ones(3), v).sum().backward()
    assert v.grad.item() == 3.0
    z = tl.ones(3)
    assert tl.zero_(z) is z and z.tolist() == [0.0] * 3


def test_numpy_integers_are_taken_where_pytorch_takes_ints():
    # num_classes = labels.max() + 1 on a NumPy array, then torch.eye(num_classes)[labels]
    n, z = np.int64(3), np.int64(0)
    assert tl.eye(n).shape == (3, 3) and tl.eye(n, np.int32(2)).shape == (3, 2)
    assert tl.linspace(0, 1, n).tolist() == [0.0, 0.5, 1.0] and tl.logspace(0, 1, n).shape == (3,)
    x = tl.ones(1, 3)
    assert x.squeeze(z).shape == (3,) and x.squeeze((z,)).shape == (3,)
    assert x.flip(z).shape == (1, 3) and tl.movedim(x, z, 1).shape == (3, 1)
    assert tl.linalg.matrix_power(tl.eye(2) * 2, n).tolist() == [[8.0, 0.0], [0.0, 8.0]]
    for bad in (2.0, True):
        with pytest.raises(TypeError):
            tl.eye(bad)


@pytest.mark.parametrize("v", [float("inf"), float("-inf"), float("nan"), 1e30, -1e30, [1.5, float("inf")]])
def test_a_float_outside_int64_is_pytorchs_runtime_error(v):
    with pytest.raises(RuntimeError, match="cannot be converted to type int64 without overflow"):
        tl.tensor(v, dtype=tl.int64)
