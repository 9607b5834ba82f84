# The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), written out as Cython
# structs.  Cython emits them as C structs with these fields in this order, which is all
# the ABI asks: DLPack is a C struct layout plus two PyCapsule naming conventions.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef enum:
    # DLDeviceType (a C enum: int-sized on every platform we build for)
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10
    kDLROCMHost = 11
    kDLCUDAManaged = 13

cdef enum:
    # DLDataTypeCode
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6

cdef enum:
    # DLManagedTensorVersioned.flags
    DLPACK_FLAG_BITMASK_READ_ONLY = 1
    DLPACK_FLAG_BITMASK_IS_COPIED = 2

cdef enum:
    # the DLPack version this module writes and reads (any 1.x reads: minors are compatible)
    DLPACK_MAJOR_VERSION = 1
    DLPACK_MINOR_VERSION = 0

ctypedef struct DLDevice:
    int32_t device_type
    int32_t device_id

ctypedef struct DLDataType:
    uint8_t code
    uint8_t bits
    uint16_t lanes

ctypedef struct DLTensor:
    void* data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t* shape
    int64_t* strides          # in elements; NULL means C-contiguous
    uint64_t byte_offset

cdef struct DLManagedTensor:
    DLTensor dl_tensor
    void* manager_ctx
    void (*deleter)(DLManagedTensor* self) noexcept nogil

ctypedef struct DLPackVersion:
    uint32_t major
    uint32_t minor

cdef struct DLManagedTensorVersioned:
    DLPackVersion version
    void* manager_ctx
    void (*deleter)(DLManagedTensorVersioned* self) noexcept nogil
    uint64_t flags
    DLTensor dl_tensor
