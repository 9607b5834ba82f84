# The GPU driver's calls of every op called by their C address: kernel launches (a kernel's
# arguments packed in C), asynchronous copies and memsets, stream synchronisation.
#
# torchlite/cuda/_launch.py and _runtime.py make these calls through here.  Making them in
# Python (ctypes objects per argument, a ctypes array of their addresses, cuda-python's
# wrappers) cost tens of microseconds of host time per call, and a training step of small
# layers is nothing but such calls (issue 15's step target).  Here each kernel argument is an
# Arg (8 bytes in place, or a by-value struct's bytes), the void* array the driver reads lives
# on the C stack, and the driver's entry points are called directly.
#
# Nothing here knows about devices or drivers: each `entry` is either the C address of a
# function with the driver call's signature (the real driver's, found by
# torchlite/cuda/_driver.c_entry) or a Python callable taking the same arguments (the tests'
# stand-in driver, which reads a launch's arguments back from the array as a GPU would).

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

ctypedef int (*launch_fn)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, void* stream,
                          void** params, void** extra) noexcept nogil

# cuMemcpyDtoDAsync / HtoDAsync / DtoHAsync (their 64-bit "_v2" forms): dst, src, bytes, stream
ctypedef int (*copy_fn)(uint64_t dst, uint64_t src, size_t nbytes, void* stream) noexcept nogil
ctypedef int (*memset8_fn)(uint64_t dst, unsigned char value, size_t count, void* stream) noexcept nogil
ctypedef int (*memset16_fn)(uint64_t dst, unsigned short value, size_t count, void* stream) noexcept nogil
ctypedef int (*memset32_fn)(uint64_t dst, unsigned int value, size_t count, void* stream) noexcept nogil
ctypedef int (*sync_fn)(void* stream) noexcept nogil

cdef enum:
    MAX_ARGS = 64          # no kernel of cuda_kernels/ takes a tenth of that


cdef class Arg:
    """One kernel parameter's bytes: a scalar in `word`, or a struct's bytes in `blob`."""
    cdef uint64_t word
    cdef bytes blob
    cdef readonly int size

    cdef void* address(self):
        if self.blob is not None:
            return <void*><char*>self.blob
        return &self.word

    @property
    def value(self):
        """The parameter's bytes, as the kernel reads them."""
        if self.blob is not None:
            return self.blob
        return (<char*>&self.word)[:self.size]

    def __repr__(self):
        return f"<kernel argument of {self.size} bytes>"


cdef inline Arg _word(uint64_t bits, int size):
    cdef Arg a = Arg.__new__(Arg)
    a.word = bits
    a.size = size
    return a


def ptr(uint64_t address):
    """A pointer parameter (a device address; 0 for null)."""
    return _word(address, 8)


def i64(int64_t v):
    return _word(<uint64_t>v, 8)


def u64(uint64_t v):
    return _word(v, 8)


def i32(int32_t v):
    return _word(<uint32_t>v, 4)


def u32(uint32_t v):
    return _word(v, 4)


def f64(double v):
    cdef uint64_t bits
    memcpy(&bits, &v, 8)
    return _word(bits, 8)


def f32(float v):
    cdef uint32_t bits
    memcpy(&bits, &v, 4)
    return _word(bits, 4)


def struct(data):
    """A by-value struct parameter from its packed bytes (torchlite/cuda/_kernels.pack_*)."""
    cdef Arg a = Arg.__new__(Arg)
    a.blob = bytes(data)
    a.size = len(a.blob)
    return a


cdef inline int _dims(object d, unsigned* out, str what) except -1:
    cdef Py_ssize_t i, n
    if isinstance(d, int):
        out[0], out[1], out[2] = d, 1, 1
        return 0
    n = len(d)
    if n < 1 or n > 3:
        raise ValueError(f"a kernel launch's {what} has 1 to 3 dims, not {n}")
    out[1] = out[2] = 1
    for i in range(n):
        out[i] = d[i]
    return 0


def launch(entry, function, grid, block, unsigned shared, uintptr_t stream, args):
    """Launch kernel `function` (its driver handle) with `grid` and `block` (ints or tuples of
    up to 3), `shared` bytes of dynamic shared memory, on `stream`, with `args` (a sequence of
    Arg).  `entry`: an int, the C address of cuLaunchKernel; or a Python callable with its
    signature.  Returns the driver's result code (0 for success)."""
    cdef unsigned g[3]
    cdef unsigned b[3]
    cdef void* params[MAX_ARGS]
    cdef Py_ssize_t i, n = len(args)
    cdef Arg a
    cdef launch_fn fn
    cdef uintptr_t f
    cdef int err
    _dims(grid, g, "grid")
    _dims(block, b, "block")
    if n > MAX_ARGS:
        raise ValueError(f"a kernel launch takes at most {MAX_ARGS} arguments, not {n}")
    for i in range(n):
        a = <Arg?>args[i]
        params[i] = a.address()
    if isinstance(entry, int):
        fn = <launch_fn><uintptr_t>entry
        f = function
        with nogil:
            err = fn(<void*>f, g[0], g[1], g[2], b[0], b[1], b[2], shared,
                     <void*>stream, params, NULL)
    else:
        err = int(entry(function, g[0], g[1], g[2], b[0], b[1], b[2], shared, stream,
                        <uintptr_t>&params[0], 0)[0])
    return err


def copy(entry, uint64_t dst, uint64_t src, size_t nbytes, uintptr_t stream):
    """An asynchronous copy of `nbytes` from `src` to `dst` on `stream` through `entry`
    (cuMemcpy{DtoD,HtoD,DtoH}Async's C address, or a Python callable).  Returns the result
    code."""
    cdef copy_fn fn
    cdef int err
    if isinstance(entry, int):
        fn = <copy_fn><uintptr_t>entry
        with nogil:
            err = fn(dst, src, nbytes, <void*>stream)
        return err
    return int(entry(dst, src, nbytes, stream)[0])


def memset(entry, int width, uint64_t dst, uint32_t value, size_t count, uintptr_t stream):
    """`count` words of `width` bytes (1, 2 or 4) set to `value` from `dst` on `stream`
    through `entry` (cuMemsetD{8,16,32}Async's C address, or a Python callable)."""
    cdef int err
    if width not in (1, 2, 4) or (width < 4 and value >> (8 * width)):
        raise ValueError(f"memset: a {width}-byte word cannot hold {value}")
    if not isinstance(entry, int):
        return int(entry(dst, value, count, stream)[0])
    cdef uintptr_t f = entry
    with nogil:
        if width == 1:
            err = (<memset8_fn>f)(dst, <unsigned char>value, count, <void*>stream)
        elif width == 2:
            err = (<memset16_fn>f)(dst, <unsigned short>value, count, <void*>stream)
        else:
            err = (<memset32_fn>f)(dst, value, count, <void*>stream)
    return err


def synchronize(entry, uintptr_t stream):
    """Wait for `stream`'s work through `entry` (cuStreamSynchronize's C address, or a
    Python callable).  The GIL is released while waiting."""
    cdef sync_fn fn
    cdef int err
    if isinstance(entry, int):
        fn = <sync_fn><uintptr_t>entry
        with nogil:
            err = fn(<void*>stream)
        return err
    return int(entry(stream)[0])
