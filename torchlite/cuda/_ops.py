"""The CUDA backend's version of each array-layer function (torchlite/_dispatch.py calls
`call` for every function whose arguments include a CUDA array).

A function registered in NATIVE runs on the device: by the driver's copies and memsets, or by
a kernel of cuda_kernels/ (torchlite/cuda/_elementwise.py).  A native function may return
NotImplemented for a case it does not cover.  Everything else runs the CPU kernel on host
copies of the arguments (torchlite/cuda/_fallback.py): correct and slow.  `fallback_names()`
lists the functions that take that path for every input.
"""
from .._core import elementwise as _cpu_ew
from . import _array, _fallback
from ._registry import KERNEL, NATIVE, native
from ._array import CudaArray

kernels_enabled = True       # False: no kernel is launched (the tests' host-memory driver)


def call(op, cpu_fn, device_index, args, kwargs):
    fn = NATIVE.get(op)
    if fn is None and kernels_enabled:
        fn = KERNEL.get(op)
    if fn is not None:
        result = fn(*args, **kwargs)
        if result is not NotImplemented:
            return result
    return _fallback.run_on_host(cpu_fn, device_index, args, kwargs)


def create(name, device_index, args):
    """array.empty / full / empty_strided on device `device_index`."""
    if name == "empty":
        shape, dtype = args
        return _array.empty(shape, dtype, device_index)
    if name == "full":
        shape, value, dtype = args
        out = _array.empty(shape, dtype, device_index)
        fill_(out, value)
        return out
    if name == "empty_strided":        # dims laid out innermost-first in `order`, as the CPU
        shape, order, dtype = args
        strides, step = [0] * len(shape), 1
        for d in order:
            strides[d] = step
            step *= max(shape[d], 1)
        return _array.empty(shape, dtype, device_index).as_strided(tuple(shape), tuple(strides), 0)
    raise ValueError(name)


def fallback_names():
    """The array-layer functions without a CUDA version of their own."""
    from .. import _dispatch
    names = []
    for ns_name in _dispatch._MODULES:
        ns = getattr(_dispatch, ns_name)
        for key, value in vars(ns._cpu).items():
            if not key.startswith("_") and _dispatch._is_kernel_function(value) \
                    and (ns_name, key) not in NATIVE and (ns_name, key) not in KERNEL:
                names.append(f"{ns_name}.{key}")
    return sorted(names)


# ---- metadata-only functions: run on the device arrays' metadata, no data moves ----------------
def _metadata_only(module, name):
    cpu_fn = getattr(__import__(f"torchlite._core.{module}", fromlist=[name]), name)

    def run(*args, **kwargs):
        return cpu_fn(*[_meta(a) for a in args], **{k: _meta(v) for k, v in kwargs.items()})
    run.__name__ = name
    NATIVE[(module, name)] = run


def _meta(x):
    if isinstance(x, CudaArray):
        return x._meta
    if type(x) in (list, tuple):
        return type(x)(_meta(e) for e in x)
    return x


for _module, _name in (("elementwise", "result_type"), ("elementwise", "check_no_partial_overlap"),
                       ("elementwise", "broadcast_result"), ("elementwise", "binary_dtypes"),
                       ("elementwise", "ternary_dtype"), ("shape_ops", "cat_plan"),
                       ("shape_ops", "stack_plan"), ("shape_ops", "check_no_alias"),
                       ("matmul", "check_bmm")):
    _metadata_only(_module, _name)


# ---- natives without kernels: memset and copies ------------------------------------------------
@native("array", "fill_")
def fill_(a, value):
    if _array.fill_(a, value) is None:         # not dense: a kernel's job
        if not kernels_enabled:
            return NotImplemented
        from . import _elementwise
        return _elementwise.fill_strided(a, value)
    return None


@native("array", "reinterpret")
def reinterpret(a, dtype, shape, strides, offset):
    """The same device bytes seen as another dtype (Tensor.view(dtype)): metadata only."""
    return _array.reinterpret(a, dtype, shape, strides, offset)


@native("elementwise", "copy_")
def copy_(dst, src):
    """dst[...] = src, src broadcast to dst's shape and cast to its dtype; either may be on
    the host (the transfers of Tensor.copy_ and .to())."""
    if dst.shape != src.shape or dst.dtype != src.dtype or src.numel == 0 \
            or not (dst.is_non_overlapping_and_dense() and src.is_non_overlapping_and_dense()) \
            or dst.strides != src.strides:
        return _copy_general(dst, src)
    if isinstance(dst, CudaArray) and isinstance(src, CudaArray):
        if dst.device_index == src.device_index:
            if not (dst.same_storage(src) and dst.offset == src.offset):
                _check_overlap(dst, src)
                _array.copy_d2d(dst, src)
            return dst
        src = _array.to_host(src)
    if isinstance(dst, CudaArray):        # host -> device
        _array.copy_d2d(dst, _array.from_host(src, dst.device_index))
        return dst
    return _cpu_ew.copy_(dst, _array.to_host(src))      # device -> host


def _check_overlap(dst, src):
    lo_d, n_d = _array._span(dst)
    lo_s, n_s = _array._span(src)
    if dst.same_storage(src) and lo_d < lo_s + n_s and lo_s < lo_d + n_d:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.")


def _copy_general(dst, src):
    """copy_ with broadcasting, casting or layouts that differ: on one device by the cast
    kernel (or the fallback), across devices by staging the source on dst's device."""
    if isinstance(dst, CudaArray) and not (isinstance(src, CudaArray)
                                           and src.device_index == dst.device_index):
        src = _array.move_to_device(src, dst.device_index)
    elif not isinstance(dst, CudaArray):
        return _cpu_ew.copy_(dst, _array.to_host(src))
    return NotImplemented if not kernels_enabled else _kernel_copy(dst, src)


def _kernel_copy(dst, src):
    return _elementwise.copy_(dst, src)


@native("elementwise", "clone")
def clone(a, preserve=True):
    """A copy with its own memory: a's strides when a is dense (and preserve), else contiguous."""
    if a.numel == 0 or a.is_contiguous() or (preserve and a.is_non_overlapping_and_dense()):
        return _array.clone_dense(a)
    return NotImplemented if not kernels_enabled else _kernel_copy(
        _array.empty(a.shape, a.dtype, a.device_index), a)


@native("elementwise", "contiguous")
def contiguous(a):
    if a.is_contiguous():
        return a
    return clone(a, False)


# the kernel-backed functions register themselves in KERNEL
from . import _conv, _elementwise, _fused, _indexing, _loss, _matmul, _norm, _optim, _pool, _random, _reduction, _rnn, _shape  # noqa: E402,F401,E501
