"""Storages (torchlite/_ops/storage.py): UntypedStorage, TypedStorage and the legacy
FloatStorage-style names, Tensor.untyped_storage()/storage()/storage_type(), set_ on a
storage, and the deprecated out-of-place Tensor.resize/resize_as.  Values against NumPy's view
of the same bytes; the API against PyTorch's where installed."""
import warnings

import numpy as np
import pytest

import torchlite as tl


def test_untyped_storage_is_the_bytes_under_a_view():
    x = tl.arange(6.).reshape(2, 3)[:, 1:]
    u = x.untyped_storage()
    assert u.nbytes() == u.size() == len(u) == 24 and u.element_size() == 1
    assert u.data_ptr() == x.data_ptr() - 4           # the view starts one float in
    assert u.tolist() == list(np.arange(6, dtype=np.float32).view(np.uint8))
    assert u[4] == 0 and u[7] == 63 and isinstance(u[7], int)
    assert u.device == tl.device("cpu") and tl.is_storage(u)
    u[7] = 64                                          # 1.0f's top byte, 0x3f, becomes 0x40
    expect = np.array([1.0], dtype=np.float32).view(np.uint8).copy()
    expect[3] = 64
    assert x[0, 0].item() == expect.view(np.float32)[0]


def test_typed_storage_reads_and_writes_the_tensor():
    x = tl.arange(6.).reshape(2, 3)[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x.storage()
    assert s.dtype is tl.float32 and s.size() == 6 and s.nbytes() == 24 and s.element_size() == 4
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and s[-1] == 5.0
    assert s.data_ptr() == x.untyped_storage().data_ptr()
    s[4] = 40.0
    assert x.tolist() == [[1.0, 2.0], [40.0, 5.0]]
    c = s.clone()
    c[1] = 100.0
    assert x[0, 0].item() == 1.0                        # a clone has memory of its own
    assert isinstance(s, tl.FloatStorage) and not isinstance(s, tl.LongStorage)
    assert x.storage_type() is tl.FloatStorage and s.type() == "torchlite.FloatStorage"
    assert s.untyped().data_ptr() == s.data_ptr() and s.untyped().nbytes() == 24
    with pytest.raises(RuntimeError, match="slices"):
        s[1:3]
    with pytest.raises(IndexError):
        s[6]


def test_storage_warns_once_as_pytorch():
    from torchlite._ops import storage as S
    S._warned[0] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tl.ones(2).storage()
        tl.ones(2).storage()
    assert len(caught) == 1 and "TypedStorage is deprecated" in str(caught[0].message)


def test_constructors_and_casts():
    f = tl.FloatStorage([1, 2, 3])
    assert type(f) is tl.TypedStorage and f.dtype is tl.float32 and f.tolist() == [1.0, 2.0, 3.0]
    assert tl.FloatStorage(4).size() == 4 and tl.LongStorage([7]).dtype is tl.int64
    assert tl.UntypedStorage(5).nbytes() == 5 and tl.UntypedStorage([1, 255]).tolist() == [1, 255]
    assert tl.TypedStorage([1.0, 2.0]).dtype is tl.get_default_dtype()
    assert tl.TypedStorage([1, 2], dtype=tl.int64).tolist() == [1, 2]
    assert f.double().dtype is tl.float64 and f.long().tolist() == [1, 2, 3]
    assert f.type("torch.LongStorage").dtype is tl.int64 and f.float() is f
    ints = tl.TypedStorage(wrap_storage=tl.FloatStorage([1.0]).untyped(), dtype=tl.int32)
    assert ints.tolist() == [int(np.float32(1.0).view(np.int32))]
    assert tl.tensor(tl.FloatStorage([1, 2])).tolist() == [1.0, 2.0]
    assert f.fill_(3).tolist() == [3.0, 3.0, 3.0]
    assert f.copy_(tl.FloatStorage([4, 5, 6])).tolist() == [4.0, 5.0, 6.0]
    assert tl.TypedStorage(wrap_storage=tl.UntypedStorage(7), dtype=tl.float32).size() == 1
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.FloatStorage(-1)
    import pickle
    back = pickle.loads(pickle.dumps(f))
    assert back.dtype is tl.float32 and back.tolist() == f.tolist() and back.data_ptr() != f.data_ptr()
    raw = tl.arange(4.0).untyped_storage()
    again = pickle.loads(pickle.dumps(raw))
    assert type(again) is tl.UntypedStorage and again.tolist() == raw.tolist()
    assert pickle.loads(pickle.dumps(tl.UntypedStorage(0))).nbytes() == 0


def test_set_on_a_storage():
    f = tl.FloatStorage([1, 2, 3, 4])
    t = tl.tensor([], dtype=tl.float32).set_(f)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0] and t.data_ptr() == f.data_ptr()
    w = tl.tensor([], dtype=tl.float32).set_(f, 1, (2, 1), (2, 1))
    assert w.tolist() == [[2.0], [4.0]]
    w[0, 0] = 20.0
    assert f[1] == 20.0
    b = tl.tensor([], dtype=tl.float32).set_(f.untyped())
    assert b.tolist() == f.tolist()
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        tl.tensor([], dtype=tl.int64).set_(f)
    with pytest.raises(RuntimeError):
        tl.tensor([], dtype=tl.float32).set_(f, 0, (5,), (1,))      # past the end
    with pytest.raises(TypeError, match="Tensor or a storage"):
        tl.tensor([]).set_([1.0])


@pytest.mark.parametrize("args, match", [
    ((-1, (2,)), "invalid storage offset -1"), ((-10 ** 8, (2,)), "invalid storage offset"),
    ((0, (2,), (-1,)), "negative stride"), ((0, (2,), (-10 ** 8,)), "negative stride"),
    ((0, (2, 2), (1,)), "unequal size length"), ((0, (2,), (1, 1)), "unequal size length"),
    ((0, (-1,)), "negative dimension"), ((0, (5,)), "does not grow"),
    ((0, (2,), (2 ** 62,)), "does not grow"), ((2 ** 62, (1,)), "does not grow")])
def test_set_on_a_storage_checks_every_argument(args, match):
    """Offsets, sizes and strides that would reach outside the storage raise (they reached
    memory outside the buffer, or crashed, before)."""
    s = tl.FloatStorage([1, 2, 3, 4])
    with pytest.raises(RuntimeError, match=match):
        tl.tensor([], dtype=tl.float32).set_(s, *args)


def test_untyped_storage_slices_share_the_bytes():
    x = tl.arange(4.0)
    part = x.untyped_storage()[4:8]
    assert part.nbytes() == 4 and part.data_ptr() == x.data_ptr() + 4
    part[3] = 64                            # the top byte of 1.0f: 0x3f -> 0x40
    assert x[1].item() == 4.0
    with pytest.raises(RuntimeError, match="step 1"):
        x.untyped_storage()[::2]


def test_deprecated_resize_is_a_reshape_with_a_warning():
    x = tl.arange(6., requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3)
    y.sum().backward()
    assert x.grad.tolist() == [1.0] * 6
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert x.resize_as(tl.ones(3, 2)).shape == (3, 2)
    with pytest.raises(RuntimeError, match="preserving the number of elements"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.resize(4)


def test_matches_pytorch_api():
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.float32)
    ours, theirs = tl.tensor(a).untyped_storage(), torch.tensor(a).untyped_storage()
    assert ours.tolist() == theirs.tolist() and ours.nbytes() == theirs.nbytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("FloatStorage", "LongStorage", "ByteStorage", "BoolStorage", "DoubleStorage"):
            ot, tt = getattr(tl, name)([1, 0, 3]), getattr(torch, name)([1, 0, 3])
            assert ot.tolist() == tt.tolist() and ot.element_size() == tt.element_size(), name
            assert str(ot.dtype).split(".")[-1] == str(tt.dtype).split(".")[-1]
