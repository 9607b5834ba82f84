"""PyTorch's "SymInt-aware" helpers (torch.sym_max, sym_int, ...), which code written to stay
traceable by torch.compile calls instead of the builtins.  torchlite has no symbolic integers
(its graph capture specialises on sizes), so each is the builtin it stands for, with
PyTorch's type rules: sym_max/sym_min take ints and floats only and give a float when either
is one; sym_ite wants a bool and two values of one type; a violated rule raises
AssertionError, as PyTorch's does."""
import builtins
import math
import numbers

__all__ = ["sym_float", "sym_int", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
           "sym_ite", "sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size",
           "SymInt", "SymFloat", "SymBool"]

_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1

# Python's and NumPy's ints and floats (NumPy registers its scalar types with `numbers`)
_NUMBERS = numbers.Real


def sym_float(a):
    """float(a)."""
    return builtins.float(a)


def sym_int(a):
    """int(a): floats truncate toward zero."""
    return builtins.int(a)


def _numbers(a, b, what):
    for x in (a, b):
        if not isinstance(x, _NUMBERS):
            raise AssertionError(f"{what}: expected an int or a float, got {type(x).__name__}")
    return not (isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral))


def sym_max(a, b):
    """max(a, b) of two ints or floats, a float when either is one (max(1, 1.0) is 1.0)."""
    either_float = _numbers(a, b, "sym_max")
    m = builtins.max(a, b)
    return builtins.float(m) if either_float else m


def sym_min(a, b):
    """min(a, b) of two ints or floats, a float when either is one."""
    either_float = _numbers(a, b, "sym_min")
    m = builtins.min(a, b)
    return builtins.float(m) if either_float else m


def sym_not(a):
    """not a."""
    return not a


def sym_sqrt(a):
    """math.sqrt(a)."""
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of the numbers given as arguments or as one list or tuple (0 for none)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """t if b else f: b a bool, t and f of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"sym_ite: expected a bool condition, got {type(b).__name__}")
    if type(t) is not type(f):
        raise AssertionError(f"sym_ite: the two values differ in type: {type(t).__name__} vs "
                             f"{type(f).__name__}")
    return t if b else f


def _concrete(size, what):
    """size as a Python int (an int, or a one-element integer tensor as .item() reads it)."""
    if hasattr(size, "item") and not isinstance(size, numbers.Integral):
        size = size.item()
    if not isinstance(size, numbers.Integral) or isinstance(size, builtins.bool):
        raise TypeError(f"{what}(): argument 'size' must be an int, got {type(size).__name__}")
    return builtins.int(size)


def _constrain(size, lo, hi, what):
    size = _concrete(size, what)
    if not lo <= size <= hi:
        raise RuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


def sym_constrain_range(size, *, min=None, max=None):
    """Assert min <= size <= max (either bound may be None): torch.export's range hint for a
    data-dependent size; with concrete sizes, as here, a check that raises RuntimeError."""
    _constrain(size, _INT64_MIN if min is None else min, _INT64_MAX if max is None else max,
               "sym_constrain_range")


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """sym_constrain_range for a value used as a size: min defaults to 0."""
    _constrain(size, 0 if min is None else min, _INT64_MAX if max is None else max,
               "sym_constrain_range_for_size")


def sym_fresh_size(expr):
    """A size expression as a new symbol (torch.compile); a concrete size is itself."""
    return expr


class _NoSymbolicValues:
    """Base of the symbolic number types: torchlite's sizes and scalars are always concrete
    Python numbers, so these types have no instances; they exist so that PyTorch code's
    `isinstance(n, (int, torch.SymInt))` runs (and is False for them)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"torchlite has no symbolic numbers: its sizes are concrete ints, so "
                        f"{cls.__name__} cannot be constructed")


class SymInt(_NoSymbolicValues):
    """torch.SymInt, a symbolic int: never produced by torchlite (see _NoSymbolicValues)."""


class SymFloat(_NoSymbolicValues):
    """torch.SymFloat, a symbolic float: never produced by torchlite."""


class SymBool(_NoSymbolicValues):
    """torch.SymBool, a symbolic bool: never produced by torchlite."""


def _assert(condition, message):
    """PyTorch's torch._assert: `assert condition, message` that graph capture records
    (torchlite.fx's trace patches it like the public functions), as model code written for
    torch.fx uses it.  A tensor condition is read as bool(condition)."""
    if type(condition) is not bool:
        condition = builtins.bool(condition)
    if not condition:
        raise AssertionError(message)
