"""The Tensor API: metadata, the Python protocol (bool/float/int/index/len/iter/format),
item/tolist/numpy/__array__, dtype and device conversion, copy_/fill_/zero_, Size, device,
and repr() text against PyTorch's."""
import pickle

import numpy as np
import pytest

import torchlite as tl

from helpers import ALL_DTYPES, NP_DTYPE, torch_or_skip


# ---------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------
def test_metadata():
    t = tl.zeros(2, 3, 4, dtype=tl.float64)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tl.Size) and t.size() == t.shape
    assert t.size(1) == 3 and t.size(-1) == 4 and t.stride() == (12, 4, 1) and t.stride(-3) == 12
    assert t.dtype is tl.float64 and t.ndim == 3 and t.dim() == 3 and t.ndimension() == 3
    assert t.numel() == 24 and t.nelement() == 24 and tl.numel(t) == 24
    assert t.element_size() == 8 and t.itemsize == 8 and t.nbytes == 192
    assert t.device == tl.device("cpu") and t.device.type == "cpu" and not t.is_cuda and t.is_cpu
    assert t.get_device() == -1 and t.storage_offset() == 0 and t[1].storage_offset() == 12
    assert t.is_floating_point() and not t.is_complex() and t.is_signed()
    assert not tl.zeros(1, dtype=tl.uint8).is_signed() and not tl.zeros(1, dtype=tl.int8).is_floating_point()
    assert t.is_leaf and t.grad is None and t.grad_fn is None and not t.requires_grad
    assert tl.is_tensor(t) and not tl.is_tensor(np.zeros(1))
    s = tl.tensor(1.0)
    assert s.shape == () and s.stride() == () and s.ndim == 0 and s.numel() == 1
    for bad in (3, -4):
        with pytest.raises(IndexError, match="out of range"):
            t.size(bad)
        with pytest.raises(IndexError, match="out of range"):
            t.stride(bad)
    with pytest.raises(TypeError):
        t.size(1.5)
    assert s.size() == ()


def test_data_ptr_and_storage():
    t = tl.arange(6.0)
    assert t[2:].data_ptr() == t.data_ptr() + 2 * 4
    assert t.untyped_storage() is t.view(2, 3).untyped_storage()
    d = t.data
    assert d.data_ptr() == t.data_ptr()
    other = tl.ones(6)
    t.data = other
    assert t.data_ptr() == other.data_ptr()


# ---------------------------------------------------------------------------------------
# the Python protocol
# ---------------------------------------------------------------------------------------
def test_bool_float_int():
    assert bool(tl.tensor([1.0])) and not bool(tl.tensor(0)) and bool(tl.tensor([[True]]))
    assert not bool(tl.tensor(float("0")))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tl.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tl.tensor([]))
    assert float(tl.tensor([2])) == 2.0 and isinstance(float(tl.tensor(2)), float)
    assert int(tl.tensor([2.7])) == 2 and int(tl.tensor(-2.7)) == -2 and int(tl.tensor(True)) == 1
    assert complex(tl.tensor(1.5)) == 1.5 + 0j
    for fn in (float, int, complex):
        with pytest.raises(ValueError, match="one element"):
            fn(tl.tensor([2, 3]))


def test_index_protocol():
    lst = [10, 20, 30]
    assert lst[tl.tensor(1)] == 20 and lst[tl.tensor([2])] == 30
    assert lst[tl.tensor(True)] == 20                       # as in torch: bool is an integer
    assert lst[tl.tensor(1, dtype=tl.uint8)] == 20
    assert range(10)[tl.tensor(3, dtype=tl.int16)] == 3
    assert np.arange(5)[tl.tensor(4)] == 4
    for bad in (tl.tensor(1.0), tl.tensor([1, 2]), tl.tensor(1, dtype=tl.float16)):
        with pytest.raises(TypeError):
            lst[bad]
    assert isinstance(tl.tensor(5).__index__(), int)


def test_len_and_iteration():
    t = tl.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3 and len(tl.zeros(0, 2)) == 0
    rows = list(t)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    rows[0][1] = 9                                           # rows are views
    assert t[0, 1].item() == 9
    assert [x.item() for x in tl.tensor([1.5, 2.5])] == [1.5, 2.5]
    with pytest.raises(TypeError):
        len(tl.tensor(1))
    with pytest.raises(TypeError):
        iter(tl.tensor(1))
    a, b = tl.tensor([7, 8])
    assert (a.item(), b.item()) == (7, 8)


def test_format():
    assert "{}".format(tl.tensor(2.5)) == "2.5" and f"{tl.tensor(3)}" == "3"
    assert f"{tl.tensor(2.5):.2f}" == "2.50" and format(tl.tensor(7), "03d") == "007"
    assert f"{tl.tensor([1, 2])}" == repr(tl.tensor([1, 2]))
    with pytest.raises(TypeError):
        format(tl.tensor([1.0, 2.0]), ".2f")
    assert str(tl.tensor([1, 2])) == repr(tl.tensor([1, 2]))


def test_hash_and_identity():
    a, b = tl.tensor([1]), tl.tensor([1])
    assert hash(a) != hash(b) or a is b
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2
    assert a in [a] and len({a, b}) == 2


# ---------------------------------------------------------------------------------------
# item / tolist / numpy / __array__
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_item_and_tolist_types(dt):
    vals = [[0, 1, 1], [1, 0, 1]]
    t = tl.tensor(vals).to(dt)
    py = bool if dt is tl.bool else float if dt.is_floating_point else int
    out = t.tolist()
    assert out == [[py(v) for v in r] for r in vals]
    assert all(type(v) is py for r in out for v in r)
    assert type(t[0, 1].item()) is py and type(t[0, 1].tolist()) is py
    assert t.t().tolist() == [list(c) for c in zip(*out)]
    assert tl.zeros(0, 2, dtype=dt).tolist() == [] and tl.zeros(2, 0, dtype=dt).tolist() == [[], []]


def test_item_errors_and_precision():
    with pytest.raises(RuntimeError, match="cannot be converted"):
        tl.tensor([1, 2]).item()
    with pytest.raises(RuntimeError):
        tl.zeros(0).item()
    assert tl.tensor([[3.5]]).item() == 3.5
    assert tl.tensor([1.1]).item() == float(np.float32(1.1))        # float32, widened exactly
    assert tl.tensor([1.1], dtype=tl.float64).item() == 1.1
    assert tl.tensor([2 ** 62 + 1]).item() == 2 ** 62 + 1
    assert tl.tensor([1.5], dtype=tl.bfloat16).item() == 1.5
    assert tl.tensor([0.1], dtype=tl.float16).item() == float(np.float16(0.1))


@pytest.mark.parametrize("dt", [d for d in ALL_DTYPES if d is not tl.bfloat16], ids=lambda d: d.name)
def test_numpy_shares_memory(dt):
    t = tl.tensor([[0, 1, 1], [1, 0, 0]]).to(dt)
    a = t.numpy()
    assert a.dtype == NP_DTYPE[dt.name] and a.shape == (2, 3)
    a[0, 0] = 1
    assert t[0, 0].item() == (True if dt is tl.bool else 1)
    v = t.t()[1:]                                              # a strided view: strides carried
    av = v.numpy()
    np.testing.assert_array_equal(av, np.asarray(t.tolist(), dtype=a.dtype).T[1:])
    assert av.strides == tuple(s * dt.itemsize for s in v.stride())
    t.fill_(0)
    assert not av.any()
    arr = np.asarray(t)
    assert arr.ctypes.data == t.data_ptr()
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert t.__array__(np.int64).dtype == np.int64
    assert np.asarray(tl.tensor(2).to(dt)).shape == ()


def test_numpy_rules():
    with pytest.raises(TypeError, match="BFloat16"):
        tl.zeros(2, dtype=tl.bfloat16).numpy()
    r = tl.ones(2).requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        r.numpy()
    assert r.numpy(force=True).tolist() == [1.0, 1.0]
    assert r.detach().numpy().tolist() == [1.0, 1.0]
    e = tl.zeros(3).expand(2, 3).numpy()
    assert e.strides == (0, 4) and e.shape == (2, 3)
    # NumPy ufuncs and functions accept tensors through __array__
    np.testing.assert_array_equal(np.add(tl.tensor([1, 2]), 1), [2, 3])
    np.testing.assert_array_equal(np.stack([tl.tensor([1, 2]), tl.tensor([3, 4])]), [[1, 2], [3, 4]])


def test_pickle_roundtrip():
    for t in (tl.arange(6.0).view(2, 3).t(), tl.tensor([1, 2], dtype=tl.int8), tl.tensor(True),
              tl.tensor([1.5, -2.25], dtype=tl.bfloat16), tl.zeros(0, 3)):
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is t.dtype and u.shape == t.shape and u.tolist() == t.tolist()
        assert u.data_ptr() != t.data_ptr()
    g = pickle.loads(pickle.dumps(tl.ones(2).requires_grad_()))
    assert g.requires_grad


def test_deepcopy_follows_pytorch():
    """copy.deepcopy(tensor): values copied (not shared), dtype, strides, storage offset,
    requires_grad and the gradient kept, a subclass's type kept, one copy per tensor and per
    storage within one deepcopy (views of one base stay views of one copy); a tensor computed
    in a graph (not a leaf) cannot be copied, as in PyTorch."""
    import copy
    t = tl.arange(6.0).view(2, 3).t()
    u = copy.deepcopy(t)
    assert u.tolist() == t.tolist() and u.stride() == t.stride() and u.data_ptr() != t.data_ptr()
    base = tl.arange(12.0)
    a, b, e = base[2:8].view(2, 3), base[::3], tl.ones(3).expand(4, 3)
    ca, cb, cbase, ce = copy.deepcopy([a, b, base, e])
    assert (ca.storage_offset(), ca.stride(), cb.stride(), ce.stride()) == (2, (3, 1), (3,), (0, 1))
    assert ca.tolist() == a.tolist() and cb.tolist() == b.tolist() and ce.tolist() == e.tolist()
    cbase[3] = -1.0                       # the copies share one new storage, as the originals
    assert ca[0, 1].item() == -1.0 and cb[1].item() == -1.0 and base[3].item() == 3.0
    for v in (tl.tensor([1.5, -2.25], dtype=tl.bfloat16), tl.tensor([1, 2], dtype=tl.int8),
              tl.empty(2, 3, device="meta")):
        w = copy.deepcopy(v)
        assert w.dtype is v.dtype and w.shape == v.shape and w.device == v.device
    leaf = tl.ones(3, requires_grad=True)
    (leaf * 2).sum().backward()
    c = copy.deepcopy(leaf)
    assert c.requires_grad and c.is_leaf and c.grad.tolist() == [2.0] * 3
    assert c.grad.data_ptr() != leaf.grad.data_ptr()
    pair = copy.deepcopy([leaf, leaf])
    assert pair[0] is pair[1]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(leaf * 2)

    class Tagged(tl.Tensor):
        pass
    s = copy.deepcopy(tl.ones(2).as_subclass(Tagged))
    assert type(s) is Tagged and s.tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------
# conversion
# ---------------------------------------------------------------------------------------
def test_to_and_dtype_methods():
    t = tl.tensor([1.7, -1.7, 0.0])
    assert t.to(tl.float32) is t and t.to("cpu") is t and t.to(tl.device("cpu")) is t
    assert t.to(tl.float32, copy=True) is not t and t.to(tl.float32, copy=True).tolist() == t.tolist()
    assert t.to(tl.int64).tolist() == [1, -1, 0] and t.long().dtype is tl.int64
    assert t.to("cpu", tl.float64).dtype is tl.float64
    assert t.to(device="cpu", dtype=tl.float16).dtype is tl.float16
    assert t.to(tl.tensor([1], dtype=tl.int8)).dtype is tl.int8
    for name, dt in (("float", tl.float32), ("double", tl.float64), ("half", tl.float16),
                     ("bfloat16", tl.bfloat16), ("long", tl.int64), ("int", tl.int32),
                     ("short", tl.int16), ("char", tl.int8), ("byte", tl.uint8), ("bool", tl.bool)):
        assert getattr(t, name)().dtype is dt
    assert t.bool().tolist() == [True, True, False]
    assert tl.tensor([-1, 256]).byte().tolist() == [255, 0]
    assert t.type() == "torchlite.FloatTensor" and t.long().type() == "torchlite.LongTensor"
    assert t.type(tl.float64).dtype is tl.float64 and t.type_as(tl.tensor([1])).dtype is tl.int64
    assert t.cpu() is t
    r = tl.ones(2).requires_grad_()
    assert r.double().requires_grad and not r.long().requires_grad
    with pytest.raises(RuntimeError):
        t.to("tpu")
    with pytest.raises(TypeError):
        t.to(tl.float32, bogus=1)
    v = tl.arange(6.0).view(2, 3).t()
    c = v.to(tl.float64)
    assert c.stride() == (1, 3) and c.tolist() == v.tolist()       # keeps the memory order


def test_copy_fill_zero():
    t = tl.zeros(2, 3)
    p = t.data_ptr()
    assert t.copy_(tl.tensor([1, 2, 3])) is t and t.tolist() == [[1.0, 2.0, 3.0]] * 2
    assert t.data_ptr() == p
    t.copy_(tl.tensor([[7.5], [-7.5]], dtype=tl.float64))      # broadcast and cast
    assert t.tolist() == [[7.5] * 3, [-7.5] * 3]
    i = tl.zeros(2, dtype=tl.int32)
    i.copy_(tl.tensor([3.7, -3.7]))
    assert i.tolist() == [3, -3]
    i.copy_(tl.tensor(5))
    assert i.tolist() == [5, 5]
    tt = tl.zeros(3, 2).t()                                    # non-contiguous destination
    tt.copy_(tl.arange(6.0).view(2, 3))
    assert tt.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    x = tl.arange(5.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].copy_(x[:-1])                                    # overlapping source, as torch
    x[1:].copy_(x[:-1].clone())
    assert x.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    ver = x._version
    x.fill_(2.5)
    assert x.tolist() == [2.5] * 5 and x._version > ver
    x.zero_()
    assert x.tolist() == [0.0] * 5
    assert tl.zeros(3, dtype=tl.int32).fill_(2.7).tolist() == [2, 2, 2]
    assert tl.zeros(3, dtype=tl.int32).fill_(tl.tensor(5)).tolist() == [5, 5, 5]
    assert tl.zeros(3, dtype=tl.bool).fill_(5).tolist() == [True] * 3
    m = tl.ones(2, 3)
    m.t().fill_(2)
    m[:, 1].fill_(7)
    assert m.tolist() == [[2.0, 7.0, 2.0]] * 2
    for fn in (lambda: tl.zeros(3).copy_(tl.zeros(2, 3)), lambda: tl.zeros(2, 3).copy_(tl.zeros(2)),
               lambda: tl.zeros(3).expand(2, 3).copy_(tl.ones(2, 3)),
               lambda: tl.zeros(3).fill_(tl.tensor([5.0]))):
        with pytest.raises(RuntimeError):
            fn()
    with pytest.raises(TypeError):
        tl.zeros(3).copy_([1, 2, 3])


def test_in_place_version_counter():
    t = tl.zeros(3)
    v0 = t._version
    t.add_(1)
    t.mul_(2)
    t[0] = 5
    t.copy_(tl.ones(3))
    t.exp_()
    assert t._version >= v0 + 5
    view = t[1:]
    view.zero_()
    assert t._version == view._version                     # views share the counter


# ---------------------------------------------------------------------------------------
# Size and device
# ---------------------------------------------------------------------------------------
def test_size():
    s = tl.Size([2, 3])
    assert s == (2, 3) and repr(s) == "torchlite.Size([2, 3])" and s.numel() == 6
    assert isinstance(s[1:], tl.Size) and s[0] == 2 and isinstance(s + (4,), tl.Size)
    assert (4,) + s == (4, 2, 3) and isinstance((4,) + s, tl.Size)
    assert tl.Size([]).numel() == 1 and repr(tl.Size([])) == "torchlite.Size([])"
    assert tl.zeros(2, 0).shape.numel() == 0
    torch = pytest.importorskip("torch")
    assert repr(tl.zeros(2, 3).shape).replace("torchlite", "torch") == repr(torch.zeros(2, 3).shape)


def test_device():
    d = tl.device("cpu")
    assert d.type == "cpu" and d.index is None and str(d) == "cpu" and repr(d) == "device(type='cpu')"
    c = tl.device("cuda", 1)
    assert c == tl.device("cuda:1") and str(c) == "cuda:1" and repr(c) == "device(type='cuda', index=1)"
    assert tl.device(c) == c and hash(c) == hash(tl.device("cuda:1")) and c != d
    assert pickle.loads(pickle.dumps(c)) == c
    for bad in ("cuda:x", "foo", "cuda:-1"):
        with pytest.raises(RuntimeError):
            tl.device(bad)
    with pytest.raises(RuntimeError):
        tl.device("cuda:0", 1)
    with pytest.raises(TypeError):
        tl.device(3.5)


# ---------------------------------------------------------------------------------------
# repr
# ---------------------------------------------------------------------------------------
_REPR_CASES = [
    "t.tensor([[1., 2.], [3., 4.5]])", "t.arange(3)", "t.tensor([1, 2], dtype=t.int32)",
    "t.tensor([1e-5, 1.])", "t.tensor([1e10, 1.])", "t.tensor([1., 10000.])", "t.tensor([1., 1000.])",
    "t.tensor([123456789.])", "t.tensor([1.5e9, 2.5])", "t.tensor([0.1, 0.2])", "t.tensor([-0.1, 2.])",
    "t.tensor([1., 2., 3.])", "t.tensor([-1., 0., 1.])", "t.tensor([0., 0.])", "t.tensor([True, False])",
    "t.tensor(3.5)", "t.tensor(3)", "t.tensor(True)", "t.tensor(-0.0)", "t.tensor(1e-7)",
    "t.tensor(float('nan'))", "t.tensor([])", "t.zeros(0, 3)", "t.zeros(2, 0, dtype=t.int64)",
    "t.zeros(0, dtype=t.int64)", "t.zeros(0, dtype=t.float64)", "t.zeros(0, 2, dtype=t.bool)",
    "t.arange(2000)", "t.arange(2000.)", "t.arange(1500).view(30, 50)", "t.arange(2400).view(4, 20, 30)",
    "t.arange(24).view(2, 3, 4)", "t.arange(24.).view(2, 3, 4) / 7", "t.tensor([1., 2.], dtype=t.float16)",
    "t.tensor([1.5, 2.25], dtype=t.bfloat16)", "t.tensor([-5, 3, 100])", "t.tensor([[-5., 3.25], [100., 1.]])",
    "t.tensor([float('nan'), 1., float('inf')])", "t.tensor([float('nan'), 1.5, -float('inf')])",
    "t.tensor([0.5, 0., -0.])", "t.tensor([1., 2., 3.], dtype=t.float64)", "t.arange(100.) / 3",
    "t.arange(30.).view(3, 10) * 1e5", "t.arange(50, dtype=t.int16)", "t.linspace(0, 1, 30, dtype=t.float64)",
    "t.tensor([2**40, -3])", "t.tensor([1e-10, 1e10])", "t.tensor([[1e-10, 1e10]], dtype=t.float64)",
    "t.tensor([0.00012, 123.4])", "t.tensor([1.1, float('nan')])", "t.tensor([float('inf'), -float('inf')])",
    "t.tensor([[True, False], [False, True]])", "t.arange(1001) % 2 == 0", "t.tensor([1., 2.]).requires_grad_()",
    "t.tensor([[1, 2, 3]], dtype=t.uint8)", "t.arange(10).view(2, 5).t()", "t.tensor([65504., -1.], dtype=t.float16)",
    "t.tensor([3.14159265], dtype=t.float64)", "t.arange(6.).view(1, 2, 3, 1)", "t.tensor([[[]]])",
    "t.tensor([1e20, -1e20, 3.])", "t.tensor([999.99995])", "t.arange(3000.).view(10, 10, 30) - 1500",
    "t.tensor([[0.001, 0.0001], [10., 1.]])", "t.arange(-5, 5, dtype=t.int8)", "t.ones(1001, dtype=t.float16)",
    "t.tensor(2.5, dtype=t.float64)", "t.tensor(7, dtype=t.int16)", "t.arange(12.).view(3, 4)[:, ::2]",
]


def test_repr_matches_torch():
    torch = torch_or_skip()
    bad = []
    for case in _REPR_CASES:
        got = repr(eval(case, {"t": tl})).replace("torchlite.", "torch.")
        want = repr(eval(case, {"t": torch}))
        if got != want:
            bad.append(f"{case}\n{got}\n{want}")
    assert not bad, "\n\n".join(bad)


def test_repr_under_print_options():
    torch = torch_or_skip()
    cases = ["t.arange(10.) / 3", "t.tensor([1e-5, 1.])", "t.arange(40).view(5, 8)", "t.tensor([123.456])"]
    for opts in (dict(precision=2), dict(sci_mode=False), dict(sci_mode=True), dict(threshold=5),
                 dict(edgeitems=1, threshold=5), dict(linewidth=30), dict(profile="short")):
        try:
            tl.set_printoptions(**opts)
            torch.set_printoptions(**opts)
            for case in cases:
                got = repr(eval(case, {"t": tl})).replace("torchlite.", "torch.")
                assert got == repr(eval(case, {"t": torch})), (opts, case)
        finally:
            tl.set_printoptions(profile="default")
            torch.set_printoptions(profile="default")
            tl.set_printoptions(sci_mode=None)
            torch.set_printoptions(sci_mode=None)


def test_repr_without_torch():
    """A few texts fixed by PyTorch's documented format (4 decimals, 'tensor(', dtype suffix)."""
    assert repr(tl.tensor([[1.0, 2.0], [3.0, 4.5]])) == "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])"
    assert repr(tl.tensor([1, 2], dtype=tl.int32)) == "tensor([1, 2], dtype=torchlite.int32)"
    assert repr(tl.tensor([True])) == "tensor([True])"
    assert repr(tl.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tl.zeros(0, 2)) == "tensor([], size=(0, 2))"
    text = repr(tl.arange(5000))
    assert text.startswith("tensor([   0,    1,    2,  ..., 4997, 4998, 4999])")
    assert "requires_grad=True" in repr(tl.ones(1).requires_grad_())


# ---- legacy constructor, sum_to_size, resize_, memory placement queries ---------------------------
def test_new_legacy_constructor():
    x = tl.ones(2, dtype=tl.float64)
    assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype is tl.float64
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype is tl.float64
    assert tl.tensor([1]).new([1, 2]).dtype is tl.int64
    assert tuple(x.new().shape) == (0,)
    assert tuple(x.new(tl.Size([4])).shape) == (4,)
    y = x.new(x)
    y.fill_(5)
    assert x.tolist() == [5.0, 5.0]                 # new(tensor) aliases it, as in PyTorch


def test_sum_to_size():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tl.tensor(a)
    np.testing.assert_array_equal(x.sum_to_size(3, 1).numpy(), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(x.sum_to_size((1, 1, 4)).numpy(), a.sum(axis=(0, 1), keepdims=True))
    assert x.sum_to_size(2, 3, 4).tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        x.sum_to_size(2, 4)
    with pytest.raises(TypeError):
        x.sum_to_size()


def test_resize_reuses_or_grows_memory():
    x = tl.arange(12.0)
    view = x.view(3, 4)
    assert x.resize_(2, 2) is x and x.tolist() == [[0, 1], [2, 3]]
    view[0, 0] = 9.0                                     # same memory: the view sees x's elements
    assert x[0, 0].item() == 9.0
    x.resize_(3, 4)
    assert x.tolist() == [[9, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    x.resize_(20)                                        # grows: old elements first
    assert x[:12].tolist() == [9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] and x.is_contiguous()
    t = tl.arange(12.0).view(3, 4).t()
    assert t.resize_(2, 3).tolist() == [[0, 1, 2], [3, 4, 5]]     # memory order, as PyTorch
    s = tl.arange(10.0)[4:]
    assert s.resize_(2, 3).tolist() == [[4, 5, 6], [7, 8, 9]]     # from the storage offset
    assert tuple(tl.ones(3).resize_as_(tl.ones(1, 2)).shape) == (1, 2)
    assert tuple(tl.ones(3).resize_(0).shape) == (0,)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tl.ones(3, requires_grad=True).resize_(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        tl.ones(3).resize_(-2)


def test_memory_placement_queries_match_torch_without_cuda():
    x = tl.ones(3)
    assert x.share_memory_() is x
    assert x.is_shared() is False and x.is_pinned() is False and x.is_inference() is False
    with tl.inference_mode():
        assert tl.ones(2).is_inference() is False        # no inference tensors in torchlite
    with pytest.raises(RuntimeError, match="accelerator"):
        x.pin_memory()


def test_cuda_methods_without_a_usable_gpu_raise_clearly():
    if tl.cuda.is_available():
        pytest.skip("a GPU is available here (tested in the CUDA tests)")
    for move in (lambda: tl.zeros(2).cuda(), lambda: tl.zeros(2).cuda(0),
                 lambda: tl.zeros(2).to("cuda"), lambda: tl.zeros(2, device="cuda")):
        with pytest.raises(RuntimeError, match="CUDA is not available because"):
            move()
