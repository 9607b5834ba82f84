"""The CUDA backend's version of each array-layer function (torchlite/_dispatch.py calls
`call` for every function whose arguments include a CUDA array).

A function registered in NATIVE runs on the device: by the driver's copies and memsets, or by
a kernel of cuda_kernels/ (torchlite/cuda/_elementwise.py).  A native function may return
NotImplemented for a case it does not cover.  Everything else runs the CPU kernel on host
copies of the arguments (torchlite/cuda/_fallback.py): correct and slow.  `torchlite._dispatch
.cuda_fallback_names()` lists the functions that take that path for every input.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _array, _copy, _fallback, _state
from ._registry import KERNEL, NATIVE
from ._array import CudaArray

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def call(op: tuple[str, str], cpu_fn: Callable[..., Any], device_index: int, args: tuple[Any, ...],
         kwargs: dict[str, Any]) -> Any:
    fn = NATIVE.get(op)
    if fn is None and _state.kernels_enabled:
        fn = KERNEL.get(op)
    if fn is not None:
        result = fn(*args, **kwargs)
        if result is not NotImplemented:
            return result
    return _fallback.run_on_host(cpu_fn, device_index, args, kwargs)


def create(name: str, device_index: int, args: tuple[Any, ...]) -> CudaArray:
    """array.empty / full / empty_strided on device `device_index`."""
    if name == "empty":
        shape, dtype = args
        return _array.empty(shape, dtype, device_index)
    if name == "full":
        shape, value, dtype = args
        out = _array.empty(shape, dtype, device_index)
        _copy.fill_(out, value)
        return out
    if name == "empty_strided":        # dims laid out innermost-first in `order`, as the CPU
        shape, order, dtype = args
        strides, step = [0] * len(shape), 1
        for d in order:
            strides[d] = step
            step *= max(shape[d], 1)
        return _array.empty(shape, dtype, device_index).as_strided(tuple(shape), tuple(strides), 0)
    raise ValueError(name)


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
                       ("elementwise", "ternary_dtype"), ("joining", "cat_plan"),
                       ("joining", "stack_plan"), ("joining", "check_no_alias"),
                       ("matmul", "check_bmm")):
    _metadata_only(_module, _name)


# the kernel-backed functions register themselves in KERNEL
from . import _conv, _elementwise, _fused, _indexing, _loss, _matmul, _norm, _optim, _pool, _random, _reduction, _rnn, _joining  # noqa: E402,F401,E501
