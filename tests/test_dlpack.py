"""DLPack interop: Tensor.__dlpack__ / __dlpack_device__ and torchlite.from_dlpack.

Checked against NumPy and PyTorch (both directions), and against a foreign producer written
here with ctypes, which builds capsules by hand so that the ABI fields, the deleter calls and
every rejected input (device, dtype, version, layout) can be checked exactly."""
import ctypes
import gc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
from torchlite import _dlpack
from torchlite._core import array as _A

from_dlpack = _dlpack.from_dlpack

NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16,
             np.float32, np.float64]
TL_DTYPES = [tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16,
             tl.bfloat16, tl.float32, tl.float64]
# DLPack's (type code, bits) for each torchlite dtype: kDLInt=0 kDLUInt=1 kDLFloat=2
# kDLBfloat=4 kDLBool=6
DL_TYPES = {tl.bool: (6, 8), tl.uint8: (1, 8), tl.int8: (0, 8), tl.int16: (0, 16),
            tl.int32: (0, 32), tl.int64: (0, 64), tl.float16: (2, 16), tl.bfloat16: (4, 16),
            tl.float32: (2, 32), tl.float64: (2, 64)}


def sample(shape, np_dtype):
    """Distinct values of np_dtype (so that a layout mistake shows)."""
    n = int(np.prod(shape)) if shape else 1
    vals = np.arange(n) % 7 - 3
    if np_dtype == np.bool_:
        return (vals > 0).reshape(shape)
    if np_dtype == np.uint8:
        vals = vals + 3
    half = np.asarray(0.5 if np.issubdtype(np_dtype, np.floating) else 0, np_dtype)
    return np.array(vals.astype(np_dtype).reshape(shape) + half)


def tl_sample(shape, dtype):
    """Distinct values 0.5, 1.5, ... 6.5 (truncated for integer dtypes), made by torchlite."""
    src = np.arange(int(np.prod(shape)) if shape else 1) % 7
    t = tl.tensor(src.astype(np.float64).tolist()).reshape(shape)
    return (t > 3) if dtype is tl.bool else (t + 0.5).to(dtype)


def as_numpy(t):
    """Values of a torchlite tensor as float64 (bfloat16 included), via tolist."""
    return np.asarray(t.tolist(), dtype=np.float64)


def live_bytes():
    gc.collect()
    return _A.memory_stats()["allocated"]


# ---------------------------------------------------------------------------------------
# A foreign producer made with ctypes: the DLPack structs, a capsule, a counted deleter
# ---------------------------------------------------------------------------------------
c = ctypes


class DLDevice(c.Structure):
    _fields_ = [("device_type", c.c_int32), ("device_id", c.c_int32)]


class DLDataType(c.Structure):
    _fields_ = [("code", c.c_uint8), ("bits", c.c_uint8), ("lanes", c.c_uint16)]


class DLTensor(c.Structure):
    _fields_ = [("data", c.c_void_p), ("device", DLDevice), ("ndim", c.c_int32),
                ("dtype", DLDataType), ("shape", c.POINTER(c.c_int64)),
                ("strides", c.POINTER(c.c_int64)), ("byte_offset", c.c_uint64)]


class DLManagedTensor(c.Structure):
    pass


DELETER = c.CFUNCTYPE(None, c.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c.c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(c.Structure):
    _fields_ = [("major", c.c_uint32), ("minor", c.c_uint32)]


class DLManagedTensorVersioned(c.Structure):
    pass


DELETER_V = c.CFUNCTYPE(None, c.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", c.c_void_p),
                                     ("deleter", DELETER_V), ("flags", c.c_uint64),
                                     ("dl_tensor", DLTensor)]

_api = c.pythonapi
_api.PyCapsule_IsValid.argtypes = [c.c_void_p, c.c_char_p]
_api.PyCapsule_IsValid.restype = c.c_int
_api.PyCapsule_GetPointer.argtypes = [c.c_void_p, c.c_char_p]
_api.PyCapsule_GetPointer.restype = c.c_void_p
_api.PyCapsule_GetName.argtypes = [c.py_object]
_api.PyCapsule_GetName.restype = c.c_char_p
CAPSULE_DESTRUCTOR = c.CFUNCTYPE(None, c.c_void_p)
_api.PyCapsule_New.argtypes = [c.c_void_p, c.c_char_p, CAPSULE_DESTRUCTOR]
_api.PyCapsule_New.restype = c.py_object


def capsule_struct(capsule):
    """The managed struct behind a (not yet consumed) capsule, for inspecting our exports;
    valid while the capsule lives."""
    name = _api.PyCapsule_GetName(capsule)
    ptr = _api.PyCapsule_GetPointer(id(capsule), name)
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return name, kind.from_address(ptr)


_LIVE = {}        # address of a managed struct -> its FakeProducer (what the deleter finds)


def _foreign_capsule_destructor(cap):
    # never turn `cap` back into a Python object: it is being destroyed
    for name, kind in ((b"dltensor", DLManagedTensor), (b"dltensor_versioned", DLManagedTensorVersioned)):
        if _api.PyCapsule_IsValid(cap, name):
            m = kind.from_address(_api.PyCapsule_GetPointer(cap, name))
            m.deleter(c.pointer(m))


_DESTRUCTOR = CAPSULE_DESTRUCTOR(_foreign_capsule_destructor)


def _delete(mptr):
    _LIVE.pop(c.addressof(mptr.contents)).deleted += 1


_DELETER, _DELETER_V = DELETER(_delete), DELETER_V(_delete)


class FakeProducer:
    """Hands out one hand-made capsule over `buf` (a NumPy array owning the bytes)."""

    def __init__(self, buf, shape, strides=None, dtype=(2, 32, 1), device=(1, 0),
                 versioned=False, version=(1, 0), flags=0, byte_offset=0, data=None):
        self.buf = buf
        self.deleted = 0
        self.calls = []
        self.device = device
        self.shape = (c.c_int64 * max(1, len(shape)))(*shape)
        self.strides = None if strides is None else (c.c_int64 * max(1, len(strides)))(*strides)
        m = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        t = m.dl_tensor
        t.data = buf.ctypes.data if data is None else data
        t.device = DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = DLDataType(*dtype)
        t.shape = self.shape
        t.strides = self.strides
        t.byte_offset = byte_offset
        m.deleter = _DELETER_V if versioned else _DELETER
        if versioned:
            m.version = DLPackVersion(*version)
            m.flags = flags
        self.managed = m
        self.name = b"dltensor_versioned" if versioned else b"dltensor"

    def capsule(self):
        _LIVE[c.addressof(self.managed)] = self
        return _api.PyCapsule_New(c.addressof(self.managed), self.name, _DESTRUCTOR)

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.capsule()

    def __dlpack_device__(self):
        return self.device


# ---------------------------------------------------------------------------------------
# NumPy
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_to_torchlite_every_dtype_shares_memory(np_dtype):
    a = sample((3, 4), np_dtype)
    t = from_dlpack(a)
    assert t.dtype.name == np.dtype(np_dtype).name
    assert t.shape == (3, 4) and t.stride() == (4, 1)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    a[1, 2] = 1                      # a write through NumPy shows in torchlite
    assert t[1, 2].item() == 1


@pytest.mark.parametrize("dtype", [d for d in TL_DTYPES if d is not tl.bfloat16], ids=str)
def test_torchlite_to_numpy_every_dtype_shares_memory(dtype):
    t = tl_sample((2, 5), dtype)
    a = np.from_dlpack(t)
    assert a.dtype.name == dtype.name
    assert a.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(a, as_numpy(t).astype(a.dtype))
    t[0, 3] = 1                      # a write through torchlite shows in NumPy
    assert a[0, 3] == 1


def test_numpy_cannot_read_bfloat16_but_capsule_says_kDLBfloat():
    t = tl.ones(3, dtype=tl.bfloat16)
    cap = t.__dlpack__()
    name, m = capsule_struct(cap)
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes) == (4, 16, 1)
    with pytest.raises(RuntimeError, match="dtype"):
        np.from_dlpack(t)


@pytest.mark.parametrize("view", ["transpose", "step_slice", "expand", "select", "permute"])
def test_noncontiguous_torchlite_views_export_their_strides(view):
    base = tl.arange(60, dtype=tl.float32).reshape(3, 4, 5)
    ref = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t, r = {"transpose": (base.transpose(0, 2), ref.transpose(2, 1, 0)),
            "step_slice": (base[:, 1::2, ::3], ref[:, 1::2, ::3]),
            "expand": (base[:1].expand(4, 4, 5), np.broadcast_to(ref[:1], (4, 4, 5))),
            "select": (base[..., 2], ref[..., 2]),
            "permute": (base.permute(1, 2, 0), ref.transpose(1, 2, 0))}[view]
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, r)
    assert a.ctypes.data == t.data_ptr()
    assert tuple(s // 4 for s in a.strides) == t.stride()


def test_noncontiguous_numpy_views_import_zero_copy():
    ref = np.arange(120, dtype=np.int64).reshape(4, 5, 6)
    expanded = np.lib.stride_tricks.as_strided(ref[:, :1], (4, 7, 6), (ref.strides[0], 0, 8))
    for a in (ref.T, ref[::2, 1:, ::3], expanded, ref[..., 3]):
        t = from_dlpack(a)
        assert t.data_ptr() == a.ctypes.data
        assert t.stride() == tuple(s // 8 for s in a.strides)
        np.testing.assert_array_equal(as_numpy(t), a)


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0, 2), (1,), (1, 1, 4)])
def test_zero_d_empty_and_size_one_dims_both_ways(shape):
    a = sample(shape, np.float32)
    t = from_dlpack(a)
    assert t.shape == shape
    np.testing.assert_array_equal(t.numpy(), a)
    back = np.from_dlpack(t)
    assert back.shape == shape
    np.testing.assert_array_equal(back, a)


def test_numpy_negative_strides_are_copied_or_refused():
    a = np.arange(6.0)[::-1]
    t = from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert all(s >= 0 for s in t.stride())
    a[0] = 100.0                     # a copy: does not show through
    assert t[0].item() == 5.0
    with pytest.raises(BufferError, match="negative strides"):
        from_dlpack(a, copy=False)


def test_read_only_numpy_is_copied_or_refused():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = from_dlpack(a)
    assert t.data_ptr() != a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    t[0] = 9.0                       # never writes into read-only memory
    assert a[0] == 0.0
    with pytest.raises(BufferError, match="read-only"):
        from_dlpack(a, copy=False)
    b = np.broadcast_to(np.arange(3.0), (2, 3))          # NumPy marks broadcasts read-only
    np.testing.assert_array_equal(from_dlpack(b).numpy(), b)


def test_copy_keyword_both_directions(threads):
    a = np.arange(3000.0).reshape(30, 100)
    t = from_dlpack(a, copy=True)
    assert t.data_ptr() != a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    assert from_dlpack(a, copy=False).data_ptr() == a.ctypes.data
    src = tl.arange(3000, dtype=tl.float64).reshape(30, 100).t()
    out = np.from_dlpack(src, copy=True)
    assert out.ctypes.data != src.data_ptr()
    np.testing.assert_array_equal(out, np.arange(3000.0).reshape(30, 100).T)
    shared = np.from_dlpack(src, copy=False)
    assert shared.ctypes.data == src.data_ptr()


def test_from_dlpack_device_keyword():
    a = np.arange(3.0)
    assert from_dlpack(a, device="cpu").data_ptr() == a.ctypes.data
    with pytest.raises(RuntimeError, match="CPU only"):
        from_dlpack(a, device="cuda")


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
       data=st.data())
def test_hypothesis_numpy_views_round_trip(shape, data):
    ref = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    slices = tuple(slice(data.draw(st.integers(0, n - 1)), None, data.draw(st.integers(1, 3)))
                   for n in shape)
    perm = data.draw(st.permutations(range(len(shape))))
    a = ref[slices].transpose(perm)
    t = from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    back = np.from_dlpack(t)
    assert back.strides == a.strides and back.ctypes.data == a.ctypes.data


# ---------------------------------------------------------------------------------------
# Lifetime
# ---------------------------------------------------------------------------------------
def test_exported_memory_outlives_the_tensor():
    before = live_bytes()
    t = tl.full((512, 512), 3.0, dtype=tl.float32)     # 1 MiB: a pooled size class
    a = np.from_dlpack(t)
    del t
    assert live_bytes() >= before + 512 * 512 * 4       # still held by the capsule
    junk = tl.full((512, 512), -1.0, dtype=tl.float32)  # would reuse a freed block
    assert (a == 3.0).all()
    del junk, a
    assert live_bytes() == before                       # the deleter ran: nothing leaks


def test_imported_memory_outlives_the_producer():
    import weakref
    a = np.arange(10.0)
    alive = weakref.ref(a)
    t = from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None                          # kept by the capsule's owner
    np.testing.assert_array_equal(t.numpy(), np.arange(10.0))
    view = t[2:5]
    del t
    gc.collect()
    assert alive() is not None                          # a view keeps it too
    np.testing.assert_array_equal(view.numpy(), [2.0, 3.0, 4.0])
    del view
    gc.collect()
    assert alive() is None                              # last view gone: deleter called


def test_unconsumed_capsules_free_their_memory():
    before = live_bytes()
    t = tl.zeros(256, 256)
    legacy, versioned = t.__dlpack__(), t.__dlpack__(max_version=(1, 0))
    del t
    assert live_bytes() > before
    del legacy, versioned
    assert live_bytes() == before


def test_capsule_is_consumed_once():
    t = tl.arange(4)
    cap = _dlpack.to_dlpack(t)
    assert "dltensor" in repr(cap)
    u = from_dlpack(cap)
    assert "used_dltensor" in repr(cap)
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises(RuntimeError, match="consumed only once"):
        from_dlpack(cap)


def test_exported_capsule_fields():
    t = tl.arange(24, dtype=tl.int16).reshape(2, 3, 4).permute(2, 0, 1)[1:]
    for kw, name in (({}, b"dltensor"), ({"max_version": (1, 0)}, b"dltensor_versioned"),
                     ({"max_version": (2, 5)}, b"dltensor_versioned")):
        cap = t.__dlpack__(**kw)
        got, m = capsule_struct(cap)
        assert got == name
        d = m.dl_tensor
        assert (d.device.device_type, d.device.device_id) == (1, 0)
        assert d.data == t.data_ptr() and d.byte_offset == 0 and d.ndim == 3
        assert [d.shape[i] for i in range(3)] == [3, 2, 3]
        assert [d.strides[i] for i in range(3)] == list(t.stride())
        assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (0, 16, 1)
        if name == b"dltensor_versioned":
            assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    _, m = capsule_struct(cap)
    assert m.flags == 2                                  # DLPACK_FLAG_BITMASK_IS_COPIED
    assert m.dl_tensor.data != t.data_ptr()


@pytest.mark.parametrize("dtype", TL_DTYPES, ids=str)
def test_every_dtype_round_trips_through_torchlite_capsules(dtype):
    t = tl_sample((3, 4), dtype)[:, 1:]
    for cap in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0))):
        _, m = capsule_struct(cap)
        assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == DL_TYPES[dtype]
        u = from_dlpack(cap)
        assert u.dtype is dtype and u.stride() == t.stride() and u.data_ptr() == t.data_ptr()
        np.testing.assert_array_equal(as_numpy(u), as_numpy(t))


# ---------------------------------------------------------------------------------------
# A foreign producer: layouts torchlite accepts, and what it refuses
# ---------------------------------------------------------------------------------------
def test_foreign_capsule_view_calls_deleter_once_when_last_view_dies():
    buf = np.arange(12, dtype=np.float32)
    p = FakeProducer(buf, (3, 4), strides=None)           # NULL strides: C-contiguous
    t = from_dlpack(p.capsule())
    assert t.stride() == (4, 1) and t.data_ptr() == buf.ctypes.data
    np.testing.assert_array_equal(t.numpy(), buf.reshape(3, 4))
    assert p.deleted == 0
    v = t[1]
    del t
    gc.collect()
    assert p.deleted == 0
    del v
    gc.collect()
    assert p.deleted == 1


def test_foreign_byte_offset_versioned_and_host_devices():
    buf = np.arange(10, dtype=np.int32)
    for device in ((1, 0), (3, 0), (11, 0), (13, 0)):   # CPU, CUDAHost, ROCMHost, CUDAManaged
        p = FakeProducer(buf, (2, 2), strides=(4, 2), dtype=(0, 32, 1), device=device,
                         versioned=True, byte_offset=8)
        t = from_dlpack(p)
        assert p.calls[-1]["max_version"] == (1, 0)
        np.testing.assert_array_equal(t.numpy(), [[2, 4], [6, 8]])
        assert t.data_ptr() == buf.ctypes.data + 8
        del t
        gc.collect()
        assert p.deleted == 1


def test_foreign_read_only_flag_and_misaligned_data_are_copied():
    buf = np.arange(8, dtype=np.float64)
    p = FakeProducer(buf, (8,), dtype=(2, 64, 1), versioned=True, flags=1)
    t = from_dlpack(p)
    assert p.deleted == 1                                 # copied, released at once
    t[0] = 5.0
    assert buf[0] == 0.0
    raw = np.zeros(40, dtype=np.uint8)
    raw[1:33] = np.arange(8, dtype=np.float32).view(np.uint8)
    p = FakeProducer(raw, (8,), dtype=(2, 32, 1), byte_offset=1)
    t = from_dlpack(p)
    np.testing.assert_array_equal(t.numpy(), np.arange(8, dtype=np.float32))
    assert t.data_ptr() % 4 == 0 and p.deleted == 1
    with pytest.raises(BufferError, match="aligned"):
        from_dlpack(FakeProducer(raw, (8,), dtype=(2, 32, 1), byte_offset=1), copy=False)


@pytest.mark.parametrize("dtype,what", [((1, 16, 1), "uint"), ((1, 32, 1), "uint"),
                                        ((5, 16, 1), "complex"), ((2, 32, 4), "lanes=4"),
                                        ((2, 8, 1), "float"), ((3, 64, 1), "opaque")])
def test_foreign_unsupported_dtypes_raise_and_leave_the_capsule(dtype, what):
    p = FakeProducer(np.zeros(8, np.uint8), (2,), dtype=dtype)
    cap = p.capsule()
    with pytest.raises(BufferError, match=f"unsupported DLPack dtype.*{what}"):
        from_dlpack(cap)
    assert _api.PyCapsule_GetName(cap) == b"dltensor"     # not consumed
    del cap
    gc.collect()
    assert p.deleted == 1                                 # its own destructor freed it


@pytest.mark.parametrize("kwargs,match", [
    (dict(device=(2, 0)), "unsupported device"),
    (dict(device=(10, 1)), "unsupported device"),
    (dict(versioned=True, version=(2, 0)), "version 2.0"),
    (dict(shape=(-1, 2)), "negative size"),
    (dict(shape=(1,) * 17), "dimensions"),
    (dict(data=0), "NULL data"),
])
def test_foreign_invalid_capsules_raise_buffer_error(kwargs, match):
    shape = kwargs.pop("shape", (2, 2))
    p = FakeProducer(np.zeros(4, np.float32), shape, **kwargs)
    with pytest.raises(BufferError, match=match):
        from_dlpack(p.capsule())
    gc.collect()
    assert p.deleted == 1


def test_producer_on_gpu_is_refused_before_export():
    p = FakeProducer(np.zeros(4, np.float32), (4,), device=(2, 0))
    with pytest.raises(BufferError, match="kDLCUDA:0"):
        from_dlpack(p)
    assert p.calls == []


def test_older_producer_without_keywords_still_works():
    class OldProducer:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):          # DLPack < 0.8: no keywords
            return self.a.__dlpack__()

    a = np.arange(5.0)
    assert from_dlpack(OldProducer(a)).data_ptr() == a.ctypes.data
    t = from_dlpack(OldProducer(a), copy=True)           # copy done on our side
    assert t.data_ptr() != a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)


# ---------------------------------------------------------------------------------------
# Errors of the protocol itself
# ---------------------------------------------------------------------------------------
def test_export_errors():
    t = tl.zeros(3)
    with pytest.raises(BufferError, match="require gradient"):
        tl.zeros(2).requires_grad_().__dlpack__()
    with pytest.raises(TypeError, match="stream must be"):
        t.__dlpack__(stream="default")
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        t.__dlpack__(stream=5)
    assert "dltensor" in repr(t.__dlpack__(-1)) and "dltensor" in repr(t.__dlpack__(None))
    with pytest.raises(BufferError, match="kDLCUDA:0"):
        t.__dlpack__(dl_device=(2, 0))
    assert "dltensor" in repr(t.__dlpack__(dl_device=(1, 0)))
    with pytest.raises(TypeError, match="max_version"):
        t.__dlpack__(max_version=1)
    with pytest.raises(TypeError, match="copy must be"):
        t.__dlpack__(copy="yes")
    with pytest.raises(TypeError, match="expected a Tensor"):
        _dlpack.to_dlpack(np.zeros(2))


def test_import_errors():
    with pytest.raises(RuntimeError, match="invalid capsule.*int"):
        from_dlpack(3)
    with pytest.raises(AssertionError, match="device and copy kwargs"):
        from_dlpack(tl.zeros(2).__dlpack__(), copy=True)
    with pytest.raises(TypeError, match="copy must be"):
        from_dlpack(np.zeros(2), copy=1)


def test_dlpack_device():
    dev = tl.zeros(2).__dlpack_device__()
    assert dev == (1, 0) and dev[0] is _dlpack.DLDeviceType.kDLCPU


# ---------------------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TL_DTYPES, ids=str)
def test_torch_both_directions_every_dtype(dtype):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, dtype.name)
    t = tl_sample((4, 6), dtype)[::2, 1:]
    x = torch.from_dlpack(t)
    assert x.dtype == tdt and x.data_ptr() == t.data_ptr() and x.stride() == t.stride()
    np.testing.assert_array_equal(x.double().numpy(), as_numpy(t))
    y = (torch.arange(24) % 5).to(tdt).reshape(4, 6).t()
    u = from_dlpack(y)
    assert u.dtype is dtype and u.data_ptr() == y.data_ptr() and u.stride() == y.stride()
    np.testing.assert_array_equal(as_numpy(u), y.double().numpy())
    u2 = from_dlpack(torch.utils.dlpack.to_dlpack(y))
    assert u2.data_ptr() == y.data_ptr()


def test_torch_memory_sharing_and_lifetime():
    torch = pytest.importorskip("torch")
    t = tl.zeros(4, 5)
    x = torch.utils.dlpack.from_dlpack(_dlpack.to_dlpack(t))
    x[1, 2] = 7.0
    assert t[1, 2].item() == 7.0
    t[0, 0] = -1.0
    assert x[0, 0].item() == -1.0
    del t
    gc.collect()
    junk = tl.full((4, 5), 9.0)                       # would land on a freed block
    assert x[0, 0].item() == -1.0 and x[1, 2].item() == 7.0
    y = torch.full((3,), 2.5, dtype=torch.float64)
    u = from_dlpack(y)
    del y
    gc.collect()
    _ = torch.full((3,), -4.0, dtype=torch.float64)
    np.testing.assert_array_equal(u.numpy(), [2.5, 2.5, 2.5])
    del junk


def test_torch_versioned_and_copy_requests():
    torch = pytest.importorskip("torch")
    t = tl.arange(6, dtype=tl.float32)
    x = torch.from_dlpack(t, copy=True)
    assert x.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32))
    y = torch.arange(6.0)
    u = from_dlpack(y, copy=True)
    assert u.data_ptr() != y.data_ptr()
    np.testing.assert_array_equal(u.numpy(), y.numpy())
    assert torch.from_dlpack(tl.tensor(3.5)).item() == 3.5
    assert torch.from_dlpack(tl.zeros(0, 4)).shape == (0, 4)
    assert from_dlpack(torch.zeros(2, 0, 3)).shape == (2, 0, 3)
    with pytest.raises(BufferError, match="require gradient"):
        from_dlpack(torch.zeros(2, requires_grad=True))
