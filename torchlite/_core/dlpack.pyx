# DLPack export and import for the CPU array layer.
#
# Export: an Array becomes a PyCapsule named "dltensor" (DLManagedTensor, DLPack < 1.0) or
# "dltensor_versioned" (DLManagedTensorVersioned, DLPack 1.x).  The capsule's memory block
# holds the managed struct plus the shape and strides it points to; manager_ctx holds a
# reference to the Array, so the Storage stays alive until the consumer calls the deleter
# (or, for a capsule nobody consumed, until the capsule itself dies).
#
# Import: a capsule's DLTensor becomes an Array over the same memory.  The capsule is renamed
# "used_dltensor[_versioned]" (so it can be consumed only once) and the Storage owns a
# _ManagedOwner that calls the producer's deleter when the last view dies.  Memory torchlite
# cannot view safely (read-only, negative strides, misaligned elements) is copied instead,
# unless the caller asked for copy=False.
from cpython.pycapsule cimport (PyCapsule_CheckExact, PyCapsule_GetPointer, PyCapsule_IsValid,
                                PyCapsule_New, PyCapsule_SetName)
from cpython.ref cimport PyObject, Py_INCREF
from libc.stdint cimport int64_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from torchlite._core.array cimport (Array, Storage, MAX_DIMS, new_array, tl_itemsize, TL_BOOL,
                                    TL_UINT8, TL_INT8, TL_INT16, TL_INT32, TL_INT64, TL_FLOAT16,
                                    TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64, TL_COMPLEX64,
                                    TL_COMPLEX128, TL_COMPLEX32, TL_NDTYPES)
from torchlite._core import elementwise as _ew

cdef extern from "Python.h":
    void _py_decref "Py_DECREF"(PyObject* o) nogil
    int Py_IsInitialized() nogil

# Device types whose memory the CPU can read and write directly.
HOST_DEVICE_TYPES = (kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged)
DLPACK_VERSION = (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)

# torchlite dtype code -> (DLDataTypeCode, bits); lanes is always 1
cdef unsigned char DL_CODE[TL_NDTYPES]
cdef unsigned char DL_BITS[TL_NDTYPES]
_DL_TABLE = {TL_BOOL: (kDLBool, 8), TL_UINT8: (kDLUInt, 8), TL_INT8: (kDLInt, 8),
             TL_INT16: (kDLInt, 16), TL_INT32: (kDLInt, 32), TL_INT64: (kDLInt, 64),
             TL_FLOAT16: (kDLFloat, 16), TL_BFLOAT16: (kDLBfloat, 16),
             TL_FLOAT32: (kDLFloat, 32), TL_FLOAT64: (kDLFloat, 64),
             TL_COMPLEX64: (kDLComplex, 64), TL_COMPLEX128: (kDLComplex, 128),
             TL_COMPLEX32: (kDLComplex, 32)}
_FROM_DL = {v: k for k, v in _DL_TABLE.items()}
for _code, (_dl, _bits) in _DL_TABLE.items():
    DL_CODE[_code] = _dl
    DL_BITS[_code] = _bits
del _code, _dl, _bits

_DL_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat", 5: "complex",
                  6: "bool"}

_CONSUMED_MSG = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
                 "consumed only once, so you might have already constructed a tensor from it once.")


# ---------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------
cdef struct ExportedLegacy:
    DLManagedTensor managed        # first member: the capsule pointer is the block's address
    int64_t shape[MAX_DIMS]
    int64_t strides[MAX_DIMS]

cdef struct ExportedVersioned:
    DLManagedTensorVersioned managed
    int64_t shape[MAX_DIMS]
    int64_t strides[MAX_DIMS]


cdef void _release_owner(void* ctx) noexcept nogil:
    """Drop the exported Array's reference; deleters may run on any thread, without the GIL
    (and at interpreter exit, when touching Python objects is no longer allowed)."""
    if ctx != NULL and Py_IsInitialized():
        with gil:
            _py_decref(<PyObject*>ctx)


cdef void _delete_legacy(DLManagedTensor* self) noexcept nogil:
    cdef void* ctx = self.manager_ctx
    free(self)
    _release_owner(ctx)


cdef void _delete_versioned(DLManagedTensorVersioned* self) noexcept nogil:
    cdef void* ctx = self.manager_ctx
    free(self)
    _release_owner(ctx)


cdef void _legacy_capsule_destructor(object capsule) noexcept:
    """Free a capsule nobody consumed (a consumer renames it to used_dltensor)."""
    cdef DLManagedTensor* m
    if PyCapsule_IsValid(capsule, b"dltensor"):
        m = <DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        if m.deleter != NULL:
            m.deleter(m)


cdef void _versioned_capsule_destructor(object capsule) noexcept:
    cdef DLManagedTensorVersioned* m
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        m = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        if m.deleter != NULL:
            m.deleter(m)


cdef void _describe(DLTensor* t, Array a, int64_t* shape, int64_t* strides, int device_type,
                    int device_id) noexcept:
    """Fill a DLTensor for `a`: data points at the first element, strides in elements."""
    cdef int i
    t.data = <void*>a.ptr()
    t.device.device_type = device_type
    t.device.device_id = device_id
    t.ndim = a.nd
    t.dtype.code = DL_CODE[a.dtype]
    t.dtype.bits = DL_BITS[a.dtype]
    t.dtype.lanes = 1
    for i in range(a.nd):
        shape[i] = a.shp[i]
        strides[i] = a.strd[i]
    t.shape = shape
    t.strides = strides
    t.byte_offset = 0


def to_capsule(Array a, bint versioned=False, bint copy=False, int device_type=kDLCPU,
               int device_id=0, bint copied=False):
    """A DLPack capsule sharing `a`'s memory (a fresh copy's with copy=True).

    versioned=True gives a "dltensor_versioned" capsule (DLPack 1.x), else "dltensor".
    device_type/device_id: where the memory is; for a CUDA array `a` is its metadata array
    over the device address (torchlite/cuda/_array.py), which is exported without being read
    (copy=False; the caller copies on the device and says so with copied=True)."""
    if device_type != kDLCPU and copy:
        raise ValueError("to_capsule: copy device memory before exporting it")
    cdef Array src = _ew.clone(a) if copy else a
    copy = copy or copied
    cdef ExportedLegacy* el
    cdef ExportedVersioned* ev
    if versioned:
        ev = <ExportedVersioned*>malloc(sizeof(ExportedVersioned))
        if ev == NULL:
            raise MemoryError("__dlpack__: out of memory")
        ev.managed.version.major = DLPACK_MAJOR_VERSION
        ev.managed.version.minor = DLPACK_MINOR_VERSION
        ev.managed.flags = DLPACK_FLAG_BITMASK_IS_COPIED if copy else 0
        _describe(&ev.managed.dl_tensor, src, ev.shape, ev.strides, device_type, device_id)
        Py_INCREF(src)
        ev.managed.manager_ctx = <void*>src
        ev.managed.deleter = _delete_versioned
        try:
            return PyCapsule_New(<void*>ev, b"dltensor_versioned", _versioned_capsule_destructor)
        except BaseException:
            _delete_versioned(&ev.managed)
            raise
    el = <ExportedLegacy*>malloc(sizeof(ExportedLegacy))
    if el == NULL:
        raise MemoryError("__dlpack__: out of memory")
    _describe(&el.managed.dl_tensor, src, el.shape, el.strides, device_type, device_id)
    Py_INCREF(src)
    el.managed.manager_ctx = <void*>src
    el.managed.deleter = _delete_legacy
    try:
        return PyCapsule_New(<void*>el, b"dltensor", _legacy_capsule_destructor)
    except BaseException:
        _delete_legacy(&el.managed)
        raise


# ---------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------
cdef void _call_deleter(void* managed, bint versioned) noexcept:
    cdef DLManagedTensor* m
    cdef DLManagedTensorVersioned* mv
    if versioned:
        mv = <DLManagedTensorVersioned*>managed
        if mv.deleter != NULL:
            mv.deleter(mv)
    else:
        m = <DLManagedTensor*>managed
        if m.deleter != NULL:
            m.deleter(m)


cdef class _ManagedOwner:
    """Held by an imported Storage: calls the producer's deleter when the Storage dies."""
    cdef void* managed
    cdef bint versioned

    def __dealloc__(self):
        if self.managed != NULL:
            _call_deleter(self.managed, self.versioned)
            self.managed = NULL


def is_capsule(obj):
    """Whether obj is a PyCapsule (what to_dlpack returns)."""
    return bool(PyCapsule_CheckExact(obj))


cdef int _dtype_code(DLDataType dt) except -1:
    code = _FROM_DL.get((dt.code, dt.bits), -1) if dt.lanes == 1 else -1
    if code < 0:
        name = _DL_CODE_NAMES.get(dt.code, f"code {dt.code}")
        raise BufferError(f"from_dlpack: unsupported DLPack dtype ({name}, bits={dt.bits}, "
                          f"lanes={dt.lanes}); torchlite has bool, uint8, int8, int16, int32, "
                          f"int64, float16, bfloat16, float32 and float64")
    return code


cdef str _read_layout(DLTensor* t, int isz, int64_t* shp, int64_t* st):
    """Validate the DLTensor's shape and strides into shp/st (strides in elements).
    Returns why its memory cannot be viewed in place ('' when it can)."""
    cdef int i, nd = t.ndim
    cdef uintptr_t addr
    numel = 1
    for i in range(nd):
        if t.shape[i] < 0:
            raise BufferError(f"from_dlpack: negative size {t.shape[i]} in dimension {i}")
        shp[i] = t.shape[i]
        numel *= t.shape[i]
    if numel * isz > (1 << 62):
        raise BufferError(f"from_dlpack: shape {tuple([shp[i] for i in range(nd)])} is too large")
    contiguous_stride = 1
    for i in range(nd - 1, -1, -1):           # NULL strides mean C-contiguous
        st[i] = t.strides[i] if t.strides != NULL else (contiguous_stride if numel else 0)
        contiguous_stride *= shp[i]
    if numel == 0:
        return ""
    if t.data == NULL:
        raise BufferError("from_dlpack: the DLTensor has a NULL data pointer but "
                          f"{numel} elements")
    extent = 0
    for i in range(nd):
        extent += (shp[i] - 1) * abs(st[i])
    if extent * isz > (1 << 62):
        raise BufferError("from_dlpack: the DLTensor's strides reach too far")
    for i in range(nd):
        if st[i] < 0 and shp[i] > 1:
            return "it has negative strides"
    addr = <uintptr_t>t.data + <uintptr_t>t.byte_offset
    if addr % <uintptr_t>isz:
        return f"its data is not aligned to the {isz}-byte element size"
    return ""


cdef void _copy_strided_bytes(char* dst, const char* src, int nd, const int64_t* shp,
                              const int64_t* st, int isz) noexcept nogil:
    """Copy a strided block (element strides, any sign) of foreign memory into a contiguous
    buffer, byte-wise (memcpy) so that misaligned sources are read safely."""
    cdef int64_t idx[MAX_DIMS]
    cdef int64_t row, inner, inner_st, k, numel = 1
    cdef const char* p
    cdef int d
    for d in range(nd):
        numel *= shp[d]
        idx[d] = 0
    if numel == 0:
        return
    if nd == 0:
        memcpy(dst, src, isz)
        return
    inner = shp[nd - 1]
    inner_st = st[nd - 1] * isz
    for row in range(numel // inner):
        p = src
        for d in range(nd - 1):
            p += idx[d] * st[d] * isz
        if inner_st == isz:
            memcpy(dst, p, inner * isz)
        else:
            for k in range(inner):
                memcpy(dst + k * isz, p + k * inner_st, isz)
        dst += inner * isz
        d = nd - 2                            # advance the outer index (odometer)
        while d >= 0:
            idx[d] += 1
            if idx[d] < shp[d]:
                break
            idx[d] = 0
            d -= 1


def capsule_device(capsule):
    """(device type, device id) of an unconsumed DLPack capsule's memory."""
    cdef DLTensor* t
    if PyCapsule_CheckExact(capsule) and PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        t = &(<DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")).dl_tensor
    elif PyCapsule_CheckExact(capsule) and PyCapsule_IsValid(capsule, b"dltensor"):
        t = &(<DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")).dl_tensor
    else:
        raise RuntimeError(_CONSUMED_MSG)
    return (<int>t.device.device_type, <int>t.device.device_id)


def from_capsule(capsule, copy=None, int cuda_device=-1):
    """An Array over a DLPack capsule's memory; consumes the capsule.

    copy=None views the memory in place when torchlite can (else copies), copy=True always
    copies, copy=False never copies (BufferError when a view is impossible).  With
    cuda_device >= 0 the capsule must hold memory of that CUDA device, and the result is the
    metadata array over it that torchlite/cuda/_array.py wraps (a view only: never read here)."""
    cdef bint versioned
    cdef void* managed
    cdef DLTensor* t
    cdef DLManagedTensorVersioned* mv
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int code, isz, i
    cdef bint read_only = False
    cdef Array out
    cdef Storage storage
    cdef _ManagedOwner owner
    cdef const char* used_name
    if not PyCapsule_CheckExact(capsule):
        raise RuntimeError(f"{_CONSUMED_MSG} (got an object of type {type(capsule).__name__})")
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        versioned = True
        managed = PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        mv = <DLManagedTensorVersioned*>managed
        if mv.version.major != DLPACK_MAJOR_VERSION:
            raise BufferError(f"from_dlpack: DLPack version {mv.version.major}.{mv.version.minor} "
                              f"is not supported (torchlite reads {DLPACK_MAJOR_VERSION}.x)")
        t = &mv.dl_tensor
        read_only = (mv.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0
        used_name = b"used_dltensor_versioned"
    elif PyCapsule_IsValid(capsule, b"dltensor"):
        versioned = False
        managed = PyCapsule_GetPointer(capsule, b"dltensor")
        t = &(<DLManagedTensor*>managed).dl_tensor
        used_name = b"used_dltensor"
    else:
        raise RuntimeError(_CONSUMED_MSG)

    # validate everything before touching the memory or taking ownership
    if cuda_device >= 0:
        if t.device.device_type != kDLCUDA or t.device.device_id != cuda_device:
            raise BufferError(f"from_dlpack: expected memory of CUDA device {cuda_device}, got "
                              f"DLDeviceType {t.device.device_type}, id {t.device.device_id}")
    elif t.device.device_type not in HOST_DEVICE_TYPES:
        raise BufferError(f"from_dlpack: unsupported device (DLDeviceType {t.device.device_type}, "
                          f"id {t.device.device_id}); torchlite reads CPU-accessible memory only")
    if t.ndim < 0 or t.ndim > MAX_DIMS:
        raise BufferError(f"from_dlpack: {t.ndim} dimensions; torchlite supports 0 to {MAX_DIMS}")
    code = _dtype_code(t.dtype)
    isz = tl_itemsize[code]
    reason = _read_layout(t, isz, shp, st)
    if read_only and not reason:
        reason = "it is read-only"
    if reason and copy is False:
        raise BufferError(f"from_dlpack: cannot view this DLPack tensor without a copy ({reason}) "
                          f"and copy=False was given")
    if cuda_device >= 0 and (reason or copy):
        raise BufferError(f"from_dlpack: cannot view this CUDA tensor in place ({reason or 'a copy was asked for'})")

    if reason or copy:
        out = new_array(t.ndim, shp, code)
        with nogil:
            _copy_strided_bytes(out.ptr(), <char*>t.data + t.byte_offset, t.ndim, shp, st, isz)
        PyCapsule_SetName(capsule, used_name)
        _call_deleter(managed, versioned)
        return out

    storage = Storage.__new__(Storage)
    owner = _ManagedOwner.__new__(_ManagedOwner)
    out = Array.__new__(Array)
    # from here on nothing can fail: mark the capsule consumed, then take ownership
    PyCapsule_SetName(capsule, used_name)
    owner.managed = managed
    owner.versioned = versioned
    storage.data = <char*>t.data + t.byte_offset
    storage.pool_bytes = 0
    storage.owner = owner
    storage.nbytes = 0
    for i in range(t.ndim):
        if shp[i] == 0:
            storage.nbytes = -1
            break
        storage.nbytes += (shp[i] - 1) * st[i]
    storage.nbytes = (storage.nbytes + 1) * isz
    out.storage = storage
    out.dtype = code
    out.nd = t.ndim
    out.off = 0
    out.n = 1
    for i in range(t.ndim):
        out.shp[i] = shp[i]
        # a negative stride reaching here addresses nothing (a size-0 or size-1 dim):
        # torchlite arrays never show negative strides
        out.strd[i] = st[i] if st[i] >= 0 else -st[i]
        out.n *= shp[i]
    return out
