"""Argument helpers shared by the nn.functional modules (one home, so that sibling modules
import no function of each other's)."""
import builtins
import numbers

from ..._tensor import Tensor


def _int_arg(v, name, op):
    """v as a Python int (an int-like value: a 0-d integer tensor, a NumPy integer); bools
    and floats are refused as PyTorch refuses them."""
    if isinstance(v, builtins.bool) or not isinstance(v, (numbers.Integral, Tensor)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")
    try:
        return v.__index__()
    except (TypeError, AttributeError):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                        f"{type(v).__name__}") from None


def ntuple(v, n, name, op):
    """An int or a sequence of 1 or n ints as an n-tuple, with PyTorch's message for another
    length."""
    if isinstance(v, (list, tuple)):
        vals = [_int_arg(a, name, op) for a in v]
    else:
        vals = [_int_arg(v, name, op)]
    if len(vals) == 1:
        return tuple(vals) * n
    if len(vals) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values "
                           f"to match the convolution dimensions, but got {name}={vals}")
    return tuple(vals)
