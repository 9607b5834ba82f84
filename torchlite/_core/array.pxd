# The CPU array: a strided view (shape, strides and offset in elements, dtype code) over a
# reference-counted Storage.  Everything above the array layer sees it only through the
# methods and module functions documented in torchlite/_core/__init__.py.
from libc.stdint cimport int64_t

cdef enum:
    MAX_DIMS = 16

cdef extern from "kernels/types.h":
    enum:
        TL_BOOL, TL_UINT8, TL_INT8, TL_INT16, TL_INT32, TL_INT64
        TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64, TL_COMPLEX64, TL_COMPLEX128
        TL_COMPLEX32
        TL_NDTYPES
    enum:
        TL_OK, TL_ERR_ZERODIV, TL_ERR_NEGPOW, TL_ERR_INDEX
    const int tl_itemsize[13]

# a Python number stored as element type dtype at p (the cast rules; complex parts included)
cdef int write_scalar(char* p, int dtype, object v) except -1


cdef class Storage:
    cdef char* data
    cdef Py_ssize_t nbytes
    cdef Py_ssize_t pool_bytes   # size class in the cache; 0 when the memory is not ours
    cdef readonly object owner   # keeps external memory alive (a NumPy array, a pinned or device block)
    cdef public long long version


cdef class Array:
    cdef readonly Storage storage
    cdef readonly int dtype
    cdef int nd
    cdef int64_t off
    cdef int64_t n
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t strd[MAX_DIMS]
    cdef object _shape_tuple

    cdef inline char* ptr(self) noexcept nogil:
        return self.storage.data + self.off * tl_itemsize[self.dtype]
    cdef bint contiguous(self) noexcept nogil
    cdef bint internal_overlap(self) noexcept nogil


cdef Storage new_storage(Py_ssize_t nbytes)
cdef Array new_array(int ndim, const int64_t* shape, int dtype)
cdef Array new_array_strided(int ndim, const int64_t* shape, const int64_t* order, int dtype)
cdef Array make_view(Array base, int ndim, const int64_t* shape, const int64_t* strides, int64_t offset)
cdef int parse_shape(object shape, int64_t* out, str op) except -1
cdef tuple shape_tuple(int ndim, const int64_t* shape)
cdef int broadcast_into(int64_t* out, int nd_out, int nd, const int64_t* shape) noexcept nogil
