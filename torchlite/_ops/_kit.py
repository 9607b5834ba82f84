"""The op-author kit: the argument checks and out= handling every op module needs, one of
each (issue 16, step 5).  An op module imports these instead of writing its own:

    int_arg(x, what, op)        an int-like argument as int; TypeError for bools, floats, ...
    tensor_arg(x, op, name)     TypeError unless x is a Tensor (PyTorch's message)
    write_out(arr, out, op)     an array result copied into out= (same dtype; resized as
                                PyTorch resizes out=), out returned
    C_NAMES[code]               a dtype's C++ name, as PyTorch's dtype errors spell it"""
import builtins

from .._core.matmul import C_NAMES
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import Tensor

__all__ = ["int_arg", "tensor_arg", "write_out", "C_NAMES"]


def int_arg(x, what, op):
    """x as a Python int: ints, NumPy integers, 0-d integer tensors; bools and floats raise
    PyTorch's TypeError."""
    if isinstance(x, builtins.bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{op}(): argument '{what}' must be int, not {type(x).__name__}")
    return x.__index__()


def tensor_arg(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def write_out(arr, out, op):
    """Copy the result array arr into the Tensor out (same dtype, PyTorch's RuntimeError
    otherwise; resized when its shape differs), bump its version, return it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._data.dtype != arr.dtype:
        raise RuntimeError(f"{op}: Expected out tensor to have dtype {C_NAMES[arr.dtype]}, but "
                           f"got {C_NAMES[out._data.dtype]} instead")
    if tuple(out._data.shape) != tuple(arr.shape):
        out._data = _A.empty(arr.shape, arr.dtype, device=out._data)
    _ew.copy_(out._data, arr)
    out._bump_version()
    return out
