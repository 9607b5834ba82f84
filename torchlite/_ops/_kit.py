"""The op-author kit: the argument checks and out= handling every op module needs, one of
each (issue 16, step 5).  An op module imports these instead of writing its own:

    int_arg(x, what, op)          an int-like argument as int; TypeError for bools, floats, ...
    int64_arg(x, what, op)        int_arg, and PyTorch's ValueError beyond int64's range
    tensor_arg(x, op, name, pos)  TypeError unless x is a Tensor (PyTorch's message)
    tensor_args(op, **named)      tensor_arg for each of several arguments
    needs_grad(*tensors)          whether an op over these records a backward node
    no_out_with_grad(op, *xs)     PyTorch's refusal of out= when an input requires grad
    out_array(out, shape, op)     out's array, resized to shape, for a kernel to write into
    write_out(res, out, op)       a computed result (array, Tensor, or a tuple of them) copied
                                  into out= (a Tensor, or a tuple of them), out returned
    result(arr, out, op)          the array wrapped as a Tensor, or written into out=
    with_out(op)                  a decorator giving a function PyTorch's out= keyword
    factory_dtype(dtype, out, op) the dtype a factory makes when given out=
    C_NAMES[code], TORCH_NAMES[code]
                                  a dtype's C++ name ("long int") and ScalarType name ("Long"),
                                  as PyTorch's dtype errors spell them

PyTorch's out= rules, kept here once: an out of another shape is resized (its old values
are not kept), the result dtype must equal out's (or, for ops that cast into out, be castable
into it), and out= is refused while an input requires grad with grad mode on."""
import builtins
import functools
from typing import Any, Callable, Literal, Optional, Sequence, TypeVar

from .. import _dtype as D
from .._core.matmul import C_NAMES, TORCH_NAMES
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import Tensor, _wrap
from ..autograd.graph import needs_grad

__all__ = ["int_arg", "int64_arg", "tensor_arg", "tensor_args", "needs_grad", "no_out_with_grad", "out_array",
           "write_out", "result", "with_out", "factory_dtype", "check_out_memory", "C_NAMES", "TORCH_NAMES"]

# The arrays are the array layer's (torchlite._core.array.Array, or a CUDA one), typed Any
# here; a dtype code is an int (D.float32.code).  casting takes NumPy's words (write_out).
Casting = Literal["no", "same_kind", "unsafe"]
F = TypeVar("F", bound=Callable[..., Any])

def int_arg(x: Any, what: str, op: str) -> int:
    """x as a Python int: ints, NumPy integers, 0-d integer tensors; bools and floats raise
    PyTorch's TypeError."""
    if isinstance(x, builtins.bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{op}(): argument '{what}' must be int, not {type(x).__name__}")
    return x.__index__()


def int64_arg(x: Any, what: str, op: str) -> int:
    """int_arg for an argument PyTorch's schema types as int64: a value beyond int64's range
    is PyTorch's ValueError ("Overflow when unpacking long long"), raised by its argument
    parser before the op runs, so before any other check (the message also names the op
    and the argument, which PyTorch's does not)."""
    v = int_arg(x, what, op)
    if not -2 ** 63 <= v < 2 ** 63:
        raise ValueError(f"Overflow when unpacking long long: {op}(): {what}={v}")
    return v


def tensor_arg(x: Any, op: str, name: str = "input", pos: Optional[int] = None) -> Tensor:
    """x, or PyTorch's TypeError naming op and the argument (and its position, for the
    functions whose messages give it) unless x is a Tensor."""
    if not isinstance(x, Tensor):
        where = f"'{name}'" if pos is None else f"'{name}' (position {pos})"
        raise TypeError(f"{op}(): argument {where} must be Tensor, not {type(x).__name__}")
    return x


def tensor_args(op: str, **named: Any) -> None:
    """tensor_arg for each name=value, in order."""
    for name, x in named.items():
        tensor_arg(x, op, name)


def no_out_with_grad(op: str, *xs: Any) -> None:
    """RuntimeError when out= is given while one of xs requires grad (grad mode on)."""
    if needs_grad(*xs):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")


def out_array(out: Any, shape: Sequence[int], op: str, *, dtype: Optional[int] = None,
              cast_from: Optional[int] = None) -> Any:
    """The array of the out= tensor, resized to `shape` when its shape differs, its version
    bumped (it is about to be written: tensors saved over its memory are stale).
    dtype: the dtype out must have exactly; cast_from: a result dtype that must be castable
    into out's (PyTorch's "can't be cast" RuntimeError otherwise)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    have = out._data.dtype
    if dtype is not None and have != dtype:
        raise RuntimeError(f"{op}: Expected out tensor to have dtype {C_NAMES[dtype]}, but got "
                           f"{C_NAMES[have]} instead")
    if cast_from is not None and not _ew.can_cast(cast_from, have):
        raise RuntimeError(f"{op}: result type {TORCH_NAMES[cast_from]} can't be cast to the "
                           f"desired output type {TORCH_NAMES[have]}")
    if tuple(out._data.shape) != tuple(shape):
        out._data = _A.empty(tuple(shape), have, device=out._data)
    out._bump_version()
    return out._data


def check_out_memory(outs: Sequence[Any], inputs: Sequence[Any], *, internal: bool = False) -> None:
    """PyTorch's assert_no_overlap for an op that reads its inputs while writing out=: no out
    tensor may share dense memory with an input tensor (on its device); with internal, none may
    be expanded either (assert_no_internal_overlap, before any resize)."""
    for out in outs:
        if not isinstance(out, Tensor):
            continue
        if internal and out._data.has_internal_overlap():
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                               "refers to a single memory location. Please clone() the tensor before "
                               "performing the operation.")
        for t in inputs:
            if isinstance(t, Tensor) and t.device == out.device:
                _ew.check_no_overlap(out._data, t._data)


def write_out(res: Any, out: Any, op: str, *, casting: Casting = "no") -> Any:
    """Copy the result res (an array, a Tensor, or a tuple/named tuple of them) into out (a
    Tensor, or a tuple of as many); return out in res's form.  casting, NumPy's words for
    PyTorch's per-op rules: "no": out must have the result's dtype; "same_kind": the result is
    cast into out's dtype where PyTorch's promotion allows (the elementwise ops); "unsafe":
    any dtype (ops that compute in out's dtype, like sum)."""
    if isinstance(res, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(res):
            raise TypeError(f"{op}(): argument 'out' must be tuple of {len(res)} Tensors")
        filled = [write_out(r, o, op, casting=casting) for r, o in zip(res, out)]
        return type(res)(*filled) if hasattr(res, "_fields") else tuple(filled)
    arr = res._data if isinstance(res, Tensor) else res
    if casting == "no":
        dst = out_array(out, arr.shape, op, dtype=arr.dtype)
    elif casting == "same_kind":
        dst = out_array(out, arr.shape, op, cast_from=arr.dtype)
    else:
        dst = out_array(out, arr.shape, op)
    _ew.copy_(dst, arr)
    return out


def result(arr: Any, out: Optional[Tensor], op: str, *, casting: Casting = "no") -> Tensor:
    """The array arr as a new Tensor, or (out= given) copied into out, which is returned."""
    if out is None:
        return _wrap(arr)
    return write_out(arr, out, op, casting=casting)


def with_out(op: str, *, casting: Casting = "no") -> Callable[[F], F]:
    """Give a function PyTorch's out= keyword: it computes its result as usual, which is then
    written into out (a tensor, or a tuple for ops with several results); out= while an input
    requires grad raises, as in PyTorch."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, out=None, **kwargs):
            if out is None:
                return fn(*args, **kwargs)
            no_out_with_grad(op, *args, *kwargs.values())
            return write_out(fn(*args, **kwargs), out, op, casting=casting)
        return wrapper
    return deco


def factory_dtype(dtype: Any, out: Optional[Tensor], op: str, default: Any = None) -> D.dtype:
    """The dtype a factory (arange, linspace, full, ...) makes: dtype when given, else out's
    when out= is given, else default (the default dtype when None).  A dtype that disagrees
    with out's raises, as PyTorch's factories do."""
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if dtype is not None and D.to_dtype(dtype) is not out.dtype:
            raise RuntimeError(f"{op}: dtype {TORCH_NAMES[D.to_dtype(dtype).code]} does not match "
                               f"dtype of out parameter ({TORCH_NAMES[out._data.dtype]})")
        return out.dtype
    return D.to_dtype(dtype, default if default is not None else D.get_default_dtype())
